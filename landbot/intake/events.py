"""The worker's first step: turn one stored webhook delivery into records and jobs.

One handler per event and action (the router below). Handlers only write to the store;
everything that needs GitHub happens later, in the drop job, after re-reading the PR. An
event or action landbot does not handle is kept (the delivery row) and logged, never a crash.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from landbot.core import keys
from landbot.core.groups import FAILED, parse_group_ref
from landbot.core.reasons import normalize
from landbot.store import Store

log = logging.getLogger("landbot.intake")

# The same removal reported by two doors (webhook, poll) lands within this window.
SAME_REMOVAL_WINDOW = dt.timedelta(minutes=15)
RETRY_COMMAND = re.compile(r"^\s*/landbot\s+retry\s*$", re.M)


@dataclass(frozen=True)
class Delivery:
    delivery_id: str
    event: str
    received_at: dt.datetime
    payload: dict[str, Any]

    @property
    def action(self) -> str | None:
        action = self.payload.get("action")
        return action if isinstance(action, str) else None

    @property
    def repo(self) -> str | None:
        repo = self.payload.get("repository") or {}
        name = repo.get("full_name") if isinstance(repo, dict) else None
        return name if isinstance(name, str) else None


Handler = Callable[[Delivery, Store], str]
_ROUTES: dict[tuple[str, str | None], Handler] = {}


def route(event: str, action: str | None = None) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        _ROUTES[(event, action)] = fn
        return fn

    return register


def handled_events() -> set[str]:
    """The webhook events landbot acts on (the App manifest subscribes to these)."""
    return {event for event, _ in _ROUTES}


def handle(delivery: Delivery, store: Store) -> str:
    """Apply one delivery; returns a short note of what was done (kept on the row)."""
    fn = _ROUTES.get((delivery.event, delivery.action)) or _ROUTES.get((delivery.event, None))
    if fn is None:
        log.info("ignoring %s.%s (%s)", delivery.event, delivery.action, delivery.delivery_id)
        return f"not handled: {delivery.event}.{delivery.action}"
    return fn(delivery, store)


def parse(delivery_id: str, event: str, received_at: dt.datetime, body: bytes) -> Delivery:
    payload = json.loads(body)
    if not isinstance(payload, dict):
        raise ValueError("payload is not a JSON object")
    return Delivery(delivery_id, event, received_at, payload)


def record_drop(
    store: Store,
    *,
    repo: str,
    pr: int,
    head_sha: str,
    raw_reason: str | None,
    source: str,
    observed_at: dt.datetime,
    delivery_id: str | None = None,
    removal_id: str | None = None,
    base_ref: str | None = None,
) -> tuple[int, bool]:
    """Record a removal once, whichever door saw it first, and queue its drop job."""
    with store.tx():  # one transaction: a webhook and a poll racing see each other
        return _record_drop(
            store,
            repo=repo,
            pr=pr,
            head_sha=head_sha,
            raw_reason=raw_reason,
            source=source,
            observed_at=observed_at,
            delivery_id=delivery_id,
            removal_id=removal_id,
            base_ref=base_ref,
        )


def _record_drop(
    store: Store,
    *,
    repo: str,
    pr: int,
    head_sha: str,
    raw_reason: str | None,
    source: str,
    observed_at: dt.datetime,
    delivery_id: str | None,
    removal_id: str | None,
    base_ref: str | None,
) -> tuple[int, bool]:
    reason = normalize(raw_reason)
    same = store.link_removal(
        repo=repo,
        pr=pr,
        head_sha=head_sha,
        reason=reason,
        around=observed_at,
        window=SAME_REMOVAL_WINDOW,
        delivery_id=delivery_id,
        removal_id=removal_id,
    )
    if same is not None:
        return same, False
    drop_id, created = store.add_drop(
        repo=repo,
        pr=pr,
        head_sha=head_sha,
        reason=reason,
        raw_reason=raw_reason,
        source=source,
        dedupe_key=f"webhook:{delivery_id}" if delivery_id else f"removal:{removal_id}",
        observed_at=observed_at,
        delivery_id=delivery_id,
        removal_id=removal_id,
    )
    if created:
        store.add_job(
            "drop",
            {"drop_id": drop_id, "base_ref": base_ref},
            dedupe_key=keys.drop_job(repo, pr, head_sha, drop_id),
            drop_id=drop_id,
        )
    return drop_id, created


# --- pull_request ------------------------------------------------------------------------


def _pr(delivery: Delivery) -> tuple[str, int, dict[str, Any]]:
    pr = delivery.payload.get("pull_request") or {}
    number = delivery.payload.get("number") or pr.get("number")
    if delivery.repo is None or not isinstance(number, int):
        raise ValueError("pull_request payload without repository or number")
    return delivery.repo, number, pr


@route("pull_request", "dequeued")
def _dequeued(d: Delivery, store: Store) -> str:
    repo, number, pr = _pr(d)
    head = (pr.get("head") or {}).get("sha")
    if not isinstance(head, str):
        raise ValueError("dequeued payload without pull_request.head.sha")
    raw = d.payload.get("reason")
    drop_id, created = record_drop(
        store,
        repo=repo,
        pr=number,
        head_sha=head,
        raw_reason=raw if isinstance(raw, str) else None,
        source="webhook",
        observed_at=d.received_at,
        delivery_id=d.delivery_id,
        base_ref=(pr.get("base") or {}).get("ref"),
    )
    return f"drop {drop_id} ({'new' if created else 'already recorded'}): {raw}"


@route("pull_request", "enqueued")
def _enqueued(d: Delivery, store: Store) -> str:
    repo, number, _ = _pr(d)
    return f"{repo}#{number} entered the queue"


@route("pull_request", "synchronize")
def _synchronize(d: Delivery, store: Store) -> str:
    repo, number, _ = _pr(d)
    before = d.payload.get("before")
    if not isinstance(before, str):
        return "synchronize without before"
    n = store.cancel_jobs(
        keys.head_jobs(repo, number, before),
        "the head moved since the drop: nothing for the old head",
    )
    return f"head moved from {before[:7]}: cancelled {n} job(s)"


@route("pull_request", "closed")
def _closed(d: Delivery, store: Store) -> str:
    repo, number, _ = _pr(d)
    merged = bool((d.payload.get("pull_request") or {}).get("merged"))
    n = store.cancel_jobs(
        keys.pr_jobs(repo, number),
        "the pull request has merged" if merged else "the pull request is closed",
    )
    return f"closed: cancelled {n} job(s)"


# --- merge groups and their checks ------------------------------------------------------


@route("merge_group", "checks_requested")
def _checks_requested(d: Delivery, store: Store) -> str:
    return _store_group(d, store, "checks_requested")


@route("merge_group", "destroyed")
def _destroyed(d: Delivery, store: Store) -> str:
    return _store_group(d, store, f"destroyed:{d.payload.get('reason')}")


def _store_group(d: Delivery, store: Store, status: str) -> str:
    group = d.payload.get("merge_group") or {}
    ref = parse_group_ref(group.get("head_ref"))
    sha = group.get("head_sha")
    if d.repo is None or ref is None or not isinstance(sha, str):
        return "merge_group without a gh-readonly-queue ref"
    store.remember_group(
        repo=d.repo,
        pr=ref.pr,
        head_sha=sha,
        head_ref=group.get("head_ref", ""),
        base_ref=ref.base,
        base_sha=group.get("base_sha") or ref.base_sha,
        status=status,
    )
    return f"group {sha[:7]} for #{ref.pr}: {status}"


def _group_failure(
    d: Delivery, store: Store, kind: str, run: dict[str, Any], branch: str | None
) -> str:
    """Remember a failed check run or workflow run on a merge-group commit."""
    ref = parse_group_ref(branch)
    if d.repo is None or ref is None or run.get("conclusion") not in FAILED:
        return f"not a failed merge-group {kind.replace('_', ' ')}"
    store.add_group_failure(
        d.repo,
        run.get("head_sha", ""),
        {
            "kind": kind,
            "id": run.get("id"),
            "name": run.get("name"),
            "conclusion": run.get("conclusion"),
            "url": run.get("html_url"),
        },
        pr=ref.pr,
        head_ref=branch or "",
    )
    return f"failed {kind.replace('_', ' ')} {run.get('name')} on group of #{ref.pr}"


@route("check_run", "completed")
def _check_run(d: Delivery, store: Store) -> str:
    run = d.payload.get("check_run") or {}
    return _group_failure(
        d, store, "check_run", run, (run.get("check_suite") or {}).get("head_branch")
    )


@route("workflow_run", "completed")
def _workflow_run(d: Delivery, store: Store) -> str:
    run = d.payload.get("workflow_run") or {}
    return _group_failure(d, store, "workflow_run", run, run.get("head_branch"))


# --- commands ----------------------------------------------------------------------------


@route("issue_comment", "created")
def _comment(d: Delivery, store: Store) -> str:
    issue = d.payload.get("issue") or {}
    comment = d.payload.get("comment") or {}
    if d.repo is None or "pull_request" not in issue:
        return "not a pull request comment"
    if not RETRY_COMMAND.search(comment.get("body") or ""):
        return "no command"
    user = (comment.get("user") or {}).get("login")
    if (comment.get("user") or {}).get("type") == "Bot":
        return "command from a bot: ignored"
    store.add_job(
        "command",
        {
            "command": "retry",
            "repo": d.repo,
            "pr": issue.get("number"),
            "user": user,
            "comment_id": comment.get("id"),
        },
        dedupe_key=f"command:{d.delivery_id}",
    )
    return f"/landbot retry from {user} on #{issue.get('number')}"
