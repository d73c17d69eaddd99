"""decide.enqueue_after_unknown: every answer to "did the enqueue whose answer never came
take effect?", walked exhaustively over the PR's state and its timeline."""

from __future__ import annotations

import datetime as dt
import itertools

import pytest

from landbot.core.model import Drop, PrSnapshot
from landbot.github.models import QueueEvent
from landbot.land.decide import CLOCK_SKEW, added_since, enqueue_after_unknown

HEAD = "a" * 40
OTHER = "b" * 40
T0 = dt.datetime(2026, 12, 1, 10, 0, tzinfo=dt.UTC)
DROP = Drop("acme/widgets", 7, HEAD, "checks_timed_out", "webhook", observed_at=T0, id=1)


def event(kind: str, seconds: float, n: int = 0) -> QueueEvent:
    return QueueEvent(
        kind=kind,
        id=f"{kind}-{seconds}-{n}",
        created_at=T0 + dt.timedelta(seconds=seconds),
        reason="failed_checks" if kind == "removed" else None,
        before_commit=HEAD if kind == "removed" else None,
        actor="landbot-bot",
    )


def pr(state: str = "open", *, head: str = HEAD, in_queue: bool = False) -> PrSnapshot:
    return PrSnapshot(state=state, head_sha=head, in_queue=in_queue, author="alice")  # type: ignore[arg-type]


# The drop's own removal (at the drop, GitHub's clock a second behind), before it the
# original enqueue; after it, what the unanswered enqueue may have left.
BEFORE = [event("added", -31), event("removed", -1)]
APPLIED_FAILED_FAST = [*BEFORE, event("added", 2), event("removed", 3)]
NOT_APPLIED = list(BEFORE)


@pytest.mark.parametrize(
    ("snapshot", "events", "finding", "again"),
    [
        (pr("merged"), NOT_APPLIED, "merged", False),
        (pr("closed"), NOT_APPLIED, "closed", False),
        (pr(in_queue=True), NOT_APPLIED, "queued", False),
        (pr(head=OTHER), NOT_APPLIED, "head_moved", False),
        (pr(), None, "cannot_tell", False),
        (pr(), APPLIED_FAILED_FAST, "added_since_drop", False),
        (pr(), NOT_APPLIED, "not_applied", True),
        (pr(), [], "not_applied", True),
    ],
)
def test_each_answer(
    snapshot: PrSnapshot, events: list[QueueEvent] | None, finding: str, again: bool
) -> None:
    check = enqueue_after_unknown(DROP, HEAD, snapshot, events)
    assert (check.finding, check.send_again) == (finding, again)
    assert check.why


def test_only_an_open_pr_at_the_head_out_of_the_queue_with_no_enqueue_since_is_sent_again() -> None:
    """Exhaustive over the state, head, queue and timeline: send_again in exactly one case."""
    for state, head, in_queue, events in itertools.product(
        ("open", "closed", "merged"),
        (HEAD, OTHER),
        (False, True),
        (None, NOT_APPLIED, APPLIED_FAILED_FAST),
    ):
        check = enqueue_after_unknown(DROP, HEAD, pr(state, head=head, in_queue=in_queue), events)
        expected = (state, head, in_queue, events) == ("open", HEAD, False, NOT_APPLIED)
        assert check.send_again is expected, (state, head, in_queue, events, check)


def test_the_original_enqueue_just_before_the_removal_does_not_count() -> None:
    # Within CLOCK_SKEW of the drop, yet before the drop's removal in the timeline.
    assert not added_since(DROP, [event("added", -5), event("removed", -1)])
    assert added_since(DROP, [event("added", -5), event("removed", -1), event("added", 1)])


def test_an_earlier_drop_of_the_same_head_long_ago_does_not_count() -> None:
    # A /landbot retry reset the budget: the bot's old enqueue is history, not this one's.
    old = CLOCK_SKEW.total_seconds() * 10
    history = [event("removed", -old - 2), event("added", -old - 1), event("removed", -old)]
    assert not added_since(DROP, [*history, event("removed", -1)])
    assert added_since(DROP, [*history, event("removed", -1), event("added", 1)])


def test_a_drop_without_a_removal_after_it_counts_any_addition_since() -> None:
    # A command's drop: no removal in the window; a person (or landbot) enqueued since.
    assert added_since(DROP, [event("removed", -3600), event("added", 5)])
    assert not added_since(DROP, [event("removed", -3600)])


def test_no_time_is_no_evidence() -> None:
    undated = QueueEvent("added", "x", None, None, None, None)
    assert not added_since(DROP, [event("removed", 0), undated])
    assert not added_since(Drop("r/r", 1, HEAD, "manual", "webhook"), APPLIED_FAILED_FAST)


def test_a_naive_drop_time_is_read_as_utc() -> None:
    naive = Drop(
        "acme/widgets", 7, HEAD, "checks_timed_out", "webhook", observed_at=T0.replace(tzinfo=None)
    )
    assert added_since(naive, APPLIED_FAILED_FAST)
