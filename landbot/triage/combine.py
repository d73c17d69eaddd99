"""One class for a whole drop from its failed jobs, and the evidence that decided it. Pure.

A drop is as much the pull request's fault as its worst job: one quest finding or one
failed test outweighs any number of cancelled siblings (fail-fast cancels the rest of a
matrix when one job fails). Only when every failure is outside the pull request (flaky,
infrastructure, cancelled) is the drop not its fault. A job landbot could not explain
(`unknown`) blocks that: nobody can say it was not the pull request. A cancelled job is
never blamed on the pull request, whatever else failed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from landbot.core.model import NOT_ITS_FAULT, JobFailure, TriageClass

# Worst first: the first class any job has is the drop's class.
PRIORITY: tuple[TriageClass, ...] = (
    "policy",
    "genuine",
    "unknown",
    "timeout",
    "infrastructure",
    "flaky",
    "cancelled",
)
REASON_CHARS = 400
WHY_CHARS = 160

_LEAD: dict[TriageClass, str] = {
    "policy": "the quest check failed",
    "genuine": "the pull request's own failure",
    "unknown": "no known cause",
    "timeout": "a job ran out of time",
    "infrastructure": "a runner failure",
    "flaky": "a flaky failure",
    "cancelled": "a cancelled job, which is not a failure",
}


@dataclass(frozen=True)
class JobVerdict:
    """One failed job (or check) as triage saw it, and why it got its class."""

    failure: JobFailure
    why: str = ""
    """The evidence in a few words, e.g. "log line 88: npm ERR! code ECONNRESET"."""


def overall(verdicts: Sequence[JobVerdict]) -> tuple[TriageClass | None, str]:
    """(class, reason) of the drop; (None, "") when there is no failed job at all."""
    if not verdicts:
        return None, ""
    cls = next(c for c in PRIORITY if any(v.failure.class_ == c for v in verdicts))
    deciding = [v for v in verdicts if v.failure.class_ == cls]
    reason = f"{_LEAD[cls]}: {describe(deciding[0])}"
    if len(deciding) > 1:
        reason += f" (and {_more(len(deciding) - 1)})"
    others = [v for v in verdicts if v.failure.class_ != cls]
    if cls in NOT_ITS_FAULT and others:
        # Every other failure is outside the PR too (else it would have decided): say which.
        reason += "; also " + ", ".join(
            f"`{_code(v.failure.job)}` {v.failure.class_}" for v in others
        )
    return cls, _clip(reason, REASON_CHARS)


def describe(verdict: JobVerdict) -> str:
    job = verdict.failure
    text = f"job `{_code(job.job)}`"
    if job.step:
        text += f", step `{_code(job.step)}`"
    if verdict.why:
        text += f", {_clip(verdict.why, WHY_CHARS)}"
    return text


def evidence_why(line: int, text: str) -> str:
    """The deciding log line as a reason fragment: `log line N: `text``."""
    return f"log line {line}: `{_code(text.strip())}`"


def _more(n: int) -> str:
    return f"{n} more job" if n == 1 else f"{n} more jobs"


def _code(text: str) -> str:
    # Inside a markdown code span a backtick would end it early.
    return " ".join(text.replace("`", "'").split())


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    # Never leave a code span open: it would swallow the rest of the comment line.
    if cut.count("`") % 2:
        cut = cut[: cut.rfind("`")]
    return cut.rstrip() + "…"
