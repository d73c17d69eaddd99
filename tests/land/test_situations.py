"""Snapshots of situations, not templates (bors-style): each situation is a drop, the pull
request as re-read, triage's evidence, the history and maybe the fixer's result, consistent
with one another; it goes through the real decision (landbot.land.decide.decide), and what
the decision's actions say is rendered and snapshotted, one file per situation in
tests/land/situations/. So the text shown is the text that situation produces, and an
impossible combination (a pytest excerpt under "checks timed out") cannot be rendered.

Set LANDBOT_UPDATE_SNAPSHOTS=1 to rewrite them after a deliberate change, then read the diff.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest

from landbot.core.model import (
    Drop,
    Evidence,
    FailedCheck,
    FixerResult,
    History,
    JobFailure,
    PrSnapshot,
)
from landbot.land.breaker import BreakerState, after_breaker, gate
from landbot.land.comments import (
    FIX_MARKER,
    HANDBACK_MARKER,
    STATUS_MARKER,
    render_fix_pushed,
    render_handback,
    render_status,
)
from landbot.land.decide import BaseVerdict, after_base, decide
from landbot.land.model import (
    HANDBACK_TOPICS,
    STATUS_TOPICS,
    AnnounceFix,
    Decision,
    HandBack,
    Policy,
    Status,
)
from landbot.store.records import LedgerTest
from landbot.triage.flaky import HeadCheck, ledger_sentence, weigh

from ..conftest import matches_snapshot

SNAPSHOTS = Path(__file__).parent / "situations"
HEAD = "0123456789abcdef0123456789abcdef01234567"
PUSHED = "fedcba9876543210fedcba9876543210fedcba98"
GROUP = "9" * 40
GROUP_BASE = "8" * 40
BASE = "7" * 40
FIX_URL = "https://github.com/octo/app/pull/42#issuecomment-1001"
JOB_URL = "https://github.com/octo/app/actions/runs/1/job/9"

PR = PrSnapshot(state="open", head_sha=HEAD, in_queue=False, author="alice", base_ref="main")
FORK_PR = replace(PR, author="outsider", fork=True)
FIXER = Policy(fixer_enabled=True)
NO_FIXER = Policy()


def drop(reason: str, **kw: object) -> Drop:
    return Drop(repo="octo/app", pr=42, head_sha=HEAD, reason=reason, source="webhook", **kw)  # type: ignore[arg-type]


# --- evidence as triage gives it for each kind of drop ------------------------------------

PYTEST = Evidence(
    failed_checks=(FailedCheck("test (3.12)", "failure", JOB_URL),),
    triage_class="genuine",
    triage_reason="the pull request's own failure: 1 test failed",
    jobs=(
        JobFailure(
            job="test (3.12)",
            url=JOB_URL,
            step="Run pytest -q",
            error_lines=(120, 131),
            excerpt=(
                (119, "    assert add(2, 2) == 5"),
                (120, "E   assert 4 == 5"),
                (131, "FAILED tests/test_math.py::test_add"),
            ),
            summary="1 test failed in step 'Run pytest -q': tests/test_math.py::test_add",
            class_="genuine",
            run="pytest -q",
            working_directory="services/api",
            line_url=f"{JOB_URL}#step:5:24",
        ),
    ),
    group_sha=GROUP,
    group_base_sha=GROUP_BASE,
    prs_ahead=(40, 41),
)
# A failure in a `uses:` step: triage gives no command for it.
SETUP_NODE = Evidence(
    failed_checks=(FailedCheck("build", "failure", JOB_URL),),
    triage_class="genuine",
    triage_reason="the pull request's own failure: the step failed",
    jobs=(
        JobFailure(
            job="build",
            url=JOB_URL,
            step="Run actions/setup-node@v4",
            error_lines=(40,),
            excerpt=((40, "##[error]Unable to find Node version '99' for platform linux"),),
            summary="step 'Run actions/setup-node@v4' failed; reproduce the step locally",
            class_="genuine",
        ),
    ),
    group_sha=GROUP,
    group_base_sha=GROUP_BASE,
)
# A test the log calls genuine (an assertion) that the flaky-test ledger knows: it failed on
# other pull requests this week and passed when they were retried (triage/flaky.py).
_LEDGER_NOW = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.UTC)
_TIMEOUT_TEST = "tests/test_net.py::test_fetch_retries"
_LEDGER = {
    _TIMEOUT_TEST: LedgerTest(
        repo="octo/app",
        test=_TIMEOUT_TEST,
        check="test (3.12)",
        failures=4,
        prs=(37, 38, 39, 40),
        passed_prs=(37, 38, 39, 40),
        retries_passed=4,
        first_seen=_LEDGER_NOW - dt.timedelta(days=5),
        last_seen=_LEDGER_NOW - dt.timedelta(hours=3),
    )
}
_SEEN_TEST = JobFailure(
    job="test (3.12)",
    url=JOB_URL,
    step="Unit tests",
    error_lines=(212,),
    excerpt=((211, "E   AssertionError: 2 retries, expected 3"), (212, f"FAILED {_TIMEOUT_TEST}")),
    summary=f"1 test failed in step 'Unit tests': {_TIMEOUT_TEST}",
    class_="genuine",
    run="pytest -q",
    signal="steps-api",
    failed_tests=(_TIMEOUT_TEST,),
)
LEDGER_FLAKY = Evidence(
    failed_checks=(FailedCheck("test (3.12)", "failure", JOB_URL),),
    triage_class="flaky",
    triage_reason=(
        "a flaky failure: job `test (3.12)`, step `Unit tests`, "
        + ledger_sentence((_TIMEOUT_TEST,), _LEDGER)
    ),
    jobs=(weigh(_SEEN_TEST, _LEDGER, HeadCheck(HEAD, "passed")),),
    group_sha=GROUP,
    group_base_sha=GROUP_BASE,
)
# The same test failing the same way on the pull request's own head: genuine, ledger or not.
ON_OWN_HEAD = Evidence(
    failed_checks=(FailedCheck("test (3.12)", "failure", JOB_URL),),
    triage_class="genuine",
    triage_reason="the pull request's own failure: job `test (3.12)`, step `Unit tests`",
    jobs=(weigh(_SEEN_TEST, _LEDGER, HeadCheck(HEAD, "failed", (_TIMEOUT_TEST,))),),
    group_sha=GROUP,
    group_base_sha=GROUP_BASE,
)
NPM_RESET = Evidence(
    failed_checks=(FailedCheck("build", "failure", JOB_URL),),
    triage_class="flaky",
    triage_reason="not the pull request's fault: a package registry dropped the connection",
    jobs=(
        JobFailure(
            job="build",
            url=JOB_URL,
            step="Run npm ci",
            error_lines=(88,),
            excerpt=((88, "npm ERR! code ECONNRESET"),),
            summary="step 'Run npm ci' lost its connection to a package registry (ECONNRESET)",
            class_="flaky",
            run="npm ci",
        ),
    ),
    group_sha=GROUP,
    group_base_sha=GROUP_BASE,
)
QUEST = Evidence(
    failed_checks=(FailedCheck("quest", "failure", JOB_URL),),
    triage_class="policy",
    triage_reason="the quest check failed",
    jobs=(
        JobFailure(
            job="quest",
            url=JOB_URL,
            step="Run landbot quest check",
            error_lines=(30,),
            excerpt=((30, "quest: quest/m1/README.md: a standalone quest needs a size"),),
            summary=(
                "quest check found 1 problem: quest/m1/README.md: a standalone quest needs a size"
            ),
            class_="policy",
            run="landbot quest check --base origin/main",
        ),
    ),
    quest_explanations=(
        "quest/m1/README.md: the change deletes quest/m1/a.md, its last child, so m1 is now "
        "a standalone quest and needs a size",
    ),
    group_sha=GROUP,
    group_base_sha=GROUP_BASE,
)
CONFLICT = Evidence(
    triage_reason="2 conflicting files merging `main` at 7777777",
    conflict_files=("src/app.py", "docs/guide.md"),
    base_sha=BASE,
)
CONFLICT_GONE = Evidence(
    triage_reason="`main` at 7777777 now merges cleanly into 0123456: the conflict is gone",
    base_sha=BASE,
)
TIMED_OUT = Evidence(timed_out_checks=("e2e (chromium)", "integration"), group_sha=GROUP)

NEEDS_HUMAN = FixerResult(
    "needs_human",
    summary="test_add asserts 2 + 2 == 5 since this pull request changed it",
    recommendation="decide whether the test or add() is wrong",
    reproduce="cd services/api && pytest -q tests/test_math.py",
)
PUSHED_FIX = FixerResult(
    "fixed",
    summary="add() returned a + b + 1 after the refactor; fixed the off-by-one",
    pushed_sha=PUSHED,
    reproduce="cd services/api && pytest -q tests/test_math.py",
    files=(("services/api/math.py", 1, 1), ("services/api/logo.png", -1, -1)),
)


@dataclass(frozen=True)
class Situation:
    name: str
    drop: Drop
    evidence: Evidence
    expect: frozenset[str]  # "outcome", "status:<topic>", "handback:<topic>", "announce"
    pr: PrSnapshot = PR
    history: History = field(default_factory=History)
    policy: Policy = NO_FIXER
    fixer: FixerResult | None = None
    after: PrSnapshot | None = None  # the PR as re-read after the fixer (its head moved)
    base: BaseVerdict | None = None  # a waiting drop looked at again (issue 27.1)
    # The repository's breaker (issue 27.2): open while the drop is decided, or closed
    # and its held drop released.
    breaker: str | None = None


def s(name: str, reason: str, evidence: Evidence, *expect: str, **kw: object) -> Situation:
    return Situation(name, drop(reason), evidence, frozenset(expect), **kw)  # type: ignore[arg-type]


AFTER_PUSH = replace(PR, head_sha=PUSHED, auto_merge=True)
OPEN = BreakerState(True, "infrastructure")
# The runner lost: infrastructure, not the pull request's fault.
RUNNER_LOST = replace(
    NPM_RESET,
    triage_class="infrastructure",
    triage_reason="not the pull request's fault: the runner lost communication with the server",
    jobs=(
        replace(
            NPM_RESET.jobs[0],
            class_="infrastructure",
            excerpt=((88, "The runner has received a shutdown signal."),),
            summary="the runner lost communication with the server",
        ),
    ),
)
# The same job failing the same way on the base branch's newest run (issue 27.1).
BASE_RED = replace(PYTEST, base_red=("test (3.12)",), base_red_sha=BASE, base_red_url=JOB_URL)

SITUATIONS: tuple[Situation, ...] = (
    # failed checks
    s(
        "failed-checks-no-fixer",
        "failed_checks",
        PYTEST,
        "handed_back",
        "status:handed_back",
        "handback:failed_checks",
    ),
    s(
        "failed-uses-step",
        "failed_checks",
        SETUP_NODE,
        "handed_back",
        "status:handed_back",
        "handback:failed_checks",
        policy=Policy(skip_label="merge:hold"),
    ),
    s(
        "failed-checks-fixing",
        "failed_checks",
        PYTEST,
        "pending",
        "status:fixing_failed_checks",
        policy=FIXER,
    ),
    s(
        "failed-checks-fixer-spent",
        "failed_checks",
        PYTEST,
        "handed_back",
        "status:handed_back",
        "handback:failed_checks_fixer_spent",
        policy=FIXER,
        history=History(fixer_attempts=1),
    ),
    s(
        "fixed-and-pushed",
        "failed_checks",
        PYTEST,
        "fixed",
        "status:fixed",
        "announce",
        policy=FIXER,
        fixer=PUSHED_FIX,
        after=AFTER_PUSH,
    ),
    s(
        "needs-human",
        "failed_checks",
        PYTEST,
        "handed_back",
        "status:handed_back",
        "handback:needs_human",
        policy=FIXER,
        fixer=NEEDS_HUMAN,
    ),
    s(
        "needs-human-outside-author",
        "failed_checks",
        PYTEST,
        "handed_back",
        "status:handed_back",
        "handback:needs_human",
        policy=FIXER,
        fixer=NEEDS_HUMAN,
        pr=FORK_PR,
    ),
    s(
        "fix-refused",
        "failed_checks",
        PYTEST,
        "handed_back",
        "status:handed_back",
        "handback:fix_refused",
        policy=FIXER,
        fixer=FixerResult(
            "fixed",
            summary="fixed add()",
            pushed_sha=None,
            refused="the fix touches .github/workflows/ci.yml",
        ),
    ),
    s(
        "auto-merge-failed",
        "failed_checks",
        PYTEST,
        "handed_back",
        "status:handed_back",
        "handback:auto_merge_failed",
        policy=FIXER,
        fixer=replace(PUSHED_FIX, auto_merge_armed=False),
        after=AFTER_PUSH,
    ),
    s("flaky-requeued", "failed_checks", NPM_RESET, "requeued", "status:requeued_not_its_fault"),
    # positive evidence for flaky: the ledger re-enqueues without the fixer; the PR's own
    # head failing the same way sends it to the fixer (or back) whatever the words say
    s(
        "flaky-by-ledger-requeued",
        "failed_checks",
        LEDGER_FLAKY,
        "requeued",
        "status:requeued_not_its_fault",
        policy=FIXER,
    ),
    s(
        "flaky-by-ledger-again",
        "failed_checks",
        LEDGER_FLAKY,
        "handed_back",
        "status:handed_back",
        "handback:not_its_fault_again",
        policy=FIXER,
        history=History(requeues=1),
    ),
    s(
        "genuine-on-own-head",
        "failed_checks",
        ON_OWN_HEAD,
        "handed_back",
        "status:handed_back",
        "handback:failed_checks",
    ),
    s(
        "genuine-on-own-head-fixing",
        "failed_checks",
        ON_OWN_HEAD,
        "pending",
        "status:fixing_failed_checks",
        policy=FIXER,
    ),
    s(
        "flaky-again",
        "failed_checks",
        NPM_RESET,
        "handed_back",
        "status:handed_back",
        "handback:not_its_fault_again",
        history=History(requeues=1),
    ),
    s(
        "fixer-verdict-flaky",
        "failed_checks",
        PYTEST,
        "requeued",
        "status:requeued_flaky_verdict",
        policy=FIXER,
        fixer=FixerResult(
            "flaky", summary="test_add passed 5 runs of 5", reproduce="pytest -q tests/test_math.py"
        ),
    ),
    s(
        "fixer-verdict-flaky-again",
        "failed_checks",
        PYTEST,
        "handed_back",
        "status:handed_back",
        "handback:flaky_verdict_again",
        policy=FIXER,
        history=History(requeues=1),
        fixer=FixerResult("flaky", summary="test_add passed 5 runs of 5"),
    ),
    s(
        "quest-policy-no-fixer",
        "failed_checks",
        QUEST,
        "handed_back",
        "status:handed_back",
        "handback:policy",
    ),
    # caps across heads
    s(
        "cap-pushes",
        "failed_checks",
        PYTEST,
        "handed_back",
        "status:handed_back",
        "handback:cap_reached",
        policy=FIXER,
        history=History(pr_pushes=2),
    ),
    s(
        "cap-fixer-runs",
        "failed_checks",
        PYTEST,
        "handed_back",
        "status:handed_back",
        "handback:cap_reached",
        policy=FIXER,
        history=History(pr_fixer_runs=3),
    ),
    s(
        "cap-requeues",
        "failed_checks",
        NPM_RESET,
        "handed_back",
        "status:handed_back",
        "handback:cap_reached",
        history=History(pr_requeues=3),
    ),
    # conflicts
    s(
        "conflict-no-fixer",
        "merge_conflict",
        CONFLICT,
        "handed_back",
        "status:handed_back",
        "handback:conflict",
    ),
    s(
        "conflict-fixing",
        "merge_conflict",
        CONFLICT,
        "pending",
        "status:fixing_conflict",
        policy=FIXER,
    ),
    s(
        "conflict-fixer-spent",
        "merge_conflict",
        CONFLICT,
        "handed_back",
        "status:handed_back",
        "handback:conflict_fixer_spent",
        policy=FIXER,
        history=History(fixer_attempts=1),
    ),
    s(
        "conflict-gone",
        "merge_conflict",
        CONFLICT_GONE,
        "requeued",
        "status:requeued_conflict_gone",
    ),
    s(
        "conflict-gone-again",
        "merge_conflict",
        CONFLICT_GONE,
        "handed_back",
        "status:handed_back",
        "handback:conflict_gone_again",
        history=History(requeues=1),
    ),
    s(
        "conflict-already-merged-by-fixer",
        "merge_conflict",
        CONFLICT,
        "requeued",
        "status:requeued_conflict_gone",
        policy=FIXER,
        fixer=FixerResult(
            "flaky",
            summary="the pull request already contains main "
            "(777777777777): nothing conflicts any more",
        ),
    ),
    # re-enqueued reasons
    s("timed-out", "checks_timed_out", TIMED_OUT, "requeued", "status:requeued_checks_timed_out"),
    s(
        "timed-out-again",
        "checks_timed_out",
        TIMED_OUT,
        "handed_back",
        "status:handed_back",
        "handback:checks_timed_out_again",
        history=History(requeues=1),
    ),
    s("roll-back", "roll_back", Evidence(), "requeued", "status:requeued_roll_back"),
    s(
        "roll-back-again",
        "roll_back",
        Evidence(),
        "handed_back",
        "status:handed_back",
        "handback:roll_back_again",
        history=History(requeues=1),
    ),
    # a person's /landbot retry of a removal the policy ignores becomes a re-enqueue
    Situation(
        "retry-of-a-manual-removal",
        replace(drop("manual"), source="command"),
        Evidence(),
        frozenset({"requeued", "status:requeued"}),
    ),
    Situation(
        "retry-of-a-manual-removal-again",
        replace(drop("manual"), source="command"),
        Evidence(),
        frozenset({"handed_back", "status:handed_back", "handback:requeued_again"}),
        history=History(requeues=1),
    ),
    # handed back by reason
    s(
        "branch-protections",
        "branch_protections",
        Evidence(),
        "handed_back",
        "status:handed_back",
        "handback:branch_protections",
    ),
    s(
        "git-tree-invalid",
        "git_tree_invalid",
        Evidence(),
        "handed_back",
        "status:handed_back",
        "handback:git_tree_invalid",
    ),
    s(
        "invalid-merge-commit",
        "invalid_merge_commit",
        Evidence(),
        "handed_back",
        "status:handed_back",
        "handback:invalid_merge_commit",
    ),
    s("unknown-reason", "unknown", Evidence(), "ignored", "status:unknown_reason"),
    # the breaker (issue 27.2): held while open, released in its turn when it closes
    s(
        "breaker-held-requeue",
        "failed_checks",
        RUNNER_LOST,
        "held",
        "status:held",
        breaker="open",
    ),
    s(
        "breaker-held-fixer",
        "failed_checks",
        PYTEST,
        "held",
        "status:held",
        policy=FIXER,
        breaker="open",
    ),
    s(
        "breaker-closed-requeued",
        "failed_checks",
        RUNNER_LOST,
        "requeued",
        "status:requeued_breaker_closed",
        breaker="closed",
        history=History(requeues=1),
    ),
    # a red base (issue 27.1): waiting, then green or past the wait
    s("base-red-waiting", "failed_checks", BASE_RED, "waiting_base", "status:waiting_base"),
    s(
        "base-red-waiting-with-fixer",
        "failed_checks",
        BASE_RED,
        "waiting_base",
        "status:waiting_base",
        policy=FIXER,
    ),
    s(
        "base-green-requeued",
        "failed_checks",
        BASE_RED,
        "requeued",
        "status:requeued_base_green",
        base="green",
    ),
    s(
        "base-green-budget-spent",
        "failed_checks",
        BASE_RED,
        "handed_back",
        "status:handed_back",
        "handback:not_its_fault_again",
        base="green",
        history=History(requeues=1),
    ),
    s(
        "base-red-deadline",
        "failed_checks",
        BASE_RED,
        "handed_back",
        "status:handed_back",
        "handback:base_red_deadline",
        base="deadline",
    ),
    s(
        "routed-to-hand-back",
        "unknown",
        Evidence(),
        "handed_back",
        "status:handed_back",
        "handback:removed",
        policy=Policy(reasons={"unknown": "handback"}),
    ),
)


def _decide(sit: Situation) -> Decision:
    if sit.breaker == "open":
        return gate(decide(sit.drop, sit.pr, sit.evidence, sit.history, sit.policy), OPEN)
    if sit.breaker == "closed":
        return after_breaker(sit.drop, sit.pr, sit.evidence, sit.history, sit.policy)
    if sit.base is not None:
        released = after_base(sit.drop, sit.pr, sit.history, sit.policy, sit.base)
        assert released is not None
        return released
    if sit.fixer is None:
        return decide(sit.drop, sit.pr, sit.evidence, sit.history, sit.policy)
    return decide(sit.drop, sit.after or sit.pr, sit.evidence, sit.history, sit.policy, sit.fixer)


def _reached(decision: Decision) -> frozenset[str]:
    got = {decision.outcome}
    for a in decision.actions:
        if isinstance(a, Status):
            got.add(f"status:{a.topic}")
        elif isinstance(a, HandBack):
            got.add(f"handback:{a.topic}")
        elif isinstance(a, AnnounceFix):
            got.add("announce")
    return frozenset(got)


def render(sit: Situation, decision: Decision) -> list[tuple[str, str]]:
    """(which comment, its text) for every comment the decision's actions post or edit."""
    pr = sit.after or sit.pr
    announced = any(isinstance(a, AnnounceFix) for a in decision.actions)
    out: list[tuple[str, str]] = []
    for a in decision.actions:
        if isinstance(a, Status):
            url = FIX_URL if announced else None
            text = render_status(
                a.topic,
                sit.drop,
                pr,
                sit.evidence,
                sit.fixer,
                fix_comment_url=url,
            )
            out.append((f"status {a.topic}", text))
        elif isinstance(a, HandBack):
            text = render_handback(
                a.topic, sit.drop, pr, sit.evidence, sit.fixer, cap=a.cap, policy=sit.policy
            )
            out.append((f"hand-back {a.topic}" + (f" ({a.cap})" if a.cap else ""), text))
        elif isinstance(a, AnnounceFix):
            assert sit.fixer is not None
            out.append(
                ("fix announcement", render_fix_pushed(sit.drop, pr, sit.evidence, sit.fixer))
            )
    return out


def _snapshot(sit: Situation, decision: Decision, comments: list[tuple[str, str]]) -> str:
    head = f"<!-- situation {sit.name}: {decision.outcome} — {decision.why} -->\n"
    body = "".join(f"\n<!-- ===== {what} ===== -->\n{text}" for what, text in comments)
    return head + body


def _fences(text: str) -> list[str]:
    """The bodies of the fenced `sh` blocks."""
    return [m[1] for m in re.findall(r"(`{3,})sh\n(.*?)\n\1", text, re.S)]


def contradictions(
    sit: Situation, decision: Decision, comments: list[tuple[str, str]]
) -> list[str]:
    """What a comment says that this situation's evidence does not bear out."""
    found: list[str] = []
    author = f"@{(sit.after or sit.pr).author}"
    mentions = sum(text.count(author) for _w, text in comments)
    if mentions > 1:
        found.append(f"the author is mentioned {mentions} times for one event")
    for what, text in comments:
        if what.startswith("status") and "@" in text.replace("`", ""):
            found.append(f"{what}: a status comment mentions someone (an edit notifies no one)")
        if sit.drop.reason != "failed_checks":
            for mark in ("**Failed checks on the merge group:**", "log excerpt", "FAILED tests/"):
                if mark in text:
                    found.append(f"{what}: shows failed checks ({mark!r}) for a {sit.drop.reason}")
        if sit.drop.reason != "merge_conflict" and "**Conflicting files:**" in text:
            found.append(f"{what}: names conflicting files for a {sit.drop.reason}")
        if sit.drop.reason == "merge_conflict" and re.search(r"flaky|passed|ran the failing", text):
            found.append(f"{what}: speaks of a flaky test for a conflict")
        if sit.drop.reason != "checks_timed_out" and "never finished" in text:
            found.append(f"{what}: names unfinished checks for a {sit.drop.reason}")
        if "landbot's log" in text:
            found.append(
                f"{what}: points the author at landbot's log, which only the operator sees"
            )
        for block in _fences(text):
            if "actions/" in block or "@v" in block:
                found.append(f"{what}: the commands hold a `uses:` step: {block!r}")
        if what.startswith("hand-back"):
            label = sit.policy.skip_label
            if f"`{label}`" not in text:
                found.append(f"{what}: does not name the configured skip label {label!r}")
            if label != "landbot:skip" and "landbot:skip" in text:
                found.append(f"{what}: names the default skip label, not {label!r}")
            if "`/landbot retry`" not in text:
                found.append(f"{what}: lost the /landbot retry instruction")
    return found


@pytest.mark.parametrize("sit", SITUATIONS, ids=[x.name for x in SITUATIONS])
def test_situation(sit: Situation) -> None:
    decision = _decide(sit)
    reached = _reached(decision)
    assert reached == sit.expect, (
        f"{sit.name}: the decision now reaches {sorted(reached)} ({decision.why}), the "
        f"situation expects {sorted(sit.expect)}: fix the situation or the decision"
    )
    comments = render(sit, decision)
    for what, text in comments:
        marker = {"status": STATUS_MARKER, "hand-back": HANDBACK_MARKER, "fix": FIX_MARKER}
        assert text.startswith(marker[what.split()[0]] + "\n"), what
    assert contradictions(sit, decision, comments) == []
    text = _snapshot(sit, decision, comments)
    matches_snapshot(SNAPSHOTS / f"{sit.name}.md", text)


def test_the_situations_cover_every_topic_and_the_announcement() -> None:
    reached = frozenset().union(*(_reached(_decide(x)) for x in SITUATIONS))
    statuses = {t.removeprefix("status:") for t in reached if t.startswith("status:")}
    handbacks = {t.removeprefix("handback:") for t in reached if t.startswith("handback:")}
    assert STATUS_TOPICS - statuses == set(), "status topics no situation reaches"
    assert HANDBACK_TOPICS - handbacks == set(), "hand-back topics no situation reaches"
    assert "announce" in reached, "no situation announces a pushed fix"
    assert len({x.name for x in SITUATIONS}) == len(SITUATIONS)
    # Every outcome too; `failed` (a job that cannot finish) writes no comment at all.
    from typing import get_args

    from landbot.core.model import Outcome
    from landbot.land.decide import job_failed

    outcomes = {_decide(x).outcome for x in SITUATIONS}
    assert set(get_args(Outcome)) - outcomes == {"failed"}, "outcomes no situation reaches"
    assert job_failed("GitHub refused").actions == ()


def test_snapshot_files_are_all_situations() -> None:
    # A snapshot left from a situation that is gone would read as a text landbot still writes.
    files = {p.stem for p in SNAPSHOTS.glob("*.md")}
    assert files == {x.name for x in SITUATIONS}


# --- the checker catches what it is for (its controls) ------------------------------------


def test_the_checker_sees_a_pytest_excerpt_under_a_timeout() -> None:
    sit = next(x for x in SITUATIONS if x.name == "timed-out-again")
    decision = _decide(sit)
    wrong = replace(sit, evidence=replace(PYTEST, timed_out_checks=TIMED_OUT.timed_out_checks))
    # Rendered as a failed-checks drop would be (the old templates did this for every topic):
    text = render_handback(
        "checks_timed_out_again", replace(sit.drop, reason="failed_checks"), PR, wrong.evidence
    )
    assert contradictions(sit, decision, [("hand-back checks_timed_out_again", text)])
    assert contradictions(sit, decision, render(sit, decision)) == []  # control


def test_the_checker_sees_a_uses_step_a_double_mention_and_the_default_label() -> None:
    sit = next(x for x in SITUATIONS if x.name == "failed-uses-step")
    decision = _decide(sit)
    fine = render(sit, decision)
    assert contradictions(sit, decision, fine) == []  # control
    as_command = [
        (w, t.replace("gh pr checkout 42", "actions/setup-node@v4\ngh pr checkout 42"))
        for w, t in fine
    ]
    assert any("uses:" in c for c in contradictions(sit, decision, as_command))
    default_label = [(w, t.replace("`merge:hold`", "`landbot:skip`")) for w, t in fine]
    assert any("skip label" in c for c in contradictions(sit, decision, default_label))
    mentioned = [(w, t + "\n@alice\n") for w, t in fine]
    assert any("mentioned" in c for c in contradictions(sit, decision, mentioned))
