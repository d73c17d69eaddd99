"""Helpers for the recogniser tests: real log lines, and what a recogniser makes of them.

Fixtures are excerpts of real logs: line ranges of the corpus in ``tests/triage/real/``
(read from the file itself, so the line numbers are the file's), or short excerpts of
other public logs pasted with their origin in a comment. No log line is invented.
"""

from __future__ import annotations

from pathlib import Path

from landbot.triage.log import Line, TextIndex, clean_line
from landbot.triage.recognisers.base import Ecosystem

REAL = Path(__file__).resolve().parents[1] / "real"


def corpus(path: str, first: int, last: int) -> TextIndex:
    """Lines `first`..`last` (1-based, inclusive) of a corpus log, cleaned as the parser
    cleans them (no timestamp, no colours)."""
    raw = (REAL / path).read_bytes().split(b"\n")
    return TextIndex(tuple(Line(n, clean_line(raw[n - 1])) for n in range(first, last + 1)))


def pasted(text: str, first: int = 1) -> TextIndex:
    """An excerpt pasted in a test (its origin cited there), numbered from `first`."""
    return TextIndex(
        tuple(Line(n, clean_line(raw.encode())) for n, raw in enumerate(text.split("\n"), first))
    )


def found(ecosystem: Ecosystem, index: TextIndex) -> dict[int, tuple[str, str]]:
    """{line number: (kind, subject)} of what the ecosystem's recognisers mark; a line two
    of them claim keeps the lower priority, as ``context.find_marks`` does."""
    best: dict[int, tuple[int, str, str]] = {}
    for recogniser in ecosystem.recognisers:
        for hit in recogniser.find(index):
            number = index.lines[hit.index].number
            if number not in best or hit.priority < best[number][0]:
                best[number] = (hit.priority, hit.kind, hit.subject)
    return {n: (kind, subject) for n, (_p, kind, subject) in sorted(best.items())}


def kinds(ecosystem: Ecosystem, index: TextIndex) -> dict[int, str]:
    return {n: kind for n, (kind, _s) in found(ecosystem, index).items()}


def failures(ecosystem: Ecosystem, index: TextIndex) -> dict[int, str]:
    """{line: subject} of the lines of a failure kind (error lines)."""
    failing = ecosystem.failure_kinds | ecosystem.test_kinds
    return {n: s for n, (k, s) in found(ecosystem, index).items() if k in failing}
