"""RSpec (Ruby): ``rspec ./spec/foo_spec.rb:10 # Foo does bar`` under ``Failed examples:``
names a failed example; under its numbered heading in ``Failures:``, ``Failure/Error: …``
says what failed, ``expected:``/``got:`` the values, and the first ``# ./spec/…:12:in``
frame where; ``3 examples, 1 failure`` sums up.

The subject is ``file # description``: without the line number, which moves when the
file is edited.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from landbot.triage.log import TextIndex
from landbot.triage.recognisers.base import (
    EXPLAINS,
    NAMES,
    SURROUNDS,
    Ecosystem,
    Hit,
    LineRule,
    grep,
)

_FAILED = re.compile(r"^\s*rspec (?P<file>\S+?)(?::\d+|\[[\d:]+\]) # (?P<desc>\S.*)$")
_ERROR = re.compile(r"^\s+Failure/Error: \S")
_VALUE = re.compile(r"^\s+(?:expected|got):? \S")
_FRAME = re.compile(r"^\s+# (?P<where>\S+:\d+)(?::in |$)")
_LOOK = 20
_VALUES_MAX = 2


class _Failed:
    name = "rspec-failed"

    def find(self, index: TextIndex) -> Iterable[Hit]:
        for idx, m in grep(index, _FAILED, ("rspec ",)):
            yield Hit(idx, "rspec-failed", NAMES, f"{m.group('file')} # {m.group('desc').strip()}")


class _Errors:
    """``Failure/Error:``, the values under it, and its first frame."""

    name = "rspec-error"

    def find(self, index: TextIndex) -> Iterable[Hit]:
        lines = index.lines
        for idx, _m in grep(index, _ERROR, ("Failure/Error: ",)):
            yield Hit(idx, "rspec-error", EXPLAINS)
            values = 0
            for nxt in range(idx + 1, min(len(lines), idx + 1 + _LOOK)):
                text = lines[nxt].text
                frame = _FRAME.match(text)
                if frame is not None:
                    yield Hit(nxt, "rspec-location", SURROUNDS, frame.group("where"))
                    break
                if values < _VALUES_MAX and _VALUE.match(text):
                    values += 1
                    yield Hit(nxt, "rspec-value", EXPLAINS)


ECOSYSTEM = Ecosystem(
    name="rspec",
    recognisers=(
        _Failed(),
        _Errors(),
        LineRule(
            "rspec-summary",
            EXPLAINS,
            (" examples, ", " example, "),
            re.compile(r"^\s*\d+ examples?, [1-9]\d* failures?\b"),
        ),
    ),
    failure_kinds=frozenset({"rspec-failed"}),
    test_kinds=frozenset({"rspec-failed"}),
)
