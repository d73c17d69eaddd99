"""The breaker says so once (issue 27.2): one issue per repository, opened (or reopened)
when its breaker opens, edited as drops are held (only when its text changed), closed when
the breaker closes. Made once through land/issues.py's claim-before-POST ledger."""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import os
import socket
from collections.abc import Callable, Sequence
from typing import Any, cast

from landbot import logs
from landbot.core.model import WAITING
from landbot.github.ops import WritesIssues
from landbot.land.issues import issue_key, open_issue_once
from landbot.store import Store, StoredBreaker

log = logging.getLogger("landbot.land.breaker")

MARKER = "<!-- landbot:breaker -->"
LABEL = "landbot:breaker"
CLOSE_COMMAND = "/landbot breaker close"

_CAUSE = {
    "red_base": "the base branch is red",
    "infrastructure": "the runners or the infrastructure are failing",
    "same_failure": "the same failure on several pull requests",
    "server_error": "GitHub is answering with server errors",
}


def _when(at: dt.datetime | None) -> str:
    return at.strftime("%Y-%m-%d %H:%M UTC") if at is not None else "?"


def render_issue(repo: str, row: StoredBreaker, held: Sequence[tuple[int, str]]) -> tuple[str, str]:
    """(title, body) of the breaker's issue, open or closed. `held`: (PR, its outcome) of
    the drops it holds, in their order."""
    cause = _CAUSE.get(row.cause or "", row.cause or "unknown")
    title = f"landbot's breaker for {repo} is open: {cause}"
    lines = [MARKER]
    if row.open:
        lines += [
            f"landbot stopped re-enqueueing and fixing pull requests of `{repo}` at "
            f"{_when(row.opened_at)}: {row.detail or cause}.",
            "",
            "While it is open, drops are **held, not dropped**: when the cause is gone (the "
            "base branch green again, the next runs passing, GitHub answering) it closes by "
            "itself and the held pull requests go back in the queue in their order.",
        ]
    else:
        title = f"landbot's breaker for {repo} closed ({cause})"
        who = row.closed_by or "landbot"
        closed = "the cause is gone" if who == "landbot" else f"closed by {who}"
        lines += [
            f"The breaker opened at {_when(row.opened_at)} ({row.detail or cause}) and closed "
            f"at {_when(row.closed_at)}: {closed}. The held pull requests went back in the "
            "queue in their order.",
        ]
    if row.links:
        lines += ["", "**The failures:**", *(f"- {u}" for u in row.links)]
    if row.open:
        if held:
            lines += ["", f"**Held ({len(held)}):**"]
            lines += [
                f"- #{pr} ({'waiting for the base' if what == 'waiting_base' else 'held'})"
                for pr, what in held
            ]
        lines += [
            "",
            "**What a maintainer can do:** fix the cause (and it closes by itself), or close "
            f"it now: comment `{CLOSE_COMMAND}` here (write access needed), or run "
            f"`landbot breaker close {repo}` where landbot runs.",
        ]
    return title, "\n".join(lines) + "\n"


class BreakerIssues:
    """Writes the breaker's issue of a repository: the costs are its opening (the claim's
    create or a reopen), an edit when the held drops change, and its closing."""

    def __init__(
        self, store: Store, gh: Any, *, notify: Callable[[str], object] | None = None
    ) -> None:
        self.store = store
        self.gh = gh
        # `[notify] webhook_url` (landbot/notify.py): one message when it opens, one when
        # it closes (tied to the issue's own opening and closing, so said once).
        self.notify = notify
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{id(self):x}"

    def write(self, repo: str) -> str | None:
        """Bring the issue in line with the breaker; what was done (None: nothing)."""
        row = self.store.breaker(repo)
        if row is None:
            return None
        if not callable(getattr(self.gh, "create_issue", None)):
            return None  # a client without issue operations (a test double)
        gh = cast(WritesIssues, self.gh)
        held = [(d.pr, d.outcome) for d in self.store.waiting_drops(repo, sorted(WAITING))]
        title, body = render_issue(repo, row, held)
        sha = hashlib.sha256(f"{title}\n{body}".encode()).hexdigest()
        if row.open:
            if row.issue_state == "open" and row.issue_body_sha == sha:
                return None  # nothing new to say: no call
            if row.issue_state == "open" and row.issue_number is not None:
                gh.update_issue(repo, row.issue_number, title=title, body=body)
                done = "edited"
                number, url = row.issue_number, row.issue_url
            else:
                ref = open_issue_once(
                    self.store,
                    gh,
                    repo,
                    key=issue_key(repo, "breaker", "breaker"),
                    marker=MARKER,
                    label=LABEL,
                    title=title,
                    body=body,
                    owner=self.owner,
                )
                number, url = ref.number, ref.url
                done = "opened"
                if not ref.created:
                    # The repository's one breaker issue, from an earlier opening: reopened.
                    gh.update_issue(repo, number, title=title, body=body, state="open")
                    done = "reopened"
            self.store.set_breaker_issue(repo, number=number, url=url, state="open", body_sha=sha)
            logs.event(log, f"breaker issue {done}", repo=repo, issue=number)
            if done != "edited" and self.notify is not None:
                self.notify(f"landbot's breaker for {repo} is open: {row.detail}. {url or ''}")
            return done
        if row.issue_state != "open" or row.issue_number is None:
            return None
        gh.update_issue(
            repo, row.issue_number, title=title, body=body, state="closed", state_reason="completed"
        )
        self.store.set_breaker_issue(
            repo, number=row.issue_number, url=row.issue_url, state="closed", body_sha=sha
        )
        logs.event(log, "breaker issue closed", repo=repo, issue=row.issue_number)
        if self.notify is not None:
            went = "its held pull requests went back in the queue"
            self.notify(f"landbot's breaker for {repo} closed: {went}. {row.issue_url or ''}")
        return "closed"
