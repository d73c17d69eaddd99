"""The shell: command-not-found and script errors, crashes, and exit-code wrappers."""

from __future__ import annotations

from landbot.triage.recognisers import shell as rec

from .conftest import corpus, failures, kinds


def test_command_not_found() -> None:
    # tests/triage/real/javascript/dify-pnpm-command-not-found.log, 164.
    got = failures(rec.ECOSYSTEM, corpus("javascript/dify-pnpm-command-not-found.log", 164, 164))
    assert list(got) == [164]


def test_make_and_exit_code_lines_are_wrappers() -> None:
    # tests/triage/real/cpp/firefox-windows-llvm-rc-missing-icon.log, 9631 and 9892 (make),
    # and tests/triage/real/javascript/n8n-vitest-test-timeout.log, 13634 (ELIFECYCLE).
    firefox = "cpp/firefox-windows-llvm-rc-missing-icon.log"
    assert kinds(rec.ECOSYSTEM, corpus(firefox, 9631, 9631)) == {9631: "make-error"}
    assert kinds(rec.ECOSYSTEM, corpus(firefox, 9892, 9892)) == {9892: "make-error"}
    n8n = kinds(rec.ECOSYSTEM, corpus("javascript/n8n-vitest-test-timeout.log", 13634, 13634))
    assert n8n == {13634: "exit-status"}
    assert {"make-error", "exit-status"} <= rec.ECOSYSTEM.wrapper_kinds
    assert failures(rec.ECOSYSTEM, corpus(firefox, 9631, 9631)) == {}


def test_a_crash_is_a_failure() -> None:
    # tests/triage/real/docker/gpt-academic-buildx-arm64-qemu-gcc-segfault.log, 1146
    # (`… Segmentation fault (core dumped)` under BuildKit's `#9 469.3 ` prefix).
    log = "docker/gpt-academic-buildx-arm64-qemu-gcc-segfault.log"
    assert kinds(rec.ECOSYSTEM, corpus(log, 1146, 1146)) == {1146: "crash"}


def test_the_exit_code_annotation_is_not_a_shell_line() -> None:
    # Control: dify line 165 (`##[error]Process completed with exit code 127.`) belongs to
    # the annotation recogniser; the shell's wrappers skip annotations.
    assert (
        kinds(rec.ECOSYSTEM, corpus("javascript/dify-pnpm-command-not-found.log", 165, 165)) == {}
    )
