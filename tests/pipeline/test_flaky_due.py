"""The worker's flaky-issues housekeeping: at once, then every `flaky_every` seconds; a
failure is logged and the worker goes on; none set, never."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from landbot.pipeline.worker import Worker
from landbot.store import Store


def never() -> Any:
    raise AssertionError("the worker needs no lander here")


def test_swept_at_once_then_every_period(tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'x.db'}")
    ran: list[int] = []
    worker = Worker(store, never, flaky_sweep=lambda: ran.append(1), flaky_every=3600)
    assert worker.flaky_due() is True and worker.flaky_due() is False
    assert ran == [1]
    worker.flaky_every = 0
    assert worker.flaky_due() is True and ran == [1, 1]
    assert Worker(store, never).flaky_due() is False  # the control: none set
    store.close()


def test_a_failing_sweep_is_logged(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'x.db'}")

    def boom() -> None:
        raise RuntimeError("the store hiccupped")

    worker = Worker(store, never, flaky_sweep=boom)
    assert worker.flaky_due() is False
    assert "flaky issues not swept" in caplog.text
    store.close()
