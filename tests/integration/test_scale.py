"""The scale benchmark of bench/scale.py at its smallest, so it cannot rot: a handful of
repositories and drops, `landbot serve` and two `landbot worker` processes on PostgreSQL,
GitHub answering in 50 ms. Its figures must be produced and sane: every drop reached an
outcome, every drop that asks for an action got one, nothing was done twice, every call
was counted against the budget and every process's memory measured.
"""

from __future__ import annotations

import json

import pytest

from .conftest import load_bench

scale = load_bench("scale")


def test_the_day_is_planned_over_the_whole_day_with_bursts() -> None:
    import random

    repos = [f"acme/repo-{i}" for i in range(20)]
    plan = scale.plan_day(repos, 500, random.Random(1))
    assert len(plan) == 500
    assert [p.at for p in plan] == sorted(p.at for p in plan)
    assert plan[0].at >= 0 and plan[-1].at <= scale.DAY
    hours = {int(p.at // 3600) for p in plan}
    assert len(hours) >= 20  # spread over the day, not a lump
    assert {p.kind for p in plan} == set(scale.MIX)


@pytest.mark.slow
@pytest.mark.postgres
def test_the_smallest_scale_run_produces_sane_figures(postgres_url: str) -> None:
    cfg = scale.Config(repos=4, drops=8, minutes=0.2, workers=2, deadline=150.0, store=postgres_url)
    report = scale.run_scale(cfg)
    text = scale.render(report)
    print(text)
    checks, figures = report.checks, report.figures
    assert checks["finished"], text
    assert checks["drops_made"] == checks["drops_planned"] == 8
    # Every drop reached an outcome; each one that asks for an action got it, once.
    assert checks["drops_without_outcome"] == 0, text
    assert checks["actionable_without_action"] == 0, text
    assert checks["drops_failed"] == 0, text
    for key in ("duplicate_enqueues", "duplicate_handbacks", "duplicate_status_comments"):
        assert checks[key] == 0, text
    actionable = sum(n for k, n in figures["kinds"].items() if k in scale.ACTIONABLE)
    lat = figures["latency_s"]
    assert lat["n"] == actionable and 0 < lat["p50"] <= lat["p99"] <= lat["max"], text
    # The calls were counted (each drop that acts reads and writes), within the budget.
    assert figures["rest"]["total"] > 0 and figures["graphql_points"]["total"] > 0
    assert 2 <= figures["calls_per_actionable_drop"] <= 60, text
    assert figures["refused_by_budget"] == 0
    # A batched sweep asks for several repositories in one query: under a point each.
    assert figures["sweeps"] >= 1 and figures["points_per_repo_sweep"] > 0, text
    assert figures["throughput_actions_per_s"] > 0
    demand = figures["peak_hour_demand_full_size"]
    assert demand["repos"] == 1000 and demand["graphql_points"] >= demand["of_which_sweep"] > 0
    # Every process measured: serve, both workers, the polls, this one.
    procs = figures["processes"]
    assert {"serve", "worker-1", "worker-2", "poll"} <= set(procs), procs
    for name, usage in procs.items():
        assert 20 < usage["rss_mb"] < 2000, (name, usage)
    json.dumps([vars(report)], default=str)  # the --json output
