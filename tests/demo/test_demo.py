"""`landbot demo --json` as a whole process: the four stories end as described, and what
landbot said on each pull request is there.

The demo runs once for the module (about half a minute on 2 cores); each test reads one
story from its JSON. Nothing here trusts the demo's own "as_described": every check reads
the pipeline's record (drops from landbot's store, commits in the simulated GitHub's git
repository, the comments landbot posted).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from landbot.demo.project import POLICY_FINDING
from landbot.land.comments import HANDBACK_MARKER, STATUS_MARKER

from ..conftest import require_sandbox

LANDBOT = str(Path(sys.executable).parent / "landbot")
TIMEOUT = 300  # a bound, not a benchmark: bench/demo.py measures it


@pytest.fixture(scope="module")
def run() -> Iterator[subprocess.CompletedProcess[str]]:
    require_sandbox()
    cwd = tempfile.mkdtemp(prefix="landbot-demo-cwd-")  # no config/landbot.toml here
    env = {k: v for k, v in os.environ.items() if not k.startswith("LANDBOT_")}
    try:
        yield subprocess.run(
            [LANDBOT, "demo", "--json"],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )
    finally:
        shutil.rmtree(cwd, ignore_errors=True)


@pytest.fixture(scope="module")
def demo(run: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    # Exit 1 means a story did not end as described: the JSON is still there, and each
    # story's test below says which check failed.
    assert run.returncode in (0, 1), f"exit {run.returncode}; stderr:\n{run.stderr[-6000:]}"
    data: dict[str, Any] = json.loads(run.stdout)  # stdout is the JSON object and nothing else
    return data


def story(demo: dict[str, Any], key: str) -> dict[str, Any]:
    [pull] = [p for p in demo["pulls"] if p["story"] == key]
    return pull


def drops(pull: dict[str, Any], *, ignore_merged: bool = True) -> list[dict[str, Any]]:
    return [d for d in pull["drops"] if not (ignore_merged and d["reason"] == "merged")]


def comments(pull: dict[str, Any], kind: str) -> list[str]:
    return [c["body"] for c in pull["comments"] if c["kind"] == kind]


def test_stdout_is_one_json_object_and_progress_goes_to_stderr(
    run: subprocess.CompletedProcess[str], demo: dict[str, Any]
) -> None:
    assert run.stdout.lstrip().startswith("{") and run.stdout.rstrip().endswith("}")
    assert "merge group" in run.stderr  # the live progress, kept off stdout
    assert run.returncode == 0, run.stderr[-6000:]
    assert demo["finished"] and demo["as_described"]
    assert [p["story"] for p in demo["pulls"]] == [
        "prelude",
        "flaky",
        "policy",
        "conflict",
        "genuine",
    ]
    assert demo["seconds"] < TIMEOUT


def test_the_prelude_merges_and_landbot_says_nothing(demo: dict[str, Any]) -> None:
    pull = story(demo, "prelude")
    assert pull["merged"] and pull["state"] == "merged"
    assert drops(pull) == [] and pull["comments"] == []
    # landbot saw its removal (reason "merged") and left it alone.
    assert [(d["reason"], d["outcome"]) for d in pull["drops"]] == [("merged", "ignored")]


def test_a_flaky_runner_is_re_enqueued_once_and_then_merges(demo: dict[str, Any]) -> None:
    pull = story(demo, "flaky")
    [drop] = drops(pull)
    assert (drop["reason"], drop["outcome"]) == ("failed_checks", "requeued")
    assert drop["class"] in ("infrastructure", "flaky")
    assert pull["merged"] and pull["landbot_commits"] == []
    assert comments(pull, "handback") == []
    [status] = comments(pull, "status")
    assert status.startswith(STATUS_MARKER)
    assert "not this pull request's fault" in status
    assert "received a shutdown signal" in status  # the evidence from the job's log
    assert "put it back in the queue once" in status


def test_a_quest_check_failure_is_explained_and_handed_back_with_the_finding(
    demo: dict[str, Any],
) -> None:
    pull = story(demo, "policy")
    [drop] = drops(pull)
    assert (drop["reason"], drop["class"], drop["outcome"]) == (
        "failed_checks",
        "policy",
        "handed_back",
    )
    assert not pull["merged"] and pull["state"] == "handed back"
    assert pull["findings"] == [POLICY_FINDING]  # what quest check printed in the merge group
    [handback] = comments(pull, "handback")
    assert handback.startswith(f"{HANDBACK_MARKER}\n@bob ")
    assert POLICY_FINDING in handback  # the exact `quest: <path>: <message>` line
    assert "**Triage:** policy: the quest check failed" in handback
    # The fixer looked first: it explains what the change did and leaves the decision.
    assert "**The fixer found:** the quest check fails because of what this pull" in handback
    assert [d["fix_mode"] for d in drops(pull)] == ["agent"]
    [status] = comments(pull, "status")
    assert "handed it back to the author" in status and "@bob" not in status  # one mention
    assert pull["landbot_commits"] == []


def test_a_quest_conflict_is_merged_by_the_quest_merge_driver_then_merges(
    demo: dict[str, Any],
) -> None:
    pull = story(demo, "conflict")
    [drop] = drops(pull)
    assert (drop["reason"], drop["outcome"], drop["fix_mode"]) == (
        "merge_conflict",
        "fixed",
        "merge_driver",
    )
    assert drop["fix"]["verdict"] == "fixed" and "quest merge driver" in drop["fix"]["summary"]
    [commit] = pull["landbot_commits"]
    assert commit["merge"] and commit["subject"].startswith("Merge main into carol/plan-mode")
    assert drop["fix"]["pushed_sha"] == commit["sha"]
    assert pull["merged"]
    assert comments(pull, "handback") == []
    [status] = comments(pull, "status")
    assert f"pushed a fix as `{commit['sha'][:7]}`" in status


def test_a_genuine_failure_is_fixed_by_the_agent_in_the_sandbox_then_merges(
    demo: dict[str, Any],
) -> None:
    pull = story(demo, "genuine")
    [drop] = drops(pull)
    assert (drop["reason"], drop["class"], drop["outcome"], drop["fix_mode"]) == (
        "failed_checks",
        "genuine",
        "fixed",
        "agent",
    )
    [commit] = pull["landbot_commits"]
    assert not commit["merge"] and commit["subject"] == "Fix stdev(): divide by n - 1"
    assert drop["fix"]["verdict"] == "fixed" and drop["fix"]["pushed_sha"] == commit["sha"]
    assert "n - 1" in drop["fix"]["summary"]
    assert pull["merged"]
    assert comments(pull, "handback") == []
    [status] = comments(pull, "status")
    assert f"pushed a fix as `{commit['sha'][:7]}`" in status


def test_unknown_agent_is_a_usage_error_in_one_line() -> None:
    done = subprocess.run(
        [LANDBOT, "demo", "--agent", "gpt-nonsense"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "landbot: there is no demo agent 'gpt-nonsense': use --agent scripted or codex"
    ]
    assert done.stdout == ""
