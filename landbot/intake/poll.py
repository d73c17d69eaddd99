"""The poller: one GraphQL sweep per repository finds removals no webhook delivered.

GitHub does not redeliver a failed webhook, so a scheduled sweep reads the most recently
updated open pull requests with their last merge-queue events. A PR whose last queue event is
a removal, and that is not back in the queue, is a drop; the same removal already reported by
a webhook (same PR and reason, within minutes) is the same drop.
"""

from __future__ import annotations

import datetime as dt

from landbot.github.ops import SweepOps
from landbot.intake.events import record_drop
from landbot.store import Store


def sweep(
    store: Store,
    gh: SweepOps,
    repo: str,
    *,
    now: dt.datetime,
    lookback: dt.timedelta = dt.timedelta(hours=24),
    first: int = 50,
) -> list[int]:
    """Record the drops this sweep finds; returns the ids of the new ones. One GitHub call."""
    new: list[int] = []
    for pr in gh.queue_removals(repo, first=first):
        if pr.in_merge_queue or not pr.events:
            continue
        last = pr.events[-1]
        if last.kind != "removed" or last.created_at is None:
            continue
        if last.created_at < now - lookback:
            continue
        drop_id, created = record_drop(
            store,
            repo=repo,
            pr=pr.number,
            head_sha=pr.head_oid,
            raw_reason=last.reason,
            source="poll",
            observed_at=last.created_at,
            removal_id=last.id,
            base_ref=pr.base_ref,
        )
        if created:
            new.append(drop_id)
    return new
