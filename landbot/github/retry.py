"""The one retry policy for every GitHub call (githubkit's own `auto_retry` is off).

- network errors, timeouts, 5xx: capped exponential backoff with jitter, at most
  `max_attempts` attempts;
- rate limits (403/429 secondary limits, exhausted primary limits, GraphQL RATE_LIMITED in
  a 200): wait `retry-after`, else until `x-ratelimit-reset` (+1 s), else 60 s doubling,
  capped; counted apart from the transient errors, so one kind cannot use up the other's
  budget;
- anything else (404, 422, a plain 403...) is not retried;
- a mutation is never repeated after a 5xx or a timeout (GitHub may have acted): it raises
  MutationOutcomeUnknown so the caller re-reads the state. A rate-limit answer, or a
  connection that never opened, means GitHub did nothing, so those are retried.

The decisions are pure functions (`backoff`, `rate_limit_wait`, `RetryPolicy.next_wait`);
`Retrier` wires them into tenacity with an injectable sleep (tests assert the waits).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from landbot.github.errors import (
    GitHubError,
    MutationOutcomeUnknown,
    NetworkError,
    RateLimited,
    ServerError,
)

log = logging.getLogger("landbot.github")

T = TypeVar("T")

# Added to a wait until x-ratelimit-reset: the reset is a whole second and clocks differ.
RESET_MARGIN = 1.0


def backoff(attempt: int, *, base: float, cap: float, rand: float) -> float:
    """The wait after the `attempt`-th transient failure (1-based).

    Exponential (base, 2·base, 4·base, …) capped at `cap`, with "equal jitter": a random
    point of the upper half, so waits never collapse to zero yet clients spread out.
    `rand` is a number in [0, 1].
    """
    raw = min(cap, base * 2.0 ** (attempt - 1))
    return raw / 2 + raw / 2 * rand


def rate_limit_wait(
    status: int, headers: Mapping[str, str], message: str, now: float
) -> tuple[bool, float | None]:
    """Whether a 403/429 answer is a rate limit, and the wait GitHub asked for (if any).

    `headers` must be case-insensitive (httpx.Headers). Returns (False, None) for an
    ordinary 403 such as "Resource not accessible by integration".
    """
    if status not in (403, 429):
        return False, None
    retry_after = headers.get("retry-after")
    if retry_after is not None:
        try:
            return True, max(0.0, float(retry_after))
        except ValueError:
            pass  # an HTTP date: GitHub sends seconds; fall through to the other hints
    if headers.get("x-ratelimit-remaining") == "0":
        return True, reset_wait(headers, now)
    if status == 429 or "rate limit" in message.lower():
        return True, None  # a secondary limit without a hint
    return False, None


def reset_wait(headers: Mapping[str, str], now: float) -> float | None:
    """Seconds until x-ratelimit-reset (+ margin), or None without the header."""
    reset = headers.get("x-ratelimit-reset")
    if reset is None:
        return None
    try:
        return max(0.0, float(reset) - now) + RESET_MARGIN
    except ValueError:
        return None


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 5  # attempts in all for network errors, timeouts and 5xx
    backoff_base: float = 1.0
    backoff_cap: float = 30.0
    max_rate_limit_waits: int = 3  # rate-limit waits per call, counted separately
    rate_limit_default: float = 60.0  # a limit without retry-after or reset, then doubling
    rate_limit_cap: float = 15 * 60.0

    def next_wait(
        self, exc: BaseException, *, transient_failures: int, rate_limit_failures: int, rand: float
    ) -> float | None:
        """The wait before the next attempt, or None to stop and raise `exc`.

        The counts include this failure. Mutations are handled before this: by then a
        mutation's 5xx or timeout is already MutationOutcomeUnknown, which is not retried.
        """
        if isinstance(exc, RateLimited):
            if rate_limit_failures > self.max_rate_limit_waits:
                return None
            if exc.retry_after is not None:
                return min(exc.retry_after, self.rate_limit_cap)
            doubled = self.rate_limit_default * 2.0 ** (rate_limit_failures - 1)
            return min(doubled, self.rate_limit_cap)
        if isinstance(exc, ServerError | NetworkError):
            if transient_failures >= self.max_attempts:
                return None
            return backoff(
                transient_failures, base=self.backoff_base, cap=self.backoff_cap, rand=rand
            )
        return None


def outcome_unknown(exc: GitHubError) -> MutationOutcomeUnknown | None:
    """The MutationOutcomeUnknown a mutation's failure turns into, if GitHub may have acted."""
    if isinstance(exc, ServerError) or (isinstance(exc, NetworkError) and exc.may_have_sent):
        return MutationOutcomeUnknown(
            exc.status,
            f"{exc.message}; GitHub may or may not have applied it, re-read the state "
            "before trying again",
            method=exc.method,
            url=exc.url,
        )
    return None


class Retrier:
    """Runs one GitHub call under the policy, with tenacity."""

    def __init__(
        self,
        policy: RetryPolicy,
        *,
        sleep: Callable[[float], None],
        rand: Callable[[], float],
    ) -> None:
        self.policy = policy
        self.sleep = sleep
        self.rand = rand

    def call(self, attempt: Callable[[], T], *, mutation: bool) -> T:
        """Run `attempt` (one HTTP exchange) until it succeeds or the policy stops.

        The last error is raised as it was (tenacity's reraise), so callers see
        NotFound, RateLimited, ServerError... and, for a mutation, MutationOutcomeUnknown.
        """
        from tenacity import RetryCallState, Retrying

        counts = {"transient": 0, "rate_limit": 0}
        planned: list[float] = []

        def one() -> T:
            try:
                return attempt()
            except GitHubError as exc:
                unknown = outcome_unknown(exc) if mutation else None
                if unknown is not None:
                    raise unknown from exc
                raise

        def should_retry(state: RetryCallState) -> bool:
            outcome = state.outcome
            exc = outcome.exception() if outcome is not None and outcome.failed else None
            if exc is None:
                return False
            if isinstance(exc, RateLimited):
                counts["rate_limit"] += 1
            elif isinstance(exc, ServerError | NetworkError):
                counts["transient"] += 1
            wait = self.policy.next_wait(
                exc,
                transient_failures=counts["transient"],
                rate_limit_failures=counts["rate_limit"],
                rand=self.rand(),
            )
            if wait is None:
                return False
            planned.append(wait)
            return True

        def wait_planned(state: RetryCallState) -> float:
            return planned[-1]

        def log_wait(state: RetryCallState) -> None:
            outcome = state.outcome
            exc = outcome.exception() if outcome is not None else None
            log.warning("%s; retrying in %.1f s", exc, planned[-1])

        retrying = Retrying(
            retry=should_retry,
            wait=wait_planned,
            sleep=self.sleep,
            before_sleep=log_wait,
            reraise=True,
        )
        return retrying(one)
