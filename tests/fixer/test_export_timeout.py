"""The export's timeout (landbot/fixer/job.py): a job that blocks its own export holds
its worker for a time that follows the size of what it can export, not a fixed 300 s.
How other jobs get through meanwhile is measured in bench/export_block.py."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from landbot.fixer.job import (
    EXPORT_FLOOR_S,
    EXPORT_MAX_ENTRIES,
    export_result,
    export_size,
    export_timeout,
)
from landbot.git.quarantine import BundleLimits, ResultRefused
from landbot.sandbox.runner import DEFAULT_GID, DEFAULT_UID, prepare_workdir

from ..conftest import require_sandbox, run_git, sandbox_folder

# ./scripts/test --fast leaves this module out: its tests start processes (landbot, git,
# the sandbox, servers) and take seconds each.
pytestmark = pytest.mark.slow

MB = 1 << 20


def test_the_timeout_follows_the_size_with_a_floor() -> None:
    assert export_timeout(0) == EXPORT_FLOOR_S == 10.0
    assert export_timeout(4 * MB) == 11.0
    # The size is counted up to the bundle cap, so no job gets more than this:
    assert export_timeout(BundleLimits().max_bytes) == 26.0  # not 300 s


def test_the_size_is_the_object_store_counted_up_to_the_cap(tmp_path: Path) -> None:
    objects = tmp_path / ".git" / "objects"
    (objects / "ab").mkdir(parents=True)
    (objects / "ab" / "c").write_bytes(b"x" * 1000)
    (objects / "pack").mkdir()
    (objects / "pack" / "pack-1.pack").write_bytes(b"y" * 5000)
    os.symlink("/usr/bin/python3", objects / "link")  # not followed
    os.mkfifo(objects / "fifo")  # not read
    assert export_size(tmp_path, limit=10**9) == 6000
    assert export_size(tmp_path, limit=2500) == 2500
    assert export_size(tmp_path / "nothing", limit=100) == 0


def test_a_link_the_job_made_for_the_store_is_not_followed(tmp_path: Path) -> None:
    # The control: a real objects folder is counted (as above).
    real = tmp_path / "real"
    (real / ".git" / "objects" / "ab").mkdir(parents=True)
    (real / ".git" / "objects" / "ab" / "c").write_bytes(b"x" * 3000)
    assert export_size(real, limit=10**9) == 3000
    # A job that links .git/objects (or .git, or a folder under it) to a host folder gets
    # none of it walked or counted (its size would leak through the hand-back line).
    for link, target in (
        (tmp_path / "a" / ".git" / "objects", "/usr/lib"),
        (tmp_path / "b" / ".git", "/usr"),
    ):
        link.parent.mkdir(parents=True)
        os.symlink(target, link)
        assert export_size(link.parent.parent if link.name == "objects" else link.parent,
                           limit=10**9) == 0  # fmt: skip
    deep = tmp_path / "c" / ".git" / "objects"
    deep.mkdir(parents=True)
    os.symlink("/usr/lib", deep / "pack")
    (deep / "ab").mkdir()
    (deep / "ab" / "d").write_bytes(b"y" * 10)
    assert export_size(tmp_path / "c", limit=10**9) == 10


def test_a_store_deeper_than_git_makes_counts_as_the_cap(tmp_path: Path) -> None:
    objects = tmp_path / ".git" / "objects"
    deep = objects.joinpath(*["d"] * 20)
    deep.mkdir(parents=True)
    assert export_size(tmp_path, limit=64 * MB) == 64 * MB
    (tmp_path / "ok" / ".git" / "objects" / "ab").mkdir(parents=True)  # the control: git's 2
    assert export_size(tmp_path / "ok", limit=64 * MB) == 0


def test_a_store_with_too_many_entries_counts_as_the_cap(tmp_path: Path) -> None:
    objects = tmp_path / ".git" / "objects" / "ab"
    objects.mkdir(parents=True)
    for i in range(EXPORT_MAX_ENTRIES + 1):
        (objects / f"{i:038x}").touch()
    assert export_size(tmp_path, limit=64 * MB) == 64 * MB  # not walked to the end


@pytest.fixture
def work() -> Iterator[tuple[Path, str]]:
    require_sandbox()
    with sandbox_folder("landbot-export-") as root:
        work = root / "work"
        work.mkdir()
        run_git(work, "init", "-q", "-b", "main")
        run_git(work, "config", "user.name", "Fixer")
        run_git(work, "config", "user.email", "fixer@example.invalid")
        (work / "a").write_text("a\n")
        run_git(work, "add", ".")
        run_git(work, "commit", "-qm", "start")
        start = run_git(work, "rev-parse", "HEAD")
        (work / "a").write_text("b\n")
        run_git(work, "commit", "-qam", "the fix")
        prepare_workdir(work, DEFAULT_UID, DEFAULT_GID)
        yield work, start


def test_a_blocked_export_ends_at_its_timeout_with_a_refusal(work: tuple[Path, str]) -> None:
    tree, start = work
    # The control: the job's commit comes out.
    data = export_result(tree, (start,), uid=DEFAULT_UID, gid=DEFAULT_GID, limit=MB)
    assert data.startswith(b"# v2 git bundle")
    # A FIFO for packed-refs (what a job can leave) blocks git in the export for ever.
    os.mkfifo(tree / ".git" / "packed-refs")
    os.chown(tree / ".git" / "packed-refs", DEFAULT_UID, DEFAULT_GID)
    with pytest.raises(ResultRefused, match=r"did not finish in 1 s .*blocks it"):
        export_result(tree, (start,), uid=DEFAULT_UID, gid=DEFAULT_GID, limit=MB, timeout=1.0)
