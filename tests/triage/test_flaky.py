"""The weighing of positive evidence for flaky (triage/flaky.py): every class the words can
give, against every state of the PR's own head and of the ledger."""

from __future__ import annotations

import datetime as dt
from typing import get_args

import pytest

from landbot.core.model import JobFailure, TriageClass
from landbot.store.records import LedgerTest
from landbot.triage.flaky import (
    WEIGHED,
    FlakyPolicy,
    HeadCheck,
    head_matters,
    head_state,
    ledger_flaky,
    ledger_sentence,
    same_failure,
    weigh,
)

HEAD = "a" * 40
T1, T2 = "tests/a.py::test_one", "tests/a.py::test_two"
NOW = dt.datetime(2026, 12, 1, tzinfo=dt.UTC)


def job(cls: TriageClass = "genuine", tests: tuple[str, ...] = (T1,)) -> JobFailure:
    return JobFailure("test", "", "Run pytest", (), (), "", cls, failed_tests=tests)


def rec(test: str, prs: tuple[int, ...] = (1, 2), passed: tuple[int, ...] = (1, 2)) -> LedgerTest:
    return LedgerTest("o/r", test, "test", len(prs), prs, passed, len(passed), NOW, NOW)


FLAKY = {T1: rec(T1), T2: rec(T2)}


@pytest.mark.parametrize(
    ("conclusion", "status", "state"),
    [
        ("success", "completed", "passed"),
        ("skipped", "completed", "passed"),
        ("failure", "completed", "failed"),
        ("timed_out", "completed", "failed"),
        ("cancelled", "completed", "pending"),
        (None, "in_progress", "pending"),
    ],
)
def test_head_state(conclusion: str | None, status: str, state: str) -> None:
    assert head_state(conclusion, status) == state


def test_the_ledger_needs_every_failed_test_with_a_passed_retry() -> None:
    assert ledger_flaky(job(tests=(T1, T2)), FLAKY)
    assert not ledger_flaky(job(tests=(T1, T2)), {T1: rec(T1)})  # T2 is new
    assert not ledger_flaky(job(tests=()), FLAKY)  # no test named: the ledger cannot say
    assert not ledger_flaky(job(), {T1: rec(T1, passed=())})  # failed, never passed on retry
    strict = FlakyPolicy(min_passed_prs=3)
    assert not ledger_flaky(job(), FLAKY, strict)
    assert ledger_flaky(job(), {T1: rec(T1, (1, 2, 3), (1, 2, 3))}, strict)


@pytest.mark.parametrize("cls", get_args(TriageClass))
def test_only_classes_about_tests_are_weighed(cls: TriageClass) -> None:
    failing_head = HeadCheck(HEAD, "failed", (T1,))
    weighed = weigh(job(cls), FLAKY, failing_head)
    if cls in WEIGHED:
        assert weighed.class_ == "genuine"  # the head's same failure wins over the ledger
    else:
        assert weighed == job(cls)  # policy, infrastructure, timeout, cancelled: as they are


def test_the_same_failure_on_the_head_is_genuine_whatever_the_words_or_the_ledger() -> None:
    head = HeadCheck(HEAD, "failed", (T1,))
    for words in ("flaky", "genuine", "unknown"):
        w = weigh(job(words), FLAKY, head)
        assert w.class_ == "genuine"
        assert w.log_class == (None if words == "genuine" else words)
        assert w.flaky_evidence == (
            f"it failed the same way (`{T1}`) on the pull request's own head aaaaaaa, "
            "outside the merge group"
        )


def test_the_same_way_means_the_same_tests_when_both_name_them() -> None:
    assert same_failure(job(), HeadCheck(HEAD, "failed", (T1, T2)))
    assert not same_failure(job(), HeadCheck(HEAD, "failed", (T2,)))
    assert same_failure(job(), HeadCheck(HEAD, "failed", None))  # log not read: the check
    assert same_failure(job(tests=()), HeadCheck(HEAD, "failed", (T2,)))
    assert same_failure(job(), HeadCheck(HEAD, "failed", ()))
    assert not same_failure(job(), HeadCheck(HEAD, "passed"))
    w = weigh(job(), FLAKY, HeadCheck(HEAD, "failed", (T2,)))
    assert w.class_ == "flaky"  # another failure of the head: the ledger's evidence stands


@pytest.mark.parametrize("head", [None, HeadCheck(HEAD, "absent"), HeadCheck(HEAD, "passed")])
def test_the_ledger_makes_a_genuine_looking_failure_flaky(head: HeadCheck | None) -> None:
    w = weigh(job("genuine"), FLAKY, head)
    assert (w.class_, w.log_class) == ("flaky", "genuine")
    assert w.flaky_evidence == (
        f"`{T1}` failed in 2 other pull requests in the last 7 days and passed on retry in "
        "all of them"
    )


def test_words_alone_keep_todays_class() -> None:
    for words in ("flaky", "genuine", "unknown"):
        w = weigh(job(words), {}, None)
        assert (w.class_, w.log_class, w.flaky_evidence) == (words, None, "")
    confirmed = weigh(job("flaky"), {}, HeadCheck(HEAD, "passed"))
    assert confirmed.class_ == "flaky"
    assert (
        confirmed.flaky_evidence == "the same check passed on the pull request's own head aaaaaaa"
    )
    # A genuine failure whose check passed on the head stays genuine: a group failing where
    # the head passed is what a clash with the base or a PR ahead looks like.
    assert weigh(job("genuine"), {}, HeadCheck(HEAD, "passed")).class_ == "genuine"


def test_the_head_is_worth_a_call_only_when_the_job_would_be_flaky() -> None:
    assert head_matters(job("flaky"), {})
    assert head_matters(job("genuine"), FLAKY)
    assert not head_matters(job("genuine"), {})
    assert not head_matters(job("infrastructure"), FLAKY)


def test_the_sentence_counts_prs_and_names_the_best_test() -> None:
    ledger = {T1: rec(T1, (1, 2, 3, 4), (1, 2, 3)), T2: rec(T2, (5,), (5,))}
    assert ledger_sentence((T1, T2), ledger) == (
        f"`{T1}` failed in 4 other pull requests in the last 7 days and passed on retry in "
        "3 of them (and 1 more failed test likewise)"
    )
    one = ledger_sentence((T2,), ledger, FlakyPolicy(window=dt.timedelta(days=1)))
    assert (
        one == f"`{T2}` failed in 1 other pull request in the last day and passed on retry in "
        "all of them"
    )
    assert ledger_sentence(("tests/x`y",), {"tests/x`y": rec("tests/x`y")}).startswith(
        "`tests/x'y`"
    )
    assert ledger_sentence((T1,), {}) == ""
