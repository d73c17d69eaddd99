"""Lint runners: ``path:line:col: CODE message`` (ruff, flake8, pylint, golangci-lint's
``path:line:col: message (linter)`` is a compiler-style line), eslint's stylish
``  1:8  error  message  rule`` under its file line and its ``✖ N problems`` total,
pre-commit's ``hook.....Failed`` with its ``- hook id:`` block and the output under it,
shellcheck's ``^-- SC2086 (warning): …``, prettier --check's ``[warn] path`` files above its
``Code style issues found`` verdict, markdownlint's ``doc.md:6:2 MD042/no-empty-links …``
and codespell's ``path:12: teh ==> the``.

Only errors are marked: eslint's ``warning`` rows and passed hooks are not.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from landbot.triage.log import TextIndex
from landbot.triage.recognisers.base import (
    EXPLAINS,
    NAMES,
    PREFIX,
    SURROUNDS,
    Ecosystem,
    Hit,
    LineRule,
    candidates,
    grep,
    group,
    scan,
)

# `:12:5: F401 ` / `:3:0: C0114: `: found at C speed by the literal ":" and digits.
_CODE_FINDER = re.compile(r":\d+(?::\d+)?: [A-Z]{1,4}\d{2,4}\b")
_CODE_LINE = re.compile(
    PREFIX + r"(?P<where>[^\s:]+:\d+(?::\d+)?): (?P<code>[A-Z]{1,4}\d{2,4})\b:? \S"
)
_ESLINT = re.compile(PREFIX + r"\s+\d+:\d+\s+error\s+\S")
_HOOK = re.compile(r"^(?P<hook>\S.*?)\.{3,}(?:\([^)]*\))?Failed$")
_HOOK_BLOCK = 6
# prettier --check: one `[warn] path` per unformatted file, then its verdict.
_PRETTIER_VERDICT = re.compile(r"^\[warn\] Code style issues found\b")
_PRETTIER_FILE = re.compile(r"^\[warn\] (?P<path>[^\s\[\]]+\.[\w]+)$")
_PRETTIER_FILES_MAX = 200
# markdownlint(-cli2): `doc.md:6:2 MD042/no-empty-links No empty links [Context: …]`.
_MARKDOWNLINT = re.compile(
    r"^(?:##\[error\])?(?P<where>\S+?:\d+(?::\d+)?):? (?:error )?MD\d{3}(?:/[\w-]+)+ \S"
)
# codespell: `./src/db.cpp:1242: teminator ==> terminator`.
_CODESPELL = re.compile(r"^(?:##\[error\])?(?P<where>\S+:\d+): \S.*? ==> \S")


class _Codes:
    name = "lint-finding"

    def find(self, index: TextIndex) -> Iterable[Hit]:
        for idx in scan(index, _CODE_FINDER, _CODE_LINE):
            m = _CODE_LINE.search(index.lines[idx].text)
            yield Hit(idx, "lint-finding", NAMES, group(m, "where") if m else "")


class _Prettier:
    """The ``[warn] path`` lines right above prettier's ``Code style issues found``
    verdict name the files; its other ``[warn]`` lines (an ignored option) do not."""

    name = "format-file"

    def find(self, index: TextIndex) -> Iterable[Hit]:
        lines = index.lines
        for idx, _m in grep(index, _PRETTIER_VERDICT, ("\n[warn] Code style",)):
            prev = idx - 1
            while prev >= 0 and idx - prev <= _PRETTIER_FILES_MAX:
                m = _PRETTIER_FILE.match(lines[prev].text)
                if m is None:
                    break
                yield Hit(prev, "format-file", NAMES, m.group("path"))
                prev -= 1


class _EslintCrash:
    """ESLint's ``Oops! Something went wrong! :(`` and the message under it."""

    name = "eslint-crash"

    def find(self, index: TextIndex) -> Iterable[Hit]:
        lines = index.lines
        for idx in candidates(index, ("\nOops! Something went wrong!",)):
            yield Hit(idx, "eslint-crash", NAMES)
            taken = 0
            for nxt in range(idx + 1, min(len(lines), idx + 6)):
                text = lines[nxt].text.strip()
                if taken >= 1:  # the message; what follows is its stack
                    break
                if text and not text.startswith("ESLint: "):
                    taken += 1
                    yield Hit(nxt, "eslint-crash-detail", NAMES)


class _PreCommit:
    """``black....Failed``, then ``- hook id:``/``- exit code:``/``- files were modified``
    and the first lines the hook printed."""

    name = "precommit-failed"

    def find(self, index: TextIndex) -> Iterable[Hit]:
        lines = index.lines
        for idx, m in grep(index, _HOOK, (".Failed",)):
            yield Hit(idx, "precommit-failed", NAMES, group(m, "hook"))
            printed = 0
            for nxt in range(idx + 1, min(len(lines), idx + 1 + 2 * _HOOK_BLOCK)):
                text = lines[nxt].text
                if _HOOK.match(text) or re.match(r"^\S.*?\.{3,}.*(?:Passed|Skipped)$", text):
                    break
                if text.startswith("- "):
                    yield Hit(nxt, "precommit-hook", EXPLAINS)
                elif text.strip() and printed < _HOOK_BLOCK // 2:
                    printed += 1
                    yield Hit(nxt, "precommit-output", EXPLAINS)


ECOSYSTEM = Ecosystem(
    name="lint",
    recognisers=(
        _Codes(),
        LineRule("eslint-finding", NAMES, ("  error  ",), _ESLINT),
        LineRule(
            "eslint-summary",
            EXPLAINS,
            ("✖ ",),
            re.compile(r"^✖ \d+ problems? \(\d+ errors?"),
        ),
        _PreCommit(),
        _EslintCrash(),
        LineRule(
            "shellcheck-finding",
            NAMES,
            ("^-- SC",),
            re.compile(r"\^-- SC\d+ \((?:error|warning)\): \S"),
        ),
        LineRule(
            "format-check",
            EXPLAINS,
            ("would reformat ", "would be reformatted", "Code style issues found"),
            re.compile(r"^(?:would reformat |\d+ files? would be reformatted|\[warn\] Code style)"),
        ),
        LineRule("shellcheck-where", SURROUNDS, ("\nIn ",), re.compile(r"^In \S+ line \d+:$")),
        _Prettier(),
        LineRule(
            "markdownlint-finding",
            NAMES,
            (" MD0", " MD1", " MD2"),
            _MARKDOWNLINT,
            subject=lambda m: group(m, "where"),
        ),
        LineRule(
            "spelling",
            NAMES,
            (" ==> ",),
            _CODESPELL,
            subject=lambda m: group(m, "where"),
        ),
        LineRule(
            "lint-summary",
            EXPLAINS,
            ("\nCodespell found ", "\nSummary: "),
            re.compile(r"^Codespell found |^Summary: [1-9]\d* error\(s\)"),
        ),
    ),
    failure_kinds=frozenset(
        {
            "lint-finding",
            "eslint-finding",
            "eslint-crash",
            "eslint-crash-detail",
            "precommit-failed",
            "shellcheck-finding",
            "format-file",
            "markdownlint-finding",
            "spelling",
        }
    ),
)
