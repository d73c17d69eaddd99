"""JavaScript test runners: vitest, jest and mocha.

- vitest: `` FAIL  src/x.test.ts > suite > test`` names the test with its file; the
  ``×`` lines, ``→`` reasons and ``❯ file:line:col`` locations explain it.
- jest: ``FAIL src/x.test.js`` names the file, then ``● Suite › test`` each failed test;
  the subject is ``file > Suite > test``. Under each ``●``: the message, the
  ``Expected``/``Received`` values, and the frame where the test failed.
- mocha: after ``N failing``, ``1) Suite`` and its indented title lines up to the one that
  ends with ``:``; the subject is the joined title.
- Cypress: the run table's ``│ ✖  spec.cy.ts …`` row names a failed spec file.
- npm's ``npm error code ETARGET`` and its message, pnpm's ``ERR_PNPM_…``: an install or
  publish that failed.
- ``Error: …`` lines (any ``XxxError:``) say why; ``Tests: 1 failed`` summarises.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable, Sequence

from landbot.triage.log import Line, TextIndex
from landbot.triage.recognisers.base import (
    EXPLAINS,
    NAMES,
    SURROUNDS,
    Ecosystem,
    Hit,
    LineRule,
    candidates,
    grep,
)

_FAIL = re.compile(
    r"^[ \t]*FAIL[ \t]+(?:\|[^|]+\|[ \t]+)?"
    r"(?P<file>\S+\.(?:[cm]?[jt]sx?|vue|svelte|astro))(?P<rest>.*)$"
)
_DURATION = re.compile(r"\s+(?:\(\s*[\d.]+\s*m?s\)|[\d.]+\s*m?s)$")
_BULLET = re.compile(r"^[ \t]*● (?!Console\b)(?P<name>\S.*)$")
_BLOCKS_MAX = 200
_BLOCK_LOOK = 60
_VALUE = re.compile(r"^\s*(?:Expected|Received)(?: [\w ]+?)?: ")
_VALUES_MAX = 4
_AT = re.compile(r"^\s+at (?:.*? \()?(?P<where>[^\s()]+:\d+:\d+)\)?$")
_MOCHA_FAILING = re.compile(r"^[ \t]*\d+ failing$")
_MOCHA_ITEM = re.compile(r"^(?P<indent>[ \t]*)\d+\) (?P<title>\S.*)$")
_MOCHA_ITEMS_MAX = 200
_ERROR_IN = re.compile(r"(?:^|\s)(?:[\w.\\]*(?:Error|Exception)(?: \[\w+\])?): \S")
_FRAME = re.compile(r"^\s+at \S")
# An error object's own fields; an Octokit ``HttpError`` adds the request's ``url`` and
# ``method`` (the URL is what a 404 is about).
_PROP = re.compile(
    r"^\s+(?P<key>status|code|message|errno|syscall|reason|statusCode|url|method): \S"
)
_PROPS_LOOK = 60
_PROPS_MAX = 4


class _Files:
    """vitest's per-test ``FAIL`` lines and jest's per-file ones, and jest's ``●``."""

    name = "vitest-failed"

    def find(self, index: TextIndex) -> Iterable[Hit]:
        files: list[tuple[int, str]] = []
        for idx, m in grep(index, _FAIL, ("FAIL ",)):
            rest = _DURATION.sub("", m.group("rest")).strip()
            if rest.startswith(">"):
                yield Hit(idx, "vitest-failed", NAMES, f"{m.group('file')} {rest}")
            else:
                files.append((idx, m.group("file")))
                yield Hit(idx, "jest-file", NAMES, m.group("file"))
        starts = [idx for idx, _ in files]
        for count, (idx, m) in enumerate(grep(index, _BULLET, ("● ",))):
            name = " > ".join(part.strip() for part in m.group("name").split(" › "))
            at = bisect_right(starts, idx) - 1
            subject = f"{files[at][1]} > {name}" if at >= 0 else name
            yield Hit(idx, "jest-failed", EXPLAINS, subject)
            if count < _BLOCKS_MAX:
                yield from _block(index, idx)


def _block(index: TextIndex, bullet: int) -> Iterable[Hit]:
    """What jest prints under a ``●`` test: the message (its first line), the
    ``Expected``/``Received`` values, and the first stack frame outside node_modules
    (where the test failed); up to the next ``●`` or file."""
    lines = index.lines
    message = False
    values = 0
    for nxt in range(bullet + 1, min(len(lines), bullet + 1 + _BLOCK_LOOK)):
        text = lines[nxt].text
        if not text.strip():
            continue
        if _BULLET.match(text) or _FAIL.match(text) or text.startswith("PASS "):
            return
        if not message:
            message = True
            yield Hit(nxt, "jest-message", EXPLAINS)
        elif values < _VALUES_MAX and _VALUE.match(text):
            values += 1
            yield Hit(nxt, "jest-value", EXPLAINS)
        else:
            frame = _AT.match(text)
            if frame is not None and "node_modules" not in text:
                yield Hit(nxt, "jest-location", SURROUNDS, frame.group("where"))
                return


class _Uncaught:
    """An unindented ``Error: …`` with a stack under it: the error that ended the process
    (a test runner's failures are indented under their test). Node's ``Require stack:``
    under ``Cannot find module`` says who asked for the module."""

    name = "js-uncaught"

    def find(self, index: TextIndex) -> Iterable[Hit]:
        lines = index.lines
        for idx in candidates(index, ("Error: ", "Error [")):
            text = lines[idx].text
            if text[:1].isspace() or not _ERROR_IN.search(text):
                continue
            if _ends_node(lines, idx):
                # Node's crash without a stack (a top-level throw in an ES module): the
                # source line and its caret above, the runtime's version below.
                yield Hit(idx, "js-uncaught", EXPLAINS)
            elif idx + 1 < len(lines) and _FRAME.match(lines[idx + 1].text):
                yield Hit(idx, "js-uncaught", EXPLAINS)
                # Node prints the error object's own fields under its stack.
                keys: set[str] = set()
                for nxt in range(idx + 1, min(len(lines), idx + _PROPS_LOOK)):
                    if len(keys) >= _PROPS_MAX:
                        break
                    prop = _PROP.match(lines[nxt].text)
                    # Each field once: the response repeats the error's `status`.
                    if prop is not None and prop.group("key") not in keys:
                        keys.add(prop.group("key"))
                        yield Hit(nxt, "js-error-field", EXPLAINS)
            if "Cannot find module" in text:
                for nxt in range(idx + 1, min(len(lines), idx + 4)):
                    if lines[nxt].text == "Require stack:":
                        yield Hit(nxt, "js-require-stack", EXPLAINS)
                        if nxt + 1 < len(lines) and lines[nxt + 1].text.startswith("- "):
                            yield Hit(nxt + 1, "js-require-stack", EXPLAINS)
                        break


_NODE_VERSION = re.compile(r"^Node\.js v\d+\.\d+")
_CARET = re.compile(r"^\s*\^+\s*$")


def _ends_node(lines: Sequence[Line], idx: int) -> bool:
    """The error at `idx` is followed by Node's ``Node.js v20.11.0`` and preceded by the
    caret under the source line that threw."""
    after = idx + 1 < len(lines) and _NODE_VERSION.match(lines[idx + 1].text) is not None
    above = any(_CARET.match(lines[j].text) for j in range(max(0, idx - 3), idx))
    return after and above


_SCRIPT_NAME = re.compile(r"^> \S+@\S+ \S+")
# vite's `error during build:` and vitepress's `build error:`, then the message.
_BUILD_ERROR = re.compile(r"^(?:error during build|build error):$")
_BUILD_ERROR_HINTS = ("\nerror during build:", "\nbuild error:")
_BUILD_FILE = re.compile(r"^file: (?P<where>\S+)$")
_BUILD_FILE_LOOK = 3
_DIFF = re.compile(r"^\s*(?:[-+] |Expected|Received|expected|received)")
_DIFF_LOOK = 12
_DIFF_MAX = 4


class _Scripts:
    """npm/yarn/pnpm echo each script: ``> pkg@1.0 test`` then ``> the command``; and
    the lines after vite's ``error during build:`` (vitepress: ``build error:``): the
    message and rollup's ``file:`` line."""

    name = "npm-script"

    def find(self, index: TextIndex) -> Iterable[Hit]:
        lines = index.lines
        for idx, _m in grep(index, _SCRIPT_NAME, ("\n> ",)):
            if idx + 1 < len(lines) and lines[idx + 1].text.startswith("> "):
                yield Hit(idx + 1, "npm-script", SURROUNDS)
        for idx in candidates(index, _BUILD_ERROR_HINTS):
            if not _BUILD_ERROR.match(lines[idx].text):
                continue
            if idx + 1 < len(lines) and lines[idx + 1].text.strip():
                yield Hit(idx + 1, "build-error-detail", EXPLAINS)
            # Rollup's `file: path[:line:col]` under the message: where.
            for nxt in range(idx + 2, min(len(lines), idx + 2 + _BUILD_FILE_LOOK)):
                where = _BUILD_FILE.match(lines[nxt].text)
                if where is not None:
                    yield Hit(nxt, "build-error-file", EXPLAINS, where.group("where"))
                    break


class _Diffs:
    """The expected/received lines under an assertion error (``- a`` / ``+ b``)."""

    name = "js-diff"

    def find(self, index: TextIndex) -> Iterable[Hit]:
        lines = index.lines
        for idx in candidates(index, ("Error: ",)):
            if not _ERROR_IN.search(lines[idx].text):
                continue
            taken = 0
            for nxt in range(idx + 1, min(len(lines), idx + 1 + _DIFF_LOOK)):
                if taken >= _DIFF_MAX or _FRAME.match(lines[nxt].text):
                    break
                if _DIFF.match(lines[nxt].text):
                    taken += 1
                    yield Hit(nxt, "js-diff", EXPLAINS)


_NPM_CODE = re.compile(r"^npm (?:ERR!|error) code (?P<code>\S+)$")
_NPM_LINE = re.compile(r"^npm (?:ERR!|error) (?!code |A complete log |Log files)(?P<msg>\S.*)$")
_NPM_DETAIL_MAX = 2
_PNPM = re.compile(r"^\s*(?P<code>ERR_PNPM_[A-Z_]+)\s+\S")


class _PackageManagers:
    """npm's ``npm error code ETARGET`` (npm < 10: ``npm ERR! code``) and the message lines
    under it; pnpm's `` ERR_PNPM_… message``. The subject is the error code."""

    name = "npm-error"

    def find(self, index: TextIndex) -> Iterable[Hit]:
        lines = index.lines
        for idx, m in grep(index, _NPM_CODE, ("npm error code ", "npm ERR! code ")):
            yield Hit(idx, "npm-error", NAMES, m.group("code"))
            for nxt in range(idx + 1, min(len(lines), idx + 1 + _NPM_DETAIL_MAX)):
                if not _NPM_LINE.match(lines[nxt].text):
                    break
                yield Hit(nxt, "npm-error-detail", EXPLAINS)
        for idx, m in grep(index, _PNPM, ("ERR_PNPM_",)):
            yield Hit(idx, "npm-error", NAMES, m.group("code"))


class _Mocha:
    name = "mocha-failed"

    def find(self, index: TextIndex) -> Iterable[Hit]:
        lines = index.lines
        summaries = [idx for idx, _m in grep(index, _MOCHA_FAILING, (" failing",))]
        if summaries:
            # The spec reporter numbers a failing test where it runs: `  1) title`.
            for item, m in grep(index, _MOCHA_ITEM, (") ",)):
                if item >= summaries[0]:
                    break
                if len(m.group("indent")) >= 2:
                    yield Hit(item, "mocha-inline", NAMES, m.group("title"))
        for idx in summaries:
            yield Hit(idx, "mocha-summary", EXPLAINS)
            count = 0
            for item, m in grep(index, _MOCHA_ITEM, (") ",)):
                if item <= idx:
                    continue
                if count >= _MOCHA_ITEMS_MAX:
                    break
                count += 1
                title = [m.group("title")]
                depth = len(m.group("indent"))
                # The title goes on over ever deeper lines (suite, nested suites, test);
                # the error under it is less indented again.
                for nxt in range(item + 1, min(len(lines), item + 8)):
                    text = lines[nxt].text
                    indent = len(text) - len(text.lstrip())
                    if indent <= depth or not text.strip():
                        break
                    title.append(text.strip())
                    depth = indent
                subject = " ".join(title).removesuffix(":")
                yield Hit(item, "mocha-failed", NAMES, subject)


ECOSYSTEM = Ecosystem(
    name="javascript",
    recognisers=(
        _Files(),
        _Mocha(),
        _Uncaught(),
        _Diffs(),
        _Scripts(),
        _PackageManagers(),
        # Cypress's run table: `│ ✖  5-ndv.cy.ts   04:11   40   39   1 …` names a failed spec.
        LineRule(
            "cypress-failed",
            NAMES,
            ("│ ✖ ",),
            re.compile(r"^\s*│ ✖ +(?P<spec>\S+\.(?:cy|spec|test)\.[cm]?[jt]sx?) "),
            subject=lambda m: m.group("spec"),
        ),
        LineRule("build-error", NAMES, _BUILD_ERROR_HINTS, _BUILD_ERROR),
        LineRule("test-failed", EXPLAINS, ("×", "✗", "✕"), re.compile(r"^[ \t]*[×✗✕][ \t]+\S")),
        LineRule("test-reason", EXPLAINS, ("→",), re.compile(r"^[ \t]*→[ \t]+\S")),
        LineRule(
            "js-error",
            EXPLAINS,
            ("Error: ", "Error [", "Exception: "),
            re.compile(r"^[ \t]*(?:Uncaught )?(?:[\w.\\]*(?:Error|Exception)(?: \[\w+\])?): \S"),
        ),
        LineRule(
            "test-location",
            SURROUNDS,
            ("❯ ",),
            re.compile(r"^[ \t]*❯ (?P<where>\S+:\d+:\d+)$"),
            subject=lambda m: m.group("where"),
        ),
        LineRule(
            "test-summary",
            EXPLAINS,
            (" failed",),
            re.compile(r"^[ \t]*(?:Test Files|Tests:?|Test Suites:)[ \t]+\d+ failed\b"),
        ),
    ),
    failure_kinds=frozenset(
        {
            "vitest-failed",
            "jest-file",
            "jest-failed",
            "mocha-failed",
            "mocha-inline",
            "build-error",
            "test-failed",
            "cypress-failed",
            "npm-error",
        }
    ),
    test_kinds=frozenset({"vitest-failed", "jest-failed", "mocha-failed"}),
    # An uncaught error is the failure only when no test runner reported one.
    wrapper_kinds=frozenset({"js-uncaught"}),
)
