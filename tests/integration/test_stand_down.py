"""The fixer stands down (issue 27, point 4): a pull request that a person put back in the
queue, closed, merged or marked `landbot:skip` while its fix job ran gets nothing of the
job's result: no push (a push would take a queued PR out of the queue again), no auto-merge,
no hand-back. On both backends: the local sandbox and a GitHub Actions runner.

The person acts at the one moment that matters: after the job has its verdict, before
landbot's last look at the pull request (the read that decides whether to publish). The
control is the same job with nobody acting: it is pushed and auto-merge is armed."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from landbot.land.comments import FIX_MARKER, HANDBACK_MARKER
from landbot.sim import merge_queue

from .conftest import World, with_command_agent
from .test_actions_fixer import FIXING, dropped_pr, on_actions, until_settled
from .test_fix_loop import FIXING_AGENT

# SQLite only: what these tests prove is about GitHub and the decision, on store paths
# the land loop runs on both stores (conftest.BOTH_STORES).
STORES = ("sqlite",)

pytestmark = [pytest.mark.usefixtures("needs_bwrap"), pytest.mark.slow]

FIX_RUNNERS = ("run_fix_job", "run_actions_fix_job")


def requeue(world: World, pr: Any) -> None:
    world.gh.enqueue(world.gh.pull(world.repo, pr.number), actor="alice")


def close(world: World, pr: Any) -> None:
    world.gh.close_pull_request(world.gh.pull(world.repo, pr.number), actor="alice")


def merge(world: World, pr: Any) -> None:
    # A maintainer merging by hand, past the queue (an administrator may).
    assert merge_queue.merge_directly(world.gh, world.gh.pull(world.repo, pr.number))


def skip(world: World, pr: Any) -> None:
    world.gh.add_label(world.gh.pull(world.repo, pr.number), "landbot:skip", actor="alice")


ACTS: dict[str, Callable[[World, Any], None]] = {
    "requeued": requeue,
    "closed": close,
    "merged": merge,
    "skipped": skip,
}


def act_before_the_last_look(world: World, pr: Any, act: Callable[[World, Any], None]) -> list[str]:
    """Have the person act when the fix job re-reads the PR after its verdict (the frame of
    run_fix_job / run_actions_fix_job holds `verdict` then, and only then), once."""
    real = world.client.pull_request
    done: list[str] = []

    def pull_request(repo: str, number: int) -> Any:
        caller = sys._getframe(1)
        if not done and caller.f_code.co_name in FIX_RUNNERS and "verdict" in caller.f_locals:
            act(world, pr)
            done.append(caller.f_code.co_name)
        return real(repo, number)

    world.client.pull_request = pull_request  # the real client, one read instrumented
    return done


def check_stood_down(world: World, pr: Any, drop: Any, case: str, acted: list[str]) -> None:
    now = world.gh.pull(world.repo, pr.number)
    comments = world.bot_comments(pr.number)
    if case == "nobody":  # the control: the same job, published
        assert drop.outcome == "fixed", drop.summary
        assert now.head_sha != drop.head_sha and now.auto_merge is not None
        assert [c for c in comments if FIX_MARKER in c.body]
        return
    assert acted, "the person never acted: the job did not reach its last look"
    assert drop.outcome == "ignored", (drop.outcome, drop.summary)
    assert world.mutations().count("EnablePullRequestAutoMerge") == 0
    assert not [c for c in comments if HANDBACK_MARKER in c.body or FIX_MARKER in c.body]
    if case != "merged":  # a merge by hand writes the base, never the PR's branch
        assert now.head_sha == drop.head_sha  # nothing pushed
    if case == "requeued":
        assert world.gh.queue_entry(now) is not None  # still queued: no push took it out


CASES = ["nobody", *ACTS]


@pytest.mark.parametrize("case", CASES)
def test_the_local_fixer_stands_down(world: World, sandbox_dir: Path, case: str) -> None:
    with_command_agent(world, sandbox_dir, FIXING_AGENT)
    pr = dropped_pr(world, "feat-bug")
    acted = act_before_the_last_look(world, pr, ACTS[case]) if case in ACTS else []
    world.settle()
    [drop] = world.store.drops()
    check_stood_down(world, pr, drop, case, acted)
    if acted:
        assert acted == ["run_fix_job"]


@pytest.mark.parametrize("case", CASES)
def test_the_actions_fixer_stands_down(world: World, sandbox_dir: Path, case: str) -> None:
    on_actions(world, sandbox_dir, FIXING)
    pr = dropped_pr(world, "feat-bug")
    acted = act_before_the_last_look(world, pr, ACTS[case]) if case in ACTS else []
    drop = until_settled(world)
    check_stood_down(world, pr, drop, case, acted)
    if acted:
        assert acted == ["run_actions_fix_job"]
        [dispatch] = world.store.dispatches()
        assert dispatch.outcome == "collected: fixed"  # the run did its work; none published
