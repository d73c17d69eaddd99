"""The decision: what landbot does about one drop. Pure: no I/O, no clock.

Every choice of an outcome is made here, and nowhere else:

- `without_look`: a drop that needs no look at GitHub at all (a reason the policy ignores);
- `confirm`: whether a drop still holds once the pull request is re-read (triage runs only
  when it does: `needs_evidence`);
- `decide`: (drop, pull request, evidence, history, policy, fixer result) to an outcome
  and the actions to take;
- `taken_away`: whether a saved plan may still be finished after a crash;
- `fix_head_moved`, `conflict_already_merged`, `push_capped`: the fixer job's own answers
  (before it runs, and before it publishes);
- `superseded`: what a push or a close makes of the pending drops;
- `job_failed`, `command_allowed`: a job that cannot finish, a comment command's author;
- `enqueue_after_unknown`: whether an enqueue whose answer never came took effect.

All are total: every input has a defined answer, and the tests walk all of them.

Caps per pull request (issue 13): budgets per head never stop a bot whose every fix makes a
new head, so `decide` also counts landbot's own actions on the PR across its heads
(`History.pr_*`, within `Policy.cap_window`, since the last push that was not landbot's or
the last `/landbot retry`). Before a re-enqueue, a fixer run (whose push would count too)
or a publish, a cap reached ends in one hand-back naming it (`HandBack("cap_reached")`);
another drop past the same cap before a reset is `ignored` with the status edited (an
edit notifies no one), so the author is mentioned once per cap, not once per drop.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, get_args

from landbot.core.groups import removed_this_head
from landbot.core.model import Drop, Evidence, FixerResult, History, PrSnapshot, Superseded
from landbot.core.reasons import Reason
from landbot.github.models import QueueEvent
from landbot.land.model import (
    AnnounceFix,
    Cap,
    Decision,
    HandBack,
    HandBackTopic,
    Policy,
    ReasonAction,
    Requeue,
    RunFixer,
    Status,
    StatusTopic,
)

# The topics of a reason the policy re-enqueues or hands back; any other reason a
# maintainer routes there gets the general ones.
_REASON_REQUEUE: dict[Reason, tuple[StatusTopic, HandBackTopic]] = {
    "checks_timed_out": ("requeued_checks_timed_out", "checks_timed_out_again"),
    "roll_back": ("requeued_roll_back", "roll_back_again"),
}
_REASON_HANDBACK: dict[Reason, HandBackTopic] = {
    "branch_protections": "branch_protections",
    "git_tree_invalid": "git_tree_invalid",
    "invalid_merge_commit": "invalid_merge_commit",
}

_CAPS: dict[str, Cap] = {c: c for c in get_args(Cap)}  # FixerResult.cap, read back typed

# Permissions whose holders may ask landbot to retry from a pull request comment.
WRITERS = frozenset({"admin", "maintain", "write"})


_MERGED = "the pull request has merged"
_CLOSED = "the pull request is closed"
_MOVED = "the head moved since the drop: nothing for the old head"


def _ended(pr: PrSnapshot) -> Decision | None:
    if pr.state == "merged":
        return Decision("ignored", (), _MERGED)
    if pr.state == "closed":
        return Decision("ignored", (), _CLOSED)
    return None


def _opted_out(pr: PrSnapshot, policy: Policy) -> Decision | None:
    if policy.skip_label in pr.labels:
        return Decision("ignored", (), f"the pull request has the {policy.skip_label} label")
    return None


def confirm(drop: Drop, pr: PrSnapshot, policy: Policy) -> Decision | None:
    """None when the drop still holds; otherwise the reason to leave the PR alone."""
    ended = _ended(pr)
    if ended is not None:
        return ended
    if pr.head_sha != drop.head_sha:
        return Decision("ignored", (), _MOVED)
    if pr.in_queue:
        return Decision("ignored", (), "the pull request is back in the merge queue")
    moved = pushed_while_queued(drop, pr)
    if moved is not None:
        return moved
    return _opted_out(pr, policy)


# How far apart a webhook's arrival and the timeline's removal may be and still be one
# removal (GitHub's clock against landbot's); narrower than intake's window for linking a
# poll's drop to a webhook's, since here a wrong match would leave a real drop undone.
SAME_REMOVAL = dt.timedelta(minutes=5)
PUSH_SKEW = dt.timedelta(seconds=30)


def pushed_while_queued(drop: Drop, pr: PrSnapshot) -> Decision | None:
    """A webhook's drop that GitHub's own timeline says removed another commit of this PR:
    someone pushed while it was queued (GitHub removes it, and the dequeue webhook names the
    new head). Nothing is done for a head nobody queued.

    Only positive evidence counts: the removed commit is an earlier commit of the PR, or the
    head was force-pushed at or after the removal. A removed commit that is a merge group
    built on this head, or one the timeline cannot place (a squash group), lets the drop
    stand; so does a removal too far in time from the webhook to be its own (a timeline
    that lags behind still shows the previous removal)."""
    if drop.source != "webhook" or pr.removed_commit is None or pr.removed_at is None:
        return None
    if drop.observed_at is not None and abs(pr.removed_at - drop.observed_at) > SAME_REMOVAL:
        return None
    removed = pr.removed_commit
    if removed_this_head(removed, pr.removed_parents, drop.head_sha):
        return None
    earlier = removed in pr.commits
    # A push removes the PR within moments; allow GitHub's two clocks a little skew.
    forced = any(t >= pr.removed_at - PUSH_SKEW for t in pr.force_pushed_at)
    if not (earlier or forced):
        return None
    return Decision(
        "ignored",
        (),
        f"the head was pushed while queued: GitHub removed {removed[:7]}, not this head",
        removed_head=removed,
    )


def needs_evidence(
    drop: Drop, pr: PrSnapshot, policy: Policy, history: History | None = None
) -> bool:
    """Triage (logs, a fetch, a merge) is worth its cost only for a drop that still holds,
    and, for a reason the policy re-enqueues (a timeout, a roll back), only when it will
    be handed back instead: a re-enqueue reads no evidence."""
    if confirm(drop, pr, policy) is not None:
        return False
    if history is not None and _action_for(drop, policy) == "requeue":
        return decide(drop, pr, Evidence(), history, policy).outcome != "requeued"
    return True


def taken_away(pr: PrSnapshot, policy: Policy) -> Decision | None:
    """Why a saved plan must not be finished: the PR is no longer landbot's to act on.
    (Its head and its place in the queue may have changed through the plan's own actions.)"""
    return _ended(pr) or _opted_out(pr, policy)


def _action_for(drop: Drop, policy: Policy) -> ReasonAction:
    action = policy.reasons.get(drop.reason, "note")
    if action == "ignore" and drop.source in ("command", "operator"):
        # A person asked to land it: a reason the policy ignores becomes a re-enqueue.
        return "requeue"
    return action


def ignored_reason(drop: Drop, policy: Policy) -> Decision | None:
    """The decision for a reason the policy ignores (a person removed it, it merged);
    None for every other reason, and for a drop a person asked landbot to retry."""
    if _action_for(drop, policy) == "ignore":
        return Decision("ignored", (), f"removed for `{drop.reason}`: nothing to do")
    return None


def without_look(drop: Drop, policy: Policy, fixer: FixerResult | None = None) -> Decision | None:
    """The decision that needs no GitHub call at all, or None when the PR must be re-read."""
    return ignored_reason(drop, policy) if fixer is None else None


def superseded(change: Superseded) -> Decision:
    """What a push, a close or a merge makes of the PR's pending drops, without waiting for
    their jobs to re-read it: the same answer `confirm` would give."""
    why = {"pushed": _MOVED, "closed": _CLOSED, "merged": _MERGED}[change.cause]
    return Decision("ignored", (), why)


def job_failed(why: str) -> Decision:
    """A job that cannot finish (GitHub refused, the host cannot sandbox, given up after
    retries): the drop says so in `landbot status` instead of waiting forever."""
    return Decision("failed", (), why)


def command_allowed(permission: str) -> bool:
    """`/landbot retry` is honoured only from users who could push the fix themselves."""
    return permission in WRITERS


def fix_head_moved(drop: Drop, head_sha: str) -> FixerResult | None:
    """The fixer's first look: a head that moved since the drop ends the job unpublished."""
    if head_sha == drop.head_sha:
        return None
    why = (
        f"the pull request's head moved before the fixer ran (now {head_sha[:12]}, "
        f"the drop was at {drop.head_sha[:12]}): nothing pushed"
    )
    return FixerResult("needs_human", summary=why, refused=why)


def stand_down(pr: PrSnapshot, skip_label: str | None) -> str | None:
    """The fixer's last look before it publishes: why its result must not reach the PR, or
    None. A person (or any bot) who put the PR back in the queue, closed or merged it, or
    marked it to be skipped while the job ran has decided: a push now would take a queued
    PR out of the queue again, or touch one that is no longer landbot's to act on."""
    if pr.state == "merged":
        return "the pull request merged while the fixer worked: nothing pushed"
    if pr.state == "closed":
        return "the pull request was closed while the fixer worked: nothing pushed"
    if pr.in_queue:
        return (
            "the pull request was put back in the merge queue while the fixer worked: "
            "nothing pushed (a push would take it out of the queue again)"
        )
    if skip_label and skip_label in pr.labels:
        return f"the pull request was marked {skip_label} while the fixer worked: nothing pushed"
    return None


def conflict_already_merged(base_ref: str, base_sha: str | None) -> FixerResult:
    """The head already contains the base: nothing conflicts, so it only needs the queue.
    (A `flaky` verdict, which for a conflict `decide` reads as "the conflict was gone".)"""
    return FixerResult(
        "flaky",
        summary=f"the pull request already contains {base_ref} "
        f"({(base_sha or '')[:12]}): nothing conflicts any more",
        recommendation="Put it back in the queue.",
    )


def push_capped(
    history: History, policy: Policy, summary: str = "", recommendation: str = ""
) -> FixerResult | None:
    """The fixer job's last look before it publishes: a push past the PR's push cap is not
    made (another job may have pushed since this one was decided). None: it may push."""
    if history.pr_pushes < policy.max_pushes_per_pr:
        return None
    why = (
        f"landbot already pushed {history.pr_pushes} fix(es) to this pull request "
        f"(the cap is {policy.max_pushes_per_pr} per {_window(policy)}): nothing pushed"
    )
    return FixerResult(
        "fixed", summary=summary, recommendation=recommendation, refused=why, cap="pushes"
    )


def pr_cap(history: History, policy: Policy, guarded: Literal["requeue", "fixer"]) -> Cap | None:
    """The PR cap a re-enqueue or a fixer run would pass, or None. A fixer run is stopped
    by the push cap too: what it would push could not be pushed."""
    if guarded == "requeue":
        return "requeues" if history.pr_requeues >= policy.max_requeues_per_pr else None
    if history.pr_pushes >= policy.max_pushes_per_pr:
        return "pushes"
    if history.pr_fixer_runs >= policy.max_fixer_runs_per_pr:
        return "fixer_runs"
    return None


def _window(policy: Policy) -> str:
    hours = policy.cap_window.total_seconds() / 3600
    return "day" if hours == 24 else f"{hours:g} hours"


_CAP_WHAT: dict[Cap, str] = {
    "pushes": "fixes pushed",
    "requeues": "automatic re-enqueues",
    "fixer_runs": "fixer runs",
}


def _capped(cap: Cap, history: History, policy: Policy) -> Decision:
    spent, limit = {
        "pushes": (history.pr_pushes, policy.max_pushes_per_pr),
        "requeues": (history.pr_requeues, policy.max_requeues_per_pr),
        "fixer_runs": (history.pr_fixer_runs, policy.max_fixer_runs_per_pr),
    }[cap]
    what = f"{_CAP_WHAT[cap]}: {spent} of {limit} per {_window(policy)}"
    if cap in history.pr_capped:
        # Handed back for this cap already, and nothing reset it: a new mention would only
        # repeat it; the status comment (an edit notifies no one) shows this drop.
        return Decision(
            "ignored",
            (Status("handed_back"),),
            f"past the PR's cap again ({what}); handed back already, no one mentioned again",
        )
    return Decision(
        "handed_back",
        (Status("handed_back"), HandBack("cap_reached", cap=cap)),
        f"the PR's cap is reached ({what}): a person must look",
    )


def decide(
    drop: Drop,
    pr: PrSnapshot,
    evidence: Evidence,
    history: History,
    policy: Policy,
    fixer: FixerResult | None = None,
) -> Decision:
    if fixer is not None:
        return _after_fixer_confirmed(drop, pr, fixer, history, policy)
    stale = confirm(drop, pr, policy)
    if stale is not None:
        return stale

    ignored = ignored_reason(drop, policy)
    if ignored is not None:
        return ignored
    action = _action_for(drop, policy)
    if action == "note":
        return Decision(
            "ignored", (Status("unknown_reason"),), f"removed for `{drop.raw_reason}`: not acted on"
        )
    if action == "handback":
        return Decision(
            "handed_back",
            (Status("handed_back"), HandBack(_REASON_HANDBACK.get(drop.reason, "removed"))),
            f"removed for `{drop.reason}`: a person must look",
        )
    if action == "requeue":
        requeued, again = _REASON_REQUEUE.get(drop.reason, ("requeued", "requeued_again"))
        return _requeue_or_hand_back(drop, history, policy, requeued, again)

    # action == "fix": failed checks or a conflict, where triage may still say "not its fault".
    if drop.reason == "failed_checks" and evidence.triage_class in policy.requeue_classes:
        return _requeue_or_hand_back(
            drop, history, policy, "requeued_not_its_fault", "not_its_fault_again"
        )
    if drop.reason == "failed_checks" and base_is_red(evidence, policy):
        # The base fails the same way: no fixer (nothing of the PR's to fix) and no blind
        # re-enqueue (it would fail again); it waits for the base to turn green.
        return Decision(
            "waiting_base",
            (Status("waiting_base"),),
            f"the same job fails the same way on the base branch ({', '.join(evidence.base_red)}):"
            " waiting for the base to turn green",
        )
    if drop.reason == "merge_conflict" and evidence.base_sha and not evidence.conflict_files:
        # Triage merged the base in and it went clean (the base moved on): just queue it.
        return _requeue_or_hand_back(
            drop, history, policy, "requeued_conflict_gone", "conflict_gone_again"
        )
    policy_failure = drop.reason == "failed_checks" and evidence.triage_class == "policy"
    if policy_failure and not policy.fixer_enabled:
        return Decision(
            "handed_back",
            (Status("handed_back"), HandBack("policy")),
            "the quest check failed: a person decides the quest tree",
        )
    # With a fixer, a policy failure goes to it too: it may fix what is mechanical (a
    # dangling link to a deleted quest) and explains the rest.
    return _fix_or_hand_back(drop, evidence, history, policy)


# --- a red base branch (issue 27.1) -------------------------------------------------------


def needs_base_check(drop: Drop, evidence: Evidence, policy: Policy) -> bool:
    """Whether the base branch's newest run is worth reading (its calls): a failed-checks
    drop that triage would blame on the pull request (the fixer or a hand-back), with error
    lines to compare. A drop re-enqueued anyway (not its fault) costs nothing more."""
    return (
        drop.reason == "failed_checks"
        and _action_for(drop, policy) == "fix"
        and evidence.triage_class is not None
        and evidence.triage_class not in policy.requeue_classes
        and any(j.error_lines for j in evidence.jobs if j.class_ not in policy.requeue_classes)
    )


def base_is_red(evidence: Evidence, policy: Policy) -> bool:
    """Every job that would be blamed on the pull request fails the same way on the base
    (a failure the base does not share is the PR's own: it goes its usual way)."""
    blamed = {j.job for j in evidence.jobs if j.class_ not in policy.requeue_classes}
    return bool(blamed) and blamed <= set(evidence.base_red)


BaseVerdict = Literal["wait", "green", "deadline"]


def base_verdict(
    evidence: Evidence,
    states: Mapping[str, str] | None,
    waited: dt.timedelta,
    policy: Policy,
) -> BaseVerdict:
    """A waiting drop looked at again, from the base's newest run of each job that was red
    (`states`: job to `passed`, `failed_same`, `failed_other`, `pending` or `absent`; None
    when GitHub did not answer). Green only when every one of them passed; past the wait
    the drop is handed back; anything else keeps it waiting."""
    red = evidence.base_red
    if states is not None and red and all(states.get(job) == "passed" for job in red):
        return "green"
    if waited >= policy.base_wait:
        return "deadline"
    return "wait"


def after_base(
    drop: Drop, pr: PrSnapshot, history: History, policy: Policy, verdict: BaseVerdict
) -> Decision | None:
    """What a waiting drop becomes once `base_verdict` says it no longer waits (None: it
    still does). The pull request re-read first: a drop that no longer holds is left."""
    if verdict == "wait":
        return None
    stale = confirm(drop, pr, policy)
    if stale is not None:
        return stale
    if verdict == "deadline":
        hours = policy.base_wait.total_seconds() / 3600
        return Decision(
            "handed_back",
            (Status("handed_back"), HandBack("base_red_deadline")),
            f"the base branch stayed red for {hours:g} hours: a person must look",
        )
    return _requeue_or_hand_back(
        drop, history, policy, "requeued_base_green", "not_its_fault_again"
    )


def _requeue_or_hand_back(
    drop: Drop, history: History, policy: Policy, requeued: StatusTopic, again: HandBackTopic
) -> Decision:
    if history.requeues >= policy.max_requeues_per_head:
        return Decision(
            "handed_back",
            (Status("handed_back"), HandBack(again)),
            "failed again after the automatic re-enqueue: a person must look",
        )
    cap = pr_cap(history, policy, "requeue")
    if cap is not None:
        return _capped(cap, history, policy)
    return Decision(
        "requeued",
        (Requeue(drop.head_sha), Status(requeued)),
        f"re-enqueued ({history.requeues + 1} of {policy.max_requeues_per_head} for this head)",
    )


def _fix_or_hand_back(drop: Drop, evidence: Evidence, history: History, policy: Policy) -> Decision:
    conflict = drop.reason == "merge_conflict"
    # A conflict only in quest files needs no agent: the quest merge driver resolves it.
    mechanical = conflict and evidence.conflicts_all_quest
    if not (policy.fixer_enabled or mechanical):
        return Decision(
            "handed_back",
            (Status("handed_back"), HandBack("conflict" if conflict else "failed_checks")),
            "no fixer is configured: handed back",
        )
    if history.fixer_attempts >= policy.max_fixer_attempts_per_head:
        spent: HandBackTopic = (
            "conflict_fixer_spent"
            if conflict
            # A quest finding is explained by the policy hand-back, whoever tried before.
            else "policy"
            if evidence.triage_class == "policy"
            else "failed_checks_fixer_spent"
        )
        return Decision(
            "handed_back",
            (Status("handed_back"), HandBack(spent)),
            "the fixer already had its attempt at this head",
        )
    cap = pr_cap(history, policy, "fixer")
    if cap is not None:
        return _capped(cap, history, policy)
    mode: Literal["agent", "merge_driver"] = "merge_driver" if mechanical else "agent"
    return Decision(
        "pending",
        (
            RunFixer(drop.head_sha, mode),
            Status("fixing_conflict" if conflict else "fixing_failed_checks"),
        ),
        f"handed to the fixer ({mode})",
    )


def _after_fixer_confirmed(
    drop: Drop, pr: PrSnapshot, fixer: FixerResult, history: History, policy: Policy
) -> Decision:
    """After the fixer, the PR's head is the fixer's push (or unchanged when nothing was
    pushed), and auto-merge may already have put it back in the queue: only a person's
    change (closed, another push, the opt-out label) makes the result moot."""
    if pr.state == "merged" and fixer.pushed_sha:
        return Decision("fixed", (), "fixed and pushed; it has merged")
    ended = _ended(pr)
    if ended is not None:
        return ended
    if pr.head_sha not in (drop.head_sha, fixer.pushed_sha):
        return Decision("ignored", (), "the head moved during the fix: nothing for the old head")
    opted_out = _opted_out(pr, policy)
    if opted_out is not None:
        return opted_out
    if pr.in_queue and not fixer.pushed_sha:
        return Decision("ignored", (), "the pull request is back in the merge queue")
    return _after_fixer(drop, fixer, history, policy)


def _after_fixer(drop: Drop, fixer: FixerResult, history: History, policy: Policy) -> Decision:
    stopped = _CAPS.get(fixer.cap)
    if stopped is not None:  # the job did not push: the push cap was reached meanwhile
        return _capped(stopped, history, policy)
    if fixer.refused:
        return Decision(
            "handed_back",
            (Status("handed_back"), HandBack("fix_refused")),
            f"the fix was not published: {fixer.refused}",
        )
    if fixer.verdict == "fixed":
        if fixer.pushed_sha and not fixer.auto_merge_armed:
            return Decision(
                "handed_back",
                (Status("handed_back"), HandBack("auto_merge_failed")),
                "fixed and pushed, but auto-merge could not be armed",
            )
        if fixer.pushed_sha:
            # A new comment announces the push (it notifies); the status links to it.
            return Decision(
                "fixed",
                (AnnounceFix(fixer.pushed_sha), Status("fixed")),
                "fixed and pushed; auto-merge is armed",
            )
        return Decision(
            "handed_back",
            (Status("handed_back"), HandBack("fix_refused")),
            "the fixer said fixed but left no commit to publish",
        )
    if fixer.verdict == "flaky":
        if drop.reason == "merge_conflict":
            # For a conflict, "passes unchanged" means the head merges cleanly now: the
            # conflict was already gone (conflict_already_merged), not a flaky test.
            return _requeue_or_hand_back(
                drop, history, policy, "requeued_conflict_gone", "conflict_gone_again"
            )
        return _requeue_or_hand_back(
            drop, history, policy, "requeued_flaky_verdict", "flaky_verdict_again"
        )
    return Decision(
        "handed_back",
        (Status("handed_back"), HandBack("needs_human")),
        "the fixer needs a person",
    )


# --- after a mutation whose answer never came (MutationOutcomeUnknown) ---------------------

# How far GitHub's clock (timeline events) may run behind the one that stamped the drop.
CLOCK_SKEW = dt.timedelta(seconds=60)

EnqueueFinding = Literal[
    "queued", "merged", "closed", "head_moved", "added_since_drop", "not_applied", "cannot_tell"
]


@dataclass(frozen=True)
class EnqueueCheck:
    """What a re-read says about an enqueue whose answer never came."""

    finding: EnqueueFinding
    send_again: bool  # only "not_applied": it did not happen and may still happen
    why: str


def enqueue_after_unknown(
    drop: Drop,
    head_sha: str,
    pr: PrSnapshot,
    events: Sequence[QueueEvent] | None,
) -> EnqueueCheck:
    """Did an enqueue of `head_sha` for `drop` take effect? From the PR re-read after it and
    its timeline's queue events (oldest first; None when they could not be read).

    Merged, closed, a moved head or a PR in the queue: never sent again. Out of the queue yet
    added after the drop (its new merge group failed fast): it took effect, and the budget is
    one. Only a timeline that shows no enqueue since the drop lets it be sent again.
    """
    if pr.state == "merged":
        return EnqueueCheck("merged", False, "the pull request merged")
    if pr.state == "closed":
        return EnqueueCheck("closed", False, "the pull request was closed")
    if pr.in_queue:
        return EnqueueCheck("queued", False, "the pull request is in the merge queue")
    if pr.head_sha != head_sha:
        return EnqueueCheck(
            "head_moved", False, f"the head moved to {pr.head_sha[:7]}: not the head dropped"
        )
    if events is None:
        return EnqueueCheck("cannot_tell", False, "the pull request's timeline could not be read")
    if added_since(drop, events):
        return EnqueueCheck(
            "added_since_drop", False, "added to the merge queue since the drop, and removed again"
        )
    return EnqueueCheck("not_applied", True, "no enqueue since the drop")


def added_since(drop: Drop, events: Sequence[QueueEvent]) -> bool:
    """Whether the timeline shows an AddedToMergeQueueEvent after the drop's removal.

    The drop's removal is the first removal stamped no earlier than the drop (less
    CLOCK_SKEW); without one (a `/landbot retry` long after the removal), any addition
    stamped since the drop counts. Events without a time are not evidence either way.
    """
    if drop.observed_at is None:
        return False
    since = _aware(drop.observed_at) - CLOCK_SKEW
    recent = [e for e in events if e.created_at is not None and _aware(e.created_at) >= since]
    removal = next((i for i, e in enumerate(recent) if e.kind == "removed"), None)
    after = recent if removal is None else recent[removal + 1 :]
    return any(e.kind == "added" for e in after)


def _aware(when: dt.datetime) -> dt.datetime:
    return when if when.tzinfo is not None else when.replace(tzinfo=dt.UTC)
