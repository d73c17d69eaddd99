"""Fixtures of the host git tests: an isolated HOME, a state folder the sandbox uid can
traverse, and the simulated GitHub's repositories."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from landbot.git.workspace import mounts_under
from landbot.sim import FakeGitHub


@pytest.fixture(autouse=True)
def _isolated_git(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """No developer config (identity, helpers, hooks) reaches the repositories."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    return home


@pytest.fixture
def root() -> Iterator[Path]:
    # Under /tmp with mode 755 (pytest's tmp_path is below a mode-700 folder), as a state
    # folder the sandbox uid can traverse to its work tree.
    path = Path(tempfile.mkdtemp(prefix="landbot-ws-", dir="/tmp"))
    os.chmod(path, 0o755)
    try:
        yield path
    finally:
        for point in mounts_under(path):  # a test that failed inside a job
            subprocess.run(["umount", "-l", str(point)], capture_output=True)
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def gh(root: Path) -> FakeGitHub:
    return FakeGitHub(root / "github", auto_checks=False)
