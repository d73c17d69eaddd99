"""Gradle: failed tasks and tests, the What-went-wrong block, wrappers."""

from __future__ import annotations

from landbot.triage.recognisers import gradle as rec

from .conftest import corpus, failures, kinds

AAPT = "java/gradle-android-aapt-resource-not-found.log"


def test_failed_task_and_what_went_wrong() -> None:
    # tests/triage/real/java/gradle-android-aapt-resource-not-found.log, 1555-1571.
    got = kinds(rec.ECOSYSTEM, corpus(AAPT, 1555, 1571))
    assert got[1558] == "gradle-task-failed"
    assert got[1561] == "gradle-failure" and got[1563] == "gradle-wrong"
    assert got[1564] == "gradle-what" and got[1569] == "gradle-what"  # past blank lines
    assert failures(rec.ECOSYSTEM, corpus(AAPT, 1555, 1571)) == {1558: ":app:processDebugResources"}


def test_up_to_date_tasks_are_not_marked() -> None:
    # Control: line 1526 (`> Task :app:preBuild UP-TO-DATE`).
    assert kinds(rec.ECOSYSTEM, corpus(AAPT, 1526, 1526)) == {}


def test_a_failed_test_with_a_platform_suffix() -> None:
    # tests/triage/real/java/okhttp-gradle-http2-test-timed-out-waiting.log, 1753.
    got = failures(
        rec.ECOSYSTEM, corpus("java/okhttp-gradle-http2-test-timed-out-waiting.log", 1753, 1753)
    )
    assert got[1753].startswith("HttpOverHttp2Test[jvm].connectionWindowUpdateAfterCanceling(")
