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

from landbot.intake.poll import LOOKBACK
from landbot.pipeline.process import Lander
from landbot.pipeline.worker import Worker
from landbot.store import Store, StoredJob, utcnow

# How long a run waits for the retries of its own jobs (the worker backs off 5, 10, 20, 40 s).
WAIT_S = 300.0


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
        lease = store.lease_job(
            worker.name, worker.lease, cap=("fix", worker.fixer_concurrency), drop_ids=drop_ids
        )
        if lease is not None:
            worker.run_job(lease)  # the worker's lease keeping, retries and failure handling
            run.ran += 1
            continue
        now = utcnow()
        open_jobs = store.open_jobs(drop_ids)
        # Leased by another live worker: that worker finishes it.
        ours = [j for j in open_jobs if j.status == "queued" or _expired(j, now)]
        if not ours:
            run.left = open_jobs
            return run
        due = min(_due(j) for j in ours)
        # At least the worker's idle sleep: a job held back by the fixer cap is "due" now.
        delay = max((due - now).total_seconds(), worker.idle_sleep)
        if clock() + delay > give_up:
            run.left = open_jobs
            return run
        sleep(delay)


def hold_sweeps(store: Store, lander: Lander, repos: Iterable[str]) -> int:
    """Each repository's waiting drops looked at again (released when their cause is gone);
    how many still wait. Nothing to look at costs no call."""
    from landbot.core.model import WAITING

    left = 0
    for repo in repos:
        breaker = store.breaker(repo)
        if store.waiting_drops(repo, sorted(WAITING)) or (breaker is not None and breaker.open):
            lander.hold_sweep(repo)
            left += len(store.waiting_drops(repo, sorted(WAITING)))
    return left


def _expired(job: StoredJob, now: dt.datetime) -> bool:
    return job.status == "leased" and (job.lease_expires_at is None or job.lease_expires_at < now)


def _due(job: StoredJob) -> dt.datetime:
    if job.status == "leased":
        return job.lease_expires_at or utcnow()
    return job.not_before or utcnow()
