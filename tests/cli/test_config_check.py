"""`landbot config check [FILE]` and `landbot config schema`, run as a user runs them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

# Each test runs `landbot` as a process: left out of `./scripts/test --fast`.
pytestmark = pytest.mark.slow

LANDBOT = str(Path(sys.executable).parent / "landbot")
ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "config" / "landbot.repo.example.toml"
SCHEMA = ROOT / "config" / "landbot.repo.schema.json"

WIDE = "[policy]\nmax_requeues_per_pr = 5\n"


def run(
    cwd: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    # No LANDBOT_ variable of the machine's; a folder without config/landbot.toml.
    base = {k: v for k, v in os.environ.items() if not k.upper().startswith("LANDBOT_")}
    return subprocess.run(
        [LANDBOT, "config", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        env={**base, **(env or {})},
    )


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_a_good_file_is_one_line_and_exit_0(tmp_path: Path) -> None:
    write(tmp_path / "mine.toml", '[policy]\nskip_label = "hold"\n')
    out = run(tmp_path, "check", "mine.toml")
    assert (out.returncode, out.stdout, out.stderr) == (0, "mine.toml: valid\n", "")


def test_the_default_file_is_the_repositorys(tmp_path: Path) -> None:
    write(tmp_path / ".github" / "landbot.toml", "[policy]\nmax_pushes_per_pr = 1\n")
    out = run(tmp_path, "check")
    assert (out.returncode, out.stdout) == (0, ".github/landbot.toml: valid\n")


def test_each_problem_on_its_own_line_and_exit_1(tmp_path: Path) -> None:
    write(
        tmp_path / ".github" / "landbot.toml",
        '[policy]\nmax_requeue_per_pr = 2\n\n[fixer]\nagent = "codx"\n',
    )
    out = run(tmp_path, "check")
    assert out.returncode == 1
    assert out.stdout == ""
    assert out.stderr.splitlines() == [
        ".github/landbot.toml:2: unknown key policy.max_requeue_per_pr; "
        "did you mean max_requeues_per_pr?",
        '.github/landbot.toml:5: fixer.agent = "codx" is not allowed; did you mean "codex"? '
        "(one of command, codex, claude, opencode)",
    ]


def test_a_toml_syntax_error_is_a_problem(tmp_path: Path) -> None:
    write(tmp_path / "bad.toml", "[policy\n")
    out = run(tmp_path, "check", "bad.toml")
    assert out.returncode == 1
    assert out.stderr.startswith("bad.toml:1: not valid TOML: ")


def test_a_missing_file_is_one_line_and_exit_2(tmp_path: Path) -> None:
    out = run(tmp_path, "check")
    assert out.returncode == 2
    assert out.stderr == (
        "landbot: .github/landbot.toml does not exist; "
        "give the path of a repository's landbot.toml\n"
    )
    assert run(tmp_path, "check", "nope.toml").returncode == 2


def test_host_limits_only_with_the_option(tmp_path: Path) -> None:
    write(tmp_path / "mine.toml", WIDE)
    assert run(tmp_path, "check", "mine.toml").returncode == 0  # the structure is fine
    out = run(tmp_path, "check", "--host-limits", "mine.toml")
    assert out.returncode == 1
    assert out.stderr == (
        "mine.toml:2: policy.max_requeues_per_pr = 5 is above this host's limit 3; use 3 or less\n"
    )


def test_host_limits_come_from_the_config_file(tmp_path: Path) -> None:
    write(tmp_path / "mine.toml", WIDE)
    host = write(tmp_path / "host.toml", "[policy]\nmax_requeues_per_pr = 5\n")
    out = run(tmp_path, "check", "--host-limits", "--config", str(host), "mine.toml")
    assert (out.returncode, out.stdout) == (0, "mine.toml: valid\n"), out.stderr
    # config/landbot.toml in the current folder is the host's file when --config is not given.
    write(tmp_path / "config" / "landbot.toml", "[policy]\nmax_requeues_per_pr = 4\n")
    out = run(tmp_path, "check", "--host-limits", "mine.toml")
    assert "above this host's limit 4" in out.stderr


def test_host_limits_come_from_the_environment(tmp_path: Path) -> None:
    write(tmp_path / "mine.toml", WIDE)
    env = {"LANDBOT_POLICY__MAX_REQUEUES_PER_PR": "5"}
    assert run(tmp_path, "check", "--host-limits", "mine.toml", env=env).returncode == 0
    env = {"LANDBOT_POLICY__MAX_REQUEUES_PER_PR": "4"}
    assert run(tmp_path, "check", "--host-limits", "mine.toml", env=env).returncode == 1


def test_bad_host_settings_are_exit_2(tmp_path: Path) -> None:
    write(tmp_path / "mine.toml", WIDE)
    host = write(tmp_path / "host.toml", "[policy]\nmax_requeue_per_pr = 5\n")
    out = run(tmp_path, "check", "--host-limits", "--config", str(host), "mine.toml")
    assert out.returncode == 2
    assert len(out.stderr.splitlines()) == 1
    assert "unknown setting [policy] max_requeue_per_pr" in out.stderr


def test_schema_prints_json_equal_to_the_published_file(tmp_path: Path) -> None:
    out = run(tmp_path, "schema")
    assert out.returncode == 0, out.stderr
    schema = json.loads(out.stdout)
    assert schema["title"] == "landbot repository settings (.github/landbot.toml)"
    assert set(schema["properties"]) == {"policy", "fixer", "triage"}
    # The published file is exactly this output: regenerate it with
    # `landbot config schema > config/landbot.repo.schema.json` when the schema changes.
    assert SCHEMA.read_text(encoding="utf-8") == out.stdout
    assert out.stdout.startswith('{\n  "')  # indent 2


@pytest.mark.parametrize("host_limits", [False, True])
def test_the_example_passes(tmp_path: Path, host_limits: bool) -> None:
    args = ["check", *(["--host-limits"] if host_limits else []), str(EXAMPLE)]
    out = run(tmp_path, *args)
    assert (out.returncode, out.stdout) == (0, f"{EXAMPLE}: valid\n"), out.stderr


def test_help_describes_both(tmp_path: Path) -> None:
    out = run(tmp_path, "--help")
    assert out.returncode == 0
    assert " check " in out.stdout
    assert " schema " in out.stdout
