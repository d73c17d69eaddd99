"""The worker's edges: long fix jobs keep their lease, a fixer that cannot run fails its drop
visibly, a fix job for a PR a person took over does nothing, a second removal right after a
re-enqueue is a new drop, and a retried `/landbot retry` does not start over."""

from __future__ import annotations

import datetime as dt
import threading
import time

from landbot.core.model import Drop, Evidence, FixerResult
from landbot.errors import LandbotError
from landbot.intake.poll import sweep
from landbot.land.comments import HANDBACK_MARKER
from landbot.pipeline.process import Lander
from landbot.pipeline.worker import Worker
from landbot.sim import CheckScenario

from .conftest import World


def queue_a_fix_job(world: World, head: str) -> object:
    world.lander = Lander(world.settings, world.store, world.client, fixer_enabled=True)
    pr = world.open_pr(head, {"app.py": f"def answer():\n    return 41  # {head}\n"})
    world.gh.set_checks(world.repo, CheckScenario.failing(), pr=pr, event="merge_group")
    world.gh.enqueue(pr, actor="alice")
    world.gh.run_queue(world.repo)
    world.gh.webhooks.flush()
    # Record the drop and decide it (RunFixer), leaving the fix job queued.
    decider = Worker(world.store, lambda: world.lander, name="decider")
    ttl = dt.timedelta(seconds=60)
    while (delivery := world.store.lease_delivery("decider", ttl)) is not None:
        decider._delivery(delivery)
    while (job := world.store.lease_job("decider", ttl, kinds=("drop",))) is not None:
        decider.run_job(job)
    assert [j.kind for j in world.store.jobs() if j.status == "queued"] == ["fix"]
    return pr


def test_a_long_fix_job_keeps_its_lease(world: World) -> None:
    queue_a_fix_job(world, "feat-long")
    started, release = threading.Event(), threading.Event()

    def slow_fixer(drop: Drop, evidence: Evidence) -> FixerResult:
        started.set()
        release.wait(10)
        return FixerResult("needs_human", summary="slow", recommendation="look")

    lease = dt.timedelta(seconds=0.3)
    busy = Worker(world.store, lambda: world.lander, fixer=slow_fixer, lease=lease, name="busy")
    thread = threading.Thread(target=busy.drain)
    thread.start()
    try:
        assert started.wait(10), [(j.kind, j.status, j.error) for j in world.store.jobs()]
        time.sleep(1.0)  # more than three leases
        # The job is still held: another worker finds no fix job to take.
        assert world.store.lease_job("other", lease, kinds=("fix",)) is None
        assert busy.alive(within=0.5)  # and the busy worker still reports itself alive
    finally:
        release.set()
        thread.join(10)
    [fix] = [j for j in world.store.jobs() if j.kind == "fix"]
    assert (fix.status, fix.attempts) == ("done", 1)


def test_a_fixer_that_cannot_run_fails_the_drop_visibly(world: World) -> None:
    queue_a_fix_job(world, "feat-nosandbox")

    def broken(drop: Drop, evidence: Evidence) -> FixerResult:
        raise LandbotError("bwrap is not installed; install bubblewrap")

    Worker(world.store, lambda: world.lander, fixer=broken).drain()
    [drop] = world.store.drops()
    assert (drop.outcome, drop.summary) == ("failed", "bwrap is not installed; install bubblewrap")
    assert [j.status for j in world.store.jobs() if j.kind == "fix"] == ["failed"]


def test_a_fix_job_for_a_pr_a_person_took_over_does_nothing(world: World) -> None:
    pr = queue_a_fix_job(world, "feat-takeover")
    world.gh.enqueue(world.gh.pull(world.repo, pr.number), actor="alice")  # back in by hand
    ran: list[Drop] = []

    def fixer(drop: Drop, evidence: Evidence) -> FixerResult:
        ran.append(drop)
        return FixerResult("needs_human")

    Worker(world.store, lambda: world.lander, fixer=fixer).drain()
    assert ran == []
    [drop] = world.store.drops()
    assert (drop.outcome, drop.summary) == (
        "ignored",
        "the pull request is back in the merge queue",
    )


def test_a_second_removal_soon_after_a_requeue_is_a_new_drop(world: World) -> None:
    pr = world.open_pr("feat-again", {"g.txt": "g\n"})
    world.time_out_in_queue(pr)
    world.settle()
    assert world.store.drops()[0].outcome == "requeued"
    # It times out again, and this time landbot hears no webhook: only the poller sees it.
    world.gh.webhooks.url = None
    world.gh.run_queue(world.repo)
    world.gh.clock.advance(minutes=61)
    world.gh.run_queue(world.repo)
    removal_time = world.gh.pull(world.repo, pr.number).timeline[-1].created_at
    new = sweep(
        world.store, world.client, world.repo.full_name, now=removal_time + dt.timedelta(seconds=1)
    )
    assert len(new) == 1
    world.worker.drain()
    assert [d.outcome for d in world.store.drops()] == ["handed_back", "requeued"]


def test_a_retried_retry_command_resumes_its_drop(world: World) -> None:
    pr = world.open_pr("feat-cmd", {"h.txt": "h\n"})
    world.gh.enqueue(pr, actor="alice")
    world.gh.dequeue(pr, actor="alice")
    world.settle()
    comment = world.gh.add_comment(world.repo, pr.number, "/landbot retry", author="alice")
    world.settle()
    payload = {
        "command": "retry",
        "repo": world.repo.full_name,
        "pr": pr.number,
        "user": "alice",
        "comment_id": comment.id,
    }
    # The same command job again (as after a transient failure): no new drop, no new action.
    world.store.add_job("command", payload)
    world.worker.drain()
    sources = [d.source for d in world.store.drops()]
    assert sources.count("command") == 1
    assert world.mutations() == ["EnqueuePullRequest"]
    assert not [c for c in world.bot_comments(pr.number) if HANDBACK_MARKER in c.body]
