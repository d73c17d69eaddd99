"""Commands that never end in silence, through the simulated GitHub: an accepted command
(👀) whose action GitHub refuses gets a reply saying what failed and what to do; an answer
GitHub never gave retries the job and the reply comes once, when it ends (on the worker's
last attempt, with the failure); the worker itself drops a bot's command job."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from landbot.github.client import GitHubClient
from landbot.github.retry import RetryPolicy
from landbot.pipeline import worker as worker_module
from landbot.pipeline.commands import run_comment_command
from landbot.pipeline.process import Lander
from landbot.pipeline.worker import Worker

from .conftest import World
from .test_commands import SKIP, dropped_pr, reactions, reply_to

# SQLite only: what these tests prove is about GitHub and the decision, on store paths
# the land loop runs on both stores (conftest.BOTH_STORES).
STORES = ("sqlite",)

ADD_LABEL = "POST /repos/{owner}/{repo}/issues/{issue_number}/labels"
REMOVE_LABEL = "DELETE /repos/{owner}/{repo}/issues/{issue_number}/labels/{name}"
COMMENTS = "POST /repos/{owner}/{repo}/issues/{issue_number}/comments"


@pytest.fixture
def impatient(world: World) -> Iterator[World]:
    """The World with a client that does not retry a 5xx itself (one attempt per call), so
    a lost answer reaches the worker at once instead of after the client's backoff."""
    client = GitHubClient(world.settings.github, mutation_gap=0, policy=RetryPolicy(1))
    lander = Lander(world.settings, world.store, client)
    world.lander = lander
    world.worker = Worker(world.store, lambda: lander, name="test-worker")
    try:
        yield world
    finally:
        client.close()


def commented(world: World, pr: Any, body: str, author: str = "alice") -> Any:
    comment = world.gh.add_comment(world.repo, pr.number, body, author=author)
    world.settle()
    return comment


def command_jobs(world: World) -> list[Any]:
    return [j for j in world.store.jobs() if j.kind == "command"]


def test_a_refused_skip_label_is_said_in_the_reply(world: World) -> None:
    pr = dropped_pr(world, "feat-skip-refused")
    world.server.faults.fail(ADD_LABEL, 403, message="Resource not accessible by integration")
    comment = commented(world, pr, "/landbot skip")
    assert SKIP not in world.gh.pull(world.repo, pr.number).labels
    assert reactions(world, comment) == ["eyes"]  # seen
    reply = reply_to(world, pr, comment)
    assert reply is not None
    assert "could not finish `/landbot skip`: the skip label failed: GitHub answered 403: " in reply
    assert "Resource not accessible by integration" in reply
    assert "Add the `landbot:skip` label yourself" in reply
    assert "http://" not in reply  # the API's URL is not the person's business
    [job] = command_jobs(world)
    assert job.status == "done"


def test_a_skip_github_takes_is_the_control(world: World) -> None:
    pr = dropped_pr(world, "feat-skip-fine")
    comment = commented(world, pr, "/landbot skip")
    reply = reply_to(world, pr, comment)
    assert reply is not None and "added the `landbot:skip` label" in reply
    assert "could not" not in reply


def test_a_refused_unskip_is_said_in_the_reply(world: World) -> None:
    pr = dropped_pr(world, "feat-unskip-refused")
    world.gh.add_label(world.gh.pull(world.repo, pr.number), SKIP, actor="alice")
    world.server.faults.fail(REMOVE_LABEL, 403, message="Resource not accessible by integration")
    comment = commented(world, pr, "/landbot unskip")
    assert SKIP in world.gh.pull(world.repo, pr.number).labels
    reply = reply_to(world, pr, comment)
    assert reply is not None and "could not finish `/landbot unskip`" in reply
    assert "Remove the `landbot:skip` label yourself" in reply


def test_a_retry_whose_enqueue_is_refused_says_so_and_the_drop_fails(world: World) -> None:
    pr = dropped_pr(world, "feat-retry-refused")
    world.server.faults.fail(
        "POST /graphql", 422, operation="EnqueuePullRequest", message="Validation Failed"
    )
    comment = commented(world, pr, "/landbot retry")
    assert reactions(world, comment) == ["eyes"]
    reply = reply_to(world, pr, comment)
    assert reply is not None and "could not finish `/landbot retry`: the enqueue failed" in reply
    assert "put the pull request back in the merge queue yourself" in reply
    retried = [d for d in world.store.drops() if d.source == "command"]
    assert [d.outcome for d in retried] == ["failed"]  # not left pending for ever
    # Control: the same command once GitHub takes the enqueue re-enqueues it.
    again = commented(world, pr, "/landbot retry")
    reply = reply_to(world, pr, again)
    assert reply is not None and "put the pull request back in the merge queue." in reply


def test_a_lost_answer_retries_the_job_and_the_reply_comes_once(impatient: World) -> None:
    world = impatient
    pr = dropped_pr(world, "feat-skip-lost")
    # A 502 to the label's add (a repeatable call, so a ServerError): the job is retried.
    world.server.faults.fail(ADD_LABEL, 502)
    comment = commented(world, pr, "/landbot skip")
    [job] = command_jobs(world)
    assert job.status == "queued" and job.attempts == 1
    assert reply_to(world, pr, comment) is None and reactions(world, comment) == ["eyes"]
    assert world.server.requests.count(ADD_LABEL, status=502) == 1
    # The next attempt (as the worker's, once its wait is over): GitHub answers now.
    run_comment_command(world.lander, world.store, job.payload)
    reply = reply_to(world, pr, comment)
    assert reply is not None and "added the `landbot:skip` label" in reply
    run_comment_command(world.lander, world.store, job.payload)
    assert reply_to(world, pr, comment) is not None  # still one (reply_to asserts it)


def test_the_last_attempt_answers_a_lost_answer_in_the_reply(
    impatient: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    world = impatient
    pr = dropped_pr(world, "feat-skip-last")
    monkeypatch.setattr(worker_module, "MAX_ATTEMPTS", 1)  # the first attempt is the last
    world.server.faults.fail(ADD_LABEL, 502)
    comment = commented(world, pr, "/landbot skip")
    [job] = command_jobs(world)
    assert job.status == "done"
    reply = reply_to(world, pr, comment)
    assert reply is not None and "could not finish `/landbot skip`" in reply
    assert "GitHub answered 502" in reply


def bot_job(world: World, pr: Any, user: str, user_type: str) -> None:
    comment = world.gh.add_comment(world.repo, pr.number, "note", author="alice")
    world.settle()
    world.store.add_job(
        "command",
        {
            "command": "help",
            "repo": world.repo.full_name,
            "pr": pr.number,
            "user": user,
            "user_type": user_type,
            "comment_id": comment.id,
            "lines": ["/landbot help"],
        },
    )
    world.worker.drain()


def test_the_worker_drops_a_bot_command_job_that_reached_it(world: World) -> None:
    # Intake filters bots first; a job queued by an older intake, or a payload that slipped
    # through, must still not be answered (two bots would talk for ever).
    pr = dropped_pr(world, "feat-bot-job")
    for user, kind in (("renovate[bot]", "Bot"), ("ci-robot", "Bot")):
        before = world.calls()
        bot_job(world, pr, user, kind)
        assert world.calls() == before
        assert command_jobs(world)[-1].result == {"note": f"command from the bot {user}: ignored"}
    assert [c for c in world.bot_comments(pr.number) if "landbot:reply" in c.body] == []
    # Control: the same job from a person is answered.
    bot_job(world, pr, "alice", "User")
    assert [c for c in world.bot_comments(pr.number) if "landbot:reply" in c.body] != []
