"""Why the quest check fails on a pull request: each finding explained from the change.

The findings come from the failing job's log (`quest: <path>: <message>` lines). A log is
untrusted text, so a line counts only when it matches one of the rules' own message
templates (`landbot.quest.findings.parse_rendered`), and only its path and parameter are
used, as keys to look up in the change; nothing in it is run or followed.

The change is the pull request's head against its merge base with the base branch: the
quest files on both sides and the files git saw moved. From it each finding gets one or
two sentences a person can act on, in the log's order:

    quest/m0/widgets.md: quest title must be '# [XS|S|M|L|XL] Title': this pull request
    adds the file with the title '# Widgets', without a size: give it one ...

`explain_findings` is pure (unit-tested per rule); `explain_policy` reads the change from
a repository (the cached bare mirror) with git plumbing and never raises for git trouble:
the explanations are an aid, the triage stands without them.
"""

from __future__ import annotations

import itertools
import logging
import posixpath
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from landbot.core.model import JobFailure
from landbot.errors import LandbotError
from landbot.quest.findings import RenderedFinding, parse_rendered
from landbot.quest.links import resolve
from landbot.quest.parse import QuestFile, decode, parse_quest
from landbot.quest.rules import branch_quest_paths
from landbot.quest.source import Revision, git
from landbot.quest.tree import QUEST_DIR, QuestTree, is_quest_path

log = logging.getLogger("landbot.triage.quest_explain")

MAX_EXPLAINED = 20  # findings explained per drop; the rest are counted
MAX_PATH_CHARS = 200
MAX_TITLE_CHARS = 120
MAX_NAMED = 5  # children or links named in one sentence

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_SIZE_WORD = re.compile(r"\s*\[[^\[\]\s]*\]\s*")
_ANNOTATION = "##[error]"

# --- the findings in a log ------------------------------------------------------------


def findings_in_jobs(jobs: Sequence[JobFailure]) -> list[RenderedFinding]:
    """The change's findings in the policy jobs' log excerpts, in log order, each once."""
    found: list[RenderedFinding] = []
    seen: set[tuple[str, str]] = set()
    for job in jobs:
        if job.class_ != "policy":
            continue
        for _, text in job.excerpt:
            finding = finding_in_line(text)
            if finding is not None and (finding.path, finding.message) not in seen:
                seen.add((finding.path, finding.message))
                found.append(finding)
    return found


def finding_in_line(text: str) -> RenderedFinding | None:
    """One log line's finding, if it is one whose path could be in this repository."""
    line = _ANSI.sub("", text).strip()
    line = line.removeprefix(_ANNOTATION).strip()
    finding = parse_rendered(line)
    if finding is None or not _plausible(finding):
        return None
    return finding


def _plausible(finding: RenderedFinding) -> bool:
    path = finding.path
    if len(path) > MAX_PATH_CHARS or _CONTROL.search(path):
        return False
    if finding.rule == "branch":
        return path == finding.param and path.startswith(QUEST_DIR + "/")
    return is_quest_path(path) and posixpath.normpath(path) == path


# --- the change -----------------------------------------------------------------------


@dataclass(frozen=True)
class QuestChange:
    """A pull request's quest files at its merge base and at its head, and the quest files
    git saw it move (old path -> new path)."""

    base: Mapping[str, bytes]
    head: Mapping[str, bytes]
    moved: Mapping[str, str] = field(default_factory=dict)

    @cached_property
    def base_quests(self) -> dict[str, QuestFile]:
        return {p: parse_quest(p, data) for p, data in self.base.items()}

    @cached_property
    def head_quests(self) -> dict[str, QuestFile]:
        return {p: parse_quest(p, data) for p, data in self.head.items()}

    @cached_property
    def base_tree(self) -> QuestTree:
        return QuestTree.build(self.base)

    @cached_property
    def head_tree(self) -> QuestTree:
        return QuestTree.build(self.head)

    @cached_property
    def moved_from(self) -> dict[str, str]:
        """new path -> old path."""
        return {new: old for old, new in self.moved.items()}

    def added(self, path: str) -> bool:
        return path in self.head and path not in self.base and path not in self.moved_from

    def deleted(self, path: str) -> bool:
        return path in self.base and path not in self.head and path not in self.moved

    def before(self, path: str) -> str | None:
        """Where the head's `path` was at the base (itself, or where it moved from)."""
        if path in self.moved_from:
            return self.moved_from[path]
        return path if path in self.base else None

    def base_children(self, path: str) -> list[str]:
        return list(self.base_tree.children.get(path, ()))

    def head_children(self, path: str) -> list[str]:
        return list(self.head_tree.children.get(path, ()))


# --- the explanations -----------------------------------------------------------------


def explain_findings(findings: Sequence[RenderedFinding], change: QuestChange) -> tuple[str, ...]:
    """One explanation per finding, in the findings' order; at most MAX_EXPLAINED, then one
    line that counts the rest."""
    out = [
        f"{f.path}: {f.message} — {explain_finding(f, change)}" for f in findings[:MAX_EXPLAINED]
    ]
    if len(findings) > MAX_EXPLAINED:
        more = len(findings) - MAX_EXPLAINED
        out.append(
            f"… and {more} more finding{'s' if more != 1 else ''}: the quest check lists all"
        )
    return tuple(_one_line(x) for x in out)


def explain_finding(finding: RenderedFinding, change: QuestChange) -> str:
    explain = _BY_RULE.get(finding.rule)
    text = explain(finding, change) if explain is not None else None
    return text or _not_from_this_change(finding, change)


def _title_format(f: RenderedFinding, c: QuestChange) -> str | None:
    quest = c.head_quests.get(f.path)
    if quest is None:
        return None
    title = _title(quest)
    wanted = f"'# [XS|S|M|L|XL] {_bare_title(quest)}'"
    if c.added(f.path):
        return (
            f"this pull request adds the file with the title {title}, without a size: give it "
            f"one ({wanted}); which size is the author's call"
        )
    old = c.before(f.path)
    lost = _lost_children(f.path, old, c) if old is not None else []
    if lost and not c.head_children(f.path):
        moved = f" (moved here from {old})" if old != f.path else ""
        return (
            f"{_and(lost)} left {f.path}{moved} without children, so it is now a standalone "
            f"quest and needs a size ({wanted}) for the work that remains, or it is finished "
            "too and can be deleted: a person decides which"
        )
    if old is not None and old in c.base_quests:
        was = c.base_quests[old]
        if was.standalone_title_ok and was.heading != quest.heading:
            return (
                f"this pull request changes its title from {_title(was)} to {title}, which "
                f"has no size: keep one ({wanted})"
            )
    return None


def _parent_sized(f: RenderedFinding, c: QuestChange) -> str | None:
    quest = c.head_quests.get(f.path)
    children = c.head_children(f.path)
    if quest is None or not children:
        return None
    size = _size_word(quest)
    old = c.before(f.path)
    had = set(c.base_children(old)) if old is not None else set()
    new = [x for x in children if c.before(x) not in had]
    fix = (
        f"take {size} out of its title ('# {_bare_title(quest)}') and size its children "
        "instead; each child's size is the author's call"
    )
    if c.added(f.path):
        return (
            f"this pull request adds it with the size {size}, but it has children "
            f"({_list(children)}): {fix}"
        )
    if new and not had:
        return (
            f"this pull request adds {_list(new)} below it, which makes it a parent quest, "
            f"whose size is the sum of its children's: {fix}"
        )
    if old is not None and old in c.base_quests and c.base_quests[old].heading != quest.heading:
        return (
            f"this pull request changes its title to {_title(quest)}, but it is a parent "
            f"({_list(children)}): {fix}"
        )
    return None


def _no_title(f: RenderedFinding, c: QuestChange) -> str | None:
    data = c.head.get(f.path)
    if data is None:
        return None
    first = _first_line(data)
    shown = f"starts with '{first}'" if first else "is empty"
    fix = "start it with a title '# [XS|S|M|L|XL] Title' (or '# Title' for a parent)"
    if c.added(f.path):
        return f"this pull request adds the file, which {shown}: {fix}"
    old = c.before(f.path)
    if old is not None and old in c.base_quests and c.base_quests[old].has_title:
        return (
            f"this pull request changes its first line from {_title(c.base_quests[old])}; "
            f"it now {shown}: {fix}"
        )
    return None


def _not_utf8(f: RenderedFinding, c: QuestChange) -> str | None:
    quest = c.head_quests.get(f.path)
    if quest is None or not quest.bad_utf8_line:
        return None
    old = c.before(f.path)
    if c.added(f.path):
        verb = "adds the file"
    elif old is not None and c.base.get(old) != c.head[f.path]:
        verb = "changes the file"
    else:
        return None
    return (
        f"this pull request {verb} with bytes that are not UTF-8 (line {quest.bad_utf8_line}): "
        "save it as UTF-8"
    )


def _link_target(f: RenderedFinding, quest: QuestFile) -> tuple[str | None, str]:
    """Where the finding's link points, and " (line N)" when the quest holds that link."""
    link = next((x for x in quest.links if x.target == f.param), None)
    if link is None:
        return resolve(f.path, f.param), ""
    return link.resolved, f" (line {link.line})"


def _link_is_new(f: RenderedFinding, c: QuestChange) -> bool:
    """Whether the pull request added the finding's link (the quest had none such at the base)."""
    old = c.before(f.path)
    was = c.base_quests.get(old) if old is not None else None
    return was is None or all(x.target != f.param for x in was.links)


def _missing_required(f: RenderedFinding, c: QuestChange) -> str | None:
    quest = c.head_quests.get(f.path)
    if quest is None:
        return None
    target, at = _link_target(f, quest)
    if target is None:
        return (
            f"the link '{_clip(f.param)}'{at} cannot point at a file of this repository: "
            "link the required quest by its path relative to this file"
        )
    if c.deleted(target):
        return (
            f"it requires {target}{at}, which this pull request deletes: if that quest is "
            "finished, take the link out of its '## Required' list (a mechanical fix)"
        )
    if target in c.moved:
        new = c.moved[target]
        return (
            f"it requires {target}{at}, which this pull request moves to {new}: point the "
            f"link at '{_relative(new, f.path)}' (a mechanical fix)"
        )
    old = c.before(f.path)
    if old is not None and old != f.path:
        meant = resolve(old, f.param)
        if meant is not None and c.deleted(meant):
            return (
                f"this pull request moves {old} to {f.path} and deletes {meant}, which its "
                f"link '{_clip(f.param)}'{at} required: if that quest is finished, take the "
                "link out of its '## Required' list (a mechanical fix)"
            )
        now = c.moved.get(meant, meant) if meant is not None else None
        if now is not None and now in c.head:
            return (
                f"this pull request moves {old} to {f.path}, so the relative link "
                f"'{_clip(f.param)}'{at} now points at {target}, which does not exist; it "
                f"meant {now}: point it at '{_relative(now, f.path)}' (a mechanical fix)"
            )
    if _link_is_new(f, c):
        return (
            f"this pull request adds the link to {target}{at}, which is no quest of the tree: "
            "link the quest that was meant, or add that quest; a person decides which"
        )
    return None


def _not_a_quest(f: RenderedFinding, c: QuestChange) -> str | None:
    quest = c.head_quests.get(f.path)
    if quest is None:
        return None
    target, at = _link_target(f, quest)
    where = target if target is not None else f"'{_clip(f.param)}'"
    if target is not None and target in c.moved_from and is_quest_path(c.moved_from[target]):
        src = c.moved_from[target]
        return (
            f"it requires {where}{at}, which this pull request moved there from the quest "
            f"{src}; a file outside quest/ or not ending in .md is not a quest: move it back "
            "or drop the link"
        )
    if _link_is_new(f, c):
        return (
            f"this pull request adds a '## Required' link to {where}{at}, which is not a quest "
            "(a .md file below quest/): link a quest, or move the link out of '## Required'"
        )
    return None


def _cycle(f: RenderedFinding, c: QuestChange) -> str | None:
    loop = [p.strip() for p in f.param.split(" -> ")]
    if len(loop) < 2:
        return None
    added: list[str] = []
    for a, b in itertools.pairwise(loop):
        quest = c.head_quests.get(a)
        if quest is None:
            return None
        line = next((x.line for x in quest.links if x.resolved == b), None)
        old_a, old_b = c.before(a), c.before(b)
        was = c.base_quests.get(old_a) if old_a is not None else None
        if was is None or all(x.resolved != old_b for x in was.links):
            added.append(f"{a} -> {b}" + (f" (line {line} of {a})" if line else ""))
    if not added:
        return None
    return (
        f"this pull request adds the link {_and(added)}, which closes the cycle: a quest "
        "cannot wait for itself; which link goes is a decision about the order of the work"
    )


def _branch(f: RenderedFinding, c: QuestChange) -> str | None:
    candidates = branch_quest_paths(f.path)
    if candidates is None:
        return None
    either = f"{candidates[0]} or {candidates[1]}"
    new = [p for p in candidates if c.added(p)]
    if new:
        return (
            f"this pull request adds {new[0]} itself, but a branch named after a quest is "
            "for finishing a quest the base already has: give the branch another name"
        )
    gone = [p for p in candidates if p in c.base]
    if gone:
        return (
            f"{gone[0]} was on the pull request's merge base but the base branch no longer "
            "has it (finished there?): rename the branch after a quest that is still open"
        )
    return (
        f"the base has neither {either}: a branch named quest/<path> must name the quest "
        "it finishes; rename the branch"
    )


_BY_RULE = {
    "title_format": _title_format,
    "parent_sized": _parent_sized,
    "no_title": _no_title,
    "not_utf8": _not_utf8,
    "missing_required": _missing_required,
    "not_a_quest": _not_a_quest,
    "cycle": _cycle,
    "branch": _branch,
}


def _not_from_this_change(f: RenderedFinding, c: QuestChange) -> str:
    if f.rule != "branch" and f.path not in c.head:
        return (
            "the pull request's head has no such file: the finding comes from the merge group "
            "(the base branch or a pull request ahead of this one); run the quest check on "
            "the merge group's commit to see it"
        )
    return (
        "landbot sees nothing in this pull request's own change that makes the rule fire "
        "here: it may come from the base branch or a pull request ahead of this one in the "
        "merge group"
    )


def _lost_children(path: str, old: str, c: QuestChange) -> list[str]:
    """How the quest lost the children it had at the base, as phrases."""
    now = set(c.head_children(path))
    lost: list[str] = []
    for child in c.base_children(old):
        if c.moved.get(child) in now:
            continue
        if c.deleted(child):
            lost.append(f"deleting {child}")
        elif child in c.moved:
            lost.append(f"moving {child} to {c.moved[child]}")
        elif child not in now:
            lost.append(f"moving {child} out from under it")
    return lost


# --- text helpers ---------------------------------------------------------------------


def _title(quest: QuestFile) -> str:
    return f"'# {_clip(quest.heading or '')}'"


def _bare_title(quest: QuestFile) -> str:
    """The title without any leading bracketed size."""
    heading = (quest.heading or "").strip()
    if heading.startswith("["):
        heading = _SIZE_WORD.sub("", heading, count=1)
    return _clip(heading) or "Title"


def _size_word(quest: QuestFile) -> str:
    heading = (quest.heading or "").lstrip()
    end = heading.find("]")
    return f"'{_clip(heading[: end + 1])}'" if heading.startswith("[") and end > 0 else "the size"


def _first_line(data: bytes) -> str:
    text, _ = decode(data)
    for raw in text.split("\n"):
        if raw.strip():
            return _clip(raw.strip())
    return ""


def _relative(target: str, quest_path: str) -> str:
    return posixpath.relpath(target, posixpath.dirname(quest_path))


def _clip(text: str, limit: int = MAX_TITLE_CHARS) -> str:
    text = _one_line(text)
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _one_line(text: str) -> str:
    return " ".join(_CONTROL.sub(" ", text).split())


def _list(items: Iterable[str]) -> str:
    names = list(items)
    shown = ", ".join(names[:MAX_NAMED])
    return shown + (f" and {len(names) - MAX_NAMED} more" if len(names) > MAX_NAMED else "")


def _and(phrases: Sequence[str]) -> str:
    if len(phrases) <= 1:
        return "".join(phrases)
    head = list(phrases[:MAX_NAMED])
    if len(phrases) > MAX_NAMED:
        return ", ".join(head) + f" and {len(phrases) - MAX_NAMED} more"
    return ", ".join(head[:-1]) + " and " + head[-1]


# --- from a repository ----------------------------------------------------------------


def read_change(repo: Path, head: str, base: str) -> QuestChange:
    """The quest files at the merge base of `head` and `base` and at `head`, and the quest
    files git sees moved between them. Works in a bare mirror; raises LandbotError."""
    found = git(repo, "merge-base", "--end-of-options", head, base)
    merge_base = found.stdout.decode().strip() if found.returncode == 0 else ""
    start = merge_base or base  # unrelated histories: compare with the base itself
    base_files = Revision(repo, start).files
    head_files = Revision(repo, head).files
    return QuestChange(base_files, head_files, moved_quests(repo, start, head))


def moved_quests(repo: Path, old: str, new: str) -> dict[str, str]:
    """Quest files git's rename detection pairs up between two commits."""
    done = git(
        repo,
        "diff-tree",
        "-r",
        "-z",
        "-M",
        "--name-status",
        "--no-commit-id",
        old,
        new,
        "--",
        QUEST_DIR,
    )
    if done.returncode != 0:
        raise LandbotError(
            f"git diff-tree {old[:12]} {new[:12]} failed in {repo}: "
            f"{done.stderr.decode('utf-8', 'replace').strip()[:200]}; fetch both commits"
        )
    fields = done.stdout.decode("utf-8", "surrogateescape").split("\0")
    moved: dict[str, str] = {}
    pos = 0
    while pos < len(fields) and fields[pos]:
        status = fields[pos]
        if status.startswith(("R", "C")) and pos + 2 < len(fields):
            if status.startswith("R"):
                moved[fields[pos + 1]] = fields[pos + 2]
            pos += 3
        else:
            pos += 2
    return moved


def explain_policy(repo: Path, head: str, base: str, jobs: Sequence[JobFailure]) -> tuple[str, ...]:
    """Evidence.quest_explanations for a policy drop: the log's findings explained from the
    pull request's change in `repo` (head against its merge base with `base`). Empty when
    the log shows no finding, or when git cannot read the change (logged: triage goes on)."""
    findings = findings_in_jobs(jobs)
    if not findings:
        return ()
    try:
        change = read_change(repo, head, base)
    except LandbotError as exc:
        log.warning("cannot explain the quest findings of %s: %s", head[:12], exc)
        return ()
    return explain_findings(findings, change)
