"""The comment-command parser (landbot/intake/commands.py) and the intake's command jobs."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest

from landbot.intake import events
from landbot.intake.commands import (
    MAX_CANDIDATES,
    MAX_LINE,
    Command,
    candidate_lines,
    is_bot,
    mention_names,
    parse_command,
)
from landbot.store import Store

APP = ("landbot", "@acme-landbot", "@acme-landbot[bot]")
SLASH = ("landbot",)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("/landbot retry", Command("retry", (), "/landbot retry")),
        ("/landbot skip", Command("skip", (), "/landbot skip")),
        ("/landbot unskip", Command("unskip", (), "/landbot unskip")),
        ("/landbot help", Command("help", (), "/landbot help")),
        ("  /landbot retry  ", Command("retry", (), "/landbot retry")),
        ("/LANDBOT Retry", Command("retry", (), "/LANDBOT Retry")),
        ("/landbot", Command("help", (), "/landbot")),
        (
            "/landbot frobnicate now",
            Command("unknown", ("frobnicate", "now"), "/landbot frobnicate now"),
        ),
        ("/landbot retryall", Command("unknown", ("retryall",), "/landbot retryall")),
        ("/landbot retry please", Command("retry", ("please",), "/landbot retry please")),
        ("@acme-landbot retry", Command("retry", (), "@acme-landbot retry")),
        ("@ACME-Landbot skip", Command("skip", (), "@ACME-Landbot skip")),
        ("@acme-landbot[bot] unskip", Command("unskip", (), "@acme-landbot[bot] unskip")),
        ("@acme-landbot", Command("help", (), "@acme-landbot")),
        ("flaky again\r\n/landbot retry\r\n", Command("retry", (), "/landbot retry")),
    ],
)
def test_each_form_is_read(body: str, expected: Command) -> None:
    assert parse_command(body, APP) == expected


@pytest.mark.parametrize(
    "body",
    [
        "please /landbot retry this",  # not at the start of its line
        "/landbotretry",  # no word boundary after the name
        "/landbot-retry",
        "> /landbot retry",  # a quote of someone's command
        ">/landbot retry",
        "```\n/landbot retry\n```",  # code
        "~~~sh\n/landbot retry\n~~~",
        "````\n```\n/landbot retry\n````",  # a shorter fence does not close a longer one
        "```\n/landbot retry",  # an unclosed fence runs to the end
        "@alice retry",  # someone else's mention
        "@acme-landbot-two retry",  # a longer login that starts with the slug
        "@acme-landbotx retry",
        "thanks @acme-landbot retry",
        "",
    ],
)
def test_what_is_not_a_command(body: str) -> None:
    assert parse_command(body, APP) is None


def test_controls_of_the_refusals_are_commands() -> None:
    # The same lines, out of their code, quote or prose, are commands: the refusals above
    # are about the context, not about the words.
    assert parse_command("```\nx\n```\n/landbot retry", APP) == Command(
        "retry", (), "/landbot retry"
    )
    assert parse_command("~~~\n```\n~~~\n/landbot skip", APP) == Command(
        "skip", (), "/landbot skip"
    )
    # After a blank line, not after the quote's line: `> quoted\n/landbot help` is one
    # quoted paragraph on GitHub (a lazy continuation line; tests/intake/test_command_edges.py).
    assert parse_command("> quoted\n\n/landbot help", APP) == Command("help", (), "/landbot help")
    assert parse_command("@alice thanks\n@acme-landbot retry", APP) is not None


def test_the_first_command_line_wins() -> None:
    body = "/landbot skip\n/landbot retry"
    assert parse_command(body, APP) == Command("skip", (), "/landbot skip")
    body = "@alice retry\n@acme-landbot unskip\n/landbot retry"
    assert parse_command(body, APP) == Command("unskip", (), "@acme-landbot unskip")


def test_a_mention_counts_only_with_the_app_names() -> None:
    # With a personal token there is no slug: `@someone retry` is never landbot's.
    assert parse_command("@acme-landbot retry", SLASH) is None
    assert parse_command("/landbot retry", SLASH) == Command("retry", (), "/landbot retry")


def test_mention_names_come_from_an_app_login_only() -> None:
    assert mention_names("acme-landbot[bot]") == APP
    assert mention_names("landbot-user") == SLASH  # a personal token's user
    assert mention_names("github-actions[bot]") == SLASH  # the Actions token is GitHub's


def test_bots_are_told_apart() -> None:
    assert is_bot("renovate[bot]", "Bot") and is_bot("x[bot]", None) and is_bot("y", "Bot")
    assert not is_bot("alice", "User") and not is_bot(None, None)


# --- candidate lines (the webhook path, without the slug) ------------------------------


def test_candidate_lines_are_what_may_be_a_command_for_some_slug() -> None:
    body = "\n".join(
        [
            "@alice thanks for the review",  # a mention without a command word: no job
            "> /landbot retry",
            "",  # the quote ends here (without it the next line would be the quote's)
            "@alice retry",  # may be the slug: the worker decides
            "```",
            "/landbot skip",
            "```",
            "@someapp[bot] frobnicate",  # an App's account: an unknown word gets help
            "/landbot help me",
        ]
    )
    assert candidate_lines(body) == ["@alice retry", "@someapp[bot] frobnicate", "/landbot help me"]
    assert candidate_lines("@alice thanks\nplease /landbot retry") == []


def test_candidate_lines_read_as_the_body_does() -> None:
    # The worker parses the kept lines with the real names: the same answer as the body.
    bodies = [
        "@alice retry\n/landbot skip",
        "@acme-landbot retry\n/landbot skip",
        "text\n@acme-landbot[bot]\nmore",
        "```\n/landbot retry\n```\n@acme-landbot unskip",
    ]
    for body in bodies:
        assert parse_command("\n".join(candidate_lines(body)), APP) == parse_command(body, APP)


def test_candidate_lines_are_bounded() -> None:
    body = "\n".join([f"/landbot retry {'x' * 500}"] * (MAX_CANDIDATES + 5))
    lines = candidate_lines(body)
    assert len(lines) == MAX_CANDIDATES and all(len(line) == MAX_LINE for line in lines)
    # Control: a short one is kept whole.
    assert candidate_lines("/landbot retry") == ["/landbot retry"]


# --- the intake's command jobs -----------------------------------------------------------


def _deliver(store: Store, payload: dict[str, Any], guid: str) -> str:
    body = json.dumps(payload).encode()
    event = events.parse(guid, "issue_comment", dt.datetime.now(dt.UTC), body)
    result = events.handle(event, store)
    assert isinstance(result, str)
    return result


def _comment(body: str, login: str = "alice", user_type: str = "User") -> dict[str, Any]:
    return {
        "action": "created",
        "issue": {"number": 7, "pull_request": {"url": "x"}},
        "comment": {"id": 99, "body": body, "user": {"login": login, "type": user_type}},
        "repository": {"full_name": "o/r"},
    }


@pytest.fixture
def store(tmp_path: Any) -> Any:
    s = Store.open(f"sqlite:///{tmp_path / 'x.db'}")
    yield s
    s.close()


def test_a_command_becomes_a_job_with_its_lines(store: Store) -> None:
    _deliver(store, _comment("see\n/landbot skip\n"), "a")
    [job] = store.jobs()
    assert job.kind == "command"
    assert job.payload == {
        "command": "skip",
        "repo": "o/r",
        "pr": 7,
        "user": "alice",
        "comment_id": 99,
        "user_type": "User",
        "lines": ["/landbot skip"],
    }


def test_a_mention_is_a_job_for_the_worker_to_decide(store: Store) -> None:
    _deliver(store, _comment("@acme-landbot retry"), "m")
    [job] = store.jobs()
    assert job.payload["command"] == "mention" and job.payload["lines"] == ["@acme-landbot retry"]


def test_no_job_for_a_bot_prose_a_quote_or_an_issue(store: Store) -> None:
    assert _deliver(store, _comment("/landbot retry", "x[bot]", "Bot"), "b") == (
        "command from a bot: ignored"
    )
    assert _deliver(store, _comment("/landbot retry", "ci-bot", "Bot"), "b2").endswith("ignored")
    assert _deliver(store, _comment("please /landbot retry"), "p") == "no command"
    assert _deliver(store, _comment("@alice thanks"), "t") == "no command"
    assert _deliver(store, _comment("> /landbot retry"), "q") == "no command"
    issue = {**_comment("/landbot retry"), "issue": {"number": 7}}
    assert _deliver(store, issue, "i") == "not a pull request comment"
    assert store.jobs() == []
    # Control: the same command from a person on a pull request is a job.
    _deliver(store, _comment("/landbot retry"), "ok")
    assert len(store.jobs()) == 1
