"""Retention: what the store forgets, and when.

Webhook deliveries (their raw bodies are most of the store: a busy repository's
`check_run` and `workflow_run` payloads run to tens of kilobytes each) and finished jobs
go once they are older than `[store] retention_days`, and so do triage's baselines (a
green job's log kept per base run, and which run that was: the base has moved on long
before; a drop that needs one again fetches it again). Drops are kept: they are the record
of what landbot did, and /metrics counts them. Nothing open is ever pruned: a pending or
leased delivery, and a queued or leased job, stay however old they are.

A delivery's age runs from when GitHub sent it (`received_at`), which is also where
GitHub's own redelivery window starts (3 days on github.com): a redelivered delivery
whose row is gone would be taken for a new one, so the setting never goes below that.

Rows go in small batches, each its own transaction, so a first prune of a large store
never holds SQLite's write lock long enough to stall the webhook receiver.
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass
from typing import Any, Final

import sqlalchemy as sa

from landbot.store.store import Store, utcnow
from landbot.store.tables import baseline_runs, baselines, deliveries, jobs

log = logging.getLogger("landbot.store")

# The statuses a worker leaves behind (Store.finish_delivery / finish_job, cancel_jobs).
# Listed rather than "not open", so a status added later is kept until someone decides.
FINISHED_DELIVERIES: Final = ("done", "error", "failed")
FINISHED_JOBS: Final = ("done", "failed", "cancelled")
BATCH: Final = 500


@dataclass(frozen=True)
class Pruned:
    """What one prune removed."""

    deliveries: int
    delivery_bytes: int  # the raw bodies of those deliveries
    jobs: int
    baselines: int = 0  # rows of `baselines` and `baseline_runs`
    call_rows: int = 0  # rows of `call_counts` of processes gone quiet, folded into "retired"

    @property
    def nothing(self) -> bool:
        return self.deliveries == 0 and self.jobs == 0 and self.baselines == 0 == self.call_rows


def prune(
    store: Store,
    older_than: dt.timedelta,
    *,
    now: dt.datetime | None = None,
    batch: int = BATCH,
) -> Pruned:
    """Delete the finished deliveries received, and the jobs finished, more than
    `older_than` before `now`. Safe to run from several workers at once."""
    if older_than <= dt.timedelta(0):
        raise ValueError(f"older_than must be positive, not {older_than}")
    cutoff = (now or utcnow()) - older_than
    n_deliveries, body_bytes = _prune_deliveries(store, cutoff, batch)
    n_jobs = _prune_jobs(store, cutoff, batch)
    n_baselines = _prune_older(store, baselines, baselines.c.made_at, cutoff, batch)
    n_baselines += _prune_older(store, baseline_runs, baseline_runs.c.found_at, cutoff, batch)
    return Pruned(
        deliveries=n_deliveries,
        delivery_bytes=body_bytes,
        jobs=n_jobs,
        baselines=n_baselines,
        call_rows=store.retire_call_counts(cutoff),
    )


def _prune_deliveries(store: Store, cutoff: dt.datetime, batch: int) -> tuple[int, int]:
    old = sa.and_(deliveries.c.status.in_(FINISHED_DELIVERIES), deliveries.c.received_at < cutoff)
    pick = sa.select(deliveries.c.id).where(old).order_by(deliveries.c.id).limit(batch)
    removed = size = 0
    while True:
        with store.tx() as conn:
            # The condition again on the rows picked: one a worker re-leased meanwhile stays.
            sizes = conn.execute(
                deliveries.delete()
                .where(deliveries.c.id.in_(pick.scalar_subquery()), old)
                .returning(sa.func.length(deliveries.c.body))
            ).all()
        removed += len(sizes)
        size += sum(int(n or 0) for (n,) in sizes)
        if len(sizes) < batch:
            return removed, size


def _prune_jobs(store: Store, cutoff: dt.datetime, batch: int) -> int:
    old = sa.and_(jobs.c.status.in_(FINISHED_JOBS), jobs.c.updated_at < cutoff)
    pick = sa.select(jobs.c.id).where(old).order_by(jobs.c.id).limit(batch)
    removed = 0
    while True:
        with store.tx() as conn:
            gone = conn.execute(
                jobs.delete().where(jobs.c.id.in_(pick.scalar_subquery()), old).returning(jobs.c.id)
            ).all()
        removed += len(gone)
        if len(gone) < batch:
            return removed


def _prune_older(
    store: Store, table: sa.Table, when: sa.Column[Any], cutoff: dt.datetime, batch: int
) -> int:
    """Rows of `table` made before `cutoff` (nothing in them is ever open)."""
    pick = sa.select(table.c.id).where(when < cutoff).order_by(table.c.id).limit(batch)
    removed = 0
    while True:
        with store.tx() as conn:
            gone = conn.execute(
                table.delete().where(table.c.id.in_(pick.scalar_subquery())).returning(table.c.id)
            ).all()
        removed += len(gone)
        if len(gone) < batch:
            return removed
