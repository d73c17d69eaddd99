"""Failures that are not the pull request's fault: a flaky registry error and a cancelled
job are re-enqueued once; failing again the same way at the same head, they are handed back
without blaming the pull request. A real failure beside a cancelled job is still blamed."""

from __future__ import annotations

from landbot.sim import CheckScenario, JobSpec, StepSpec, WorkflowSpec
from landbot.sim.scenarios import standard_steps

from .conftest import World
from .triage_support import (
    BLOB_ROUTE,
    LOGS_ROUTE,
    count,
    evidence_of,
    fixture_log,
    handbacks,
    queue_and_fail,
    requeue_and_fail,
    statuses,
)

NPM_FLAKE = CheckScenario.failing(
    "build", step="Install dependencies", run="npm ci", log=fixture_log("npm-econnreset.log")
)

# SQLite only: what these tests prove is about GitHub and the decision, on store paths
# the land loop runs on both stores (conftest.BOTH_STORES).
STORES = ("sqlite",)
CANCELLED = CheckScenario.failing("test", step="Run tests", run="make test", conclusion="cancelled")
# Phrases of a hand-back that put the failure on the pull request.
BLAME = (
    "Fix the failing checks",
    "the pull request's own",
    "class: genuine",
    "class: policy",
    "fix the code or the test",
)
# Every call a re-enqueued drop costs (README figures): the GraphQL re-read, the check-run
# listing, the enqueue mutation and the status comment (GET /user once per process, the
# listing, the post); a flaky job adds its job (steps) and its log (redirect + download),
# and the check runs of the PR's own head (the same check failing there is not flaky); and
# the `landbot` check run's create, which GitHub refuses to this World's personal token;
# and the listing of the failed run's artifacts (its test reports, none here); and the
# flaky job's baseline (issue 26): main's green runs, and, none there, the newest
# merge-group runs (none green either: the log alone).
FLAKY_REQUEUE_CALLS = 14
CANCELLED_REQUEUE_CALLS = 7


def test_a_flaky_failure_is_requeued_once_then_handed_back(world: World) -> None:
    pr, first = queue_and_fail(world, "feat-flaky", NPM_FLAKE)
    before = world.calls()
    world.settle()
    cost = world.calls() - before
    [drop] = world.store.drops()
    ev = evidence_of(drop)
    assert (drop.outcome, ev["triage_class"]) == ("requeued", "flaky")
    [job] = ev["jobs"]
    assert (job["job"], job["step"], job["class_"]) == ("build", "Run npm ci", "flaky")
    assert ev["triage_reason"].startswith(
        "a flaky failure: job `build`, step `Run npm ci`, log line 88: `npm ERR! code ECONNRESET`"
    )
    assert world.mutations() == ["EnqueuePullRequest"]
    [status] = statuses(world, pr.number)
    assert "The failure is not this pull request's fault (a flaky failure: job `build`" in (
        status.body
    )
    assert handbacks(world, pr.number) == []
    assert cost <= FLAKY_REQUEUE_CALLS, world.server.requests.counts()

    # Back in the queue at the same head, it fails the same way: the budget is spent.
    world.gh.clock.advance(minutes=5)  # a later group: a new merge commit (its date moved)
    second = requeue_and_fail(world)
    assert second.group_sha != first.group_sha
    world.settle()
    newest = world.store.drops()[0]
    assert newest.outcome == "handed_back"
    assert newest.merge_group_sha == second.group_sha  # the new group, not the old one
    assert evidence_of(newest)["triage_class"] == "flaky"
    assert world.mutations() == ["EnqueuePullRequest"]  # still only the first re-enqueue
    [handback] = handbacks(world, pr.number)
    assert "It failed again the same way after landbot re-enqueued it once." in handback.body
    assert "**Triage:** flaky: a flaky failure:" in handback.body
    assert "(ECONNRESET); not the pull request's fault" in handback.body
    assert not [phrase for phrase in BLAME if phrase in handback.body]


def test_a_cancelled_job_is_never_blamed_on_the_pr(world: World) -> None:
    pr, _ = queue_and_fail(world, "feat-cancelled", CANCELLED)
    before = world.calls()
    world.settle()
    cost = world.calls() - before
    [drop] = world.store.drops()
    ev = evidence_of(drop)
    assert (drop.outcome, ev["triage_class"]) == ("requeued", "cancelled")
    [job] = ev["jobs"]
    assert job["class_"] == "cancelled" and "not a failure of the pull request" in job["summary"]
    # GitHub's conclusion says it all: no log is downloaded for a cancelled job.
    assert count(world, LOGS_ROUTE) == 0 and count(world, BLOB_ROUTE) == 0
    assert world.mutations() == ["EnqueuePullRequest"]
    assert cost <= CANCELLED_REQUEUE_CALLS, world.server.requests.counts()

    requeue_and_fail(world)
    world.settle()
    assert world.store.drops()[0].outcome == "handed_back"
    [handback] = handbacks(world, pr.number)
    assert "**Triage:** cancelled: a cancelled job, which is not a failure" in handback.body
    assert not [phrase for phrase in BLAME if phrase in handback.body]


def test_a_cancelled_log_is_not_blamed_either(world: World) -> None:
    """A job GitHub reports `failure` whose log shows a cancellation (a gate whose needs
    were cancelled): the log decides, and cancelled is not the PR's fault."""
    gate = CheckScenario.failing("all-green", log=fixture_log("gate-cancelled.log"))
    queue_and_fail(world, "feat-gate", gate)
    world.settle()
    [drop] = world.store.drops()
    assert count(world, LOGS_ROUTE) == 1
    assert (drop.outcome, evidence_of(drop)["triage_class"]) == ("requeued", "cancelled")


def test_a_failure_beside_cancelled_siblings_is_blamed(world: World) -> None:
    """Control: fail-fast cancels the matrix when one job fails. The failure decides; the
    cancelled jobs are listed as cancelled and their logs are not read."""
    failing = JobSpec(
        "test (3.12)",
        steps=standard_steps(
            (
                StepSpec(
                    "Run make test",
                    "failure",
                    run="make test",
                    output=("FAILED tests/test_app.py::test_answer - assert 41 == 42",),
                ),
            )
        ),
    )
    cancelled = [
        JobSpec(f"test (3.{n})", steps=standard_steps((StepSpec("Run make test", "cancelled"),)))
        for n in (10, 11)
    ]
    scenario = CheckScenario(workflows=(WorkflowSpec(jobs=(*cancelled, failing)),))
    pr, _ = queue_and_fail(world, "feat-matrix", scenario)
    world.settle()
    [drop] = world.store.drops()
    ev = evidence_of(drop)
    assert (drop.outcome, ev["triage_class"]) == ("handed_back", "genuine")
    assert sorted((j["job"], j["class_"]) for j in ev["jobs"]) == [
        ("test (3.10)", "cancelled"),
        ("test (3.11)", "cancelled"),
        ("test (3.12)", "genuine"),
    ]
    assert count(world, LOGS_ROUTE) == 1
    assert world.mutations() == []
    [handback] = handbacks(world, pr.number)
    assert "**Triage:** genuine: the pull request's own failure: job `test (3.12)`" in handback.body
