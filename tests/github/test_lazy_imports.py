"""Importing the client is cheap: githubkit, httpx and friends load on the first call."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("githubkit", "httpx", "tenacity", "jwt", "graphql", "cryptography")

PROBE = """
import sys
import landbot.github, landbot.github.client, landbot.github.models, landbot.github.errors
import landbot.github.auth, landbot.github.retry, landbot.github.documents
from landbot.config import GitHubSettings
from landbot.github.client import GitHubClient
client = GitHubClient(GitHubSettings(token="t"))
{action}
print(",".join(m for m in {heavy!r} if m in sys.modules))
"""


def loaded(action: str = "") -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE.format(action=action, heavy=HEAVY)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    return set(out.split(",")) - {""}


def test_importing_and_building_a_client_loads_nothing_heavy() -> None:
    assert loaded() == set()


def test_the_first_call_loads_githubkit() -> None:
    """The control: the probe does see githubkit once the client needs it."""
    assert {"githubkit", "httpx"} <= loaded("client._github()")
