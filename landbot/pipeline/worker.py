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
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import Any

from landbot import logs
from landbot.core.model import Drop, Evidence, FixerResult
from landbot.errors import LandbotError
from landbot.fixer.actions import CURRENT_JOB, FixWaiting
from landbot.github.errors import MutationOutcomeUnknown, NetworkError, RateLimited, ServerError
from landbot.github.tally import CallTally
from landbot.intake import events
from landbot.land.decide import job_failed
from landbot.pipeline import deliveries
from landbot.pipeline.commands import run_comment_command
from landbot.pipeline.process import RELEASE_JOB, Lander
from landbot.store import Lease, Store, StoredDelivery, utcnow
from landbot.store.retention import prune

log = logging.getLogger("landbot.worker")
# Retried later. A mutation whose answer never came is among them: its ledger entry stays
# "started", so the next attempt re-reads GitHub before sending it again (land/act.py).
TRANSIENT = (NetworkError, ServerError, RateLimited, MutationOutcomeUnknown)
# Runs one land-fixer job: (the drop, the evidence its plan was decided on) → the result.
FixRunner = Callable[[Drop, Evidence], FixerResult]
MAX_ATTEMPTS = 5
JobPayload = dict[str, Any]
# How often a running worker prunes old deliveries and jobs (landbot.store.retention).
PRUNE_EVERY_S = 3600.0
# How often a worker saves its process's GitHub request counts for /metrics: a scrape of
# another process sees them at most this late.
CALLS_EVERY_S = 15.0


@dataclass(frozen=True)
class FixerRun:
    """One fixer run this process finished (or that raised: verdict "error")."""

    repo: str
    verdict: str
    seconds: float


# Told of every fixer run, in the worker's thread (landbot.web.prom counts them).
FIXER_OBSERVERS: list[Callable[[FixerRun], None]] = []


def _fixer_ran(run: FixerRun) -> None:
    for observe in tuple(FIXER_OBSERVERS):
        try:
            observe(run)
        except Exception:  # counting must never fail a job
            log.exception("a fixer run observer failed")


def failpoint_from_env() -> Callable[[str], None]:
    """`LANDBOT_FAILPOINT=<name>` makes the process SIGKILL itself at that point, once per
    store (a marker file beside it): how the tests kill a worker between deciding and acting.
    The marker holds the name and the pid, so a harness knows which process died there."""
    wanted = os.environ.get("LANDBOT_FAILPOINT")
    marker = os.environ.get("LANDBOT_FAILPOINT_MARKER")

    def hit(name: str) -> None:
        if name != wanted or not marker or os.path.exists(marker):
            return
        with open(marker, "w") as f:
            f.write(f"{name} {os.getpid()}\n")
        os.kill(os.getpid(), 9)

    return hit


def save_tally(store: Store, tally: CallTally) -> bool:
    """Save a process's GitHub request counts; a failure is logged, never raised (a command
    ending on an error must show that error, not this one), and the counts being absolute,
    the next save makes up for it."""
    try:
        store.save_call_counts(tally.process, tally.snapshot(), utcnow())
    except Exception as exc:
        logs.event(log, "GitHub call counts not saved", logging.WARNING, error=exc)
        return False
    return True


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
        retention: dt.timedelta | None = None,
        flaky_sweep: Callable[[], object] | None = None,
        flaky_every: float = 600.0,
        calls: CallTally | None = None,
        calls_every: float = CALLS_EVERY_S,
    ) -> None:
        self.store = store
        self.lander_factory = lander_factory
        self.fixer = fixer
        self.fixer_concurrency = fixer_concurrency
        self._lander: Lander | None = None
        self.name = name or f"{socket.gethostname()}:{os.getpid()}:{id(self):x}"
        self.lease = lease
        self.idle_sleep = idle_sleep
        # None: this worker never prunes (a test's, or `landbot poll`'s drain).
        self.retention = retention
        self._pruned_at: float | None = None
        # The flaky-test issues' sweep (pipeline/flaky_issues.py); None: off, or a test's.
        self.flaky_sweep = flaky_sweep
        self.flaky_every = flaky_every
        self._swept_at: float | None = None
        # This process's GitHub requests, saved in the store for /metrics (issue 28.4);
        # None: not saved (a test's worker).
        self.calls = calls
        self.calls_every = calls_every
        self._calls_saved_at: float | None = None
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
                self.prune_due()
                self.flaky_due()
                self.calls_due()
                if not self.step():
                    stop.wait(self.idle_sleep)
            except Exception:  # the store itself failed: keep the worker alive, try later
                log.exception("worker step failed")
                stop.wait(max(self.idle_sleep, 2.0))
        self.save_calls()  # the last counts, as it stops

    def calls_due(self) -> bool:
        """Save this process's GitHub request counts when `calls_every` seconds have passed
        since this worker last did (at once on the first call); True when it saved."""
        now = time.monotonic()
        if self.calls is None or (
            self._calls_saved_at is not None and now - self._calls_saved_at < self.calls_every
        ):
            return False
        self._calls_saved_at = now
        return self.save_calls()

    def save_calls(self) -> bool:
        """Save the counts now (`landbot poll` does as it ends); a failure is logged: the
        counts are absolute, so the next save makes up for it."""
        return self.calls is not None and save_tally(self.store, self.calls)

    def prune_due(self, every: float = PRUNE_EVERY_S) -> bool:
        """Prune the store when `every` seconds have passed since this worker last did (at
        once on the first call); True when it pruned."""
        now = time.monotonic()
        if self.retention is None or (
            self._pruned_at is not None and now - self._pruned_at < every
        ):
            return False
        self._pruned_at = now
        try:
            pruned = prune(self.store, self.retention)
        except Exception as exc:  # the store hiccupped: the next hour tries again
            logs.event(log, "store not pruned", logging.WARNING, error=exc)
            return False
        logs.event(
            log,
            "store pruned",
            logging.DEBUG if pruned.nothing else logging.INFO,
            deliveries=pruned.deliveries,
            delivery_bytes=pruned.delivery_bytes,
            jobs=pruned.jobs,
            baselines=pruned.baselines,
            call_rows=pruned.call_rows,
            retention_days=round(self.retention / dt.timedelta(days=1), 3),
        )
        return True

    def flaky_due(self) -> bool:
        """Sweep the flaky tests' issues when `flaky_every` seconds have passed since this
        worker last did (at once on the first call); True when it swept. A failure is
        logged: the next sweep decides again from the store."""
        now = time.monotonic()
        if self.flaky_sweep is None or (
            self._swept_at is not None and now - self._swept_at < self.flaky_every
        ):
            return False
        self._swept_at = now
        try:
            self.flaky_sweep()
        except Exception as exc:
            logs.event(log, "flaky issues not swept", logging.WARNING, error=exc)
            return False
        return True

    def _delivery(self, lease: Lease[StoredDelivery]) -> None:
        row = lease.payload
        with logs.bound(
            repo=row.repo, delivery_id=row.delivery_id, github_event=row.event, action=row.action
        ):
            pr: int | None = None
            try:
                delivery = events.parse(row.delivery_id, row.event, row.received_at, row.body)
                pr = events.pr_of(delivery)
                with logs.bound(pr=pr):
                    note = deliveries.apply(delivery, self.store)
            except Exception as exc:
                logs.event(
                    log, "delivery processed", logging.WARNING, pr=pr, outcome="error", error=exc
                )
                self.store.finish_delivery(lease.id, self.name, "error", error=str(exc)[:2000])
                return
            self.store.finish_delivery(lease.id, self.name, "done", error=None)
            logs.event(log, "delivery processed", pr=pr, outcome="done", note=note)

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
                except Exception as exc:  # the store hiccupped: the next beat tries again
                    logs.event(
                        log, "job lease not renewed", logging.WARNING, job_id=lease.id, error=exc
                    )

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
        with logs.bound(
            job_id=lease.id, job=lease.kind, attempt=lease.attempts, **self._drop_fields(lease)
        ):
            if lease.attempts > MAX_ATTEMPTS:
                # Leased again and again without finishing: a job that kills its worker.
                self._failed(lease, RuntimeError(f"gave up after {lease.attempts - 1} attempts"))
                return
            started = time.monotonic()
            with self._holding(lease):
                status = self._run_job(lease)
            logs.event(
                log,
                "job finished",
                logging.DEBUG,
                status=status,
                duration_s=round(time.monotonic() - started, 3),
            )

    def _run_job(self, lease: Lease[JobPayload]) -> str:
        """Run the job; its status after: done, retry or failed."""
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
                    # The actions backend keys its dispatch by this job (fixer/actions.py).
                    token = CURRENT_JOB.set(lease.id)
                    try:
                        # A job on Actions is looked at again and again while its run
                        # goes on: only the first look, before its dispatch, starts it.
                        first = self.store.dispatch_for(lease.id) is None
                        outcome = self._fix(drop, evidence, self.fixer, payload, first=first)
                    finally:
                        CURRENT_JOB.reset(token)
                    decision = self.lander.process(drop_id, fixer=outcome)
                    result = {"verdict": outcome.verdict, "outcome": decision.outcome}
            elif lease.kind == "command":
                # The last attempt answers a lost GitHub answer in the reply, not in silence.
                last = lease.attempts >= MAX_ATTEMPTS
                result = {"note": run_comment_command(self.lander, self.store, payload, final=last)}
            elif lease.kind == "checks":
                # A push or a close cancelled the PR's queued work: its check runs end too.
                seen = self.lander.settle_checks(str(payload["repo"]), int(payload["pr"]))
                result = {"drops": seen}
            elif lease.kind == "hold":
                # A repository's waiting drops (a red base): released in their order when the
                # base is green, or looked at again later (the job waits in the store).
                repo = str(payload["repo"])
                again = self.lander.hold_sweep(repo)
                if again is not None:
                    self.store.defer_job(lease.id, self.name, again, "waiting for the base")
                    return "waiting"
                result = {"repo": repo}
            elif lease.kind == RELEASE_JOB:
                # A release's PR lease whose holder died, taken once it expired.
                result = {"note": self.lander.release_job(int(payload["drop_id"]))}
            elif lease.kind == "breaker_close":
                from landbot.pipeline.breaker_command import run_breaker_close

                result = {"note": run_breaker_close(self.lander, self.store, payload)}
            elif lease.kind == "repo_file":
                # A push touched the repository's settings file (intake marked it stale):
                # asking for its settings reads it again, and reports it when invalid.
                repo = str(payload["repo"])
                mine = self.lander.settings_for(repo)
                result = {"repo": repo, "own_settings": mine is not self.lander.settings}
            else:
                raise ValueError(f"no handler for job kind {lease.kind!r}")
        except FixWaiting as wait:
            # A fix job on Actions waits for its slot or its run: back in the store until
            # `not_before` (a workflow_run webhook wakes it sooner), no attempt counted.
            logs.event(log, "fix job waiting", logging.DEBUG, note=wait.note)
            self.store.defer_job(lease.id, self.name, wait.not_before, wait.note)
            return "waiting"
        except TRANSIENT as exc:
            self._server_error(lease, exc)
            if lease.attempts < MAX_ATTEMPTS:
                delay = min(300, 5 * 2 ** (lease.attempts - 1))
                logs.event(log, "job retrying", logging.WARNING, error=exc, retry_in_s=delay)
                self.store.retry_job(
                    lease.id, self.name, utcnow() + dt.timedelta(seconds=delay), str(exc)
                )
                return "retry"
            self._failed(lease, exc)
            return "failed"
        except (LandbotError, ValueError, KeyError) as exc:
            # Permanent for this job (GitHub refused, the host cannot sandbox, a bad
            # payload): the drop says so in `landbot status` instead of waiting forever.
            self._failed(lease, exc)
            return "failed"
        self.store.finish_job(lease.id, self.name, "done", result=result)
        return "done"

    def _drop_fields(self, lease: Lease[JobPayload]) -> dict[str, Any]:
        """The identifiers of the job's drop, for every line the job logs (a command job
        has no drop yet: its repository and PR)."""
        payload = lease.payload if isinstance(lease.payload, dict) else {}
        drop_id = payload.get("drop_id")
        if drop_id is None:
            return {"repo": payload.get("repo"), "pr": payload.get("pr")}
        try:
            row = self.store.drop(int(drop_id))
        except (TypeError, ValueError):
            row = None  # a bad payload: the job itself fails and says so
        return logs.drop_fields(row) if row is not None else {"drop_id": drop_id}

    def _fix(
        self,
        drop: Drop,
        evidence: Evidence,
        fixer: FixRunner,
        payload: JobPayload,
        *,
        first: bool = True,
    ) -> FixerResult:
        """Run the fixer on the drop, with a line at its start and one at its end (a later
        look at a job waiting on Actions logs its start at DEBUG)."""
        logs.event(
            log,
            "fixer started",
            logging.INFO if first else logging.DEBUG,
            mode=payload.get("mode"),
            reason=drop.reason,
        )
        started = time.monotonic()
        try:
            outcome = fixer(drop, evidence)
        except FixWaiting:
            raise  # not finished, not failed: the job waits in the store
        except Exception as exc:
            logs.event(
                log,
                "fixer finished",
                logging.WARNING,
                outcome="error",
                error=exc,
                duration_s=round(time.monotonic() - started, 3),
            )
            _fixer_ran(FixerRun(drop.repo, "error", time.monotonic() - started))
            raise
        _fixer_ran(FixerRun(drop.repo, outcome.verdict, time.monotonic() - started))
        logs.event(
            log,
            "fixer finished",
            verdict=outcome.verdict,
            pushed_sha=outcome.pushed_sha or None,
            refused=outcome.refused or None,
            summary=outcome.summary,
            duration_s=round(time.monotonic() - started, 3),
        )
        return outcome

    def _server_error(self, lease: Lease[JobPayload], exc: Exception) -> None:
        """A job attempt GitHub failed with a 5xx counts toward its repository's breaker: a
        read the client retried with backoff until it gave up (ServerError). One mutation's
        5xx (MutationOutcomeUnknown, never retried blindly) is one answer, not an outage."""
        if not isinstance(exc, ServerError) or exc.status < 500:
            return
        payload = lease.payload if isinstance(lease.payload, dict) else {}
        repo = payload.get("repo")
        if repo is None and payload.get("drop_id") is not None:
            with suppress(TypeError, ValueError):
                row = self.store.drop(int(payload["drop_id"]))
                repo = row.drop.repo if row is not None else None
        if not isinstance(repo, str):
            return
        try:
            self.lander.server_error(repo)
        except Exception as err:  # counting must never cost the job its retry
            logs.event(log, "server error not counted", logging.WARNING, error=err)

    def _failed(self, lease: Lease[JobPayload], exc: Exception) -> None:
        logs.event(log, "job failed", logging.ERROR, error=exc)
        self.store.finish_job(lease.id, self.name, "failed", error=str(exc)[:2000])
        drop_id = lease.payload.get("drop_id") if isinstance(lease.payload, dict) else None
        if drop_id is not None:
            failed = job_failed(str(exc)[:500])
            self.store.update_drop(int(drop_id), outcome=failed.outcome, summary=failed.why)
            self.lander.failed(int(drop_id), failed)  # its `landbot` check run says so too
