"""JUnit XML reports (triage/junit.py): real reports of each dialect read into failed tests
named as the log's recognisers name them; hostile input refused with a reason, each
refusal beside a control that a good file of the same shape passes."""

from __future__ import annotations

import io
import stat
import zipfile

import pytest

from landbot.triage.junit import (
    FailedTest,
    ReportLimits,
    identity,
    new_budget,
    parse_report,
    reports_in_zip,
)

from .conftest import FIXTURES

JUNIT = FIXTURES / "junit"


def real(name: str) -> bytes:
    return (JUNIT / name).read_bytes()


def failed(name: str) -> list[tuple[str, str]]:
    report = parse_report(real(name), name)
    assert report.refused == ""
    return [(t.test, t.message) for t in report.failed]


def zipped(files: dict[str, bytes], method: int = zipfile.ZIP_DEFLATED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", method) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


GOOD = (
    b'<?xml version="1.0"?><testsuite name="s">'
    b'<testcase classname="pkg.ATest" name="ok"/>'
    b'<testcase classname="pkg.ATest" name="bad"><failure message="boom">trace</failure>'
    b"</testcase></testsuite>"
)


# --- real reports, one per dialect ------------------------------------------------------------


def test_pytest_xunit2_names_node_ids_and_messages() -> None:
    report = parse_report(real("pytest-xunit2.xml"))
    assert [(t.test, t.message, t.kind) for t in report.failed] == [
        ("tests/test_lib.py::test_always_fail", "assert False", "failure"),
        ("tests/test_lib.py::test_error", "Exception: error", "failure"),
    ]
    assert (report.tests, report.skipped, report.flaky, report.truncated) == (10, 2, (), False)
    assert report.failed[0].text.startswith("def test_always_fail():")
    assert report.failed[0].text.endswith("tests/test_lib.py:25: AssertionError")


def test_pytest_a_unittest_class_is_a_node_id_class() -> None:
    assert failed("pytest-tb-short.xml") == [
        ("product_changes/tests/first_test.py::MyTestCase::test_something", "assert False")
    ]


def test_surefire_names_class_dot_method_with_the_assertion() -> None:
    assert failed("surefire-CalcUtilsTest.xml") == [
        (
            "action.surefire.report.calc.CalcUtilsTest.test error handling",
            "unexpected exception type thrown; expected:<java.lang.IllegalStateException> "
            "but was:<java.lang.IllegalArgumentException>",
        ),
        (
            "action.surefire.report.calc.CalcUtilsTest.test scale",
            "Expected: <100.10> but: was <100.11>",
        ),
    ]


def test_surefire_text_is_bounded_and_properties_are_not_kept() -> None:
    report = parse_report(real("surefire-FailingTest.xml"))
    assert [t.test for t in report.failed] == [
        "org.apache.maven.surefire.test.FailingTest.defaultTestValueIs_Value",
        "org.apache.maven.surefire.test.FailingTest.setTestAndRetrieveValue",
    ]
    assert all(len(t.text) <= ReportLimits().max_text for t in report.failed)
    assert report.failed[0].text.endswith("…")


def test_surefire_a_test_that_passed_on_a_rerun_is_flaky_not_failed() -> None:
    report = parse_report(real("surefire-FlakyTest.xml"))
    assert report.failed == ()
    assert report.flaky == ("org.acme.FlakyTest.testFlaky",)
    assert report.tests == 2


def test_surefire_rerun_failures_stay_failed() -> None:
    # Surefire's shape for a test that failed its first run and every rerun (no real
    # report of it was found: SOURCES.md).
    xml = (
        b'<testsuite name="com.x.ATest" tests="1" failures="1">'
        b'<testcase name="always" classname="com.x.ATest" time="0.2">'
        b'<failure message="expected 1" type="java.lang.AssertionError">trace 1</failure>'
        b'<rerunFailure message="expected 1" type="java.lang.AssertionError">'
        b"<stackTrace>trace 2</stackTrace></rerunFailure>"
        b"</testcase></testsuite>"
    )
    report = parse_report(xml)
    assert [(t.test, t.message, t.text) for t in report.failed] == [
        ("com.x.ATest.always", "expected 1", "trace 1")
    ]
    assert report.flaky == ()


def test_gradle_drops_junit5_parentheses_as_the_log_recogniser_does() -> None:
    [(test, message)] = failed("gradle-spring-failure.xml")
    assert test == (
        "com.victor.paymentreporting.app.PowerDroidControllerTest"
        ".failsToDemonstrateJUnitAnnotations"
    )
    assert message.startswith(
        'java.lang.AssertionError: Response content Expected: a string containing "NOT_GONK"'
    )


def test_go_junit_report_names_package_dot_test_and_the_first_output_line() -> None:
    assert failed("go-junit-report-001.xml") == [
        ("package/fail.TestOne", "fail_test.go:6: Error message")
    ]
    assert failed("go-junit-report-017-race.xml") == [
        ("package/race.TestRace", "race_test.go:13: x = 3")
    ]
    assert parse_report(real("go-junit-report-001.xml")).skipped == 2


def test_jest_junit_names_file_suite_and_test() -> None:
    names = [t for t, _ in failed("jest-junit.xml")]
    assert names == [
        "__tests__/main.test.js > Test 1 › Test 1.1 › Failing test",
        "__tests__/main.test.js > Test 1 › Test 1.1 › Exception in target unit",
        "__tests__/main.test.js > Test 2 › Exception in test",
        "__tests__/second.test.js > Timeout test",
    ]
    assert failed("jest-junit.xml")[0][1] == "Error: expect(received).toBeTruthy()"


def test_every_real_report_reads_inside_a_zip() -> None:
    files = {f"reports/{p.name}": p.read_bytes() for p in sorted(JUNIT.glob("*.xml"))}
    files["reports/README.md"] = b"not a report"
    reports, skipped = reports_in_zip(zipped(files))
    assert skipped == []
    assert sorted(r.name for r in reports) == sorted(n for n in files if n.endswith(".xml"))
    assert all(r.refused == "" for r in reports)
    assert sum(len(r.failed) for r in reports) == 14


@pytest.mark.parametrize(
    ("classname", "name", "file", "dialect", "expected"),
    [
        ("tests.test_a.TestX", "test_b[1-2]", "", "pytest", "tests/test_a.py::TestX::test_b[1-2]"),
        ("tests.test_a", "test_b", "tests/test_a.py", "pytest", "tests/test_a.py::test_b"),
        (
            "tests.test_a.TestX",
            "test_b",
            "tests/test_a.py",
            "pytest",
            "tests/test_a.py::TestX::test_b",
        ),
        ("", "test_b", "", "pytest", "test_b"),
        ("com.x.FooTest", "testBar()", "", "junit", "com.x.FooTest.testBar"),
        ("", "TestAlone", "", "junit", "TestAlone"),
        ("Suite", "Suite works", "src/a.test.ts", "jest", "src/a.test.ts > Suite works"),
    ],
)
def test_identities(classname: str, name: str, file: str, dialect: str, expected: str) -> None:
    assert identity(classname, name, file=file, dialect=dialect) == expected


def test_a_report_listing_each_attempt_calls_a_retried_pass_flaky() -> None:
    xml = (
        b'<testsuite name="pytest">'
        b'<testcase classname="tests.test_a" name="test_x"><failure message="1st"/></testcase>'
        b'<testcase classname="tests.test_a" name="test_x"/>'
        b'<testcase classname="tests.test_a" name="test_y"><failure message="a"/></testcase>'
        b'<testcase classname="tests.test_a" name="test_y"><error message="b"/></testcase>'
        b"</testsuite>"
    )
    report = parse_report(xml)
    assert [(t.test, t.message, t.kind) for t in report.failed] == [
        ("tests/test_a.py::test_y", "a", "failure")
    ]
    assert report.flaky == ("tests/test_a.py::test_x",)


def test_a_namespaced_report_reads() -> None:
    xml = GOOD.replace(b'<testsuite name="s">', b'<testsuite xmlns="http://x/surefire" name="s">')
    assert [t.test for t in parse_report(xml).failed] == ["pkg.ATest.bad"]


# --- hostile input: each refusal beside its control -------------------------------------------


def test_control_the_good_file_reads() -> None:
    report = parse_report(GOOD)
    assert report.failed == (FailedTest("pkg.ATest.bad", "boom", "trace", "failure"),)
    assert report.refused == ""


BILLION_LAUGHS = (
    b'<?xml version="1.0"?><!DOCTYPE testsuite [<!ENTITY lol "lol">'
    + b"".join(
        f'<!ENTITY lol{i} "{("&lol" + (str(i - 1) if i > 1 else "") + ";") * 10}">'.encode()
        for i in range(1, 10)
    )
    + b']><testsuite><testcase classname="a" name="b"><failure message="&lol9;"/>'
    b"</testcase></testsuite>"
)


def test_billion_laughs_is_refused_unexpanded() -> None:
    report = parse_report(BILLION_LAUGHS, "TEST-laughs.xml")
    assert report.refused.startswith("refused: DTDForbidden")
    assert report.failed == ()
    # Control: the same report with its message written out, no DTD, reads.
    body = BILLION_LAUGHS[BILLION_LAUGHS.index(b"]>") + 2 :].replace(b"&lol9;", b"lol")
    assert [(t.test, t.message) for t in parse_report(body).failed] == [("a.b", "lol")]


def test_an_external_entity_is_refused() -> None:
    xxe = GOOD.replace(
        b"<testsuite",
        b'<!DOCTYPE testsuite [<!ENTITY xxe SYSTEM "file:///etc/passwd">]><testsuite',
        1,
    ).replace(b"trace", b"&xxe;")
    report = parse_report(xxe)
    assert report.refused.startswith("refused: ") and "root:" not in repr(report)
    # Control: without the DOCTYPE the same report reads.
    assert [t.test for t in parse_report(GOOD).failed] == ["pkg.ATest.bad"]


def test_a_dtd_alone_is_refused() -> None:
    with_dtd = GOOD.replace(
        b"<testsuite",
        b'<!DOCTYPE testsuite SYSTEM "http://example.invalid/junit.dtd"><testsuite',
        1,
    )
    assert parse_report(with_dtd).refused == "refused: DTDForbidden (no DTD or entity is read)"
    assert parse_report(GOOD).refused == ""  # control: the same report without it


def test_an_oversized_file_is_refused_before_parsing() -> None:
    big = GOOD.replace(b"trace", b"x" * 5000)
    limits = ReportLimits(max_file_bytes=4096)
    assert parse_report(big, limits=limits).refused.endswith("over the cap of 4,096")
    # Control: under the cap, the same file reads (its text cut to the text cap).
    [test] = parse_report(big, limits=ReportLimits(max_file_bytes=8192)).failed
    assert len(test.text) == ReportLimits().max_text


def test_non_xml_is_refused() -> None:
    for junk in (b"\x89PNG\r\n\x1a\n\x00\x00binary", b'{"tests": []}', b"", b"<testsuite>"):
        assert parse_report(junk).refused.startswith("not well-formed XML"), junk


def test_xml_that_is_not_a_report_is_refused() -> None:
    assert parse_report(b"<coverage/>").refused == "not a JUnit report (its root is <coverage>)"


def test_deep_nesting_is_refused() -> None:
    deep = b"<testsuites>" + b"<testsuite>" * 100_000 + b"</testsuite>" * 100_000 + b"</testsuites>"
    assert parse_report(deep).refused == "nested more than 32 elements deep"
    # Control: suites nested a few levels (Gradle, jest) read.
    nested = (
        b"<testsuites>" + b"<testsuite>" * 10 + GOOD[21:] + b"</testsuite>" * 10 + b"</testsuites>"
    )
    assert [t.test for t in parse_report(nested).failed] == ["pkg.ATest.bad"]


def test_test_cases_and_failures_are_capped() -> None:
    cases = b"".join(
        f'<testcase classname="c" name="t{i}"><failure message="m{i}"/></testcase>'.encode()
        for i in range(50)
    )
    xml = b"<testsuite>" + cases + b"</testsuite>"
    few = parse_report(xml, limits=ReportLimits(max_failures=5))
    assert (len(few.failed), few.truncated) == (5, True)
    stopped = parse_report(xml, limits=ReportLimits(max_testcases=10))
    assert (stopped.tests, len(stopped.failed), stopped.truncated) == (10, 10, True)
    assert not parse_report(xml).truncated  # control


def test_a_long_message_is_one_bounded_line() -> None:
    xml = GOOD.replace(b'message="boom"', b'message="' + b"a&#10;&#9;" * 500 + b'"')
    [test] = parse_report(xml).failed
    assert len(test.message) == ReportLimits().max_message
    assert "\n" not in test.message and "\t" not in test.message


# --- hostile zips -----------------------------------------------------------------------------


def test_control_a_good_zip_reads() -> None:
    reports, skipped = reports_in_zip(zipped({"TEST-a.xml": GOOD}))
    assert skipped == [] and [r.failed[0].test for r in reports] == ["pkg.ATest.bad"]


def test_a_zip_bomb_is_skipped_before_inflating() -> None:
    bomb = GOOD.replace(b"trace", b" " * (10 * 1024 * 1024))
    reports, skipped = reports_in_zip(zipped({"TEST-bomb.xml": bomb, "TEST-a.xml": GOOD}))
    assert [r.name for r in reports] == ["TEST-a.xml"]
    [why] = skipped
    assert why.startswith("TEST-bomb.xml: ") and why.endswith("a zip bomb")
    # Control: the same file stored (no compression, nothing to amplify) reads.
    reports, skipped = reports_in_zip(zipped({"TEST-big.xml": bomb}, zipfile.ZIP_STORED))
    assert skipped == [] and len(reports) == 1


def test_an_oversized_entry_is_skipped_before_inflating() -> None:
    big = GOOD.replace(b"trace", b"x" * 5000)
    limits = ReportLimits(max_file_bytes=4096)
    reports, skipped = reports_in_zip(zipped({"TEST-big.xml": big, "TEST-a.xml": GOOD}), limits)
    assert [r.name for r in reports] == ["TEST-a.xml"]
    assert skipped == ["TEST-big.xml: 5,184 bytes inflated, over the cap of 4,096"]
    # Control: under a cap it fits, it reads.
    reports, skipped = reports_in_zip(zipped({"TEST-big.xml": big}))
    assert skipped == [] and reports[0].failed[0].test == "pkg.ATest.bad"


def test_an_entry_that_lies_about_its_size_is_stopped() -> None:
    data = bytearray(zipped({"TEST-a.xml": GOOD}, zipfile.ZIP_STORED))
    # Understate the size in the central directory (and the local header): the read stops
    # one byte past the declared size.
    size = len(GOOD).to_bytes(4, "little")
    smaller = (len(GOOD) - 10).to_bytes(4, "little")
    data = bytearray(bytes(data).replace(size + size, smaller + smaller))
    reports, skipped = reports_in_zip(bytes(data))
    assert reports == []
    assert len(skipped) == 1 and skipped[0].startswith("TEST-a.xml: ")


def test_a_link_in_the_zip_is_not_followed() -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        link = zipfile.ZipInfo("TEST-link.xml")
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        archive.writestr(link, "/etc/passwd")
        archive.writestr("TEST-a.xml", GOOD)
    reports, skipped = reports_in_zip(buffer.getvalue())
    assert [r.name for r in reports] == ["TEST-a.xml"]
    assert skipped == ["TEST-link.xml: a symbolic link"]


def test_not_a_zip_is_skipped() -> None:
    reports, [why] = reports_in_zip(GOOD)
    assert reports == [] and why.startswith("not a zip file")


def test_caps_across_the_artifacts_of_a_run() -> None:
    limits = ReportLimits(max_files=3)
    budget = new_budget(limits)
    many = zipped({f"TEST-{i}.xml": GOOD for i in range(5)})
    reports, skipped = reports_in_zip(many, limits, budget=budget)
    assert len(reports) == 3 and skipped == ["more than 3 XML files: the rest not read"]
    # The next artifact of the same run shares the budget: nothing more is read.
    reports, _ = reports_in_zip(zipped({"TEST-x.xml": GOOD}), limits, budget=budget)
    assert reports == []


def test_a_hostile_name_is_shown_inert() -> None:
    name = "\x1b]0;pwn\x07\u202e.xml"
    reports, _ = reports_in_zip(zipped({name: BILLION_LAUGHS}))
    [report] = reports
    assert report.refused.startswith("refused: DTDForbidden")
    assert "\x1b" not in report.name and "\u202e" not in report.name


def test_a_wide_report_is_cut_at_the_element_cap() -> None:
    wide = b"<testsuite>" + b"<property/>" * 5000 + GOOD[GOOD.index(b"<testcase") :]
    cut = parse_report(wide, limits=ReportLimits(max_elements=1000))
    assert (cut.tests, cut.failed, cut.truncated) == (0, (), True)
    # Control: under the cap the same report reads to its end.
    assert [t.test for t in parse_report(wide).failed] == ["pkg.ATest.bad"]


def test_failures_past_the_cap_count_as_truncated_not_kept() -> None:
    cases = b"".join(
        f'<testcase classname="c" name="t{i}"><failure message="m">{"x" * 100}</failure>'
        f"</testcase>".encode()
        for i in range(300)
    )
    report = parse_report(b"<testsuite>" + cases + b"</testsuite>")
    assert len(report.failed) == ReportLimits().max_failures and report.truncated
    assert all(t.test for t in report.failed)
