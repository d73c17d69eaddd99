"""The excerpt: what explains the error, bounded, most telling lines first, in file order."""

from __future__ import annotations

from pathlib import Path

from landbot.triage import explain_log, parse_log
from landbot.triage.context import EXCERPT_LINES, EXCERPT_TEXT, FAILURE_KINDS, find_marks
from landbot.triage.explain import LogExplanation

from .conftest import gh_log, run_step

EXIT1 = "##[error]Process completed with exit code 1."


def kinds(*output: str) -> dict[int, str]:
    parsed = parse_log(gh_log(run_step("t", *output)))
    return {m.line: m.kind for m in find_marks(parsed)}


def test_pytest_lines_are_recognized() -> None:
    got = kinds(
        "_____ test_x _____",
        ">       assert 1 == 2",
        "E       assert 1 == 2",
        "tests/test_a.py:3: AssertionError",
        "=========== short test summary info ===========",
        "FAILED tests/test_a.py::test_x - assert 1 == 2",
        "=========== 1 failed, 2 passed in 0.1s ===========",
        EXIT1,
    )
    assert got == {
        1: "step",  # the step's `Run …` header: the command that ran
        5: "pytest-test",
        7: "pytest-error",  # the first E line of its block states the failure
        8: "pytest-location",
        9: "pytest-summary",
        10: "pytest-failed",
        11: "pytest-result",
        12: "error",
    }


def test_a_traceback_keeps_its_header_last_frame_and_exception() -> None:
    got = kinds(
        "starting",
        "Traceback (most recent call last):",
        '  File "/a.py", line 1, in <module>',
        "    f()",
        '  File "/b.py", line 9, in f',
        "    raise KeyError(k)",
        "KeyError: 'price'",
        EXIT1,
    )
    assert got[6] == "traceback"
    assert got[9] == "traceback" and got[10] == "traceback"
    assert got[11] == "traceback-exception"
    assert 7 not in got and 8 not in got  # the middle frames are left out


def test_plain_output_above_the_error_explains_an_unknown_tool() -> None:
    output = [f"line {i}" for i in range(20)]
    e = explain_log(gh_log(run_step("./build.sh", *output, "fatal: cannot frobnicate", EXIT1)))
    shown = [x.line for x in e.excerpt]
    error = 5 + len(output) + 1
    # The generic rules (generic.py) name the tool's last words: the step's header, two
    # lines above them, them, and the exit line; a short answer.
    assert e.error_lines == (error - 1,)
    assert shown == [1, *range(error - 3, error + 1)]
    assert e.summary == (
        "step 'Run ./build.sh' failed with exit code 1 after: fatal: cannot frobnicate; "
        "reproduce the step locally and fix it"
    )


def test_excerpt_is_bounded_and_keeps_the_decisive_lines() -> None:
    failures = [f"FAILED tests/test_a.py::test_{i} - assert {i}" for i in range(200)]
    details = [f"E       assert {i} == -1" for i in range(200)]
    e = explain_log(gh_log(run_step("pytest", *details, *failures, EXIT1)))
    assert len(e.excerpt) == EXCERPT_LINES
    shown = [x.line for x in e.excerpt]
    assert shown == sorted(shown)
    error = 5 + 400
    assert error in shown  # the ##[error] line and the evidence are always kept
    assert e.evidence[0].line in shown
    # The first failure's E lines and the last one's come first; then the names of the
    # failures outrank every other E line.
    details_shown = [x.line for x in e.excerpt if x.text.startswith("E ")]
    assert 5 in details_shown and 204 in details_shown and len(details_shown) <= 3
    names = [x for x in e.excerpt if x.text.startswith("FAILED")]
    assert len(names) == EXCERPT_LINES - len(details_shown) - 1
    assert names[0].line == 205 and names[-1].line == 404  # the first and the last
    assert e.summary.startswith("200 tests failed in step 'Run pytest': tests/test_a.py::test_0")
    assert "(and 199 more)" in e.summary


def test_error_lines_are_bounded() -> None:
    failures = [f"FAILED tests/test_a.py::test_{i}" for i in range(200)]
    e = explain_log(gh_log(run_step("pytest", *failures, EXIT1)))
    assert len(e.error_lines) == 50
    assert e.error_lines == tuple(range(5, 55))


def test_long_lines_are_shortened_in_the_excerpt() -> None:
    e = explain_log(gh_log(run_step("x", "y" * 10_000, EXIT1)))
    long = next(x for x in e.excerpt if x.line == 5)
    assert len(long.text) == EXCERPT_TEXT and long.text.endswith("…")


def test_summary_is_one_bounded_line() -> None:
    e = explain_log(gh_log(run_step("x", "FAILED tests/a.py::t - " + "why " * 500, EXIT1)))
    assert "\n" not in e.summary and len(e.summary) <= 300


# --- on real logs (tests/triage/real/, each cited in its folder's SOURCES.md) ----------

REAL = Path(__file__).parent / "real"


def explain_real(path: str) -> LogExplanation:
    with (REAL / path).open("rb") as fh:
        return explain_log(fh)


def test_the_exit_code_is_an_error_line_only_when_nothing_better_names_the_failure() -> None:
    # llama-index: pre-commit's `black-src....Failed` (431) names the failure; the
    # `Process completed with exit code 2` (559) and make's wrapper (558) do not.
    e = explain_real("python/llama-index-make-lint-precommit.log")
    assert 431 in e.error_lines and 559 not in e.error_lines and 558 not in e.error_lines
    assert 559 in {x.line for x in e.excerpt}  # still shown
    # Control: vault's `Run false` prints nothing else, so its exit code is an error line
    # (with the classifier's evidence, when it found a policy check).
    assert 46 in explain_real("go/vault-milestone-check-policy.log").error_lines


def test_a_message_annotated_twice_is_reported_once() -> None:
    # gradle-android-lint: the problem matcher annotates the lint message at 1585, then
    # again in Gradle's exception text (1612) and stack trace (1698).
    e = explain_real("java/gradle-android-lint-missing-uses-feature.log")
    assert 1585 in e.error_lines
    assert 1612 not in e.error_lines and 1698 not in e.error_lines


def test_an_uncaught_error_counts_only_when_no_test_failed() -> None:
    # n8n cypress: mocha names the failed test (541); Cypress's video error (621) is not it.
    e = explain_real("javascript/n8n-cypress-e2e-no-error-annotation.log")
    assert 541 in e.error_lines and 621 not in e.error_lines
    # Control: htmx has no test failure, and the uncaught ECONNREFUSED is the failure.
    assert {169, 177} <= set(explain_real("javascript/htmx-npm-test-econnrefused.log").error_lines)


def test_an_error_the_script_went_on_after_is_not_the_failure() -> None:
    # nvm rebase: `git branch -D Main` fails (248) and the `set -x` script goes on
    # (`+ echo 'Main did not exist already'`); the rebase conflict (264, 266) stops it.
    e = explain_real("shell-lint/nvm-rebase-container-action-conflict.log")
    assert 248 not in e.error_lines and {264, 266} <= set(e.error_lines)
    assert 262 in {x.line for x in e.excerpt}  # `+ git rebase …`, the command that failed


def test_the_step_input_the_failure_names_is_shown() -> None:
    # meilisearch: `gh` asks for GH_TOKEN; the step's env shows it empty (552).
    e = explain_real("rust/meilisearch-db-label-check-no-gh-token.log")
    assert 552 in {x.line for x in e.excerpt}
    # docker: `no match for platform in manifest`; the action's `platforms:` input (665).
    shown = {
        x.line for x in explain_real("docker/buildx-node-lts-slim-no-arm-v7-manifest.log").excerpt
    }
    assert 665 in shown


def test_repeated_failures_do_not_crowd_out_the_locations() -> None:
    # uv cargo build: 45 rustc errors, most the same two texts; the excerpt keeps the
    # first error's `-->` location (359), the second kind's (374) and cargo's total (1064).
    e = explain_real("rust/uv-cargo-build-e0593.log")
    assert len(e.excerpt) <= EXCERPT_LINES
    assert {358, 359, 373, 374, 1064} <= {x.line for x in e.excerpt}


def test_failed_tests_are_named_for_the_ledger() -> None:
    e = explain_real("python/markitdown-hatch-pytest.log")
    assert e.failed_tests[0] == "tests/test_cli_vectors.py::test_output_to_stdout[test_vector6]"
    assert len(e.failed_tests) == 8
    go = explain_real("go/terraform-go-unit-tests-fail.log")
    assert (
        "github.com/hashicorp/terraform/internal/command/views.TestJSONHook_EphemeralOp_progress"
        in go.failed_tests
    )


def test_passing_tests_output_is_not_marked() -> None:
    # ruff's wasm-pack fragment: three `test … ... ok` lines and `test result: ok.`.
    parsed = parse_log((REAL / "rust/ruff-wasm-pack-runner-shutdown-fragment.log").read_bytes())
    assert {m.line for m in find_marks(parsed) if m.kind in FAILURE_KINDS} & {3, 4, 5, 7} == set()


def test_a_test_named_again_is_one_failure() -> None:
    # uv nextest: the failure (2380) and nextest's end-of-run recap of it (3121).
    e = explain_real("rust/uv-windows-nextest-access-violation.log")
    assert e.failed_tests == ("uv::it workspace::workspace_lock_idempotence_virtual_workspace",)
    kinds = {
        m.line: m.kind
        for m in find_marks(
            parse_log((REAL / "rust/uv-windows-nextest-access-violation.log").read_bytes())
        )
    }
    assert kinds[2380] == "nextest-failed" and kinds[3121] == "test-repeat"


def test_many_failures_leave_room_for_the_first_ones_story() -> None:
    # zip (dioxus) clippy: 265 rustc errors. The first error (2719), its `-->` location
    # (2720) and cargo's verdict (6806) are shown before the 263 errors between.
    e = explain_real("rust/zip-dioxus-clippy-265-errors.log")
    shown = {x.line for x in e.excerpt}
    assert {2719, 2720, 6806, 6809} <= shown
    assert len(shown) <= EXCERPT_LINES
    # grafana jest: 78 failed files; the first one's `SyntaxError` (326) and jest's total
    # (9619) are shown.
    shown = {
        x.line
        for x in explain_real("javascript/grafana-jest-esm-pbf-unexpected-export.log").excerpt
    }
    assert {297, 298, 326, 9619} <= shown


def test_the_last_of_a_kind_is_shown_even_as_a_repeat() -> None:
    # n8n jest: the messages under the first `●` (866) and under the last, in jest's
    # "Summary of all failing tests" (4862, the same text as 4611): the run's last word.
    e = explain_real("javascript/n8n-mariadb-insights-hook-timeout.log")
    shown = {x.line for x in e.excerpt}
    assert {863, 866, 4862, 4876} <= shown
    # A repeat in the middle is not worth a line while others wait: 4626, 4641 … (the
    # same message under the other `●`s before the summary) are left out.
    assert not {4626, 4641, 4656} & shown


def test_a_line_that_introduces_the_errors_is_shown() -> None:
    # genai-beginners markdown-checker: `😭 Found 39 issues in the following files:` (563)
    # above 39 `##[error]` lines; the line above it (562) is not.
    e = explain_real("docs/genai-beginners-broken-urls-composite.log")
    shown = {x.line for x in e.excerpt}
    assert 563 in shown and 562 not in shown


def test_an_error_in_a_cleanup_group_is_a_consequence() -> None:
    # retrofit android-emulator-runner: installing the emulator failed (333); the action's
    # `##[group]Terminate Emulator` (335) then fails to reach it (337, 338): shown, never
    # an error line.
    e = explain_real("runner/retrofit-android-emulator-package-zip-error.log")
    assert not {337, 338} & set(e.error_lines)
    assert {333, 337} <= {x.line for x in e.excerpt}
    parsed = parse_log(
        (REAL / "runner/retrofit-android-emulator-package-zip-error.log").read_bytes()
    )
    kinds = {m.line: m.kind for m in find_marks(parsed)}
    assert kinds[337] == "cleanup" and kinds[338] == "cleanup"


def test_an_error_in_a_working_group_still_counts() -> None:
    # Control: netdata's installer runs the build in `##[group]Building Netdata.`; the
    # compiler's error there (3438) and ninja's `FAILED:` (3435) stay error lines.
    e = explain_real("cpp/netdata-gcc-lto-always-inline.log")
    assert {3435, 3438} <= set(e.error_lines)


def test_npm_publish_output_is_not_an_xtrace_line() -> None:
    # tailwindcss pnpm publish: `+ @tailwindcss/oxide-linux-x64-musl@0.0.0-insiders…` (1397)
    # is what npm published, not a `set -x` command; pnpm's error (1400) is the failure.
    parsed = parse_log((REAL / "javascript/tailwindcss-pnpm-publish-bundled-deps.log").read_bytes())
    kinds = {m.line: m.kind for m in find_marks(parsed)}
    assert kinds.get(1397) != "xtrace" and kinds[1400] == "npm-error"
    # Control: nvm's `+ git rebase …` (262) is a `set -x` command and stays one.
    parsed = parse_log((REAL / "shell-lint/nvm-rebase-container-action-conflict.log").read_bytes())
    assert {m.line: m.kind for m in find_marks(parsed)}[262] == "xtrace"


def test_the_message_indented_under_a_cmake_error_goes_with_it() -> None:
    # Two CMake errors pasted in a stored public file (the code index's file id
    # 66971126880): each message line indented under its error explains it.
    e = explain_log(
        gh_log(
            run_step(
                "cmake -S . -B build-negative",
                "CMake Error at CMakeLists.txt:17 (find_package):",
                "  find_package for module OpenCASCADE called with REQUIRED, but",
                "  CMAKE_DISABLE_FIND_PACKAGE_OpenCASCADE is enabled.",
                "CMake Error at CMakeLists.txt:20 (message):",
                "  OpenCASCADE was not discovered by find_package(OpenCASCADE)",
                "-- Configuring incomplete, errors occurred!",
                EXIT1,
            )
        )
    )
    kinds = {m.line: m.kind for m in find_marks(e.parsed)} if e.parsed else {}
    assert [kinds[n] for n in range(5, 11)] == [
        "cmake-error",
        "detail",
        "detail",
        "cmake-error",
        "detail",
        "cmake-incomplete",
    ]
    assert e.error_lines == (5, 8)
