"""The reply texts of comment commands (landbot/land/replies.py), snapshot by snapshot in
tests/land/snapshots/replies/; refresh with LANDBOT_UPDATE_SNAPSHOTS=1 after reading the diff."""

from __future__ import annotations

from pathlib import Path

import pytest

from landbot.core.model import Outcome
from landbot.land import replies
from landbot.land.decide import WRITERS, command_allowed

from ..conftest import matches_snapshot

SNAPSHOTS = Path(__file__).parent / "snapshots" / "replies"
OUTCOMES: tuple[Outcome, ...] = ("requeued", "fixed", "pending", "handed_back", "ignored", "failed")


def check_snapshot(name: str, text: str) -> None:
    matches_snapshot(SNAPSHOTS / f"{name}.md", text)


def test_help_names_every_command_and_who_may_run_it() -> None:
    text = replies.render_help("/landbot help", "landbot:skip", "@acme-landbot")
    check_snapshot("help", text)
    for command in ("retry", "skip", "unskip", "help"):
        assert f"`/landbot {command}`" in text
    assert "`landbot:skip`" in text and "Anyone may ask" in text
    assert text.startswith(f"{replies.REPLY_MARKER}\n> /landbot help\n")
    # Without an App there is no mention form to offer.
    assert "works in place of" not in replies.render_help("/landbot help", "landbot:skip", None)


def test_unknown_says_so_then_helps() -> None:
    text = replies.render_unknown("/landbot frobnicate", "landbot:skip", None)
    check_snapshot("unknown", text)
    assert "no such command" in text and "`/landbot retry`" in text


@pytest.mark.parametrize("command", ["retry", "skip", "unskip"])
def test_refusal_says_who_can_and_that_they_can_do_it_for_you(command: str) -> None:
    text = replies.render_refused(f"/landbot {command}", command, "mallory", "read")
    check_snapshot(f"refused-{command}", text)
    assert f"did not run `/landbot {command}`" in text and "`read`" in text
    assert f"can comment `/landbot {command}` for you" in text


def test_the_roles_sentence_is_the_decisions_roles() -> None:
    said = set(replies.ROLES_TEXT.replace(" or ", ", ").split(", "))
    assert said == set(WRITERS)
    assert all(command_allowed(r) for r in said) and not command_allowed("triage")


@pytest.mark.parametrize("outcome", OUTCOMES)
def test_retry_names_its_outcome(outcome: Outcome) -> None:
    why = "the pull request is closed" if outcome in ("ignored", "failed") else "x"
    text = replies.render_retried("/landbot retry", outcome, why)
    check_snapshot(f"retried-{outcome}", text)
    assert "`landbot` check" in text
    assert ("closed" in text) == (outcome in ("ignored", "failed"))


def test_skip_and_unskip() -> None:
    check_snapshot("skipped", replies.render_skipped("/landbot skip", "landbot:skip"))
    removed = replies.render_unskipped("/landbot unskip", "landbot:skip", removed=True)
    absent = replies.render_unskipped("/landbot unskip", "landbot:skip", removed=False)
    check_snapshot("unskipped", removed)
    check_snapshot("unskipped-absent", absent)
    assert "removed the `landbot:skip` label" in removed and "had no `landbot:skip`" in absent


def test_the_quoted_line_is_inert() -> None:
    # A user's words cannot carry a marker, a mention, a link or HTML into the reply.
    line = "/landbot help <!-- landbot:status --> @org/team https://evil.example [x](y)"
    text = replies.render_help(line, "landbot:skip", None)
    assert "<!--" not in text.replace(replies.REPLY_MARKER, "")
    assert "landbot:status -->" not in text
    assert "@org" not in text and "https://" not in text and "[x](y)" not in text
    # Control: plain words are quoted as written.
    assert "> /landbot help please\n" in replies.render_help("/landbot help please", "l", None)


def test_the_quote_is_one_bounded_line() -> None:
    text = replies.render_help("/landbot help " + "x" * 500, "landbot:skip", None)
    quote = text.splitlines()[1]
    assert quote.startswith("> /landbot help x") and quote.endswith("…") and len(quote) <= 203


def test_the_tag_names_the_comment() -> None:
    assert replies.reply_tag(42) == "<!-- landbot:command 42 -->"


def test_the_mention_form_is_offered_only_as_github_spells_a_slug() -> None:
    good = replies.render_help("/landbot help", "l", "@acme-landbot")
    assert "`@acme-landbot retry`" in good  # as typed: no zero-width space in it
    bad = replies.render_help("/landbot help", "l", "@x`<b>")
    assert "works in place of" not in bad
