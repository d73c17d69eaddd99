"""Findings: what `landbot quest check` reports, and the exact message texts of the spec."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

SIZES = ("XS", "S", "M", "L", "XL")

# The message texts are part of the contract (shared/specs/quest.md): keep them verbatim.
TITLE_FORMAT = "quest title must be '# [XS|S|M|L|XL] Title'"
PARENT_SIZED = "a parent quest's title carries no size: size its children instead"
NO_TITLE = "quest has no title: its first line must be '# [XS|S|M|L|XL] Title'"
ON_BASE_PREFIX = "(already on the base) "
# The spec asks for a finding (not a crash) but names no text; this one says what to do.
NOT_UTF8 = "quest is not UTF-8 text: save it as UTF-8"


def missing_required(target: str) -> str:
    return f"required quest {target} does not exist"


def not_a_quest(target: str) -> str:
    return f"required link {target} is not a quest"


def cycle(paths: Iterable[str]) -> str:
    return "required quests form a cycle: " + " -> ".join(paths)


def branch_names_no_quest(branch: str) -> str:
    return f"branch {branch} names no quest on the base"


@dataclass(frozen=True, order=True)
class Finding:
    """One broken rule. `line` is 1-based, or 0 when the finding is about no particular line
    (a branch name). `on_base` marks a finding the base revision already had: it is printed
    but is not the change's fault."""

    path: str
    line: int
    message: str
    on_base: bool = False

    def render(self) -> str:
        prefix = ON_BASE_PREFIX if self.on_base else ""
        return f"quest: {self.path}: {prefix}{self.message}"

    def as_json(self) -> dict[str, object]:
        return {
            "path": self.path,
            "line": self.line,
            "message": self.message,
            "on_base": self.on_base,
        }


RuleName = Literal[
    "title_format",
    "parent_sized",
    "no_title",
    "not_utf8",
    "missing_required",
    "not_a_quest",
    "cycle",
    "branch",
]
_FIXED: dict[str, RuleName] = {
    TITLE_FORMAT: "title_format",
    PARENT_SIZED: "parent_sized",
    NO_TITLE: "no_title",
    NOT_UTF8: "not_utf8",
}
_SLOT = "\0"  # the parameter's place in a template, to split it into its fixed words


def _split(rule: RuleName, template: str) -> tuple[RuleName, str, str]:
    before, _, after = template.partition(_SLOT)
    return rule, before, after


# Built from the message functions themselves, so a changed text cannot go unmatched.
_TEMPLATES: tuple[tuple[RuleName, str, str], ...] = (
    _split("missing_required", missing_required(_SLOT)),
    _split("not_a_quest", not_a_quest(_SLOT)),
    _split("cycle", cycle([_SLOT])),
    _split("branch", branch_names_no_quest(_SLOT)),
)


@dataclass(frozen=True)
class RenderedFinding:
    """One `quest: <path>: <message>` line read back: which rule fired, on what, and the
    rule's parameter (a link target, a cycle's paths, a branch name; "" for the others)."""

    path: str
    rule: RuleName
    message: str
    param: str = ""


def parse_rendered(line: str) -> RenderedFinding | None:
    """The finding a `quest check` output line reports, matched against the rules' own
    message templates; None for anything else, and for a finding already on the base (not
    the change's). Reads text only: whatever the line says is never acted on."""
    if not line.startswith("quest: "):
        return None
    rest = line[len("quest: ") :]
    for message, rule in _FIXED.items():
        if rest.endswith(": " + message) and len(rest) > len(message) + 2:
            return RenderedFinding(rest[: -len(message) - 2], rule, message)
    for rule, before, after in _TEMPLATES:
        head, sep, tail = rest.partition(": " + before)
        if not sep or not head or not tail.endswith(after) or len(tail) <= len(after):
            continue
        param = tail[: len(tail) - len(after)] if after else tail
        return RenderedFinding(head, rule, before + param + after, param)
    return None


def sort_findings(findings: Iterable[Finding]) -> list[Finding]:
    """By path, then line (then message, so the order never depends on how they were found)."""
    return sorted(findings, key=lambda f: (f.path, f.line, f.message, f.on_base))


def failing(findings: Iterable[Finding]) -> list[Finding]:
    """The findings that make the check fail (exit 1): those the base did not already have."""
    return [f for f in findings if not f.on_base]
