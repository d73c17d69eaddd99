"""What the store hands back: one frozen record per row kind, attribute names = column names.

These live in store/, not core/: they are rows as stored (ids, leases, statuses, timestamps),
which only the pipeline, the web pages and the demo read. The stage-neutral value inside a
drop row is the core `Drop` (`StoredDrop.drop`); a budget row is the core `History`.

Values are read back as the store wrote them (the Literal-typed fields are not re-checked).
The one name that differs from its column is `class_` (column `class`, a Python keyword).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from landbot.core.model import Drop, Outcome, Source, TriageClass
from landbot.core.reasons import Reason


@dataclass(frozen=True)
class StoredDrop:
    """A row of `drops`: the drop as reported, and what landbot made of it so far."""

    id: int
    repo: str
    pr: int
    head_sha: str
    merge_group_sha: str | None
    reason: Reason
    raw_reason: str | None
    source: Source
    dedupe_key: str
    class_: TriageClass | None
    outcome: Outcome
    summary: str | None
    evidence: dict[str, Any] | None
    plan: dict[str, Any] | None  # the decision, saved before acting
    delivery_id: str | None  # the webhook that reported it
    removal_id: str | None  # the timeline event that reported it
    observed_at: dt.datetime
    created_at: dt.datetime
    updated_at: dt.datetime

    @property
    def drop(self) -> Drop:
        """The core value every stage works from (the store keeps no base ref)."""
        return Drop(
            repo=self.repo,
            pr=self.pr,
            head_sha=self.head_sha,
            reason=self.reason,
            source=self.source,
            raw_reason=self.raw_reason,
            merge_group_sha=self.merge_group_sha,
            observed_at=self.observed_at,
            id=self.id,
        )


@dataclass(frozen=True)
class StoredJob:
    """A row of `jobs`: a durable work item and its lease."""

    id: int
    kind: str
    dedupe_key: str | None
    drop_id: int | None
    payload: dict[str, Any]
    status: str
    attempts: int
    lease_owner: str | None
    lease_expires_at: dt.datetime | None
    not_before: dt.datetime | None
    result: Any  # whatever JSON the job's handler returned
    error: str | None
    created_at: dt.datetime
    updated_at: dt.datetime
    repo: str | None = None  # 0009: the pull request the job acts on (lower-cased)
    pr: int | None = None


@dataclass(frozen=True)
class StoredDelivery:
    """A row of `deliveries`: one webhook delivery, its raw body kept for the worker."""

    id: int
    delivery_id: str
    event: str
    action: str | None
    repo: str | None
    body: bytes
    received_at: dt.datetime
    status: str
    attempts: int
    lease_owner: str | None
    lease_expires_at: dt.datetime | None
    processed_at: dt.datetime | None
    error: str | None


@dataclass(frozen=True)
class StoredGroup:
    """A row of `merge_groups`: a merge-group commit that tested a PR, and its failures."""

    id: int
    repo: str
    pr: int
    head_sha: str
    head_ref: str
    base_ref: str | None  # None: made from a failed check's webhook, the group event missed
    base_sha: str | None
    status: str
    failures: list[dict[str, Any]] | None
    created_at: dt.datetime
    updated_at: dt.datetime


@dataclass(frozen=True)
class StoredAction:
    """A row of `actions`: one side effect on GitHub, claimed before it is made."""

    id: int
    key: str
    drop_id: int | None
    kind: str
    status: str
    result: Any
    created_at: dt.datetime
    updated_at: dt.datetime


@dataclass(frozen=True)
class StoreCounts:
    """Drops by outcome, jobs by status, deliveries by status (for /metrics, the dashboard)."""

    drops: Mapping[str, int]
    jobs: Mapping[str, int]
    deliveries: Mapping[str, int]


@dataclass(frozen=True)
class LedgerTest:
    """The flaky-test ledger's view of one failing test of one check in a repository,
    within a window: how often, on which pull requests, and which of those passed when
    they were retried (the next merge group of the same head passed that check, or the
    pull request merged)."""

    repo: str
    test: str
    check: str
    failures: int
    prs: tuple[int, ...]  # the pull requests it failed on, by number
    passed_prs: tuple[int, ...]  # of those, the ones whose retry passed
    retries_passed: int  # failures followed by a passing retry
    first_seen: dt.datetime
    last_seen: dt.datetime


@dataclass(frozen=True)
class LedgerFailure:
    """One row of the flaky-test ledger: a test failing in one check on one commit."""

    check: str
    pr: int | None  # None: a failure on the base branch
    head_sha: str | None
    sha: str  # the commit it failed on (a merge group)
    drop_id: int | None  # the drop whose triage saw it (its evidence has the lines)
    seen_at: dt.datetime
    retry: str  # pending | passed | failed


@dataclass(frozen=True)
class FlakyTestHistory:
    """Every failure the ledger holds of one test in a repository (any check), oldest first:
    what a flaky test's issue is decided and written from."""

    repo: str
    test: str
    failures: tuple[LedgerFailure, ...]

    @property
    def prs(self) -> tuple[int, ...]:
        return tuple(dict.fromkeys(f.pr for f in self.failures if f.pr is not None))

    @property
    def passed_prs(self) -> tuple[int, ...]:
        """The pull requests it failed on whose retry passed."""
        return tuple(
            dict.fromkeys(f.pr for f in self.failures if f.pr is not None and f.retry == "passed")
        )

    @property
    def last_failure_at(self) -> dt.datetime | None:
        return max((f.seen_at for f in self.failures), default=None)


@dataclass(frozen=True)
class StoredFlakyIssue:
    """A row of `flaky_issues`: the issue landbot keeps about one flaky test."""

    id: int
    repo: str
    test: str
    number: int | None  # None: not made yet (its create is claimed in comment_posts)
    state: str  # open | closed, as landbot left it
    owners: str | None  # space-separated, from CODEOWNERS when it was opened
    failures_shown: int
    passed_shown: int
    last_failure_at: dt.datetime | None
    opened_at: dt.datetime
    closed_at: dt.datetime | None
    updated_at: dt.datetime


@dataclass(frozen=True)
class StoredRepoFile:
    """A row of `repo_files`: a repository's own settings file as last read from its
    default branch, and the last good version (the one in effect)."""

    repo: str  # lower-cased
    path: str  # the path read (`[policy] repo_file` at the time)
    commit_sha: str | None  # the default-branch commit of the last read
    blob_sha: str | None  # the file's blob there; None: the branch had no such file
    text: str | None
    good_commit_sha: str | None
    good_sha: str | None  # None: no good file, the host's settings apply
    good_text: str | None
    read_at: dt.datetime | None  # when the last read started; None: never read
    pushed_at: dt.datetime | None  # the last push to the default branch touching the file
    reports: dict[str, Any] | None  # blob sha → {"state": "started" | "done", "at": ISO time}
    updated_at: dt.datetime

    @property
    def stale(self) -> bool:
        """A push touched the file after the last read started (or it was never read)."""
        if self.read_at is None:
            return True
        return self.pushed_at is not None and self.pushed_at > self.read_at

    @property
    def invalid(self) -> bool:
        """The last version read is not the good one: it was refused."""
        return self.blob_sha is not None and self.blob_sha != self.good_sha

    def reported(self, blob_sha: str) -> bool:
        entry = (self.reports or {}).get(blob_sha)
        return isinstance(entry, dict) and entry.get("state") == "done"


@dataclass(frozen=True)
class StoredDispatch:
    """A row of `fix_dispatches`: one fix job run as a workflow on the repository's runners
    (the `actions` fixer backend)."""

    id: int
    key: str  # the one-time job id, in the run's name (run-name) and inputs
    fix_job: int  # the jobs row that waits for this run
    drop_id: int
    repo: str  # lower-cased
    installation: str
    workflow: str
    state: str  # queued | claimed | sending | sent | running | done
    run_id: int | None
    sent_at: dt.datetime | None  # when the dispatch request last went out
    deadline: dt.datetime | None  # set when it is first sent
    outcome: str | None  # done: what became of it
    created_at: dt.datetime
    updated_at: dt.datetime

    @property
    def active(self) -> bool:
        """Holding one of the caps' slots (claimed, sent or running on a runner)."""
        return self.state in ACTIVE_DISPATCH_STATES


ACTIVE_DISPATCH_STATES = ("claimed", "sending", "sent", "running")


@dataclass(frozen=True)
class StoredPost:
    """A row of `comment_posts`: a comment landbot makes once, claimed before its POST.

    `state` is "posting" (the POST may have gone out; no id kept yet) or "posted".
    `claimed` (not a column) says what the claim found: "new" (nothing before: this caller
    posts), "posting" (an earlier claim whose answer never came: look for the comment
    first) or "posted" (it exists: edit it, never post it again)."""

    id: int
    key: str
    repo: str
    pr: int
    marker: str
    drop_id: int | None
    state: str
    owner: str | None
    comment_id: int | None
    node_id: str | None
    url: str | None
    claimed_at: dt.datetime
    updated_at: dt.datetime
    claimed: str = "posted"


@dataclass(frozen=True)
class StoredBaseline:
    """A row of `baselines`: one green job's log in triage's compact form (the bytes of
    `Baseline.to_bytes()`; the store does not read them)."""

    repo: str
    run_id: int
    job_name: str
    job_id: int
    head_sha: str | None
    data: bytes
    made_at: dt.datetime


@dataclass(frozen=True)
class StoredBaselineRun:
    """A row of `baseline_runs`: the run found as the baseline of a job on a base commit
    (`run_id` None: none was found), and when."""

    repo: str
    base_ref: str
    workflow: str
    job_name: str
    base_sha: str
    run_id: int | None
    run_sha: str | None
    job_id: int | None
    found_at: dt.datetime


@dataclass(frozen=True)
class StoredBreaker:
    """A repository's breaker (issue 27.2), as the store keeps it."""

    repo: str
    open: bool
    cause: str | None
    detail: str | None
    links: list[str] | None
    opened_at: dt.datetime | None
    closed_at: dt.datetime | None
    closed_by: str | None
    last_pass_at: dt.datetime | None
    issue_number: int | None
    issue_url: str | None
    issue_state: str | None
    issue_body_sha: str | None
    updated_at: dt.datetime


@dataclass(frozen=True)
class StoredSweep:
    """A row of `repo_sweeps`: when `landbot poll` last swept the repository (None: never)
    and when its merge queue last showed activity (None: never seen)."""

    repo: str
    swept_at: dt.datetime | None
    active_at: dt.datetime | None
