"""The failed tests a failed run's JUnit XML reports name, preferred to the log's words.

    verdicts = with_reports(gh, repo, checks, verdicts, patterns=["*junit*"])

Where the workflow run of a failed job uploaded an artifact whose name matches
`[triage] report_artifacts` (fnmatch, any case), its zip is downloaded and the XML files in
it are read (triage/junit.py, as hostile data). When they name failed tests, the job's
`failed_tests` (the flaky ledger's keys) become theirs, and `reported_tests` keep the first
failures with their messages for the hand-back; the log's step, error lines, excerpt and
class stay as the log gave them.

Calls: one artifact listing per workflow run with a failed job whose tests matter (a
class about tests: genuine, flaky, unknown), then one download (redirect and blob) per
matching artifact, at most `MAX_ARTIFACTS` per run, each capped at the limits' zip size.
A run with no matching artifact costs the listing alone. A GitHub error on any of these is
no evidence (the log's names stay); a rate limit is raised, as every triage read does.

Which job a report belongs to: an artifact names no job. A run with one failed job gets
every matching artifact; in a run with several (a matrix), a job takes the artifacts whose
name holds each of its matrix values (`test (3.12, ubuntu)` takes `junit-3.12-ubuntu`), or
its whole name, and no other: a report the job cannot be told from is not used.
"""

from __future__ import annotations

import fnmatch
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from landbot.core.model import JobFailure, ReportedTest
from landbot.github.errors import GitHubError, RateLimited
from landbot.github.models import Artifact, CheckRun
from landbot.github.ops import ReadsArtifacts
from landbot.triage import flaky
from landbot.triage.combine import JobVerdict
from landbot.triage.junit import FailedTest, Report, ReportLimits, new_budget, reports_in_zip
from landbot.triage.runs import ACTIONS_APP, LOG_CONCLUSIONS, run_id_of

DEFAULT_PATTERNS = ("*junit*", "*test-results*")
MAX_ARTIFACTS = 3  # matching artifacts downloaded per run (a matrix uploads one per job)
MAX_TESTS = 20  # failed tests of one job kept (as gather.py keeps the log's)
SHOWN = 3  # failures whose message the hand-back shows
_MATRIX = re.compile(r"\(([^()]*)\)\s*$")
_WORD = re.compile(r"[a-z0-9]+(?:\.[a-z0-9]+)*")

log = logging.getLogger("landbot.triage")


@dataclass
class RunReports:
    """One workflow run's matching artifacts, read once: each artifact's reports."""

    artifacts: list[Artifact] = field(default_factory=list)
    reports: dict[int, list[Report]] = field(default_factory=dict)  # artifact id -> reports
    skipped: list[str] = field(default_factory=list)


@dataclass
class ReportReader:
    """Reads the reports of each run at most once per drop, and counts its calls."""

    gh: ReadsArtifacts
    repo: str
    patterns: Sequence[str] = DEFAULT_PATTERNS
    limits: ReportLimits = field(default_factory=ReportLimits)
    calls: int = 0
    _runs: dict[int, RunReports | None] = field(default_factory=dict)

    def run(self, run_id: int) -> RunReports | None:
        """The run's matching artifacts and their reports; None when GitHub would not list
        them (no evidence)."""
        if run_id not in self._runs:
            self._runs[run_id] = self._read(run_id)
        return self._runs[run_id]

    def _read(self, run_id: int) -> RunReports | None:
        try:
            self.calls += 1
            listed = self.gh.run_artifacts(self.repo, run_id)
        except RateLimited:
            raise
        except GitHubError as exc:
            log.warning("%s: run %s's artifacts not listed (%s)", self.repo, run_id, exc.status)
            return None
        found = RunReports()
        matching = [a for a in listed if matches(a.name, self.patterns)]
        budget = new_budget(self.limits)
        for art in sorted(matching, key=lambda a: a.id)[:MAX_ARTIFACTS]:
            if art.expired:
                found.skipped.append(f"{art.name}: expired")
                continue
            if art.size_in_bytes > self.limits.max_zip_bytes:
                found.skipped.append(
                    f"{art.name}: {art.size_in_bytes:,} bytes, over {self.limits.max_zip_bytes:,}"
                )
                continue
            try:
                self.calls += 1
                data = self.gh.download_artifact(
                    self.repo, art.id, max_bytes=self.limits.max_zip_bytes
                )
            except RateLimited:
                raise
            except GitHubError as exc:
                found.skipped.append(f"{art.name}: not downloaded ({exc.status})")
                continue
            reports, skipped = reports_in_zip(data, self.limits, budget=budget)
            budget.skipped = []  # said once, under this artifact's name
            found.skipped += [f"{art.name}: {why}" for why in skipped]
            found.skipped += [f"{art.name}: {r.name}: {r.refused}" for r in reports if r.refused]
            found.artifacts.append(art)
            found.reports[art.id] = [r for r in reports if not r.refused]
        if len(matching) > MAX_ARTIFACTS:
            found.skipped.append(f"{len(matching) - MAX_ARTIFACTS} more artifacts not read")
        for why in found.skipped:
            log.info("%s: run %s: test report skipped: %s", self.repo, run_id, why)
        return found


def matches(name: str, patterns: Sequence[str]) -> bool:
    """Whether an artifact's name matches one of the patterns (fnmatch, any case)."""
    lowered = name.lower()
    return any(fnmatch.fnmatchcase(lowered, p.lower()) for p in patterns)


def fits(artifact: str, job: str) -> bool:
    """Whether an artifact's name can be told to belong to a job of a matrix: it holds
    each of the job's matrix values, or the job's whole name (as words, any case)."""
    words = set(_WORD.findall(artifact.lower()))
    m = _MATRIX.search(job)
    if m is not None:
        values = [v.strip().lower() for v in m.group(1).split(",") if v.strip()]
        return bool(values) and all(
            set(_WORD.findall(v)) <= words or v in artifact.lower() for v in values
        )
    wanted = _WORD.findall(job.lower())
    return bool(wanted) and " ".join(wanted) in " ".join(_WORD.findall(artifact.lower()))


def with_reports(
    gh: object,
    repo: str,
    checks: Sequence[CheckRun],
    verdicts: Sequence[JobVerdict],
    *,
    patterns: Sequence[str] = DEFAULT_PATTERNS,
    limits: ReportLimits | None = None,
    reader: ReportReader | None = None,
) -> list[JobVerdict]:
    """`verdicts` (one per check, in order) with the failed tests the runs' reports name.
    A client that cannot read artifacts, or no patterns, changes nothing and costs nothing."""
    if not patterns or not isinstance(gh, ReadsArtifacts) or len(checks) != len(verdicts):
        return list(verdicts)
    reader = reader or ReportReader(gh, repo, patterns, limits or ReportLimits())
    wanted = [
        (check, run_id_of(check))
        for check, verdict in zip(checks, verdicts, strict=True)
        # The jobs whose logs triage reads (an Actions job that failed or timed out), when
        # their class is about tests: a runner that died names no test.
        if check.app_slug == ACTIONS_APP
        and check.conclusion in LOG_CONCLUSIONS
        and verdict.failure.class_ in flaky.WEIGHED
    ]
    failed_in_run: dict[int, int] = {}
    for _, run_id in wanted:
        if run_id is not None:
            failed_in_run[run_id] = failed_in_run.get(run_id, 0) + 1
    out: list[JobVerdict] = []
    reading = {c.id: run_id for c, run_id in wanted if run_id is not None}
    for check, verdict in zip(checks, verdicts, strict=True):
        run_id = reading.get(check.id)
        found = reader.run(run_id) if run_id is not None else None
        if run_id is None or found is None:
            out.append(verdict)
            continue
        alone = failed_in_run[run_id] == 1
        arts = [a for a in found.artifacts if alone or fits(a.name, check.name)]
        reports = [r for a in arts for r in found.reports.get(a.id, [])]
        failure = from_reports(verdict.failure, reports, [a.name for a in arts])
        out.append(JobVerdict(failure, verdict.why) if failure is not verdict.failure else verdict)
    return out


def from_reports(job: JobFailure, reports: Sequence[Report], names: Sequence[str]) -> JobFailure:
    """The job with the reports' failed tests, when they name any (else unchanged)."""
    failed: dict[str, FailedTest] = {}
    for report in reports:
        for test in report.failed:
            failed.setdefault(test.test, test)
    if not failed:
        return job  # a report with no failure: the job failed elsewhere; the log says where
    tests = tuple(failed)[:MAX_TESTS]
    shown = tuple(ReportedTest(t.test, t.message, t.text) for t in list(failed.values())[:SHOWN])
    return replace(
        job,
        failed_tests=tests,
        tests_from=", ".join(dict.fromkeys(names)),
        reported_tests=shown,
    )


def reported_tests(
    gh: object,
    repo: str,
    check: CheckRun,
    *,
    patterns: Sequence[str] = DEFAULT_PATTERNS,
    limits: ReportLimits | None = None,
) -> tuple[str, ...]:
    """The failed tests the reports of one check's run name (the pull request's own head,
    compared with the group's): the artifacts that fit the job, or the only one there is.
    () when there is none, or GitHub would not list them."""
    run_id = run_id_of(check)
    if not patterns or run_id is None or not isinstance(gh, ReadsArtifacts):
        return ()
    found = ReportReader(gh, repo, patterns, limits or ReportLimits()).run(run_id)
    if found is None:
        return ()
    arts = [a for a in found.artifacts if fits(a.name, check.name)]
    if not arts and len(found.artifacts) == 1:
        arts = found.artifacts
    names = (t.test for a in arts for r in found.reports.get(a.id, []) for t in r.failed)
    return tuple(dict.fromkeys(names))
