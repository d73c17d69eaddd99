"""unittest (and Django's and nose's runners built on it): ``FAIL: test (module.Class)``
headings, the ``FAILED (failures=N, errors=M)`` result and the ``Ran N tests`` line.

The subject is ``module.Class.test``: Python 3.11+ prints ``(module.Class.test)``, older
versions ``(module.Class)``; both give the same id.
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
    candidates,
    grep,
)

_HEADING = re.compile(r"^(?:FAIL|ERROR): (?P<name>[\w.]+) \((?P<where>[\w.]+)\)")


def test_id(name: str, where: str) -> str:
    return where if where == name or where.endswith("." + name) else f"{where}.{name}"


class _Heading:
    name = "unittest-failed"

    def find(self, index: TextIndex) -> Iterable[Hit]:
        for idx, m in grep(index, _HEADING, ("\nFAIL: ", "\nERROR: ")):
            yield Hit(idx, "unittest-failed", NAMES, test_id(m.group("name"), m.group("where")))


_REGRTEST = re.compile(r"^\d+ tests? failed:$")
_REGRTEST_NAMES_MAX = 50


class _Regrtest:
    """CPython's regrtest: ``2 tests failed:`` then the failed modules, indented, and
    ``Result: FAILURE``."""

    name = "regrtest-failed"

    def find(self, index: TextIndex) -> Iterable[Hit]:
        lines = index.lines
        for idx, _m in grep(index, _REGRTEST, (" failed:",)):
            yield Hit(idx, "regrtest-summary", EXPLAINS)
            for nxt in range(idx + 1, min(len(lines), idx + 1 + _REGRTEST_NAMES_MAX)):
                text = lines[nxt].text
                if not text[:1].isspace() or not text.strip():
                    break
                for name in text.split():
                    if name.startswith("test"):
                        yield Hit(nxt, "regrtest-failed", NAMES, name)
                        break
        for idx in candidates(index, ("\nResult: FAILURE",)):
            yield Hit(idx, "regrtest-result", EXPLAINS)


ECOSYSTEM = Ecosystem(
    name="unittest",
    recognisers=(
        _Heading(),
        LineRule(
            "unittest-result",
            EXPLAINS,
            ("\nFAILED (",),
            re.compile(r"^FAILED \((?:[\w ]+=\d+(?:, )?)+\)$"),
        ),
        LineRule("unittest-ran", SURROUNDS, ("\nRan ",), re.compile(r"^Ran \d+ tests? in ")),
        _Regrtest(),
    ),
    failure_kinds=frozenset({"unittest-failed", "regrtest-failed"}),
    test_kinds=frozenset({"unittest-failed", "regrtest-failed"}),
)
