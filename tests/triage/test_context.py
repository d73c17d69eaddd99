"""The excerpt: what explains the error, bounded, most telling lines first, in file order."""

from __future__ import annotations

from landbot.triage import explain_log, parse_log
from landbot.triage.context import EXCERPT_LINES, EXCERPT_TEXT, find_marks

from .conftest import gh_log, run_step

EXIT1 = "##[error]Process completed with exit code 1."


def kinds(*output: str) -> dict[int, str]:
    parsed = parse_log(gh_log(run_step("t", *output)))
    return {m.line: m.kind for m in find_marks(parsed)}


def test_pytest_lines_are_recognized() -> None:
    got = kinds(
        "_____ test_x _____",
        ">       assert 1 == 2",
        "E       assert 1 == 2",
        "tests/test_a.py:3: AssertionError",
        "=========== short test summary info ===========",
        "FAILED tests/test_a.py::test_x - assert 1 == 2",
        "=========== 1 failed, 2 passed in 0.1s ===========",
        EXIT1,
    )
    assert got == {
        5: "pytest-test",
        7: "pytest-detail",
        8: "pytest-location",
        9: "pytest-summary",
        10: "pytest-failed",
        11: "pytest-summary",
        12: "error",
    }


def test_a_traceback_keeps_its_header_last_frame_and_exception() -> None:
    got = kinds(
        "starting",
        "Traceback (most recent call last):",
        '  File "/a.py", line 1, in <module>',
        "    f()",
        '  File "/b.py", line 9, in f',
        "    raise KeyError(k)",
        "KeyError: 'price'",
        EXIT1,
    )
    assert got[6] == "traceback"
    assert got[9] == "traceback" and got[10] == "traceback"
    assert got[11] == "traceback-exception"
    assert 7 not in got and 8 not in got  # the middle frames are left out


def test_plain_output_above_the_error_explains_an_unknown_tool() -> None:
    output = [f"line {i}" for i in range(20)]
    e = explain_log(gh_log(run_step("./build.sh", *output, "fatal: cannot frobnicate", EXIT1)))
    shown = [x.line for x in e.excerpt]
    error = 5 + len(output) + 1
    # The 8 lines just above the error, and the error.
    assert shown == list(range(error - 8, error + 1))
    assert e.summary == (
        "step 'Run ./build.sh' failed with exit code 1 after: fatal: cannot frobnicate; "
        "reproduce the step locally and fix it"
    )


def test_excerpt_is_bounded_and_keeps_the_decisive_lines() -> None:
    failures = [f"FAILED tests/test_a.py::test_{i} - assert {i}" for i in range(200)]
    details = [f"E       assert {i} == -1" for i in range(200)]
    e = explain_log(gh_log(run_step("pytest", *details, *failures, EXIT1)))
    assert len(e.excerpt) == EXCERPT_LINES
    shown = [x.line for x in e.excerpt]
    assert shown == sorted(shown)
    error = 5 + 400
    assert error in shown  # the ##[error] line and the evidence are always kept
    assert e.evidence[0].line in shown
    # Lines that name failures outrank the E lines.
    assert all(x.text.startswith("FAILED") or x.line == error for x in e.excerpt)
    assert e.summary.startswith("200 tests failed in step 'Run pytest': tests/test_a.py::test_0")
    assert "(and 199 more)" in e.summary


def test_error_lines_are_bounded() -> None:
    failures = [f"FAILED tests/test_a.py::test_{i}" for i in range(200)]
    e = explain_log(gh_log(run_step("pytest", *failures, EXIT1)))
    assert len(e.error_lines) == 50
    assert e.error_lines == tuple(range(5, 55))


def test_long_lines_are_shortened_in_the_excerpt() -> None:
    e = explain_log(gh_log(run_step("x", "y" * 10_000, EXIT1)))
    long = next(x for x in e.excerpt if x.line == 5)
    assert len(long.text) == EXCERPT_TEXT and long.text.endswith("…")


def test_summary_is_one_bounded_line() -> None:
    e = explain_log(gh_log(run_step("x", "FAILED tests/a.py::t - " + "why " * 500, EXIT1)))
    assert "\n" not in e.summary and len(e.summary) <= 300
