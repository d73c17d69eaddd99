"""Two ways a fix job's checkout broke in the soak (issue 29, point 6).

- A conflict drop on an overlay whose pristine tree is older than the base: the clone's
  HEAD was the base, the files and index the pristine commit's, so `git checkout` took the
  difference for local changes and aborted on the conflicting path ("checking out failed:
  Aborting").
- A worker SIGKILLed inside a job leaves the job folder mounted (its disk image, an overlay
  on it) and nothing ever removed it: the next job now sweeps it first.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from landbot.git.workspace import Workspaces, mounts_under
from landbot.sim import FakeGitHub
from landbot.sim.state import Repository
from tests.git.test_workspace import GID, OVERLAY_PROBLEM, UID, assert_mode, git, workspaces

# ./scripts/test --fast leaves this module out: its tests start processes (landbot, git,
# the sandbox, servers) and take seconds each.
pytestmark = pytest.mark.slow


def _need_overlay() -> None:
    if OVERLAY_PROBLEM is not None:
        if os.environ.get("CI"):
            pytest.fail(f"CI runs as root and must test the overlay: {OVERLAY_PROBLEM}")
        pytest.skip(OVERLAY_PROBLEM)


@pytest.fixture
def repo(gh: FakeGitHub) -> Repository:
    return gh.create_repo(
        "acme/widgets",
        files={
            "README.md": "# widgets\n",
            "app.py": "ANSWER = 41\n",
            "lib/util.py": "def f():\n    return 1\n",
        },
    )


@pytest.fixture(params=[True, False], ids=["overlay", "full-checkout"])
def overlay(request: pytest.FixtureRequest) -> bool:
    if request.param:
        _need_overlay()
    return bool(request.param)


def test_a_conflict_on_an_older_pristine_tree_is_checked_out_and_left_mid_merge(
    gh: FakeGitHub, repo: Repository, root: Path
) -> None:
    _need_overlay()
    ws = workspaces(gh, root, overlay=True)
    # An earlier job makes the pristine tree at the base of its day.
    other = gh.open_pull_request(repo, head="other", files={"README.md": "# other\n"})
    with ws.job(repo.full_name, other.number, other.head_sha, "main") as first:
        pristine = first.base_sha
    # Then the base moves: one path the PR also changes (the conflict), one it does not.
    pr = gh.open_pull_request(repo, head="feat", files={"app.py": "ANSWER = 42\n"})
    base = gh.push(repo, "main", {"app.py": "ANSWER = 40\n", "lib/util.py": "X = 2\n"})
    with ws.job(repo.full_name, pr.number, pr.head_sha, "main", merge=True) as job:
        assert job.base_sha == base != pristine
        # The job sat on the older pristine tree: the case that aborted.
        assert ws.stats.pristine_trees == 1 and ws.stats.overlay_jobs == 2
        assert job.merge is not None and job.merge.conflicts == ("app.py",)
        assert (job.path / ".git" / "MERGE_HEAD").read_text().strip() == base
        assert "<<<<<<<" in (job.path / "app.py").read_text()
        assert (job.path / "lib/util.py").read_text() == "X = 2\n"  # the base's side
        g = ["-c", f"safe.directory={job.path}"]
        assert git(job.path, *g, "rev-parse", "HEAD") == pr.head_sha
        # The clone's base branch is where it was fetched, not moved by the checkout.
        assert git(job.path, *g, "rev-parse", "refs/heads/main") == base
    # The same PR without merge: the work tree is exactly the PR head, nothing modified.
    with ws.job(repo.full_name, pr.number, pr.head_sha, "main") as plain:
        g = ["-c", f"safe.directory={plain.path}"]
        assert git(plain.path, *g, "status", "--porcelain") == ""
        assert (plain.path / "app.py").read_text() == "ANSWER = 42\n"
        assert (plain.path / "lib/util.py").read_text() == "def f():\n    return 1\n"
    assert_mode(ws, True)


# A process that enters a job and is SIGKILLed inside it (no clean-up of any kind runs);
# with "wait" it prints its job folder and stays in the job until its stdin closes.
_JOB = """
import os, signal, sys
from pathlib import Path
from landbot.git.workspace import Workspaces
ws = Workspaces(Path(sys.argv[1]), git_url=sys.argv[2], uid=65534, gid=65534,
                overlay=sys.argv[6] == "1")
with ws.job(sys.argv[3], int(sys.argv[4]), sys.argv[5], "main") as job:
    print(job.job_dir, flush=True)
    if sys.argv[7] == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    sys.stdin.read()
"""


def _job_process(
    ws: Workspaces, gh: FakeGitHub, repo: Repository, pr: object, overlay: bool, how: str
) -> tuple[subprocess.Popen[str], Path]:
    number, head = getattr(pr, "number"), getattr(pr, "head_sha")  # noqa: B009
    argv = [ws.root, gh.git_url, repo.full_name, number, head, int(overlay), how]
    proc = subprocess.Popen(
        [sys.executable, "-c", _JOB, *map(str, argv)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    assert line, proc.stderr.read() if proc.stderr else ""
    return proc, Path(line)


def test_the_next_job_sweeps_what_a_killed_job_left_and_keeps_a_live_one(
    gh: FakeGitHub, repo: Repository, root: Path, overlay: bool
) -> None:
    pr = gh.open_pull_request(repo, head="feat", files={"app.py": "ANSWER = 42\n"})
    plain = workspaces(gh, root, overlay=overlay)
    killed, stale = _job_process(plain, gh, repo, pr, overlay, "kill")
    assert killed.wait(timeout=60) == -signal.SIGKILL
    # What the dead job left: its folder, mounted (the disk image, an overlay on it).
    assert mounts_under(stale) == [*([stale / "work"] if overlay else []), stale]
    assert plain.image_path(stale).is_file()

    # The control: a Workspaces that does not sweep leaves it there, job after job (what
    # every worker did: nothing called prune).
    with plain.job(repo.full_name, pr.number, pr.head_sha, "main"):
        pass
    assert stale.is_dir() and mounts_under(stale)

    live, alive = _job_process(plain, gh, repo, pr, overlay, "wait")
    try:
        # What a worker gets (from the settings): each job sweeps first.
        settings = SimpleNamespace(
            github=SimpleNamespace(git_url=gh.git_url),
            sandbox=SimpleNamespace(uid=UID, gid=GID),
        )
        ws = Workspaces.from_settings(settings, plain.root)
        ws.overlay = overlay
        assert ws.sweep
        with ws.job(repo.full_name, pr.number, pr.head_sha, "main") as job:
            assert not stale.exists() and mounts_under(stale) == []
            assert not ws.image_path(stale).exists()
            assert (job.path / "app.py").read_text() == "ANSWER = 42\n"
            # Another process's job in flight is kept, its files whole.
            assert (alive / "work" / "app.py").read_text() == "ANSWER = 42\n"
            assert ws.image_path(alive).is_file()
        assert sorted(p.name for p in ws.jobs.iterdir()) == [alive.name]
    finally:
        assert live.stdin is not None
        live.stdin.close()
        live.wait(timeout=60)
    assert live.returncode == 0, live.stderr.read() if live.stderr else ""
    assert list(ws.jobs.iterdir()) == [] and list(ws.images.iterdir()) == []
    assert_mode(ws, overlay)
