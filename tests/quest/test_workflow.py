"""The copyable workflow .github/workflows/quest-check.yml: its shell logic, run for real.

No YAML parser is installed, so the test reads the file as text: it takes the `run: |`
block of the step with `id: derive` and runs it with bash, with a fake `gh` on PATH.
"""

from __future__ import annotations

import os
import re
import subprocess
import textwrap
from pathlib import Path

import pytest

WORKFLOW = Path(__file__).resolve().parents[2] / ".github" / "workflows" / "quest-check.yml"
SHA = "0123456789abcdef0123456789abcdef01234567"


def run_block(step_id: str) -> str:
    lines = WORKFLOW.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == f"id: {step_id}")
    run = next(i for i in range(start, len(lines)) if lines[i].strip() == "run: |")
    indent = len(lines[run]) - len(lines[run].lstrip())
    block: list[str] = []
    for line in lines[run + 1 :]:
        if line.strip() and len(line) - len(line.lstrip()) <= indent:
            break
        block.append(line)
    return textwrap.dedent("\n".join(block)) + "\n"


def derive(tmp_path: Path, **env: str) -> tuple[int, dict[str, str], str, str]:
    """Run the derive step; returns (exit code, its outputs, the gh calls, stderr+stdout)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    calls = tmp_path / "gh-calls"
    gh = bin_dir / "gh"
    # The fake API: pull 42's head branch is quest/m0/kix/sandbox/live-test.
    gh.write_text(
        "#!/bin/sh\n"
        f'echo "$*" >> {calls}\n'
        'if [ "$1 $2 $3 $4" = "api repos/octo/quests/pulls/42 --jq .head.ref" ]; then\n'
        "  echo quest/m0/kix/sandbox/live-test\nelse\n  echo 'gh: Not Found (HTTP 404)' >&2\n"
        "  exit 1\nfi\n"
    )
    gh.chmod(0o755)
    output = tmp_path / "github-output"
    output.write_text("")
    full_env = {
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "GITHUB_OUTPUT": str(output),
        "REPOSITORY": "octo/quests",
        "GH_TOKEN": "not-a-real-token",
        "PR_BASE_SHA": "",
        "PR_HEAD_REF": "",
        "GROUP_BASE_SHA": "",
        "GROUP_HEAD_REF": "",
        **env,
    }
    done = subprocess.run(
        ["bash", "-c", run_block("derive")],
        env=full_env,
        capture_output=True,
        text=True,
        check=False,
    )
    outputs = dict(line.split("=", 1) for line in output.read_text().splitlines())
    gh_calls = calls.read_text() if calls.exists() else ""
    return done.returncode, outputs, gh_calls, done.stdout + done.stderr


@pytest.mark.parametrize(
    "base_branch", ["main", "release/2.x", "odd/pr-7-" + SHA, "gh-readonly-queue/main"]
)
def test_merge_group_reads_the_branch_of_the_pr_in_the_ref(
    tmp_path: Path, base_branch: str
) -> None:
    code, outputs, calls, _ = derive(
        tmp_path,
        EVENT_NAME="merge_group",
        GROUP_BASE_SHA="b" * 40,
        GROUP_HEAD_REF=f"refs/heads/gh-readonly-queue/{base_branch}/pr-42-{SHA}",
    )
    assert code == 0
    assert outputs == {"base": "b" * 40, "branch": "quest/m0/kix/sandbox/live-test"}
    assert calls == "api repos/octo/quests/pulls/42 --jq .head.ref\n"


@pytest.mark.parametrize(
    "ref",
    [
        "refs/heads/main",
        f"refs/heads/gh-readonly-queue/main/pr-x-{SHA}",
        f"refs/heads/gh-readonly-queue/pr-42-{SHA}",  # no base branch
        "refs/heads/gh-readonly-queue/main/pr-42-abc",  # not a full sha
        f"refs/heads/gh-readonly-queue/main/pr-42-{SHA}/more",  # not at the end
        "",
    ],
)
def test_a_merge_group_ref_without_a_pr_number_is_an_error(tmp_path: Path, ref: str) -> None:
    code, outputs, calls, log = derive(
        tmp_path, EVENT_NAME="merge_group", GROUP_BASE_SHA="b" * 40, GROUP_HEAD_REF=ref
    )
    assert (code, outputs, calls) == (2, {}, "")
    assert "::error::no pull request number" in log


def test_a_failing_api_call_fails_the_step(tmp_path: Path) -> None:
    code, outputs, _, log = derive(
        tmp_path,
        EVENT_NAME="merge_group",
        GROUP_BASE_SHA="b" * 40,
        GROUP_HEAD_REF=f"refs/heads/gh-readonly-queue/main/pr-43-{SHA}",
    )
    assert code != 0
    assert outputs == {}
    assert "404" in log


def test_pull_request_takes_the_branch_from_the_event_as_plain_text(tmp_path: Path) -> None:
    hostile = "quest/x$(touch pwned)`touch pwned2`"
    code, outputs, calls, _ = derive(
        tmp_path, EVENT_NAME="pull_request", PR_BASE_SHA="a" * 40, PR_HEAD_REF=hostile
    )
    assert (code, outputs, calls) == (0, {"base": "a" * 40, "branch": hostile}, "")
    assert not (tmp_path / "pwned").exists()
    assert not Path("pwned").exists()


def test_event_values_reach_shell_only_through_env() -> None:
    """`${{ }}` inside a run: block is pasted into the script before it runs: a branch
    named `$(...)` would execute. Every run block must be free of it."""
    text = WORKFLOW.read_text()
    assert re.search(r"^on:\n  pull_request:\n  merge_group:\n", text, re.M)
    assert "fetch-depth: 0" in text
    assert '--base "$BASE" --branch "$BRANCH"' in text
    assert "\t" not in text
    lines = text.splitlines()
    runs = [i for i, line in enumerate(lines) if line.strip().startswith("run:")]
    assert len(runs) == 3
    for i in runs:
        indent = len(lines[i]) - len(lines[i].lstrip())
        assert "${{" not in lines[i]
        for line in lines[i + 1 :]:
            if line.strip() and len(line) - len(line.lstrip()) <= indent:
                break
            assert "${{" not in line, line
