"""The demo's CI runner: the simulated GitHub calls it for every commit it tests, and it
runs the repository's CI for real on a checkout of that commit.

It does what `.github/workflows/ci.yml` of the demo project says: `landbot quest check
--base <base>` on every pull request and merge group, and the test suite (the standard
library's unittest, so a plain install with the `demo` extra runs it) in the merge queue
only. The output of each command becomes the job's log in GitHub Actions' format, its exit
code the job's conclusion; landbot later downloads those logs and triages them.

One thing is injected, because a runner cannot be made to die on cue: the first merge group
of the "flaky" pull request loses its `test` runner (the log ends the way a runner shutdown
ends, and the tests never report). Everything else is the real result of the real commands.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from landbot.sim.scenarios import (
    CheckContext,
    CheckScenario,
    JobSpec,
    StepSpec,
    WorkflowSpec,
    standard_steps,
)

MAX_OUTPUT_LINES = 400
# The demo project's test command: unittest, not pytest, so `landbot demo` needs nothing a
# plain install with the `demo` extra lacks (issue 15).
UNITTEST = (
    "-m",
    "unittest",
    "discover",
    "--start-directory",
    "tests",
    "--top-level-directory",
    ".",
)

RUNNER_SHUTDOWN = (
    "##[error]The runner has received a shutdown signal. This can happen when the runner "
    "service is stopped, or a manually started runner is canceled.",
    "##[error]Process completed with exit code 143.",
)


@dataclass(frozen=True)
class JobResult:
    """One job of one CI run, as the demo reports it."""

    name: str
    conclusion: str  # success | failure
    command: str
    exit_code: int | None  # None: the runner died before the command finished
    output: tuple[str, ...]

    @property
    def findings(self) -> tuple[str, ...]:
        return tuple(line for line in self.output if line.startswith("quest: "))


@dataclass(frozen=True)
class CiRun:
    sha: str
    event: str  # pull_request | merge_group
    pulls: tuple[int, ...]
    base: str | None
    jobs: tuple[JobResult, ...]

    @property
    def passed(self) -> bool:
        return all(j.conclusion == "success" for j in self.jobs)


def _git(cwd: Path | None, *args: str, check: bool = True) -> str:
    done = subprocess.run(
        ["git", "-c", "core.hooksPath=/dev/null", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )
    if check and done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout.strip()


@dataclass(frozen=True)
class JobPlan:
    name: str
    shown: str  # the command as the log shows it
    argv: tuple[str, ...]
    runner_dies: bool = False


@dataclass
class DemoCI:
    """A callable check scenario (see landbot.sim.scenarios.CheckContext)."""

    bare: Path  # the simulated GitHub's repository
    runners: Path  # one checkout per job below it, made on first use
    base_branch: str = "main"
    python: str = sys.executable
    flaky_pulls: frozenset[int] = frozenset()  # their first merge group loses its runner
    on_run: Callable[[CiRun], None] | None = None
    runs: list[CiRun] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _groups_seen: dict[int, int] = field(default_factory=dict, repr=False)

    def __call__(self, ctx: CheckContext) -> CheckScenario:
        with self._lock:
            run = self._run(ctx)
            self.runs.append(run)
        if self.on_run is not None:
            self.on_run(run)
        jobs = tuple(_job_spec(job) for job in run.jobs)
        return CheckScenario(workflows=(WorkflowSpec("CI", ".github/workflows/ci.yml", jobs),))

    # --- running ----------------------------------------------------------------------

    def _checkout(self, job: str, sha: str) -> Path:
        work = self.runners / job
        if not (work / ".git").is_dir():
            # --shared: the runner reads the objects of the simulated GitHub's repository
            # (alternates), so every commit pushed there is at hand without a fetch.
            _git(None, "clone", "--quiet", "--shared", "--no-checkout", str(self.bare), str(work))
        _git(work, "checkout", "--quiet", "--force", "--detach", sha)
        _git(work, "clean", "--quiet", "-ffdx")
        return work

    def _base(self, ctx: CheckContext) -> str | None:
        if ctx.event == "merge_group":
            # A merge-group commit's first parent is the base it was built on.
            return _git(None, f"--git-dir={self.bare}", "rev-parse", f"{ctx.sha}^1") or None
        # A pull request's checks compare with the base branch's tip (pull_request.base.sha).
        ref = f"refs/heads/{self.base_branch}"
        return _git(None, f"--git-dir={self.bare}", "rev-parse", "--verify", ref) or None

    def _plans(self, ctx: CheckContext, base: str | None) -> list[JobPlan]:
        """The jobs of .github/workflows/ci.yml for this event."""
        shown = f"landbot quest check --base {base}" if base else "landbot quest check"
        argv = [self.python, "-m", "landbot", "quest", "check", *(["--base", base] if base else [])]
        plans = [JobPlan("quest", shown, tuple(argv))]
        if ctx.event == "merge_group":
            pr = ctx.pull_numbers[0] if ctx.pull_numbers else 0
            attempt = self._groups_seen.get(pr, 0) + 1
            self._groups_seen[pr] = attempt
            plans.append(
                JobPlan(
                    "test",
                    f"python {' '.join(UNITTEST)}",
                    (self.python, *UNITTEST),
                    runner_dies=pr in self.flaky_pulls and attempt == 1,
                )
            )
        return plans

    def _job(self, plan: JobPlan, sha: str) -> JobResult:
        if plan.runner_dies:
            return JobResult(plan.name, "failure", plan.shown, None, RUNNER_SHUTDOWN)
        work = self._checkout(plan.name, sha)
        env = {
            **os.environ,
            "PYTHONDONTWRITEBYTECODE": "1",
            "NO_COLOR": "1",
            "COLUMNS": "120",
        }
        env.pop("PYTHONPATH", None)
        done = subprocess.run(
            list(plan.argv),
            cwd=work,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            check=False,
        )
        lines = tuple(done.stdout.splitlines()[-MAX_OUTPUT_LINES:])
        conclusion = "success" if done.returncode == 0 else "failure"
        return JobResult(plan.name, conclusion, plan.shown, done.returncode, lines)

    def _run(self, ctx: CheckContext) -> CiRun:
        base = self._base(ctx)
        plans = self._plans(ctx, base)
        # The jobs of one run go to separate runners at once, as on GitHub.
        with ThreadPoolExecutor(max_workers=len(plans)) as pool:
            jobs = tuple(pool.map(lambda plan: self._job(plan, ctx.sha), plans))
        return CiRun(ctx.sha, ctx.event, tuple(ctx.pull_numbers), base, jobs)


def _job_spec(job: JobResult) -> JobSpec:
    """The job as the simulated GitHub serves it: steps, and a log rendered from them."""
    if job.exit_code is None:
        # The runner died: the step is cut off (cancelled), the job fails.
        step = StepSpec(f"Run {job.command}", "cancelled", run=job.command, output=job.output)
        return JobSpec(job.name, steps=standard_steps((step,)), conclusion="failure")
    step = StepSpec(f"Run {job.command}", job.conclusion, run=job.command, output=job.output)
    return JobSpec(job.name, steps=standard_steps((step,)))
