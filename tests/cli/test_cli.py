"""The command line keeps the contract of design.md: every command exists and answers."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer

from landbot import cli
from landbot.errors import NotBuiltError

# Each test runs `landbot` as a process: left out of `./scripts/test --fast`.
pytestmark = pytest.mark.slow

CONTRACT = [
    "serve",
    "worker",
    "poll",
    "retry",
    "status",
    "triage log",
    "quest check",
    "quest merge-driver",
    "sandbox run",
    "fixer run",
    "demo",
]
LANDBOT = str(Path(sys.executable).parent / "landbot")


def run(*args: str, **kw: object) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LANDBOT_")}
    return subprocess.run(
        [LANDBOT, *args], capture_output=True, text=True, timeout=60, env=env, **kw
    )


def test_help_lists_every_contract_command() -> None:
    out = run("--help")
    assert out.returncode == 0
    for top in {c.split()[0] for c in CONTRACT}:
        assert f" {top} " in out.stdout, top


@pytest.mark.parametrize("command", CONTRACT)
def test_every_contract_command_answers_help(command: str) -> None:
    out = run(*command.split(), "--help")
    assert out.returncode == 0, out.stderr
    assert "--config" in out.stdout  # every command takes --config FILE


def test_a_stage_not_built_is_one_line_and_exit_2(monkeypatch: pytest.MonkeyPatch) -> None:
    def not_yet() -> None:
        raise NotBuiltError("frobnicate", "frobnication")

    app = typer.Typer()
    app.command()(not_yet)
    app.command("other")(lambda: None)
    monkeypatch.setattr(cli, "app", app)
    monkeypatch.setattr(sys, "argv", ["landbot", "not-yet"])
    with pytest.raises(SystemExit) as exit_:
        cli.main()
    assert exit_.value.code == 2


def test_not_built_message_says_nothing_was_done() -> None:
    msg = str(NotBuiltError("demo", "demo"))
    assert "\n" not in msg and "not built yet" in msg and "nothing was done" in msg


def test_unknown_command_is_a_usage_error() -> None:
    out = run("frobnicate")
    assert out.returncode == 2


def test_config_show_answers_help_and_takes_config() -> None:
    out = run("config", "show", "--help")
    assert out.returncode == 0, out.stderr
    assert "--config" in out.stdout and "--json" in out.stdout


def test_an_unknown_setting_stops_any_command_in_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[gihtub]\n")
    out = run("status", "--config", str(bad))
    assert out.returncode == 2 and out.stdout == ""
    assert (
        out.stderr == f"landbot: unknown section [gihtub] in {bad} line 1; did you mean [github]?\n"
    )
    good = tmp_path / "good.toml"  # the control
    good.write_text(f'database_url = "sqlite:///{tmp_path / "l.db"}"\n[github]\n')
    out = run("status", "--config", str(good))
    assert out.returncode == 0 and out.stdout == "no drops recorded yet\n", out.stderr
