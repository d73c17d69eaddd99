"""Evidence for a drop before triage reads logs: the merge-group commit and its failed checks.

The group commit comes from the remembered `merge_group` event for the PR, else from the
merge-group workflow runs whose branch names the PR. The triage stage adds the logs.
"""

from __future__ import annotations

from landbot.intake.events import FAILED
from landbot.intake.groups import parse_group_ref
from landbot.land.model import Drop, Evidence, FailedCheck
from landbot.land.ops import GitHubOps
from landbot.store import Store


def find_group_sha(gh: GitHubOps, store: Store, drop: Drop) -> tuple[str | None, str | None]:
    """(group commit, where it was found) for the drop's PR."""
    if drop.merge_group_sha:
        return drop.merge_group_sha, "drop"
    groups = store.groups_for(drop.repo, drop.pr)
    if groups:
        return str(groups[0].head_sha), "merge_group event"
    for run in gh.merge_group_runs(drop.repo):
        ref = parse_group_ref(run.head_branch)
        if ref is not None and ref.pr == drop.pr:
            return run.head_sha, "merge-group workflow run"
    return None, None


def gather(gh: GitHubOps, store: Store, drop: Drop) -> Evidence:
    if drop.reason != "failed_checks":
        return Evidence()
    sha, source = find_group_sha(gh, store, drop)
    if sha is None:
        return Evidence()
    failed = tuple(
        FailedCheck(run.name, run.conclusion or "", run.html_url or run.details_url or "")
        for run in gh.check_runs(drop.repo, sha)
        if run.conclusion in FAILED
    )
    return Evidence(failed_checks=failed, merge_group_source=source, base_sha=None)
