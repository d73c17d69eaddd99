"""Compilers and linkers: gcc/clang/javac/mypy ``path:line[:col]: error: message``, MSVC
``path(line[,col]): error C1234: message``, rustc ``error[E0425]: message`` with its
``--> path:line:col``, kotlinc ``e: file:///path:line:col message``, linker ``undefined
reference to`` (and the ``In function`` line above it), CMake's ``CMake Error at
CMakeLists.txt:12 (find_package):``, and a tool's own ``llvm-rc: Error …`` / ``fatal: …``
line. A diagnostic that ends with ``:`` goes on over the next
line, which explains it. clang's ``1 error generated.`` and xcodebuild's ``** BUILD
FAILED **`` sum up (wrappers: error lines only when no diagnostic names the failure).

Warnings are never marked: a build prints thousands.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from landbot.triage.log import TextIndex
from landbot.triage.recognisers.base import (
    EXPLAINS,
    NAMES,
    PREFIX,
    Ecosystem,
    Hit,
    LineRule,
    grep,
    group,
)

# A wrapper may indent the compiler's output (flutter's ``Xcode's output:`` block).
_GCC = re.compile(
    PREFIX + r"\s*(?P<where>(?:[A-Za-z]:)?[^\s:(][^:(]*?:\d+(?::\d+)?): (?:fatal )?error: \S"
)
# kotlinc: ``e: file:///src/A.kt:72:30 Unresolved reference: x`` (Kotlin 1.9+) and
# ``e: /src/A.kt: (72, 30): message`` (older); ``w:`` warnings are not marked.
_KOTLIN = re.compile(r"^e: (?:file://)?(?P<where>/\S+?\.kts?(?::\d+:\d+ |: \(\d+, \d+\): ))\S")
_MSVC = re.compile(
    PREFIX + r"\s*(?P<where>(?:[A-Za-z]:)?[^:]+?\(\d+(?:,\d+)?\))\s?: "
    r"(?:fatal )?error (?!TS\d)[A-Z]+\d+: "
)
_RUSTC = re.compile(
    r"^error(?:\[E\d{4}\])?: (?!test failed|test run failed|could not compile|aborting due to"
    r"|process didn't exit|Recipe )\S"
)
_ARROW = re.compile(r"^\s*--> (?P<where>\S+:\d+:\d+)$")
_LINKER = re.compile(
    r"(?:: undefined reference to |undefined symbol: |: error LNK\d+: |"
    r"^Undefined symbols for architecture )"
)
_TOOL = re.compile(PREFIX + r"(?P<tool>[\w.+/-]+): (?:fatal error|error|Error|fatal)\b:? ?\S")
_NINJA = re.compile(r"^FAILED: \S")
_SNIPPET = re.compile(r"^\s*(?:\d+ )?\| ")
_SNIPPET_LOOK = 4
_WRAPS = re.compile(r"exit status|exit code|returned \d+")
_IN_FUNCTION = re.compile(r": In function [`'‘]")
_LINKER_HINTS = (
    ": undefined reference to ",
    "undefined symbol: ",
    ": error LNK",
    "Undefined symbols",
)
_TOOL_HINTS = (": error", ": Error", ": fatal")


class _Diagnostics:
    name = "compiler-error"

    def find(self, index: TextIndex) -> Iterable[Hit]:
        lines = index.lines
        seen: set[int] = set()
        for pattern, hints in (
            (_GCC, (": error: ", ": fatal error: ")),
            (_MSVC, ("): error ", "): fatal error ", ") : error ")),
            (_KOTLIN, ("\ne: ",)),
        ):
            for idx, m in grep(index, pattern, hints):
                seen.add(idx)
                yield Hit(idx, "compiler-error", NAMES, group(m, "where").rstrip(":( "))
                # The source line and the caret under it, past interleaved progress.
                for nxt in range(idx + 1, min(len(lines), idx + 1 + _SNIPPET_LOOK)):
                    if _SNIPPET.match(lines[nxt].text):
                        yield Hit(nxt, "compiler-snippet", EXPLAINS)
        for idx, _m in grep(index, _RUSTC, ("\nerror",)):
            seen.add(idx)
            where = ""
            for nxt in range(idx + 1, min(len(lines), idx + 4)):
                arrow = _ARROW.match(lines[nxt].text)
                if arrow:
                    where = arrow.group("where")
                    yield Hit(nxt, "compiler-location", EXPLAINS, where)
                    break
            yield Hit(idx, "compiler-error", NAMES, where)
        for idx, _m in grep(index, _LINKER, _LINKER_HINTS):
            seen.add(idx)
            yield Hit(idx, "linker-error", NAMES)
            if idx > 0 and _IN_FUNCTION.search(lines[idx - 1].text):
                yield Hit(idx - 1, "linker-context", EXPLAINS)
        for idx, m in grep(index, _TOOL, _TOOL_HINTS):
            if idx in seen:
                continue
            # `collect2: error: ld returned 1 exit status` only says a tool failed.
            kind = "tool-wrapper" if _WRAPS.search(lines[idx].text) else "tool-error"
            yield Hit(idx, kind, NAMES, group(m, "tool"))
            text = lines[idx].text.rstrip()
            if text.endswith(":") and idx + 1 < len(lines) and lines[idx + 1].text.strip():
                yield Hit(idx + 1, "tool-error-detail", EXPLAINS)


ECOSYSTEM = Ecosystem(
    name="compiler",
    recognisers=(
        _Diagnostics(),
        # ninja: `FAILED: path/to/target` names the target whose command failed.
        LineRule("ninja-failed", NAMES, ("\nFAILED: ",), _NINJA),
        # A diagnostic drawn as a box (miette, ariadne; the docs-builder's): its
        # `┌─[path]` / `╭─[path:line:col]` line is where.
        LineRule(
            "compiler-location",
            EXPLAINS,
            ("─[",),
            re.compile(r"^\s*[┌╭]─\[(?P<where>[^\]\s]+)\]$"),
            subject=lambda m: group(m, "where"),
        ),
        LineRule(
            "compiler-summary",
            EXPLAINS,
            (" Errors / ", " Error / "),
            re.compile(r"^\s*[1-9]\d* Errors? / \d+ Warnings?\b"),
        ),
        # clang's count under its diagnostics (`2 warnings generated.` is not a failure).
        LineRule(
            "compiler-summary",
            EXPLAINS,
            (" generated.",),
            re.compile(r"^\s*\d+ errors? generated\.$|^\s*\d+ warnings? and \d+ errors? gen"),
        ),
        # CMake: `CMake Error at CMakeLists.txt:173 (message):`, its message indented
        # under it (a continuation), and `-- Configuring incomplete, errors occurred!`.
        LineRule(
            "cmake-error",
            NAMES,
            ("\nCMake Error",),
            re.compile(r"^CMake Error(?: at (?P<where>.+?:\d+) \([^)]*\))?:"),
            subject=lambda m: group(m, "where"),
        ),
        LineRule(
            "cmake-incomplete",
            EXPLAINS,
            ("\n-- Configuring incomplete",),
            re.compile(r"^-- Configuring incomplete, errors occurred!$"),
        ),
        # xcodebuild's verdict, and flutter's line above the Xcode output it shows.
        LineRule(
            "build-failed",
            EXPLAINS,
            (" FAILED **", "\nFailed to build "),
            re.compile(
                r"^\s*\*\* (?:BUILD|TEST|ARCHIVE|ANALYZE|CLEAN) FAILED \*\*$"
                r"|^Failed to build (?:iOS|macOS) app$"
            ),
        ),
    ),
    wrapper_kinds=frozenset({"tool-wrapper", "build-failed"}),
    failure_kinds=frozenset(
        {"compiler-error", "linker-error", "tool-error", "ninja-failed", "cmake-error"}
    ),
)
