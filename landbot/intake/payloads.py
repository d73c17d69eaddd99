"""The webhook payloads landbot reads: per event and action, exactly the fields it uses.

`events.parse` validates a delivery's body into one of these at the edge, so handlers take
typed values. They are tolerant on purpose, because GitHub adds fields and values over time
and a delivery must not fail for that:

- fields landbot does not read are ignored;
- enum-like values (a dequeue reason, a conclusion, a user type) stay plain strings, so a new
  value reaches `core.reasons.normalize` or the `FAILED` set instead of failing validation;
- a field that is absent, null or of an unexpected type reads as its default (None, or an
  empty part), as the isinstance checks before these models did. What a missing field means
  (an error, a note) is the handler's decision, not the model's.
"""

from __future__ import annotations

from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    ValidationError,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    field_validator,
)


class Part(BaseModel):
    """A piece of a payload. Strict: a "7" is not the number 7 (JSON has real numbers)."""

    model_config = ConfigDict(extra="ignore", frozen=True, strict=True)

    @field_validator("*", mode="wrap")
    @classmethod
    def _default_if_unreadable(
        cls, value: Any, handler: ValidatorFunctionWrapHandler, info: ValidationInfo
    ) -> Any:
        try:
            return handler(value)
        except ValidationError:
            assert info.field_name is not None  # field validators always have one
            return cls.model_fields[info.field_name].get_default(call_default_factory=True)


class Repository(Part):
    full_name: str | None = None


class Payload(Part):
    """What every event carries; also the whole model of an event landbot does not handle."""

    action: str | None = None
    repository: Repository = Repository()

    @property
    def repo(self) -> str | None:
        return self.repository.full_name


# --- pull_request ------------------------------------------------------------------------


class PullRequest(Part):
    number: int | None = None


class Head(Part):
    sha: str | None = None


class Base(Part):
    ref: str | None = None


class DequeuedPullRequest(PullRequest):
    head: Head = Head()
    base: Base = Base()


class ClosedPullRequest(PullRequest):
    merged: bool | None = None
    head: Head = Head()  # the head that merged (the flaky-test ledger's passing retry)


class PullRequestEvent(Payload):
    """`pull_request.enqueued`, and the fields every pull_request action shares."""

    number: int | None = None
    pull_request: PullRequest = PullRequest()

    @property
    def pr_number(self) -> int | None:
        """The event's number, else the pull request's own (either names the PR)."""
        return self.number or self.pull_request.number


class PullRequestDequeued(PullRequestEvent):
    reason: str | None = None  # CI_FAILURE, MERGE_CONFLICT, ...: core.reasons maps them
    pull_request: DequeuedPullRequest = DequeuedPullRequest()


class PullRequestSynchronize(PullRequestEvent):
    before: str | None = None


class PullRequestClosed(PullRequestEvent):
    pull_request: ClosedPullRequest = ClosedPullRequest()


# --- merge groups and their checks ------------------------------------------------------


class MergeGroup(Part):
    head_sha: str | None = None
    head_ref: str | None = None
    base_sha: str | None = None


class MergeGroupEvent(Payload):
    """`merge_group.checks_requested`."""

    merge_group: MergeGroup = MergeGroup()


class MergeGroupDestroyed(MergeGroupEvent):
    reason: str | None = None  # merged, invalidated, dequeued (documented today)


class Run(Part):
    """What a failed check run and a failed workflow run both record."""

    id: int | None = None
    name: str | None = None
    conclusion: str | None = None  # compared with core.groups.FAILED
    head_sha: str | None = None
    html_url: str | None = None


class CheckSuite(Part):
    head_branch: str | None = None


class CheckRun(Run):
    check_suite: CheckSuite = CheckSuite()


class WorkflowRun(Run):
    head_branch: str | None = None
    event: str | None = None  # push, merge_group, pull_request, workflow_dispatch, ...
    display_title: str | None = None  # a fix run's carries landbot's one-time job id


class CheckRunCompleted(Payload):
    check_run: CheckRun = CheckRun()


class WorkflowRunCompleted(Payload):
    workflow_run: WorkflowRun = WorkflowRun()


# --- commands ----------------------------------------------------------------------------


class IssueUser(Part):
    login: str | None = None
    type: str | None = None  # User, Bot, Organization


class Comment(Part):
    id: int | None = None
    body: str | None = None
    user: IssueUser = IssueUser()


class Issue(Part):
    number: int | None = None
    pull_request: dict[str, Any] | None = None  # read for its presence only

    @property
    def is_pull_request(self) -> bool:
        # GitHub sets the key only on a pull request's issue, so presence is the signal,
        # whatever its value.
        return "pull_request" in self.model_fields_set


class IssueCommentCreated(Payload):
    issue: Issue = Issue()
    comment: Comment = Comment()


# --- push (a repository's own settings file) ----------------------------------------------


class PushRepository(Repository):
    default_branch: str | None = None


class PushCommit(Part):
    # None (unreadable): the commit may have touched any file.
    added: list[str] | None = None
    removed: list[str] | None = None
    modified: list[str] | None = None


class PushEvent(Payload):
    """`push`: which files the pushed commits touched, on which branch."""

    ref: str | None = None
    before: str | None = None
    after: str | None = None
    created: bool | None = None
    deleted: bool | None = None
    forced: bool | None = None
    commits: list[PushCommit] | None = None  # None (unreadable): any file may have changed
    repository: PushRepository = PushRepository()
