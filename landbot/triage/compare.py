"""The failing step's lines that a passing run of the same job never printed.

A line the green run printed too (a deprecation warning, a retried download, a test that
logs ``Error:`` on purpose) cannot be why this run failed; a line new in the failing log
may be. ``fresh_lines`` finds the new ones; ``weigh`` demotes the recognisers' failure
lines that the baseline shows, so the error lines come from what is new. Pure functions.
"""

from __future__ import annotations

from collections.abc import Sequence

from landbot.triage.baseline import Baseline, line_key
from landbot.triage.context import EXPLAINS, FAILURE_KINDS, KNOWN, NAMES, Mark
from landbot.triage.log import Line, ParsedLog
from landbot.triage.recognisers import WRAPPER_KINDS
from landbot.triage.recognisers.annotation import is_exit_code

__all__ = ["FRESH", "KNOWN", "fresh_in_parsed", "fresh_lines", "seen_in", "weigh"]


def seen_in(line: Line, baselines: Sequence[Baseline], step: str | None) -> bool:
    """Whether some passing log printed this line (in the step of that title, when it
    has one)."""
    key = line_key(line.text)
    return any(b.seen(key, step) for b in baselines)


def fresh_lines(
    lines: Sequence[Line], baselines: Sequence[Baseline], step: str | None
) -> frozenset[int]:
    """Numbers of the output lines (not the step's header group) no baseline shows."""
    if not baselines:
        return frozenset(line.number for line in lines if not line.header)
    return frozenset(
        line.number
        for line in lines
        if not line.header and line.text.strip() and not seen_in(line, baselines, step)
    )


FRESH = "fresh"
# New lines taken from just above the runner's exit-code line when no recognised
# failure line is new.
_ABOVE_EXIT = 3


def weigh(
    marks: Sequence[Mark], fresh: frozenset[int], region: Sequence[Line] = ()
) -> tuple[Mark, ...]:
    """The marks with every failure line the baseline shows demoted to ``KNOWN``; the
    runner's exit-code annotation stays (no passing log has one). When no failure line is
    new, the new lines just above the first ``##[error]`` say why (``FRESH``); when
    there are none either, the marks stay as they are: the baseline does not tell."""
    stated = [m for m in marks if _states(m)]
    if any(m.line in fresh for m in stated):
        return tuple(
            Mark(m.line, KNOWN, EXPLAINS + 2, m.text, m.subject)
            if _states(m) and m.line not in fresh
            else m
            for m in marks
        )
    above = _fresh_above_error(region, fresh)
    if not above:
        return tuple(marks)
    by_line = {m.line: m for m in marks}
    for line in above:
        by_line[line.number] = Mark(line.number, FRESH, NAMES, line.text)
    for m in stated:
        if m.line not in fresh and m.line in by_line:
            by_line[m.line] = Mark(m.line, KNOWN, EXPLAINS + 2, m.text, m.subject)
    return tuple(sorted(by_line.values(), key=lambda m: m.line))


def _fresh_above_error(region: Sequence[Line], fresh: frozenset[int]) -> list[Line]:
    output = [line for line in region if not line.header]
    first = next((i for i, line in enumerate(output) if line.is_error), None)
    if first is None:
        return []
    found: list[Line] = []
    for line in reversed(output[:first]):
        if len(found) >= _ABOVE_EXIT:
            break
        if line.number in fresh and line.text.strip() and not line.text.startswith("##["):
            found.append(line)
    return found[::-1]


def _states(m: Mark) -> bool:
    if m.kind == "error" and is_exit_code(m.text):
        return False
    return m.kind in FAILURE_KINDS or m.kind in WRAPPER_KINDS


def fresh_in_parsed(parsed: ParsedLog, baselines: Sequence[Baseline]) -> frozenset[int]:
    """``fresh_lines`` of the failing step's region."""
    return fresh_lines(parsed.region, baselines, parsed.step_title)
