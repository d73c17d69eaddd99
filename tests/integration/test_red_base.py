"""The base is red (issue 27.1): a job that fails the same way on the base branch's newest
run is not the pull request's fault. Such drops wait (no fixer, no hand-back, no blind
re-enqueue) and go back in the queue, in their order, when the base's run turns green."""

from __future__ import annotations

import datetime as dt

import pytest
import sqlalchemy as sa

from landbot.sim import CheckScenario
from landbot.store.tables import jobs

from .conftest import World
from .triage_support import CHECK_RUNS_ROUTE, count, handbacks, queue_and_fail, statuses

# The same failure on the base and in every merge group (same error lines).
RED = CheckScenario.failing(
    "test", output=("FAILED tests/test_app.py::test_base - assert 'red' == 'green'",)
)
OTHER = CheckScenario.failing(
    "test", output=("FAILED tests/test_app.py::test_mine - assert 41 == 42",)
)

# SQLite only: what these tests prove is about GitHub and the decision, on store paths
# the land loop runs on both stores (conftest.BOTH_STORES).
STORES = ("sqlite",)


def red_base(world: World, scenario: CheckScenario = RED) -> str:
    """The base's newest commit, with `scenario` run on it (a push to main)."""
    sha = world.gh.branch_sha(world.repo, "main")
    assert sha is not None
    world.gh.set_checks(world.repo, scenario, sha=sha)
    world.gh.run_checks(world.repo, sha, event="push", head_branch="main")
    return sha


def green_base(world: World) -> str:
    """A fix lands on main and its checks pass (the workflow_run webhook follows)."""
    sha = world.gh.commit_file(world.repo, "fix.txt", "fixed\n")
    world.gh.set_checks(world.repo, CheckScenario.passing(), sha=sha)
    world.gh.run_checks(world.repo, sha, event="push", head_branch="main")
    return sha


def test_five_drops_wait_for_a_red_base_and_go_back_in_order(world: World) -> None:
    red_base(world)
    prs = []
    for n in range(5):
        pr, _ = queue_and_fail(world, f"feat-{n}", RED, files={f"f{n}.py": f"x = {n}\n"})
        world.settle()
        prs.append(pr)
    drops = sorted(world.store.drops(), key=lambda d: d.id)
    assert [d.outcome for d in drops] == ["waiting_base"] * 5
    assert all(d.plan and d.plan["evidence"]["base_red"] == ["test"] for d in drops)
    assert world.mutations() == []  # no blind re-enqueue
    # The breaker opened once, and says so in one issue, edited as drops were held.
    [issue] = world.gh.issues_of(world.repo)
    assert issue.state == "open" and "the base branch is red" in issue.title
    assert all(f"#{pr.number} (waiting for the base)" in issue.body for pr in prs)
    assert "/landbot breaker close" in issue.body
    assert f"landbot breaker close {world.repo.full_name}" in issue.body
    breaker = world.store.breaker(world.repo.full_name)
    assert breaker is not None and breaker.open and breaker.cause == "red_base"
    for pr in prs:
        assert handbacks(world, pr.number) == []  # nobody blamed, nobody mentioned
        [status] = statuses(world, pr.number)
        assert "fails the same way on the base branch" in status.body

    # Still red: a look again (the hold job's timer, or a poll) costs one call, no change.
    before = world.calls()
    assert world.lander.hold_sweep(world.repo.full_name) is not None
    assert world.calls() - before == 1
    assert [d.outcome for d in world.store.drops()] == ["waiting_base"] * 5

    green_base(world)
    before = world.calls()
    world.settle()
    drops = sorted(world.store.drops(), key=lambda d: d.id)
    assert [d.outcome for d in drops] == ["requeued"] * 5, [d.summary for d in drops]
    assert world.mutations() == ["EnqueuePullRequest"] * 5
    queue = world.gh.queue(world.repo)
    assert queue is not None
    assert [e.pr.number for e in queue.entries] == [pr.number for pr in prs]  # in order
    for pr in prs:
        assert handbacks(world, pr.number) == []
        [status] = statuses(world, pr.number)  # the same comment, edited
        assert "The base branch is green again" in status.body
    # One listing of the base's checks, then each PR: re-read, enqueue, status (2); then
    # the issue closed (1).
    assert world.calls() - before <= 1 + 5 * 4 + 1, world.server.requests.counts()
    [issue] = world.gh.issues_of(world.repo)  # the same issue, closed: one opened in all
    assert issue.state == "closed" and "closed" in issue.title
    breaker = world.store.breaker(world.repo.full_name)
    assert breaker is not None and not breaker.open


def test_control_a_failure_the_base_does_not_share_is_handed_back(world: World) -> None:
    """Control: the base fails too, but another way: the PR's own failure."""
    red_base(world, OTHER)
    pr, _ = queue_and_fail(world, "feat-own", RED)
    world.settle()
    [drop] = world.store.drops()
    assert drop.outcome == "handed_back"
    assert len(handbacks(world, pr.number)) == 1


def test_control_a_green_base_costs_one_listing(world: World) -> None:
    """Control: the base passes: handed back as before, one more call (the base's checks)."""
    green_base(world)
    queue_and_fail(world, "feat-green", RED)
    world.settle()
    [drop] = world.store.drops()
    assert drop.outcome == "handed_back"
    assert count(world, CHECK_RUNS_ROUTE) >= 2  # the group's, and the base's


def test_the_wait_ends_in_a_hand_back(world: World) -> None:
    red_base(world)
    pr, _ = queue_and_fail(world, "feat-late", RED)
    world.settle()
    assert world.store.drops()[0].outcome == "waiting_base"
    world.lander.settings.breaker.base_wait_hours = 1e-9  # the deadline passes at once
    world.lander.hold_sweep(world.repo.full_name)
    [drop] = world.store.drops()
    assert drop.outcome == "handed_back"
    [handback] = handbacks(world, pr.number)
    assert "the base did not turn green while landbot waited" in handback.body


class Killed(Exception):
    pass


def test_a_worker_killed_while_releasing_loses_nothing(world: World) -> None:
    """The waiting drops are in the store: a worker killed after deciding a release (before
    any action) is finished by the next look, each PR enqueued once, in order."""
    red_base(world)
    prs = []
    for n in range(2):
        pr, _ = queue_and_fail(world, f"feat-k{n}", RED, files={f"k{n}.py": f"x = {n}\n"})
        world.settle()
        prs.append(pr)
    green_base(world)
    world.gh.webhooks.flush()  # delivered, not yet worked on

    def kill(name: str) -> None:
        if name == "after_release_decide":
            raise Killed(name)

    world.lander.failpoint = kill
    with pytest.raises(Killed):
        world.lander.hold_sweep(world.repo.full_name)
    first = min(world.store.drops(), key=lambda d: d.id)
    assert first.outcome == "waiting_base" and first.plan and first.plan["stage"] == "release"
    world.lander.failpoint = lambda name: None
    world.settle()  # the hold job, woken by the base's passing run
    drops = sorted(world.store.drops(), key=lambda d: d.id)
    assert [d.outcome for d in drops] == ["requeued", "requeued"]
    assert world.mutations() == ["EnqueuePullRequest"] * 2
    queue = world.gh.queue(world.repo)
    assert queue is not None
    assert [e.pr.number for e in queue.entries] == [p.number for p in prs]


def test_the_same_failure_on_three_prs_and_on_the_base_opens_the_breaker(world: World) -> None:
    """The base fails the job another way (not a red base for any one drop), and three pull
    requests fail it the same way: `same_failure_prs` (3) opens the breaker, not two."""
    red_base(world, OTHER)
    wanted = world.settings.breaker.same_failure_prs
    assert wanted == 3  # the default
    for n in range(wanted):
        assert world.store.breaker(world.repo.full_name) is None, n
        queue_and_fail(world, f"feat-s{n}", RED, files={f"s{n}.py": f"x = {n}\n"})
        world.settle()
    drops = world.store.drops()
    assert all(d.plan and d.plan["evidence"]["base_failed"] == ["test"] for d in drops)
    breaker = world.store.breaker(world.repo.full_name)
    assert breaker is not None and breaker.open and breaker.cause == "same_failure"
    [issue] = world.gh.issues_of(world.repo)
    assert "the same failure on several pull requests" in issue.title


def test_control_the_same_failure_the_base_does_not_show_is_each_prs_own(world: World) -> None:
    """Sibling PRs, each with a broken change of its own, failing the same test the same way
    while the base never ran the job (as the hostile and Actions serve worlds' PRs do): no
    breaker, each handed back."""
    prs = []
    for n in range(4):
        pr, _ = queue_and_fail(world, f"feat-o{n}", RED, files={f"o{n}.py": f"x = {n}\n"})
        world.settle()
        prs.append(pr)
    assert world.store.breaker(world.repo.full_name) is None
    assert [d.outcome for d in world.store.drops()] == ["handed_back"] * 4
    for pr in prs:
        assert len(handbacks(world, pr.number)) == 1
    assert world.gh.issues_of(world.repo) == []


def test_a_waiting_drop_whose_pr_runs_another_job_waits_for_it(world: World) -> None:
    """The base turns green while one waiting PR runs another job (leased by another
    worker): the others go back in the queue in their order, that one is not released
    under its job, and follows once the job is done (the hold job looks again soon)."""
    red_base(world)
    prs = []
    for n in range(3):
        pr, _ = queue_and_fail(world, f"feat-b{n}", RED, files={f"b{n}.py": f"x = {n}\n"})
        world.settle()
        prs.append(pr.number)
    repo = world.repo.full_name
    busy = world.store.add_job("checks", {"repo": repo, "pr": prs[0]})
    lease = world.store.lease_job("another-worker", dt.timedelta(minutes=2), kinds=("checks",))
    assert lease is not None and lease.id == busy
    green_base(world)
    world.settle()

    def outcome(number: int) -> str:
        [drop] = [d for d in world.store.drops() if d.pr == number]
        return drop.outcome

    assert [outcome(n) for n in prs] == ["waiting_base", "requeued", "requeued"]
    assert [j for j in world.store.jobs() if j.kind == "hold" and j.status == "queued"]

    assert world.store.finish_job(busy, "another-worker")
    with world.store.tx() as conn:  # time passes: the hold job's look again is due
        conn.execute(sa.update(jobs).where(jobs.c.kind == "hold").values(not_before=None))
    world.settle()
    assert [outcome(n) for n in prs] == ["requeued"] * 3
    queue = world.gh.queue(world.repo)
    assert queue is not None and [e.pr.number for e in queue.entries] == [*prs[1:], prs[0]]
