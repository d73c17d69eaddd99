"""Commands in a pull request comment: `/landbot retry`, `@<app slug> skip`, ... (pure).

    parse_command(body, names)   # the comment's command for these names, or None
    candidate_lines(body)        # the lines that may be a command, for the webhook path
    may_retry(lines)             # whether they may be a `retry` (its job waits for the PR's)

A command is a line of the comment, outside fenced and indented code, `>` quotes (with
their lazy continuation lines) and `<!-- … -->` comments (see `_prose_lines`), that
starts with one of `names` and then a word: `retry`, `skip`, `unskip` or `help`. A name
without `@` is the slash form (`"landbot"` is `/landbot`); one with `@` a mention (the App's
`@<slug>` and `@<slug>[bot]`). Case is ignored. Anything else after the name, or nothing,
is `Command("unknown")` or `Command("help")`: the person gets the help text. The first
command line of a comment counts; the words after the command are kept (`args`), unused.

Why two functions: the webhook path must stay cheap and cannot call GitHub, so it does not
know the App's slug (`gh.bot_login()` does). It records a command job only for a comment
with a candidate line: a `/landbot` line, an `@<login>[bot]` line, or an `@<login>` line
followed by a command word. `@alice thanks` costs nothing; `@alice retry` costs a job,
which the worker drops once `parse_command` with the real names says it is not landbot's.
The job carries the candidate lines (bounded), so the worker decides which one is the
command without the comment body. One consequence: `@<slug> frobnicate` (an unknown word
after the bare slug) gets no help text; `/landbot frobnicate` and `@<slug>[bot] frobnicate`
do.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

COMMANDS = ("retry", "skip", "unskip", "help")
SLASH_NAME = "landbot"
# What a job keeps of a comment: enough lines to find the first command, each short enough
# that a long line cannot bloat the job table (the command word comes first anyway).
MAX_CANDIDATES = 10
MAX_LINE = 200

# A fence opens with three or more backticks or tildes, indented by at most three spaces.
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
# A GitHub login: alphanumerics and single hyphens, at most 39 characters; an App's bot
# account adds `[bot]`.
_MENTION = re.compile(r"@([A-Za-z0-9](?:[A-Za-z0-9-]{0,38}))(\[bot\])?(?=\s|$)", re.IGNORECASE)
_SLASH = re.compile(r"/landbot(?=\s|$)", re.IGNORECASE)


@dataclass(frozen=True)
class Command:
    name: str  # retry | skip | unskip | help | unknown
    args: tuple[str, ...]  # the words after the command (for unknown: the word itself first)
    line_text: str  # the command's line as written (stripped), for the reply to quote


def _columns(raw: str) -> int:
    """The line's indentation in columns (a tab goes to the next multiple of 4)."""
    col = 0
    for ch in raw:
        if ch == " ":
            col += 1
        elif ch == "\t":
            col += 4 - col % 4
        else:
            break
    return col


def _outside_comments(raw: str, inside: bool) -> tuple[str, bool]:
    """The line without its `<!-- … -->` spans (GitHub shows none of their text), and
    whether a comment is still open at its end. A line that starts inside a comment, or
    with `<!--`, is hidden whole: "" (an HTML block, CommonMark §4.6)."""
    hidden = inside or raw.lstrip().startswith("<!--")
    out, rest = [], raw
    while rest:
        if inside:
            end = rest.find("-->")
            if end < 0:
                break
            rest, inside = rest[end + 3 :], False
            continue
        start = rest.find("<!--")
        if start < 0:
            out.append(rest)
            break
        out.append(rest[:start])
        rest, inside = rest[start + 4 :], True
    return ("" if hidden else "".join(out)), inside


def _prose_lines(body: str) -> Iterator[str]:
    """The comment's lines that GitHub shows as text of their own, stripped: not in fenced
    code, not in an indented code block, not in a `>` quote (lazy continuation lines
    included), not inside an HTML comment.

    - A line after a `>` line with text, with no blank line between, is still the quote's:
      CommonMark §5.1 (block quotes) calls it a lazy continuation line, and GitHub renders
      `> q\n/landbot retry` as one quoted paragraph. A blank line, or a fence, ends it.
    - A line indented 4 or more columns is code (CommonMark §4.4, indented code blocks).
      Kept simple: this holds inside a list item too, where GitHub would show it as text;
      a command is typed at the start of a line.
    """
    fence: str | None = None
    quoted = False  # the previous line was a quote's text: a lazy continuation may follow
    in_comment = False
    for raw in body.replace("\r\n", "\n").split("\n"):
        if fence is not None:
            # A closing fence: the same character, at least as long, nothing else after it.
            m = _FENCE.match(raw)
            closes = m is not None and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence)
            if closes and not raw.strip().strip(fence[0]):
                fence = None
            continue
        if not in_comment:
            m = _FENCE.match(raw)
            if m:
                fence, quoted = m.group(1), False
                continue
        visible, in_comment = _outside_comments(raw, in_comment)
        line = visible.strip()
        if line.startswith(">"):
            # `>` alone (or `> >`) is a blank line inside the quote: nothing continues it.
            quoted = bool(line.lstrip("> \t"))
            continue
        if not raw.strip():
            quoted = False
            continue
        if quoted or _columns(raw) >= 4 or not line:
            continue  # in the quote, in code, or hidden in a comment
        yield line


def _command(line: str, head_len: int) -> Command:
    words = line[head_len:].split()
    if not words:
        return Command("help", (), line)
    word = words[0].lower()
    if word in COMMANDS:
        return Command(word, tuple(words[1:]), line)
    return Command("unknown", tuple(words), line)


def _head(line: str, names: Sequence[str]) -> int | None:
    """The length of the name the line starts with, when it is one of `names`."""
    lowered = line.lower()
    for name in names:
        form = name.lower() if name.startswith("@") else "/" + name.lower()
        if lowered.startswith(form) and (len(line) == len(form) or line[len(form)].isspace()):
            return len(form)
    return None


def parse_command(body: str, names: Sequence[str]) -> Command | None:
    """The first command in `body` for `names` (`("landbot", "@acme-landbot",
    "@acme-landbot[bot]")`), or None when it has none."""
    for line in _prose_lines(body):
        n = _head(line, names)
        if n is not None:
            return _command(line, n)
    return None


def _is_candidate(line: str) -> bool:
    if _SLASH.match(line):
        return True
    m = _MENTION.match(line)
    if m is None:
        return False
    if m.group(2):  # `@<login>[bot]`: only an App's account
        return True
    words = line[m.end() :].split()
    return bool(words) and words[0].lower() in COMMANDS


def breaker_close(command: Command | None) -> bool:
    """`/landbot breaker close` (in the breaker's issue, issue 27.2): not a pull request
    command, so it reads as an unknown word here."""
    if command is None or command.name != "unknown":
        return False
    return [a.lower() for a in command.args[:2]] == ["breaker", "close"]


def candidate_lines(body: str) -> list[str]:
    """The lines that may be a command for some slug (at most MAX_CANDIDATES, each cut to
    MAX_LINE characters); `parse_command("\\n".join(lines), names)` reads them as it would
    the whole body."""
    out: list[str] = []
    for line in _prose_lines(body):
        if _is_candidate(line):
            out.append(line[:MAX_LINE])
            if len(out) == MAX_CANDIDATES:
                break
    return out


def may_retry(lines: Sequence[str]) -> bool:
    """Whether a job of these candidate lines may turn out a `retry` once the worker reads
    them with the App's slug (unknown here). Such a job acts on a drop and writes the PR's
    sticky comments, so it waits for the PR's other jobs; one that can only be `skip`,
    `unskip`, `help` or an unknown word never does (a `/landbot skip` sent during a fix job
    must land before the fix job decides). Any line that names `retry` after any name
    counts: the worker's first command may be a mention line intake cannot tell apart."""
    for line in lines:
        m = _SLASH.match(line) or _MENTION.match(line)
        if m is None:
            return True  # not a form intake records: the safe side
        words = line[m.end() :].split()
        if words and words[0].lower() == "retry":
            return True
    return False


def mention_names(bot_login: str) -> tuple[str, ...]:
    """The names a comment may address landbot by: `/landbot` always, and the App's
    `@<slug>` / `@<slug>[bot]` when landbot runs as an App (a login ending `[bot]`; the
    Actions token's `github-actions[bot]` is GitHub's, not landbot's)."""
    if not bot_login.lower().endswith("[bot]") or bot_login.lower() == "github-actions[bot]":
        return (SLASH_NAME,)
    slug = bot_login[: -len("[bot]")]
    return (SLASH_NAME, f"@{slug}", f"@{slug}[bot]")


def is_bot(login: str | None, user_type: str | None) -> bool:
    """A bot account: its comments are never answered (two bots must not talk forever)."""
    return (user_type or "").lower() == "bot" or (login or "").lower().endswith("[bot]")
