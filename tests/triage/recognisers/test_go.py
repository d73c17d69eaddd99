"""go test: failed tests as pkg.TestName, their file.go:N: lines, packages, panics."""

from __future__ import annotations

from landbot.triage.recognisers import go as rec

from .conftest import corpus, failures, found, kinds

TERRAFORM = "go/terraform-go-unit-tests-fail.log"


def test_failed_test_gets_its_package_and_location() -> None:
    # tests/triage/real/go/terraform-go-unit-tests-fail.log, 464-481 (hashicorp/terraform).
    got = found(rec.ECOSYSTEM, corpus(TERRAFORM, 464, 481))
    assert got[464] == (
        "go-failed",
        "github.com/hashicorp/terraform/internal/command/views.TestJSONHook_EphemeralOp_progress",
    )
    assert got[465] == ("go-location", "hook_json_test.go:508")
    assert got[481] == (
        "go-package-failed",
        "github.com/hashicorp/terraform/internal/command/views",
    )
    assert set(failures(rec.ECOSYSTEM, corpus(TERRAFORM, 464, 481))) >= {464, 465, 481}


def test_passing_packages_are_not_marked() -> None:
    # Control: terraform lines 386-387 (`ok  	github.com/hashicorp/terraform	0.049s …`).
    assert kinds(rec.ECOSYSTEM, corpus(TERRAFORM, 386, 387)) == {}


def test_a_panic_is_a_failure_line() -> None:
    # terraform line 422: `panic: runtime error: invalid memory address …`.
    assert kinds(rec.ECOSYSTEM, corpus(TERRAFORM, 422, 423)) == {422: "go-panic"}


def test_a_test_timeout_names_the_running_test() -> None:
    # tests/triage/real/go/hugo-windows-go-test-timeout-panic.log, 5970-5972 and 6177.
    log = "go/hugo-windows-go-test-timeout-panic.log"
    got = found(rec.ECOSYSTEM, corpus(log, 5970, 6177))
    assert got[5972] == (
        "go-timeout-test",
        "github.com/gohugoio/hugo/resources/resource_transformers/tocss/dartsass"
        ".TestDirectoryIndexes",
    )
    assert got[5970][0] == "go-panic"


def test_checksum_mismatch_and_build_failed() -> None:
    # tests/triage/real/go/bubbletea-go-mod-checksum-mismatch.log, 10123-10127, and
    # tests/triage/real/go/fzf-go-build-failed-toolchain.log, 527-533.
    got = kinds(rec.ECOSYSTEM, corpus("go/bubbletea-go-mod-checksum-mismatch.log", 10123, 10127))
    assert got[10123] == "go-error" and got[10127] == "go-security"
    fzf = kinds(rec.ECOSYSTEM, corpus("go/fzf-go-build-failed-toolchain.log", 527, 533))
    assert fzf[529] == "go-package-failed" and fzf[528] == "go-build-output"
    assert 527 not in fzf  # `go: downloading …` is progress


def test_go_v_output_of_a_parallel_test() -> None:
    # tests/triage/real/network/terraform-e2e-provider-download-tls-timeout.log, 176-207:
    # the failed subtest's output follows its `=== CONT` line, among other tests' lines.
    got = kinds(
        rec.ECOSYSTEM, corpus("network/terraform-e2e-provider-download-tls-timeout.log", 176, 207)
    )
    assert got[188] == "go-location" and got[195] == "go-detail"
    assert 178 not in got  # `--- PASS: TestUnmanagedSeparatePlan`
