"""Rules that find the lines saying why a step failed, whatever tool printed them.

The recognisers (``recognisers/``) know ecosystems; a new project's log is often a new
ecosystem (issue 26: lines right 98 % on the logs they were tuned on, 55 % on new ones).
These rules know only how failing jobs end, which every CI shares:

- ``last-words``: the lines just before the process's exit (the runner's ``##[error]
  Process completed with exit code N``, or a CI's own ``ERROR: Job failed: exit code 1``,
  ``Finished: FAILURE``, ``script returned exit code 2``), over the wrappers stacked on
  it (``make: *** … Error 2``): a tool says why it stops as the last thing it prints;
- ``fail-header`` and ``fail-message``: a line that opens with FAIL / FAILED / ERROR /
  Error: / fatal: / panic: (a failing test's header, a tool's diagnostic), and the
  message under it (its indented lines, or the next line when the header names only
  what failed); the first of a cascade of the same shape, not every one of them.

They yield ``Hit``s like a recogniser (``find``), so marks flow through the same merging
(context.find_marks); a line a recogniser claims keeps the recogniser's kind.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from landbot.triage.log import Line, ParsedLog, TextIndex
from landbot.triage.recognisers.base import EXPLAINS, NAMES, NEARBY, SURROUNDS, Hit, candidates

__all__ = [
    "EARLIER",
    "FAILURE_KINDS",
    "WRAPPER_KINDS",
    "earlier_cause",
    "error_words",
    "find",
    "is_wrapper",
]

EARLIER = "earlier-step"
LAST_WORDS = "last-words"
HEADER = "fail-header"
MESSAGE = "fail-message"
CI_EXIT = "ci-exit"
FAILURE_KINDS = frozenset({LAST_WORDS, HEADER, MESSAGE, EARLIER})
WRAPPER_KINDS = frozenset({CI_EXIT})

# Words a line uses to say something went wrong (any language's tools print these).
_WORDS = re.compile(
    r"(?i)(?:\b(?:errors?|fail(?:ed|ure|ures|ing|s)?|fatal|exception|panic(?:ked)?|"
    r"denied|cannot|can't|could ?n[o']t|unable|invalid|missing|refused|abort(?:ed|ing)?|"
    r"undefined|traceback|assert(?:ion)?(?:error)?|killed|segmentation|unexpected|"
    r"forbidden|unauthori[sz]ed|violations?|mismatch|conflicts?|exceeded|rejected|"
    r"not (?:found|allowed|supported|permitted|exist|find|match|equal)|no such|"
    r"did not|does not|timed out|expected|expired|must)\b)"
)
# What a CI does after the failure, before it reports the end: its housekeeping says
# nothing of why (``Cleaning up project directory``, ``Uploading artifacts for failed job``).
_HOUSEKEEPING = re.compile(
    r"^\s*(?:Clean(?:ing)? ?up|Uploading (?:artifacts|cache)|Saving cache|Removing |"
    r"Terminating|Stopping |Tearing down|Shutting down|Killing |Archiving |"
    r"Recording test results|Post job|Sending e-?mail|Notifying )",
    re.IGNORECASE,
)
# A line that says only that a process ended with a code: a wrapper around the cause.
_EXIT = re.compile(
    r"(?i)(?:exit(?:ed)?(?: with)? (?:code|status)|exit code|returned (?:a )?non-zero|"
    r"returned (?:exit )?(?:code|status)|with status)\W{0,3}-?\d+\b|"
    r"^\s*(?:\S*make(?:\[\d+\])?: \*\*\* .*Error \d+|Finished: (?:FAILURE|ABORTED|UNSTABLE)|"
    r"ERROR: Job failed\b|npm ERR! (?:code|errno|command failed|A complete log|Lifecycle)|"
    r"error Command failed|ELIFECYCLE\b)"
)
_RUNNER_EXIT = re.compile(
    r"^##\[error\](?:Process completed with exit code|The process '.*' failed)"
)
# A header: a failure word opening the line (after an indent, a bracket, a marker).
_HEADER = re.compile(
    r"^\s*(?:[\[(<]?(?:\d+[:.]\d+(?:[:.]\d+)*\s+)?)?"
    r"(?:[-=*#>!×✕✗✘❌●]+\s*)?"
    r"(?:FAIL(?:ED|URE)?|ERROR|Error|error|FATAL|Fatal|fatal|panic|PANIC|Exception|"
    r"[A-Z]\w*(?:Error|Exception))"
    r"(?:[\])>]|\b)(?:\[[\w-]+\])?(?::|\s|!|$)"
)
# Not a header: counts and summaries (`0 errors`, `error_count`), log levels of a
# message that is fine (`ERROR_REPORTING=on`).
_NOT_HEADER = re.compile(r"(?i)^\s*(?:errors?|fail\w*)\s*[=:]\s*(?:0|none|false)\b")

# How far above the exit the last words may be (non-blank lines), and how many are kept.
_LOOK_BACK = 12
_LAST_KEPT = 3
# Headers reported: the first of a cascade matters; the others are its consequences.
_HEADERS_KEPT = 5
_MESSAGE_LINES = 3
_SHAPE = re.compile(r"[\d\W_]+")
# Literal hints (searched at C speed, shared with the recognisers): only the lines that
# hold one are tried.
_EXIT_HINTS = (
    "xit",
    "status",
    "non-zero",
    "make",
    "Finished: ",
    "Job failed",
    "npm ERR!",
    "Command failed",
    "ELIFECYCLE",
)
_HEADER_HINTS = ("FAIL", "ERROR", "rror", "atal", "FATAL", "anic", "PANIC", "xception")


def error_words(text: str) -> bool:
    """Whether a line uses a word of failure."""
    return _WORDS.search(text) is not None


def is_wrapper(text: str) -> bool:
    """Whether a line says only that a process ended with a code (the runner's
    ``##[error]Process completed …`` included)."""
    return _RUNNER_EXIT.match(text) is not None or _EXIT.search(text) is not None


def _noise(text: str) -> bool:
    stripped = text.strip()
    return (
        not stripped
        or stripped.startswith(("##[", "[command]"))
        or _SHAPE.fullmatch(stripped) is not None
    )


def find(index: TextIndex) -> Iterable[tuple[Hit, ...]]:
    """Every generic finding in a region's output lines: the line found first, then the
    lines that go with it (a header's message). A caller drops a finding whose first line
    a recogniser already named: it knows that line better."""
    for hit in _wrappers(index):
        yield (hit,)
    headers = list(_headers(index))
    # The end of a cascade is said by its first line, which a header found already.
    shapes = {_shape(index.lines[found[0].index].text) for found in headers}
    for hit in _last_words(index):
        if hit.kind != LAST_WORDS or _shape(index.lines[hit.index].text) not in shapes:
            yield (hit,)
    yield from headers


def _wrappers(index: TextIndex) -> Iterable[Hit]:
    for idx in _ends(index):
        yield Hit(idx, CI_EXIT, SURROUNDS)


def _ends(index: TextIndex) -> list[int]:
    lines = index.lines
    return [
        i
        for i in candidates(index, _EXIT_HINTS)
        if not lines[i].text.startswith("##[")
        and len(lines[i].text) < 300
        and _EXIT.search(lines[i].text)
    ]


def _exits(index: TextIndex) -> list[int]:
    """Indexes of the lines where a process's end is reported: the runner's exit-code
    annotation, else a CI's own end line (a plain log's)."""
    lines = index.lines
    runner = [i for i in candidates(index, ("\n##[error]",)) if _RUNNER_EXIT.match(lines[i].text)]
    if runner:
        return runner[:1]
    return _ends(index)[-1:]


def _last_words(index: TextIndex) -> Iterable[Hit]:
    """The lines just above the process's end, over the wrappers stacked on it; when
    they are a diff (``git diff --exit-code``, a formatter's check), its first file
    header and first changed line."""
    lines = index.lines
    for end in _exits(index):
        diff = _diff_above(index, end)
        if diff:
            for i, kind in diff:
                yield Hit(i, kind, EXPLAINS)  # a recogniser's mark on the header wins
            continue
        seen = 0
        found: list[int] = []
        idx = end - 1
        while idx >= 0 and seen < _LOOK_BACK:
            text = lines[idx].text
            if _noise(text) or _HOUSEKEEPING.match(text):
                idx -= 1
                continue
            if is_wrapper(text) and not found:
                idx -= 1  # a wrapper right above the end: keep looking past it
                continue
            seen += 1
            found.append(idx)
            idx -= 1
        if not found:
            continue
        worded: list[int] = []
        said_shapes: set[str] = set()
        for i in found:
            shape = _shape(lines[i].text)
            if error_words(lines[i].text) and shape not in said_shapes:
                said_shapes.add(shape)  # one line of each shape: a cascade says it once
                worded.append(i)
        # Lines that say nothing went wrong are context, not the answer: the exit's
        # own line stays the error line then (context.failure_lines).
        said = worded[:_LAST_KEPT]
        for i in found[:_LAST_KEPT]:
            if i not in said:
                yield Hit(i, "output", NEARBY)
        for i in said:
            yield Hit(i, LAST_WORDS, EXPLAINS)


_DIFF_HEAD = re.compile(r"^(?:diff --git |diff -u |--- a/|--- \S+\t|@@ -\d)")
_DIFF_BODY = re.compile(r"^(?:[ +\-]|@@ |index [0-9a-f]|\\ No newline|new file mode|deleted file)")
_DIFF_LOOK = 400


def _diff_above(index: TextIndex, end: int) -> list[tuple[int, str]]:
    """(line, kind) of a diff that ends the step's output: its first header, its first
    changed line."""
    lines = index.lines
    head: int | None = None
    idx = end - 1
    while idx >= 0 and end - idx <= _DIFF_LOOK:
        text = lines[idx].text
        if _DIFF_HEAD.match(text):
            head = idx
        elif text.strip() and not _DIFF_BODY.match(text):
            break
        idx -= 1
    if head is None:
        return []
    while head > 0 and _DIFF_HEAD.match(lines[head - 1].text):
        head -= 1
    changed = next(
        (
            i
            for i in range(head + 1, end)
            if lines[i].text[:1] in "+-" and not lines[i].text.startswith(("+++", "---"))
        ),
        None,
    )
    out = [(head, LAST_WORDS)]
    if changed is not None:
        out.append((changed, MESSAGE))
    return out


def _headers(index: TextIndex) -> Iterable[tuple[Hit, ...]]:
    """Failure headers and the message under each: the first of each shape."""
    lines = index.lines
    shapes: set[str] = set()
    kept = 0
    for idx in candidates(index, _HEADER_HINTS):
        text = lines[idx].text
        if text.startswith("##[") or len(text) > 1000:
            continue
        if not _HEADER.match(text) or _NOT_HEADER.match(text) or is_wrapper(text):
            continue
        shape = _shape(text)
        if shape in shapes:
            continue
        shapes.add(shape)
        yield (Hit(idx, HEADER, NAMES), *_message(index, idx))
        kept += 1
        if kept >= _HEADERS_KEPT:
            return


def _shape(text: str) -> str:
    """A header's shape: its first words, without numbers and punctuation (``--- FAIL:
    TestA`` and ``--- FAIL: TestB`` differ; ``error[E0308]: mismatched types`` at two
    places is one)."""
    words = _SHAPE.sub(" ", text).split()
    return " ".join(words[:4])


def _message(index: TextIndex, idx: int) -> Iterable[Hit]:
    """The lines under a header that go on with it: indented deeper, or the next line
    when the header ends at its colon (``FAILED:`` then what)."""
    lines = index.lines
    text = lines[idx].text
    depth = len(text) - len(text.lstrip())
    bare = text.rstrip().endswith(":") or len(text.split()) <= 3
    taken = 0
    for nxt in range(idx + 1, min(len(lines), idx + 1 + _MESSAGE_LINES)):
        body = lines[nxt].text
        if not body.strip() or body.startswith("##["):
            break
        indent = len(body) - len(body.lstrip())
        if indent > depth or (bare and taken == 0):
            yield Hit(nxt, MESSAGE, EXPLAINS)
            taken += 1
            continue
        break


def earlier_cause(parsed: ParsedLog) -> tuple[Line, ...]:
    """When the failing step prints nothing of its own before its error (``run: test -f
    dist/app``, ``exit 1``, an action that only fails), the lines of the step before it
    that say something went wrong (a warning, an error it went on after): at most three,
    the last ones. Nothing when the failing step printed anything."""
    section = parsed.section
    if section is None or not section.before or parsed.first_error is None:
        return ()
    for line in parsed.region:
        if line.number >= parsed.first_error:
            break
        if not line.header and line.number != parsed.step_line and not _noise(line.text):
            return ()
    said = [
        line
        for line in section.before
        if line.text.startswith("##[warning]")
        or (
            not _noise(line.text)
            and not _HOUSEKEEPING.match(line.text)
            and not is_wrapper(line.text)
            and (error_words(line.text) or _WARNING.search(line.text) is not None)
        )
    ]
    return tuple(said[-_LAST_KEPT:])


# A step that passed says what went wrong as a warning.
_WARNING = re.compile(r"(?i)\bwarn(?:ing)?\b")
