"""The `actions` fixer backend end to end: landbot's webhook endpoint and worker, the
simulated GitHub playing Actions (its runner runs the shipped caller and reusable workflow,
with the real `landbot fixer run` and its sandbox), a genuine failure dispatched to
`landbot-fix.yml`, fixed by a command agent on the runner, the artifact collected and
checked on the host, pushed, auto-merge armed, merged; hostile artifacts refused and
handed back; a run that never finishes failed after the deadline."""

from __future__ import annotations

import io
import json
import stat
import time
import zipfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from landbot.land.comments import HANDBACK_MARKER
from landbot.pipeline.process import Lander
from landbot.pipeline.wiring import make_fixer
from landbot.pipeline.worker import Worker
from landbot.sim import CheckScenario
from landbot.sim.scenarios import CheckContext

from .conftest import World

ROOT = Path(__file__).resolve().parents[2]
CALLER = ROOT / "config" / "landbot-fix.yml"
COMMIT = "git -c user.name=agent -c user.email=agent@example.com commit -qam"
FIXED = '{"verdict": "fixed", "summary": "answer() returned 41", "reproduced": true}'
FIXING = f"sed -i 's/return 41/return 42/' app.py && {COMMIT} 'Fix answer()'"
# Fixes the bug, and edits the repository's CI as well: a protected path.
TOUCHES_CI = (
    "sed -i 's/return 41/return 42/' app.py && mkdir -p .github/workflows && "
    f"echo 'name: pwned' > .github/workflows/ci.yml && git add -A && {COMMIT} 'Fix'"
)
# A commit that does not descend from the head: a new root with the fix.
ORPHAN = (
    "git checkout -q --orphan other && sed -i 's/return 41/return 42/' app.py && "
    f"git add -A && {COMMIT} 'Unrelated root'"
)

pytestmark = pytest.mark.usefixtures("needs_bwrap")


def ci(ctx: CheckContext) -> CheckScenario:
    """The project's CI, honestly: it fails while app.py has the bug."""
    if "return 41" in (ctx.read_file("app.py") or ""):
        return CheckScenario.failing(
            output=("FAILED tests/test_app.py::test_answer - assert 41 == 42",)
        )
    return CheckScenario.passing()


def caller(agent: str) -> str:
    """config/landbot-fix.yml as a repository commits it, with a command agent, no setup."""
    doc = yaml.safe_load(CALLER.read_text())
    with_ = doc["jobs"]["fix"]["with"]
    for key in ("setup", "agent-package"):
        with_.pop(key, None)
    with_["agent"] = "command"
    with_["agent-command"] = json.dumps(["sh", "-c", f"{agent} && printf '%s' '{FIXED}' "
                                         '> "$LANDBOT_VERDICT_FILE"'])  # fmt: skip
    text: str = yaml.safe_dump(doc, sort_keys=False)
    return text


def on_actions(world: World, state: Path, agent: str, *, deadline_minutes: float = 5) -> None:
    """Switch the World to `[fixer] backend = "actions"` with the caller committed."""
    world.gh.commit_file(world.repo, ".github/workflows/landbot-fix.yml", caller(agent),
                         message="landbot fix")  # fmt: skip
    world.gh.reusable_workflows["OWNER/landbot"] = ROOT
    world.gh.actions_runner.work_root = state / "runners"
    f = world.settings.fixer
    f.backend = "actions"
    f.state_dir = state / "state"
    f.actions_deadline_minutes = deadline_minutes
    f.actions_poll_seconds = 0.5
    lander = Lander(world.settings, world.store, world.client, fixer_enabled=True)
    world.lander = lander
    world.worker = Worker(
        world.store,
        lambda: lander,
        fixer=make_fixer(world.settings, lambda: world.client, world.store),
        idle_sleep=0.05,
    )


def until_settled(world: World, timeout: float = 240) -> Any:
    """Deliver webhooks and work until the one drop has an outcome (the fix job waits in
    the store between looks; the run's webhook or the poll wakes it)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        world.settle()
        [drop] = world.store.drops()
        if drop.outcome != "pending":
            return drop
        time.sleep(0.2)
    raise AssertionError(f"the drop did not settle: {world.store.dispatches()}")


def dropped_pr(world: World, branch: str) -> Any:
    world.gh.set_checks(world.repo, ci)
    pr = world.open_pr(branch, {"app.py": "def answer():\n    return 41\n"})
    world.gh.enqueue(pr, actor="alice")
    assert world.gh.run_queue(world.repo)[-1].reason == "CI_FAILURE"
    return pr


def handback(world: World, number: int) -> str:
    [comment] = [c for c in world.bot_comments(number) if HANDBACK_MARKER in c.body]
    body: str = comment.body
    return body


def test_a_genuine_failure_is_fixed_on_a_runner_published_and_merges(
    world: World, sandbox_dir: Path
) -> None:
    on_actions(world, sandbox_dir, FIXING)
    pr = dropped_pr(world, "feat-bug")
    drop = until_settled(world)
    assert drop.outcome == "fixed", drop.summary
    [dispatch] = world.store.dispatches()
    assert dispatch.state == "done" and dispatch.run_id is not None
    assert dispatch.outcome == "collected: fixed"
    pr = world.gh.pull(world.repo, pr.number)
    assert pr.head_sha != drop.head_sha and pr.auto_merge is not None
    assert world.mutations().count("EnablePullRequestAutoMerge") == 1
    world.gh.sync()
    world.gh.run_queue(world.repo)
    assert world.gh.pull(world.repo, pr.number).merged


def symlinked(run: Any, name: str, data: bytes) -> bytes:
    """The runner's zip with its bundle a symbolic link (to a host secret): what a runner
    the PR's setup took over could upload."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w") as dst:
        names = [info.filename for info in src.infolist()]
        assert "result.bundle" in names, names  # the control: the fix was there to replace
        for info in src.infolist():
            if info.filename != "result.bundle":
                dst.writestr(info, src.read(info))
        link = zipfile.ZipInfo("result.bundle")
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        dst.writestr(link, "/etc/shadow")
    return out.getvalue()


@pytest.mark.parametrize(
    ("agent", "tamper", "refusal"),
    [
        (FIXING, symlinked, "symbolic link"),
        (TOUCHES_CI, None, ".github/workflows/ci.yml"),
        (ORPHAN, None, "descend"),
    ],
    ids=["symlink", "workflow-file", "not-descending"],
)
def test_a_hostile_artifact_is_refused_and_handed_back(
    world: World, sandbox_dir: Path, agent: str, tamper: Any, refusal: str
) -> None:
    on_actions(world, sandbox_dir, agent)
    world.gh.actions_runner.tamper = tamper
    pr = dropped_pr(world, "feat-hostile")
    head = world.gh.pull(world.repo, pr.number).head_sha
    drop = until_settled(world)
    assert drop.outcome == "handed_back", drop.summary
    assert refusal in (drop.summary or ""), drop.summary
    assert world.gh.pull(world.repo, pr.number).head_sha == head  # nothing pushed
    assert refusal in handback(world, pr.number)


def test_a_run_that_never_finishes_fails_after_the_deadline(
    world: World, sandbox_dir: Path
) -> None:
    on_actions(world, sandbox_dir, FIXING, deadline_minutes=0.1)  # six seconds
    world.gh.actions_runner.mode = "hang"
    pr = dropped_pr(world, "feat-hang")
    started = time.monotonic()
    drop = until_settled(world)
    assert time.monotonic() - started >= 5
    assert drop.outcome == "handed_back", drop.summary
    assert "did not finish in 0.1 minutes" in (drop.summary or "")
    assert "did not finish" in handback(world, pr.number)
