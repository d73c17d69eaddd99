"""The webhook's own way into a SQLite store: it never queues behind a busy worker.

SQLite has one writer at a time and no queue: a writer that finds the lock taken waits in
SQLite's busy handler, which sleeps 1, 2, 5 … then 100 ms between tries. A worker catching up
on a backlog (right after a restart) commits back to back, and its gaps between transactions
last about a millisecond, so a webhook write that sleeps 100 ms at a time almost never
lands in one: acknowledgements took seconds, as long as the catch-up lasted
(bench/webhook_restart.py). The inbox writes on connections of its own with SQLite's busy
handler off and tries again every `POLL_S` itself, so it takes the lock in the first gap.
PostgreSQL needs none of this (an insert waits on no worker's row locks): there the inbox
is the store itself.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event

from landbot.store import Store, db

# How often a write retries a taken lock (a worker's transaction lasts a few ms), and for
# how long before the request is answered 503 (GitHub gives up at 10 s).
POLL_S = 0.0005
DEADLINE_S = 5.0


class StoreBusy(Exception):
    """The lock stayed taken for DEADLINE_S."""


def _locked(exc: sa.exc.OperationalError) -> bool:
    text = str(exc.orig).lower()
    return "locked" in text or "busy" in text


class Inbox:
    """Records deliveries: `record(delivery, event, action, repo, body) -> created`."""

    def __init__(
        self, store: Store, *, poll: float = POLL_S, deadline: float | None = None
    ) -> None:
        self.poll = poll
        self.deadline = DEADLINE_S if deadline is None else deadline
        self.busy_retries = 0  # writes that found the lock taken (for tests and curiosity)
        self._base = store
        self._own: Store | None = None
        database = store.engine.url.database
        self._sqlite_file = store.engine.dialect.name == "sqlite" and database not in (
            None,
            "",
            ":memory:",
        )
        if self._sqlite_file:
            # Follow the store's engine: when it is disposed (closed, or its file replaced),
            # connections of ours to the old file must not keep taking deliveries.
            event.listen(store.engine, "engine_disposed", self._drop_engine)
        # One write at a time from this process: threads racing each other would only
        # trade the lock back and forth.
        self._lock = threading.Lock()

    def _writer(self) -> Store:
        """The SQLite store to write with: made on the first delivery (creating an engine
        opens nothing, but it does create the database's folder)."""
        if self._own is None:
            url = self._base.engine.url.render_as_string(hide_password=False)
            engine = db.make_engine(url)
            # Runs after make_engine's pragmas (listeners run in order): no busy handler.
            event.listen(engine, "connect", _no_busy_handler)
            # The same class, so a store's own record_delivery (a test's probe) still runs.
            self._own = type(self._base)(engine)
        return self._own

    def record(
        self, delivery: str, event_name: str, action: str | None, repo: str | None, body: bytes
    ) -> bool:
        if not self._sqlite_file:  # PostgreSQL: no process-wide lock, no retry loop
            return self._base.record_delivery(delivery, event_name, action, repo, body)
        with self._lock:
            store = self._writer()
            give_up = time.monotonic() + self.deadline
            while True:
                try:
                    return store.record_delivery(delivery, event_name, action, repo, body)
                except sa.exc.OperationalError as exc:
                    if not _locked(exc):
                        raise
                    if time.monotonic() >= give_up:
                        raise StoreBusy(
                            f"the store's write lock stayed taken for {self.deadline:g} s"
                        ) from exc
                    self.busy_retries += 1
                    time.sleep(self.poll)

    def _drop_engine(self, _engine: sa.Engine) -> None:
        self._close_own()

    def close(self) -> None:
        self._close_own()
        engine = self._base.engine
        if self._sqlite_file and event.contains(engine, "engine_disposed", self._drop_engine):
            event.remove(engine, "engine_disposed", self._drop_engine)

    def _close_own(self) -> None:
        with self._lock:
            if self._own is not None:
                self._own.close()
                self._own = None


def _no_busy_handler(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA busy_timeout=0")
    cur.close()
