"""The right head, always: a poll sweep's drop is the head that was removed, or nothing.

GitHub names the removed commit in `RemovedFromMergeQueueEvent.beforeCommit`: the PR head,
or the merge-group commit built on it (both observed; see landbot/sim/merge_queue.py). Each
test runs with the simulated GitHub filling it both ways. A removal followed by a push is a
removal of an old head: the sweep records nothing for it, so nothing is done to the new head
(an enqueue of a commit nobody queued, or an old head's failure handed back on the new one).
The controls: the same removal without the push is acted on, and is one drop with its webhook.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

import pytest

from landbot.intake.poll import sweep
from landbot.land.comments import HANDBACK_MARKER
from landbot.sim import CheckScenario

from .conftest import World


@pytest.fixture(params=["head", "group"])
def world_mode(request: pytest.FixtureRequest, world: World) -> Iterator[World]:
    """The world, with GitHub naming the PR head or the merge-group commit as removed."""
    world.gh.removal_before_commit = request.param
    yield world


def poll(world: World) -> list[int]:
    now = world.gh.clock.now() + dt.timedelta(seconds=1)
    return sweep(world.store, world.client, world.repo.full_name, now=now)


def fail_in_queue(world: World, head: str) -> Any:
    pr = world.open_pr(head, {"app.py": f"def answer():\n    return 41  # {head}\n"})
    world.gh.set_checks(world.repo, CheckScenario.failing(), pr=pr, event="merge_group")
    world.gh.enqueue(pr, actor="alice")
    steps = world.gh.run_queue(world.repo)
    assert steps[-1].action == "dropped" and steps[-1].reason == "CI_FAILURE"
    return pr


def push(world: World, pr: Any) -> str:
    """The author pushes a new commit after the removal."""
    sha: str = world.gh.push(world.repo, pr.head_ref, {"more.txt": "more\n"}, author=pr.author)
    return sha


def test_a_removal_a_push_then_a_poll_does_nothing_to_the_new_head(world_mode: World) -> None:
    world = world_mode
    pr = fail_in_queue(world, "feat-pushed")
    world.settle()  # the webhook's drop: handed back at the removed head
    [drop] = world.store.drops()
    assert drop.outcome == "handed_back"
    comments = [c.body for c in world.bot_comments(pr.number)]
    new_head = push(world, pr)
    world.settle()
    assert world.gh.pull(world.repo, pr.number).head_sha == new_head != drop.head_sha
    before = world.calls()

    assert poll(world) == []
    world.settle()
    assert [d.id for d in world.store.drops()] == [drop.id]
    assert world.mutations() == []  # nothing enqueued, nothing minimized
    assert [c.body for c in world.bot_comments(pr.number)] == comments
    assert world.calls() - before == 1  # the sweep, nothing after it


def test_a_missed_webhook_then_a_push_then_a_poll_enqueues_nothing(world_mode: World) -> None:
    world = world_mode
    world.gh.webhooks.url = None  # landbot hears nothing of it
    pr = world.open_pr("feat-slow", {"slow.txt": "slow\n"})
    assert world.time_out_in_queue(pr) == "CI_TIMEOUT"  # a drop landbot would re-enqueue
    push(world, pr)
    world.gh.webhooks.flush()

    assert poll(world) == []
    world.worker.drain()
    assert world.store.drops() == []
    assert world.mutations() == [] and world.bot_comments(pr.number) == []
    assert world.gh.queue(world.repo).entries == []


def test_control_a_missed_webhook_at_an_unchanged_head_is_acted_on(world_mode: World) -> None:
    world = world_mode
    world.gh.webhooks.url = None
    pr = world.open_pr("feat-slow", {"slow.txt": "slow\n"})
    assert world.time_out_in_queue(pr) == "CI_TIMEOUT"
    world.gh.webhooks.flush()

    [new] = poll(world)
    world.worker.drain()
    [drop] = world.store.drops()
    assert (drop.id, drop.source, drop.head_sha, drop.outcome) == (
        new,
        "poll",
        pr.head_sha,
        "requeued",
    )
    assert world.mutations() == ["EnqueuePullRequest"]
    assert [e.pr.number for e in world.gh.queue(world.repo).entries] == [pr.number]


def test_webhook_then_poll_of_one_removal_is_one_drop(world_mode: World) -> None:
    world = world_mode
    pr = fail_in_queue(world, "feat-both")
    world.settle()
    assert poll(world) == []
    world.settle()
    [drop] = world.store.drops()
    assert (drop.source, drop.head_sha, drop.outcome) == ("webhook", pr.head_sha, "handed_back")
    assert drop.removal_id is not None  # the sweep's report is linked to the webhook's drop
    assert len([c for c in world.bot_comments(pr.number) if HANDBACK_MARKER in c.body]) == 1


def test_poll_then_webhook_of_one_removal_is_one_drop(world_mode: World) -> None:
    world = world_mode
    world.gh.webhooks.url = None
    pr = fail_in_queue(world, "feat-late-hook")
    [new] = poll(world)
    # The webhook arrives late (a slow or redelivered delivery), after the sweep's drop.
    [dequeued] = world.gh.deliveries_of("pull_request", "dequeued")
    world.gh.webhooks.url = world.webhook_url
    assert dequeued.send(world.webhook_url).status_code in (200, 202)
    world.settle()
    [drop] = world.store.drops()
    assert (drop.id, drop.source, drop.head_sha, drop.outcome) == (
        new,
        "poll",
        pr.head_sha,
        "handed_back",
    )
    assert drop.delivery_id is not None
    assert len([c for c in world.bot_comments(pr.number) if HANDBACK_MARKER in c.body]) == 1


# --- the webhook door: a push to a queued pull request ---------------------------------


def queue_pending(world: World, head: str) -> Any:
    """A PR in the queue whose merge-group checks have not reported yet."""
    pr = world.open_pr(head, {"app.py": f"def answer():\n    return 42  # {head}\n"})
    world.gh.set_checks(world.repo, CheckScenario.pending(), pr=pr, event="merge_group")
    world.gh.enqueue(pr, actor="alice")
    world.gh.run_queue(world.repo)
    world.settle()
    return pr


def test_a_push_to_a_queued_pr_gets_nothing_done_to_the_new_head(world_mode: World) -> None:
    """GitHub removes a queued PR that is pushed to, and its dequeue webhook names the new
    head: landbot reads the removal in the timeline and leaves the head nobody queued."""
    world = world_mode
    pr = queue_pending(world, "feat-push-queued")
    old_head = pr.head_sha
    new_head = push(world, pr)
    world.settle()
    [drop] = world.store.drops()
    # Recorded at the commit GitHub removed (the webhook named the new head, nobody queued it).
    assert drop.head_sha == old_head != new_head
    assert drop.outcome == "ignored" and "pushed while queued" in drop.summary
    assert world.mutations() == [] and world.bot_comments(pr.number) == []


def test_control_a_removal_of_the_queued_head_itself_is_acted_on(world_mode: World) -> None:
    """The same queued PR, removed without a push (its checks time out): acted on at its
    head."""
    world = world_mode
    pr = queue_pending(world, "feat-timeout-queued")
    world.gh.clock.advance(minutes=61)
    assert world.gh.run_queue(world.repo)[-1].reason == "CI_TIMEOUT"
    world.settle()
    [drop] = world.store.drops()
    assert drop.head_sha == pr.head_sha and drop.outcome == "requeued"
    assert world.mutations() == ["EnqueuePullRequest"]
