"""The demo's scripted agent in the real sandbox (as landbot's fixer runs a command agent):
it fixes the bug it knows only after reproducing it, says `flaky` when the failing command
passes unchanged, and hands back what it does not know, changing nothing."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest

from landbot.config import Settings
from landbot.demo import agents, project
from landbot.fixer.job import JobLimits, run_local_job

from ..conftest import require_sandbox
from ..conftest import run_git as git

EVIDENCE = {
    "format": 1,
    "drop": {"repo": project.REPO, "pr": 5, "reason": "failed_checks", "base_ref": "main"},
    "triage": {"class": "genuine", "reason": "1 test failed"},
    "jobs": [
        {
            "job": "test",
            "step": "Run python -m pytest -q -p no:cacheprovider",
            "reproduce": "python -m pytest -q -p no:cacheprovider",
            "class": "genuine",
        }
    ],
}


def checkout(root: Path, branch: str) -> Path:
    work = root / "work"
    git(root, "clone", "--quiet", "--branch", branch, str(root / "calc"), str(work))
    git(work, "config", "user.name", "landbot")
    git(work, "config", "user.email", "landbot@example.invalid")
    return work


def run_agent(root: Path, work: Path) -> dict[str, object]:
    require_sandbox()
    evidence = root / "evidence.json"
    evidence.write_text(json.dumps(EVIDENCE))
    with contextlib.ExitStack() as stack:
        choice = agents.prepare_agent("scripted", root, stack)
        settings = Settings(fixer=choice.fixer)
        outcome = run_local_job(
            settings, work, evidence_file=evidence, limits=JobLimits(timeout=120, memory_mb=1024)
        )
    assert outcome.verdict.from_agent, outcome.stderr_tail.decode(errors="replace")
    return outcome.verdict.to_json()


@pytest.fixture
def repo(root: Path) -> Path:
    project.build_repository(root / "calc")
    return root / "calc"


def test_it_reproduces_fixes_verifies_and_commits(root: Path, repo: Path) -> None:
    work = checkout(root, "dave/stdev")
    head = git(work, "rev-parse", "HEAD")
    verdict = run_agent(root, work)
    assert verdict["verdict"] == "fixed" and verdict["reproduced"] is True
    assert "n - 1" in str(verdict["summary"])
    assert git(work, "rev-parse", "HEAD^") == head  # one commit on top of the PR head
    assert git(work, "log", "-1", "--format=%s") == "Fix stdev(): divide by n - 1"
    assert git(work, "diff", "--name-only", "HEAD^", "HEAD") == "calc/stats.py"
    assert project.STDEV_FIX in (work / "calc/stats.py").read_text()
    assert git(work, "status", "--porcelain") == ""  # nothing left behind in the tree


def test_a_failure_that_does_not_reproduce_is_flaky_and_changes_nothing(
    root: Path, repo: Path
) -> None:
    # The control of the test above: the same agent on the fixed code.
    work = checkout(root, "dave/stdev")
    stats = work / "calc/stats.py"
    stats.write_text(stats.read_text().replace(project.STDEV_BUG, project.STDEV_FIX))
    git(work, "commit", "--quiet", "--all", "--message", "fixed by hand")
    head = git(work, "rev-parse", "HEAD")
    verdict = run_agent(root, work)
    assert verdict["verdict"] == "flaky" and verdict["reproduced"] is False
    assert git(work, "rev-parse", "HEAD") == head


def test_a_failure_it_does_not_know_is_handed_back_untouched(root: Path, repo: Path) -> None:
    work = checkout(root, "bob/median")
    test = work / "tests/test_median.py"
    test.write_text(test.read_text().replace("2.5)", "3)"))  # a test that fails, no known fix
    git(work, "commit", "--quiet", "--all", "--message", "break the test")
    head = git(work, "rev-parse", "HEAD")
    verdict = run_agent(root, work)
    assert verdict["verdict"] == "needs_human" and verdict["reproduced"] is True
    assert git(work, "rev-parse", "HEAD") == head
    assert git(work, "status", "--porcelain") == ""
