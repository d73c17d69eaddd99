"""git: a merge or rebase conflict (``CONFLICT (content): Merge conflict in x``), a
rejected push (``! [rejected]``), ``Could not apply <sha>…``, and the diff a check prints
when it fails because files changed (``git diff --exit-code``, pre-commit's
``--show-diff-on-failure``, a formatter's ``--diff``): each file's ``diff --git`` line,
its first hunk and first changed lines. git's ``error:`` and ``fatal:`` lines are the
compiler module's generic ``error:`` / tool lines."""

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
)

_DIFF = re.compile(r"^diff --git a/\S+ b/(?P<path>\S+)$")
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@")
_CHANGE = re.compile(r"^[-+](?![-+]{2} )")
_DIFF_FILES_MAX = 50
_DIFF_LOOK = 40
_CHANGES_MAX = 4


class _Diffs:
    """A diff says what the check wanted changed: context (never an error line: the
    check's own line or its exit code says that it failed)."""

    name = "diff-file"

    def find(self, index: TextIndex) -> Iterable[Hit]:
        lines = index.lines
        for count, (idx, m) in enumerate(grep(index, _DIFF, ("\ndiff --git ",))):
            if count >= _DIFF_FILES_MAX:
                return
            yield Hit(idx, "diff-file", EXPLAINS, m.group("path"))
            hunk = False
            changes = 0
            for nxt in range(idx + 1, min(len(lines), idx + _DIFF_LOOK)):
                text = lines[nxt].text
                if text.startswith("diff --git ") or changes >= _CHANGES_MAX:
                    break
                if not hunk:
                    if _HUNK.match(text):
                        hunk = True
                        yield Hit(nxt, "diff-hunk", SURROUNDS)
                elif _CHANGE.match(text):
                    changes += 1
                    yield Hit(nxt, "diff-change", SURROUNDS)
                elif _HUNK.match(text) or (text and not text.startswith((" ", "\\"))):
                    break  # the first hunk is over (or the diff is)


ECOSYSTEM = Ecosystem(
    name="git",
    recognisers=(
        LineRule(
            "git-conflict",
            NAMES,
            ("\nCONFLICT (",),
            re.compile(r"^CONFLICT \([\w/ -]+\): (?P<msg>.+)$"),
        ),
        LineRule("git-rejected", NAMES, (" ! [rejected]",), re.compile(r"^\s*! \[rejected\] ")),
        LineRule("git-apply", EXPLAINS, ("\nCould not apply ",), re.compile(r"^Could not apply ")),
        _Diffs(),
    ),
    failure_kinds=frozenset({"git-conflict", "git-rejected"}),
)
