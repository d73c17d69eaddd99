"""What every recogniser shares: the mark it yields, priorities, and the line rule.

A recogniser reads the failing step's output (a ``TextIndex``) and yields ``Hit``s: the
index of a line, its kind, its priority, and what the line names (``subject``). It must
find its candidate lines with literal hints (``candidates``/``grep`` here, which share
each hint's C-speed search between recognisers) and run its regular expression only on
those: the region can be 20 MB.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

from landbot.triage.log import TextIndex

# Priorities: lower is kept first in the excerpt.
ALWAYS = -1  # the decisive evidence and the first error
NAMES = 0  # a line that names what failed
EXPLAINS = 1  # a line that says why
SURROUNDS = 2  # headings, summaries, locations
NEARBY = 3  # plain output just above an error


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
class Hit:
    """A recognised line: its index in ``TextIndex.lines``, not its file line number."""

    index: int
    kind: str
    priority: int
    subject: str = ""


class Recogniser(Protocol):
    @property
    def name(self) -> str: ...

    def find(self, index: TextIndex) -> Iterable[Hit]: ...


Subject = Callable[[re.Match[str]], str]


@dataclass(frozen=True)
class LineRule:
    """One kind of line: the pattern runs on each line holding one of the hints."""

    kind: str
    priority: int
    hints: tuple[str, ...]
    pattern: re.Pattern[str]
    subject: Subject | None = None

    @property
    def name(self) -> str:
        return self.kind

    def find(self, index: TextIndex) -> Iterable[Hit]:
        for idx, m in grep(index, self.pattern, self.hints):
            yield Hit(idx, self.kind, self.priority, self.subject(m) if self.subject else "")


@dataclass(frozen=True)
class Ecosystem:
    """One module's contribution: its recognisers, and which of its kinds state a
    failure (error lines) or name a failed test (the flaky ledger's keys)."""

    name: str
    recognisers: tuple[Recogniser, ...]
    failure_kinds: frozenset[str] = frozenset()
    test_kinds: frozenset[str] = frozenset()
    wrapper_kinds: frozenset[str] = frozenset()
    """Kinds that only say a process failed (an exit code): error lines only when
    nothing better names the failure."""


# Hints shared by several recognisers are searched once per region.
_FOUND: weakref.WeakKeyDictionary[TextIndex, dict[str, list[int]]] = weakref.WeakKeyDictionary()
# Roots: substrings many hints hold. A hint holding a root is looked for among the lines
# that hold the root (found once, at C speed) instead of in the whole text again.
_ROOTS = ("FAIL", "ERROR", "rror", "xit", "fail", "Test", "ndefined")
# Line-start hints (``\nFAIL: ``) are all found in one pass: a regular expression that
# starts with the literal ``\n`` is tried only where a line starts, at C speed.
_LINE_HINTS: dict[str, None] = {}
_LINE_PATTERN: list[re.Pattern[str]] = []
_PRIMED = "\n"  # the key under which a region records that its line hints are found


def _covers(root: str, hint: str) -> bool:
    return root != hint and root in hint


def candidates(index: TextIndex, hints: Iterable[str]) -> list[int]:
    """``index.candidates(hints)``, each hint's search done once per region."""
    hints = tuple(hints)
    for hint in hints:
        if hint.startswith("\n") and hint not in _LINE_HINTS:
            _LINE_HINTS[hint] = None
            _LINE_PATTERN.clear()
    if not index.lines:
        return []
    found = _FOUND.setdefault(index, {})
    lines = index.lines
    out: set[int] = set()
    for hint in hints:
        hit = found.get(hint)
        if hit is None and hint.startswith("\n"):
            _prime_lines(index, found)
            hit = found.get(hint)
        if hit is None and not hint.isascii() and index.text.isascii():
            hit = found[hint] = []  # `●`, `×`: not in a region of ASCII text
        if hit is None:
            root = next((r for r in _ROOTS if _covers(r, hint)), None)
            if root is None:
                hit = index.candidates((hint,))
            else:
                among = found.get(root)
                if among is None:
                    among = found[root] = index.candidates((root,))
                hit = [i for i in among if hint in lines[i].text]
            found[hint] = hit
        out.update(hit)
    return sorted(out)


def _prime_lines(index: TextIndex, found: dict[str, list[int]]) -> None:
    """Find every registered line-start hint in one pass over the region."""
    if _PRIMED in found:
        return
    found[_PRIMED] = []
    if not _LINE_PATTERN:
        heads = sorted({h[1:] for h in _LINE_HINTS}, key=len, reverse=True)
        _LINE_PATTERN.append(re.compile("\n(?:" + "|".join(map(re.escape, heads)) + ")"))
    lines = index.lines
    starting: dict[str, list[int]] = {}
    last = -1
    for m in _LINE_PATTERN[0].finditer(index.text):
        idx = index.index_at(m.start() + 1)
        if idx != last:
            last = idx
            starting.setdefault(lines[idx].text[:1], []).append(idx)
    for hint in _LINE_HINTS:
        head = hint[1:]
        found[hint] = [i for i in starting.get(head[:1], ()) if lines[i].text.startswith(head)]


def grep(
    index: TextIndex, pattern: re.Pattern[str], hints: Iterable[str]
) -> Iterable[tuple[int, re.Match[str]]]:
    """``index.grep``, over the shared hint searches."""
    lines = index.lines
    for idx in candidates(index, hints):
        m = pattern.search(lines[idx].text)
        if m is not None:
            yield idx, m


def group(m: re.Match[str], name: str) -> str:
    return (m.group(name) or "").strip()


def scan(index: TextIndex, finder: re.Pattern[str], line: re.Pattern[str]) -> Iterable[int]:
    """Indexes of the lines where `finder` (an unanchored pattern that starts with a
    literal, so the engine skips ahead at C speed) occurs and `line` then matches."""
    last = -1
    for m in finder.finditer(index.text):
        idx = index.index_at(m.start())
        if idx <= last or idx < 0:
            continue
        last = idx
        if line.search(index.lines[idx].text):
            yield idx


# A build tool's elapsed-time prefix (``mach``: ``131:32.79 ``, BuildKit: ``#9 469.3 ``),
# and a problem matcher's
# ``##[error]`` that replaced the tool's own line: both may precede a diagnostic.
PREFIX = r"^(?:##\[error\])?(?:#\d+ \d+\.\d+ +)?(?:\d+:\d\d(?:\.\d+)? )?"
