"""pytest: the short summary's ``FAILED <node id> - <message>``, verbose ``<id> FAILED``,
the ``E`` lines (the first of each block states the failure), the ``path.py:N: Error``
location, the ``____ test ____`` headings and the final ``N failed`` line.

Node ids may hold spaces inside their parametrisation (``test_x[a b]``): the id runs to the
``]`` that closes it, then `` - `` and the message.
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
    candidates,
    grep,
    group,
    scan,
)

_SUMMARY = re.compile(r"^(?:FAILED|ERROR) (?P<rest>[^\s:\[]+(?:::|\.py).*)$")
# xdist: `[gw1] [ 50%] FAILED tests/a.py::t`; verbose: `tests/a.py::t FAILED  [ 50%]`.
_XDIST = re.compile(r"^\[gw\d+\] \[ *\d+%\] (?:FAILED|ERROR) (?P<id>\S+::.+?)\s*$")
_VERBOSE = re.compile(r"^(?P<id>[^\s:\[]+\.py::.+?) (?:FAILED|ERROR)(?:\s+\[ *\d+%\])?$")


def node_id(rest: str) -> tuple[str, str]:
    """Split ``<id> - <message>`` where the id may hold spaces inside ``[...]``."""
    head = rest.split(" - ", 1)[0]
    bracket = head.find("[")
    if bracket != -1:
        # The id's parametrisation may hold " - ": close it at the first "]" that ends
        # the line or precedes " - ".
        for m in re.finditer(r"\](?= - |$)", rest):
            if m.start() > bracket:
                return rest[: m.end()], rest[m.end() + 3 :]
    if " - " in rest:
        ident, msg = rest.split(" - ", 1)
        return ident, msg
    return rest.strip(), ""


class _Summary:
    name = "pytest-failed"

    def find(self, index: TextIndex) -> Iterable[Hit]:
        for idx, m in grep(index, _SUMMARY, ("\nFAILED ", "\nERROR ")):
            ident, _msg = node_id(m.group("rest"))
            yield Hit(idx, "pytest-failed", NAMES, ident)


class _Verbose:
    name = "pytest-verbose"

    def find(self, index: TextIndex) -> Iterable[Hit]:
        for pattern in (_VERBOSE, _XDIST):
            for idx, m in grep(index, pattern, (" FAILED", " ERROR")):
                yield Hit(idx, "pytest-verbose", EXPLAINS, group(m, "id"))


class _ELines:
    """``E`` lines: the first of each block states the failure, the rest explain it."""

    name = "pytest-detail"

    def find(self, index: TextIndex) -> Iterable[Hit]:
        previous = -2
        for idx in candidates(index, ("\nE ",)):
            if not _E.match(index.lines[idx].text):
                continue
            kind = "pytest-detail" if idx == previous + 1 else "pytest-error"
            previous = idx
            yield Hit(idx, kind, EXPLAINS)


_E = re.compile(r"^E +\S")
_LOCATION_FINDER = re.compile(r"\.py:\d+: \w")
_LOCATION = re.compile(r"^(?P<where>[\w./\\-]+\.py:\d+): \w+$")


class _Locations:
    """``tests/test_a.py:67: AssertionError``: where the test failed."""

    name = "pytest-location"

    def find(self, index: TextIndex) -> Iterable[Hit]:
        for idx in scan(index, _LOCATION_FINDER, _LOCATION):
            m = _LOCATION.match(index.lines[idx].text)
            yield Hit(idx, "pytest-location", EXPLAINS, m.group("where") if m else "")


ECOSYSTEM = Ecosystem(
    name="pytest",
    recognisers=(
        _Summary(),
        _Verbose(),
        _ELines(),
        _Locations(),
        LineRule(
            "pytest-test",
            SURROUNDS,
            ("\n_",),
            re.compile(r"^_+ (?P<name>\S.*?) _+$"),
            subject=lambda m: group(m, "name"),
        ),
        # doctest: the unexpected exception, or what was expected and what came.
        LineRule(
            "doctest",
            EXPLAINS,
            ("\nUNEXPECTED EXCEPTION: ", "\nExpected:", "\nGot:"),
            re.compile(r"^(?:UNEXPECTED EXCEPTION: \S|Expected:$|Got:$)"),
        ),
        LineRule(
            "pytest-summary",
            SURROUNDS,
            ("\n=",),
            re.compile(r"^=+ short test summary info =+$"),
        ),
        LineRule(
            "pytest-result",
            EXPLAINS,
            ("\n=",),
            re.compile(r"^=+ .*\b\d+ (?:failed|errors?)\b.* =+$"),
        ),
    ),
    failure_kinds=frozenset({"pytest-failed", "pytest-verbose", "pytest-error", "pytest-location"}),
    test_kinds=frozenset({"pytest-failed"}),
)
