"""Playwright Test: ``  1) [project] › path.spec.ts:24:7 › Suite › test ────`` names a
failed test (the line reporter also prints ``[1/20] … › test`` progress, which is not
marked); the summary's ``1 failed`` / ``2 flaky`` and the tests listed under them. When a
step shows several runs' summaries, the last one's failed list says which failures were
the step's.

The subject is ``[project] › path.spec.ts › Suite › test``: without the line and column,
which move when the file is edited, and without retry counts.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from landbot.triage.log import TextIndex
from landbot.triage.recognisers.base import (
    EXPLAINS,
    NAMES,
    Ecosystem,
    Hit,
    grep,
)

_FAILED = re.compile(
    r"^\s+\d+\) (?P<project>\[[^\]]+\] › )?(?P<file>\S+?):\d+:\d+ › (?P<title>.+?)[\s─]*$"
)
_COUNT = re.compile(r"^\s+\d+ (?P<what>failed|flaky|interrupted|timed out)$")
_LISTED = re.compile(
    r"^\s+(?P<project>\[[^\]]+\] › )?(?P<file>\S+?):\d+:\d+ › (?P<title>.+?)[\s─]*$"
)
_LISTED_MAX = 50
_RETRY = re.compile(r"\s*\(retry #\d+\)$")


def subject(m: re.Match[str]) -> str:
    title = _RETRY.sub("", m.group("title").strip())
    return f"{m.group('project') or ''}{m.group('file')} › {title}"


class _Playwright:
    """Failed tests, and the summary; a test the summary lists as ``flaky`` (it passed on
    a retry) did not fail the run: its heading is context, not a failure."""

    name = "playwright-failed"

    def find(self, index: TextIndex) -> Iterable[Hit]:
        lines = index.lines
        flaky: set[str] = set()
        # The tests each `N failed` summary lists, in order: the last is the run that
        # ended the step.
        failed: list[set[str]] = []
        for idx, m in grep(index, _COUNT, (" failed", " flaky", " interrupted", " timed out")):
            yield Hit(idx, "playwright-summary", EXPLAINS)
            names: set[str] = set()
            for nxt in range(idx + 1, min(len(lines), idx + 1 + _LISTED_MAX)):
                listed = _LISTED.match(lines[nxt].text)
                if listed is None:
                    break
                yield Hit(nxt, "playwright-listed", EXPLAINS)
                names.add(subject(listed))
                if m.group("what") == "flaky":
                    flaky.add(subject(listed))
            if m.group("what") == "failed":
                failed.append(names)
        # Several summaries: another run's output was printed into the step (Playwright's
        # own tests print the runs they test); a failure the last summary does not list
        # was that run's, not this one's.
        final = failed[-1] if len(failed) > 1 and failed[-1] else None
        for idx, m in grep(index, _FAILED, (") ",)):
            name = subject(m)
            if name in flaky:
                yield Hit(idx, "playwright-flaky", EXPLAINS, name)
                continue
            if final is not None and name not in final:
                yield Hit(idx, "playwright-other-run", EXPLAINS, name)
                continue
            yield Hit(idx, "playwright-failed", NAMES, name)
            # The first line of the error under the name says why.
            for nxt in range(idx + 1, min(len(lines), idx + 4)):
                if lines[nxt].text.strip():
                    yield Hit(nxt, "playwright-reason", EXPLAINS)
                    break


ECOSYSTEM = Ecosystem(
    name="playwright",
    recognisers=(_Playwright(),),
    failure_kinds=frozenset({"playwright-failed"}),
    test_kinds=frozenset({"playwright-failed"}),
)
