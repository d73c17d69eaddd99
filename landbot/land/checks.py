"""The `landbot` check run on a dropped pull request's head, and the `landbot:fixing` label.

The comment notifies; the check is where the state lives: `in_progress` from the moment
landbot has re-read the pull request and found the drop still holds (so it shows while
triage runs), then completed when the drop settles (`Lander.settle`; for a fix job a push
or a close cancelled while it waited, the `checks` job of pipeline/deliveries.py):

outcome                 conclusion         summary
----------------------  -----------------  ------------------------------------------------
requeued, fixed         success            what landbot did and why (the status text)
handed_back, failed     action_required    the hand-back text, without marker or mention,
                                           and one annotation per error line naming a path
ignored                 neutral            why landbot left it alone
pending                 (still running)

The pure part (whether to make the check, its conclusion, its output, the path and line an
error line names) is unit-tested in tests/land/test_checks.py; `CheckWriter` makes the
writes. Each write is claimed in the store's action ledger under a key of its own, like
land/act.py's actions:

write                    after an unknown outcome (or found "started" on resume)
-----------------------  ---------------------------------------------------------------
create (in_progress)     the head's check runs are listed and the one whose external_id
                         is `drop:<id>` is it; created once more only when absent
complete (PATCH)         the head's check runs are listed: completed with this conclusion,
                         it applied (GitHub appends annotations, so it is not re-sent);
                         else sent once more. Refused (a 4xx): sent once more with only
                         the title and one line, so the conclusion lands all the same
fixing label, add        sent again (adding a label the PR has is harmless); in act.py,
                         and only when the PR did not have it: one a person set is theirs
fixing label, remove     sent again (a label already gone answers 404: False, not an error)

The summary is held under GitHub's cap (65535 characters): a longer hand-back leaves out
its longest log excerpts first (`fit_excerpts`, which act.py uses for the hand-back comment
too, under a comment's 65536). A check run is not the notification, so GitHub refusing one
of these writes (a 4xx) is logged as a warning and the drop carries on; an answer that
never came, or none at all, retries the job as for any other mutation (the ledger's
"started" re-checks).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any, Literal

from landbot import logs
from landbot.core.model import Drop, Evidence, FixerResult, JobFailure, Outcome, PrSnapshot
from landbot.core.text import inert, terminal_safe
from landbot.github.errors import (
    GitHubError,
    MutationOutcomeUnknown,
    NetworkError,
    RateLimited,
    ServerError,
)
from landbot.github.models import Annotation, CheckOutput, CheckRun
from landbot.github.ops import LandOps
from landbot.land.comments import (
    STATUS_MARKER,
    removed_sentence,
    render_handback,
    render_status,
)
from landbot.land.decide import confirm
from landbot.land.model import (
    Decision,
    HandBack,
    HandBackTopic,
    Policy,
    Status,
    StatusTopic,
)
from landbot.store import Store

log = logging.getLogger("landbot.land")

CHECK_NAME = "landbot"
Conclusion = Literal["success", "action_required", "neutral"]
# GitHub did nothing, or may have: the job is retried and the ledger's "started" re-checks.
_NOT_KNOWN = (MutationOutcomeUnknown, NetworkError, ServerError, RateLimited)
# GitHub takes at most 50 annotations per request; more would only bury the first ones.
MAX_ANNOTATIONS = 50
# GitHub's caps on a check run's `output.summary` and on a comment's body, in characters
# (a longer one is refused with 422): eight failed jobs' excerpts pass both.
MAX_SUMMARY = 65535
MAX_COMMENT = 65536
TRIMMED = "…trimmed; the full text is in the hand-back comment"
COMMENT_TRIMMED = (
    "_…trimmed to fit a comment: the longest log excerpts are left out; each job's page "
    "has its whole log._"
)
_TITLE_MAX = 120
_MESSAGE_MAX = 500


def external_id(drop_id: int) -> str:
    """How landbot finds its own check run of a drop again (design decision: `drop:<id>`)."""
    return f"drop:{drop_id}"


def start_key(drop_id: int) -> str:
    return f"check:{drop_id}:start"


def finish_key(drop_id: int, outcome: Outcome) -> str:
    return f"check:{drop_id}:finish:{outcome}"


# --- whether, and which conclusion (pure) -------------------------------------------------


def wants_check(drop: Drop, pr: PrSnapshot, policy: Policy, *, after_fixer: bool) -> bool:
    """A check run is made for a drop landbot handles: the PR as just re-read is open, at
    the drop's head, out of the queue and not opted out (`decide.confirm` finds nothing to
    leave it for). After the fixer the run exists already, or GitHub refused it: none."""
    return not after_fixer and confirm(drop, pr, policy) is None


def conclusion(outcome: Outcome) -> Conclusion | None:
    """The check's conclusion for a settled drop; None while it is pending (the fixer)."""
    if outcome in ("requeued", "fixed"):
        return "success"
    if outcome in ("handed_back", "failed"):
        return "action_required"
    if outcome == "ignored":
        return "neutral"
    return None


# --- the output (pure) -------------------------------------------------------------------

_WORKING: dict[str, str] = {
    "failed_checks": "landbot is reading the failed checks of the merge group",
    "merge_conflict": "landbot is merging the base branch to see the conflict",
    "checks_timed_out": "landbot is looking at the checks that did not report in time",
}

# One line a person can act on, per hand-back topic (a test holds it to HANDBACK_TOPICS).
_HANDBACK_TITLE: dict[HandBackTopic, str] = {
    "removed": "Handed back: put it back in the queue when it is ready",
    "requeued_again": "Handed back: removed again after one re-enqueue",
    "failed_checks": "Handed back: fix the failing checks",
    "failed_checks_fixer_spent": "Handed back: fix the failing checks (the fixer had its try)",
    "conflict": "Handed back: merge the base branch and resolve the conflict",
    "conflict_fixer_spent": "Handed back: resolve the conflict (the fixer had its try)",
    "checks_timed_out_again": "Handed back: the checks timed out again",
    "roll_back_again": "Handed back: the queue was rolled back again",
    "not_its_fault_again": "Handed back: it failed the same way after one re-enqueue",
    "conflict_gone_again": "Handed back: dropped for a conflict again",
    "flaky_verdict_again": "Handed back: the failure did not reproduce, and it failed again",
    "policy": "Handed back: the quest check failed",
    "needs_human": "Handed back: the fixer could not repair it",
    "fix_refused": "Handed back: landbot did not publish the fixer's fix",
    "auto_merge_failed": "Handed back: the fix is pushed, but auto-merge is not armed",
    "branch_protections": "Handed back: the base branch's protection rules refused it",
    "git_tree_invalid": "Handed back: GitHub could not build the merge",
    "invalid_merge_commit": "Handed back: GitHub could not create the merge commit",
    "cap_reached": "Handed back: landbot reached its cap on this pull request",
    "base_red_deadline": "Handed back: the base branch stayed red past landbot's wait",
}

# Per status topic of a settled drop (the `fixing_*` ones are pending: still in progress).
_STATUS_TITLE: dict[StatusTopic, str] = {
    "requeued": "Re-enqueued once for this commit",
    "requeued_checks_timed_out": "Re-enqueued: the checks did not report in time",
    "requeued_roll_back": "Re-enqueued after the queue was rolled back",
    "requeued_not_its_fault": "Re-enqueued: the failure is not this pull request's fault",
    "requeued_flaky_verdict": "Re-enqueued: the fixer could not make the failure happen again",
    "requeued_conflict_gone": "Re-enqueued: the base branch now merges cleanly",
    "fixing_failed_checks": "The fixer is reproducing the failure",
    "fixing_conflict": "The fixer is resolving the conflict",
    "fixed": "Fixed: landbot pushed {pushed}; auto-merge is armed",
    "handed_back": "Left alone: handed back already for this cap",
    "unknown_reason": "Left alone: landbot does not act on this reason",
    "waiting_base": "Waiting: the same job fails the same way on the base branch",
    "requeued_base_green": "Re-enqueued: the base branch is green again",
    "held": "Held: landbot's breaker for this repository is open",
    "requeued_breaker_closed": "Re-enqueued in its turn: landbot's breaker closed",
}


def start_output(drop: Drop) -> CheckOutput:
    """The output while landbot works (triage, then maybe the fixer)."""
    working = _WORKING.get(drop.reason, "landbot is looking at why it was removed")
    return CheckOutput(
        title=_title(f"Working on it: {working}"),
        summary=f"{removed_sentence(drop)}\n\n{working}; this check says what it did once "
        "it is done.\n",
    )


def check_output(
    decision: Decision,
    drop: Drop,
    pr: PrSnapshot,
    evidence: Evidence,
    fixer: FixerResult | None = None,
    *,
    policy: Policy | None = None,
    fix_comment_url: str | None = None,
    handback_url: str | None = None,
) -> CheckOutput:
    """The completed check's output for a settled drop: the title says what happened and
    what to do, the summary is the text a person reads (the hand-back's, for a hand-back,
    its longest log excerpts left out when it is longer than GitHub takes)."""
    policy = policy or Policy()
    handback = next((a for a in decision.actions if isinstance(a, HandBack)), None)
    status = next((a for a in decision.actions if isinstance(a, Status)), None)
    why = inert(decision.why)
    if decision.outcome == "handed_back" and handback is not None:
        summary = fit_excerpts(
            lambda ev: render_handback(
                handback.topic,
                drop,
                pr,
                ev,
                fixer,
                cap=handback.cap,
                policy=policy,
                mention=False,
            ),
            evidence,
            MAX_SUMMARY,
            trimmed_note(handback_url),
        )
        return CheckOutput(
            title=_title(_HANDBACK_TITLE[handback.topic]),
            summary=summary,
            annotations=error_annotations(evidence),
        )
    if decision.outcome == "failed":
        summary = (
            f"{removed_sentence(drop)}\n\nlandbot could not finish handling it: {why}.\n\n"
            "The operator running landbot has the details in its log. Comment "
            "`/landbot retry` to have landbot try again (write access needed).\n"
        )
        return CheckOutput(
            title=_title(f"landbot could not finish: {decision.why}"),
            summary=summary,
            annotations=error_annotations(evidence),
        )
    if status is not None and status.topic in _STATUS_TITLE:
        text = render_status(
            status.topic, drop, pr, evidence, fixer, fix_comment_url=fix_comment_url
        )
        # The check is landbot's already: neither the marker nor the comment's byline.
        text = text.removeprefix(STATUS_MARKER + "\n").removeprefix("**landbot** · ")
        pushed = (fixer.pushed_sha or "")[:7] if fixer is not None else ""
        return CheckOutput(
            title=_title(_STATUS_TITLE[status.topic].format(pushed=pushed)),
            summary=_cut(f"{text}\n_Why:_ {why}.\n", MAX_SUMMARY),
        )
    # Left alone without a word on the pull request (closed, moved, opted out, ...).
    verb = _VERB.get(decision.outcome, "Done")
    said = f"landbot left it alone: {why}" if decision.outcome == "ignored" else f"{verb}: {why}"
    return CheckOutput(
        title=_title(f"{verb}: {decision.why}"),
        summary=f"{removed_sentence(drop)}\n\n{said}.\n",
    )


_VERB: dict[str, str] = {
    "ignored": "Left alone",
    "requeued": "Re-enqueued",
    "fixed": "Fixed",
    "handed_back": "Handed back",
}


def trimmed_note(handback_url: str | None) -> str:
    """The line a trimmed summary ends with: where the rest is."""
    link = f" ({handback_url})" if handback_url and _SAFE_LINK.fullmatch(handback_url) else ""
    return f"_{TRIMMED}{link}; each job's page has its whole log._"


_SAFE_LINK = re.compile(r"https?://[^\s()<>\[\]`]+")


def fit_excerpts(
    render: Callable[[Evidence], str], evidence: Evidence, limit: int, note: str
) -> str:
    """`render(evidence)` in at most `limit` characters: the jobs' log excerpts are left out
    longest first, one at a time, until it fits, and `note` ends the text once any was
    (the job lines, what to decide and how to reproduce stay). Cut at a line only when the
    text without any excerpt is still too long."""
    text = render(evidence)
    if len(text) <= limit:
        return text
    jobs = list(evidence.jobs)
    room = limit - len(note) - 2
    longest = sorted(range(len(jobs)), key=lambda i: -sum(len(t) + 8 for _, t in jobs[i].excerpt))
    for i in longest:
        if not jobs[i].excerpt:
            break
        jobs[i] = replace(jobs[i], excerpt=())
        text = render(replace(evidence, jobs=tuple(jobs)))
        if len(text) <= room:
            break
    return _cut(text, room) + "\n" + note + "\n"


def _cut(text: str, limit: int) -> str:
    """`text` cut at its last whole line within `limit` characters (`…` said so)."""
    if len(text) <= limit:
        return text
    head = text[: max(limit - 2, 0)]
    return head[: head.rfind("\n") + 1] + "…\n"


def _title(text: str) -> str:
    text = " ".join(terminal_safe(text).split())
    return text if len(text) <= _TITLE_MAX else text[: _TITLE_MAX - 1].rstrip() + "…"


# --- annotations: the path and line an error line names (pure) ----------------------------

# Source and build files a log names; a word with another ending (`github.com:443`, a
# timestamp, `v1.2:3`) is not a path in the repository.
_EXTENSION_WORDS = """
    py pyi pyx pxd rs go c h cc cpp cxx hh hpp hxx m mm java kt kts scala groovy gradle
    js jsx mjs cjs ts tsx mts cts vue svelte rb php cs fs fsx vb swift dart lua pl pm ex exs
    erl hrl hs ml mli elm clj cljs r jl zig nim v sh bash zsh fish ps1 psm1 bat cmd sql
    proto tf hcl nix cmake mk toml yaml yml json jsonc xml html htm css scss sass less md
    rst txt cfg ini ipynb
"""
_EXTENSIONS = frozenset(_EXTENSION_WORDS.split())
_NAMES = frozenset(
    {
        "Makefile",
        "Dockerfile",
        "Containerfile",
        "Jenkinsfile",
        "Rakefile",
        "Gemfile",
        "Justfile",
        "BUILD",
        "WORKSPACE",
        "CMakeLists.txt",
    }
)
# The runner's workspace, `<work>/<repo>/<repo>/`: GitHub-hosted Linux, macOS and Windows
# runners, a container job (`/__w`) and a self-hosted runner (`…/_work`).
_WORKSPACE = re.compile(
    r"(?:/home/runner/work|/Users/runner/work|/__w|[A-Za-z]:[\\/]a|"
    r"(?:/|[A-Za-z]:[\\/])[^\s:]*?[\\/]_work)[\\/]([^\\/\s]+)[\\/]\1[\\/]"
)
# What may stand right before a path: a path is a whole word, not the tail of a URL
# (`https://host/a.py:3`) or of another word.
_BEFORE = r"(?<![^\s\"'`(\[\]<>,;|=›])"
_PATH = r"(?:file://)?(?:[A-Za-z]:[\\/])?[^\s:\"'`()\[\]<>,;|*?=]+"
_FORMS = (
    # pytest, gcc/clang, rustc, go, eslint-compact, kotlinc: `path:12`, `path:12:5`
    re.compile(rf"{_BEFORE}(?P<path>{_PATH}):(?P<line>\d+)(?!\.\d)"),
    # tsc, msbuild: `path(12,5)`
    re.compile(rf"{_BEFORE}(?P<path>{_PATH})\((?P<line>\d+)(?:,\d+)?\)"),
    # a Python traceback, quoted; a link checker's `File README.md, line 9`
    re.compile(r"\bFile \"(?P<path>[^\"]+)\", line (?P<line>\d+)"),
    re.compile(r"\bFile (?P<path>[^\s\",]+), line (?P<line>\d+)"),
)


@dataclass(frozen=True)
class Place:
    """A line of a file in the repository, as an error line names it."""

    path: str
    line: int


def repo_path(raw: str) -> str | None:
    """The repository-relative path `raw` names, or None: an absolute path outside the
    runner's workspace (a library, a temporary script), one that climbs out (`..`), or a
    word that is not a file of a kind a log points at."""
    path = raw.removeprefix("file://")
    workspace = _WORKSPACE.match(path)
    if workspace is not None:
        path = path[workspace.end() :]
    elif path.startswith(("/", "\\", "~")) or re.match(r"[A-Za-z]:[\\/]", path):
        return None
    path = path.replace("\\", "/").removeprefix("./")
    parts = path.split("/")
    if any(part in ("", ".", "..") for part in parts):
        return None
    name = parts[-1]
    ext = name.rsplit(".", 1)[1].lower() if "." in name else ""
    if name not in _NAMES and ext not in _EXTENSIONS:
        return None
    return path


def place(text: str) -> Place | None:
    """The first repository path and line that `text` (one log line) names, if any."""
    found: list[tuple[int, Place]] = []
    for form in _FORMS:
        for m in form.finditer(text):
            path, line = repo_path(m.group("path")), int(m.group("line"))
            if path is not None and line >= 1:
                found.append((m.start(), Place(path, line)))
                break  # the first of this form; the earliest of all forms wins below
    return min(found, key=lambda f: f[0])[1] if found else None


def error_annotations(evidence: Evidence, limit: int = MAX_ANNOTATIONS) -> tuple[Annotation, ...]:
    """One `failure` annotation per error line that names a path and line, job by job in
    log order, each place once, at most `limit`."""
    out: list[Annotation] = []
    seen: set[Place] = set()
    for job in evidence.jobs:
        for where, text in _error_texts(job):
            if len(out) >= limit:
                return tuple(out)
            if where in seen:
                continue
            seen.add(where)
            out.append(
                Annotation(
                    path=where.path,
                    start_line=where.line,
                    end_line=where.line,
                    annotation_level="failure",
                    message=_message(text),
                    title=_title(f"{job.job}: {job.step}" if job.step else job.job),
                )
            )
    return tuple(out)


def _error_texts(job: JobFailure) -> Iterable[tuple[Place, str]]:
    texts = dict(job.excerpt)
    for number in job.error_lines:
        text = texts.get(number)
        where = place(text) if text is not None else None
        if where is not None and text is not None:
            yield where, text


def _message(text: str) -> str:
    # Plain text on GitHub's page; the runner's `##[error]` is its own markup, not the error.
    text = terminal_safe(text).strip().removeprefix("##[error]")
    return text if len(text) <= _MESSAGE_MAX else text[: _MESSAGE_MAX - 1] + "…"


# --- the writer ----------------------------------------------------------------------------


# How long a repository whose check-run create was refused with 403 is not asked again.
FORBIDDEN_PAUSE = 3600.0


class CheckWriter:
    """Makes the `landbot` check run's writes, each once (see the module docstring)."""

    def __init__(
        self,
        store: Store,
        gh: LandOps,
        *,
        policy_for: Callable[[str], Policy],
        failpoint: Callable[[str], None] | None = None,
    ) -> None:
        self.store = store
        self.gh = gh
        self.policy_for = policy_for
        self.failpoint = failpoint or (lambda name: None)
        # Repositories where GitHub refused a create with 403 (a personal token cannot make
        # check runs, an installation may lack `checks: write`): not asked again for a while,
        # so each drop does not pay a refused call and a warning.
        self._forbidden_until: dict[str, float] = {}

    def start(self, drop: Drop, pr: PrSnapshot, *, after_fixer: bool = False) -> None:
        """Create the drop's check run `in_progress` on its head, once."""
        assert drop.id is not None
        if not wants_check(drop, pr, self.policy_for(drop.repo), after_fixer=after_fixer):
            return
        if self._forbidden_until.get(drop.repo.lower(), 0.0) > time.monotonic():
            logs.event(log, "check run skipped: GitHub refused one lately", logging.DEBUG)
            return
        key = start_key(drop.id)
        state = self.store.begin_action(key, "checkstart", drop.id)
        if state not in ("new", "started"):
            return
        with logs.bound(**logs.drop_fields(drop), action_key=key):
            details = pr.url or None
            try:
                # Resumed: a previous attempt may have made it before dying.
                run = self._find(drop) if state == "started" else None
                if run is None:
                    run = self._create(drop, details)
            except _NOT_KNOWN:
                raise  # the job is retried; "started" looks for the run first
            except GitHubError as exc:
                logs.event(log, "check run refused", logging.WARNING, stage="create", error=exc)
                self.store.finish_action(key, "done", {"refused": str(exc)[:500]})
                if exc.status == 403:
                    self._forbidden_until[drop.repo.lower()] = time.monotonic() + FORBIDDEN_PAUSE
                return
            self.failpoint("after_check_create")
            self.store.finish_action(
                key,
                "done",
                {"check_run": run.id, "head_sha": drop.head_sha, "details_url": details},
            )
            logs.event(log, "check run started", check_run_id=run.id, url=run.html_url)

    def _create(self, drop: Drop, details_url: str | None) -> CheckRun:
        assert drop.id is not None
        mine = external_id(drop.id)

        def create() -> CheckRun:
            return self.gh.create_check_run(
                drop.repo,
                drop.head_sha,
                name=CHECK_NAME,
                status="in_progress",
                external_id=mine,
                details_url=details_url,
                output=start_output(drop),
            )

        try:
            return create()
        except MutationOutcomeUnknown as exc:
            # Made or not: the head's check runs say which; created once more only if not.
            logs.event(log, "check run create unanswered", logging.WARNING, error=exc)
            return self._find(drop) or create()

    def _find(self, drop: Drop) -> CheckRun | None:
        assert drop.id is not None
        mine = external_id(drop.id)
        return next(
            (
                r
                for r in self.gh.check_runs(drop.repo, drop.head_sha)
                if r.external_id == mine and r.name == CHECK_NAME
            ),
            None,
        )

    def finish(
        self,
        drop_id: int,
        drop: Drop,
        decision: Decision,
        *,
        pr: PrSnapshot | None = None,
        evidence: Evidence | None = None,
        fixer: FixerResult | None = None,
    ) -> None:
        """Complete the drop's check run with the settled outcome, and take the fixing
        label off when it was put on for this drop; once per settled outcome."""
        concluded = conclusion(decision.outcome)
        if concluded is None:
            return
        done = {a.kind: a for a in self.store.actions(drop_id) if a.status == "done"}
        started = _result(done.get("checkstart"))
        run_id = started.get("check_run")
        label = _result(done.get("runfixer")).get("label")
        if not isinstance(run_id, int) and not label:
            return  # no check run and no label: nothing to write, nothing to claim
        key = finish_key(drop_id, decision.outcome)
        state = self.store.begin_action(key, "checkfinish", drop_id)
        if state not in ("new", "started"):
            return
        with logs.bound(**logs.drop_fields(drop), action_key=key):
            result: dict[str, Any] = {}
            if isinstance(run_id, int):
                output = check_output(
                    decision,
                    drop,
                    pr or _bare_pr(drop),
                    evidence or Evidence(),
                    fixer,
                    policy=self.policy_for(drop.repo),
                    fix_comment_url=_url(done.get("announcefix")),
                    handback_url=_url(done.get("handback")),
                )
                handback = _url(done.get("handback"))
                details = handback or started.get("details_url") or None
                result["check_run"] = self._complete(
                    drop,
                    run_id,
                    concluded,
                    output,
                    details,
                    resumed=state == "started",
                    handback_url=handback,
                )
            if isinstance(label, str) and label:
                result["label_removed"] = self._unlabel(drop, label)
            self.store.finish_action(key, "done", result)

    def _complete(
        self,
        drop: Drop,
        run_id: int,
        concluded: Conclusion,
        output: CheckOutput,
        details_url: str | None,
        *,
        resumed: bool,
        handback_url: str | None = None,
    ) -> str:
        def send(out: CheckOutput = output) -> None:
            self.gh.update_check_run(
                drop.repo,
                run_id,
                status="completed",
                conclusion=concluded,
                details_url=details_url,
                output=out,
            )

        try:
            if resumed and self._completed(drop, run_id, concluded):
                return "already completed"
            try:
                send()
            except MutationOutcomeUnknown as exc:
                logs.event(log, "check run update unanswered", logging.WARNING, error=exc)
                if self._completed(drop, run_id, concluded):
                    return "already completed"
                send()
        except _NOT_KNOWN:
            raise
        except GitHubError as exc:
            logs.event(log, "check run refused", logging.WARNING, stage="complete", error=exc)
            if not 400 <= exc.status < 500:
                return f"refused: {str(exc)[:300]}"
            # Refused for what it says (too long, a bad annotation): the conclusion must
            # still land, or the check shows "in progress" forever. Once, bare.
            bare = bare_output(output, exc.status, handback_url or details_url, handback_url)
            try:
                send(bare)
            except _NOT_KNOWN:
                raise  # the job is retried; "started" looks at the run first
            except GitHubError as again:
                logs.event(
                    log, "check run refused", logging.WARNING, stage="complete bare", error=again
                )
                return f"refused: {str(exc)[:150]}; bare: {str(again)[:150]}"
            logs.event(log, "check run completed bare", check_run_id=run_id, conclusion=concluded)
            return f"{concluded} (bare: the full output got {exc.status})"
        logs.event(
            log,
            "check run completed",
            check_run_id=run_id,
            conclusion=concluded,
            annotations=len(output.annotations),
        )
        return concluded

    def _completed(self, drop: Drop, run_id: int, concluded: Conclusion) -> bool:
        """Whether the check run already shows this conclusion (an update that applied)."""
        return any(
            r.id == run_id and r.status == "completed" and r.conclusion == concluded
            for r in self.gh.check_runs(drop.repo, drop.head_sha)
        )

    def _unlabel(self, drop: Drop, label: str) -> bool:
        """Take the fixing label off; False when it was gone already (or GitHub refused)."""
        try:
            removed = self.gh.remove_label(drop.repo, drop.pr, label)
        except _NOT_KNOWN:
            raise
        except GitHubError as exc:
            logs.event(log, "fixing label not removed", logging.WARNING, label=label, error=exc)
            return False
        logs.event(log, "fixing label removed", label=label, was_there=removed)
        return removed


def bare_output(
    output: CheckOutput, status: int, link: str | None, handback_url: str | None
) -> CheckOutput:
    """The output sent once more after GitHub refused the full one: its title, and one line
    saying where the text is (no annotations: one of them may be what was refused)."""
    where = "the hand-back comment" if handback_url else "the pull request"
    shown = f"[{where}]({link})" if link and _SAFE_LINK.fullmatch(link) else where
    return CheckOutput(
        title=output.title,
        summary=f"GitHub refused this check's full text ({status}); {shown} has it.",
    )


def label_key(drop_id: int) -> str:
    return f"check:{drop_id}:label"


def claim_fixing_label(store: Store, gh: LandOps, drop: Drop, pr: PrSnapshot, label: str) -> bool:
    """Put the fixing label on for the drop's fix job; True when landbot put it on, so that
    `finish` takes it off. A label already on the PR is a person's (or another drop's): left
    alone, and not landbot's to remove. The decision is claimed in the ledger before the
    add, so a resumed RunFixer that finds the label on tells its own add from a person's."""
    assert drop.id is not None
    key = label_key(drop.id)
    claimed = any(a.key == key for a in store.actions(drop.id))
    if label in pr.labels and not claimed:
        logs.event(log, "fixing label already on: left to whoever set it", label=label)
        return False
    state = store.begin_action(key, "fixinglabel", drop.id)
    if state == "done":
        return bool(_result(next(a for a in store.actions(drop.id) if a.key == key)).get("added"))
    added = add_fixing_label(gh, drop, label)
    store.finish_action(key, "done", {"label": label, "added": added})
    return added


def add_fixing_label(gh: LandOps, drop: Drop, label: str) -> bool:
    """Put the fixing label on while the fixer works; True when it is on. A refusal is
    logged and leaves the fix job alone (a label is a courtesy, not the notification)."""
    try:
        gh.add_label(drop.repo, drop.pr, label)
    except _NOT_KNOWN:
        raise  # the job is retried; adding it twice is harmless
    except GitHubError as exc:
        logs.event(log, "fixing label refused", logging.WARNING, label=label, error=exc)
        return False
    logs.event(log, "fixing label added", label=label)
    return True


def _result(action: Any) -> dict[str, Any]:
    result = getattr(action, "result", None)
    return result if isinstance(result, dict) else {}


def _url(action: Any) -> str | None:
    url = _result(action).get("url")
    return url if isinstance(url, str) and url else None


def _bare_pr(drop: Drop) -> PrSnapshot:
    """The pull request as the drop knows it, for a settle that did not re-read it (a
    stale fix job, a job that failed): only its base and head are shown."""
    return PrSnapshot(
        state="open",
        head_sha=drop.head_sha,
        in_queue=False,
        author="",
        base_ref=drop.base_ref or "main",
    )
