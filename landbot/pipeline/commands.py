"""Comment commands (`/landbot retry|skip|unskip|help`, or `@<app slug> …`) and the
operator's `landbot retry PR`.

A retry records a new drop for the PR's current head (with the reason of its latest recorded
removal at that head, or `manual` when there is none), resets that head's budgets and the
PR's caps across heads (a person asked: landbot may push and re-enqueue again), and runs
the land loop on it at once. `skip` adds the repository's skip label, `unskip` removes it;
`help` (or a word landbot does not know) answers with what each command does.

`retry`, `skip` and `unskip` are honoured only from users with write, maintain or admin
permission (decide.command_allowed); `help` needs none, so it costs no permission call.
A comment by a bot account gets nothing: two bots must not answer each other. Every
command from a person gets one reply comment (land/replies.py) saying what was done or
why not; an accepted one also gets 👀. The reply is claimed in the action ledger under the
command's comment id: a job run again after it answered does nothing, and one that died
mid-way finds its reply by its tag instead of posting a second.

A command never ends in silence: when GitHub refuses its action (the label, a write of the
retry's land loop, the permission read) the reply says what failed, in one line, and what
to do instead; 👀 stays, for "seen". An answer that never came retries the job as for any
other (the land loop's ledger and the reply's tag keep it to one of each), and the last
attempt answers with the failure instead of giving up without a word (`final`).
"""

from __future__ import annotations

import logging
import uuid
from typing import Any, Protocol, runtime_checkable

from landbot import logs
from landbot.errors import LandbotError
from landbot.github.errors import GitHubError, MutationFailed, MutationOutcomeUnknown
from landbot.github.ops import GitHubOps, LandOps
from landbot.intake.commands import SLASH_NAME, Command, is_bot, mention_names, parse_command
from landbot.land import replies
from landbot.land.act import NOT_KNOWN, refused
from landbot.land.decide import command_allowed, job_failed
from landbot.land.model import Decision
from landbot.pipeline.process import Lander
from landbot.store import Store, utcnow

log = logging.getLogger("landbot.pipeline")


def retry(
    lander: Lander, store: Store, repo: str, pr: int, *, source: str, key: str | None = None
) -> Decision:
    """`key` names the request (a comment's id): the same request retried after a failure
    resumes its drop instead of starting another one (and another hand-back)."""
    return lander.process(record_retry(lander, store, repo, pr, source=source, key=key))


def record_retry(
    lander: Lander, store: Store, repo: str, pr: int, *, source: str, key: str | None = None
) -> int:
    """The retry's drop (recorded, or found again by `key`), its budgets reset once."""
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
    return drop_id


@runtime_checkable
class _KnowsLogin(Protocol):
    def bot_login(self) -> str: ...


def _bot_login(gh: GitHubOps) -> str | None:
    return gh.bot_login() if isinstance(gh, _KnowsLogin) else None


def _command_of(gh: GitHubOps, payload: dict[str, Any]) -> Command | None:
    """The job's command: its candidate lines read with landbot's names (the App's slug
    known only here), or, for a job queued before the lines were kept, its `command`."""
    lines = payload.get("lines")
    if lines is None:  # queued before an upgrade: intake matched `/landbot retry` exactly
        name = str(payload.get("command") or "retry")
        return Command(name, (), f"/landbot {name}")
    text = "\n".join(str(line) for line in lines)
    names: tuple[str, ...] = (SLASH_NAME,)
    if any(str(line).startswith("@") for line in lines):
        # Only a mention needs the slug (one cached call); `/landbot` lines do not.
        login = _bot_login(gh)
        names = mention_names(login) if login else names
    return parse_command(text, names)


def _mention(gh: GitHubOps) -> str | None:
    """`@<slug>` for the help text, when landbot runs as an App."""
    login = _bot_login(gh)
    names = mention_names(login) if login else ()
    return names[1] if len(names) > 1 else None


def run_comment_command(
    lander: Lander, store: Store, payload: dict[str, Any], *, final: bool = False
) -> str:
    """Answer one command job. `final`: the worker's last attempt, where an answer GitHub
    never gave is reported in the reply instead of retried."""
    repo, pr, user = payload["repo"], int(payload["pr"]), payload.get("user") or ""
    comment_id = int(payload["comment_id"]) if payload.get("comment_id") else None
    fields: dict[str, Any] = {"repo": repo, "pr": pr, "user": user, "comment_id": comment_id}
    if is_bot(user, payload.get("user_type")):
        logs.event(log, "command from a bot ignored", **fields)
        return f"command from the bot {user}: ignored"
    command = _command_of(lander.gh, payload)
    if command is None:
        # `@alice retry`: a mention of someone else, which intake could not tell apart.
        logs.event(log, "comment not addressed to landbot", logging.DEBUG, **fields)
        return "not a command for landbot"
    fields["command"] = command.name
    key = f"reply:{repo}#{pr}:{comment_id}" if comment_id is not None else None
    state = store.begin_action(key, "reply") if key is not None else "new"
    if state == "done":
        logs.event(log, "command already answered", **fields)
        return f"/landbot {command.name} from {user}: already answered"
    body, note = _carry_out(lander, store, command, repo, pr, user, comment_id, fields, final)
    if comment_id is None or key is None:
        logs.event(log, "command without a comment id: no reply", logging.WARNING, **fields)
        return note
    reply = replies.post_reply(lander.actor, repo, pr, comment_id, body, resumed=state == "started")
    store.finish_action(key, "done", {"comment": reply.id})
    logs.event(log, "command answered", reply_id=reply.id, url=reply.html_url, **fields)
    return note


def _carry_out(
    lander: Lander,
    store: Store,
    command: Command,
    repo: str,
    pr: int,
    user: str,
    comment_id: int | None,
    fields: dict[str, Any],
    final: bool = False,
) -> tuple[str, str]:
    """Do what the command asks, when its author may: (the reply's body, the job's note)."""
    line = command.line_text
    skip_label = lander.settings_for(repo).policy.skip_label
    if command.name in ("help", "unknown"):
        logs.event(log, "command answered with help", **fields)
        mention = _mention(lander.gh)
        if command.name == "help":
            return replies.render_help(line, skip_label, mention), f"help for {user}"
        return replies.render_unknown(line, skip_label, mention), f"unknown command from {user}"
    try:
        return _act_on(
            lander, store, command, repo, pr, user, comment_id, fields, final, skip_label
        )
    except NOT_KNOWN as exc:
        if not final:
            raise  # retried: the ledger and the reply's tag keep each write to one
        failure: LandbotError = exc
    except LandbotError as exc:  # GitHub refused (MutationFailed, a read answered 4xx)
        failure = exc
    logs.event(log, "command failed", logging.WARNING, error=failure, final=final, **fields)
    body = replies.render_failed(line, command.name, error_line(failure), skip_label)
    return body, f"/landbot {command.name} from {user}: failed ({str(failure)[:200]})"


def error_line(exc: LandbotError) -> str:
    """What failed, for a person: the mutation, and GitHub's status and message without the
    API's URL."""
    head: str = ""
    cause: LandbotError = exc
    if isinstance(exc, MutationFailed):
        if not isinstance(exc.cause, GitHubError):
            return str(exc)
        head, cause = f"the {exc.mutation} failed: ", exc.cause
    if not isinstance(cause, GitHubError):
        return str(exc)
    if cause.status == 0:
        said = "no answer from GitHub"
    elif cause.status == 200:  # GraphQL errors come with a 200
        said = "GitHub's answer"
    else:
        said = f"GitHub answered {cause.status}"
    return f"{head}{said}: {cause.message}"


def _act_on(
    lander: Lander,
    store: Store,
    command: Command,
    repo: str,
    pr: int,
    user: str,
    comment_id: int | None,
    fields: dict[str, Any],
    final: bool,
    skip_label: str,
) -> tuple[str, str]:
    """`retry`, `skip` or `unskip`: the permission, then the action."""
    line = command.line_text
    permission = lander.gh.collaborator_permission(repo, user) if user else "none"
    allowed = command_allowed(permission)
    logs.event(
        log, "command accepted" if allowed else "command refused", permission=permission, **fields
    )
    if not allowed:
        body = replies.render_refused(line, command.name, user, permission)
        return body, f"refused /landbot {command.name} from {user} ({permission})"
    if comment_id is not None:
        _react(lander, repo, comment_id, fields)
    if command.name == "retry":
        key = f"comment-{comment_id}"
        drop_id = record_retry(lander, store, repo, pr, source="command", key=key)
        try:
            decision = lander.process(drop_id)
        except LandbotError as exc:
            if final or not isinstance(exc, NOT_KNOWN):
                # The drop ends as a drop job's would (the worker's `_failed`), and with it
                # its check run; the reply says what failed.
                failed = job_failed(str(exc)[:500])
                store.update_drop(drop_id, outcome=failed.outcome, summary=failed.why)
                lander.failed(drop_id, failed)
            raise
        body = replies.render_retried(line, decision.outcome, decision.why)
        return body, f"/landbot retry from {user}: {decision.outcome}"
    if command.name == "skip":
        _add_label(lander.gh, repo, pr, skip_label)
        logs.event(log, "skip label added", label=skip_label, **fields)
        return replies.render_skipped(line, skip_label), f"/landbot skip from {user}"
    if command.name == "unskip":
        removed = _remove_label(lander.gh, repo, pr, skip_label)
        logs.event(log, "skip label removed", label=skip_label, had_it=removed, **fields)
        body = replies.render_unskipped(line, skip_label, removed=removed)
        return body, f"/landbot unskip from {user}: {'removed' if removed else 'had no label'}"
    raise ValueError(f"command job with no handler for {command.name!r}: a bad payload")


def _react(lander: Lander, repo: str, comment_id: int, fields: dict[str, Any]) -> None:
    """👀, for "seen": a refused reaction is logged, and the command goes on (the reply
    is what answers)."""
    try:
        lander.actor.react(repo, comment_id)
    except NOT_KNOWN:
        raise
    except GitHubError as exc:
        logs.event(log, "reaction refused", logging.WARNING, error=exc, **fields)


def _add_label(gh: LandOps, repo: str, pr: int, label: str) -> None:
    """Adding a label is idempotent: an unanswered attempt is sent once more."""
    try:
        try:
            gh.add_label(repo, pr, label)
        except MutationOutcomeUnknown:
            gh.add_label(repo, pr, label)
    except GitHubError as exc:
        raise refused("skip label", exc) from exc


def _remove_label(gh: LandOps, repo: str, pr: int, label: str) -> bool:
    """Whether the label was on and is now off. After an unanswered attempt the PR says
    whether it applied; a second removal would answer "had no label" either way."""
    try:
        try:
            return gh.remove_label(repo, pr, label)
        except MutationOutcomeUnknown:
            if label not in gh.pull_request(repo, pr).labels:
                return True
            return gh.remove_label(repo, pr, label)
    except GitHubError as exc:
        raise refused("skip label removal", exc) from exc
