"""The flaky-test ledger (revision 0006) on both backends: failures recorded once, retries
that pass or fail, a merge through the queue after landbot's re-enqueue, the window, the
pull request excluded from its own evidence, and the flakiest tests."""

from __future__ import annotations

import datetime as dt

import sqlalchemy as sa

from landbot.store import Store, utcnow
from landbot.store.tables import test_failures

REPO = "acme/widgets"
T1 = "tests/test_net.py::test_fetch"
T2 = "tests/test_app.py::test_answer"
CHECK = "test (3.12)"


def sha(c: str) -> str:
    return c * 40


def fail(store: Store, pr: int, head: str, group: str, *tests: str, at: dt.datetime) -> int:
    return store.record_test_failures(
        repo=REPO, pr=pr, head_sha=head, sha=group, failures={CHECK: list(tests)}, at=at
    )


def test_a_failure_is_recorded_once_per_commit(store: Store) -> None:
    now = utcnow()
    assert fail(store, 1, sha("a"), sha("1"), T1, T2, T1, at=now) == 2  # a repeat is one row
    assert fail(store, 1, sha("a"), sha("1"), T1, at=now) == 0  # the drop triaged again
    assert fail(store, 1, sha("a"), sha("2"), T1, at=now) == 1  # a later group: a new row
    [rec] = store.ledger(REPO, [(CHECK, T1)], since=now - dt.timedelta(days=1)).values()
    assert (rec.failures, rec.prs, rec.passed_prs, rec.retries_passed) == (2, (1,), (), 0)


def test_a_passing_retry_of_the_same_head_is_evidence(store: Store) -> None:
    now = utcnow()
    fail(store, 1, sha("a"), sha("1"), T1, T2, at=now)
    # The next group of the same head passed the check: both tests passed on retry.
    n = store.record_retry(
        repo=REPO, pr=1, head_sha=sha("a"), sha=sha("2"), passed=[CHECK], failed={}, at=now
    )
    assert n == 2
    got = store.ledger(REPO, [(CHECK, T1), (CHECK, T2)], since=now - dt.timedelta(days=1))
    assert {t: (r.passed_prs, r.retries_passed) for (_, t), r in got.items()} == {
        T1: ((1,), 1),
        T2: ((1,), 1),
    }


def test_a_test_failing_again_on_retry_is_not_evidence(store: Store) -> None:
    now = utcnow()
    fail(store, 1, sha("a"), sha("1"), T1, T2, at=now)
    store.record_retry(
        repo=REPO, pr=1, head_sha=sha("a"), sha=sha("2"), passed=[], failed={CHECK: [T1]}, at=now
    )
    got = store.ledger(REPO, [(CHECK, T1), (CHECK, T2)], since=now - dt.timedelta(days=1))
    assert got[(CHECK, T1)].passed_prs == ()
    assert got[(CHECK, T2)].passed_prs == ()  # T2 did not fail again, but the check did
    with store.engine.connect() as conn:
        retry = dict(conn.execute(sa.select(test_failures.c.test, test_failures.c.retry)).all())
    assert retry == {T1: "failed", T2: "pending"}


def test_another_head_or_the_same_group_is_no_retry(store: Store) -> None:
    now = utcnow()
    fail(store, 1, sha("a"), sha("1"), T1, at=now)
    # A group of another head (a push since) says nothing of this head's failure; the same
    # group read again is not a retry either.
    assert not store.record_retry(
        repo=REPO, pr=1, head_sha=sha("b"), sha=sha("2"), passed=[CHECK], failed={}, at=now
    )
    assert not store.record_retry(
        repo=REPO, pr=1, head_sha=sha("a"), sha=sha("1"), passed=[CHECK], failed={}, at=now
    )
    # The control: the same head's next group.
    assert store.record_retry(
        repo=REPO, pr=1, head_sha=sha("a"), sha=sha("2"), passed=[CHECK], failed={}, at=now
    )


def _drop(store: Store, pr: int, head: str, outcome: str) -> None:
    drop_id, _ = store.add_drop(
        repo=REPO,
        pr=pr,
        head_sha=head,
        reason="failed_checks",
        source="webhook",
        dedupe_key=f"k{pr}{head}{outcome}",
    )
    store.update_drop(drop_id, outcome=outcome)


def _merged(store: Store, pr: int) -> None:
    store.remember_group(
        repo=REPO,
        pr=pr,
        head_sha=sha("9"),
        head_ref=f"gh-readonly-queue/main/pr-{pr}-{sha('0')}",
        base_ref="main",
        base_sha=sha("0"),
        status="destroyed:merged",
    )


def test_a_merge_after_landbots_re_enqueue_is_a_passing_retry(store: Store) -> None:
    now = utcnow() - dt.timedelta(seconds=1)
    fail(store, 1, sha("a"), sha("1"), T1, at=now)
    _drop(store, 1, sha("a"), "requeued")
    _merged(store, 1)
    [rec] = store.ledger(REPO, [(CHECK, T1)], since=now - dt.timedelta(days=1)).values()
    assert rec.passed_prs == (1,)


def test_a_merge_after_a_hand_back_is_not_a_retry(store: Store) -> None:
    """Handed back, the author fixed it: the merge is of another head, not a retry."""
    now = utcnow() - dt.timedelta(seconds=1)
    fail(store, 1, sha("a"), sha("1"), T1, at=now)
    _drop(store, 1, sha("a"), "handed_back")
    _merged(store, 1)
    [rec] = store.ledger(REPO, [(CHECK, T1)], since=now - dt.timedelta(days=1)).values()
    assert rec.passed_prs == ()


def test_the_pr_itself_and_old_failures_are_not_evidence(store: Store) -> None:
    now = utcnow()
    fail(store, 1, sha("a"), sha("1"), T1, at=now - dt.timedelta(days=10))  # out of the window
    fail(store, 2, sha("b"), sha("2"), T1, at=now - dt.timedelta(days=2))
    fail(store, 3, sha("c"), sha("3"), T1, at=now - dt.timedelta(hours=1))
    since = now - dt.timedelta(days=7)
    rec = store.ledger(REPO, [(CHECK, T1)], since=since, exclude_pr=3)[(CHECK, T1)]
    assert (rec.prs, rec.failures) == ((2,), 1)
    assert rec.first_seen == rec.last_seen == now - dt.timedelta(days=2)
    # Another check of the same test name is another record (not asked for: absent).
    assert store.ledger(REPO, [("lint", T1)], since=since) == {}
    assert store.ledger("other/repo", [(CHECK, T1)], since=since) == {}


def test_failures_older_than_a_month_are_pruned(store: Store) -> None:
    now = utcnow()
    fail(store, 1, sha("a"), sha("1"), T1, at=now - dt.timedelta(days=40))
    fail(store, 2, sha("b"), sha("2"), T1, at=now)  # the write that prunes
    with store.engine.connect() as conn:
        prs = list(conn.execute(sa.select(test_failures.c.pr)).scalars())
    assert prs == [2]


def test_the_flakiest_tests_have_passed_on_retry(store: Store) -> None:
    now = utcnow()
    for pr, group in ((1, "1"), (2, "2"), (3, "3")):
        fail(store, pr, sha(str(pr)), sha(group), T1, at=now)
        store.record_retry(
            repo=REPO,
            pr=pr,
            head_sha=sha(str(pr)),
            sha=sha("f"),
            passed=[CHECK],
            failed={},
            at=now,
        )
    fail(store, 4, sha("4"), sha("4"), T2, at=now)  # failed, never retried: not flaky (yet)
    fail(store, 5, sha("5"), sha("5"), T1, at=now)  # a fourth failure, pending
    [top] = store.flakiest_tests(since=now - dt.timedelta(days=7))
    assert (top.test, top.check, top.failures, top.prs, top.retries_passed) == (
        T1,
        CHECK,
        4,
        (1, 2, 3, 5),
        3,
    )
    assert store.flakiest_tests(since=now - dt.timedelta(days=7), repo="other/repo") == []
    assert store.flakiest_tests(since=now + dt.timedelta(seconds=1)) == []


def test_a_merge_of_the_head_that_failed_is_a_passing_retry_whoever_queued_it(
    store: Store,
) -> None:
    """The `pull_request` `closed` event names the head that merged: exactly that head's
    failures passed (a person's re-enqueue after a hand-back counts too); another head's
    do not."""
    now = utcnow() - dt.timedelta(seconds=1)
    fail(store, 1, sha("a"), sha("1"), T1, at=now)
    _drop(store, 1, sha("a"), "handed_back")
    assert store.record_merged(REPO, 1, head_sha=sha("b")) == 0  # fixed by a push: no retry
    assert store.record_merged(REPO, 1, head_sha=sha("a")) == 1
    [rec] = store.ledger(REPO, [(CHECK, T1)], since=now - dt.timedelta(days=1)).values()
    assert rec.passed_prs == (1,)
