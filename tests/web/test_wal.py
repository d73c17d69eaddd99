"""The background WAL checkpointer copies committed deliveries into the database file, so
commits on the request path do not have to."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from landbot.store import Store
from landbot.web.app import create_app
from landbot.web.wal import WalCheckpointer

from .conftest import headers_for, live_server, make_settings, payload_bytes

BODY = payload_bytes("pull_request.dequeued.json")


@pytest.fixture
def db(tmp_path: Path) -> Iterator[tuple[Path, Store]]:
    path = tmp_path / "landbot.db"
    store = Store.open(f"sqlite:///{path}")
    # Turn SQLite's inline checkpoints off, so only the checkpointer can move pages.
    store.engine.dispose()
    sa.event.listen(
        store.engine, "connect", lambda conn, _: conn.execute("PRAGMA wal_autocheckpoint=0")
    )
    yield path, store
    store.close()


def in_database_file(path: Path) -> int:
    """Deliveries in the main database file alone, ignoring the WAL (immutable=1)."""
    conn = sqlite3.connect(f"file:{path}?immutable=1", uri=True)
    try:
        return int(conn.execute("SELECT count(*) FROM deliveries").fetchone()[0])
    except sqlite3.DatabaseError:
        # An immutable read can catch the checkpointer mid-write (a torn page): not yet.
        return -1
    finally:
        conn.close()


def test_without_a_checkpointer_commits_stay_in_the_wal(db: tuple[Path, Store]) -> None:
    path, store = db
    for n in range(20):
        store.record_delivery(f"d-{n}", "pull_request", "dequeued", "o/r", BODY)
    time.sleep(0.3)
    assert in_database_file(path) == 0  # the control: nothing moves on its own


def test_the_checkpointer_moves_commits_into_the_database_file(db: tuple[Path, Store]) -> None:
    path, store = db
    checkpointer = WalCheckpointer(str(path), interval=0.02)
    checkpointer.start()
    try:
        for n in range(20):
            store.record_delivery(f"d-{n}", "pull_request", "dequeued", "o/r", BODY)
        deadline = time.monotonic() + 10
        while in_database_file(path) < 20:
            assert time.monotonic() < deadline, "the checkpointer did not copy the WAL"
            time.sleep(0.02)
    finally:
        checkpointer.stop()
    assert checkpointer.checkpoints > 0


def test_the_server_runs_the_checkpointer(db: tuple[Path, Store]) -> None:
    import httpx

    path, store = db
    app = create_app(make_settings(), store)
    assert isinstance(app.state.checkpointer, WalCheckpointer)
    with live_server(app) as (host, port):
        r = httpx.post(f"http://{host}:{port}/webhook", content=BODY, headers=headers_for(BODY))
        assert r.status_code == 202
        deadline = time.monotonic() + 10
        while in_database_file(path) < 1:
            assert time.monotonic() < deadline, "no checkpoint while serving"
            time.sleep(0.05)
    assert app.state.checkpointer._thread is None  # stopped with the server


def test_no_checkpointer_for_postgresql_or_memory() -> None:
    assert WalCheckpointer.for_engine(sa.create_engine("sqlite://")) is None
    pg = sa.create_engine("postgresql+psycopg://u@localhost/db")
    assert WalCheckpointer.for_engine(pg) is None
