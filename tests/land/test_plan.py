"""A saved plan round-trips, and one saved with a retired topic still finishes."""

from __future__ import annotations

from dataclasses import replace

from landbot.core.model import Evidence, FailedCheck, FixerResult, JobFailure
from landbot.land.model import AnnounceFix, Decision, HandBack, Requeue, RunFixer, Status
from landbot.land.plan import plan_from, plan_json

EVIDENCE = Evidence(
    failed_checks=(FailedCheck("test", "failure", "https://x/1"),),
    triage_class="genuine",
    triage_reason="a test failed",
    jobs=(JobFailure("test", "https://x/2", "Run pytest", (3, 4), ((3, "E a"),), "s", "genuine"),),
    conflict_files=("a.py",),
)


def test_a_plan_round_trips() -> None:
    decision = Decision(
        "pending",
        (Requeue("a" * 40), RunFixer("a" * 40, "agent"), Status("fixing_failed_checks")),
        "why",
    )
    fixer = FixerResult("fixed", pushed_sha="b" * 40)
    assert plan_from(plan_json(decision, EVIDENCE, fixer)) == (decision, EVIDENCE, fixer)
    handback = Decision("handed_back", (Status("handed_back"), HandBack("policy")), "w")
    assert plan_from(plan_json(handback, Evidence(), None)) == (handback, Evidence(), None)


def test_a_retired_topic_in_a_saved_plan_gets_the_general_template() -> None:
    old = plan_json(
        Decision("requeued", (Requeue("a" * 40), Status("requeued")), "w"), EVIDENCE, None
    )
    old["actions"][1]["topic"] = "requeued_manual"  # an older landbot's f-string topic
    decision, _, _ = plan_from(old)
    assert decision.actions[1] == Status("requeued")
    old["actions"][1] = {"type": "HandBack", "topic": "manual_again"}
    decision, _, _ = plan_from(old)
    assert decision.actions[1] == HandBack("requeued_again")
    old["actions"][1] = {"type": "HandBack", "topic": "branch_removed"}
    assert plan_from(old)[0].actions[1] == HandBack("removed")


def test_a_plan_of_issue_13_round_trips_through_json() -> None:
    """The announcement, the cap's hand-back, the fix's files and the group evidence come
    back as they were saved, through real JSON (lists, not tuples)."""
    import json

    decision = Decision(
        "fixed",
        (AnnounceFix("b" * 40), Status("fixed"), HandBack("cap_reached", cap="pushes")),
        "why",
    )
    fixer = FixerResult(
        "fixed",
        pushed_sha="b" * 40,
        files=(("app.py", 1, 1), ("logo.png", -1, -1)),
        reproduce="python -m pytest -q",
        cap="",
    )
    evidence = replace(EVIDENCE, prs_ahead=(3, 4), timed_out_checks=("ci / test",))
    saved = json.loads(json.dumps(plan_json(decision, evidence, fixer)))
    assert plan_from(saved) == (decision, evidence, fixer)
    # The control: a plan saved before issue 13 (no cap, no files) still loads.
    old = json.loads(json.dumps(plan_json(decision, EVIDENCE, FixerResult("fixed"))))
    del old["fixer"]["files"], old["fixer"]["reproduce"], old["fixer"]["cap"]
    old["actions"][2] = {"type": "HandBack", "topic": "policy"}
    _, _, loaded = plan_from(old)
    assert loaded == FixerResult("fixed")
    assert plan_from(old)[0].actions[2] == HandBack("policy")


def test_a_plan_with_a_test_reports_failures_round_trips_through_json() -> None:
    """The failed tests a run's test report named (issue 26.4) come back as the typed
    values they were saved as, through real JSON."""
    import json

    from landbot.core.model import ReportedTest

    job = replace(
        EVIDENCE.jobs[0],
        failed_tests=("tests/a.py::test_x", "tests/a.py::test_y"),
        tests_from="junit-results",
        reported_tests=(ReportedTest("tests/a.py::test_x", "assert 1 == 2", "E assert 1 == 2"),),
    )
    evidence = replace(EVIDENCE, jobs=(job,))
    decision = Decision("handed_back", (Status("handed_back"), HandBack("policy")), "w")
    saved = json.loads(json.dumps(plan_json(decision, evidence, None)))
    assert plan_from(saved) == (decision, evidence, None)
