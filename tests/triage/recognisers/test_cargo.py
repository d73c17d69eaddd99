"""cargo test and nextest: failed tests, panics and their message, summaries."""

from __future__ import annotations

from landbot.triage.recognisers import cargo as rec

from .conftest import corpus, failures, kinds

MEILI = "rust/meilisearch-cargo-test-failed.log"


def test_failed_tests_and_the_panic() -> None:
    # tests/triage/real/rust/meilisearch-cargo-test-failed.log, 2525-2541 and 2803-2805.
    got = failures(rec.ECOSYSTEM, corpus(MEILI, 2525, 2528))
    assert got[2525] == "scheduler::test_embedders::delete_embedder_with_user_provided_vectors"
    marks = kinds(rec.ECOSYSTEM, corpus(MEILI, 2540, 2541))
    assert marks == {2540: "cargo-panic", 2541: "cargo-panic-message"}
    tail = kinds(rec.ECOSYSTEM, corpus(MEILI, 2803, 2805))
    assert tail == {2803: "cargo-summary", 2805: "cargo-wrapper"}


def test_passing_tests_are_not_marked() -> None:
    # Control: meilisearch lines 2359-2360 (`test test::not_a_tag ... ok`).
    assert kinds(rec.ECOSYSTEM, corpus(MEILI, 2359, 2360)) == {}


def test_nextest_fail_line_without_its_duration() -> None:
    # tests/triage/real/rust/uv-windows-nextest-access-violation.log, 2380 (FAIL) and the
    # control 718-719 (PASS lines of the same run).
    log = "rust/uv-windows-nextest-access-violation.log"
    assert failures(rec.ECOSYSTEM, corpus(log, 2380, 2380)) == {
        2380: "uv::it workspace::workspace_lock_idempotence_virtual_workspace"
    }
    assert kinds(rec.ECOSYSTEM, corpus(log, 718, 719)) == {}


def test_the_binary_output_nextest_shows_again_is_not_a_second_failure() -> None:
    # uv lines 2380-2384: nextest's FAIL line, then under `STDOUT:` the test binary's own
    # `test workspace::… ... FAILED` for the same test.
    log = "rust/uv-windows-nextest-access-violation.log"
    got = kinds(rec.ECOSYSTEM, corpus(log, 2380, 2384))
    assert got[2380] == "nextest-failed" and got[2384] == "cargo-failed-echo"
