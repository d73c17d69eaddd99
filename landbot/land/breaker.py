"""A breaker per repository (issue 27.2): every decision of it, pure (no I/O, no clock).

Many drops of one repository that are not their pull requests' fault within a window (the
runners or the infrastructure failing, timeouts, GitHub answering 5xx, the same failure on
several pull requests), or a red base branch, open the repository's breaker. While it is
open nothing is re-enqueued and no fixer runs: such drops are held (outcome `held`, in the
store), not dropped. It closes by itself when the cause is gone (no drop waits for the base
any more; a run passed after the last failure; the failures aged out of the window), or when
a maintainer closes it; then the held drops go back in the queue in their original order,
within the per-PR caps.

"The same failure on several pull requests" is the same job failing with the same
normalised error lines (triage/base_red.py: timestamps, counts, commit ids and temporary
paths taken out) in the merge groups of `same_failure_prs` (3) distinct pull requests within
the window, where that failure is not in what the pull requests bring:

- each counted drop found every job it would blame failing on the base branch's newest run
  too (`shows_on_base`), however it failed there (another log, a log not read). A failure
  only the merge groups show is the PRs' own, whatever its count: sibling PRs each breaking
  the same test, or stacked PRs carrying the same broken commit, fail in their own groups
  while the base passes (or has not run the job), and go their usual way (the fixer, a
  hand-back). When the base fails it the same way, the drop waits for the base and the
  breaker opens at once (`red_base`); this trigger is for the base failing the job in a way
  the drop's lines do not match exactly, which a red base's strict comparison leaves alone;
- a PR whose merge group had another of those PRs ahead of it is not counted on its own:
  the PR ahead carried the failing change into the groups behind it.

A job the base never runs (merge-queue only) gives no such evidence, so it never counts
here: a false opening would hold every pull request of the repository, a missed one costs a
fixer run per PR within its caps (a runner outage is counted by the threshold all the same).

- `signal_of`: what one settled drop says about the repository (or nothing);
- `shows_on_base`: whether a drop's failure shows on the base too (the same-failure count);
- `should_open`: the signals of the window, to a cause (or None: stays closed);
- `gate`: a drop's decision while the breaker is open (held, or as decided);
- `should_close`: whether an open breaker closes now (GitHub's 5xx answers count as
  failures: it closes once they stop for a window, or a run passed after the last);
- `release_order`, `after_breaker`: what the held drops become, in which order.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from landbot.core.model import Drop, Evidence, History, PrSnapshot
from landbot.land.decide import confirm, decide, pr_cap
from landbot.land.model import Decision, Policy, Requeue, RunFixer, Status

Cause = Literal["red_base", "infrastructure", "same_failure", "server_error"]
SignalKind = Literal["red_base", "infrastructure", "timeout", "server_error"]

# Triage classes that say the runners or the infrastructure failed, not the code.
_OUTAGE_CLASSES = frozenset({"infrastructure", "timeout"})


@dataclass(frozen=True)
class BreakerPolicy:
    enabled: bool = True
    window: dt.timedelta = dt.timedelta(minutes=30)
    threshold: int = 5
    same_failure_prs: int = 3  # 0: off


@dataclass(frozen=True)
class Signal:
    """One drop that is not its pull request's fault, as the breaker counts it."""

    drop_id: int
    pr: int
    at: dt.datetime
    kind: SignalKind | None  # None: only its failure's signature counts (same_failure)
    signature: str = ""  # the failed job and its normalised error lines ("" when unknown)
    url: str = ""
    on_base: bool = False  # the blamed jobs failed on the base's newest run too
    ahead: tuple[int, ...] = ()  # the PRs ahead of it in its merge group


@dataclass(frozen=True)
class Opening:
    cause: Cause
    detail: str
    links: tuple[str, ...] = ()


@dataclass(frozen=True)
class BreakerState:
    open: bool = False
    cause: str | None = None
    opened_at: dt.datetime | None = None
    last_pass_at: dt.datetime | None = None
    closed_at: dt.datetime | None = None  # its last closing: older signals are spent


def signal_of(
    drop_id: int,
    drop: Drop,
    outcome: str,
    evidence: Evidence,
    at: dt.datetime,
    signature: str = "",
    *,
    on_base: bool = False,
) -> Signal | None:
    """What a decided drop says about its repository: a red base, a runner or timeout
    failure, or a failure whose signature may repeat on other PRs (`on_base`: it failed on
    the base too, `shows_on_base`); None for the rest (a person's removal, a conflict, a
    merge)."""
    url = evidence.base_red_url or next((j.url for j in evidence.jobs if j.url), "")
    if outcome == "waiting_base":
        return Signal(drop_id, drop.pr, at, "red_base", signature, url, True, evidence.prs_ahead)
    if drop.reason == "checks_timed_out":
        return Signal(drop_id, drop.pr, at, "timeout", "", url)
    if drop.reason != "failed_checks":
        return None
    ahead = evidence.prs_ahead
    if evidence.triage_class in _OUTAGE_CLASSES:
        kind: SignalKind = "timeout" if evidence.triage_class == "timeout" else "infrastructure"
        return Signal(drop_id, drop.pr, at, kind, signature, url, on_base, ahead)
    if signature:
        return Signal(drop_id, drop.pr, at, None, signature, url, on_base, ahead)
    return None


def shows_on_base(evidence: Evidence, policy: Policy) -> bool:
    """Whether every job the drop would blame on its PR (with error lines: what makes its
    signature) failed on the base branch's newest run too, the same way or not: the failure
    is not only in what the PR brings. No such job, or the base not read: False."""
    blamed = {
        j.job for j in evidence.jobs if j.class_ not in policy.requeue_classes and j.error_lines
    }
    return bool(blamed) and blamed <= set(evidence.base_failed)


def should_open(
    signals: Sequence[Signal],
    now: dt.datetime,
    policy: BreakerPolicy,
    *,
    server_errors: Sequence[dt.datetime] = (),
    closed_at: dt.datetime | None = None,
) -> Opening | None:
    """The cause that opens a closed breaker, or None. `signals` are the repository's and
    `server_errors` when GitHub failed its job attempts with a 5xx; only those within the
    window count. A red base opens it at once; runner, infrastructure and timeout failures
    and GitHub's 5xx answers, together, at the threshold; the same failure on
    `same_failure_prs` pull requests, counting only those it shows on the base for and not
    carried by another of them (`same_failure_prs`, the module's text). Signals from before
    its last closing are spent (a maintainer who closed it is not overruled by them)."""
    if not policy.enabled:
        return None

    def counts(at: dt.datetime) -> bool:
        return now - at <= policy.window and (closed_at is None or at > closed_at)

    recent = [s for s in signals if counts(s.at)]
    errors = sum(1 for at in server_errors if counts(at))
    red = [s for s in recent if s.kind == "red_base"]
    if red:
        return Opening(
            "red_base",
            "the base branch is red: the same job fails the same way on its newest run",
            _links(red),
        )
    outage = [s for s in recent if s.kind in ("infrastructure", "timeout")]
    if len(outage) + errors >= policy.threshold:
        prs = len({s.pr for s in outage})
        if outage:
            what = f"{len(outage)} drops of {prs} pull requests failed on the runners or timed out"
            if errors:
                what += f", and GitHub failed {errors} of landbot's jobs with a server error"
        else:
            what = f"GitHub failed {errors} of landbot's jobs with a server error (5xx)"
        return Opening(
            "infrastructure" if outage else "server_error",
            f"{what} within {_minutes(policy.window)}",
            _links(outage),
        )
    wanted = policy.same_failure_prs  # 0: off
    by_signature: dict[str, list[Signal]] = {}
    for s in recent:
        if s.signature:
            by_signature.setdefault(s.signature, []).append(s)
    counted = {sig: same_failure_prs(group) for sig, group in by_signature.items()}
    same = [(sig, prs) for sig, prs in counted.items() if wanted and len(prs) >= wanted]
    if same:
        sig, group = max(same, key=lambda x: (len(x[1]), x[0]))
        hits = [s for s in recent if s.signature == sig and s.pr in group]
        return Opening(
            "same_failure",
            f"{len(group)} pull requests failed the same job the same way within "
            f"{_minutes(policy.window)}, and it fails on the base branch too",
            _links(hits),
        )
    return None


def same_failure_prs(signals: Sequence[Signal]) -> set[int]:
    """The pull requests that count toward one failure's `same_failure_prs` (the signals
    share its signature): those whose drop found it on the base too, less each whose merge
    group had another of them ahead (carried there: the PR ahead's failure, counted once)."""
    prs = {s.pr for s in signals if s.on_base}
    ahead: dict[int, set[int]] = {}
    for s in signals:
        if s.on_base:
            ahead.setdefault(s.pr, set()).update(s.ahead)
    return {p for p in prs if not (ahead[p] & (prs - {p}))}


def gate(decision: Decision, state: BreakerState) -> Decision:
    """A drop's decision while the breaker is open: a re-enqueue or a fixer run is held
    (the drop waits in the store, its status comment edited); everything else (a hand-back,
    a drop left alone, a red base's wait) goes through as decided."""
    if not state.open:
        return decision
    if not any(isinstance(a, (Requeue, RunFixer)) for a in decision.actions):
        return decision
    return Decision(
        "held",
        (Status("held"),),
        f"held: landbot's breaker for this repository is open ({state.cause})",
    )


def should_close(
    state: BreakerState,
    now: dt.datetime,
    policy: BreakerPolicy,
    *,
    waiting_base: int,
    last_signal_at: dt.datetime | None,
) -> bool:
    """Whether an open breaker closes by itself: a red base once no drop waits for it; any
    other cause once a run passed after the last failure, or the failures aged out of the
    window with none since."""
    if not state.open:
        return False
    if state.cause == "red_base":
        return waiting_base == 0
    if waiting_base:
        return False
    latest = last_signal_at or state.opened_at
    if state.last_pass_at is not None and (latest is None or state.last_pass_at > latest):
        return True
    return latest is not None and now - latest > policy.window


def release_order(held: Sequence[tuple[int, dt.datetime]]) -> list[int]:
    """The held drops (id, when dropped) in the order they go back: the order they were
    dropped (ids break ties: the order landbot recorded them)."""
    return [i for i, _ in sorted(held, key=lambda x: (x[1], x[0]))]


def after_breaker(
    drop: Drop, pr: PrSnapshot, evidence: Evidence, history: History, policy: Policy
) -> Decision:
    """What a held drop becomes when the breaker closes. Re-read first: a drop that no
    longer holds is left. A failure that is not the PR's fault goes back in the queue within
    the per-PR caps (the outage does not spend its per-head budget: held, it was never
    tried); anything else is decided again on its evidence (the fixer, a hand-back)."""
    stale = confirm(drop, pr, policy)
    if stale is not None:
        return stale
    not_its_fault = drop.reason == "checks_timed_out" or (
        drop.reason == "failed_checks" and evidence.triage_class in policy.requeue_classes
    )
    if not not_its_fault:
        return decide(drop, pr, evidence, history, policy)
    cap = pr_cap(history, policy, "requeue")
    if cap is not None:
        return decide(drop, pr, evidence, history, policy)  # the cap's own hand-back
    return Decision(
        "requeued",
        (Requeue(drop.head_sha), Status("requeued_breaker_closed")),
        "the breaker closed: re-enqueued in its turn",
    )


def _links(signals: Sequence[Signal]) -> tuple[str, ...]:
    seen = Counter(s.url for s in signals if s.url)
    return tuple(u for u, _ in seen.most_common(5))


def _minutes(window: dt.timedelta) -> str:
    minutes = window.total_seconds() / 60
    return f"{minutes:g} minutes"
