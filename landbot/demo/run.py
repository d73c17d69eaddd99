"""`landbot demo`: build the world, open the pull requests, drive the queue, read back."""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from landbot.config import Settings
from landbot.demo import project
from landbot.demo.agents import check_agent, prepare_agent
from landbot.demo.drive import LogRelay, Reporter, drive, report_ci
from landbot.demo.outcome import Outcome, collect
from landbot.demo.world import open_pulls, open_world
from landbot.errors import LandbotError

MAX_STEPS = 200
TIME_LIMIT = 240.0  # seconds; the demo takes well under a minute


@contextlib.contextmanager
def _demo_root(keep: bool) -> Iterator[Path]:
    # Under /tmp (mode 1777) with mode 755: the sandbox uid must reach the fixer's work
    # trees and the agent below it, whatever TMPDIR says.
    root = Path(tempfile.mkdtemp(prefix="landbot-demo-", dir="/tmp"))
    os.chmod(root, 0o755)
    try:
        yield root
    finally:
        if not keep:
            shutil.rmtree(root, ignore_errors=True)


@contextlib.contextmanager
def _relay_logs(reporter: Reporter) -> Iterator[None]:
    logger = logging.getLogger("landbot")
    handler = LogRelay(reporter)
    old_level, old_propagate = logger.level, logger.propagate
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)
        logger.propagate = old_propagate


def run_demo(
    agent: str,
    base: Settings,
    reporter: Reporter,
    *,
    keep: bool = False,
    max_steps: int = MAX_STEPS,
    time_limit: float = TIME_LIMIT,
) -> Outcome:
    """The whole demo; raises LandbotError (one line) when this host cannot run it."""
    from landbot.sandbox.runner import check_host
    from landbot.sim import missing_extra

    started = time.monotonic()
    # First: a plain `pip install landbot` has no simulator, and the demo is built on it.
    if missing_extra() is not None:
        raise LandbotError("landbot demo needs its extra: pip install 'landbot[demo]'")
    check_agent(agent)
    check_host()  # no sandbox, no demo: say so now, not after the queue ran
    with contextlib.ExitStack() as stack:
        root = stack.enter_context(_demo_root(keep))
        choice = prepare_agent(agent, root, stack)
        stack.enter_context(_relay_logs(reporter))
        world = stack.enter_context(open_world(root, base, choice.fixer, on_ci=report_ci(reporter)))
        say = reporter.event
        say(
            "demo",
            None,
            f"{project.REPO}: a real git repository in {root / 'calc'}, served by the "
            f"simulated GitHub at {world.server.url}",
        )
        say(
            "demo",
            None,
            f"landbot: the GitHub App {world.bot}, its webhook endpoint at {world.webhook_url}, "
            "a SQLite store, its worker",
        )
        say("demo", None, f"fixer agent: {choice.description}; it runs in the real sandbox")
        if keep:
            say("demo", None, f"keeping {root} afterwards")
        reporter.activity("opening the pull requests (their CI runs for real)")
        open_pulls(world, reporter.event)
        result = drive(world, reporter, max_steps=max_steps, time_limit=time_limit)
        pulls = collect(world)
        return Outcome(
            agent=choice.name,
            seconds=time.monotonic() - started,
            finished=result.finished,
            why=result.why,
            steps=result.steps,
            pulls=pulls,
            ci_runs=len(world.ci.runs),
        )
