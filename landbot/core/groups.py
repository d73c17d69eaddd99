"""Merge groups: `gh-readonly-queue/<base>/pr-<N>-<base sha>` names the PR under test, and
which conclusions of its checks are failures."""

from __future__ import annotations

import re
from dataclasses import dataclass

# Anchored at the end: a base branch name may itself contain "/".
_GROUP_REF = re.compile(
    r"^(?:refs/heads/)?gh-readonly-queue/(?P<base>.+)/pr-(?P<number>\d+)-(?P<sha>[0-9a-f]{40})$"
)


# Check-run and workflow-run conclusions that count as a failure of the merge group.
FAILED = frozenset(
    {"failure", "timed_out", "cancelled", "action_required", "startup_failure", "stale"}
)


@dataclass(frozen=True)
class GroupRef:
    base: str
    pr: int
    base_sha: str


def parse_group_ref(ref: str | None) -> GroupRef | None:
    if not ref:
        return None
    m = _GROUP_REF.match(ref)
    if m is None:
        return None
    return GroupRef(m["base"], int(m["number"]), m["sha"])


def removed_this_head(removed: str | None, parents: tuple[str, ...], head: str) -> bool:
    """Whether a removal naming commit `removed` (with `parents`) took `head` out of the
    queue: GitHub names the PR head, or the merge-group commit built on it (a two-parent
    merge whose second parent is the head). Both observed; see landbot/sim/merge_queue.py."""
    return removed == head or (len(parents) == 2 and parents[1] == head)
