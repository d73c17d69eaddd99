"""Maven and Surefire/Failsafe: the per-test ``<<< FAILURE!`` / ``<<< ERROR!`` lines, the
``Tests run: …, Failures: N`` lines, the ``[ERROR]   Class.method:42 message`` results,
``[ERROR] path/Foo.java:[12,5] message`` compiler errors, and ``Failed to execute goal``
(a wrapper: it says which plugin failed, not why).

The subject is ``package.Class.method``: Surefire 3 prints ``package.Class.method``,
Surefire 2 ``method(package.Class)``; both give the same id.
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
    group,
)

_LEVEL = r"^\[(?:ERROR|INFO|WARNING)\] "
_TEST = re.compile(
    r"^(?:\[(?:ERROR|INFO|WARNING)\] )?"  # Surefire 2 prints no level
    r"(?:(?P<method>[\w$\[\]]+)\((?P<cls>[\w.$]+)\)|(?P<full>[\w.$]+(?:\[[^\]]*\])?))"
    r"\s+Time elapsed: [\d.,]+ s(?:ec)?\s+<<< (?:FAILURE|ERROR)!"
)
_CLASS = re.compile(
    _LEVEL + r"Tests run: \d+, Failures: \d+, Errors: \d+, Skipped: \d+.*<<< (?:FAILURE|ERROR)!"
)


class _Tests:
    name = "surefire-failed"

    def find(self, index: TextIndex) -> Iterable[Hit]:
        for idx, m in grep(index, _TEST, ("<<< FAILURE!", "<<< ERROR!")):
            if m.group("full"):
                subject = m.group("full")
            else:
                subject = f"{m.group('cls')}.{m.group('method')}"
            yield Hit(idx, "surefire-failed", NAMES, subject)


ECOSYSTEM = Ecosystem(
    name="maven",
    recognisers=(
        _Tests(),
        LineRule("surefire-class", EXPLAINS, ("<<< FAILURE!", "<<< ERROR!"), _CLASS),
        LineRule(
            "surefire-result",
            EXPLAINS,
            ("\n[ERROR]   ",),
            re.compile(r"^\[ERROR\]   (?P<where>[\w.$]+(?:\.[\w$]+)?:\d+)\b"),
            subject=lambda m: group(m, "where"),
        ),
        LineRule(
            "surefire-summary",
            EXPLAINS,
            ("\n[ERROR] Tests run:", "\n[WARNING] Tests run:"),
            re.compile(_LEVEL + r"Tests run: \d+, Failures: \d+, Errors: \d+, Skipped: \d+$"),
        ),
        LineRule(
            "maven-compiler-error",
            NAMES,
            ("\n[ERROR] ",),
            re.compile(r"^\[ERROR\] (?P<where>\S+\.(?:java|kt|scala|groovy)):\[\d+(?:,\d+)?\] "),
            subject=lambda m: group(m, "where"),
        ),
        LineRule(
            "maven-goal-failed",
            EXPLAINS,
            ("\n[ERROR] Failed to execute goal",),
            re.compile(r"^\[ERROR\] Failed to execute goal "),
        ),
        # The reactor summary's failed module, and Maven's own error line.
        LineRule(
            "maven-module-failed",
            NAMES,
            (" FAILURE [",),
            re.compile(r"^\[INFO\] (?P<module>\S.*?) \.+ FAILURE \["),
            subject=lambda m: group(m, "module"),
        ),
        LineRule(
            "maven-error",
            NAMES,
            ("-> [Help ",),
            re.compile(r"^\[ERROR\] (?!Failed to execute goal)\S.* -> \[Help \d+\]$"),
        ),
        LineRule(
            "maven-build-failure",
            SURROUNDS,
            ("\n[INFO] BUILD FAILURE",),
            re.compile(r"^\[INFO\] BUILD FAILURE$"),
        ),
    ),
    failure_kinds=frozenset(
        {
            "surefire-failed",
            "surefire-result",
            "maven-compiler-error",
            "maven-module-failed",
            "maven-error",
        }
    ),
    test_kinds=frozenset({"surefire-failed"}),
    wrapper_kinds=frozenset({"maven-goal-failed"}),
)
