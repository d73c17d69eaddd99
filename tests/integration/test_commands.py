"""Comment commands end to end: a person comments on the simulated GitHub, landbot's webhook
endpoint receives the signed delivery, the worker answers. For each of retry, skip,
unskip, help and an unknown word, and for `@<slug> retry` under App auth: a writer, a
reader, an outside author on a fork and a bot account; the reply, the label after, and the
permission calls counted (help needs none)."""

from __future__ import annotations

from typing import Any

import pytest

from landbot.land.comments import STATUS_MARKER
from landbot.land.replies import REPLY_MARKER, reply_tag

from .conftest import World

# SQLite only: what these tests prove is about GitHub and the decision, on store paths
# the land loop runs on both stores (conftest.BOTH_STORES).
STORES = ("sqlite",)

PERMISSION = "GET /repos/{owner}/{repo}/collaborators/{username}/permission"
COMMENTS = "POST /repos/{owner}/{repo}/issues/{issue_number}/comments"
REACTIONS = "POST /repos/{owner}/{repo}/issues/comments/{comment_id}/reactions"
SKIP = "landbot:skip"


def _people(world: World) -> None:
    world.gh.add_collaborator(world.repo, "bob", "read")  # alice writes (the World's)


def dropped_pr(world: World, head: str, **kw: Any) -> Any:
    """A PR a person removed from the queue (landbot leaves a manual removal alone)."""
    pr = world.gh.open_pull_request(world.repo, head=head, files={f"{head}.txt": "x\n"}, **kw)
    world.gh.enqueue(pr, actor="alice")
    world.gh.dequeue(pr, actor="alice")
    world.settle()
    return pr


def command(world: World, pr: Any, body: str, author: str) -> tuple[Any, int]:
    """Comment `body` as `author`; (the comment, permission calls it cost)."""
    before = world.server.requests.count(PERMISSION)
    comment = world.gh.add_comment(world.repo, pr.number, body, author=author)
    world.settle()
    return comment, world.server.requests.count(PERMISSION) - before


def reply_to(world: World, pr: Any, comment: Any) -> str | None:
    found = [
        c.body
        for c in world.bot_comments(pr.number)
        if REPLY_MARKER in c.body and reply_tag(comment.id) in c.body
    ]
    assert len(found) <= 1, "two replies to one command"
    return found[0] if found else None


def reactions(world: World, comment: Any) -> list[str]:
    return [r.content for r in world.gh.comment(comment.id).reactions]


# --- retry --------------------------------------------------------------------------------


def test_retry_from_a_writer_runs_and_says_how_it_went(world: World) -> None:
    pr = dropped_pr(world, "feat-retry")
    comment, permission_calls = command(world, pr, "/landbot retry", "alice")
    assert permission_calls == 1
    assert reactions(world, comment) == ["eyes"]
    assert world.mutations() == ["EnqueuePullRequest"]
    reply = reply_to(world, pr, comment)
    assert reply is not None and reply.startswith(f"{REPLY_MARKER}\n> /landbot retry\n")
    assert "put the pull request back in the merge queue" in reply
    assert "`landbot` check" in reply


@pytest.mark.parametrize("who", ["reader", "fork author"])
def test_retry_from_someone_without_write_is_refused_in_a_reply(world: World, who: str) -> None:
    _people(world)
    if who == "fork author":
        pr = dropped_pr(world, "feat-fork", author="outsider", fork="outsider")
        author, role = "outsider", "read"  # a public repository: anyone reads it
    else:
        pr = dropped_pr(world, "feat-reader")
        author, role = "bob", "read"
    comment, permission_calls = command(world, pr, "/landbot retry", author)
    assert permission_calls == 1
    assert reactions(world, comment) == []  # no 👎: the reply says why
    assert world.mutations() == []
    reply = reply_to(world, pr, comment)
    assert reply is not None
    assert "did not run `/landbot retry`" in reply and f"{author} has `{role}`" in reply
    assert "can comment `/landbot retry` for you" in reply
    assert world.store.drops()[-1].source != "command"


def test_a_bot_gets_no_answer_at_all(world: World) -> None:
    pr = dropped_pr(world, "feat-bot")
    for body in ("/landbot retry", "/landbot help", "/landbot frobnicate", "/landbot skip"):
        before = world.calls()
        comment, permission_calls = command(world, pr, body, "renovate[bot]")
        assert world.calls() == before and permission_calls == 0
        assert reactions(world, comment) == [] and reply_to(world, pr, comment) is None
    assert [j for j in world.store.jobs() if j.kind == "command"] == []
    # Control: the same comment from a person is answered.
    comment, _ = command(world, pr, "/landbot help", "alice")
    assert reply_to(world, pr, comment) is not None


# --- skip and unskip ----------------------------------------------------------------------


def test_skip_and_unskip_from_a_writer_set_the_label(world: World) -> None:
    pr = dropped_pr(world, "feat-skip")
    before = world.calls()
    comment, calls = command(world, pr, "/landbot skip", "alice")
    # The permission, 👀, the label and the reply: 4 calls (README, "Commands in a comment").
    assert world.calls() - before == 4
    assert calls == 1 and SKIP in world.gh.pull(world.repo, pr.number).labels
    reply = reply_to(world, pr, comment)
    assert reply is not None and "added the `landbot:skip` label" in reply
    assert reactions(world, comment) == ["eyes"]

    comment, calls = command(world, pr, "/landbot unskip", "alice")
    assert calls == 1 and SKIP not in world.gh.pull(world.repo, pr.number).labels
    reply = reply_to(world, pr, comment)
    assert reply is not None and "removed the `landbot:skip` label" in reply

    comment, _ = command(world, pr, "/landbot unskip", "alice")  # it is gone already
    reply = reply_to(world, pr, comment)
    assert reply is not None and "had no `landbot:skip` label" in reply
    assert SKIP not in world.gh.pull(world.repo, pr.number).labels


@pytest.mark.parametrize("who", ["reader", "fork author"])
def test_skip_and_unskip_without_write_change_no_label(world: World, who: str) -> None:
    _people(world)
    fork = who == "fork author"
    author = "outsider" if fork else "bob"
    kw: dict[str, Any] = {"author": author, "fork": author} if fork else {}
    pr = dropped_pr(world, f"feat-skip-{author}", **kw)
    comment, calls = command(world, pr, "/landbot skip", author)
    assert calls == 1 and SKIP not in world.gh.pull(world.repo, pr.number).labels
    reply = reply_to(world, pr, comment)
    assert reply is not None and "did not run `/landbot skip`" in reply

    world.gh.add_label(world.gh.pull(world.repo, pr.number), SKIP, actor="alice")
    comment, calls = command(world, pr, "/landbot unskip", author)
    assert calls == 1 and SKIP in world.gh.pull(world.repo, pr.number).labels
    reply = reply_to(world, pr, comment)
    assert reply is not None and "did not run `/landbot unskip`" in reply
    assert reactions(world, comment) == []


# --- help and an unknown word -------------------------------------------------------------


@pytest.mark.parametrize("body", ["/landbot help", "/landbot frobnicate", "/landbot"])
def test_help_and_unknown_words_answer_everyone_without_a_permission_call(
    world: World, body: str
) -> None:
    _people(world)
    pr = dropped_pr(world, "feat-help")
    fork_pr = dropped_pr(world, "feat-help-fork", author="outsider", fork="outsider")
    for author, target in (("alice", pr), ("bob", pr), ("outsider", fork_pr)):
        before = world.calls()
        comment, calls = command(world, target, body, author)
        # The reply, and the bot's login once per process (for the mention form).
        assert calls == 0 and world.calls() - before <= 2
        reply = reply_to(world, target, comment)
        assert reply is not None and "`/landbot unskip`" in reply and "Anyone may ask" in reply
        assert ("no such command" in reply) == (body == "/landbot frobnicate")
        assert reactions(world, comment) == []
    assert world.mutations() == []


# --- a resumed command job ----------------------------------------------------------------


def test_a_command_job_run_again_posts_no_second_reply(world: World) -> None:
    pr = dropped_pr(world, "feat-again")
    comment, _ = command(world, pr, "/landbot skip", "alice")
    [job] = [j for j in world.store.jobs() if j.kind == "command"]
    before = len(world.bot_comments(pr.number))
    world.store.add_job("command", job.payload)  # as after a transient failure
    world.worker.drain()
    assert len(world.bot_comments(pr.number)) == before
    assert reply_to(world, pr, comment) is not None


def test_a_reply_whose_answer_never_came_is_not_posted_twice(world: World) -> None:
    pr = dropped_pr(world, "feat-lost")
    # GitHub posts the reply but its answer is lost: landbot finds it by its tag.
    world.server.faults.fail(COMMENTS, 502, take_effect=True, times=1)
    comment = world.gh.add_comment(world.repo, pr.number, "/landbot help", author="alice")
    world.settle()
    assert world.server.requests.count(COMMENTS, status=502) == 1
    assert reply_to(world, pr, comment) is not None  # exactly one (reply_to asserts it)
    # Control: a lost answer whose post did not apply is posted once more.
    world.server.faults.fail(COMMENTS, 502, take_effect=False, times=1)
    again = world.gh.add_comment(world.repo, pr.number, "/landbot help", author="alice")
    world.settle()
    assert world.server.requests.count(COMMENTS, status=502) == 2
    assert reply_to(world, pr, again) is not None


def test_an_old_retry_job_without_lines_still_runs(world: World) -> None:
    # A job queued before the upgrade: `{"command": "retry", ...}` and nothing else.
    pr = dropped_pr(world, "feat-old")
    comment = world.gh.add_comment(world.repo, pr.number, "note", author="alice")
    world.settle()
    world.store.add_job(
        "command",
        {
            "command": "retry",
            "repo": world.repo.full_name,
            "pr": pr.number,
            "user": "alice",
            "comment_id": comment.id,
        },
    )
    world.worker.drain()
    assert world.mutations() == ["EnqueuePullRequest"]
    reply = reply_to(world, pr, comment)
    assert reply is not None and "> /landbot retry\n" in reply


# --- `@<slug> retry` under App auth -------------------------------------------------------


def test_a_mention_of_the_app_is_a_command(app_world: World) -> None:
    world = app_world
    _people(world)
    pr = dropped_pr(world, "feat-mention")
    comment, calls = command(world, pr, "@acme-landbot retry", "alice")
    assert calls == 1 and reactions(world, comment) == ["eyes"]
    assert world.mutations() == ["EnqueuePullRequest"]
    reply = reply_to(world, pr, comment)
    assert reply is not None and "put the pull request back in the merge queue" in reply
    assert "@acme-landbot" not in reply.replace("@\u200bacme-landbot", "")  # no self-mention

    refused, calls = command(world, pr, "@acme-landbot[bot] skip", "bob")
    assert calls == 1 and SKIP not in world.gh.pull(world.repo, pr.number).labels
    reply = reply_to(world, pr, refused)
    assert reply is not None and "did not run `/landbot skip`" in reply

    helped, calls = command(world, pr, "/landbot help", "bob")
    reply = reply_to(world, pr, helped)
    assert calls == 0 and reply is not None and "`@acme-landbot retry`" in reply


def test_a_mention_of_someone_else_is_not_answered(app_world: World) -> None:
    world = app_world
    pr = dropped_pr(world, "feat-other")
    comment, calls = command(world, pr, "@alice retry", "alice")
    assert calls == 0 and reply_to(world, pr, comment) is None
    assert reactions(world, comment) == [] and world.mutations() == []
    # Control: in the same comment, a later line that is landbot's counts.
    comment, calls = command(world, pr, "@alice retry\n@acme-landbot skip", "alice")
    assert calls == 1 and SKIP in world.gh.pull(world.repo, pr.number).labels
    assert reply_to(world, pr, comment) is not None


def test_without_an_app_a_mention_is_no_command(world: World) -> None:
    # A personal token has no slug: `@landbot-bot retry` is a mention of a user.
    pr = dropped_pr(world, "feat-token")
    comment, calls = command(world, pr, f"@{world.bot} retry", "alice")
    assert calls == 0 and reply_to(world, pr, comment) is None
    assert all(STATUS_MARKER in c.body for c in world.bot_comments(pr.number))
