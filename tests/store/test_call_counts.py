"""`call_counts`: each process's GitHub requests, saved absolute, summed across processes,
and folded into "retired" when a process has gone quiet (issue 28.4), on both stores."""

from __future__ import annotations

import datetime as dt

from landbot.store import Store
from landbot.store.store import RETIRED

T0 = dt.datetime(2026, 12, 1, 12, 0, tzinfo=dt.UTC)
REST_OK = ("42", "rest", "200")
GRAPHQL_OK = ("42", "graphql", "200")


def test_saves_replace_a_process_s_counts_and_processes_add_up(store: Store) -> None:
    store.save_call_counts("host:1:100", {REST_OK: 3}, T0)
    store.save_call_counts("host:1:100", {REST_OK: 5, GRAPHQL_OK: 1}, T0)  # absolute
    store.save_call_counts("host:2:100", {REST_OK: 2}, T0)
    assert store.call_counts() == {REST_OK: 7, GRAPHQL_OK: 1}
    store.save_call_counts("host:2:100", {}, T0)  # nothing to save: the rows stay
    assert store.call_counts() == {REST_OK: 7, GRAPHQL_OK: 1}


def test_a_quiet_process_is_retired_and_the_sums_do_not_fall(store: Store) -> None:
    store.save_call_counts("gone:1:1", {REST_OK: 4, GRAPHQL_OK: 2}, T0)
    store.save_call_counts("gone:2:1", {REST_OK: 1}, T0)
    later = T0 + dt.timedelta(days=10)
    store.save_call_counts("alive:3:1", {REST_OK: 10}, later)
    cutoff = T0 + dt.timedelta(days=7)
    assert store.retire_call_counts(cutoff) == 3  # the two quiet processes' rows
    assert store.call_counts() == {REST_OK: 15, GRAPHQL_OK: 2}
    # Retiring again adds to the retired rows and never counts them twice.
    store.save_call_counts("gone:4:1", {GRAPHQL_OK: 5}, T0)
    assert store.retire_call_counts(cutoff) == 1
    assert store.retire_call_counts(cutoff) == 0  # the control: nothing quiet left
    assert store.call_counts() == {REST_OK: 15, GRAPHQL_OK: 7}
    with store.engine.connect() as conn:
        from landbot.store.tables import call_counts

        processes = {r.process for r in conn.execute(call_counts.select())}
    assert processes == {RETIRED, "alive:3:1"}
