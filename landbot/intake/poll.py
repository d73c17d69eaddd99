"""The poller: one GraphQL sweep per repository finds removals no webhook delivered.

GitHub does not redeliver a failed webhook, so a scheduled sweep reads the most recently
updated open pull requests with their last merge-queue events. A PR whose last queue event is
a removal, and that is not back in the queue, is a drop; the same removal already reported by
a webhook (same PR, head and reason, within minutes) is the same drop.

The drop is recorded at the head that was removed, never at whatever the head is now. GitHub
names the removed commit in `beforeCommit`: the PR head, or the merge-group commit built on
it (both observed; "not always the PR head"). A sweep records a drop only when it can show
the removed head is the current head:

- `beforeCommit` is the current head, or
- `beforeCommit` is a merge commit whose second parent is the current head (the group
  commit GitHub's queue builds with the merge method: base first, PR head second),

and the head was not force-pushed at or after the removal (history rewritten since the
removal: a commit of the old history can then have the new head as its second parent, so
neither rule above proves anything). Anything else (no
`beforeCommit`, an older head, a squash or rebase group commit, a force push since) is a
removal of a head that is gone or cannot be told: landbot does nothing for it. It records no
drop (a drop with no head to act on would only be ignored on its re-read) and reports it as
`Unmatched` in the sweep's result and in the log. The webhook of the same removal, if one
came, is already a drop at its own head; a new push to the PR is the author's move, and the
next removal of the new head is a new drop.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from landbot import logs
from landbot.core.groups import removed_this_head
from landbot.github import budget
from landbot.github.errors import GitHubError
from landbot.github.models import PullRemovals, QueueEvent
from landbot.github.ops import BatchSweepOps, SweepOps
from landbot.intake.events import record_drop
from landbot.store import Store

log = logging.getLogger("landbot.intake.poll")
# How far back a sweep looks for removals (and `landbot poll` for its own unfinished work).
LOOKBACK = dt.timedelta(hours=24)


@dataclass(frozen=True)
class Unmatched:
    """A removal the sweep cannot tie to the PR's current head: nothing is done for it."""

    pr: int
    removal_id: str
    removed: str | None  # beforeCommit.oid, None when GitHub named none
    head: str  # the PR's head now
    why: str


@dataclass
class SweepResult:
    new: list[int] = field(default_factory=list)  # ids of the drops this sweep recorded
    seen: list[int] = field(default_factory=list)  # drops another door had recorded already
    unmatched: list[Unmatched] = field(default_factory=list)
    # Why this sweep sent nothing (the primary budget under the sweep's reserve), or None.
    deferred: str | None = None


@dataclass
class ManyResult(SweepResult):
    """A batched sweep of several repositories (`sweep_many`)."""

    swept: list[str] = field(default_factory=list)  # the repositories GitHub answered for
    # Repositories GitHub answered with an error in their batch (missing, not accessible):
    # GitHub's message, by repository. The batch's other repositories were swept.
    missing: dict[str, str] = field(default_factory=dict)
    not_swept: list[str] = field(default_factory=list)  # deferred, or their query failed
    queries: int = 0  # GraphQL queries sent


def why_not_removed(
    head: str, removal: QueueEvent, force_pushed_at: tuple[dt.datetime, ...] = ()
) -> str | None:
    """None when `removal` provably took `head` out of the queue, else why it cannot be told.

    The sweep's rule (see the module doc); whether a removal is of this head at all is
    core.groups.removed_this_head, which the webhook door's check shares.
    """
    if removal.created_at is not None and any(t >= removal.created_at for t in force_pushed_at):
        return "the head was force-pushed after the removal"
    before = removal.before_commit
    if before is None:
        return "GitHub named no removed commit"
    if removed_this_head(before, removal.before_parents, head):
        return None
    return "the removed commit is neither the head nor a merge group built on it"


def removed_head(pr: PullRemovals, removal: QueueEvent) -> str | Unmatched:
    """The head `removal` took out of the queue if it is the PR's current head, else why not."""
    why = why_not_removed(pr.head_oid, removal, pr.force_pushed_at)
    if why is None:
        return pr.head_oid
    return Unmatched(pr.number, removal.id, removal.before_commit, pr.head_oid, why)


def sweep(
    store: Store,
    gh: SweepOps,
    repo: str,
    *,
    now: dt.datetime,
    lookback: dt.timedelta = LOOKBACK,
    first: int = 50,
) -> list[int]:
    """Record the drops this sweep finds; returns the ids of the new ones. One GitHub call."""
    return sweep_report(store, gh, repo, now=now, lookback=lookback, first=first).new


def sweep_report(
    store: Store,
    gh: SweepOps,
    repo: str,
    *,
    now: dt.datetime,
    lookback: dt.timedelta = LOOKBACK,
    first: int = 50,
) -> SweepResult:
    """`sweep`, also saying which removals were already drops and which match no head."""
    result = SweepResult()
    try:
        # A sweep reads with what webhook-driven work leaves: under the reserve it waits
        # for the next round (the removals stay in the timeline until then).
        with budget.sweeping():
            found = gh.queue_removals(repo, first=first)
    except budget.Deferred as exc:
        logs.event(log, "sweep deferred", logging.WARNING, repo=repo, why=str(exc))
        result.deferred = str(exc)
        return result
    _record(store, repo, found, now=now, lookback=lookback, result=result)
    logs.event(
        log,
        "sweep finished",
        repo=repo,
        new=len(result.new),
        seen=len(result.seen),
        unmatched=len(result.unmatched),
    )
    return result


def sweep_many(
    store: Store,
    gh: BatchSweepOps,
    repos: Sequence[str],
    *,
    now: dt.datetime,
    lookback: dt.timedelta = LOOKBACK,
    first: int = 50,
    batch: int = 50,
) -> ManyResult:
    """Sweep `repos` with `batch` repositories a GraphQL query (one installation's each),
    recording drops as `sweep` does; each repository GitHub answered for is marked swept
    in the store, and marked active when its queue moved (an entry, a recent queue event).

    GitHub's cost of one query (docs: "rate limits for the GraphQL API"): the connections
    it may have to fetch, over 100, rounded, at least 1. Per repository that is its pull
    requests (1) and each one's timeline (`first`, 50): 51, so a batch of 50 costs 26
    points and 20 repositories 10. Parents of a named commit that is not the head come in
    one more query (1 point) only when such a removal is there.
    """
    result = ManyResult()
    groups: dict[str, list[str]] = {}
    for repo in repos:
        groups.setdefault(gh.installation_of(repo), []).append(repo)
    chunks = [g[i : i + batch] for g in groups.values() for i in range(0, len(g), batch)]
    for n, chunk in enumerate(chunks):
        try:
            with budget.sweeping():
                answer = gh.queue_removals_many(chunk, first=first)
                result.queries += 1
                found = _with_parents(gh, answer.found, now=now, lookback=lookback, result=result)
        except budget.Deferred as exc:
            # The rest waits for the next run: nothing of theirs is marked swept.
            result.deferred = str(exc)
            result.not_swept.extend(r for c in chunks[n:] for r in c)
            logs.event(
                log, "sweep deferred", logging.WARNING, repos=len(result.not_swept), why=str(exc)
            )
            break
        for repo, why in answer.missing.items():
            logs.event(log, "repository not swept", logging.WARNING, repo=repo, why=why)
        result.missing.update(answer.missing)
        for repo, prs in found.items():
            _record(store, repo, prs, now=now, lookback=lookback, result=result)
            moved = _activity(prs, now)
            if moved is not None:
                store.note_queue_activity(repo, moved)
        # A missing one too: asked again at its idle interval, not every run.
        swept = [r for r in chunk if r in found or r in answer.missing]
        store.note_swept(swept, now)
        result.swept.extend(r for r in swept if r in found)
        result.not_swept.extend(r for r in chunk if r not in swept)
    logs.event(
        log,
        "sweep finished",
        repos=len(result.swept),
        missing=len(result.missing),
        not_swept=len(result.not_swept),
        queries=result.queries,
        new=len(result.new),
        seen=len(result.seen),
        unmatched=len(result.unmatched),
    )
    return result


def _needs_parents(pr: PullRemovals, now: dt.datetime, lookback: dt.timedelta) -> bool:
    """Whether the sweep's rule needs the parents of the commit the PR's last removal named:
    only a recent removal of a PR out of the queue naming a commit other than the head,
    with no force push since (that rule decides without parents)."""
    if pr.in_merge_queue or not pr.events:
        return False
    last = pr.events[-1]
    if last.kind != "removed" or last.created_at is None or last.created_at < now - lookback:
        return False
    if last.before_commit is None or last.before_commit == pr.head_oid:
        return False
    return not any(t >= last.created_at for t in pr.force_pushed_at)


def _with_parents(
    gh: BatchSweepOps,
    found: dict[str, list[PullRemovals]],
    *,
    now: dt.datetime,
    lookback: dt.timedelta,
    result: ManyResult,
) -> dict[str, list[PullRemovals]]:
    """`found` with the parents of the commits the rule needs filled in (one query for the
    batch); a repository whose parents GitHub did not answer is left out (not swept: the
    next run asks again), never decided without them."""
    wanted = [
        (repo, pr.events[-1].before_commit)
        for repo, prs in found.items()
        for pr in prs
        if _needs_parents(pr, now, lookback) and pr.events[-1].before_commit is not None
    ]
    if not wanted:
        return found
    keys = sorted({(repo, str(oid)) for repo, oid in wanted})
    try:
        parents = gh.commit_parents(keys)
        result.queries += 1
    except GitHubError as exc:
        logs.event(log, "commit parents not read", logging.WARNING, error=exc)
        parents = {}
    out: dict[str, list[PullRemovals]] = {}
    for repo, prs in found.items():
        filled: list[PullRemovals] = []
        for pr in prs:
            if _needs_parents(pr, now, lookback):
                last = pr.events[-1]
                got = parents.get((repo, str(last.before_commit)))
                if got is None:
                    break
                last = dataclasses.replace(last, before_parents=got)
                pr = dataclasses.replace(pr, events=(*pr.events[:-1], last))
            filled.append(pr)
        else:
            out[repo] = filled
    return out


def _activity(prs: list[PullRemovals], now: dt.datetime) -> dt.datetime | None:
    """When the repository's queue last moved, as a sweep sees it: now while a pull request
    is in the queue, else its newest queue event (None: nothing seen)."""
    if any(pr.in_merge_queue for pr in prs):
        return now
    times = [e.created_at for pr in prs for e in pr.events if e.created_at is not None]
    return max(times) if times else None


def _record(
    store: Store,
    repo: str,
    found: list[PullRemovals],
    *,
    now: dt.datetime,
    lookback: dt.timedelta,
    result: SweepResult,
) -> None:
    """Record the removals of `found` that are drops (the rule of the module doc)."""
    for pr in found:
        if pr.in_merge_queue or not pr.events:
            continue
        last = pr.events[-1]
        if last.kind != "removed" or last.created_at is None:
            continue
        if last.created_at < now - lookback:
            continue
        head = removed_head(pr, last)
        if isinstance(head, Unmatched):
            # Expected after a push; logged so an operator can see why no drop came of it.
            logs.event(
                log,
                "removal not of the current head: nothing to do",
                repo=repo,
                pr=pr.number,
                head_sha=pr.head_oid,
                removal_id=last.id,
                removed_sha=head.removed,
                why=head.why,
            )
            result.unmatched.append(head)
            continue
        drop_id, created = record_drop(
            store,
            repo=repo,
            pr=pr.number,
            head_sha=head,
            raw_reason=last.reason,
            source="poll",
            observed_at=last.created_at,
            removal_id=last.id,
            base_ref=pr.base_ref,
        )
        (result.new if created else result.seen).append(drop_id)
