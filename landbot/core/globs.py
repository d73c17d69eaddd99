"""Path globs (`[fixer] protected_paths`) compiled to linear-time patterns (RE2).

`**` any number of folders, `*` and `?` within one name, `[...]` a class (`[!...]`
negated); a trailing `/` means everything below. A glob comes from the host's settings or a
repository's file and is matched against every path a fix touches, so it is compiled by
RE2 (core/linear.py): `**a**a**a…` cannot make publishing take exponential time. Pure.
"""

from __future__ import annotations

import re
from functools import lru_cache

from landbot.core.linear import LinearError, LinearPattern, compile_linear

# A repository's file adds globs to the host's: their number and size are bounded.
MAX_GLOBS = 50
MAX_GLOB = 200
_CLASS = re.compile(r"\[([^\]]*)\]")  # as glob_source reads one: to the first `]`


def _literal(c: str) -> str:
    # \x{…} names any character to RE2 whatever it is (a space, a tab, `-`, a letter).
    return c if c.isalnum() or c == "_" else f"\\x{{{ord(c):x}}}"


def glob_source(glob: str) -> str:
    """The RE2 source of `glob`, anchored at both ends of a path."""
    glob = glob.strip().lstrip("/")
    if glob.endswith("/"):
        glob += "**"
    out: list[str] = []
    i = 0
    while i < len(glob):
        c = glob[i]
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            end = glob.find("]", i + 1)
            if end == -1:
                out.append(_literal(c))
                i += 1
            else:
                body = glob[i + 1 : end]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append(f"[{body}]")
                i = end + 1
        else:
            out.append(_literal(c))
            i += 1
    return "".join(out) + r"\z"


@lru_cache(maxsize=256)
def glob_pattern(glob: str) -> LinearPattern:
    """`glob` compiled (`.match(path)` is whether it covers `path`); LinearError (one line)
    for a glob RE2 cannot compile, such as `x[]y` or `[z-a]`."""
    try:
        return compile_linear(glob_source(glob))
    except LinearError:
        pass
    # Only a class is written raw into the source: name the one RE2 refused.
    for found in _CLASS.finditer(glob):
        body = found.group(1)
        try:
            compile_linear(f"[{'^' + body[1:] if body.startswith('!') else body}]")
        except LinearError:
            bad = found.group(0)
            break
    else:
        bad = glob
    raise LinearError(
        f"the glob {glob!r} has a bad character class ({bad}); "
        "write [abc] or [a-z] (low to high), [!abc] for any other, or [[] for a literal ["
    )


def glob_problem(glob: str) -> str | None:
    """Why `glob` cannot be a protected path (one line with the fix), or None."""
    if not glob.strip():
        return "a protected path cannot be blank; write a glob, e.g. 'infra/**'"
    if len(glob) > MAX_GLOB:
        return f"the glob has {len(glob)} characters; shorten it to {MAX_GLOB} or fewer"
    try:
        glob_pattern(glob)
    except LinearError as exc:
        return str(exc)
    return None
