"""Identifiers and time for the simulated GitHub.

Each kind of object gets ids from its own numeric range, so a test that passes a comment id
where a job id belongs gets a 404 instead of a lucky match. Node ids look like GitHub's
(a type prefix, then an opaque base64 tail) and are unique across kinds.
"""

from __future__ import annotations

import base64
import itertools
import threading
from datetime import UTC, datetime, timedelta

_RANGES = {
    "user": 1_001,
    "app": 901,
    "installation": 40_001,
    "repo": 100_001,
    "pull": 200_000_001,
    "issue": 250_000_001,  # issues that are not pull requests
    "comment": 1_000_000_001,
    "reaction": 300_000_001,
    "check_suite": 20_000_000_001,
    "job": 50_000_000_001,  # a job id is also its check run's id, as on GitHub
    "check_run": 60_000_000_001,  # check runs that are not Actions jobs
    "run": 9_000_000_001,
    "workflow": 700_001,
    "queue_entry": 800_001,
    "event": 15_000_000_001,
    "label": 5_000_000_001,
    "artifact": 4_000_000_001,  # Actions artifacts (actions.py)
}

PREFIX = {
    "user": "U_kgDO",
    "bot": "BOT_kgDO",
    "app": "A_kwHO",
    "repo": "R_kgDO",
    "pull": "PR_kwDO",
    "issue": "I_kwDO",
    "comment": "IC_kwDO",
    "reaction": "REA_lADO",
    "check_suite": "CS_kwDO",
    "job": "CR_kwDO",
    "check_run": "CR_kwDO",
    "run": "WFR_kwLO",
    "workflow": "W_kwDO",
    "queue_entry": "MQE_kwDO",
    "queue": "MQ_kwDO",
    "event": "EV_lADO",
    "label": "LA_kwDO",
    "commit": "C_kwDO",
}


def node_id(kind: str, key: int | str) -> str:
    tail = base64.urlsafe_b64encode(f"{kind}:{key}".encode()).decode().rstrip("=")
    return f"{PREFIX.get(kind, 'N_kwDO')}{tail}"


class Ids:
    """Thread-safe counters, one range per kind."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counters = {kind: itertools.count(start) for kind, start in _RANGES.items()}

    def next(self, kind: str) -> int:
        with self._lock:
            return next(self._counters[kind])


class Clock:
    """Wall-clock time plus an offset tests can advance (queue timeouts, token expiry)."""

    def __init__(self, start: datetime | None = None) -> None:
        self._offset = timedelta(0) if start is None else start - datetime.now(UTC)
        self._lock = threading.Lock()

    def now(self) -> datetime:
        # Full precision, so "most recently updated" orders events of the same second;
        # `iso()` shows seconds like GitHub's REST API.
        with self._lock:
            return datetime.now(UTC) + self._offset

    precise = now

    def advance(self, *, seconds: float = 0, minutes: float = 0, hours: float = 0) -> datetime:
        with self._lock:
            self._offset += timedelta(seconds=seconds, minutes=minutes, hours=hours)
        return self.now()


def iso(when: datetime | None) -> str | None:
    """GitHub's REST timestamp format: second precision, `Z`."""
    if when is None:
        return None
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
