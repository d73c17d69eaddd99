"""The land stage's writes to GitHub: carry out the actions a decision asks for.

Every action is claimed in the store's ledger first, so a worker killed at any point is
finished by the next one without acting twice: a claimed action found "started" re-reads
GitHub to learn whether it took effect. With publish.py, this is the only writer to GitHub.

An answer that never came (MutationOutcomeUnknown: a 5xx or a timeout after sending) is
never repeated blindly. Each mutation is made idempotent, or verified, like this:

mutation                  after an unknown outcome (or found "started" on resume)
------------------------  ----------------------------------------------------------------
enqueue (Requeue)         re-read the PR: merged, closed, head moved or in the queue: not
                          sent again; else its timeline (the sweep's `queue_removals`): an
                          AddedToMergeQueueEvent after the drop's removal means it applied
                          (its group failed fast), and the budget is one; only "no enqueue
                          since the drop" sends it once more (decide.enqueue_after_unknown)
status comment, create    claimed in the store first (`comment_posts`, one per PR) and its
                          id kept there once made, so any later writer edits it; without an
                          id, `upsert_marked_comment` lists the bot's comments and finds the
                          one with `<!-- landbot:status -->`: edited, not doubled
status comment, edit      sent again: an edit of landbot's own comment is idempotent
hand-back comment         claimed in the store per drop (whatever plan, stage or process
                          posts it): kept as made, it is never posted again; claimed before
                          without an id, landbot's own comments (by its login: anyone can
                          paste the marker) listed for `<!-- landbot:handback -->` plus this
                          drop's tag `<!-- landbot:drop N -->`: found, it is the one; not
                          found, created once more
fix announcement          the same, with `<!-- landbot:fix -->`, per drop and pushed commit
                          (AnnounceFix: a new comment per push, since an edit notifies no one)
minimize older hand-back  sent again once (twice is harmless); cosmetic, so a refusal is
                          logged and does not fail the drop
reaction (commands)       the client repeats it (`repeatable`): GitHub answers with the
                          existing reaction
command reply             the comments listed for `<!-- landbot:reply -->` plus the
                          command's tag `<!-- landbot:command N -->` (land/replies.py)
push (publish.py)         `git ls-remote` of the branch: at the fix, it applied; still at
                          the job's start, pushed once more under the same lease; anywhere
                          else, someone moved it: refused, nothing more
auto-merge (publish.py)   re-read the PR: armed at the pushed head, it applied; not armed
                          there, sent once more; head moved, not armed (handed back)
check runs, fixing label  land/checks.py: the `landbot` check run (found by its external_id)
                          and the label; a refusal is logged and does not fail the drop

The store leases one job of a pull request at a time (Store.lease_job), so two writers
of one PR's comments never run at once; the claims above cover a writer that was killed.

A second unknown answer, or a verification that cannot be read, leaves the action
"started" and the job is retried later (the worker treats MutationOutcomeUnknown as
transient), so the next attempt verifies again. A drop fails only when GitHub refused a
mutation (MutationFailed), and its summary names it ("the enqueue failed: ...").
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar, runtime_checkable

from landbot import logs
from landbot.core import keys
from landbot.core.model import Drop, Evidence, FixerResult, PrSnapshot
from landbot.github.errors import (
    GitHubError,
    MutationFailed,
    MutationOutcomeUnknown,
    NetworkError,
    RateLimited,
    ServerError,
)
from landbot.github.models import Comment, EnqueueResult, QueueEvent
from landbot.github.ops import LandOps, SweepOps
from landbot.land.checks import COMMENT_TRIMMED, MAX_COMMENT, claim_fixing_label, fit_excerpts
from landbot.land.comments import (
    FIX_MARKER,
    HANDBACK_MARKER,
    STATUS_MARKER,
    render_fix_pushed,
    render_handback,
    render_status,
)
from landbot.land.decide import EnqueueCheck, enqueue_after_unknown
from landbot.land.model import Action, AnnounceFix, HandBack, Policy, Requeue, RunFixer, Status
from landbot.store import Store, StoredPost

log = logging.getLogger("landbot.land")
Progress = Callable[[str], None]
T = TypeVar("T")
# GitHub did nothing, or may have: the job is retried and the ledger's "started" re-checks.
NOT_KNOWN = (MutationOutcomeUnknown, NetworkError, ServerError, RateLimited)


def refused(mutation: str, exc: GitHubError) -> GitHubError:
    """The error to raise for a failed mutation: MutationFailed when GitHub is known to have
    refused it; as it was when GitHub may have acted or did nothing yet (retried later)."""
    if isinstance(exc, NOT_KNOWN):
        return exc
    return MutationFailed(mutation, exc)


class Actor:
    def __init__(
        self,
        store: Store,
        gh: LandOps,
        *,
        progress: Progress | None = None,
        failpoint: Callable[[str], None] | None = None,
        policy_for: Callable[[str], Policy] | None = None,
        notify: Callable[[str], object] | None = None,
    ) -> None:
        self.store = store
        self.gh = gh
        # One message beyond GitHub per hand-back (landbot/notify.py); None: none set.
        self.notify = notify
        # The comments name the repository's skip label and caps.
        self.policy_for = policy_for or (lambda repo: Policy())
        # Progress notes go to the log at debug: the events below say the same, as fields.
        self.progress = progress or (lambda msg: log.debug("%s", msg))
        self.failpoint = failpoint or (lambda name: None)
        # Names this process's comment claims (a claim found under another owner was an
        # earlier attempt's, maybe killed after its POST).
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{id(self):x}"

    def act(
        self,
        drop: Drop,
        pr: PrSnapshot,
        evidence: Evidence,
        fixer: FixerResult | None,
        index: int,
        action: Action,
        *,
        stage: str = "",
    ) -> None:
        """Carry out action `index` of the drop's plan, once, whatever crashed before."""
        assert drop.id is not None
        kind = type(action).__name__
        key = keys.action(drop.id, index, kind, after_fixer=fixer is not None, stage=stage)
        state = self.store.begin_action(key, kind.lower(), drop.id)
        if state == "done":
            logs.event(log, "action already done", logging.DEBUG, action_key=key)
            return
        resumed = state == "started"
        with logs.bound(**logs.drop_fields(drop), action_key=key):
            self._act(drop, pr, evidence, fixer, key, action, resumed=resumed)

    def _act(
        self,
        drop: Drop,
        pr: PrSnapshot,
        evidence: Evidence,
        fixer: FixerResult | None,
        key: str,
        action: Action,
        *,
        resumed: bool,
    ) -> None:
        assert drop.id is not None
        kind = type(action).__name__
        self.failpoint(f"before_{kind.lower()}")
        result: Any = None
        if isinstance(action, Requeue):
            result = self._requeue(drop, pr, action, key, resumed=resumed)
        elif isinstance(action, Status):
            body = render_status(
                action.topic,
                drop,
                pr,
                evidence,
                fixer,
                fix_comment_url=self._announced(drop, fixer),
                breaker_url=self._breaker_issue(drop) if action.topic == "held" else None,
            )
            c = self._status(drop, body)
            result = {"comment": c.id}
            logs.event(
                log, "status comment written", topic=action.topic, comment_id=c.id, url=c.html_url
            )
        elif isinstance(action, HandBack):
            result = self._hand_back(drop, pr, evidence, fixer, action, resumed=resumed)
            if action.topic == "cap_reached" and action.cap is not None:
                # Only once it is posted: a later drop past this cap mentions no one again.
                self.store.record_cap(drop.repo, drop.pr, action.cap, key)
        elif isinstance(action, AnnounceFix):
            if fixer is None:
                raise ValueError(f"{key}: a fix to announce, but no fixer result")
            result = self._announce(drop, pr, evidence, fixer, resumed=resumed)
        elif isinstance(action, RunFixer):
            # With the ledger's key: a plan resumed after a crash does not spend twice.
            self.store.spend(drop.repo, drop.pr, drop.head_sha, fixes=1, key=key)
            # The label goes on before the job exists, so no fix job can settle the drop
            # (land/checks.py takes it off then) before the ledger says it is on.
            label = self.policy_for(drop.repo).fixing_label
            labelled = bool(label) and claim_fixing_label(self.store, self.gh, drop, pr, label)
            job = self.store.add_job(
                "fix",
                {"drop_id": drop.id, "mode": action.mode},
                # Under the drop jobs' key prefix, so a push or a close cancels it too.
                dedupe_key=keys.fix_job(drop.repo, drop.pr, action.head_sha, drop.id),
                drop_id=drop.id,
            )
            result = {"job": job, **({"label": label} if labelled else {})}
            logs.event(log, "fixer job queued", fix_job_id=job, mode=action.mode)
        self.failpoint(f"after_{kind.lower()}")
        self.store.finish_action(key, "done", result)

    def _breaker_issue(self, drop: Drop) -> str | None:
        """The breaker's issue, which a held drop's status links to (once it exists)."""
        row = self.store.breaker(drop.repo)
        return row.issue_url if row is not None else None

    def react(self, repo: str, comment_id: int) -> None:
        """Answer an accepted comment command with 👀 (every command also gets a reply,
        land/replies.py: a refusal says why there, never only with an emoji)."""
        content = "eyes"
        self.gh.add_reaction(repo, comment_id, content)
        logs.event(log, "reaction added", repo=repo, comment_id=comment_id, content=content)

    # --- enqueue -----------------------------------------------------------------------

    def _requeue(
        self, drop: Drop, pr: PrSnapshot, action: Requeue, key: str, *, resumed: bool
    ) -> Any:
        # Spent under the ledger's key, once however often the action is resumed.
        self.store.spend(drop.repo, drop.pr, drop.head_sha, requeues=1, key=key)
        if resumed:
            # A previous attempt claimed this action and may have enqueued before dying.
            check = self._check_enqueue(drop, action)
            if not check.send_again:
                logs.event(log, "enqueue not sent again", finding=check.finding, why=check.why)
                return {"enqueue": check.finding, "resumed": True}
        self.progress(f"re-enqueueing {drop.repo}#{drop.pr} at {action.head_sha[:7]}")
        try:
            res = self._enqueue(pr, action, drop)
        except MutationOutcomeUnknown:
            # GitHub may have acted: find out before sending it again, once.
            check = self._check_enqueue(drop, action)
            logs.event(
                log,
                "enqueue unanswered",
                logging.WARNING,
                finding=check.finding,
                send_again=check.send_again,
                why=check.why,
            )
            if not check.send_again:
                return {"enqueue": check.finding}
            res = self._enqueue(pr, action, drop)
        logs.event(log, "enqueued", enqueued_sha=action.head_sha, already_queued=res.already_queued)
        return {"already_queued": res.already_queued}

    def _enqueue(self, pr: PrSnapshot, action: Requeue, drop: Drop) -> EnqueueResult:
        try:
            return self.gh.enqueue(pr.node_id, action.head_sha, repo=drop.repo)
        except GitHubError as exc:
            raise refused("enqueue", exc) from exc

    def _check_enqueue(self, drop: Drop, action: Requeue) -> EnqueueCheck:
        now = self.gh.pull_request(drop.repo, drop.pr).snapshot()
        check = enqueue_after_unknown(drop, action.head_sha, now, None)
        if check.finding == "cannot_tell":  # the PR alone does not say: read its timeline
            check = enqueue_after_unknown(drop, action.head_sha, now, self._queue_events(drop))
        if check.finding == "cannot_tell":
            # Neither sending it again nor calling it done is safe: try again later.
            raise MutationOutcomeUnknown(
                0, f"enqueue of {drop.repo}#{drop.pr}: {check.why}; retried later"
            )
        return check

    def _queue_events(self, drop: Drop) -> Sequence[QueueEvent] | None:
        """The PR's last queue events, from the sweep query (a PR just enqueued or removed
        is among the most recently updated); None when they cannot be read."""
        if not isinstance(self.gh, SweepOps):
            return None
        for found in self.gh.queue_removals(drop.repo):
            if found.number == drop.pr:
                return found.events
        return None

    # --- comments ----------------------------------------------------------------------

    def _status(self, drop: Drop, body: str) -> Comment:
        """Edit (or create) the status comment; an unanswered attempt is sent once more:
        an edit is idempotent, and a create that applied is found by its marker."""
        known = self.store.comment_id(drop.repo, drop.pr, "status")
        key = status_key(drop.repo, drop.pr)
        if known is None:
            # Claimed before the POST; "new" or "posting", the upsert lists the bot's
            # comments by marker before it creates one, so a create that applied is edited.
            claim = self.store.claim_post(
                key, repo=drop.repo, pr=drop.pr, marker=STATUS_MARKER, owner=self.owner
            )
            known = claim.comment_id if claim.claimed == "posted" else None
        try:
            c = _again_once(
                drop,
                "status comment",
                lambda: self.gh.upsert_marked_comment(
                    drop.repo, drop.pr, STATUS_MARKER, body, known_id=known
                ),
            )
        except GitHubError as exc:  # a second unanswered attempt passes through as it is
            raise refused("status comment", exc) from exc
        # Kept as soon as it is made: every later writer, of any job, edits this one.
        with self.store.tx():
            self.store.save_comment(drop.repo, drop.pr, "status", c.id, c.node_id)
            if known != c.id:
                self.store.claim_post(
                    key, repo=drop.repo, pr=drop.pr, marker=STATUS_MARKER, owner=self.owner
                )
                self.store.posted(key, c.id, c.node_id, c.html_url)
        return c

    def _hand_back(
        self,
        drop: Drop,
        pr: PrSnapshot,
        evidence: Evidence,
        fixer: FixerResult | None,
        action: HandBack,
        *,
        resumed: bool,
    ) -> Any:
        tag = f"<!-- landbot:drop {drop.id} -->"
        # GitHub refuses a longer body (422): the longest log excerpts give way first.
        text = fit_excerpts(
            lambda ev: render_handback(
                action.topic, drop, pr, ev, fixer, cap=action.cap, policy=self.policy_for(drop.repo)
            ),
            evidence,
            MAX_COMMENT - len(tag) - 1,
            COMMENT_TRIMMED,
        )
        body = text + tag + "\n"
        previous = self.store.comment_ref(drop.repo, drop.pr, "handback")
        key = f"handback:{drop.id}"
        # Kept as posted before this call: its message went (or was lost) then; at most one.
        told = self.notify is not None and _posted(self.store.post(key))
        # One hand-back per drop, whichever plan, stage or process posts it.
        comment = self._new_comment(drop, HANDBACK_MARKER, tag, body, resumed=resumed, key=key)
        self.progress(f"handed {drop.repo}#{drop.pr} back to @{pr.author}")
        logs.event(
            log,
            "handed back",
            topic=action.topic,
            cap=action.cap,
            author=pr.author,
            comment_id=comment.id,
            url=comment.html_url,
        )
        if previous is not None and previous[0] != comment.id and previous[1]:
            # The older hand-back is outdated: fold it away so one current one stands.
            self._minimize(drop, previous[1])
        self.store.save_comment(drop.repo, drop.pr, "handback", comment.id, comment.node_id)
        if self.notify is not None and not told:
            # After the comment: the message links it. Never fails the drop (notify.py).
            self.notify(handback_message(drop, pr, action, comment.html_url))
        # The url is the `landbot` check run's details link (land/checks.py).
        return {"comment": comment.id, "url": comment.html_url}

    def _announce(
        self, drop: Drop, pr: PrSnapshot, evidence: Evidence, fixer: FixerResult, *, resumed: bool
    ) -> Any:
        """A new comment for the push of a fix (it notifies; the status is only edited)."""
        tag = f"<!-- landbot:drop {drop.id} -->"
        body = render_fix_pushed(drop, pr, evidence, fixer) + tag + "\n"
        comment = self._new_comment(
            drop, FIX_MARKER, tag, body, resumed=resumed, key=f"fix:{drop.id}:{fixer.pushed_sha}"
        )
        self.progress(f"announced the fix pushed to {drop.repo}#{drop.pr}")
        logs.event(
            log,
            "fix announced",
            pushed_sha=fixer.pushed_sha,
            comment_id=comment.id,
            url=comment.html_url,
        )
        return {"comment": comment.id, "url": comment.html_url}

    def _announced(self, drop: Drop, fixer: FixerResult | None) -> str | None:
        """The html_url of the comment that announced this drop's fix, for the status."""
        if fixer is None or not fixer.pushed_sha:
            return None
        for done in self.store.actions(drop.id):
            if done.kind == "announcefix" and done.status == "done":
                url = done.result.get("url") if isinstance(done.result, dict) else None
                return str(url) if url else None
        return None

    def _new_comment(
        self, drop: Drop, marker: str, tag: str, body: str, *, resumed: bool, key: str
    ) -> Comment:
        what = "fix announcement" if marker == FIX_MARKER else "hand-back comment"
        return self.post_once(
            drop.repo,
            drop.pr,
            marker,
            tag,
            body,
            resumed=resumed,
            what=what,
            key=key,
            drop_id=drop.id,
        )

    def post_once(
        self,
        repo: str,
        number: int,
        marker: str,
        tag: str,
        body: str,
        *,
        resumed: bool,
        what: str,
        key: str | None = None,
        drop_id: int | None = None,
    ) -> Comment:
        """Post a new comment once: a resumed action, or one whose answer never came, looks
        for its marker and its tag (a drop's, a command's) first, and creates it once more
        only if absent. `what` names it in a refusal ("hand-back comment").

        With `key`, the comment is claimed in the store before its POST and its id kept
        once made: a comment kept there is never posted again, and one claimed before
        without an id is looked for first, whatever ledger key or process comes to it."""
        look = resumed
        if key is not None:
            claim = self.store.claim_post(
                key, repo=repo, pr=number, marker=marker, owner=self.owner, drop_id=drop_id
            )
            if claim.claimed == "posted" and claim.comment_id is not None:
                logs.event(log, "comment already posted", comment_id=claim.comment_id, key=key)
                return Comment(claim.comment_id, claim.node_id or "", body, None, None, claim.url)
            look = look or claim.claimed == "posting"
        comment = self._find_comment(repo, number, marker, tag) if look else None
        if comment is None:
            try:
                comment = self._create_comment(repo, number, body, what)
            except MutationOutcomeUnknown:
                # Posted or not: the tag says which; created once more only if not.
                comment = self._find_comment(repo, number, marker, tag) or self._create_comment(
                    repo, number, body, what
                )
        if key is not None:
            self.store.posted(key, comment.id, comment.node_id, comment.html_url)
        return comment

    def _find_comment(self, repo: str, number: int, marker: str, tag: str) -> Comment | None:
        """landbot's own comment with `marker` and `tag`. Anyone can paste both (drop ids
        are sequential): a stranger's copy taken for landbot's lost one would be recorded
        as posted, and the real one never sent. A client that cannot say its login (a test
        double) finds nothing: posting again is the safe side."""
        me = self.gh.bot_login().lower() if isinstance(self.gh, _KnowsLogin) else None
        return next(
            (
                c
                for c in self.gh.comments(repo, number)
                if me is not None
                and c.user is not None
                and c.user.lower() == me  # logins are case-insensitive
                and tag in c.body
                and marker in c.body
            ),
            None,
        )

    def _create_comment(self, repo: str, number: int, body: str, what: str) -> Comment:
        try:
            return self.gh.create_comment(repo, number, body)
        except GitHubError as exc:
            raise refused(what, exc) from exc

    def _minimize(self, drop: Drop, node_id: str) -> None:
        """Fold the older hand-back away; sent again once when unanswered (harmless twice).
        Cosmetic: the new hand-back is what the author reads, so a refusal is only logged."""
        try:
            _again_once(
                drop,
                "minimize",
                lambda: self.gh.minimize_comment(node_id, "OUTDATED", repo=drop.repo),
            )
        except MutationOutcomeUnknown as exc:
            logs.event(
                log,
                "older hand-back minimize unanswered",
                logging.WARNING,
                node_id=node_id,
                error=exc,
            )
        except (NetworkError, RateLimited):
            raise  # GitHub did nothing: the job is retried, the ledger re-checks
        except GitHubError as exc:
            logs.event(
                log,
                "older hand-back minimize refused",
                logging.WARNING,
                node_id=node_id,
                error=exc,
            )
        else:
            logs.event(log, "older hand-back minimized", node_id=node_id)


@runtime_checkable
class _KnowsLogin(Protocol):
    """The login landbot's comments carry (GitHubClient.bot_login), as upsert_marked_comment
    filters by it."""

    def bot_login(self) -> str: ...


def _posted(post: StoredPost | None) -> bool:
    return post is not None and post.state == "posted"


def handback_message(drop: Drop, pr: PrSnapshot, action: HandBack, url: str | None) -> str:
    """The one line a hand-back sends beyond GitHub (plain text: any receiver shows it):
    whose pull request, why in the decision's word, and the hand-back comment's link."""
    what = action.topic.replace("_", " ")
    if action.cap:
        what += f", the {action.cap.replace('_', ' ')} cap"
    return f"landbot handed {drop.repo}#{drop.pr} back to {pr.author} ({what}): {url or pr.url}"


def status_key(repo: str, pr: int) -> str:
    """The store's key of a pull request's status comment (one per PR)."""
    return f"status:{repo.lower()}#{pr}"


def _again_once(drop: Drop, what: str, send: Callable[[], T]) -> T:
    """Send an idempotent mutation; an unanswered attempt is sent once more (a second
    MutationOutcomeUnknown is the caller's to handle)."""
    try:
        return send()
    except MutationOutcomeUnknown as exc:
        logs.event(
            log,
            "mutation unanswered: sending it again",
            logging.WARNING,
            mutation=what,
            error=exc,
        )
        return send()
