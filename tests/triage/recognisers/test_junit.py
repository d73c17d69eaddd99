# ruff: noqa: E501  (real log lines are kept whole)
"""JUnit under Ant, and JUnit XML reports shown in a log."""

from __future__ import annotations

from landbot.triage.recognisers import junit as rec

from .conftest import failures, kinds, pasted

# `ant test` output pasted in UCSB-CS56-pconrad/UCSB-CS56-pconrad.github.io,
# _tutorials/rational_ex09.md (its indentation as stored).
ANT = """\
    [junit] Testsuite: RationalTest
        [junit] Tests run: 34, Failures: 8, Errors: 0, Skipped: 0, Time elapsed: 0.043 sec
\t    [junit]
\t        [junit] Testcase: test_equals_1(RationalTest):\tFAILED
\t\t    [junit]
\t\t        [junit] junit.framework.AssertionFailedError:
\t\t\t    [junit]\tat RationalTest.test_equals_1(RationalTest.java:170)"""

# Passing test cases under Ant: `ant systemtest` output quoted in a lab handout (a stored
# public file, the code index's file id 4583065133; it names no repository).
ANT_PASSING = """\
    [junit] Testsuite: simpledb.systemtest.ScanTest
    [junit] Tests run: 3, Failures: 0, Errors: 0, Time elapsed: 7.278 sec
    [junit] Tests run: 3, Failures: 0, Errors: 0, Time elapsed: 7.278 sec
    [junit] \n    [junit] Testcase: testSmall took 0.937 sec
    [junit] Testcase: testLarge took 5.276 sec
    [junit] Testcase: testRandom took 1.049 sec"""

# rogertime/maven-utplsql-plugin, SurefireXMLOutput.md ("Sample Surefire XML Output").
XML = """\
   <testcase classname=".ut_setup" name="Migration Started" time="0"></testcase>
   <testcase classname=".ut_setup" name="Check Migration Outcome" time="0"></testcase>
   <testcase classname="TestPkg.UT_ADDCANCELLED" name="Check Pending Status Position for  Migration  add cancelled  14" time="0"></testcase>
   <testcase classname="TestPkg.UT_2MSVACTIVECANCELLED" name="Unable to run ut_TestPkg.UT_2MSVACTIVECANCELLED" time="0">
       <failure type="Assert Type Unknown" message="ORA-06533 Subscript beyond count"/>
   </testcase>"""


def test_ant_testcase_failed() -> None:
    got = failures(rec.ECOSYSTEM, pasted(ANT))
    assert got == {4: "RationalTest.test_equals_1"}
    assert kinds(rec.ECOSYSTEM, pasted(ANT))[2] == "junit-summary"


def test_ant_passing_cases_are_not_marked() -> None:
    assert kinds(rec.ECOSYSTEM, pasted(ANT_PASSING)) == {}


def test_xml_testcase_with_a_failure() -> None:
    got = failures(rec.ECOSYSTEM, pasted(XML))
    assert got == {
        4: "TestPkg.UT_2MSVACTIVECANCELLED.Unable to run ut_TestPkg.UT_2MSVACTIVECANCELLED"
    }
    assert kinds(rec.ECOSYSTEM, pasted(XML))[5] == "junit-xml-failure"
