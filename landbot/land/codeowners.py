"""Who owns a path, as GitHub reads CODEOWNERS. Pure.

GitHub's rules ("About code owners"): one `pattern owner…` per line, `#` starts a comment,
the LAST matching pattern wins, a pattern without owners leaves its paths unowned, and
patterns follow .gitignore's syntax except `!` negation and `[ ]` ranges (not supported:
such a line is skipped). Owners are `@user`, `@org/team` or an email address.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# A test id names its file first in most runners: pytest `tests/a.py::test_x`, Jest and
# Vitest `src/a.test.ts > suite > name`, RSpec `./spec/a_spec.rb:12`.
_TEST_FILE = re.compile(r"^\.?/?(?P<path>[\w.@+-]+(?:/[\w.@+-]+)*\.[A-Za-z0-9]+)(?:$|::| > |:\d| )")


@dataclass(frozen=True)
class Rule:
    pattern: str
    owners: tuple[str, ...]
    regex: re.Pattern[str]


def parse(text: str) -> tuple[Rule, ...]:
    """The rules of a CODEOWNERS file, in file order (unsupported lines skipped)."""
    rules: list[Rule] = []
    for raw in text.splitlines():
        line = raw.split(" #", 1)[0].strip() if not raw.lstrip().startswith("#") else ""
        if not line:
            continue
        pattern, *owners = line.split()
        if pattern.startswith("!") or "[" in pattern:
            continue  # GitHub does not support these either
        pattern = pattern.replace("\\#", "#")
        rules.append(Rule(pattern, tuple(owners), _regex(pattern)))
    return tuple(rules)


def _regex(pattern: str) -> re.Pattern[str]:
    directory = pattern.endswith("/")
    body = pattern.strip("/")
    # A separator at the start or in the middle anchors the pattern at the root; else it
    # matches at any depth (.gitignore).
    anchored = pattern.startswith("/") or "/" in body
    out = ""
    i = 0
    while i < len(body):
        if body.startswith("**/", i):
            out += "(?:.*/)?"
            i += 3
        elif body.startswith("**", i):
            out += ".*"
            i += 2
        elif body[i] == "*":
            out += "[^/]*"
            i += 1
        elif body[i] == "?":
            out += "[^/]"
            i += 1
        else:
            out += re.escape(body[i])
            i += 1
    prefix = "^" if anchored else "^(?:.*/)?"
    # A directory pattern owns what is under it; any other also owns a directory's files,
    # except `dir/*`, which GitHub documents as not reaching nested files.
    if directory:
        suffix = "/.*$"
    elif body.endswith("/*"):
        suffix = "$"
    else:
        suffix = "(?:/.*)?$"
    return re.compile(prefix + out + suffix)


def owners_of(rules: tuple[Rule, ...], path: str) -> tuple[str, ...]:
    """The owners of `path` (the last matching rule's; none when no rule matches)."""
    path = path.removeprefix("./").lstrip("/")
    found: tuple[str, ...] = ()
    for rule in rules:
        if rule.regex.match(path):
            found = rule.owners
    return found


def test_path(test: str) -> str | None:
    """The file a test id names (`tests/a.py::test_x` → `tests/a.py`); None when it names
    none (a Go `TestX`, a bare name)."""
    m = _TEST_FILE.match(test.strip())
    return m.group("path") if m else None


def test_owners(text: str | None, test: str) -> tuple[str, ...]:
    """The owners of a test's file by the CODEOWNERS `text` (none without a file or path;
    a test naming no file gets the owners of the file's catch-all rule, `*`, if any)."""
    if not text:
        return ()
    rules = parse(text)
    path = test_path(test)
    if path is None:
        catch_all = [r for r in rules if r.pattern in ("*", "/*", "**", "/**")]
        return catch_all[-1].owners if catch_all else ()
    return owners_of(rules, path)
