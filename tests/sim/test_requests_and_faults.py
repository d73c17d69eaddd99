"""Request counting per route and failure injection."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import httpx

from landbot.sim import FakeGitHub, FakeGitHubServer
from landbot.sim.state import Repository

PULL = "GET /repos/{owner}/{repo}/pulls/{pull_number}"
COMMENTS = "POST /repos/{owner}/{repo}/issues/{issue_number}/comments"
ENQUEUE = """mutation Enqueue($id: ID!) {
  enqueuePullRequest(input: {pullRequestId: $id}) { mergeQueueEntry { id } }
}"""
VIEWER = "query Who { viewer { login } }"

Post = Callable[..., dict[str, Any]]


def test_requests_are_counted_per_route_and_operation(
    api: httpx.Client, server: FakeGitHubServer, gh: FakeGitHub, repo: Repository, graphql: Post
) -> None:
    pr = gh.open_pull_request(repo, head="feature", files={"x.txt": "1\n"})
    api.get("/repos/acme/widgets/pulls/1")
    api.get("/repos/acme/widgets/pulls/1")
    api.get("/repos/acme/widgets/pulls/99")  # a 404 is a request too
    graphql(api, VIEWER)
    graphql(api, ENQUEUE, id=pr.node_id)
    api.get("/not/a/route")

    assert server.requests.count(PULL) == 3
    assert server.requests.count(PULL, status=404) == 1
    assert server.requests.count("POST /graphql") == 2
    assert server.requests.count("POST /graphql", operation="Enqueue") == 1
    assert server.requests.operations() == {"Who": 1, "Enqueue": 1}
    assert server.requests.count("GET /not/a/route") == 1
    assert server.requests.total == 6
    server.requests.reset()
    assert server.requests.total == 0


def test_next_requests_answer_502_then_recover(
    api: httpx.Client, server: FakeGitHubServer, gh: FakeGitHub, repo: Repository
) -> None:
    gh.open_pull_request(repo, head="feature", files={"x.txt": "1\n"})
    server.faults.fail(PULL, 502, times=2)
    assert [api.get("/repos/acme/widgets/pulls/1").status_code for _ in range(3)] == [502, 502, 200]
    assert server.requests.count(PULL) == 3
    assert server.faults.pending == []
    # Other routes are untouched.
    server.faults.fail(PULL, 500)
    assert api.get("/repos/acme/widgets").status_code == 200


def test_a_failed_mutation_can_still_take_effect(
    api: httpx.Client, server: FakeGitHubServer, gh: FakeGitHub, repo: Repository
) -> None:
    pr = gh.open_pull_request(repo, head="feature", files={"x.txt": "1\n"})
    server.faults.fail(COMMENTS, 502, take_effect=True)
    response = api.post(f"/repos/acme/widgets/issues/{pr.number}/comments", json={"body": "hello"})
    assert response.status_code == 502
    assert [c.body for c in gh.comments_on(repo, pr.number)] == ["hello"]  # it happened anyway

    server.faults.fail(COMMENTS, 502)  # control: without take_effect nothing happens
    api.post(f"/repos/acme/widgets/issues/{pr.number}/comments", json={"body": "again"})
    assert [c.body for c in gh.comments_on(repo, pr.number)] == ["hello"]


def test_secondary_rate_limits_and_429(
    api: httpx.Client, server: FakeGitHubServer, repo: Repository
) -> None:
    server.faults.secondary_rate_limit("GET /repos/{owner}/{repo}", retry_after=7)
    limited = api.get("/repos/acme/widgets")
    assert limited.status_code == 403
    assert limited.headers["retry-after"] == "7"
    assert "secondary rate limit" in limited.json()["message"]

    server.faults.too_many_requests("GET /repos/{owner}/{repo}")
    busy = api.get("/repos/acme/widgets")
    assert busy.status_code == 429 and "retry-after" not in busy.headers

    server.faults.primary_rate_limit("GET /repos/{owner}/{repo}", reset_in=30)
    primary = api.get("/repos/acme/widgets")
    assert primary.status_code == 403
    assert primary.headers["x-ratelimit-remaining"] == "0"
    assert 25 <= int(primary.headers["x-ratelimit-reset"]) - time.time() <= 31

    ok = api.get("/repos/acme/widgets")  # control
    assert ok.status_code == 200
    assert int(ok.headers["x-ratelimit-remaining"]) > 0


def test_graphql_rate_limited_in_a_200(
    api: httpx.Client, server: FakeGitHubServer, gh: FakeGitHub, repo: Repository, graphql: Post
) -> None:
    pr = gh.open_pull_request(repo, head="feature", files={"x.txt": "1\n"})
    server.faults.graphql_rate_limited(operation="Enqueue")
    assert "errors" not in graphql(api, VIEWER)  # another operation is not affected
    limited = graphql(api, ENQUEUE, id=pr.node_id)
    assert limited["errors"][0]["type"] == "RATE_LIMITED"
    assert "data" not in limited
    assert gh.queue_entry(pr) is None  # nothing was done
    assert "errors" not in graphql(api, ENQUEUE, id=pr.node_id)  # control
    assert gh.queue_entry(pr) is not None
