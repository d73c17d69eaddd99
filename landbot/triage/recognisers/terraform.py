"""Terraform (and OpenTofu): each diagnostic is a box opened by ``╷``, then
``│ Error: summary`` (the failure) and ``│   on main.tf line 110, in resource …:`` (where).
A ``│ Error:`` not opened by ``╷`` (a test runner's or a logger's box) is not marked;
``│ Warning:`` boxes never are.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from landbot.triage.log import TextIndex
from landbot.triage.recognisers.base import EXPLAINS, NAMES, Ecosystem, Hit, grep

_ERROR = re.compile(r"^│ Error: \S")
_OPEN = "╷"
_ON = re.compile(r"^│\s+on (?P<file>\S+) line (?P<line>\d+)")
_ON_LOOK = 4


class _Diagnostics:
    name = "terraform-error"

    def find(self, index: TextIndex) -> Iterable[Hit]:
        lines = index.lines
        for idx, _m in grep(index, _ERROR, ("│ Error: ",)):
            if idx == 0 or lines[idx - 1].text.strip() != _OPEN:
                continue
            where = ""
            for nxt in range(idx + 1, min(len(lines), idx + 1 + _ON_LOOK)):
                on = _ON.match(lines[nxt].text)
                if on is not None:
                    where = f"{on.group('file')}:{on.group('line')}"
                    yield Hit(nxt, "terraform-location", EXPLAINS, where)
                    break
            yield Hit(idx, "terraform-error", NAMES, where)


ECOSYSTEM = Ecosystem(
    name="terraform",
    recognisers=(_Diagnostics(),),
    failure_kinds=frozenset({"terraform-error"}),
)
