"""bench/soak.py's accounting of lost drops: which removals landbot owed a drop.

A withheld dequeue webhook of a push while queued leaves only the sweep, which by rule
records a removal only at the PR's current head (README, "A drop is the commit GitHub
removed"; landbot/intake/poll.py): nothing is owed there, and the soak must not call it
lost. Every other removal (the same push with its webhook delivered, a withheld removal
whose head stayed) is owed a drop at the commit removed, and counted lost without one.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from tests.integration.test_soak import soak

OLD, NEW = "a" * 40, "b" * 40


def removal(**kw: Any) -> Any:
    base: dict[str, Any] = {
        "pr": 7,
        "head": OLD,
        "reason": "unknown",
        "kind": "pushed_in_queue",
        "withheld": True,
        "moved_before_a_poll": False,
        "pushed_out": True,
    }
    return soak.Removal(**{**base, **kw})


def test_a_withheld_removal_of_a_head_pushed_while_queued_is_not_lost() -> None:
    r = removal()
    lost, spared = soak.tally_removals([r], Counter())
    assert lost == []
    assert [(s.pr, why) for s, why in spared] == [
        (7, "pushed while queued, webhook withheld: the removed head was gone at once")
    ]


def test_the_controls_are_lost_without_their_drop() -> None:
    # Delivered: the webhook door records a drop at the commit removed (decided "ignored").
    delivered = removal(withheld=False)
    # Withheld, but the head stayed: a sweep ties it to the current head and owes a drop.
    stayed = removal(kind="flaky", reason="failed_checks", pushed_out=False)
    lost, spared = soak.tally_removals([delivered, stayed], Counter())
    assert lost == [delivered, stayed] and spared == []
    # And each is satisfied by its drop at (PR, commit removed, reason), and only that.
    have = Counter({(7, OLD, "unknown"): 1, (7, OLD, "failed_checks"): 1})
    assert soak.tally_removals([delivered, stayed], have) == ([], [])
    wrong_head = Counter({(7, NEW, "unknown"): 1, (7, NEW, "failed_checks"): 1})
    assert soak.tally_removals([delivered, stayed], wrong_head)[0] == [delivered, stayed]


def test_a_person_moving_the_head_before_a_poll_spares_only_the_withheld_removal() -> None:
    first = removal(kind="genuine", reason="failed_checks", pushed_out=False)
    followed = removal(
        kind="genuine", reason="failed_checks", pushed_out=False, moved_before_a_poll=True
    )
    assert soak.tally_removals([followed], Counter())[0] == []
    assert soak.tally_removals([first], Counter())[0] == [first]
    # A later removal of the same PR had its webhook delivered: owed, followed or not.
    later = removal(
        kind="genuine",
        reason="failed_checks",
        pushed_out=False,
        moved_before_a_poll=True,
        withheld=False,
    )
    assert soak.tally_removals([later], Counter())[0] == [later]


def test_a_drop_goes_to_the_removal_that_was_owed_it_first() -> None:
    # Two removals at one key, one owed and one not, and one drop: the owed one takes it.
    owed = removal(withheld=False)
    spared = removal()
    lost, left = soak.tally_removals([spared, owed], Counter({(7, OLD, "unknown"): 1}))
    assert lost == [] and [s for s, _ in left] == [spared]


def test_a_withheld_merge_removal_is_not_lost_and_a_delivered_one_is_owed() -> None:
    merged = removal(kind="flaky", reason="merged", pushed_out=False)
    assert soak.tally_removals([merged], Counter())[0] == []
    # The control: delivered, the webhook door records it (decided: nothing to do).
    assert soak.tally_removals([removal(reason="merged", withheld=False)], Counter())[0] != []
