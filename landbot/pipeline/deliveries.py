"""One stored webhook delivery: intake's records and jobs, then what a person's push or
close makes of the pull request's pending work (the decision's, applied here)."""

from __future__ import annotations

import logging
from typing import Any

from landbot import logs
from landbot.core import keys
from landbot.core.model import Superseded
from landbot.intake import events
from landbot.land.decide import superseded
from landbot.store import Store

log = logging.getLogger("landbot.intake")

# The outcomes of drops that wait in the store, not in a job (the repository's hold job
# releases them): a red base's, and the breaker's.
WAITING = ("waiting_base", "held")


def apply(delivery: events.WebhookEvent[Any], store: Store) -> str:
    """Apply one parsed delivery; returns the note kept on its row."""
    handled = events.handle(delivery, store)
    if not isinstance(handled, Superseded):
        return handled
    decision = superseded(handled)
    prefix = (
        keys.head_jobs(handled.repo, handled.pr, handled.old_head)
        if handled.old_head is not None
        else keys.pr_jobs(handled.repo, handled.pr)
    )
    # A fix job cancelled while it waits leaves its drop's `landbot` check run in progress
    # and maybe the fixing label on: a job of its own ends them (intake calls no GitHub).
    fix_waits = any(
        j.kind == "fix" and (j.dedupe_key or "").startswith(prefix) for j in store.jobs("queued")
    )
    n = store.cancel_jobs(prefix, outcome=decision.outcome, why=decision.why)
    # A drop waiting in the store (for a red base, or held by the breaker) ends the same
    # way: it is not released later, and its check run ends with the job below.
    waiting = [
        r
        for r in store.waiting_drops(handled.repo, WAITING)
        if r.pr == handled.pr and (handled.old_head is None or r.drop.head_sha == handled.old_head)
    ]
    for row in waiting:
        store.update_drop(row.id, outcome=decision.outcome, summary=decision.why)
    if (n and fix_waits) or waiting:
        store.add_job(
            "checks",
            {"repo": handled.repo, "pr": handled.pr},
            dedupe_key=f"checks:{delivery.delivery_id}",
        )
    logs.event(
        log,
        "pending work cancelled" if n else "nothing pending to cancel",
        logging.INFO if n else logging.DEBUG,
        repo=handled.repo,
        pr=handled.pr,
        head_sha=handled.old_head,
        cause=handled.cause,
        jobs=n,
        waiting=len(waiting),
        outcome=decision.outcome,
        why=decision.why,
    )
    if waiting:
        return f"{handled.note}: cancelled {n} job(s), ended {len(waiting)} waiting drop(s)"
    return f"{handled.note}: cancelled {n} job(s)"
