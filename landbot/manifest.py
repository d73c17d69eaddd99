"""The GitHub App manifest (config/app-manifest.json), rendered for one deployment.

Why each permission (tests/app/test_manifest.py derives the set from the calls the code
makes): contents write (push a fixer's commits), pull requests write (re-read pull
requests, comments, reactions, minimize, auto-merge), merge queues write (enqueue, read the
queue, `merge_group` events), checks write (landbot's own `landbot` and `landbot config`
check runs; reading failed checks and their annotations, `check_run` events), actions read
(runs, jobs, logs; `workflow_run` events), issues write (the `issue_comment` event: a comment
on a pull request is an issue comment; the issues landbot keeps itself, a flaky test's or the
breaker's, opened, edited and closed), metadata read (always; a collaborator's role).
Contents (held as write) also covers reading `.github/landbot.toml` and the default
branch's tip, and the `push` event that re-reads it; pull requests write covers labels on
a pull request ("pull requests and related comments, assignees, labels, milestones, and
merges", GitHub's description of the permission in its OpenAPI `app-permissions`).

`url` is the App's homepage: the operator's own (the webhook's origin unless --url says
otherwise), never an App slug they do not own. `redirect_url` belongs to the manifest flow
(`landbot app create` sets its own loopback callback); a printed manifest has none unless
asked, since only the flow can trade the code GitHub sends there.
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


def _url(value: str, option: str, example: str) -> str:
    parts = urlsplit(value)
    if parts.scheme not in ("https", "http") or not parts.netloc:
        raise LandbotError(f"{option} {value!r} is not a URL; pass e.g. {example}")
    return value


def render(
    webhook_url: str,
    name: str | None = None,
    *,
    url: str | None = None,
    redirect_url: str | None = None,
) -> dict[str, Any]:
    """The manifest with the operator's webhook URL, homepage and (for the flow) redirect."""
    _url(webhook_url, "--webhook-url", "https://bot.example.com/webhook")
    parts = urlsplit(webhook_url)
    data = load()
    data["hook_attributes"]["url"] = webhook_url
    data["url"] = (
        _url(url, "--url", "https://github.com/OWNER/REPO")
        if url
        else f"{parts.scheme}://{parts.netloc}/"
    )
    data.pop("redirect_url", None)
    if redirect_url:
        data["redirect_url"] = _url(redirect_url, "redirect_url", "http://127.0.0.1:8400/callback")
    if name:
        data["name"] = name
    return data
