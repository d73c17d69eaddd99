"""GraphQL: validated against GitHub's schema first, then answered from the model."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx

from landbot.sim import FakeGitHub
from landbot.sim.state import Repository

Post = Callable[..., dict[str, Any]]

PULL = """
query PullState($owner: String!, $name: String!, $number: Int!) {
  repository(owner: $owner, name: $name) {
    pullRequest(number: $number) {
      id number state merged headRefOid headRefName baseRefName isInMergeQueue
      maintainerCanModify author { login } labels(first: 10) { nodes { name } }
      headRepository { nameWithOwner } autoMergeRequest { enabledAt } url
      %s
    }
  }
}
"""


def test_schema_invalid_document_gets_githubs_answer(
    api: httpx.Client, repo: Repository, gh: FakeGitHub, graphql: Post
) -> None:
    gh.open_pull_request(repo, head="feature", files={"app.py": "ANSWER = 42\n"})
    variables = {"owner": "acme", "name": "widgets", "number": 1}

    body = graphql(api, PULL % "mergeQueueStatus", **variables)

    assert "data" not in body  # GitHub answers a validation error with errors and no data
    [err] = body["errors"]
    assert err["message"] == "Field 'mergeQueueStatus' doesn't exist on type 'PullRequest'"
    assert err["extensions"] == {
        "code": "undefinedField",
        "typeName": "PullRequest",
        "fieldName": "mergeQueueStatus",
    }
    assert err["path"] == ["query PullState", "repository", "pullRequest", "mergeQueueStatus"]
    assert err["locations"][0]["line"] == 8

    # Control: the same document with the field fixed is answered from the model.
    fixed = graphql(api, PULL % "isMergeQueueEnabled", **variables)
    assert "errors" not in fixed
    pr = fixed["data"]["repository"]["pullRequest"]
    assert pr["number"] == 1
    assert pr["state"] == "OPEN"
    assert pr["isMergeQueueEnabled"] is True
    assert pr["headRefOid"] == gh.pull(repo, 1).head_sha
    assert pr["headRepository"] == {"nameWithOwner": "acme/widgets"}
    assert pr["author"] == {"login": "octocat"}


def test_wrong_input_field_is_rejected_before_anything_runs(
    api: httpx.Client, repo: Repository, gh: FakeGitHub, graphql: Post
) -> None:
    pr = gh.open_pull_request(repo, head="feature", files={"app.py": "ANSWER = 42\n"})
    gh.enqueue(pr, actor="maintainer")
    wrong = (
        "mutation($id: ID!) { dequeuePullRequest(input: {pullRequestId: $id}) "
        "{ clientMutationId } }"
    )
    body = graphql(api, wrong, id=pr.node_id)
    assert "data" not in body
    messages = [e["message"] for e in body["errors"]]
    assert (
        "InputObject 'DequeuePullRequestInput' doesn't accept argument 'pullRequestId'" in messages
    )
    assert gh.queue_entry(pr) is not None  # nothing ran

    right = "mutation($id: ID!) { dequeuePullRequest(input: {id: $id}) { clientMutationId } }"
    assert "errors" not in graphql(api, right, id=pr.node_id)
    assert gh.queue_entry(pr) is None


def test_syntax_error_and_missing_query(api: httpx.Client, graphql: Post) -> None:
    body = graphql(api, "query { repository(owner: ")
    assert "data" not in body
    assert body["errors"][0]["message"].startswith("Parse error at [1, ")
    response = api.post("/graphql", json={"variables": {}})
    assert response.status_code == 200
    assert response.json() == {
        "errors": [{"message": "A query attribute must be specified and must be a string."}]
    }


def test_enqueue_twice_is_unprocessable_like_github(
    api: httpx.Client, repo: Repository, gh: FakeGitHub, graphql: Post
) -> None:
    pr = gh.open_pull_request(repo, head="feature", files={"app.py": "ANSWER = 42\n"})
    enqueue = """
    mutation Enqueue($id: ID!, $head: GitObjectID) {
      enqueuePullRequest(input: {pullRequestId: $id, expectedHeadOid: $head}) {
        mergeQueueEntry { id state position headCommit { oid } }
      }
    }"""
    first = graphql(api, enqueue, id=pr.node_id, head=pr.head_sha)
    assert "errors" not in first
    entry = first["data"]["enqueuePullRequest"]["mergeQueueEntry"]
    assert entry["state"] == "QUEUED"
    assert entry["position"] == 1
    assert entry["headCommit"]["oid"] == pr.head_sha

    again = graphql(api, enqueue, id=pr.node_id, head=pr.head_sha)
    assert again["data"] == {"enqueuePullRequest": None}
    [err] = again["errors"]
    assert err["type"] == "UNPROCESSABLE"
    assert err["message"] == "Pull request is already in the queue"
    assert err["path"] == ["enqueuePullRequest"]


def test_enqueue_refuses_a_stale_expected_head(
    api: httpx.Client, repo: Repository, gh: FakeGitHub, graphql: Post
) -> None:
    pr = gh.open_pull_request(repo, head="feature", files={"app.py": "ANSWER = 42\n"})
    enqueue = """mutation($id: ID!, $head: GitObjectID) {
      enqueuePullRequest(input: {pullRequestId: $id, expectedHeadOid: $head}) { clientMutationId }
    }"""
    stale = graphql(api, enqueue, id=pr.node_id, head="0" * 40)
    assert stale["errors"][0]["type"] == "UNPROCESSABLE"
    assert gh.queue_entry(pr) is None
    assert "errors" not in graphql(api, enqueue, id=pr.node_id, head=pr.head_sha)
    assert gh.queue_entry(pr) is not None


def test_not_found_and_pagination_rules(
    api: httpx.Client, repo: Repository, gh: FakeGitHub, graphql: Post
) -> None:
    missing = graphql(
        api, '{ repository(owner: "acme", name: "widgets") { pullRequest(number: 99) { id } } }'
    )
    assert missing["data"] == {"repository": {"pullRequest": None}}
    assert missing["errors"][0]["type"] == "NOT_FOUND"
    assert missing["errors"][0]["message"] == (
        "Could not resolve to a PullRequest with the number of 99."
    )

    no_repo = graphql(api, '{ repository(owner: "acme", name: "nope") { id } }')
    assert no_repo["data"] == {"repository": None}
    assert no_repo["errors"][0]["message"] == (
        "Could not resolve to a Repository with the name 'acme/nope'."
    )

    unbounded = graphql(
        api, '{ repository(owner: "acme", name: "widgets") { pullRequests { totalCount } } }'
    )
    assert unbounded["errors"][0]["type"] == "MISSING_PAGINATION_BOUNDARIES"
    too_many = graphql(
        api,
        '{ repository(owner: "acme", name: "widgets") '
        "{ pullRequests(first: 101) { totalCount } } }",
    )
    assert too_many["errors"][0]["type"] == "EXCESSIVE_PAGINATION"
    ok = graphql(
        api,
        '{ repository(owner: "acme", name: "widgets") '
        "{ pullRequests(first: 100) { totalCount } } }",
    )
    assert ok == {"data": {"repository": {"pullRequests": {"totalCount": 0}}}}


def test_queue_removals_sweep_in_one_call(
    api: httpx.Client, repo: Repository, gh: FakeGitHub, graphql: Post, server: object
) -> None:
    """The poller's query: recent open PRs with their last queue events, via unions."""
    from landbot.sim import CheckScenario

    bad = gh.open_pull_request(repo, head="bad", files={"bad.txt": "x\n"}, author="alice")
    gh.set_checks(repo, CheckScenario.failing(), pr=bad, event="merge_group")
    good = gh.open_pull_request(repo, head="good", files={"good.txt": "y\n"}, author="bob")
    gh.enqueue(bad, actor="maintainer")
    gh.run_queue(repo)
    query = """
    query Removals($owner: String!, $name: String!) {
      repository(owner: $owner, name: $name) {
        pullRequests(states: OPEN, first: 50, orderBy: {field: UPDATED_AT, direction: DESC}) {
          nodes {
            number id headRefOid baseRefName isInMergeQueue
            timelineItems(
              itemTypes: [REMOVED_FROM_MERGE_QUEUE_EVENT, ADDED_TO_MERGE_QUEUE_EVENT], last: 5
            ) {
              nodes {
                __typename
                ... on RemovedFromMergeQueueEvent {
                  id createdAt reason beforeCommit { oid } actor { login }
                }
                ... on AddedToMergeQueueEvent { id createdAt actor { login } }
              }
            }
          }
        }
      }
    }"""
    body = graphql(api, query, owner="acme", name="widgets")
    assert "errors" not in body
    nodes = body["data"]["repository"]["pullRequests"]["nodes"]
    assert [n["number"] for n in nodes] == [bad.number, good.number]  # most recently updated first
    events = nodes[0]["timelineItems"]["nodes"]
    assert [e["__typename"] for e in events] == [
        "AddedToMergeQueueEvent",
        "RemovedFromMergeQueueEvent",
    ]
    assert events[0]["actor"] == {"login": "maintainer"}
    assert events[1]["reason"] == "failed_checks"
    assert events[1]["beforeCommit"] == {"oid": bad.head_sha}
    assert events[1]["actor"] == {"login": "github-merge-queue[bot]"}
    assert nodes[1]["timelineItems"]["nodes"] == []


def test_merge_queue_entries_and_node_lookup(
    api: httpx.Client, repo: Repository, gh: FakeGitHub, graphql: Post
) -> None:
    one = gh.open_pull_request(repo, head="one", files={"one.txt": "1\n"})
    two = gh.open_pull_request(repo, head="two", files={"two.txt": "2\n"})
    gh.enqueue(one, actor="maintainer")
    gh.enqueue(two, actor="maintainer")
    gh.queue_step(repo)  # builds one's merge group
    query = """
    query($owner: String!, $name: String!) {
      repository(owner: $owner, name: $name) {
        mergeQueue(branch: "main") {
          configuration { checkResponseTimeout mergingStrategy maximumEntriesToBuild }
          entries(first: 10) {
            nodes { state position pullRequest { number } headCommit { oid } baseCommit { oid } }
          }
        }
      }
    }"""
    body = graphql(api, query, owner="acme", name="widgets")
    queue = body["data"]["repository"]["mergeQueue"]
    assert queue["configuration"] == {
        "checkResponseTimeout": 60,
        "mergingStrategy": "ALLGREEN",
        "maximumEntriesToBuild": 1,
    }
    first, second = queue["entries"]["nodes"]
    assert (first["state"], first["position"], first["pullRequest"]["number"]) == (
        "AWAITING_CHECKS",
        1,
        one.number,
    )
    entry = gh.queue_entry(one)
    assert entry is not None and entry.group is not None
    assert first["headCommit"]["oid"] == entry.group.head_sha
    assert first["baseCommit"]["oid"] == entry.group.base_sha
    assert (second["state"], second["position"], second["baseCommit"]) == ("QUEUED", 2, None)

    node = graphql(
        api,
        "query($id: ID!) { node(id: $id) { __typename ... on PullRequest { number } } }",
        id=two.node_id,
    )
    assert node["data"]["node"] == {"__typename": "PullRequest", "number": two.number}
    gone = graphql(api, 'query { node(id: "PR_nope") { id } }')
    assert gone["errors"][0]["type"] == "NOT_FOUND"


def test_auto_merge_and_minimize_mutations(
    api: httpx.Client, repo: Repository, gh: FakeGitHub, graphql: Post
) -> None:
    pr = gh.open_pull_request(repo, head="feature", files={"app.py": "ANSWER = 42\n"})
    enable = """mutation($id: ID!, $head: GitObjectID) {
      enablePullRequestAutoMerge(
        input: {pullRequestId: $id, expectedHeadOid: $head, mergeMethod: MERGE}
      ) {
        pullRequest { autoMergeRequest { mergeMethod enabledBy { login } } isInMergeQueue }
      }
    }"""
    body = graphql(api, enable, id=pr.node_id, head=pr.head_sha)
    result = body["data"]["enablePullRequestAutoMerge"]["pullRequest"]
    assert result["autoMergeRequest"] == {
        "mergeMethod": "MERGE",
        "enabledBy": {"login": "maintainer"},
    }
    assert result["isInMergeQueue"] is True  # its checks had passed: queued at once

    comment = gh.add_comment(repo, pr.number, "old status", author="maintainer")
    minimize = """mutation($id: ID!) {
      minimizeComment(input: {subjectId: $id, classifier: OUTDATED}) {
        minimizedComment { isMinimized minimizedReason }
      }
    }"""
    body = graphql(api, minimize, id=comment.node_id)
    assert body["data"]["minimizeComment"]["minimizedComment"] == {
        "isMinimized": True,
        "minimizedReason": "outdated",
    }


def test_mutation_needs_write_access(
    server: object, repo: Repository, gh: FakeGitHub, graphql: Post
) -> None:
    from landbot.sim import FakeGitHubServer

    assert isinstance(server, FakeGitHubServer)
    pr = gh.open_pull_request(repo, head="feature", files={"app.py": "ANSWER = 42\n"})
    enqueue = (
        "mutation($id: ID!) { enqueuePullRequest(input: {pullRequestId: $id}) "
        "{ clientMutationId } }"
    )
    reader = gh.create_token("passer-by")
    with httpx.Client(base_url=server.url, headers={"Authorization": f"token {reader}"}) as client:
        body = graphql(client, enqueue, id=pr.node_id)
    assert body["errors"][0]["type"] == "FORBIDDEN"
    assert gh.queue_entry(pr) is None
    gh.add_collaborator(repo, "passer-by", "write")
    with httpx.Client(base_url=server.url, headers={"Authorization": f"token {reader}"}) as client:
        assert "errors" not in graphql(client, enqueue, id=pr.node_id)
    assert gh.queue_entry(pr) is not None


def test_a_field_the_fake_does_not_serve_fails_loudly(
    api: httpx.Client, repo: Repository, gh: FakeGitHub, graphql: Post
) -> None:
    gh.open_pull_request(repo, head="feature", files={"app.py": "ANSWER = 42\n"})
    body = graphql(
        api,
        '{ repository(owner: "acme", name: "widgets") '
        "{ pullRequest(number: 1) { reviewDecision } } }",
    )
    assert body["errors"][0]["type"] == "NOT_SERVED_BY_FAKE"
    assert "PullRequest.reviewDecision" in body["errors"][0]["message"]
