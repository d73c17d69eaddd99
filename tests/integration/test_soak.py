"""The fault soak of bench/soak.py, small and bounded: ten pull requests with the main kinds
of drop, webhooks repeated and withheld, `landbot serve` (its worker off) and two `landbot
worker` processes on one store, workers SIGKILLed (and once at a failpoint), polls in
between, and a tenth of GitHub's answers failing. Nothing may be lost, failed, done twice
or done to the wrong head.

The control runs the same soak with no faults and no kills: it must finish, find every
drop, and do something (re-enqueue and hand back), so the invariants are not vacuous.
"""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import load_bench

soak = load_bench("soak")
ZERO = {
    "drops_lost": 0,
    "deliveries_failed": 0,
    "drops_failed": 0,
    "drops_unfinished": 0,
    "drops_at_no_removal": 0,
    "duplicate_enqueues": 0,
    "duplicate_comments": 0,
    "wrong_mutations": 0,
    "wrong_mutations_applied": 0,
    "comments_on_manual_removals": 0,
}


def run(store: str, **kw: Any) -> Any:
    # 10 PRs are the first 10 kinds (flaky, genuine, cancelled, timeout, conflict, manual,
    # merged, pushed while queued, landbot:skip, roll back) in 2 waves: a kill can land in
    # each, one poll runs between them besides the last. The 20-seed soak does the rest.
    cfg = soak.Config(seed=11, prs=10, store=store, deadline=90.0, wave=5, polls=1, **kw)
    report = soak.run_soak(cfg)
    print(soak.render(report))  # the figures, for a failing run's output
    return report


def check(report: Any) -> None:
    assert report.finished, soak.render(report)
    # (removals_unrecorded_not_owed is a figure, not a fault: see soak.not_owed.)
    assert {k: report.invariants[k] for k in ZERO} == ZERO, soak.render(report)
    # Every poll's processing stays its own: it never drains the shared store.
    for p in report.figures["polls"]:
        assert p["processed"] <= p["new"] + 5, soak.render(report)


@pytest.mark.slow
def test_the_control_without_faults_or_kills_does_the_work() -> None:
    report = run("sqlite", fault_rate=0.0, kills=0, failpoint_kills=0)
    assert report.finished, soak.render(report)
    # Every removal a drop, but those nothing was owed for (soak.not_owed), and those few.
    spared = report.invariants["removals_unrecorded_not_owed"]
    assert report.removals >= 10 and spared <= 3
    assert report.drops >= report.removals - spared
    assert report.outcomes.get("requeued", 0) >= 2
    assert report.outcomes.get("handed_back", 0) >= 2
    assert report.figures["webhooks_withheld"] >= 1  # a poll had something to find
    assert report.figures["faults_injected"] == {} and report.figures["worker_sigkills"] == 0
    check(report)


@pytest.mark.slow
def test_soak_sqlite_with_faults_and_kills() -> None:
    # after_decide: every drop job passes it, so the armed workers must reach it.
    report = run("sqlite", kills=2, failpoint_kills=1, failpoints=("after_decide",))
    assert sum(report.figures["faults_injected"].values()) >= 3  # the faults happened
    # The failpoint wave kills both workers, the other wave one (unless it died at its
    # failpoint just before, which counts there).
    assert report.figures["worker_sigkills"] >= 2
    # The failpoint kill happened: serve's own worker, never killed, takes no job from the
    # armed ones (it took them all before, and no failpoint fired in 40 runs).
    assert report.figures["failpoints_armed"] == ["after_decide"]
    assert report.figures["failpoints_fired"] == ["after_decide"], soak.render(report)
    assert report.figures["worker_failpoint_kills"] >= 1, soak.render(report)
    check(report)


@pytest.mark.slow
@pytest.mark.postgres
def test_soak_postgresql_with_faults_and_kills(postgres_url: str) -> None:
    # The fixture's server; the soak makes its own database on it.
    report = run(postgres_url, kills=2, failpoint_kills=1)
    assert sum(report.figures["faults_injected"].values()) >= 3
    check(report)
