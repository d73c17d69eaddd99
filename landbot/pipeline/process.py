"""Stage 5: confirm, decide, act. The only place the land loop writes to GitHub.

The decision is saved on the drop before any action, and every action is claimed in the
ledger first, so a worker killed at any point is finished by the next one without acting
twice: a claimed action found "started" re-reads GitHub to learn whether it took effect.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from typing import Any, cast

from landbot.config import Settings
from landbot.core import keys
from landbot.core.model import (
    Drop,
    Evidence,
    FailedCheck,
    FixerResult,
    History,
    JobFailure,
    PrSnapshot,
)
from landbot.core.reasons import Reason
from landbot.github.errors import MutationOutcomeUnknown
from landbot.github.models import PullState
from landbot.github.ops import GitHubOps
from landbot.land.comments import HANDBACK_MARKER, STATUS_MARKER, render_handback, render_status
from landbot.land.decide import confirm, decide, ignored_reason
from landbot.land.model import (
    DEFAULT_REASON_ACTIONS,
    Action,
    Decision,
    HandBack,
    Policy,
    ReasonAction,
    Requeue,
    RunFixer,
    Status,
)
from landbot.store import Store
from landbot.triage.gather import Gatherer

log = logging.getLogger("landbot.land")
Progress = Callable[[str], None]


def policy_from(settings: Settings, *, fixer_enabled: bool = False) -> Policy:
    p = settings.policy
    # The overrides were checked against the reasons and actions by PolicySettings.
    reasons = cast("dict[Reason, ReasonAction]", {**DEFAULT_REASON_ACTIONS, **p.reasons})
    return Policy(
        reasons=reasons,
        max_requeues_per_head=p.max_requeues_per_head,
        max_fixer_attempts_per_head=p.max_fixer_attempts_per_head,
        skip_label=p.skip_label,
        fixer_enabled=fixer_enabled,
    )


def snapshot(pr: PullState) -> PrSnapshot:
    state = "merged" if pr.merged or pr.state == "MERGED" else pr.state.lower()
    return PrSnapshot(
        state="merged" if state == "merged" else "closed" if state == "closed" else "open",
        head_sha=pr.head_oid,
        in_queue=pr.in_merge_queue,
        author=pr.author or "ghost",
        labels=pr.labels,
        auto_merge=pr.auto_merge,
        fork=pr.is_fork,
        maintainer_can_modify=pr.maintainer_can_modify,
        node_id=pr.node_id,
        base_ref=pr.base_ref,
        head_ref=pr.head_ref,
        url=pr.url,
    )


def drop_from_row(row: Any) -> Drop:
    return Drop(
        repo=row.repo,
        pr=row.pr,
        head_sha=row.head_sha,
        reason=row.reason,
        source=row.source,
        raw_reason=row.raw_reason,
        merge_group_sha=row.merge_group_sha,
        observed_at=row.observed_at,
        id=row.id,
    )


# --- (de)serialising the plan ------------------------------------------------------------

_ACTIONS: dict[str, type[Any]] = {
    "Requeue": Requeue,
    "RunFixer": RunFixer,
    "HandBack": HandBack,
    "Status": Status,
}


def _plan_json(decision: Decision, evidence: Evidence, fixer: FixerResult | None) -> dict[str, Any]:
    return {
        "outcome": decision.outcome,
        "why": decision.why,
        "actions": [{"type": type(a).__name__, **dataclasses.asdict(a)} for a in decision.actions],
        "evidence": dataclasses.asdict(evidence),
        "fixer": dataclasses.asdict(fixer) if fixer else None,
    }


def _plan_from(data: dict[str, Any]) -> tuple[Decision, Evidence, FixerResult | None]:
    actions: list[Action] = []
    for item in data["actions"]:
        fields = {k: v for k, v in item.items() if k != "type"}
        actions.append(_ACTIONS[item["type"]](**fields))
    ev = dict(data["evidence"])
    ev["failed_checks"] = tuple(FailedCheck(**c) for c in ev.get("failed_checks", ()))
    ev["jobs"] = tuple(
        JobFailure(
            **{
                **j,
                "error_lines": tuple(j["error_lines"]),
                "excerpt": tuple(tuple(x) for x in j["excerpt"]),
            }
        )
        for j in ev.get("jobs", ())
    )
    ev["conflict_files"] = tuple(ev.get("conflict_files", ()))
    fixer = FixerResult(**data["fixer"]) if data.get("fixer") else None
    return Decision(data["outcome"], tuple(actions), data["why"]), Evidence(**ev), fixer


def _taken_away(pr: PrSnapshot, policy: Policy) -> str | None:
    """Why a saved plan must not be finished: the PR is no longer landbot's to act on.
    (Its head and its place in the queue may have changed through the plan's own actions.)"""
    if pr.state == "merged":
        return "the pull request has merged"
    if pr.state == "closed":
        return "the pull request is closed"
    if policy.skip_label in pr.labels:
        return f"the pull request has the {policy.skip_label} label"
    return None


# --- the loop ----------------------------------------------------------------------------


class Lander:
    def __init__(
        self,
        settings: Settings,
        store: Store,
        gh: GitHubOps,
        *,
        gather: Callable[[GitHubOps, Store, Drop], Evidence] | None = None,
        fixer_enabled: bool = False,
        progress: Progress | None = None,
        failpoint: Callable[[str], None] | None = None,
    ) -> None:
        self.settings = settings
        self.store = store
        self.gh = gh
        self.gather = gather or Gatherer.from_settings(settings)
        self.policy = policy_from(settings, fixer_enabled=fixer_enabled)
        self.progress = progress or (lambda msg: log.info("%s", msg))
        self.failpoint = failpoint or (lambda name: None)

    def process(self, drop_id: int, fixer: FixerResult | None = None) -> Decision:
        """Carry one drop to its outcome; safe to call again after a crash at any point."""
        row = self.store.drop(drop_id)
        if row is None:
            raise ValueError(f"no drop {drop_id}")
        drop = drop_from_row(row)
        plan = row.plan
        if plan is not None and (fixer is None) == (plan.get("fixer") is None):
            # The same stage was decided before (a worker died while acting): finish it.
            decision, evidence, fixer = _plan_from(plan)
            pr = None
            self.progress(f"resuming the saved plan for {drop.repo}#{drop.pr}")
        else:
            # After the fixer, the evidence is the one the fixer worked from.
            known = _plan_from(plan)[1] if plan is not None else None
            decision, evidence, pr = self._decide(drop, fixer, known)
            self.store.update_drop(
                drop_id,
                plan=_plan_json(decision, evidence, fixer),
                class_=evidence.triage_class,
                summary=decision.why,
                evidence={"merge_group_source": evidence.merge_group_source},
            )
        self.failpoint("after_decide")
        if decision.actions:
            resumed = pr is None
            pr = pr or snapshot(self.gh.pull_request(drop.repo, drop.pr))
            gone = _taken_away(pr, self.policy) if resumed else None
            if gone is not None:
                # Resuming after a crash, and a person closed the PR or opted it out in
                # between: what was not done yet is not done now.
                self.store.update_drop(drop_id, outcome="ignored", summary=gone)
                self.progress(f"{drop.repo}#{drop.pr}: ignored ({gone})")
                return Decision("ignored", (), gone)
            for index, action in enumerate(decision.actions):
                self._act(drop, pr, evidence, fixer, index, action)
        self.store.update_drop(drop_id, outcome=decision.outcome, summary=decision.why)
        self.progress(f"{drop.repo}#{drop.pr}: {decision.outcome} ({decision.why})")
        return decision

    def still_holds(self, drop: Drop) -> str | None:
        """Re-read the PR: None when the drop still holds, else why it no longer does."""
        pr = snapshot(self.gh.pull_request(drop.repo, drop.pr))
        stale = confirm(drop, pr, self.policy)
        return None if stale is None else stale.why

    def saved_evidence(self, drop_id: int) -> tuple[Drop, Evidence]:
        """The drop and the evidence its plan was decided on (what a fix job works from)."""
        row = self.store.drop(drop_id)
        if row is None:
            raise ValueError(f"no drop {drop_id}")
        evidence = _plan_from(row.plan)[1] if row.plan is not None else Evidence()
        return drop_from_row(row), evidence

    def _decide(
        self, drop: Drop, fixer: FixerResult | None, known: Evidence | None = None
    ) -> tuple[Decision, Evidence, PrSnapshot | None]:
        # Reasons the policy ignores need no GitHub call at all (a person removed it, it merged).
        if fixer is None and drop.source in ("webhook", "poll"):
            ignored = ignored_reason(drop, self.policy)
            if ignored is not None:
                return ignored, Evidence(), None
        self.progress(f"re-reading {drop.repo}#{drop.pr}")
        pr = snapshot(self.gh.pull_request(drop.repo, drop.pr))
        evidence = known or Evidence()
        if (
            known is None
            and pr.state == "open"
            and pr.head_sha == drop.head_sha
            and not pr.in_queue
        ):
            self.progress(f"gathering evidence for {drop.repo}#{drop.pr} ({drop.reason})")
            evidence = self.gather(self.gh, self.store, drop)
        budget = self.store.budget(drop.repo, drop.pr, drop.head_sha)
        history = History(budget.requeues, budget.fixer_attempts)
        policy = self.policy
        if drop.source in ("command", "operator"):
            # A person asked to land it: a reason the policy ignores becomes a re-enqueue.
            policy = dataclasses.replace(
                policy,
                reasons={r: ("requeue" if a == "ignore" else a) for r, a in policy.reasons.items()},
            )
        return decide(drop, pr, evidence, history, policy, fixer), evidence, pr

    # --- actions -----------------------------------------------------------------------

    def _act(
        self,
        drop: Drop,
        pr: PrSnapshot,
        evidence: Evidence,
        fixer: FixerResult | None,
        index: int,
        action: Action,
    ) -> None:
        assert drop.id is not None
        key = f"drop:{drop.id}:{index}:{type(action).__name__}"
        if fixer is not None:
            key += ":after-fixer"
        state = self.store.begin_action(key, type(action).__name__.lower(), drop.id)
        if state == "done":
            return
        self.failpoint(f"before_{type(action).__name__.lower()}")
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
        self.failpoint(f"after_{type(action).__name__.lower()}")
        self.store.finish_action(key, "done", result)

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
