"""`landbot poll`: one sweep per repository, then the work the sweeps found, and no other.

A poll shares its store with whatever else writes to it (webhooks, `landbot serve`'s worker,
earlier polls), so it does not drain the store: it runs the jobs of its own drops, the drop
job each sweep recorded and the fix jobs those lead to, and leaves every other job to the
workers. "Its own drops" are the ones this run's sweeps recorded plus the poll-found drops
of the last day that are still pending: a scheduled Action has no worker, so the work an
earlier run left (its runner was killed, or a retry was due after it gave up waiting) is
finished by the next run. Retries the run is waiting for are bounded by `wait`.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa

from landbot.pipeline.worker import Worker
from landbot.store import Lease, Store, StoredJob, utcnow
from landbot.store.tables import jobs

# The same day a sweep looks back (intake/poll.py), and how long a run waits for the
# retries of its own jobs (the worker backs off 5, 10, 20, 40 s).
LOOKBACK = dt.timedelta(hours=24)
WAIT_S = 300.0
# The worker's lock around the fixer's concurrency cap on PostgreSQL (store._lease).
FIX_CAP_LOCK = 4242
OPEN = ("queued", "leased")


@dataclass
class PollRun:
    """What a poll's processing did: jobs run, and the jobs of its drops still open."""

    drops: list[int]
    ran: int = 0
    left: list[StoredJob] = field(default_factory=list)


def own_drops(
    store: Store, repos: Iterable[str], new: Iterable[int], *, now: dt.datetime
) -> list[int]:
    """This run's new drops and the poll-found drops of the last day still pending."""
    ids = set(new)
    for repo in repos:
        for d in store.drops(repo, since=now - LOOKBACK, limit=None):
            if d.source == "poll" and d.outcome == "pending":
                ids.add(d.id)
    return sorted(ids)


def finish_own_work(
    store: Store,
    worker: Worker,
    drop_ids: list[int],
    *,
    wait: float = WAIT_S,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> PollRun:
    """Run every job of `drop_ids` (and the jobs those add for the same drops) until none is
    runnable; wait for a retry when it is due within `wait` seconds of the start."""
    run = PollRun(drop_ids)
    if not drop_ids:
        return run
    give_up = clock() + wait
    while True:
        lease = _claim(store, worker, drop_ids)
        if lease is not None:
            worker._job(lease)  # the worker's lease keeping, retries and failure handling
            run.ran += 1
            continue
        now = utcnow()
        open_jobs = _open_jobs(store, drop_ids)
        # Leased by another live worker: that worker finishes it.
        ours = [j for j in open_jobs if j.status == "queued" or _expired(j, now)]
        if not ours:
            run.left = open_jobs
            return run
        due = min(_due(j) for j in ours)
        delay = max((due - now).total_seconds(), 0.05)
        if clock() + delay > give_up:
            run.left = open_jobs
            return run
        sleep(delay)


def _expired(job: StoredJob, now: dt.datetime) -> bool:
    return job.status == "leased" and (job.lease_expires_at is None or job.lease_expires_at < now)


def _due(job: StoredJob) -> dt.datetime:
    if job.status == "leased":
        return job.lease_expires_at or utcnow()
    return job.not_before or utcnow()


def _open_jobs(store: Store, drop_ids: list[int]) -> list[StoredJob]:
    q = sa.select(jobs).where(jobs.c.drop_id.in_(drop_ids), jobs.c.status.in_(OPEN))
    with store.engine.connect() as conn:
        return [_job_record(row) for row in conn.execute(q.order_by(jobs.c.id))]


def _job_record(row: sa.Row[Any]) -> StoredJob:
    return StoredJob(**row._mapping)


def _claim(store: Store, worker: Worker, drop_ids: list[int]) -> Lease | None:
    """Lease the oldest runnable job of these drops, as `Store.lease_job` leases any job:
    a conditional update, so a worker racing for the same job gets it or we do, not both."""
    now = utcnow()
    free = sa.or_(
        jobs.c.status == "queued",
        sa.and_(jobs.c.status == "leased", jobs.c.lease_expires_at < now),
    )
    ready = sa.or_(jobs.c.not_before.is_(None), jobs.c.not_before <= now)
    with store.tx() as conn:
        candidates = conn.execute(
            sa.select(jobs.c.id, jobs.c.kind)
            .where(jobs.c.drop_id.in_(drop_ids), free, ready)
            .order_by(jobs.c.id)
        ).all()
        fix_full: bool | None = None
        for cand in candidates:
            if cand.kind == "fix":
                if fix_full is None:
                    fix_full = _fixers_running(conn, now) >= worker.fixer_concurrency
                if fix_full:
                    continue
            res = conn.execute(
                jobs.update()
                .where(jobs.c.id == cand.id, free)
                .values(
                    status="leased",
                    lease_owner=worker.name,
                    lease_expires_at=now + worker.lease,
                    attempts=jobs.c.attempts + 1,
                )
            )
            if res.rowcount == 1:
                row = conn.execute(sa.select(jobs).where(jobs.c.id == cand.id)).one()
                return Lease(row.id, row.kind, row.payload, row.attempts, worker.name)
    return None


def _fixers_running(conn: sa.Connection, now: dt.datetime) -> int:
    if conn.dialect.name == "postgresql":
        # As the store's lease does: two processes must not both take the last slot.
        conn.execute(sa.text(f"SELECT pg_advisory_xact_lock({FIX_CAP_LOCK})"))
    return int(
        conn.execute(
            sa.select(sa.func.count())
            .select_from(jobs)
            .where(jobs.c.kind == "fix", jobs.c.status == "leased", jobs.c.lease_expires_at >= now)
        ).scalar_one()
    )
