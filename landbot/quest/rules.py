"""The rules of `shared/specs/quest.md`, as pure functions of parsed quests.

No I/O: the caller says what kind of thing each non-quest link target is (`PathKind`),
because that needs the file system or git.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from enum import Enum

from landbot.quest import findings as msg
from landbot.quest.findings import Finding
from landbot.quest.graph import cycles
from landbot.quest.parse import QuestFile
from landbot.quest.tree import QUEST_DIR, README, ROOT, QuestTree


class PathKind(Enum):
    MISSING = "missing"
    FILE = "file"
    DIRECTORY = "directory"
    OTHER = "other"


def targets_to_look_up(quests: Mapping[str, QuestFile]) -> set[str]:
    """The resolved link targets that are not quests: their kind must be looked up."""
    wanted: set[str] = set()
    for quest in quests.values():
        for link in quest.links:
            resolved = link.resolved
            if resolved is not None and resolved not in quests:
                wanted.add(resolved)
    return wanted


def check_quests(
    quests: Mapping[str, QuestFile], kinds: Mapping[str, PathKind] | None = None
) -> list[Finding]:
    """Every finding for one tree. `kinds` gives the kind of each path that
    `targets_to_look_up` returned; a path it lacks counts as missing."""
    kinds = kinds or {}
    tree = QuestTree.build(quests)
    found: list[Finding] = []
    graph: dict[str, list[str]] = {}
    edge_line: dict[tuple[str, str], int] = {}
    for path in sorted(quests):
        quest = quests[path]
        found.extend(title_findings(path, quest, tree))
        successors: set[str] = set()
        for link in quest.links:
            resolved = link.resolved
            if resolved is not None and resolved in quests:
                successors.add(resolved)
                edge_line.setdefault((path, resolved), link.line)
                continue
            kind = PathKind.OTHER if resolved is None else kinds.get(resolved, PathKind.MISSING)
            text = (
                msg.missing_required(link.target)
                if kind is PathKind.MISSING
                else msg.not_a_quest(link.target)
            )
            found.append(Finding(path, link.line, text))
        graph[path] = sorted(successors)
    for path, loop in cycles(graph).items():
        found.append(Finding(path, edge_line[(path, loop[1])], msg.cycle(loop)))
    return found


def title_findings(path: str, quest: QuestFile, tree: QuestTree) -> Iterable[Finding]:
    if quest.bad_utf8_line:
        yield Finding(path, quest.bad_utf8_line, msg.NOT_UTF8)
    if path == ROOT:
        return  # the root is exempt from the title rules
    if not quest.has_title:
        yield Finding(path, quest.title_line, msg.NO_TITLE)
    elif tree.is_parent(path):
        if quest.title_has_size:
            yield Finding(path, quest.title_line, msg.PARENT_SIZED)
    elif not quest.standalone_title_ok:
        yield Finding(path, quest.title_line, msg.TITLE_FORMAT)


def branch_quest_paths(branch: str) -> tuple[str, str] | None:
    """A branch `quest/<p>` belongs to `quest/<p>.md` or `quest/<p>/README.md`."""
    prefix = QUEST_DIR + "/"
    if not branch.startswith(prefix):
        return None
    return f"{branch}.md", f"{branch}/{README}"


def branch_finding(branch: str | None, base_quests: Iterable[str]) -> Finding | None:
    """The branch rule: a `quest/<p>` branch must name a quest that exists on the base."""
    if not branch:
        return None
    candidates = branch_quest_paths(branch)
    if candidates is None:
        return None
    present = set(base_quests)
    if any(c in present for c in candidates):
        return None
    return Finding(branch, 0, msg.branch_names_no_quest(branch))
