"""landbot's own quest check: ``quest: <path>: <message>`` findings (policy)."""

from __future__ import annotations

import re

from landbot.triage.recognisers.base import NAMES, SURROUNDS, Ecosystem, LineRule, group

ECOSYSTEM = Ecosystem(
    name="quest",
    recognisers=(
        # "(already on the base)" is not the change's finding.
        LineRule(
            "quest",
            NAMES,
            ("\nquest: ",),
            re.compile(r"^quest: (?P<path>[^:]+): (?!\(already on the base\))(?P<msg>.+)$"),
            subject=lambda m: group(m, "path"),
        ),
        LineRule(
            "quest-base",
            SURROUNDS,
            ("(already on the base)",),
            re.compile(r"^quest: [^:]+: \(already on the base\)"),
        ),
    ),
    failure_kinds=frozenset({"quest"}),
)
