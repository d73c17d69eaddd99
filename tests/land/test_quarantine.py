"""The job's bundle as data (landbot/git/quarantine.py): the exchange file read without
following links, the header and pack checked before git sees them."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from landbot.git.quarantine import (
    BundleLimits,
    ResultRefused,
    parse_bundle,
    read_exchange_file,
)

UID = 65534


def _bundle(tmp_path: Path, *refs: str, content: bytes = b"fix\n") -> bytes:
    repo = tmp_path / "r"
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "GIT_CONFIG_NOSYSTEM": "1"}
    run = lambda *a: subprocess.run(  # noqa: E731
        ["git", "-C", str(repo), "-c", "user.name=a", "-c", "user.email=a@b", *a],
        check=True,
        capture_output=True,
        env=env,
    )
    if not repo.exists():
        subprocess.run(["git", "init", "-q", str(repo)], check=True, env=env)
        run("commit", "-q", "--allow-empty", "-m", "base")
        (repo / "f").write_bytes(content)
        run("add", "f")
        run("commit", "-q", "-m", "fix")
        run("branch", "other")
    run("bundle", "create", "-q", str(tmp_path / "b"), *(refs or ("HEAD",)), "--not", "HEAD~1")
    return (tmp_path / "b").read_bytes()


def test_a_bundle_with_one_ref_parses(tmp_path: Path) -> None:
    bundle = parse_bundle(_bundle(tmp_path))
    assert bundle.ref == "HEAD" and len(bundle.prerequisites) == 1 and bundle.objects == 3


def test_extra_refs_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ResultRefused, match="carries 2 refs"):
        parse_bundle(_bundle(tmp_path, "HEAD", "other"))


def test_a_corrupt_pack_is_refused(tmp_path: Path) -> None:
    data = bytearray(_bundle(tmp_path))
    data[-30] ^= 0xFF
    with pytest.raises(ResultRefused, match="checksum"):
        parse_bundle(bytes(data))


def test_object_and_count_caps(tmp_path: Path) -> None:
    data = _bundle(tmp_path, content=b"x" * 5000)
    assert parse_bundle(data, BundleLimits(max_object_bytes=6000)).objects == 3  # control
    with pytest.raises(ResultRefused, match="once inflated"):
        parse_bundle(data, BundleLimits(max_object_bytes=4000))
    with pytest.raises(ResultRefused, match="3 objects"):
        parse_bundle(data, BundleLimits(max_objects=2))
    with pytest.raises(ResultRefused, match="not a git bundle"):
        parse_bundle(b"# v9 git bundle\n\nPACK")


def _exchange(tmp_path: Path) -> Path:
    folder = tmp_path / "work" / ".git" / "landbot"
    folder.mkdir(parents=True)
    return folder


def test_the_exchange_file_is_read_only_when_plain(tmp_path: Path) -> None:
    folder = _exchange(tmp_path)
    work = tmp_path / "work"
    good = folder / "result.bundle"
    good.write_bytes(b"data")
    os.chown(good, UID, UID)
    assert read_exchange_file(work, "result.bundle", limit=10, owner=UID) == b"data"  # control
    with pytest.raises(ResultRefused, match="over the cap"):
        read_exchange_file(work, "result.bundle", limit=3, owner=UID)
    os.chown(good, 0, 0)
    with pytest.raises(ResultRefused, match="owned by uid 0"):
        read_exchange_file(work, "result.bundle", limit=10, owner=UID)
    os.chown(good, UID, UID)
    os.link(good, folder / "second")
    with pytest.raises(ResultRefused, match="2 hard links"):
        read_exchange_file(work, "result.bundle", limit=10, owner=UID)
    (folder / "second").unlink()
    good.unlink()
    good.symlink_to("/etc/hostname")
    with pytest.raises(ResultRefused, match="symbolic link"):
        read_exchange_file(work, "result.bundle", limit=10, owner=UID)
    good.unlink()
    os.mkfifo(good)
    with pytest.raises(ResultRefused, match="not a regular file"):  # and it did not block
        read_exchange_file(work, "result.bundle", limit=10, owner=UID)
