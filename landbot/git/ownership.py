"""Make a work tree usable by the sandbox uid, and check the uid can reach a path.

git refuses a repository owned by someone else ("dubious ownership"), so the work tree is
chowned to the sandbox uid. The walk never follows a symlink and leaves alone any file with
more than one link: a hard link may share its inode with something outside the work tree
(a `git clone --local` mirror's objects, or a link a previous job made), and chowning it
would hand that outside file to the sandbox.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from landbot.errors import LandbotError


def chown_tree(root: Path, uid: int, gid: int) -> int:
    """Chown `root` and everything under it to uid:gid; returns how many entries changed."""
    changed = 0

    def fix(path: str, st: os.stat_result) -> None:
        nonlocal changed
        if st.st_uid == uid and st.st_gid == gid:
            return
        if not stat.S_ISDIR(st.st_mode) and st.st_nlink > 1:
            return
        os.lchown(path, uid, gid)
        changed += 1

    fix(str(root), os.lstat(root))
    stack = [str(root)]
    while stack:
        folder = stack.pop()
        with os.scandir(folder) as entries:
            for entry in entries:
                st = entry.stat(follow_symlinks=False)
                fix(entry.path, st)
                if stat.S_ISDIR(st.st_mode):
                    stack.append(entry.path)
    return changed


def unreachable_by(path: Path, uid: int, gid: int) -> Path | None:
    """The first folder on the way to `path` that uid:gid cannot search, or None.

    bubblewrap binds paths as the sandbox uid, so a work tree under a mode-700 folder
    (such as /root or pytest's /tmp/pytest-of-root) cannot be bound at all.
    """
    current = Path("/")
    for part in path.parts[1:-1] if path.parts else ():
        current = current / part
        try:
            st = os.stat(current)
        except OSError:
            return current
        if st.st_uid == uid:
            bit = stat.S_IXUSR
        elif st.st_gid == gid:
            bit = stat.S_IXGRP
        else:
            bit = stat.S_IXOTH
        if not st.st_mode & bit:
            return current
    return None


def require_reachable(path: Path, uid: int, gid: int, what: str) -> None:
    blocked = unreachable_by(path, uid, gid)
    if blocked is not None:
        mode = "missing"
        with_mode = ""
        try:
            mode = oct(os.stat(blocked).st_mode & 0o777)[2:]
            with_mode = f" (mode {mode})"
        except OSError:
            pass
        raise LandbotError(
            f"the sandbox uid {uid} cannot reach {what} {path}: {blocked}{with_mode} is not "
            "searchable by it; put it under a folder every user can traverse (mode 755)"
        )
