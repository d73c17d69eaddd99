"""The text of landbot's comments. Rendered from the decision; snapshot-tested, situation by
situation (tests/land/test_situations.py drives each one through the decision).

A status comment (one per pull request, edited as the drop moves on) says what happened at
which commit and what landbot does next. A hand-back is a new comment, because an edit
notifies no one: it mentions the author, says what a person must decide, and gives the
commands to reproduce and to put the pull request back in the queue. A fix announcement is
a new comment too, after each push of a fix: the author hears of every commit landbot adds.

Each text shows only the evidence of its own situation: the failed jobs for failed checks,
the conflicting files for a conflict, the checks that never finished for a timeout. The
author is mentioned once per event: by the hand-back or the announcement, never also by the
status comment. Every pointer is to something the author can see (a check, a line of its
log, the fixer's own words); landbot's log is the operator's.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence

from landbot.core.model import Drop, Evidence, FixerResult, JobFailure, PrSnapshot
from landbot.core.text import inert, terminal_safe
from landbot.land.model import Cap, HandBackTopic, Policy, StatusTopic

STATUS_MARKER = "<!-- landbot:status -->"
HANDBACK_MARKER = "<!-- landbot:handback -->"
FIX_MARKER = "<!-- landbot:fix -->"

_DEFAULT_POLICY = Policy()

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


def removed_sentence(drop: Drop) -> str:
    """The sentence every text opens with: the merge queue removed it, at which commit, why."""
    return _removed(drop)


def _removed(drop: Drop) -> str:
    why = _REASON_TEXT.get(drop.reason, drop.reason)
    if drop.reason == "unknown" and drop.raw_reason:
        why = f"of {_code(drop.raw_reason)}, a reason landbot does not know"
    return f"The merge queue removed this pull request at `{_short(drop.head_sha)}` because {why}."


# --- the status comment -----------------------------------------------------------------

_STATUS_NEXT: dict[StatusTopic, str] = {
    "requeued": "landbot put it back in the queue once for this commit.",
    "requeued_checks_timed_out": (
        "landbot put it back in the queue once for this commit, in case the checks were "
        "only slow{timed_out}."
    ),
    "requeued_roll_back": "landbot put it back in the queue once for this commit.",
    "requeued_not_its_fault": (
        "The failure is not this pull request's fault ({why}); landbot put it back in the "
        "queue once for this commit."
    ),
    "requeued_flaky_verdict": (
        "The fixer could not make the failure happen again{ran}{found}: landbot put the pull "
        "request back in the queue once for this commit."
    ),
    "requeued_conflict_gone": (
        "The base branch now merges cleanly ({why}): landbot put the pull request back in the "
        "queue once for this commit."
    ),
    "fixing_failed_checks": "landbot is reproducing the failure and trying a fix.",
    "fixing_conflict": "landbot is merging the base branch and resolving the conflict.",
    "fixed": (
        "landbot's fixer pushed a fix as `{pushed}`{found}: {announced}. Auto-merge is "
        "armed, so the pull request joins the queue again once its checks pass."
    ),
    # The hand-back below mentions the author: this edit must not mention them again.
    "handed_back": "landbot handed it back to the author: see the comment below.",
    "unknown_reason": "landbot does not act on this reason; a person may want to look.",
    # Issue 27: edits only (no one is mentioned), and a new line while the drop waits.
    "waiting_base": (
        "The same job fails the same way on the base branch{base}: not this pull request's "
        "fault. landbot runs no fixer and waits for the base to turn green, then puts it "
        "back in the queue."
    ),
    "requeued_base_green": (
        "The base branch is green again: landbot put the pull request back in the queue."
    ),
    "held": (
        "landbot's breaker for this repository is open{breaker}: no re-enqueue and no fixer "
        "run until it closes. This drop is held, not dropped: it goes back in the queue in "
        "its turn when the breaker closes."
    ),
    "requeued_breaker_closed": (
        "landbot's breaker for this repository closed: the pull request went back in the "
        "queue in its turn."
    ),
}


def render_status(
    topic: StatusTopic,
    drop: Drop,
    pr: PrSnapshot,
    evidence: Evidence,
    fixer: FixerResult | None = None,
    *,
    fix_comment_url: str | None = None,
    breaker_url: str | None = None,
) -> str:
    del pr  # the status names no one; kept for one calling shape
    breaker = f" ([why]({breaker_url}))" if breaker_url and _SAFE_URL.fullmatch(breaker_url) else ""
    found = f" ({_inert(_sentence(fixer.summary))})" if fixer is not None and fixer.summary else ""
    ran = f" (it ran {_code(fixer.reproduce)})" if fixer is not None and fixer.reproduce else ""
    timed_out = ""
    if evidence.timed_out_checks:
        timed_out = f" ({_names(evidence.timed_out_checks)} never finished)"
    if fix_comment_url and _SAFE_URL.fullmatch(fix_comment_url):
        announced = f"[what it found and changed]({fix_comment_url})"
    else:
        announced = "what it found and changed is in the comment below"
    base = ""
    if evidence.base_red:
        at = f" at `{_short(evidence.base_red_sha)}`" if evidence.base_red_sha else ""
        base = f" ({_names(evidence.base_red)}{at})"
    nxt = _STATUS_NEXT[topic].format(
        base=base,
        breaker=breaker,
        why=_inert(evidence.triage_reason) or evidence.triage_class or "not a test failure",
        pushed=_short(fixer.pushed_sha if fixer else None),
        found=found,
        ran=ran,
        timed_out=timed_out,
        announced=announced,
    )
    return f"{STATUS_MARKER}\n**landbot** · {_removed(drop)}\n\n{nxt}\n"


# --- the hand-back ------------------------------------------------------------------------

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
        "The fixer could not make the failure happen again, and landbot already re-enqueued "
        "this commit once. Decide whether to queue it again or look for what is unstable."
    ),
    "policy": (
        "The quest check failed. Decide how the quest tree should look (the findings are "
        "below), fix it on this branch, then put the pull request back in the queue."
    ),
    "needs_human": (
        "landbot's fixer could not repair it; what it found is below. The operator running "
        "landbot has the fixer's full output."
    ),
    "fix_refused": "landbot's fixer made a fix, but landbot did not publish it.",
    "auto_merge_failed": (
        "landbot pushed a fix, but GitHub refused to arm auto-merge, so the pull request is "
        "not on its way back to the queue. Check the fix, then put it back in the queue."
    ),
    "branch_protections": "The base branch's protection rules refused it. Check what they require.",
    "git_tree_invalid": "GitHub could not build the merge. Check the branch for broken objects.",
    "invalid_merge_commit": "GitHub could not create the merge commit. Check the branch.",
    "cap_reached": (
        "landbot stopped acting on this pull request: {cap}. Look at what it did so far, then "
        "decide how to land it."
    ),
    "base_red_deadline": (
        "The same job failed the same way on the base branch, and the base did not turn "
        "green while landbot waited. Once the base is fixed, merge it in or put the pull "
        "request back in the queue."
    ),
}

# Each cap: what it counts, its value on the policy, and the setting that raises it.
_CAPS: dict[Cap, tuple[str, str]] = {
    "pushes": ("fixes pushed", "max_pushes_per_pr"),
    "requeues": ("re-enqueues", "max_requeues_per_pr"),
    "fixer_runs": ("fixer runs", "max_fixer_runs_per_pr"),
}


def _cap_value(policy: Policy, cap: Cap) -> int:
    return {
        "pushes": policy.max_pushes_per_pr,
        "requeues": policy.max_requeues_per_pr,
        "fixer_runs": policy.max_fixer_runs_per_pr,
    }[cap]


def _window(window: dt.timedelta) -> str:
    seconds = int(window.total_seconds())
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size and seconds % size == 0:
            n = seconds // size
            return f"{n} {unit}" if n == 1 else f"{n} {unit}s"
    return f"{seconds} seconds"


def _cap_text(cap: Cap | None, policy: Policy) -> tuple[str, list[str]]:
    """(the cap in the sentence of what to decide, the lines on how to lift it)."""
    if cap is None:
        return "one of its caps on a pull request is reached", []
    what, setting = _CAPS[cap]
    value = _cap_value(policy, cap)
    window = _window(policy.cap_window)
    sentence = f"it reached its cap of {value} {what} per pull request within {window}"
    lift = [
        "**To lift the cap:** a push of your own, or a `/landbot retry` comment (write access "
        "needed), starts the count again; the operator can raise "
        f"`[policy] {setting}` (`LANDBOT_POLICY__{setting.upper()}`).",
    ]
    return sentence, lift


def render_handback(
    topic: HandBackTopic,
    drop: Drop,
    pr: PrSnapshot,
    evidence: Evidence,
    fixer: FixerResult | None = None,
    *,
    cap: Cap | None = None,
    policy: Policy | None = None,
    mention: bool = True,
) -> str:
    """`mention=False`: the same text without the marker and the @-mention (the `landbot`
    check run's summary, land/checks.py: the comment is what notifies)."""
    policy = policy or _DEFAULT_POLICY
    cap_sentence, lift = _cap_text(cap, policy)
    greeting = f"@{pr.author} {_removed(drop)} landbot hands it back to you."
    parts = [
        *([HANDBACK_MARKER] if mention else []),
        greeting if mention else f"{_removed(drop)} landbot hands it back to the author.",
        "",
        f"**What to decide:** {_DECIDE[topic].format(cap=cap_sentence)}",
    ]
    if topic == "cap_reached":
        parts += ["", *lift]
    if fixer is not None and (fixer.summary or fixer.recommendation or fixer.refused):
        # The agent wrote the summary and the recommendation, and a refusal can name a path
        # the job chose: all three are inert text.
        parts.append("")
        if fixer.summary:
            parts.append(f"**The fixer found:** {_inert(fixer.summary)}")
        if fixer.reproduce:
            parts.append(f"**The failing command:** {_code(fixer.reproduce)}")
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
    parts += _evidence_lines(topic, drop, evidence)
    parts += ["", *_reproduce(drop, pr, evidence), ""]
    parts.append(
        "Comment `/landbot retry` to have landbot try again (write access needed), or add the "
        f"{_code(policy.skip_label)} label to keep it away."
    )
    return "\n".join(parts) + "\n"


def _evidence_lines(topic: HandBackTopic, drop: Drop, evidence: Evidence) -> list[str]:
    """The evidence of this drop's own kind, and nothing of another kind."""
    if drop.reason == "failed_checks":
        lines: list[str] = []
        if evidence.jobs:
            lines += ["", "**Failed checks on the merge group:**", *_jobs(evidence)]
        elif evidence.failed_checks:
            lines += ["", "**Failed checks on the merge group:**", *_failed_checks(evidence)]
        if evidence.quest_explanations:
            # landbot's own reading of each finding from the change (triage/quest_explain).
            lines += ["", "**Why the quest check fires:**"]
            lines += [f"- {_inert(' '.join(e.split()))}" for e in evidence.quest_explanations]
        return lines
    if drop.reason == "merge_conflict":
        if evidence.conflict_files:
            files = "\n".join(f"- {_code(f)}" for f in evidence.conflict_files)
            return ["", f"**Conflicting files:**\n{files}"]
        return []
    if drop.reason == "checks_timed_out":
        if evidence.timed_out_checks:
            names = "\n".join(f"- {_code(n)}" for n in evidence.timed_out_checks)
            return ["", f"**Checks that never finished:**\n{names}"]
        return ["", "**Checks that never finished:** GitHub named none (the queue's timeout)."]
    return []


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
        at = f" ([the failing line]({job.line_url}))" if _SAFE_URL.fullmatch(job.line_url) else ""
        lines.append(f"- {head}{step}: {_inert(job.summary)} _({_class_note(job)})_{at}")
        if job.flaky_evidence:
            lines.append(f"  - **Evidence:** {_inert(job.flaky_evidence)}.")
        lines += _reported(job)
        if job.excerpt:
            lines += ["", *(f"  {line}" if line else "" for line in _excerpt(job))]
    return lines


def _reported(job: JobFailure) -> list[str]:
    """The failed tests the run's test report names, the first with their messages."""
    if not job.reported_tests:
        return []
    count = len(job.failed_tests)
    more = f" ({count} in all)" if count > len(job.reported_tests) else ""
    lines = [f"  - **Failed tests** from the test report {_code(job.tests_from)}{more}:"]
    for test in job.reported_tests:
        message = f": {_inert(_sentence(test.message))}" if test.message else ""
        lines.append(f"    - {_code(test.test)}{message}")
    return lines


# What picked the failing step and region (LogExplanation.signal), as a maintainer reads
# it; the log alone (the default, and all `landbot triage log` has) goes unsaid.
_SIGNAL: dict[str, str] = {
    "steps-api": "step from GitHub's jobs API",
    "annotations": "step from the check run's annotations",
}


def _class_note(job: JobFailure) -> str:
    """`class: flaky; the log alone says genuine; step from GitHub's jobs API`."""
    parts = [f"class: {job.class_}"]
    if job.log_class and job.log_class != job.class_:
        parts.append(f"the log alone says {job.log_class}")
    if job.step and job.signal in _SIGNAL:
        parts.append(_SIGNAL[job.signal])
    return "; ".join(parts)


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
    fence = _fence(body)
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


def _fence(lines: Sequence[str]) -> str:
    """A fence longer than any run of backticks in `lines`, so none of them can close it."""
    longest = max((len(run) for line in lines for run in _BACKTICKS.findall(line)), default=0)
    return "`" * max(3, longest + 1)


def _inert(text: str) -> str:
    # Text from a log, a check name or the job is untrusted: no mention, link, image or HTML.
    return inert(text)


def _sentence(text: str) -> str:
    return " ".join(text.split()).rstrip(".")


def _names(names: Sequence[str]) -> str:
    return ", ".join(_code(n) for n in names)


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


def details_block(text: str, summary: str) -> str:
    """`text` in a collapsed block, fenced longer than any backtick run in it."""
    fence = _fence(text.splitlines())
    return (
        f"<details><summary>{summary}</summary>\n\n"
        f"{fence}diff\n{text.rstrip(chr(10))}\n{fence}\n\n</details>"
    )


def _patch_block(patch: str) -> str:
    return details_block(patch, "The fix as a patch")


# --- the commands to reproduce ------------------------------------------------------------

_SHA = re.compile(r"[0-9a-f]{40}")
_REF = re.compile(r"[A-Za-z0-9._/-]+")


def _ref(text: str | None, default: str) -> str:
    # A branch name goes into a shell command: anything unusual falls back to the default.
    return text if text and _REF.fullmatch(text) and not text.startswith("-") else default


def _one_line(text: str) -> str:
    return " ".join(terminal_safe(text).split())


def _step_commands(job: JobFailure) -> list[str]:
    """The failing step's own script, in the directory it ran in (never a `uses:` step:
    triage leaves `run` empty for those)."""
    script = [_one_line(line) for line in job.run.splitlines()]
    script = [line for line in script if line]
    if not script:
        return []
    where = _one_line(job.working_directory)
    if not where:
        return script
    if len(script) == 1:
        return [f"cd {_quote(where)} && {script[0]}"]
    return [f"cd {_quote(where)}", *script, "cd -"]


def _quote(path: str) -> str:
    return path if _REF.fullmatch(path) else "'" + path.replace("'", "") + "'"


def _group_context(drop: Drop, base: str, evidence: Evidence) -> list[str]:
    """What the queue tested, as comments above the commands."""
    if not evidence.group_sha:
        return []
    on = f" on `{_short(evidence.group_base_sha)}`" if evidence.group_base_sha else ""
    ahead = ""
    if evidence.prs_ahead:
        prs = ", ".join(f"#{n}" for n in evidence.prs_ahead)
        ahead = f" ({base} with {prs} ahead of this one)"
    elif evidence.group_base_sha:
        ahead = f" ({base}, nothing ahead of this one)"
    return [
        f"# the queue tested merge group {_short(evidence.group_sha)}: "
        f"head {_short(drop.head_sha)}{on}{ahead}"
    ]


def _reproduce(drop: Drop, pr: PrSnapshot, evidence: Evidence) -> list[str]:
    base = _ref(pr.base_ref or drop.base_ref, "main")
    requeue = [f"gh pr merge {drop.pr} --auto"]
    if drop.reason == "failed_checks":
        steps: list[str] = []
        for job in evidence.jobs:
            for command in _step_commands(job):
                if command not in steps:
                    steps.append(command)
        cmds = _group_context(drop, base, evidence)
        if evidence.group_sha and _SHA.fullmatch(evidence.group_sha) and steps:
            # The exact commit the queue tested, detached: nothing of the PRs ahead of this
            # one ends up on the branch.
            sha = evidence.group_sha
            cmds += [f"git fetch origin {sha} && git checkout --detach {sha}", *steps]
            cmds += ["# then fix it on the branch:"]
        cmds += [f"gh pr checkout {drop.pr}", f"git fetch origin {base} && git merge origin/{base}"]
        cmds += steps if not (evidence.group_sha and steps) else []
        if not steps:
            cmds.append("# run the failing step of each check above (its log shows the command)")
        cmds += ["# when it passes: git push, then put it back in the queue with", *requeue]
        return _block("To reproduce locally:", cmds)
    if drop.reason == "merge_conflict":
        cmds = [f"gh pr checkout {drop.pr}", f"git fetch origin {base} && git merge origin/{base}"]
        files = [_quote(_one_line(f)) for f in evidence.conflict_files]
        if files:
            cmds += [
                "# resolve the conflicts in: " + " ".join(files),
                f"git add {' '.join(files)} && git commit --no-edit",
            ]
        else:
            cmds += ["# look at the result of the merge, then commit it"]
        cmds += ["git push", "# then put it back in the queue with", *requeue]
        return _block("To merge the base branch locally:", cmds)
    return _block("To put it back in the queue when it is ready:", requeue)


def _block(title: str, cmds: Sequence[str]) -> list[str]:
    cmds = [_one_line(c) for c in cmds]  # a name from the repository cannot add lines
    fence = _fence(cmds)
    return [title, "", f"{fence}sh", *cmds, fence]


# --- the announcement of a pushed fix -------------------------------------------------------


def render_fix_pushed(drop: Drop, pr: PrSnapshot, evidence: Evidence, fixer: FixerResult) -> str:
    """A new comment after a push of a fix: it mentions the author (a new comment notifies;
    an edit of the status would not) and says what the fixer found, ran and changed."""
    del evidence  # the status comment keeps the failure; this says what was done about it
    sha = fixer.pushed_sha or ""
    parts = [
        FIX_MARKER,
        f"@{pr.author} landbot's fixer pushed `{_short(sha)}` to this pull request "
        f"(it was removed from the queue at `{_short(drop.head_sha)}` because "
        f"{_REASON_TEXT.get(drop.reason, drop.reason)}).",
        "",
    ]
    if fixer.summary:
        parts.append(f"**The fixer found:** {_inert(fixer.summary)}")
    if fixer.reproduce:
        parts.append(f"**The failing command:** {_code(fixer.reproduce)}")
    if fixer.recommendation:
        parts.append(f"**It recommends:** {_inert(fixer.recommendation)}")
    if fixer.files:
        added = sum(a for _p, a, _d in fixer.files if a >= 0)
        deleted = sum(d for _p, _a, d in fixer.files if d >= 0)
        parts += ["", f"**Changed** ({_count(len(fixer.files), 'file')}, +{added} −{deleted}):"]
        for path, a, d in fixer.files:
            lines = "binary" if a < 0 or d < 0 else f"+{a} −{d}"
            parts.append(f"- {_code(path)} ({lines})")
    else:
        parts += ["", "**Changed:** the commit's files are listed on it."]
    armed = (
        "Auto-merge is armed, so it joins the queue again once its checks pass."
        if fixer.auto_merge_armed
        else "GitHub refused to arm auto-merge, so it is not on its way back to the queue."
    )
    parts += [
        "",
        f"**Commit:** `{sha}`" if sha else "**Commit:** none",
        "",
        f"{armed} To undo it: `git revert {_short(sha)}` on the branch, or push your own fix.",
    ]
    return "\n".join(parts) + "\n"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
