"""The generic rules (generic.py) and the baseline comparison (compare.py), each with a
control. The tools in these logs are made up: no recogniser knows them, so the lines come
from the rules alone, whatever the ecosystem."""

from __future__ import annotations

from landbot.triage.baseline import read_baseline
from landbot.triage.explain import LogExplanation, explain_log

from .conftest import gh_log, run_step

EXIT1 = "##[error]Process completed with exit code 1."


def explain(*lines: str) -> LogExplanation:
    return explain_log(gh_log(list(lines)))


def number(data: list[str], text: str) -> int:
    """The 1-based line of `text` in a log made of `data`."""
    return data.index(text) + 1


# --- the last words before the exit ---------------------------------------------------------


def test_the_last_words_before_the_exit_are_the_error_line() -> None:
    out = [
        "frob 2.1 checking 14 manifests",
        "manifest web.yaml: replicas must be an integer, got 'three'",
        "checked 14 manifests in 0.4s",
    ]
    log = run_step("frob check", *out, EXIT1)
    e = explain(*log)
    assert e.error_lines == (number(log, out[1]),)
    assert e.error_lines[0] in {x.line for x in e.excerpt}


def test_the_last_words_are_found_over_the_wrappers_stacked_on_the_exit() -> None:
    out = [
        "frob: cannot open ./site/index.tmpl: no such template",
        "make[1]: *** [Makefile:12: site] Error 2",
        "make: *** [Makefile:3: all] Error 2",
    ]
    log = run_step("make all", *out, EXIT1)
    assert explain(*log).error_lines == (number(log, out[0]),)


def test_control_last_words_without_a_word_of_failure_are_shown_not_reported() -> None:
    # Control: lines that say nothing went wrong are context; the exit line stays the
    # error line, and they are in the excerpt.
    out = ["frob published 3 packages", "  web 1.2", "  api 1.3"]
    log = run_step("frob publish", *out, EXIT1)
    e = explain(*log)
    assert e.error_lines == (len(log),)
    assert number(log, out[2]) in {x.line for x in e.excerpt}


def test_a_ci_housekeeping_line_is_not_the_last_words() -> None:
    text = (
        "Started\n$ frob check\nmanifest web.yaml: replicas must be an integer\n"
        "Uploading artifacts for failed job\n"
        "Cleaning up project directory and file based variables\n"
        "ERROR: Job failed: exit code 1\n"
    )
    e = explain_log(text.encode())
    assert e.error_lines == (3,)


def test_control_a_step_that_says_nothing_keeps_the_exit_line() -> None:
    # Control: no output at all, nothing before it: the exit line is all there is.
    log = run_step("false", EXIT1)
    assert explain(*log).error_lines == (len(log),)


def test_a_diff_that_ends_the_step_is_answered_with_its_header_and_first_change() -> None:
    diff = [
        "diff --git a/src/frob.c b/src/frob.c",
        "index 3fa9c0d..e1b2c3d 100644",
        "--- a/src/frob.c",
        "+++ b/src/frob.c",
        "@@ -1,3 +1,3 @@",
        " int main(void) {",
        "-  return frob(1,2);",
        "+  return frob(1, 2);",
        " }",
    ]
    log = run_step("git diff --exit-code", *diff, EXIT1)
    e = explain(*log)
    assert e.error_lines == (number(log, diff[0]), number(log, diff[6]))


def test_control_output_that_is_not_a_diff_is_not_read_as_one() -> None:
    out = ["- item one", "- item two", "frob: 2 items are not sorted, cannot go on"]
    log = run_step("frob lint", *out, EXIT1)
    assert explain(*log).error_lines == (number(log, out[2]),)


# --- FAIL / ERROR headers and the message under them ----------------------------------------


def test_a_failure_header_and_the_message_under_it() -> None:
    # Far enough above the end that the last words do not reach it.
    out = [
        "running 3 checks",
        "FAILED check_totals",
        "    expected total 10, got 12",
        "    at ledger.frob:41",
        *(f"check {i} ok" for i in range(20)),
    ]
    log = run_step("frob test", *out, EXIT1)
    e = explain(*log)
    assert number(log, out[1]) in e.error_lines
    assert number(log, out[2]) in e.error_lines
    shown = {x.line for x in e.excerpt}
    assert {number(log, out[1]), number(log, out[2])} <= shown


def test_only_the_first_of_a_cascade_of_the_same_shape_is_reported() -> None:
    cascade = [f"FATAL frob: could not resolve symbol sym_{i}" for i in range(30)]
    log = run_step("frob build", "building", *cascade, "frob: giving up", EXIT1)
    e = explain(*log)
    assert number(log, cascade[0]) in e.error_lines
    assert not {number(log, line) for line in cascade[1:]} & set(e.error_lines)
    assert len(e.error_lines) <= 8


def test_control_headers_of_different_shapes_are_each_reported() -> None:
    out = [
        "FATAL frob: could not resolve symbol a",
        "FAILED check_totals",
        "all done",
    ]
    log = run_step("frob build", *out, EXIT1)
    e = explain(*log)
    assert {number(log, out[0]), number(log, out[1])} <= set(e.error_lines)


def test_the_generic_rules_stand_aside_when_a_recogniser_names_the_failure() -> None:
    # pytest's recogniser names the failure: a stray `Error:` line is not reported.
    out = [
        "Error: the frob cache is cold (harmless)",
        "FAILED tests/test_a.py::test_total - assert 12 == 10",
        "==== 1 failed, 3 passed in 0.20s ====",
    ]
    log = run_step("pytest", *out, EXIT1)
    e = explain(*log)
    assert number(log, out[1]) in e.error_lines
    assert number(log, out[0]) not in e.error_lines


# --- a log with no step headers (another CI) --------------------------------------------------


JENKINS = """Started by user admin
[Pipeline] Start of Pipeline
[Pipeline] sh
+ ./frob deploy --check
frob 2.1
checking 4 targets
target staging: certificate expired on 2026-10-01
[Pipeline] }
[Pipeline] // stage
[Pipeline] End of Pipeline
ERROR: script returned exit code 3
Finished: FAILURE
"""

BUILDKITE = """~~~ Running commands
$ ./frob bundle
bundling 12 assets
frob: asset logo.svg exceeded the 64 KB budget
🚨 Error: The command exited with status 1
"""


def test_a_plain_log_from_another_ci_is_one_step_answered_with_lines() -> None:
    for text, line in ((JENKINS, 7), (BUILDKITE, 4)):
        e = explain_log(text.encode())
        assert e.class_ == "genuine"
        assert e.step is None
        assert e.error_lines == (line,), text
        assert line in {x.line for x in e.excerpt}


def test_control_a_plain_log_that_ends_well_is_unknown() -> None:
    e = explain_log(
        b"Started by user admin\n+ ./frob deploy\ndeployed 4 targets\nFinished: SUCCESS\n"
    )
    assert e.class_ == "unknown" and e.error_lines == ()


# --- a cause printed by an earlier step -------------------------------------------------------


def test_a_step_that_prints_nothing_is_explained_by_the_step_before_it() -> None:
    build = [
        "compiling 3 modules",
        "warning: no files matched dist/*.whl, nothing packaged",
        "done",
    ]
    log = [*run_step("./build.sh", *build), *run_step("test -f dist/app.whl", EXIT1)]
    e = explain(*log)
    assert e.error_lines == (number(log, build[1]),)
    assert number(log, build[1]) in {x.line for x in e.excerpt}


def test_an_earlier_warning_the_baseline_shows_too_is_not_the_cause() -> None:
    build = ["compiling 3 modules", "warning: frob is deprecated, use frob2", "done"]
    log = [*run_step("./build.sh", *build), *run_step("test -f dist/app.whl", EXIT1)]
    passing = run_step("./build.sh", *build)
    alone = explain(*log)
    compared = explain_log(gh_log(log), baselines=[read_baseline(gh_log(passing))])
    assert alone.error_lines == (number(log, build[1]),)  # control: alone, the warning
    assert compared.error_lines == (len(log),)


def test_control_a_step_that_prints_its_own_cause_keeps_it() -> None:
    build = ["compiling 3 modules", "warning: no files matched dist/*.whl, nothing packaged"]
    own = "test: dist/app.whl: no such file"
    log = [*run_step("./build.sh", *build), *run_step("./check.sh", own, EXIT1)]
    e = explain(*log)
    assert e.error_lines == (number(log, own),)


# --- the baseline -----------------------------------------------------------------------------


def test_a_baseline_drops_the_recognisers_line_it_shows_too() -> None:
    # A test runner's failure line printed by the green run too (a known-flaky test that
    # passed on retry there) is not why this run failed; the new one is.
    common = ["FAILED tests/test_net.py::test_dns - retried", "==== summary ===="]
    new = "FAILED tests/test_a.py::test_total - assert 12 == 10"
    fail = run_step("pytest", common[0], new, EXIT1)
    passing = run_step("pytest", common[0], "==== 40 passed ====")
    alone = explain(*fail)
    compared = explain_log(gh_log(fail), baselines=[read_baseline(gh_log(passing))])
    assert compared.error_lines == (number(fail, new),)
    assert number(fail, common[0]) in alone.error_lines  # control: alone, both lines


def test_a_baseline_skips_the_generic_rules_lines_it_shows_too() -> None:
    out = ["FATAL frob cache is cold (harmless)", "frob: 2 targets failed to link"]
    fail = run_step("frob build", *out, EXIT1)
    passing = run_step("frob build", out[0], "frob: all targets linked")
    alone = explain(*fail)
    compared = explain_log(gh_log(fail), baselines=[read_baseline(gh_log(passing))])
    assert number(fail, out[0]) in alone.error_lines  # control
    assert compared.error_lines == (number(fail, out[1]),)


def test_a_baseline_that_shows_every_line_changes_nothing() -> None:
    out = ["Error: frob cache is cold", "frob: 2 targets failed to link"]
    fail = run_step("frob build", *out, EXIT1)
    same = run_step("frob build", *out)
    compared = explain_log(gh_log(fail), baselines=[read_baseline(gh_log(same))])
    assert compared.error_lines == explain(*fail).error_lines
