"""Dependabot's updater (``github/dependabot-action``): the job's own ``##[error]`` only
says "Dependabot encountered an error performing the update"; why is in the updater's log.

- ``updater | … ERROR <job_N> message`` states an error (its Ruby backtrace, one
  ``ERROR <job_N> /path.rb:12:in `m'`` line per frame, is not marked);
- the updater's last lines before it posts ``record_update_job_error`` to its proxy say
  why when the error is an expected one (``Pull request already exists for axios with
  latest version 1.8.2``, ``The earliest fixed version is 0.7.0.``), logged at ``INFO``;
- the ``Results:`` table under ``Dependabot encountered '1' error(s)`` names each error
  type (``| dependency_file_not_found |``, ``| axios | pull_request_exists_for_… |``).
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
    candidates,
    grep,
)

# The updater's lines; its `updater | ` prefix is missing where two streams interleave.
_UPDATER = re.compile(
    r"^(?:\s*updater \| )?\d{4}/\d\d/\d\d \d\d:\d\d:\d\d (?P<level>INFO|WARN|ERROR) "
    r"<job_\d+> (?P<msg>.*)$"
)
_FRAME = re.compile(r"^\S+:\d+:in [`']")
_BOOKKEEPING = re.compile(r"^(?:Started process |Process PID: |Total execution time: )")
_RECORD = re.compile(r"^\s*proxy \| .* POST /update_jobs/\d+/record_update_job_(?:unknown_)?error$")
_PROXY = re.compile(r"^\s*proxy \| ")
_REASON_LINES = 2
_REASON_LOOK = 12
_TABLE = re.compile(r"^Dependabot encountered '\d+' error\(s\) during execution")
_BORDER = re.compile(r"^\+[-+]+\+$")
_ROW = re.compile(r"^\|(?P<cells>.+)\|$")
_TABLE_ROWS_MAX = 20


class _Updater:
    name = "dependabot-error"

    def find(self, index: TextIndex) -> Iterable[Hit]:
        lines = index.lines
        for idx, m in grep(index, _UPDATER, (" ERROR <job_",)):
            if m.group("level") == "ERROR" and not _FRAME.match(m.group("msg")):
                yield Hit(idx, "dependabot-error", NAMES)
        for idx, _m in grep(index, _RECORD, ("/record_update_job_",)):
            # Back over the proxy's lines to the updater's, then its last words.
            prev = idx - 1
            while prev > max(-1, idx - _REASON_LOOK) and _PROXY.match(lines[prev].text):
                prev -= 1
            taken = 0
            while prev >= 0 and taken < _REASON_LINES:
                said = _UPDATER.match(lines[prev].text)
                if said is None or said.group("level") != "INFO":
                    break
                if _BOOKKEEPING.match(said.group("msg")):
                    break
                yield Hit(prev, "dependabot-reason", EXPLAINS)
                taken += 1
                prev -= 1


class _Results:
    """The table: a border, its heading, a border, the rows, a border."""

    name = "dependabot-result"

    def find(self, index: TextIndex) -> Iterable[Hit]:
        lines = index.lines
        for idx in candidates(index, ("\nDependabot encountered '",)):
            if not _TABLE.match(lines[idx].text):
                continue
            yield Hit(idx, "dependabot-results", SURROUNDS)
            borders = 0
            for nxt in range(idx + 1, min(len(lines), idx + 4 + _TABLE_ROWS_MAX)):
                text = lines[nxt].text.strip()
                if _BORDER.match(text):
                    borders += 1
                    if borders == 3:
                        break
                    continue
                row = _ROW.match(text)
                if row is None:
                    break
                if borders == 2:
                    cells = [c.strip() for c in row.group("cells").split("|")]
                    yield Hit(nxt, "dependabot-error-type", NAMES, ": ".join(cells))


ECOSYSTEM = Ecosystem(
    name="dependabot",
    recognisers=(_Updater(), _Results()),
    failure_kinds=frozenset({"dependabot-error", "dependabot-error-type"}),
)
