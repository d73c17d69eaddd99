"""Retry: `/landbot retry` in a pull request comment, and `landbot retry PR` for an operator.

A retry records a new drop for the PR's current head (with the reason of its latest recorded
removal at that head, or `manual` when there is none), resets that head's budgets and the
PR's caps across heads (a person asked: landbot may push and re-enqueue again), and runs
the land loop on it at once. A comment command is honoured only from users with write,
maintain or admin permission; the bot reacts 👀 when it accepts and 👎 when it refuses.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from landbot import logs
from landbot.land.decide import command_allowed
from landbot.land.model import Decision
from landbot.pipeline.process import Lander
from landbot.store import Store, utcnow

log = logging.getLogger("landbot.pipeline")


def retry(
    lander: Lander, store: Store, repo: str, pr: int, *, source: str, key: str | None = None
) -> Decision:
    """`key` names the request (a comment's id): the same request retried after a failure
    resumes its drop instead of starting another one (and another hand-back)."""
    lander.progress(f"reading {repo}#{pr}")
    state = lander.gh.pull_request(repo, pr)
    last = next((d for d in store.drops(repo) if d.pr == pr and d.head_sha == state.head_oid), None)
    drop_id, created = store.add_drop(
        repo=repo,
        pr=pr,
        head_sha=state.head_oid,
        reason=last.reason if last is not None else "manual",
        raw_reason=last.raw_reason if last is not None else "manual",
        source=source,
        dedupe_key=f"{source}:{repo}#{pr}:{key or uuid.uuid4()}",
        observed_at=utcnow(),
    )
    if created:
        # Both resets in one transaction: a crash leaves neither half done.
        with store.tx():
            store.reset_budget(repo, pr, state.head_oid)
            store.reset_pr_caps(repo, pr, key=f"drop:{drop_id}")
    logs.event(
        log,
        "retry recorded" if created else "retry resumed",
        repo=repo,
        pr=pr,
        head_sha=state.head_oid,
        drop_id=drop_id,
        source=source,
        budgets_reset=created,
    )
    return lander.process(drop_id)


def run_comment_command(lander: Lander, store: Store, payload: dict[str, Any]) -> str:
    repo, pr, user = payload["repo"], int(payload["pr"]), payload.get("user") or ""
    comment_id = payload.get("comment_id")
    permission = lander.gh.collaborator_permission(repo, user) if user else "none"
    allowed = command_allowed(permission)
    logs.event(
        log,
        "command accepted" if allowed else "command refused",
        repo=repo,
        pr=pr,
        command="retry",
        user=user,
        permission=permission,
        comment_id=comment_id,
    )
    if comment_id:
        lander.actor.react(repo, int(comment_id), accepted=allowed)
    if not allowed:
        return f"refused /landbot retry from {user} ({permission})"
    decision = retry(lander, store, repo, pr, source="command", key=f"comment-{comment_id}")
    return f"/landbot retry from {user}: {decision.outcome}"
