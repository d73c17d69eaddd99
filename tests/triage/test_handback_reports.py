"""How a run's test report reads in the hand-back (landbot.land.comments): the failed tests
it names, the first with their messages, all of it untrusted text."""

from __future__ import annotations

from dataclasses import replace

from landbot.core.model import Evidence, ReportedTest
from landbot.land.comments import render_handback

from .test_handback_text import DROP, PR, evidence

TESTS = ("tests/test_a.py::test_x", "tests/test_a.py::test_y", "tests/test_b.py::test_z", "t4")


def with_report(*reported: ReportedTest, tests: tuple[str, ...] = TESTS) -> Evidence:
    ev = evidence(((12, "E  assert 1 == 2"),))
    job = replace(
        ev.jobs[0], failed_tests=tests, tests_from="junit-results", reported_tests=reported
    )
    return replace(ev, jobs=(job,))


def test_the_reports_first_failures_are_shown_with_their_messages() -> None:
    ev = with_report(
        ReportedTest(TESTS[0], "assert 1 == 2", "trace"),
        ReportedTest(TESTS[1], "KeyError: 'x'"),
        ReportedTest(TESTS[2], ""),
    )
    body = render_handback("failed_checks", DROP, PR, ev)
    assert (
        "  - **Failed tests** from the test report `junit-results` (4 in all):\n"
        "    - `tests/test_a.py::test_x`: assert 1 == 2\n"
        "    - `tests/test_a.py::test_y`: KeyError: 'x'\n"
        "    - `tests/test_b.py::test_z`\n"
    ) in body
    assert "<details><summary>log excerpt (error lines 12)</summary>" in body  # the log stays


def test_without_a_report_nothing_is_said() -> None:
    body = render_handback("failed_checks", DROP, PR, evidence(((12, "E  boom"),)))
    assert "test report" not in body


def test_a_reports_text_notifies_nobody_and_cannot_break_out() -> None:
    ev = with_report(
        ReportedTest("t`` @alice ``x", "ping @octocat about #12 <img src=x onerror=alert(1)>"),
        tests=("t`` @alice ``x",),
    )
    body = render_handback("failed_checks", DROP, PR, ev)
    line = next(x for x in body.splitlines() if x.startswith("    - "))
    assert "@octocat" not in line and "<img" not in line
    assert line.startswith("    - ```t`` @alice ``x```")
