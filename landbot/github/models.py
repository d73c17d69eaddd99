"""What the stages need from GitHub, as small frozen dataclasses.

Built from GitHub's JSON by parse.py; fields GitHub may omit
(a deleted user, a deleted fork, a check run still running) are Optional here.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from landbot.core.model import PrSnapshot


@dataclass(frozen=True)
class PullState:
    """A pull request as landbot re-reads it before acting (one GraphQL call)."""

    repo: str  # OWNER/NAME asked for
    node_id: str
    number: int
    state: str  # OPEN | CLOSED | MERGED
    merged: bool
    head_oid: str
    head_ref: str
    base_ref: str
    in_merge_queue: bool
    auto_merge: bool  # an auto-merge request is armed
    labels: tuple[str, ...]
    author: str | None  # None for a deleted account
    maintainer_can_modify: bool
    head_repo: str | None  # nameWithOwner of the head repository; None if it was deleted
    url: str
    last_removal: QueueEvent | None = None  # the latest RemovedFromMergeQueueEvent
    force_pushed_at: tuple[datetime, ...] = ()  # HeadRefForcePushedEvents, oldest first
    commits: tuple[str, ...] = ()  # the oids of the PR's last 100 commits

    @property
    def is_fork(self) -> bool:
        """The head lives in another repository (or one that no longer exists)."""
        return self.head_repo is None or self.head_repo.lower() != self.repo.lower()

    def snapshot(self) -> PrSnapshot:
        """The stage-neutral view the decision reads."""
        state = self.state.upper()
        merged = self.merged or state == "MERGED"
        return PrSnapshot(
            state="merged" if merged else "closed" if state == "CLOSED" else "open",
            head_sha=self.head_oid,
            in_queue=self.in_merge_queue,
            author=self.author or "ghost",
            labels=self.labels,
            auto_merge=self.auto_merge,
            fork=self.is_fork,
            maintainer_can_modify=self.maintainer_can_modify,
            node_id=self.node_id,
            base_ref=self.base_ref,
            head_ref=self.head_ref,
            url=self.url,
            removed_commit=self.last_removal.before_commit if self.last_removal else None,
            removed_parents=self.last_removal.before_parents if self.last_removal else (),
            removed_at=self.last_removal.created_at if self.last_removal else None,
            force_pushed_at=self.force_pushed_at,
            commits=self.commits,
        )


@dataclass(frozen=True)
class CheckRun:
    id: int  # for a GitHub Actions check run, also the job id
    name: str
    status: str  # queued | in_progress | completed | ...
    conclusion: str | None  # success | failure | cancelled | timed_out | ... (None until done)
    html_url: str | None
    details_url: str | None
    app_slug: str | None  # "github-actions" for Actions
    started_at: datetime | None
    completed_at: datetime | None
    annotations_count: int = 0  # output.annotations_count: whether annotations are worth a call
    head_sha: str | None = None
    external_id: str | None = None  # landbot's own check runs: "drop:<id>" (found on resume)


@dataclass(frozen=True)
class Annotation:
    """One check-run annotation (`GET …/check-runs/{id}/annotations`)."""

    path: str
    start_line: int
    annotation_level: str  # notice | warning | failure
    message: str
    title: str = ""
    end_line: int | None = None  # None: the start line


@dataclass(frozen=True)
class CheckOutput:
    """The `output` of a check run landbot writes (title, markdown summary, annotations).

    GitHub takes at most 50 annotations per request; the client sends more in batches."""

    title: str
    summary: str
    text: str | None = None
    annotations: tuple[Annotation, ...] = ()


@dataclass(frozen=True)
class FileContent:
    """One file as `GET /repos/{owner}/{repo}/contents/{path}` serves it, decoded."""

    path: str
    sha: str  # the blob's sha: names this version of the file
    # UTF-8 (a file that is not is refused by the client: GitHubError); None: over the
    # caller's `max_bytes`, so not read (`size` says how large it is).
    text: str | None
    size: int


@dataclass(frozen=True)
class BranchHead:
    """A repository's default branch and the commit at its tip."""

    branch: str
    sha: str


@dataclass(frozen=True)
class WorkflowRun:
    id: int
    name: str | None
    head_branch: str | None
    head_sha: str
    status: str | None
    conclusion: str | None
    html_url: str
    # The run's title (a workflow's `run-name`, else the commit's message), its event, its
    # workflow file and when it was created: how the actions fixer backend finds its run.
    display_title: str = ""
    event: str | None = None
    path: str | None = None
    created_at: datetime | None = None
    # Which workflow ran (a baseline is a green run of the failed job's own workflow).
    workflow_id: int | None = None


@dataclass(frozen=True)
class Artifact:
    """One workflow run artifact (GET /repos/{owner}/{repo}/actions/runs/{id}/artifacts)."""

    id: int
    name: str
    size_in_bytes: int
    expired: bool
    run_id: int | None = None
    head_sha: str | None = None


@dataclass(frozen=True)
class Dispatched:
    """A workflow_dispatch GitHub accepted; the run's id when GitHub said it (the
    `return_run_details` answer), else None (the 204 answer: find the run by its title)."""

    run_id: int | None = None


@dataclass(frozen=True)
class Step:
    number: int
    name: str
    status: str | None
    conclusion: str | None


@dataclass(frozen=True)
class Job:
    id: int
    run_id: int | None
    name: str
    status: str | None
    conclusion: str | None
    html_url: str | None
    steps: tuple[Step, ...]
    # The workflow's name and the run's branch (a merge group's `gh-readonly-queue/<base>/…`
    # names its base): where triage looks for the job's last green run.
    workflow_name: str | None = None
    head_branch: str | None = None


@dataclass(frozen=True)
class Comment:
    id: int
    node_id: str
    body: str
    user: str | None  # login; None for a deleted account
    created_at: datetime | None
    html_url: str | None


@dataclass(frozen=True)
class Issue:
    """One issue (`GET /repos/{owner}/{repo}/issues/{n}`): the ones landbot opens itself
    (a flaky test's, the breaker's), found again by their hidden marker."""

    number: int
    node_id: str
    title: str
    body: str
    state: str  # open | closed
    labels: tuple[str, ...]
    user: str | None  # login; None for a deleted account
    html_url: str | None
    created_at: datetime | None = None
    updated_at: datetime | None = None
    closed_at: datetime | None = None
    state_reason: str | None = None  # completed | not_planned | reopened (GitHub's)


@dataclass(frozen=True)
class EnqueueResult:
    already_queued: bool  # GitHub said "already in the queue": treated as success
    entry_id: str | None
    state: str | None  # MergeQueueEntryState, when GitHub returned the entry
    position: int | None


@dataclass(frozen=True)
class QueueEvent:
    """One `AddedToMergeQueueEvent` or `RemovedFromMergeQueueEvent` of a pull request."""

    kind: str  # "added" | "removed"
    id: str
    created_at: datetime | None
    reason: str | None  # GraphQL's free string (removed only), e.g. "failed_checks"
    before_commit: str | None  # beforeCommit.oid (removed only)
    actor: str | None
    # beforeCommit's parents, in order (removed, sweep only): a merge-group commit's second
    # parent is the PR head it was built on.
    before_parents: tuple[str, ...] = ()


@dataclass(frozen=True)
class PullRemovals:
    """An open pull request with its last few queue events (the poller's sweep)."""

    repo: str
    number: int
    node_id: str
    head_oid: str
    base_ref: str
    in_merge_queue: bool
    events: tuple[QueueEvent, ...]  # oldest first, as GitHub lists them
    # When the head was force-pushed (`HeadRefForcePushedEvent`s among the same last items).
    force_pushed_at: tuple[datetime, ...] = ()


@dataclass(frozen=True)
class SweptBatch:
    """One batched sweep query's answer: each repository's pull requests, and the
    repositories GitHub answered with an error instead (missing, not accessible), with its
    message; one repository's error does not lose the others' answers."""

    found: dict[str, list[PullRemovals]]
    missing: dict[str, str]


@dataclass(frozen=True)
class MergeQueueEntry:
    id: str
    state: str  # AWAITING_CHECKS | LOCKED | MERGEABLE | QUEUED | UNMERGEABLE
    position: int
    pr_number: int | None
    pr_node_id: str | None
    head_oid: str | None  # the merge-group commit under test
    base_oid: str | None
    enqueued_at: datetime | None
