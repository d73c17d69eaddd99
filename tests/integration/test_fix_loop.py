"""A genuine failure goes to the fixer: a command agent in the real sandbox repairs the PR,
landbot publishes the commit to the PR's branch, arms auto-merge, and the PR merges."""

from __future__ import annotations

from pathlib import Path

import pytest

from landbot.land.comments import FIX_MARKER, HANDBACK_MARKER, STATUS_MARKER
from landbot.sim import CheckScenario
from landbot.sim.scenarios import CheckContext

from .conftest import World, with_command_agent

# The agent: a plain script, run inside the sandbox with the checkout as its working
# directory. It fixes the one-line bug, proves the fix, commits, and writes its verdict.
FIXING_AGENT = r"""#!/usr/bin/python3
import json, os, subprocess
src = open("app.py").read()
open("app.py", "w").write(src.replace("return 41", "return 42"))
subprocess.run(["git", "-c", "user.name=agent", "-c", "user.email=agent@example.com",
                "commit", "-qam", "Fix answer()"], check=True)
json.dump({"verdict": "fixed", "summary": "answer() returned 41", "recommendation": "",
           "reproduced": True}, open(os.environ["LANDBOT_VERDICT_FILE"], "w"))
"""
GIVING_UP_AGENT = r"""#!/usr/bin/python3
import json, os

# SQLite only: what these tests prove is about GitHub and the decision, on store paths
# the land loop runs on both stores (conftest.BOTH_STORES).
STORES = ("sqlite",)
json.dump({"verdict": "needs_human", "summary": "the test and the code disagree",
           "recommendation": "decide whether answer() should be 41 or 42",
           "reproduced": True}, open(os.environ["LANDBOT_VERDICT_FILE"], "w"))
"""


def ci(ctx: CheckContext) -> CheckScenario:
    """The project's CI, honestly: it fails while app.py has the bug."""
    if "return 41" in (ctx.read_file("app.py") or ""):
        return CheckScenario.failing(
            output=("FAILED tests/test_app.py::test_answer - assert 41 == 42",)
        )
    return CheckScenario.passing()


pytestmark = pytest.mark.usefixtures("needs_bwrap")


def test_a_genuine_failure_is_fixed_published_and_merges(world: World, sandbox_dir: Path) -> None:
    with_command_agent(world, sandbox_dir, FIXING_AGENT)
    world.gh.set_checks(world.repo, ci)
    pr = world.open_pr("feat-bug", {"app.py": "def answer():\n    return 41\n"})
    world.gh.enqueue(pr, actor="alice")
    assert world.gh.run_queue(world.repo)[-1].reason == "CI_FAILURE"
    world.settle()
    [drop] = world.store.drops()
    assert drop.outcome == "fixed", drop.summary
    pr = world.gh.pull(world.repo, pr.number)
    assert pr.head_sha != drop.head_sha and pr.auto_merge is not None
    assert world.mutations().count("EnablePullRequestAutoMerge") == 1
    [status] = [c for c in world.bot_comments(pr.number) if STATUS_MARKER in c.body]
    assert "pushed a fix" in status.body
    # The push is announced in a comment of its own (an edit would notify no one).
    [announced] = [c for c in world.bot_comments(pr.number) if FIX_MARKER in c.body]
    assert (status.body.count("@"), len(world.bot_comments(pr.number))) == (0, 2)
    assert announced.body.count(f"@{pr.author}") == 1
    world.gh.sync()
    world.gh.run_queue(world.repo)
    assert world.gh.pull(world.repo, pr.number).merged


def test_needs_human_is_handed_back_with_the_recommendation(
    world: World, sandbox_dir: Path
) -> None:
    with_command_agent(world, sandbox_dir, GIVING_UP_AGENT)
    world.gh.set_checks(world.repo, ci)
    pr = world.open_pr("feat-unsure", {"app.py": "def answer():\n    return 41\n"})
    world.gh.enqueue(pr, actor="alice")
    world.gh.run_queue(world.repo)
    world.settle()
    [drop] = world.store.drops()
    assert drop.outcome == "handed_back"
    [handback] = [c for c in world.bot_comments(pr.number) if HANDBACK_MARKER in c.body]
    assert "decide whether answer() should be 41 or 42" in handback.body
    assert world.gh.pull(world.repo, pr.number).head_sha == drop.head_sha  # nothing pushed
