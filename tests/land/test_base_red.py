"""The red-base decisions (issue 27.1), walked: when the base is worth reading, when a drop
waits, and what a waiting drop becomes. Each refusal has its control."""

from __future__ import annotations

import datetime as dt
import itertools
from dataclasses import replace

import pytest

from landbot.core.model import Drop, Evidence, History, JobFailure, PrSnapshot
from landbot.land.decide import after_base, base_is_red, base_verdict, decide, needs_base_check
from landbot.land.model import Policy

HEAD = "a" * 40
DROP = Drop("o/r", 7, HEAD, "failed_checks", "webhook")
PR = PrSnapshot("open", HEAD, False, "alice", node_id="PR_1")


def job(name: str, cls: str = "genuine", lines: tuple[int, ...] = (3,)) -> JobFailure:
    return JobFailure(name, "", "Run x", lines, ((3, "E assert 1 == 2"),), "", cls)  # type: ignore[arg-type]


GENUINE = Evidence(triage_class="genuine", jobs=(job("test"),))


def test_the_base_is_read_only_for_a_drop_blamed_on_the_pr() -> None:
    assert needs_base_check(DROP, GENUINE, Policy())
    # controls: not its fault anyway, another reason, no error lines, no triage
    assert not needs_base_check(DROP, replace(GENUINE, triage_class="flaky"), Policy())
    assert not needs_base_check(replace(DROP, reason="merge_conflict"), GENUINE, Policy())
    assert not needs_base_check(DROP, replace(GENUINE, jobs=(job("test", lines=()),)), Policy())
    assert not needs_base_check(DROP, Evidence(), Policy())
    routed = Policy(reasons={"failed_checks": "handback"})
    assert not needs_base_check(DROP, GENUINE, routed)


def test_a_drop_waits_only_when_every_blamed_job_is_red_on_the_base() -> None:
    red = replace(GENUINE, base_red=("test",))
    assert base_is_red(red, Policy())
    assert decide(DROP, PR, red, History(), Policy()).outcome == "waiting_base"
    assert decide(DROP, PR, red, History(), Policy(fixer_enabled=True)).outcome == "waiting_base"
    # control: the same evidence without the base's failure is handed back / fixed
    assert decide(DROP, PR, GENUINE, History(), Policy()).outcome == "handed_back"
    assert decide(DROP, PR, GENUINE, History(), Policy(fixer_enabled=True)).outcome == "pending"
    # a second job of the PR's own is not the base's: the PR's fault
    two = replace(red, jobs=(job("test"), job("lint")))
    assert not base_is_red(two, Policy())
    assert decide(DROP, PR, two, History(), Policy()).outcome == "handed_back"
    # a cancelled sibling does not count against it
    sibling = replace(red, jobs=(job("test"), job("other", "cancelled")))
    assert base_is_red(sibling, Policy())
    # a closed PR is left alone before any of this
    closed = replace(PR, state="closed")
    assert decide(DROP, closed, red, History(), Policy()).outcome == "ignored"


STATES = ("passed", "failed_same", "failed_other", "pending", "absent", None)


@pytest.mark.parametrize(("state", "over"), list(itertools.product(STATES, (False, True))))
def test_every_base_state_and_wait(state: str | None, over: bool) -> None:
    ev = replace(GENUINE, base_red=("test",))
    policy = Policy(base_wait=dt.timedelta(hours=6))
    waited = dt.timedelta(hours=7 if over else 1)
    states = None if state is None else {"test": state}
    verdict = base_verdict(ev, states, waited, policy)
    if state == "passed":
        assert verdict == "green"  # green wins, even past the wait
    elif over:
        assert verdict == "deadline"
    else:
        assert verdict == "wait"


def test_green_needs_every_red_job_to_pass() -> None:
    ev = replace(GENUINE, base_red=("test", "lint"))
    policy = Policy()
    hour = dt.timedelta(hours=1)
    assert base_verdict(ev, {"test": "passed", "lint": "failed_same"}, hour, policy) == "wait"
    assert base_verdict(ev, {"test": "passed", "lint": "passed"}, hour, policy) == "green"
    assert base_verdict(replace(ev, base_red=()), {"test": "passed"}, hour, policy) == "wait"


def test_what_a_waiting_drop_becomes() -> None:
    policy = Policy()
    assert after_base(DROP, PR, History(), policy, "wait") is None
    green = after_base(DROP, PR, History(), policy, "green")
    assert green is not None and green.outcome == "requeued"
    late = after_base(DROP, PR, History(), policy, "deadline")
    assert late is not None and late.outcome == "handed_back"
    # within the per-head budget and the per-PR caps
    spent = after_base(DROP, PR, History(requeues=1), policy, "green")
    assert spent is not None and spent.outcome == "handed_back"
    capped = after_base(DROP, PR, History(pr_requeues=3), policy, "green")
    assert capped is not None and capped.outcome == "handed_back"
    # a PR that moved on meanwhile is left alone
    for pr in (
        replace(PR, state="merged"),
        replace(PR, head_sha="b" * 40),
        replace(PR, in_queue=True),
    ):
        left = after_base(DROP, pr, History(), policy, "green")
        assert left is not None and left.outcome == "ignored"
