"""Which repositories a poll run sweeps (intake/schedule.py): a pure choice, each rule beside
its control; and the webhooks intake records marking a repository active, with no call."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from landbot.intake import events
from landbot.intake.payloads import Payload
from landbot.intake.schedule import Intervals, due, why_due
from landbot.store import Store, StoredSweep

T0 = dt.datetime(2027, 1, 15, 12, 0, tzinfo=dt.UTC)
MIN = dt.timedelta(minutes=1)
EVERY = Intervals(active=60 * MIN, idle=60 * MIN)


def state(swept: int | None, active: int | None = None) -> StoredSweep:
    """Swept `swept` minutes ago, activity `active` minutes ago (None: never)."""
    return StoredSweep(
        "o/r",
        None if swept is None else T0 - swept * MIN,
        None if active is None else T0 - active * MIN,
    )


# (the repository's row, why it is swept now or None)
CASES = [
    pytest.param(None, "new", id="never seen: newly watched, swept at once"),
    pytest.param(state(None, 5), "new", id="activity seen but never swept: swept at once"),
    pytest.param(state(5, 10), "active", id="active: swept every run"),
    pytest.param(state(5, 59), "active", id="active for one minute more"),
    pytest.param(state(5, 60), None, id="control: activity 60 min ago, swept since: idle"),
    pytest.param(state(5, 2), "active", id="activity after the last sweep, within the window"),
    pytest.param(state(30, 61), None, id="control: idle, swept 30 min ago: left alone"),
    pytest.param(state(59), None, id="idle, 59 min since its sweep: not yet"),
    pytest.param(state(60), "idle interval passed", id="idle, its interval passed"),
    pytest.param(state(600, 700), "idle interval passed", id="long idle"),
]


@pytest.mark.parametrize(("row", "expected"), CASES)
def test_why_a_repository_is_swept(row: StoredSweep | None, expected: str | None) -> None:
    assert why_due(row, T0, EVERY) == expected


def test_activity_after_the_last_sweep_is_swept_even_past_the_active_window() -> None:
    """An operator with active_minutes = 0 still gets a sweep after each activity once."""
    no_window = Intervals(active=0 * MIN, idle=60 * MIN)
    assert why_due(state(10, 5), T0, no_window) == "activity since the last sweep"
    assert why_due(state(5, 10), T0, no_window) is None  # control: swept since


def test_due_sweeps_new_and_active_first_then_the_longest_idle() -> None:
    states = {
        "o/idle-late": state(90),
        "o/idle-early": state(300),
        "o/active": state(5, 1),
        "o/quiet": state(5),
    }
    repos = ["o/idle-late", "o/idle-early", "o/quiet", "o/active", "o/new"]
    got = due(repos, states, T0, EVERY)
    assert [(d.repo, d.why) for d in got] == [
        ("o/active", "active"),
        ("o/new", "new"),
        ("o/idle-early", "idle interval passed"),
        ("o/idle-late", "idle interval passed"),
    ]


def test_names_are_matched_whatever_their_case() -> None:
    assert due(["O/R"], {"o/r": state(5)}, T0, EVERY) == []


def delivery(event: str, body: dict[str, object], guid: str) -> events.WebhookEvent[Payload]:
    return events.parse(guid, event, T0, json.dumps(body).encode())


GROUP = {
    "action": "checks_requested",
    "merge_group": {
        "head_sha": "d" * 40,
        "head_ref": f"refs/heads/gh-readonly-queue/main/pr-7-{'c' * 40}",
        "base_sha": "c" * 40,
        "base_ref": "refs/heads/main",
    },
    "repository": {"full_name": "o/busy"},
}
DEQUEUED = {
    "action": "dequeued",
    "number": 7,
    "reason": "CI_FAILURE",
    "pull_request": {"number": 7, "head": {"sha": "a" * 40, "ref": "f"}, "base": {"ref": "main"}},
    "repository": {"full_name": "o/busy"},
}
ENQUEUED = {
    "action": "enqueued",
    "number": 7,
    "pull_request": {"number": 7, "head": {"sha": "a" * 40, "ref": "f"}, "base": {"ref": "main"}},
    "repository": {"full_name": "o/busy"},
}


@pytest.mark.parametrize(
    ("event", "body"),
    [("merge_group", GROUP), ("pull_request", DEQUEUED), ("pull_request", ENQUEUED)],
    ids=["merge_group", "dequeued", "enqueued"],
)
def test_a_queue_webhook_marks_its_repository_active(
    store: Store, event: str, body: dict[str, object]
) -> None:
    store.note_swept(["o/busy", "o/calm"], T0 - 5 * MIN)
    events.handle(delivery(event, body, "g1"), store)
    states = store.sweep_states(["o/busy", "o/calm"])
    assert states["o/busy"].active_at == T0
    assert [d.repo for d in due(["o/busy", "o/calm"], states, T0 + MIN, EVERY)] == ["o/busy"]
    # The control: the repository no webhook spoke of stays idle.
    assert states["o/calm"].active_at is None


def test_a_webhook_of_no_queue_activity_marks_nothing(store: Store) -> None:
    comment = {
        "action": "created",
        "issue": {"number": 7, "pull_request": {"url": "x"}},
        "comment": {"id": 1, "body": "hello", "user": {"login": "alice", "type": "User"}},
        "repository": {"full_name": "o/busy"},
    }
    events.handle(delivery("issue_comment", comment, "g2"), store)
    assert store.sweep_states(["o/busy"]) == {}


def test_activity_only_moves_forward(store: Store) -> None:
    store.note_queue_activity("o/r", T0)
    store.note_queue_activity("O/R", T0 - 30 * MIN)  # an older removal found later
    assert store.sweep_states(["o/r"])["o/r"].active_at == T0
