"""The ``##[error]`` annotation itself.

An annotation with a message (a problem matcher's ``file:line: message``, an action's
``core.setFailed``) states the failure. ``Process completed with exit code N`` and ``The
process '…' failed with exit code N`` only say that a process failed: they are *wrappers*,
error lines only when nothing better names the failure (see ``context.failure_lines``);
they keep the kind ``error`` (the classifier and the summary read it) and
``is_exit_code`` tells them apart.
A problem matcher that annotates the same message twice (a tool printing it, then its
exception repeating it) gives one failure: repeats are dropped there too.
"""

from __future__ import annotations

import re

from landbot.triage.recognisers.base import NAMES, Ecosystem, LineRule

_EXIT = re.compile(
    r"^##\[error\](?:Process completed with exit code -?\d+|"
    r"The process '[^']*' failed with exit code -?\d+|"
    r"(?:Error: )?Process completed with exit code -?\d+|"
    r"Failed with exit code:? -?\d+)\.?$"
)

ECOSYSTEM = Ecosystem(
    name="annotation",
    recognisers=(LineRule("error", NAMES, ("\n##[error]",), re.compile(r"^##\[error\]")),),
    failure_kinds=frozenset({"error"}),
)


def is_exit_code(text: str) -> bool:
    """Whether an annotation only says a process exited non-zero (a wrapper)."""
    return _EXIT.match(text) is not None
