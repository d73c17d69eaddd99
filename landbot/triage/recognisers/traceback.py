"""Python tracebacks: the ``Traceback (most recent call last):`` header, the last frame
and its source line, and the exception line that ends it (which says why).

A traceback is walked line by line from its header, bounded: at most ``TRACEBACKS_MAX``
tracebacks of ``TRACEBACK_LINES_MAX`` lines each.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from landbot.triage.log import TextIndex
from landbot.triage.recognisers.base import (
    EXPLAINS,
    SURROUNDS,
    Ecosystem,
    Hit,
    grep,
)

_TRACEBACK = re.compile(r"^Traceback \(most recent call last\):$")
TRACEBACKS_MAX = 50
TRACEBACK_LINES_MAX = 400


class _Tracebacks:
    name = "traceback"

    def find(self, index: TextIndex) -> Iterable[Hit]:
        lines = index.lines
        for count, (start, _m) in enumerate(grep(index, _TRACEBACK, ("\nTraceback (most",))):
            if count >= TRACEBACKS_MAX:
                return
            yield Hit(start, "traceback", SURROUNDS)
            last_frame = None
            for idx in range(start + 1, min(len(lines), start + TRACEBACK_LINES_MAX)):
                text = lines[idx].text
                if text.startswith("  File "):
                    last_frame = idx
                elif text and not text[0].isspace():
                    if last_frame is not None:
                        yield Hit(last_frame, "traceback", SURROUNDS)
                        if last_frame + 1 < idx:
                            yield Hit(last_frame + 1, "traceback", SURROUNDS)
                    yield Hit(idx, "traceback-exception", EXPLAINS)
                    break


ECOSYSTEM = Ecosystem(
    name="traceback",
    recognisers=(_Tracebacks(),),
    failure_kinds=frozenset({"traceback-exception"}),
)
