"""The drop's class from its failed jobs (landbot.triage.combine): pure, walked over every
pair of classes and checked as properties over any mix."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from landbot.core.model import NOT_ITS_FAULT, JobFailure, TriageClass
from landbot.triage.combine import (
    PRIORITY,
    JobVerdict,
    describe,
    evidence_why,
    overall,
)

CLASSES: tuple[TriageClass, ...] = PRIORITY
PR_FAULT = {"genuine", "policy"}


def job(
    name: str, cls: TriageClass, *, step: str | None = "Run make test", why: str = ""
) -> JobVerdict:
    failure = JobFailure(
        job=name,
        url=f"https://github.com/o/r/actions/runs/1/job/{abs(hash(name)) % 1000}",
        step=step,
        error_lines=(10,),
        excerpt=((10, "boom"),),
        summary=f"{name} failed",
        class_=cls,
    )
    return JobVerdict(failure, why or f"log line 10: `{name} evidence`")


def test_no_failed_job_gives_no_class() -> None:
    assert overall([]) == (None, "")


@pytest.mark.parametrize("cls", CLASSES)
def test_one_job_decides_alone(cls: TriageClass) -> None:
    got, reason = overall([job("only", cls)])
    assert got == cls
    assert "job `only`" in reason and "only evidence" in reason


@pytest.mark.parametrize(("a", "b"), list(itertools.product(CLASSES, CLASSES)))
def test_every_pair_takes_the_worse_class(a: TriageClass, b: TriageClass) -> None:
    got, _ = overall([job("first", a), job("second", b)])
    assert got == min(a, b, key=PRIORITY.index)
    # Order does not matter.
    assert overall([job("second", b), job("first", a)])[0] == got


def test_fail_fast_siblings_do_not_hide_the_failure() -> None:
    """A matrix job fails, fail-fast cancels the rest: the failure decides, not the
    cancellations, and the reason names the failing job."""
    verdicts = [job("test (3.11)", "cancelled"), job("test (3.12)", "genuine")] + [
        job(f"test (3.{n})", "cancelled") for n in (9, 10)
    ]
    cls, reason = overall(verdicts)
    assert cls == "genuine"
    assert reason.startswith("the pull request's own failure: job `test (3.12)`")


def test_the_quest_check_outweighs_a_test_failure() -> None:
    """Both must be fixed, but only a person can decide the quest tree."""
    assert overall([job("test", "genuine"), job("quest", "policy")])[0] == "policy"


def test_an_unexplained_failure_blocks_not_its_fault() -> None:
    assert overall([job("lint", "flaky"), job("circleci", "unknown")])[0] == "unknown"


def test_all_outside_the_pr_names_every_job() -> None:
    cls, reason = overall([job("a", "cancelled"), job("b", "flaky"), job("c", "infrastructure")])
    assert cls == "infrastructure"
    assert reason.startswith("a runner failure: job `c`")
    assert "also `a` cancelled, `b` flaky" in reason


def test_several_jobs_of_the_deciding_class_are_counted() -> None:
    _, reason = overall([job("a", "genuine"), job("b", "genuine"), job("c", "genuine")])
    assert "(and 2 more jobs)" in reason
    _, reason = overall([job("a", "genuine"), job("b", "genuine")])
    assert "(and 1 more job)" in reason


@given(st.lists(st.sampled_from(CLASSES), min_size=1, max_size=12))
def test_properties_over_any_mix(classes: list[TriageClass]) -> None:
    verdicts = [job(f"job{i}", c) for i, c in enumerate(classes)]
    cls, reason = overall(verdicts)
    assert cls in classes
    # The PR is blamed exactly when one of its jobs is its own failure...
    assert (cls in PR_FAULT) == bool(PR_FAULT & set(classes))
    # ...and it is "not its fault" exactly when every job is outside it.
    assert (cls in NOT_ITS_FAULT) == (set(classes) <= NOT_ITS_FAULT)
    # A cancelled job decides only when nothing but cancellations failed.
    assert (cls == "cancelled") == (set(classes) == {"cancelled"})
    assert reason.count("`") % 2 == 0 and len(reason) <= 400


def test_a_long_reason_is_clipped_without_an_open_code_span() -> None:
    long = evidence_why(7, "x" * 50 + " `quoted` " + "y" * 500)
    cls, reason = overall([job("a" * 80, "genuine", why=long), job("b", "cancelled")])
    assert cls == "genuine" and len(reason) <= 400 and reason.endswith("…")
    assert reason.count("`") % 2 == 0


def test_evidence_text_cannot_break_out_of_its_code_span() -> None:
    why = evidence_why(3, "  FAILED `weird` name  ")
    assert why == "log line 3: `FAILED 'weird' name`"
    assert describe(job("t`x", "genuine", step=None, why=why)) == (
        "job `t'x`, log line 3: `FAILED 'weird' name`"
    )
