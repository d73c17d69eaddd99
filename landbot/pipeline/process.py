"""One drop carried through the stages: confirm, triage, decide, act.

The decision is saved on the drop before any action (land/plan.py), and every action is
claimed in the ledger first (land/act.py), so a worker killed at any point is finished by
the next one without acting twice. Each choice is land/decide.py's; this module only knows
the order.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from landbot import logs
from landbot.config import Settings
from landbot.core.model import Drop, Evidence, FixerResult, History, PrSnapshot
from landbot.github.ops import GitHubOps
from landbot.land import decide as d
from landbot.land.act import Actor, Progress
from landbot.land.model import Decision, Policy
from landbot.land.plan import evidence_from, plan_from, plan_json
from landbot.store import Store
from landbot.triage.gather import Gatherer

log = logging.getLogger("landbot.pipeline")
Gather = Callable[[GitHubOps, Store, Drop], Evidence]


class Lander:
    """Carries drops to their outcome with one GitHub client and one store."""

    def __init__(
        self,
        settings: Settings,
        store: Store,
        gh: GitHubOps,
        *,
        gather: Gather | None = None,
        fixer_enabled: bool = False,
        progress: Progress | None = None,
        failpoint: Callable[[str], None] | None = None,
    ) -> None:
        self.settings = settings
        self.store = store
        self.gh = gh
        self.gather = gather or Gatherer.from_settings(settings)
        self.policy = Policy.from_settings(settings, fixer_enabled=fixer_enabled)
        # Progress notes are for a person watching `landbot retry`; the log has the
        # decision and action events, so these go to it at debug only.
        self.progress = progress or (lambda msg: log.debug("%s", msg))
        self.failpoint = failpoint or (lambda name: None)
        self.actor = Actor(
            store, gh, progress=self.progress, failpoint=self.failpoint, policy=self.policy
        )

    def process(self, drop_id: int, fixer: FixerResult | None = None) -> Decision:
        """Carry one drop to its outcome; safe to call again after a crash at any point."""
        row = self.store.drop(drop_id)
        if row is None:
            raise ValueError(f"no drop {drop_id}")
        with logs.bound(**logs.drop_fields(row)):
            return self._process(drop_id, row.drop, row.plan, fixer)

    def _process(
        self, drop_id: int, drop: Drop, plan: dict[str, Any] | None, fixer: FixerResult | None
    ) -> Decision:
        if fixer is not None and fixer.pushed_sha:
            # Counted against the PR's push cap whatever is decided next, and first of all:
            # a drop at this head must be told from a push that is not landbot's.
            self.store.record_push(drop.repo, drop.pr, fixer.pushed_sha)
        pr: PrSnapshot | None
        if plan is not None and (fixer is None) == (plan.get("fixer") is None):
            # The same stage was decided before (a worker died while acting): finish it.
            decision, evidence, fixer = plan_from(plan)
            pr = None
            self.progress(f"resuming the saved plan for {drop.repo}#{drop.pr}")
            _decided(decision, evidence, fixer, resumed=True)
        else:
            # After the fixer, the evidence is the one the fixer worked from.
            known = evidence_from(plan) if plan is not None else None
            decision, evidence, pr = self._decide(drop, fixer, known)
            corrected = {"head_sha": decision.removed_head} if decision.removed_head else {}
            self.store.update_drop(
                drop_id,
                plan=plan_json(decision, evidence, fixer),
                class_=evidence.triage_class,
                summary=decision.why,
                evidence={"merge_group_source": evidence.merge_group_source},
                **corrected,
            )
            _decided(decision, evidence, fixer, resumed=False)
        self.failpoint("after_decide")
        if decision.actions:
            if pr is None:
                pr = self.reread(drop)
                gone = d.taken_away(pr, self.policy)
                if gone is not None:
                    # Resuming after a crash, and a person closed the PR or opted it out in
                    # between: what was not done yet is not done now.
                    return self.settle(drop_id, drop, gone)
            for index, action in enumerate(decision.actions):
                self.actor.act(drop, pr, evidence, fixer, index, action)
        return self.settle(drop_id, drop, decision)

    def settle(self, drop_id: int, drop: Drop, decision: Decision) -> Decision:
        """Record the outcome a decision chose."""
        self.store.update_drop(drop_id, outcome=decision.outcome, summary=decision.why)
        self.progress(f"{drop.repo}#{drop.pr}: {decision.outcome} ({decision.why})")
        logs.event(
            log,
            "drop settled",
            # Named here too: `settle` is also called outside `process` (a stale fix job).
            **{**logs.drop_fields(drop), "drop_id": drop_id},
            outcome=decision.outcome,
            why=decision.why,
        )
        return decision

    def reread(self, drop: Drop) -> PrSnapshot:
        return self.gh.pull_request(drop.repo, drop.pr).snapshot()

    def before_fix(self, drop_id: int) -> tuple[Drop, Evidence, Decision | None]:
        """The drop and the evidence its plan was decided on (what a fix job works from),
        and the decision to leave it when the PR re-read says the drop no longer holds."""
        row = self.store.drop(drop_id)
        if row is None:
            raise ValueError(f"no drop {drop_id}")
        evidence = evidence_from(row.plan) if row.plan is not None else Evidence()
        drop = row.drop
        return drop, evidence, d.confirm(drop, self.reread(drop), self.policy)

    def _decide(
        self, drop: Drop, fixer: FixerResult | None, known: Evidence | None = None
    ) -> tuple[Decision, Evidence, PrSnapshot | None]:
        early = d.without_look(drop, self.policy, fixer)
        if early is not None:
            return early, Evidence(), None
        self.progress(f"re-reading {drop.repo}#{drop.pr}")
        pr = self.reread(drop)
        evidence = known or Evidence()
        history = self.history(drop, pr.head_sha)
        if known is None and d.needs_evidence(drop, pr, self.policy, history):
            self.progress(f"gathering evidence for {drop.repo}#{drop.pr} ({drop.reason})")
            evidence = self.gather(self.gh, self.store, drop)
        return d.decide(drop, pr, evidence, history, self.policy, fixer), evidence, pr

    def history(self, drop: Drop, seen_head: str | None = None) -> History:
        """The drop's head budget and the PR's caps now. `seen_head` is the head as just
        re-read: one landbot did not push resets the PR's caps (someone else pushed)."""
        if seen_head is not None:
            self.store.note_head(drop.repo, drop.pr, seen_head)
        return self.store.budget(drop.repo, drop.pr, drop.head_sha, window=self.policy.cap_window)


def _decided(
    decision: Decision, evidence: Evidence, fixer: FixerResult | None, *, resumed: bool
) -> None:
    """The line for a decision: what landbot will do about the drop, and why."""
    logs.event(
        log,
        "drop decided",
        stage="after fixer" if fixer is not None else "drop",
        resumed=resumed,
        outcome=decision.outcome,
        actions=[type(a).__name__ for a in decision.actions],
        triage_class=evidence.triage_class,
        verdict=fixer.verdict if fixer is not None else None,
        removed_head=decision.removed_head,
        why=decision.why,
    )
