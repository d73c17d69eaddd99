"""`landbot quest check`: the rules over the work tree, compared with a base revision."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from landbot.quest.findings import Finding, sort_findings
from landbot.quest.parse import QuestFile, parse_quest
from landbot.quest.rules import branch_finding, check_quests, targets_to_look_up
from landbot.quest.source import Revision, Snapshot, WorkTree


def parse_snapshot(
    snapshot: Snapshot, cache: dict[tuple[str, bytes], QuestFile] | None = None
) -> dict[str, QuestFile]:
    """Parse every quest; `cache` lets a base and a head that share most files parse once."""
    parsed: dict[str, QuestFile] = {}
    for path, data in snapshot.files.items():
        if cache is None:
            parsed[path] = parse_quest(path, data)
            continue
        key = (path, data)
        quest = cache.get(key)
        if quest is None:
            quest = cache[key] = parse_quest(path, data)
        parsed[path] = quest
    return parsed


def check_snapshot(
    snapshot: Snapshot, cache: dict[tuple[str, bytes], QuestFile] | None = None
) -> list[Finding]:
    quests = parse_snapshot(snapshot, cache)
    kinds = snapshot.kinds(targets_to_look_up(quests))
    return sort_findings(check_quests(quests, kinds))


def check_tree(
    root: str | Path, base: str | None = None, branch: str | None = None
) -> list[Finding]:
    """Check the quest tree in the work tree at `root`, as it is on disk.

    With `base` (a revision of the repository at `root`), findings that the base already has
    (same file and message) come back with `on_base=True`, and `branch` (a pull request's
    head branch name) is checked against the base's quests. `branch` is used only as given:
    callers that want the checked-out branch pass `current_branch(root)`.
    Raises `LandbotError` for a missing repository, an unknown revision, an unreadable file.
    """
    root = Path(root)
    cache: dict[tuple[str, bytes], QuestFile] = {}
    head = WorkTree(root)
    findings = check_snapshot(head, cache)
    if base is None:
        return findings
    base_tree = Revision(root, base)
    marked = list(findings)
    if findings:  # a clean change needs no base findings: skip reading and checking the base
        known = {(f.path, f.message) for f in check_snapshot(base_tree, cache)}
        marked = [replace(f, on_base=True) if (f.path, f.message) in known else f for f in findings]
    extra = branch_finding(branch, base_tree.quest_paths)
    if extra is not None:
        marked.append(extra)
    return sort_findings(marked)
