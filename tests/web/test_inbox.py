"""The webhook's writes never wait in SQLite's busy handler behind another writer (a worker
catching up after a restart): they retry on their own, and a lock that stays taken ends in
a 503 that stores nothing, not in an answer after GitHub has given up."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from landbot.store import Store
from landbot.web import inbox as inbox_mod
from landbot.web.app import create_app
from landbot.web.inbox import Inbox, StoreBusy

from .conftest import headers_for, make_settings, stored


@contextmanager
def write_lock_held(db: Path, release: threading.Event) -> Iterator[None]:
    """Another process's writer (its own connection) holds SQLite's write lock until
    `release` is set."""
    taken = threading.Event()

    def hold() -> None:
        conn = sqlite3.connect(db, isolation_level=None, timeout=0)
        conn.execute("BEGIN IMMEDIATE")
        taken.set()
        release.wait(10)
        conn.execute("COMMIT")
        conn.close()

    thread = threading.Thread(target=hold)
    thread.start()
    taken.wait(10)
    try:
        yield
    finally:
        release.set()
        thread.join(10)


def db_path(store: Store) -> Path:
    assert store.engine.url.database
    return Path(store.engine.url.database)


def test_a_taken_lock_is_retried_by_the_inbox_not_slept_on_in_sqlite(store: Store) -> None:
    box = Inbox(store, deadline=10)
    release = threading.Event()
    with write_lock_held(db_path(store), release):
        # Let the lock go after a while; meanwhile the inbox must be trying, not blocked
        # inside SQLite's busy handler (which would leave busy_retries at 0).
        threading.Timer(0.3, release.set).start()
        assert box.record("d-1", "pull_request", "dequeued", "o/r", b"{}") is True
    assert box.busy_retries >= 10
    assert [r.delivery_id for r in stored(store)] == ["d-1"]
    box.close()


def test_the_control_with_no_other_writer_needs_no_retry(store: Store) -> None:
    box = Inbox(store)
    assert box.record("d-1", "pull_request", "dequeued", "o/r", b"{}") is True
    assert box.record("d-1", "pull_request", "dequeued", "o/r", b"{}") is False  # a duplicate
    assert box.busy_retries == 0
    box.close()


def test_a_lock_that_stays_taken_is_a_503_and_nothing_is_stored(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(inbox_mod, "DEADLINE_S", 0.2)
    body = b'{"action": "dequeued", "repository": {"full_name": "octo-org/widgets"}}'
    client = TestClient(create_app(make_settings(repos=["octo-org/widgets"]), store))
    release = threading.Event()
    with write_lock_held(db_path(store), release):
        r = client.post("/webhook", content=body, headers=headers_for(body, delivery="busy-1"))
    assert r.status_code == 503 and "redeliver" in r.json()["error"]
    assert stored(store) == []
    # The control: the same delivery once the lock is free is accepted and stored.
    r = client.post("/webhook", content=body, headers=headers_for(body, delivery="busy-1"))
    assert r.status_code == 202
    assert [row.delivery_id for row in stored(store)] == ["busy-1"]


def test_store_busy_names_the_problem(store: Store) -> None:
    box = Inbox(store, deadline=0.05)
    release = threading.Event()
    with write_lock_held(db_path(store), release), pytest.raises(StoreBusy, match="write lock"):
        box.record("d-2", "pull_request", "dequeued", "o/r", b"{}")
    box.close()
