"""The values every stage shares: a drop, the pull request as re-read, the evidence, the
fixer's result. Plain data, no I/O."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Literal

from landbot.core.reasons import Reason

Source = Literal["webhook", "poll", "command", "operator"]
# `waiting_base`: the same job fails the same way on the base branch (issue 27.1), so the drop
# waits for the base to turn green; `held`: the repository's breaker is open (issue 27.2).
Outcome = Literal[
    "pending", "requeued", "fixed", "handed_back", "ignored", "failed", "waiting_base", "held"
]
# Outcomes that are not settled: the drop is still landbot's to carry on.
WAITING: frozenset[str] = frozenset({"waiting_base", "held"})
TriageClass = Literal[
    "genuine", "flaky", "infrastructure", "timeout", "cancelled", "policy", "unknown"
]
Verdict = Literal["fixed", "flaky", "needs_human"]


@dataclass(frozen=True)
class Drop:
    """One removal of a pull request from a merge queue, whichever door reported it."""

    repo: str
    pr: int
    head_sha: str
    reason: Reason
    source: Source
    raw_reason: str | None = None
    merge_group_sha: str | None = None
    base_ref: str | None = None
    observed_at: dt.datetime | None = None
    id: int | None = None


@dataclass(frozen=True)
class PrSnapshot:
    """The pull request as re-read just before acting."""

    state: Literal["open", "closed", "merged"]
    head_sha: str
    in_queue: bool
    author: str
    labels: tuple[str, ...] = ()
    auto_merge: bool = False
    fork: bool = False
    maintainer_can_modify: bool = True
    node_id: str = ""
    base_ref: str = "main"
    head_ref: str = ""
    url: str = ""
    # The latest removal from the queue as the timeline names it, the force pushes, and the
    # PR's recent commits: how the decision tells a removal of this head from a push.
    removed_commit: str | None = None
    removed_parents: tuple[str, ...] = ()
    removed_at: dt.datetime | None = None
    force_pushed_at: tuple[dt.datetime, ...] = ()
    commits: tuple[str, ...] = ()


@dataclass(frozen=True)
class FailedCheck:
    name: str
    conclusion: str
    url: str = ""


@dataclass(frozen=True)
class ReportedTest:
    """A failed test as the run's JUnit XML report names it (triage/junit.py): its
    identity (the flaky ledger's key), its message in one line, and the start of its text."""

    test: str
    message: str = ""
    text: str = ""


@dataclass(frozen=True)
class JobFailure:
    """What triage found in one failed job's log (filled by the triage stage)."""

    job: str
    url: str
    step: str | None
    error_lines: tuple[int, ...]
    excerpt: tuple[tuple[int, str], ...]
    summary: str
    class_: TriageClass
    # The failing step's own script as the log echoed it ("" for a `uses:` step, whose
    # title is an action, not a command), the directory it ran in when known, and a link
    # to the failing line of the step's log.
    run: str = ""
    working_directory: str = ""
    line_url: str = ""
    # What picked the failing step and region (``steps-api``, ``annotations`` or ``log``),
    # the failed tests the log names (the flaky ledger's keys), the class the log's words
    # gave before the positive evidence was weighed (None: the same as `class_`), and that
    # evidence in one sentence ("failed in 4 other pull requests this week and passed on
    # retry", "failed the same way on the pull request's own head").
    signal: str = "log"
    failed_tests: tuple[str, ...] = ()
    log_class: TriageClass | None = None
    flaky_evidence: str = ""
    # When the run's test report named the failed tests (issue 26.4), `failed_tests` are
    # its names, `tests_from` the artifact(s) read, and `reported_tests` the first few
    # failures with their messages; otherwise the log's names, "" and ().
    tests_from: str = ""
    reported_tests: tuple[ReportedTest, ...] = ()


@dataclass(frozen=True)
class Evidence:
    failed_checks: tuple[FailedCheck, ...] = ()
    # Triage's verdict on the failure as a whole, and why (None: no triage ran).
    triage_class: TriageClass | None = None
    triage_reason: str = ""
    jobs: tuple[JobFailure, ...] = ()
    merge_group_source: str | None = None
    conflict_files: tuple[str, ...] = ()
    conflicts_all_quest: bool = False
    base_sha: str | None = None
    # For a quest-policy failure: each finding of the log explained from the pull request's
    # own change (what it added, deleted or moved), in finding order (triage/quest_explain).
    quest_explanations: tuple[str, ...] = ()
    # The merge group as the queue built it, so a person can reproduce it exactly: its
    # commit, the commit it was built on, and the pull requests ahead of this one in it.
    group_sha: str | None = None
    group_base_sha: str | None = None
    prs_ahead: tuple[int, ...] = ()
    # The checks that never completed (a `checks_timed_out` drop), by name.
    timed_out_checks: tuple[str, ...] = ()
    # The failed jobs that fail the same way (the same normalised error lines) on the base
    # branch's newest run (issue 27.1), by name; the base commit looked at and its link.
    base_red: tuple[str, ...] = ()
    base_red_sha: str | None = None
    base_red_url: str = ""
    # The failed jobs whose newest run on the base failed too, the same way or not (what
    # the breaker's "same failure on several pull requests" asks of each, issue 27.2).
    base_failed: tuple[str, ...] = ()


@dataclass(frozen=True)
class FixerResult:
    verdict: Verdict
    summary: str = ""
    recommendation: str = ""
    pushed_sha: str | None = None
    refused: str = ""  # why the host refused to publish the fix, if it did
    auto_merge_armed: bool = True  # False: pushed, but GitHub refused to arm auto-merge
    patch: str = ""  # the fix as a patch, for a fork landbot may not push to (bounded)
    # What a pushed fix changed, for the comment that announces it: (path, lines added,
    # lines deleted; -1 for a binary file), and the command the agent reproduced with.
    files: tuple[tuple[str, int, int], ...] = ()
    reproduce: str = ""
    # The PR cap that stopped the push ("pushes"), when one did: the fix was not pushed.
    cap: str = ""


@dataclass(frozen=True)
class History:
    requeues: int = 0  # for this head
    fixer_attempts: int = 0  # for this head
    # landbot's own actions on the pull request, across its heads, within the policy's
    # window and since the last reset (a push that is not landbot's, or /landbot retry).
    pr_pushes: int = 0
    pr_requeues: int = 0
    pr_fixer_runs: int = 0
    # The caps ("pushes", "requeues", "fixer_runs") already handed back for, in the same
    # window and since the same reset: a second drop past one mentions no one again.
    pr_capped: frozenset[str] = frozenset()


# Triage classes that are not the pull request's fault (re-enqueued within the budget).
NOT_ITS_FAULT: frozenset[TriageClass] = frozenset({"flaky", "infrastructure", "cancelled"})


@dataclass(frozen=True)
class Superseded:
    """A person's change that makes a pull request's pending drops moot: a push (the drops
    of `old_head`), a close or a merge (all of them). Intake reports it; the decision says
    what becomes of those drops."""

    repo: str
    pr: int
    cause: Literal["pushed", "closed", "merged"]
    old_head: str | None = None
    note: str = ""
