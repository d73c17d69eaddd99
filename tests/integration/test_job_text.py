"""Text a job controls reaches the author (issue 29), end to end on the simulated GitHub
with the real sandbox: a verdict that spells a lone surrogate in valid JSON is handed back
(the comment posted, the drop `handed_back` in the store, no job failed) with U+FFFD in
its place; a fix that writes a file name that is not UTF-8 is refused by publish's rule
and the hand-back says so; a run on Actions with two artifacts of landbot's name is
refused and handed back. Ordinary text beyond ASCII passes unchanged each time."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest

from landbot.fixer.artifact import MANIFEST_NAME, VERDICT_NAME, manifest
from landbot.land.comments import HANDBACK_MARKER
from landbot.sim.actions import engine

from .conftest import World, with_command_agent
from .test_actions_fixer import FIXING, ci, dropped_pr, on_actions, until_settled

PLAIN = "é 日本 🎉"
# The verdict file as the agent writes it: JSON escapes only (the sandbox's locale may be
# ASCII), a lone surrogate beside ordinary text and an emoji as a surrogate pair.
VERDICT = (
    '{"verdict": "needs_human", "summary": "the log says caf\\ud800 and '
    + json.dumps(PLAIN)[1:-1]
    + '", "recommendation": "rename caf\\udcff", "reproduced": true}'
)
SURROGATE_AGENT = f"""#!/usr/bin/python3
import os
open(os.environ["LANDBOT_VERDICT_FILE"], "w").write({VERDICT!r})
"""
NON_UTF8_AGENT = r"""#!/usr/bin/python3
import json, os, subprocess

# SQLite only: what these tests prove is about GitHub and the decision, on store paths
# the land loop runs on both stores (conftest.BOTH_STORES).
STORES = ("sqlite",)
src = open("app.py").read()
open("app.py", "w").write(src.replace("return 41", "return 42"))
open(b"notes-caf\xe9.txt", "wb").write(b"fixed\n")
subprocess.run(["git", "add", "-A"], check=True)
subprocess.run(["git", "-c", "user.name=agent", "-c", "user.email=agent@example.com",
                "commit", "-qm", "Fix answer()"], check=True)
json.dump({"verdict": "fixed", "summary": "answer() returned 41", "recommendation": "",
           "reproduced": True}, open(os.environ["LANDBOT_VERDICT_FILE"], "w"))
"""

pytestmark = pytest.mark.usefixtures("needs_bwrap")


def handed_back(world: World, number: int) -> tuple[Any, str]:
    """The one drop, handed back, and its one hand-back comment: nothing failed."""
    [drop] = world.store.drops()
    assert drop.outcome == "handed_back", (drop.outcome, drop.summary)
    assert not world.store.jobs("failed"), world.store.jobs("failed")
    [comment] = [c for c in world.bot_comments(number) if HANDBACK_MARKER in c.body]
    body: str = comment.body
    return drop, body


def test_a_verdict_with_a_lone_surrogate_is_handed_back(world: World, sandbox_dir: Path) -> None:
    assert "\ud800" in json.loads(VERDICT)["summary"]  # the control: valid JSON spells one
    with_command_agent(world, sandbox_dir, SURROGATE_AGENT)
    world.gh.set_checks(world.repo, ci)
    pr = world.open_pr("feat-text", {"app.py": "def answer():\n    return 41\n"})
    world.gh.enqueue(pr, actor="alice")
    world.gh.run_queue(world.repo)
    world.settle()
    drop, body = handed_back(world, pr.number)
    assert f"caf\ufffd and {PLAIN}" in body and "rename caf\ufffd" in body
    assert "@alice" in body  # the author is told
    # The store kept the fixer's words with the decision (what a failed write lost).
    assert f"caf\ufffd and {PLAIN}" in json.dumps(drop.plan, ensure_ascii=False), drop.plan


def test_a_fix_writing_a_path_that_is_not_utf8_is_refused_and_handed_back(
    world: World, sandbox_dir: Path
) -> None:
    with_command_agent(world, sandbox_dir, NON_UTF8_AGENT)
    world.gh.set_checks(world.repo, ci)
    pr = world.open_pr("feat-bytes", {"app.py": "def answer():\n    return 41\n"})
    head = pr.head_sha
    world.gh.enqueue(pr, actor="alice")
    world.gh.run_queue(world.repo)
    world.settle()
    drop, body = handed_back(world, pr.number)
    line = "writes a path that is not UTF-8 (notes-caf\\xe9.txt)"
    assert line in body and line in (drop.summary or ""), drop.summary
    assert world.gh.pull(world.repo, pr.number).head_sha == head  # nothing pushed


def two_of_its_name(gh: Any) -> Any:
    """The runner's upload hook: a crafted result is uploaded under landbot's name too (a
    step of the PR's setup that knows the job id), then landbot's own goes in."""

    def tamper(run: Any, name: str, data: bytes) -> bytes:
        planted = b'{"verdict": "fixed", "summary": "planted", "reproduced": true}'
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w") as z:
            z.writestr(VERDICT_NAME, planted)
            z.writestr(MANIFEST_NAME, manifest({VERDICT_NAME: planted}))
        engine(gh).add_artifact(run.id, name, out.getvalue())
        return data

    return tamper


def test_an_actions_run_with_two_artifacts_of_its_name_is_handed_back(
    world: World, sandbox_dir: Path
) -> None:
    on_actions(world, sandbox_dir, FIXING)
    world.gh.actions_runner.tamper = two_of_its_name(world.gh)
    pr = dropped_pr(world, "feat-twice")
    head = world.gh.pull(world.repo, pr.number).head_sha
    drop = until_settled(world)
    assert drop.outcome == "handed_back", drop.summary
    [run] = {a.run_id for a in engine(world.gh).artifacts.values()}
    assert len(engine(world.gh).artifacts_of(run)) == 2
    line = "uploaded 2 artifacts named landbot-fix-"
    _, body = handed_back(world, pr.number)
    assert line in body and line in (drop.summary or ""), drop.summary
    assert "planted" not in body
    assert world.gh.pull(world.repo, pr.number).head_sha == head  # nothing pushed
