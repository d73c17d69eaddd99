"""Triage's baselines in the store (issue 26): a green job's log kept once per (repository,
run, job name), which run is the baseline of a job on a base commit, and retention. On
SQLite and PostgreSQL (conftest.py)."""

from __future__ import annotations

import datetime as dt

import sqlalchemy as sa

from landbot.store import Store, utcnow
from landbot.store.retention import prune
from landbot.store.store import CHECK_NAME_CHARS
from landbot.store.tables import baseline_runs, baselines

REPO = "Acme/Widgets"
BASE = "a" * 40
RUN_SHA = "b" * 40
WEEK = dt.timedelta(days=7)


def save(store: Store, run_id: int = 7, job: str = "test (3.12)", data: bytes = b"v1") -> bool:
    return store.save_baseline(
        repo=REPO, run_id=run_id, job_name=job, job_id=70, head_sha=RUN_SHA, data=data
    )


def test_a_baseline_is_kept_once_per_run_and_job(store: Store) -> None:
    assert store.baseline(REPO, 7, "test (3.12)") is None
    assert save(store)
    kept = store.baseline(REPO, 7, "test (3.12)")
    assert kept is not None
    assert (kept.run_id, kept.job_name, kept.job_id, kept.head_sha, kept.data) == (
        7,
        "test (3.12)",
        70,
        RUN_SHA,
        b"v1",
    )
    assert kept.made_at.tzinfo is not None
    # A racing worker's copy of the same run's job: the first stays, no error.
    assert not save(store, data=b"v2")
    assert store.baseline(REPO, 7, "test (3.12)").data == b"v1"  # type: ignore[union-attr]
    # Another matrix entry, another run: rows of their own. GitHub's names ignore case.
    assert save(store, job="test (3.13)", data=b"m") and save(store, run_id=8, data=b"r")
    assert store.baseline(REPO.lower(), 7, "test (3.13)").data == b"m"  # type: ignore[union-attr]
    assert store.baseline(REPO, 8, "test (3.12)").data == b"r"  # type: ignore[union-attr]
    assert store.baseline("acme/other", 7, "test (3.12)") is None


def test_bytes_come_back_unchanged(store: Store) -> None:
    data = bytes(range(256)) * 4096  # NUL and every other byte, a megabyte
    assert save(store, data=data)
    assert store.baseline(REPO, 7, "test (3.12)").data == data  # type: ignore[union-attr]


def test_a_job_name_too_long_to_be_a_key_is_not_kept(store: Store) -> None:
    long = "j" * (CHECK_NAME_CHARS + 1)
    assert not save(store, job=long)
    assert store.baseline(REPO, 7, long) is None
    assert save(store, job="j" * CHECK_NAME_CHARS)  # the control: exactly the limit


def test_a_baseline_read_back_wrong_is_forgotten(store: Store) -> None:
    assert save(store)
    store.forget_baseline(REPO, 7, "test (3.12)")
    assert store.baseline(REPO, 7, "test (3.12)") is None
    assert save(store, data=b"again")


def remember(store: Store, run_id: int | None, **kw: object) -> None:
    store.remember_baseline_run(
        repo=REPO,
        base_ref=str(kw.get("base_ref", "main")),
        workflow="CI",
        job_name="test (3.12)",
        base_sha=str(kw.get("base_sha", BASE)),
        run_id=run_id,
        run_sha=RUN_SHA if run_id is not None else None,
        job_id=70 if run_id is not None else None,
        at=kw.get("at"),  # type: ignore[arg-type]
    )


def test_the_run_of_a_base_commit_is_remembered_and_replaced(store: Store) -> None:
    assert store.baseline_run(REPO, "main", "CI", "test (3.12)", BASE) is None
    remember(store, None)
    none = store.baseline_run(REPO, "main", "CI", "test (3.12)", BASE)
    assert none is not None and (none.run_id, none.run_sha, none.job_id) == (None, None, None)
    later = utcnow() + dt.timedelta(minutes=1)
    remember(store, 7, at=later)
    found = store.baseline_run(REPO.lower(), "main", "CI", "test (3.12)", BASE)
    assert found is not None
    assert (found.run_id, found.run_sha, found.job_id, found.found_at) == (7, RUN_SHA, 70, later)
    assert (found.base_ref, found.workflow, found.job_name, found.base_sha) == (
        "main",
        "CI",
        "test (3.12)",
        BASE,
    )
    # Each part of the key tells bases apart; one row per key.
    assert store.baseline_run(REPO, "main", "CI", "test (3.12)", "c" * 40) is None
    assert store.baseline_run(REPO, "release/1", "CI", "test (3.12)", BASE) is None
    assert store.baseline_run(REPO, "main", "CI", "test (3.13)", BASE) is None
    assert store.baseline_run(REPO, "main", "Lint", "test (3.12)", BASE) is None
    with store.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(baseline_runs)).scalar() == 1


def test_a_long_branch_and_job_name_are_keys_too(store: Store) -> None:
    branch, job = "b" * 1000, "n" * 5000
    store.remember_baseline_run(
        repo=REPO, base_ref=branch, workflow="w" * 5000, job_name=job, base_sha=BASE, run_id=9
    )
    found = store.baseline_run(REPO, branch, "w" * 5000, job, BASE)
    assert found is not None and found.run_id == 9


def age(store: Store, days: int) -> None:
    then = utcnow() - dt.timedelta(days=days)
    with store.tx() as conn:
        conn.execute(baselines.update().values(made_at=then))
        conn.execute(baseline_runs.update().values(found_at=then))


def test_retention_prunes_old_baselines_and_keeps_young_ones(store: Store) -> None:
    assert save(store)
    remember(store, 7)
    age(store, 8)
    assert save(store, run_id=8)  # young
    remember(store, 8, base_sha="c" * 40)
    pruned = prune(store, WEEK)
    assert pruned.baselines == 2 and not pruned.nothing
    assert store.baseline(REPO, 7, "test (3.12)") is None
    assert store.baseline_run(REPO, "main", "CI", "test (3.12)", BASE) is None
    assert store.baseline(REPO, 8, "test (3.12)") is not None
    assert store.baseline_run(REPO, "main", "CI", "test (3.12)", "c" * 40) is not None
    assert prune(store, WEEK).nothing
