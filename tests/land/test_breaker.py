"""The breaker's decisions (issue 27.2), walked: what a drop signals, when the breaker
opens (at the threshold and not before), what it holds, when it closes, and the order the
held drops go back in. Each refusal has its control."""

from __future__ import annotations

import datetime as dt
import itertools
from dataclasses import replace

import pytest

from landbot.core.model import Drop, Evidence, History, JobFailure, PrSnapshot
from landbot.land.breaker import (
    BreakerPolicy,
    BreakerState,
    Signal,
    after_breaker,
    gate,
    release_order,
    should_close,
    should_open,
    signal_of,
)
from landbot.land.model import Decision, HandBack, Policy, Requeue, RunFixer, Status

T0 = dt.datetime(2026, 12, 7, 12, 0, tzinfo=dt.UTC)
HEAD = "a" * 40
DROP = Drop("o/r", 7, HEAD, "failed_checks", "webhook")
PR = PrSnapshot("open", HEAD, False, "alice", node_id="PR_1")
POLICY = BreakerPolicy(window=dt.timedelta(minutes=30), threshold=5, same_failure_prs=3)


def job(cls: str) -> JobFailure:
    return JobFailure("test", "https://x/job/1", None, (1,), ((1, "e"),), "", cls)  # type: ignore[arg-type]


def infra(n: int, at: dt.datetime = T0, kind: str = "infrastructure") -> Signal:
    return Signal(n, n, at, kind)  # type: ignore[arg-type]


# --- what a drop signals ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("reason", "cls", "outcome", "kind"),
    [
        ("failed_checks", "infrastructure", "requeued", "infrastructure"),
        ("failed_checks", "timeout", "handed_back", "timeout"),
        ("checks_timed_out", None, "requeued", "timeout"),
        ("failed_checks", "genuine", "waiting_base", "red_base"),
        ("failed_checks", "genuine", "handed_back", None),  # counted by its signature only
        ("failed_checks", "flaky", "requeued", None),
    ],
)
def test_what_a_drop_signals(reason: str, cls: str | None, outcome: str, kind: str | None) -> None:
    ev = Evidence(triage_class=cls, jobs=(job(cls),) if cls else ())  # type: ignore[arg-type]
    sig = signal_of(1, replace(DROP, reason=reason), outcome, ev, T0, "sig")  # type: ignore[arg-type]
    assert sig is not None and sig.kind == kind


@pytest.mark.parametrize("reason", ["manual", "merged", "merge_conflict", "queue_cleared"])
def test_a_person_or_a_conflict_signals_nothing(reason: str) -> None:
    assert signal_of(1, replace(DROP, reason=reason), "ignored", Evidence(), T0) is None  # type: ignore[arg-type]
    # control: the same drop failing on the runners signals
    ev = Evidence(triage_class="infrastructure")
    assert signal_of(1, DROP, "requeued", ev, T0) is not None


# --- opening -------------------------------------------------------------------------------


@pytest.mark.parametrize("n", range(0, 8))
def test_runner_failures_open_it_at_the_threshold_and_not_before(n: int) -> None:
    signals = [infra(i) for i in range(n)]
    opening = should_open(signals, T0 + dt.timedelta(minutes=1), POLICY)
    assert (opening is not None) == (n >= POLICY.threshold)
    if opening is not None:
        assert opening.cause == "infrastructure"


def test_old_failures_and_spent_ones_do_not_count() -> None:
    old = [infra(i, T0 - dt.timedelta(minutes=31)) for i in range(10)]
    assert should_open(old, T0, POLICY) is None
    recent = [infra(i, T0 - dt.timedelta(minutes=5)) for i in range(10)]
    assert should_open(recent, T0, POLICY) is not None  # control
    # closed by a maintainer after them: spent
    assert should_open(recent, T0, POLICY, closed_at=T0 - dt.timedelta(minutes=1)) is None


def test_a_red_base_opens_it_at_once() -> None:
    opening = should_open([Signal(1, 1, T0, "red_base", url="https://x/1")], T0, POLICY)
    assert opening is not None and opening.cause == "red_base"
    assert opening.links == ("https://x/1",)


def errors(n: int, at: dt.datetime = T0) -> list[dt.datetime]:
    return [at] * n


def test_server_errors_count_with_runner_failures() -> None:
    assert should_open([infra(1), infra(2)], T0, POLICY, server_errors=errors(2)) is None
    opening = should_open([infra(1), infra(2)], T0, POLICY, server_errors=errors(3))
    assert opening is not None and opening.cause == "infrastructure"
    assert "server error" in opening.detail


@pytest.mark.parametrize("n", range(0, 8))
def test_server_errors_alone_open_it_at_the_threshold_and_not_before(n: int) -> None:
    opening = should_open([], T0, POLICY, server_errors=errors(n))
    assert (opening is not None) == (n >= POLICY.threshold)
    if opening is not None:
        assert opening.cause == "server_error" and "5xx" in opening.detail


def test_old_or_spent_server_errors_do_not_count() -> None:
    old = errors(9, T0 - dt.timedelta(minutes=31))
    assert should_open([], T0, POLICY, server_errors=old) is None
    recent = errors(9, T0 - dt.timedelta(minutes=5))
    assert should_open([], T0, POLICY, server_errors=recent) is not None  # control
    closed = T0 - dt.timedelta(minutes=1)
    assert should_open([], T0, POLICY, server_errors=recent, closed_at=closed) is None


def test_the_same_failure_on_several_prs() -> None:
    same = [Signal(i, i, T0, None, "test\nE boom") for i in range(3)]
    opening = should_open(same, T0, POLICY)
    assert opening is not None and opening.cause == "same_failure"
    # controls: two PRs, or one PR three times, or different failures
    assert should_open(same[:2], T0, POLICY) is None
    assert (
        should_open([Signal(i, 1, T0, None, "test\nE boom") for i in range(5)], T0, POLICY) is None
    )
    assert should_open([Signal(i, i, T0, None, f"s{i}") for i in range(5)], T0, POLICY) is None


def test_switched_off_it_never_opens() -> None:
    off = replace(POLICY, enabled=False)
    assert should_open([infra(i) for i in range(50)], T0, off) is None
    assert should_open([Signal(1, 1, T0, "red_base")], T0, off) is None


# --- holding -----------------------------------------------------------------------------

REQUEUE = Decision("requeued", (Requeue(HEAD), Status("requeued")), "")
FIX = Decision("pending", (RunFixer(HEAD, "agent"), Status("fixing_failed_checks")), "")
HANDBACK = Decision("handed_back", (Status("handed_back"), HandBack("failed_checks")), "")
IGNORED = Decision("ignored", (), "")
WAIT = Decision("waiting_base", (Status("waiting_base"),), "")
OPEN = BreakerState(True, "infrastructure", T0)


@pytest.mark.parametrize(
    ("decision", "held"),
    [(REQUEUE, True), (FIX, True), (HANDBACK, False), (IGNORED, False), (WAIT, False)],
)
def test_what_an_open_breaker_holds(decision: Decision, held: bool) -> None:
    out = gate(decision, OPEN)
    assert (out.outcome == "held") == held
    if held:
        assert out.actions == (Status("held"),)  # an edit of the status: no mention
    # control: a closed breaker lets everything through unchanged
    assert gate(decision, BreakerState()) is decision


# --- closing -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cause", "waiting", "passed", "quiet"),
    list(itertools.product(["red_base", "infrastructure"], [0, 2], [False, True], [False, True])),
)
def test_when_it_closes(cause: str, waiting: int, passed: bool, quiet: bool) -> None:
    last = T0 + dt.timedelta(minutes=5)
    now = last + dt.timedelta(minutes=31 if quiet else 1)
    state = BreakerState(
        True, cause, T0, last_pass_at=last + dt.timedelta(seconds=30) if passed else None
    )
    closes = should_close(state, now, POLICY, waiting_base=waiting, last_signal_at=last)
    if cause == "red_base":
        assert closes == (waiting == 0)  # the base green again: nothing waits for it
    else:
        assert closes == (waiting == 0 and (passed or quiet))


def test_a_pass_before_the_last_failure_does_not_close_it() -> None:
    last = T0 + dt.timedelta(minutes=5)
    state = BreakerState(True, "infrastructure", T0, last_pass_at=last - dt.timedelta(minutes=1))
    assert not should_close(state, last, POLICY, waiting_base=0, last_signal_at=last)
    assert not should_close(BreakerState(), last, POLICY, waiting_base=0, last_signal_at=None)


def test_held_drops_go_back_in_the_order_they_were_dropped() -> None:
    held = [(3, T0 + dt.timedelta(minutes=2)), (1, T0), (2, T0), (9, T0 - dt.timedelta(hours=1))]
    assert release_order(held) == [9, 1, 2, 3]
    assert release_order([]) == []


def test_what_a_held_drop_becomes() -> None:
    policy = Policy()
    outage = Evidence(triage_class="infrastructure", jobs=(job("infrastructure"),))
    back = after_breaker(DROP, PR, outage, History(requeues=1), policy)
    # the outage spent no budget of its own: it goes back, within the PR's caps
    assert back.outcome == "requeued" and back.actions[0] == Requeue(HEAD)
    capped = after_breaker(DROP, PR, outage, History(requeues=1, pr_requeues=3), policy)
    assert capped.outcome == "handed_back"
    genuine = Evidence(triage_class="genuine", jobs=(job("genuine"),))
    assert after_breaker(DROP, PR, genuine, History(), Policy(fixer_enabled=True)).outcome == (
        "pending"  # decided again: the fixer it was held from
    )
    for pr in (replace(PR, state="closed"), replace(PR, in_queue=True)):
        assert after_breaker(DROP, pr, outage, History(), policy).outcome == "ignored"


def test_the_same_failure_counts_only_when_asked_for() -> None:
    """`same_failure_prs` is 0 by default (off): a red base, its usual cause, is found on
    its own; the control above sets it to 3."""
    same = [Signal(i, i, T0, None, "test\nE boom") for i in range(10)]
    assert should_open(same, T0, BreakerPolicy()) is None
