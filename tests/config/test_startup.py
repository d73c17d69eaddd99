"""`landbot serve`, `worker` and `poll` refuse to start on a setting they would fail on
later: one line, exit 2, naming the setting, where it was set and the fix. Each refusal
has a control that starts."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from landbot.config import load_settings
from landbot.errors import LandbotError
from landbot.ready import check_ready, check_store
from landbot.store import Store
from landbot.store.db import url_problem

# ./scripts/test --fast leaves this module out: its tests start processes (landbot, git,
# the sandbox, servers) and take seconds each.
pytestmark = pytest.mark.slow

LANDBOT = str(Path(sys.executable).parent / "landbot")


@pytest.fixture
def ready(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Settings that pass every check: a token, a SQLite file in an existing folder."""
    monkeypatch.setenv("LANDBOT_GITHUB__TOKEN", "ghs_test")
    monkeypatch.setenv("LANDBOT_GITHUB__WEBHOOK_SECRET", "s3cret")
    monkeypatch.setenv("LANDBOT_DATABASE_URL", f"sqlite:///{tmp_path / 'landbot.db'}")


def refused(**checks: bool) -> str:
    with pytest.raises(LandbotError) as err:
        check_ready(load_settings(), **checks)
    msg = str(err.value)
    assert "\n" not in msg
    return msg


def test_the_control_passes_every_check(ready: None) -> None:
    check_ready(load_settings(), webhook=True)


def test_the_default_fixer_is_no_fixer_and_starts(ready: None) -> None:
    # agent "command" with no command is the default: hand-backs only, not an error.
    s = load_settings()
    assert s.fixer.agent == "command" and not s.fixer.enabled
    check_ready(s)


def test_a_command_agent_without_a_command(ready: None, tmp_path: Path) -> None:
    Path("config").mkdir()
    Path("config/landbot.toml").write_text('[fixer]\nagent = "command"\n')
    msg = refused()
    assert msg.startswith('setting [fixer] agent in config/landbot.toml line 2 is "command"')
    assert "[fixer] command" in msg
    Path("config/landbot.toml").write_text('[fixer]\nagent = "command"\ncommand = ["true"]\n')
    check_ready(load_settings())


def test_a_model_agent_without_a_model_url(ready: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LANDBOT_FIXER__AGENT", "codex")
    msg = refused()
    assert msg.startswith("setting LANDBOT_FIXER__AGENT in the environment is 'codex'")
    assert "LANDBOT_FIXER__MODEL_URL" in msg
    monkeypatch.setenv("LANDBOT_FIXER__MODEL_URL", "https://api.openai.com/v1")
    check_ready(load_settings())


def test_a_state_dir_that_cannot_be_created(
    ready: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv("LANDBOT_FIXER__STATE_DIR", str(tmp_path / "a-file" / "state"))
    msg = refused()
    assert msg.startswith("setting LANDBOT_FIXER__STATE_DIR in the environment is ")
    assert "a-file is not a folder" in msg
    # The control: a folder that does not exist yet but can be made; the check makes nothing.
    monkeypatch.setenv("LANDBOT_FIXER__STATE_DIR", str(tmp_path / "new" / "state"))
    check_ready(load_settings())
    assert not (tmp_path / "new").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["a-file"]  # the probe file is gone too


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs /proc, a read-only folder")
def test_a_state_dir_that_cannot_be_written(ready: None, monkeypatch: pytest.MonkeyPatch) -> None:
    # /proc refuses new files even to root, for whom permission bits say nothing.
    monkeypatch.setenv("LANDBOT_FIXER__STATE_DIR", "/proc/landbot-state")
    assert "/proc is not writable" in refused()


def pem_key(path: Path) -> Path:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        )
    )
    return path


def test_app_credentials(ready: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("LANDBOT_GITHUB__TOKEN")
    assert refused().startswith("no GitHub credentials")
    monkeypatch.setenv("LANDBOT_GITHUB__APP_ID", "12345")
    assert "needs [github] private_key_file" in refused()
    monkeypatch.setenv("LANDBOT_GITHUB__PRIVATE_KEY_FILE", str(tmp_path / "app.pem"))
    msg = refused()
    assert msg.startswith("setting LANDBOT_GITHUB__PRIVATE_KEY_FILE in the environment names ")
    assert "app.pem, which does not exist" in msg
    (tmp_path / "app.pem").write_text("not a key\n")
    assert "is not an unencrypted PEM private key" in refused()
    pem_key(tmp_path / "app.pem")  # the control: a real key
    check_ready(load_settings())


def test_serve_needs_the_webhook_secret(ready: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LANDBOT_GITHUB__WEBHOOK_SECRET")
    assert "LANDBOT_GITHUB__WEBHOOK_SECRET is not set" in refused(webhook=True)
    check_ready(load_settings())  # the worker does not need it


def test_a_read_only_path_that_is_not_there(
    ready: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("LANDBOT_SANDBOX__READ_ONLY", f'["{tmp_path / "toolchain"}"]')
    assert "toolchain, which does not exist" in refused()
    (tmp_path / "toolchain").mkdir()
    check_ready(load_settings())


def test_a_bad_triage_rule(ready: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LANDBOT_TRIAGE__RULES", '[{"pattern": "(", "class": "flaky"}]')
    assert "not a valid regular expression" in refused()
    monkeypatch.setenv("LANDBOT_TRIAGE__RULES", '[{"pattern": "ETIMEDOUT", "class": "flaky"}]')
    check_ready(load_settings())


# --- database URLs ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("postgres://bot:hunter2@db/landbot", "write postgresql+psycopg://bot:***@db/landbot"),
        ("postgresql+psycopg2://db/landbot", "write postgresql+psycopg://db/landbot"),
        ("mysql://db/landbot", "SQLite or PostgreSQL"),
        ("sqlite:////nonexistent/dir/x.db", "folder /nonexistent/dir does not exist"),
        ("landbot.db", "is not a database URL"),
    ],
)
def test_database_urls_carry_the_fix(
    ready: None, monkeypatch: pytest.MonkeyPatch, url: str, says: str
) -> None:
    monkeypatch.setenv("LANDBOT_DATABASE_URL", url)
    msg = refused()
    assert msg.startswith("setting LANDBOT_DATABASE_URL in the environment: ")
    assert says in msg and "hunter2" not in msg


@pytest.mark.parametrize(
    "url",
    [
        "sqlite:///./landbot.db",
        "sqlite://",
        "postgresql://bot@db/landbot",
        "postgresql+psycopg://db/l",
    ],
)
def test_database_urls_landbot_opens(url: str) -> None:
    assert url_problem(url) is None


def test_a_url_in_the_file_is_named_with_its_line(tmp_path: Path) -> None:
    Path("config").mkdir()
    Path("config/landbot.toml").write_text('repos = ["o/r"]\ndatabase_url = "postgres://db/l"\n')
    with pytest.raises(
        LandbotError, match=r"^setting database_url in config/landbot.toml line 2: "
    ):
        check_store(load_settings())


def test_postgresql_without_the_driver_says_which_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    # What Python reports for a package that is not installed (find_spec answers None).
    monkeypatch.setitem(sys.modules, "psycopg", None)
    assert url_problem("postgresql+psycopg://db/l") == (
        "PostgreSQL needs the psycopg driver, which is not installed; "
        "pip install 'landbot[postgres]'"
    )


def test_the_store_creates_no_folder(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'missing' / 'landbot.db'}"
    with pytest.raises(Exception, match="unable to open database file"):
        Store.open(url)
    assert not (tmp_path / "missing").exists()
    store = Store.open(f"sqlite:///{tmp_path / 'landbot.db'}")  # the control
    store.close()
    assert (tmp_path / "landbot.db").is_file()


# --- the commands -----------------------------------------------------------------------


def landbot(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.upper().startswith("LANDBOT_")}
    return subprocess.run(
        [LANDBOT, *args], capture_output=True, text=True, timeout=60, env=base | env, cwd=cwd
    )


@pytest.mark.parametrize("command", [["serve"], ["worker"], ["poll", "--repo", "o/r"]])
@pytest.mark.parametrize(
    ("env", "says"),
    [
        (
            {"LANDBOT_FIXER__AGENT": "gpt"},
            "setting LANDBOT_FIXER__AGENT in the environment is invalid",
        ),
        ({"LANDBOT_FIXER__AGENT": "command"}, "[fixer] command (LANDBOT_FIXER__COMMAND) is empty"),
        ({"LANDBOT_FIXER__AGNET": "codex"}, "did you mean LANDBOT_FIXER__AGENT?"),
        (
            {"LANDBOT_DATABASE_URL": "sqlite:////nonexistent/dir/x.db"},
            "/nonexistent/dir does not exist",
        ),
    ],
)
def test_the_long_running_commands_refuse_to_start(
    tmp_path: Path, command: list[str], env: dict[str, str], says: str
) -> None:
    good = {
        "LANDBOT_GITHUB__TOKEN": "ghs_test",
        "LANDBOT_GITHUB__WEBHOOK_SECRET": "s3cret",
        "LANDBOT_DATABASE_URL": f"sqlite:///{tmp_path / 'landbot.db'}",
    }
    done = landbot(*command, env=good | env, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and says in lines[0], done.stderr
    assert not Path("/nonexistent").exists()


def test_the_worker_starts_on_good_settings(tmp_path: Path) -> None:
    """The control of the refusals above: the same settings, spelled right, start."""
    env = {
        "LANDBOT_GITHUB__TOKEN": "ghs_test",
        "LANDBOT_DATABASE_URL": f"sqlite:///{tmp_path / 'landbot.db'}",
        "LANDBOT_FIXER__AGENT": "command",
        "LANDBOT_FIXER__COMMAND": '["true"]',
        "LANDBOT_WORKER__IDLE_SLEEP": "0.05",
    }
    base = {k: v for k, v in os.environ.items() if not k.upper().startswith("LANDBOT_")}
    proc = subprocess.Popen(
        [LANDBOT, "worker"], env=base | env, cwd=tmp_path, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and proc.poll() is None:
            if (tmp_path / "landbot.db").exists():
                break
            time.sleep(0.1)
        time.sleep(1)
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert (tmp_path / "landbot.db").is_file()
