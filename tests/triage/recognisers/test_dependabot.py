"""Dependabot's updater: its ERROR line, the reason it logged before recording the error,
and the error types of its results table."""

from __future__ import annotations

from landbot.triage.recognisers import dependabot as rec

from .conftest import corpus, failures, kinds

BUBBLETEA = "dependabot/bubbletea-dependabot-no-dockerfiles.log"
ALPINE = "dependabot/alpine-dependabot-pr-exists-for-latest.log"
LOSSLESS = "dependabot/lossless-cut-dependabot-security-update-not-possible.log"
FABRIC = "dependabot/fabric-dependabot-updater-unknown-error.log"


def test_updater_error_and_the_results_table() -> None:
    # tests/triage/real/dependabot/bubbletea-dependabot-no-dockerfiles.log, 150-170: the
    # updater's ERROR (153); under `Dependabot encountered '1' error(s)` (160) the table's
    # heading row (162, `| Errors |`) is not a failure, its row (164) is.
    got = failures(rec.ECOSYSTEM, corpus(BUBBLETEA, 150, 170))
    assert got == {153: "", 164: "dependency_file_not_found"}
    assert kinds(rec.ECOSYSTEM, corpus(BUBBLETEA, 150, 170))[160] == "dependabot-results"


def test_the_reason_logged_before_the_error_is_recorded() -> None:
    # alpine, 305-323: `Pull request already exists …` (309) and the line before it (308),
    # then `POST …/record_update_job_error` (310); the row names the dependency.
    got = kinds(rec.ECOSYSTEM, corpus(ALPINE, 305, 323))
    assert got == {
        308: "dependabot-reason",
        309: "dependabot-reason",
        318: "dependabot-results",
        322: "dependabot-error-type",
    }
    assert failures(rec.ECOSYSTEM, corpus(ALPINE, 305, 323)) == {
        322: "axios: pull_request_exists_for_latest_version"
    }
    # lossless-cut, 2555-2576: the reason stops at the updater's process bookkeeping
    # (2560 `Total execution time`), so only 2561-2562 are marked above the table.
    got = kinds(rec.ECOSYSTEM, corpus(LOSSLESS, 2555, 2576))
    assert [n for n, k in got.items() if k == "dependabot-reason"] == [2561, 2562]


def test_a_backtrace_is_not_marked_line_by_line() -> None:
    # fabric, 3313-3365: `ERROR <job> Passed nil into T.must` (3315), then 33 ERROR lines
    # of its Ruby backtrace (3316-3348): only the first is the error.
    got = failures(rec.ECOSYSTEM, corpus(FABRIC, 3313, 3365))
    assert got == {3315: "", 3364: "unknown_error"}


def test_a_successful_updater_run_is_not_marked() -> None:
    # Control: bubbletea 140-152, the updater's INFO lines and its processes exiting 0,
    # before anything failed; alpine 295-308 likewise (no error recorded after them).
    assert kinds(rec.ECOSYSTEM, corpus(BUBBLETEA, 140, 152)) == {}
    assert kinds(rec.ECOSYSTEM, corpus(ALPINE, 295, 308)) == {}
