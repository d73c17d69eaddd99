"""The quest merge driver: `## Required` merged as a set, the rest by `git merge-file`.

Two pull requests that each add a line to the same `Required` list conflict in a plain
three-way merge; as sets they do not. The list is cut out of all three versions and replaced
by a placeholder line, git merges the rest as text (conflict markers where both sides changed
the same lines), and the merged set goes back where the placeholder ends up.
"""

from __future__ import annotations

import re
import secrets
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from landbot.errors import LandbotError
from landbot.quest.parse import fenced_lines, required_sections
from landbot.quest.tree import is_quest_path

_ITEM = re.compile(r" {0,3}(?:[-*+]|\d{1,9}[.)])(?:[ \t]|\r?\n|$)")
LABELS = ("ours", "base", "theirs")


@dataclass(frozen=True)
class MergeResult:
    data: bytes
    conflicts: int  # conflict regions left in `data`; 0 when the merge is clean

    @property
    def clean(self) -> bool:
        return self.conflicts == 0


@dataclass
class _Cut:
    """One version with its Required list replaced by the placeholder line."""

    lines: list[str]
    items: list[tuple[str, str]] = field(default_factory=list)  # (key, text without eol)
    loose: bool = False


def _lines(text: str) -> list[str]:
    """Lines with their endings; split on LF only, as git does."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _eol(line: str) -> str:
    if line.endswith("\r\n"):
        return "\r\n"
    return "\n" if line.endswith("\n") else ""


def _content(line: str) -> str:
    return line.removesuffix("\n").removesuffix("\r")


def _cut(text: str, placeholder: str) -> _Cut:
    lines = _lines(text)
    sections = required_sections(lines)
    if not sections:
        return _Cut(lines)
    start, end = sections[0]
    code = fenced_lines(lines, start + 1, end)
    first = next(
        (i for i in range(start + 1, end) if i not in code and _ITEM.match(lines[i])), None
    )
    if first is None:
        # An empty list: the placeholder goes where a list would start.
        at = start + 1
        while at < end and not lines[at].strip():
            at += 1
        eol = _eol(lines[start]) or "\n"
        if not _eol(lines[at - 1]):
            lines[at - 1] += eol
        return _Cut([*lines[:at], placeholder + eol, *lines[at:]])

    cut = _Cut(lines)
    texts: list[list[str]] = []
    blanks = 0
    last = first
    index = first
    while index < end and index not in code:
        line = lines[index]
        body = _content(line)
        if _ITEM.match(line):
            if blanks and texts:
                cut.loose = True
            texts.append([body])
            blanks, last = 0, index
        elif not body.strip():
            blanks += 1
        elif line[0] in " \t":  # an indented continuation of the item above
            texts[-1].extend([""] * blanks + [body])
            blanks, last = 0, index
        else:
            break
        index += 1
    for item in texts:
        key = "\n".join(part.rstrip() for part in item)
        cut.items.append((key, "\n".join(item)))
    cut.lines = [*lines[:first], placeholder + _eol(lines[last]), *lines[last + 1 :]]
    return cut


def merge_sets(
    base: list[tuple[str, str]], ours: list[tuple[str, str]], theirs: list[tuple[str, str]]
) -> list[tuple[str, str]]:
    """Added on either side: kept. Removed on either side: removed. Ours' order, with each of
    theirs' additions placed after the item it follows in theirs (and after ours' additions
    there)."""
    base_keys = {key for key, _ in base}
    removed = (base_keys - {key for key, _ in ours}) | (base_keys - {key for key, _ in theirs})
    result: list[tuple[str, str]] = []
    present: set[str] = set()
    for key, text in ours:
        if key not in removed and key not in present:
            result.append((key, text))
            present.add(key)
    in_theirs = {key for key, _ in theirs}
    anchor: str | None = None
    for key, text in theirs:
        if key in removed:
            continue
        if key not in present:
            at = 0 if anchor is None else [k for k, _ in result].index(anchor) + 1
            # Ours' own additions right after the anchor come first: two pull requests that
            # both append to a list merge as ours, then theirs.
            while at < len(result) and result[at][0] not in in_theirs:
                at += 1
            result.insert(at, (key, text))
            present.add(key)
        anchor = key
    return result


def merge_text(
    base: bytes, ours: bytes, theirs: bytes, labels: tuple[str, str, str] = LABELS
) -> MergeResult:
    """git's own three-way text merge (`git merge-file`)."""
    with tempfile.TemporaryDirectory(prefix="landbot-merge-") as tmp:
        names = []
        for name, data in (("ours", ours), ("base", base), ("theirs", theirs)):
            file = Path(tmp) / name
            file.write_bytes(data)
            names.append(str(file))
        try:
            done = subprocess.run(
                [
                    "git",
                    "merge-file",
                    "-p",
                    "-L",
                    labels[0],
                    "-L",
                    labels[1],
                    "-L",
                    labels[2],
                    *names,
                ],
                capture_output=True,
                check=False,
            )
        except FileNotFoundError:
            raise LandbotError("git is not installed: the merge driver needs git") from None
    if not 0 <= done.returncode < 128:
        reason = done.stderr.decode("utf-8", errors="replace").strip() or "unknown error"
        raise LandbotError(f"git merge-file failed: {reason}")
    return MergeResult(done.stdout, done.returncode)


def _new_placeholder(*texts: str) -> str:
    while True:
        token = f"LANDBOT-QUEST-REQUIRED-LIST-{secrets.token_hex(8)}"
        if not any(token in text for text in texts):
            return token


def merge_quest(
    base: bytes, ours: bytes, theirs: bytes, labels: tuple[str, str, str] = LABELS
) -> MergeResult:
    """Merge three versions of one quest file."""
    # surrogateescape: any bytes (a non-UTF-8 quest too) survive the round trip unchanged.
    texts = [data.decode("utf-8", errors="surrogateescape") for data in (base, ours, theirs)]
    placeholder = _new_placeholder(*texts)
    base_cut, ours_cut, theirs_cut = (_cut(text, placeholder) for text in texts)
    items = merge_sets(base_cut.items, ours_cut.items, theirs_cut.items)
    if not (base_cut.items or ours_cut.items or theirs_cut.items):
        return merge_text(base, ours, theirs, labels)

    def encode(cut: _Cut) -> bytes:
        return "".join(cut.lines).encode("utf-8", errors="surrogateescape")

    merged = merge_text(encode(base_cut), encode(ours_cut), encode(theirs_cut), labels)
    text = merged.data.decode("utf-8", errors="surrogateescape")
    loose = ours_cut.loose or (not ours_cut.items and theirs_cut.loose)
    out: list[str] = []
    placed = False
    for line in _lines(text):
        if _content(line) != placeholder:
            out.append(line)
            continue
        placed = True
        if items:
            eol = _eol(line) or ("\r\n" if "\r\n" in text else "\n")
            out.append((eol * 2 if loose else eol).join(t.replace("\n", eol) for _, t in items))
            out.append(_eol(line))
    if not placed and items:
        # One side deleted the whole section while the other added to it: the additions
        # stand (set semantics), in a section of their own at the end.
        eol = "\r\n" if "\r\n" in text else "\n"
        if out and not out[-1].endswith("\n"):
            out.append(eol)
        out.append(f"{eol}## Required{eol}{eol}")
        out.append("".join(t.replace("\n", eol) + eol for _, t in items))
    result = "".join(out).encode("utf-8", errors="surrogateescape")
    return MergeResult(result, merged.conflicts)


def merge_driver(base: Path, ours: Path, theirs: Path, path: str | None = None) -> int:
    """git's merge-driver contract: the result goes to `ours`; 0 when clean, 1 when conflict
    markers remain. A path that is not a quest gets git's plain text merge."""
    try:
        data = [file.read_bytes() for file in (base, ours, theirs)]
    except OSError as exc:
        raise LandbotError(f"merge driver cannot read {exc.filename}: {exc.strerror}") from None
    merge = merge_quest if path is None or is_quest_path(path) else merge_text
    result = merge(data[0], data[1], data[2])
    ours.write_bytes(result.data)
    return 0 if result.clean else 1
