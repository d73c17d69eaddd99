"""Patterns matched in time linear in the text: RE2 (`google-re2`), typed.

Python's `re` backtracks, so a pattern such as `(?:a|a)*b` or `.*.*.*=x` can take
exponential or high-polynomial time on a long line. A pattern written by someone other than
the host's operator (a repository's `[[triage.rules]]`, its protected-path globs) is
compiled here instead: RE2 has no backtracking, so matching is linear in the text for every
pattern it accepts, at the price of no lookaround, backreferences, atomic groups or
possessive quantifiers (it refuses those at compile time).

    pattern = compile_linear(r"ECONNRESET \\d+", multiline=True)  # LinearError: one line
    pattern.search(text)                                        # LinearMatch | None
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, Protocol

import re2

__all__ = [
    "LinearError",
    "LinearMatch",
    "LinearPattern",
    "Searchable",
    "Spanned",
    "compile_linear",
]


class LinearError(ValueError):
    """RE2 refused a pattern; the message is one line (`why; the fix`)."""


class Spanned(Protocol):
    """What a match offers whichever engine made it (`re.Match[str]` is one)."""

    def start(self) -> int: ...

    def end(self) -> int: ...

    def group(self) -> str: ...


class Searchable(Protocol):
    """A compiled pattern whichever engine made it (`re.Pattern[str]` is one)."""

    def finditer(self, string: str, /) -> Iterator[Spanned]: ...


class LinearMatch:
    """One RE2 match: the spans of the whole match (typed over the binding's object)."""

    __slots__ = ("_m",)

    def __init__(self, m: Any) -> None:
        self._m = m

    def start(self) -> int:
        return int(self._m.start())

    def end(self) -> int:
        return int(self._m.end())

    def group(self) -> str:
        return str(self._m.group())


class LinearPattern:
    """A pattern compiled by RE2: `search`, `match`, `fullmatch`, `finditer` as `re`'s."""

    __slots__ = ("_re", "pattern")

    def __init__(self, compiled: Any, pattern: str) -> None:
        self._re = compiled
        self.pattern = pattern

    def search(self, string: str) -> LinearMatch | None:
        m = self._re.search(string)
        return None if m is None else LinearMatch(m)

    def match(self, string: str) -> LinearMatch | None:
        m = self._re.match(string)
        return None if m is None else LinearMatch(m)

    def fullmatch(self, string: str) -> LinearMatch | None:
        m = self._re.fullmatch(string)
        return None if m is None else LinearMatch(m)

    def finditer(self, string: str, /) -> Iterator[LinearMatch]:
        for m in self._re.finditer(string):
            yield LinearMatch(m)

    def __repr__(self) -> str:
        return f"LinearPattern({self.pattern!r})"


# RE2's refusals of what only a backtracking engine has, by the text of its error.
_BACKTRACKING = (
    (re.compile(r"invalid perl operator: \(\?<?[=!]"), "lookaround"),
    (re.compile(r"invalid escape sequence: \\[1-9]"), "backreferences"),
    (re.compile(r"invalid perl operator: \(\?P$"), "backreferences"),  # (?P=name)
    (re.compile(r"invalid perl operator: \(\?>"), "atomic groups"),
    (re.compile(r"bad repetition operator: \S*[*+?}]\+$"), "possessive quantifiers"),
)


# RE2's memory for one pattern (its program and its lazily built DFA; past it RE2 falls back
# to a slower, still linear, automaton): 2 MB rather than 8, as a repository has 50 rules.
MAX_MEM = 2 << 20


def _options() -> Any:
    options = re2.Options()
    options.log_errors = False  # the error is raised to the caller; nothing on stderr
    options.max_mem = MAX_MEM
    return options


def compile_linear(pattern: str, *, multiline: bool = False) -> LinearPattern:
    """`pattern` compiled by RE2 (`multiline`: `^` and `$` at each line, as `re.M`).
    LinearError (one line: what RE2 refused and the fix) when it cannot."""
    source = f"(?m){pattern}" if multiline else pattern
    try:
        compiled = re2.compile(source, _options())
    except re2.error as exc:
        raw = exc.args[0] if exc.args else exc
        why = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
        if multiline:
            why = why.replace(source, pattern)  # RE2 quotes the source: not the (?m) we added
        for test, what in _BACKTRACKING:
            if test.search(why):
                raise LinearError(
                    f"it uses {what} ({why}); RE2 has no lookaround/backreferences, so write "
                    "the pattern without them"
                ) from None
        raise LinearError(f"not a pattern RE2 compiles ({why}); fix it") from None
    return LinearPattern(compiled, pattern)
