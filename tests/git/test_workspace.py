"""The fixer's workspaces: a cached mirror per repository, one work tree per job.

Real git throughout: the remotes are the simulated GitHub's bare repositories (file://
URLs), plus one served over HTTP by `git http-backend` to prove a token reaches git.
"""

from __future__ import annotations

import base64
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from landbot.git.workspace import (
    DEFAULT_DISK_MB,
    JOB_REFS,
    LANDBOT,
    WorkspaceError,
    Workspaces,
    auth_config,
    mount_overlay,
    mounts_under,
)
from landbot.sim import FakeGitHub
from landbot.sim.state import Repository

# ./scripts/test --fast leaves this module out: its tests start processes (landbot, git,
# the sandbox, servers) and take seconds each.
pytestmark = pytest.mark.slow

UID = GID = 65534
QUEST = "# [S] Ship it\n\n## Required\n\n- [Design](design.md)\n"


@pytest.fixture
def repo(gh: FakeGitHub) -> Repository:
    return gh.create_repo(
        "acme/widgets",
        files={
            "README.md": "# widgets\n",
            "app.py": "ANSWER = 41\n",
            "lib/util.py": "def f():\n    return 1\n",
            "quest/ship.md": QUEST,
            "quest/design.md": "# [M] Design\n",
        },
    )


def workspaces(
    gh: FakeGitHub,
    root: Path,
    git_url: str | None = None,
    *,
    overlay: bool | None = None,
    disk_mb: int = DEFAULT_DISK_MB,
) -> Workspaces:
    return Workspaces(
        root / "state",
        git_url=git_url or gh.git_url,
        uid=UID,
        gid=GID,
        overlay=overlay,
        disk_mb=disk_mb,
    )


def _overlay_problem() -> str | None:
    """Why this host cannot mount overlayfs, or None."""
    probe = Path(tempfile.mkdtemp(prefix="landbot-ovl-", dir="/tmp"))
    try:
        for name in ("lower", "upper", "scratch", "merged"):
            (probe / name).mkdir()
        mount_overlay(probe / "lower", probe / "upper", probe / "scratch", probe / "merged")
    except OSError as exc:
        return f"overlayfs cannot be mounted here: {exc.strerror}"
    finally:
        subprocess.run(["umount", str(probe / "merged")], capture_output=True)
        shutil.rmtree(probe, ignore_errors=True)
    return None


OVERLAY_PROBLEM = _overlay_problem()


@pytest.fixture(params=[True, False], ids=["overlay", "full-checkout"])
def overlay(request: pytest.FixtureRequest) -> bool:
    """Both ways a job's files are laid out; each test asserts which one ran."""
    if request.param and OVERLAY_PROBLEM is not None:
        if os.environ.get("CI"):
            pytest.fail(f"CI runs as root and must test the overlay: {OVERLAY_PROBLEM}")
        pytest.skip(OVERLAY_PROBLEM)
    return bool(request.param)


def assert_mode(ws: Workspaces, overlay: bool) -> None:
    assert ws.stats.overlay_jobs == (ws.stats.jobs if overlay else 0), ws.stats


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


def as_sandbox_uid(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """Run a command as the sandbox uid, unconfined (what the agent's git will meet)."""
    return subprocess.run(
        ["setpriv", f"--reuid={UID}", f"--regid={GID}", "--clear-groups", "--", *argv],
        cwd=cwd,
        env={"PATH": "/usr/bin:/bin", "HOME": "/tmp", "GIT_CONFIG_NOSYSTEM": "1"},
        capture_output=True,
        text=True,
    )


def inodes(folder: Path) -> dict[str, int]:
    return {str(p.relative_to(folder)): p.stat().st_ino for p in folder.rglob("*") if p.is_file()}


# --- the mirror -----------------------------------------------------------------------


def test_mirror_is_cloned_once_and_reused(gh: FakeGitHub, repo: Repository, root: Path) -> None:
    pr = gh.open_pull_request(repo, head="feat", files={"app.py": "ANSWER = 42\n"})
    ws = workspaces(gh, root)
    with ws.job(repo.full_name, pr.number, pr.head_sha, "main") as job:
        mirror = job.mirror
    assert (ws.stats.clones, ws.stats.fetches) == (1, 0)
    objects = inodes(mirror / "objects")
    assert objects

    # A second job, and a new process's Workspaces over the same folder: fetch only.
    with ws.job(repo.full_name, pr.number, pr.head_sha, "main"):
        pass
    again = workspaces(gh, root)
    newer = gh.push(repo, "feat", {"app.py": "ANSWER = 43\n"})
    with again.job(repo.full_name, pr.number, newer, "main") as job:
        assert git(job.path, "-c", f"safe.directory={job.path}", "rev-parse", "HEAD") == newer
    assert (ws.stats.clones, ws.stats.fetches) == (1, 1)
    assert (again.stats.clones, again.stats.fetches) == (0, 1)
    # Every object file of the first clone is still the same file: nothing was re-cloned.
    after = inodes(mirror / "objects")
    assert {k: after.get(k) for k in objects} == objects
    assert len(after) > len(objects)  # the new push arrived by fetch


def test_the_mirror_is_root_only_and_outside_the_work_tree(
    gh: FakeGitHub, repo: Repository, root: Path
) -> None:
    pr = gh.open_pull_request(repo, head="feat", files={"app.py": "ANSWER = 42\n"})
    ws = workspaces(gh, root)
    with ws.job(repo.full_name, pr.number, pr.head_sha, "main") as job:
        assert not job.mirror.is_relative_to(job.path)
        assert stat.S_IMODE(ws.mirrors.stat().st_mode) == 0o700
        for p in [job.mirror, *job.mirror.rglob("*")]:
            assert p.lstat().st_uid == 0, p
        # The sandbox uid cannot reach the mirror at all (the control: it can reach the tree).
        assert as_sandbox_uid(Path("/"), "ls", str(job.mirror)).returncode != 0
        assert as_sandbox_uid(Path("/"), "ls", str(job.path)).returncode == 0


def test_a_failed_first_clone_leaves_no_mirror(
    gh: FakeGitHub, repo: Repository, root: Path
) -> None:
    ws = workspaces(gh, root)
    with (
        pytest.raises(WorkspaceError, match="refs/pull/99/head"),
        ws.job(repo.full_name, 99, "0" * 40, "main"),
    ):
        pass
    assert not ws.mirror_path(repo.full_name).exists()
    assert list(ws.jobs.iterdir()) == []
    # The control: a pull request that exists clones fine afterwards.
    pr = gh.open_pull_request(repo, head="feat", files={"app.py": "ANSWER = 42\n"})
    with ws.job(repo.full_name, pr.number, pr.head_sha, "main"):
        pass
    assert ws.stats.clones == 1


# --- the job's work tree --------------------------------------------------------------


def test_work_tree_is_at_the_pr_head_and_owned_by_the_sandbox_uid(
    gh: FakeGitHub, repo: Repository, root: Path, overlay: bool
) -> None:
    pr = gh.open_pull_request(repo, head="feat", files={"app.py": "ANSWER = 42\n"})
    gh.push(repo, "main", {"README.md": "# widgets, moved on\n"})
    ws = workspaces(gh, root, overlay=overlay)
    with ws.job(repo.full_name, pr.number, pr.head_sha, "main") as job:
        assert (job.path / "app.py").read_text() == "ANSWER = 42\n"
        assert (job.path / "README.md").read_text() == "# widgets\n"
        if overlay:
            # The job's own layer holds its .git and only the files that differ from the
            # pristine tree (the base): nothing else was written or copied up.
            upper = job.job_dir / "upper"
            written = {
                str(p.relative_to(upper))
                for p in upper.rglob("*")
                if p.is_file() and ".git" not in p.relative_to(upper).parts
            }
            assert written == {"app.py", "README.md"}
        assert job.base_sha == gh.branch_sha(repo, "main")
        assert job.merge is None and job.needs_agent
        for p in [job.path, *job.path.rglob("*")]:
            st = p.lstat()
            if st.st_nlink > 1 and not p.is_dir():
                # Object files hard-linked from the mirror stay root's and read-only.
                assert (st.st_uid, stat.S_IMODE(st.st_mode) & 0o222) == (0, 0), p
            else:
                assert (st.st_uid, st.st_gid) == (UID, GID), p
        # git accepts the tree as the sandbox uid and can commit in it.
        head = as_sandbox_uid(job.path, "git", "rev-parse", "HEAD")
        assert head.stdout.strip() == pr.head_sha, head.stderr
        # The index matches the chowned files without a refresh (diff-files does none).
        assert as_sandbox_uid(job.path, "git", "diff-files", "--quiet").returncode == 0
        assert as_sandbox_uid(job.path, "git", "status", "--porcelain").stdout == ""
        assert as_sandbox_uid(job.path, "git", "rev-parse", "origin/main").stdout.strip() == (
            job.base_sha
        )
        (job.path / "app.py").write_text("ANSWER = 42  # fixed\n")
        os.chown(job.path / "app.py", UID, GID)
        done = as_sandbox_uid(job.path, "git", "commit", "-qam", "Fix")
        assert done.returncode == 0, done.stderr
        author = as_sandbox_uid(job.path, "git", "log", "-1", "--format=%an <%ae>").stdout
        assert author.strip() == f"{LANDBOT.name} <{LANDBOT.email}>"
        # The commit stayed in the job's own repository: the mirror did not get it.
        new = as_sandbox_uid(job.path, "git", "rev-parse", "HEAD").stdout.strip()
        assert (
            subprocess.run(
                ["git", f"--git-dir={job.mirror}", "cat-file", "-e", new], capture_output=True
            ).returncode
            != 0
        )
        if overlay:
            # Nor did the shared pristine tree under the overlay get the job's writes, and
            # the sandbox uid cannot reach it on the host.
            (pristine,) = [p for p in ws.trees_path(repo.full_name).iterdir() if p.is_dir()]
            assert pristine.name == job.base_sha
            assert (pristine / "app.py").read_text() == "ANSWER = 41\n"
            assert as_sandbox_uid(Path("/"), "cat", str(pristine / "app.py")).returncode != 0
    assert_mode(ws, overlay)


def test_work_tree_is_removed_after_the_job_even_when_it_raises(
    gh: FakeGitHub, repo: Repository, root: Path, overlay: bool
) -> None:
    pr = gh.open_pull_request(repo, head="feat", files={"app.py": "ANSWER = 42\n"})
    ws = workspaces(gh, root, overlay=overlay)
    with (
        pytest.raises(RuntimeError, match="agent crashed"),
        ws.job(repo.full_name, pr.number, pr.head_sha, "main") as job,
    ):
        path = job.path
        assert path.is_dir()
        # The job leaves a mess the sandbox uid could make: read-only folders, a link.
        (path / "deep" / "er").mkdir(parents=True)
        (path / "deep" / "er" / "f").write_text("x")
        os.chmod(path / "deep" / "er", 0o500)
        (path / "escape").symlink_to(job.mirror)
        raise RuntimeError("agent crashed")
    assert not path.exists()
    assert not job.job_dir.exists()
    assert list(ws.jobs.iterdir()) == []
    assert (job.mirror / "HEAD").is_file()  # the link was removed, not followed
    assert mounts_under(ws.jobs) == []
    assert_mode(ws, overlay)


def test_a_moved_pr_head_is_a_clear_error(gh: FakeGitHub, repo: Repository, root: Path) -> None:
    pr = gh.open_pull_request(repo, head="feat", files={"app.py": "ANSWER = 42\n"})
    ws = workspaces(gh, root)
    with (
        pytest.raises(WorkspaceError, match="head moved"),
        ws.job(repo.full_name, pr.number, "1" * 40, "main"),
    ):
        pass
    assert list(ws.jobs.iterdir()) == []


_CRASH = """
import os, sys
from pathlib import Path
from landbot.git.workspace import Workspaces
ws = Workspaces(Path(sys.argv[1]), git_url=sys.argv[2], uid=65534, gid=65534,
                overlay=sys.argv[6] == "1")
cm = ws.job(sys.argv[3], int(sys.argv[4]), sys.argv[5], "main")  # kept: no clean-up at GC
job = cm.__enter__()
import subprocess
subprocess.run(["git", f"--git-dir={job.mirror}", "worktree", "add", "-q", "--detach",
                str(job.job_dir / "check"), job.head_sha], check=True, capture_output=True)
subprocess.run(["git", f"--git-dir={job.mirror}", "update-ref",
                f"refs/landbot/jobs/{job.name}", job.head_sha], check=True)
print(job.job_dir, flush=True)  # os._exit skips the flush a piped stdout needs
os._exit(0)  # killed: no clean-up runs
"""


def test_stale_jobs_are_pruned_and_live_ones_kept(
    gh: FakeGitHub, repo: Repository, root: Path, overlay: bool
) -> None:
    pr = gh.open_pull_request(repo, head="feat", files={"app.py": "ANSWER = 42\n"})
    ws = workspaces(gh, root, overlay=overlay)
    crashed = subprocess.run(
        [
            sys.executable,
            "-c",
            _CRASH,
            str(ws.root),
            gh.git_url,
            repo.full_name,
            str(pr.number),
            pr.head_sha,
            "1" if overlay else "0",
        ],
        capture_output=True,
        text=True,
    )
    assert crashed.returncode == 0, crashed.stderr
    stale = Path(crashed.stdout.strip())
    assert (stale / "work" / "app.py").is_file() and (stale / ".lock").is_file()
    # A crashed job stays mounted: its disk image, and its overlay on top.
    assert mounts_under(stale) == [*([stale / "work"] if overlay else []), stale]
    assert ws.image_path(stale).is_file()
    mirror = ws.mirror_path(repo.full_name)
    assert "check" in git(mirror, "worktree", "list")
    assert git(mirror, "for-each-ref", JOB_REFS)
    leftover_clone = mirror.parent / ".widgets.git.k2j4x9"
    leftover_clone.mkdir()

    with ws.job(repo.full_name, pr.number, pr.head_sha, "main") as live:
        removed = ws.prune()
        assert removed == [stale]
        assert live.path.is_dir()  # the control: a job whose process lives is kept
        assert not stale.exists()
        assert not leftover_clone.exists()
        assert "check" not in git(mirror, "worktree", "list")
        assert git(mirror, "for-each-ref", JOB_REFS) == ""
        assert mounts_under(stale) == []
        assert list(ws.images.iterdir()) == [ws.image_path(live.job_dir)]  # stale's is gone
        assert (live.path / "app.py").read_text() == "ANSWER = 42\n"
    assert ws.prune() == []
    assert list(ws.images.iterdir()) == []
    assert_mode(ws, overlay)


def test_overlay_jobs_share_one_pristine_tree_until_the_head_drifts(
    gh: FakeGitHub, repo: Repository, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if OVERLAY_PROBLEM is not None:
        pytest.skip(OVERLAY_PROBLEM)
    import landbot.git.workspace as workspace

    pr = gh.open_pull_request(repo, head="feat", files={"app.py": "ANSWER = 42\n"})
    ws = workspaces(gh, root, overlay=True)
    for _ in range(2):
        with ws.job(repo.full_name, pr.number, pr.head_sha, "main") as job:
            assert (job.path / "app.py").read_text() == "ANSWER = 42\n"
    assert ws.stats.pristine_trees == 1 and ws.stats.overlay_jobs == 2
    trees = ws.trees_path(repo.full_name)
    first = job.base_sha
    assert (trees / f"{first}.index").is_file()  # indexed once, copied by later jobs

    # The base moves on and the PR head is now "far" from the pristine tree: the next job
    # gets a new one, at the base.
    monkeypatch.setattr(workspace, "PRISTINE_MAX_DRIFT", 0)
    gh.push(repo, "main", {"lib/util.py": "def f():\n    return 2\n"})
    with ws.job(repo.full_name, pr.number, pr.head_sha, "main") as old:
        assert old.base_sha != first
        newest = gh.push(repo, "main", {"README.md": "# again\n"})
        with ws.job(repo.full_name, pr.number, pr.head_sha, "main") as job:
            assert job.base_sha == newest and (trees / newest).is_dir()
            assert (job.path / "lib/util.py").read_text() == "def f():\n    return 1\n"
            ws.prune()
            # The oldest tree is unused: gone. The middle one sits under the live job `old`
            # (the control): kept, and that job still reads its files.
            assert not (trees / first).exists()
            assert (trees / old.base_sha).is_dir()
            assert (old.path / "app.py").read_text() == "ANSWER = 42\n"
    ws.prune()
    assert sorted(p.name for p in trees.iterdir() if p.is_dir()) == [newest]
    assert ws.stats.pristine_trees == 3


def test_without_overlayfs_jobs_fall_back_to_a_full_checkout(
    gh: FakeGitHub, repo: Repository, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import landbot.git.workspace as workspace

    def refuse(*args: object) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(workspace, "mount_overlay", refuse)
    pr = gh.open_pull_request(repo, head="feat", files={"app.py": "ANSWER = 42\n"})
    required = workspaces(gh, root, overlay=True)
    with (
        pytest.raises(WorkspaceError, match="cannot mount the job's overlay"),
        required.job(repo.full_name, pr.number, pr.head_sha, "main"),
    ):
        pass
    assert list(required.jobs.iterdir()) == []
    auto = workspaces(gh, root)
    for _ in range(2):
        with auto.job(repo.full_name, pr.number, pr.head_sha, "main") as job:
            assert (job.path / "app.py").read_text() == "ANSWER = 42\n"
            assert as_sandbox_uid(job.path, "git", "diff-files", "--quiet").returncode == 0
    assert auto.overlay_problem is not None and "Operation not permitted" in auto.overlay_problem
    assert auto.stats.overlay_jobs == 0
    assert not auto.trees_path(repo.full_name).exists()


# --- conflicts ------------------------------------------------------------------------


def _conflicting(gh: FakeGitHub, repo: Repository, *, code: bool) -> tuple[str, str]:
    """A PR and a base that both add a Required item to quest/ship.md (and, with `code`,
    both change the same line of app.py). Returns (head sha, base sha)."""
    head_files: dict[str, str | bytes | None] = {"quest/ship.md": QUEST + "- [Docs](docs.md)\n"}
    base_files: dict[str, str | bytes | None] = {"quest/ship.md": QUEST + "- [Tests](tests.md)\n"}
    if code:
        head_files["app.py"] = "ANSWER = 42\n"
        base_files["app.py"] = "ANSWER = 40\n"
    pr = gh.open_pull_request(repo, head="feat", files=head_files)
    base = gh.push(repo, "main", base_files)
    return pr.head_sha, base


def test_a_quest_only_conflict_is_merged_on_the_host(
    gh: FakeGitHub, repo: Repository, root: Path, overlay: bool
) -> None:
    head, base = _conflicting(gh, repo, code=False)
    # The control: git's own merge conflicts on this file.
    plain = root / "plain"
    subprocess.run(["git", "clone", "-q", str(repo.git_dir), str(plain)], check=True)
    git(plain, "checkout", "-q", "--detach", head)
    merged = subprocess.run(
        ["git", "-c", "user.name=x", "-c", "user.email=x@x", "merge", "-q", base],
        cwd=plain,
        capture_output=True,
        text=True,
    )
    assert merged.returncode == 1 and "quest/ship.md" in merged.stdout

    ws = workspaces(gh, root, overlay=overlay)
    with ws.job(repo.full_name, 1, head, "main", head_ref="feat", merge=True) as job:
        assert job.merge is not None
        assert job.merge.clean and job.merge.merge_sha is not None
        assert not job.needs_agent
        g = ["-c", f"safe.directory={job.path}"]
        assert git(job.path, *g, "rev-parse", "HEAD") == job.merge.merge_sha
        assert git(job.path, *g, "log", "-1", "--format=%P").split() == [head, base]
        assert git(job.path, *g, "log", "-1", "--format=%an <%ae>|%s") == (
            "landbot <landbot@users.noreply.github.com>|Merge main into feat"
        )
        text = (job.path / "quest/ship.md").read_text()
        assert "- [Docs](docs.md)" in text and "- [Tests](tests.md)" in text
        assert "<<<<<<<" not in text
        assert not (job.path / ".git" / "MERGE_HEAD").exists()
        assert not (job.path / ".git" / "info" / "attributes").exists()
        assert git(job.path, *g, "status", "--porcelain") == ""
    assert_mode(ws, overlay)


def test_a_code_conflict_is_left_mid_merge_for_the_agent(
    gh: FakeGitHub, repo: Repository, root: Path, overlay: bool
) -> None:
    head, base = _conflicting(gh, repo, code=True)
    ws = workspaces(gh, root, overlay=overlay)
    with ws.job(repo.full_name, 1, head, "main", merge=True) as job:
        assert job.merge is not None
        assert job.merge.conflicts == ("app.py",)  # the quest file was resolved by the driver
        assert job.merge.merge_sha is None and job.needs_agent
        assert (job.path / ".git" / "MERGE_HEAD").read_text().strip() == base
        assert "<<<<<<<" in (job.path / "app.py").read_text()
        assert "<<<<<<<" not in (job.path / "quest/ship.md").read_text()
        # The agent finishes the merge as the sandbox uid.
        (job.path / "app.py").write_text("ANSWER = 42\n")
        for cmd in (["git", "add", "app.py"], ["git", "commit", "-q", "--no-edit"]):
            done = as_sandbox_uid(job.path, *cmd)
            assert done.returncode == 0, done.stderr
        parents = as_sandbox_uid(job.path, "git", "log", "-1", "--format=%P").stdout.split()
        assert parents == [head, base]
    assert_mode(ws, overlay)


def test_a_head_that_already_contains_the_base_needs_no_merge(
    gh: FakeGitHub, repo: Repository, root: Path
) -> None:
    pr = gh.open_pull_request(repo, head="feat", files={"app.py": "ANSWER = 42\n"})
    ws = workspaces(gh, root)
    with ws.job(repo.full_name, pr.number, pr.head_sha, "main", merge=True) as job:
        assert job.merge is not None and job.merge.up_to_date and job.merge.merge_sha is None


# --- the token ------------------------------------------------------------------------


def _files_containing(folder: Path, needles: list[bytes]) -> list[Path]:
    hits = []
    for p in folder.rglob("*"):
        if p.is_file() and not p.is_symlink():
            data = p.read_bytes()
            if any(n in data for n in needles):
                hits.append(p)
    return hits


def test_the_token_is_never_written_anywhere(
    gh: FakeGitHub, repo: Repository, root: Path, overlay: bool
) -> None:
    token = "ghs_" + "T0kenT0kenT0ken" * 2
    needles = [token.encode(), base64.b64encode(f"x-access-token:{token}".encode())]
    head, _ = _conflicting(gh, repo, code=True)
    # A small disk image: the scan reads it whole too (raw blocks, not only its files).
    ws = workspaces(gh, root, overlay=overlay, disk_mb=64)
    with ws.job(repo.full_name, 1, head, "main", merge=True, token=token) as job:
        assert _files_containing(ws.root, needles) == []
        for where in ([f"--git-dir={job.mirror}"], ["-C", str(job.path)]):
            listed = subprocess.run(
                [
                    "git",
                    "-c",
                    f"safe.directory={job.path}",
                    *where,
                    "config",
                    "--list",
                    "--show-origin",
                ],
                capture_output=True,
            ).stdout
            assert listed and not any(n in listed for n in needles)
        # The control: the scan finds the token where it is.
        (job.job_dir / "leak").write_bytes(needles[1])
        assert _files_containing(ws.root, needles) == [job.job_dir / "leak"]
    assert_mode(ws, overlay)


class _GitOverHTTP(BaseHTTPRequestHandler):
    """Smart HTTP through `git http-backend`, refusing requests without the token."""

    project_root: Path
    authorization: str
    seen: list[str | None]

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def _serve(self) -> None:
        self.seen.append(self.headers.get("Authorization"))
        if self.headers.get("Authorization") != self.authorization:
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="git"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        path, _, query = self.path.partition("?")
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        env = {
            "PATH": os.environ["PATH"],
            "GIT_PROJECT_ROOT": str(self.project_root),
            "GIT_HTTP_EXPORT_ALL": "1",
            "PATH_INFO": path,
            "QUERY_STRING": query,
            "REQUEST_METHOD": self.command,
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)),
            "REMOTE_USER": "x-access-token",
            "REMOTE_ADDR": "127.0.0.1",
            "HTTP_GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),
        }
        out = subprocess.run(
            ["git", "http-backend"], input=body, env=env, capture_output=True
        ).stdout
        head, _, payload = out.partition(b"\r\n\r\n")
        status = 200
        headers = []
        for line in head.decode().split("\r\n"):
            key, _, value = line.partition(": ")
            if key.lower() == "status":
                status = int(value.split()[0])
            elif key:
                headers.append((key, value))
        self.send_response(status)
        for key, value in headers:
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


def test_a_token_reaches_git_for_a_private_repository(
    gh: FakeGitHub, repo: Repository, root: Path
) -> None:
    pr = gh.open_pull_request(repo, head="feat", files={"app.py": "ANSWER = 42\n"})
    token = "ghs_private_repo_token"
    (header,) = auth_config(token)

    class handler(_GitOverHTTP):
        project_root = gh.root
        authorization = header[1].removeprefix("Authorization: ")
        seen: list[str | None] = []  # noqa: RUF012

    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/{{owner}}/{{repo}}.git"
        ws = workspaces(gh, root, git_url=url, disk_mb=64)
        # The control: without the token the server refuses, and so does the job.
        with (
            pytest.raises(WorkspaceError, match="fetching acme/widgets#1"),
            ws.job(repo.full_name, pr.number, pr.head_sha, "main"),
        ):
            pass
        assert handler.seen and handler.seen[-1] is None
        with ws.job(repo.full_name, pr.number, pr.head_sha, "main", token=token) as job:
            assert (job.path / "app.py").read_text() == "ANSWER = 42\n"
        assert handler.seen[-1] == handler.authorization
        needles = [token.encode(), header[1].split()[-1].encode()]
        assert _files_containing(ws.root, needles) == []
    finally:
        server.shutdown()
        server.server_close()
