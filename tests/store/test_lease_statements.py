"""A lease's statements are built once per shape, with bound parameters (the store's hottest
path: twice per worker step, idle or not): leasing again, with other kinds, other drops or
another time, builds nothing new; the leases themselves are tested in test_store.py and
test_pr_leases.py on both stores."""

from __future__ import annotations

import datetime as dt

from landbot.store import Store
from landbot.store import store as store_module

TTL = dt.timedelta(minutes=5)


def built() -> int:
    return sum(
        f.cache_info().misses
        for f in (store_module._lease_pick, store_module._running_of_kind, store_module._lease_take)
    )


def a_round(store: Store, tag: str) -> list[int | None]:
    """Jobs to lease with every shape the workers use (kinds or none, drops of any number,
    the fixer's cap reached or not), and a delivery; the ids leased, in order."""
    drop = store.add_job("drop", {}, dedupe_key=f"{tag}-drop")
    fix = store.add_job("fix", {}, dedupe_key=f"{tag}-fix")
    fix2 = store.add_job("fix", {}, dedupe_key=f"{tag}-fix2")
    got = [store.lease_job("w", TTL, drop_ids=[]), store.lease_job("w", TTL, ())]  # none asked
    for n in (1, 3, 7):
        got.append(store.lease_job("w", TTL, ("nothing",) * n, drop_ids=list(range(n))))
    got.append(store.lease_job("w", TTL, ("fix",), cap=("fix", 1)))  # the cap not reached
    got.append(store.lease_job("w", TTL, cap=("fix", 1)))  # reached: fix2 is passed over
    got.append(store.lease_job("w", TTL, ("drop", "fix"), cap=("fix", 2)))
    got.append(store.lease_job("w", TTL, cap=("fix", 1)))
    store.lease_delivery("w", TTL)
    ids = [g.id if g else None for g in got]
    assert ids == [None, None, None, None, None, fix, drop, fix2, None]
    for job in (drop, fix, fix2):
        assert store.finish_job(job, "w", "done")
    return ids


def test_leasing_again_builds_no_statement(store: Store) -> None:
    a_round(store, "first")
    before = built()
    a_round(store, "second")  # other rows, other times, the same shapes
    assert built() == before
