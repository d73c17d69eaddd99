"""One budget per installation: whether a GitHub request may go now, or how long it waits.

GitHub limits each installation (issue 28; shared/reference/github.md, "Auth, permissions,
limits"):

- a primary budget per resource (`core` for REST, `graphql` in points), told in every
  answer's `x-ratelimit-limit`, `-remaining`, `-reset` and `-resource` headers;
- secondary limits: a 403 or 429 with `retry-after` (or GitHub's "secondary rate limit"
  message), after which nothing should be sent for a while; about 100 concurrent requests;
  80 content-creating requests a minute and 500 an hour.

`decide` is the whole policy, a pure function of what is known (`Installation`), the
request and the time. `Planner` keeps what is known per installation, learns it from each
answer, and waits (its injectable `sleep`) while `decide` says so: a call that waits is
sent later, never dropped. Only a sweep's reads are deferred (`Deferred`), when the
primary budget left is under the reserve: webhook-driven work keeps what is left.

The budget is this process's: what other replicas spend is learned from GitHub's headers
on this process's next answer, not shared through the store (a later step of issue 28).
"""

from __future__ import annotations

import logging
import math
import re
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Literal

from landbot.config import BudgetSettings
from landbot.errors import LandbotError
from landbot.github.retry import RESET_MARGIN, rate_limit_wait

log = logging.getLogger("landbot.github.budget")

# "work": a drop's, a command's, a fix job's call; "content": a content-creating request
# (it keeps a share of the budget back for re-reads and re-enqueues); "sweep": a poll
# sweep's read, deferred first.
Priority = Literal["work", "content", "sweep"]

# GitHub: "if you exceed a secondary rate limit ... wait at least one minute" when the
# answer carries no retry-after.
SECONDARY_DEFAULT = 60.0
MINUTE = 60.0
HOUR = 3600.0

# REST creates content with a POST to these (comments, issues, reactions, check runs);
# GitHub counts them against its content-creation limit.
_CONTENT = re.compile(r"/(comments|issues|reactions|check-runs)/?$")


@dataclass(frozen=True)
class BudgetPolicy:
    """The limits the planner keeps to ([budget] in the settings)."""

    sweep_reserve: float = 0.10  # share of the primary budget a sweep never touches
    content_reserve: float = 0.02  # share a content-creating request leaves to the rest
    concurrency: int = 100
    content_per_minute: int = 80
    content_per_hour: int = 500

    @classmethod
    def from_settings(cls, settings: BudgetSettings) -> BudgetPolicy:
        return cls(**settings.model_dump())  # the same names, one for one

    def floor(self, priority: Priority, limit: int) -> int:
        """The budget left at or under which a request of `priority` does not go."""
        share = {"work": 0.0, "content": self.content_reserve, "sweep": self.sweep_reserve}
        return math.ceil(limit * share[priority])


@dataclass
class Window:
    """One resource's primary budget, as GitHub's last answer (less what went since) says."""

    limit: int
    remaining: int
    reset: float  # epoch seconds


@dataclass
class Installation:
    """What is known of one installation's limits (mutable: the Planner's, under its lock)."""

    windows: dict[str, Window] = field(default_factory=dict)
    hold_until: float = 0.0  # a secondary limit: nothing is sent before this
    created: deque[float] = field(default_factory=deque)  # content-creating requests' times
    in_flight: int = 0
    waiting: int = 0


@dataclass(frozen=True)
class Request:
    installation: str
    resource: str  # "core" or "graphql"
    priority: Priority
    content: bool = False  # counts against the content-creation limit


@dataclass(frozen=True)
class Go:
    pass


@dataclass(frozen=True)
class Wait:
    seconds: float | None  # None: until a request in flight ends (concurrency)
    why: str


@dataclass(frozen=True)
class Defer:
    why: str


Decision = Go | Wait | Defer


def decide(state: Installation, request: Request, policy: BudgetPolicy, now: float) -> Decision:
    """Whether `request` goes now: Go, Wait (how long, and why) or Defer (a sweep, later)."""
    if now < state.hold_until:
        return Wait(state.hold_until - now, "a secondary rate limit holds")
    window = state.windows.get(request.resource)
    if window is not None and now < window.reset:
        floor = policy.floor(request.priority, window.limit)
        if window.remaining <= floor:
            why = (
                f"{window.remaining} of {window.limit} {request.resource} left "
                f"(keeping {floor}) until the reset"
            )
            if request.priority == "sweep":
                return Defer(why)
            return Wait(window.reset - now + RESET_MARGIN, why)
    if request.content:
        for span, most in ((MINUTE, policy.content_per_minute), (HOUR, policy.content_per_hour)):
            recent = [t for t in state.created if t > now - span]
            if len(recent) >= most:
                oldest = recent[-most]
                return Wait(
                    oldest + span - now, f"{most} content-creating requests in {span:.0f} s"
                )
    if state.in_flight >= policy.concurrency:
        return Wait(None, f"{state.in_flight} requests in flight")
    return Go()


def is_content_creation(method: str, path: str) -> bool:
    """A REST request GitHub counts as creating content (POST a comment, issue, reaction or
    check run)."""
    return method.upper() == "POST" and _CONTENT.search(path.split("?", 1)[0]) is not None


def learn(
    state: Installation,
    status: int,
    headers: Mapping[str, str],
    message: str,
    now: float,
) -> None:
    """Update `state` from one answer: its `x-ratelimit-*` figures, and any secondary limit.

    `headers` must be case-insensitive (httpx.Headers)."""
    try:
        remaining = int(headers["x-ratelimit-remaining"])
        window: Window | None = Window(
            limit=int(headers.get("x-ratelimit-limit") or remaining),
            remaining=remaining,
            # A reset further ahead than GitHub's one-hour window is a clock gone wrong:
            # never wait longer than one window for it.
            reset=min(float(headers["x-ratelimit-reset"]), now + HOUR),
        )
    except (KeyError, ValueError):
        window = None
    if window is not None:
        resource = headers.get("x-ratelimit-resource") or "core"
        known = state.windows.get(resource)
        # Answers to requests in flight together come back in any order: within one
        # window the smaller figure is the newer.
        if known is not None and known.reset == window.reset:
            window.remaining = min(window.remaining, known.remaining)
        state.windows[resource] = window
    limited, wait = rate_limit_wait(status, headers, message, now)
    if limited and not (window is not None and window.remaining == 0):
        # A secondary limit (an exhausted primary one is the window above): the whole
        # installation waits, not only this call.
        pause = SECONDARY_DEFAULT if wait is None else min(wait, HOUR)
        state.hold_until = max(state.hold_until, now + pause)


class Deferred(LandbotError):
    """A sweep's read not sent: the primary budget left is under the sweep's reserve."""


_PRIORITY: ContextVar[Priority] = ContextVar("landbot_budget_priority", default="work")


@contextmanager
def sweeping() -> Iterator[None]:
    """The GitHub calls made inside are a sweep's: they go only above the reserve."""
    token = _PRIORITY.set("sweep")
    try:
        yield
    finally:
        _PRIORITY.reset(token)


def current_priority() -> Priority:
    return _PRIORITY.get()


@dataclass(frozen=True)
class Figures:
    """One (installation, resource) budget as /metrics shows it."""

    installation: str
    resource: str
    limit: int
    remaining: int
    reset_in: float  # seconds to the reset (0 once passed)


class Planner:
    """The budgets of this process's installations; thread-safe (a serve's worker and its
    fixer jobs share one client). `clock` is epoch seconds, as GitHub's reset is."""

    def __init__(
        self,
        policy: BudgetPolicy | None = None,
        *,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.policy = policy or BudgetPolicy()
        self._clock = clock
        self._sleep = sleep
        self._cond = threading.Condition()
        self._installations: dict[str, Installation] = {}
        PLANNERS.add(self)

    def _state(self, installation: str) -> Installation:
        return self._installations.setdefault(installation, Installation())

    @contextmanager
    def request(self, request: Request) -> Iterator[Callable[[int, Mapping[str, str], str], None]]:
        """Wait until `request` may go, then hold its slot while it is sent; the function
        yielded takes the answer (status, headers, message) to learn from."""
        self._acquire(request)
        try:
            yield lambda status, headers, message: self._learn(
                request.installation, status, headers, message
            )
        finally:
            with self._cond:
                self._state(request.installation).in_flight -= 1
                self._cond.notify_all()

    def _acquire(self, request: Request) -> None:
        logged = False
        with self._cond:
            state = self._state(request.installation)
            while True:
                now = self._clock()
                self._expire(state, now)
                decision = decide(state, request, self.policy, now)
                if isinstance(decision, Go):
                    self._spend(state, request, now)
                    return
                if isinstance(decision, Defer):
                    raise Deferred(
                        f"sweep of installation {request.installation} deferred: "
                        f"{decision.why}; it runs again once the budget resets"
                    )
                if not logged:
                    log.warning(
                        "GitHub call for installation %s waits %s: %s",
                        request.installation,
                        "for a free slot"
                        if decision.seconds is None
                        else f"{decision.seconds:.1f} s",
                        decision.why,
                    )
                    logged = True
                state.waiting += 1
                try:
                    if decision.seconds is None:
                        self._cond.wait(timeout=1.0)
                    else:
                        self._cond.release()
                        try:
                            self._sleep(decision.seconds)
                        finally:
                            self._cond.acquire()
                finally:
                    state.waiting -= 1

    def _spend(self, state: Installation, request: Request, now: float) -> None:
        state.in_flight += 1
        window = state.windows.get(request.resource)
        if window is not None:
            window.remaining = max(0, window.remaining - 1)  # until the answer says
        if request.content:
            state.created.append(now)

    def _expire(self, state: Installation, now: float) -> None:
        for resource, window in list(state.windows.items()):
            if now >= window.reset:
                del state.windows[resource]  # refilled: unknown until the next answer
        while state.created and state.created[0] <= now - HOUR:
            state.created.popleft()

    def _learn(self, installation: str, status: int, headers: Mapping[str, str], msg: str) -> None:
        with self._cond:
            learn(self._state(installation), status, headers, msg, self._clock())

    def figures(self) -> list[Figures]:
        """Every known budget, for /metrics."""
        with self._cond:
            now = self._clock()
            return [
                Figures(name, resource, w.limit, w.remaining, max(0.0, w.reset - now))
                for name, state in self._installations.items()
                for resource, w in state.windows.items()
            ]

    def waiting(self) -> dict[str, int]:
        """Calls waiting now, by installation."""
        with self._cond:
            return {name: s.waiting for name, s in self._installations.items()}

    def held(self) -> dict[str, float]:
        """Seconds each installation's secondary limit still holds (0: none)."""
        with self._cond:
            now = self._clock()
            return {n: max(0.0, s.hold_until - now) for n, s in self._installations.items()}


# Every Planner of this process, for /metrics (a client's planner goes with it).
PLANNERS: weakref.WeakSet[Planner] = weakref.WeakSet()
