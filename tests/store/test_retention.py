"""Retention (landbot.store.retention): finished deliveries and jobs go after the configured
age; drops, open work and young rows stay. On SQLite and PostgreSQL (conftest.py)."""

from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from pydantic import ValidationError

from landbot.config import Settings
from landbot.pipeline.worker import Worker
from landbot.store import Store, utcnow
from landbot.store.retention import FINISHED_DELIVERIES, FINISHED_JOBS, prune
from landbot.store.tables import deliveries, drops, jobs

WEEK = dt.timedelta(days=7)
TTL = dt.timedelta(seconds=60)
PAYLOADS = Path(__file__).parent.parent / "web" / "payloads"


def delivery(store: Store, name: str, status: str, age: dt.timedelta, body: bytes = b"{}") -> None:
    """A delivery received `age` ago and left in `status`."""
    assert store.record_delivery(name, "pull_request", "dequeued", "o/r", body)
    with store.tx() as conn:
        conn.execute(
            deliveries.update()
            .where(deliveries.c.delivery_id == name)
            .values(status=status, received_at=utcnow() - age)
        )


def job(store: Store, status: str, age: dt.timedelta, drop_id: int | None = None) -> int:
    """A job last updated (finished, for a finished one) `age` ago, in `status`."""
    job_id = store.add_job("drop", {"drop_id": drop_id}, drop_id=drop_id)
    assert job_id is not None
    with store.tx() as conn:
        conn.execute(
            jobs.update()
            .where(jobs.c.id == job_id)
            .values(status=status, updated_at=utcnow() - age)
        )
    return job_id


def names(store: Store) -> set[str]:
    with store.engine.connect() as conn:
        return {r[0] for r in conn.execute(sa.select(deliveries.c.delivery_id))}


def job_ids(store: Store) -> set[int]:
    with store.engine.connect() as conn:
        return {int(r[0]) for r in conn.execute(sa.select(jobs.c.id))}


def test_old_finished_deliveries_go_and_the_rest_stay(store: Store) -> None:
    old, young = WEEK + dt.timedelta(hours=1), WEEK - dt.timedelta(hours=1)
    for status in FINISHED_DELIVERIES:
        delivery(store, f"old-{status}", status, old, body=b"x" * 1000)
        delivery(store, f"young-{status}", status, young)  # the control: too young
    delivery(store, "old-pending", "pending", old)  # never processed: the worker's backlog
    delivery(store, "old-leased", "leased", old)  # a worker holds it now

    pruned = prune(store, WEEK)

    assert pruned.deliveries == len(FINISHED_DELIVERIES)
    assert pruned.delivery_bytes == 1000 * len(FINISHED_DELIVERIES)
    assert names(store) == {f"young-{s}" for s in FINISHED_DELIVERIES} | {
        "old-pending",
        "old-leased",
    }
    assert prune(store, WEEK).nothing  # nothing left to prune: a second run is a no-op


def test_old_finished_jobs_go_and_the_rest_stay(store: Store) -> None:
    old, young = WEEK + dt.timedelta(hours=1), WEEK - dt.timedelta(hours=1)
    gone = {job(store, status, old) for status in FINISHED_JOBS}
    kept = {job(store, status, young) for status in FINISHED_JOBS}  # the control
    kept |= {job(store, "queued", old), job(store, "leased", old)}  # open: never pruned

    pruned = prune(store, WEEK)

    assert pruned.jobs == len(gone)
    assert job_ids(store) == kept


def test_drops_are_kept_with_their_jobs_gone(store: Store) -> None:
    long_ago = utcnow() - dt.timedelta(days=400)
    drop_id, _ = store.add_drop(
        repo="o/r", pr=1, head_sha="a" * 40, reason="failed_checks", source="webhook",
        dedupe_key="k", observed_at=long_ago,
    )  # fmt: skip
    store.update_drop(drop_id, outcome="handed_back")
    with store.tx() as conn:
        conn.execute(drops.update().where(drops.c.id == drop_id).values(updated_at=long_ago))
    done = job(store, "done", dt.timedelta(days=400), drop_id=drop_id)

    assert prune(store, WEEK).jobs == 1  # the job referenced the drop: it goes first
    assert done not in job_ids(store)
    row = store.drop(drop_id)
    assert row is not None and row.outcome == "handed_back"


def test_pruning_goes_in_batches_to_the_end(store: Store) -> None:
    for i in range(7):
        delivery(store, f"d{i}", "done", WEEK * 2)
        job(store, "done", WEEK * 2)
    pruned = prune(store, WEEK, batch=3)
    assert (pruned.deliveries, pruned.jobs) == (7, 7)
    assert names(store) == set() and job_ids(store) == set()


def test_the_age_is_measured_from_now(store: Store) -> None:
    delivery(store, "d", "done", dt.timedelta(days=1))
    assert prune(store, WEEK).nothing
    assert prune(store, WEEK, now=utcnow() + dt.timedelta(days=7)).deliveries == 1


@pytest.mark.parametrize("age", [dt.timedelta(0), dt.timedelta(days=-1)])
def test_a_non_positive_age_is_refused(store: Store, age: dt.timedelta) -> None:
    delivery(store, "d", "done", dt.timedelta(days=1))
    with pytest.raises(ValueError, match="older_than must be positive"):
        prune(store, age)
    assert names(store) == {"d"}


# --- the setting and the worker --------------------------------------------------------


def test_the_retention_setting_defaults_to_a_week_and_refuses_less_than_github_redelivers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert Settings().store.retention_days == 7
    monkeypatch.setenv("LANDBOT_STORE__RETENTION_DAYS", "30")
    assert Settings().store.retention_days == 30
    monkeypatch.setenv("LANDBOT_STORE__RETENTION_DAYS", "2")
    with pytest.raises(ValidationError, match="greater than or equal to 3"):
        Settings()


def test_the_worker_is_given_the_setting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from landbot.pipeline.wiring import make_worker

    monkeypatch.setenv("LANDBOT_STORE__RETENTION_DAYS", "10")
    store = Store.open(f"sqlite:///{tmp_path / 'landbot.db'}")
    try:
        assert make_worker(Settings(), store).retention == dt.timedelta(days=10)
    finally:
        store.close()


def test_the_worker_prunes_at_once_then_once_an_interval(store: Store) -> None:
    worker = Worker(store, lambda: None, retention=WEEK)  # type: ignore[arg-type, return-value]
    delivery(store, "a", "done", WEEK * 2)
    assert worker.prune_due(every=3600) is True
    assert names(store) == set()
    delivery(store, "b", "done", WEEK * 2)
    assert worker.prune_due(every=3600) is False  # within the interval: not again
    assert names(store) == {"b"}
    assert worker.prune_due(every=0) is True
    assert names(store) == set()


def test_a_worker_without_retention_never_prunes(store: Store) -> None:
    worker = Worker(store, lambda: None)  # type: ignore[arg-type, return-value]
    delivery(store, "a", "done", WEEK * 100)
    assert worker.prune_due(every=0) is False
    assert names(store) == {"a"}


def test_the_running_worker_prunes(store: Store) -> None:
    """Worker.run prunes before its first step (a real loop, stopped when idle)."""
    import threading

    stop = threading.Event()
    worker = Worker(store, lambda: None, retention=WEEK, idle_sleep=0.01)  # type: ignore[arg-type, return-value]
    delivery(store, "old", "done", WEEK * 2)
    delivery(store, "young", "done", dt.timedelta(hours=1))
    thread = threading.Thread(target=worker.run, args=(stop,))
    thread.start()
    try:
        deadline = utcnow() + dt.timedelta(seconds=20)
        while "old" in names(store) and utcnow() < deadline:
            stop.wait(0.05)
    finally:
        stop.set()
        thread.join(timeout=20)
    assert names(store) == {"young"}


# --- what it saves ------------------------------------------------------------------------


def sqlite_used_bytes(store: Store) -> int:
    """Bytes of the SQLite file in use (free pages are reused before the file grows)."""
    with store.engine.connect() as conn:
        page = int(conn.exec_driver_sql("PRAGMA page_size").scalar_one())
        pages = int(conn.exec_driver_sql("PRAGMA page_count").scalar_one())
        free = int(conn.exec_driver_sql("PRAGMA freelist_count").scalar_one())
    return (pages - free) * page


def test_pruning_frees_the_bodies_space_on_sqlite(tmp_path: Path) -> None:
    """A toy week: 300 deliveries of the web tests' GitHub-shaped payloads, processed and
    a week old, then pruned. The space in use falls by at least the bodies' size."""
    store = Store.open(f"sqlite:///{tmp_path / 'landbot.db'}")
    try:
        bodies = sorted(p.read_bytes() for p in PAYLOADS.glob("*.json"))
        assert bodies, "the web tests' payloads are missing"
        for i in range(300):
            delivery(store, f"d{i}", "done", WEEK * 2, body=bodies[i % len(bodies)])
        before = sqlite_used_bytes(store)
        pruned = prune(store, WEEK)
        after = sqlite_used_bytes(store)
        saved: dict[str, Any] = {
            "deliveries": pruned.deliveries,
            "body_bytes": pruned.delivery_bytes,
            "used_before": before,
            "used_after": after,
        }
        print(f"retention toy run: {saved}", file=sys.stderr)
        assert pruned.deliveries == 300
        assert pruned.delivery_bytes == sum(len(bodies[i % len(bodies)]) for i in range(300))
        assert before - after >= pruned.delivery_bytes
    finally:
        store.close()
