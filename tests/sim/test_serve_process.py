"""`python -m landbot.sim serve`: the fake as its own process, driven over HTTP."""

from __future__ import annotations

import json
import selectors
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest

# ./scripts/test --fast leaves this module out: its tests start processes (landbot, git,
# the sandbox, servers) and take seconds each.
pytestmark = pytest.mark.slow


def _first_line(proc: subprocess.Popen[str], timeout: float = 30.0) -> str:
    assert proc.stdout is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    if not sel.select(timeout):
        proc.kill()
        raise AssertionError("the fake GitHub process printed nothing")
    return proc.stdout.readline()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[dict[str, Any]]:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "landbot.sim",
            "serve",
            "--root",
            str(tmp_path / "github"),
            "--port",
            "0",
            "--install",
            "acme",
            "--app-key-out",
            str(tmp_path / "app.pem"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        info = json.loads(_first_line(proc))
        yield info
    finally:
        proc.terminate()
        assert proc.wait(timeout=10) == 0


def test_the_process_serves_and_is_driven_over_http(
    served: dict[str, Any], tmp_path: Path, run_git: Callable[..., str]
) -> None:
    url = served["url"]
    with httpx.Client(base_url=url, timeout=30) as control:
        created = control.post(
            "/_fake/repos", json={"full_name": "acme/widgets", "files": {"a.txt": "1\n"}}
        )
        assert created.status_code == 200, created.text
        opened = control.post(
            "/_fake/repos/acme/widgets/pulls",
            json={"head": "feature", "files": {"b.txt": "2\n"}, "author": "alice"},
        ).json()
        assert opened["number"] == 1
        bad = control.post(
            "/_fake/repos/acme/widgets/checks", json={"scenario": {"preset": "bogus"}}
        )
        assert bad.status_code == 400 and "unknown preset" in bad.json()["error"]

    # The App's key was written; its JWT finds the installation and mints a token.
    key = (tmp_path / "app.pem").read_bytes()
    now = int(time.time())
    app_jwt = jwt.encode(
        {"iss": str(served["app_id"]), "iat": now - 60, "exp": now + 540}, key, algorithm="RS256"
    )
    # 30 s, as above: the first GraphQL answer builds GitHub's schema (a second on a quiet
    # machine), and httpx's default 5 s ran out under a loaded one.
    with httpx.Client(
        base_url=url, headers={"Authorization": f"Bearer {app_jwt}"}, timeout=30
    ) as app:
        inst = app.get("/repos/acme/widgets/installation").json()
        assert inst["id"] == served["installations"]["acme"]
        token = app.post(f"/app/installations/{inst['id']}/access_tokens").json()["token"]

    with httpx.Client(base_url=url, headers={"Authorization": f"token {token}"}, timeout=30) as api:
        assert api.get("/repos/acme/widgets/pulls/1").json()["head"]["ref"] == "feature"
        enqueue = api.post(
            "/graphql",
            json={
                "query": "mutation($id: ID!) { enqueuePullRequest(input: {pullRequestId: $id}) "
                "{ clientMutationId } }",
                "variables": {"id": opened["node_id"]},
            },
        )
        assert "errors" not in enqueue.json()

    with httpx.Client(base_url=url, timeout=30) as control:
        steps = control.post("/_fake/queue/run", json={}).json()
        assert [s["action"] for s in steps] == ["built", "merged"]
        counts = control.get("/_fake/requests").json()
        assert counts["routes"]["POST /graphql"] == 1  # control routes are not counted
        events = [(d["event"], d["action"]) for d in control.get("/_fake/deliveries").json()]
        assert ("pull_request", "closed") in events

    clone = tmp_path / "clone"
    run_git("clone", "--quiet", served["git_url"].format(owner="acme", repo="widgets"), str(clone))
    assert (clone / "b.txt").read_text() == "2\n"


def test_a_used_root_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "github"
    root.mkdir()
    (root / "leftover").write_text("x")
    proc = subprocess.run(
        [sys.executable, "-m", "landbot.sim", "serve", "--root", str(root)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 2
    assert proc.stdout == ""
    [line] = proc.stderr.strip().splitlines()
    assert "is not empty" in line


def test_settings_env_points_landbot_at_the_fake(tmp_path: Path, app_key: bytes) -> None:
    from landbot.config import Settings
    from landbot.sim import FakeGitHub, FakeGitHubServer

    gh = FakeGitHub(tmp_path / "github", webhook_secret="s3cret")
    app = gh.create_app("landbot", private_key_pem=app_key)
    server = FakeGitHubServer(gh)  # not started: the URL is known once the socket is bound
    try:
        env = server.settings_env(app=app, key_file=tmp_path / "app.pem")
        with pytest.MonkeyPatch.context() as mp:
            for key, value in env.items():
                mp.setenv(key, value)
            settings = Settings()
        assert settings.github.api_url == server.url
        assert settings.github.git_url == gh.git_url
        assert settings.github.app_id == app.id
        assert settings.github.private_key_file is not None
        assert settings.github.private_key_file.read_bytes() == app_key
        assert settings.github.webhook_secret is not None
        assert settings.github.webhook_secret.get_secret_value() == "s3cret"
    finally:
        server.stop()
