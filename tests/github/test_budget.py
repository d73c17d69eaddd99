"""The budget planner (landbot/github/budget.py): `decide` case by case, each refusal beside
its control (the same request going when the limit does not hold), `learn` from GitHub's
headers, and the client sending nothing while a limit holds (pytest-httpx fails a request
that was not expected)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from pytest_httpx import HTTPXMock

from landbot.github import budget
from landbot.github.budget import (
    BudgetPolicy,
    Defer,
    Go,
    Installation,
    Planner,
    Request,
    Wait,
    Window,
    decide,
    is_content_creation,
    learn,
)
from landbot.github.client import GitHubClient
from landbot.github.retry import RESET_MARGIN

from .test_retry import COMMENT, COMMENTS_URL, GRAPHQL, JOB, JOB_URL

NOW = 1_800_000_000.0
POLICY = BudgetPolicy()


def work(resource: str = "core", priority: budget.Priority = "work") -> Request:
    return Request("42", resource, priority, content=priority == "content")


def with_window(remaining: int, *, limit: int = 5000, reset_in: float = 600) -> Installation:
    return Installation(windows={"core": Window(limit, remaining, NOW + reset_in)})


def rate_headers(remaining: int, reset: float, resource: str = "core") -> dict[str, str]:
    return {
        "x-ratelimit-limit": "5000",
        "x-ratelimit-remaining": str(remaining),
        "x-ratelimit-reset": str(int(reset)),
        "x-ratelimit-resource": resource,
    }


# --- decide ------------------------------------------------------------------------------


def test_nothing_known_goes() -> None:
    assert decide(Installation(), work(), POLICY, NOW) == Go()


def test_an_exhausted_primary_budget_waits_until_its_reset_and_a_left_one_goes() -> None:
    decision = decide(with_window(0), work(), POLICY, NOW)
    assert isinstance(decision, Wait) and decision.seconds == 600 + RESET_MARGIN
    assert decide(with_window(1), work(), POLICY, NOW) == Go()  # control


def test_a_passed_reset_no_longer_holds() -> None:
    assert decide(with_window(0, reset_in=-1), work(), POLICY, NOW) == Go()


def test_the_other_resource_is_not_held() -> None:
    assert isinstance(decide(with_window(0), work("core"), POLICY, NOW), Wait)
    assert decide(with_window(0), work("graphql"), POLICY, NOW) == Go()


def test_a_sweep_is_deferred_under_its_reserve_while_work_still_goes() -> None:
    under = with_window(500)  # 10 % of 5,000
    assert isinstance(decide(under, work(priority="sweep"), POLICY, NOW), Defer)
    assert decide(under, work(), POLICY, NOW) == Go()  # a drop's call still goes
    assert decide(with_window(501), work(priority="sweep"), POLICY, NOW) == Go()  # control


def test_a_comment_leaves_its_reserve_to_re_reads_and_re_enqueues() -> None:
    under = with_window(100)  # 2 % of 5,000
    decision = decide(under, work(priority="content"), POLICY, NOW)
    assert isinstance(decision, Wait) and decision.seconds == 600 + RESET_MARGIN
    assert decide(under, work(), POLICY, NOW) == Go()
    assert decide(with_window(101), work(priority="content"), POLICY, NOW) == Go()  # control


def test_a_secondary_hold_stops_every_request_of_the_installation() -> None:
    held = Installation(hold_until=NOW + 30)
    for request in (work(), work("graphql"), work(priority="content")):
        decision = decide(held, request, POLICY, NOW)
        assert isinstance(decision, Wait) and decision.seconds == 30
    assert decide(Installation(hold_until=NOW), work(), POLICY, NOW) == Go()  # control


def test_content_creation_waits_for_the_minute_and_the_hour() -> None:
    policy = BudgetPolicy(content_per_minute=2, content_per_hour=3)
    minute = Installation(created=budget.deque([NOW - 50, NOW - 10]))
    decision = decide(minute, work(priority="content"), policy, NOW)
    assert isinstance(decision, Wait) and decision.seconds == pytest.approx(10)
    assert decide(minute, work(), policy, NOW) == Go()  # a read is not content
    hour = Installation(created=budget.deque([NOW - 3000, NOW - 2000, NOW - 100]))
    decision = decide(hour, work(priority="content"), policy, NOW)
    assert isinstance(decision, Wait) and decision.seconds == pytest.approx(600)
    spread = Installation(created=budget.deque([NOW - 3000, NOW - 100]))
    assert decide(spread, work(priority="content"), policy, NOW) == Go()  # control


def test_concurrency_waits_for_a_slot() -> None:
    policy = BudgetPolicy(concurrency=2)
    assert decide(Installation(in_flight=2), work(), policy, NOW) == Wait(
        None, "2 requests in flight"
    )
    assert decide(Installation(in_flight=1), work(), policy, NOW) == Go()  # control


@pytest.mark.parametrize(
    ("method", "path", "content"),
    [
        ("POST", "/repos/o/r/issues/5/comments", True),
        ("POST", "/repos/o/r/issues", True),
        ("POST", "/repos/o/r/issues/comments/9/reactions", True),
        ("POST", "/repos/o/r/check-runs", True),
        ("PATCH", "/repos/o/r/issues/comments/9", False),
        ("GET", "/repos/o/r/issues/5/comments", False),
        ("POST", "/repos/o/r/actions/runs/1/rerun-failed-jobs", False),
        ("POST", f"{GRAPHQL}", False),
    ],
)
def test_content_creating_requests(method: str, path: str, content: bool) -> None:
    assert is_content_creation(method, path) is content


# --- learn -------------------------------------------------------------------------------


def test_learn_keeps_the_figures_and_the_smaller_of_one_window() -> None:
    state = Installation()
    learn(state, 200, httpx.Headers(rate_headers(10, NOW + 60)), "", NOW)
    learn(state, 200, httpx.Headers(rate_headers(12, NOW + 60)), "", NOW)  # answered late
    assert state.windows["core"] == Window(5000, 10, NOW + 60)
    learn(state, 200, httpx.Headers(rate_headers(4999, NOW + 3660)), "", NOW)  # a new window
    assert state.windows["core"].remaining == 4999
    assert state.hold_until == 0


def test_learn_a_secondary_limit_holds_for_retry_after_or_a_minute() -> None:
    state = Installation()
    learn(state, 403, httpx.Headers({"retry-after": "30"}), "secondary rate limit", NOW)
    assert state.hold_until == NOW + 30
    state = Installation()
    learn(state, 403, httpx.Headers({}), "You have exceeded a secondary rate limit", NOW)
    assert state.hold_until == NOW + budget.SECONDARY_DEFAULT
    state = Installation()
    learn(state, 403, httpx.Headers({}), "Resource not accessible by integration", NOW)
    assert state.hold_until == 0  # control: a plain 403 is no limit


def test_learn_an_exhausted_primary_limit_is_its_window_not_a_hold() -> None:
    state = Installation()
    learn(state, 403, httpx.Headers(rate_headers(0, NOW + 90)), "API rate limit exceeded", NOW)
    assert state.windows["core"].remaining == 0 and state.hold_until == 0


# --- the client sends nothing while a limit holds ------------------------------------------


def test_a_call_after_the_last_request_of_the_window_waits_for_the_reset(
    client: GitHubClient, httpx_mock: HTTPXMock, fake_time: Any
) -> None:
    reset = fake_time.now + 120
    httpx_mock.add_response(url=JOB_URL, json=JOB, headers=rate_headers(0, reset))
    httpx_mock.add_response(url=JOB_URL, json=JOB, headers=rate_headers(4999, reset + 3600))

    client.job("octo/widgets", 7)
    assert fake_time.sleeps == []  # control: the first went at once
    client.job("octo/widgets", 7)

    assert fake_time.sleeps == [120 + RESET_MARGIN]
    assert len(httpx_mock.get_requests()) == 2


def test_a_secondary_limit_holds_the_next_call_too(
    client: GitHubClient, httpx_mock: HTTPXMock, fake_time: Any
) -> None:
    secondary = {"message": "You have exceeded a secondary rate limit."}
    httpx_mock.add_response(
        url=JOB_URL, status_code=403, headers={"retry-after": "30"}, json=secondary
    )
    httpx_mock.add_response(url=JOB_URL, json=JOB)
    httpx_mock.add_response(url=COMMENTS_URL, method="POST", json=COMMENT, status_code=201)

    client.job("octo/widgets", 7)  # the retrier waits 30 s, then it goes
    fake_time.sleeps.clear()
    client.create_comment("octo/widgets", 5, "hello")  # after the hold: at once

    assert fake_time.sleeps == []
    assert len(httpx_mock.get_requests()) == 3


def test_a_call_during_a_secondary_hold_waits_for_its_end(
    make_client: Any, httpx_mock: HTTPXMock, fake_time: Any
) -> None:
    planner = Planner(clock=fake_time.clock, sleep=fake_time.sleep)
    client = make_client(planner=planner)
    planner._state("token").hold_until = fake_time.now + 45  # another call met it
    httpx_mock.add_response(url=JOB_URL, json=JOB)

    client.job("octo/widgets", 7)

    assert fake_time.sleeps == [45]


def test_a_sweep_under_its_reserve_sends_nothing_and_a_drop_still_goes(
    client: GitHubClient, httpx_mock: HTTPXMock, fake_time: Any
) -> None:
    reset = fake_time.now + 600
    httpx_mock.add_response(url=JOB_URL, json=JOB, headers=rate_headers(400, reset))
    httpx_mock.add_response(url=JOB_URL, json=JOB, headers=rate_headers(399, reset))
    client.job("octo/widgets", 7)  # learns 400 of 5,000 left: under 10 %

    deferred = pytest.raises(budget.Deferred, match="sweep of installation token deferred")
    with deferred, budget.sweeping():
        client.job("octo/widgets", 7)
    client.job("octo/widgets", 7)  # not a sweep: it goes

    assert len(httpx_mock.get_requests()) == 2 and fake_time.sleeps == []


def test_figures_for_metrics(client: GitHubClient, httpx_mock: HTTPXMock, fake_time: Any) -> None:
    httpx_mock.add_response(url=JOB_URL, json=JOB, headers=rate_headers(7, fake_time.now + 90))
    client.job("octo/widgets", 7)
    assert client.planner.figures() == [budget.Figures("token", "core", 5000, 7, 90.0)]
    assert client.planner.waiting() == {"token": 0}
    assert client.planner in budget.PLANNERS
