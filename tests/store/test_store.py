"""The store's leases, deduplication, budgets and ledger, on SQLite and PostgreSQL."""

from __future__ import annotations

import datetime as dt
import threading

import pytest

from landbot.store import Store, utcnow

SHA = "b" * 40
TTL = dt.timedelta(seconds=60)


def test_delivery_is_stored_once(store: Store) -> None:
    assert store.record_delivery("guid-1", "pull_request", "dequeued", "o/r", b"{}") is True
    assert store.record_delivery("guid-1", "pull_request", "dequeued", "o/r", b"{}") is False
    assert store.record_delivery("guid-2", "pull_request", "dequeued", "o/r", b"{}") is True


def test_a_leased_delivery_is_not_handed_out_twice(store: Store) -> None:
    store.record_delivery("g", "ping", None, None, b"{}")
    first = store.lease_delivery("w1", TTL)
    assert first is not None and first.attempts == 1
    assert store.lease_delivery("w2", TTL) is None
    assert store.finish_delivery(first.id, "w1")
    assert store.lease_delivery("w2", TTL) is None


def test_an_expired_lease_goes_to_the_next_worker(store: Store) -> None:
    job = store.add_job("drop", {"drop_id": 1})
    assert job is not None
    dead = store.lease_job("dead-worker", dt.timedelta(seconds=-1))  # already expired
    assert dead is not None
    again = store.lease_job("w2", TTL)
    assert again is not None and again.id == job and again.attempts == 2
    # The dead worker's late finish is refused: it no longer holds the lease.
    assert store.finish_job(job, "dead-worker") is False
    assert store.finish_job(job, "w2", result={"ok": True}) is True
    assert store.job(job).status == "done"


def test_a_live_lease_is_kept(store: Store) -> None:
    store.add_job("drop", {})
    assert store.lease_job("w1", TTL) is not None
    assert store.lease_job("w2", TTL) is None


def test_job_dedupe_and_cancel(store: Store) -> None:
    assert store.add_job("drop", {}, dedupe_key=f"o/r#1@{SHA}") is not None
    assert store.add_job("drop", {}, dedupe_key=f"o/r#1@{SHA}") is None
    assert store.cancel_jobs("o/r#1@", outcome="ignored", why="pushed") == 1
    assert store.lease_job("w", TTL) is None


def test_job_not_before_is_respected(store: Store) -> None:
    store.add_job("later", {}, not_before=dt.datetime.now(dt.UTC) + dt.timedelta(hours=1))
    assert store.lease_job("w", TTL) is None
    store.add_job("now", {})
    leased = store.lease_job("w", TTL)
    assert leased is not None and leased.kind == "now"


def test_concurrent_workers_never_share_a_job(store: Store) -> None:
    for i in range(40):
        store.add_job("drop", {"i": i})
    taken: list[int] = []
    lock = threading.Lock()

    def work(name: str) -> None:
        while (lease := store.lease_job(name, TTL)) is not None:
            with lock:
                taken.append(lease.id)

    threads = [threading.Thread(target=work, args=(f"w{i}",)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(taken) == sorted(set(taken)) and len(taken) == 40


def test_drop_dedupe_fills_in_merge_group(store: Store) -> None:
    d1, created = store.add_drop(
        repo="o/r", pr=1, head_sha=SHA, reason="failed_checks", source="webhook", dedupe_key="k"
    )
    d2, again = store.add_drop(
        repo="o/r",
        pr=1,
        head_sha=SHA,
        reason="failed_checks",
        source="poll",
        dedupe_key="k",
        merge_group_sha="c" * 40,
    )
    assert (d1, created, again) == (d2, True, False)
    assert store.drop(d1).merge_group_sha == "c" * 40
    assert store.drop(d1).source == "webhook"


def test_drops_newest_first_and_update(store: Store) -> None:
    t0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    for i in range(3):
        store.add_drop(
            repo="o/r",
            pr=i,
            head_sha=SHA,
            reason="manual",
            source="poll",
            dedupe_key=str(i),
            observed_at=t0 + dt.timedelta(minutes=i),
        )
    assert [d.pr for d in store.drops()] == [2, 1, 0]
    store.update_drop(store.drops()[0].id, outcome="ignored", class_="unknown")
    assert (store.drops()[0].outcome, store.drops()[0].class_) == ("ignored", "unknown")
    with pytest.raises(ValueError):
        store.update_drop(1, repo="x/y")


def test_budgets_per_head(store: Store) -> None:
    assert store.budget("o/r", 1, SHA).requeues == 0
    store.spend("o/r", 1, SHA, requeues=1)
    assert store.spend("o/r", 1, SHA, fixes=1) == store.budget("o/r", 1, SHA)
    assert store.budget("o/r", 1, SHA).requeues == 1
    assert store.budget("o/r", 1, "c" * 40).requeues == 0  # a new head has a fresh budget
    store.reset_budget("o/r", 1, SHA)
    assert store.budget("o/r", 1, SHA).requeues == 0


def test_action_ledger(store: Store) -> None:
    assert store.begin_action("a1", "requeue") == "new"
    assert store.begin_action("a1", "requeue") == "started"
    store.finish_action("a1", "done", {"queued": True})
    assert store.begin_action("a1", "requeue") == "done"


def test_comment_ids(store: Store) -> None:
    assert store.comment_id("o/r", 1, "status") is None
    store.save_comment("o/r", 1, "status", 11, "IC_1")
    store.save_comment("o/r", 1, "status", 12, "IC_2")
    assert store.comment_id("o/r", 1, "status") == 12


def test_naive_datetimes_are_refused(store: Store) -> None:
    with pytest.raises(Exception, match="naive datetime"):
        store.add_job("x", {}, not_before=dt.datetime(2026, 1, 1))


def test_the_fixer_concurrency_cap_holds_across_workers(store: Store) -> None:
    for i in range(3):
        store.add_job("fix", {"i": i})
    store.add_job("drop", {})
    cap = ("fix", 2)
    first = store.lease_job("w1", TTL, cap=cap)
    second = store.lease_job("w2", TTL, cap=cap)
    assert first is not None and second is not None and first.kind == second.kind == "fix"
    # Two fix jobs run: a third worker gets the drop job, not the third fix job.
    third = store.lease_job("w3", TTL, cap=cap)
    assert third is not None and third.kind == "drop"
    assert store.lease_job("w4", TTL, cap=cap) is None
    # Once a slot frees up, the waiting fix job is handed out (the control).
    store.finish_job(first.id, "w1")
    fourth = store.lease_job("w4", TTL, cap=cap)
    assert fourth is not None and fourth.kind == "fix"


def test_two_doors_recording_one_merge_group_make_one_row(store: Store) -> None:
    """A failed check can arrive before its merge_group event, and two workers may record
    the same group at once: one row, every failure kept, the base filled in when known."""
    sha = "9" * 40
    ref = f"gh-readonly-queue/main/pr-7-{'8' * 40}"
    store.add_group_failure("o/r", sha, {"name": "test"}, pr=7, head_ref=ref)
    store.remember_group(
        repo="o/r",
        pr=7,
        head_sha=sha,
        head_ref=ref,
        base_ref="main",
        base_sha="8" * 40,
        status="checks_requested",
    )
    barrier = threading.Barrier(4)

    def record(n: int) -> None:
        barrier.wait()
        if n % 2:
            store.add_group_failure("o/r", sha, {"name": f"lint-{n}"}, pr=7, head_ref=ref)
        else:
            store.remember_group(
                repo="o/r",
                pr=7,
                head_sha=sha,
                head_ref=ref,
                base_ref="main",
                base_sha="8" * 40,
                status="destroyed:invalidated",
            )

    threads = [threading.Thread(target=record, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    [group] = store.groups_for("o/r", 7)
    assert group.base_ref == "main" and group.base_sha == "8" * 40
    assert group.status == "destroyed:invalidated"
    assert sorted(f["name"] for f in group.failures) == ["lint-1", "lint-3", "test"]


# --- caps per pull request across heads (issue 13) ----------------------------------------

DAY = dt.timedelta(days=1)
H1, P1, P2, H2 = "1" * 40, "2" * 40, "3" * 40, "4" * 40


def test_the_pr_counts_span_heads_and_a_replayed_spend_counts_once(store: Store) -> None:
    store.note_head("o/r", 1, H1)
    store.spend("o/r", 1, H1, fixes=1, key="drop:1:0:RunFixer")
    store.record_push("o/r", 1, P1)
    store.note_head("o/r", 1, P1)  # landbot's own push: not a reset
    store.spend("o/r", 1, P1, requeues=1, key="drop:2:0:Requeue")
    store.spend("o/r", 1, P1, fixes=1, key="drop:2:1:RunFixer")
    # A plan resumed after a crash spends under the same keys: nothing more.
    assert store.spend("o/r", 1, P1, fixes=1, key="drop:2:1:RunFixer").fixer_attempts == 1
    assert store.record_push("o/r", 1, P1) is False
    h = store.budget("o/r", 1, P1, window=DAY)
    assert (h.pr_pushes, h.pr_requeues, h.pr_fixer_runs) == (1, 1, 2)
    assert (h.requeues, h.fixer_attempts) == (1, 1)  # the head's own budget, as before
    # The control: without a key (as before issue 13) a spend is not idempotent, and it is
    # not a PR spend either.
    store.spend("o/r", 1, P1, fixes=1)
    assert store.budget("o/r", 1, P1, window=DAY).fixer_attempts == 2
    assert store.budget("o/r", 1, P1, window=DAY).pr_fixer_runs == 2
    # Another PR's counts are its own.
    assert store.budget("o/r", 2, P1, window=DAY) == store.budget("o/r", 2, P1)
    assert store.budget("o/r", 2, P1, window=DAY).pr_fixer_runs == 0


def test_the_window_bounds_the_pr_counts(store: Store) -> None:
    store.spend("o/r", 1, H1, requeues=1, key="k1")
    store.record_push("o/r", 1, P1)
    now = utcnow()
    assert store.budget("o/r", 1, H1, window=DAY, now=now).pr_requeues == 1  # the control
    later = store.budget("o/r", 1, H1, window=DAY, now=now + DAY + dt.timedelta(minutes=1))
    assert (later.pr_requeues, later.pr_pushes) == (0, 0)
    # No window: counted since the last reset only.
    assert store.budget("o/r", 1, H1, now=now + 10 * DAY).pr_requeues == 1


def test_a_push_that_is_not_landbots_resets_the_caps_in_either_order(store: Store) -> None:
    store.note_head("o/r", 1, H1)
    store.spend("o/r", 1, H1, fixes=1, key="a")
    store.record_push("o/r", 1, P1)
    # landbot's push seen as a head before it was recorded as landbot's: still not a reset.
    store.note_head("o/r", 1, P2)
    store.spend("o/r", 1, P1, fixes=1, key="b")
    store.record_push("o/r", 1, P2)
    h = store.budget("o/r", 1, P2, window=DAY)
    assert (h.pr_pushes, h.pr_fixer_runs) == (2, 2)
    # The author pushes a head landbot did not: the counts start again from there.
    assert store.note_head("o/r", 1, H2) is True
    assert store.note_head("o/r", 1, H2) is False  # once per head
    h = store.budget("o/r", 1, H2, window=DAY)
    assert (h.pr_pushes, h.pr_requeues, h.pr_fixer_runs) == (0, 0, 0)
    store.spend("o/r", 1, H2, fixes=1, key="c")
    assert store.budget("o/r", 1, H2, window=DAY).pr_fixer_runs == 1


def test_a_retry_resets_the_caps_and_the_cap_hand_backs(store: Store) -> None:
    store.spend("o/r", 1, H1, requeues=1, key="a")
    assert store.record_cap("o/r", 1, "requeues", "drop:1:1:HandBack")
    assert store.record_cap("o/r", 1, "requeues", "drop:1:1:HandBack") is False
    h = store.budget("o/r", 1, H1, window=DAY)
    assert h.pr_capped == frozenset({"requeues"}) and h.pr_requeues == 1
    assert store.reset_pr_caps("o/r", 1, key="drop:2")
    h = store.budget("o/r", 1, H1, window=DAY)
    assert h.pr_capped == frozenset() and h.pr_requeues == 0
    # The control: another PR's retry resets nothing here.
    store.record_cap("o/r", 1, "pushes", "drop:3:1:HandBack")
    store.reset_pr_caps("o/r", 9, key="drop:4")
    assert store.budget("o/r", 1, H1, window=DAY).pr_capped == frozenset({"pushes"})
