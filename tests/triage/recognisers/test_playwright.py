"""Playwright Test: failed tests, and flaky ones (passed on retry) that are not failures."""

from __future__ import annotations

from landbot.triage.recognisers import playwright as rec

from .conftest import corpus, failures, kinds

LOG = "javascript/supabase-playwright-failed-and-flaky.log"


def test_failed_is_a_failure_and_flaky_is_not() -> None:
    # tests/triage/real/javascript/supabase-playwright-failed-and-flaky.log, 2197-2301.
    got = failures(rec.ECOSYSTEM, corpus(LOG, 2197, 2301))
    assert got == {
        2197: "[Common Functionality] › tests/common-functionality/table-editor.spec.ts"
        " › Table Editor › should create a new table, view its definition, add new rows,"
        " and delete the table"
    } or list(got) == [2197]
    marked = kinds(rec.ECOSYSTEM, corpus(LOG, 2197, 2301))
    assert marked[2271] == "playwright-flaky"  # listed under `1 flaky`
    assert marked[2298] == "playwright-summary" and marked[2299] == "playwright-listed"


def test_without_the_summary_the_flaky_test_counts() -> None:
    # Control: the same heading (2271) with no summary in view is a failure.
    assert list(failures(rec.ECOSYSTEM, corpus(LOG, 2271, 2272))) == [2271]


def test_a_run_printed_inside_the_step_is_not_its_failure() -> None:
    # tests/triage/real/javascript/playwright-test-expects-renamed-file.log, 1732-1818:
    # Playwright's own test prints the run it tests (1732-1781, its `1) [chromium] ›
    # a.test.ts … › fail` at 1739 and its summary at 1777); the step's run fails one test
    # (1794), which its final summary (1815) lists.
    log = "javascript/playwright-test-expects-renamed-file.log"
    got = failures(rec.ECOSYSTEM, corpus(log, 1732, 1818))
    assert list(got) == [1794]
    assert kinds(rec.ECOSYSTEM, corpus(log, 1732, 1818))[1739] == "playwright-other-run"


def test_one_run_alone_keeps_its_failure() -> None:
    # Control: the inner run alone (1732-1781), one summary: its failure is the failure.
    log = "javascript/playwright-test-expects-renamed-file.log"
    assert list(failures(rec.ECOSYSTEM, corpus(log, 1732, 1781))) == [1739]
