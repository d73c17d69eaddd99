"""`landbot triage log FILE [--json]`: the contract JSON, the readable form, exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import FIXTURES, gh_log, run_step

# ./scripts/test --fast leaves this module out: its tests start processes (landbot, git,
# the sandbox, servers) and take seconds each.
pytestmark = pytest.mark.slow

LANDBOT = str(Path(sys.executable).parent / "landbot")


def landbot(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LANDBOT_")}
    return subprocess.run(
        [LANDBOT, *args], capture_output=True, text=True, timeout=60, env=env, cwd=cwd
    )


def test_json_is_exactly_the_contract(tmp_path: Path) -> None:
    out = landbot("triage", "log", str(FIXTURES / "quest-policy.log"), "--json", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert list(result) == ["class", "step", "error_lines", "summary", "excerpt"]
    assert result["class"] == "policy"
    assert result["step"] == (
        'Run landbot quest check --base "origin/$GITHUB_BASE_REF" --branch "$GITHUB_HEAD_REF"'
    )
    assert result["error_lines"] == [107, 108]
    assert result["excerpt"][1] == {  # [0] is the step's `Run …` header (line 97)
        "line": 106,
        "text": "quest: quest/m0/opencode-sdk.md: (already on the base) link to missing file "
        "quest/m0/kix/old.md",
    }
    assert [item["line"] for item in result["excerpt"]] == [97, 106, 107, 108, 109]


@pytest.mark.parametrize("name", ["success.log", "operation-canceled.log", "pytest-genuine.log"])
def test_every_class_exits_0(tmp_path: Path, name: str) -> None:
    out = landbot("triage", "log", str(FIXTURES / name), "--json", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["class"] in {"unknown", "cancelled", "genuine"}


def test_unknown_has_null_step_and_empty_lists(tmp_path: Path) -> None:
    out = landbot("triage", "log", str(FIXTURES / "success.log"), "--json", cwd=tmp_path)
    result = json.loads(out.stdout)
    assert (result["class"], result["step"], result["error_lines"], result["excerpt"]) == (
        "unknown",
        None,
        [],
        [],
    )


def test_readable_output(tmp_path: Path) -> None:
    out = landbot("triage", "log", str(FIXTURES / "oom-137.log"), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert text.startswith("oom-137.log: infrastructure (not the pull request's fault)")
    assert "step: Run pytest -q -n 2 tests/test_reports.py (section at line 97)" in text
    assert "step chosen by: the log alone" in text
    assert "error lines: 113" in text
    assert "evidence: out-of-memory at line 113:" in text
    assert "  114 │ ##[error]Process completed with exit code 137." in text
    assert "\x1b" not in text


@pytest.mark.parametrize("kind", ["missing", "directory", "unreadable"])
def test_unreadable_file_is_one_line_and_exit_2(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "job.log"
    if kind == "directory":
        path.mkdir()
    elif kind == "unreadable":
        path.write_bytes(gh_log(run_step("x", "##[error]boom")))
        path.chmod(0)
        if os.access(path, os.R_OK):  # root reads anything: use a path that cannot be a file
            path = tmp_path / "job.log" / "inside"
    out = landbot("triage", "log", str(path), "--json", cwd=tmp_path)
    assert out.returncode == 2
    assert out.stdout == ""
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"landbot: cannot read {path}: ")
    assert lines[0].endswith("pass a readable job log")


def test_rules_come_from_the_config(tmp_path: Path) -> None:
    log = tmp_path / "job.log"
    log.write_bytes(
        gh_log(run_step("pytest", "FAILED tests/test_net.py::test_dns - gaierror", "##[error]x"))
    )
    config = tmp_path / "landbot.toml"
    config.write_text('[[triage.rules]]\npattern = "test_net\\\\.py"\nclass = "flaky"\n')
    out = landbot("triage", "log", str(log), "--json", "--config", str(config), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["class"] == "flaky"
    # Control: without the config the same log is genuine.
    plain = landbot("triage", "log", str(log), "--json", cwd=tmp_path)
    assert json.loads(plain.stdout)["class"] == "genuine"


def test_a_bad_rule_is_one_line_and_exit_2(tmp_path: Path) -> None:
    config = tmp_path / "landbot.toml"
    config.write_text('[[triage.rules]]\npattern = "(unclosed"\nclass = "flaky"\n')
    out = landbot(
        "triage", "log", str(FIXTURES / "success.log"), "--config", str(config), cwd=tmp_path
    )
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "triage rule 1 (pattern '(unclosed')" in lines[0]


@pytest.mark.parametrize(
    ("magic", "kind"), [(b"PK\x03\x04", "a zip archive"), (b"\x1f\x8b\x08", "a gzip file")]
)
def test_an_archive_is_refused_with_the_fix(tmp_path: Path, magic: bytes, kind: str) -> None:
    path = tmp_path / "logs.zip"
    path.write_bytes(magic + b"\0" * 100)
    out = landbot("triage", "log", str(path), cwd=tmp_path)
    assert out.returncode == 2
    assert out.stderr.strip() == (
        f"landbot: {path} is {kind}, not a job log; "
        "extract one job's log from it and pass that file"
    )


def test_a_pipe_is_read_as_a_stream(tmp_path: Path) -> None:
    data = (FIXTURES / "npm-econnreset.log").read_bytes()
    env = {k: v for k, v in os.environ.items() if not k.startswith("LANDBOT_")}
    out = subprocess.run(
        [LANDBOT, "triage", "log", "/dev/stdin", "--json"],
        input=data,
        capture_output=True,
        timeout=60,
        env=env,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert (result["class"], result["error_lines"]) == ("flaky", [88])


def test_readable_output_names_a_composites_failing_step(tmp_path: Path) -> None:
    # cpp/godot-precommit-clang-format.log: the step is pre-commit/action; the text form
    # also says which of its steps failed (the JSON's `step` stays the action's).
    log = Path(__file__).parent / "real" / "cpp" / "godot-precommit-clang-format.log"
    out = landbot("triage", "log", str(log), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "  step: Run pre-commit/action@v3.0.1 (section at line 178)" in out.stdout
    assert "failing step of the composite action: Run pre-commit run --show-diff" in out.stdout
    result = json.loads(landbot("triage", "log", str(log), "--json", cwd=tmp_path).stdout)
    assert result["step"] == "Run pre-commit/action@v3.0.1"
    # Control: a step of the job's own says no more than its title.
    plain = landbot("triage", "log", str(FIXTURES / "pytest-genuine.log"), cwd=tmp_path)
    assert "composite action" not in plain.stdout


def test_baseline_option_compares_with_a_passing_log(tmp_path: Path) -> None:
    lines = [
        "##[group]Run make test",
        "make test",
        "##[endgroup]",
        "Error: the deprecated flag is set",
        "Error: widget count is 3, expected 4",
        "##[error]Process completed with exit code 1.",
    ]
    fail = tmp_path / "fail.log"
    fail.write_text("\n".join(lines) + "\n")
    passing = tmp_path / "pass.log"
    passing.write_text("\n".join([*lines[:4], "all checks passed"]) + "\n")
    alone = landbot("triage", "log", str(fail), "--json", cwd=tmp_path)
    out = landbot("triage", "log", str(fail), "--baseline", str(passing), "--json", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert list(result) == ["class", "step", "error_lines", "summary", "excerpt"]
    assert result["error_lines"] == [5]
    assert json.loads(alone.stdout)["error_lines"] != [5]  # the control
    missing = landbot(
        "triage", "log", str(fail), "--baseline", str(tmp_path / "nope"), cwd=tmp_path
    )
    assert missing.returncode == 2 and "nope" in missing.stderr
