"""GitHub's merge queue, simulated one group at a time with real git.

For the head entry of a queue, `step` first builds the merge-group commit (the base branch
merged with the PR head) on `refs/heads/gh-readonly-queue/<base>/pr-<N>-<base_sha>`, sends
`merge_group` `checks_requested` and runs the check scenario on it; the next `step` decides:
merge (the base branch moves to the group commit), drop (CI_FAILURE, CI_TIMEOUT), or wait.
A PR that git cannot merge is dropped with MERGE_CONFLICT before any group exists.

Every removal goes through `remove`, which does what GitHub does when a PR leaves the queue:
the group is destroyed, a `RemovedFromMergeQueueEvent` joins the timeline, auto-merge is
switched off (except after a merge or a head push) and `pull_request` `dequeued` is sent.

What the removal's `beforeCommit` names, and on what evidence:

- once a merge group exists (failed checks, a timeout, a merge, a manual removal after the
  group was built), the PR head by default, or the group commit when the model's
  `removal_before_commit` is "group". GitHub has been seen doing both: its schema says only
  "the before commit SHA"; the group commit was observed by this project (triage's route 3,
  landbot/github/queries/latest_queue_removal.graphql) and by others (digitaldrywood/detent
  issue 2474: a `failed_checks` removal whose `beforeCommit` was not the PR head); it is
  "not always the PR head" (../shared/reference/github.md). Tests run both ways;
- before any group exists (a conflict, an early manual removal), the PR head: there is no
  other commit it could name;
- after a push to a queued PR, the head before the push. Inferred from the field's name, not
  observed; landbot must not act on it either way (the removed head is gone).

The group commit is a real merge commit, base first and PR head second, as GitHub's queue
builds one with the merge method (the only method simulated); `Commit.parents` serves it.
A push that rewrites the head's history adds a `HeadRefForcePushedEvent` to the timeline
(model.py); a fast-forward push adds no timeline item here (GitHub adds `PullRequestCommit`s).

The model (FakeGitHub) drives the queue and is passed in as a QueueWorld, so this module
does not import it back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from landbot.sim import git, payloads
from landbot.sim.state import QUEUE_BOT, MergeGroup

if TYPE_CHECKING:
    from landbot.sim.ids import Clock
    from landbot.sim.state import (
        CheckRun,
        MergeQueue,
        PullRequest,
        QueueEntry,
        Repository,
        TimelineEvent,
    )
    from landbot.sim.webhooks import Delivery

# The webhook's upper-case reason and the timeline's lower-case string for each outcome.
REASONS = {
    "merged": ("MERGE", "merged"),
    "failed": ("CI_FAILURE", "failed_checks"),
    "timeout": ("CI_TIMEOUT", "checks_timed_out"),
    "conflict": ("MERGE_CONFLICT", "merge_conflict"),
}


@dataclass(frozen=True)
class QueueStep:
    """What one step did: built a group, waited on its checks, merged, or dropped the PR."""

    repo: str
    base: str
    pr: int
    action: str  # "built" | "waiting" | "merged" | "dropped"
    reason: str | None = None  # the webhook reason for "merged"/"dropped"
    group_sha: str | None = None
    conflicts: tuple[str, ...] = ()


class QueueWorld(payloads.World, Protocol):
    """What the queue uses of the simulated GitHub: its clock, refs, timeline, CI, webhooks."""

    clock: Clock
    removal_before_commit: str  # "head" | "group": see `remove`

    def _emit(self, event: str, payload: dict[str, Any]) -> Delivery: ...

    def _write_branch(
        self, repo: Repository, branch: str, sha: str, *, pusher: str | None = None
    ) -> str | None: ...

    def _delete_branch(
        self, repo: Repository, branch: str, *, pusher: str | None = None
    ) -> None: ...

    def _timeline(
        self, pr: PullRequest, typename: str, actor: str | None, **data: Any
    ) -> TimelineEvent: ...

    def _clear_auto_merge(self, pr: PullRequest, *, actor: str, reason: str | None) -> None: ...

    def run_checks(
        self,
        repo: Repository,
        sha: str,
        *,
        event: str,
        head_branch: str,
        pulls: tuple[int, ...] = (),
    ) -> list[CheckRun]: ...

    def checks_state(self, repo: Repository, sha: str) -> str: ...


def group_ref(base: str, number: int, base_sha: str) -> str:
    return f"refs/heads/gh-readonly-queue/{base}/pr-{number}-{base_sha}"


def step(gh: QueueWorld, queue: MergeQueue) -> QueueStep | None:
    if not queue.entries:
        return None
    entry = queue.entries[0]
    if entry.group is None:
        return _build(gh, queue, entry)
    return _decide(gh, queue, entry)


def _build(gh: QueueWorld, queue: MergeQueue, entry: QueueEntry) -> QueueStep:
    repo, pr = queue.repo, entry.pr
    git_dir = repo.require_git()
    base_sha = repo.known_refs[f"refs/heads/{queue.branch}"]
    message = f"Merge pull request #{pr.number} from {pr.head_label}\n\n{pr.title}"
    sha, conflicts = git.merge_commit(
        git_dir,
        base=base_sha,
        head=pr.head_sha,
        message=message,
        when=f"{int(gh.clock.now().timestamp())} +0000",
    )
    if sha is None:
        webhook, timeline = REASONS["conflict"]
        remove(gh, entry, webhook_reason=webhook, timeline_reason=timeline, actor=QUEUE_BOT)
        return QueueStep(
            repo.full_name, queue.branch, pr.number, "dropped", webhook, None, tuple(conflicts)
        )
    ref = group_ref(queue.branch, pr.number, base_sha)
    gh._write_branch(repo, ref.removeprefix("refs/heads/"), sha, pusher=QUEUE_BOT)
    entry.group = MergeGroup(
        head_sha=sha,
        head_ref=ref,
        base_sha=base_sha,
        base_ref=f"refs/heads/{queue.branch}",
        created_at=gh.clock.now(),
        message=message,
    )
    entry.state = "AWAITING_CHECKS"
    gh._emit(
        "merge_group",
        payloads.merge_group_event(
            gh, repo, entry.group, "checks_requested", sender=entry.enqueuer, author=entry.enqueuer
        ),
    )
    gh.run_checks(
        repo, sha, event="merge_group", head_branch=entry.group.short_head_ref, pulls=(pr.number,)
    )
    return QueueStep(repo.full_name, queue.branch, pr.number, "built", None, sha)


def _decide(gh: QueueWorld, queue: MergeQueue, entry: QueueEntry) -> QueueStep:
    repo, pr, group = queue.repo, entry.pr, entry.group
    assert group is not None
    state = gh.checks_state(repo, group.head_sha)
    if state in ("success", "none"):
        return _merge(gh, queue, entry)
    if state == "failure":
        entry.state = "UNMERGEABLE"
        webhook, timeline = REASONS["failed"]
        remove(gh, entry, webhook_reason=webhook, timeline_reason=timeline, actor=QUEUE_BOT)
        return QueueStep(
            repo.full_name, queue.branch, pr.number, "dropped", webhook, group.head_sha
        )
    waited = gh.clock.now() - group.created_at
    if waited.total_seconds() >= queue.config.check_response_timeout_minutes * 60:
        webhook, timeline = REASONS["timeout"]
        remove(gh, entry, webhook_reason=webhook, timeline_reason=timeline, actor=QUEUE_BOT)
        return QueueStep(
            repo.full_name, queue.branch, pr.number, "dropped", webhook, group.head_sha
        )
    return QueueStep(repo.full_name, queue.branch, pr.number, "waiting", None, group.head_sha)


def _merge(gh: QueueWorld, queue: MergeQueue, entry: QueueEntry) -> QueueStep:
    repo, pr, group = queue.repo, entry.pr, entry.group
    assert group is not None
    entry.state = "MERGEABLE"
    now = gh.clock.now()
    # The group commit is the base plus this PR: the base branch fast-forwards to it.
    gh._write_branch(repo, queue.branch, group.head_sha, pusher=QUEUE_BOT)
    pr.merged = True
    pr.state = "closed"
    pr.merged_at = pr.closed_at = pr.updated_at = now
    pr.merged_by = entry.enqueuer
    pr.merge_commit_sha = group.head_sha
    pr.base_sha = group.base_sha
    pr.auto_merge = None
    webhook, timeline = REASONS["merged"]
    remove(
        gh,
        entry,
        webhook_reason=webhook,
        timeline_reason=timeline,
        actor=QUEUE_BOT,
        destroyed_reason="merged",
        disable_auto_merge=False,
    )
    gh._timeline(pr, "MergedEvent", entry.enqueuer, commit=group.head_sha, ref=queue.branch)
    gh._emit("pull_request", payloads.pull_request_event(gh, pr, "closed", entry.enqueuer))
    return QueueStep(repo.full_name, queue.branch, pr.number, "merged", webhook, group.head_sha)


def remove(
    gh: QueueWorld,
    entry: QueueEntry,
    *,
    webhook_reason: str,
    timeline_reason: str,
    actor: str,
    before_commit: str | None = None,
    destroyed_reason: str = "dequeued",
    disable_auto_merge: bool = True,
) -> None:
    pr = entry.pr
    repo = pr.repo
    queue = repo.queues[pr.base_ref]
    queue.entries.remove(entry)
    named = before_commit or pr.head_sha
    if entry.group is not None:
        if before_commit is None and gh.removal_before_commit == "group":
            named = entry.group.head_sha
        _destroy(gh, queue, entry, destroyed_reason)
    gh._timeline(
        pr,
        "RemovedFromMergeQueueEvent",
        actor,
        reason=timeline_reason,
        before_commit=named,
        enqueuer=entry.enqueuer,
        queue=queue.branch,
    )
    if disable_auto_merge:
        gh._clear_auto_merge(pr, actor=QUEUE_BOT, reason="Removed from the merge queue")
    pr.updated_at = gh.clock.now()
    gh._emit(
        "pull_request",
        payloads.pull_request_event(gh, pr, "dequeued", actor, reason=webhook_reason),
    )


def _destroy(gh: QueueWorld, queue: MergeQueue, entry: QueueEntry, reason: str) -> None:
    group = entry.group
    assert group is not None
    gh._emit(
        "merge_group",
        payloads.merge_group_event(
            gh,
            queue.repo,
            group,
            "destroyed",
            sender=QUEUE_BOT,
            author=entry.enqueuer,
            reason=reason,
        ),
    )
    # GitHub deletes the temporary branch; the commit stays reachable by sha.
    gh._delete_branch(queue.repo, group.short_head_ref, pusher=QUEUE_BOT)
    entry.group = None
    entry.state = "QUEUED"


def base_moved(gh: QueueWorld, queue: MergeQueue, new_sha: str) -> None:
    """A push to the base branch: groups built on the old base are invalidated and rebuilt."""
    for entry in queue.entries:
        if entry.group is not None and entry.group.base_sha != new_sha:
            _destroy(gh, queue, entry, "invalidated")


def merge_directly(gh: QueueWorld, pr: PullRequest) -> bool:
    """Auto-merge on a branch without a queue: GitHub merges the PR itself once checks pass."""
    repo = pr.repo
    base_sha = repo.known_refs[f"refs/heads/{pr.base_ref}"]
    sha, _conflicts = git.merge_commit(
        repo.require_git(),
        base=base_sha,
        head=pr.head_sha,
        message=f"Merge pull request #{pr.number} from {pr.head_label}\n\n{pr.title}",
        when=f"{int(gh.clock.now().timestamp())} +0000",
    )
    if sha is None:
        return False
    enabler = pr.auto_merge.enabled_by if pr.auto_merge else pr.author
    gh._write_branch(repo, pr.base_ref, sha, pusher=enabler)
    now = gh.clock.now()
    pr.merged, pr.state = True, "closed"
    pr.merged_at = pr.closed_at = pr.updated_at = now
    pr.merged_by, pr.merge_commit_sha, pr.base_sha, pr.auto_merge = enabler, sha, base_sha, None
    gh._timeline(pr, "MergedEvent", enabler, commit=sha, ref=pr.base_ref)
    gh._emit("pull_request", payloads.pull_request_event(gh, pr, "closed", enabler))
    return True
