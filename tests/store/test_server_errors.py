"""GitHub's 5xx answers per repository (issue 27.2), on both stores: counted from `since`,
oldest first, the repository's name in any case; kept a day, then pruned when the next is
noted; another repository's never counted."""

from __future__ import annotations

import datetime as dt

from landbot.store import Store
from landbot.store.store import SERVER_ERRORS_KEPT

REPO = "Acme/Widgets"
T0 = dt.datetime(2026, 12, 7, 12, 0, tzinfo=dt.UTC)


def test_counted_since_oldest_first_in_any_case(store: Store) -> None:
    for minutes in (0, 10, 20):
        store.note_server_error(REPO, T0 + dt.timedelta(minutes=minutes))
    store.note_server_error("acme/other", T0)  # another repository's
    got = store.server_errors("acme/widgets", T0 + dt.timedelta(minutes=5))
    assert got == [T0 + dt.timedelta(minutes=10), T0 + dt.timedelta(minutes=20)]
    assert len(store.server_errors(REPO, T0)) == 3  # control: from the first
    assert store.server_errors("acme/none", T0) == []


def test_older_than_a_day_are_pruned_when_the_next_is_noted(store: Store) -> None:
    store.note_server_error(REPO, T0)
    store.note_server_error(REPO, T0 + SERVER_ERRORS_KEPT - dt.timedelta(seconds=1))
    assert len(store.server_errors(REPO, T0 - dt.timedelta(days=2))) == 2  # control: kept
    store.note_server_error(REPO, T0 + SERVER_ERRORS_KEPT + dt.timedelta(seconds=1))
    assert store.server_errors(REPO, T0 - dt.timedelta(days=2)) == [
        T0 + SERVER_ERRORS_KEPT - dt.timedelta(seconds=1),
        T0 + SERVER_ERRORS_KEPT + dt.timedelta(seconds=1),
    ]
