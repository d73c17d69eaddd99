"""GitHub's rate limits in the fake GitHub: the `x-ratelimit-*` headers of every answer, and,
where a test sets them, limits enforced the way GitHub enforces them.

GitHub's documentation ("Rate limits for the REST API", docs.github.com/rest/using-the-rest-
api/rate-limits-for-the-rest-api; shared/reference/github.md, "Auth, permissions, limits"):

- every answer carries `x-ratelimit-limit`, `-remaining`, `-used`, `-reset` (epoch seconds)
  and `-resource` (`core`, `graphql`...);
- past the primary limit, REST answers 403 (or 429) with `x-ratelimit-remaining: 0` and "API
  rate limit exceeded for installation ID …"; GraphQL answers a 200 whose errors carry
  `type: RATE_LIMITED`;
- past a secondary limit (too many requests at once, too many content-creating requests: 80
  a minute, 500 an hour), 403 or 429 with `retry-after` and "You have exceeded a secondary
  rate limit"; requests sent before it passes are refused again;
- and GitHub may answer nothing at all (`silence`).

Time is `clock` (epoch seconds), injectable: a test shares its fake clock with landbot's
client, so an hour's limit passes without anyone waiting for it. Nothing is enforced until a
test asks (`primary`, `content`, `hold`, `silence`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from landbot.sim.faults import DOCS, SECONDARY_MESSAGE

LIMIT = 5000
START = 1_800_000_000.0  # a fixed "now" for a FakeTime (2027-01-15)
HOUR = 3600.0
PRIMARY_MESSAGE = "API rate limit exceeded for installation ID 1."


@dataclass
class FakeTime:
    """Epoch seconds that move only when the code sleeps or a test moves them: the clock a
    test gives both landbot's client and the sim's `Limits`."""

    now: float = START
    sleeps: list[float] = field(default_factory=list)

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds

    def advance(self, seconds: float) -> None:
        self.now += seconds


@dataclass
class Refusal:
    """What the fake answers instead of the real answer: status, headers, JSON body."""

    status: int
    headers: dict[str, str]
    body: Any


@dataclass
class _Window:
    remaining: int
    reset: float


class Limits:
    """Rate-limit headers per credential and resource; limits a test sets, enforced."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self._lock = threading.Lock()
        self._used: dict[tuple[str, str], int] = {}
        self._windows: dict[str, _Window] = {}  # resource -> a test's primary limit
        self._hold_until = 0.0
        self._content_per_minute: int | None = None
        self._created: list[float] = []
        self._silent_until = 0.0
        self._on_silence: Callable[[], None] = lambda: None
        self.refused = 0  # requests refused by a limit (a client that plans sends none)

    # --- what a test sets -------------------------------------------------------------

    def primary(self, remaining: int, *, reset_in: float, resources: tuple[str, ...]) -> None:
        """From now, `remaining` requests of each resource until `reset_in` seconds pass."""
        with self._lock:
            reset = float(int(self.clock() + reset_in))  # GitHub's reset is whole seconds
            for resource in resources:
                self._windows[resource] = _Window(remaining, reset)

    def hold(self, seconds: float) -> None:
        """A secondary limit from now: every request for `seconds` is refused again."""
        with self._lock:
            self._hold_until = max(self._hold_until, self.clock() + seconds)

    def content(self, per_minute: int | None) -> None:
        """Refuse content-creating requests past `per_minute` in any 60 s (None: never)."""
        with self._lock:
            self._content_per_minute = per_minute

    def silence(self, seconds: float, *, on_request: Callable[[], None] = lambda: None) -> None:
        """Answer nothing for `seconds`: a request then has its connection broken off before
        any answer, and `on_request` runs (a test moves its clock on by the client's timeout
        there: the time a client would have waited for the answer that never came)."""
        with self._lock:
            self._silent_until = self.clock() + seconds
            self._on_silence = on_request

    # --- what the server asks ---------------------------------------------------------

    def silent(self) -> bool:
        """Whether a request arriving now goes unanswered (`on_request` has run if so)."""
        with self._lock:
            silent = self.clock() < self._silent_until
            hook = self._on_silence
        if silent:
            hook()
        return silent

    def refusal(self, resource: str, *, content: bool) -> Refusal | None:
        """The limit a request arriving now is refused by, if any (a refused request is not
        counted against the window, as with GitHub)."""
        with self._lock:
            now = self.clock()
            refusal = self._refusal(resource, content, now)
            if refusal is not None:
                self.refused += 1
            return refusal

    def _refusal(self, resource: str, content: bool, now: float) -> Refusal | None:
        if now < self._hold_until:
            return _secondary(self._hold_until - now)
        window = self._windows.get(resource)
        if window is not None and now >= window.reset:
            del self._windows[resource]  # refilled
            window = None
        if window is not None and window.remaining <= 0:
            return _primary(resource, window.reset)
        if content and self._content_per_minute is not None:
            recent = [t for t in self._created if t > now - 60]
            if len(recent) >= self._content_per_minute:
                wait = recent[-self._content_per_minute] + 60 - now
                self._hold_until = now + wait
                return _secondary(wait)
        if content:
            self._created.append(now)
        if window is not None:
            window.remaining -= 1
        return None

    def headers(self, credential: str | None, resource: str, points: int = 1) -> dict[str, str]:
        """The `x-ratelimit-*` headers of an answer given now, that cost `points` (a REST
        call 1, a GraphQL query its cost: graphql_cost.py; a 304 0)."""
        with self._lock:
            now = self.clock()
            window = self._windows.get(resource)
            if window is not None:
                remaining, reset = window.remaining, window.reset
            else:
                hour = int(now) // 3600
                key = (f"{credential}:{hour}", resource)
                used = self._used.get(key, 0) + points
                self._used[key] = used
                remaining, reset = max(0, LIMIT - used), float((hour + 1) * 3600)
        return {
            "x-ratelimit-limit": str(LIMIT),
            "x-ratelimit-remaining": str(remaining),
            "x-ratelimit-used": str(LIMIT - remaining),
            "x-ratelimit-reset": str(int(reset)),
            "x-ratelimit-resource": resource,
        }


def _secondary(wait: float) -> Refusal:
    retry_after = max(1, int(wait + 0.999))  # whole seconds, never 0 while it holds
    return Refusal(
        403,
        {"retry-after": str(retry_after)},
        {"message": SECONDARY_MESSAGE, "documentation_url": DOCS, "status": "403"},
    )


def _primary(resource: str, reset: float) -> Refusal:
    headers = {
        "x-ratelimit-limit": str(LIMIT),
        "x-ratelimit-remaining": "0",
        "x-ratelimit-used": str(LIMIT),
        "x-ratelimit-reset": str(int(reset)),
        "x-ratelimit-resource": resource,
    }
    if resource == "graphql":
        body = {"errors": [{"type": "RATE_LIMITED", "message": PRIMARY_MESSAGE}]}
        return Refusal(200, headers, body)
    return Refusal(403, headers, {"message": PRIMARY_MESSAGE, "documentation_url": DOCS})
