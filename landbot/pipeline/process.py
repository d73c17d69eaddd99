"""One drop carried through the stages: confirm, triage, decide, act.

The decision is saved on the drop before any action (land/plan.py), and every action is
claimed in the ledger first (land/act.py), so a worker killed at any point is finished by
the next one without acting twice. Each choice is land/decide.py's; this module only knows
the order.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
import os
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from landbot import logs
from landbot.config import Settings
from landbot.core.model import WAITING, Drop, Evidence, FixerResult, History, PrSnapshot
from landbot.github.ops import GitHubOps, LandOps
from landbot.land import breaker as br
from landbot.land import decide as d
from landbot.land.act import Actor, Progress
from landbot.land.breaker_issue import BreakerIssues
from landbot.land.checks import CheckWriter
from landbot.land.model import Decision, Policy
from landbot.land.plan import evidence_from, plan_from, plan_json
from landbot.notify import enabled as notify_enabled
from landbot.notify import notify
from landbot.store import Store, StoredDrop, utcnow
from landbot.triage.base_red import BaseReader, base_state, job_signature
from landbot.triage.gather import Gatherer

log = logging.getLogger("landbot.pipeline")
Gather = Callable[[GitHubOps, Store, Drop], Evidence]
# The repository's job that looks at its waiting drops again (a red base, the breaker).
HOLD_JOB = "hold"
# The kind of job row that leases a PR while the hold job releases one of its drops; how
# long that lease lasts (a release is a few calls), and how soon the hold job looks again
# at a drop whose PR another job held.
RELEASE_JOB = "release"
RELEASE_LEASE = dt.timedelta(minutes=2)
BUSY_RECHECK = dt.timedelta(seconds=15)


class Lander:
    """Carries drops to their outcome with one GitHub client and one store."""

    def __init__(
        self,
        settings: Settings,
        store: Store,
        gh: LandOps,
        *,
        gather: Gather | None = None,
        fixer_enabled: bool = False,
        progress: Progress | None = None,
        failpoint: Callable[[str], None] | None = None,
        settings_for: Callable[[str], Settings] | None = None,
    ) -> None:
        self.settings = settings
        self.store = store
        self.gh = gh
        self._gather = gather
        self.gather = gather or Gatherer.from_settings(settings)
        self.fixer_enabled = fixer_enabled
        # The settings in effect for one repository: the host's, narrowed by the
        # repository's own file (pipeline/repo_settings.py); the host's alone by default.
        self._settings_for = settings_for or (lambda repo: settings)
        # Progress notes are for a person watching `landbot retry`; the log has the
        # decision and action events, so these go to it at debug only.
        self.progress = progress or (lambda msg: log.debug("%s", msg))
        self.failpoint = failpoint or (lambda name: None)
        self.actor = Actor(
            store,
            gh,
            progress=self.progress,
            failpoint=self.failpoint,
            policy_for=self.policy_for,
            # Unset (the default): no notifier at all, so a hand-back costs nothing more.
            notify=(lambda text: notify(settings, text)) if notify_enabled(settings) else None,
        )
        # The `landbot` check run on the drop's head and the fixing label (land/checks.py).
        self.checks = CheckWriter(store, gh, policy_for=self.policy_for, failpoint=self.failpoint)
        # The breaker's one issue per repository (land/breaker_issue.py).
        self.issues = BreakerIssues(
            store,
            gh,
            notify=(lambda text: notify(settings, text)) if notify_enabled(settings) else None,
        )

    def settings_for(self, repo: str) -> Settings:
        """The settings in effect for `repo` (the host's narrowed by the repository's file)."""
        return self._settings_for(repo)

    def policy_for(self, repo: str) -> Policy:
        """The decision's policy for `repo`."""
        mine = self.settings_for(repo)
        # A repository's file may switch its fixer off, never on.
        enabled = self.fixer_enabled and not mine.fixer.switched_off
        return Policy.from_settings(mine, fixer_enabled=enabled)

    def gather_for(self, repo: str) -> Gather:
        """Triage for `repo` (its own triage rules count)."""
        mine = self.settings_for(repo)
        if self._gather is not None or mine is self.settings:
            return self.gather
        return Gatherer.from_settings(mine)

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
        if plan is not None and (fixer is None or plan.get("fixer") is not None):
            # The same stage was decided before (a worker died while acting): finish it. A
            # drop job run again after its fix job decided (a worker killed before it closed
            # the drop job) finishes the later stage too: deciding the drop anew would spend
            # and post what that stage has done already.
            decision, evidence, fixer = plan_from(plan)
            pr = None
            self.progress(f"resuming the saved plan for {drop.repo}#{drop.pr}")
            _decided(decision, evidence, fixer, resumed=True)
        else:
            # After the fixer, the evidence is the one the fixer worked from.
            known = evidence_from(plan) if plan is not None else None
            decision, evidence, pr = self._decide(drop, fixer, known)
            decision = self.breaker_gate(drop_id, drop, decision, evidence)
            corrected = {"head_sha": decision.removed_head} if decision.removed_head else {}
            saved = plan_json(decision, evidence, fixer)
            if decision.outcome in WAITING:
                # Since when, and on which base: what the hold job looks at again.
                saved["since"] = utcnow().isoformat()
                saved["base_ref"] = drop.base_ref or (pr.base_ref if pr else None) or "main"
            self.store.update_drop(
                drop_id,
                plan=saved,
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
                gone = d.taken_away(pr, self.policy_for(drop.repo))
                if gone is not None:
                    # Resuming after a crash, and a person closed the PR or opted it out in
                    # between: what was not done yet is not done now.
                    return self.settle(drop_id, drop, gone, pr=pr)
            for index, action in enumerate(decision.actions):
                self.actor.act(drop, pr, evidence, fixer, index, action)
        return self.settle(drop_id, drop, decision, pr=pr, evidence=evidence, fixer=fixer)

    def settle(
        self,
        drop_id: int,
        drop: Drop,
        decision: Decision,
        *,
        pr: PrSnapshot | None = None,
        evidence: Evidence | None = None,
        fixer: FixerResult | None = None,
    ) -> Decision:
        """Record the outcome a decision chose; a settled one completes the drop's check
        run (what it shows comes from `pr`, `evidence` and `fixer` when known)."""
        self.store.update_drop(drop_id, outcome=decision.outcome, summary=decision.why)
        breaker = self.store.breaker(drop.repo)
        if decision.outcome in WAITING or (breaker is not None and breaker.open):
            # Held in the store, not in a worker: the repository's hold job looks again
            # (sooner when a webhook says the base changed or a run passed).
            recheck = dt.timedelta(minutes=self.settings.breaker.recheck_minutes)
            self.store.ensure_repo_job(HOLD_JOB, drop.repo, utcnow() + recheck)
        if breaker is not None and breaker.open:
            # The breaker's issue says so once, and is edited as drops are held.
            self.issues.write(drop.repo)
        self.checks.finish(drop_id, drop, decision, pr=pr, evidence=evidence, fixer=fixer)
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

    def failed(self, drop_id: int, decision: Decision) -> None:
        """Complete the check run of a drop whose job gave up (the worker has recorded the
        failure already): best effort, since what failed may be GitHub itself."""
        row = self.store.drop(drop_id)
        if row is None:
            return
        try:
            self.checks.finish(drop_id, row.drop, decision)
        except Exception as exc:
            logs.event(log, "check run not completed", logging.WARNING, drop_id=drop_id, error=exc)

    def settle_checks(self, repo: str, pr: int) -> int:
        """Complete the check runs, and take the fixing labels off, of the PR's drops that a
        push or a close ended without their jobs (intake cancelled a queued fix job): each
        once per outcome, as `settle` does. Returns how many settled drops were looked at."""
        settled = [r for r in self.store.drops(repo) if r.pr == pr and r.outcome != "pending"]
        for row in settled:
            self.checks.finish(row.id, row.drop, Decision(row.outcome, (), row.summary or ""))
        return len(settled)

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
        return drop, evidence, d.confirm(drop, self.reread(drop), self.policy_for(drop.repo))

    def _decide(
        self, drop: Drop, fixer: FixerResult | None, known: Evidence | None = None
    ) -> tuple[Decision, Evidence, PrSnapshot | None]:
        policy = self.policy_for(drop.repo)
        early = d.without_look(drop, policy, fixer)
        if early is not None:
            return early, Evidence(), None
        self.progress(f"re-reading {drop.repo}#{drop.pr}")
        pr = self.reread(drop)
        # Before triage, so the check shows in progress while it runs.
        self.checks.start(drop, pr, after_fixer=fixer is not None)
        evidence = known or Evidence()
        history = self.history(drop, pr.head_sha)
        if known is None and d.needs_evidence(drop, pr, policy, history):
            self.progress(f"gathering evidence for {drop.repo}#{drop.pr} ({drop.reason})")
            evidence = self.gather_for(drop.repo)(self.gh, self.store, drop)
            if d.needs_base_check(drop, evidence, policy):
                evidence = self.base_red(drop, pr, evidence)
        return d.decide(drop, pr, evidence, history, policy, fixer), evidence, pr

    # --- a red base branch (issue 27.1) ----------------------------------------------------

    def base_reader(self) -> BaseReader:
        gatherer = self.gather if isinstance(self.gather, Gatherer) else None
        if gatherer is None:
            return BaseReader()
        return BaseReader(rules=gatherer.rules, max_log_bytes=gatherer.max_log_bytes)

    def base_red(self, drop: Drop, pr: PrSnapshot, evidence: Evidence) -> Evidence:
        """The evidence with the failed jobs that fail the same way on the base's newest
        run, and those that fail there at all (one call for its checks, and the log of each
        job failed there too)."""
        base_ref = drop.base_ref or pr.base_ref
        found = self.base_reader().red(self.gh, drop.repo, base_ref, evidence)
        if not found.red:
            return dataclasses.replace(evidence, base_failed=found.failed)
        return dataclasses.replace(
            evidence,
            base_red=found.red,
            base_red_sha=found.sha,
            base_red_url=found.url,
            base_failed=found.failed,
        )

    def hold_sweep(self, repo: str) -> dt.datetime | None:
        """The repository's hold job: its drops waiting for the base, then its breaker.
        Returns when to look again (None: nothing waits and the breaker is closed)."""
        base = self._base_sweep(repo)
        breaker = self.breaker_sweep(repo)
        again = [t for t in (base, breaker) if t is not None]
        return min(again) if again else None

    def _base_sweep(self, repo: str) -> dt.datetime | None:
        """Look at the repository's waiting drops again, oldest first (the order they go back
        in the queue): each whose base turned green is re-enqueued, each past the wait is
        handed back. Returns when to look again (None: nothing waits any more). One call
        for the base's checks per base branch, then the calls of each drop released. Each
        drop is released under its PR's lease (`pr_lease`); one whose PR another job holds
        is looked at again soon, and so are the PR's later drops (its own order holds)."""
        policy = self.policy_for(repo)
        now = utcnow()
        states: dict[str, dict[str, str] | None] = {}
        later = False
        busy: set[int] = set()
        for row in self.store.waiting_drops(repo, ("waiting_base",)):
            if row.drop.pr in busy:
                continue
            if self._base_verdict(row, states, now, policy) == "wait":
                later = True
                continue  # no lease taken: nothing is done to it
            with self.pr_lease(row.id) as held:
                fresh = self.store.drop(row.id) if held else None
                if not held:
                    busy.add(row.drop.pr)
                elif fresh is not None and fresh.outcome == "waiting_base":
                    # Read again under the lease: a job of the PR may have moved it on.
                    verdict = self._base_verdict(fresh, states, now, policy)
                    if verdict == "wait":
                        later = True
                    else:
                        self._release_waiting(fresh, verdict, policy)
        if busy:
            return now + BUSY_RECHECK
        if not later:
            return None
        return now + dt.timedelta(minutes=self.settings.breaker.recheck_minutes)

    def _base_verdict(
        self,
        row: StoredDrop,
        states: dict[str, dict[str, str] | None],
        now: dt.datetime,
        policy: Policy,
    ) -> d.BaseVerdict | None:
        """What a waiting drop's base says now (None: a release a worker died in the middle
        of, to finish). `states`: the base's checks by base branch, read once per sweep."""
        plan = row.plan or {}
        if plan.get("stage") == "release":
            return None
        evidence = evidence_from(plan) if plan else Evidence()
        ref = str(plan.get("base_ref") or row.drop.base_ref or "main")
        if ref not in states:
            checks = self.base_reader().checks(self.gh, row.drop.repo, ref)
            states[ref] = None if checks is None else {n: base_state(c) for n, c in checks.items()}
        since = _when(plan.get("since")) or row.drop.observed_at or now
        return d.base_verdict(evidence, states[ref], now - since, policy)

    def _release_waiting(
        self, row: StoredDrop, verdict: d.BaseVerdict | None, policy: Policy
    ) -> None:
        """One waiting drop released (its PR leased), or its release finished."""
        plan = row.plan or {}
        if verdict is None:
            self._finish_release(row.id, row.drop, plan)  # a worker died releasing it
            return
        evidence = evidence_from(plan) if plan else Evidence()
        self._release(row.id, row.drop, evidence, verdict, policy)

    @contextmanager
    def pr_lease(self, drop_id: int) -> Iterator[bool]:
        """The drop's pull request leased while the hold job releases the drop, as every job
        of a PR holds it (`Store.claim_pr`): no other job of the PR (its next drop, a fix
        job, a command) runs meanwhile, nor does this release while one of them runs.
        Yields False, holding nothing, while another job of the PR is leased."""
        owner = f"release:{os.getpid()}:{uuid.uuid4().hex[:12]}"
        job = self.store.claim_pr(drop_id, owner, RELEASE_LEASE, RELEASE_JOB)
        if job is None:
            yield False
            return
        try:
            yield True
        except BaseException as exc:
            # The hold job is retried (or resumes the release from the drop's plan).
            self.store.finish_job(job, owner, "cancelled", error=str(exc)[:2000])
            raise
        self.store.finish_job(job, owner, "done")

    def _release(
        self, drop_id: int, drop: Drop, evidence: Evidence, verdict: d.BaseVerdict, policy: Policy
    ) -> Decision:
        pr = self.reread(drop)
        history = self.history(drop, pr.head_sha)
        decision = d.after_base(drop, pr, history, policy, verdict)
        assert decision is not None  # only a drop that no longer waits is released
        state = self.breaker_state(drop.repo)
        if state.cause != "red_base":
            # The base is green, but the breaker is open for another cause: held instead.
            held = br.gate(decision, state)
            if held is not decision:
                self.store.update_drop(
                    drop_id, plan=plan_json(held, evidence, None), summary=held.why
                )
                for index, action in enumerate(held.actions):
                    self.actor.act(drop, pr, evidence, None, index, action, stage="held")
                return self.settle(drop_id, drop, held, pr=pr, evidence=evidence)
        plan = {**plan_json(decision, evidence, None), "stage": "release"}
        self.store.update_drop(drop_id, plan=plan, summary=decision.why)
        _decided(decision, evidence, None, resumed=False)
        return self._act_release(drop_id, drop, decision, evidence, pr)

    def _finish_release(self, drop_id: int, drop: Drop, plan: dict[str, Any]) -> Decision:
        decision, evidence, _ = plan_from(plan)
        pr = self.reread(drop)
        gone = d.taken_away(pr, self.policy_for(drop.repo))
        if gone is not None:
            return self.settle(drop_id, drop, gone, pr=pr)
        return self._act_release(drop_id, drop, decision, evidence, pr)

    def _act_release(
        self, drop_id: int, drop: Drop, decision: Decision, evidence: Evidence, pr: PrSnapshot
    ) -> Decision:
        self.failpoint("after_release_decide")
        for index, action in enumerate(decision.actions):
            self.actor.act(drop, pr, evidence, None, index, action, stage="release")
        return self.settle(drop_id, drop, decision, pr=pr, evidence=evidence)

    def history(self, drop: Drop, seen_head: str | None = None) -> History:
        """The drop's head budget and the PR's caps now. `seen_head` is the head as just
        re-read: one landbot did not push resets the PR's caps (someone else pushed)."""
        if seen_head is not None:
            self.store.note_head(drop.repo, drop.pr, seen_head)
        window = self.policy_for(drop.repo).cap_window
        return self.store.budget(drop.repo, drop.pr, drop.head_sha, window=window)

    # --- the breaker (issue 27.2) -----------------------------------------------------------

    def breaker_policy(self, repo: str) -> br.BreakerPolicy:
        b = self.settings_for(repo).breaker
        return br.BreakerPolicy(
            enabled=b.enabled,
            window=dt.timedelta(minutes=b.window_minutes),
            threshold=b.threshold,
            same_failure_prs=b.same_failure_prs,
        )

    def breaker_state(self, repo: str) -> br.BreakerState:
        row = self.store.breaker(repo)
        if row is None:
            return br.BreakerState()
        return br.BreakerState(row.open, row.cause, row.opened_at, row.last_pass_at, row.closed_at)

    def signals(self, repo: str, now: dt.datetime, window: dt.timedelta) -> list[br.Signal]:
        """The repository's drops within the window, as the breaker counts them (the
        store's: no GitHub call)."""
        policy = self.policy_for(repo)
        out: list[br.Signal] = []
        for row in self.store.drops(repo, since=now - window, limit=None):
            if row.plan is None:
                continue
            evidence = evidence_from(row.plan)
            outcome = str(row.plan.get("outcome", row.outcome))
            sig = _signal(row.id, row.drop, outcome, evidence, row.observed_at, policy)
            if sig is not None:
                out.append(sig)
        return out

    def breaker_gate(
        self, drop_id: int, drop: Drop, decision: Decision, evidence: Evidence
    ) -> Decision:
        """The decision as the repository's breaker lets it through: this drop may be what
        opens it (the store's drops within the window: no call). Opening queues the hold
        job at once (it writes the issue)."""
        bp = self.breaker_policy(drop.repo)
        if not bp.enabled:
            return decision
        state = self.breaker_state(drop.repo)
        if not state.open:
            now = utcnow()
            policy = self.policy_for(drop.repo)
            mine = _signal(drop_id, drop, decision.outcome, evidence, now, policy)
            signals = [s for s in self.signals(drop.repo, now, bp.window) if s.drop_id != drop_id]
            opening = br.should_open(
                [*signals, *([mine] if mine else [])],
                now,
                bp,
                server_errors=self.store.server_errors(drop.repo, now - bp.window),
                closed_at=state.closed_at,
            )
            if opening is not None:
                self._open_breaker(drop.repo, opening, now)
                state = self.breaker_state(drop.repo)
        return br.gate(decision, state)

    def _open_breaker(self, repo: str, opening: br.Opening, now: dt.datetime) -> bool:
        opened = self.store.open_breaker(
            repo, cause=opening.cause, detail=opening.detail, links=opening.links, at=now
        )
        if opened:
            logs.event(
                log,
                "breaker opened",
                logging.WARNING,
                repo=repo,
                cause=opening.cause,
                detail=opening.detail,
            )
        return opened

    def server_error(self, repo: str) -> bool:
        """GitHub failed one of the repository's job attempts with a 5xx (the worker says so):
        counted, and the breaker opens when these and the runners' failures reach its
        threshold; then its hold job writes the issue and looks again. True when this opened
        it. The store's rows only: no GitHub call (GitHub is failing)."""
        bp = self.breaker_policy(repo)
        now = utcnow()
        self.store.note_server_error(repo, now)
        if not bp.enabled:
            return False
        state = self.breaker_state(repo)
        if state.open:
            return False
        opening = br.should_open(
            self.signals(repo, now, bp.window),
            now,
            bp,
            server_errors=self.store.server_errors(repo, now - bp.window),
            closed_at=state.closed_at,
        )
        if opening is None or not self._open_breaker(repo, opening, now):
            return False
        self.store.ensure_repo_job(HOLD_JOB, repo, now)
        return True

    def breaker_sweep(self, repo: str) -> dt.datetime | None:
        """An open breaker looked at again: closed when its cause is gone (the held drops
        then go back in the queue in their order), its issue written either way. Returns
        when to look again (None: closed, and its issue too)."""
        row = self.store.breaker(repo)
        if row is None:
            return None
        now = utcnow()
        recheck = now + dt.timedelta(minutes=self.settings.breaker.recheck_minutes)
        if row.open:
            bp = self.breaker_policy(repo)
            waiting = len(self.store.waiting_drops(repo, ("waiting_base",)))
            signals = self.signals(repo, now, bp.window)
            failed = [s.at for s in signals if s.kind is not None]
            # GitHub's 5xx answers are failures too: it closes once they stop.
            failed += self.store.server_errors(repo, now - bp.window)
            last = max(failed, default=None)
            state = self.breaker_state(repo)
            if not br.should_close(state, now, bp, waiting_base=waiting, last_signal_at=last):
                self.issues.write(repo)
                return recheck
            self.close_breaker(repo, by="landbot")
        elif row.issue_state == "open" or self.store.waiting_drops(repo, ("held",)):
            self.release_held(repo)  # closed by a person, or a worker died releasing
            self.issues.write(repo)
        # A drop still held here waits for its PR's other job: looked at again soon.
        return now + BUSY_RECHECK if self.store.waiting_drops(repo, ("held",)) else None

    def close_breaker(self, repo: str, *, by: str) -> bool:
        """Close the repository's breaker (its cause is gone, or a maintainer said so), put
        its held drops back in the queue in their order, and close its issue. A held drop
        whose PR another job holds is left to the hold job, queued to look again soon."""
        closed = self.store.close_breaker(repo, by=by, at=utcnow())
        if closed:
            logs.event(log, "breaker closed", logging.WARNING, repo=repo, by=by)
        if self.release_held(repo)[1]:
            self.store.ensure_repo_job(HOLD_JOB, repo, utcnow() + BUSY_RECHECK)
        self.issues.write(repo)
        return closed

    def release_held(self, repo: str) -> tuple[int, int]:
        """The held drops, in the order they were dropped: each decided again now the
        breaker is closed (re-enqueued within the per-PR caps), under its PR's lease
        (`pr_lease`). A drop whose PR another job holds stays held, and so do the PR's
        later drops (its own order holds), for the next look. Returns how many were
        released and how many stayed for that reason."""
        if self.breaker_state(repo).open:
            return 0, 0
        rows = {r.id: r for r in self.store.waiting_drops(repo, ("held",))}
        order = br.release_order([(r.id, r.observed_at) for r in rows.values()])
        policy = self.policy_for(repo)
        busy: set[int] = set()
        released = left = 0
        for drop_id in order:
            if rows[drop_id].drop.pr in busy:
                left += 1
                continue
            with self.pr_lease(drop_id) as held:
                fresh = self.store.drop(drop_id) if held else None
                if not held:
                    busy.add(rows[drop_id].drop.pr)
                    left += 1
                elif fresh is not None and fresh.outcome == "held":
                    self._release_held(fresh, policy)
                    released += 1
        return released, left

    def _release_held(self, row: StoredDrop, policy: Policy) -> None:
        """One held drop decided again and acted on (its PR leased)."""
        plan = row.plan or {}
        if plan.get("stage") == "release":
            self._finish_release(row.id, row.drop, plan)  # a worker died releasing it
            return
        evidence = evidence_from(plan) if plan else Evidence()
        pr = self.reread(row.drop)
        history = self.history(row.drop, pr.head_sha)
        decision = br.after_breaker(row.drop, pr, evidence, history, policy)
        self.store.update_drop(
            row.id,
            plan={**plan_json(decision, evidence, None), "stage": "release"},
            summary=decision.why,
        )
        _decided(decision, evidence, None, resumed=False)
        self._act_release(row.id, row.drop, decision, evidence, pr)

    def release_job(self, drop_id: int) -> str:
        """A release's PR lease whose holder was killed, taken as a job when it expired: the
        repository's hold job looks again now, and finishes the release in its order."""
        row = self.store.drop(drop_id)
        if row is None:
            return "no such drop"
        self.store.ensure_repo_job(HOLD_JOB, row.drop.repo, None)
        return "the hold job looks again"


def _signal(
    drop_id: int, drop: Drop, outcome: str, evidence: Evidence, at: dt.datetime, policy: Policy
) -> br.Signal | None:
    """What a decided drop says about its repository, as the breaker counts it."""
    return br.signal_of(
        drop_id,
        drop,
        outcome,
        evidence,
        at,
        _signature(evidence, policy),
        on_base=br.shows_on_base(evidence, policy),
    )


def _signature(evidence: Evidence, policy: Policy) -> str:
    """A failure's signature for the breaker's same-failure count: the blamed jobs and
    their normalised error lines ("" when none is known)."""
    parts = [
        f"{j.job}\n" + "\n".join(job_signature(j))
        for j in evidence.jobs
        if j.class_ not in policy.requeue_classes and j.error_lines
    ]
    return "\n--\n".join(sorted(parts))


def _when(text: Any) -> dt.datetime | None:
    if not isinstance(text, str):
        return None
    when = dt.datetime.fromisoformat(text)
    return when if when.tzinfo is not None else when.replace(tzinfo=dt.UTC)


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
