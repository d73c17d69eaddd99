"""TypeScript's compiler: ``path(line,col): error TS2322: message`` (plain) and
``path:line:col - error TS2322: message`` (pretty), and its ``Found N errors`` line."""

from __future__ import annotations

import re

from landbot.triage.recognisers.base import EXPLAINS, NAMES, PREFIX, Ecosystem, LineRule, group

ECOSYSTEM = Ecosystem(
    name="tsc",
    recognisers=(
        LineRule(
            "tsc-error",
            NAMES,
            ("): error TS", " - error TS"),
            re.compile(PREFIX + r"(?P<where>\S+?(?:\(\d+,\d+\)|:\d+:\d+))(?::| -) error TS\d+: \S"),
            subject=lambda m: group(m, "where"),
        ),
        LineRule(
            "tsc-summary",
            EXPLAINS,
            ("\nFound ",),
            re.compile(r"^Found \d+ errors?\b"),
        ),
    ),
    failure_kinds=frozenset({"tsc-error"}),
)
