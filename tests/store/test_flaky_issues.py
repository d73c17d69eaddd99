"""The flaky tests' issues in the store (revision 0011) on both backends: each test's ledger
history across checks, the candidates by passed retries, and the issue's row."""

from __future__ import annotations

import datetime as dt

import pytest

from landbot.store import Store, utcnow

REPO = "acme/widgets"
T1 = "tests/test_net.py::test_fetch"
T2 = "tests/test_app.py::test_answer"


def sha(n: int) -> str:
    return f"{n:040x}"


def flaky(store: Store, pr: int, test: str, *, check: str = "test", at: dt.datetime) -> None:
    """`test` fails in the group of PR `pr`'s head, and the head merges (retry passed)."""
    store.record_test_failures(
        repo=REPO, pr=pr, head_sha=sha(pr), sha=sha(1000 + pr), failures={check: [test]}, at=at
    )
    store.record_merged(REPO, pr, head_sha=sha(pr), at=at)


def test_histories_of_tests_over_the_threshold(store: Store) -> None:
    now = utcnow()
    for pr in (1, 2, 3):
        flaky(store, pr, T1, check="test (3.11)" if pr == 2 else "test", at=now)
    flaky(store, 4, T2, at=now)
    store.record_test_failures(  # a failure whose retry is pending
        repo=REPO, pr=5, head_sha=sha(5), sha=sha(1005), failures={"test": [T1]}, at=now
    )
    since = now - dt.timedelta(days=30)
    [h] = store.flaky_histories(REPO, since=since, min_passed_prs=3)
    assert h.test == T1 and h.prs == (1, 2, 3, 5) and h.passed_prs == (1, 2, 3)
    assert {f.check for f in h.failures} == {"test", "test (3.11)"}  # across checks
    assert h.last_failure_at is not None and abs(h.last_failure_at - now) < dt.timedelta(seconds=1)
    # The control: the threshold one higher, none; one lower, both tests.
    assert store.flaky_histories(REPO, since=since, min_passed_prs=4) == []
    got = store.flaky_histories(REPO, since=since, min_passed_prs=1)
    assert [x.test for x in got] == [T2, T1]
    # A test named in `also` comes whatever its count; an unknown one is absent.
    also = store.flaky_histories(REPO, since=since, min_passed_prs=9, also=[T2, "nope"])
    assert [x.test for x in also] == [T2]
    # Outside the window: nothing.
    assert store.flaky_histories(REPO, since=now + dt.timedelta(seconds=1), min_passed_prs=1) == []
    assert store.ledger_repos(since) == {REPO}


def test_an_issue_row_is_made_then_updated(store: Store) -> None:
    assert store.flaky_issue(REPO, T1) is None
    made = store.save_flaky_issue(REPO, T1, owners="@a @b", number=None)
    assert (made.number, made.state, made.owners, made.failures_shown) == (None, "open", "@a @b", 0)
    now = utcnow()
    store.save_flaky_issue(
        REPO, T1, number=7, failures_shown=3, passed_shown=3, last_failure_at=now
    )
    closed = store.save_flaky_issue(REPO, T1, state="closed", closed_at=now)
    assert (closed.number, closed.state, closed.owners, closed.passed_shown) == (
        7,
        "closed",
        "@a @b",
        3,
    )
    assert closed.closed_at is not None and closed.opened_at == made.opened_at
    assert [i.test for i in store.flaky_issues(REPO)] == [T1]
    assert store.flaky_issues("other/repo") == []
    with pytest.raises(ValueError, match="not a flaky_issues field"):
        store.save_flaky_issue(REPO, T1, id=3)


def test_a_long_test_id_fits(store: Store) -> None:
    long = "tests/" + "x" * 480 + ".py::t"  # the ledger keeps ids up to 500 characters
    assert store.save_flaky_issue(REPO, long, number=1).test == long
