"""Which command jobs wait for their pull request's leased job (issue 29, point 6): only a
job that may be a `retry` (it acts on a drop and writes the PR's sticky comments); `skip`,
`unskip` and `help` run at once, even beside a fix job that holds the PR for half an hour.
Intake cannot tell the App's slug, so a retry behind any name counts."""

from __future__ import annotations

import pytest

from landbot.intake.commands import candidate_lines, may_retry


@pytest.mark.parametrize(
    "body",
    [
        "/landbot skip",
        "/LANDBOT unskip please",
        "/landbot help",
        "/landbot",
        "/landbot frobnicate",
        "@acme-landbot skip",
        "@acme-landbot[bot] help",
        "please\n/landbot skip\n@alice thanks",
    ],
)
def test_skip_unskip_and_help_hold_no_pull_request(body: str) -> None:
    lines = candidate_lines(body)
    assert lines and not may_retry(lines)


@pytest.mark.parametrize(
    "body",
    [
        "/landbot retry",
        "/landbot RETRY now",
        "@acme-landbot retry",
        "@acme-landbot[bot] retry",
        # The worker reads the mention first when it is the App's: a retry, though intake's
        # guess with `/landbot` alone says skip.
        "@acme-landbot retry\n/landbot skip",
        "/landbot skip\n/landbot retry",
    ],
)
def test_the_control_a_command_that_may_be_a_retry_holds_it(body: str) -> None:
    lines = candidate_lines(body)
    assert lines and may_retry(lines)
