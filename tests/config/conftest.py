"""Shared by the settings tests."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No LANDBOT_ variable of the machine's, and a working directory with no
    config/landbot.toml unless a test writes one."""
    for key in list(os.environ):
        if key.upper().startswith("LANDBOT_"):
            monkeypatch.delenv(key)
    monkeypatch.chdir(tmp_path)
