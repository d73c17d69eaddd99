"""Which files conflict when the base is merged into a pull request's head.

``git merge-tree --write-tree`` (git 2.38 or newer) does the real merge inside the object
database, so it works in a bare mirror, touches no work tree or index, and runs no hooks.
When every conflicting file is a quest file (``quest/**/*.md``), the quest merge driver
may resolve the conflict without an agent.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from landbot.errors import LandbotError

MIN_GIT = (2, 38)


@dataclass(frozen=True)
class ConflictReport:
    files: tuple[str, ...]
    """Conflicting paths, in git's order, each once."""
    messages: tuple[str, ...]
    """git's CONFLICT lines (``CONFLICT (modify/delete): …``): what kind each one is."""
    tree: str
    """The tree git wrote for the merge (with conflict markers in conflicting files)."""

    @property
    def clean(self) -> bool:
        return not self.files

    @property
    def all_quest(self) -> bool:
        """Every conflicting file is a quest file: a case for the quest merge driver."""
        return bool(self.files) and all(is_quest_file(f) for f in self.files)


def is_quest_file(path: str) -> bool:
    """Whether `path` matches ``quest/**/*.md`` (any depth, as in .gitattributes)."""
    return path.startswith("quest/") and path.endswith(".md")


def merge_conflicts(repo: Path, head: str, base: str, *, git: str = "git") -> ConflictReport:
    """Merge `base` into `head` in the (bare or not) repository `repo`; list the conflicts.

    Raises LandbotError with one line when git is too old, a revision is missing or the
    histories are unrelated.
    """
    _check_git(git)
    for rev in (head, base):
        found = _git(git, repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
        if found.returncode != 0:
            raise LandbotError(
                f"revision {rev!r} is not a commit in {repo}; fetch it into the mirror first"
            )
    done = _git(
        git,
        repo,
        "merge-tree",
        "--write-tree",
        "--name-only",
        "--messages",
        "-z",
        head,
        base,
    )
    # Exit 0: clean; 1: conflicts (the tree is still written); anything else: an error.
    if done.returncode not in (0, 1) or not done.stdout:
        detail = done.stderr.decode("utf-8", "replace").strip().splitlines()
        reason = detail[-1] if detail else f"exit code {done.returncode}"
        raise LandbotError(
            f"git merge-tree of {head} and {base} failed in {repo}: {reason}; "
            "merge them by hand to see why"
        )
    return parse_merge_tree(done.stdout, conflicted=done.returncode == 1)


def parse_merge_tree(out: bytes, *, conflicted: bool) -> ConflictReport:
    """Parse ``git merge-tree --write-tree --name-only --messages -z`` output.

    It is: the tree id, NUL; when conflicted, each path NUL then an empty field; then
    messages, each ``<count> NUL <path>… NUL <type> NUL <message> NUL``.
    """
    fields = out.decode("utf-8", "surrogateescape").split("\0")
    tree = fields[0].strip()
    files: list[str] = []
    pos = 1
    if conflicted:
        while pos < len(fields) and fields[pos] != "":
            if fields[pos] not in files:
                files.append(fields[pos])
            pos += 1
        pos += 1  # the empty field that ends the list
    messages: list[str] = []
    while pos < len(fields) and fields[pos].isdigit():
        count = int(fields[pos])
        kind_at = pos + 1 + count
        if kind_at + 1 >= len(fields):
            break
        kind, message = fields[kind_at], fields[kind_at + 1].strip()
        if kind.startswith("CONFLICT"):
            messages.append(message)
        pos = kind_at + 2
    return ConflictReport(tuple(files), tuple(messages), tree)


MERGE_TIMEOUT = 300.0  # seconds for one git command of the conflict check


def _git(git: str, repo: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    # No hooks, no user or system configuration: the result depends on the repository alone.
    env = {
        **os.environ,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_TERMINAL_PROMPT": "0",
        "LC_ALL": "C",
    }
    try:
        return subprocess.run(
            [git, "-C", str(repo), "-c", "core.hooksPath=/dev/null", *args],
            capture_output=True,
            env=env,
            check=False,
            timeout=MERGE_TIMEOUT,
        )
    except FileNotFoundError:
        raise LandbotError(f"{git} is not installed; install git 2.38 or newer") from None
    except subprocess.TimeoutExpired:
        raise LandbotError(
            f"git {args[0]} did not finish in {MERGE_TIMEOUT:g} s; retry, or merge by hand"
        ) from None


def _check_git(git: str) -> None:
    try:
        done = subprocess.run([git, "--version"], capture_output=True, text=True, check=False)
    except FileNotFoundError:
        raise LandbotError(f"{git} is not installed; install git 2.38 or newer") from None
    m = re.search(r"(\d+)\.(\d+)", done.stdout)
    if m is None or (int(m.group(1)), int(m.group(2))) < MIN_GIT:
        raise LandbotError(
            f"{done.stdout.strip() or git} is too old for merge-tree --write-tree; "
            "install git 2.38 or newer"
        )
