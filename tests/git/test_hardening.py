"""Host git commands against hostile trees, repositories and configuration, and the job's
size-capped disk.

Every refusal has its control: the same attack with plain git (or without the cap) first,
which must work, then through landbot, where it must not; a marker shows the confined
attempt ran.
"""

from __future__ import annotations

import os
import shutil
import signal
import stat
import subprocess
import time
from pathlib import Path

import pytest

import landbot.git.workspace as workspace
from landbot.git.workspace import (
    WorkspaceError,
    Workspaces,
    check_config,
    mounts_under,
    run_git,
)
from landbot.sim import FakeGitHub
from landbot.sim.state import Repository

# ./scripts/test --fast leaves this module out: its tests start processes (landbot, git,
# the sandbox, servers) and take seconds each.
pytestmark = pytest.mark.slow

UID = GID = 65534


@pytest.fixture
def repo(gh: FakeGitHub) -> Repository:
    return gh.create_repo(
        "acme/widgets",
        files={
            "README.md": "# widgets\n",
            "app.py": "ANSWER = 41\n",
            ".gitattributes": "*.txt filter=evil\n",
            "notes.txt": "notes\n",
        },
    )


def workspaces(gh: FakeGitHub, root: Path, **kwargs: object) -> Workspaces:
    return Workspaces(root / "state", git_url=gh.git_url, uid=UID, gid=GID, **kwargs)  # type: ignore[arg-type]


def plain_git(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "-c", "user.name=x", "-c", "user.email=x@x", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
    )


def evil_filter(marker: Path) -> str:
    # (Quoted: an unquoted `;` would start a comment.)
    return f'[filter "evil"]\n\tsmudge = "sh -c \'touch {marker}; cat\'"\n'


# --- time ---------------------------------------------------------------------------


def test_a_git_command_blocked_on_a_fifo_in_the_tree_is_killed(root: Path) -> None:
    tree = root / "tree"
    tree.mkdir()
    assert plain_git("init", "-q", str(tree)).returncode == 0
    (tree / "a").write_text("a\n")
    assert plain_git("add", "a", cwd=tree).returncode == 0
    assert plain_git("commit", "-qm", "a", cwd=tree).returncode == 0
    os.mkfifo(tree / ".gitattributes")  # git opens it to read attributes: blocks forever
    # The control: plain git never ends (the test's own timeout stops it).
    with pytest.raises(subprocess.TimeoutExpired):
        subprocess.run(["git", "status"], cwd=tree, capture_output=True, timeout=3)
    with pytest.raises(WorkspaceError, match=r"git status timed out after 2 s and was killed"):
        run_git(["status", "--porcelain"], cwd=tree, timeout=2)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def test_a_timeout_kills_every_process_git_started(root: Path) -> None:
    remote = root / "remote.git"
    mirror = root / "mirror.git"
    for bare in (remote, mirror):
        assert plain_git("init", "-q", "--bare", str(bare)).returncode == 0
    pids = root / "pids"
    # An upload-pack that never answers and leaves a grandchild behind.
    hang = f"sh -c 'sleep 1000 & echo $! >> {pids}; wait'"
    argv = ["fetch", f"--upload-pack={hang}", str(remote), "HEAD"]
    # The control: killing git alone (what a plain timeout does) leaves the grandchild.
    with pytest.raises(subprocess.TimeoutExpired):
        subprocess.run(
            ["git", f"--git-dir={mirror}", *argv],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=3,
        )
    (survivor,) = [int(p) for p in pids.read_text().split()]
    assert _alive(survivor)
    os.kill(survivor, signal.SIGKILL)
    pids.unlink()

    with pytest.raises(WorkspaceError, match="timed out"):
        run_git(argv, git_dir=mirror, timeout=3)
    (child,) = [int(p) for p in pids.read_text().split()]  # the confined attempt ran
    # SIGKILL is sent to the whole group before run_git returns; on a loaded machine the
    # kernel may take a moment to act on it, so allow a few seconds (the control above
    # shows the grandchild would otherwise live on for good).
    deadline = time.monotonic() + 5
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child)


# --- configuration and attributes from outside the repository -----------------------


@pytest.mark.parametrize("where", ["global", "system"])
def test_a_filter_in_the_hosts_git_config_never_runs(
    gh: FakeGitHub,
    repo: Repository,
    root: Path,
    where: str,
    _isolated_git: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    marker = root / "filter-ran"
    if where == "global":
        (_isolated_git / ".gitconfig").write_text(evil_filter(marker))
    else:
        system = root / "gitconfig"
        system.write_text(evil_filter(marker))
        monkeypatch.delenv("GIT_CONFIG_NOSYSTEM")
        monkeypatch.setenv("GIT_CONFIG_SYSTEM", str(system))
    # The control: plain git runs the filter on checkout.
    assert plain_git("clone", "-q", str(repo.git_dir), str(root / "plain")).returncode == 0
    assert marker.exists()
    marker.unlink()
    pr = gh.open_pull_request(repo, head="feat", files={"app.py": "ANSWER = 42\n"})
    ws = workspaces(gh, root, disk_mb=0)
    with ws.job(repo.full_name, pr.number, pr.head_sha, "main") as job:
        assert (job.path / "notes.txt").read_text() == "notes\n"  # the checkout ran
        assert (job.path / ".gitattributes").is_file()
    assert not marker.exists()


def test_the_users_global_attributes_do_not_change_the_checkout(
    gh: FakeGitHub, repo: Repository, root: Path, _isolated_git: Path
) -> None:
    attributes = _isolated_git / ".config" / "git" / "attributes"
    attributes.parent.mkdir(parents=True)
    attributes.write_text("*.py eol=crlf\n")  # read even with no global config file
    assert plain_git("clone", "-q", str(repo.git_dir), str(root / "plain")).returncode == 0
    assert (root / "plain" / "app.py").read_bytes() == b"ANSWER = 41\r\n"  # the control
    pr = gh.open_pull_request(repo, head="feat", files={"app.py": "ANSWER = 42\n"})
    ws = workspaces(gh, root, disk_mb=0)
    with ws.job(repo.full_name, pr.number, pr.head_sha, "main") as job:
        assert (job.path / "app.py").read_bytes() == b"ANSWER = 42\n"


def test_a_bare_repository_planted_in_a_tree_is_not_used(root: Path) -> None:
    tree = root / "tree"
    planted = tree / "vendor" / "evil"
    planted.mkdir(parents=True)
    assert plain_git("init", "-q", "--bare", str(planted)).returncode == 0
    marker = root / "fsmonitor-ran"
    (planted / "config").write_text(evil_filter(marker))
    # The control: plain git in that folder takes it for its repository.
    assert plain_git("rev-parse", "--absolute-git-dir", cwd=planted).stdout.strip() == str(planted)
    with pytest.raises(WorkspaceError, match="cannot use bare repository"):
        run_git(["rev-parse", "--absolute-git-dir"], cwd=planted)


def test_only_the_transport_named_on_the_command_line_is_allowed(root: Path) -> None:
    remote, mirror = root / "remote.git", root / "mirror.git"
    assert plain_git("init", "-q", "--bare", str(remote)).returncode == 0
    assert plain_git("init", "-q", "--bare", str(mirror)).returncode == 0
    via_config = [("remote.other.url", f"file://{remote}")]
    # A remote the command does not name (as a submodule, a promisor or an insteadOf
    # would bring in) is refused...
    with pytest.raises(WorkspaceError, match="transport 'file' not allowed"):
        run_git(["ls-remote", "other"], git_dir=mirror, config=via_config)
    # ... the control: allowed by name it works, and so does naming the URL.
    run_git(["ls-remote", "other"], git_dir=mirror, config=via_config, protocols=["file"])
    run_git(["ls-remote", f"file://{remote}"], git_dir=mirror)
    with pytest.raises(WorkspaceError, match="transport 'ext' not allowed"):
        run_git(["ls-remote", f"ext::sh -c touch% {root}/ext-ran"], git_dir=mirror)
    assert not (root / "ext-ran").exists()


def test_a_git_url_with_another_transport_is_refused(
    gh: FakeGitHub, repo: Repository, root: Path
) -> None:
    ws = Workspaces(root / "state", git_url="ssh://git@host/{owner}/{repo}.git", uid=UID, gid=GID)
    with pytest.raises(WorkspaceError, match="uses a transport landbot does not allow"):
        ws.sync(repo.full_name, 1, "main")


# --- the repositories the host made -------------------------------------------------


def _plant(mirror: Path, what: str, other: Path) -> None:
    if what == "commondir":
        (mirror / "commondir").write_text(f"{other}\n")
    elif what == "gitdir":
        (mirror / "gitdir").write_text(f"{other}\n")
    elif what == "alternates":
        (mirror / "objects" / "info").mkdir(exist_ok=True)
        (mirror / "objects" / "info" / "alternates").write_text(f"{other / 'objects'}\n")
    elif what == "grafts":
        (mirror / "info").mkdir(exist_ok=True)
        (mirror / "info" / "grafts").write_text("")
    elif what == "config-symlink":
        os.rename(mirror / "config", mirror / "config.real")
        (mirror / "config").symlink_to(mirror / "config.real")
    elif what == "fifo-exclude":
        (mirror / "info").mkdir(exist_ok=True)
        os.mkfifo(mirror / "info" / "exclude")


@pytest.mark.parametrize(
    "what", ["commondir", "gitdir", "alternates", "grafts", "config-symlink", "fifo-exclude"]
)
def test_a_mirror_whose_layout_landbot_did_not_make_is_refused(
    gh: FakeGitHub, repo: Repository, root: Path, what: str
) -> None:
    private = gh.create_repo("other/private", files={"secret.txt": "private\n"})
    secret = plain_git(f"--git-dir={private.git_dir}", "rev-parse", "HEAD:secret.txt").stdout
    pr = gh.open_pull_request(repo, head="feat", files={"app.py": "ANSWER = 42\n"})
    ws = workspaces(gh, root, disk_mb=0)
    with ws.job(repo.full_name, pr.number, pr.head_sha, "main"):  # the control: it works
        pass
    mirror = ws.mirror_path(repo.full_name)
    assert private.git_dir is not None
    _plant(mirror, what, private.git_dir)
    if what == "alternates":
        # What it would do: another repository's private objects readable in the mirror.
        seen = plain_git(f"--git-dir={mirror}", "cat-file", "-p", secret.strip())
        assert seen.stdout == "private\n"
    with (
        pytest.raises(WorkspaceError, match=r"refusing to run git"),
        ws.job(repo.full_name, pr.number, pr.head_sha, "main"),
    ):
        pass
    assert list(ws.jobs.iterdir()) == []


@pytest.mark.parametrize("key", ["filter", "include"])
def test_a_mirror_config_landbot_did_not_write_is_refused(
    gh: FakeGitHub, repo: Repository, root: Path, key: str
) -> None:
    marker = root / "filter-ran"
    pr = gh.open_pull_request(repo, head="feat", files={"app.py": "ANSWER = 42\n"})
    ws = workspaces(gh, root, disk_mb=0, overlay=False)
    with ws.job(repo.full_name, pr.number, pr.head_sha, "main"):  # the control: it works
        pass
    mirror = ws.mirror_path(repo.full_name)
    config = mirror / "config"
    if key == "filter":
        config.write_text(config.read_text() + evil_filter(marker))
    else:
        (root / "included").write_text(evil_filter(marker))
        config.write_text(config.read_text() + f"[include]\n\tpath = {root / 'included'}\n")
    # What it would do: the pristine tree's checkout-index runs the filter.
    out = root / "plain"
    out.mkdir()
    plain_git(f"--git-dir={mirror}", f"--work-tree={out}", "read-tree", "main")
    plain_git(f"--git-dir={mirror}", f"--work-tree={out}", "checkout-index", "-a")
    assert marker.exists()
    marker.unlink()
    with (
        pytest.raises(WorkspaceError, match=rf"sets {key}\.[a-z.]+, which landbot never writes"),
        ws.job(repo.full_name, pr.number, pr.head_sha, "main"),
    ):
        pass
    assert not marker.exists()


def test_the_job_clones_config_holds_only_what_landbot_writes(
    gh: FakeGitHub, repo: Repository, root: Path
) -> None:
    pr = gh.open_pull_request(repo, head="feat", files={"app.py": "ANSWER = 42\n"})
    ws = workspaces(gh, root, disk_mb=0)
    with ws.job(repo.full_name, pr.number, pr.head_sha, "main") as job:
        check_config(job.path / ".git")  # the control: what the host wrote passes
        config = job.path / ".git" / "config"
        config.write_text(config.read_text() + '[diff "evil"]\n\ttextconv = sh\n')
        with pytest.raises(WorkspaceError, match=r"sets diff\.evil\.textconv"):
            check_config(job.path / ".git")


def test_a_dot_git_file_pointing_elsewhere_is_refused(root: Path) -> None:
    other = root / "other.git"
    tree = root / "tree"
    tree.mkdir()
    assert plain_git("init", "-q", "--bare", str(other)).returncode == 0
    (tree / ".git").write_text(f"gitdir: {other}\n")
    assert plain_git("rev-parse", "--absolute-git-dir", cwd=tree).stdout.strip() == str(other)
    with pytest.raises(WorkspaceError, match="does not point at a linked work tree"):
        run_git(["rev-parse", "--absolute-git-dir"], cwd=tree)
    # The control: a linked work tree as `git worktree add` makes it is accepted.
    main = root / "main"
    assert plain_git("init", "-q", str(main)).returncode == 0
    assert plain_git("commit", "-q", "--allow-empty", "-m", "x", cwd=main).returncode == 0
    assert plain_git("worktree", "add", "-q", str(root / "linked"), cwd=main).returncode == 0
    run_git(["rev-parse", "HEAD"], cwd=root / "linked")
    # ... but not once its repository holds what landbot never writes.
    (main / ".git" / "objects" / "info" / "alternates").write_text(f"{other}/objects\n")
    with pytest.raises(WorkspaceError, match="alternates exists"):
        run_git(["rev-parse", "HEAD"], cwd=root / "linked")


# --- the disk cap -------------------------------------------------------------------


def _fill(folder: Path, mb: int) -> subprocess.CompletedProcess[str]:
    """Write `mb` MB into folder/big as the sandbox uid (what the job would do)."""
    return subprocess.run(
        [
            "setpriv",
            f"--reuid={UID}",
            f"--regid={GID}",
            "--clear-groups",
            "--",
            "dd",
            "if=/dev/zero",
            f"of={folder / 'big'}",
            "bs=1M",
            f"count={mb}",
        ],
        capture_output=True,
        text=True,
    )


@pytest.mark.parametrize("overlay", [True, False], ids=["overlay", "full-checkout"])
def test_a_job_that_writes_past_its_disk_cap_gets_enospc(
    gh: FakeGitHub, repo: Repository, root: Path, overlay: bool
) -> None:
    # The control: the same write on a plain folder goes past the cap.
    plain = root / "plain"
    plain.mkdir()
    os.chown(plain, UID, GID)
    done = _fill(plain, 80)
    assert done.returncode == 0, done.stderr
    assert (plain / "big").stat().st_size == 80 << 20
    (plain / "big").unlink()

    pr = gh.open_pull_request(repo, head="feat", files={"app.py": "ANSWER = 42\n"})
    ws = workspaces(gh, root, disk_mb=64, overlay=overlay)
    with ws.job(repo.full_name, pr.number, pr.head_sha, "main") as job:
        assert ws.stats.overlay_jobs == (1 if overlay else 0)
        assert (job.path / "app.py").read_text() == "ANSWER = 42\n"
        assert job.job_dir in mounts_under(job.job_dir)
        done = _fill(job.path, 80)
        assert done.returncode != 0 and "No space left on device" in done.stderr
        big = job.path / "big"
        written = big.stat().st_size
        assert 0 < written < 64 << 20  # the confined write ran, and stopped at the cap
        # Its bytes are on the job's own file system, not the host's.
        assert big.stat().st_dev != ws.root.stat().st_dev
        image = ws.image_path(job.job_dir)
        assert image.stat().st_blocks * 512 <= (64 << 20) + (1 << 20)
        assert stat.S_IMODE(ws.images.stat().st_mode) == 0o700
    assert not image.exists()
    assert mounts_under(ws.root) == []
    assert list(ws.jobs.iterdir()) == [] and list(ws.images.iterdir()) == []


def test_the_job_disk_is_nosuid_and_nodev(gh: FakeGitHub, repo: Repository, root: Path) -> None:
    pr = gh.open_pull_request(repo, head="feat", files={"app.py": "ANSWER = 42\n"})
    # The control: a setuid-root program on a plain folder runs as root for the sandbox uid.
    plain = root / "plain"
    plain.mkdir()
    shutil.copy("/usr/bin/id", plain / "id")
    os.chmod(plain / "id", 0o4755)
    as_uid = ["setpriv", f"--reuid={UID}", f"--regid={GID}", "--clear-groups", "--"]
    euid = subprocess.run([*as_uid, str(plain / "id"), "-u"], capture_output=True, text=True)
    assert euid.stdout.strip() == "0"
    (plain / "id").unlink()
    ws = workspaces(gh, root, disk_mb=64)
    with ws.job(repo.full_name, pr.number, pr.head_sha, "main") as job:
        shutil.copy("/usr/bin/id", job.path / "id")
        os.chmod(job.path / "id", 0o4755)
        euid = subprocess.run([*as_uid, str(job.path / "id"), "-u"], capture_output=True, text=True)
        assert euid.stdout.strip() == str(UID)  # it ran, without its setuid bit
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
        options = {f[4]: f[5].split(",") for f in (line.split() for line in lines)}
        for point in mounts_under(job.job_dir):
            assert {"nosuid", "nodev"} <= set(options[str(point)]), point


@pytest.mark.parametrize("missing", ["mkfs", "mount"])
def test_without_mkfs_or_a_loop_mount_a_capped_job_fails_naming_the_fix(
    gh: FakeGitHub,
    repo: Repository,
    root: Path,
    missing: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if missing == "mkfs":
        monkeypatch.setattr(workspace, "MKFS", "/nonexistent/mkfs.ext4")
        expected = r"e2fsprogs.*disk_mb = 0"
    else:
        monkeypatch.setattr(workspace, "MOUNT", "false")  # a mount that fails
        expected = r"cannot mount the job's disk image.*loop.*disk_mb = 0"
    pr = gh.open_pull_request(repo, head="feat", files={"app.py": "ANSWER = 42\n"})
    ws = workspaces(gh, root, disk_mb=64)
    with (
        pytest.raises(WorkspaceError, match=expected),
        ws.job(repo.full_name, 1, pr.head_sha, "main"),
    ):
        pass
    assert list(ws.jobs.iterdir()) == [] and list(ws.images.iterdir()) == []
    # The control: without a cap the same host runs the job.
    uncapped = workspaces(gh, root, disk_mb=0)
    with uncapped.job(repo.full_name, pr.number, pr.head_sha, "main") as job:
        assert (job.path / "app.py").read_text() == "ANSWER = 42\n"
        assert mounts_under(job.job_dir) in ([], [job.path])  # at most its overlay
    assert uncapped.stats.disk_jobs == 0


def test_disk_mb_comes_from_the_settings(root: Path) -> None:
    from types import SimpleNamespace

    github = SimpleNamespace(git_url="file:///x/{owner}/{repo}.git")
    old = SimpleNamespace(github=github, sandbox=SimpleNamespace(uid=UID, gid=GID))
    assert Workspaces.from_settings(old, root / "a").disk_mb == workspace.DEFAULT_DISK_MB
    new = SimpleNamespace(github=github, sandbox=SimpleNamespace(uid=UID, gid=GID, disk_mb=0))
    assert Workspaces.from_settings(new, root / "b").disk_mb == 0


def test_the_clone_copies_the_mirrors_objects_onto_the_job_disk(
    gh: FakeGitHub, repo: Repository, root: Path
) -> None:
    pr = gh.open_pull_request(repo, head="feat", files={"app.py": "ANSWER = 42\n"})

    def object_links(ws: Workspaces) -> set[int]:
        with ws.job(repo.full_name, pr.number, pr.head_sha, "main") as job:
            objects = job.path / ".git" / "objects"
            return {p.stat().st_nlink for p in objects.rglob("*") if p.is_file()}

    # The control: on the same file system, git hard-links the mirror's object files.
    assert object_links(workspaces(gh, root / "a", disk_mb=0, overlay=False)) != {1}
    # Across to the job's image, git falls back to copies (no error, one link each).
    capped = workspaces(gh, root / "b", disk_mb=64, overlay=False)
    assert object_links(capped) == {1}
    assert capped.stats.disk_jobs == 1
