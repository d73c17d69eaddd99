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
    shows_on_base,
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


def same(pr: int, *, on_base: bool = True, ahead: tuple[int, ...] = (), sig: str = "t") -> Signal:
    """PR `pr`'s drop failing the job "test" with the lines `sig`; `on_base`: the base's
    newest run failed that job too."""
    return Signal(pr, pr, T0, None, f"test\nE {sig}", f"https://x/{pr}", on_base, ahead)


@pytest.mark.parametrize("n", range(0, 7))
def test_the_same_failure_opens_it_at_same_failure_prs_and_not_before(n: int) -> None:
    opening = should_open([same(i) for i in range(1, n + 1)], T0, POLICY)
    assert (opening is not None) == (n >= POLICY.same_failure_prs)
    if opening is not None:
        assert opening.cause == "same_failure"
        assert opening.detail.startswith(f"{n} pull requests failed the same job the same way")


def test_the_same_failure_counts_pull_requests_not_drops_nor_other_failures() -> None:
    # one PR three times, or three different failures: one each
    assert (
        should_open([Signal(i, 1, T0, None, "test\nE t", "", True) for i in range(5)], T0, POLICY)
        is None
    )
    assert should_open([same(i, sig=f"s{i}") for i in range(1, 6)], T0, POLICY) is None
    # control: three PRs, each twice
    assert should_open([same(i % 3 + 1) for i in range(6)], T0, POLICY) is not None


def test_a_failure_only_the_merge_groups_show_is_the_prs_own() -> None:
    """Sibling PRs each breaking the same test, or stacked PRs carrying one broken commit:
    the base passes that job (or never ran it), so however many fail, nothing opens."""
    own = [same(i, on_base=False) for i in range(1, 11)]
    assert should_open(own, T0, POLICY) is None
    # N-1 shown on the base, the rest not: still N-1
    wanted = POLICY.same_failure_prs
    mixed = [same(i, on_base=i < wanted) for i in range(1, 11)]
    assert should_open(mixed, T0, POLICY) is None
    # control: the N-th shown on the base too
    opening = should_open([*mixed, same(11)], T0, POLICY)
    assert opening is not None and opening.cause == "same_failure"
    assert set(opening.links) == {f"https://x/{i}" for i in [*range(1, wanted), 11]}


def test_a_failure_carried_by_a_pr_ahead_in_the_merge_group_counts_once() -> None:
    # #1 broke it; #2 and #3 were queued behind it, their groups holding #1's change
    carried = [same(1), same(2, ahead=(1,)), same(3, ahead=(1, 2))]
    assert should_open(carried, T0, POLICY) is None
    # a PR ahead that is not one of the failing ones carries nothing of this failure
    assert should_open([same(1), same(2, ahead=(9,)), same(3, ahead=(8,))], T0, POLICY) is not None
    # control: the same PRs in groups of their own
    assert should_open([same(1), same(2), same(3)], T0, POLICY) is not None
    # and two more independent PRs make the count again
    assert should_open([*carried, same(4), same(5)], T0, POLICY) is not None


def test_old_or_spent_same_failures_do_not_count() -> None:
    old = T0 - dt.timedelta(minutes=31)
    late = [replace(same(i), at=old) for i in range(1, 4)]
    assert should_open(late, T0, POLICY) is None
    assert should_open(late, old, POLICY) is not None  # control: within its window
    assert should_open([same(i) for i in range(1, 4)], T0, POLICY, closed_at=T0) is None


def test_what_shows_on_the_base() -> None:
    policy = Policy()
    ev = Evidence(triage_class="genuine", jobs=(job("genuine"),), base_failed=("test",))
    assert shows_on_base(ev, policy)
    # refusals: the base passed it (or never ran it), or the base was not read
    assert not shows_on_base(replace(ev, base_failed=()), policy)
    assert not shows_on_base(replace(ev, base_failed=("lint",)), policy)
    # one more blamed job the base does not fail: the PR brings that one
    lint = replace(job("genuine"), job="lint")
    assert not shows_on_base(replace(ev, jobs=(job("genuine"), lint)), policy)
    assert shows_on_base(
        replace(ev, jobs=(job("genuine"), lint), base_failed=("test", "lint")), policy
    )
    # a job not blamed on the PR (a flaky one, re-enqueued anyway) asks nothing of the base
    flaky = replace(job("flaky"), job="lint")
    assert shows_on_base(replace(ev, jobs=(job("genuine"), flaky)), policy)
    assert not shows_on_base(replace(ev, jobs=(flaky,), base_failed=("lint",)), policy)


def test_a_drops_signal_carries_the_base_and_the_prs_ahead() -> None:
    ev = Evidence(triage_class="genuine", jobs=(job("genuine"),), prs_ahead=(3, 4))
    sig = signal_of(1, DROP, "handed_back", ev, T0, "sig", on_base=True)
    assert sig is not None and sig.on_base and sig.ahead == (3, 4)
    sig = signal_of(1, DROP, "handed_back", ev, T0, "sig")
    assert sig is not None and not sig.on_base


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


def test_the_same_failure_is_on_by_default_and_zero_turns_it_off() -> None:
    """`same_failure_prs` is 3 by default; 0 switches the count off (a red base, its most
    usual cause, is found on its own)."""
    assert BreakerPolicy().same_failure_prs == 3
    many = [same(i) for i in range(1, 11)]
    assert should_open(many, T0, BreakerPolicy()) is not None
    assert should_open(many, T0, BreakerPolicy(same_failure_prs=0)) is None
