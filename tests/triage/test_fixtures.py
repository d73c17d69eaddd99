"""Each fixture log (GitHub Actions' format) gets its class, step and exact error lines."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from landbot.triage import explain_log
from landbot.triage.log import parse_log

from .conftest import FIXTURES


@dataclass(frozen=True)
class Expected:
    file: str
    class_: str
    step: str | None
    error_lines: tuple[int, ...]
    signature: str | None
    step_line: int | None
    exit_code: int | None


CASES = [
    Expected(
        "quest-policy.log",
        "policy",
        'Run landbot quest check --base "origin/$GITHUB_BASE_REF" --branch "$GITHUB_HEAD_REF"',
        (107, 108),  # the exit-code annotation (109) is no error line when findings name it
        "quest-finding",
        97,
        1,
    ),
    Expected(
        "pytest-genuine.log",
        "genuine",
        "Run pytest -q --color=yes",
        (122, 125, 130, 132, 134, 135),  # E lines, locations, FAILED ids; not the exit code
        "pytest-failed",
        97,
        1,
    ),
    Expected(
        "vitest-genuine.log", "genuine", "Run npx vitest run", (106, 112), "vitest-failed", 95, 1
    ),
    Expected(
        "runner-shutdown.log",
        "infrastructure",
        "Run pytest -q --color=yes -p no:cacheprovider",
        (113, 115),
        "runner-shutdown",
        97,
        143,
    ),
    Expected(
        "oom-137.log",
        "infrastructure",
        "Run pytest -q -n 2 tests/test_reports.py",
        # The `Killed` line says why (generic.py's last words): the exit code's line is
        # no longer needed as an error line.
        (113,),
        "out-of-memory",
        97,
        137,
    ),
    Expected(
        "no-space.log",
        "infrastructure",
        "Run docker build -t acme/widgets:ci .",
        (111, 113, 117),  # pip's error, BuildKit's step error and its final error
        "no-space-left",
        97,
        1,
    ),
    Expected("npm-econnreset.log", "flaky", "Run npm ci", (88,), "registry-network", 84, 1),
    Expected(
        "max-execution-time.log",
        "timeout",
        "Run pytest -q tests/integration",
        (113, 114),
        "max-execution-time",
        97,
        None,
    ),
    Expected(
        "operation-canceled.log",
        "cancelled",
        "Run pytest -q --color=yes",
        (113,),
        "operation-cancelled",
        97,
        None,
    ),
    Expected(
        "gate-cancelled.log",
        "cancelled",
        # alls-green is a composite action: its header's inputs are followed at once by
        # its own step's header (33), so the step is the action's (log.py _composite_of).
        "Run re-actors/alls-green@release/v1",
        # `Some of the required to succeed jobs failed.` (generic.py's last words) and the
        # cancelled job's line (the evidence).
        (37, 40),
        "dependencies-cancelled",
        29,
        1,
    ),
    Expected("success.log", "unknown", None, (), None, None, None),
]


@pytest.mark.parametrize("case", CASES, ids=[c.file for c in CASES])
def test_fixture_is_explained(case: Expected) -> None:
    with (FIXTURES / case.file).open("rb") as stream:
        e = explain_log(stream)
    assert e.class_ == case.class_
    assert e.step == case.step
    assert e.error_lines == case.error_lines
    assert e.step_line == case.step_line
    assert e.exit_code == case.exit_code
    assert (e.evidence[0].signature if e.evidence else None) == case.signature
    # Every error line is shown, and the excerpt is in file order within the file.
    shown = [x.line for x in e.excerpt]
    assert shown == sorted(set(shown))
    assert set(e.error_lines) <= set(shown)
    assert all(1 <= n <= e.line_count for n in shown)
    assert "\n" not in e.summary and e.summary


@pytest.mark.parametrize("case", CASES, ids=[c.file for c in CASES])
def test_excerpt_text_is_the_file_line_without_timestamp_and_colours(case: Expected) -> None:
    raw = (FIXTURES / case.file).read_bytes().decode("utf-8-sig").split("\n")
    e = explain_log((FIXTURES / case.file).read_bytes())
    for item in e.excerpt:
        line = raw[item.line - 1]
        assert line[:28].endswith("Z") and line[28] == " "  # GitHub's 7-digit timestamp
        assert "\x1b" not in item.text
        plain = line[29:]
        if "\x1b" not in plain:
            assert item.text == plain[:500]


def test_quest_failure_maps_to_the_steps_display_name() -> None:
    steps = [
        {"number": 1, "name": "Set up job", "conclusion": "success"},
        {"number": 2, "name": "Run actions/checkout@v4", "conclusion": "success"},
        {"number": 3, "name": "Run actions/setup-python@v5", "conclusion": "success"},
        {"number": 4, "name": "Install", "conclusion": "success"},
        {
            "number": 5,
            "name": "Check that the PR leaves its quest accurate",
            "conclusion": "failure",
        },
        {"number": 6, "name": "Post Run actions/checkout@v4", "conclusion": "success"},
        {"number": 7, "name": "Complete job", "conclusion": "success"},
    ]
    e = explain_log((FIXTURES / "quest-policy.log").read_bytes(), steps=steps)
    assert e.step == "Check that the PR leaves its quest accurate"
    assert e.step_number == 5
    assert e.step_line == 97
    assert e.class_ == "policy"
    assert e.to_dict()["step"] == "Check that the PR leaves its quest accurate"


def test_the_already_on_base_finding_is_context_not_an_error() -> None:
    e = explain_log((FIXTURES / "quest-policy.log").read_bytes())
    assert 106 in [x.line for x in e.excerpt]
    assert 106 not in e.error_lines
    assert "2 problems" in e.summary


def test_cancelled_fixtures_never_blame_the_pr() -> None:
    for name in ("operation-canceled.log", "gate-cancelled.log"):
        e = explain_log((FIXTURES / name).read_bytes())
        assert e.class_ == "cancelled"
        assert e.pr_fault is False
        assert "not a failure of the pull request" in e.summary
        assert e.to_dict(full=True)["pr_fault"] is False


def test_genuine_summary_names_the_failed_tests() -> None:
    e = explain_log((FIXTURES / "pytest-genuine.log").read_bytes())
    assert e.summary.startswith(
        "2 tests failed in step 'Run pytest -q --color=yes': "
        "tests/test_pricing.py::test_bulk_discount - assert 12000 == 10800 (and 1 more)"
    )
    v = explain_log((FIXTURES / "vitest-genuine.log").read_bytes())
    assert (
        "src/cart.test.ts > cart > applies the bulk discount: AssertionError: expected 12000"
        in (v.summary)
    )
    # The pytest E lines and the vitest assertion are in the excerpt: the why, not just the what.
    assert 122 in [x.line for x in e.excerpt]
    assert 113 in [x.line for x in v.excerpt]


def test_fixtures_look_like_github_logs() -> None:
    for path in sorted(FIXTURES.glob("*.log")):
        data = path.read_bytes()
        assert data.startswith(b"\xef\xbb\xbf"), path.name
        assert b"##[group]Runner Image" in data and b"Complete job name:" in data
        assert b"Post job cleanup." in data or path.name == "gate-cancelled.log"
        assert parse_log(data).line_count == data.count(b"\n") + (not data.endswith(b"\n"))


def test_to_json_is_exactly_the_contract() -> None:
    e = explain_log((FIXTURES / "quest-policy.log").read_bytes())
    out = json.loads(e.to_json())
    assert list(out) == ["class", "step", "error_lines", "summary", "excerpt"]
    assert all(list(item) == ["line", "text"] for item in out["excerpt"])


def test_of_several_failed_steps_the_one_the_log_shows_wins() -> None:
    log = (FIXTURES / "pytest-genuine.log").read_bytes()
    title = "Run pytest -q --color=yes"
    steps = [
        {"number": 4, "name": "Lint", "conclusion": "failure"},
        {"number": 5, "name": title, "conclusion": "failure"},
        {"number": 6, "name": "Upload logs", "conclusion": "failure"},
    ]
    e = explain_log(log, steps=steps)
    assert (e.step, e.step_number) == (title, 5)
    # Without a name that matches, the first failed step: later ones ran `if: always()`.
    steps[1]["name"] = "Unit tests"
    e = explain_log(log, steps=steps)
    assert (e.step, e.step_number) == ("Lint", 4)


def test_a_cancelled_step_is_named_when_none_failed() -> None:
    steps = [
        {"number": 3, "name": "Install", "conclusion": "success"},
        {"number": 4, "name": "Integration tests", "conclusion": "cancelled"},
        {"number": 5, "name": "Upload", "conclusion": "skipped"},
    ]
    e = explain_log((FIXTURES / "max-execution-time.log").read_bytes(), steps=steps)
    assert (e.step, e.step_number) == ("Integration tests", 4)
    assert e.class_ == "timeout"
