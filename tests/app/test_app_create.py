"""`landbot app create` completes GitHub's manifest flow against the simulated GitHub.

The test plays the person's browser: it opens the loopback page the command prints, posts
the page's form where the form says (the simulated GitHub's web form, which registers the
App and redirects with a one-time code), and follows the redirect back to the loopback
callback. The command must then have traded the code (POST /app-manifests/{code}/
conversions) and written the App ID, key and webhook secret where the settings read them:
the proof is that landbot, given only that settings file, authenticates as the new App.
"""

from __future__ import annotations

import json
import os
import re
import selectors
import stat
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import IO
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from landbot import app_setup
from landbot.config import load_settings
from landbot.errors import LandbotError
from landbot.github.client import GitHubClient
from landbot.sim import FakeGitHub, FakeGitHubServer
from landbot.sim.rest import register_from_manifest

# ./scripts/test --fast leaves this module out: its tests start processes (landbot, git,
# the sandbox, servers) and take seconds each.
pytestmark = pytest.mark.slow

LANDBOT = str(Path(sys.executable).parent / "landbot")
WEBHOOK = "https://bot.example.org/webhook"
HOMEPAGE = "https://github.com/octo-org/landbot-deploy"
CREATE = (LANDBOT, "app", "create", "--webhook-url", WEBHOOK, "--no-open")


class _Form(HTMLParser):
    """The one form of the page: its method, action and fields."""

    def __init__(self) -> None:
        super().__init__()
        self.method = ""
        self.action = ""
        self.fields: dict[str, str] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "form":
            self.method, self.action = a.get("method", "").lower(), a.get("action", "")
        elif tag == "input" and "name" in a:
            self.fields[a["name"]] = a.get("value", "")


def parse_form(page: str) -> _Form:
    form = _Form()
    form.feed(page)
    return form


@pytest.fixture
def github(tmp_path: Path) -> Iterator[tuple[FakeGitHub, FakeGitHubServer]]:
    gh = FakeGitHub(tmp_path / "github")
    with FakeGitHubServer(gh) as server:
        yield gh, server


def _env(server: FakeGitHubServer) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LANDBOT_")}
    env["LANDBOT_GITHUB__API_URL"] = server.url
    return env


def _read_line(stream: IO[str], deadline: float) -> str:
    sel = selectors.DefaultSelector()
    sel.register(stream, selectors.EVENT_READ)
    while time.monotonic() < deadline:
        if sel.select(timeout=0.2):
            return stream.readline()
    raise AssertionError("landbot app create printed no page URL in time")


def _start(cwd: Path, server: FakeGitHubServer, *extra: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [*CREATE, "--url", HOMEPAGE, "--web-url", server.url, "--timeout", "60", *extra],
        cwd=cwd,
        env=_env(server),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    line = _read_line(proc.stderr, time.monotonic() + 30)
    found = re.search(r"open (http://127\.0\.0\.1:\d+/) ", line)
    assert found, line
    return proc, found.group(1)


def _browse(page_url: str) -> tuple[dict[str, object], httpx.Response]:
    """Open the page, submit its form to GitHub, follow GitHub's redirect back."""
    page = httpx.get(page_url)
    assert page.status_code == 200
    form = parse_form(page.text)
    assert form.method == "post"
    manifest = json.loads(form.fields["manifest"])
    to_github = httpx.post(form.action, data={"manifest": form.fields["manifest"]})
    assert to_github.status_code == 302, to_github.text
    back = to_github.headers["location"]
    assert back.startswith(f"{page_url}callback?")  # GitHub sends the browser back here
    return manifest, httpx.get(back)


def test_app_create_registers_the_app_and_keeps_what_the_settings_need(
    github: tuple[FakeGitHub, FakeGitHubServer], tmp_path: Path
) -> None:
    gh, server = github
    (tmp_path / "config").mkdir()
    proc, page_url = _start(tmp_path, server, "--name", "landbot-octo")
    manifest, callback = _browse(page_url)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert callback.status_code == 200 and "landbot-octo is registered" in callback.text

    # The manifest: the operator's homepage and webhook, the flow's own loopback redirect.
    assert manifest["url"] == HOMEPAGE
    assert manifest["hook_attributes"] == {"url": WEBHOOK, "active": True}
    assert manifest["redirect_url"] == f"{page_url}callback"
    # GitHub registered the App the manifest describes, for the person signed in.
    (app,) = [a for a in gh.apps.values() if a.slug == "landbot-octo"]
    assert app.permissions == manifest["default_permissions"]
    assert sorted(app.events) == sorted(manifest["default_events"])  # type: ignore[call-overload]

    config = tmp_path / "config" / "landbot.toml"
    key = tmp_path / "config" / "landbot-octo.private-key.pem"
    for path in (config, key):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    assert app.private_key_pem is not None
    assert key.read_bytes().strip() == app.private_key_pem.strip()
    github_table = tomllib.loads(config.read_text())["github"]
    assert github_table["app_id"] == app.id
    assert Path(github_table["private_key_file"]) == key.resolve()
    assert len(github_table["webhook_secret"]) >= 20
    assert f"App ID {app.id}" in out and f"{app.slug}/installations/new" in out
    assert github_table["webhook_secret"] not in out + err  # a secret is never printed

    # Where the settings expect them: landbot, given this file alone, is the new App.
    settings = load_settings(config)
    assert settings.github.app_id == app.id
    assert settings.github.webhook_secret is not None
    assert settings.github.webhook_secret.get_secret_value() == github_table["webhook_secret"]
    client = GitHubClient(settings.github.model_copy(update={"api_url": server.url}))
    try:
        assert client.bot_login() == "landbot-octo[bot]"
    finally:
        client.close()


def test_a_redirect_with_another_state_is_refused_and_the_flow_waits(
    github: tuple[FakeGitHub, FakeGitHubServer], tmp_path: Path
) -> None:
    gh, server = github
    proc, page_url = _start(tmp_path, server, "--config", str(tmp_path / "landbot.toml"))
    page = httpx.get(page_url)
    form = parse_form(page.text)
    # A forged redirect (another state) is refused and trades nothing...
    forged_app = {**json.loads(form.fields["manifest"]), "name": "forged"}
    code = register_from_manifest(gh, forged_app, "mallory")
    forged = httpx.get(f"{page_url}callback", params={"code": code, "state": "forged"})
    assert forged.status_code == 400
    assert not (tmp_path / "landbot.toml").exists()
    assert proc.poll() is None  # still waiting for the real answer
    # ...and the control: the real redirect, with the page's own state, completes.
    state = parse_qs(urlsplit(form.action).query)["state"][0]
    real = httpx.post(form.action, data={"manifest": form.fields["manifest"]})
    assert parse_qs(urlsplit(real.headers["location"]).query)["state"] == [state]
    assert httpx.get(real.headers["location"]).status_code == 200
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert tomllib.loads((tmp_path / "landbot.toml").read_text())["github"]["app_id"] > 0


def test_a_code_is_traded_once(github: tuple[FakeGitHub, FakeGitHubServer]) -> None:
    gh, server = github
    manifest = {
        "name": "once",
        "url": HOMEPAGE,
        "hook_attributes": {"url": WEBHOOK},
        "default_permissions": {"metadata": "read"},
    }
    code = register_from_manifest(gh, manifest, "octocat")
    first = app_setup.convert(server.url, code)
    assert first.slug == "once" and first.pem.startswith("-----BEGIN")
    assert first.webhook_secret
    with pytest.raises(LandbotError, match="a code works once"):
        app_setup.convert(server.url, code)


def test_existing_app_settings_are_refused_before_github_creates_anything(
    github: tuple[FakeGitHub, FakeGitHubServer], tmp_path: Path
) -> None:
    gh, server = github
    config = tmp_path / "landbot.toml"
    config.write_text("[github]\napp_id = 7\n")
    out = subprocess.run(
        [*CREATE, "--web-url", server.url, "--config", str(config)],
        cwd=tmp_path,
        env=_env(server),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        f"landbot: {config} already sets [github] app_id; pass --config with a new file, "
        "or remove those keys"
    ]
    assert gh.apps == {} and config.read_text() == "[github]\napp_id = 7\n"


def test_the_keys_join_an_existing_github_table(tmp_path: Path) -> None:
    # The control of the refusal: a [github] table without App keys gets them, in place.
    text = (
        '# mine\n[github]\napi_url = "https://ghe.example.com/api/v3"\n\n[fixer]\nagent = "codex"\n'
    )
    assert app_setup.already_set(text) == []
    lines = app_setup.settings_lines(42, Path("/etc/landbot/app.pem"), 'se"cret')
    merged = tomllib.loads(app_setup.with_credentials(text, lines))
    assert merged["github"] == {
        "api_url": "https://ghe.example.com/api/v3",
        "app_id": 42,
        "private_key_file": "/etc/landbot/app.pem",
        "webhook_secret": 'se"cret',
    }
    assert merged["fixer"] == {"agent": "codex"}
    assert tomllib.loads(app_setup.with_credentials("", lines))["github"]["app_id"] == 42


def test_an_existing_key_file_is_refused(tmp_path: Path) -> None:
    key = tmp_path / "app.pem"
    key.write_text("old")
    with pytest.raises(LandbotError, match="exists; pass --key-file"):
        app_setup.check_targets(tmp_path / "landbot.toml", key)
    app_setup.check_targets(tmp_path / "landbot.toml", tmp_path / "new.pem")  # the control


def test_the_web_address_follows_the_api_url() -> None:
    assert app_setup.web_url_for("https://api.github.com") == "https://github.com"
    assert app_setup.web_url_for("https://ghe.example.com/api/v3/") == "https://ghe.example.com"
    with pytest.raises(LandbotError, match="pass --web-url"):
        app_setup.web_url_for("http://127.0.0.1:9999")
    assert app_setup.form_action("https://github.com", "octo-org", "s t").startswith(
        "https://github.com/organizations/octo-org/settings/apps/new?state=s%20t"
    )
    with pytest.raises(LandbotError, match="not an organization name"):
        app_setup.form_action("https://github.com", "../evil", "s")


def test_no_answer_ends_the_flow_with_one_line(tmp_path: Path) -> None:
    def never(code: str) -> app_setup.Created:
        raise AssertionError("no redirect came, so nothing is traded")

    with pytest.raises(LandbotError, match=r"no answer from GitHub within 0\.2 s"):
        app_setup.run_flow({"name": "x"}, action=lambda s: s, finish=never, timeout=0.2)
