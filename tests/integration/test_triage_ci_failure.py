"""Triage of a CI_FAILURE drop on the simulated GitHub: the group commit, the failed job,
its step and error lines read from the log GitHub serves, and the hand-back that shows them.
"""

from __future__ import annotations

import re

from landbot.sim import CheckScenario, JobSpec, StepSpec, WorkflowSpec
from landbot.sim.scenarios import standard_steps

from .conftest import World
from .triage_support import (
    BLOB_ROUTE,
    JOB_ROUTE,
    LOGS_ROUTE,
    RUN_JOBS_ROUTE,
    count,
    evidence_of,
    fixture_log,
    handbacks,
    job_id_of,
    queue_and_fail,
    served_log_lines,
    statuses,
)

# SQLite only: what these tests prove is about GitHub and the decision, on store paths
# the land loop runs on both stores (conftest.BOTH_STORES).
STORES = ("sqlite",)

PYTEST_OUTPUT = (
    "============================= test session starts ==============================",
    "collected 1 item",
    "",
    "tests/test_app.py F                                                        [100%]",
    "",
    "=================================== FAILURES ===================================",
    "_________________________________ test_answer __________________________________",
    "",
    "    def test_answer():",
    ">       assert answer() == 42",
    "E       assert 41 == 42",
    "E        +  where 41 = answer()",
    "",
    "tests/test_app.py:5: AssertionError",
    "=========================== short test summary info ============================",
    "FAILED tests/test_app.py::test_answer - assert 41 == 42",
    "============================== 1 failed in 0.02s ===============================",
)
PYTEST = CheckScenario.failing(
    "test (3.12)", step="Unit tests", run="pytest -q", output=PYTEST_OUTPUT, other_jobs=["lint"]
)
# What one CI_FAILURE drop handed back costs, every call counted (README figure):
# 1 GraphQL re-read of the PR, 1 check-run listing, 1 job (its steps), 2 for the log
# (the API's redirect and the download), 1 listing of the newest merge-group runs (the
# PRs ahead in the group, for the reproduce block), then 4 for the comments (GET /user once
# per process, the listing for the sticky status comment, the status, the hand-back), and
# 1 for the `landbot` check run: its create, which GitHub refuses to this World's personal
# token (under App auth, create and complete: 2; tests/integration/test_check_run.py);
# and 1 listing of the failed run's artifacts (its test reports, none here: issue 26.4);
# and 1 listing of main's green runs for the failed job's baseline (issue 26: none here,
# and the merge-group runs it falls back to are the listing above; with one,
# tests/integration/test_triage_baseline.py); and 1 for the base branch's check runs (is
# the base red the same way? issue 27.1).
CI_FAILURE_CALLS = 14


def test_a_ci_failure_is_explained_from_the_job_log(world: World) -> None:
    pr, step = queue_and_fail(world, "feat-pytest", PYTEST)
    before = world.calls()
    world.settle()
    cost = world.calls() - before

    [drop] = world.store.drops()
    assert (drop.reason, drop.outcome, drop.class_) == (
        "failed_checks",
        "handed_back",
        "genuine",
    )
    # The group commit the queue tested, recorded on the drop, and where it came from.
    assert drop.merge_group_sha == step.group_sha
    assert drop.evidence == {"merge_group_source": "merge_group event"}
    ev = evidence_of(drop)
    assert ev["merge_group_source"] == "merge_group event"
    # Only the failed job: the passing `lint` is not evidence.
    assert [c["name"] for c in ev["failed_checks"]] == ["test (3.12)"]
    [job] = ev["jobs"]
    assert job["job"] == "test (3.12)" and job["class_"] == "genuine"
    assert job["step"] == "Run pytest -q"  # the failing step's command, as the log shows it
    assert "in step 'Unit tests'" in job["summary"]  # ...and its name in the workflow
    assert "tests/test_app.py::test_answer - assert 41 == 42" in job["summary"]

    # The line numbers are those of the log GitHub serves for that job.
    lines = served_log_lines(world, job_id_of(job["url"]))
    # pytest's E line, the location and the failed test; not the bare exit code (the
    # excerpt shows it).
    assert [lines[n - 1] for n in job["error_lines"]] == [
        "E       assert 41 == 42",
        "tests/test_app.py:5: AssertionError",
        "FAILED tests/test_app.py::test_answer - assert 41 == 42",
    ]
    assert all(lines[n - 1] == text for n, text in job["excerpt"])
    assert "E       assert 41 == 42" in [text for _, text in job["excerpt"]]  # the context
    assert set(job["error_lines"]) <= {n for n, _ in job["excerpt"]}

    assert ev["triage_class"] == "genuine"
    assert ev["triage_reason"].startswith(
        "the pull request's own failure: job `test (3.12)`, step `Run pytest -q`, log line "
    )

    # The hand-back shows the job (linked), the step, the error lines with their numbers
    # in a collapsed excerpt, and the class with its reason.
    [handback] = handbacks(world, pr.number)
    body = handback.body
    assert f"**Triage:** genuine: {ev['triage_reason']}" in body
    assert f"- [test (3.12)]({job['url']}) `failure`, step **Run pytest -q**: " in body
    assert "_(class: genuine; step from GitHub's jobs API)_" in body  # and what picked it
    where = ", ".join(str(n) for n in job["error_lines"])
    assert f"<details><summary>log excerpt (error lines {where})</summary>" in body
    for n in job["error_lines"]:
        assert re.search(rf"^  {n} > {re.escape(lines[n - 1])}$", body, re.M), n
    assert "\npytest -q\n" in body  # the command to reproduce, from the step
    assert len(statuses(world, pr.number)) == 1

    # Cost: one job read and one log downloaded; never a mutation.
    assert (count(world, JOB_ROUTE), count(world, LOGS_ROUTE), count(world, BLOB_ROUTE)) == (
        1,
        1,
        1,
    )
    assert world.mutations() == []
    assert cost <= CI_FAILURE_CALLS, world.server.requests.counts()


def test_the_log_cap_reads_five_logs_and_says_so(world: World) -> None:
    """Seven jobs fail in one run: one call lists the run's jobs, five logs are read, and
    the two unread ones keep the drop from being called 'not its fault'."""
    npm = fixture_log("npm-econnreset.log")
    jobs = tuple(
        JobSpec(
            f"build {n}",
            steps=standard_steps((StepSpec("Run npm ci", "failure", run="npm ci"),)),
            log=npm,
        )
        for n in range(1, 8)
    )
    pr, _ = queue_and_fail(world, "feat-many", CheckScenario(workflows=(WorkflowSpec(jobs=jobs),)))
    world.settle()
    [drop] = world.store.drops()
    ev = evidence_of(drop)
    assert count(world, LOGS_ROUTE) == 5 and count(world, BLOB_ROUTE) == 5
    assert count(world, RUN_JOBS_ROUTE) == 1 and count(world, JOB_ROUTE) == 0
    assert [j["class_"] for j in ev["jobs"]] == ["flaky"] * 5 + ["unknown"] * 2
    assert "landbot read 5 of 7 failed jobs' logs" in ev["triage_reason"]
    assert ev["triage_class"] == "unknown" and drop.outcome == "handed_back"
    assert world.mutations() == []
    [handback] = handbacks(world, pr.number)
    assert handback.body.count("log not read: landbot reads at most 5 job logs per drop") == 2


def test_the_cap_is_a_setting_of_the_gatherer(world: World) -> None:
    """Control for the cap: with room for all seven logs, all seven are read, and seven
    flaky jobs make the drop 'not its fault' (re-enqueued)."""
    world.lander.gather.max_logs = 7  # type: ignore[attr-defined]
    npm = fixture_log("npm-econnreset.log")
    jobs = tuple(
        JobSpec(
            f"build {n}",
            steps=standard_steps((StepSpec("Run npm ci", "failure", run="npm ci"),)),
            log=npm,
        )
        for n in range(1, 8)
    )
    queue_and_fail(world, "feat-many-ok", CheckScenario(workflows=(WorkflowSpec(jobs=jobs),)))
    world.settle()
    [drop] = world.store.drops()
    assert count(world, LOGS_ROUTE) == 7
    assert evidence_of(drop)["triage_class"] == "flaky"
    assert drop.outcome == "requeued" and world.mutations() == ["EnqueuePullRequest"]


def test_an_opted_out_pr_is_ignored_before_any_log_is_read(world: World) -> None:
    """The skip label is part of the re-read: triage (job reads, log downloads, a fetch)
    runs only for a drop that still holds."""
    pr, _ = queue_and_fail(world, "feat-skip-fail", PYTEST)
    world.gh.add_label(pr, "landbot:skip")
    world.settle()
    [drop] = world.store.drops()
    assert drop.outcome == "ignored" and "landbot:skip" in drop.summary
    assert (count(world, JOB_ROUTE), count(world, LOGS_ROUTE), count(world, RUN_JOBS_ROUTE)) == (
        0,
        0,
        0,
    )
    assert world.mutations() == [] and world.bot_comments(pr.number) == []


def test_control_the_same_drop_without_the_label_reads_its_log(world: World) -> None:
    queue_and_fail(world, "feat-noskip-fail", PYTEST)
    world.settle()
    [drop] = world.store.drops()
    assert drop.outcome == "handed_back"
    assert count(world, LOGS_ROUTE) == 1
