"""PHPUnit, Pest and ``php artisan test``: ``FAILED  Tests\\Feature\\X > name`` (Pest and
Laravel's printer), PHPUnit's ``1) Tests\\XTest::testY`` under ``There was 1 failure:``,
the ``at tests/XTest.php:17`` location, and ``FAILURES!`` / ``Tests: 3, Failures: 1``.

The subject is the test as printed (``Tests\\Feature\\X > name`` or ``Class::method``).
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

_PEST = re.compile(r"^\s*(?:FAILED|FAIL|⨯)\s+(?P<name>[A-Z][\w\\]+\\\w+(?: > .+?)?)\s*$")
_HEADING = re.compile(r"^There (?:was|were) \d+ (?:failures?|errors?):$")
_NUMBERED = re.compile(r"^\d+\) (?P<name>[\w\\]+::\w+)")


class _Pest:
    """``FAILED  Tests\\X > test`` names a test; ``FAIL  Tests\\X`` only its class."""

    name = "phpunit-failed"

    def find(self, index: TextIndex) -> Iterable[Hit]:
        for idx, m in grep(index, _PEST, ("FAILED ", "FAIL ", "⨯ ")):
            name = group(m, "name").rstrip("…").strip()
            yield Hit(idx, "phpunit-failed" if " > " in name else "phpunit-class", NAMES, name)


class _PhpUnit:
    name = "phpunit-failed"

    def find(self, index: TextIndex) -> Iterable[Hit]:
        headings = candidates(index, ("\nThere was ", "\nThere were "))
        if not any(_HEADING.match(index.lines[i].text) for i in headings):
            return
        for idx, m in grep(index, _NUMBERED, (") ",)):
            if idx > headings[0]:
                yield Hit(idx, "phpunit-failed", NAMES, m.group("name"))


_AT = re.compile(r"^\s+at (?P<where>\S+\.php:\d+)$")


class _Location:
    """``  at tests/XTest.php:17``, and the exception's message printed above it."""

    name = "phpunit-location"

    def find(self, index: TextIndex) -> Iterable[Hit]:
        lines = index.lines
        for idx, m in grep(index, _AT, ("  at ",)):
            yield Hit(idx, "phpunit-location", EXPLAINS, m.group("where"))
            for prev in range(idx - 1, max(-1, idx - 4), -1):
                if lines[prev].text.strip():
                    yield Hit(prev, "phpunit-message", EXPLAINS)
                    break


ECOSYSTEM = Ecosystem(
    name="php",
    recognisers=(
        _Pest(),
        _PhpUnit(),
        _Location(),
        LineRule(
            "phpunit-summary",
            EXPLAINS,
            ("\nFAILURES!", "\nERRORS!", "\nTests: "),
            re.compile(r"^(?:FAILURES!|ERRORS!|Tests: \d+, Assertions: \d+, (?:Failures|Errors))"),
        ),
    ),
    failure_kinds=frozenset({"phpunit-failed", "phpunit-class"}),
    test_kinds=frozenset({"phpunit-failed"}),
)
