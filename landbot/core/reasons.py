"""One vocabulary for why GitHub removed a pull request from its merge queue.

The webhook's `dequeued.reason` is upper case (`CI_FAILURE`), the GraphQL timeline's
`RemovedFromMergeQueueEvent.reason` is a lower-case phrase (`failed_checks`); both map here.
A value GitHub has not documented becomes `unknown`, and the raw value is kept beside it.
"""

from __future__ import annotations

from typing import Final, Literal, get_args

Reason = Literal[
    "failed_checks",
    "merge_conflict",
    "checks_timed_out",
    "manual",
    "merged",
    "already_merged",
    "queue_cleared",
    "roll_back",
    "branch_protections",
    "git_tree_invalid",
    "invalid_merge_commit",
    "unknown",
]

REASONS: Final[tuple[Reason, ...]] = get_args(Reason)

_WEBHOOK: Final[dict[str, Reason]] = {
    "CI_FAILURE": "failed_checks",
    "MERGE_CONFLICT": "merge_conflict",
    "CI_TIMEOUT": "checks_timed_out",
    "MANUAL": "manual",
    "MERGE": "merged",
    "ALREADY_MERGED": "already_merged",
    "QUEUE_CLEARED": "queue_cleared",
    "ROLL_BACK": "roll_back",
    "BRANCH_PROTECTIONS": "branch_protections",
    "GIT_TREE_INVALID": "git_tree_invalid",
    "INVALID_MERGE_COMMIT": "invalid_merge_commit",
    "UNKNOWN_REMOVAL_REASON": "unknown",
}

# GraphQL spellings seen in the wild, plus a few likely variants of the same phrases.
_GRAPHQL: Final[dict[str, Reason]] = {
    "failed_checks": "failed_checks",
    "failed_status_checks": "failed_checks",
    "merge_conflict": "merge_conflict",
    "checks_timed_out": "checks_timed_out",
    "timed_out": "checks_timed_out",
    "manual": "manual",
    "manually_removed": "manual",
    "merged": "merged",
    "already_merged": "already_merged",
    "queue_cleared": "queue_cleared",
    "roll_back": "roll_back",
    "rolled_back": "roll_back",
    "branch_protections": "branch_protections",
    "git_tree_invalid": "git_tree_invalid",
    "invalid_merge_commit": "invalid_merge_commit",
}


def normalize(raw: str | None) -> Reason:
    """Map a webhook enum or a GraphQL reason string to the normalized reason."""
    if not raw:
        return "unknown"
    text = raw.strip()
    if text in _WEBHOOK:
        return _WEBHOOK[text]
    key = text.lower().replace(" ", "_").replace("-", "_")
    if key in _GRAPHQL:
        return _GRAPHQL[key]
    if key.upper() in _WEBHOOK:
        return _WEBHOOK[key.upper()]
    return "unknown"
