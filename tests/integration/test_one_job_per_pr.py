"""Two jobs of one pull request never act at once, and a comment landbot makes once is made
once whatever process, plan or sweep comes to it (issue 29, point 6).

What the outside soak saw: a drop's first job decides "fixer", queues the fix job, and only
then writes its status comment; the fix job starts on another worker, lists the PR's
comments, finds none yet, and posts its own (two status comments). And a worker killed
between queueing the fix job and closing its drop job: the fix job hands the PR back, then
the drop job, taken again after its lease ran out, decides the drop anew and hands it back a
second time. Each case is played here on the simulated GitHub over HTTP with real workers on
one store (SQLite and PostgreSQL), first failing against the code before the fix.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections.abc import Callable
from typing import Any

from landbot.core.model import Drop, Evidence, FixerResult
from landbot.github.client import GitHubClient
from landbot.land.comments import HANDBACK_MARKER, STATUS_MARKER
from landbot.land.model import HandBack
from landbot.pipeline.process import Lander
from landbot.pipeline.worker import Worker
from landbot.sim import CheckScenario

from .conftest import World

LIST = "GET /repos/{owner}/{repo}/issues/{issue_number}/comments"
COMMENTS = "POST /repos/{owner}/{repo}/issues/{issue_number}/comments"
EDIT = "PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}"
TTL = dt.timedelta(seconds=60)


class Killed(BaseException):
    """The worker's process dies here (SIGKILL): nothing after it runs, no job is closed."""


def needs_human(drop: Drop, evidence: Evidence) -> FixerResult:
    return FixerResult("needs_human", summary="the test and the code disagree", recommendation="x")


def failed_pr(world: World, head: str) -> Any:
    pr = world.open_pr(head, {"app.py": f"def answer():\n    return 41  # {head}\n"})
    world.gh.set_checks(world.repo, CheckScenario.failing(), pr=pr, event="merge_group")
    world.gh.enqueue(pr, actor="alice")
    assert world.gh.run_queue(world.repo)[-1].action == "dropped"
    world.gh.webhooks.flush()
    return pr


def lander(world: World, client: GitHubClient | None = None, **kw: Any) -> Lander:
    return Lander(world.settings, world.store, client or world.client, fixer_enabled=True, **kw)


def record_drops(world: World) -> None:
    """The deliveries become drops and drop jobs (no job runs yet)."""
    intake = Worker(world.store, lambda: world.lander, name="intake")
    while (delivery := world.store.lease_delivery("intake", TTL)) is not None:
        intake._delivery(delivery)


def marked(world: World, number: int, marker: str) -> list[Any]:
    return [c for c in world.bot_comments(number) if marker in c.body]


def test_the_fix_job_waits_for_the_drop_job_so_one_status_comment_stands(world: World) -> None:
    pr = failed_pr(world, "feat-race")
    record_drops(world)
    # Worker B, another process, runs fix jobs; worker A decides the drop. A is held right
    # after it listed the PR's comments for its status comment (none yet), while B works.
    b_client = GitHubClient(world.settings.github, mutation_gap=0)
    b = Worker(world.store, lambda: b_lander, fixer=needs_human, name="B")
    b_lander = lander(world, b_client)
    a_client = GitHubClient(world.settings.github, mutation_gap=0)
    a_lander = lander(world, a_client)
    a = Worker(world.store, lambda: a_lander, name="A")
    listed = a_client.comments
    b_ran: list[int] = []

    def comments_then_b_works(repo: str, number: int) -> Any:
        seen = listed(repo, number)
        if not b_ran:
            thread = threading.Thread(target=lambda: b_ran.append(b.drain()))
            thread.start()
            thread.join(60)
            assert b_ran, "worker B did not finish"
        return seen

    a_client.comments = comments_then_b_works  # type: ignore[method-assign]
    try:
        job = world.store.lease_job("A", TTL, kinds=("drop",))
        assert job is not None
        a.run_job(job)
        assert world.store.job(job.id).status == "done"
        b.drain()  # the fix job, once the drop job finished its actions
        assert [j.status for j in world.store.jobs() if j.kind == "fix"] == ["done"]
    finally:
        b_client.close()
        a_client.close()
    statuses = marked(world, pr.number, STATUS_MARKER)
    assert len(statuses) == 1, [c.body for c in statuses]
    # (Racing, the drop job's "pending" also overwrote the fix job's outcome.)
    [drop] = world.store.drops()
    assert drop.outcome == "handed_back", drop.summary
    assert "handed it back" in statuses[0].body  # the last writer edited the one comment
    assert len(marked(world, pr.number, HANDBACK_MARKER)) == 1
    # While A held the drop job, B found nothing of this PR to run.
    assert b_ran == [0]


def test_the_control_without_a_second_worker_one_status_comment(world: World) -> None:
    pr = failed_pr(world, "feat-alone")
    world.lander = lander(world)
    world.worker = Worker(world.store, lambda: world.lander, fixer=needs_human)
    world.settle()
    [drop] = world.store.drops()
    assert drop.outcome == "handed_back", drop.summary
    assert len(marked(world, pr.number, STATUS_MARKER)) == 1
    assert len(marked(world, pr.number, HANDBACK_MARKER)) == 1


def killer(at: str) -> Callable[[str], None]:
    fired: list[str] = []

    def hit(name: str) -> None:
        if name == at and not fired:
            fired.append(name)
            raise Killed(name)

    return hit


def test_a_drop_job_taken_again_after_its_fix_job_hands_back_once(world: World) -> None:
    pr = failed_pr(world, "feat-killed")
    world.lander = lander(world)
    record_drops(world)
    # Worker A queues the fix job and dies before it writes the status or closes its job.
    dying = lander(world, failpoint=killer("after_runfixer"))
    a = Worker(world.store, lambda: dying, name="A", lease=dt.timedelta(seconds=0.3))
    job = world.store.lease_job("A", dt.timedelta(seconds=0.3), kinds=("drop",))
    assert job is not None
    try:
        a.run_job(job)
    except Killed:
        pass
    else:
        raise AssertionError("the failpoint did not fire")
    assert world.store.job(job.id).status == "leased"
    time.sleep(0.5)  # its lease runs out: the PR is free again
    # Another worker takes the fix job first and hands the PR back...
    b = Worker(world.store, lambda: world.lander, fixer=needs_human, name="B")
    fix = world.store.lease_job("B", TTL, kinds=("fix",))
    assert fix is not None and fix.kind == "fix"
    b.run_job(fix)
    assert len(marked(world, pr.number, HANDBACK_MARKER)) == 1
    # ...then a sweep's worker takes the dead worker's drop job again: it finishes the
    # stage the fix job decided (all done) and decides nothing anew, so it writes nothing.
    writes = world.server.requests.count(EDIT) + world.server.requests.count(COMMENTS)
    b.drain()
    assert world.server.requests.count(EDIT) + world.server.requests.count(COMMENTS) == writes
    assert world.store.job(job.id).status == "done"
    [drop] = world.store.drops()
    assert drop.outcome == "handed_back", drop.summary
    assert len(marked(world, pr.number, HANDBACK_MARKER)) == 1
    [status] = marked(world, pr.number, STATUS_MARKER)
    assert "handed it back" in status.body


def test_the_hand_back_of_a_drop_is_never_posted_twice(world: World) -> None:
    pr = failed_pr(world, "feat-twice")
    world.settle()
    [drop] = world.store.drops()
    assert drop.outcome == "handed_back"
    [posted] = marked(world, pr.number, HANDBACK_MARKER)
    creates = world.server.requests.count(COMMENTS)
    # The same drop's hand-back asked for again under another ledger key (another plan or
    # stage: what a drop decided anew would do): the store knows it is made.
    snapshot = world.lander.reread(drop.drop)
    world.lander.actor.act(drop.drop, snapshot, Evidence(), None, 9, HandBack("failed_checks"))
    assert world.server.requests.count(COMMENTS) == creates
    assert [c.id for c in marked(world, pr.number, HANDBACK_MARKER)] == [posted.id]


def test_a_hand_back_whose_answer_was_lost_is_found_by_another_process(world: World) -> None:
    pr = failed_pr(world, "feat-lost")
    record_drops(world)
    # The status comment goes through; the hand-back is applied but answered 502, and the
    # worker dies as it lists the comments to find out.
    a_client = GitHubClient(world.settings.github, mutation_gap=0)
    a_lander = Lander(world.settings, world.store, a_client)
    a = Worker(world.store, lambda: a_lander, name="A", lease=dt.timedelta(seconds=0.3))
    real_create = a_client.create_comment

    def create(repo: str, number: int, body: str) -> Any:
        if HANDBACK_MARKER in body:
            world.server.faults.fail(COMMENTS, 502, take_effect=True)

            def die(repo: str, number: int) -> Any:
                raise Killed("listing")

            a_client.comments = die  # type: ignore[method-assign]
        return real_create(repo, number, body)

    a_client.create_comment = create  # type: ignore[method-assign]
    job = world.store.lease_job("A", dt.timedelta(seconds=0.3), kinds=("drop",))
    assert job is not None
    try:
        a.run_job(job)
    except Killed:
        pass
    else:
        raise AssertionError("the worker did not die")
    finally:
        a_client.close()
    assert len(marked(world, pr.number, HANDBACK_MARKER)) == 1  # GitHub made it
    time.sleep(0.5)
    creates = world.server.requests.count(COMMENTS)
    world.worker.drain()  # another process takes the drop job again
    assert world.store.job(job.id).status == "done"
    assert world.server.requests.count(COMMENTS) == creates  # found, not posted again
    [drop] = world.store.drops()
    assert drop.outcome == "handed_back", drop.summary
    assert len(marked(world, pr.number, HANDBACK_MARKER)) == 1


def test_the_status_comment_kept_in_the_store_is_edited_without_a_listing(
    world: World,
) -> None:
    pr = world.open_pr("feat-kept", {"k.txt": "k\n"})
    assert world.time_out_in_queue(pr) == "CI_TIMEOUT"
    world.settle()
    [status] = marked(world, pr.number, STATUS_MARKER)
    post = world.store.post(f"status:{world.repo.full_name.lower()}#{pr.number}")
    assert post is not None and (post.state, post.comment_id) == ("posted", status.id)
    # It times out again; every listing of the PR's comments fails now: the writer edits
    # the comment the store names, it does not list (nor create) one.
    world.server.faults.fail(LIST, 502, times=50)
    world.gh.run_queue(world.repo)
    world.gh.clock.advance(minutes=61)
    assert world.gh.run_queue(world.repo)[-1].reason == "CI_TIMEOUT"
    world.settle()
    world.server.faults.clear()
    assert [d.outcome for d in world.store.drops()] == ["handed_back", "requeued"]
    [again] = marked(world, pr.number, STATUS_MARKER)
    assert again.id == status.id and "handed it back" in again.body
