"""Fixtures for the demo's tests: a host that can sandbox, folders the sandbox uid reaches."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from landbot.sandbox.runner import SandboxUnavailable, check_host


def require_sandbox() -> None:
    """Skip (with the reason) on a host that cannot sandbox; in CI that is a failure."""
    try:
        check_host()
    except SandboxUnavailable as exc:
        if os.environ.get("CI"):
            pytest.fail(f"CI must be able to run the sandbox: {exc}")
        pytest.skip(f"this host cannot run the sandbox, so the demo cannot run: {exc}")


@pytest.fixture
def root() -> Iterator[Path]:
    """A folder under /tmp with mode 755 (pytest's tmp_path is mode 700: the sandbox uid
    could not reach a checkout in it)."""
    path = Path(tempfile.mkdtemp(prefix="landbot-demo-test-", dir="/tmp"))
    os.chmod(path, 0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
