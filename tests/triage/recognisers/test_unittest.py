"""unittest (Django's and nose-style runners) and CPython's regrtest."""

from __future__ import annotations

from landbot.triage.recognisers import unittest as rec

from .conftest import corpus, failures, kinds


def test_error_and_fail_headings_name_the_test() -> None:
    # tests/triage/real/python/django-selenium-unittest.log, 2401 and 2712 (django/django).
    log = "python/django-selenium-unittest.log"
    got = failures(rec.ECOSYSTEM, corpus(log, 2398, 2402))
    assert got == {
        2401: "admin_inlines.tests.SeleniumTests.test_added_stacked_inline_with_collapsed_fields"
    }
    assert failures(rec.ECOSYSTEM, corpus(log, 2712, 2712)) == {
        2712: "admin_inlines.tests.SeleniumTests.test_add_inlines"
    }
    assert kinds(rec.ECOSYSTEM, corpus(log, 2869, 2869)) == {2869: "unittest-result"}


def test_old_style_heading_gives_the_same_id() -> None:
    # tests/triage/real/python/youtube-dl-unittest-jsinterp.log, 1133 (Python 3.2 prints
    # `(module.Class)`), 1166 `Ran 304 tests`, 1168 `FAILED (SKIP=24, errors=1)`.
    log = "python/youtube-dl-unittest-jsinterp.log"
    assert failures(rec.ECOSYSTEM, corpus(log, 1133, 1133)) == {
        1133: "test.test_jsinterp.TestJSInterpreter.test_bitwise_operators_typecast"
    }
    got = kinds(rec.ECOSYSTEM, corpus(log, 1165, 1168))
    assert got == {1166: "unittest-ran", 1168: "unittest-result"}


def test_passing_tests_are_not_marked() -> None:
    # Control: youtube-dl lines 813-814, `test_x (test.test_InfoExtractor.…) ... ok`.
    assert kinds(rec.ECOSYSTEM, corpus("python/youtube-dl-unittest-jsinterp.log", 813, 814)) == {}


def test_regrtest_names_the_failed_module() -> None:
    # tests/triage/real/python/cpython-tsan-free-threading-qsbr-abort.log, 8389-8390, and
    # control 8293-8295 (`[ 1/58] test_asyncio.test_buffered_proto passed`).
    log = "python/cpython-tsan-free-threading-qsbr-abort.log"
    assert failures(rec.ECOSYSTEM, corpus(log, 8389, 8390)) == {8390: "test_free_threading"}
    assert kinds(rec.ECOSYSTEM, corpus(log, 8293, 8295)) == {}
