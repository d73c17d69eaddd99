"""`/landbot breaker close`, commented in the breaker's issue (issue 27.2): a user with
write access closes the repository's breaker; the held drops go back in the queue in their
order and the issue is closed. Every comment gets one reply saying what was done or why
not (claimed in the action ledger, so a job run again after a crash replies once)."""

from __future__ import annotations

import logging
from typing import Any

from landbot import logs
from landbot.land import decide as d
from landbot.pipeline.process import Lander
from landbot.store import Store

log = logging.getLogger("landbot.pipeline")


def run_breaker_close(lander: Lander, store: Store, payload: dict[str, Any]) -> str:
    repo, issue = str(payload["repo"]), int(payload["issue"])
    user = str(payload.get("user") or "")
    row = store.breaker(repo)
    if row is None or row.issue_number != issue:
        return f"#{issue} is not the breaker's issue: nothing done"
    key = f"reply:{repo}#{issue}:{payload.get('comment_id')}"
    if store.begin_action(key, "reply") == "done":
        return "already answered"
    permission = lander.gh.collaborator_permission(repo, user)
    quote = "> /landbot breaker close\n\n"
    if not d.command_allowed(permission):
        body = (
            f"{quote}@{user} only a user with write access can close the breaker "
            f"(yours: {permission or 'none'}); a maintainer can comment it for you."
        )
        note = f"refused: {user} has {permission}"
    elif lander.close_breaker(repo, by=f"@{user}"):
        body = f"{quote}Closed by @{user}: the held pull requests went back in the queue."
        note = f"closed by {user}"
    else:
        body = f"{quote}The breaker is not open: nothing to close."
        note = "not open"
    reply = lander.gh.create_comment(repo, issue, body)
    store.finish_action(key, "done", {"comment": reply.id})
    logs.event(log, "breaker command answered", repo=repo, issue=issue, user=user, note=note)
    return note
