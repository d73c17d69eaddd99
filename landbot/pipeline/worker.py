"""The worker: takes deliveries and jobs from the store under leases and carries them out.

Any number of workers may share a store. A worker killed at any point leaves its lease to
expire; the next worker takes the work again, and the land loop's ledger keeps every action
on GitHub to one.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from landbot.core.model import Drop, Evidence, FixerResult
from landbot.errors import LandbotError
from landbot.github.errors import MutationOutcomeUnknown, NetworkError, RateLimited, ServerError
from landbot.intake import events
from landbot.land.decide import job_failed
from landbot.pipeline import deliveries
from landbot.pipeline.commands import run_comment_command
from landbot.pipeline.process import Lander
from landbot.store import Lease, Store, StoredDelivery, utcnow

log = logging.getLogger("landbot.worker")
# Retried later. A mutation whose answer never came is among them: its ledger entry stays
# "started", so the next attempt re-reads GitHub before sending it again (land/act.py).
TRANSIENT = (NetworkError, ServerError, RateLimited, MutationOutcomeUnknown)
# Runs one land-fixer job: (the drop, the evidence its plan was decided on) → the result.
FixRunner = Callable[[Drop, Evidence], FixerResult]
MAX_ATTEMPTS = 5
JobPayload = dict[str, Any]


def failpoint_from_env() -> Callable[[str], None]:
    """`LANDBOT_FAILPOINT=<name>` makes the process SIGKILL itself at that point, once per
    store (a marker file beside it): how the tests kill a worker between deciding and acting."""
    wanted = os.environ.get("LANDBOT_FAILPOINT")
    marker = os.environ.get("LANDBOT_FAILPOINT_MARKER")

    def hit(name: str) -> None:
        if name != wanted or not marker or os.path.exists(marker):
            return
        with open(marker, "w") as f:
            f.write(name)
        os.kill(os.getpid(), 9)

    return hit


class Worker:
    def __init__(
        self,
        store: Store,
        lander_factory: Callable[[], Lander],
        *,
        fixer: FixRunner | None = None,
        fixer_concurrency: int = 1,
        name: str | None = None,
        lease: dt.timedelta = dt.timedelta(seconds=120),
        idle_sleep: float = 0.5,
    ) -> None:
        self.store = store
        self.lander_factory = lander_factory
        self.fixer = fixer
        self.fixer_concurrency = fixer_concurrency
        self._lander: Lander | None = None
        self.name = name or f"{socket.gethostname()}:{os.getpid()}:{id(self):x}"
        self.lease = lease
        self.idle_sleep = idle_sleep
        self.last_beat = time.monotonic()

    @property
    def lander(self) -> Lander:
        if self._lander is None:
            self._lander = self.lander_factory()
        return self._lander

    def alive(self, within: float = 60.0) -> bool:
        return time.monotonic() - self.last_beat < within

    def step(self) -> bool:
        """Do one piece of work; False when there was none."""
        self.last_beat = time.monotonic()
        delivery = self.store.lease_delivery(self.name, self.lease)
        if delivery is not None:
            self._delivery(delivery)
            return True
        job = self.store.lease_job(self.name, self.lease, cap=("fix", self.fixer_concurrency))
        if job is not None:
            self.run_job(job)
            return True
        return False

    def drain(self, limit: int = 10_000) -> int:
        """Work until nothing is left (`landbot poll` in a scheduled Action)."""
        done = 0
        while done < limit and self.step():
            done += 1
        return done

    def run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                if not self.step():
                    stop.wait(self.idle_sleep)
            except Exception:  # the store itself failed: keep the worker alive, try later
                log.exception("worker step failed")
                stop.wait(max(self.idle_sleep, 2.0))

    def _delivery(self, lease: Lease[StoredDelivery]) -> None:
        row = lease.payload
        try:
            delivery = events.parse(row.delivery_id, row.event, row.received_at, row.body)
            note = deliveries.apply(delivery, self.store)
        except Exception as exc:
            log.warning("delivery %s (%s) failed: %s", row.delivery_id, row.event, exc)
            self.store.finish_delivery(lease.id, self.name, "error", error=str(exc)[:2000])
            return
        log.info("delivery %s %s: %s", row.delivery_id, row.event, note)
        self.store.finish_delivery(lease.id, self.name, "done", error=None)

    @contextmanager
    def _holding(self, lease: Lease[JobPayload]) -> Iterator[None]:
        """Keep the lease (and this worker's heartbeat) alive while a job runs: a fix job
        runs far longer than a lease, and another worker must not take it meanwhile."""
        done = threading.Event()
        every = max(self.lease.total_seconds() / 3, 0.05)

        def beat() -> None:
            while not done.wait(every):
                self.last_beat = time.monotonic()
                try:
                    self.store.renew_lease("jobs", lease.id, self.name, self.lease)
                except Exception:  # the store hiccupped: the next beat tries again
                    log.warning("could not renew the lease of job %s", lease.id)

        thread = threading.Thread(target=beat, name=f"lease-{lease.id}", daemon=True)
        thread.start()
        try:
            yield
        finally:
            done.set()
            thread.join()

    def run_job(self, lease: Lease[JobPayload]) -> None:
        """Carry out one leased job, keeping its lease alive; retries and failures as for
        any job (`landbot poll` runs its own jobs through here)."""
        if lease.attempts > MAX_ATTEMPTS:
            # Leased again and again without finishing: a job that kills its worker.
            self._failed(lease, RuntimeError(f"gave up after {lease.attempts - 1} attempts"))
            return
        with self._holding(lease):
            self._run_job(lease)

    def _run_job(self, lease: Lease[JobPayload]) -> None:
        payload: dict[str, Any] = lease.payload
        try:
            if lease.kind == "drop":
                decision = self.lander.process(int(payload["drop_id"]))
                result: Any = {"outcome": decision.outcome, "why": decision.why}
            elif lease.kind == "fix":
                if self.fixer is None:
                    raise ValueError("a fix job, but no fixer is configured in this worker")
                drop_id = int(payload["drop_id"])
                drop, evidence, stale = self.lander.before_fix(drop_id)
                if stale is not None:
                    # Closed, merged, pushed to, back in the queue or opted out since the
                    # drop: the fixer would push to a PR a person has taken over.
                    self.lander.settle(drop_id, drop, stale)
                    result = {"outcome": stale.outcome, "why": stale.why}
                else:
                    self.lander.progress(f"running the fixer on {drop.repo}#{drop.pr}")
                    outcome = self.fixer(drop, evidence)
                    decision = self.lander.process(drop_id, fixer=outcome)
                    result = {"verdict": outcome.verdict, "outcome": decision.outcome}
            elif lease.kind == "command":
                result = {"note": run_comment_command(self.lander, self.store, payload)}
            else:
                raise ValueError(f"no handler for job kind {lease.kind!r}")
        except TRANSIENT as exc:
            if lease.attempts < MAX_ATTEMPTS:
                delay = min(300, 5 * 2 ** (lease.attempts - 1))
                log.warning("job %s: %s; retrying in %ss", lease.id, exc, delay)
                self.store.retry_job(
                    lease.id, self.name, utcnow() + dt.timedelta(seconds=delay), str(exc)
                )
                return
            self._failed(lease, exc)
            return
        except (LandbotError, ValueError, KeyError) as exc:
            # Permanent for this job (GitHub refused, the host cannot sandbox, a bad
            # payload): the drop says so in `landbot status` instead of waiting forever.
            self._failed(lease, exc)
            return
        self.store.finish_job(lease.id, self.name, "done", result=result)

    def _failed(self, lease: Lease[JobPayload], exc: Exception) -> None:
        log.error("job %s (%s) failed: %s", lease.id, lease.kind, exc)
        self.store.finish_job(lease.id, self.name, "failed", error=str(exc)[:2000])
        drop_id = lease.payload.get("drop_id") if isinstance(lease.payload, dict) else None
        if drop_id is not None:
            failed = job_failed(str(exc)[:500])
            self.store.update_drop(int(drop_id), outcome=failed.outcome, summary=failed.why)
