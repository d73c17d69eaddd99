"""Every mutation has a defined outcome when GitHub's answer is unknown (issue 11, Build 3).

The simulated GitHub answers a mutation with a 502 after applying it (or before, without
applying it), or answers slower than the client's timeout; landbot must find out what
happened (the comment's marker, the PR's merged state, its queue entry, its timeline) and
end the drop with the outcome it chose, once, or fail it naming the mutation that failed.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from landbot.github.client import GitHubClient
from landbot.land.comments import HANDBACK_MARKER, STATUS_MARKER
from landbot.pipeline.process import Lander
from landbot.pipeline.worker import Worker
from landbot.sim import CheckScenario
from landbot.sim.faults import Fault

from .conftest import World

COMMENTS = "POST /repos/{owner}/{repo}/issues/{issue_number}/comments"
EDIT = "PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}"
TIMEOUT = 0.5  # the client's timeout in the slow-answer tests


def timed_out_pr(world: World, head: str) -> Any:
    pr = world.open_pr(head, {"app.py": f"def answer():\n    return 42  # {head}\n"})
    assert world.time_out_in_queue(pr) == "CI_TIMEOUT"
    return pr


def failed_pr(world: World, head: str) -> Any:
    pr = world.open_pr(head, {"app.py": f"def answer():\n    return 41  # {head}\n"})
    world.gh.set_checks(world.repo, CheckScenario.failing(), pr=pr, event="merge_group")
    world.gh.enqueue(pr, actor="alice")
    assert world.gh.run_queue(world.repo)[-1].action == "dropped"
    return pr


def marked(world: World, number: int, marker: str) -> list[Any]:
    return [c for c in world.bot_comments(number) if marker in c.body]


def enqueues(world: World) -> int:
    return world.server.requests.count("POST /graphql", operation="EnqueuePullRequest")


# --- comments ------------------------------------------------------------------------------


@pytest.mark.parametrize("applied", [True, False], ids=["applied", "not-applied"])
def test_a_status_comment_answered_502_is_posted_once_and_the_drop_is_requeued(
    world: World, applied: bool
) -> None:
    pr = timed_out_pr(world, f"status-502-{applied}")
    world.server.faults.fail(COMMENTS, 502, take_effect=applied)
    world.settle()
    [drop] = world.store.drops()
    assert drop.outcome == "requeued", drop.summary
    assert len(marked(world, pr.number, STATUS_MARKER)) == 1
    assert enqueues(world) == 1


def test_the_control_a_status_comment_without_a_fault(world: World) -> None:
    pr = timed_out_pr(world, "status-ok")
    world.settle()
    [drop] = world.store.drops()
    assert drop.outcome == "requeued"
    assert len(marked(world, pr.number, STATUS_MARKER)) == 1


@pytest.mark.parametrize("applied", [True, False], ids=["applied", "not-applied"])
def test_a_hand_back_answered_502_is_posted_once_and_the_drop_is_handed_back(
    world: World, applied: bool
) -> None:
    pr = failed_pr(world, f"handback-502-{applied}")
    # The status comment is the first create, the hand-back the second.
    world.server.faults.fail(COMMENTS, 502, take_effect=applied, times=1)
    original = world.server.faults.take
    seen = {"creates": 0}

    def take(route: str, operation: str | None = None) -> Any:
        if route == COMMENTS:
            seen["creates"] += 1
            if seen["creates"] == 1:
                return None  # let the status comment through; the fault waits for the next
        return original(route, operation)

    world.server.faults.take = take  # type: ignore[method-assign]
    world.settle()
    [drop] = world.store.drops()
    assert drop.outcome == "handed_back", drop.summary
    handbacks = marked(world, pr.number, HANDBACK_MARKER)
    assert len(handbacks) == 1 and f"@{pr.author}" in handbacks[0].body
    assert len(marked(world, pr.number, STATUS_MARKER)) == 1


def test_an_edit_of_the_status_comment_answered_502_is_sent_again(world: World) -> None:
    pr = timed_out_pr(world, "edit-502")
    world.settle()
    # It times out again at the same head: the status comment is edited, then a hand-back.
    world.gh.run_queue(world.repo)
    world.gh.clock.advance(minutes=61)
    assert world.gh.run_queue(world.repo)[-1].reason == "CI_TIMEOUT"
    world.server.faults.fail(EDIT, 502, take_effect=False)
    world.settle()
    assert [d.outcome for d in world.store.drops()] == ["handed_back", "requeued"]
    assert len(marked(world, pr.number, STATUS_MARKER)) == 1
    assert world.server.requests.count(EDIT) >= 2  # the unanswered edit, sent again


def test_a_comment_github_refuses_fails_the_drop_naming_the_comment(world: World) -> None:
    timed_out_pr(world, "status-403")
    world.server.faults.fail(COMMENTS, 403, message="Resource not accessible by integration")
    world.settle()
    [drop] = world.store.drops()
    assert drop.outcome == "failed"
    assert "status comment" in (drop.summary or ""), drop.summary


@pytest.mark.parametrize("status", [502, 403], ids=["unanswered", "refused"])
def test_minimizing_the_older_hand_back_never_fails_the_new_one(world: World, status: int) -> None:
    pr = failed_pr(world, f"minimize-{status}")
    world.settle()
    # The author pushes, it is queued again and fails again: a second hand-back, and the
    # first is to be minimized, which GitHub does not answer (twice) or refuses.
    world.gh.push(world.repo, pr.head_ref, {"app.py": "def answer():\n    return 40\n"})
    world.gh.enqueue(world.gh.pull(world.repo, pr.number), actor="alice")
    assert world.gh.run_queue(world.repo)[-1].action == "dropped"
    world.server.faults.fail("POST /graphql", status, operation="MinimizeComment", times=2)
    world.settle()
    outcomes = [d.outcome for d in world.store.drops()]
    assert outcomes == ["handed_back", "handed_back"], [d.summary for d in world.store.drops()]
    assert len(marked(world, pr.number, HANDBACK_MARKER)) == 2
    sent = world.server.requests.count("POST /graphql", operation="MinimizeComment")
    assert sent == (2 if status == 502 else 1)


# --- enqueue -------------------------------------------------------------------------------


def slow_world(world: World) -> tuple[Lander, Worker, GitHubClient]:
    """A lander whose client gives up after TIMEOUT seconds."""
    client = GitHubClient(world.settings.github, mutation_gap=0, timeout=TIMEOUT)
    lander = Lander(world.settings, world.store, client)
    return lander, Worker(world.store, lambda: lander, name="slow-worker"), client


def on_enqueue_answer_late(world: World, meanwhile: Callable[[], None]) -> dict[str, int]:
    """The next enqueue applies only after the client's timeout; when landbot next re-reads
    the PR, `meanwhile` has happened on GitHub first (the queue ran on)."""
    original = world.server.faults.take
    state = {"late": 1, "after": 0}
    lock = threading.Lock()

    def take(route: str, operation: str | None = None) -> Any:
        with lock:
            if operation == "EnqueuePullRequest" and state["late"]:
                state["late"] = 0
                state["after"] = 1
                time.sleep(TIMEOUT * 3)  # then the enqueue applies, and nobody hears it
                return None
            if operation == "PullRequest" and state["after"]:
                state["after"] = 0
                meanwhile()
        return original(route, operation)

    world.server.faults.take = take  # type: ignore[method-assign]
    return state


def test_an_enqueue_answered_late_of_a_pr_that_then_merged_is_not_sent_again(
    world: World,
) -> None:
    pr = timed_out_pr(world, "late-merged")
    _, worker, client = slow_world(world)

    def merge() -> None:
        world.gh.set_checks(world.repo, CheckScenario.passing(), pr=pr, event="merge_group")
        world.gh.run_queue(world.repo)
        assert world.gh.pull(world.repo, pr.number).merged

    on_enqueue_answer_late(world, merge)
    try:
        world.gh.webhooks.flush()
        worker.drain()
        world.gh.webhooks.flush()
        worker.drain()
    finally:
        client.close()
    assert enqueues(world) == 1, world.server.requests.operations()
    drops = world.store.drops()
    assert "failed" not in [d.outcome for d in drops], [(d.outcome, d.summary) for d in drops]


def test_an_enqueue_answered_late_whose_group_failed_fast_is_not_sent_twice(
    world: World,
) -> None:
    pr = timed_out_pr(world, "late-failed-fast")
    _, worker, client = slow_world(world)

    def fail_fast() -> None:
        world.gh.set_checks(world.repo, CheckScenario.failing(), pr=pr, event="merge_group")
        steps = world.gh.run_queue(world.repo)
        assert steps and steps[-1].action == "dropped"

    on_enqueue_answer_late(world, fail_fast)
    try:
        world.gh.webhooks.flush()
        worker.drain()
        world.gh.webhooks.flush()
        worker.drain()
    finally:
        client.close()
    # One enqueue for this head (the budget), though the PR is out of the queue again.
    assert enqueues(world) == 1, world.server.requests.operations()
    outcomes = sorted(d.outcome for d in world.store.drops())
    assert "failed" not in outcomes
    assert outcomes == ["handed_back", "requeued"], outcomes
    assert len(marked(world, pr.number, HANDBACK_MARKER)) == 1


def test_the_control_an_enqueue_answered_late_that_never_applied_is_sent_again(
    world: World,
) -> None:
    timed_out_pr(world, "late-lost")
    _, worker, client = slow_world(world)
    original = world.server.faults.take
    state = {"late": 1}
    # A late 502 without effect: the enqueue never happened, so it must be sent again.
    lost = Fault("POST /graphql", 502, 1, body={"message": "Server Error"})

    def take(route: str, operation: str | None = None) -> Any:
        if operation == "EnqueuePullRequest" and state["late"]:
            state["late"] = 0
            time.sleep(TIMEOUT * 3)
            return lost
        return original(route, operation)

    world.server.faults.take = take  # type: ignore[method-assign]
    try:
        world.gh.webhooks.flush()
        worker.drain()
    finally:
        client.close()
    assert enqueues(world) == 2
    [drop] = world.store.drops()
    assert drop.outcome == "requeued", drop.summary
    assert [e.pr.number for e in world.gh.queue(world.repo).entries] == [drop.pr]


def test_an_enqueue_answered_502_after_applying_is_not_sent_again(world: World) -> None:
    pr = timed_out_pr(world, "enqueue-502")
    world.server.faults.fail("POST /graphql", 502, operation="EnqueuePullRequest", take_effect=True)
    world.settle()
    assert enqueues(world) == 1
    [drop] = world.store.drops()
    assert drop.outcome == "requeued"
    assert [e.pr.number for e in world.gh.queue(world.repo).entries] == [pr.number]


def test_an_enqueue_github_refuses_fails_the_drop_naming_the_enqueue(world: World) -> None:
    timed_out_pr(world, "enqueue-422")
    world.server.faults.fail(
        "POST /graphql", 422, operation="EnqueuePullRequest", message="Validation Failed"
    )
    world.settle()
    [drop] = world.store.drops()
    assert drop.outcome == "failed"
    assert "enqueue" in (drop.summary or ""), drop.summary
