"""go test: ``--- FAIL: TestX`` (and gotestsum's ``=== FAIL: pkg TestX``), the
``file_test.go:N:`` lines a failing test printed, ``FAIL pkg 1.2s`` / ``FAIL pkg [build
failed]`` package results, ``panic:`` lines, and the tests a ``panic: test timed out``
lists as running. Build errors (``x.go:3:5: undefined: y``) too.

The subject is ``pkg.TestX`` (the package from the ``FAIL pkg`` line that closes the
package's output), or ``TestX`` when no package line follows.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Iterable

from landbot.triage.log import Line, TextIndex
from landbot.triage.recognisers.base import (
    EXPLAINS,
    NAMES,
    Ecosystem,
    Hit,
    LineRule,
    grep,
)

_FAILED = re.compile(r"^[ \t]*--- FAIL: (?P<name>\S+)")
_GOTESTSUM = re.compile(r"^=== FAIL: (?P<pkg>\S+) (?P<name>\S+)")
_PACKAGE = re.compile(r"^FAIL[ \t]+(?P<pkg>\S+)(?:[ \t]+[\d.]+s|[ \t]+\[[\w ]+ failed\])")
_LOCATION = re.compile(r"^[ \t]+(?P<where>[\w.-]+\.go:\d+): \S")
_PANIC = re.compile(r"^panic: \S")
_TIMED_OUT = re.compile(r"^panic: test timed out after ")
_RUNNING = re.compile(r"^[ \t]+(?P<name>Test\S*|Example\S*|Benchmark\S*|Fuzz\S*) \([\dhms.]+\)$")
_BUILD = re.compile(r"^(?:\S+/)?[\w.-]+\.go:\d+:\d+: \S")
_GO_ERROR = re.compile(
    r"^go: (?!downloading |finding |extracting |creating |added |upgraded |removed |"
    r"found |to add |switching |warning:)\S"
)
_BUILD_OUTPUT_MAX = 5
_HEADER = re.compile(r"^=== (?:RUN|CONT|NAME) +(?P<name>\S+)$")
_DETAIL_MAX = 12
_AFTER_MAX = 200


class _Tests:
    name = "go-failed"

    def find(self, index: TextIndex) -> Iterable[Hit]:
        lines = index.lines
        packages = [(idx, m.group("pkg")) for idx, m in grep(index, _PACKAGE, ("\nFAIL",))]
        starts = [idx for idx, _ in packages]
        for idx, pkg in packages:
            yield Hit(idx, "go-package-failed", NAMES, pkg)
            if lines[idx].text.endswith(" failed]"):
                yield from _build_output(lines, idx)

        def package_after(idx: int) -> str:
            at = bisect_left(starts, idx)
            return packages[at][1] if at < len(packages) else ""

        def qualified(pkg: str, name: str) -> str:
            return f"{pkg}.{name}" if pkg else name

        headers: dict[str, list[int]] = {}
        for idx, m in grep(index, _HEADER, ("\n=== RUN", "\n=== CONT", "\n=== NAME")):
            headers.setdefault(m.group("name"), []).append(idx)
        for idx, m in grep(index, _GOTESTSUM, ("=== FAIL: ",)):
            yield Hit(idx, "go-failed", NAMES, qualified(m.group("pkg"), m.group("name")))
        for idx, m in grep(index, _FAILED, ("--- FAIL: ",)):
            name = m.group("name")
            yield Hit(idx, "go-failed", NAMES, qualified(package_after(idx), name))
            yield from _locations(lines, idx, name, headers)
        for idx, _m in grep(index, _TIMED_OUT, ("\npanic: test timed out",)):
            # `panic: test timed out after 10m0s` / `running tests:` / `\t\tTestX (10m0s)`
            for nxt in range(idx + 1, min(len(lines), idx + 50)):
                text = lines[nxt].text
                running = _RUNNING.match(text)
                if running:
                    name = running.group("name")
                    yield Hit(nxt, "go-timeout-test", NAMES, qualified(package_after(nxt), name))
                elif text.strip() and text.strip() != "running tests:":
                    break


def _build_output(lines: tuple[Line, ...], idx: int) -> Iterable[Hit]:
    """What the go command printed just above ``FAIL pkg [build failed]``: why."""
    taken = 0
    for prev in range(idx - 1, max(-1, idx - 3 * _BUILD_OUTPUT_MAX), -1):
        text = lines[prev].text
        if taken >= _BUILD_OUTPUT_MAX or text.startswith(("ok ", "=== ", "--- ")):
            break
        if text.startswith("FAIL") or text.startswith("go: downloading") or not text.strip():
            continue
        taken += 1
        yield Hit(prev, "go-build-output", EXPLAINS)


def _locations(
    lines: tuple[Line, ...], idx: int, name: str, headers: dict[str, list[int]]
) -> Iterable[Hit]:
    """The ``file.go:N:`` lines the failed test printed: after its ``--- FAIL`` line (the
    indented block), or before it back to its ``=== RUN`` line (``go test -v``)."""
    found: list[int] = []
    for nxt in range(idx + 1, min(len(lines), idx + _AFTER_MAX)):
        text = lines[nxt].text
        if not text[:1].isspace():
            break
        if _LOCATION.match(text):
            found.append(nxt)
    # go test -v: a test's output follows its `=== RUN`/`=== CONT` line (tests run in
    # parallel interleave), up to the next `===`/`---` line.
    for start in headers.get(name, ()):
        for nxt in range(start + 1, min(len(lines), start + _AFTER_MAX)):
            text = lines[nxt].text
            if text.startswith(("=== ", "--- ")) or text.strip().startswith("--- "):
                break
            if text.strip():
                found.append(nxt)
    first = True
    for at in sorted(set(found))[:_DETAIL_MAX]:
        m = _LOCATION.match(lines[at].text)
        if m is not None and first:
            first = False
            yield Hit(at, "go-location", EXPLAINS, m.group("where"))
        else:
            yield Hit(at, "go-detail", EXPLAINS)


ECOSYSTEM = Ecosystem(
    name="go",
    recognisers=(
        _Tests(),
        LineRule("go-panic", EXPLAINS, ("\npanic: ",), _PANIC),
        # The go command's own errors: `go: …` (not its progress lines), and a module whose
        # checksum does not match go.sum.
        LineRule("go-error", NAMES, ("\ngo: ",), _GO_ERROR),
        LineRule("go-error", NAMES, ("\nverifying ",), re.compile(r"^verifying \S+@\S+: \S")),
        LineRule("go-security", EXPLAINS, ("\nSECURITY ERROR",), re.compile(r"^SECURITY ERROR$")),
        LineRule("go-build-error", NAMES, (".go:",), _BUILD),
    ),
    failure_kinds=frozenset(
        {
            "go-failed",
            "go-timeout-test",
            "go-package-failed",
            "go-location",
            "go-panic",
            "go-build-error",
            "go-error",
        }
    ),
    test_kinds=frozenset({"go-failed", "go-timeout-test"}),
)
