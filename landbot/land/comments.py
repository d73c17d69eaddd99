"""The text of landbot's comments. Rendered from the decision; snapshot-tested.

A status comment (one per pull request, edited as the drop moves on) says what happened at
which commit and what landbot does next. A hand-back is a new comment, because an edit
notifies no one: it mentions the author, says what a person must decide, and gives the
commands to reproduce and to put the pull request back in the queue.
"""

from __future__ import annotations

import re

from landbot.core.model import Drop, Evidence, FixerResult, JobFailure, PrSnapshot
from landbot.core.text import inert, terminal_safe
from landbot.land.model import HandBackTopic, StatusTopic

STATUS_MARKER = "<!-- landbot:status -->"
HANDBACK_MARKER = "<!-- landbot:handback -->"

_REASON_TEXT = {
    "failed_checks": "its checks failed in the merge group",
    "merge_conflict": "it conflicts with the base branch",
    "checks_timed_out": "its checks did not report in time",
    "manual": "someone removed it",
    "merged": "it merged",
    "already_merged": "it was already merged",
    "queue_cleared": "the queue was cleared",
    "roll_back": "the queue was rolled back",
    "branch_protections": "the base branch's protection rules refused it",
    "git_tree_invalid": "GitHub could not build its merge tree",
    "invalid_merge_commit": "GitHub could not create a valid merge commit",
    "unknown": "of a reason GitHub did not name",
}


def _short(sha: str | None) -> str:
    return (sha or "")[:7]


def _removed(drop: Drop) -> str:
    why = _REASON_TEXT.get(drop.reason, drop.reason)
    if drop.reason == "unknown" and drop.raw_reason:
        why = f"of {_code(drop.raw_reason)}, a reason landbot does not know"
    return f"The merge queue removed this pull request at `{_short(drop.head_sha)}` because {why}."


_STATUS_NEXT: dict[StatusTopic, str] = {
    "requeued": "landbot put it back in the queue once for this commit.",
    "requeued_checks_timed_out": "landbot put it back in the queue once for this commit.",
    "requeued_roll_back": "landbot put it back in the queue once for this commit.",
    "requeued_not_its_fault": (
        "The failure is not this pull request's fault ({why}); landbot put it back in the "
        "queue once for this commit."
    ),
    "requeued_flaky_verdict": (
        "The fixer ran the failing command again and it passed: landbot put the pull "
        "request back in the queue once for this commit."
    ),
    "requeued_conflict_gone": (
        "The base branch now merges cleanly ({why}): landbot put the pull request back in the "
        "queue once for this commit."
    ),
    "fixing_failed_checks": "landbot is reproducing the failure and trying a fix.",
    "fixing_conflict": "landbot is merging the base branch and resolving the conflict.",
    "fixed": (
        "landbot pushed a fix as `{pushed}`; auto-merge is armed, so the pull request joins "
        "the queue again once its checks pass."
    ),
    "handed_back": "landbot handed it back to @{author}: see the comment below.",
    "unknown_reason": "landbot does not act on this reason; a person may want to look.",
}


def render_status(
    topic: StatusTopic,
    drop: Drop,
    pr: PrSnapshot,
    evidence: Evidence,
    fixer: FixerResult | None = None,
) -> str:
    nxt = _STATUS_NEXT[topic].format(
        why=_inert(evidence.triage_reason) or evidence.triage_class or "not a test failure",
        pushed=_short(fixer.pushed_sha if fixer else None),
        author=pr.author,
    )
    return f"{STATUS_MARKER}\n**landbot** · {_removed(drop)}\n\n{nxt}\n"


_DECIDE: dict[HandBackTopic, str] = {
    "removed": (
        "landbot does not act on this removal by itself. Look at why GitHub removed it, then "
        "put it back in the queue when it is ready."
    ),
    "requeued_again": (
        "It was removed again after landbot re-enqueued it once. Look at why, then decide "
        "whether to queue it again."
    ),
    "failed_checks": "Fix the failing checks below, then put the pull request back in the queue.",
    "failed_checks_fixer_spent": (
        "landbot's fixer already had its attempt at this commit. Fix the failing checks "
        "below, then put the pull request back in the queue."
    ),
    "conflict": "Merge the base branch and resolve the conflict, then put it back in the queue.",
    "conflict_fixer_spent": (
        "landbot's fixer already had its attempt at this commit. Merge the base branch and "
        "resolve the conflict, then put it back in the queue."
    ),
    "checks_timed_out_again": (
        "The checks timed out again after landbot re-enqueued it once. Check that the "
        "required checks run on `merge_group` events and finish within the queue's timeout."
    ),
    "roll_back_again": "The queue was rolled back again. Decide whether to queue it once more.",
    "not_its_fault_again": (
        "It failed again the same way after landbot re-enqueued it once. Decide whether the "
        "failure is really unrelated (then queue it again) or needs a fix."
    ),
    "conflict_gone_again": (
        "It was dropped for a conflict again after landbot re-enqueued it once, though the "
        "base merged cleanly when landbot checked. Merge the base branch and look at the result."
    ),
    "flaky_verdict_again": (
        "The fixer found the failure flaky, but the budget of re-enqueues for this commit is "
        "spent. Decide whether to queue it again."
    ),
    "policy": (
        "The quest check failed. Decide how the quest tree should look (the findings are "
        "below), fix it on this branch, then put the pull request back in the queue."
    ),
    "needs_human": "landbot's fixer could not repair it and says what a person must decide.",
    "fix_refused": "landbot's fixer made a fix, but landbot did not publish it.",
    "auto_merge_failed": (
        "landbot pushed a fix, but GitHub refused to arm auto-merge, so the pull request is "
        "not on its way back to the queue. Check the fix, then put it back in the queue."
    ),
    "branch_protections": "The base branch's protection rules refused it. Check what they require.",
    "git_tree_invalid": "GitHub could not build the merge. Check the branch for broken objects.",
    "invalid_merge_commit": "GitHub could not create the merge commit. Check the branch.",
}


def _failed_checks(evidence: Evidence) -> list[str]:
    lines: list[str] = []
    for check in evidence.failed_checks:
        name = _link(check.name, check.url)
        lines.append(f"- {name}: `{check.conclusion}`")
    return lines


def _jobs(evidence: Evidence) -> list[str]:
    conclusions = {(c.name, c.url): c.conclusion for c in evidence.failed_checks}
    lines: list[str] = []
    for job in evidence.jobs:
        head = _link(job.job, job.url)
        conclusion = conclusions.get((job.job, job.url))
        if conclusion:
            head += f" `{conclusion}`"
        step = f", step **{_inert(job.step)}**" if job.step else ""
        lines.append(f"- {head}{step}: {_inert(job.summary)} _(class: {job.class_})_")
        if job.excerpt:
            lines += ["", *(f"  {line}" if line else "" for line in _excerpt(job))]
    return lines


def _excerpt(job: JobFailure) -> list[str]:
    """The log lines in a collapsed block: numbered, `>` on an error line, `⋮` at a gap."""
    width = len(str(job.excerpt[-1][0]))
    errors = set(job.error_lines)
    body: list[str] = []
    previous: int | None = None
    for number, text in job.excerpt:
        if previous is not None and number > previous + 1:
            body.append(f"{'⋮':>{width}}")
        mark = ">" if number in errors else "|"
        body.append(f"{number:>{width}} {mark} {text}")
        previous = number
    # A fence longer than any run of backticks in the log, so no log line can close it.
    longest = max((len(run) for line in body for run in _BACKTICKS.findall(line)), default=0)
    fence = "`" * max(3, longest + 1)
    where = ", ".join(str(n) for n in job.error_lines)
    summary = f"log excerpt (error lines {where})" if where else "log excerpt"
    return [
        f"<details><summary>{summary}</summary>",
        "",
        f"{fence}text",
        *body,
        fence,
        "",
        "</details>",
    ]


_BACKTICKS = re.compile(r"`+")


def _inert(text: str) -> str:
    # Text from a log, a check name or the job is untrusted: no mention, link, image or HTML.
    return inert(text)


# A URL GitHub gave (a check run's page) becomes a link only when it cannot break out of
# the link syntax; anything else is shown as inert text.
_SAFE_URL = re.compile(r"https://[A-Za-z0-9.-]+(?::\d+)?/[A-Za-z0-9._~/?#=&%+:@,-]*")


def _link(text: str, url: str | None) -> str:
    if url and _SAFE_URL.fullmatch(url):
        return f"[{_inert(text)}]({url})"
    return _inert(text)


def _code(text: str) -> str:
    """`text` as inline code on one line, with a backtick run longer than any inside."""
    text = " ".join(terminal_safe(text).split())
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    tick = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{tick}{pad}{text}{pad}{tick}"


def _patch_block(patch: str) -> str:
    """The fix in a collapsed block, fenced longer than any backtick run in it."""
    longest = max((len(run) for run in _BACKTICKS.findall(patch)), default=0)
    fence = "`" * max(3, longest + 1)
    return (
        "<details><summary>The fix as a patch</summary>\n\n"
        f"{fence}diff\n{patch.rstrip(chr(10))}\n{fence}\n\n</details>"
    )


def _reproduce(drop: Drop, pr: PrSnapshot, evidence: Evidence) -> list[str]:
    base = pr.base_ref or drop.base_ref or "main"
    cmds = [
        f"gh pr checkout {drop.pr}",
        f"git fetch origin {base} && git merge origin/{base}",
    ]
    steps = [j.step for j in evidence.jobs if j.step and j.step.startswith("Run ")]
    cmds += [s.removeprefix("Run ") for s in steps]
    cmds += [
        "# when it passes: git push, then put it back in the queue with",
        f"gh pr merge {drop.pr} --auto",
    ]
    cmds = [" ".join(c.split()) for c in cmds]  # a step name cannot add lines
    longest = max((len(run) for c in cmds for run in _BACKTICKS.findall(c)), default=0)
    fence = "`" * max(3, longest + 1)
    return ["To reproduce locally:", "", f"{fence}sh", *cmds, fence]


def render_handback(
    topic: HandBackTopic,
    drop: Drop,
    pr: PrSnapshot,
    evidence: Evidence,
    fixer: FixerResult | None = None,
) -> str:
    parts = [
        HANDBACK_MARKER,
        f"@{pr.author} {_removed(drop)} landbot hands it back to you.",
        "",
        f"**What to decide:** {_DECIDE[topic]}",
    ]
    if fixer is not None and (fixer.summary or fixer.recommendation or fixer.refused):
        # The agent wrote the summary and the recommendation, and a refusal can name a path
        # the job chose: all three are inert text.
        parts.append("")
        if fixer.summary:
            parts.append(f"**The fixer found:** {_inert(fixer.summary)}")
        if fixer.recommendation:
            parts.append(f"**It recommends:** {_inert(fixer.recommendation)}")
        if fixer.refused:
            parts.append(f"**Not published because:** {_inert(fixer.refused)}")
    if fixer is not None and fixer.patch:
        parts += ["", _patch_block(fixer.patch)]
    if evidence.triage_reason:
        # Without a class, the reason says why triage could not give one.
        cls = f"{evidence.triage_class}: " if evidence.triage_class else ""
        parts += ["", f"**Triage:** {cls}{_inert(evidence.triage_reason)}"]
    if evidence.jobs:
        parts += ["", "**Failed checks on the merge group:**", *_jobs(evidence)]
    elif evidence.failed_checks:
        parts += ["", "**Failed checks on the merge group:**", *_failed_checks(evidence)]
    if evidence.conflict_files:
        files = "\n".join(f"- {_code(f)}" for f in evidence.conflict_files)
        parts += ["", f"**Conflicting files:**\n{files}"]
    parts += ["", *_reproduce(drop, pr, evidence), ""]
    parts.append(
        "Comment `/landbot retry` to have landbot try again (write access needed), or add the "
        "`landbot:skip` label to keep it away."
    )
    return "\n".join(parts) + "\n"
