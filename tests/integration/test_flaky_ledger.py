"""Positive evidence for flaky, through the simulated GitHub (issue 14's acceptance).

- A test the flaky-test ledger knows (it failed on another pull request, whose retry of the
  same head passed and merged) is re-enqueued without the fixer, though its log reads like
  a real failure; the control, without that evidence, goes to the fixer.
- The same test failing the same way on the pull request's own head is genuine, whatever
  the ledger says; the control (the head passed) is the re-enqueue above.
- A failing `continue-on-error` step is not blamed: GitHub's jobs API reports it `success`
  and the job's real failing step is the one named; the control, the same step without
  continue-on-error, is blamed.
- A GitHub error while reading the extra evidence (the head's checks, the annotations) is no
  evidence: the class is the one the rest of the evidence gives.
"""

from __future__ import annotations

from typing import Any

from landbot.core.model import Drop, Evidence, FixerResult
from landbot.pipeline.process import Lander
from landbot.pipeline.worker import Worker
from landbot.sim import CheckScenario, JobSpec, StepSpec, WorkflowSpec
from landbot.sim.scenarios import CheckContext, standard_steps

from .conftest import World
from .triage_support import (
    CHECK_RUNS_ROUTE,
    count,
    evidence_of,
    handbacks,
    queue_and_fail,
    statuses,
)

# SQLite only: what these tests prove is about GitHub and the decision, on store paths
# the land loop runs on both stores (conftest.BOTH_STORES).
STORES = ("sqlite",)

FLAKY_TEST = "tests/test_net.py::test_fetch_retries"
PYTEST_OUTPUT = (
    "============================= test session starts ==============================",
    "collected 3 items",
    "",
    "tests/test_net.py F..                                                      [100%]",
    "",
    "=================================== FAILURES ===================================",
    "______________________________ test_fetch_retries ______________________________",
    "",
    "    def test_fetch_retries():",
    ">       assert fetch_with_retries(server) == 3",
    "E       assert 2 == 3",
    "",
    "tests/test_net.py:14: AssertionError",
    "=========================== short test summary info ============================",
    f"FAILED {FLAKY_TEST} - assert 2 == 3",
    "========================= 1 failed, 2 passed in 0.41s ==========================",
)
FAILING = CheckScenario.failing("test", step="Unit tests", run="pytest -q", output=PYTEST_OUTPUT)
PASSING = CheckScenario.passing("test")
ANNOTATIONS_ROUTE = "GET /repos/{owner}/{repo}/check-runs/{check_run_id}/annotations"
ENQUEUE = ["EnqueuePullRequest"]


def fail_then_pass(*results: CheckScenario) -> Any:
    """A merge-group scenario that gives `results` in turn, then the last one for ever."""
    calls: list[int] = []

    def scenario(ctx: CheckContext) -> CheckScenario:
        calls.append(1)
        return results[min(len(calls), len(results)) - 1]

    return scenario


def head_checks(world: World, failing_branches: set[str]) -> None:
    """The PR heads' own checks (pull_request event): `test` fails on these branches only."""

    def scenario(ctx: CheckContext) -> CheckScenario:
        return FAILING if ctx.head_branch in failing_branches else PASSING

    world.gh.set_checks(world.repo, scenario, event="pull_request")


def flaky_elsewhere(world: World) -> Any:
    """PR #1 fails FLAKY_TEST in its merge group (its log reads like a real failure), is
    handed back, is queued again by its author at the same head, passes and merges: the
    ledger now holds a failure of FLAKY_TEST that passed on retry."""
    first, _ = queue_and_fail(world, "feat-one", fail_then_pass(FAILING, PASSING))
    world.settle()
    [drop] = world.store.drops()
    assert (drop.outcome, drop.class_) == ("handed_back", "genuine")
    world.gh.enqueue(first, actor="alice")  # a person queues the same head again
    steps = world.gh.run_queue(world.repo)
    assert steps[-1].action == "merged", steps
    world.settle()
    [top] = world.store.flakiest_tests(since=drop.created_at.replace(year=2000))
    assert (top.test, top.check, top.prs, top.passed_prs) == (FLAKY_TEST, "test", (1,), (1,))
    return first


class FixerSpy:
    """A fixer runner that records the drops it was given (and fixes nothing)."""

    def __init__(self) -> None:
        self.ran: list[int] = []

    def __call__(self, drop: Drop, evidence: Evidence) -> FixerResult:
        self.ran.append(drop.pr)
        return FixerResult("needs_human", summary="looked, found nothing to fix")


def with_fixer(world: World) -> FixerSpy:
    """The World's land loop with the fixer switched on (policy) and a spy as its runner."""
    lander = Lander(world.settings, world.store, world.client, fixer_enabled=True)
    spy = FixerSpy()
    world.lander = lander
    world.worker = Worker(world.store, lambda: lander, fixer=spy, name="test-worker")
    return spy


def head_reads(world: World, head_sha: str) -> int:
    """Check-run listings of one commit (the PR's own head)."""
    return sum(
        1
        for e in world.server.requests.entries
        if e.route == CHECK_RUNS_ROUTE and head_sha in e.path
    )


def newest(world: World) -> Any:
    return world.store.drops()[0]


# --- the ledger's evidence ----------------------------------------------------------------


def test_a_test_the_ledger_knows_is_re_enqueued_without_the_fixer(world: World) -> None:
    head_checks(world, failing_branches=set())
    flaky_elsewhere(world)
    spy = with_fixer(world)
    second, _ = queue_and_fail(world, "feat-two", FAILING)
    before = world.calls()
    world.settle()
    cost = world.calls() - before

    drop = newest(world)
    assert drop.pr == second.number and drop.outcome == "requeued"
    ev = evidence_of(drop)
    [job] = ev["jobs"]
    assert (job["class_"], job["log_class"], job["failed_tests"]) == (
        "flaky",
        "genuine",
        [FLAKY_TEST],
    )
    assert job["flaky_evidence"] == (
        f"`{FLAKY_TEST}` failed in 1 other pull request in the last 7 days and passed on "
        "retry in all of them"
    )
    assert ev["triage_class"] == "flaky"
    assert spy.ran == [] and not [j for j in world.store.jobs() if j.kind == "fix"]
    assert world.mutations() == ENQUEUE  # the re-enqueue of #2, and nothing else
    [status] = statuses(world, second.number)
    assert "The failure is not this pull request's fault" in status.body
    assert "failed in 1 other pull request in the last 7 days and passed on retry" in (status.body)
    assert handbacks(world, second.number) == []
    # The PR's own head was read once (its `test` passed there), besides the group's checks.
    assert head_reads(world, second.head_sha) == 1
    # 9, the run's artifacts listed for test reports (1), and the `landbot` check run's
    # create (refused to this World's personal token); and the baseline (issue 26): main's
    # green runs (none: the simulated GitHub runs no push CI), the newest merge-group runs,
    # #1's green group's jobs and its `test`'s log (2): 5.
    assert cost <= 16, world.server.requests.counts()


def test_control_without_the_ledgers_evidence_the_fixer_gets_it(world: World) -> None:
    head_checks(world, failing_branches=set())
    spy = with_fixer(world)
    second, _ = queue_and_fail(world, "feat-two", FAILING)
    world.settle()
    world.worker.drain()
    drop = newest(world)
    ev = evidence_of(drop)
    assert ev["triage_class"] == "genuine" and ev["jobs"][0]["log_class"] is None
    assert spy.ran == [second.number]
    assert world.mutations() == []
    assert head_reads(world, second.head_sha) == 0  # nothing it could change: not read


# --- the PR's own head ----------------------------------------------------------------------


def test_the_same_failure_on_the_prs_own_head_is_genuine(world: World) -> None:
    head_checks(world, failing_branches={"feat-two"})
    flaky_elsewhere(world)
    second, _ = queue_and_fail(world, "feat-two", FAILING)
    before = world.calls()
    world.settle()
    # README: a hand-back (10, GET /user already read in this process), the head's check
    # runs, and the head's log of the check (redirect + download) to compare the tests;
    # and the `landbot` check run's create (refused to this World's personal token); and
    # the baseline (issue 26): main's green runs, #1's green group's jobs and its `test`'s
    # log (2) (the merge-group runs are listed for the hand-back anyway): 4; and the base
    # branch's check runs (is the base red the same way? issue 27.1).
    assert world.calls() - before <= 18, world.server.requests.counts()
    drop = newest(world)
    assert drop.pr == second.number
    assert (drop.outcome, drop.class_) == ("handed_back", "genuine")
    [job] = evidence_of(drop)["jobs"]
    assert job["class_"] == "genuine"
    assert job["flaky_evidence"].startswith(f"it failed the same way (`{FLAKY_TEST}`)")
    assert f"on the pull request's own head {second.head_sha[:7]}" in job["flaky_evidence"]
    [handback] = handbacks(world, second.number)
    assert "**Evidence:** it failed the same way" in handback.body
    assert "Fix the failing checks below" in handback.body
    # Nothing was done to any head but the one dropped: no enqueue of #2, no push.
    assert world.mutations() == []


def test_the_same_failure_on_the_head_goes_to_the_fixer_when_it_is_on(world: World) -> None:
    head_checks(world, failing_branches={"feat-two"})
    flaky_elsewhere(world)
    spy = with_fixer(world)
    second, _ = queue_and_fail(world, "feat-two", FAILING)
    world.settle()
    world.worker.drain()
    assert spy.ran == [second.number]
    assert evidence_of(newest(world))["triage_class"] == "genuine"


# --- GitHub errors on the extra evidence ---------------------------------------------------


def test_a_github_error_on_the_heads_checks_is_no_evidence(world: World) -> None:
    """GitHub refuses the head's check runs: the head says nothing, and the ledger's
    evidence alone decides (flaky), as in the first test; never genuine on a guess."""
    head_checks(world, failing_branches={"feat-two"})  # the head would have said genuine
    flaky_elsewhere(world)
    second = world.open_pr("feat-two", {"app.py": "def answer():\n    return 41  # two\n"})
    world.server.faults.fail(
        CHECK_RUNS_ROUTE, 403, message="Resource not accessible", path=second.head_sha
    )
    world.gh.set_checks(world.repo, FAILING, pr=second, event="merge_group")
    world.gh.enqueue(second, actor="alice")
    assert world.gh.run_queue(world.repo)[-1].action == "dropped"
    world.settle()
    drop = newest(world)
    assert drop.pr == second.number and drop.outcome == "requeued"
    assert evidence_of(drop)["triage_class"] == "flaky"
    assert world.server.requests.count(CHECK_RUNS_ROUTE, status=403) == 1


# --- continue-on-error ----------------------------------------------------------------------

LINT_OUTPUT = ("app.py:1:1: F401 [*] `os` imported but unused", "Found 1 error.")


def advisory_lint(continue_on_error: bool) -> CheckScenario:
    """A job whose advisory lint step fails first, then its unit tests fail (when the lint
    step continues on error; otherwise the job stops at the lint step)."""
    after = "failure" if continue_on_error else "skipped"
    steps = standard_steps(
        (
            StepSpec(
                "Lint (advisory)",
                "failure",
                run="ruff check .",
                output=LINT_OUTPUT,
                continue_on_error=continue_on_error,
            ),
            StepSpec("Unit tests", after, run="pytest -q", output=PYTEST_OUTPUT),
        )
    )
    return CheckScenario(workflows=(WorkflowSpec(jobs=(JobSpec("test", steps=steps),)),))


def _job_of(world: World, drop: Any) -> tuple[dict[str, Any], list[str]]:
    from .triage_support import job_id_of, served_log_lines

    [job] = evidence_of(drop)["jobs"]
    return job, served_log_lines(world, job_id_of(job["url"]))


def test_a_failing_continue_on_error_step_is_not_blamed(world: World) -> None:
    head_checks(world, failing_branches=set())
    pr, _ = queue_and_fail(world, "feat-coe", advisory_lint(continue_on_error=True))
    world.settle()
    drop = newest(world)
    job, lines = _job_of(world, drop)
    # GitHub reports the advisory step `success` (its failure is only its outcome).
    api_job = world.client.job(world.repo.full_name, int(job["url"].rsplit("/", 1)[1]))
    conclusions = {s.name: s.conclusion for s in api_job.steps}
    assert (conclusions["Lint (advisory)"], conclusions["Unit tests"]) == ("success", "failure")
    # ...though its log shows it failing first: two exit-code errors, the lint lines first.
    assert lines.count("##[error]Process completed with exit code 1.") == 2
    assert min(i for i, t in enumerate(lines) if "F401" in t) < lines.index(
        f"FAILED {FLAKY_TEST} - assert 2 == 3"
    )
    # The job's real failing step is named and its lines are the ones shown.
    assert job["step"] == "Run pytest -q"
    assert "in step 'Unit tests'" in job["summary"]
    assert job["failed_tests"] == [FLAKY_TEST]
    shown = [lines[n - 1] for n in job["error_lines"]]
    assert f"FAILED {FLAKY_TEST} - assert 2 == 3" in shown
    assert not [line for line in shown if "F401" in line or "Found 1 error" in line]
    assert job["signal"] == "steps-api"
    [handback] = handbacks(world, pr.number)
    assert "step from GitHub's jobs API" in handback.body


def test_control_the_same_step_without_continue_on_error_is_blamed(world: World) -> None:
    head_checks(world, failing_branches=set())
    queue_and_fail(world, "feat-lint", advisory_lint(continue_on_error=False))
    world.settle()
    job, lines = _job_of(world, newest(world))
    assert job["step"] == "Run ruff check ."
    assert "step 'Lint (advisory)'" in job["summary"]
    assert any("F401" in lines[n - 1] for n in job["error_lines"])


def test_annotations_cost_nothing_when_the_log_explains_the_failure(world: World) -> None:
    """The group's job has annotations (its `##[error]` lines), but its log names the
    failing step and tests: no annotation call is made."""
    head_checks(world, failing_branches=set())
    queue_and_fail(world, "feat-notes", FAILING)
    world.settle()
    [check] = [
        c for c in world.gh.check_runs.values() if c.name == "test" and c.conclusion == "failure"
    ]
    assert len(check.annotations) == 1  # `Process completed with exit code 1.`
    assert count(world, ANNOTATIONS_ROUTE) == 0
