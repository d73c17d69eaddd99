"""The evidence a person needs to reproduce a drop exactly, as triage fills it: the failing
step's own script (never a `uses:` step), the link to its failing line, the merge group's
base and the pull requests ahead, the checks that never finished."""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from landbot.github.models import CheckRun, WorkflowRun
from landbot.triage.explain import explain_parsed
from landbot.triage.gather import (
    Gatherer,
    RunsOnce,
    group_context,
    log_verdict,
    never_finished,
    run_script,
    step_line_url,
)
from landbot.triage.log import parse_log

FIXTURES = Path(__file__).parent / "fixtures"
_spec = importlib.util.spec_from_file_location(
    "gather_support", Path(__file__).parent / "test_gather.py"
)
assert _spec is not None and _spec.loader is not None
support = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("gather_support", support)
_spec.loader.exec_module(support)

GROUP, HEAD, REPO = support.GROUP, support.HEAD, support.REPO
JOB_URL = f"https://github.com/{REPO}/actions/runs/7/job/11"


def _log(*lines: str) -> bytes:
    return "".join(f"2026-11-03T10:15:21.0000000Z {line}\n" for line in lines).encode()


def test_the_script_of_a_run_step_is_the_command() -> None:
    parsed = parse_log((FIXTURES / "pytest-genuine.log").read_bytes())
    assert parsed.step_title == "Run pytest -q --color=yes"
    assert run_script(parsed) == "pytest -q --color=yes"


def test_a_failing_uses_step_gives_no_command() -> None:
    uses = _log(
        "##[group]Run actions/setup-node@v4",
        "with:",
        "  node-version: 20",
        "##[endgroup]",
        "##[error]Unable to find Node version '99'",
    )
    parsed = parse_log(uses)
    assert parsed.step_title == "Run actions/setup-node@v4"
    assert run_script(parsed) == ""
    # Control: the same failure in a `run:` step gives its whole script.
    run = _log(
        "##[group]Run npm ci",
        "npm ci",
        "npm test -- --run",
        "shell: /usr/bin/bash -e {0}",
        "##[endgroup]",
        "##[error]Process completed with exit code 1.",
    )
    assert run_script(parse_log(run)) == "npm ci\nnpm test -- --run"


def test_a_log_that_shows_only_the_rest_of_the_script_keeps_its_first_line() -> None:
    # The simulated GitHub echoes the first line only in the title.
    run = _log(
        "##[group]Run make deps",
        "make test",
        "shell: /usr/bin/bash -e {0}",
        "##[endgroup]",
        "##[error]Process completed with exit code 2.",
    )
    assert run_script(parse_log(run)) == "make deps\nmake test"


def test_the_failing_line_is_linked_within_its_step() -> None:
    data = _log(
        "##[group]Run make test",
        "make test",
        "shell: /usr/bin/bash -e {0}",
        "##[endgroup]",
        "boom",
        "##[error]Process completed with exit code 2.",
    )
    parsed = parse_log(data)
    steps = [{"name": "make test", "conclusion": "failure", "number": 4}]
    e = explain_parsed(parsed, steps=steps)
    assert (e.step_line, parsed.first_error) == (1, 6)
    assert step_line_url(JOB_URL, e, parsed.first_error) == f"{JOB_URL}#step:4:6"
    check = CheckRun(
        11, "test", "completed", "failure", JOB_URL, JOB_URL, "github-actions", None, None
    )
    failure = log_verdict(check, None, e, parsed).failure
    assert failure.run == "make test" and failure.line_url == f"{JOB_URL}#step:4:6"
    # Control: without the step's number (no jobs API answer) there is no link to invent.
    assert step_line_url(JOB_URL, explain_parsed(parsed), parsed.first_error) == ""
    assert step_line_url("https://example.com/elsewhere", e, parsed.first_error) == ""


def test_checks_that_never_finished_are_named() -> None:
    def run(name: str, status: str, conclusion: str | None) -> CheckRun:
        return CheckRun(1, name, status, conclusion, None, None, "github-actions", None, None)

    checks = [
        run("unit", "completed", "success"),
        run("e2e", "in_progress", None),
        run("lint", "completed", "failure"),
        run("slow", "completed", "timed_out"),
        run("queued", "queued", None),
    ]
    assert never_finished(checks) == ("e2e", "slow", "queued")
    assert never_finished([run("unit", "completed", "success")]) == ()  # control


def _run(sha: str, pr: int, base: str) -> WorkflowRun:
    return WorkflowRun(
        1, "CI", f"gh-readonly-queue/main/pr-{pr}-{base}", sha, "completed", None, ""
    )


def test_the_prs_ahead_are_followed_through_the_groups_they_built_on() -> None:
    main, g2, g3 = "1" * 40, "2" * 40, "3" * 40
    gh = support.MemoryGitHub(runs=[_run(GROUP, 5, g3), _run(g3, 3, g2), _run(g2, 2, main)])
    drop = support.drop()
    base, ahead = group_context(support.MemoryStore(), drop, GROUP, RunsOnce(gh, drop.repo))
    assert (base, ahead) == (g3, (2, 3))
    # Control: a group built on the base branch itself has nothing ahead of it.
    alone = support.MemoryGitHub(runs=[_run(GROUP, 5, main)])
    assert group_context(support.MemoryStore(), drop, GROUP, RunsOnce(alone, drop.repo)) == (
        main,
        (),
    )


def test_a_loop_in_what_github_reports_does_not_invent_a_queue() -> None:
    a, b = "4" * 40, "5" * 40
    gh = support.MemoryGitHub(runs=[_run(GROUP, 5, a), _run(a, 3, b), _run(b, 2, a)])
    assert group_context(
        support.MemoryStore(), support.drop(), GROUP, RunsOnce(gh, support.drop().repo)
    ) == (a, (2, 3))


def test_a_timeout_drop_names_the_checks_that_never_finished() -> None:
    url = f"https://github.com/{REPO}/actions/runs/7/job/9"
    e2e = CheckRun(9, "e2e", "in_progress", None, url, url, "github-actions", None, None)
    unit = CheckRun(8, "unit", "completed", "success", url, url, "github-actions", None, None)
    gh = support.MemoryGitHub(checks={GROUP: [unit, e2e]}, runs=[_run(GROUP, 5, "6" * 40)])
    store: Any = support.MemoryStore([(GROUP, "main")])
    ev = Gatherer().timed_out(gh, store, replace(support.drop(), reason="checks_timed_out"))
    assert ev.timed_out_checks == ("e2e",)
    assert (ev.group_sha, ev.group_base_sha) == (GROUP, "6" * 40)
    assert ev.jobs == () and ev.failed_checks == ()  # no failure list for a timeout
