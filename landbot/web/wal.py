"""SQLite WAL checkpoints in a background thread, off the webhook's request path.

With the default `wal_autocheckpoint`, the commit that grows the WAL past 1000 pages copies
them into the database file and fsyncs it before it returns: 10 to 30 ms on a VM disk, and
every delivery queued behind that commit waits too (about 1 commit in 160 for a 24 KB
payload). Checkpointing from here every 100 ms keeps the WAL short, so commits rarely do it
themselves. PASSIVE mode never waits for readers or writers, so this thread blocks nobody;
it changes where the copying happens, not what a commit guarantees.
"""

from __future__ import annotations

import logging
import sqlite3
import threading

import sqlalchemy as sa

log = logging.getLogger("landbot.web")


class WalCheckpointer:
    def __init__(self, path: str, interval: float = 0.1) -> None:
        self.path = path
        self.interval = interval
        self.checkpoints = 0  # passes that ran (for tests and curiosity)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @classmethod
    def for_engine(cls, engine: sa.Engine) -> WalCheckpointer | None:
        """A checkpointer for a file-backed SQLite engine; None for anything else."""
        url = engine.url
        if url.get_backend_name() != "sqlite" or not url.database or url.database == ":memory:":
            return None
        return cls(url.database)

    def start(self) -> None:
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(
                target=self._run, name="landbot-wal-checkpoint", daemon=True
            )
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None

    def _run(self) -> None:
        try:
            conn = sqlite3.connect(self.path, timeout=0, isolation_level=None)
        except sqlite3.Error as exc:
            log.warning("WAL checkpointer not started for %s: %s", self.path, exc)
            return
        try:
            while not self._stop.wait(self.interval):
                try:
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                    self.checkpoints += 1
                except sqlite3.Error as exc:  # busy, or the file went away: try next tick
                    log.debug("WAL checkpoint skipped: %s", exc)
        finally:
            conn.close()
