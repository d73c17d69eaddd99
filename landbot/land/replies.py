"""landbot's answer to a comment command: one reply comment per command (texts pure,
snapshot-tested in tests/land/snapshots/replies/), and the writer that posts it once.

Every reply quotes the command, says what was done or why not, and what to do instead. It
carries `<!-- landbot:reply -->` and the tag `<!-- landbot:command <comment id> -->`, so a
resumed job, or one whose create was never answered, finds it instead of posting twice
(Actor.post_once, the same way a hand-back is found). The quoted line is the commenter's
words: inert, so it cannot carry a marker, a mention, a link or HTML into landbot's comment.
The reply mentions no one: the commenter follows the thread they wrote in.
"""

from __future__ import annotations

import re

from landbot.core.model import Outcome
from landbot.core.text import inert
from landbot.github.models import Comment
from landbot.land.act import Actor

REPLY_MARKER = "<!-- landbot:reply -->"
_MAX_QUOTE = 200
_MAX_WHY = 300
# decide.WRITERS, as a sentence says it (a test holds the two together).
ROLES_TEXT = "write, maintain or admin"
# The App's mention as GitHub spells a slug; anything else is not offered in the help.
_MENTION = re.compile(r"@[A-Za-z0-9][A-Za-z0-9-]{0,38}")


def reply_tag(comment_id: int) -> str:
    return f"<!-- landbot:command {int(comment_id)} -->"


def _quote(line: str) -> str:
    text = " ".join(line.split())
    if len(text) > _MAX_QUOTE:
        text = text[: _MAX_QUOTE - 1] + "…"
    return "> " + inert(text)


def _label(name: str) -> str:
    # A label name is the repository's (its file may set it): inert, in a code span.
    return "`" + inert(name).replace("`", "'") + "`"


def _who(user: str) -> str:
    return inert(user) or "someone"


def _frame(line: str, text: str) -> str:
    return f"{REPLY_MARKER}\n{_quote(line)}\n\n{text}\n"


def _command(slash: str) -> str:
    return f"`/landbot {slash}`"


# --- help ------------------------------------------------------------------------------


def help_text(skip_label: str, mention: str | None) -> str:
    """What each command does and who may run it (the body of `help` and `unknown`)."""
    lines = [
        "**landbot** answers these commands, each on a line of its own in a pull request comment:",
        "",
        f"- {_command('retry')}: look at this pull request again now. landbot re-reads it, "
        "triages its latest removal from the merge queue and acts (re-enqueues it, tries a "
        "fix or hands it back), with its budgets for this commit and its caps reset. Needs "
        "write access.",
        f"- {_command('skip')}: add the {_label(skip_label)} label; landbot then leaves this "
        "pull request alone. Needs write access.",
        f"- {_command('unskip')}: remove that label, so landbot acts on it again. Needs write "
        "access.",
        f"- {_command('help')}: this list. Anyone may ask.",
    ]
    if mention and _MENTION.fullmatch(mention):
        # In a code span it notifies no one, and reads as it must be typed (no ZWSP).
        lines += ["", f"`{mention} retry` (and so on) works in place of `/landbot retry`."]
    return "\n".join(lines)


def render_help(line: str, skip_label: str, mention: str | None) -> str:
    return _frame(line, help_text(skip_label, mention))


def render_unknown(line: str, skip_label: str, mention: str | None) -> str:
    """A word after the name that is no command (the quote above shows it)."""
    text = "landbot has no such command.\n\n" + help_text(skip_label, mention)
    return _frame(line, text)


# --- refusals --------------------------------------------------------------------------


def render_refused(line: str, command: str, user: str, permission: str) -> str:
    """A command that needs write access, from someone without it (a reader, an outside
    author on a fork): who can run it, and that they can run it for this person."""
    text = (
        f"landbot did not run {_command(command)}: it needs {ROLES_TEXT} access to this "
        f"repository, and {_who(user)} has `{inert(permission)}`. Nothing was changed.\n\n"
        f"A maintainer (anyone with write access) can comment {_command(command)} for you."
    )
    if command == "retry":
        text += (
            " The author can also push a fix to the branch and ask a maintainer to put the "
            "pull request back in the queue."
        )
    return _frame(line, text)


# --- what was done ---------------------------------------------------------------------

_OUTCOME: dict[Outcome, str] = {
    "requeued": "landbot put the pull request back in the merge queue.",
    "fixed": "landbot's fixer pushed a fix and armed auto-merge.",
    "pending": "landbot is working on it: a fix is being tried.",
    "handed_back": "landbot looked again and handed it back: see the hand-back comment.",
    "ignored": "landbot looked again and left it alone",
    "failed": "landbot could not finish",
}


def render_retried(line: str, outcome: Outcome, why: str) -> str:
    """The retry's one line of outcome, and where the rest is."""
    said = _OUTCOME[outcome]
    if outcome in ("ignored", "failed"):
        reason = " ".join(why.split()).rstrip(".")
        if len(reason) > _MAX_WHY:
            reason = reason[: _MAX_WHY - 1] + "…"
        said += f": {inert(reason)}." if reason else "."
    text = (
        f"landbot ran {_command('retry')}, with this commit's budgets and the pull request's "
        f"caps reset. {said}\n\n"
        "The status comment and the `landbot` check on the pull request's head have the rest."
    )
    return _frame(line, text)


def render_skipped(line: str, label: str) -> str:
    text = (
        f"landbot added the {_label(label)} label: it leaves this pull request alone while "
        f"the label is on. Comment {_command('unskip')} (or remove the label) to let it act "
        "again."
    )
    return _frame(line, text)


def render_unskipped(line: str, label: str, *, removed: bool) -> str:
    if removed:
        text = (
            f"landbot removed the {_label(label)} label: it acts on this pull request again "
            f"the next time the merge queue drops it. Comment {_command('retry')} to have it "
            "look now."
        )
    else:
        text = (
            f"This pull request had no {_label(label)} label: nothing to remove, landbot "
            f"already acts on it. Comment {_command('skip')} to keep landbot away."
        )
    return _frame(line, text)


# --- what could not be done ------------------------------------------------------------

_INSTEAD: dict[str, str] = {
    "retry": (
        "Comment {retry} again in a while. If it fails again, put the pull request back in "
        "the merge queue yourself, and tell whoever runs landbot: its log has the details."
    ),
    "skip": (
        "Add the {label} label yourself (the pull request's sidebar, Labels), or comment "
        "{skip} again in a while."
    ),
    "unskip": (
        "Remove the {label} label yourself (the pull request's sidebar, Labels), or comment "
        "{unskip} again in a while."
    ),
}


def render_failed(line: str, command: str, error: str, label: str) -> str:
    """A command landbot accepted (👀) whose action GitHub refused, or that GitHub did not
    answer through every retry: what failed, in one line, and what to do instead."""
    what = " ".join(error.split()).rstrip(".")
    if len(what) > _MAX_WHY:
        what = what[: _MAX_WHY - 1] + "…"
    instead = _INSTEAD.get(command, "Try again in a while.").format(
        retry=_command("retry"),
        skip=_command("skip"),
        unskip=_command("unskip"),
        label=_label(label),
    )
    text = f"landbot could not finish {_command(command)}: {inert(what)}.\n\n{instead}"
    return _frame(line, text)


# --- the writer ------------------------------------------------------------------------


def post_reply(
    actor: Actor, repo: str, pr: int, comment_id: int, body: str, *, resumed: bool
) -> Comment:
    """Post the reply to comment `comment_id` once (found by its tag when `resumed`, or when
    the create was never answered)."""
    tag = reply_tag(comment_id)
    return actor.post_once(
        repo, pr, REPLY_MARKER, tag, body + tag + "\n", resumed=resumed, what="command reply"
    )
