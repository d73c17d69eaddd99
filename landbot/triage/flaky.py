"""Positive evidence for a flaky failure, weighed. Pure: no I/O, no clock.

A log's words ("ECONNRESET", "timed out") say a failure *looks* flaky; they are not proof,
and a genuine assertion in a test that fails now and then looks exactly like a real bug.
Two kinds of evidence go beyond the words:

- the pull request's own head (outside the merge group): the same check failing there
  the same way (the same tests, when both sides name them) means the failure comes with
  the pull request, whatever the words say;
- the flaky-test ledger (store, `test_failures`): the same test of the same check failed
  on other pull requests recently and passed when they were retried.

The order, strongest first: the same failure on the PR's own head makes it `genuine`;
ledger evidence for every failed test of the job makes it `flaky`; otherwise the words
keep today's class. Classes that are not about tests (policy, infrastructure, timeout,
cancelled) are left alone: a runner that died is not a flaky test. Missing evidence (a call
that failed, a check the head does not run) is "no evidence", never a class of its own.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from landbot.core.model import JobFailure, TriageClass
from landbot.store.records import LedgerTest

# Only these classes are about what a test did; the rest are left as the words say.
WEIGHED: frozenset[TriageClass] = frozenset({"genuine", "flaky", "unknown"})

HeadState = Literal["failed", "passed", "pending", "absent"]


@dataclass(frozen=True)
class FlakyPolicy:
    """How much ledger evidence makes a failed test flaky."""

    window: dt.timedelta = dt.timedelta(days=7)
    # Other pull requests where the test failed and then passed on retry.
    min_passed_prs: int = 1


@dataclass(frozen=True)
class HeadCheck:
    """The same check on the pull request's own head, as GitHub lists it."""

    sha: str
    state: HeadState
    # The tests its log names, when the log was read (None: not read, or not served).
    failed_tests: tuple[str, ...] | None = None


def head_state(conclusion: str | None, status: str | None) -> HeadState:
    """A check run's state for the weighing (a check GitHub lists no run of is `absent`)."""
    if status != "completed":
        return "pending"
    if conclusion in ("success", "neutral", "skipped"):
        return "passed"
    if conclusion in ("failure", "timed_out"):
        return "failed"
    return "pending"  # cancelled, action_required, stale: says nothing either way


def ledger_flaky(
    job: JobFailure, ledger: Mapping[str, LedgerTest], policy: FlakyPolicy = FlakyPolicy()
) -> bool:
    """Whether the ledger calls every failed test of `job` flaky (records of other PRs)."""
    if not job.failed_tests:
        return False
    return all(
        (rec := ledger.get(t)) is not None and len(rec.passed_prs) >= policy.min_passed_prs
        for t in job.failed_tests
    )


def head_matters(
    job: JobFailure, ledger: Mapping[str, LedgerTest], policy: FlakyPolicy = FlakyPolicy()
) -> bool:
    """Whether the PR's own head can change this job's class (worth one call): only when
    the job would be called flaky, by its words or by the ledger."""
    return job.class_ == "flaky" or (job.class_ in WEIGHED and ledger_flaky(job, ledger, policy))


def same_failure(job: JobFailure, head: HeadCheck) -> bool:
    """The head failed the same check the same way: the same tests when both name them,
    else the same check failing."""
    if head.state != "failed":
        return False
    if head.failed_tests is None or not head.failed_tests or not job.failed_tests:
        return True
    return bool(set(head.failed_tests) & set(job.failed_tests))


def weigh(
    job: JobFailure,
    ledger: Mapping[str, LedgerTest],
    head: HeadCheck | None,
    policy: FlakyPolicy = FlakyPolicy(),
) -> JobFailure:
    """The job with its class weighed on the evidence, `log_class` keeping the words' class
    when it changed and `flaky_evidence` saying what decided in one sentence."""
    if job.class_ not in WEIGHED:
        return job
    words = job.class_
    if head is not None and same_failure(job, head):
        tests = _tests(job.failed_tests if head.failed_tests else ())
        evidence = (
            f"it failed the same way{tests} on the pull request's own head {head.sha[:7]}, "
            "outside the merge group"
        )
        return _changed(job, "genuine", words, evidence)
    if ledger_flaky(job, ledger, policy):
        return _changed(job, "flaky", words, ledger_sentence(job.failed_tests, ledger, policy))
    if words == "flaky" and head is not None and head.state == "passed":
        evidence = f"the same check passed on the pull request's own head {head.sha[:7]}"
        return replace(job, flaky_evidence=evidence)
    if head is not None and head.state == "failed":
        # The head failed, but other tests: a failure of its own, not this one.
        return replace(
            job,
            flaky_evidence=(
                f"the same check failed on the pull request's own head {head.sha[:7]}, "
                "but with other tests"
            ),
        )
    return job


def _changed(job: JobFailure, cls: TriageClass, words: TriageClass, evidence: str) -> JobFailure:
    return replace(
        job, class_=cls, log_class=words if words != cls else None, flaky_evidence=evidence
    )


def ledger_sentence(
    tests: Sequence[str], ledger: Mapping[str, LedgerTest], policy: FlakyPolicy = FlakyPolicy()
) -> str:
    """E.g. "`tests/a.py::test_x` failed in 4 other pull requests in the last 7 days and
    passed on retry in 4 of them" (the test with the most evidence, and how many more)."""
    known = [ledger[t] for t in tests if t in ledger]
    if not known:
        return ""
    best = max(known, key=lambda r: (len(r.passed_prs), r.failures, r.test))
    prs, passed = len(best.prs), len(best.passed_prs)
    text = (
        f"`{_code(best.test)}` failed in {prs} other pull request{'s' if prs != 1 else ''} "
        f"in the last {_window(policy.window)} and passed on retry in "
        f"{'all of them' if passed == prs else f'{passed} of them'}"
    )
    if len(known) > 1:
        more = len(known) - 1
        text += f" (and {more} more failed test{'s' if more != 1 else ''} likewise)"
    return text


def _tests(tests: Sequence[str]) -> str:
    if not tests:
        return ""
    shown = ", ".join(f"`{_code(t)}`" for t in tests[:3])
    return f" ({shown}{', …' if len(tests) > 3 else ''})"


def _window(window: dt.timedelta) -> str:
    days = window.total_seconds() / 86400
    if days == 1:
        return "day"
    if days.is_integer():
        return f"{int(days)} days"
    return f"{window.total_seconds() / 3600:g} hours"


def _code(text: str) -> str:
    # Inside a markdown code span a backtick would end it early.
    return " ".join(text.replace("`", "'").split())
