"""The merge-group commit of a drop, found by each of the three routes, the earlier ones
broken on purpose each time: the remembered `merge_group` event; the merge-group workflow
runs (no webhook but the removal reached landbot); the `beforeCommit` of the PR's latest
removal (no webhook, and CI that is not GitHub Actions, so no workflow runs)."""

from __future__ import annotations

from typing import Any

from landbot.sim import CheckScenario, CheckSpec

from .conftest import World
from .test_triage_ci_failure import PYTEST
from .triage_support import (
    CHECK_RUNS_ROUTE,
    RUNS_ROUTE,
    count,
    deliver_only,
    evidence_of,
    handbacks,
    queue_and_fail,
)

# CI of another app: check runs, but no Actions workflow run to name the group branch.
OTHER_APP = CheckScenario(
    workflows=(), checks=(CheckSpec("ci/circleci: build", "failure", app="circleci"),)
)

# SQLite only: what these tests prove is about GitHub and the decision, on store paths
# the land loop runs on both stores (conftest.BOTH_STORES).
STORES = ("sqlite",)


def removal_before_commit(world: World, pr: Any, sha: str) -> None:
    """GitHub's removal event names the group commit as its beforeCommit (observed on some
    removals); the simulation records the PR head by default."""
    [removal] = [e for e in pr.timeline if e.typename == "RemovedFromMergeQueueEvent"][-1:]
    removal.data["before_commit"] = sha


def test_route_1_the_remembered_merge_group_event(world: World) -> None:
    pr, step = queue_and_fail(world, "feat-route1", PYTEST)
    world.settle()
    assert [g.head_sha for g in world.store.groups_for(world.repo.full_name, pr.number)] == [
        step.group_sha
    ]
    [drop] = world.store.drops()
    assert drop.merge_group_sha == step.group_sha
    assert evidence_of(drop)["merge_group_source"] == "merge_group event"
    # The later routes cost nothing: the one listing of merge-group runs is for the PRs
    # ahead in the group (the reproduce block), and route 2 shares it (next test). The
    # other listing is of main's green runs, for the failed job's baseline (issue 26).
    assert count(world, RUNS_ROUTE) == 2
    assert world.server.requests.count("POST /graphql", operation="LatestQueueRemoval") == 0


def test_route_2_merge_group_workflow_runs(world: World) -> None:
    world.gh.webhooks.url = None  # landbot hears nothing...
    pr, step = queue_and_fail(world, "feat-route2", PYTEST)
    world.gh.webhooks.url = world.webhook_url
    assert deliver_only(world, "pull_request", "dequeued") == 1  # ...but the removal
    # Route 1 is broken: no merge_group event (nor failed-check webhook) was remembered.
    [drop] = world.store.drops()
    assert world.store.groups_for(world.repo.full_name, pr.number) == []
    assert drop.merge_group_sha == step.group_sha
    ev = evidence_of(drop)
    assert ev["merge_group_source"] == "merge-group workflow run"
    assert (ev["triage_class"], [j["job"] for j in ev["jobs"]]) == ("genuine", ["test (3.12)"])
    assert count(world, RUNS_ROUTE) == 2  # and main's green runs, for the baseline
    assert world.server.requests.count("POST /graphql", operation="LatestQueueRemoval") == 0


def test_route_3_the_removal_events_before_commit(world: World) -> None:
    world.gh.webhooks.url = None
    pr, step = queue_and_fail(world, "feat-route3", OTHER_APP)
    assert step.group_sha is not None
    removal_before_commit(world, world.gh.pull(world.repo, pr.number), step.group_sha)
    world.gh.webhooks.url = world.webhook_url
    deliver_only(world, "pull_request", "dequeued")
    [drop] = world.store.drops()
    assert world.store.groups_for(world.repo.full_name, pr.number) == []
    # Route 2 has nothing to find: the only workflow run is the PR's own pull_request CI.
    assert [r.event for r in world.gh.workflow_runs.values()] == ["pull_request"]
    assert drop.merge_group_sha == step.group_sha
    ev = evidence_of(drop)
    assert ev["merge_group_source"] == "removal event beforeCommit"
    assert world.server.requests.count("POST /graphql", operation="LatestQueueRemoval") == 1
    # Another app's check: listed with its link, no log to read, so no claim about its cause.
    [job] = ev["jobs"]
    assert (job["job"], job["class_"], job["step"]) == ("ci/circleci: build", "unknown", None)
    assert job["url"].startswith("https://circleci.example/checks/")
    assert "landbot reads only GitHub Actions logs" in job["summary"]
    assert (drop.outcome, ev["triage_class"]) == ("handed_back", "unknown")
    [handback] = handbacks(world, pr.number)
    assert f"- [ci/circleci: build]({job['url']}) `failure`: the check of `circleci`" in (
        handback.body
    )


def test_control_a_before_commit_that_is_the_head_is_not_taken_for_the_group(
    world: World,
) -> None:
    """Without the observed case, beforeCommit is the PR head: its checks are the PR's own
    (they passed), so landbot says it found no group commit instead of blaming them."""
    world.gh.webhooks.url = None
    pr, _ = queue_and_fail(world, "feat-route3-head", OTHER_APP)
    world.gh.webhooks.url = world.webhook_url
    deliver_only(world, "pull_request", "dequeued")
    [drop] = world.store.drops()
    ev = evidence_of(drop)
    assert drop.merge_group_sha is None
    assert (ev["merge_group_source"], ev["triage_class"], ev["jobs"]) == (None, None, [])
    assert ev["triage_reason"].startswith("landbot found no merge-group commit for this drop")
    # It asked every route, and looked at no commit's checks.
    assert world.server.requests.count("POST /graphql", operation="LatestQueueRemoval") == 1
    assert count(world, RUNS_ROUTE) == 1 and count(world, CHECK_RUNS_ROUTE) == 0
    [handback] = handbacks(world, pr.number)
    assert "landbot found no merge-group commit for this drop" in handback.body
