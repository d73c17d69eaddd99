"""A worker killed with SIGKILL at any point between deciding and acting, then restarted:
the action happens exactly once.

The worker runs as a real `landbot worker` process; `LANDBOT_FAILPOINT=<point>` makes it
SIGKILL itself at that point the first time (a marker file remembers it fired).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import World

LANDBOT = str(Path(sys.executable).parent / "landbot")


def start_worker(world: World, tmp_path: Path, failpoint: str | None) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LANDBOT_")}
    env.update(world.server.settings_env(token=world.settings.github.token.get_secret_value()))
    env.update(
        LANDBOT_DATABASE_URL=world.settings.database_url,
        LANDBOT_REPOS=world.repo.full_name,
        LANDBOT_WORKER__LEASE_SECONDS="1",
        LANDBOT_WORKER__IDLE_SLEEP="0.1",
        LANDBOT_FAILPOINT_MARKER=str(tmp_path / "failpoint-fired"),
    )
    if failpoint:
        env["LANDBOT_FAILPOINT"] = failpoint
    return subprocess.Popen([LANDBOT, "worker"], env=env, cwd=tmp_path, stderr=subprocess.PIPE)


def settled(world: World) -> bool:
    drops = world.store.drops()
    return bool(drops) and drops[0].outcome != "pending"


def wait_for(predicate, timeout: float = 60.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(0.1)


@pytest.mark.parametrize(
    "failpoint", ["after_decide", "before_requeue", "after_requeue", "before_status"]
)
def test_killed_worker_acts_once_after_restart(
    world: World, tmp_path: Path, failpoint: str
) -> None:
    pr = world.open_pr("feat-crash", {"app.py": "def answer():\n    return 42  # crash\n"})
    world.time_out_in_queue(pr)
    world.gh.webhooks.flush()  # the drop is stored by landbot's webhook endpoint

    first = start_worker(world, tmp_path, failpoint)
    first.wait(timeout=60)
    assert first.returncode == -signal.SIGKILL, first.stderr.read().decode() if first.stderr else ""
    [drop] = world.store.drops()
    assert drop.outcome == "pending" and drop.plan is not None  # decided, not finished
    expected_before = 0 if failpoint in ("after_decide", "before_requeue") else 1
    assert world.mutations().count("EnqueuePullRequest") == expected_before

    second = start_worker(world, tmp_path, failpoint)  # the marker keeps it from dying again
    try:
        wait_for(lambda: settled(world))
    finally:
        second.terminate()
        second.wait(timeout=30)
    assert world.store.drops()[0].outcome == "requeued"
    assert world.mutations().count("EnqueuePullRequest") == 1
    assert [e.pr.number for e in world.gh.queue(world.repo).entries] == [pr.number]
    # The status comment was posted once, not once per attempt.
    assert len(world.bot_comments(pr.number)) == 1


def test_the_failpoint_control_a_worker_without_it_finishes_in_one_go(
    world: World, tmp_path: Path
) -> None:
    pr = world.open_pr("feat-calm", {"app.py": "def answer():\n    return 42  # calm\n"})
    world.time_out_in_queue(pr)
    world.gh.webhooks.flush()
    worker = start_worker(world, tmp_path, None)
    try:
        wait_for(lambda: settled(world))
        assert worker.poll() is None  # it never died
    finally:
        worker.terminate()
        worker.wait(timeout=30)
    assert world.mutations().count("EnqueuePullRequest") == 1


def test_a_plan_resumed_after_the_pr_was_opted_out_is_not_finished(
    world: World, tmp_path: Path
) -> None:
    pr = world.open_pr("feat-optout", {"app.py": "def answer():\n    return 42  # optout\n"})
    world.time_out_in_queue(pr)
    world.gh.webhooks.flush()
    first = start_worker(world, tmp_path, "after_decide")
    first.wait(timeout=60)
    assert first.returncode == -signal.SIGKILL
    world.gh.add_label(world.gh.pull(world.repo, pr.number), "landbot:skip")  # in between
    second = start_worker(world, tmp_path, "after_decide")
    try:
        wait_for(lambda: settled(world))
    finally:
        second.terminate()
        second.wait(timeout=30)
    [drop] = world.store.drops()
    assert (drop.outcome, drop.summary) == (
        "ignored",
        "the pull request has the landbot:skip label",
    )
    assert world.mutations() == [] and world.bot_comments(pr.number) == []
