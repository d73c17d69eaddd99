"""`landbot config show`: the effective settings, secrets masked but shown as set, and
where each value came from (default, FILE:LINE, or the variable)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

LANDBOT = str(Path(sys.executable).parent / "landbot")
SECRETS = {
    "LANDBOT_GITHUB__TOKEN": "ghs_hunter2token",
    "LANDBOT_GITHUB__WEBHOOK_SECRET": "hunter2-webhook",
    "LANDBOT_FIXER__MODEL_API_KEY": "sk-hunter2",
}
FILE = """repos = ["o/r"]
database_url = "postgresql+psycopg://bot:hunter2pw@db/landbot"

[fixer]
agent = "codex"
model_url = "https://api.openai.com/v1"

[policy.reasons]
checks_timed_out = "handback"

[[triage.rules]]
pattern = "ETIMEDOUT"
class = "flaky"
"""


def show(tmp_path: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.upper().startswith("LANDBOT_")}
    return subprocess.run(
        [LANDBOT, "config", "show", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=base | env,
        cwd=tmp_path,
    )


@pytest.fixture
def home(tmp_path: Path) -> Path:
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "landbot.toml").write_text(FILE)
    return tmp_path


def test_text_masks_secrets_and_says_where_each_value_came_from(home: Path) -> None:
    done = show(home, env=SECRETS | {"LANDBOT_FIXER__CONCURRENCY": "3"})
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "hunter2" not in out
    lines = out.splitlines()
    assert 'token = "********"  # set, masked; LANDBOT_GITHUB__TOKEN (environment)' in lines
    assert any(line.startswith('webhook_secret = "********"  # set, masked') for line in lines)
    assert any(line.startswith('model_api_key = "********"  # set, masked') for line in lines)
    assert (
        'database_url = "postgresql+psycopg://bot:***@db/landbot"  # config/landbot.toml:2' in lines
    )
    assert 'agent = "codex"  # config/landbot.toml:5' in lines
    assert "concurrency = 3  # LANDBOT_FIXER__CONCURRENCY (environment)" in lines
    assert "timeout = 1800  # default" in lines
    assert "# app_id is not set  (LANDBOT_GITHUB__APP_ID)" in lines
    assert 'reasons = { checks_timed_out = "handback" }  # config/landbot.toml:8' in lines
    assert 'rules = [{ pattern = "ETIMEDOUT", class = "flaky" }]  # config/landbot.toml:11' in lines


def test_text_is_toml_that_loads_back_to_the_same_settings(home: Path, tmp_path: Path) -> None:
    done = show(home, env={"LANDBOT_FIXER__CONCURRENCY": "3"})
    shown = tomllib.loads(done.stdout)
    assert shown["fixer"]["concurrency"] == 3 and shown["repos"] == ["o/r"]
    # Saved as a settings file (the masked password aside), it gives the same settings.
    copy = tmp_path / "copy.toml"
    copy.write_text(done.stdout.replace("bot:***@", "bot:hunter2pw@"))
    again = show(home, "--json", "--config", str(copy), env={})
    first = show(home, "--json", env={"LANDBOT_FIXER__CONCURRENCY": "3"})
    values = [(r["setting"], r["value"]) for r in json.loads(again.stdout)["settings"]]
    assert values == [(r["setting"], r["value"]) for r in json.loads(first.stdout)["settings"]]


def test_json(home: Path) -> None:
    done = show(home, "--json", env=SECRETS)
    assert done.returncode == 0, done.stderr
    assert "hunter2" not in done.stdout
    doc = json.loads(done.stdout)
    assert doc["config_file"] == "config/landbot.toml"
    rows = {r["setting"]: r for r in doc["settings"]}
    token = rows["github.token"]
    assert token["value"] == "********" and token["set"] and token["secret"]
    assert (token["source"], token["variable"]) == ("environment", "LANDBOT_GITHUB__TOKEN")
    assert rows["github.app_id"]["set"] is False and rows["github.app_id"]["value"] is None
    agent = rows["fixer.agent"]
    assert (agent["source"], agent["file"], agent["line"]) == ("file", "config/landbot.toml", 5)
    assert agent["env"] == "LANDBOT_FIXER__AGENT" and agent["toml"] == "[fixer] agent"
    assert rows["fixer.timeout"]["source"] == "default"
    assert rows["database_url"]["value"] == "postgresql+psycopg://bot:***@db/landbot"


def test_an_unset_secret_is_shown_unset(tmp_path: Path) -> None:
    done = show(tmp_path, "--json", env={})
    rows = {r["setting"]: r for r in json.loads(done.stdout)["settings"]}
    assert rows["github.token"]["set"] is False and rows["github.token"]["value"] is None
    assert json.loads(done.stdout)["config_file"] is None


def test_a_bad_setting_is_one_line_and_exit_2(tmp_path: Path) -> None:
    done = show(tmp_path, env={"LANDBOT_FIXER__AGNET": "codex"})
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "did you mean LANDBOT_FIXER__AGENT?" in done.stderr
