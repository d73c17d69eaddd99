"""Which lines of a failing step explain its error, and the bounded excerpt built from them.

The ``##[error]`` line says only that a process exited non-zero; the explanation is the
tool's own output above it. Recognizers here mark those lines in the parser's region: a
test runner's failures (pytest, vitest/jest, go test, cargo test), a Python traceback,
``quest:`` findings. Each mark has a priority, so a bounded excerpt keeps what names the
failure before what merely surrounds it. Pure functions over the parsed region.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from landbot.triage.log import Line, ParsedLog, TextIndex

EXCERPT_LINES = 40
EXCERPT_TEXT = 500

# Priorities: lower is kept first.
ALWAYS = -1  # the decisive evidence and the first error
NAMES = 0  # a line that names what failed
EXPLAINS = 1  # a line that says why
SURROUNDS = 2  # headings, summaries, locations
NEARBY = 3  # plain output just above an error

# Kinds that name a failed test or a policy finding (they count as error lines).
FAILURE_KINDS = frozenset({"quest", "pytest-failed", "vitest-failed", "go-failed", "cargo-failed"})
TEST_KINDS = frozenset({"pytest-failed", "vitest-failed", "go-failed", "cargo-failed"})


@dataclass(frozen=True, slots=True)
class Mark:
    line: int
    kind: str
    priority: int
    text: str
    subject: str = ""
    """What the line names, when it names something: a failed test's id (for the flaky
    ledger), or a ``path:line`` location. Empty for plain output."""


@dataclass(frozen=True, slots=True)
class ExcerptLine:
    line: int
    text: str

    def to_dict(self) -> dict[str, int | str]:
        return {"line": self.line, "text": self.text}


# (kind, priority, hints, pattern): the pattern runs on each line holding a hint.
_RECOGNIZERS: tuple[tuple[str, int, tuple[str, ...], re.Pattern[str]], ...] = (
    ("error", NAMES, ("\n##[error]",), re.compile(r"^##\[error\]")),
    # quest check: `quest: <path>: <message>`; "(already on the base)" is not the change's.
    (
        "quest",
        NAMES,
        ("\nquest: ",),
        re.compile(r"^quest: (?P<path>[^:]+): (?!\(already on the base\))(?P<msg>.+)$"),
    ),
    (
        "quest-base",
        SURROUNDS,
        ("(already on the base)",),
        re.compile(r"^quest: [^:]+: \(already on the base\)"),
    ),
    # pytest's short summary: `FAILED tests/test_x.py::test_y - AssertionError: …`
    (
        "pytest-failed",
        NAMES,
        ("\nFAILED ", "\nERROR "),
        re.compile(r"^(?:FAILED|ERROR) (?P<id>[^\s:]\S*(?:::|\.py)\S*)(?: - (?P<msg>.*))?$"),
    ),
    (
        "pytest-verbose",
        EXPLAINS,
        (" FAILED", " ERROR"),
        re.compile(r"^\S+::\S+ (?:FAILED|ERROR)\b"),
    ),
    ("pytest-detail", EXPLAINS, ("\nE ",), re.compile(r"^E +\S")),
    (
        "pytest-location",
        EXPLAINS,
        tuple(f".py:{d}" for d in range(1, 10)),
        re.compile(r"^[\w./-]+\.py:\d+: \w+$"),
    ),
    ("pytest-test", SURROUNDS, ("\n___",), re.compile(r"^_{3,} \S.* _{3,}$")),
    (
        "pytest-summary",
        SURROUNDS,
        ("\n==",),
        re.compile(r"^=+ (?:.*\b\d+ (?:failed|errors?)\b.*|short test summary info) =+$"),
    ),
    # vitest (` FAIL  src/x.test.ts > suite > test`) and jest (`FAIL src/x.test.js`).
    (
        "vitest-failed",
        NAMES,
        ("FAIL ",),
        re.compile(
            r"^[ \t]*FAIL[ \t]+(?:\|[^|]+\|[ \t]+)?"
            r"(?P<file>\S+\.(?:[cm]?[jt]sx?|vue|svelte|astro))(?P<rest>.*)$"
        ),
    ),
    ("test-failed", EXPLAINS, ("×", "✗", "✕"), re.compile(r"^[ \t]*[×✗✕][ \t]+\S")),
    ("test-reason", EXPLAINS, ("→",), re.compile(r"^[ \t]*→[ \t]+\S")),
    ("jest-failed", EXPLAINS, ("● ",), re.compile(r"^[ \t]*● (?!Console\b)\S")),
    (
        "js-error",
        EXPLAINS,
        (
            "Error: ",
            "Error [",
        ),
        re.compile(r"^[ \t]*(?:\w+Error(?: \[\w+\])?|Error): \S"),
    ),
    ("test-location", SURROUNDS, ("❯ ",), re.compile(r"^[ \t]*❯ \S+:\d+:\d+$")),
    (
        "test-summary",
        SURROUNDS,
        (" failed",),
        re.compile(r"^[ \t]*(?:Test Files|Tests:?|Test Suites:)[ \t]+\d+ failed\b"),
    ),
    # go test and cargo test.
    ("go-failed", NAMES, ("--- FAIL: ",), re.compile(r"^[ \t]*--- FAIL: (?P<name>\S+)")),
    ("go-summary", SURROUNDS, ("\nFAIL",), re.compile(r"^FAIL[ \t]+\S+[ \t]+[\d.]+s$")),
    ("cargo-failed", NAMES, (" ... FAILED",), re.compile(r"^test (?P<name>\S+) \.\.\. FAILED$")),
    ("cargo-panic", EXPLAINS, ("panicked at",), re.compile(r"^thread '.*' panicked at ")),
    ("cargo-summary", SURROUNDS, ("\ntest result: FAILED",), re.compile(r"^test result: FAILED\.")),
)

_TRACEBACK = re.compile(r"^Traceback \(most recent call last\):$")
_TRACEBACKS_MAX = 5
_TRACEBACK_LINES_MAX = 400


def find_marks(parsed: ParsedLog) -> tuple[Mark, ...]:
    """Every recognized line of the failing step's output, in file order."""
    index = parsed.output
    marks: dict[int, Mark] = {}

    def put(idx: int, kind: str, priority: int) -> None:
        line = index.lines[idx]
        old = marks.get(line.number)
        if old is None or priority < old.priority:
            marks[line.number] = Mark(line.number, kind, priority, line.text)

    # Tracebacks first: their exception line would otherwise be a plain "js-error".
    for idx, kind, priority in _tracebacks(index):
        put(idx, kind, priority)
    for kind, priority, hints, pattern in _RECOGNIZERS:
        for idx, _m in index.grep(pattern, hints):
            put(idx, kind, priority)
    for idx, priority in _above_errors(
        index,
        has_tool_marks=any(m.priority <= EXPLAINS and m.kind != "error" for m in marks.values()),
    ):
        put(idx, "output", priority)
    return tuple(sorted(marks.values(), key=lambda m: m.line))


def _tracebacks(index: TextIndex) -> Iterable[tuple[int, str, int]]:
    """Marks for Python tracebacks: the header, the last frame, the exception line."""
    lines = index.lines
    for count, (start, _m) in enumerate(index.grep(_TRACEBACK, ["\nTraceback (most"])):
        if count >= _TRACEBACKS_MAX:
            return
        yield start, "traceback", SURROUNDS
        last_frame = None
        for idx in range(start + 1, min(len(lines), start + _TRACEBACK_LINES_MAX)):
            text = lines[idx].text
            if text.startswith("  File "):
                last_frame = idx
            elif text and not text[0].isspace():
                if last_frame is not None:
                    yield last_frame, "traceback", SURROUNDS
                    if last_frame + 1 < idx:
                        yield last_frame + 1, "traceback", SURROUNDS
                yield idx, "traceback-exception", EXPLAINS
                break


def _above_errors(index: TextIndex, *, has_tool_marks: bool) -> Iterable[tuple[int, int]]:
    """Plain output just above each of the first errors: "the explanation is above it"."""
    lines = index.lines
    want = 3 if has_tool_marks else 8
    errors = index.candidates(["\n##[error]"])[:3]
    for n, err in enumerate(errors):
        taken = 0
        idx = err - 1
        while idx >= 0 and taken < want:
            text = lines[idx].text.strip()
            if lines[idx].is_error:
                break
            if text and not text.startswith(("##[", "[command]")):
                yield idx, SURROUNDS if n == 0 and not has_tool_marks else NEARBY
                taken += 1
            idx -= 1


def failure_lines(marks: Sequence[Mark]) -> tuple[int, ...]:
    """Lines that state the failure: error annotations and failed tests or findings."""
    return tuple(m.line for m in marks if m.kind == "error" or m.kind in FAILURE_KINDS)


def build_excerpt(
    marks: Sequence[Mark],
    region: Sequence[Line],
    *,
    must: Iterable[int] = (),
    limit: int = EXCERPT_LINES,
) -> tuple[ExcerptLine, ...]:
    """At most `limit` lines, most telling first, shown in file order."""
    text = {line.number: line.text for line in region}
    ranked: list[tuple[int, int]] = [(ALWAYS, n) for n in must if n in text]
    ranked += [(m.priority, m.line) for m in marks]
    chosen: set[int] = set()
    for _priority, number in sorted(ranked):
        if len(chosen) >= limit:
            break
        chosen.add(number)
    return tuple(ExcerptLine(n, _shorten(text[n])) for n in sorted(chosen) if n in text)


def _shorten(text: str, limit: int = EXCERPT_TEXT) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
