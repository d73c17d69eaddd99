"""Docker builds (BuildKit/buildx and the classic builder).

BuildKit prints ``#12 ERROR: message`` for each step that failed, the failed step's
`` > [stage 3/5] RUN make:`` heading, a ``Dockerfile:22`` excerpt with its ``>>>`` line,
and last ``ERROR: failed to build: failed to solve: message``. A step error is a failure
line when that final line repeats its message (the cause); one the final line does not
repeat (a lock ``unavailable`` after the real failure) is a consequence, shown as context.
Without a final line every step error counts.
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
)

_STEP_ERROR = re.compile(r"^#\d+ (?:\d+\.\d+ )?ERROR: (?P<msg>.+)$")
_FINAL = re.compile(r"^(?:##\[error\](?:buildx failed with: )?)?ERROR: failed to (?:solve|build)")
_REF = re.compile(r"ref \S+")
_STEP_LOOK = 200
_DETAIL_MAX = 3


class _Steps:
    name = "docker-step-error"

    def find(self, index: TextIndex) -> Iterable[Hit]:
        finals = [index.lines[idx].text for idx, _m in grep(index, _FINAL, ("ERROR: failed to ",))]
        lines = index.lines
        for idx, m in grep(index, _STEP_ERROR, (" ERROR: ",)):
            msg = m.group("msg").strip()
            # Compare without refs and ids, which differ between platforms' steps.
            cause = not finals or any(_REF.sub("", msg) in _REF.sub("", f) for f in finals)
            if not cause:
                yield Hit(idx, "docker-step-note", EXPLAINS)
                continue
            yield Hit(idx, "docker-step-error", NAMES)
            step = lines[idx].text.split(" ", 1)[0] + " "
            # The step's heading (`#24 exporting to …`), and what the error goes on with.
            start = idx
            while start > max(0, idx - _STEP_LOOK) and lines[start - 1].text.startswith(step):
                start -= 1
            if start < idx:
                yield Hit(start, "docker-step", SURROUNDS)
            taken = 0
            for nxt in range(idx + 1, min(len(lines), idx + 2 * _DETAIL_MAX)):
                text = lines[nxt].text
                if text.startswith("#") or not text.strip() or taken >= _DETAIL_MAX:
                    break
                if text.strip("-"):
                    taken += 1
                    yield Hit(nxt, "docker-error-detail", EXPLAINS)


ECOSYSTEM = Ecosystem(
    name="docker",
    recognisers=(
        _Steps(),
        LineRule("docker-failed", NAMES, ("\nERROR: failed to ",), _FINAL),
        LineRule(
            "docker-stage",
            EXPLAINS,
            ("\n > [",),
            re.compile(r"^ > \[[^\]]+\] .+:$"),
        ),
        LineRule("docker-file", SURROUNDS, ("Dockerfile:",), re.compile(r"^\S*Dockerfile:\d+$")),
        LineRule("docker-line", EXPLAINS, (" | >>> ",), re.compile(r"^\s*\d+ \| >>> ")),
        LineRule(
            "docker-classic",
            EXPLAINS,
            ("returned a non-zero code",),
            re.compile(r"^The command '.*' returned a non-zero code: \d+"),
        ),
    ),
    failure_kinds=frozenset({"docker-step-error", "docker-failed"}),
    wrapper_kinds=frozenset({"docker-classic"}),
)
