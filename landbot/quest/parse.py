"""Parse one quest file: its title line and the links of its `## Required` section.

Pure: bytes in, a `QuestFile` out. Never raises on any input (a non-UTF-8 file is decoded
with replacement characters and remembers where the first bad byte was).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from landbot.quest.links import resolve

_STANDALONE = re.compile(r"\[(?:XS|S|M|L|XL)\] \S")
# For a parent, any bracketed word at the start of the title counts as a size (spec).
_BRACKETED_WORD = re.compile(r"\[[^\[\]\s]+\]")
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
# A markdown inline link `[text](destination "title")`; one level of nested brackets in the
# text and of balanced parentheses in the destination, as people actually write them. It
# starts with a literal `[` (fast to scan for) and is possessive, so no input backtracks long.
_LINK = re.compile(
    r"""\[(?:[^\[\]\\]++|\\.|\[(?:[^\[\]\\]++|\\.)*+\])*+\]
    \(\s*+(?:<(?P<angle>[^<>\n]*+)>|(?P<bare>(?:[^\s()\\]++|\\.|\((?:[^\s()\\]++|\\.)*+\))++))
    (?:\s++(?:"[^"]*+"|'[^']*+'|\([^()]*+\)))?\s*+\)""",
    re.VERBOSE,
)
# Only lines that start like this can be a heading or a fence.
_MARKUP_START = frozenset("#`~ ")


@dataclass(frozen=True)
class Link:
    """A link in `## Required`: the destination as written, its 1-based line, and the
    repository-relative path it points at (None: it cannot point at a file here)."""

    target: str
    line: int
    resolved: str | None


@dataclass(frozen=True)
class QuestFile:
    path: str
    # The first non-blank line if it is a level-one heading (`# ...`), else None.
    heading: str | None
    # 1-based line of the first non-blank line; 1 when the file is blank.
    title_line: int
    links: tuple[Link, ...]
    # 1-based line of the first byte that is not UTF-8, 0 when the file is valid UTF-8.
    bad_utf8_line: int = 0

    @property
    def has_title(self) -> bool:
        return self.heading is not None and self.heading.strip() != ""

    @property
    def standalone_title_ok(self) -> bool:
        """`# [SIZE] Title`: one size, one space, a non-empty title."""
        return self.heading is not None and _STANDALONE.match(self.heading) is not None

    @property
    def title_has_size(self) -> bool:
        return self.heading is not None and _BRACKETED_WORD.match(self.heading.lstrip()) is not None


def decode(data: bytes) -> tuple[str, int]:
    """The text, and the 1-based line of the first invalid byte (0 if the bytes are UTF-8)."""
    try:
        text = data.decode("utf-8")
        bad_line = 0
    except UnicodeDecodeError as exc:
        bad_line = data.count(b"\n", 0, exc.start) + 1
        text = data.decode("utf-8", errors="replace")
    if text.startswith("\ufeff"):  # a byte-order mark is not part of the title
        text = text[1:]
    return text, bad_line


def _heading_level(line: str) -> int:
    """1 or 2 for an ATX heading of that level (`#`, `# x`, `##`, `## x`), else 0."""
    if line.startswith("# ") or line == "#":
        return 1
    if line.startswith("## ") or line == "##":
        return 2
    return 0


def parse_quest(path: str, data: bytes) -> QuestFile:
    text, bad_line = decode(data)
    # Lines as git and editors count them: split on LF only, drop a CR before it (CRLF files).
    lines = text.split("\n")
    heading: str | None = None
    title_line = 1
    for number, raw in enumerate(lines, 1):
        line = raw.rstrip()
        if line:
            title_line = number
            if _heading_level(line) == 1:
                heading = line[2:]
            break
    links: tuple[Link, ...] = ()
    if "## Required" in text:
        links = tuple(_required_links(path, lines, "```" in text or "~~~" in text))
    return QuestFile(path, heading, title_line, links, bad_line)


def required_sections(lines: list[str]) -> list[tuple[int, int]]:
    """Each `## Required` section as (index of its heading, index just past its end): it
    runs until the next `#` or `##` heading. Headings inside fenced code do not count."""
    sections: list[tuple[int, int]] = []
    start: int | None = None
    fence: str | None = None
    for index, raw in enumerate(lines):
        if fence is None and raw[:1] not in _MARKUP_START:
            continue
        line = raw.rstrip()
        if fence is not None:
            stripped = line.strip()
            if stripped.startswith(fence) and set(stripped) == {fence[0]}:
                fence = None
            continue
        opened = _FENCE.match(line)
        if opened:
            fence = opened.group(1)
            continue
        if _heading_level(line):
            if start is not None:
                sections.append((start, index))
            start = index if line == "## Required" else None
    if start is not None:
        sections.append((start, len(lines)))
    return sections


def fenced_lines(lines: list[str], start: int, end: int) -> set[int]:
    """Indexes in [start, end) that are fences or inside fenced code."""
    inside: set[int] = set()
    fence: str | None = None
    for index in range(start, end):
        line = lines[index].rstrip()
        if fence is not None:
            inside.add(index)
            stripped = line.strip()
            if stripped.startswith(fence) and set(stripped) == {fence[0]}:
                fence = None
            continue
        opened = _FENCE.match(line)
        if opened:
            inside.add(index)
            fence = opened.group(1)
    return inside


def _required_links(path: str, lines: list[str], fences: bool) -> list[Link]:
    links: list[Link] = []
    for start, end in required_sections(lines):
        code = fenced_lines(lines, start + 1, end) if fences else set()
        for index in range(start + 1, end):
            line = lines[index]
            if "](" in line and index not in code:
                links.extend(
                    Link(target, index + 1, resolve(path, target)) for target in link_targets(line)
                )
    return links


def link_targets(line: str) -> list[str]:
    """The destinations of the inline links on one line (not images, not inside code)."""
    if "`" in line:
        line = _CODE_SPAN.sub(lambda m: " " * len(m.group(0)), line)
    targets: list[str] = []
    for match in _LINK.finditer(line):
        at = match.start()
        if at and line[at - 1] == "!":
            continue  # an image
        backslashes = at - len(line[:at].rstrip("\\"))
        if backslashes % 2:
            continue  # `\[` is an escaped bracket, not a link
        angle = match.group("angle")
        targets.append(angle if angle is not None else match.group("bare"))
    return targets
