"""At the deadline landbot gives up on its side and cancels the run on GitHub too, so a
hung runner is freed; a refused cancel (the run just completed) is logged, and the job
fails all the same. A run that finished in time is never cancelled."""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import replace

import pytest

from landbot.core.model import Drop, Evidence
from landbot.fixer.actions import ActionsBackend, FixWaiting
from landbot.store import Store

from .test_actions_backend import GOOD_ZIP, T0, Clock, FakeActions, started


def hung(store: Store, gh: FakeActions) -> tuple[ActionsBackend, int, Drop, int, Clock]:
    """A dispatched job whose run is in progress, with a 30-minute deadline."""
    clock = Clock()
    b, job, drop, run = started(store, gh, clock, deadline=dt.timedelta(minutes=30))
    gh.runs[run] = replace(gh.runs[run], status="in_progress")
    return b, job, drop, run, clock


def test_a_run_past_the_deadline_is_cancelled_on_github(store: Store) -> None:
    gh = FakeActions()
    b, job, drop, run, clock = hung(store, gh)
    clock.now = T0 + dt.timedelta(minutes=29)
    with pytest.raises(FixWaiting):
        b.step(job, drop, Evidence())
    assert gh.cancelled == []  # the control: before the deadline it waits, cancels nothing
    clock.now = T0 + dt.timedelta(minutes=30)
    result = b.step(job, drop, Evidence())
    assert result.failed.startswith("the fix run did not finish in 30 minutes")
    assert gh.cancelled == [run]


def test_a_refused_cancel_is_logged_and_the_job_fails_all_the_same(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    gh = FakeActions(refuse_cancel=True)
    b, job, drop, _run, clock = hung(store, gh)
    clock.now = T0 + dt.timedelta(minutes=30)
    with caplog.at_level(logging.WARNING, logger="landbot.fixer.actions"):
        result = b.step(job, drop, Evidence())
    assert result.failed.startswith("the fix run did not finish in 30 minutes")
    assert gh.cancelled == []
    assert any("fix run not cancelled" in r.getMessage() for r in caplog.records)
    d = store.dispatch_for(job)
    assert d is not None and d.state == "done"


def test_a_run_that_finished_in_time_is_not_cancelled(store: Store) -> None:
    gh = FakeActions()
    b, job, drop, run, clock = hung(store, gh)
    gh.finish(run, "success", GOOD_ZIP)
    clock.now = T0 + dt.timedelta(minutes=10)
    result = b.step(job, drop, Evidence())
    assert not result.failed and result.verdict is not None
    assert gh.cancelled == []
