"""Caps per pull request across heads (issue 13), end to end: a command agent that always
says `fixed` with a new commit, and a PR whose checks always fail in the merge group.
Budgets per head never stopped this (every fix is a new head): the push cap does, with one
hand-back naming it, and every push is announced in a new comment."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from landbot.land.comments import FIX_MARKER, HANDBACK_MARKER, STATUS_MARKER
from landbot.land.plan import plan_from
from landbot.sim import CheckScenario

from .conftest import World, with_command_agent

# Always "fixes" it: a new commit each run, whatever the failure.
ALWAYS_FIXED = r"""#!/usr/bin/python3
import json, os, subprocess
with open("notes.txt", "a") as f:
    f.write("one more try\n")
subprocess.run(["git", "add", "notes.txt"], check=True)
subprocess.run(["git", "-c", "user.name=agent", "-c", "user.email=agent@example.com",
                "commit", "-qm", "landbot: fix"], check=True)
json.dump({"verdict": "fixed", "summary": "made the test pass", "recommendation": "",
           "reproduced": True}, open(os.environ["LANDBOT_VERDICT_FILE"], "w"))
"""


pytestmark = pytest.mark.usefixtures("needs_bwrap")


def pushes_to(world: World, branch: str, since: str) -> int:
    """The commits on the PR's branch since the author's head: one per push of a fix."""
    out = subprocess.run(
        ["git", f"--git-dir={world.repo.git_dir}", "rev-list", "--count", f"{since}..{branch}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return int(out)


def run_until_quiet(world: World, number: int, rounds: int = 10) -> int:
    """Let GitHub notice pushes, run the queue, deliver everything to landbot; until the
    PR is neither queued nor dropped again. Returns the rounds it took."""
    for n in range(rounds):
        world.gh.sync()
        removed = world.gh.run_queue(world.repo)
        world.settle()
        if not removed and not world.gh.pull(world.repo, number).auto_merge:
            return n
    raise AssertionError(f"still going after {rounds} rounds: nothing capped it")


def start(world: World, sandbox_dir: Path, max_pushes: int) -> tuple[int, str, str]:
    world.settings.policy.max_pushes_per_pr = max_pushes
    with_command_agent(world, sandbox_dir, ALWAYS_FIXED)
    world.gh.set_checks(world.repo, CheckScenario.failing(), event="merge_group")
    pr = world.open_pr("feat-loop", {"app.py": "def answer():\n    return 41\n"})
    head = pr.head_sha
    world.gh.enqueue(pr, actor="alice")
    assert world.gh.run_queue(world.repo)[-1].reason == "CI_FAILURE"
    world.settle()
    return pr.number, pr.head_ref, head


def test_at_most_the_push_cap_then_one_hand_back_naming_it(world: World, sandbox_dir: Path) -> None:
    number, branch, head = start(world, sandbox_dir, max_pushes=2)
    run_until_quiet(world, number)

    assert pushes_to(world, branch, head) == 2
    drops = sorted(world.store.drops(), key=lambda d: d.id)
    assert [d.outcome for d in drops] == ["fixed", "fixed", "handed_back"], [
        (d.outcome, d.summary) for d in drops
    ]
    comments = world.bot_comments(number)
    # Each push was announced in a new comment (an edit notifies no one)...
    assert sum(FIX_MARKER in c.body for c in comments) == 2
    announced = [a for a in world.store.actions() if a.kind == "announcefix"]
    assert [a.status for a in announced] == ["done", "done"]
    # ...and one hand-back names the cap and how to lift it.
    [handback] = [c for c in comments if HANDBACK_MARKER in c.body]
    assert "max_pushes_per_pr" in handback.body and "@alice" in handback.body
    decision, _, _ = plan_from(drops[-1].plan or {})
    assert ("cap_reached", "pushes") in [
        (getattr(a, "topic", None), getattr(a, "cap", None)) for a in decision.actions
    ]
    assert sum(STATUS_MARKER in c.body for c in comments) == 1  # edited, not doubled

    # The author queues it again unchanged: past the same cap, nothing reset it, so no
    # second mention, no fixer run, no push.
    world.gh.enqueue(world.gh.pull(world.repo, number), actor="alice")
    assert world.gh.run_queue(world.repo)[-1].reason == "CI_FAILURE"
    world.settle()
    latest = max(world.store.drops(), key=lambda d: d.id)
    assert latest.outcome == "ignored" and "again" in (latest.summary or "")
    assert sum(HANDBACK_MARKER in c.body for c in world.bot_comments(number)) == 1
    assert pushes_to(world, branch, head) == 2

    # A push of the author's own resets the caps: landbot fixes (and pushes) again.
    world.gh.push(world.repo, branch, {"README.md": "mine\n"}, author="alice")
    world.gh.enqueue(world.gh.pull(world.repo, number), actor="alice")
    world.gh.run_queue(world.repo)
    world.settle()
    assert pushes_to(world, branch, head) == 4  # the author's commit and a fix on it


def test_control_a_raised_push_cap_lets_more_pushes_through(
    world: World, sandbox_dir: Path
) -> None:
    number, branch, head = start(world, sandbox_dir, max_pushes=3)
    run_until_quiet(world, number)
    assert pushes_to(world, branch, head) == 3
    comments = world.bot_comments(number)
    assert sum(FIX_MARKER in c.body for c in comments) == 3
    assert sum(HANDBACK_MARKER in c.body for c in comments) == 1
