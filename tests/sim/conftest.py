"""Fixtures for the simulated GitHub's own tests (real git in tmp dirs, a real HTTP server)."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from landbot.sim import FakeGitHub, FakeGitHubServer
from landbot.sim.state import Repository


@pytest.fixture(scope="session")
def app_key() -> bytes:
    """One RSA key for every test's App (generating one per test costs ~100 ms)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )


@pytest.fixture
def gh(tmp_path: Path) -> FakeGitHub:
    return FakeGitHub(tmp_path / "github", webhook_secret="s3cret")


@pytest.fixture
def repo(gh: FakeGitHub) -> Repository:
    repo = gh.create_repo(
        "acme/widgets",
        files={"README.md": "# widgets\n", "app.py": "ANSWER = 41\n"},
    )
    gh.add_collaborator(repo, "maintainer", "write")
    return repo


@pytest.fixture
def token(gh: FakeGitHub, repo: Repository) -> str:
    return gh.create_token("maintainer")


@pytest.fixture(scope="session")
def shared_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeGitHubServer]:
    """One HTTP server for the session (starting and stopping one costs ~0.2 s)."""
    idle = FakeGitHub(tmp_path_factory.mktemp("idle-github"))
    with FakeGitHubServer(idle) as server:
        yield server


@pytest.fixture
def server(shared_server: FakeGitHubServer, gh: FakeGitHub) -> FakeGitHubServer:
    """The shared server answering from this test's own model, counts and faults cleared."""
    shared_server.use(gh)
    return shared_server


@pytest.fixture
def api(server: FakeGitHubServer, token: str) -> Iterator[httpx.Client]:
    # 30 s, not httpx's 5: a process's first GraphQL answer builds GitHub's schema (a second
    # on a quiet machine, more than 5 under a loaded one).
    auth = {"Authorization": f"token {token}"}
    with httpx.Client(base_url=server.url, headers=auth, timeout=30) as client:
        yield client


@pytest.fixture
def graphql() -> Callable[..., dict[str, Any]]:
    """POST a document; assert HTTP 200 (GitHub answers GraphQL errors with 200 too)."""

    def post(client: httpx.Client, query: str, **variables: Any) -> dict[str, Any]:
        response = client.post("/graphql", json={"query": query, "variables": variables})
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        return body

    return post


@pytest.fixture
def run_git() -> Callable[..., str]:
    def run(*args: str, cwd: Path | None = None) -> str:
        proc = subprocess.run(
            ["git", "-c", "user.name=Dev", "-c", "user.email=dev@example.com", *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.strip()

    return run
