"""The App manifest subscribes to exactly the events the intake handles, with least rights."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from landbot.errors import LandbotError
from landbot.intake.events import handled_events
from landbot.manifest import load, render

LANDBOT = str(Path(sys.executable).parent / "landbot")


def test_events_are_derived_from_the_intake_handlers() -> None:
    assert set(load()["default_events"]) == handled_events()


def test_permissions_are_the_least_the_bot_uses() -> None:
    assert load()["default_permissions"] == {
        "actions": "read",
        "checks": "read",
        "contents": "write",
        "issues": "write",
        "merge_queues": "write",
        "metadata": "read",
        "pull_requests": "write",
    }


def test_landbot_app_manifest_prints_valid_json_with_the_url() -> None:
    out = subprocess.run(
        [LANDBOT, "app", "manifest", "--webhook-url", "https://bot.example.org/webhook"],
        capture_output=True,
        text=True,
        check=True,
    )
    data = json.loads(out.stdout)
    assert data["hook_attributes"] == {"url": "https://bot.example.org/webhook", "active": True}
    assert data["redirect_url"] == "https://bot.example.org/"
    assert set(data["default_events"]) == handled_events()


def test_a_bad_url_is_refused() -> None:
    with pytest.raises(LandbotError, match="not a URL"):
        render("bot.example.org")
