"""The simulated GitHub's state: plain data, no behaviour beyond small derived properties.

`FakeGitHub` (model.py) owns and mutates these objects; the REST routes, the GraphQL
resolvers and the webhook payload builders only read them.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from landbot.sim.scenarios import AnnotationSpec

QUEUE_BOT = "github-merge-queue[bot]"
ACTIONS_APP_SLUG = "github-actions"
ACTIONS_APP_ID = 15368  # GitHub Actions' real app id


@dataclass
class User:
    login: str
    id: int
    node_id: str
    name: str | None = None

    @property
    def type(self) -> str:
        return "Bot" if self.login.endswith("[bot]") else "User"

    @property
    def email(self) -> str:
        return f"{self.id}+{self.login}@users.noreply.github.com"


@dataclass
class App:
    id: int
    slug: str
    name: str
    node_id: str
    owner: str
    public_key_pem: bytes
    created_at: datetime
    private_key_pem: bytes | None = field(default=None, repr=False)
    permissions: dict[str, str] = field(default_factory=dict)
    events: list[str] = field(default_factory=list)

    @property
    def bot_login(self) -> str:
        return f"{self.slug}[bot]"

    def jwt(self, *, lifetime: int = 540, issued: int | None = None) -> str:
        """A JWT for this App as GitHub expects it (RS256, iat 60 s back, iss = App id)."""
        import jwt

        if self.private_key_pem is None:
            raise ValueError(f"app {self.slug} was created with a public key only")
        now = int(time.time()) if issued is None else issued
        claims = {"iss": str(self.id), "iat": now - 60, "exp": now + lifetime}
        return jwt.encode(claims, self.private_key_pem, algorithm="RS256")

    def write_private_key(self, path: Path) -> Path:
        """Write the App's private key (PEM) where landbot's settings will look for it."""
        if self.private_key_pem is None:
            raise ValueError(f"app {self.slug} was created with a public key only")
        path.write_bytes(self.private_key_pem)
        path.chmod(0o600)
        return path


@dataclass
class Installation:
    id: int
    app_id: int
    account: str
    created_at: datetime
    repository_selection: str = "all"  # "all" repositories of the account, or "selected"
    repositories: set[str] = field(default_factory=set)  # lower-case full names

    def covers(self, full_name: str) -> bool:
        owner = full_name.split("/", 1)[0]
        if self.repository_selection == "all":
            return owner.lower() == self.account.lower()
        return full_name.lower() in self.repositories


@dataclass
class Token:
    value: str = field(repr=False)
    login: str  # the identity acting: a user, or "<slug>[bot]" for an installation
    installation_id: int | None = None
    expires_at: datetime | None = None

    @property
    def personal(self) -> bool:
        """A user's own token (GitHub refuses it the Checks API's writes)."""
        return self.installation_id is None


@dataclass
class AutoMerge:
    enabled_by: str
    merge_method: str
    enabled_at: datetime
    commit_title: str | None = None
    commit_message: str | None = None


@dataclass
class TimelineEvent:
    """An item of a pull request's timeline; `typename` is the GraphQL object type."""

    typename: str
    id: int
    node_id: str
    created_at: datetime
    actor: str | None
    data: dict[str, Any] = field(default_factory=dict)


@dataclass
class Reaction:
    id: int
    node_id: str
    content: str
    user: str
    created_at: datetime


@dataclass
class IssueComment:
    id: int
    node_id: str
    repo: str  # full name
    issue_number: int
    author: str
    body: str
    created_at: datetime
    updated_at: datetime
    minimized_reason: str | None = None
    reactions: list[Reaction] = field(default_factory=list)


@dataclass
class Issue:
    """An issue (not a pull request); it shares the repository's numbers with pull requests."""

    repo: str  # full name
    number: int
    id: int
    node_id: str
    title: str
    body: str
    author: str
    created_at: datetime
    updated_at: datetime
    state: str = "open"  # open | closed
    state_reason: str | None = None  # completed | not_planned | reopened
    closed_at: datetime | None = None
    closed_by: str | None = None
    labels: list[str] = field(default_factory=list)


@dataclass
class MergeGroup:
    head_sha: str
    head_ref: str  # refs/heads/gh-readonly-queue/<base>/pr-<N>-<base_sha>
    base_sha: str
    base_ref: str  # refs/heads/<base>
    created_at: datetime
    message: str = ""

    @property
    def short_head_ref(self) -> str:
        return self.head_ref.removeprefix("refs/heads/")


@dataclass
class QueueEntry:
    id: int
    node_id: str
    pr: PullRequest = field(repr=False)
    enqueued_at: datetime
    enqueuer: str
    head_sha: str  # the PR head that was queued
    jump: bool = False
    state: str = "QUEUED"  # MergeQueueEntryState
    group: MergeGroup | None = None


@dataclass
class QueueConfig:
    check_response_timeout_minutes: int = 60
    merge_method: str = "MERGE"
    merging_strategy: str = "ALLGREEN"
    # The simulation builds one group at a time, like a queue configured so.
    maximum_entries_to_build: int = 1
    maximum_entries_to_merge: int = 1
    minimum_entries_to_merge: int = 1
    minimum_entries_to_merge_wait_minutes: int = 0


@dataclass
class MergeQueue:
    repo: Repository = field(repr=False)
    branch: str
    node_id: str
    config: QueueConfig = field(default_factory=QueueConfig)
    entries: list[QueueEntry] = field(default_factory=list)

    def entry_for(self, pr: PullRequest) -> QueueEntry | None:
        return next((e for e in self.entries if e.pr is pr), None)


@dataclass
class PullRequest:
    repo: Repository = field(repr=False)  # the base repository
    number: int
    id: int
    node_id: str
    title: str
    body: str
    author: str
    head_repo: Repository = field(repr=False)
    head_ref: str
    head_sha: str
    base_ref: str
    base_sha: str
    created_at: datetime
    updated_at: datetime
    state: str = "open"  # REST state: open | closed
    merged: bool = False
    merged_at: datetime | None = None
    merged_by: str | None = None
    merge_commit_sha: str | None = None
    closed_at: datetime | None = None
    draft: bool = False
    labels: list[str] = field(default_factory=list)
    maintainer_can_modify: bool = True
    auto_merge: AutoMerge | None = None
    timeline: list[TimelineEvent] = field(default_factory=list)

    @property
    def is_fork(self) -> bool:
        return self.head_repo is not self.repo

    @property
    def graphql_state(self) -> str:
        if self.merged:
            return "MERGED"
        return "OPEN" if self.state == "open" else "CLOSED"

    @property
    def head_label(self) -> str:
        return f"{self.head_repo.owner}:{self.head_ref}"


@dataclass
class Step:
    number: int
    name: str
    status: str
    conclusion: str | None
    started_at: datetime | None
    completed_at: datetime | None


@dataclass
class Job:
    """An Actions job; its id is also the id of the check run that reports it."""

    id: int
    node_id: str
    run_id: int
    repo: str
    name: str
    workflow_name: str
    head_sha: str
    head_branch: str
    status: str
    conclusion: str | None
    started_at: datetime
    completed_at: datetime | None
    steps: list[Step]
    log: str
    required: bool = True
    runner_name: str = "GitHub Actions 2"
    # The check run's annotations (one per issue line of the log), once the job finished.
    annotations: list[AnnotationSpec] = field(default_factory=list)


@dataclass
class WorkflowRun:
    id: int
    node_id: str
    repo: str
    name: str
    path: str
    workflow_id: int
    event: str
    head_sha: str
    head_branch: str
    status: str
    conclusion: str | None
    run_number: int
    created_at: datetime
    updated_at: datetime
    pull_numbers: list[int] = field(default_factory=list)
    job_ids: list[int] = field(default_factory=list)
    check_suite_id: int = 0
    run_attempt: int = 1
    display_title: str | None = None  # a dispatched run's evaluated `run-name` (actions.py)
    actor: str | None = None  # who dispatched it (None: the repository's owner)


@dataclass
class RunnerSettings:
    """How the sim's Actions runner (actions.py) treats dispatched runs; tests set these."""

    # "run" at once; "hold_queued" / "hold_in_progress" until Engine.release(run id);
    # "hang": in progress until cancelled.
    mode: str = "run"
    timeout_seconds: float | None = None  # caps the job's timeout-minutes (a test's deadline)
    secrets: dict[str, str] = field(default_factory=dict)  # the repository's secrets
    work_root: Path | None = None  # where jobs' machines are made (default: the sim's root)
    # Called with (run, artifact name, zip bytes) at upload: returns the bytes stored, or
    # None to store none (the run then has no artifact to download). A hostile artifact.
    tamper: Any = None


@dataclass
class ApiAnnotation:
    """An annotation an App sent with a check run's output (create or update)."""

    path: str
    start_line: int
    end_line: int
    annotation_level: str  # notice | warning | failure
    message: str
    title: str | None = None
    raw_details: str | None = None
    start_column: int | None = None
    end_column: int | None = None


@dataclass
class CheckRun:
    id: int
    node_id: str
    repo: str
    name: str
    head_sha: str
    status: str
    conclusion: str | None
    app_slug: str
    app_id: int
    started_at: datetime
    completed_at: datetime | None
    check_suite_id: int
    html_url: str
    details_url: str
    summary: str = ""
    text: str = ""
    required: bool = True
    job_id: int | None = None  # set for Actions check runs (equal to id)
    pull_numbers: list[int] = field(default_factory=list)
    annotations: list[AnnotationSpec] = field(default_factory=list)  # an Actions job's
    # Made through `POST /repos/{o}/{r}/check-runs` by an App (landbot's own, in tests).
    via_api: bool = False
    external_id: str | None = None
    title: str | None = None  # output.title
    api_annotations: list[ApiAnnotation] = field(default_factory=list)


@dataclass
class Repository:
    owner: str
    name: str
    id: int
    node_id: str
    default_branch: str
    created_at: datetime
    git_dir: Path | None = None
    private: bool = False
    fork_of: Repository | None = field(default=None, repr=False)
    collaborators: dict[str, str] = field(default_factory=dict)  # login -> role
    pulls: dict[int, PullRequest] = field(default_factory=dict, repr=False)
    issues: dict[int, Issue] = field(default_factory=dict, repr=False)
    queues: dict[str, MergeQueue] = field(default_factory=dict, repr=False)
    queue_branches: set[str] = field(default_factory=set)  # branches with a merge queue
    known_refs: dict[str, str] = field(default_factory=dict, repr=False)
    labels: list[str] = field(default_factory=list)  # the repository's labels, by name
    next_number: int = 1
    pushed_at: datetime | None = None

    @property
    def full_name(self) -> str:
        return f"{self.owner}/{self.name}"

    def require_git(self) -> Path:
        if self.git_dir is None:
            raise ValueError(f"{self.full_name} has no git repository (a payload-only fixture)")
        return self.git_dir


@dataclass
class Artifact:
    id: int
    run_id: int
    repo: str
    name: str
    data: bytes  # the zip as uploaded (or as a test's hook replaced it)
    created_at: datetime
    expires_at: datetime

    @property
    def digest(self) -> str:
        return "sha256:" + hashlib.sha256(self.data).hexdigest()
