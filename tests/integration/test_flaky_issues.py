"""One issue per flaky test, through the simulated GitHub (issue 27, point 3's acceptance).

A test fails in the merge group of three pull requests and passes when each is retried (the
flaky-test ledger's evidence): the sweep opens one issue about it, labelled, with the runs,
the pull requests and the failing lines, its owner from CODEOWNERS @-mentioned once. A
fourth failure edits that issue (no comment); after the quiet period (the clock moved) the
sweep closes it. With `[flaky_issues] enabled = false` there is no issue and no call.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from landbot.config import FlakyIssuesSettings
from landbot.pipeline.flaky_issues import FlakySweep
from landbot.pipeline.wiring import make_worker
from landbot.store import utcnow
from landbot.web.board import Filters, read_board

from .conftest import World
from .test_flaky_ledger import FAILING, FLAKY_TEST, PASSING, fail_then_pass, head_checks
from .triage_support import queue_and_fail

# SQLite only: what these tests prove is about GitHub and the decision, on store paths
# the land loop runs on both stores (conftest.BOTH_STORES).
STORES = ("sqlite",)

OWNER = "@net-owner"
LABEL = "landbot:flaky"
CREATE = "POST /repos/{owner}/{repo}/issues"
EDIT = "PATCH /repos/{owner}/{repo}/issues/{issue_number}"
CONTENTS = "GET /repos/{owner}/{repo}/contents/{path}"


def flaky_on(world: World, n: int, *, first: int = 1) -> list[Any]:
    """`n` pull requests each fail FLAKY_TEST in their merge group and pass when retried
    (re-enqueued by landbot once the ledger knows the test, else by their author), and
    merge: the ledger holds n pull requests whose retry passed."""
    prs = []
    for i in range(first, first + n):
        pr, _ = queue_and_fail(
            world, f"feat-{i}", fail_then_pass(FAILING, PASSING), {f"f{i}.py": f"x = {i}\n"}
        )
        world.settle()
        if world.gh.queue_entry(pr) is None:
            world.gh.enqueue(pr, actor="alice")  # handed back: its author queues it again
        assert world.gh.run_queue(world.repo)[-1].action == "merged"
        world.settle()
        prs.append(pr)
    return prs


def sweep(world: World, *, days: float = 0, **settings: Any) -> Any:
    conf = world.settings.model_copy(
        update={"flaky_issues": FlakyIssuesSettings(**settings)} if settings else {}
    )
    later = utcnow() + dt.timedelta(days=days)
    return FlakySweep(conf, world.store, lambda: world.client, clock=lambda: later).run()


def mentions(body: str) -> list[str]:
    """The @-mentions GitHub would notify: outside code spans."""
    return re.findall(r"(?<![`\w])@[\w/-]+", re.sub(r"`[^`]*`", "", body))


def test_one_issue_opened_edited_then_closed(world: World) -> None:
    head_checks(world, failing_branches=set())
    world.gh.commit_file(world.repo, ".github/CODEOWNERS", f"* @someone\n/tests/ {OWNER}\n")
    prs = flaky_on(world, 2)
    before = world.calls()
    assert sweep(world).done == {}  # two pull requests: under the threshold, no call
    assert world.calls() == before

    prs += flaky_on(world, 1, first=3)
    before = world.calls()
    report = sweep(world)
    assert report.done == {"open": [FLAKY_TEST]}
    # The README's figure: CODEOWNERS (found in the first place looked) and the create.
    assert world.calls() - before == 2, world.server.requests.counts()
    [issue] = world.gh.issues_of(world.repo)
    assert (issue.author, issue.labels, issue.state) == (world.bot, [LABEL], "open")
    assert issue.title == f"Flaky test: {FLAKY_TEST}"
    assert issue.body.startswith(f"<!-- landbot:flaky-test {FLAKY_TEST} -->")
    assert mentions(issue.body) == [OWNER]  # the owner, once
    for pr in prs:
        assert f"#{pr.number} ·" in issue.body
    assert "E       assert 2 == 3" in issue.body or "FAILED tests/test_net.py" in issue.body
    assert "passed when retried on 3 of them" in issue.body
    assert "/actions/runs/" in issue.body  # each failure's job
    [opened] = world.gh.deliveries_of("issues", "opened")
    assert opened.payload["issue"]["number"] == issue.number

    before = world.calls()
    assert sweep(world).done == {}  # nothing new: nothing sent
    assert world.calls() == before

    # A fourth pull request fails the same test: the issue is edited, no comment made.
    fourth, _ = queue_and_fail(world, "feat-4", FAILING, {"f4.py": "x = 4\n"})
    world.settle()
    before = world.calls()
    assert sweep(world).done == {"update": [FLAKY_TEST]}
    assert world.calls() - before == 1
    assert world.server.requests.count(EDIT) == 1
    assert len(world.gh.issues_of(world.repo)) == 1
    assert f"#{fourth.number} ·" in issue.body
    assert mentions(issue.body) == []  # an edit mentions no one
    assert f"`{OWNER}`" in issue.body
    assert world.gh.comments_on(world.repo, issue.number) == []
    assert len(world.gh.deliveries_of("issues", "edited")) == 1

    # The dashboard links the test to its issue.
    board = read_board(world.store, Filters(repo=None, outcome=None, token=None))
    [section] = board.sections
    assert section.flaky_issues[FLAKY_TEST] == (issue.number, "open")

    # Quiet for the quiet period: closed, with one PATCH.
    world.gh.clock.advance(hours=8 * 24)
    before = world.calls()
    assert sweep(world, days=6).done == {}  # control: not yet quiet for 7 days
    assert sweep(world, days=8).done == {"close": [FLAKY_TEST]}
    assert world.calls() - before == 1
    assert (issue.state, issue.state_reason) == ("closed", "completed")
    assert "**Closed by landbot:**" in issue.body
    assert mentions(issue.body) == []
    assert len(world.gh.deliveries_of("issues", "closed")) == 1
    assert world.server.requests.count(CREATE) == 1  # one issue, ever
    assert sweep(world, days=9).done == {}


def test_off_no_issue_and_no_call(world: World) -> None:
    head_checks(world, failing_branches=set())
    flaky_on(world, 3)
    off = world.settings.model_copy(update={"flaky_issues": FlakyIssuesSettings(enabled=False)})
    before = world.calls()
    worker = make_worker(off, world.store, gh=world.client)
    assert worker.flaky_sweep is None and worker.flaky_due() is False
    assert sweep(world, enabled=False).done == {}
    assert world.calls() == before
    assert world.gh.issues_of(world.repo) == []
    # The control: on (the default), the worker's housekeeping opens it.
    on = make_worker(world.settings, world.store, gh=world.client)
    assert on.flaky_due() is True
    assert len(world.gh.issues_of(world.repo)) == 1
    assert world.server.requests.count(CREATE) == 1


def test_a_lost_answer_and_a_refusal(world: World) -> None:
    """A 502 after GitHub made the issue: found by its marker, not made twice. A refused
    edit is logged and recorded nowhere: the next sweep edits it."""
    head_checks(world, failing_branches=set())
    flaky_on(world, 3)
    world.server.faults.fail(CREATE, 502, take_effect=True)
    assert sweep(world).done == {"open": [FLAKY_TEST]}
    [issue] = world.gh.issues_of(world.repo)
    assert world.server.requests.count(CREATE) == 1
    assert world.server.requests.count("GET /repos/{owner}/{repo}/issues") == 1
    assert sweep(world).done == {}  # kept as made

    fourth, _ = queue_and_fail(world, "feat-4", FAILING, {"f4.py": "x = 4\n"})
    world.settle()
    world.server.faults.fail(EDIT, 403, message="Resource not accessible by integration")
    report = sweep(world)
    assert report.done == {} and report.failed == [FLAKY_TEST]
    assert f"#{fourth.number} ·" not in issue.body
    assert sweep(world).done == {"update": [FLAKY_TEST]}  # the control: GitHub takes it
    assert f"#{fourth.number} ·" in issue.body
    assert len(world.gh.issues_of(world.repo)) == 1
