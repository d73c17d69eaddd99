# ruff: noqa: E501  (real log lines are kept whole)
"""Maven Surefire: the failed test as package.Class.method, results, goal failures."""

from __future__ import annotations

from landbot.triage.recognisers import maven as rec

from .conftest import failures, kinds, pasted

# mvn output pasted in ajohnstonTE/surefire-jira-examples, junit-assertions-fail/README.md
# (section "b) mvn -q -Dtest=JUnit4Test test").
SUREFIRE = """\
[ERROR] Tests run: 2, Failures: 2, Errors: 0, Skipped: 0, Time elapsed: 0.01 s <<< FAILURE! - in JUnit4Test
[ERROR] JUnit4Test.failWithNonEmptyParameters  Time elapsed: 0.002 s  <<< FAILURE!
java.lang.AssertionError: not empty
        at JUnit4Test.failWithNonEmptyParameters(JUnit4Test.java:19)

[ERROR] JUnit4Test.failWithNoParameters  Time elapsed: 0 s  <<< FAILURE!
java.lang.AssertionError
        at JUnit4Test.failWithNoParameters(JUnit4Test.java:11)

[ERROR] Failures:
[ERROR]   JUnit4Test.failWithNoParameters:11
[ERROR]   JUnit4Test.failWithNonEmptyParameters:19 not empty
[ERROR] Tests run: 2, Failures: 2, Errors: 0, Skipped: 0
[ERROR] Failed to execute goal org.apache.maven.plugins:maven-surefire-plugin:3.0.0-M4:test (default-test) on project junit-assertions-fail: There are test failures."""

# Surefire 2 prints `method(Class)` and no level: a surefire 2.12.4 run quoted in a stored
# public file (a code search result that names no repository), its test line as printed.
OLD_STYLE = "testGeronimo(LastTest)  Time elapsed: 0.005 sec  <<< FAILURE!"

# A passing class: the line peterdemaeyer/supernova-parent's
# src/integration-test/maven/failsafe-inclusions/verify.groovy expects in its build.log.
PASSING = "[INFO] Tests run: 1, Failures: 0, Errors: 0, Skipped: 0"


def test_failed_tests_and_results() -> None:
    got = failures(rec.ECOSYSTEM, pasted(SUREFIRE))
    assert got[2] == "JUnit4Test.failWithNonEmptyParameters"
    assert got[6] == "JUnit4Test.failWithNoParameters"
    assert got[11] == "JUnit4Test.failWithNoParameters:11"
    marks = kinds(rec.ECOSYSTEM, pasted(SUREFIRE))
    assert marks[1] == "surefire-class" and marks[13] == "surefire-summary"
    assert marks[14] == "maven-goal-failed"  # a wrapper: error line only as a fallback
    assert "maven-goal-failed" in rec.ECOSYSTEM.wrapper_kinds


def test_surefire_2_names_the_same_way() -> None:
    got = failures(rec.ECOSYSTEM, pasted(OLD_STYLE))
    assert got == {1: "LastTest.testGeronimo"}


def test_a_passing_summary_is_not_marked() -> None:
    assert kinds(rec.ECOSYSTEM, pasted(PASSING)) == {}
