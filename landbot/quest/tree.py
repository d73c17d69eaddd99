"""The quest tree: which quest is whose parent, from the file paths alone.

A folder's `README.md` is the folder's own quest and the parent of the quests in that folder
and of the `README.md` of each direct subfolder. A folder without a `README.md` only groups:
its quests belong to the nearest `README.md` above it. `quest/README.md` is the root.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from dataclasses import dataclass, field

QUEST_DIR = "quest"
README = "README.md"
ROOT = f"{QUEST_DIR}/{README}"


def is_quest_path(path: str) -> bool:
    """Every `*.md` file below `quest/`, at any depth (a repository-relative POSIX path)."""
    return path.startswith(QUEST_DIR + "/") and path.endswith(".md")


@dataclass
class QuestTree:
    quests: frozenset[str]
    parent: dict[str, str | None] = field(default_factory=dict)
    children: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def build(cls, paths: Iterable[str]) -> QuestTree:
        quests = frozenset(paths)
        folders_with_readme = {
            posixpath.dirname(p) for p in quests if posixpath.basename(p) == README
        }
        tree = cls(quests)
        # The nearest README.md at or above a folder, memoized: a tree of 10,000 quests has
        # far fewer folders than quests.
        owner: dict[str, str | None] = {}

        def nearest(folder: str) -> str | None:
            chain: list[str] = []
            found: str | None = None
            while True:
                if folder in owner:
                    found = owner[folder]
                    break
                chain.append(folder)
                if folder in folders_with_readme:
                    found = f"{folder}/{README}"
                    break
                if folder == QUEST_DIR or "/" not in folder:
                    break
                folder = posixpath.dirname(folder)
            for visited in chain:
                owner[visited] = found
            return found

        for path in sorted(quests):
            folder = posixpath.dirname(path)
            if posixpath.basename(path) == README:
                # A folder's own quest belongs to the nearest README.md above its folder.
                parent = None if folder == QUEST_DIR else nearest(posixpath.dirname(folder))
            else:
                parent = nearest(folder)
            tree.parent[path] = parent
            if parent is not None:
                tree.children.setdefault(parent, []).append(path)
        return tree

    @property
    def root(self) -> str | None:
        return ROOT if ROOT in self.quests else None

    def is_parent(self, path: str) -> bool:
        """A quest with at least one child in this tree; one with none is standalone."""
        return bool(self.children.get(path))

    def grouping_folders(self) -> list[str]:
        """Folders below `quest/` that hold quests but have no `README.md` of their own."""
        folders: set[str] = set()
        for path in self.quests:
            folder = posixpath.dirname(path)
            while folder.startswith(QUEST_DIR + "/"):
                folders.add(folder)
                folder = posixpath.dirname(folder)
        return sorted(f for f in folders if f"{f}/{README}" not in self.quests)
