"""Which lines of a failing step explain its error, and the bounded excerpt built from them.

The ``##[error]`` line often says only that a process exited non-zero; the explanation is
the tool's own output above it. The recognisers (``landbot.triage.recognisers``, one
module per ecosystem) mark those lines in the parser's region, each with a kind and a
priority; this module merges their marks, picks the *error lines* (the lines that state
the failure) and builds a bounded excerpt that keeps what names the failure before what
merely surrounds it. Pure functions over the parsed region.

Error lines, decided here once for every ecosystem:

- a line of a failure kind (a failed test, a compiler or lint error, a failed task, an
  ``##[error]`` with a message) is an error line, unless it repeats the text of an earlier
  one (nextest's end-of-run recap, a problem matcher annotating one message twice, jest's
  summary of failing tests);
- a wrapper, a line that only says a command failed with a code (``Process completed with
  exit code 1``, ``make: *** […] Error 2``), is an error line only when no failure line
  exists: the tool's wrappers first, the ``##[error]`` exit-code annotation last;
- a failure line an action printed in its clean-up group (``##[group]Terminate
  Emulator``) is a consequence of the failure before it: shown, not an error line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from landbot.triage import generic
from landbot.triage.log import Line, ParsedLog, TextIndex
from landbot.triage.recognisers import ECOSYSTEMS
from landbot.triage.recognisers import FAILURE_KINDS as _FAILURE_KINDS
from landbot.triage.recognisers import TEST_KINDS as _TEST_KINDS
from landbot.triage.recognisers import WRAPPER_KINDS as _WRAPPER_KINDS
from landbot.triage.recognisers.annotation import is_exit_code
from landbot.triage.recognisers.base import (
    ALWAYS,
    EXPLAINS,
    NAMES,
    NEARBY,
    SURROUNDS,
    Ecosystem,
    Hit,
    Mark,
    candidates,
    grep,
)

__all__ = [
    "ALWAYS",
    "EXCERPT_LINES",
    "EXCERPT_TEXT",
    "EXPLAINS",
    "FAILURE_KINDS",
    "GENERIC_KINDS",
    "KNOWN",
    "NAMES",
    "NEARBY",
    "SURROUNDS",
    "TEST_KINDS",
    "WRAPPER_KINDS",
    "ExcerptLine",
    "Mark",
    "build_excerpt",
    "failure_lines",
    "find_marks",
    "states",
]

EXCERPT_LINES = 40
EXCERPT_TEXT = 500

# Kinds that name a failed test (the flaky ledger's keys) and kinds that state a failure
# (error lines); every test kind is a failure kind.
TEST_KINDS: frozenset[str] = _TEST_KINDS
# The generic rules' kinds (generic.py) and a line only the failing run printed
# (compare.py): failure lines whatever the ecosystem.
GENERIC_KINDS: frozenset[str] = generic.FAILURE_KINDS | {"fresh"}
FAILURE_KINDS: frozenset[str] = _FAILURE_KINDS | _TEST_KINDS | GENERIC_KINDS
WRAPPER_KINDS: frozenset[str] = _WRAPPER_KINDS | generic.WRAPPER_KINDS


@dataclass(frozen=True, slots=True)
class ExcerptLine:
    line: int
    text: str

    def to_dict(self) -> dict[str, int | str]:
        return {"line": self.line, "text": self.text}


def _register_hints() -> None:
    """Run every recogniser once on an empty region: each names its hints to
    ``base.candidates``, which then finds all line-start hints of a region in one pass."""
    empty = TextIndex(())
    for ecosystem in ECOSYSTEMS:
        for recogniser in ecosystem.recognisers:
            for _hit in recogniser.find(empty):
                pass
    for _finding in generic.find(empty):
        pass
    candidates(empty, ("\n+", "\n##[error]"))


_register_hints()


KNOWN = "baseline"
"""The kind of a failure line a passing log of the same job printed too (compare.py):
shown when there is room, never an error line."""


def find_marks(
    parsed: ParsedLog,
    *,
    ecosystems: Sequence[Ecosystem] = ECOSYSTEMS,
    known: frozenset[int] = frozenset(),
) -> tuple[Mark, ...]:
    """Every recognised line of the failing step's output, in file order.

    A line two recognisers claim keeps the lower priority (at a tie, the recogniser listed
    first in ``recognisers.ECOSYSTEMS``, then the generic rules: generic.py).
    `ecosystems`: the recognisers to run (the corpus bench runs the generic rules alone,
    to see that they find the right lines without them). `known`: lines a passing log of
    the same job printed too: a recogniser's failure line among them is ``KNOWN``, and
    the generic rules skip them.
    """
    index = parsed.output
    marks: dict[int, Mark] = {}

    def put(hit: Hit) -> None:
        line = index.lines[hit.index]
        old = marks.get(line.number)
        if old is None or hit.priority < old.priority:
            marks[line.number] = Mark(line.number, hit.kind, hit.priority, line.text, hit.subject)

    at: dict[int, int] = {}
    for ecosystem in ecosystems:
        for recogniser in ecosystem.recognisers:
            for hit in recogniser.find(index):
                put(hit)
                at[index.lines[hit.index].number] = hit.index
    for number, m in list(marks.items()):
        if number in known and states(m):
            marks[number] = Mark(number, KNOWN, NEARBY, m.text, m.subject)
    if not any(states(m) for m in marks.values()):
        # No recogniser names the failure: the generic rules do (generic.py).
        # A line a recogniser states as a failure or a wrapper is its own; a line it only
        # shows (a diff's header, a detail) the generic rules may name.
        claimed = {
            n for n, m in marks.items() if m.kind in FAILURE_KINDS or m.kind in WRAPPER_KINDS
        } | known
        for finding in generic.find(index):
            if index.lines[finding[0].index].number in claimed:
                continue
            for hit in finding:
                line = index.lines[hit.index]
                if line.number not in claimed:
                    old = marks.get(line.number)
                    subject = old.subject if old is not None else ""
                    marks[line.number] = Mark(
                        line.number, hit.kind, hit.priority, line.text, subject
                    )
                    at.setdefault(line.number, hit.index)
    for hit in _continuations(
        index, [at[m.line] for m in marks.values() if m.kind in FAILURE_KINDS]
    ):
        put(hit)
    has_tool_marks = any(m.priority <= EXPLAINS and m.kind != "error" for m in marks.values())
    for idx, priority in _above_errors(index, has_tool_marks=has_tool_marks):
        put(Hit(idx, "output", priority))
    seen: set[tuple[str, str]] = set()
    for number, m in sorted(marks.items()):
        if m.kind in TEST_KINDS and m.subject:
            if (m.kind, m.subject) in seen:
                # The same test named again (a runner's recap, a retry): one failure.
                marks[number] = Mark(m.line, "test-repeat", EXPLAINS, m.text, m.subject)
            seen.add((m.kind, m.subject))
    for number in _tolerated(index, marks):
        old = marks[number]
        marks[number] = Mark(old.line, "tolerated", EXPLAINS, old.text, old.subject)
    for number in _in_cleanup(index, marks):
        old = marks[number]
        marks[number] = Mark(old.line, "cleanup", EXPLAINS, old.text, old.subject)
    for hit in _commands(index, marks):
        put(hit)
    for line in _inputs_named(parsed, marks.values()):
        marks.setdefault(line.number, Mark(line.number, "step-input", SURROUNDS, line.text))
    step = _step_header(parsed)
    if step is not None and step.number not in marks:
        # The command that ran: one line, shown when there is room.
        marks[step.number] = Mark(step.number, "step", SURROUNDS, step.text)
    return tuple(sorted(marks.values(), key=lambda m: m.line))


def states(m: Mark) -> bool:
    """A mark that states a failure (not a wrapper, not a bare exit-code annotation)."""
    return m.kind in FAILURE_KINDS and not (m.kind == "error" and is_exit_code(m.text))


_CONTINUATION_LINES = 3
_CONTINUED_MAX = 500


def _continuations(index: TextIndex, failures: list[int]) -> Iterable[Hit]:
    """The lines indented under a failure line go on with it (``go: verifying …`` then
    ``\tdownloaded: …``, a diagnostic's second line): they explain it."""
    lines = index.lines
    for idx in sorted(failures)[:_CONTINUED_MAX]:
        depth = _indent(lines[idx].text.removeprefix("##[error]"))
        for nxt in range(idx + 1, min(len(lines), idx + 1 + _CONTINUATION_LINES)):
            text = lines[nxt].text
            if not text.strip() or _indent(text) <= depth:
                break
            yield Hit(nxt, "detail", EXPLAINS)


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip())


# `+ cmd` of `set -x`; not npm's `+ pkg@1.2.3` (what it published or installed).
_XTRACE = re.compile(r"^\++ (?!@?[\w.-]+(?:/[\w.-]+)?@\d)\S")
# Failure kinds a script can go on after; a failed test or annotation is never demoted.
_TOLERABLE = frozenset({"compiler-error", "tool-error", "shell-error", "pip-error"})


def _tolerated(index: TextIndex, marks: dict[int, Mark]) -> list[int]:
    """Errors a ``set -x`` script went on after: an xtrace line (``+ cmd``) between such an
    error and a later failure line shows the script handled it (``git branch -D x ||
    echo …``), so the later failure is what stopped the step.

    The runner's ``Process completed with exit code N`` is no later failure: it reports
    the step's end, and an EXIT trap's xtrace lines (``+ cleanup``) come before it
    whatever stopped the script."""
    traces = [index.lines[i].number for i, _m in grep(index, _XTRACE, ("\n+",))]
    if not traces:
        return []
    failures = sorted(n for n, m in marks.items() if m.kind in FAILURE_KINDS)
    stated = [n for n in failures if not (marks[n].kind == "error" and is_exit_code(marks[n].text))]
    out: list[int] = []
    for n in failures:
        if marks[n].kind not in _TOLERABLE:
            continue
        later = next((f for f in stated if f > n), None)
        if later is not None and any(n < t < later for t in traces):
            out.append(n)
    return out


_GROUP = re.compile(r"^##\[group\](?P<title>.*)$")
_CLEANUP = re.compile(
    r"^\s*(?:Terminat|Stop|Kill|Remov|Clean|Tear|Shut|Post\b(?!-))", re.IGNORECASE
)


def _in_cleanup(index: TextIndex, marks: dict[int, Mark]) -> list[int]:
    """Failure lines inside an action's clean-up group (``##[group]Terminate Emulator``,
    ``Removing builder``, ``Cleaning up …``) after an earlier group of the step: the
    clean-up of work that already failed fails too (an emulator that never started
    refuses the connection that would kill it), a consequence: shown, never reported."""
    lines = index.lines
    groups = [(i, m) for i, m in grep(index, _GROUP, ("\n##[group]",))]
    out: list[int] = []
    for n, (start, m) in enumerate(groups):
        if n == 0 or not _CLEANUP.match(m.group("title")):
            continue
        end = groups[n + 1][0] if n + 1 < len(groups) else len(lines)
        for idx in range(start + 1, end):
            text = lines[idx].text
            if text.startswith("##[endgroup]"):
                break
            mark = marks.get(lines[idx].number)
            if (
                mark is not None
                and mark.kind != "error"
                and (mark.kind in FAILURE_KINDS or mark.kind in WRAPPER_KINDS)
            ):
                out.append(mark.line)
    return out


def _commands(index: TextIndex, marks: dict[int, Mark]) -> Iterable[Hit]:
    """The command that failed: the last ``+ cmd`` xtrace line before the first failure,
    and the runner's ``[command]…`` line above the first error (an action's command)."""
    failures = [n for n, m in marks.items() if m.kind in FAILURE_KINDS and m.kind != "error"]
    if failures:
        first = min(failures)
        traces = [i for i, _m in grep(index, _XTRACE, ("\n+",))]
        before = [i for i in traces if index.lines[i].number < first]
        if before:
            yield Hit(before[-1], "xtrace", SURROUNDS)
    for err in candidates(index, ("\n##[error]",))[:1]:
        for prev in range(err - 1, max(-1, err - _COMMAND_LOOK), -1):
            if index.lines[prev].text.startswith("[command]"):
                yield Hit(prev, "command", SURROUNDS)
                break


_COMMAND_LOOK = 20
_INPUT = re.compile(r"^\s+(?P<key>[A-Za-z_][\w-]*): ?(?P<value>.*)$")
_WORD = re.compile(r"[a-z][a-z0-9]{4,}")
_INPUTS_MAX = 3


def _inputs_named(parsed: ParsedLog, marks: Iterable[Mark]) -> list[Line]:
    """The failing step's inputs (``with:``, ``env:``) and script lines the failure's own
    words name: ``platforms: …`` under ``no match for platform``, an empty ``GH_TOKEN:``
    under ``set the GH_TOKEN environment variable``, the ``yes | make`` script line under
    ``yes: standard output: Broken pipe``. At most three, in header order."""
    header = [line for line in parsed.region if line.header and line.number != parsed.step_line]
    if not header:
        return []
    said = [m.text for m in marks if m.kind in FAILURE_KINDS or m.kind == "output"]
    words = {w.removesuffix("s") for t in said for w in _WORD.findall(t.lower())}
    tools = {t.split(":", 1)[0].strip() for t in said if ": " in t}
    raw = " ".join(said)
    out: list[Line] = []
    block = "script"
    for line in header:
        text = line.text
        if text in ("with:", "env:") or text.startswith("shell: "):
            block = text.rstrip(":") if text in ("with:", "env:") else "shell"
            continue
        m = _INPUT.match(text) if block in ("with", "env") else None
        if m is not None:
            # An action's input by a word of its name; an environment variable by its
            # whole name (runners set dozens whose words are everywhere).
            key = m.group("key")
            parts = {p.lower().removesuffix("s") for p in re.split(r"[-_]", key) if len(p) >= 5}
            if key in raw or (block == "with" and parts & words):
                out.append(line)
        elif block == "script":
            commands = {seg.split()[0] for seg in re.split(r"[|;&]+", line.text) if seg.split()}
            if commands & tools:
                out.append(line)
        if len(out) >= _INPUTS_MAX:
            break
    return out


def _step_header(parsed: ParsedLog) -> Line | None:
    if parsed.step_line is None:
        return None
    for line in parsed.region[:1] if parsed.region_truncated else parsed.region[:3]:
        if line.number == parsed.step_line:
            return line
    return None


def _above_errors(index: TextIndex, *, has_tool_marks: bool) -> Iterable[tuple[int, int]]:
    """Plain output just above each of the first errors: "the explanation is above it"."""
    lines = index.lines
    want = 3 if has_tool_marks else 8
    errors = candidates(index, ("\n##[error]",))[:3]
    for n, err in enumerate(errors):
        taken = 0
        idx = err - 1
        while idx >= 0 and taken < want:
            text = lines[idx].text.strip()
            if lines[idx].is_error:
                break
            if text and not text.startswith(("##[", "[command]")):
                if n == 0 and taken == 0 and text.endswith(":"):
                    # It introduces the errors ("Found 39 issues in the following files:").
                    yield idx, EXPLAINS
                else:
                    yield idx, SURROUNDS if n == 0 and not has_tool_marks else NEARBY
                taken += 1
            idx -= 1


_SPACE = re.compile(r"\s+")


def _said(text: str) -> str:
    """What a line says, for telling repeats apart: no annotation prefix, one space."""
    return _SPACE.sub(" ", text.removeprefix("##[error]")).strip()


def failure_lines(
    marks: Sequence[Mark], *, also: Iterable[int] = (), limit: int | None = None
) -> tuple[int, ...]:
    """The error lines (see the module's doc), with the `also` lines (the classifier's
    evidence), at most `limit` of them: those that name the failure first."""
    chosen: list[Mark] = []
    said: set[str] = set()
    for m in marks:
        if m.kind not in FAILURE_KINDS or (m.kind == "error" and is_exit_code(m.text)):
            continue
        key = _said(m.text)
        if key in said:
            continue  # a repeat of a failure already reported
        said.add(key)
        chosen.append(m)
    if not chosen:
        chosen = [m for m in marks if m.kind in WRAPPER_KINDS]
    if not chosen:
        chosen = [m for m in marks if m.kind == "error"]  # exit-code annotations
    ranked = sorted(chosen, key=lambda m: (m.priority, m.line))
    extra = sorted(set(also) - {m.line for m in chosen})
    lines = [*extra, *(m.line for m in ranked)]
    if limit is not None:
        lines = lines[:limit]
    return tuple(sorted(lines))


def build_excerpt(
    marks: Sequence[Mark],
    region: Sequence[Line],
    *,
    must: Iterable[int] = (),
    limit: int = EXCERPT_LINES,
) -> tuple[ExcerptLine, ...]:
    """At most `limit` lines, most telling first, shown in file order.

    The first and the last line of each kind keep their priority, even when the last
    repeats an earlier text (a runner's final recap); the others come after every kind's
    first and last (so the first failure's name, why and where, and the run's verdict,
    come before the tenth failure's name), the names among them first; and a line in the
    middle repeating an earlier one's text comes last: so 265 compiler errors cannot
    crowd out the first one's location.
    """
    text = {line.number: line.text for line in region}
    by_kind: dict[str, list[int]] = {}
    for m in marks:
        by_kind.setdefault(m.kind, []).append(m.line)
    ends = {n for lines in by_kind.values() for n in (lines[0], lines[-1])}
    ranked: list[tuple[int, int, int]] = [(ALWAYS, ALWAYS, n) for n in must if n in text]
    said: set[str] = set()
    for m in marks:
        key = _said(m.text)
        if m.line in ends or m.priority == ALWAYS:
            # The last of a kind keeps its place even as a repeat: a run's final recap.
            tier = m.priority
        elif key in said:
            tier = NEARBY + 1  # a repeat says nothing new: last
        else:
            # The middle of a kind: after the first failure's whole story (its name, why,
            # where), before mere surroundings; the many names among themselves first.
            tier = max(m.priority + 1, SURROUNDS)
        said.add(key)
        ranked.append((tier, m.priority, m.line))
    chosen: set[int] = set()
    for _priority, _rest, number in sorted(ranked):
        if len(chosen) >= limit:
            break
        chosen.add(number)
    return tuple(ExcerptLine(n, _shorten(text[n])) for n in sorted(chosen) if n in text)


def _shorten(text: str, limit: int = EXCERPT_TEXT) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
