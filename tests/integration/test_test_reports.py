"""Test reports when the run has them (issue 26.4), through the simulated GitHub.

- A failed run that uploaded a JUnit XML artifact (`junit-results`): the failed tests the
  report names, not the log's words, reach the evidence, the hand-back (with the report's
  messages) and the flaky-test ledger; a second pull request failing the same tests is
  re-enqueued on the ledger's evidence. The log's step, error lines and excerpt stay.
- A run without a matching artifact costs one listing and nothing else; the log's names stay.
- A hostile report (billion laughs) is skipped: the log's names stay, the drop is triaged.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from typing import Any

from landbot.sim import CheckScenario, JobSpec, WorkflowSpec
from landbot.sim.scenarios import StepSpec, standard_steps

from .conftest import World
from .triage_support import count, evidence_of, handbacks, queue_and_fail

JUNIT = Path(__file__).parents[1] / "triage" / "fixtures" / "junit"
LIST_ROUTE = "GET /repos/{owner}/{repo}/actions/runs/{run_id}/artifacts"
DOWNLOAD_ROUTE = "GET /repos/{owner}/{repo}/actions/artifacts/{artifact_id}/{archive_format}"
BLOB_ROUTE = "GET /_blobs/artifacts/{artifact_id}"
# The real pytest report (dorny/test-reporter, SOURCES.md): two failed tests.
REPORTED = ["tests/test_lib.py::test_always_fail", "tests/test_lib.py::test_error"]
# A log that says a test failed but names none (pytest -q with the summary turned off).
QUIET_OUTPUT = (
    "tests/test_lib.py ..s.F.sF..                                               [100%]",
    "E       assert False",
    "tests/test_lib.py:25: AssertionError",
    "2 failed, 6 passed, 2 skipped in 0.02s",
)

# SQLite only: what these tests prove is about GitHub and the decision, on store paths
# the land loop runs on both stores (conftest.BOTH_STORES).
STORES = ("sqlite",)
NAMED_OUTPUT = ("FAILED tests/test_app.py::test_answer - assert 41 == 42",)
ENQUEUE = ["EnqueuePullRequest"]
LAUGHS = (
    b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
    + b"".join(
        f'<!ENTITY lol{i} "{f"&lol{i - 1};" * 10 if i > 1 else "&lol;" * 10}">'.encode()
        for i in range(1, 10)
    )
    + b']><testsuite><testcase classname="a" name="b"><failure message="&lol9;"/></testcase>'
    + b"</testsuite>"
)


def zipped(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def failing(output: tuple[str, ...], *artifacts: tuple[str, bytes]) -> CheckScenario:
    """One failing `test` job whose run uploads `artifacts`."""
    job = JobSpec(
        "test",
        steps=standard_steps((StepSpec("Unit tests", "failure", run="pytest -q", output=output),)),
    )
    return CheckScenario(workflows=(WorkflowSpec("CI", jobs=(job,), artifacts=artifacts),))


def report_zip() -> bytes:
    return zipped({"report.xml": (JUNIT / "pytest-xunit2.xml").read_bytes()})


def fail_then_pass(*results: CheckScenario) -> Any:
    calls: list[int] = []

    def scenario(ctx: Any) -> CheckScenario:
        calls.append(1)
        return results[min(len(calls), len(results)) - 1]

    return scenario


def test_a_reports_tests_reach_the_evidence_the_handback_and_the_ledger(world: World) -> None:
    reported = failing(QUIET_OUTPUT, ("junit-results", report_zip()))
    first, _ = queue_and_fail(
        world, "feat-one", fail_then_pass(reported, CheckScenario.passing("test"))
    )
    before = world.calls()
    world.settle()
    cost = world.calls() - before
    [drop] = world.store.drops()
    assert drop.outcome == "handed_back"
    [job] = evidence_of(drop)["jobs"]
    assert job["failed_tests"] == REPORTED
    assert job["tests_from"] == "junit-results"
    assert [(t["test"], t["message"]) for t in job["reported_tests"]] == [
        (REPORTED[0], "assert False"),
        (REPORTED[1], "Exception: error"),
    ]
    assert job["reported_tests"][0]["text"].endswith("tests/test_lib.py:25: AssertionError")
    # The log's own reading stays: its step, its error lines and its excerpt.
    assert job["step"] == "Run pytest -q" and job["error_lines"] and job["excerpt"]
    # One listing of the run's artifacts, one download (the API's redirect, the blob).
    assert (count(world, LIST_ROUTE), count(world, DOWNLOAD_ROUTE), count(world, BLOB_ROUTE)) == (
        1,
        1,
        1,
    )
    [handback] = handbacks(world, first.number)
    assert "**Failed tests** from the test report `junit-results`:" in handback.body
    assert "`tests/test_lib.py::test_error`: Exception: error" in handback.body
    # The 13 of a hand-back without a report (test_triage_ci_failure.py's: the listing of
    # the run's artifacts and of main's green runs for the baseline among them), and the
    # report's download: the redirect and the blob; and the base branch's check runs (is
    # the base red the same way? issue 27.1).
    assert cost <= 16, world.server.requests.counts()

    # The author queues the same head again; it passes and merges: the ledger now holds
    # the report's tests as failed once and passed on retry.
    world.gh.enqueue(first, actor="alice")
    assert world.gh.run_queue(world.repo)[-1].action == "merged"
    world.settle()
    since = drop.created_at.replace(year=2000)
    assert sorted(
        (t.test, t.check, t.passed_prs) for t in world.store.flakiest_tests(since=since)
    ) == [
        (REPORTED[0], "test", (1,)),
        (REPORTED[1], "test", (1,)),
    ]

    # Another pull request fails the same tests, by the report alone: flaky, re-enqueued.
    world.gh.set_checks(world.repo, CheckScenario.passing("test"), event="pull_request")
    second, _ = queue_and_fail(
        world, "feat-two", failing(QUIET_OUTPUT, ("junit-results", report_zip()))
    )
    world.settle()
    newest = world.store.drops()[0]
    assert (newest.pr, newest.outcome) == (second.number, "requeued")
    [job] = evidence_of(newest)["jobs"]
    assert (job["class_"], job["failed_tests"]) == ("flaky", REPORTED)
    assert "passed on retry" in job["flaky_evidence"]
    assert world.mutations() == ENQUEUE


def test_a_run_without_a_matching_artifact_costs_one_listing(world: World) -> None:
    coverage = zipped({"coverage.xml": b"<coverage/>"})
    pr, _ = queue_and_fail(world, "feat-one", failing(NAMED_OUTPUT, ("coverage", coverage)))
    world.settle()
    [drop] = world.store.drops()
    [job] = evidence_of(drop)["jobs"]
    assert job["failed_tests"] == ["tests/test_app.py::test_answer"]  # the log's
    assert (job["tests_from"], job["reported_tests"]) == ("", [])
    assert (count(world, LIST_ROUTE), count(world, DOWNLOAD_ROUTE), count(world, BLOB_ROUTE)) == (
        1,
        0,
        0,
    )
    [handback] = handbacks(world, pr.number)
    assert "from the test report" not in handback.body


def test_a_hostile_report_is_skipped_and_the_logs_names_stay(world: World) -> None:
    bomb = zipped({"TEST-bomb.xml": LAUGHS})
    _, _ = queue_and_fail(world, "feat-one", failing(NAMED_OUTPUT, ("test-results", bomb)))
    world.settle()
    [drop] = world.store.drops()
    assert drop.outcome == "handed_back"
    [job] = evidence_of(drop)["jobs"]
    assert job["failed_tests"] == ["tests/test_app.py::test_answer"]
    assert job["tests_from"] == ""
    assert (count(world, LIST_ROUTE), count(world, DOWNLOAD_ROUTE)) == (1, 1)


def ledger_knows_the_reported_tests(world: World) -> Any:
    """PR #1 fails the report's tests in its merge group, is handed back, is queued again
    at the same head, passes and merges: the ledger holds them as passed on retry."""
    reported = failing(QUIET_OUTPUT, ("junit-results", report_zip()))
    first, _ = queue_and_fail(
        world, "feat-one", fail_then_pass(reported, CheckScenario.passing("test"))
    )
    world.settle()
    world.gh.enqueue(first, actor="alice")
    assert world.gh.run_queue(world.repo)[-1].action == "merged"
    world.settle()
    return first


def test_the_heads_own_report_is_compared_with_the_groups(world: World) -> None:
    # The PR's own head fails `test` too: its log names another test (in another form),
    # its report the same tests as the group's. Like is compared with like: the reports
    # say it failed the same way, so it is genuine, whatever the ledger says.
    head_run = failing(
        ("FAILED tests/test_other.py::test_unrelated - assert 1 == 2",),
        ("junit-results", report_zip()),
    )

    def heads(ctx: Any) -> CheckScenario:
        return head_run if ctx.head_branch == "feat-two" else CheckScenario.passing("test")

    world.gh.set_checks(world.repo, heads, event="pull_request")
    ledger_knows_the_reported_tests(world)
    second, _ = queue_and_fail(
        world, "feat-two", failing(QUIET_OUTPUT, ("junit-results", report_zip()))
    )
    world.settle()
    newest = world.store.drops()[0]
    assert (newest.pr, newest.outcome, newest.class_) == (second.number, "handed_back", "genuine")
    [job] = evidence_of(newest)["jobs"]
    assert job["flaky_evidence"].startswith(
        f"it failed the same way (`{REPORTED[0]}`, `{REPORTED[1]}`) on the pull request's own head"
    )
