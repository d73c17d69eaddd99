"""Pull requests, the merge queue and permissions over GraphQL/REST, as GitHub answers them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pytest_httpx import HTTPXMock

from landbot.config import load_settings
from landbot.github.client import GitHubClient
from landbot.github.errors import GraphQLError, NotFound

API = "https://api.test"
GRAPHQL = f"{API}/graphql"
HEAD = "a" * 40


def pr_node(**over: Any) -> dict[str, Any]:
    node = {
        "id": "PR_kwDOA",
        "number": 5,
        "state": "OPEN",
        "merged": False,
        "headRefOid": HEAD,
        "headRefName": "feature/x",
        "baseRefName": "main",
        "isInMergeQueue": False,
        "autoMergeRequest": None,
        "labels": {"nodes": [{"name": "bug"}, {"name": "landbot:skip"}]},
        "author": {"login": "alice"},
        "maintainerCanModify": True,
        "headRepository": {"nameWithOwner": "alice/widgets"},
        "url": "https://github.test/octo/widgets/pull/5",
    }
    node.update(over)
    return node


def sent(httpx_mock: HTTPXMock, n: int = 0) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(httpx_mock.get_requests(url=GRAPHQL)[n].content)
    return body


def test_pull_request_reads_everything_confirm_needs_in_one_call(
    client: GitHubClient, httpx_mock: HTTPXMock
) -> None:
    httpx_mock.add_response(
        url=GRAPHQL,
        json={
            "data": {
                "repository": {
                    "pullRequest": pr_node(autoMergeRequest={"enabledAt": "2027-01-15T08:00:00Z"})
                }
            }
        },
    )

    pr = client.pull_request("octo/widgets", 5)

    assert pr.node_id == "PR_kwDOA" and pr.number == 5 and pr.state == "OPEN"
    assert pr.head_oid == HEAD and pr.head_ref == "feature/x" and pr.base_ref == "main"
    assert pr.auto_merge and not pr.in_merge_queue and not pr.merged
    assert pr.labels == ("bug", "landbot:skip")
    assert pr.author == "alice" and pr.maintainer_can_modify
    assert pr.head_repo == "alice/widgets" and pr.is_fork
    assert client.calls == 1
    body = sent(httpx_mock)
    assert body["variables"] == {"owner": "octo", "name": "widgets", "number": 5}
    assert "query PullRequest" in body["query"]


def test_a_pull_request_from_the_same_repository_is_not_a_fork(
    client: GitHubClient, httpx_mock: HTTPXMock
) -> None:
    node = pr_node(headRepository={"nameWithOwner": "Octo/Widgets"}, author=None)
    httpx_mock.add_response(url=GRAPHQL, json={"data": {"repository": {"pullRequest": node}}})

    pr = client.pull_request("octo/widgets", 5)

    assert not pr.is_fork and pr.author is None


def test_a_missing_pull_request_is_not_found(client: GitHubClient, httpx_mock: HTTPXMock) -> None:
    httpx_mock.add_response(
        url=GRAPHQL,
        json={
            "data": {"repository": {"pullRequest": None}},
            "errors": [
                {
                    "type": "NOT_FOUND",
                    "path": ["repository", "pullRequest"],
                    "message": "Could not resolve to a PullRequest with the number of 999.",
                }
            ],
        },
    )

    with pytest.raises(NotFound, match="Could not resolve"):
        client.pull_request("octo/widgets", 999)


def test_a_bad_repository_name_is_one_clear_line(client: GitHubClient) -> None:
    from landbot.errors import LandbotError

    with pytest.raises(LandbotError, match="'widgets' is not OWNER/NAME"):
        client.pull_request("widgets", 5)


# --- the queue ----------------------------------------------------------------------------


def test_enqueue_returns_the_entry(client: GitHubClient, httpx_mock: HTTPXMock) -> None:
    httpx_mock.add_response(
        url=GRAPHQL,
        json={
            "data": {
                "enqueuePullRequest": {
                    "mergeQueueEntry": {"id": "MQE_1", "state": "QUEUED", "position": 3}
                }
            }
        },
    )

    result = client.enqueue("PR_kwDOA", HEAD)

    assert (result.already_queued, result.entry_id, result.state, result.position) == (
        False,
        "MQE_1",
        "QUEUED",
        3,
    )
    body = sent(httpx_mock)
    assert body["variables"] == {"pullRequestId": "PR_kwDOA", "expectedHeadOid": HEAD}
    assert "mutation EnqueuePullRequest" in body["query"]


def test_enqueue_already_in_the_queue_is_success(
    client: GitHubClient, httpx_mock: HTTPXMock
) -> None:
    httpx_mock.add_response(
        url=GRAPHQL,
        json={
            "data": {"enqueuePullRequest": None},
            "errors": [
                {
                    "type": "UNPROCESSABLE",
                    "path": ["enqueuePullRequest"],
                    "locations": [{"line": 2, "column": 3}],
                    "message": "Pull request is already in the queue",
                }
            ],
        },
    )

    result = client.enqueue("PR_kwDOA", HEAD)

    assert result.already_queued and result.entry_id is None
    assert len(httpx_mock.get_requests()) == 1


def test_enqueue_refused_for_another_reason_raises(
    client: GitHubClient, httpx_mock: HTTPXMock
) -> None:
    """The control: only "already in the queue" is success."""
    httpx_mock.add_response(
        url=GRAPHQL,
        json={
            "data": {"enqueuePullRequest": None},
            "errors": [
                {
                    "type": "UNPROCESSABLE",
                    "message": "Head sha didn't match expected head sha",
                }
            ],
        },
    )

    with pytest.raises(GraphQLError, match="Head sha didn't match") as caught:
        client.enqueue("PR_kwDOA", "b" * 40)
    assert caught.value.types == {"UNPROCESSABLE"}


def test_dequeue_and_auto_merge_send_the_documented_inputs(
    client: GitHubClient, httpx_mock: HTTPXMock
) -> None:
    httpx_mock.add_response(
        url=GRAPHQL, json={"data": {"dequeuePullRequest": {"mergeQueueEntry": {"id": "MQE_1"}}}}
    )
    httpx_mock.add_response(
        url=GRAPHQL,
        json={
            "data": {
                "enablePullRequestAutoMerge": {
                    "pullRequest": {
                        "id": "PR_kwDOA",
                        "autoMergeRequest": {"enabledAt": "2027-01-15T08:00:00Z"},
                    }
                }
            }
        },
    )

    client.dequeue("PR_kwDOA")
    client.enable_auto_merge("PR_kwDOA", HEAD, "SQUASH")

    assert sent(httpx_mock, 0)["variables"] == {"id": "PR_kwDOA"}
    assert sent(httpx_mock, 1)["variables"] == {
        "pullRequestId": "PR_kwDOA",
        "expectedHeadOid": HEAD,
        "mergeMethod": "SQUASH",
    }


def test_queue_removals_reads_recent_prs_and_their_queue_events_in_one_call(
    client: GitHubClient, httpx_mock: HTTPXMock
) -> None:
    httpx_mock.add_response(
        url=GRAPHQL,
        json={
            "data": {
                "repository": {
                    "pullRequests": {
                        "nodes": [
                            {
                                "id": "PR_5",
                                "number": 5,
                                "headRefOid": HEAD,
                                "baseRefName": "main",
                                "isInMergeQueue": False,
                                "timelineItems": {
                                    "nodes": [
                                        {
                                            "__typename": "AddedToMergeQueueEvent",
                                            "id": "AMQE_1",
                                            "createdAt": "2027-01-15T08:00:00Z",
                                            "actor": {"login": "alice"},
                                        },
                                        {
                                            "__typename": "RemovedFromMergeQueueEvent",
                                            "id": "RMQE_1",
                                            "createdAt": "2027-01-15T08:20:00Z",
                                            "reason": "failed_checks",
                                            "beforeCommit": {"oid": HEAD},
                                            "actor": None,
                                        },
                                    ]
                                },
                            },
                            {
                                "id": "PR_6",
                                "number": 6,
                                "headRefOid": "c" * 40,
                                "baseRefName": "main",
                                "isInMergeQueue": True,
                                "timelineItems": {"nodes": []},
                            },
                        ]
                    }
                }
            }
        },
    )

    prs = client.queue_removals("octo/widgets", first=20)

    assert [p.number for p in prs] == [5, 6]
    added, removed = prs[0].events
    assert (added.kind, added.actor, added.reason) == ("added", "alice", None)
    assert (removed.kind, removed.reason, removed.before_commit) == (
        "removed",
        "failed_checks",
        HEAD,
    )
    assert removed.actor is None and removed.created_at is not None
    assert prs[1].in_merge_queue and prs[1].events == ()
    assert sent(httpx_mock)["variables"] == {"owner": "octo", "name": "widgets", "first": 20}
    assert client.calls == 1


def test_merge_queue_entries(client: GitHubClient, httpx_mock: HTTPXMock) -> None:
    entry = {
        "id": "MQE_1",
        "state": "AWAITING_CHECKS",
        "position": 1,
        "enqueuedAt": "2027-01-15T08:00:00Z",
        "headCommit": {"oid": "d" * 40},
        "baseCommit": {"oid": "e" * 40},
        "pullRequest": {"id": "PR_5", "number": 5},
    }
    httpx_mock.add_response(
        url=GRAPHQL,
        json={"data": {"repository": {"mergeQueue": {"entries": {"nodes": [entry]}}}}},
    )
    httpx_mock.add_response(url=GRAPHQL, json={"data": {"repository": {"mergeQueue": None}}})

    (got,) = client.merge_queue_entries("octo/widgets", "main")
    assert (got.state, got.position, got.pr_number, got.head_oid) == (
        "AWAITING_CHECKS",
        1,
        5,
        "d" * 40,
    )
    assert client.merge_queue_entries("octo/widgets", "no-queue") == []
    assert sent(httpx_mock, 1)["variables"]["branch"] == "no-queue"


# --- permissions ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ({"permission": "admin", "role_name": "admin"}, "admin"),
        ({"permission": "write", "role_name": "maintain"}, "maintain"),
        ({"permission": "write", "role_name": "security-engineer"}, "write"),  # custom role
        ({"permission": "read", "role_name": "triage"}, "triage"),
        ({"permission": "read"}, "read"),
        ({"permission": "none", "role_name": ""}, "none"),
    ],
)
def test_collaborator_permission(
    client: GitHubClient, httpx_mock: HTTPXMock, answer: dict[str, str], expected: str
) -> None:
    httpx_mock.add_response(
        url=f"{API}/repos/octo/widgets/collaborators/alice/permission",
        json={**answer, "user": {"login": "alice"}},
    )
    assert client.collaborator_permission("octo/widgets", "alice") == expected


def test_an_unknown_user_has_no_permission(client: GitHubClient, httpx_mock: HTTPXMock) -> None:
    httpx_mock.add_response(
        url=f"{API}/repos/octo/widgets/collaborators/nobody/permission",
        status_code=404,
        json={"message": "nobody is not a user"},
    )
    assert client.collaborator_permission("octo/widgets", "nobody") == "none"
    assert len(httpx_mock.get_requests()) == 1


# --- the base URL from the settings ------------------------------------------------------


def test_the_api_url_setting_moves_rest_and_graphql(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, httpx_mock: HTTPXMock, fake_time: Any
) -> None:
    import os

    for key in list(os.environ):
        if key.startswith("LANDBOT_"):
            monkeypatch.delenv(key)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LANDBOT_GITHUB__API_URL", "http://ghe.test:8080/api/v3/")
    monkeypatch.setenv("LANDBOT_GITHUB__TOKEN", "env-token")
    settings = load_settings()
    httpx_mock.add_response(
        url="http://ghe.test:8080/api/v3/repos/octo/widgets/commits/main/check-runs?per_page=100",
        json={"total_count": 0, "check_runs": []},
    )
    httpx_mock.add_response(
        url="http://ghe.test:8080/api/v3/graphql",
        method="POST",
        json={"data": {"repository": {"pullRequest": pr_node()}}},
    )

    with GitHubClient(settings.github, sleep=fake_time.sleep, clock=fake_time.clock) as client:
        assert client.check_runs("octo/widgets", "main") == []
        assert client.pull_request("octo/widgets", 5).number == 5

    assert all(r.headers["authorization"] == "token env-token" for r in httpx_mock.get_requests())


def test_the_default_api_url_is_githubs() -> None:
    from landbot.config import GitHubSettings

    defaults = GitHubSettings()
    assert defaults.api_url == "https://api.github.com"
    assert defaults.graphql_url == "https://api.github.com/graphql"
