"""Which watched repositories a `landbot poll` run sweeps now (issue 28.2): a pure decision.

A sweep can only find a removal where the merge queue moved. A repository whose queue
showed activity lately (a `merge_group` or dequeue webhook, a drop recorded, entries in the
queue at a sweep: `StoredSweep.active_at`) is swept every run for `active` after it; an idle
one only once `idle` has passed since its last sweep, so that a removal no webhook told of
is still found within that interval. A repository never swept (newly watched) is swept at
once, and one whose activity came after its last sweep is swept whatever the intervals say.

The store keeps the times (store.Store.sweep_states); `landbot poll` (cli.py) reads them,
asks `due`, sweeps what it says, and writes the times back: I/O at the edges.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from landbot.store import StoredSweep

Why = Literal["new", "active", "activity since the last sweep", "idle interval passed"]


@dataclass(frozen=True)
class Intervals:
    active: dt.timedelta  # how long activity keeps a repository swept every run
    idle: dt.timedelta  # how often a repository with no recent activity is swept


@dataclass(frozen=True)
class Due:
    repo: str
    why: Why


def why_due(state: StoredSweep | None, now: dt.datetime, intervals: Intervals) -> Why | None:
    """Why the repository is swept now, or None when this run leaves it alone."""
    if state is None or state.swept_at is None:
        return "new"
    if state.active_at is not None:
        if now - state.active_at < intervals.active:
            return "active"
        if state.active_at >= state.swept_at:
            return "activity since the last sweep"
    if now - state.swept_at >= intervals.idle:
        return "idle interval passed"
    return None


def due(
    repos: Sequence[str],
    states: Mapping[str, StoredSweep],
    now: dt.datetime,
    intervals: Intervals,
) -> list[Due]:
    """The repositories to sweep now: the new and the active first (in the order given),
    then the idle ones longest unswept first (a sweep deferred by the budget midway has
    then spent what it had where a removal is likeliest)."""
    busy: list[Due] = []
    idle: list[tuple[dt.datetime, int, Due]] = []
    for i, repo in enumerate(repos):
        state = states.get(repo.lower())
        why = why_due(state, now, intervals)
        if why is None:
            continue
        if why == "idle interval passed" and state is not None and state.swept_at is not None:
            idle.append((state.swept_at, i, Due(repo, why)))
        else:
            busy.append(Due(repo, why))
    return busy + [d for _, _, d in sorted(idle, key=lambda t: (t[0], t[1]))]
