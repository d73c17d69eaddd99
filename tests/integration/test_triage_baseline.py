"""The baseline on the simulated GitHub (issue 26): a failed job's log is compared with the
same job's last green log on the base branch, fetched once per base commit and reused by
the next drop on that base; no green run, or GitHub failing to serve it, is the log alone.
Every call counted (the README's table)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from landbot.github.client import GitHubClient
from landbot.pipeline.process import Lander
from landbot.pipeline.worker import Worker
from landbot.sim import CheckScenario, JobSpec, StepSpec, WorkflowSpec
from landbot.sim.scenarios import standard_steps
from landbot.triage.baseline import Baseline, read_baseline

from .conftest import World
from .test_triage_ci_failure import PYTEST
from .triage_support import (
    BLOB_ROUTE,
    JOB_ROUTE,
    LOGS_ROUTE,
    RUN_JOBS_ROUTE,
    RUNS_ROUTE,
    evidence_of,
    handbacks,
)

# SQLite only: what these tests prove is about GitHub and the decision, on store paths
# the land loop runs on both stores (conftest.BOTH_STORES).
STORES = ("sqlite",)

JOB = "test (3.12)"
PASSING_OUTPUT = (
    "============================= test session starts ==============================",
    "collected 1 item",
    "",
    "tests/test_app.py .                                                        [100%]",
    "",
    "============================== 1 passed in 0.01s ===============================",
)
# The same workflow and job on the base branch, green; and a matrix sibling that is not
# the failed job's baseline.
GREEN = CheckScenario(
    workflows=(
        WorkflowSpec(
            "CI",
            jobs=(
                JobSpec("test (3.13)"),
                JobSpec(
                    JOB,
                    steps=standard_steps(
                        (StepSpec("Unit tests", run="pytest -q", output=PASSING_OUTPUT),)
                    ),
                ),
            ),
        ),
    )
)
# A CI_FAILURE drop handed back, its log alone, as before issue 26 (token World:
# tests/integration/test_triage_ci_failure.py), with the listing of the failed run's
# artifacts for its test reports (issue 26.4) and the base branch's check runs (is the base
# red the same way? issue 27.1). A later drop in the same process costs 2 less: the bot's
# login and the refusal of the `landbot` check run are learned once.
LOG_ALONE = 13
LATER_LOG_ALONE = LOG_ALONE - 2
# What a drop on a base costs beyond the log alone, the first time: main's green push runs
# listed (1), the green run's jobs (1), the green job's log (2: the API's redirect and the
# download). The newest merge-group runs are listed anyway for a hand-back (the PRs ahead).
FIRST_DROP_EXTRA = 4
# With no green run to compare: the listing alone, then nothing for a while (RECHECK).
NO_BASELINE_EXTRA = 1


def green_base(world: World) -> int:
    """A green push run of CI on main's tip; returns the id of its job JOB."""
    main = world.gh.branch_sha(world.repo, "main")
    assert main is not None
    world.gh.set_checks(world.repo, GREEN, sha=main, event="push")
    checks = world.gh.run_checks(world.repo, main, event="push", head_branch="main")
    world.settle()  # its webhooks, before anything is counted
    [job_id] = [c.id for c in checks if c.name == JOB]
    return job_id


def drop(world: World, head: str) -> tuple[Any, int]:
    """Queue a PR whose merge group fails JOB, let landbot handle the drop; (the drop,
    the calls it cost)."""
    pr = world.open_pr(head, {"app.py": f"def answer():\n    return 41  # {head}\n"})
    world.gh.set_checks(world.repo, PYTEST, pr=pr, event="merge_group")
    world.gh.enqueue(pr, actor="alice")
    assert world.gh.run_queue(world.repo)[-1].action == "dropped"
    world.gh.webhooks.flush()
    before = world.calls()
    world.worker.drain()
    [row] = [d for d in world.store.drops() if d.pr == pr.number]
    assert (row.outcome, row.class_) == ("handed_back", "genuine")
    assert len(handbacks(world, pr.number)) == 1
    return row, world.calls() - before


def routes(world: World) -> tuple[int, int, int, int, int]:
    r = world.server.requests
    return (
        r.count(RUNS_ROUTE),
        r.count(RUN_JOBS_ROUTE),
        r.count(JOB_ROUTE),
        r.count(LOGS_ROUTE),
        r.count(BLOB_ROUTE),
    )


def baseline_rows(world: World) -> list[tuple[int, str]]:
    from landbot.store.tables import baselines

    with world.store.engine.connect() as conn:
        rows = conn.execute(baselines.select().order_by(baselines.c.id)).all()
    return [(int(r.run_id), r.job_name) for r in rows]


def test_the_baseline_is_fetched_once_per_base_and_reused_by_the_next_drop(
    world: World,
) -> None:
    green_job = green_base(world)
    green_run = world.gh.jobs[green_job].run_id

    first, cost = drop(world, "feat-one")
    # The failed job's log, then the baseline's: main's green runs listed once (and the
    # newest merge-group runs, for the PRs ahead), the green run's jobs, its job's log.
    assert routes(world) == (2, 1, 1, 2, 2)
    assert cost == LOG_ALONE + FIRST_DROP_EXTRA, world.server.requests.counts()
    assert world.mutations() == []
    # Kept once: the compact form of that job's log, and which run is main's baseline.
    assert baseline_rows(world) == [(green_run, JOB)]
    kept = world.store.baseline(world.repo.full_name, green_run, JOB)
    assert kept is not None and kept.job_id == green_job
    served = world.gh.jobs[green_job].log.encode()
    assert Baseline.from_bytes(kept.data) == read_baseline(served)
    main = world.gh.branch_sha(world.repo, "main")
    assert main is not None
    memo = world.store.baseline_run(world.repo.full_name, "main", "CI", JOB, main)
    assert memo is not None and (memo.run_id, memo.run_sha) == (green_run, main)

    world.server.requests.reset()
    second, cost = drop(world, "feat-two")
    # The same base commit: no listing of green runs, no jobs, one log (the failed one).
    # The merge-group runs are listed for the hand-back, as without a baseline.
    assert routes(world) == (1, 0, 1, 1, 1)
    assert cost == LATER_LOG_ALONE, world.server.requests.counts()
    assert baseline_rows(world) == [(green_run, JOB)]
    for row in (first, second):
        [job] = evidence_of(row)["jobs"]
        assert (job["job"], job["class_"]) == (JOB, "genuine")
        assert any("assert 41 == 42" in text for _, text in job["excerpt"])


def test_a_job_with_no_green_run_to_compare_is_the_log_alone(world: World) -> None:
    """No green run of CI on main, nor a green merge group: the log alone, as before
    issue 26, for one listing; the next drop on that base asks nothing."""
    _, cost = drop(world, "feat-alone")
    assert routes(world) == (2, 0, 1, 1, 1)
    assert cost == LOG_ALONE + NO_BASELINE_EXTRA, world.server.requests.counts()
    assert baseline_rows(world) == []
    main = world.gh.branch_sha(world.repo, "main")
    assert main is not None
    memo = world.store.baseline_run(world.repo.full_name, "main", "CI", JOB, main)
    assert memo is not None and memo.run_id is None

    world.server.requests.reset()
    _, cost = drop(world, "feat-alone-2")
    assert routes(world) == (1, 0, 1, 1, 1)
    assert cost == LATER_LOG_ALONE, world.server.requests.counts()


@pytest.fixture
def no_waits(world: World) -> Iterator[World]:
    """The World with a client that retries a 5xx as always, without the real waits."""
    client = GitHubClient(world.settings.github, mutation_gap=0, sleep=lambda _: None)
    lander = Lander(world.settings, world.store, client)
    world.lander = lander
    world.worker = Worker(world.store, lambda: lander, name="test-worker")
    try:
        yield world
    finally:
        client.close()


def test_a_baseline_github_will_not_serve_is_the_log_alone(no_waits: World) -> None:
    """502 on every try of the green job's log: the drop is triaged from its log alone
    (a warning, not a failed drop) and nothing is remembered, so the next drop on that
    base fetches the baseline."""
    world = no_waits
    green_job = green_base(world)
    world.server.faults.fail(LOGS_ROUTE, 502, times=5, path=f"/actions/jobs/{green_job}/logs")
    first, _ = drop(world, "feat-502")
    assert world.server.requests.count(LOGS_ROUTE, status=502) == 5  # the client's tries
    assert baseline_rows(world) == []
    assert world.store.baseline_run(world.repo.full_name, "main", "CI", JOB, base(world)) is None
    assert evidence_of(first)["jobs"][0]["class_"] == "genuine"

    world.server.requests.reset()
    _, cost = drop(world, "feat-after-502")
    assert routes(world) == (2, 1, 1, 2, 2)  # asked again, and served
    assert cost == LATER_LOG_ALONE + FIRST_DROP_EXTRA
    assert len(baseline_rows(world)) == 1


def test_a_baseline_log_that_is_gone_is_the_log_alone_for_a_while(world: World) -> None:
    """404 for the green job's log (expired): the log alone, and remembered, so the next
    drop on that base does not ask for it again."""
    green_job = green_base(world)
    world.server.faults.fail(LOGS_ROUTE, 404, path=f"/actions/jobs/{green_job}/logs")
    first, cost = drop(world, "feat-404")
    assert evidence_of(first)["jobs"][0]["class_"] == "genuine"
    assert cost == LOG_ALONE + 3  # the listing, the jobs, the refused log request
    assert baseline_rows(world) == []
    memo = world.store.baseline_run(world.repo.full_name, "main", "CI", JOB, base(world))
    assert memo is not None and memo.run_id is None

    world.server.requests.reset()
    _, cost = drop(world, "feat-after-404")
    assert routes(world) == (1, 0, 1, 1, 1)
    assert cost == LATER_LOG_ALONE


def base(world: World) -> str:
    sha = world.gh.branch_sha(world.repo, "main")
    assert sha is not None
    return sha
