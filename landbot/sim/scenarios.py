"""What CI does for a commit: check scenarios, and job logs in GitHub Actions' format.

A scenario is data (workflows → jobs → steps, plus check runs of other apps). A test sets
one per commit, per pull request or per event on the model; a callable scenario decides
from the commit itself (it can read files of the tree under test).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

CONCLUSIONS = frozenset(
    {"success", "failure", "neutral", "cancelled", "skipped", "timed_out", "action_required"}
)
PASSING = frozenset({"success", "neutral", "skipped"})


class ScenarioError(ValueError):
    """A scenario that cannot describe a real CI run (unknown conclusion, bad shape)."""


def _check_conclusion(value: str | None, where: str) -> None:
    if value is not None and value not in CONCLUSIONS:
        raise ScenarioError(
            f"{where}: conclusion {value!r} is not one of {', '.join(sorted(CONCLUSIONS))}"
        )


@dataclass(frozen=True)
class AnnotationSpec:
    """An annotation a step makes (a `::error file=…,line=…::message` workflow command, or
    a problem matcher's match): the log shows `##[error]message`, the check run's
    annotations list it with its path and line."""

    path: str
    line: int
    message: str
    level: str = "failure"  # notice | warning | failure
    title: str = ""


# The log prefix of each annotation level, as the runner writes it.
LEVEL_PREFIX = {"failure": "##[error]", "warning": "##[warning]", "notice": "##[notice]"}


@dataclass(frozen=True)
class StepSpec:
    """One step of a job. `run` is the command the log shows; `output` its output lines.

    `conclusion` is what the step did (its `outcome`). A `continue_on_error` step that
    failed shows its error in the log, but GitHub reports it as `success` (the jobs API's
    step `conclusion` is the result after continue-on-error: actions/runner sets the step's
    Result to Succeeded and keeps the failure only as its Outcome) and it does not fail
    the job.
    """

    name: str
    conclusion: str | None = "success"  # None: still running
    run: str | None = None
    output: tuple[str, ...] = ()
    continue_on_error: bool = False
    annotations: tuple[AnnotationSpec, ...] = ()

    def __post_init__(self) -> None:
        _check_conclusion(self.conclusion, f"step {self.name!r}")
        for a in self.annotations:
            if a.level not in LEVEL_PREFIX:
                raise ScenarioError(
                    f"step {self.name!r}: annotation level {a.level!r} is not one of "
                    f"{', '.join(sorted(LEVEL_PREFIX))}"
                )

    @property
    def reported_conclusion(self) -> str | None:
        """The step's conclusion as the jobs API reports it."""
        if self.continue_on_error and self.conclusion in ("failure", "timed_out"):
            return "success"
        return self.conclusion

    @property
    def command(self) -> str:
        if self.run is not None:
            return self.run
        return self.name[4:] if self.name.startswith("Run ") else self.name


def standard_steps(
    middle: Iterable[StepSpec] = (StepSpec("Run tests", run="make test"),),
) -> tuple[StepSpec, ...]:
    """The steps every hosted Actions job has around the workflow's own steps."""
    return (
        StepSpec("Set up job"),
        StepSpec("Run actions/checkout@v4"),
        *middle,
        StepSpec("Post Run actions/checkout@v4"),
        StepSpec("Complete job"),
    )


@dataclass(frozen=True)
class JobSpec:
    """One Actions job. Its conclusion follows from its steps unless given."""

    name: str
    steps: tuple[StepSpec, ...] = field(default_factory=standard_steps)
    conclusion: str | None = field(default=None)
    log: str | None = None  # the whole log text; generated from the steps when None
    required: bool = True
    pending: bool = False  # never completes on its own (see FakeGitHub.complete_checks)

    def __post_init__(self) -> None:
        _check_conclusion(self.conclusion, f"job {self.name!r}")

    def final_conclusion(self) -> str | None:
        if self.pending:
            return None
        if self.conclusion is not None:
            return self.conclusion
        for wanted in ("failure", "timed_out", "cancelled", "action_required"):
            if any(s.reported_conclusion == wanted for s in self.steps):
                return wanted
        return "success"


@dataclass(frozen=True)
class WorkflowSpec:
    name: str = "CI"
    path: str = ".github/workflows/ci.yml"
    jobs: tuple[JobSpec, ...] = (JobSpec("test"),)
    # Artifacts the run uploads, (name, zip bytes): a JUnit report for triage to read.
    artifacts: tuple[tuple[str, bytes], ...] = ()


@dataclass(frozen=True)
class CheckSpec:
    """A check run reported by another app (not an Actions job)."""

    name: str
    conclusion: str | None = "success"  # None: in progress
    app: str = "ci-checks"
    summary: str = ""
    text: str = ""
    required: bool = True

    def __post_init__(self) -> None:
        _check_conclusion(self.conclusion, f"check {self.name!r}")


@dataclass(frozen=True)
class CheckScenario:
    workflows: tuple[WorkflowSpec, ...] = (WorkflowSpec(),)
    checks: tuple[CheckSpec, ...] = ()

    @classmethod
    def passing(cls, *jobs: str, workflow: str = "CI") -> CheckScenario:
        names = jobs or ("test",)
        return cls(workflows=(WorkflowSpec(workflow, jobs=tuple(JobSpec(n) for n in names)),))

    @classmethod
    def failing(
        cls,
        job: str = "test",
        *,
        step: str = "Run tests",
        run: str | None = "make test",
        output: Iterable[str] = ("FAILED tests/test_app.py::test_answer - assert 41 == 42",),
        conclusion: str = "failure",
        log: str | None = None,
        other_jobs: Iterable[str] = (),
        workflow: str = "CI",
    ) -> CheckScenario:
        """One job whose `step` fails (its log ends with the runner's exit-code line)."""
        bad = JobSpec(
            job,
            steps=standard_steps((StepSpec(step, conclusion, run=run, output=tuple(output)),)),
            log=log,
        )
        jobs = (*(JobSpec(n) for n in other_jobs), bad)
        return cls(workflows=(WorkflowSpec(workflow, jobs=jobs),))

    @classmethod
    def pending(cls, job: str = "test", *, workflow: str = "CI") -> CheckScenario:
        """Checks that start and never report (the queue times them out)."""
        return cls(workflows=(WorkflowSpec(workflow, jobs=(JobSpec(job, pending=True),)),))

    @classmethod
    def none(cls) -> CheckScenario:
        return cls(workflows=(), checks=())

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CheckScenario:
        """Build a scenario from JSON (the control API of `python -m landbot.sim serve`)."""
        if "preset" in data:
            preset = data["preset"]
            args = dict(data.get("args", {}))
            if preset == "passing":
                return cls.passing(*args.get("jobs", ()))
            if preset == "failing":
                if "output" in args:
                    args["output"] = tuple(args["output"])
                return cls.failing(**args)
            if preset == "pending":
                return cls.pending(**args)
            if preset == "none":
                return cls.none()
            raise ScenarioError(f"unknown preset {preset!r}; use passing, failing, pending, none")
        workflows = []
        for wf in data.get("workflows", ()):
            jobs = []
            for job in wf.get("jobs", ()):
                steps = (
                    tuple(
                        StepSpec(
                            s["name"],
                            s.get("conclusion", "success"),
                            run=s.get("run"),
                            output=tuple(s.get("output", ())),
                            continue_on_error=bool(s.get("continue_on_error", False)),
                            annotations=tuple(
                                AnnotationSpec(
                                    a["path"],
                                    int(a["line"]),
                                    a["message"],
                                    a.get("level", "failure"),
                                    a.get("title", ""),
                                )
                                for a in s.get("annotations", ())
                            ),
                        )
                        for s in job.get("steps", ())
                    )
                    or standard_steps()
                )
                jobs.append(
                    JobSpec(
                        job["name"],
                        steps=steps,
                        conclusion=job.get("conclusion"),
                        log=job.get("log"),
                        required=job.get("required", True),
                        pending=job.get("pending", False),
                    )
                )
            workflows.append(
                WorkflowSpec(
                    wf.get("name", "CI"),
                    wf.get("path", ".github/workflows/ci.yml"),
                    tuple(jobs),
                )
            )
        checks = tuple(
            CheckSpec(
                c["name"],
                c.get("conclusion", "success"),
                app=c.get("app", "ci-checks"),
                summary=c.get("summary", ""),
                text=c.get("text", ""),
                required=c.get("required", True),
            )
            for c in data.get("checks", ())
        )
        return cls(workflows=tuple(workflows), checks=checks)


@dataclass(frozen=True)
class CheckContext:
    """What a callable scenario may look at: the commit under test and why it runs."""

    repo: str  # owner/name
    sha: str
    event: str  # "pull_request" or "merge_group"
    head_branch: str
    pull_numbers: tuple[int, ...]
    read_file: Callable[[str], str | None]
    files: Callable[[], list[str]]


ScenarioSource = CheckScenario | Callable[[CheckContext], CheckScenario]


@dataclass(frozen=True)
class ScenarioRule:
    scenario: ScenarioSource
    sha: str | None = None
    pr: int | None = None
    event: str | None = None

    def matches(self, ctx: CheckContext) -> bool:
        return (
            (self.sha is None or self.sha == ctx.sha)
            and (self.pr is None or self.pr in ctx.pull_numbers)
            and (self.event is None or self.event == ctx.event)
        )

    @property
    def specificity(self) -> int:
        return (4 if self.sha else 0) + (2 if self.pr is not None else 0) + (1 if self.event else 0)


def choose_scenario(rules: list[ScenarioRule], ctx: CheckContext) -> CheckScenario:
    """The most specific matching rule wins; among equals, the one set last."""
    best: ScenarioRule | None = None
    for rule in rules:
        if rule.matches(ctx) and (best is None or rule.specificity >= best.specificity):
            best = rule
    if best is None:
        return CheckScenario()
    source = best.scenario
    return source if isinstance(source, CheckScenario) else source(ctx)


# --- job logs -----------------------------------------------------------------------------


def _stamp(when: datetime) -> str:
    # Actions stamps every line with seven fractional digits.
    return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond:06d}0Z"


def render_job_log(
    job: JobSpec,
    *,
    repo: str,
    sha: str,
    started: datetime,
    runner: str = "GitHub Actions 2",
) -> str:
    """A job log shaped like the one GitHub Actions serves (see reference/actions-logs.md)."""
    if job.log is not None:
        return job.log
    lines: list[str] = []
    tick = [started]

    def emit(text: str) -> None:
        tick[0] += timedelta(milliseconds=137)
        lines.append(f"{_stamp(tick[0])} {text}")

    emit("Current runner version: '2.321.0'")
    emit("##[group]Runner Image Provisioner")
    emit("Hosted Compute Agent")
    emit("##[endgroup]")
    emit("##[group]Operating System")
    emit("Ubuntu")
    emit("24.04.1")
    emit("LTS")
    emit("##[endgroup]")
    emit("##[group]Runner Image")
    emit("Image: ubuntu-24.04")
    emit("##[endgroup]")
    emit("Prepare workflow directory")
    emit("Prepare all required actions")
    emit(
        "Download action repository 'actions/checkout@v4' "
        "(SHA:11bd71901bbe5b1630ceea73d27597364c9af683)"
    )
    emit(f"Complete job name: {job.name}")
    failed = False
    for step in job.steps:
        if step.name in ("Set up job", "Complete job") or step.conclusion == "skipped":
            continue
        if step.name.startswith("Post "):
            emit("Post job cleanup.")
            if "checkout" in step.name:
                emit("[command]/usr/bin/git version")
                emit("git version 2.47.1")
            continue
        command = step.command
        emit(f"##[group]Run {command.splitlines()[0]}")
        if "@" in command and " " not in command:
            emit("with:")
            emit(f"  repository: {repo}")
            emit(f"  ref: {sha}")
            emit("##[endgroup]")
            emit("[command]/usr/bin/git init /home/runner/work")
            emit(f"[command]/usr/bin/git checkout --progress --force {sha}")
        else:
            for extra in command.splitlines()[1:]:
                emit(extra)
            emit("shell: /usr/bin/bash -e {0}")
            emit("##[endgroup]")
        for out in step.output:
            emit(out)
        for note in step.annotations:
            emit(f"{LEVEL_PREFIX[note.level]}{note.message}")
        if step.conclusion == "failure":
            emit("##[error]Process completed with exit code 1.")
            failed = True
        elif step.conclusion == "cancelled":
            emit("##[error]The operation was canceled.")
            failed = True
        elif step.conclusion == "timed_out":
            emit(
                f"##[error]The job running on runner {runner} has exceeded the maximum "
                "execution time of 360 minutes."
            )
            failed = True
    if not failed and job.final_conclusion() == "cancelled":
        emit("##[error]The operation was canceled.")
    emit("Cleaning up orphan processes")
    return "\ufeff" + "\n".join(lines) + "\n"


_LOG_ISSUE = re.compile(r"##\[(error|warning|notice)\](.*)$")
_LEVEL_OF = {"error": "failure", "warning": "warning", "notice": "notice"}


def job_annotations(job: JobSpec, log: str) -> tuple[AnnotationSpec, ...]:
    """The check run's annotations of a finished Actions job: one per `##[error]`,
    `##[warning]` or `##[notice]` line of its log, in log order (GitHub makes an annotation
    of each issue the runner reports). A step's own annotation keeps its path and line; any
    other (`Process completed with exit code 1.`) points at `.github`, as GitHub's do."""
    own = [a for step in job.steps for a in step.annotations]
    found: list[AnnotationSpec] = []
    for raw in log.lstrip("\ufeff").split("\n"):
        text = raw.split(" ", 1)[1] if raw[:1].isdigit() and " " in raw else raw
        m = _LOG_ISSUE.search(text)
        if m is None:
            continue
        level, message = _LEVEL_OF[m.group(1)], m.group(2)
        match = next((a for a in own if a.message == message and a.level == level), None)
        if match is not None:
            own.remove(match)
            found.append(match)
        else:
            found.append(AnnotationSpec(".github", 1, message, level))
    return tuple(found)
