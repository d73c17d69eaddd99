"""Request counting and failure injection for the fake GitHub server.

Routes are named by method and template, exactly as GitHub's REST documentation writes
them, e.g. "GET /repos/{owner}/{repo}/pulls/{pull_number}" or "POST /graphql"; GraphQL calls
are also counted per operation name.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    route: str  # "METHOD /template", or "METHOD <unmatched path>"
    status: int
    operation: str | None = None  # the GraphQL operation name
    authorized: bool = False  # an Authorization header was sent
    at: float = 0.0  # when it arrived, on the server's Limits clock (epoch seconds)
    points: int = 0  # a GraphQL query's cost in GitHub's points (graphql_cost.py)
    conditional: bool = False  # a GET answered 304 Not Modified (costs nothing at GitHub)


class RequestLog:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.entries: list[RecordedRequest] = []

    def record(self, entry: RecordedRequest) -> None:
        with self._lock:
            self.entries.append(entry)

    def count(
        self, route: str | None = None, *, operation: str | None = None, status: int | None = None
    ) -> int:
        """Requests to `route` (all routes when None), optionally one GraphQL operation/status."""
        with self._lock:
            return sum(
                1
                for e in self.entries
                if (route is None or e.route == route)
                and (operation is None or e.operation == operation)
                and (status is None or e.status == status)
            )

    def points(self, *, operation: str | None = None) -> int:
        """GraphQL points charged (of one operation when named), as GitHub computes them."""
        with self._lock:
            return sum(e.points for e in self.entries if operation in (None, e.operation))

    def not_modified(self) -> int:
        """Conditional GETs answered 304 (counted as calls, free at GitHub)."""
        with self._lock:
            return sum(1 for e in self.entries if e.conditional)

    def counts(self) -> Counter[str]:
        with self._lock:
            return Counter(e.route for e in self.entries)

    def operations(self) -> Counter[str]:
        with self._lock:
            return Counter(e.operation for e in self.entries if e.operation)

    @property
    def total(self) -> int:
        with self._lock:
            return len(self.entries)

    def reset(self) -> None:
        with self._lock:
            self.entries.clear()


@dataclass
class Fault:
    route: str
    status: int
    remaining: int
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None
    operation: str | None = None
    take_effect: bool = False  # do the work, then answer with the failure anyway
    path: str | None = None  # only requests whose path contains this (one commit's route)
    hold: float = 0.0  # seconds every request is refused after this one (a secondary limit)

    def matches(self, route: str, operation: str | None, path: str | None = None) -> bool:
        """A fault with a `path` matches only a request whose path contains it."""
        at = self.path is None if path is None else self.path is not None and self.path in path
        return self.route == route and (self.operation in (None, operation)) and at


SECONDARY_MESSAGE = (
    "You have exceeded a secondary rate limit. Please wait a few minutes before you try "
    "again. If you reach out to GitHub Support for help, please include the request ID."
)
DOCS = "https://docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api"


class Faults:
    """Make the next N requests to a route fail the way GitHub fails."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.pending: list[Fault] = []

    def add(self, fault: Fault) -> Fault:
        with self._lock:
            self.pending.append(fault)
        return fault

    def fail(
        self,
        route: str,
        status: int = 502,
        *,
        times: int = 1,
        take_effect: bool = False,
        operation: str | None = None,
        message: str = "Server Error",
        path: str | None = None,
    ) -> Fault:
        """Answer `status` (a 5xx by default). With take_effect the change still happens.
        With `path`, only requests whose path contains it fail (e.g. one commit's sha)."""
        return self.add(
            Fault(
                route,
                status,
                times,
                body={"message": message, "status": str(status)},
                operation=operation,
                take_effect=take_effect,
                path=path,
            )
        )

    def secondary_rate_limit(
        self,
        route: str,
        *,
        retry_after: int = 60,
        times: int = 1,
        status: int = 403,
        operation: str | None = None,
        holds: bool = False,
    ) -> Fault:
        """403 (or 429) with `retry-after`, GitHub's answer to too many requests at once.
        With `holds`, every request until `retry-after` passes is refused too, as GitHub
        does (the server's Limits clock)."""
        return self.add(
            Fault(
                route,
                status,
                times,
                headers={"retry-after": str(retry_after)},
                body={
                    "message": SECONDARY_MESSAGE,
                    "documentation_url": DOCS,
                    "status": str(status),
                },
                operation=operation,
                hold=float(retry_after) if holds else 0.0,
            )
        )

    def too_many_requests(
        self,
        route: str,
        *,
        retry_after: int | None = None,
        times: int = 1,
        operation: str | None = None,
    ) -> Fault:
        """429; with no `retry-after` a client must fall back to waiting about a minute."""
        headers = {} if retry_after is None else {"retry-after": str(retry_after)}
        return self.add(
            Fault(
                route,
                429,
                times,
                headers=headers,
                body={"message": SECONDARY_MESSAGE, "documentation_url": DOCS, "status": "429"},
                operation=operation,
            )
        )

    def primary_rate_limit(
        self, route: str, *, reset_in: int = 60, times: int = 1, operation: str | None = None
    ) -> Fault:
        """403 with x-ratelimit-remaining 0 and x-ratelimit-reset `reset_in` seconds ahead."""
        reset = int(time.time()) + reset_in
        return self.add(
            Fault(
                route,
                403,
                times,
                headers={
                    "x-ratelimit-limit": "5000",
                    "x-ratelimit-remaining": "0",
                    "x-ratelimit-used": "5000",
                    "x-ratelimit-reset": str(reset),
                    "x-ratelimit-resource": "core",
                },
                body={
                    "message": "API rate limit exceeded.",
                    "documentation_url": DOCS,
                    "status": "403",
                },
                operation=operation,
            )
        )

    def graphql_rate_limited(
        self, *, times: int = 1, reset_in: int = 60, operation: str | None = None
    ) -> Fault:
        """A 200 whose errors carry `type: RATE_LIMITED`, as GitHub's GraphQL API answers."""
        reset = int(time.time()) + reset_in
        return self.add(
            Fault(
                "POST /graphql",
                200,
                times,
                headers={
                    "x-ratelimit-limit": "5000",
                    "x-ratelimit-remaining": "0",
                    "x-ratelimit-used": "5000",
                    "x-ratelimit-reset": str(reset),
                    "x-ratelimit-resource": "graphql",
                },
                body={
                    "errors": [
                        {"type": "RATE_LIMITED", "message": "API rate limit already exceeded."}
                    ]
                },
                operation=operation,
            )
        )

    def take_at(self, route: str, operation: str | None, path: str) -> Fault | None:
        """The fault for this request among those aimed at a path (asked before `take`)."""
        return self._take(route, operation, path)

    def take(self, route: str, operation: str | None = None) -> Fault | None:
        """The fault for this request, if any (each use counts down one of its `times`)."""
        return self._take(route, operation, None)

    def _take(self, route: str, operation: str | None, path: str | None) -> Fault | None:
        with self._lock:
            for fault in self.pending:
                if fault.matches(route, operation, path):
                    fault.remaining -= 1
                    if fault.remaining <= 0:
                        self.pending.remove(fault)
                    return fault
        return None

    def clear(self) -> None:
        with self._lock:
            self.pending.clear()
