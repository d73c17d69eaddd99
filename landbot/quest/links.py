"""Where a `## Required` link points, as GitHub renders it: relative to the quest's folder,
a leading `/` meaning the repository root."""

from __future__ import annotations

import posixpath
import re
from urllib.parse import unquote

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")
_SPECIAL = re.compile(r"[#?%\\:]")


def resolve(quest_path: str, target: str) -> str | None:
    """The repository-relative path a link points at, or None when it cannot point at a file
    of this repository (a URL, an anchor alone, a path above the repository root)."""
    if not target or target.startswith("//"):  # `//host/...` is a URL without a scheme
        return None
    if _SPECIAL.search(target):  # the plain case (almost every link) skips this
        if _SCHEME.match(target):
            return None
        target = target.split("#", 1)[0].split("?", 1)[0]
        if not target:
            return None  # an anchor in the quest itself
        target = unquote(_ESCAPE.sub(r"\1", target))
    if target.startswith("/"):
        joined = target.lstrip("/")
    else:
        folder = quest_path.rpartition("/")[0]
        joined = f"{folder}/{target}" if folder else target
    path = posixpath.normpath(joined)
    if path in (".", "..") or path.startswith("../") or path.startswith("/"):
        return None
    return path
