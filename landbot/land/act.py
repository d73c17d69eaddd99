"""The land stage's writes to GitHub: carry out the actions a decision asks for.

Every action is claimed in the store's ledger first, so a worker killed at any point is
finished by the next one without acting twice: a claimed action found "started" re-reads
GitHub to learn whether it took effect. With publish.py, this is the only writer to GitHub.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from landbot.core import keys
from landbot.core.model import Drop, Evidence, FixerResult, PrSnapshot
from landbot.github.errors import MutationOutcomeUnknown
from landbot.github.ops import GitHubOps
from landbot.land.comments import HANDBACK_MARKER, STATUS_MARKER, render_handback, render_status
from landbot.land.model import Action, HandBack, Requeue, RunFixer, Status
from landbot.store import Store

log = logging.getLogger("landbot.land")
Progress = Callable[[str], None]


class Actor:
    def __init__(
        self,
        store: Store,
        gh: GitHubOps,
        *,
        progress: Progress | None = None,
        failpoint: Callable[[str], None] | None = None,
    ) -> None:
        self.store = store
        self.gh = gh
        self.progress = progress or (lambda msg: log.info("%s", msg))
        self.failpoint = failpoint or (lambda name: None)

    def act(
        self,
        drop: Drop,
        pr: PrSnapshot,
        evidence: Evidence,
        fixer: FixerResult | None,
        index: int,
        action: Action,
    ) -> None:
        """Carry out action `index` of the drop's plan, once, whatever crashed before."""
        assert drop.id is not None
        kind = type(action).__name__
        key = keys.action(drop.id, index, kind, after_fixer=fixer is not None)
        state = self.store.begin_action(key, kind.lower(), drop.id)
        if state == "done":
            return
        self.failpoint(f"before_{kind.lower()}")
        result: Any = None
        if isinstance(action, Requeue):
            result = self._requeue(drop, pr, action, resumed=state == "started")
        elif isinstance(action, Status):
            body = render_status(action.topic, drop, pr, evidence, fixer)
            known = self.store.comment_id(drop.repo, drop.pr, "status")
            c = self.gh.upsert_marked_comment(
                drop.repo, drop.pr, STATUS_MARKER, body, known_id=known
            )
            self.store.save_comment(drop.repo, drop.pr, "status", c.id, c.node_id)
            result = {"comment": c.id}
        elif isinstance(action, HandBack):
            result = self._hand_back(drop, pr, evidence, fixer, action, resumed=state == "started")
        elif isinstance(action, RunFixer):
            self.store.spend(drop.repo, drop.pr, drop.head_sha, fixes=1)
            job = self.store.add_job(
                "fix",
                {"drop_id": drop.id, "mode": action.mode},
                # Under the drop jobs' key prefix, so a push or a close cancels it too.
                dedupe_key=keys.fix_job(drop.repo, drop.pr, action.head_sha, drop.id),
                drop_id=drop.id,
            )
            result = {"job": job}
        self.failpoint(f"after_{kind.lower()}")
        self.store.finish_action(key, "done", result)

    def react(self, repo: str, comment_id: int, *, accepted: bool) -> None:
        """Answer a comment command: 👀 when accepted, 👎 when refused."""
        self.gh.add_reaction(repo, comment_id, "eyes" if accepted else "-1")

    def _requeue(self, drop: Drop, pr: PrSnapshot, action: Requeue, *, resumed: bool) -> Any:
        if resumed:
            # A previous attempt claimed this action and may have enqueued before dying.
            now = self.gh.pull_request(drop.repo, drop.pr)
            if now.in_merge_queue:
                return {"already_queued": True, "resumed": True}
        else:
            self.store.spend(drop.repo, drop.pr, drop.head_sha, requeues=1)
        self.progress(f"re-enqueueing {drop.repo}#{drop.pr} at {action.head_sha[:7]}")
        try:
            res = self.gh.enqueue(pr.node_id, action.head_sha, repo=drop.repo)
        except MutationOutcomeUnknown:
            # GitHub may have acted: re-read before trying again, once.
            now = self.gh.pull_request(drop.repo, drop.pr)
            if now.in_merge_queue:
                return {"already_queued": True}
            res = self.gh.enqueue(pr.node_id, action.head_sha, repo=drop.repo)
        return {"already_queued": res.already_queued}

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
        body = render_handback(action.topic, drop, pr, evidence, fixer) + tag + "\n"
        previous = self.store.comment_ref(drop.repo, drop.pr, "handback")
        existing = None
        if resumed:
            existing = next(
                (
                    c
                    for c in self.gh.comments(drop.repo, drop.pr)
                    if tag in c.body and HANDBACK_MARKER in c.body
                ),
                None,
            )
        comment = existing or self.gh.create_comment(drop.repo, drop.pr, body)
        self.progress(f"handed {drop.repo}#{drop.pr} back to @{pr.author}")
        if previous is not None and previous[0] != comment.id and previous[1]:
            # The older hand-back is outdated: fold it away so one current one stands.
            self.gh.minimize_comment(previous[1], "OUTDATED", repo=drop.repo)
        self.store.save_comment(drop.repo, drop.pr, "handback", comment.id, comment.node_id)
        return {"comment": comment.id}
