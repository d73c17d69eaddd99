"""Is the base branch red? (issue 27.1) The same job failing the same way on the base
branch's newest run means a drop is not its pull request's fault.

"The same way" is the same normalised error lines: the lines triage picked as the failure
(`JobFailure.error_lines` and their text in the excerpt) with what changes from run to run
taken out (timestamps, durations and counts, commit and object ids, temporary paths).

The pure half (`error_signature`, `same_way`, `base_state`) decides; `BaseReader` reads
GitHub: the check runs of the base branch's tip (one call), and for a failed job of the
same name its log (the job, and the log: two calls, plus one for the redirect's target)
at most `max_logs` times. A GitHub error is no evidence: the drop goes its usual way.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from landbot.core.model import Evidence, JobFailure
from landbot.github.errors import GitHubError, RateLimited
from landbot.github.models import CheckRun
from landbot.github.ops import GitHubOps
from landbot.triage.classify import Rule
from landbot.triage.explain import explain_parsed
from landbot.triage.log import DEFAULT_MAX_BYTES, parse_log

log = logging.getLogger("landbot.triage")

# What varies between two runs of one failure, replaced by a placeholder.
_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?")
_HEX = re.compile(r"\b[0-9a-f]{7,64}\b")
_TMP = re.compile(r"(?:/tmp|/var/folders|/home/runner/work/_temp)/[\w./-]*")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_SPACE = re.compile(r"\s+")
# At most this many error lines make a signature (a broken build prints hundreds).
MAX_SIGNATURE_LINES = 20

# A run that failed (a cancelled or stale one says nothing about the base's code).
_FAILING = frozenset({"failure", "timed_out"})

BaseJobState = Literal["failed_same", "failed_other", "passed", "pending", "absent"]


def normalise(text: str) -> str:
    """One error line without what changes from run to run."""
    text = _TIMESTAMP.sub("<time>", text)
    text = _TMP.sub("<tmp>", text)
    text = _HEX.sub("<sha>", text)
    text = _NUMBER.sub("<n>", text)
    return _SPACE.sub(" ", text).strip()


def error_signature(
    error_lines: Sequence[int], excerpt: Iterable[tuple[int, str]]
) -> tuple[str, ...]:
    """The normalised text of a failure's error lines, in order (empty: none known)."""
    wanted = set(error_lines)
    lines = [normalise(text) for number, text in excerpt if number in wanted]
    return tuple(x for x in lines if x)[:MAX_SIGNATURE_LINES]


def job_signature(job: JobFailure) -> tuple[str, ...]:
    return error_signature(job.error_lines, job.excerpt)


def same_way(a: Sequence[str], b: Sequence[str]) -> bool:
    """Two failures are the same when both have error lines and they are equal."""
    return bool(a) and tuple(a) == tuple(b)


def base_state(
    check: CheckRun | None, signature: Sequence[str] | None = None, mine: Sequence[str] = ()
) -> BaseJobState:
    """The state of one job on the base: `failed_same` only with the same error lines."""
    if check is None:
        return "absent"
    if check.status != "completed":
        return "pending"
    if check.conclusion in ("success", "neutral", "skipped"):
        return "passed"
    if check.conclusion in _FAILING:
        return (
            "failed_same"
            if signature is not None and same_way(mine, signature)
            else ("failed_other")
        )
    return "pending"


def newest_by_name(checks: Iterable[CheckRun]) -> dict[str, CheckRun]:
    """The newest check run of each name (GitHub lists one per name with filter=latest;
    the highest id wins otherwise)."""
    out: dict[str, CheckRun] = {}
    for c in checks:
        if c.name not in out or c.id > out[c.name].id:
            out[c.name] = c
    return out


@dataclass(frozen=True)
class BaseRed:
    """What the base's newest run says about a drop's failed jobs."""

    sha: str | None
    red: tuple[str, ...]  # failed jobs of the drop failing the same way on the base
    url: str = ""
    # Failed jobs of the drop whose newest run on the base failed too, however (the same
    # way, another way, a log not read): the breaker's same-failure count (issue 27.2).
    failed: tuple[str, ...] = ()


@dataclass
class BaseReader:
    """Reads the base branch's newest checks (I/O; the comparison is the pure half)."""

    rules: tuple[Rule, ...] = ()
    max_log_bytes: int = DEFAULT_MAX_BYTES
    max_logs: int = 3

    def checks(self, gh: GitHubOps, repo: str, base_ref: str) -> dict[str, CheckRun] | None:
        """The newest check run of each name on the base's tip (one call); None: unread."""
        try:
            return newest_by_name(gh.check_runs(repo, base_ref))
        except RateLimited:
            raise
        except GitHubError as exc:
            log.warning("%s: the checks of %s not read (%s)", repo, base_ref, exc.status)
            return None

    def signature(self, gh: GitHubOps, repo: str, check: CheckRun) -> tuple[str, ...] | None:
        """The normalised error lines of the base's failed run of a job (None: no log)."""
        job_log = getattr(gh, "job_log", None)
        if job_log is None:
            return None
        try:
            with job_log(repo, check.id) as chunks:
                parsed = parse_log(chunks, max_bytes=self.max_log_bytes)
        except RateLimited:
            raise
        except GitHubError as exc:
            log.warning("%s: the base's log of %s not read (%s)", repo, check.name, exc.status)
            return None
        e = explain_parsed(parsed, rules=self.rules)
        return error_signature(e.error_lines, ((x.line, x.text) for x in e.excerpt))

    def red(self, gh: GitHubOps, repo: str, base_ref: str, evidence: Evidence) -> BaseRed:
        """Which of the drop's failed jobs fail the same way on the base's newest run."""
        checks = self.checks(gh, repo, base_ref)
        if not checks:
            return BaseRed(None, ())
        red: list[str] = []
        failed: list[str] = []
        url = ""
        sha: str | None = None
        logs_read = 0
        for job in evidence.jobs:
            check = checks.get(job.job)
            if check is None or check.status != "completed" or check.conclusion not in _FAILING:
                continue
            failed.append(job.job)
            mine = job_signature(job)
            if not mine or logs_read >= self.max_logs:
                continue
            logs_read += 1
            theirs = self.signature(gh, repo, check)
            if base_state(check, theirs, mine) == "failed_same":
                red.append(job.job)
                url = url or check.html_url or check.details_url or ""
                sha = sha or check.head_sha
        return BaseRed(sha, tuple(red), url, tuple(failed))

    def green(
        self, gh: GitHubOps, repo: str, base_ref: str, jobs: Sequence[str]
    ) -> dict[str, BaseJobState] | None:
        """Each job's state on the base's newest run now (one call; None: unread). A job
        that failed again is `failed_other` here: any failure keeps the drop waiting."""
        checks = self.checks(gh, repo, base_ref)
        if checks is None:
            return None
        return {name: base_state(checks.get(name)) for name in jobs}
