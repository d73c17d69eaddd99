"""Issue 17's acceptance through `landbot serve`: a real serve process (its webhook
endpoint and its workers) with `[fixer] backend = "actions"` from its environment, the
simulated GitHub served beside it playing Actions (its runner runs the shipped caller and
reusable workflow with the real `landbot fixer run` and sandbox), its webhooks pointed at
serve's /webhook. A genuine failure is dispatched to `landbot-fix.yml`, fixed by a command
agent on the runner, collected, checked, pushed, auto-merge armed, merged; a hostile
artifact is refused and handed back; a run that never finishes is failed after the
deadline and cancelled on GitHub, freeing its runner.

The last test drives landbot's client's cancel against the sim directly (202 for a run in
progress, 409 for a finished one). One serve for the module, one PR per case. The tests
read serve's store (as `landbot status` does) and the sim's state, always with a bounded
wait.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from landbot.github.errors import GitHubError
from landbot.land.comments import HANDBACK_MARKER
from landbot.sim import FakeGitHub, FakeGitHubServer, git
from landbot.sim.actions import engine
from landbot.store import Store

from .conftest import FILES, REPO, SECRET, World
from .test_actions_fixer import FIXING, ci, symlinked
from .test_actions_fixer import caller as caller_with
from .test_hostile_fix import free_port, open_folder, wait_healthy

LANDBOT = str(Path(sys.executable).parent / "landbot")
ROOT = Path(__file__).resolve().parents[2]
BOT = "landbot-bot"
DEADLINE_MINUTES = 0.25  # fifteen seconds: the hung run's; a healthy run takes a few
SETTLE = 90.0  # a hang guard, not a timing assertion

pytestmark = pytest.mark.usefixtures("needs_bwrap")


@dataclass
class Served:
    gh: FakeGitHub
    server: FakeGitHubServer
    repo: Any
    store: Store
    serve_log: Path

    def wait_for(self, what: str, ready: Callable[[], Any], timeout: float = SETTLE) -> Any:
        """`ready()` once it is truthy; fails naming `what` (with serve's log) otherwise."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            got = ready()
            if got:
                return got
            time.sleep(0.2)
        raise AssertionError(f"{what} did not happen\n" + self.serve_log.read_text()[-4000:])

    def drop_of(self, number: int) -> Any:
        drops = [d for d in self.store.drops(REPO) if d.pr == number]
        return drops[0] if drops else None

    def settled(self, number: int) -> Any:
        """The drop of `number` once it has an outcome (and its hand-back, if any, posted)."""

        def done() -> Any:
            d = self.drop_of(number)
            if d is None or d.outcome == "pending":
                return None
            return d if d.outcome != "handed_back" or self.handbacks(number) else None

        return self.wait_for(f"the drop of #{number} settling", done)

    def handbacks(self, number: int) -> list[str]:
        return [
            c.body
            for c in self.gh.comments_on(self.repo, number)
            if c.author == BOT and HANDBACK_MARKER in c.body
        ]

    def drop_pr(self, branch: str) -> Any:
        """A PR with the bug, queued: the merge queue drops it for CI (a genuine failure)."""
        pr = self.gh.open_pull_request(
            self.repo, head=branch, files={"app.py": "def answer():\n    return 41\n"},
            author="alice",
        )  # fmt: skip
        self.gh.enqueue(pr, actor="alice")
        assert self.gh.run_queue(self.repo)[-1].reason == "CI_FAILURE"
        return pr

    def levels(self, event: str, number: int) -> list[str]:
        """The levels of serve's JSON log lines `event` about PR `number`, in order."""
        found = []
        for line in self.serve_log.read_text().splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if isinstance(rec, dict) and rec.get("event") == event and rec.get("pr") == number:
                found.append(str(rec.get("level")))
        return found

    def run_of(self, number: int) -> Any:
        """The sim's workflow run of the fix of #`number` (found through serve's store)."""
        drop = self.drop_of(number)
        mine = [d for d in self.store.dispatches() if drop is not None and d.drop_id == drop.id]
        if not mine or mine[-1].run_id is None:
            return None
        return self.gh.workflow_runs.get(mine[-1].run_id)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    if os.geteuid() != 0:
        pytest.skip("the sandbox on the simulated runner drops to its uid: needs root")
    tmp = tmp_path_factory.mktemp("actions-serve")
    work = open_folder("/tmp", "landbot-actions-serve-")
    gh = FakeGitHub(tmp / "github", webhook_secret=SECRET)
    repo = gh.create_repo(REPO, files=FILES)
    token = gh.create_token(BOT)
    gh.add_collaborator(repo, BOT, "write")
    gh.add_collaborator(repo, "alice", "write")
    gh.set_checks(repo, ci)
    gh.commit_file(repo, ".github/workflows/landbot-fix.yml", caller_with(FIXING),
                   message="landbot fix")  # fmt: skip
    gh.reusable_workflows["OWNER/landbot"] = ROOT
    gh.actions_runner.work_root = work / "runners"
    db = tmp / "landbot.db"
    with FakeGitHubServer(gh) as server:
        port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("LANDBOT_")}
        env.update(server.settings_env(token=token))
        env.update(
            LANDBOT_DATABASE_URL=f"sqlite:///{db}",
            LANDBOT_REPOS=json.dumps([REPO]),
            LANDBOT_FIXER__BACKEND="actions",
            LANDBOT_FIXER__ACTIONS_DEADLINE_MINUTES=str(DEADLINE_MINUTES),
            LANDBOT_FIXER__ACTIONS_POLL_SECONDS="0.5",
            LANDBOT_FIXER__STATE_DIR=str(work / "state"),
            LANDBOT_WORKER__IDLE_SLEEP="0.1",
            LANDBOT_LOG_LEVEL="debug",  # the later looks at a waiting job log at DEBUG
        )
        serve_log = tmp / "serve.log"
        with open(serve_log, "wb") as log:
            proc = subprocess.Popen(
                [LANDBOT, "serve", "--port", str(port)],
                env=env,
                cwd=tmp,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        store = Store.open(f"sqlite:///{db}")
        try:
            url = f"http://127.0.0.1:{port}"
            wait_healthy(url, proc, serve_log)
            gh.webhooks.url = f"{url}/webhook"
            yield Served(gh, server, repo, store, serve_log)
        finally:
            gh.webhooks.flush()
            os.killpg(proc.pid, 15)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, 9)
                proc.wait()
            store.close()
            subprocess.run(["rm", "-rf", str(work)], check=False)


def test_a_genuine_failure_is_fixed_on_a_runner_through_serve_and_merges(
    served: Served,
) -> None:
    s = served
    s.gh.actions_runner.mode, s.gh.actions_runner.tamper = "run", None
    pr = s.drop_pr("feat-bug")
    head = s.gh.pull(s.repo, pr.number).head_sha
    drop = s.settled(pr.number)
    assert drop.outcome == "fixed", drop.summary
    run = s.run_of(pr.number)
    assert run is not None and run.event == "workflow_dispatch", run
    assert (run.status, run.conclusion) == ("completed", "success")
    assert run.path.endswith("landbot-fix.yml"), run.path
    armed = s.wait_for("auto-merge armed", lambda: s.gh.pull(s.repo, pr.number).auto_merge)
    assert armed is not None
    pushed = s.gh.pull(s.repo, pr.number).head_sha
    assert pushed != head
    assert b"return 42" in (git.read_file(s.repo.require_git(), pushed, "app.py") or b"")
    s.gh.sync()
    s.gh.run_queue(s.repo)
    assert s.gh.pull(s.repo, pr.number).merged
    assert s.levels("fixer started", pr.number)[0] == "info"


def test_a_hostile_artifact_is_refused_through_serve_and_handed_back(served: Served) -> None:
    s = served
    s.gh.actions_runner.mode, s.gh.actions_runner.tamper = "run", symlinked
    try:
        pr = s.drop_pr("feat-hostile")
        head = s.gh.pull(s.repo, pr.number).head_sha
        drop = s.settled(pr.number)
    finally:
        s.gh.actions_runner.tamper = None
    assert drop.outcome == "handed_back", drop.summary
    assert "symbolic link" in (drop.summary or ""), drop.summary
    run = s.run_of(pr.number)
    # The control: the run itself succeeded (the fix was there); only its artifact was bad.
    assert run is not None and run.conclusion == "success"
    assert s.gh.pull(s.repo, pr.number).head_sha == head  # nothing pushed
    assert any("symbolic link" in b for b in s.handbacks(pr.number))


def test_a_run_that_never_finishes_fails_after_the_deadline_and_is_cancelled(
    served: Served,
) -> None:
    s = served
    s.gh.actions_runner.mode, s.gh.actions_runner.tamper = "hang", None
    try:
        pr = s.drop_pr("feat-hang")
        head = s.gh.pull(s.repo, pr.number).head_sha
        # Hung: in progress until someone cancels it (the sim's "hang" never ends alone).
        run = s.wait_for("the fix run starting", lambda: s.run_of(pr.number))
        s.wait_for("the run in progress", lambda: s.run_of(pr.number).status == "in_progress")
        started = time.monotonic()
        drop = s.settled(pr.number)
    finally:
        s.gh.actions_runner.mode = "run"
    assert time.monotonic() - started >= DEADLINE_MINUTES * 60 - 5
    assert drop.outcome == "handed_back", drop.summary
    assert "did not finish in 0.25 minutes" in (drop.summary or ""), drop.summary
    assert any("did not finish" in b for b in s.handbacks(pr.number))
    assert s.gh.pull(s.repo, pr.number).head_sha == head
    # landbot cancelled it on GitHub: the runner is free.
    s.wait_for(
        "the hung run cancelled",
        lambda: (
            (s.gh.workflow_runs[run.id].status, s.gh.workflow_runs[run.id].conclusion)
            == ("completed", "cancelled")
        ),
        timeout=30,
    )
    assert "fix run cancelled" in s.serve_log.read_text()
    # The job was looked at again and again while it waited; its start was logged at INFO
    # once (the dispatch), the later looks at DEBUG.
    started_levels = s.levels("fixer started", pr.number)
    assert len(started_levels) >= 2, started_levels  # the control: it was looked at again
    assert started_levels[0] == "info" and set(started_levels[1:]) == {"debug"}, started_levels
    assert s.levels("fix dispatched", pr.number) == ["info"]


def test_a_head_that_moved_while_the_run_ran_gets_nothing_pushed(served: Served) -> None:
    s = served
    s.gh.actions_runner.mode, s.gh.actions_runner.tamper = "hold_in_progress", None
    try:
        pr = s.drop_pr("feat-moved")
        run = s.wait_for("the fix run starting", lambda: s.run_of(pr.number))
        s.wait_for("the run in progress", lambda: s.run_of(pr.number).status == "in_progress")
        # The author pushes meanwhile; then the run finishes with a fix of the old head.
        theirs = s.gh.push(s.repo, "feat-moved", {"README.md": "mine\n"}, author="alice")
        s.gh.webhooks.flush()
        engine(s.gh).release(run.id)
        done = engine(s.gh).wait(run.id, 60)
        drop = s.settled(pr.number)
    finally:
        s.gh.actions_runner.mode = "run"
    # The control is the first test: the same run, the head unmoved, is pushed.
    assert done.conclusion == "success"
    assert drop.outcome == "ignored" and "head moved" in (drop.summary or ""), drop.summary
    assert s.gh.pull(s.repo, pr.number).head_sha == theirs  # nothing pushed on top


HANGS = """
name: hangs
run-name: "hangs ${{ inputs.job-id }}"
on:
  workflow_dispatch:
    inputs:
      job-id: {type: string, required: true}
jobs:
  work:
    runs-on: ubuntu-latest
    steps:
      - run: echo working
"""


def test_the_clients_cancel_frees_a_hung_run_and_a_finished_run_is_refused(
    world: World,
) -> None:
    """landbot's client against the sim: 202 for a run in progress (it ends cancelled), a
    GitHubError 409 for one that has completed (the backend logs it and fails the job)."""
    world.gh.commit_file(world.repo, ".github/workflows/hangs.yml", HANGS, message="hangs")
    world.gh.actions_runner.mode = "hang"
    sent = world.client.dispatch_workflow(REPO, "hangs.yml", "main", {"job-id": "k1"})
    assert sent.run_id is not None
    run_id = sent.run_id
    end = time.monotonic() + 10
    while world.gh.workflow_runs[run_id].status != "in_progress":
        assert time.monotonic() < end, "the hung run never started"
        time.sleep(0.05)
    assert world.client.workflow_run(REPO, run_id).status == "in_progress"
    world.client.cancel_workflow_run(REPO, run_id)
    run = engine(world.gh).wait(run_id, 10)
    assert (run.status, run.conclusion) == ("completed", "cancelled")
    with pytest.raises(GitHubError) as refused:  # the control: a finished run is refused
        world.client.cancel_workflow_run(REPO, run_id)
    assert refused.value.status == 409
