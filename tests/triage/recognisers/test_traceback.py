"""Python tracebacks: header, last frame and source line, exception."""

from __future__ import annotations

from landbot.triage.recognisers import traceback as rec

from .conftest import corpus, kinds


def test_header_last_frame_and_exception() -> None:
    # tests/triage/real/python/youtube-dl-unittest-jsinterp.log, 1135-1140.
    got = kinds(rec.ECOSYSTEM, corpus("python/youtube-dl-unittest-jsinterp.log", 1135, 1141))
    assert got == {
        1135: "traceback",
        1138: "traceback",
        1139: "traceback",
        1140: "traceback-exception",
    }


def test_no_traceback_no_marks() -> None:
    # Control: youtube-dl's passing test lines 813-814.
    assert kinds(rec.ECOSYSTEM, corpus("python/youtube-dl-unittest-jsinterp.log", 813, 814)) == {}
