"""Where a quest tree comes from: the work tree on disk, or a revision read with git.

Reading a revision never checks anything out and never touches the work tree or the index.
Problems that stop the check (no repository, an unknown revision, an unreadable file) raise
`LandbotError` with one line that names the fix.
"""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import Protocol

from landbot.errors import LandbotError
from landbot.quest.rules import PathKind
from landbot.quest.tree import QUEST_DIR

_CHUNK = 1 << 16


class Snapshot(Protocol):
    """A tree to check: every quest file's bytes, and the kind of any other path."""

    @property
    def files(self) -> dict[str, bytes]: ...

    def kinds(self, paths: Iterable[str]) -> dict[str, PathKind]: ...


GIT_TIMEOUT = 120.0  # seconds for one git command (they are all local plumbing)


def git(root: Path, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    # Plumbing only; still no hook or fsmonitor command, and an end (the tree may be a
    # hostile fix's, checked on landbot's host).
    argv = ["git", "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false"]
    try:
        return subprocess.run(
            [*argv, "-C", str(root), *args],
            input=stdin,
            capture_output=True,
            check=False,
            timeout=GIT_TIMEOUT,
        )
    except FileNotFoundError:
        raise LandbotError("git is not installed: install git to use --base") from None
    except subprocess.TimeoutExpired:
        raise LandbotError(
            f"git {args[0]} in {root} did not finish in {GIT_TIMEOUT:g} s; check the "
            "repository for a FIFO or a device where git expects a file"
        ) from None


def repo_root(start: Path) -> Path:
    """The top of the work tree that holds `start`."""
    if not start.is_dir():
        raise LandbotError(f"{start} is not a directory: pass --root the repository's work tree")
    done = git(start, "rev-parse", "--show-toplevel")
    if done.returncode != 0:
        raise LandbotError(
            f"no git repository at {start}: run it inside a repository or pass --root DIR"
        )
    return Path(done.stdout.decode().strip())


def current_branch(root: Path) -> str | None:
    """The checked-out branch's name; None on a detached HEAD or outside a repository."""
    done = git(root, "symbolic-ref", "--quiet", "--short", "HEAD")
    if done.returncode != 0:
        return None
    return done.stdout.decode("utf-8", errors="replace").strip() or None


class WorkTree:
    """The tree as it is on disk under `root`."""

    def __init__(self, root: Path) -> None:
        if not root.is_dir():
            raise LandbotError(f"{root} is not a directory: pass --root the repository's work tree")
        self.root = root
        self.files: dict[str, bytes] = {}
        top = root / QUEST_DIR
        if top.is_symlink():
            # Followed, it would check (and name in findings) whatever folder it points at.
            raise LandbotError(f"{QUEST_DIR} is a symbolic link: make it a folder of files")
        if top.is_dir():
            self._walk(str(top), QUEST_DIR)

    def _walk(self, folder: str, rel: str) -> None:
        try:
            entries = list(os.scandir(folder))
        except OSError as exc:
            raise LandbotError(f"cannot read folder {rel}: {exc.strerror}") from None
        for entry in entries:
            path = f"{rel}/{entry.name}"
            if entry.is_symlink():
                # Never followed: a link would read (and name) files outside the tree.
                raise LandbotError(f"cannot read {path}: not a regular file; restore or remove it")
            if entry.is_dir(follow_symlinks=False):
                self._walk(entry.path, path)
            elif entry.name.endswith(".md"):
                if entry.is_file():
                    self.files[path] = self._read(entry.path, path)
                elif not entry.is_dir():
                    # A dangling link or a special file named like a quest: cannot be read.
                    raise LandbotError(
                        f"cannot read {path}: not a regular file; restore or remove it"
                    )

    @staticmethod
    def _read(full: str, rel: str) -> bytes:
        # os.read, not open(): a tree of 10,000 small files reads measurably faster.
        try:
            fd = os.open(full, os.O_RDONLY)
            try:
                chunks = [os.read(fd, _CHUNK)]
                while len(chunks[-1]) == _CHUNK:
                    chunks.append(os.read(fd, _CHUNK))
            finally:
                os.close(fd)
        except OSError as exc:
            raise LandbotError(f"cannot read {rel}: {exc.strerror}; fix or remove it") from None
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    def kinds(self, paths: Iterable[str]) -> dict[str, PathKind]:
        result: dict[str, PathKind] = {}
        for path in paths:
            try:
                mode = os.stat(self.root / path).st_mode
            except (FileNotFoundError, NotADirectoryError):
                result[path] = PathKind.MISSING
                continue
            except OSError:
                result[path] = PathKind.OTHER
                continue
            if stat.S_ISREG(mode):
                result[path] = PathKind.FILE
            elif stat.S_ISDIR(mode):
                result[path] = PathKind.DIRECTORY
            else:
                result[path] = PathKind.OTHER
        return result


class Revision:
    """The tree of one revision, read from git's object store."""

    def __init__(self, root: Path, rev: str) -> None:
        self.root = root
        if git(root, "rev-parse", "--git-dir").returncode != 0:
            raise LandbotError(f"no git repository at {root}: --base needs one")
        if not rev or rev.startswith("-"):
            raise LandbotError(f"unknown revision {rev!r}: pass --base a commit, branch or tag")
        done = git(root, "rev-parse", "--verify", "--quiet", f"{rev}^{{tree}}")
        if done.returncode != 0:
            raise LandbotError(
                f"unknown revision {rev!r} in {root}: fetch it first "
                "(in GitHub Actions: actions/checkout with fetch-depth: 0)"
            )
        self.tree = done.stdout.decode().strip()
        prefix = git(root, "rev-parse", "--show-prefix").stdout.decode().strip()
        self.prefix = prefix  # "" unless root is a subfolder of the repository
        self.blobs = self._list_quests()
        self._files: dict[str, bytes] | None = None

    @property
    def quest_paths(self) -> list[str]:
        return sorted(self.blobs)

    @property
    def files(self) -> dict[str, bytes]:
        """The quests' contents, read from git on first use."""
        if self._files is None:
            contents = self._cat_blobs(sorted(set(self.blobs.values())))
            self._files = {path: contents[oid] for path, oid in self.blobs.items()}
        return self._files

    def _list_quests(self) -> dict[str, str]:
        """Each quest's path and blob id, from one `git ls-tree`."""
        listing = git(
            self.root,
            "--literal-pathspecs",
            "ls-tree",
            "-r",
            "-z",
            "--full-tree",
            self.tree,
            "--",
            f"{self.prefix}{QUEST_DIR}",
        )
        if listing.returncode != 0:
            raise LandbotError(f"git ls-tree failed: {listing.stderr.decode().strip()}")
        blobs: dict[str, str] = {}
        start = f"{self.prefix}{QUEST_DIR}/"
        for record in listing.stdout.split(b"\0"):
            if not record:
                continue
            meta, _, raw_path = record.partition(b"\t")
            _mode, kind, oid = meta.decode().split(" ")
            path = raw_path.decode("utf-8", errors="surrogateescape")
            if kind == "blob" and path.startswith(start) and path.endswith(".md"):
                blobs[path[len(self.prefix) :]] = oid
        return blobs

    def _cat_blobs(self, oids: list[str]) -> dict[str, bytes]:
        if not oids:
            return {}
        done = git(self.root, "cat-file", "--batch", stdin="\n".join(oids).encode() + b"\n")
        if done.returncode != 0:
            raise LandbotError(f"git cat-file failed: {done.stderr.decode().strip()}")
        out = done.stdout
        contents: dict[str, bytes] = {}
        pos = 0
        for oid in oids:
            end = out.index(b"\n", pos)
            header = out[pos:end].decode().split(" ")
            if len(header) != 3:
                raise LandbotError(f"git cat-file could not read object {oid}")
            size = int(header[2])
            contents[oid] = out[end + 1 : end + 1 + size]
            pos = end + 1 + size + 1
        return contents

    def kinds(self, paths: Iterable[str]) -> dict[str, PathKind]:
        asked = [p for p in sorted(set(paths)) if "\n" not in p]
        result = {p: PathKind.MISSING for p in paths}
        if not asked:
            return result
        lines = "".join(f"{self.tree}:{self.prefix}{p}\n" for p in asked).encode()
        done = git(self.root, "cat-file", "--batch-check", stdin=lines)
        if done.returncode != 0:
            raise LandbotError(f"git cat-file failed: {done.stderr.decode().strip()}")
        answers = done.stdout.decode("utf-8", errors="replace").split("\n")
        for path, answer in zip(asked, answers, strict=False):
            parts = answer.split(" ")
            if len(parts) == 3 and parts[1] == "blob":
                result[path] = PathKind.FILE
            elif len(parts) == 3 and parts[1] == "tree":
                result[path] = PathKind.DIRECTORY
            elif len(parts) == 3:
                result[path] = PathKind.OTHER
        return result
