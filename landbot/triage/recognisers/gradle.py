"""Gradle: ``> Task :app:compileJava FAILED`` names what failed; ``* What went wrong:`` and
the lines under it (``Execution failed for task …``, ``> cause``) explain it; Gradle's test
logging prints ``com.x.FooTest > testBar() FAILED``; ``BUILD FAILED in 12s`` and ``There
were failing tests`` only say the build failed (wrappers).

A second ``What went wrong`` (a diagnostic script run after the failure) is context, never
an error line: only the failed tasks and tests are.
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

_WRONG = re.compile(r"^\* What went wrong:$")
_BLOCK_MAX = 12


class _WhatWentWrong:
    name = "gradle-what"

    def find(self, index: TextIndex) -> Iterable[Hit]:
        lines = index.lines
        for idx, _m in grep(index, _WRONG, ("\n* What went wrong:",)):
            yield Hit(idx, "gradle-wrong", SURROUNDS)
            taken = 0
            for nxt in range(idx + 1, min(len(lines), idx + 1 + 2 * _BLOCK_MAX)):
                text = lines[nxt].text
                if text.startswith("* ") or taken >= _BLOCK_MAX:
                    break
                if text.strip():
                    taken += 1
                    yield Hit(nxt, "gradle-what", EXPLAINS)


ECOSYSTEM = Ecosystem(
    name="gradle",
    recognisers=(
        LineRule(
            "gradle-task-failed",
            NAMES,
            ("\n> Task ",),
            re.compile(r"^> Task (?P<task>\S+) FAILED$"),
            subject=lambda m: group(m, "task"),
        ),
        LineRule(
            "gradle-test-failed",
            NAMES,
            (" FAILED",),
            re.compile(r"^(?P<cls>[\w.$]+(?:\[\w+\])?) > (?P<method>.+?) FAILED$"),
            subject=lambda m: f"{group(m, 'cls')}.{group(m, 'method').removesuffix('()')}",
        ),
        _WhatWentWrong(),
        LineRule(
            "gradle-failure",
            EXPLAINS,
            ("\nFAILURE: ",),
            re.compile(r"^FAILURE: Build (?:failed|completed with \d+ failures?)"),
        ),
        LineRule(
            "gradle-build-failed",
            EXPLAINS,
            ("\nBUILD FAILED", "There were failing tests"),
            re.compile(r"^(?:BUILD FAILED in |There were failing tests)"),
        ),
        LineRule(
            "gradle-tests-summary",
            EXPLAINS,
            (" tests completed, ",),
            re.compile(r"^\d+ tests completed, \d+ failed"),
        ),
    ),
    failure_kinds=frozenset({"gradle-task-failed", "gradle-test-failed"}),
    test_kinds=frozenset({"gradle-test-failed"}),
    wrapper_kinds=frozenset({"gradle-build-failed"}),
)
