"""What the stages need from GitHub, as Protocols: each stage depends on operations, not on
a client (the real one is landbot.github.client.GitHubClient, which meets all of them).

One signature per operation, composed into one Protocol per stage.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from landbot.github.models import (
    Annotation,
    Artifact,
    BranchHead,
    CheckOutput,
    CheckRun,
    Comment,
    Dispatched,
    EnqueueResult,
    FileContent,
    Issue,
    Job,
    PullRemovals,
    PullState,
    QueueEvent,
    SweptBatch,
    WorkflowRun,
)


class ReadsPull(Protocol):
    def pull_request(self, repo: str, number: int) -> PullState: ...


class ArmsAutoMerge(Protocol):
    def git_token(self, repo: str) -> str: ...

    def enable_auto_merge(
        self,
        pr_node_id: str,
        expected_head_oid: str | None,
        merge_method: str = "MERGE",
        *,
        repo: str | None = None,
    ) -> None: ...


@runtime_checkable
class SweepOps(Protocol):
    """The poller's one call (the land stage also reads a PR's queue events from it)."""

    def queue_removals(self, repo: str, *, first: int = 50) -> list[PullRemovals]: ...


class BatchSweepOps(Protocol):
    """`landbot poll`'s batched sweep: several repositories per GraphQL query."""

    def queue_removals_many(self, repos: Sequence[str], *, first: int = 50) -> SweptBatch: ...

    def commit_parents(
        self, commits: Sequence[tuple[str, str]]
    ) -> dict[tuple[str, str], tuple[str, ...]]: ...

    def installation_of(self, repo: str) -> str:
        """The credentials `repo` is reached with: one batch never mixes two."""
        ...


class ReadsFiles(Protocol):
    def default_branch(self, repo: str) -> BranchHead:
        """The default branch and its tip (`GET /repos/{o}/{r}`, then its branch)."""
        ...

    def file_contents(
        self, repo: str, path: str, *, ref: str | None = None, max_bytes: int | None = None
    ) -> FileContent | None:
        """The file at `ref` (None: the default branch); None when there is no such file.
        Over `max_bytes` (GitHub's `size`): its path, sha and size, and `text` None, without
        reading its bytes."""
        ...


class WritesChecks(Protocol):
    """landbot's own check runs (the `checks: write` permission)."""

    def create_check_run(
        self,
        repo: str,
        head_sha: str,
        *,
        name: str,
        status: str,  # queued | in_progress | completed
        external_id: str | None = None,
        details_url: str | None = None,
        conclusion: str | None = None,  # required when status is completed
        output: CheckOutput | None = None,
    ) -> CheckRun: ...

    def update_check_run(
        self,
        repo: str,
        check_run_id: int,
        *,
        status: str | None = None,
        conclusion: str | None = None,
        details_url: str | None = None,
        output: CheckOutput | None = None,
    ) -> CheckRun:
        """More than 50 annotations go in further PATCHes of the same output (GitHub's limit);
        GitHub appends annotations, it does not replace them."""
        ...


class WritesLabels(Protocol):
    def add_label(self, repo: str, number: int, name: str) -> None:
        """Add a label to an issue or pull request (GitHub creates it when the repository has
        no label of that name); adding one it has is harmless."""
        ...

    def remove_label(self, repo: str, number: int, name: str) -> bool:
        """Remove a label; False when the issue did not have it (GitHub's 404), not an error."""
        ...


# Where GitHub looks for CODEOWNERS, in the order it looks: the first found is used
# (docs.github.com, "About code owners": ".github/, the root, or docs/").
CODEOWNERS_PATHS = (".github/CODEOWNERS", "CODEOWNERS", "docs/CODEOWNERS")


class ReadsCodeowners(Protocol):
    def codeowners(self, repo: str, *, ref: str | None = None) -> FileContent | None:
        """The repository's CODEOWNERS file (the first of CODEOWNERS_PATHS that exists, at
        `ref`, else the default branch); None when it has none. One call per path tried."""
        ...


class WritesIssues(Protocol):
    """Issues landbot opens itself (a flaky test's, the breaker's), each found again by a
    hidden marker in its body. Needs the `issues: write` permission."""

    def create_issue(
        self, repo: str, title: str, body: str, *, labels: tuple[str, ...] = ()
    ) -> Issue:
        """POST an issue. Not repeated after an unknown outcome (a second POST makes a
        second issue): the caller looks for it by its marker (`own_issues`) instead."""
        ...

    def update_issue(
        self,
        repo: str,
        number: int,
        *,
        title: str | None = None,
        body: str | None = None,
        state: str | None = None,  # open | closed
        state_reason: str | None = None,  # completed | not_planned | reopened
    ) -> Issue:
        """PATCH the fields given (repeatable: the same PATCH twice gives the same issue)."""
        ...

    def close_issue(self, repo: str, number: int, *, reason: str = "completed") -> Issue: ...

    def reopen_issue(self, repo: str, number: int) -> Issue: ...

    def own_issues(self, repo: str, label: str, *, state: str = "all") -> list[Issue]:
        """The repository's issues (not pull requests) with `label`, open and closed by
        default, opened by the bot's own login (anyone can paste a marker), oldest first."""
        ...

    def bot_login(self) -> str: ...


class IssueOps(WritesIssues, ReadsCodeowners, Protocol):
    """What a stage that keeps its own issue needs (the flaky tests', the breaker's)."""


class GitHubOps(ReadsPull, Protocol):
    """What triage reads and the land stage writes."""

    def check_runs(self, repo: str, ref: str) -> list[CheckRun]: ...

    def merge_group_runs(self, repo: str, *, head_sha: str | None = None) -> list[WorkflowRun]: ...

    def comments(self, repo: str, number: int) -> list[Comment]: ...

    def create_comment(self, repo: str, number: int, body: str) -> Comment: ...

    def upsert_marked_comment(
        self, repo: str, number: int, marker: str, body: str, *, known_id: int | None = None
    ) -> Comment: ...

    def minimize_comment(
        self, node_id: str, classifier: str = "OUTDATED", *, repo: str | None = None
    ) -> Any: ...

    def add_reaction(self, repo: str, comment_id: int, content: str) -> Any: ...

    def enqueue(
        self, pr_node_id: str, expected_head_oid: str | None, *, repo: str | None = None
    ) -> EnqueueResult: ...

    def collaborator_permission(self, repo: str, username: str) -> str: ...


class LandOps(GitHubOps, WritesChecks, WritesLabels, Protocol):
    """The land stage's writes beyond comments and the queue: its check run and labels
    (triage, which only reads, asks for GitHubOps)."""


@runtime_checkable
class TriageGitHub(GitHubOps, Protocol):
    """What triage reads beyond the land stage's operations (GitHubClient has them all)."""

    def run_jobs(self, repo: str, run_id: int) -> list[Job]: ...

    def job(self, repo: str, job_id: int) -> Job: ...

    def job_log(self, repo: str, job_id: int) -> AbstractContextManager[Iterator[bytes]]: ...

    def latest_queue_removal(self, repo: str, number: int) -> QueueEvent | None: ...

    def git_token(self, repo: str) -> str: ...


@runtime_checkable
class ReadsGreenRuns(Protocol):
    """The newest successful runs on a branch: where triage finds a failed job's baseline
    (its last green log, issue 26). Optional: a client without it gives the log alone."""

    def green_runs(self, repo: str, branch: str, *, event: str = "push") -> list[WorkflowRun]: ...


@runtime_checkable
class ReadsAnnotations(Protocol):
    """Check-run annotations: optional for triage (a client without them gives none)."""

    def check_run_annotations(self, repo: str, check_run_id: int) -> list[Annotation]: ...


@runtime_checkable
class ReadsArtifacts(Protocol):
    """A workflow run's artifacts: optional for triage (its test reports, issue 26.4)."""

    def run_artifacts(self, repo: str, run_id: int) -> list[Artifact]: ...

    def download_artifact(self, repo: str, artifact_id: int, *, max_bytes: int) -> bytes: ...


class FixClient(ReadsPull, ArmsAutoMerge, Protocol):
    """What one land-fixer job needs: the pull request re-read, then publishing."""


class RunsWorkflows(Protocol):
    """The `actions` fixer backend: dispatch the repository's fix workflow, follow its
    run, take its artifact."""

    def dispatch_workflow(
        self, repo: str, workflow: str, ref: str, inputs: Mapping[str, str]
    ) -> Dispatched: ...

    def workflow_runs(
        self,
        repo: str,
        workflow: str,
        *,
        event: str | None = None,
        created_after: datetime | None = None,
    ) -> list[WorkflowRun]: ...

    def workflow_run(self, repo: str, run_id: int) -> WorkflowRun: ...

    def cancel_workflow_run(self, repo: str, run_id: int) -> None: ...

    def run_artifacts(self, repo: str, run_id: int) -> list[Artifact]: ...

    def download_artifact(self, repo: str, artifact_id: int, *, max_bytes: int) -> bytes: ...

    def installation_of(self, repo: str) -> str: ...


class ActionsFixClient(FixClient, RunsWorkflows, Protocol):
    """What one land-fixer job on Actions needs: the run, then publishing as a local job."""
