"""What the simulated timeline says about a removal: the commit named, its parents, pushes.

Read through landbot's own sweep document, so the simulation serves every field it asks for.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from landbot.github.documents import document
from landbot.sim import CheckScenario, FakeGitHub
from landbot.sim.state import PullRequest, Repository

Post = Callable[..., dict[str, Any]]


def sweep_nodes(api: httpx.Client, graphql: Post) -> dict[int, dict[str, Any]]:
    body = graphql(api, document("queue_removals"), owner="acme", name="widgets", first=50)
    assert "errors" not in body, body
    return {n["number"]: n for n in body["data"]["repository"]["pullRequests"]["nodes"]}


def removals(node: dict[str, Any]) -> list[dict[str, Any]]:
    items = node["timelineItems"]["nodes"]
    return [i for i in items if i["__typename"] == "RemovedFromMergeQueueEvent"]


def fail_in_queue(gh: FakeGitHub, repo: Repository, head: str) -> tuple[PullRequest, str]:
    pr = gh.open_pull_request(repo, head=head, files={f"{head}.txt": "x\n"}, author="alice")
    gh.set_checks(repo, CheckScenario.failing(), pr=pr, event="merge_group")
    gh.enqueue(pr, actor="maintainer")
    built, dropped = gh.run_queue(repo)
    assert dropped.action == "dropped" and built.group_sha is not None
    return pr, built.group_sha


@pytest.mark.parametrize("mode", ["head", "group"])
def test_a_failed_removal_names_the_head_or_the_group_commit_built_on_it(
    api: httpx.Client, repo: Repository, gh: FakeGitHub, graphql: Post, server: object, mode: str
) -> None:
    gh.removal_before_commit = mode
    base = repo.known_refs["refs/heads/main"]
    pr, group = fail_in_queue(gh, repo, "bad")
    [removed] = removals(sweep_nodes(api, graphql)[pr.number])
    named = removed["beforeCommit"]
    parents = [p["oid"] for p in named["parents"]["nodes"]]
    if mode == "group":
        assert named["oid"] == group != pr.head_sha
        assert parents == [base, pr.head_sha]  # a merge commit: base first, PR head second
    else:
        assert named["oid"] == pr.head_sha
        assert parents == [base]  # the PR's own commit, on the base it was opened from


def test_a_removal_before_any_group_names_the_head_in_either_mode(
    api: httpx.Client, repo: Repository, gh: FakeGitHub, graphql: Post, server: object
) -> None:
    gh.removal_before_commit = "group"
    pr = gh.open_pull_request(repo, head="early", files={"e.txt": "e\n"}, author="alice")
    gh.enqueue(pr, actor="maintainer")
    gh.dequeue(pr, actor="maintainer")  # before the queue built a group
    [removed] = removals(sweep_nodes(api, graphql)[pr.number])
    assert (removed["reason"], removed["beforeCommit"]["oid"]) == ("manual", pr.head_sha)


def test_a_push_to_a_queued_pr_names_the_head_before_the_push(
    api: httpx.Client, repo: Repository, gh: FakeGitHub, graphql: Post, server: object
) -> None:
    gh.removal_before_commit = "group"
    pr = gh.open_pull_request(repo, head="moving", files={"m.txt": "m\n"}, author="alice")
    gh.set_checks(repo, CheckScenario.pending(), pr=pr, event="merge_group")
    gh.enqueue(pr, actor="maintainer")
    [built] = gh.run_queue(repo)
    assert built.action == "built"  # a group exists and waits on its checks
    old = pr.head_sha
    new = gh.push(repo, "moving", {"m.txt": "m2\n"}, author="alice")
    node = sweep_nodes(api, graphql)[pr.number]
    [removed] = removals(node)
    assert removed["beforeCommit"]["oid"] == old != new == node["headRefOid"]
    assert not node["isInMergeQueue"]


def test_a_force_push_is_on_the_timeline_and_a_fast_forward_is_not(
    api: httpx.Client, repo: Repository, gh: FakeGitHub, graphql: Post, server: object
) -> None:
    pr, _ = fail_in_queue(gh, repo, "rewritten")
    first = pr.head_sha
    ahead = gh.push(repo, "rewritten", {"more.txt": "more\n"}, author="alice")  # fast-forward
    node = sweep_nodes(api, graphql)[pr.number]
    types = [i["__typename"] for i in node["timelineItems"]["nodes"]]
    assert types == ["AddedToMergeQueueEvent", "RemovedFromMergeQueueEvent"]  # the control

    base = repo.known_refs["refs/heads/main"]
    rewritten = gh.push(repo, "rewritten", {"other.txt": "o\n"}, author="alice", parent=base)
    node = sweep_nodes(api, graphql)[pr.number]
    *_, removed, pushed = node["timelineItems"]["nodes"]
    assert (removed["__typename"], pushed["__typename"]) == (
        "RemovedFromMergeQueueEvent",
        "HeadRefForcePushedEvent",
    )
    assert pushed["createdAt"] >= removed["createdAt"]
    [event] = [e for e in pr.timeline if e.typename == "HeadRefForcePushedEvent"]
    assert (event.data["before_commit"], event.data["after_commit"]) == (ahead, rewritten)
    assert first != ahead != rewritten == node["headRefOid"]
