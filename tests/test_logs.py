"""landbot's log (landbot/logs.py): the level, JSON lines or human lines, the fields of each
event, and the secrets it never writes, down to a real `landbot serve` run."""

from __future__ import annotations

import datetime as dt
import io
import json
import logging
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from landbot import logs
from landbot.errors import LandbotError

# ./scripts/test --fast leaves this module out: its tests start processes (landbot, git,
# the sandbox, servers) and take seconds each.
pytestmark = pytest.mark.slow

LOG = logging.getLogger("landbot.test")
ROOT = Path(__file__).resolve().parents[1]


class Terminal(io.StringIO):
    """A stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


@pytest.fixture(autouse=True)
def _clean_logging() -> Iterator[None]:
    root, landbot = logging.getLogger(), logging.getLogger("landbot")
    levels = root.level, landbot.level
    yield
    logs.reset()
    logs.forget_secrets()
    root.setLevel(levels[0])
    landbot.setLevel(levels[1])


def lines(stream: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def log_each_level() -> None:
    for level in (logging.DEBUG, logging.INFO, logging.WARNING, logging.ERROR):
        logs.event(LOG, f"at {logging.getLevelName(level).lower()}", level)


# --- levels -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("level", "shown"),
    [
        ("debug", ["at debug", "at info", "at warning", "at error"]),
        ("info", ["at info", "at warning", "at error"]),
        ("warning", ["at warning", "at error"]),
        ("error", ["at error"]),
    ],
)
def test_the_level_keeps_its_events_and_the_ones_above(level: str, shown: list[str]) -> None:
    out = io.StringIO()
    logs.configure(level, stream=out)
    log_each_level()
    assert [line["event"] for line in lines(out)] == shown


def test_the_environment_sets_the_level_and_the_option_wins(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LANDBOT_LOG_LEVEL", "ERROR")
    assert logs.level_from(None) == logging.ERROR
    assert logs.level_from("debug") == logging.DEBUG  # --log-level over the environment
    monkeypatch.delenv("LANDBOT_LOG_LEVEL")
    assert logs.level_from(None) == logging.INFO  # the default


def test_the_libraries_say_only_warnings_unless_at_debug() -> None:
    out = io.StringIO()
    logs.configure("info", stream=out)
    logging.getLogger("httpx").info("HTTP Request: GET https://api.github.com/x")
    logging.getLogger("httpx").warning("a library warning")
    assert [line["event"] for line in lines(out)] == ["a library warning"]
    out = io.StringIO()
    logs.configure("debug", stream=out)
    logging.getLogger("httpx").info("HTTP Request: GET https://api.github.com/x")
    assert [line["logger"] for line in lines(out)] == ["httpx"]


@pytest.mark.parametrize("bad", ["verbose", "", "10", "warn"])
def test_a_bad_level_names_the_allowed_ones(bad: str) -> None:
    with pytest.raises(LandbotError, match=r"use one of debug, info, warning, error$"):
        logs.parse_level(bad)


def landbot_cli(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("LANDBOT_")}
    return subprocess.run(
        [sys.executable, "-m", "landbot", *args],
        env={**clean, **env},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("args", "env", "named"),
    [
        (["--log-level", "loud"], {}, "--log-level 'loud'"),
        ([], {"LANDBOT_LOG_LEVEL": "loud"}, "LANDBOT_LOG_LEVEL 'loud'"),
    ],
    ids=["option", "environment"],
)
def test_the_command_line_refuses_a_bad_level_in_one_line(
    tmp_path: Path, args: list[str], env: dict[str, str], named: str
) -> None:
    db = {"LANDBOT_DATABASE_URL": f"sqlite:///{tmp_path / 'landbot.db'}"}
    out = landbot_cli(*args, "status", "--json", env={**db, **env}, cwd=tmp_path)
    assert (out.returncode, out.stdout) == (2, "")
    assert out.stderr == (
        f"landbot: {named} is not a log level; use one of debug, info, warning, error\n"
    )
    # The control: the same command with a good level runs.
    fixed = {k: "debug" for k in env}
    good = ["--log-level", "warning"] if args else []
    ok = landbot_cli(*good, "status", "--json", env={**db, **fixed}, cwd=tmp_path)
    assert (ok.returncode, ok.stdout.strip()) == (0, "[]"), ok.stderr


# --- formats ------------------------------------------------------------------------------

IDS = {
    "repo": "acme/widgets",
    "pr": 7,
    "head_sha": "a" * 40,
    "drop_id": 3,
    "delivery_id": "72d3162e-cc78-11e3-81ab-4c9367dc0958",
}


def test_json_lines_have_the_time_level_logger_event_and_fields() -> None:
    out = io.StringIO()
    logs.configure("info", stream=out)
    with logs.bound(**IDS):
        logs.event(LOG, "comment posted", comment_id=12, url="https://github.com/x")
        LOG.warning("a plain line, %s", "formatted")
    logs.event(LOG, "outside the block", pr=8)
    first, second, third = lines(out)
    assert list(first)[:4] == ["time", "level", "logger", "event"]
    assert dt.datetime.fromisoformat(first["time"]).tzinfo is not None
    assert first == {
        "time": first["time"],
        "level": "info",
        "logger": "landbot.test",
        "event": "comment posted",
        **IDS,
        "comment_id": 12,
        "url": "https://github.com/x",
    }
    # A line logged the old way is an event too, with the bound fields.
    assert (second["level"], second["event"], second["pr"]) == (
        "warning",
        "a plain line, formatted",
        7,
    )
    assert third == {**third, "event": "outside the block", "pr": 8}
    assert "repo" not in third  # the block's fields ended with it


def test_a_field_cannot_replace_the_fixed_keys() -> None:
    out = io.StringIO()
    logs.configure("info", stream=out)
    with pytest.raises(TypeError, match="level cannot be a log field"):
        logs.event(LOG, "the event", level=logging.WARNING)  # meant as the level: a mistake
    with (
        pytest.raises(TypeError, match="logger, time cannot be a log field"),
        logs.bound(time="nope", logger="nope"),
    ):
        pass
    # A record from elsewhere with such an attribute does not replace them either.
    LOG.info("the event", extra={logs.FIELDS_ATTR: {"level": "nope", "time": "nope"}})
    [line] = lines(out)
    assert (line["level"], line["logger"], line["event"]) == ("info", "landbot.test", "the event")
    assert line["time"] != "nope"


def test_an_exception_is_one_json_line_with_its_traceback() -> None:
    out = io.StringIO()
    logs.configure("info", stream=out)
    try:
        raise RuntimeError("the store went away")
    except RuntimeError:
        LOG.exception("worker step failed")
    [line] = lines(out)  # one line: the traceback is a field, not more lines
    assert line["event"] == "worker step failed"
    assert "RuntimeError: the store went away" in line["exception"]


def test_a_terminal_gets_human_lines() -> None:
    tty = Terminal()
    logs.configure("info", stream=tty)
    with logs.bound(**IDS):
        logs.event(LOG, "drop decided", outcome="requeued", why="a flaky runner")
    [text] = tty.getvalue().splitlines()
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)
    assert " INFO    landbot.test  drop decided  repo=acme/widgets pr=7 " in text
    assert f"head_sha={'a' * 40} drop_id=3 delivery_id={IDS['delivery_id']}" in text
    assert text.endswith(' outcome=requeued why="a flaky runner"')
    # The control: the same lines to a stream that is not a terminal are JSON.
    pipe = io.StringIO()
    logs.configure("info", stream=pipe)
    with logs.bound(**IDS):
        logs.event(LOG, "drop decided", outcome="requeued")
    assert lines(pipe)[0]["outcome"] == "requeued"


def test_a_human_line_shows_escape_sequences_escaped() -> None:
    tty = Terminal()
    logs.configure("info", stream=tty)
    # A summary comes from the fixer, which read the pull request.
    logs.event(LOG, "fixer finished", summary="done\x1b[2J\rreally\nnext")
    [text] = tty.getvalue().splitlines()
    assert "\x1b" not in text and "\r" not in text
    assert r'summary="done\u001b[2J\rreally\nnext"' in text


# --- secrets ------------------------------------------------------------------------------


def test_known_secret_values_are_masked_everywhere() -> None:
    out = io.StringIO()
    logs.configure("debug", stream=out)
    LOG.info("before: hunter2-the-webhook-secret")  # the control: not known yet, so shown
    logs.add_secrets(["hunter2-the-webhook-secret", "short"])
    LOG.info("the secret is %s", "hunter2-the-webhook-secret")
    logs.event(LOG, "event", value={"nested": ["hunter2-the-webhook-secret"]})
    try:
        raise ValueError("hunter2-the-webhook-secret")
    except ValueError:
        LOG.exception("failed")
    before, *after = out.getvalue().splitlines()
    assert "hunter2-the-webhook-secret" in before
    assert len(after) == 3 and not any("hunter2" in line for line in after)
    assert "short" not in json.loads(after[0])["event"]  # nothing to mask there
    logs.event(LOG, "a short value is not masked", word="short")
    assert lines(out)[-1]["word"] == "short"  # masking every "short" would garble the log


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("Authorization: token ghs_16C7e42F292c6912E7710c838347Ae178B4a", "Authorization: ***"),
        ("headers {'authorization': 'Bearer abc.def'}", "{'authorization': '***'}"),
        ("[(b'authorization', b'token ghp_16C7e42F292c6912E7710c838')]", "b'authorization', b'***"),
        ("minted ghs_16C7e42F292c6912E7710c838347Ae178B4a for 1 hour", "minted gh_*** for"),
        ("https://x-access-token:ghs_abcdefghijklmnop@github.com/o/r.git", "x-access-token:***@"),
        ("postgresql://landbot:pa55word@db:5432/landbot", "postgresql://landbot:***@db:5432"),
        ("jwt eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiIxMjMifQ.c2lnbmF0dXJlLXZhbHVl", "jwt ***"),
        ("key -----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----", "key -----"),
        ("model key sk-ant-api03-abcdefghijklmnopq", "model key sk-***"),
        ("GET https://blob.example/logs/1?se=179&sig=abcdefghijkl%2B&sp=r", "?se=179&sig=***&sp=r"),
    ],
)
def test_credentials_minted_at_run_time_are_masked_by_shape(text: str, kept: str) -> None:
    masked = logs.redact(text)
    assert kept in masked and "***" in masked
    assert not any(s in masked for s in ("ghs_16C", "pa55word", "c2lnbmF0", "MIIE", "abcdefgh"))


@pytest.mark.parametrize(
    "text",
    [
        "the Authorization header was refused",
        "http://127.0.0.1:8080/webhook",
        "acme/widgets#7 head 1f2e3d4c5b6a7f8e9d0c1b2a3f4e5d6c7b8a9f0e",
        "the token expired; minting another",
    ],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert logs.redact(text) == text


def test_secrets_of_the_settings() -> None:
    from pydantic import SecretStr

    from landbot.config import FixerSettings, GitHubSettings, Settings

    key = Path(tempfile.mkdtemp()) / "app.pem"
    try:
        key.write_text("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAq\nQWERTY\n-----END RSA")
        settings = Settings(
            github=GitHubSettings(
                token=SecretStr("tok-1234567"),
                webhook_secret=SecretStr("whsec-1234"),
                private_key_file=key,
            ),
            fixer=FixerSettings(model_api_key=SecretStr("sk-model-key")),
            database_url="postgresql://landbot:db-password@localhost/landbot",
        )
        found = logs.secrets_of(settings)
    finally:
        shutil.rmtree(key.parent)
    for value in ("tok-1234567", "whsec-1234", "sk-model-key", "db-password", "MIIEowIBAAKCAQEAq"):
        assert value in found
    assert logs.safe_url(settings.database_url) == "postgresql://landbot:***@localhost/landbot"
    assert logs.safe_url("sqlite:///./landbot.db") == "sqlite:///./landbot.db"


# --- a real run: `landbot serve`, a webhook, a fixer job ----------------------------------

REPO = "acme/widgets"
WEBHOOK_SECRET = "whsec0logtest0e4c1b7a9d2f"
MODEL_KEY = "sk-logtest-provider-key-7f3a9c2e"
DB_PASSWORD = "pgpass0logtest0c5d8e1f"
FILES = {
    "app.py": "def answer():\n    return 42\n",
    "tests/test_app.py": (
        "from app import answer\n\n\ndef test_answer():\n    assert answer() == 42\n"
    ),
}
# The command agent: asks the model through the proxy (which swaps in the provider key),
# fixes the one-line bug, commits, and writes its verdict.
AGENT = r"""#!/usr/bin/python3
import json, os, subprocess, urllib.request
req = urllib.request.Request(os.environ["LANDBOT_MODEL_URL"] + "/responses",
    data=b'{"input": []}',
    headers={"Authorization": "Bearer " + os.environ["LANDBOT_MODEL_KEY_PLACEHOLDER"]})
urllib.request.urlopen(req, timeout=20).read()
src = open("app.py").read()
open("app.py", "w").write(src.replace("return 41", "return 42"))
subprocess.run(["git", "-c", "user.name=agent", "-c", "user.email=agent@example.com",
                "commit", "-qam", "Fix answer()"], check=True)
json.dump({"verdict": "fixed", "summary": "answer() returned 41", "recommendation": "",
           "reproduced": True}, open(os.environ["LANDBOT_VERDICT_FILE"], "w"))
"""


@pytest.fixture
def open_dir() -> Iterator[Path]:
    """A folder the sandbox uid can traverse (pytest's own tmp root is mode 700)."""
    path = Path(tempfile.mkdtemp(prefix="landbot-logs-"))
    os.chmod(path, 0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def wait_for(check: Any, what: str, timeout: float = 120.0) -> Any:
    give_up = time.monotonic() + timeout
    while time.monotonic() < give_up:
        value = check()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def test_landbot_serve_logs_what_it_did_and_no_secret(
    open_dir: Path, postgres_databases: Any
) -> None:
    from landbot.sim import CheckScenario, FakeGitHub, FakeGitHubServer
    from landbot.sim.model_server import ModelScript, ScriptedModelServer
    from landbot.sim.postgres import free_port
    from landbot.sim.scenarios import CheckContext
    from landbot.store import Store

    if shutil.which("bwrap") is None:
        pytest.fail("bubblewrap is not installed: run scripts/setup (CI installs it)")

    def ci(ctx: CheckContext) -> CheckScenario:
        if "return 41" in (ctx.read_file("app.py") or ""):
            return CheckScenario.failing(output=("FAILED tests/test_app.py::test_answer",))
        return CheckScenario.passing()

    gh = FakeGitHub(open_dir / "github", webhook_secret=WEBHOOK_SECRET)
    repo = gh.create_repo(REPO, files=FILES)
    gh.add_collaborator(repo, "alice", "write")
    app = gh.create_app("landbot")
    gh.install_app(app, repos=[repo])
    key_file = app.write_private_key(open_dir / "app-key.pem")
    agent = open_dir / "agent" / "fix.py"
    agent.parent.mkdir(mode=0o755)
    agent.write_text(AGENT)
    agent.chmod(agent.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    # The test server trusts local connections: the password is sent, and must stay unlogged.
    url = postgres_databases.create()
    assert "://landbot@" in url
    database_url = url.replace("://landbot@", f"://landbot:{DB_PASSWORD}@", 1)
    port = free_port()
    work = open_dir / "cwd"  # no config/landbot.toml of the checkout's
    work.mkdir()
    with (
        FakeGitHubServer(gh) as server,
        ScriptedModelServer(ModelScript(commands=["true"])) as model,
    ):
        env = {k: v for k, v in os.environ.items() if not k.startswith("LANDBOT_")} | {
            "LANDBOT_GITHUB__API_URL": server.url,
            "LANDBOT_GITHUB__APP_ID": str(app.id),
            "LANDBOT_GITHUB__PRIVATE_KEY_FILE": str(key_file),
            "LANDBOT_GITHUB__WEBHOOK_SECRET": WEBHOOK_SECRET,
            "LANDBOT_GITHUB__GIT_URL": gh.git_url,
            "LANDBOT_DATABASE_URL": database_url,
            "LANDBOT_REPOS": REPO,
            "LANDBOT_FIXER__COMMAND": json.dumps([str(agent)]),
            "LANDBOT_FIXER__STATE_DIR": str(open_dir / "state"),
            "LANDBOT_FIXER__TIMEOUT": "60",
            "LANDBOT_FIXER__MODEL_URL": model.url,
            "LANDBOT_FIXER__MODEL_API_KEY": MODEL_KEY,
            "LANDBOT_WORKER__IDLE_SLEEP": "0.05",
            "PYTHONPATH": str(ROOT),
        }
        stderr = open_dir / "serve.log"
        with stderr.open("w") as err:
            serve = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "landbot",
                    "--log-level",
                    "debug",
                    "serve",
                    "--port",
                    str(port),
                ],
                env=env,
                cwd=work,
                stdout=subprocess.DEVNULL,
                stderr=err,
            )
        try:
            base = f"http://127.0.0.1:{port}"

            def up() -> bool:
                if serve.poll() is not None:
                    raise AssertionError(f"landbot serve exited: {stderr.read_text()[-2000:]}")
                try:
                    return httpx.get(f"{base}/healthz", timeout=2).status_code == 200
                except httpx.HTTPError:
                    return False

            wait_for(up, "landbot serve to answer", 60)
            gh.webhooks.url = f"{base}/webhook"
            gh.set_checks(repo, ci)
            pr = gh.open_pull_request(
                repo,
                head="feat-bug",
                files={"app.py": "def answer():\n    return 41\n"},
                author="alice",
            )
            gh.enqueue(pr, actor="alice")
            assert gh.run_queue(repo)[-1].reason == "CI_FAILURE"
            gh.webhooks.flush()
            [dequeued] = gh.webhooks.of("pull_request", "dequeued")
            store = Store.open(url)
            try:
                drop = wait_for(
                    lambda: next((d for d in store.drops() if d.outcome != "pending"), None),
                    "the drop's outcome",
                )
            finally:
                store.close()
            model_calls = model.requests
        finally:
            serve.send_signal(signal.SIGINT)
            try:
                serve.wait(timeout=30)
            except subprocess.TimeoutExpired:
                serve.kill()
                serve.wait()
            gh.webhooks.url = None
    text = stderr.read_text()
    assert drop.outcome == "fixed", (drop.summary, text[-3000:])

    # The controls: every secret was in play during the run.
    assert [r.header("authorization") for r in model_calls] == [f"Bearer {MODEL_KEY}"]
    minted = [t.value for t in gh.tokens.values() if t.installation_id is not None]
    assert minted, "no installation token was minted: the App key was never used"
    key_lines = [line for line in key_file.read_text().splitlines() if "-----" not in line]
    assert dequeued.status == 202  # signed with the webhook secret, and accepted

    secrets = [WEBHOOK_SECRET, MODEL_KEY, DB_PASSWORD, *minted, *key_lines]
    leaked = [s for s in secrets if s in text]
    assert leaked == [], "secrets in the log"
    assert "eyJ" not in text  # no JWT of the App's either
    # The job log was fetched from a signed URL (a link anyone could use while it lasts).
    assert "/_blobs/job-logs/" in text and "sig=***" in text
    assert not re.search(r"sig=[0-9a-f]{16}", text)

    # Every line is a JSON event; uvicorn's own lines included.
    events = [json.loads(line) for line in text.splitlines()]
    assert all({"time", "level", "logger", "event"} <= set(e) for e in events)
    assert any(e["logger"].startswith("uvicorn") for e in events)
    assert any(e["level"] == "debug" for e in events)  # --log-level debug took

    # What landbot did to the pull request, one line each, with its identifiers as fields.
    ids = {"repo": REPO, "pr": pr.number, "drop_id": drop.id}
    for name in (
        "drop recorded",
        "drop decided",
        "fixer job queued",
        "fixer started",
        "fixer finished",
        "fix pushed",
        "auto-merge armed",
        "fix announced",
        "status comment written",
        "drop settled",
    ):
        found = [e for e in events if e["event"] == name]
        assert found, f"no {name!r} line"
        for e in found:
            assert {k: e.get(k) for k in ids} == ids, e
            assert e.get("head_sha") == drop.head_sha, e
            assert e.get("delivery_id") == dequeued.guid, e
    [processed] = [
        e
        for e in events
        if e["event"] == "delivery processed" and e.get("delivery_id") == dequeued.guid
    ]
    assert (processed["repo"], processed["pr"], processed["outcome"]) == (REPO, pr.number, "done")
    [finished] = [e for e in events if e["event"] == "fixer finished"]
    assert finished["verdict"] == "fixed" and finished["duration_s"] > 0
    [settled] = [e for e in events if e["event"] == "drop settled" and e["outcome"] == "fixed"]
    assert settled["why"] == drop.summary
    [serving] = [e for e in events if e["event"] == "serving"]
    assert DB_PASSWORD not in serving["database"] and "***" in serving["database"]


def test_landbot_worker_names_its_database_without_the_password(
    tmp_path: Path, postgres_databases: Any
) -> None:
    url = postgres_databases.create()
    env = {
        "LANDBOT_DATABASE_URL": url.replace("://landbot@", f"://landbot:{DB_PASSWORD}@", 1),
        "LANDBOT_GITHUB__TOKEN": "ghp_unusedbythistest0000000000",
        "PYTHONPATH": str(ROOT),
    }
    clean = {k: v for k, v in os.environ.items() if not k.startswith("LANDBOT_")}
    err = tmp_path / "worker.log"
    with err.open("w") as stream:
        worker = subprocess.Popen(
            [sys.executable, "-m", "landbot", "worker"],
            env={**clean, **env},
            cwd=tmp_path,
            stdout=subprocess.DEVNULL,
            stderr=stream,
        )
    try:
        started = wait_for(
            lambda: [
                e
                for e in map(json.loads, err.read_text().splitlines())
                if e["event"] == "worker started"
            ],
            "the worker's first line",
            60,
        )
    finally:
        worker.terminate()
        worker.wait(timeout=30)
    [line] = started
    assert line["database"] == url.replace("://landbot@", "://landbot:***@", 1)
    assert DB_PASSWORD not in err.read_text()
