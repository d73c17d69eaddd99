"""JUnit results as Ant prints them and as JUnit XML reports show them in a log.

- Ant: ``[junit] Testcase: testBar(com.x.FooTest):	FAILED`` (or ``Caused an ERROR``) names
  the test; ``[junit] Test com.x.FooTest FAILED`` the class; ``[junit] Tests run: …``
  summarises.
- XML (a report printed with ``cat``, or by a summary action): a ``<testcase … name=…
  classname=…>`` followed by ``<failure`` or ``<error`` names the test.

The subject is ``package.Class.method``.
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
    candidates,
    grep,
    group,
)

_ANT_CASE = re.compile(
    r"\[junit\] Testcase: (?P<method>[\w$\[\]]+)\((?P<cls>[\w.$]+)\):\s*(?:FAILED|Caused an ERROR)"
)
_TESTCASE = re.compile(r"<testcase\b[^>]*>")
_ATTR = re.compile(r'\b(name|classname)="([^"]*)"')
_FAILURE = re.compile(r"<(?:failure|error)\b")


class _Ant:
    name = "junit-failed"

    def find(self, index: TextIndex) -> Iterable[Hit]:
        for idx, m in grep(index, _ANT_CASE, ("[junit] Testcase: ",)):
            yield Hit(idx, "junit-failed", NAMES, f"{m.group('cls')}.{m.group('method')}")


class _Xml:
    """A ``<testcase>`` whose next lines (or itself) hold ``<failure``/``<error``."""

    name = "junit-xml-failed"

    def find(self, index: TextIndex) -> Iterable[Hit]:
        lines = index.lines
        failures = set(candidates(index, ("<failure", "<error")))
        if not failures:
            return
        for idx, m in grep(index, _TESTCASE, ("<testcase",)):
            if _FAILURE.search(lines[idx].text, m.end()):
                at: int | None = idx
            elif m.group(0).endswith("/>") or "</testcase>" in lines[idx].text:
                continue  # a test case without a failure in its body passed
            else:
                at = None
                for i in range(idx + 1, min(len(lines), idx + 3)):
                    if i in failures:
                        at = i
                        break
                    if "<testcase" in lines[i].text or "</testcase>" in lines[i].text:
                        break
            if at is None:
                continue
            attrs = dict(_ATTR.findall(m.group(0)))
            name, cls = attrs.get("name", ""), attrs.get("classname", "")
            yield Hit(idx, "junit-xml-failed", NAMES, f"{cls}.{name}" if cls else name)
            if at != idx:
                yield Hit(at, "junit-xml-failure", EXPLAINS)


ECOSYSTEM = Ecosystem(
    name="junit",
    recognisers=(
        _Ant(),
        _Xml(),
        LineRule(
            "junit-class-failed",
            EXPLAINS,
            ("[junit] Test ",),
            re.compile(r"\[junit\] Test (?P<cls>[\w.$]+) FAILED"),
            subject=lambda m: group(m, "cls"),
        ),
        LineRule(
            "junit-summary",
            EXPLAINS,
            ("[junit] Tests run: ",),
            re.compile(
                r"\[junit\] Tests run: \d+, Failures: [1-9]|\[junit\] Tests run: \d+, "
                r"Failures: \d+, Errors: [1-9]"
            ),
        ),
    ),
    failure_kinds=frozenset({"junit-failed", "junit-xml-failed"}),
    test_kinds=frozenset({"junit-failed", "junit-xml-failed"}),
)
