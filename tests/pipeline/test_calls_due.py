"""The worker saves its process's GitHub request counts (issue 28.4): at once, then every
`calls_every` seconds, and as it stops; a failed save is logged and the next one makes up
for it (the counts are absolute); no tally, nothing saved."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from landbot.github.client import CallRecord
from landbot.github.tally import CallTally
from landbot.pipeline.worker import Worker
from landbot.store import Store


def never() -> Any:
    raise AssertionError("the worker needs no lander here")


def call(status: str = "200") -> CallRecord:
    return CallRecord(installation="7", api="rest", status=status, rate_limit=None)


def test_saved_at_once_then_every_period_and_as_it_stops(sqlite_url: str) -> None:
    store = Store.open(sqlite_url)
    tally = CallTally("here:1:1")
    tally.on_call(call())
    worker = Worker(store, never, calls=tally, calls_every=3600, idle_sleep=0.01)
    assert worker.calls_due() is True and worker.calls_due() is False
    assert store.call_counts() == {("7", "rest", "200"): 1}
    tally.on_call(call())
    tally.on_call(call("502"))
    assert store.call_counts() == {("7", "rest", "200"): 1}  # not due yet
    stop = threading.Event()
    stop.set()
    worker.run(stop)  # stops at once, saving its last counts
    assert store.call_counts() == {("7", "rest", "200"): 2, ("7", "rest", "502"): 1}
    assert Worker(store, never).calls_due() is False  # the control: no tally, no save
    store.close()


def test_a_failed_save_is_logged_and_the_next_makes_up(
    sqlite_url: str, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = Store.open(sqlite_url)
    tally = CallTally("here:1:1")
    tally.on_call(call())
    worker = Worker(store, never, calls=tally, calls_every=0)

    def hiccup(*args: object) -> None:
        raise RuntimeError("the store hiccupped")

    with monkeypatch.context() as m:
        m.setattr(store, "save_call_counts", hiccup)
        assert worker.calls_due() is False
    assert "GitHub call counts not saved" in caplog.text
    tally.on_call(call())
    assert worker.calls_due() is True
    assert store.call_counts() == {("7", "rest", "200"): 2}
    store.close()


def test_the_tally_is_attached_once_and_detached() -> None:
    from landbot.github import client

    tally = CallTally("here:1:1")
    try:
        assert tally.attach() is tally.attach() is tally
        assert client.CALL_OBSERVERS.count(tally.on_call) == 1
    finally:
        tally.detach()
    assert tally.on_call not in client.CALL_OBSERVERS
