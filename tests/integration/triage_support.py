"""Helpers for the triage integration tests (test_triage_*.py) on the World fixture."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from landbot.sim import CheckScenario
from landbot.sim.merge_queue import QueueStep

from .conftest import World

FIXTURES = Path(__file__).parents[1] / "triage" / "fixtures"
LOGS_ROUTE = "GET /repos/{owner}/{repo}/actions/jobs/{job_id}/logs"
BLOB_ROUTE = "GET /_blobs/job-logs/{job_id}"
JOB_ROUTE = "GET /repos/{owner}/{repo}/actions/jobs/{job_id}"
RUN_JOBS_ROUTE = "GET /repos/{owner}/{repo}/actions/runs/{run_id}/jobs"
RUNS_ROUTE = "GET /repos/{owner}/{repo}/actions/runs"
CHECK_RUNS_ROUTE = "GET /repos/{owner}/{repo}/commits/{ref}/check-runs"


def fixture_log(name: str) -> str:
    """One of the triage fixture logs, as the text a job serves (BOM and all)."""
    return (FIXTURES / name).read_bytes().decode("utf-8")


def queue_and_fail(
    world: World,
    head: str,
    scenario: CheckScenario,
    files: dict[str, str] | None = None,
) -> tuple[Any, QueueStep]:
    """Open a PR, give its merge groups `scenario`, queue it and let the queue drop it."""
    pr = world.open_pr(head, files or {"app.py": f"def answer():\n    return 41  # {head}\n"})
    world.gh.set_checks(world.repo, scenario, pr=pr, event="merge_group")
    world.gh.enqueue(pr, actor="alice")
    return pr, requeue_and_fail(world)


def requeue_and_fail(world: World) -> QueueStep:
    steps = world.gh.run_queue(world.repo)
    assert steps[-1].action == "dropped", steps
    return steps[-1]


def deliver_only(world: World, event: str, action: str | None = None) -> int:
    """Send landbot only these deliveries (the rest are 'missed'), then run the worker."""
    sent = 0
    for delivery in world.gh.deliveries_of(event, action):
        assert delivery.send(world.webhook_url).status_code in (200, 202)
        sent += 1
    world.worker.drain()
    return sent


def evidence_of(drop: Any) -> dict[str, Any]:
    """The evidence the land loop saved with its plan for `drop`."""
    assert drop.plan is not None, "the drop has no saved plan"
    evidence: dict[str, Any] = drop.plan["evidence"]
    return evidence


def served_log_lines(world: World, job_id: int) -> list[str]:
    """The job's log as GitHub serves it, one entry per line, timestamps cut off."""
    text = world.gh.jobs[job_id].log.lstrip("\ufeff")
    return [line.split(" ", 1)[1] if " " in line else line for line in text.split("\n")]


def job_id_of(url: str) -> int:
    return int(url.rstrip("/").rsplit("/", 1)[1])


def handbacks(world: World, number: int) -> list[Any]:
    from landbot.land.comments import HANDBACK_MARKER

    return [c for c in world.bot_comments(number) if HANDBACK_MARKER in c.body]


def statuses(world: World, number: int) -> list[Any]:
    from landbot.land.comments import STATUS_MARKER

    return [c for c in world.bot_comments(number) if STATUS_MARKER in c.body]


def count(world: World, route: str) -> int:
    return world.server.requests.count(route)
