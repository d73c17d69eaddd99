"""The breaker (issue 27.2) on the simulated GitHub: a runner outage (every job failing with
a runner error for ten minutes) opens it at the threshold and not before; no fixer runs
and nothing is re-enqueued while it is open; drops are held in the store; when the next
run passes it closes and the held drops go back in the queue in their order. A maintainer
may close it by hand (`landbot breaker close`). GitHub answering 5xx counts as the runners'
failures do."""

from __future__ import annotations

import datetime as dt
import time
from typing import Any

import sqlalchemy as sa

from landbot.github.client import GitHubClient
from landbot.github.retry import RetryPolicy
from landbot.pipeline.process import Lander
from landbot.pipeline.worker import Worker
from landbot.sim import CheckScenario
from landbot.store.tables import jobs

from .conftest import World
from .test_notify_handback import notifying
from .test_notify_handback import receiver as receiver  # the fixture
from .triage_support import fixture_log, handbacks, statuses

RUNNER_DOWN = CheckScenario.failing("test", log=fixture_log("runner-shutdown.log"))


def drop_one(world: World, n: int) -> object:
    """A new PR queued and dropped by the outage, and landbot's work on it done."""
    pr = world.open_pr(f"feat-{n}", {f"f{n}.py": f"x = {n}\n"})
    world.gh.set_checks(world.repo, RUNNER_DOWN, pr=pr, event="merge_group")
    world.gh.enqueue(pr, actor="alice")
    steps = world.gh.run_queue(world.repo)
    assert any(s.action == "dropped" and s.pr == pr.number for s in steps), steps
    world.settle()
    if world.gh.queue_entry(pr) is not None:
        # Re-enqueued: a person takes it out again, so each PR fails once in this story
        # (a manual removal signals nothing).
        world.gh.dequeue(pr, actor="alice")
        world.settle()
    return pr


def a_run_passes(world: World) -> None:
    """The outage is over: a run passes (the workflow_run webhook follows)."""
    sha = world.gh.commit_file(world.repo, "ok.txt", "ok\n")
    world.gh.set_checks(world.repo, CheckScenario.passing(), sha=sha)
    world.gh.run_checks(world.repo, sha, event="push", head_branch="main")
    world.settle()


def test_a_runner_outage_opens_the_breaker_at_the_threshold(world: World) -> None:
    world.lander.fixer_enabled = True  # a fixer is there: it must not run either
    threshold = world.settings.breaker.threshold
    prs = []
    for n in range(threshold - 1):
        prs.append(drop_one(world, n))
        world.gh.clock.advance(minutes=2)
    # Not before the threshold: each re-enqueued as usual, no breaker.
    assert world.store.breaker(world.repo.full_name) is None
    outcomes = [d.outcome for d in world.store.drops() if d.reason == "failed_checks"]
    assert outcomes == ["requeued"] * (threshold - 1)
    enqueues = len(world.mutations())

    held = [drop_one(world, threshold), drop_one(world, threshold + 1)]
    breaker = world.store.breaker(world.repo.full_name)
    assert breaker is not None and breaker.open and breaker.cause == "infrastructure"
    newest = [d for d in world.store.drops() if d.pr in {p.number for p in held}]
    assert {d.outcome for d in newest} == {"held"}
    assert len(world.mutations()) == enqueues  # nothing re-enqueued while open
    assert not [j for j in world.store.jobs() if j.kind == "fix"]  # no fixer run
    [issue] = world.gh.issues_of(world.repo)
    assert issue.state == "open" and "runners" in issue.title
    for pr in held:
        assert f"#{pr.number} (held)" in issue.body
        [status] = statuses(world, pr.number)
        assert "breaker for this repository is open" in status.body
        assert handbacks(world, pr.number) == []

    a_run_passes(world)
    breaker = world.store.breaker(world.repo.full_name)
    assert breaker is not None and not breaker.open and breaker.closed_by == "landbot"
    released = sorted(
        (d for d in world.store.drops() if d.pr in {p.number for p in held}), key=lambda d: d.id
    )
    assert [d.outcome for d in released] == ["requeued", "requeued"]
    queue = world.gh.queue(world.repo)
    assert queue is not None
    assert [e.pr.number for e in queue.entries][-2:] == [p.number for p in held]  # in order
    [issue] = world.gh.issues_of(world.repo)
    assert issue.state == "closed"


def test_a_maintainer_closes_it_by_hand(world: World) -> None:
    threshold = world.settings.breaker.threshold
    for n in range(threshold):
        drop_one(world, n)
    breaker = world.store.breaker(world.repo.full_name)
    assert breaker is not None and breaker.open
    closed = world.lander.close_breaker(world.repo.full_name, by="alice")
    assert closed
    assert not world.lander.close_breaker(world.repo.full_name, by="alice")  # control: once
    breaker = world.store.breaker(world.repo.full_name)
    assert breaker is not None and breaker.closed_by == "alice"
    assert world.gh.issues_of(world.repo)[0].state == "closed"
    assert not [d for d in world.store.drops() if d.outcome == "held"]


def test_switched_off_nothing_is_held(world: World) -> None:
    """Control: `[breaker] enabled = false`: the same outage is re-enqueued throughout."""
    world.settings.breaker.enabled = False
    for n in range(world.settings.breaker.threshold + 1):
        drop_one(world, n)
    assert world.store.breaker(world.repo.full_name) is None
    assert {d.outcome for d in world.store.drops()} <= {"requeued", "ignored"}


def test_close_it_from_its_issue(world: World) -> None:
    """`/landbot breaker close` in the breaker's issue: refused to a reader (the control),
    done for a user with write access; one reply each."""
    for n in range(world.settings.breaker.threshold):
        drop_one(world, n)
    [issue] = world.gh.issues_of(world.repo)
    world.gh.add_collaborator(world.repo, "bob", "read")
    world.gh.add_comment(world.repo, issue.number, "/landbot breaker close", author="bob")
    world.settle()
    breaker = world.store.breaker(world.repo.full_name)
    assert breaker is not None and breaker.open  # a reader may not
    world.gh.add_comment(world.repo, issue.number, "/landbot breaker close", author="alice")
    world.settle()
    breaker = world.store.breaker(world.repo.full_name)
    assert breaker is not None and not breaker.open and breaker.closed_by == "@alice"
    replies = [c for c in world.gh.comments_on(world.repo, issue.number) if c.author == world.bot]
    assert len(replies) == 2
    assert "only a user with write access" in replies[0].body
    assert "Closed by @alice" in replies[1].body
    assert world.gh.issues_of(world.repo)[0].state == "closed"


def test_one_message_when_it_opens_and_one_when_it_closes(world: World, receiver: Any) -> None:
    """`[notify] webhook_url`: the opening and the closing, one message each (not one per
    held drop)."""
    url, got, _ = receiver
    notifying(world, url)
    threshold = world.settings.breaker.threshold
    for n in range(threshold + 2):
        drop_one(world, n)
    assert len(got) == 1 and "breaker for acme/widgets is open" in got[0]["text"]
    a_run_passes(world)
    assert len(got) == 2 and "breaker for acme/widgets closed" in got[1]["text"]


# --- GitHub answering 5xx ------------------------------------------------------------------

PR_READ = ("POST /graphql", "PullRequest")  # a drop job's first call: the PR re-read


def failing_github(world: World) -> Worker:
    """A worker whose client tries once (no backoff waits): each job attempt GitHub fails
    with a 5xx reaches the worker, as it does after the client's retries in production."""
    client = GitHubClient(world.settings.github, mutation_gap=0, policy=RetryPolicy(1))
    lander = Lander(world.settings, world.store, client)
    return Worker(world.store, lambda: lander, name="test-5xx-worker")


def due_now(world: World) -> None:
    """Time passes: the jobs given back for a later attempt are due."""
    with world.store.tx() as conn:
        conn.execute(sa.update(jobs).where(jobs.c.status == "queued").values(not_before=None))


def timed_out(world: World, n: int) -> Any:
    pr = world.open_pr(f"feat-5xx-{n}", {f"g{n}.py": f"y = {n}\n"})
    world.time_out_in_queue(pr)
    world.gh.webhooks.flush()
    return pr


def test_github_answering_5xx_opens_the_breaker_at_the_threshold(world: World) -> None:
    """Every PR re-read answered 502: each drop job's attempt that GitHub failed counts; at
    the threshold the breaker opens (cause server_error) and says so in one issue; when
    GitHub answers again the drops are held, not re-enqueued, until a run passes; then
    they go back in the queue in their order."""
    route, operation = PR_READ
    world.server.faults.fail(route, 502, times=10_000, operation=operation)
    worker = failing_github(world)
    threshold = world.settings.breaker.threshold
    prs = []
    for n in range(threshold - 1):
        prs.append(timed_out(world, n))
        worker.drain()
    # Not before the threshold: the attempts are counted, the breaker stays closed.
    hour_ago = dt.datetime.now(dt.UTC) - dt.timedelta(hours=1)
    assert len(world.store.server_errors(world.repo.full_name, hour_ago)) == threshold - 1
    assert world.store.breaker(world.repo.full_name) is None

    prs.append(timed_out(world, threshold))
    worker.drain()  # the fifth failed attempt opens it, and its hold job writes the issue
    breaker = world.store.breaker(world.repo.full_name)
    assert breaker is not None and breaker.open and breaker.cause == "server_error"
    [issue] = world.gh.issues_of(world.repo)
    assert issue.state == "open" and "server errors" in issue.title

    world.server.faults.clear()  # GitHub answers again
    due_now(world)
    worker.drain()
    drops = sorted(world.store.drops(), key=lambda d: d.id)
    assert [d.outcome for d in drops] == ["held"] * threshold
    assert world.mutations().count("EnqueuePullRequest") == 0  # nothing re-enqueued

    a_run_passes(world)
    breaker = world.store.breaker(world.repo.full_name)
    assert breaker is not None and not breaker.open and breaker.closed_by == "landbot"
    drops = sorted(world.store.drops(), key=lambda d: d.id)
    assert [d.outcome for d in drops] == ["requeued"] * threshold
    queue = world.gh.queue(world.repo)
    assert queue is not None and [e.pr.number for e in queue.entries] == [p.number for p in prs]
    assert world.gh.issues_of(world.repo)[0].state == "closed"


def test_the_control_a_few_5xx_answers_retried_open_nothing(world: World) -> None:
    """Control: one short of the threshold (a timed-out drop is one signal, each failed
    attempt one more), then GitHub answers: the drop is re-enqueued as usual and no breaker
    opens."""
    route, operation = PR_READ
    threshold = world.settings.breaker.threshold
    world.server.faults.fail(route, 502, times=threshold - 2, operation=operation)
    worker = failing_github(world)
    timed_out(world, 0)
    for _ in range(threshold - 1):  # each attempt, then time passes
        worker.drain()
        due_now(world)
    hour_ago = dt.datetime.now(dt.UTC) - dt.timedelta(hours=1)
    assert len(world.store.server_errors(world.repo.full_name, hour_ago)) == threshold - 2
    assert world.store.breaker(world.repo.full_name) is None
    assert [d.outcome for d in world.store.drops()] == ["requeued"]


def test_a_held_pr_pushed_or_closed_is_not_released(world: World) -> None:
    """A held drop whose PR a person then pushes to (or closes) ends at once, as a queued
    job of it would: it leaves the breaker's list and is not re-enqueued when it closes.
    The control: the other held PR goes back in the queue."""
    threshold = world.settings.breaker.threshold
    for n in range(threshold):
        drop_one(world, n)
    pushed, closed, kept = (drop_one(world, threshold + i) for i in range(3))
    assert {d.outcome for d in world.store.drops() if d.pr == kept.number} == {"held"}
    world.gh.push(world.repo, pushed.head_ref, {"fix.py": "z = 1\n"})
    world.gh.close_pull_request(world.gh.pull(world.repo, closed.number), actor="alice")
    world.settle()
    for pr in (pushed, closed):
        [drop] = [d for d in world.store.drops() if d.pr == pr.number]
        assert drop.outcome == "ignored", drop.summary

    a_run_passes(world)
    [kept_drop] = [d for d in world.store.drops() if d.pr == kept.number]
    assert kept_drop.outcome == "requeued"
    queue = world.gh.queue(world.repo)
    assert queue is not None
    queued = {e.pr.number for e in queue.entries}
    assert kept.number in queued and not queued & {pushed.number, closed.number}


# --- one job of a pull request at a time, releases included -------------------------------

LEASE = dt.timedelta(minutes=2)


def open_and_hold(world: World, count: int) -> list[int]:
    """The breaker opened by the outage, and then `count` more PRs' drops held by it: the
    numbers of all the held PRs, in the order they were dropped (the one whose drop opened
    it is held too)."""
    threshold = world.settings.breaker.threshold
    for n in range(threshold + count):
        drop_one(world, n)
    held = sorted((d for d in world.store.drops() if d.outcome == "held"), key=lambda d: d.id)
    assert len(held) >= count
    return [d.pr for d in held]


def test_a_release_holds_its_prs_lease_while_it_acts(world: World) -> None:
    """While the hold job releases a held drop, no other job of that PR is handed out to
    any worker; a job of another PR is (the control); after the release, the PR's job runs."""
    held = open_and_hold(world, 1)
    repo = world.repo.full_name
    mine = world.store.add_job("checks", {"repo": repo, "pr": held[0]})
    other = world.store.add_job("checks", {"repo": repo, "pr": 999})
    seen: list[int | None] = []

    def during(name: str) -> None:
        if name == "after_release_decide" and not seen:  # the first release: held[0]'s
            lease = world.store.lease_job("another-worker", LEASE, kinds=("checks",))
            seen.append(lease.id if lease is not None else None)
            if lease is not None:
                world.store.finish_job(lease.id, "another-worker")

    world.lander.failpoint = during
    a_run_passes(world)
    assert seen == [other]  # the released PR's job waited; PR 999's went on
    job = world.store.job(mine)
    assert job is not None and job.status == "done"  # and ran once the release was done
    assert {d.outcome for d in world.store.drops() if d.pr in held} == {"requeued"}


def test_a_held_drop_whose_pr_runs_another_job_waits_for_it(world: World) -> None:
    """A held PR whose other job runs (leased by another worker) is not released under it:
    the PRs after it go back in the queue in their order, and it follows once its job is
    done (the hold job looks again soon)."""
    held = open_and_hold(world, 2)
    busy_pr = held[1]
    repo = world.repo.full_name
    busy = world.store.add_job("checks", {"repo": repo, "pr": busy_pr})
    lease = world.store.lease_job("another-worker", LEASE, kinds=("checks",))
    assert lease is not None and lease.id == busy
    a_run_passes(world)
    breaker = world.store.breaker(repo)
    assert breaker is not None and not breaker.open

    def outcome(pr: int) -> str:
        [drop] = [d for d in world.store.drops() if d.pr == pr]
        return drop.outcome

    assert [outcome(p) for p in held] == ["requeued", "held", "requeued"]
    rest = [p for p in held if p != busy_pr]
    queue = world.gh.queue(world.repo)
    assert queue is not None and [e.pr.number for e in queue.entries][-2:] == rest
    hold = [j for j in world.store.jobs() if j.kind == "hold" and j.status == "queued"]
    assert len(hold) == 1  # it looks again soon

    assert world.store.finish_job(busy, "another-worker")
    due_now(world)
    world.settle()
    assert outcome(busy_pr) == "requeued"
    queue = world.gh.queue(world.repo)
    assert queue is not None
    assert [e.pr.number for e in queue.entries][-3:] == [*rest, busy_pr]
    assert not [j for j in world.store.jobs() if j.kind == "hold" and j.status == "queued"]


def test_a_release_whose_worker_was_killed_is_finished_by_the_next(world: World) -> None:
    """A hold job's worker SIGKILLed while it held a PR's lease for a release: the lease
    runs out, a worker takes it as a job, and the hold job looks again and releases every
    held drop in its order. The control: while the lease lives, nothing of that PR runs."""
    held = open_and_hold(world, 1)
    repo = world.repo.full_name
    assert world.store.close_breaker(repo, by="alice", at=dt.datetime.now(dt.UTC))
    first = min((d for d in world.store.drops() if d.outcome == "held"), key=lambda d: d.id)
    dead = world.store.claim_pr(first.id, "dead-worker", dt.timedelta(seconds=0.5))
    assert dead is not None
    assert world.store.lease_job("w", LEASE, kinds=("release",)) is None  # still held
    time.sleep(0.7)  # the lease runs out
    world.store.ensure_repo_job("hold", repo, dt.datetime.now(dt.UTC) + dt.timedelta(hours=1))
    world.settle()  # the release row, then the hold job it wakes
    job = world.store.job(dead)
    assert job is not None and job.status == "done" and job.attempts == 2
    assert {d.outcome for d in world.store.drops() if d.pr in held} == {"requeued"}
    queue = world.gh.queue(world.repo)
    assert queue is not None and [e.pr.number for e in queue.entries][-len(held) :] == held
