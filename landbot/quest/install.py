"""Enable the quest merge driver in a repository: one `.gitattributes` line, two git settings.

Idempotent: running it again changes nothing and says so.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from landbot.errors import LandbotError
from landbot.quest.source import git, repo_root

ATTRIBUTES_LINE = "quest/**/*.md merge=quest"
DRIVER_COMMAND = "landbot quest merge-driver %O %A %B %P"
DRIVER_NAME = "landbot quest merge driver (## Required merged as a set)"


def self_command() -> str:
    """The driver command for this very interpreter, for a host (landbot's own merges) where
    `landbot` may not be on PATH."""
    return f"{shlex.quote(sys.executable)} -m landbot quest merge-driver %O %A %B %P"


def _set_config(root: Path, key: str, value: str) -> bool:
    current = git(root, "config", "--local", "--get", key)
    if current.returncode == 0 and current.stdout.decode().rstrip("\n") == value:
        return False
    done = git(root, "config", "--local", key, value)
    if done.returncode != 0:
        raise LandbotError(f"git config {key} failed: {done.stderr.decode().strip()}")
    return True


def install_merge_driver(root: str | Path, command: str = DRIVER_COMMAND) -> list[str]:
    """Write the attributes line and the git config in the repository at `root`.
    Returns one line per change made (empty when everything was already in place)."""
    top = repo_root(Path(root))
    changes: list[str] = []
    attributes = top / ".gitattributes"
    try:
        existing = attributes.read_bytes().decode("utf-8") if attributes.exists() else ""
    except (OSError, UnicodeDecodeError) as exc:
        raise LandbotError(f"cannot read {attributes}: {exc}; fix it and run again") from None
    if ATTRIBUTES_LINE not in (line.strip() for line in existing.splitlines()):
        eol = "\r\n" if "\r\n" in existing else "\n"
        separator = eol if existing and not existing.endswith("\n") else ""
        attributes.write_bytes((existing + separator + ATTRIBUTES_LINE + eol).encode("utf-8"))
        changes.append(f"added '{ATTRIBUTES_LINE}' to {attributes}")
    if _set_config(top, "merge.quest.name", DRIVER_NAME):
        changes.append(f"set git config merge.quest.name '{DRIVER_NAME}'")
    if _set_config(top, "merge.quest.driver", command):
        changes.append(f"set git config merge.quest.driver '{command}'")
    return changes
