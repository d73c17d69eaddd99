"""The decision function, walked exhaustively: every reason, PR state, triage class, budget
and fixer result, with invariants that must hold everywhere and a table of exact answers."""

from __future__ import annotations

import datetime as dt
import itertools
from dataclasses import replace
from typing import get_args

import pytest

from landbot.core.model import (
    Drop,
    Evidence,
    FixerResult,
    History,
    PrSnapshot,
    Source,
    Superseded,
    TriageClass,
)
from landbot.core.reasons import REASONS, normalize
from landbot.land.decide import (
    command_allowed,
    confirm,
    conflict_already_merged,
    decide,
    fix_head_moved,
    job_failed,
    needs_evidence,
    pr_cap,
    push_capped,
    pushed_while_queued,
    stand_down,
    superseded,
    taken_away,
    without_look,
)
from landbot.land.model import (
    DEFAULT_REASON_ACTIONS,
    HANDBACK_TOPICS,
    STATUS_TOPICS,
    AnnounceFix,
    Cap,
    HandBack,
    Policy,
    ReasonAction,
    Requeue,
    RunFixer,
    Status,
)

HEAD = "a" * 40
OTHER = "b" * 40
DROP = Drop(repo="o/r", pr=7, head_sha=HEAD, reason="failed_checks", source="webhook")
OPEN = PrSnapshot(state="open", head_sha=HEAD, in_queue=False, author="alice")

STALE = {
    "merged": replace(OPEN, state="merged"),
    "closed": replace(OPEN, state="closed"),
    "moved": replace(OPEN, head_sha="e" * 40),
    "queued": replace(OPEN, in_queue=True),
    "skip": replace(OPEN, labels=("landbot:skip",)),
}
CLASSES: list[TriageClass | None] = [None, *get_args(TriageClass)]
HISTORIES = [History(0, 0), History(1, 0), History(0, 1), History(1, 1)]
FIXER_RESULTS: list[FixerResult | None] = [
    None,
    FixerResult("fixed", pushed_sha=OTHER),
    FixerResult("fixed", pushed_sha=OTHER, auto_merge_armed=False),
    FixerResult("fixed"),
    FixerResult("flaky"),
    FixerResult("needs_human", recommendation="split the PR"),
    FixerResult("fixed", pushed_sha=OTHER, refused="touches .github/workflows/ci.yml"),
]


def all_cases():  # type: ignore[no-untyped-def]
    for reason, cls, hist, fixer_on, result, quest in itertools.product(
        REASONS, CLASSES, HISTORIES, (False, True), FIXER_RESULTS, (False, True)
    ):
        drop = replace(DROP, reason=reason, raw_reason=reason.upper())
        ev = Evidence(triage_class=cls, conflicts_all_quest=quest)
        yield drop, ev, hist, Policy(fixer_enabled=fixer_on), result


def test_the_walk_is_big_enough() -> None:
    assert sum(1 for _ in all_cases()) > 5000


def test_invariants_hold_for_every_input() -> None:
    for drop, ev, hist, policy, result in all_cases():
        d = decide(drop, OPEN, ev, hist, policy, result)
        kinds = [type(a) for a in d.actions]
        # Outcome and actions agree.
        assert (d.outcome == "requeued") == (Requeue in kinds), d
        assert (d.outcome == "handed_back") == (HandBack in kinds), d
        assert (d.outcome == "pending") == (RunFixer in kinds), d
        # A re-enqueue is always for the drop's own head, and only within the budget.
        for a in d.actions:
            if isinstance(a, Requeue):
                assert a.head_sha == HEAD
                assert hist.requeues < policy.max_requeues_per_head
            if isinstance(a, RunFixer):
                assert hist.fixer_attempts < 1 and result is None
                assert policy.fixer_enabled or a.mode == "merge_driver"
                assert a.mode == "agent" or (
                    drop.reason == "merge_conflict" and ev.conflicts_all_quest
                )
        # A hand-back always comes with the status comment, and at most one of each.
        if HandBack in kinds:
            assert Status in kinds
        assert kinds.count(HandBack) <= 1 and kinds.count(Status) <= 1
        # A person's removal, a merge, a cleared queue: no mutation, no comment.
        if drop.reason in ("manual", "merged", "already_merged", "queue_cleared"):
            assert (d.actions == () and d.outcome == "ignored") or result is not None
        # A cancelled or infrastructure failure is never handed back as the PR's fault
        # on the first failure.
        if (
            drop.reason == "failed_checks"
            and ev.triage_class in ("cancelled", "infrastructure", "flaky")
            and result is None
            and hist.requeues == 0
        ):
            assert d.outcome == "requeued"


@pytest.mark.parametrize("state", sorted(STALE))
def test_a_drop_that_no_longer_holds_does_nothing(state: str) -> None:
    for drop, ev, hist, policy, result in all_cases():
        d = decide(drop, STALE[state], ev, hist, policy, result)
        if result is None or (state in ("merged", "closed", "moved", "skip")):
            if state == "merged" and result is not None and result.pushed_sha:
                assert d.outcome == "fixed" and d.actions == ()
            else:
                assert d.outcome == "ignored" and d.actions == ()


def test_after_the_fixer_its_own_push_and_the_queue_do_not_make_the_drop_stale() -> None:
    pushed = FixerResult("fixed", pushed_sha=OTHER)
    at_fix = replace(OPEN, head_sha=OTHER, in_queue=True)  # auto-merge already queued it
    d = decide(DROP, at_fix, Evidence(), History(), Policy(fixer_enabled=True), pushed)
    assert d.outcome == "fixed"
    # The control: someone else's push during the fix makes it moot.
    other = replace(OPEN, head_sha="c" * 40)
    d = decide(DROP, other, Evidence(), History(), Policy(fixer_enabled=True), pushed)
    assert d.outcome == "ignored" and d.actions == ()
    # A needs_human verdict while a person re-queued it by hand: leave it alone.
    d = decide(
        DROP,
        replace(OPEN, in_queue=True),
        Evidence(),
        History(),
        Policy(),
        FixerResult("needs_human"),
    )
    assert d.outcome == "ignored"


def test_confirm_control_an_open_unchanged_pr_holds() -> None:
    assert confirm(DROP, OPEN, Policy()) is None
    assert confirm(DROP, replace(OPEN, labels=("bug",)), Policy()) is None


def kinds(d):  # type: ignore[no-untyped-def]
    return [(type(a).__name__, getattr(a, "topic", getattr(a, "mode", ""))) for a in d.actions]


@pytest.mark.parametrize(
    ("reason", "cls", "hist", "fixer_on", "outcome", "actions"),
    [
        ("manual", None, History(), True, "ignored", []),
        ("merged", None, History(), True, "ignored", []),
        ("already_merged", None, History(), True, "ignored", []),
        ("queue_cleared", None, History(), True, "ignored", []),
        (
            "checks_timed_out",
            None,
            History(),
            False,
            "requeued",
            [("Requeue", ""), ("Status", "requeued_checks_timed_out")],
        ),
        (
            "checks_timed_out",
            None,
            History(requeues=1),
            False,
            "handed_back",
            [("Status", "handed_back"), ("HandBack", "checks_timed_out_again")],
        ),
        (
            "failed_checks",
            None,
            History(),
            False,
            "handed_back",
            [("Status", "handed_back"), ("HandBack", "failed_checks")],
        ),
        (
            "merge_conflict",
            None,
            History(),
            False,
            "handed_back",
            [("Status", "handed_back"), ("HandBack", "conflict")],
        ),
        (
            "failed_checks",
            "genuine",
            History(),
            True,
            "pending",
            [("RunFixer", "agent"), ("Status", "fixing_failed_checks")],
        ),
        (
            "failed_checks",
            "genuine",
            History(fixer_attempts=1),
            True,
            "handed_back",
            [("Status", "handed_back"), ("HandBack", "failed_checks_fixer_spent")],
        ),
        (
            "failed_checks",
            "flaky",
            History(),
            True,
            "requeued",
            [("Requeue", ""), ("Status", "requeued_not_its_fault")],
        ),
        (
            "failed_checks",
            "flaky",
            History(requeues=1),
            True,
            "handed_back",
            [("Status", "handed_back"), ("HandBack", "not_its_fault_again")],
        ),
        (
            "failed_checks",
            "cancelled",
            History(),
            False,
            "requeued",
            [("Requeue", ""), ("Status", "requeued_not_its_fault")],
        ),
        # A policy failure goes to the fixer when one is configured (issue 13)...
        (
            "failed_checks",
            "policy",
            History(),
            True,
            "pending",
            [("RunFixer", "agent"), ("Status", "fixing_failed_checks")],
        ),
        # ...and without one, or with its attempt spent, is handed back as policy.
        (
            "failed_checks",
            "policy",
            History(),
            False,
            "handed_back",
            [("Status", "handed_back"), ("HandBack", "policy")],
        ),
        (
            "failed_checks",
            "policy",
            History(fixer_attempts=1),
            True,
            "handed_back",
            [("Status", "handed_back"), ("HandBack", "policy")],
        ),
        (
            "branch_protections",
            None,
            History(),
            True,
            "handed_back",
            [("Status", "handed_back"), ("HandBack", "branch_protections")],
        ),
        ("unknown", None, History(), True, "ignored", [("Status", "unknown_reason")]),
        (
            "roll_back",
            None,
            History(),
            True,
            "requeued",
            [("Requeue", ""), ("Status", "requeued_roll_back")],
        ),
    ],
)
def test_decision_table(reason, cls, hist, fixer_on, outcome, actions) -> None:  # type: ignore[no-untyped-def]
    d = decide(
        replace(DROP, reason=reason),
        OPEN,
        Evidence(triage_class=cls),
        hist,
        Policy(fixer_enabled=fixer_on),
    )
    assert (d.outcome, kinds(d)) == (outcome, actions)


@pytest.mark.parametrize("fixer_on", [False, True])
def test_quest_only_conflict_goes_to_the_merge_driver_even_without_an_agent(fixer_on: bool) -> None:
    d = decide(
        replace(DROP, reason="merge_conflict"),
        OPEN,
        Evidence(conflict_files=("quest/a.md",), conflicts_all_quest=True),
        History(),
        Policy(fixer_enabled=fixer_on),
    )
    assert kinds(d) == [("RunFixer", "merge_driver"), ("Status", "fixing_conflict")]
    # The control: a code conflict without an agent is handed back.
    code = decide(
        replace(DROP, reason="merge_conflict"),
        OPEN,
        Evidence(conflict_files=("app.py",)),
        History(),
        Policy(fixer_enabled=False),
    )
    assert kinds(code) == [("Status", "handed_back"), ("HandBack", "conflict")]


@pytest.mark.parametrize(
    ("result", "outcome", "topic"),
    [
        (FixerResult("fixed", pushed_sha=OTHER), "fixed", None),
        (
            FixerResult("fixed", pushed_sha=OTHER, auto_merge_armed=False),
            "handed_back",
            "auto_merge_failed",
        ),
        (FixerResult("fixed"), "handed_back", "fix_refused"),
        (FixerResult("needs_human"), "handed_back", "needs_human"),
        (FixerResult("flaky"), "requeued", None),
        (
            FixerResult("fixed", pushed_sha=OTHER, refused="protected path"),
            "handed_back",
            "fix_refused",
        ),
    ],
)
def test_after_the_fixer(result: FixerResult, outcome: str, topic: str | None) -> None:
    d = decide(DROP, OPEN, Evidence(), History(), Policy(fixer_enabled=True), result)
    assert d.outcome == outcome
    hand_backs = [a.topic for a in d.actions if isinstance(a, HandBack)]
    assert hand_backs == ([topic] if topic else [])


def test_policy_is_configurable() -> None:
    policy = Policy(reasons={**Policy().reasons, "manual": "requeue"}, max_requeues_per_head=2)
    d = decide(replace(DROP, reason="manual"), OPEN, Evidence(), History(requeues=1), policy)
    assert d.outcome == "requeued"


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("CI_FAILURE", "failed_checks"),
        ("failed_checks", "failed_checks"),
        ("CI_TIMEOUT", "checks_timed_out"),
        ("checks_timed_out", "checks_timed_out"),
        ("MERGE_CONFLICT", "merge_conflict"),
        ("merge_conflict", "merge_conflict"),
        ("MANUAL", "manual"),
        ("manual", "manual"),
        ("MERGE", "merged"),
        ("merged", "merged"),
        ("ALREADY_MERGED", "already_merged"),
        ("QUEUE_CLEARED", "queue_cleared"),
        ("ROLL_BACK", "roll_back"),
        ("BRANCH_PROTECTIONS", "branch_protections"),
        ("GIT_TREE_INVALID", "git_tree_invalid"),
        ("git_tree_invalid", "git_tree_invalid"),
        ("INVALID_MERGE_COMMIT", "invalid_merge_commit"),
        ("invalid_merge_commit", "invalid_merge_commit"),
        ("UNKNOWN_REMOVAL_REASON", "unknown"),
        ("BRANCH_REMOVED", "unknown"),
        ("", "unknown"),
        (None, "unknown"),
    ],
)
def test_reasons_normalize(raw: str | None, reason: str) -> None:
    assert normalize(raw) == reason


def test_a_conflict_that_is_gone_is_requeued_once() -> None:
    conflict = replace(DROP, reason="merge_conflict")
    gone = Evidence(base_sha="c" * 40, triage_reason="main now merges cleanly")
    d = decide(conflict, OPEN, gone, History(), Policy(fixer_enabled=True))
    assert kinds(d) == [("Requeue", ""), ("Status", "requeued_conflict_gone")]
    again = decide(conflict, OPEN, gone, History(requeues=1), Policy(fixer_enabled=True))
    assert kinds(again) == [("Status", "handed_back"), ("HandBack", "conflict_gone_again")]
    # The control: a conflict that is still there goes to the fixer.
    still = Evidence(base_sha="c" * 40, conflict_files=("app.py",))
    d = decide(conflict, OPEN, still, History(), Policy(fixer_enabled=True))
    assert kinds(d) == [("RunFixer", "agent"), ("Status", "fixing_conflict")]


# --- every topic a decision names has a template; every policy a maintainer can write ------

ACTIONS = get_args(ReasonAction)
SOURCES = get_args(Source)


def test_every_decision_under_every_policy_names_a_known_topic() -> None:
    """A maintainer may route any reason to any action ([policy.reasons]), and a person may
    retry any drop: whatever the route, the comment's topic is one with a template."""
    seen: set[str] = set()
    for reason, action, source in itertools.product(REASONS, ACTIONS, SOURCES):
        policy = Policy(reasons={**DEFAULT_REASON_ACTIONS, reason: action}, fixer_enabled=True)
        drop = replace(DROP, reason=reason, raw_reason=reason.upper(), source=source)
        for cls, hist, result in itertools.product(CLASSES, HISTORIES, FIXER_RESULTS):
            d = decide(drop, OPEN, Evidence(triage_class=cls), hist, policy, result)
            for a in d.actions:
                if isinstance(a, Status):
                    assert a.topic in STATUS_TOPICS, (reason, action, source, a)
                    seen.add(f"status:{a.topic}")
                if isinstance(a, HandBack):
                    assert a.topic in HANDBACK_TOPICS, (reason, action, source, a)
                    seen.add(f"handback:{a.topic}")
    # The walk reaches the general topics too (the control that it walks overrides at all).
    assert {"status:requeued", "handback:requeued_again", "handback:removed"} <= seen
    # With the PR's caps reached, every path that re-enqueues or runs the fixer ends in the
    # cap's hand-back, whose topic has a template too.
    capped = History(pr_pushes=9, pr_requeues=9, pr_fixer_runs=9)
    for reason, cls, result in itertools.product(REASONS, CLASSES, FIXER_RESULTS):
        drop = replace(DROP, reason=reason, raw_reason=reason.upper())
        policy = Policy(fixer_enabled=True)
        for a in decide(drop, OPEN, Evidence(triage_class=cls), capped, policy, result).actions:
            if isinstance(a, HandBack):
                assert a.topic in HANDBACK_TOPICS
                seen.add(f"handback:{a.topic}")
    assert "handback:cap_reached" in seen


def test_a_person_retrying_an_ignored_reason_requeues_it_with_the_general_topic() -> None:
    for source in ("command", "operator"):
        drop = replace(DROP, reason="manual", source=source)
        d = decide(drop, OPEN, Evidence(), History(), Policy())
        assert d.outcome == "requeued"
        assert kinds(d) == [("Requeue", ""), ("Status", "requeued")]
    # The control: the same removal seen by a door is ignored, with no look at GitHub.
    for source in ("webhook", "poll"):
        drop = replace(DROP, reason="manual", source=source)
        assert decide(drop, OPEN, Evidence(), History(), Policy()).outcome == "ignored"


# --- the decisions around decide ---------------------------------------------------------


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("reason", REASONS)
def test_without_look_only_for_a_reason_the_policy_ignores_from_a_door(
    reason: str, source: str
) -> None:
    drop = replace(DROP, reason=reason, source=source)
    early = without_look(drop, Policy())
    door = source in ("webhook", "poll")
    if door and DEFAULT_REASON_ACTIONS[reason] == "ignore":  # type: ignore[index]
        assert early is not None and early.outcome == "ignored" and early.actions == ()
    else:
        assert early is None
    # After the fixer the PR is always re-read.
    assert without_look(drop, Policy(), FixerResult("fixed")) is None


@pytest.mark.parametrize("reason", ["checks_timed_out", "roll_back"])
def test_a_reenqueue_reads_no_evidence_a_hand_back_does(reason: str) -> None:
    drop = replace(DROP, reason=reason)  # type: ignore[arg-type]
    # Within the head's budget the timeout is re-enqueued: nothing to read for that.
    assert not needs_evidence(drop, OPEN, Policy(), History())
    # The control: past it, the hand-back names what never finished, so triage runs.
    assert needs_evidence(drop, OPEN, Policy(), History(requeues=1))
    assert needs_evidence(drop, OPEN, Policy(), History(pr_requeues=3))  # the PR's cap
    assert needs_evidence(DROP, OPEN, Policy(), History())  # failed checks: always


@pytest.mark.parametrize("state", sorted(STALE))
def test_triage_runs_only_for_a_drop_that_still_holds(state: str) -> None:
    assert not needs_evidence(DROP, STALE[state], Policy())
    # The skip label is honoured before any log is downloaded (it used to be forgotten).
    assert needs_evidence(DROP, OPEN, Policy())  # the control


@pytest.mark.parametrize("state", sorted(STALE))
def test_a_saved_plan_is_taken_away_only_by_a_person(state: str) -> None:
    gone = taken_away(STALE[state], Policy())
    if state in ("merged", "closed", "skip"):
        assert gone is not None and gone.outcome == "ignored" and gone.actions == ()
    else:  # the plan's own re-enqueue or push moved it
        assert gone is None
    assert taken_away(OPEN, Policy()) is None


@pytest.mark.parametrize("permission", ["admin", "maintain", "write", "triage", "read", "none"])
def test_only_writers_may_command(permission: str) -> None:
    assert command_allowed(permission) == (permission in ("admin", "maintain", "write"))


def test_a_job_that_cannot_finish_fails_its_drop() -> None:
    d = job_failed("the host cannot sandbox")
    assert d.outcome == "failed" and d.actions == () and d.why == "the host cannot sandbox"


def test_the_fixer_stops_on_a_moved_head_and_passes_an_unmoved_one() -> None:
    assert fix_head_moved(DROP, HEAD) is None
    moved = fix_head_moved(DROP, OTHER)
    assert moved is not None and moved.verdict == "needs_human" and moved.pushed_sha is None
    assert moved.refused and OTHER[:12] in moved.refused and HEAD[:12] in moved.refused
    # Through the decision, it is handed back as refused, never published.
    d = decide(DROP, OPEN, Evidence(), History(), Policy(fixer_enabled=True), moved)
    assert kinds(d) == [("Status", "handed_back"), ("HandBack", "fix_refused")]


def test_a_conflict_already_merged_only_needs_the_queue() -> None:
    result = conflict_already_merged("main", "c" * 40)
    assert result.verdict == "flaky" and "main" in result.summary
    conflict = replace(DROP, reason="merge_conflict")
    d = decide(conflict, OPEN, Evidence(), History(), Policy(fixer_enabled=True), result)
    # Its own path: the conflict was gone, never "the fixer found the failure flaky".
    assert d.outcome == "requeued"
    assert kinds(d) == [("Requeue", ""), ("Status", "requeued_conflict_gone")]
    spent = decide(conflict, OPEN, Evidence(), History(1), Policy(fixer_enabled=True), result)
    assert kinds(spent) == [("Status", "handed_back"), ("HandBack", "conflict_gone_again")]
    # The control: a flaky verdict on failed checks keeps the flaky-verdict topics.
    d = decide(DROP, OPEN, Evidence(), History(), Policy(fixer_enabled=True), result)
    assert kinds(d) == [("Requeue", ""), ("Status", "requeued_flaky_verdict")]
    d = decide(DROP, OPEN, Evidence(), History(1), Policy(fixer_enabled=True), result)
    assert kinds(d) == [("Status", "handed_back"), ("HandBack", "flaky_verdict_again")]


def test_no_flaky_verdict_topic_for_a_conflict_anywhere() -> None:
    conflict = replace(DROP, reason="merge_conflict")
    flaky_topics = {"requeued_flaky_verdict", "flaky_verdict_again"}
    for hist, result in itertools.product(HISTORIES, FIXER_RESULTS):
        d = decide(conflict, OPEN, Evidence(), hist, Policy(fixer_enabled=True), result)
        assert not {getattr(a, "topic", None) for a in d.actions} & flaky_topics, d


@pytest.mark.parametrize(
    ("cause", "state"), [("pushed", "moved"), ("closed", "closed"), ("merged", "merged")]
)
def test_a_push_or_close_ends_pending_drops_as_confirm_would(cause: str, state: str) -> None:
    d = superseded(Superseded("o/r", 7, cause, old_head=HEAD))  # type: ignore[arg-type]
    # The same answer the drop's own re-read would give, without the GitHub call.
    assert d == confirm(DROP, STALE[state], Policy())
    assert d.outcome == "ignored" and d.actions == ()


# --- a push while queued: the webhook names the new head ---------------------------------

T = dt.datetime(2026, 12, 1, 10, 0, tzinfo=dt.UTC)
OLD = "c" * 40
GROUP = "d" * 40
HOOK = replace(DROP, reason="unknown", observed_at=T + dt.timedelta(seconds=2))
PUSHED = replace(OPEN, removed_commit=OLD, removed_at=T, commits=(OLD, HEAD))


@pytest.mark.parametrize(
    ("why", "drop", "pr", "ignored"),
    [
        ("the removed commit is an earlier commit of the PR", HOOK, PUSHED, True),
        (
            "force-pushed as it was removed",
            HOOK,
            replace(PUSHED, commits=(HEAD,), force_pushed_at=(T,)),
            True,
        ),
        # The controls: every way the removal is this head's own.
        ("the removed commit is the head", HOOK, replace(PUSHED, removed_commit=HEAD), False),
        (
            "a merge group built on the head",
            HOOK,
            replace(PUSHED, removed_commit=GROUP, removed_parents=(OLD, HEAD)),
            False,
        ),
        (
            "a squash group the timeline cannot place",
            HOOK,
            replace(PUSHED, removed_commit=GROUP),
            False,
        ),
        (
            "an old force push",
            HOOK,
            replace(PUSHED, commits=(HEAD,), force_pushed_at=(T - dt.timedelta(hours=1),)),
            False,
        ),
        (
            "the timeline still shows the previous removal",
            replace(HOOK, observed_at=T + dt.timedelta(minutes=30)),
            PUSHED,
            False,
        ),
        ("no removal in the timeline yet", HOOK, replace(PUSHED, removed_commit=None), False),
        (
            "a poll's drop (the sweep ties its own head)",
            replace(HOOK, source="poll"),
            PUSHED,
            False,
        ),
        ("a person asked", replace(HOOK, source="command"), PUSHED, False),
    ],
)
def test_a_push_while_queued_is_told_from_a_removal_of_this_head(
    why: str, drop: Drop, pr: PrSnapshot, ignored: bool
) -> None:
    moved = pushed_while_queued(drop, pr)
    assert (moved is not None) == ignored, why
    d = decide(drop, pr, Evidence(), History(), Policy())
    if ignored:
        assert d.outcome == "ignored" and d.actions == () and OLD[:7] in d.why
        assert not needs_evidence(drop, pr, Policy())
    else:
        assert d.actions != () or (d.outcome == "ignored" and "pushed" not in d.why)


# --- caps per pull request across heads (issue 13) ----------------------------------------

CAPS: tuple[Cap, ...] = get_args(Cap)
CAPPED = Policy(fixer_enabled=True)  # the defaults: 2 pushes, 3 re-enqueues, 3 fixer runs
LIMIT = {
    "pushes": CAPPED.max_pushes_per_pr,
    "requeues": CAPPED.max_requeues_per_pr,
    "fixer_runs": CAPPED.max_fixer_runs_per_pr,
}
FIELD = {"pushes": "pr_pushes", "requeues": "pr_requeues", "fixer_runs": "pr_fixer_runs"}


def cap_states():  # type: ignore[no-untyped-def]
    """Each cap one below its value or at it, and whether its hand-back was given."""
    for at in itertools.product((False, True), repeat=len(CAPS)):
        counts = {FIELD[c]: LIMIT[c] - 1 + reached for c, reached in zip(CAPS, at, strict=True)}
        reached = frozenset(c for c, r in zip(CAPS, at, strict=True) if r)
        for announced in (frozenset(), reached, frozenset(CAPS)):
            yield counts, reached, announced


def expected_with_caps(base, reached, announced):  # type: ignore[no-untyped-def]
    """The spec, stated on the decision without caps: a re-enqueue or a fixer run past a
    reached cap becomes that cap's one hand-back (or, given already, a status edit only);
    every other decision is unchanged."""
    kinds_ = {type(a) for a in base.actions}
    cap: str | None = None
    if Requeue in kinds_ and "requeues" in reached:
        cap = "requeues"
    if RunFixer in kinds_:
        cap = next((c for c in ("pushes", "fixer_runs") if c in reached), None)
    if cap is None:
        return base.outcome, base.actions
    if cap in announced:
        return "ignored", (Status("handed_back"),)
    return "handed_back", (Status("handed_back"), HandBack("cap_reached", cap=cap))  # type: ignore[arg-type]


def test_every_path_with_every_combination_of_the_caps() -> None:
    walked = 0
    seen_caps: set[str] = set()
    for drop, ev, hist, policy, result in all_cases():
        policy = replace(policy, fixer_enabled=policy.fixer_enabled)
        base = decide(drop, OPEN, ev, hist, policy, result)
        for counts, reached, announced in cap_states():
            h = replace(hist, **counts, pr_capped=announced)
            d = decide(drop, OPEN, ev, h, policy, result)
            assert (d.outcome, d.actions) == expected_with_caps(base, reached, announced), (
                drop.reason,
                ev,
                h,
                result,
                d,
            )
            # Nothing past a cap is ever done, whatever the path.
            for a in d.actions:
                if isinstance(a, Requeue):
                    assert h.pr_requeues < policy.max_requeues_per_pr
                if isinstance(a, RunFixer):
                    assert h.pr_pushes < policy.max_pushes_per_pr
                    assert h.pr_fixer_runs < policy.max_fixer_runs_per_pr
                if isinstance(a, HandBack) and a.topic == "cap_reached":
                    assert a.cap in reached and a.cap not in announced
                    seen_caps.add(a.cap)  # type: ignore[arg-type]
            walked += 1
    assert walked > 200_000
    assert seen_caps == set(CAPS)  # the walk reaches the hand-back of every cap


def test_below_every_cap_the_decision_is_unchanged() -> None:
    """The control of the walk: counts one below each cap change nothing at all."""
    below = History(pr_pushes=1, pr_requeues=2, pr_fixer_runs=2)
    for drop, ev, hist, policy, result in all_cases():
        h = replace(hist, pr_pushes=1, pr_requeues=2, pr_fixer_runs=2)
        assert decide(drop, OPEN, ev, h, policy, result) == decide(
            drop, OPEN, ev, hist, policy, result
        ), (drop.reason, ev, below, result)


@pytest.mark.parametrize(
    ("reason", "cls", "history", "cap"),
    [
        ("failed_checks", "genuine", History(pr_pushes=2), "pushes"),
        ("failed_checks", "genuine", History(pr_fixer_runs=3), "fixer_runs"),
        ("failed_checks", "policy", History(pr_fixer_runs=3), "fixer_runs"),
        ("merge_conflict", None, History(pr_pushes=2), "pushes"),
        ("failed_checks", "flaky", History(pr_requeues=3), "requeues"),
        ("checks_timed_out", None, History(pr_requeues=3), "requeues"),
        # Both reached: the push cap is named (what the author sees landbot doing).
        ("failed_checks", "genuine", History(pr_pushes=2, pr_fixer_runs=3), "pushes"),
    ],
)
def test_past_a_cap_one_hand_back_names_it_then_no_second_mention(
    reason: str, cls: TriageClass | None, history: History, cap: str
) -> None:
    drop = replace(DROP, reason=reason)  # type: ignore[arg-type]
    ev = Evidence(triage_class=cls, conflict_files=("app.py",))
    d = decide(drop, OPEN, ev, history, CAPPED)
    assert d.outcome == "handed_back"
    assert d.actions == (Status("handed_back"), HandBack("cap_reached", cap=cap))  # type: ignore[arg-type]
    named = {"pushes": "fixes pushed", "requeues": "re-enqueues", "fixer_runs": "fixer runs"}
    assert f"{named[cap]}: {LIMIT[cap]} of {LIMIT[cap]} per day" in d.why
    # The same cap, handed back already, nothing reset it: no new mention.
    again = decide(drop, OPEN, ev, replace(history, pr_capped=frozenset({cap})), CAPPED)
    assert again.outcome == "ignored" and again.actions == (Status("handed_back"),)
    # Another cap's hand-back given does not silence this one.
    others = frozenset(CAPS) - {cap}
    other = decide(drop, OPEN, ev, replace(history, pr_capped=others), CAPPED)
    assert other == d
    # The control: one below the cap, landbot acts.
    field = FIELD[cap]
    below = replace(history, **{field: LIMIT[cap] - 1})
    if cap == "pushes" and history.pr_fixer_runs >= LIMIT["fixer_runs"]:
        below = replace(below, pr_fixer_runs=0)
    acted = decide(drop, OPEN, ev, below, CAPPED)
    assert acted.outcome in ("requeued", "pending"), acted


def test_pr_cap_names_which_cap_stops_what() -> None:
    assert pr_cap(History(), CAPPED, "requeue") is None
    assert pr_cap(History(), CAPPED, "fixer") is None
    assert pr_cap(History(pr_requeues=3), CAPPED, "requeue") == "requeues"
    assert pr_cap(History(pr_requeues=3), CAPPED, "fixer") is None
    assert pr_cap(History(pr_pushes=2), CAPPED, "fixer") == "pushes"
    assert pr_cap(History(pr_pushes=2), CAPPED, "requeue") is None
    assert pr_cap(History(pr_fixer_runs=3), CAPPED, "fixer") == "fixer_runs"
    # A cap of 0 stops the first one; a raised cap lets more through.
    assert pr_cap(History(), replace(CAPPED, max_requeues_per_pr=0), "requeue") == "requeues"
    assert pr_cap(History(pr_pushes=2), replace(CAPPED, max_pushes_per_pr=5), "fixer") is None


def test_the_push_cap_before_publish() -> None:
    assert push_capped(History(pr_pushes=1), CAPPED) is None  # the control
    capped = push_capped(History(pr_pushes=2), CAPPED, "answer() returned 41", "")
    assert capped is not None and capped.cap == "pushes" and capped.pushed_sha is None
    assert capped.summary == "answer() returned 41" and "nothing pushed" in capped.refused
    assert "2" in capped.refused and "day" in capped.refused
    # Through the decision: the cap's hand-back (not fix_refused), once.
    d = decide(DROP, OPEN, Evidence(), History(pr_pushes=2), CAPPED, capped)
    assert d.actions == (Status("handed_back"), HandBack("cap_reached", cap="pushes"))
    told = History(pr_pushes=2, pr_capped=frozenset({"pushes"}))
    d = decide(DROP, OPEN, Evidence(), told, CAPPED, capped)
    assert d.outcome == "ignored" and d.actions == (Status("handed_back"),)
    # The control: a refusal that is not a cap stays fix_refused.
    refused = FixerResult("fixed", refused="touches .github/workflows/ci.yml")
    d = decide(DROP, OPEN, Evidence(), History(pr_pushes=2), CAPPED, refused)
    assert kinds(d) == [("Status", "handed_back"), ("HandBack", "fix_refused")]
    assert push_capped(History(pr_pushes=2), replace(CAPPED, max_pushes_per_pr=3)) is None


def test_every_push_is_announced_before_the_status() -> None:
    pushed = FixerResult("fixed", pushed_sha=OTHER)
    d = decide(DROP, replace(OPEN, head_sha=OTHER), Evidence(), History(), CAPPED, pushed)
    assert d.outcome == "fixed"
    assert d.actions == (AnnounceFix(OTHER), Status("fixed"))
    # A push at the cap's last slot is still announced (the cap counts it afterwards).
    d = decide(DROP, OPEN, Evidence(), History(pr_pushes=2), CAPPED, pushed)
    assert d.actions == (AnnounceFix(OTHER), Status("fixed"))
    # The control: nothing pushed, nothing announced.
    for result in FIXER_RESULTS:
        if result is not None and not (result.pushed_sha and not result.refused):
            d = decide(DROP, OPEN, Evidence(), History(), CAPPED, result)
            assert not any(isinstance(a, AnnounceFix) for a in d.actions), (result, d)


# --- the fixer's last look before it publishes (issue 27, point 4) -------------------------


@pytest.mark.parametrize(
    ("pr", "said"),
    [
        (replace(OPEN, state="merged"), "merged while the fixer worked"),
        (replace(OPEN, state="closed"), "closed while the fixer worked"),
        (replace(OPEN, in_queue=True), "put back in the merge queue while the fixer worked"),
        (replace(OPEN, labels=("landbot:skip",)), "marked landbot:skip while the fixer worked"),
    ],
)
def test_the_fixer_stands_down_when_a_person_has_decided(pr: PrSnapshot, said: str) -> None:
    why = stand_down(pr, "landbot:skip")
    assert why is not None and said in why and "nothing pushed" in why


@pytest.mark.parametrize(
    "pr",
    [
        OPEN,  # nobody acted
        replace(OPEN, labels=("bug", "landbot:fixing")),  # other labels are no decision
        replace(OPEN, auto_merge=True),  # armed auto-merge is not the queue
    ],
)
def test_control_the_fixer_publishes_for_an_open_pr_nobody_took_back(pr: PrSnapshot) -> None:
    assert stand_down(pr, "landbot:skip") is None


def test_a_skip_label_switched_off_is_no_stand_down() -> None:
    assert stand_down(replace(OPEN, labels=("landbot:skip",)), "") is None
    assert stand_down(replace(OPEN, labels=("landbot:skip",)), None) is None
