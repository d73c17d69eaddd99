"""Where GitHub shows no line of its own, there is no command (landbot/intake/commands.py):
a lazy continuation of a `>` quote (CommonMark §5.1), an indented code block (§4.4), an
HTML comment on one line or several (§4.6). Each refusal has a control: the same words
where GitHub does show them as a line are a command."""

from __future__ import annotations

import pytest

from landbot.intake.commands import Command, candidate_lines, parse_command

APP = ("landbot", "@acme-landbot", "@acme-landbot[bot]")
RETRY = Command("retry", (), "/landbot retry")


@pytest.mark.parametrize(
    ("refused", "control"),
    [
        # Lazy continuation: the line after the quote's text is still in the quote.
        ("> q\n/landbot retry", "> q\n\n/landbot retry"),
        ("> > q\n/landbot retry", "> > q\n\n/landbot retry"),
        ("> q\nmore of it\n/landbot retry", "> q\nmore of it\n\n/landbot retry"),
        # `>` alone is a blank line inside the quote: nothing continues after it.
        ("> q\n> /landbot retry", "> q\n>\n/landbot retry"),
        # A fence ends the quote's paragraph; its code is code, what follows is prose.
        ("> q\n```\n/landbot retry\n```", "> q\n```\nx\n```\n/landbot retry"),
        # Indented code: four spaces, or a tab.
        ("    /landbot retry", "   /landbot retry"),
        ("\t/landbot retry", "  /landbot retry"),
        ("text\n\n    /landbot retry", "text\n\n/landbot retry"),
        # HTML comments, on one line and over several.
        ("<!-- /landbot retry -->", "<!-- note -->\n/landbot retry"),
        ("<!--\n/landbot retry\n-->", "<!--\nnote\n-->\n/landbot retry"),
        ("text <!-- hidden\n/landbot retry\n-->", "text <!-- hidden -->\n/landbot retry"),
        ("<!-- a --> <!-- b\n/landbot retry -->", "<!-- a --> <!-- b -->\n/landbot retry"),
    ],
)
def test_a_line_github_does_not_show_as_one_is_no_command(refused: str, control: str) -> None:
    assert parse_command(refused, APP) is None, refused
    assert candidate_lines(refused) == []
    assert parse_command(control, APP) == RETRY, control
    assert parse_command("\n".join(candidate_lines(control)), APP) == RETRY


def test_a_comment_after_the_command_on_its_line_leaves_it_a_command() -> None:
    assert parse_command("/landbot retry <!-- why: flaky -->", APP) == RETRY
    assert parse_command("/landbot retry <!-- why:\nflaky -->", APP) == RETRY


def test_a_fence_inside_a_comment_opens_no_code() -> None:
    # The comment hides the ``` line: the command after the comment is prose.
    assert parse_command("<!--\n```\n-->\n/landbot retry", APP) == RETRY
