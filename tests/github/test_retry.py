"""The retry policy, case by case, on the fake clock: the exact waits, the exact requests."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from pytest_httpx import HTTPXMock

from landbot.github.client import GitHubClient
from landbot.github.errors import (
    GitHubError,
    MutationOutcomeUnknown,
    NotFound,
    RateLimited,
    ServerError,
)
from landbot.github.retry import RESET_MARGIN, RetryPolicy, backoff

API = "https://api.test"
JOB_URL = f"{API}/repos/octo/widgets/actions/jobs/7"
COMMENTS_URL = f"{API}/repos/octo/widgets/issues/5/comments"
GRAPHQL = f"{API}/graphql"
START = 1_800_000_000.0

JOB = {
    "id": 7,
    "run_id": 70,
    "name": "test",
    "status": "completed",
    "conclusion": "failure",
    "html_url": "https://github.test/octo/widgets/actions/runs/70/job/7",
    "steps": [
        {"number": 1, "name": "Set up job", "status": "completed", "conclusion": "success"},
        {"number": 2, "name": "Run tests", "status": "completed", "conclusion": "failure"},
    ],
}
COMMENT = {
    "id": 900,
    "node_id": "IC_900",
    "body": "hello",
    "user": {"login": "landbot[bot]"},
    "created_at": "2027-01-15T08:00:00Z",
    "html_url": "https://github.test/octo/widgets/pull/5#issuecomment-900",
}
PR_DATA = {
    "data": {
        "repository": {
            "pullRequest": {
                "id": "PR_5",
                "number": 5,
                "state": "OPEN",
                "merged": False,
                "headRefOid": "a" * 40,
                "headRefName": "feature",
                "baseRefName": "main",
                "isInMergeQueue": False,
                "autoMergeRequest": None,
                "labels": {"nodes": []},
                "author": {"login": "alice"},
                "maintainerCanModify": True,
                "headRepository": {"nameWithOwner": "octo/widgets"},
                "url": "https://github.test/octo/widgets/pull/5",
            }
        }
    }
}


def requests(httpx_mock: HTTPXMock, **match: Any) -> list[httpx.Request]:
    return httpx_mock.get_requests(**match)


# --- transient errors on reads ---------------------------------------------------------


def test_a_502_then_200_is_retried_after_a_jittered_backoff(
    client: GitHubClient, httpx_mock: HTTPXMock, fake_time: Any
) -> None:
    httpx_mock.add_response(url=JOB_URL, status_code=502, json={"message": "Bad Gateway"})
    httpx_mock.add_response(url=JOB_URL, json=JOB)

    job = client.job("octo/widgets", 7)

    assert job.id == 7 and job.steps[1].name == "Run tests"
    assert fake_time.sleeps == [0.75]  # base 1 s, equal jitter at rand 0.5
    assert len(requests(httpx_mock)) == 2
    assert client.calls == 2


def test_a_timeout_is_retried(client: GitHubClient, httpx_mock: HTTPXMock, fake_time: Any) -> None:
    httpx_mock.add_exception(httpx.ReadTimeout("no answer"), url=JOB_URL)
    httpx_mock.add_response(url=JOB_URL, json=JOB)

    assert client.job("octo/widgets", 7).conclusion == "failure"
    assert fake_time.sleeps == [0.75]


def test_a_read_gives_up_after_max_attempts_with_the_last_error(
    client: GitHubClient, httpx_mock: HTTPXMock, fake_time: Any
) -> None:
    for _ in range(5):
        httpx_mock.add_response(url=JOB_URL, status_code=503, json={"message": "Unavailable"})

    with pytest.raises(ServerError) as caught:
        client.job("octo/widgets", 7)

    assert caught.value.status == 503
    assert len(requests(httpx_mock)) == 5
    assert fake_time.sleeps == [0.75, 1.5, 3.0, 6.0]


def test_backoff_is_capped_and_jittered(
    make_client: Any, httpx_mock: HTTPXMock, fake_time: Any
) -> None:
    client = make_client(policy=RetryPolicy(max_attempts=6, backoff_base=1.0, backoff_cap=4.0))
    for _ in range(5):
        httpx_mock.add_response(url=JOB_URL, status_code=500)
    httpx_mock.add_response(url=JOB_URL, json=JOB)

    client.job("octo/widgets", 7)

    # raw waits 1, 2, 4, 4(cap), 4(cap); rand 0.5 puts each at 3/4 of its raw value
    assert fake_time.sleeps == [0.75, 1.5, 3.0, 3.0, 3.0]


def test_backoff_function_spreads_within_the_upper_half_and_never_passes_the_cap() -> None:
    assert backoff(1, base=1, cap=30, rand=0.0) == 0.5
    assert backoff(1, base=1, cap=30, rand=1.0) == 1.0
    assert backoff(3, base=1, cap=30, rand=0.0) == 2.0
    assert backoff(3, base=1, cap=30, rand=1.0) == 4.0
    assert backoff(3, base=1, cap=30, rand=0.3) != backoff(3, base=1, cap=30, rand=0.7)
    assert max(backoff(n, base=1, cap=30, rand=1.0) for n in range(1, 40)) == 30.0
    assert min(backoff(n, base=1, cap=30, rand=0.0) for n in range(1, 40)) == 0.5


def test_the_real_jitter_varies(make_client: Any, httpx_mock: HTTPXMock, fake_time: Any) -> None:
    """With the default random source, two clients hitting the same failure wait differently."""
    import random

    waits = []
    for seed in (1, 2):
        rng = random.Random(seed)
        c = make_client(rand=rng.random)
        httpx_mock.add_response(url=JOB_URL, status_code=502)
        httpx_mock.add_response(url=JOB_URL, json=JOB)
        c.job("octo/widgets", 7)
        waits.append(fake_time.sleeps.pop())
    assert waits[0] != waits[1]
    assert all(0.5 <= w <= 1.0 for w in waits)


# --- not retried -------------------------------------------------------------------------


def test_a_404_is_not_retried(client: GitHubClient, httpx_mock: HTTPXMock, fake_time: Any) -> None:
    httpx_mock.add_response(url=JOB_URL, status_code=404, json={"message": "Not Found"})

    with pytest.raises(NotFound):
        client.job("octo/widgets", 7)

    assert len(requests(httpx_mock)) == 1
    assert fake_time.sleeps == []


def test_a_plain_403_is_not_a_rate_limit_and_is_not_retried(
    client: GitHubClient, httpx_mock: HTTPXMock, fake_time: Any
) -> None:
    httpx_mock.add_response(
        url=JOB_URL,
        status_code=403,
        headers={"x-ratelimit-remaining": "4999"},
        json={"message": "Resource not accessible by integration"},
    )

    with pytest.raises(GitHubError) as caught:
        client.job("octo/widgets", 7)

    assert caught.value.status == 403 and not isinstance(caught.value, RateLimited)
    assert "Resource not accessible" in str(caught.value)
    assert len(requests(httpx_mock)) == 1


# --- rate limits -------------------------------------------------------------------------


def test_a_403_with_retry_after_waits_that_long_then_succeeds(
    client: GitHubClient, httpx_mock: HTTPXMock, fake_time: Any
) -> None:
    httpx_mock.add_response(
        url=JOB_URL,
        status_code=403,
        headers={"retry-after": "2"},
        json={"message": "You have exceeded a secondary rate limit."},
    )
    httpx_mock.add_response(url=JOB_URL, json=JOB)

    assert client.job("octo/widgets", 7).id == 7
    assert fake_time.sleeps == [2.0]


def test_a_429_without_a_hint_waits_a_minute_then_doubles(
    client: GitHubClient, httpx_mock: HTTPXMock, fake_time: Any
) -> None:
    httpx_mock.add_response(url=JOB_URL, status_code=429, json={"message": "Too many"})
    httpx_mock.add_response(url=JOB_URL, status_code=429, json={"message": "Too many"})
    httpx_mock.add_response(url=JOB_URL, json=JOB)

    client.job("octo/widgets", 7)

    assert fake_time.sleeps == [60.0, 120.0]


def test_a_429_with_retry_after_waits_that_long(
    client: GitHubClient, httpx_mock: HTTPXMock, fake_time: Any
) -> None:
    httpx_mock.add_response(url=JOB_URL, status_code=429, headers={"Retry-After": "7"})
    httpx_mock.add_response(url=JOB_URL, json=JOB)

    client.job("octo/widgets", 7)

    assert fake_time.sleeps == [7.0]


def test_an_exhausted_primary_limit_waits_until_the_reset(
    client: GitHubClient, httpx_mock: HTTPXMock, fake_time: Any
) -> None:
    httpx_mock.add_response(
        url=JOB_URL,
        status_code=403,
        headers={
            "x-ratelimit-remaining": "0",
            "x-ratelimit-reset": str(int(START) + 100),
            "x-ratelimit-resource": "core",
        },
        json={"message": "API rate limit exceeded for installation ID 1."},
    )
    httpx_mock.add_response(url=JOB_URL, json=JOB)

    client.job("octo/widgets", 7)

    assert fake_time.sleeps == [100.0 + RESET_MARGIN]
    assert fake_time.now > START + 100  # the retry went after the reset


def test_a_rate_limit_wait_is_capped(
    client: GitHubClient, httpx_mock: HTTPXMock, fake_time: Any
) -> None:
    httpx_mock.add_response(
        url=JOB_URL,
        status_code=403,
        headers={"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(START) + 3 * 3600)},
    )
    httpx_mock.add_response(url=JOB_URL, json=JOB)

    client.job("octo/widgets", 7)

    # The retry's own wait is capped; the budget then holds every call until the reset,
    # which it takes as at most GitHub's one-hour window away (3 h is a clock gone wrong).
    assert fake_time.sleeps == [15 * 60.0, 3600 - 15 * 60.0 + RESET_MARGIN]


def test_rate_limit_waits_stop_after_their_own_budget(
    client: GitHubClient, httpx_mock: HTTPXMock, fake_time: Any
) -> None:
    for _ in range(4):
        httpx_mock.add_response(url=JOB_URL, status_code=429, headers={"retry-after": "1"})

    with pytest.raises(RateLimited) as caught:
        client.job("octo/widgets", 7)

    assert caught.value.retry_after == 1.0
    assert fake_time.sleeps == [1.0, 1.0, 1.0]  # max_rate_limit_waits = 3
    assert len(requests(httpx_mock)) == 4


def test_rate_limits_do_not_use_up_the_transient_budget(
    make_client: Any, httpx_mock: HTTPXMock, fake_time: Any
) -> None:
    client = make_client(policy=RetryPolicy(max_attempts=2))
    httpx_mock.add_response(url=JOB_URL, status_code=502)
    httpx_mock.add_response(url=JOB_URL, status_code=429, headers={"retry-after": "1"})
    httpx_mock.add_response(url=JOB_URL, json=JOB)

    client.job("octo/widgets", 7)  # one counter for both would have stopped at the 429

    assert fake_time.sleeps == [0.75, 1.0]


def test_a_graphql_200_with_rate_limited_is_waited_until_the_reset(
    client: GitHubClient, httpx_mock: HTTPXMock, fake_time: Any
) -> None:
    httpx_mock.add_response(
        url=GRAPHQL,
        method="POST",
        headers={"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(START) + 30)},
        json={
            "errors": [
                {
                    "type": "RATE_LIMITED",
                    "message": "API rate limit already exceeded for installation ID 1.",
                }
            ]
        },
    )
    httpx_mock.add_response(url=GRAPHQL, method="POST", json=PR_DATA)

    pr = client.pull_request("octo/widgets", 5)

    assert pr.head_oid == "a" * 40
    assert fake_time.sleeps == [30.0 + RESET_MARGIN]


def test_a_graphql_error_that_is_not_a_rate_limit_is_not_retried(
    client: GitHubClient, httpx_mock: HTTPXMock, fake_time: Any
) -> None:
    from landbot.github.errors import GraphQLError

    httpx_mock.add_response(
        url=GRAPHQL,
        method="POST",
        json={"data": None, "errors": [{"type": "FORBIDDEN", "message": "nope"}]},
    )

    with pytest.raises(GraphQLError) as caught:
        client.pull_request("octo/widgets", 5)

    assert caught.value.types == {"FORBIDDEN"}
    assert fake_time.sleeps == []


# --- mutations ---------------------------------------------------------------------------


def test_a_rest_mutation_after_a_502_is_not_repeated(
    client: GitHubClient, httpx_mock: HTTPXMock, fake_time: Any
) -> None:
    httpx_mock.add_response(url=COMMENTS_URL, method="POST", status_code=502)

    with pytest.raises(MutationOutcomeUnknown) as caught:
        client.create_comment("octo/widgets", 5, "hello")

    assert "re-read" in str(caught.value)
    assert len(requests(httpx_mock)) == 1
    assert fake_time.sleeps == []


def test_a_graphql_mutation_after_a_502_is_not_repeated(
    client: GitHubClient, httpx_mock: HTTPXMock, fake_time: Any
) -> None:
    httpx_mock.add_response(url=GRAPHQL, method="POST", status_code=502)

    with pytest.raises(MutationOutcomeUnknown):
        client.enqueue("PR_5", "a" * 40)

    assert len(requests(httpx_mock)) == 1


def test_a_mutation_after_a_read_timeout_is_not_repeated(
    client: GitHubClient, httpx_mock: HTTPXMock
) -> None:
    httpx_mock.add_exception(httpx.ReadTimeout("no answer"), url=COMMENTS_URL, method="POST")

    with pytest.raises(MutationOutcomeUnknown):
        client.create_comment("octo/widgets", 5, "hello")

    assert len(requests(httpx_mock)) == 1


def test_a_mutation_whose_connection_never_opened_is_retried(
    client: GitHubClient, httpx_mock: HTTPXMock, fake_time: Any
) -> None:
    """The control of the two above: GitHub cannot have acted, so trying again is safe."""
    httpx_mock.add_exception(httpx.ConnectError("refused"), url=COMMENTS_URL, method="POST")
    httpx_mock.add_response(url=COMMENTS_URL, method="POST", status_code=201, json=COMMENT)

    assert client.create_comment("octo/widgets", 5, "hello").id == 900
    assert fake_time.sleeps == [0.75]


def test_a_rate_limited_mutation_is_retried(
    client: GitHubClient, httpx_mock: HTTPXMock, fake_time: Any
) -> None:
    httpx_mock.add_response(
        url=COMMENTS_URL,
        method="POST",
        status_code=403,
        headers={"retry-after": "3"},
        json={"message": "You have exceeded a secondary rate limit."},
    )
    httpx_mock.add_response(url=COMMENTS_URL, method="POST", status_code=201, json=COMMENT)

    assert client.create_comment("octo/widgets", 5, "hello").id == 900
    assert fake_time.sleeps == [3.0]
    assert len(requests(httpx_mock)) == 2
