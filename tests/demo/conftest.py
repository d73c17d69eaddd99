"""Fixtures for the demo's tests: folders the sandbox uid reaches."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ..conftest import sandbox_folder


@pytest.fixture
def root() -> Iterator[Path]:
    with sandbox_folder("landbot-demo-test-") as path:
        yield path
