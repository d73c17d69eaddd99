"""The decision's own values: the policy, and what a decision asks for. Plain data, no I/O."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, cast, get_args

from landbot.core.model import NOT_ITS_FAULT, Outcome
from landbot.core.reasons import Reason

if TYPE_CHECKING:
    from landbot.config import Settings

ReasonAction = Literal["ignore", "requeue", "fix", "handback", "note"]

DEFAULT_REASON_ACTIONS: Mapping[Reason, ReasonAction] = {
    "manual": "ignore",
    "merged": "ignore",
    "already_merged": "ignore",
    "queue_cleared": "ignore",
    "checks_timed_out": "requeue",
    "roll_back": "requeue",
    "failed_checks": "fix",
    "merge_conflict": "fix",
    "branch_protections": "handback",
    "git_tree_invalid": "handback",
    "invalid_merge_commit": "handback",
    "unknown": "note",
}


@dataclass(frozen=True)
class Policy:
    reasons: Mapping[Reason, ReasonAction] = field(
        default_factory=lambda: dict(DEFAULT_REASON_ACTIONS)
    )
    max_requeues_per_head: int = 1
    max_fixer_attempts_per_head: int = 1
    skip_label: str = "landbot:skip"
    fixer_enabled: bool = False
    # Caps on landbot's own actions per pull request across its heads, within a window.
    max_pushes_per_pr: int = 2
    max_requeues_per_pr: int = 3
    max_fixer_runs_per_pr: int = 3
    cap_window: dt.timedelta = dt.timedelta(days=1)
    # Triage classes that are not the pull request's fault: re-enqueue within the budget.
    requeue_classes: frozenset[str] = NOT_ITS_FAULT
    # Shown on the PR while the fixer works on it ("" for none).
    fixing_label: str = ""
    # How long a drop waits for a red base branch to turn green (issue 27.1).
    base_wait: dt.timedelta = dt.timedelta(hours=6)

    @classmethod
    def from_settings(cls, settings: Settings, *, fixer_enabled: bool = False) -> Policy:
        p = settings.policy
        # The overrides were checked against the reasons and actions by PolicySettings.
        reasons = cast("dict[Reason, ReasonAction]", {**DEFAULT_REASON_ACTIONS, **p.reasons})
        return cls(
            reasons=reasons,
            max_requeues_per_head=p.max_requeues_per_head,
            max_fixer_attempts_per_head=p.max_fixer_attempts_per_head,
            skip_label=p.skip_label,
            fixer_enabled=fixer_enabled,
            max_pushes_per_pr=p.max_pushes_per_pr,
            max_requeues_per_pr=p.max_requeues_per_pr,
            max_fixer_runs_per_pr=p.max_fixer_runs_per_pr,
            cap_window=dt.timedelta(hours=p.cap_window_hours),
            requeue_classes=frozenset(p.requeue_classes),
            fixing_label=p.fixing_label,
            base_wait=dt.timedelta(hours=settings.breaker.base_wait_hours),
        )


# --- what the decision asks for ----------------------------------------------------------


@dataclass(frozen=True)
class Requeue:
    head_sha: str


@dataclass(frozen=True)
class RunFixer:
    head_sha: str
    mode: Literal["agent", "merge_driver"]


# Each topic has exactly one template in comments.py (a test holds the two together).
StatusTopic = Literal[
    "requeued",
    "requeued_checks_timed_out",
    "requeued_roll_back",
    "requeued_not_its_fault",
    "requeued_flaky_verdict",
    "requeued_conflict_gone",
    "fixing_failed_checks",
    "fixing_conflict",
    "fixed",
    "handed_back",
    "unknown_reason",
    "waiting_base",
    "requeued_base_green",
    "held",
    "requeued_breaker_closed",
]
HandBackTopic = Literal[
    "removed",
    "requeued_again",
    "failed_checks",
    "failed_checks_fixer_spent",
    "conflict",
    "conflict_fixer_spent",
    "checks_timed_out_again",
    "roll_back_again",
    "not_its_fault_again",
    "conflict_gone_again",
    "flaky_verdict_again",
    "policy",
    "needs_human",
    "fix_refused",
    "auto_merge_failed",
    "branch_protections",
    "git_tree_invalid",
    "invalid_merge_commit",
    "cap_reached",
    "base_red_deadline",
]
STATUS_TOPICS: frozenset[StatusTopic] = frozenset(get_args(StatusTopic))
HANDBACK_TOPICS: frozenset[HandBackTopic] = frozenset(get_args(HandBackTopic))


@dataclass(frozen=True)
class HandBack:
    """A new comment that mentions the author: `topic` picks the template."""

    topic: HandBackTopic
    # For cap_reached: which cap ("pushes", "requeues" or "fixer_runs").
    cap: Cap | None = None


Cap = Literal["pushes", "requeues", "fixer_runs"]


@dataclass(frozen=True)
class AnnounceFix:
    """A new comment (it notifies) saying what the fixer pushed as `pushed_sha`."""

    pushed_sha: str


@dataclass(frozen=True)
class Status:
    """Edit the sticky status comment: `topic` picks the template."""

    topic: StatusTopic


Action = Requeue | RunFixer | HandBack | Status | AnnounceFix


@dataclass(frozen=True)
class Decision:
    outcome: Outcome
    actions: tuple[Action, ...]
    why: str
    # The commit GitHub removed, when the drop was recorded at another (a push while queued):
    # the drop is corrected to it, so it is a drop of the removal it reports.
    removed_head: str | None = None
