"""The disk cap of `landbot sandbox run --workdir DIR` (landbot/sandbox/disk.py), with real
bubblewrap runs: the operator's folder runs on a file system of `--disk` MB of its own,
so a command cannot fill the disk that holds DIR. Writes are kept small (a 16 MB cap).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

# ./scripts/test --fast leaves this module out: its tests start processes (landbot, git,
# the sandbox, servers) and take seconds each.
pytestmark = pytest.mark.slow

LANDBOT = str(Path(sys.executable).parent / "landbot")
FAST = (
    "import sys\n"
    "from landbot.sandbox.cli import fast_path\n"
    "code = fast_path(sys.argv[1:])\n"
    "sys.exit(99 if code is None else code)\n"
)
CAP = "landbot sandbox run: disk capped at 16 MB"
MB = 1 << 20


def _runner(kind: str) -> Any:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        if kind == "typer":
            argv = [LANDBOT, "sandbox", "run", *args]
        else:
            argv = [sys.executable, "-c", FAST, *args]
        env = {k: v for k, v in os.environ.items() if not k.startswith("LANDBOT_")}
        return subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env, cwd="/")

    return run


@pytest.fixture(params=["typer", "fast"])
def landbot(request: pytest.FixtureRequest) -> Any:
    return _runner(request.param)


def _tree_bytes(path: Path) -> int:
    """Bytes allocated on the host's disk under `path` (what a job could fill)."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            total += os.lstat(os.path.join(root, name)).st_blocks * 512
    return total


def _host_mounts() -> str:
    return Path("/proc/self/mountinfo").read_text()


def test_a_write_past_the_cap_fails_and_the_host_disk_is_not_filled(box: Any, landbot: Any) -> None:
    # The control: a write under the cap succeeds, and lands in the operator's folder.
    ok = landbot(
        "--workdir", str(box.work), "--disk", "16", "--",
        "sh", "-c", "head -c 4194304 /dev/zero > small && pwd",
    )  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    assert ok.stderr.splitlines()[0].startswith(CAP)  # said first, as the run starts
    assert ok.stdout == f"{box.work}\n"  # the job sees its work tree at the folder's path
    assert (box.work / "small").stat().st_size == 4 * MB

    before = _tree_bytes(box.work)
    done = landbot(
        "--workdir", str(box.work), "--disk", "16", "--",
        "sh", "-c", "head -c 67108864 /dev/zero > big",
    )  # fmt: skip
    assert done.returncode == 1  # head's own code: it got ENOSPC
    lines = done.stderr.splitlines()
    assert lines[0].startswith(CAP)
    assert "No space left on device" in done.stderr
    assert lines[-1] == (
        "landbot: the work tree's file system (the disk cap of 16 MB) is full: the command "
        "may have failed for that; pass a larger --disk if it needs more"
    )
    # Of the 64 MB asked for, the host's disk got no more than the cap.
    assert _tree_bytes(box.work) - before <= 16 * MB
    assert (box.work / "big").stat().st_size < 16 * MB
    assert str(box.work) not in _host_mounts()  # the image was mounted for the job only


def test_disk_0_runs_uncapped_and_says_so(box: Any, landbot: Any) -> None:
    done = landbot(
        "--workdir", str(box.work), "--disk", "0", "--",
        "sh", "-c", "head -c 20971520 /dev/zero > big",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stderr.startswith("landbot sandbox run: disk NOT capped")
    assert (box.work / "big").stat().st_size == 20 * MB  # past what 16 MB would allow


def test_a_sparse_file_past_the_cap_is_stopped_by_rlimit_fsize(box: Any, landbot: Any) -> None:
    # A sparse file costs the image nothing, but would be written in full when copied back.
    ok = landbot("--workdir", str(box.work), "--disk", "16", "--", "truncate", "-s", "8M", "s")
    assert ok.returncode == 0, ok.stderr  # the control: under the cap
    assert (box.work / "s").stat().st_size == 8 * MB

    done = landbot("--workdir", str(box.work), "--disk", "16", "--", "truncate", "-s", "1G", "t")
    assert done.returncode == 153, done.stderr  # SIGXFSZ
    assert "past the disk cap of 16 MB (SIGXFSZ, exit 153)" in done.stderr.splitlines()[-1]
    assert not (box.work / "t").exists() or (box.work / "t").stat().st_size <= 16 * MB


def test_hard_links_past_the_cap_are_not_copied_back(box: Any, landbot: Any) -> None:
    # Six links to one 5 MB file use 5 MB of the image but would be 30 MB on the host.
    script = "head -c 5242880 /dev/urandom > f && for i in 1 2 3 4 5; do ln f f$i; done"
    done = landbot("--workdir", str(box.work), "--disk", "16", "--", "sh", "-c", script)
    assert done.returncode == 2, done.stderr
    last = done.stderr.splitlines()[-1]
    assert last.startswith("landbot: the command left more than the disk cap of 16 MB")
    assert last.endswith(f"nothing was copied back to {box.work}")
    assert sorted(p.name for p in box.work.iterdir()) == [".git", "README.md"]

    control = "head -c 5242880 /dev/urandom > f && ln f f1"  # 10 MB: under the cap
    ok = landbot("--workdir", str(box.work), "--disk", "16", "--", "sh", "-c", control)
    assert ok.returncode == 0, ok.stderr
    assert (box.work / "f").read_bytes() == (box.work / "f1").read_bytes()


def test_a_tree_over_the_cap_does_not_start(box: Any, landbot: Any) -> None:
    (box.work / "data").write_bytes(b"x" * (20 * MB))
    done = landbot("--workdir", str(box.work), "--disk", "16", "--", "sh", "-c", "echo RAN")
    assert done.returncode == 2
    assert "RAN" not in done.stdout
    assert "does not fit in the disk cap of 16 MB" in done.stderr.splitlines()[-1]
    ok = landbot("--workdir", str(box.work), "--disk", "64", "--", "sh", "-c", "echo RAN")
    assert (ok.returncode, ok.stdout) == (0, "RAN\n"), ok.stderr  # the control


def test_what_the_command_changes_comes_back_and_the_git_config_stays(
    box: Any, landbot: Any
) -> None:
    config = (box.work / ".git" / "config").read_bytes()
    script = (
        "rm README.md && mkdir -p sub && echo new > sub/file && ln -s sub/file link && "
        "chmod 755 sub/file && git add -A && git commit -qm changed"
    )
    done = landbot("--workdir", str(box.work), "--disk", "16", "--", "sh", "-c", script)
    assert done.returncode == 0, done.stderr
    assert not (box.work / "README.md").exists()  # a deletion comes back too
    assert (box.work / "sub" / "file").read_text() == "new\n"
    assert os.readlink(box.work / "link") == "sub/file"
    assert os.stat(box.work / "sub" / "file").st_mode & 0o777 == 0o755
    assert (box.work / ".git" / "config").read_bytes() == config
    log = subprocess.run(
        ["git", "-c", f"safe.directory={box.work}", "log", "-1", "--format=%s"],
        cwd=box.work, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert log.stdout == "changed\n"


def test_a_file_named_like_a_temporary_copy_is_copied_both_ways(box: Any, landbot: Any) -> None:
    # The copy's temporary names were `.landbot-copy-` + the file's name: `sub/foo2` beside
    # `sub/.landbot-copy-foo2` failed with "File exists" after the deletion pass.
    (box.work / "sub").mkdir()
    (box.work / "sub" / "foo2").write_text("foo2\n")
    (box.work / "sub" / ".landbot-copy-foo2").write_text("the operator's\n")
    (box.work / ".landbot-copy-mine").write_text("also the operator's\n")  # top level
    script = "cat sub/foo2 sub/.landbot-copy-foo2 .landbot-copy-mine && echo x > new"
    done = landbot("--workdir", str(box.work), "--disk", "16", "--", "sh", "-c", script)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "foo2\nthe operator's\nalso the operator's\n"  # all copied in
    assert (box.work / "sub" / "foo2").read_text() == "foo2\n"  # and none lost coming back
    assert (box.work / "sub" / ".landbot-copy-foo2").read_text() == "the operator's\n"
    assert (box.work / ".landbot-copy-mine").read_text() == "also the operator's\n"
    assert (box.work / "new").read_text() == "x\n"  # the control: the job's change came back
    assert os.stat(box.work / "sub").st_mode & 0o777 == 0o755
    leftovers = [p for p in box.work.rglob(".landbot-copy-*") if p.name not in
                 (".landbot-copy-foo2", ".landbot-copy-mine")]  # fmt: skip
    assert leftovers == []  # no temporary name of the copy's own is left
