"""The shell and the wrappers around a failed command.

``script.sh: line 3: pnpm: command not found`` and ``bash: x: command not found`` state
the failure. Lines that only say a command failed with a code (``make: *** […] Error 2``,
``ELIFECYCLE Command failed with exit code 1``, ``error Command failed with exit code 1.``,
``Error: running "go test" failed with exit code 1``, ``… returned non-zero exit status 2``)
are wrappers: error lines only when nothing better names the failure.
"""

from __future__ import annotations

import re

from landbot.triage.recognisers.base import EXPLAINS, NAMES, PREFIX, Ecosystem, LineRule

ECOSYSTEM = Ecosystem(
    name="shell",
    recognisers=(
        LineRule(
            "shell-error",
            NAMES,
            (": line ", "command not found"),
            re.compile(r"^(?:\S+: )?(?:line \d+: \S.*|\S+: command not found)$"),
        ),
        # A process that crashed: a signal, a failed C assertion, a fatal runtime error.
        LineRule(
            "crash",
            NAMES,
            ("Segmentation fault", "core dumped", "Assertion `", "Fatal Python error", "Aborted"),
            re.compile(
                r"Segmentation fault|\(core dumped\)|: Assertion `.*' failed\.?$|"
                r"^Fatal Python error: |^Aborted$"
            ),
        ),
        # A link checker's broken link: the URL, then a status or an error.
        LineRule(
            "url-failed",
            NAMES,
            ("\nhttp://", "\nhttps://"),
            re.compile(r"^https?://\S+: (?:[45]\d\d\b|\(|[A-Z]\w+(?:Error|Exception)\b)"),
        ),
        LineRule(
            "make-error",
            EXPLAINS,
            (": *** ",),
            re.compile(PREFIX + r"\S*make(?:\[\d+\])?: \*\*\* .*(?:Error \d+|Killed)"),
        ),
        LineRule(
            "exit-status",
            EXPLAINS,
            ("exit code", "exit status", "Exit code", "non-zero", "exited (", "exited with "),
            re.compile(
                r"^(?!##\[error\]).*?(?:exit(?:ed)?(?: with)? (?:code|status)|"
                r"returned (?:a )?non-zero(?: exit)?(?: code| status)?|exited \(|exited with)"
                r"[:= ]*(?!0\b)-?\d+",  # exit code 0 is success
                re.IGNORECASE,
            ),
        ),
    ),
    failure_kinds=frozenset({"shell-error", "crash", "url-failed"}),
    wrapper_kinds=frozenset({"make-error", "exit-status"}),
)
