"""The worker's first step: turn one stored webhook delivery into records and jobs.

One handler per event and action (the router below). Handlers only write to the store;
everything that needs GitHub happens later, in the drop job, after re-reading the PR. An
event or action landbot does not handle is kept (the delivery row) and logged, never a crash.
Each route names the payload model (payloads.py) its deliveries are parsed into at the edge,
so handlers read typed fields and decide what a missing one means.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from landbot import logs
from landbot.core import keys
from landbot.core.groups import FAILED, parse_group_ref
from landbot.core.model import Superseded
from landbot.core.reasons import normalize
from landbot.intake import commands, payloads
from landbot.repo_config import REPO_FILE
from landbot.store import Store

log = logging.getLogger("landbot.intake")

# The same removal reported by two doors (webhook, poll) lands within this window.
SAME_REMOVAL_WINDOW = dt.timedelta(minutes=15)


# Covariant, as the event is frozen: a helper taking the event of a base payload (`_pr`)
# takes the event of any payload built on it.
P = TypeVar("P", bound=payloads.Payload, covariant=True)


@dataclass(frozen=True)
class WebhookEvent(Generic[P]):
    """One stored delivery, its body parsed into the model its event and action route to."""

    delivery_id: str
    event: str
    received_at: dt.datetime
    payload: P

    @property
    def action(self) -> str | None:
        return self.payload.action

    @property
    def repo(self) -> str | None:
        return self.payload.repo


# A note for the delivery row, or a person's change whose effect the decision chooses.
Handled = str | Superseded
Handler = Callable[[WebhookEvent[P], Store], Handled]


@dataclass(frozen=True)
class _Route:
    model: type[payloads.Payload]
    handler: Handler[Any]


_ROUTES: dict[tuple[str, str | None], _Route] = {}


def route(event: str, action: str | None, model: type[P]) -> Callable[[Handler[P]], Handler[P]]:
    """Register a handler, and the payload model its deliveries are parsed into."""

    def register(fn: Handler[P]) -> Handler[P]:
        _ROUTES[(event, action)] = _Route(model, fn)
        return fn

    return register


def _route_for(event: str, action: str | None) -> _Route | None:
    return _ROUTES.get((event, action)) or _ROUTES.get((event, None))


def handled_events() -> set[str]:
    """The webhook events landbot acts on (the App manifest subscribes to these)."""
    return {event for event, _ in _ROUTES}


def handle(delivery: WebhookEvent[payloads.Payload], store: Store) -> Handled:
    """Apply one delivery; returns a short note of what was done (kept on the row), or the
    Superseded a push or a close means (landbot/pipeline/deliveries.py applies it)."""
    r = _route_for(delivery.event, delivery.action)
    if r is None:
        # The worker's "delivery processed" line says so at info, with this note.
        logs.event(log, "delivery not handled", logging.DEBUG, delivery_id=delivery.delivery_id)
        return f"not handled: {delivery.event}.{delivery.action}"
    if not isinstance(delivery.payload, r.model):  # an event built by hand, not by parse
        raise TypeError(
            f"{delivery.event}.{delivery.action} needs a {r.model.__name__} payload: "
            "build the event with events.parse"
        )
    return r.handler(delivery, store)


def pr_of(delivery: WebhookEvent[payloads.Payload]) -> int | None:
    """The pull request a delivery is about, when its payload names one (for the log)."""
    p = delivery.payload
    if isinstance(p, payloads.PullRequestEvent):
        return p.pr_number
    if isinstance(p, payloads.IssueCommentCreated):
        return p.issue.number if p.issue.is_pull_request else None
    if isinstance(p, payloads.MergeGroupEvent):
        ref = parse_group_ref(p.merge_group.head_ref)
        return ref.pr if ref is not None else None
    return None


def parse(
    delivery_id: str, event: str, received_at: dt.datetime, body: bytes
) -> WebhookEvent[payloads.Payload]:
    data = json.loads(body)
    if not isinstance(data, dict):
        raise ValueError("payload is not a JSON object")
    # The action picks the model, so read the envelope first; unhandled events keep it.
    envelope = payloads.Payload.model_validate(data)
    r = _route_for(event, envelope.action)
    payload = envelope if r is None else r.model.model_validate(data)
    return WebhookEvent(delivery_id, event, received_at, payload)


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
        drop_id, created = _record_drop(
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
    logs.event(
        log,
        "drop recorded" if created else "removal already recorded",
        repo=repo,
        pr=pr,
        head_sha=head_sha,
        drop_id=drop_id,
        delivery_id=delivery_id,
        removal_id=removal_id,
        reason=normalize(raw_reason),
        raw_reason=raw_reason,
        source=source,
    )
    return drop_id, created


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
    # A removal is the queue moving: the repository's sweeps come every run for a while.
    store.note_queue_activity(repo, observed_at)
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


def _pr(d: WebhookEvent[payloads.PullRequestEvent]) -> tuple[str, int]:
    number = d.payload.pr_number
    if d.repo is None or number is None:
        raise ValueError("pull_request payload without repository or number")
    return d.repo, number


@route("pull_request", "dequeued", payloads.PullRequestDequeued)
def _dequeued(d: WebhookEvent[payloads.PullRequestDequeued], store: Store) -> str:
    repo, number = _pr(d)
    pr = d.payload.pull_request
    if pr.head.sha is None:
        raise ValueError("dequeued payload without pull_request.head.sha")
    raw = d.payload.reason
    drop_id, created = record_drop(
        store,
        repo=repo,
        pr=number,
        head_sha=pr.head.sha,
        raw_reason=raw,
        source="webhook",
        observed_at=d.received_at,
        delivery_id=d.delivery_id,
        base_ref=pr.base.ref,
    )
    return f"drop {drop_id} ({'new' if created else 'already recorded'}): {raw}"


@route("pull_request", "enqueued", payloads.PullRequestEvent)
def _enqueued(d: WebhookEvent[payloads.PullRequestEvent], store: Store) -> str:
    repo, number = _pr(d)
    store.note_queue_activity(repo, d.received_at)  # the queue moved: sweep it often
    return f"{repo}#{number} entered the queue"


@route("pull_request", "synchronize", payloads.PullRequestSynchronize)
def _synchronize(d: WebhookEvent[payloads.PullRequestSynchronize], store: Store) -> Handled:
    repo, number = _pr(d)
    before = d.payload.before
    if before is None:
        return "synchronize without before"
    return Superseded(repo, number, "pushed", old_head=before, note=f"head moved from {before[:7]}")


@route("pull_request", "closed", payloads.PullRequestClosed)
def _closed(d: WebhookEvent[payloads.PullRequestClosed], store: Store) -> Handled:
    repo, number = _pr(d)
    merged = bool(d.payload.pull_request.merged)
    if merged and d.payload.pull_request.head.sha:
        # The head merged: its failures in the flaky-test ledger passed their retry.
        store.record_merged(repo, number, head_sha=d.payload.pull_request.head.sha)
    return Superseded(repo, number, "merged" if merged else "closed", note="closed")


# --- merge groups and their checks ------------------------------------------------------


@route("merge_group", "checks_requested", payloads.MergeGroupEvent)
def _checks_requested(d: WebhookEvent[payloads.MergeGroupEvent], store: Store) -> str:
    return _store_group(d, store, "checks_requested")


@route("merge_group", "destroyed", payloads.MergeGroupDestroyed)
def _destroyed(d: WebhookEvent[payloads.MergeGroupDestroyed], store: Store) -> str:
    return _store_group(d, store, f"destroyed:{d.payload.reason}")


def _store_group(d: WebhookEvent[payloads.MergeGroupEvent], store: Store, status: str) -> str:
    group = d.payload.merge_group
    ref = parse_group_ref(group.head_ref)
    if d.repo is None or ref is None or group.head_sha is None:
        return "merge_group without a gh-readonly-queue ref"
    store.note_queue_activity(d.repo, d.received_at)  # the queue moved: sweep it often
    store.remember_group(
        repo=d.repo,
        pr=ref.pr,
        head_sha=group.head_sha,
        head_ref=group.head_ref or "",
        base_ref=ref.base,
        base_sha=group.base_sha or ref.base_sha,
        status=status,
    )
    logs.event(
        log,
        "merge group recorded",
        logging.DEBUG,
        pr=ref.pr,
        merge_group_sha=group.head_sha,
        status=status,
    )
    return f"group {group.head_sha[:7]} for #{ref.pr}: {status}"


def _group_failure(
    d: WebhookEvent[payloads.Payload],
    store: Store,
    kind: str,
    run: payloads.Run,
    branch: str | None,
) -> str:
    """Remember a failed check run or workflow run on a merge-group commit."""
    ref = parse_group_ref(branch)
    if d.repo is None or ref is None or run.conclusion not in FAILED:
        return f"not a failed merge-group {kind.replace('_', ' ')}"
    store.add_group_failure(
        d.repo,
        run.head_sha or "",
        {
            "kind": kind,
            "id": run.id,
            "name": run.name,
            "conclusion": run.conclusion,
            "url": run.html_url,
        },
        pr=ref.pr,
        head_ref=branch or "",
    )
    logs.event(
        log,
        "merge group failure recorded",
        logging.DEBUG,
        pr=ref.pr,
        merge_group_sha=run.head_sha,
        run=kind,
        run_id=run.id,
        check=run.name,
        conclusion=run.conclusion,
    )
    return f"failed {kind.replace('_', ' ')} {run.name} on group of #{ref.pr}"


@route("check_run", "completed", payloads.CheckRunCompleted)
def _check_run(d: WebhookEvent[payloads.CheckRunCompleted], store: Store) -> str:
    run = d.payload.check_run
    return _group_failure(d, store, "check_run", run, run.check_suite.head_branch)


@route("workflow_run", "completed", payloads.WorkflowRunCompleted)
def _workflow_run(d: WebhookEvent[payloads.WorkflowRunCompleted], store: Store) -> str:
    run = d.payload.workflow_run
    woken = _fix_run_done(d, store, run)
    if woken is not None:
        return woken
    base = _run_passed(d, store, run)
    if base is not None:
        return base
    return _group_failure(d, store, "workflow_run", run, run.head_branch)


# The repository's job that looks at its waiting drops again (pipeline/process.py HOLD_JOB).
HOLD_JOB = "hold"


# Runs whose passing says the repository's CI works again: a base branch's push, a merge
# group. (A pull request's own run, or landbot's fix workflow, says nothing of the kind.)
_PASS_EVENTS = frozenset({"push", "merge_group"})


def _run_passed(
    d: WebhookEvent[payloads.WorkflowRunCompleted], store: Store, run: payloads.WorkflowRun
) -> str | None:
    """A workflow run that passed on a base branch or a merge group: an open breaker notes
    it (the next runs pass: what closes one the runners opened), and the repository's hold
    job is woken, which reads the base itself (no GitHub call here). None: no such run, or
    nothing of the repository waits."""
    if d.repo is None or run.conclusion != "success" or run.event not in _PASS_EVENTS:
        return None
    noted = store.note_pass(d.repo, d.received_at)
    woken = store.wake_repo_job(HOLD_JOB, d.repo)
    if not (noted or woken):
        return None
    branch = run.head_branch or ""
    logs.event(log, "run passed", branch=branch, run_id=run.id, check=run.name, breaker=noted)
    return f"{run.name} passed on {branch}: waiting drops looked at again"


def _fix_run_done(
    d: WebhookEvent[payloads.WorkflowRunCompleted], store: Store, run: payloads.WorkflowRun
) -> str | None:
    """A run of landbot's fix workflow completed (the `actions` fixer backend): wake the
    fix job waiting for it, which reads the run and its artifact itself (no GitHub call
    here). Found by the run's id, or by the one-time id its title carries when the job has
    not seen its run yet. None: not one of landbot's fix runs."""
    if d.repo is None or run.id is None:
        return None
    found = store.dispatch_of_run(d.repo, run.id)
    if found is None:
        for word in (run.display_title or "").split()[:8]:
            candidate = store.dispatch(word) if KEY_WORD.fullmatch(word) else None
            if candidate is not None and candidate.repo == d.repo.lower():
                found = candidate
                break
    if found is None:
        return None
    woken = store.wake_job(found.fix_job)
    logs.event(
        log,
        "fix run completed",
        drop_id=found.drop_id,
        run_id=run.id,
        conclusion=run.conclusion,
        dispatch=found.key,
        woken=woken,
    )
    state = "woken" if woken else "not waiting"
    return f"fix run {run.id} of {found.key} {run.conclusion}: job {state}"


# landbot's one-time fix job ids (fixer/actions.py new_key).
KEY_WORD = re.compile(r"d[0-9]{1,12}-[0-9a-f]{16}")


# --- push: a repository's own settings file ---------------------------------------------

# GitHub's documentation of the push event (docs.github.com/en/webhooks/webhook-events-and-
# payloads#push, and the webhook-push schema of its OpenAPI description) lists at most 2048
# commits per payload and at most 3000 files per commit in `added`; older texts, and GitHub
# Enterprise Server's, say 20 commits. A push reaching either bound may list less than it
# changed, so it counts as touching the file: a needless re-read costs 3 calls, a missed one
# leaves the old settings in effect until the TTL (pipeline/repo_settings.py).
PUSH_COMMITS_LISTED = 20
PUSH_FILES_LISTED = 3000


def touches(push: payloads.PushEvent, path: str) -> bool:
    """Whether `push` may have changed `path`: it lists the path, or may not list all."""
    if push.forced or push.created:
        # A force push can bring back an older version of the file with no commit listed.
        return True
    if push.commits is None or len(push.commits) >= PUSH_COMMITS_LISTED:
        return True
    for commit in push.commits:
        lists = (commit.added, commit.removed, commit.modified)
        if any(files is None for files in lists):
            return True
        if sum(len(files or ()) for files in lists) >= PUSH_FILES_LISTED:
            return True
        if any(path in (files or ()) for files in lists):
            return True
    return False


@route("push", None, payloads.PushEvent)
def _push(d: WebhookEvent[payloads.PushEvent], store: Store) -> str:
    """A push to the default branch that touched the repository's settings file marks it
    stale and queues its re-read, so an invalid file is reported within seconds. The path
    is the one last read (the host's `[policy] repo_file`), else the default: intake does
    not read the settings."""
    push = d.payload
    branch = push.repository.default_branch
    if d.repo is None or branch is None or push.ref != f"refs/heads/{branch}":
        return "not a push to the default branch"
    if push.deleted:
        return "the default branch was deleted"
    row = store.repo_file(d.repo)
    path = row.path if row is not None else REPO_FILE
    if not touches(push, path):
        return f"push to {branch}: {path} untouched"
    with store.tx():
        store.mark_repo_file_stale(d.repo, path)
        store.add_job(
            "repo_file", {"repo": d.repo, "path": path}, dedupe_key=f"repo_file:{d.delivery_id}"
        )
    logs.event(
        log,
        "settings file pushed",
        repo=d.repo,
        delivery_id=d.delivery_id,
        path=path,
        branch=branch,
        after=push.after,
    )
    return f"push to {branch} touched {path}: re-read queued"


# --- commands ----------------------------------------------------------------------------


def _issue_command(d: WebhookEvent[payloads.IssueCommentCreated], store: Store) -> str:
    """A comment on an issue: only `/landbot breaker close` is a command there (in the
    breaker's issue; the worker checks which issue and who asked)."""
    issue, comment = d.payload.issue, d.payload.comment
    lines = commands.candidate_lines(comment.body or "")
    if not lines or not commands.breaker_close(
        commands.parse_command("\n".join(lines), (commands.SLASH_NAME,))
    ):
        return "not a pull request comment"
    if commands.is_bot(comment.user.login, comment.user.type):
        return "command from a bot: ignored"
    store.add_job(
        "breaker_close",
        {
            "repo": d.repo,
            "issue": issue.number,
            "user": comment.user.login,
            "comment_id": comment.id,
        },
        dedupe_key=f"command:{d.delivery_id}",
        holds_pr=False,
    )
    return f"/landbot breaker close from {comment.user.login} in #{issue.number}"


@route("issue_comment", "created", payloads.IssueCommentCreated)
def _comment(d: WebhookEvent[payloads.IssueCommentCreated], store: Store) -> str:
    issue, comment = d.payload.issue, d.payload.comment
    if d.repo is not None and not issue.is_pull_request:
        return _issue_command(d, store)
    if d.repo is None or not issue.is_pull_request:
        return "not a pull request comment"
    # The slug is unknown here (no GitHub call on this path): the candidate lines go to the
    # worker, which parses them with the App's names (intake/commands.py says why).
    lines = commands.candidate_lines(comment.body or "")
    if not lines:
        return "no command"
    user, user_type = comment.user.login, comment.user.type
    if commands.is_bot(user, user_type):
        # Two bots must not answer each other: no job, no reply.
        logs.event(
            log,
            "command from a bot ignored",
            repo=d.repo,
            pr=issue.number,
            delivery_id=d.delivery_id,
            user=user,
            comment_id=comment.id,
        )
        return "command from a bot: ignored"
    # The command as `/landbot` reads it; the worker reads the lines again with the slug.
    guess = commands.parse_command("\n".join(lines), (commands.SLASH_NAME,))
    name = guess.name if guess is not None else "mention"
    store.add_job(
        "command",
        {
            "command": name,
            "repo": d.repo,
            "pr": issue.number,
            "user": user,
            "comment_id": comment.id,
            "user_type": user_type,
            "lines": lines,
        },
        dedupe_key=f"command:{d.delivery_id}",
        # Only a retry acts on a drop and its sticky comments: skip/unskip/help run at once.
        holds_pr=commands.may_retry(lines),
    )
    logs.event(
        log,
        "command received",
        repo=d.repo,
        pr=issue.number,
        delivery_id=d.delivery_id,
        command=name,
        user=user,
        comment_id=comment.id,
    )
    return f"{lines[0][:60]} from {user} on #{issue.number}"
