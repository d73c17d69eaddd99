"""A breaker per repository (issue 27.2): every decision of it, pure (no I/O, no clock).

Many drops of one repository that are not their pull requests' fault within a window (the
runners or the infrastructure failing, timeouts, GitHub answering 5xx, the same failure on
several pull requests), or a red base branch, open the repository's breaker. While it is
open nothing is re-enqueued and no fixer runs: such drops are held (outcome `held`, in the
store), not dropped. It closes by itself when the cause is gone (no drop waits for the base
any more; a run passed after the last failure; the failures aged out of the window), or when
a maintainer closes it; then the held drops go back in the queue in their original order,
within the per-PR caps.

- `signal_of`: what one settled drop says about the repository (or nothing);
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
    same_failure_prs: int = 0  # 0: off


@dataclass(frozen=True)
class Signal:
    """One drop that is not its pull request's fault, as the breaker counts it."""

    drop_id: int
    pr: int
    at: dt.datetime
    kind: SignalKind | None  # None: only its failure's signature counts (same_failure)
    signature: str = ""  # the failed job and its normalised error lines ("" when unknown)
    url: str = ""


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
) -> Signal | None:
    """What a decided drop says about its repository: a red base, a runner or timeout
    failure, or a failure whose signature may repeat on other PRs; None for the rest (a
    person's removal, a conflict, a merge)."""
    url = evidence.base_red_url or next((j.url for j in evidence.jobs if j.url), "")
    if outcome == "waiting_base":
        return Signal(drop_id, drop.pr, at, "red_base", signature, url)
    if drop.reason == "checks_timed_out":
        return Signal(drop_id, drop.pr, at, "timeout", "", url)
    if drop.reason != "failed_checks":
        return None
    if evidence.triage_class in _OUTAGE_CLASSES:
        kind: SignalKind = "timeout" if evidence.triage_class == "timeout" else "infrastructure"
        return Signal(drop_id, drop.pr, at, kind, signature, url)
    if signature:
        return Signal(drop_id, drop.pr, at, None, signature, url)
    return None


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
    `same_failure_prs` pull requests. Signals from before its last closing are spent (a
    maintainer who closed it is not overruled by them)."""
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
    by_signature: dict[str, set[int]] = {}
    for s in recent:
        if s.signature:
            by_signature.setdefault(s.signature, set()).add(s.pr)
    # Off (0) unless asked for: a red base, its usual cause, is found on its own.
    wanted = policy.same_failure_prs
    same = [(sig, prs) for sig, prs in by_signature.items() if wanted and len(prs) >= wanted]
    if same:
        sig, group = max(same, key=lambda x: (len(x[1]), x[0]))
        hits = [s for s in recent if s.signature == sig]
        return Opening(
            "same_failure",
            f"{len(group)} pull requests failed the same way within {_minutes(policy.window)}",
            _links(hits),
        )
    return None


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
