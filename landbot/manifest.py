"""The GitHub App manifest (config/app-manifest.json), printed with a chosen webhook URL.

Why each permission: contents write (push a fixer's commits), pull requests write (comments,
auto-merge), merge queues write (enqueue), checks and actions read (failed checks, job
logs), issues write (comments and reactions on the PR's issue), metadata read (always).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from landbot.errors import LandbotError

MANIFEST = Path(__file__).resolve().parent.parent / "config" / "app-manifest.json"
_PACKAGED = Path(__file__).resolve().parent / "app-manifest.json"


def load() -> dict[str, Any]:
    path = MANIFEST if MANIFEST.is_file() else _PACKAGED
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def render(webhook_url: str, name: str | None = None) -> dict[str, Any]:
    parts = urlsplit(webhook_url)
    if parts.scheme not in ("https", "http") or not parts.netloc:
        raise LandbotError(
            f"--webhook-url {webhook_url!r} is not a URL; pass e.g. https://bot.example.com/webhook"
        )
    data = load()
    data["hook_attributes"]["url"] = webhook_url
    data["redirect_url"] = f"{parts.scheme}://{parts.netloc}/"
    if name:
        data["name"] = name
    return data
