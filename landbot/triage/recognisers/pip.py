"""pip and Python packaging: ``ERROR: Could not find a version that satisfies …``,
``ERROR: No matching distribution found for …``, ``ERROR: ResolutionImpossible``, and
the ``error: metadata-generation-failed`` / ``error: subprocess-exited-with-error`` codes
pip prints when building a package failed."""

from __future__ import annotations

import re

from landbot.triage.recognisers.base import NAMES, PREFIX, Ecosystem, LineRule

ECOSYSTEM = Ecosystem(
    name="pip",
    recognisers=(
        LineRule(
            "pip-error",
            NAMES,
            ("ERROR: ", "error: "),
            re.compile(
                PREFIX + r"(?:ERROR: (?:Could not (?:find|install|build)|No matching distribution"
                r"|ResolutionImpossible|Cannot install|Failed building|Failed to build)"
                r"|error: [a-z]+(?:-[a-z]+)+$)"
            ),
        ),
    ),
    failure_kinds=frozenset({"pip-error"}),
)
