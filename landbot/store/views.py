"""Read-only views of the store for the dashboard: one row per pull request, its drops
folded in, and what became of it.

Nothing here writes: each view is a few SELECTs. The folding (a PR's
state, its durations) is pure code over the rows (`fold`), so it is tested without a
database as well as with one.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Literal, get_args

import sqlalchemy as sa

from landbot.core.model import Outcome
from landbot.store.records import StoredDrop
from landbot.store.store import Store, _fields
from landbot.store.tables import drops, jobs, merge_groups, test_failures

# What the dashboard says a pull request is at: the newest drop's outcome, except that a
# PR that merged is `merged` whatever its drops said (it is no longer dropped), and a
# pending drop is `handling`.
State = Literal[
    "handling",
    "requeued",
    "fixed",
    "handed_back",
    "merged",
    "ignored",
    "failed",
    "waiting_base",
    "held",
]
STATES: Final[tuple[State, ...]] = get_args(State)

# The `why` landbot's decision records when the PR merged before it acted
# (landbot.land.decide; a test keeps the two equal).
MERGED_WHY: Final = "the pull request has merged"
# Queue removals GitHub reports for a PR that merged.
MERGED_REASONS: Final = frozenset({"merged", "already_merged"})
OPEN_JOBS: Final = ("queued", "leased")

_OUTCOME_STATE: Final[Mapping[Outcome, State]] = {
    "pending": "handling",
    "requeued": "requeued",
    "fixed": "fixed",
    "handed_back": "handed_back",
    "ignored": "ignored",
    "failed": "failed",
    "waiting_base": "waiting_base",
    "held": "held",
}


@dataclass(frozen=True)
class OpenJob:
    """A job of one of the PR's drops that has not finished: queued, or leased (running)."""

    kind: str
    status: str


@dataclass(frozen=True)
class PullRow:
    """One pull request landbot has seen dropped, with all its drops folded in."""

    repo: str
    pr: int
    drops: tuple[StoredDrop, ...]  # oldest first
    state: State
    merged_at: dt.datetime | None
    jobs: tuple[OpenJob, ...]

    @property
    def latest(self) -> StoredDrop:
        return self.drops[-1]

    @property
    def first_drop_at(self) -> dt.datetime:
        return self.drops[0].observed_at

    @property
    def outcome_at(self) -> dt.datetime | None:
        """When the newest drop reached its outcome (or the PR merged); None while handling.
        A settled drop's last update is its settlement (`Processor.settle` writes last)."""
        if self.merged_at is not None:
            return self.merged_at
        return None if self.state == "handling" else self.latest.updated_at

    @property
    def drop_to_outcome(self) -> dt.timedelta | None:
        """From the newest drop to what became of it."""
        at = self.outcome_at
        return None if at is None else max(at - self.latest.observed_at, dt.timedelta(0))

    @property
    def last_at(self) -> dt.datetime:
        """The time rows are sorted by and show: the PR's newest change."""
        newest = max(d.updated_at for d in self.drops)
        return max(newest, self.merged_at) if self.merged_at is not None else newest


@dataclass(frozen=True)
class SettledDrop:
    """One drop's outcome for the recent-outcomes list (`merged` when the PR merged)."""

    drop: StoredDrop
    state: State


def merged_drop(d: StoredDrop) -> bool:
    """A drop that says the PR merged: removed because it merged, or left alone for it."""
    return d.reason in MERGED_REASONS or (d.outcome == "ignored" and d.summary == MERGED_WHY)


def fold(
    repo: str,
    pr: int,
    rows: Sequence[StoredDrop],
    *,
    merged_at: dt.datetime | None = None,
    open_jobs: Sequence[OpenJob] = (),
) -> PullRow:
    """One pull request's drops (any order) as its row. `merged_at`: when a merge group of
    it merged (the store's `destroyed:merged`), if one did."""
    ordered = tuple(sorted(rows, key=lambda d: (d.observed_at, d.id)))
    if not ordered:
        raise ValueError(f"{repo}#{pr} has no drops to fold")
    for d in ordered:
        if merged_drop(d):
            at = d.observed_at if d.reason in MERGED_REASONS else d.updated_at
            merged_at = at if merged_at is None else min(merged_at, at)
    state: State = "merged" if merged_at is not None else _OUTCOME_STATE[ordered[-1].outcome]
    return PullRow(repo, pr, ordered, state, merged_at, tuple(open_jobs))


def drop_state(d: StoredDrop) -> State:
    return "merged" if merged_drop(d) else _OUTCOME_STATE[d.outcome]


def _repo_is(column: sa.ColumnElement[str], repo: str) -> sa.ColumnElement[bool]:
    return sa.func.lower(column) == repo.lower()  # GitHub's names are case-insensitive


def pull_rows(store: Store, *, repo: str | None = None, limit: int = 300) -> list[PullRow]:
    """The pull requests with the newest drop activity (at most `limit`), newest change
    first, each with its drops, merge and open jobs."""
    newest = sa.func.max(drops.c.updated_at)
    q = sa.select(drops.c.repo, drops.c.pr).group_by(drops.c.repo, drops.c.pr)
    if repo is not None:
        q = q.where(_repo_is(drops.c.repo, repo))
    q = q.order_by(newest.desc(), drops.c.repo, drops.c.pr).limit(limit)
    with store.engine.connect() as conn:
        keys = [(str(r.repo), int(r.pr)) for r in conn.execute(q)]
        if not keys:
            return []
        wanted = set(keys)
        repos, prs = sorted({k[0] for k in keys}), sorted({k[1] for k in keys})
        by_pr: dict[tuple[str, int], list[StoredDrop]] = {}
        found = conn.execute(sa.select(drops).where(drops.c.repo.in_(repos), drops.c.pr.in_(prs)))
        for row in found:
            d = StoredDrop(**_fields(row))
            if (d.repo, d.pr) in wanted:
                by_pr.setdefault((d.repo, d.pr), []).append(d)
        merged: dict[tuple[str, int], dt.datetime] = {}
        groups = conn.execute(
            sa.select(merge_groups.c.repo, merge_groups.c.pr, merge_groups.c.updated_at).where(
                merge_groups.c.repo.in_(repos),
                merge_groups.c.pr.in_(prs),
                merge_groups.c.status == "destroyed:merged",
            )
        )
        for g in groups:
            key = (str(g.repo), int(g.pr))
            merged[key] = min(merged.get(key, g.updated_at), g.updated_at)
        drop_pr = {d.id: key for key, ds in by_pr.items() for d in ds}
        open_jobs: dict[tuple[str, int], list[OpenJob]] = {}
        if drop_pr:
            running = conn.execute(
                sa.select(jobs.c.drop_id, jobs.c.kind, jobs.c.status)
                .where(jobs.c.drop_id.in_(sorted(drop_pr)), jobs.c.status.in_(OPEN_JOBS))
                .order_by(jobs.c.id)
            )
            for j in running:
                open_jobs.setdefault(drop_pr[j.drop_id], []).append(OpenJob(j.kind, j.status))
    rows = [
        fold(r, p, by_pr[(r, p)], merged_at=merged.get((r, p)), open_jobs=open_jobs.get((r, p), ()))
        for r, p in keys
        if (r, p) in by_pr
    ]
    return sorted(rows, key=lambda row: (row.last_at, row.repo, row.pr), reverse=True)


def recent_outcomes(store: Store, *, repo: str, limit: int = 10) -> list[SettledDrop]:
    """The repository's newest settled drops (any outcome but pending), newest first."""
    q = (
        sa.select(drops)
        .where(_repo_is(drops.c.repo, repo), drops.c.outcome != "pending")
        .order_by(drops.c.updated_at.desc(), drops.c.id.desc())
        .limit(limit)
    )
    with store.engine.connect() as conn:
        settled = [StoredDrop(**_fields(row)) for row in conn.execute(q)]
    return [SettledDrop(d, drop_state(d)) for d in settled]


def repositories(store: Store, *, ledger_since: dt.datetime) -> list[str]:
    """Every repository with a drop, or with a test failure in the ledger since
    `ledger_since`, as stored; one spelling per name, sorted case-insensitively."""
    with store.engine.connect() as conn:
        names = [str(r[0]) for r in conn.execute(sa.select(drops.c.repo).distinct())]
        names += [
            str(r[0])
            for r in conn.execute(
                sa.select(test_failures.c.repo)
                .where(test_failures.c.seen_at >= ledger_since)
                .distinct()
            )
        ]
    return merge_names(names)


def merge_names(names: Sequence[str]) -> list[str]:
    """One spelling per case-insensitive name (the first given), sorted case-insensitively."""
    seen: dict[str, str] = {}
    for name in names:
        seen.setdefault(name.lower(), name)
    return sorted(seen.values(), key=str.lower)
