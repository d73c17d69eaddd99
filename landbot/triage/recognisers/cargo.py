"""cargo test and cargo nextest: ``test path::to::t ... FAILED``, nextest's
``FAIL [ 1.6s] binary path::to::t``, the ``thread 't' panicked at file:line:col:`` line and
its message, ``test result: FAILED.`` and nextest's ``Summary`` line. cargo's own
``error: test failed, to rerun pass …`` only says a test binary failed (a wrapper).

The subject is the test path as printed (nextest: ``binary path``), without durations.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from landbot.triage.log import TextIndex
from landbot.triage.recognisers.base import (
    EXPLAINS,
    NAMES,
    Ecosystem,
    Hit,
    LineRule,
    grep,
)

_CARGO_FAILED = re.compile(r"^test (?P<name>\S+) \.\.\. FAILED$")
_NEXTEST = re.compile(
    r"^[ \t]*(?:FAIL|TIMEOUT|SIG[A-Z]+|ABORT) \[[ >\d.]+s\] (?P<id>\S+(?: \S+)?)$"
)


class _Tests:
    """``test a::b ... FAILED``; and nextest's ``FAIL [ 1.6s] binary a::b``, under which
    nextest shows the test binary's own output again: that inner ``test a::b ... FAILED``
    is the same failure, context."""

    name = "cargo-failed"

    def find(self, index: TextIndex) -> Iterable[Hit]:
        nextest: set[str] = set()
        for idx, m in grep(index, _NEXTEST, ("s] ",)):
            ident = m.group("id")
            nextest.add(ident.rsplit(" ", 1)[-1])
            yield Hit(idx, "nextest-failed", NAMES, ident)
        for idx, m in grep(index, _CARGO_FAILED, (" ... FAILED",)):
            name = m.group("name")
            if name in nextest:
                yield Hit(idx, "cargo-failed-echo", EXPLAINS, name)
            else:
                yield Hit(idx, "cargo-failed", NAMES, name)


_PANIC = re.compile(r"^thread '(?P<name>[^']*)' panicked at ")
_MESSAGE_LINES = 3


class _Panics:
    """The panic line, and the message lines under it (Rust 1.73+ prints it there)."""

    name = "cargo-panic"

    def find(self, index: TextIndex) -> Iterable[Hit]:
        lines = index.lines
        for idx, _m in grep(index, _PANIC, ("panicked at",)):
            yield Hit(idx, "cargo-panic", EXPLAINS)
            for nxt in range(idx + 1, min(len(lines), idx + 1 + _MESSAGE_LINES)):
                text = lines[nxt].text
                if not text.strip() or text.startswith(("note:", "stack backtrace:", "test ")):
                    break
                yield Hit(nxt, "cargo-panic-message", EXPLAINS)


ECOSYSTEM = Ecosystem(
    name="cargo",
    recognisers=(
        _Tests(),
        _Panics(),
        LineRule(
            "cargo-summary",
            EXPLAINS,
            ("\ntest result: FAILED",),
            re.compile(r"^test result: FAILED\."),
        ),
        LineRule(
            "nextest-summary",
            EXPLAINS,
            ("Summary [",),
            re.compile(r"^[ \t]*Summary \[[ \d.]+s\] .*\b\d+ (?:failed|timed out)"),
        ),
        LineRule(
            "cargo-wrapper",
            EXPLAINS,
            ("\nerror: test", "\nerror: could not compile"),
            re.compile(r"^error: (?:test failed|test run failed|could not compile )"),
        ),
    ),
    failure_kinds=frozenset({"cargo-failed", "nextest-failed", "cargo-panic"}),
    test_kinds=frozenset({"cargo-failed", "nextest-failed"}),
    wrapper_kinds=frozenset({"cargo-wrapper"}),
)
