"""The flaky-test issue's decision (every case, each refusal with its control) and its text."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

import pytest

from landbot.config import FlakyIssuesSettings
from landbot.core.model import JobFailure
from landbot.land import flaky_issues as fi
from landbot.store.records import FlakyTestHistory, LedgerFailure, StoredFlakyIssue

NOW = dt.datetime(2027, 1, 15, 12, 0, tzinfo=dt.UTC)
DAY = dt.timedelta(days=1)
TEST = "tests/test_net.py::test_fetch"
POLICY = fi.FlakyIssuePolicy()  # min 3 PRs, 7 quiet days


def failure(
    pr: int | None,
    retry: str = "passed",
    *,
    ago: dt.timedelta = DAY,
    drop: int | None = None,
    check: str = "test",
) -> LedgerFailure:
    return LedgerFailure(
        check=check,
        pr=pr,
        head_sha="a" * 40,
        sha=f"{pr or 0:040d}",
        drop_id=drop,
        seen_at=NOW - ago,
        retry=retry,
    )


def history(*failures: LedgerFailure) -> FlakyTestHistory:
    return FlakyTestHistory(
        repo="o/r", test=TEST, failures=tuple(sorted(failures, key=lambda f: f.seen_at))
    )


def flaky_on(prs: Sequence[int], *, ago: dt.timedelta = DAY) -> FlakyTestHistory:
    return history(*(failure(p, ago=ago + i * dt.timedelta(minutes=1)) for i, p in enumerate(prs)))


def issue(
    state: str = "open",
    *,
    number: int | None = 7,
    shown: FlakyTestHistory | None = None,
    closed_at: dt.datetime | None = None,
) -> StoredFlakyIssue:
    return StoredFlakyIssue(
        id=1,
        repo="o/r",
        test=TEST,
        number=number,
        state=state,
        owners="@alice",
        failures_shown=len(shown.failures) if shown else 0,
        passed_shown=len(shown.passed_prs) if shown else 0,
        last_failure_at=shown.last_failure_at if shown else None,
        opened_at=NOW - 10 * DAY,
        closed_at=closed_at,
        updated_at=NOW - DAY,
    )


def act(
    h: FlakyTestHistory | None,
    i: StoredFlakyIssue | None,
    policy: fi.FlakyIssuePolicy = POLICY,
) -> str:
    return fi.decide(policy, h, i, NOW).action


# --- opening --------------------------------------------------------------------------------


def test_opens_at_the_threshold_and_not_before() -> None:
    assert act(flaky_on([1, 2, 3]), None) == "open"
    assert act(flaky_on([1, 2]), None) == "nothing"  # control: one short


def test_only_retries_that_passed_count() -> None:
    failed_again = history(failure(1), failure(2), failure(3, "failed"), failure(4, "pending"))
    assert act(failed_again, None) == "nothing"
    assert act(history(failure(1), failure(2), failure(3), failure(4, "pending")), None) == "open"


def test_one_pull_request_counts_once() -> None:
    same_pr = history(failure(1), failure(1, ago=2 * DAY), failure(2), failure(2, ago=3 * DAY))
    assert act(same_pr, None) == "nothing"
    assert act(history(failure(1), failure(2), failure(5)), None) == "open"  # control


def test_base_branch_failures_are_no_pull_request() -> None:
    assert act(history(failure(None), failure(1), failure(2)), None) == "nothing"


def test_a_test_quiet_since_crossing_is_not_opened() -> None:
    assert act(flaky_on([1, 2, 3], ago=8 * DAY), None) == "nothing"
    assert act(flaky_on([1, 2, 3], ago=6 * DAY), None) == "open"  # control: within 7 days


def test_the_threshold_is_a_setting() -> None:
    one = fi.FlakyIssuePolicy(min_prs=1)
    assert act(flaky_on([1]), None, one) == "open"
    assert act(flaky_on([1]), None) == "nothing"


def test_off_decides_nothing_ever() -> None:
    off = fi.FlakyIssuePolicy(enabled=False)
    h = flaky_on([1, 2, 3, 4])
    for case in (None, issue(shown=flaky_on([1])), issue("closed", closed_at=NOW - 3 * DAY)):
        assert act(h, case, off) == "nothing"
        assert act(None, case, off) == "nothing"
    assert act(h, None) == "open"  # control: on


def test_a_claimed_issue_without_a_number_is_opened_again() -> None:
    """A create claimed but never confirmed: open again (the claim finds it by its marker)."""
    assert act(flaky_on([1, 2, 3]), issue(number=None)) == "open"
    assert act(flaky_on([1, 2]), issue(number=None)) == "nothing"


# --- updating -------------------------------------------------------------------------------


def test_updated_on_a_new_failure() -> None:
    shown = flaky_on([1, 2, 3], ago=2 * DAY)
    newer = history(*shown.failures, failure(4, "pending"))
    assert act(newer, issue(shown=shown)) == "update"
    assert act(shown, issue(shown=shown)) == "nothing"  # control: nothing new


def test_updated_when_a_pending_retry_passed() -> None:
    before = history(failure(1), failure(2), failure(3), failure(4, "pending"))
    after = history(failure(1), failure(2), failure(3), failure(4, "passed"))
    assert act(after, issue(shown=before)) == "update"
    assert act(before, issue(shown=before)) == "nothing"


def test_failures_ageing_out_are_no_news() -> None:
    shown = flaky_on([1, 2, 3, 4])
    fewer = history(*shown.failures[1:])
    assert act(fewer, issue(shown=shown)) == "nothing"


def test_an_issue_that_showed_nothing_yet_is_updated() -> None:
    assert act(flaky_on([1, 2, 3]), issue()) == "update"


# --- closing --------------------------------------------------------------------------------


def test_closed_after_the_quiet_period() -> None:
    shown = flaky_on([1, 2, 3], ago=7 * DAY)
    assert act(shown, issue(shown=shown)) == "close"
    recent = flaky_on([1, 2, 3], ago=7 * DAY - dt.timedelta(minutes=5))
    assert act(recent, issue(shown=recent)) == "nothing"  # control: not quite 7 days


def test_closed_when_the_ledger_forgot_it() -> None:
    assert act(None, issue(shown=flaky_on([1, 2, 3], ago=31 * DAY))) == "close"


def test_quiet_is_a_setting() -> None:
    shown = flaky_on([1, 2, 3], ago=2 * DAY)
    assert act(shown, issue(shown=shown), fi.FlakyIssuePolicy(quiet=DAY)) == "close"
    assert act(shown, issue(shown=shown)) == "nothing"


# --- reopening ------------------------------------------------------------------------------


def test_reopened_by_a_failure_after_closing() -> None:
    old = flaky_on([1, 2, 3], ago=10 * DAY)
    closed = issue("closed", shown=old, closed_at=NOW - 3 * DAY)
    again = history(*old.failures, failure(9, "pending", ago=DAY))
    assert act(again, closed) == "reopen"
    assert act(old, closed) == "nothing"  # control: no failure since the close


def test_not_reopened_once_the_evidence_is_gone() -> None:
    closed = issue("closed", closed_at=NOW - 3 * DAY)
    lone = history(failure(9, "pending", ago=DAY))
    assert act(lone, closed) == "nothing"
    assert act(None, closed) == "nothing"


def test_a_closed_issue_without_a_close_time_stays_closed() -> None:
    assert act(flaky_on([1, 2, 3]), issue("closed", closed_at=None)) == "nothing"


def test_every_case_has_a_reason() -> None:
    cases = [
        (flaky_on([1, 2, 3]), None),
        (flaky_on([1]), None),
        (None, issue()),
        (flaky_on([1, 2, 3]), issue(shown=flaky_on([1, 2, 3]))),
        (flaky_on([1, 2, 3]), issue("closed", closed_at=NOW - 10 * DAY)),
    ]
    for h, i in cases:
        assert fi.decide(POLICY, h, i, NOW).why


def test_policy_from_settings() -> None:
    policy = fi.FlakyIssuePolicy.from_settings(
        FlakyIssuesSettings(enabled=False, min_prs=5, quiet_days=1.5, label="flaky")
    )
    assert policy == fi.FlakyIssuePolicy(
        enabled=False, min_prs=5, quiet=dt.timedelta(days=1.5), label="flaky"
    )


@pytest.mark.parametrize("value", ["", " x", "x" * 51])
def test_the_label_must_be_one_github_takes(value: str) -> None:
    with pytest.raises(ValueError):
        FlakyIssuesSettings(label=value)
    assert FlakyIssuesSettings(label="x" * 50).label == "x" * 50  # control


# --- the text -------------------------------------------------------------------------------


def job(check: str = "test") -> JobFailure:
    return JobFailure(
        job=check,
        url="https://github.com/o/r/actions/runs/1/job/2",
        step="Run tests",
        error_lines=(12,),
        excerpt=((11, "tests/test_net.py::test_fetch"), (12, "E   ConnectionResetError: reset")),
        summary="ConnectionResetError",
        class_="flaky",
    )


def test_the_body_carries_the_marker_runs_prs_and_lines() -> None:
    h = history(failure(1, drop=11), failure(2, drop=12, ago=2 * DAY), failure(3, "pending"))
    text = fi.body(h, {(11, "test"): job()}, fi.IssueText(owners=("@alice",), mention=True), NOW)
    assert text.startswith(fi.marker(TEST))
    assert "on 3 pull requests and passed when retried on 2 of them (#2, #1)" in text
    job_link = "[job](https://github.com/o/r/actions/runs/1/job/2)"
    assert f"#1 · merge group 0000000 · `test` · {job_link}" in text
    assert "12: E   ConnectionResetError: reset" in text
    assert "11: tests/test_net.py" not in text  # only the error lines
    assert "retry pending" in text
    assert "**Owner** (CODEOWNERS): @alice" in text
    # Newest first.
    assert text.index("#1 ·") < text.index("#2 ·")


def test_the_owner_is_mentioned_only_when_asked() -> None:
    h = flaky_on([1, 2, 3])
    edit = fi.body(h, {}, fi.IssueText(owners=("@alice", "@o/team")), NOW)
    assert "@alice" in edit and " @alice" not in edit.replace("`@alice`", "")
    assert "`@alice` `@o/team`" in edit
    opening = fi.body(h, {}, fi.IssueText(owners=("@alice", "@o/team"), mention=True), NOW)
    assert "**Owners** (CODEOWNERS): @alice @o/team" in opening
    nobody = fi.body(h, {}, fi.IssueText(), NOW)
    assert "**Owner:** none found in CODEOWNERS." in nobody


def test_the_closing_body_says_why() -> None:
    h = flaky_on([1, 2, 3], ago=8 * DAY)
    text = fi.body(h, {}, fi.IssueText(closing=True), NOW)
    assert "**Closed by landbot:** no failure in the last 7 days" in text
    assert "Closed by landbot" not in fi.body(h, {}, fi.IssueText(), NOW)  # control


def test_many_failures_are_counted_not_listed() -> None:
    h = history(*(failure(p, ago=p * dt.timedelta(minutes=1)) for p in range(1, 31)))
    text = fi.body(h, {}, fi.IssueText(), NOW)
    assert text.count("· merge group") == fi.SHOWN_FAILURES
    assert "…and 10 older failures." in text


def test_the_body_fits_githubs_limit() -> None:
    huge = JobFailure(
        job="test", url="u", step=None, error_lines=tuple(range(1, 7)),
        excerpt=tuple((n, "x" * 300) for n in range(1, 7)), summary="", class_="flaky",
    )  # fmt: skip
    h = history(*(failure(p, drop=p, ago=p * dt.timedelta(minutes=1)) for p in range(1, 40)))
    text = fi.body(h, {(p, "test"): huge for p in range(1, 40)}, fi.IssueText(), NOW)
    assert len(text) <= fi.MAX_BODY


def test_marker_and_title() -> None:
    assert fi.marker("a-->b") == "<!-- landbot:flaky-test a-- >b -->"
    assert fi.title(TEST) == f"Flaky test: {TEST}"
    assert len(fi.title("t" * 400)) == fi.MAX_TITLE
