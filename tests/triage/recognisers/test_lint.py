"""Lint runners: ruff/flake8-style codes, eslint, pre-commit, ESLint crashes."""

from __future__ import annotations

from landbot.triage.recognisers import lint as rec

from .conftest import corpus, failures, found, kinds


def test_ruff_code_line() -> None:
    # tests/triage/real/python/sd-webui-ruff-f401.log, 150-152: line 150 is ruff's own
    # warning about a noqa comment, not a finding.
    got = failures(rec.ECOSYSTEM, corpus("python/sd-webui-ruff-f401.log", 150, 152))
    assert got == {151: "modules/sd_models.py:16:55"}


def test_golangci_annotations() -> None:
    # tests/triage/real/go/bubbletea-golangci-lint-windows.log, 297-300.
    got = failures(rec.ECOSYSTEM, corpus("go/bubbletea-golangci-lint-windows.log", 297, 300))
    assert set(got) == {297, 300}


def test_eslint_stylish_row_and_total() -> None:
    # tests/triage/real/javascript/mantine-eslint-unused-var.log, 810-813.
    got = kinds(rec.ECOSYSTEM, corpus("javascript/mantine-eslint-unused-var.log", 810, 813))
    assert got == {811: "eslint-finding", 813: "eslint-summary"}


def test_pre_commit_failed_hook_and_its_output() -> None:
    # tests/triage/real/python/llama-index-make-lint-precommit.log, 431-436, and the
    # control 551-557 (hooks that passed or were skipped).
    log = "python/llama-index-make-lint-precommit.log"
    got = kinds(rec.ECOSYSTEM, corpus(log, 431, 436))
    assert got[431] == "precommit-failed" and got[432] == "precommit-hook"
    assert got[435] == "precommit-output"
    assert kinds(rec.ECOSYSTEM, corpus(log, 551, 557)) == {}


def test_eslint_crash() -> None:
    # tests/triage/real/javascript/adminlte-npm-run-all-eslint9-no-flat-config.log, 213-217.
    log = "javascript/adminlte-npm-run-all-eslint9-no-flat-config.log"
    got = kinds(rec.ECOSYSTEM, corpus(log, 213, 217))
    assert got[213] == "eslint-crash" and got[217] == "eslint-crash-detail"


def test_prettier_check_names_the_unformatted_files() -> None:
    # tests/triage/real/javascript/supabase-prettier-check-warn-lines.log, 398-410: the
    # eight `[warn] path` lines above the verdict (409) are the failures.
    log = "javascript/supabase-prettier-check-warn-lines.log"
    got = failures(rec.ECOSYSTEM, corpus(log, 398, 410))
    assert list(got) == list(range(401, 409))
    assert got[401] == "apps/docs/components/Navigation/NavigationMenu/NavigationMenu.constants.ts"
    assert kinds(rec.ECOSYSTEM, corpus(log, 398, 410))[409] == "format-check"


def test_other_warn_lines_are_not_files() -> None:
    # Control: tests/triage/real/java/gradle-kotlin-jvm-target-mismatch.log, 1520 and
    # 1530 (capacitor's `[warn] …` notes, no prettier verdict under them).
    log = "java/gradle-kotlin-jvm-target-mismatch.log"
    assert kinds(rec.ECOSYSTEM, corpus(log, 1520, 1530)) == {}


def test_codespell_findings_and_its_verdict() -> None:
    # tests/triage/real/lint/gpt4all-codespell-container-action.log, 193-206.
    log = "lint/gpt4all-codespell-container-action.log"
    assert failures(rec.ECOSYSTEM, corpus(log, 193, 206)) == {
        204: "./gpt4all-chat/src/database.cpp:1242",
        205: "./gpt4all-chat/src/database.cpp:1262",
    }
    assert kinds(rec.ECOSYSTEM, corpus(log, 193, 206))[206] == "lint-summary"


def test_an_arrow_that_is_not_a_spelling_fix() -> None:
    # Control: tests/triage/real/actions/spark-download-artifact-dockerbuild-not-zip.log,
    # 61-70 (`==> Repository: apache/spark`, the download action's report).
    log = "actions/spark-download-artifact-dockerbuild-not-zip.log"
    assert kinds(rec.ECOSYSTEM, corpus(log, 61, 70)) == {}


def test_markdownlint_finding_and_summary() -> None:
    # tests/triage/real/lint/wtfpython-markdownlint-md042.log, 135-140; the action's
    # `Failed with exit code: 1` (140) is not a finding.
    log = "lint/wtfpython-markdownlint-md042.log"
    got = found(rec.ECOSYSTEM, corpus(log, 135, 140))
    assert got == {
        138: ("lint-summary", ""),
        139: ("markdownlint-finding", "../../_temp/diff.md:6:2"),
    }
