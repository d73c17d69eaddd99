"""One land-fixer job, in order: re-read, check out, fix, re-read, publish.

    result = run_fix_job(settings, client, workspaces, drop, evidence)   # -> FixerResult

1. Re-read the pull request (its base and head branch; a head that moved ends the job).
2. Check it out from the cached mirror (landbot/git/workspace.py); for a conflict, merge
   the base on the host with the quest merge driver (a head that already contains the
   base needs only the queue).
3. The fixer proper on that checkout (landbot/fixer/job.py): the host's clean merge, or the
   agent in the sandbox, and its verdict.
4. For `fixed`: unless the PR's push cap is reached (decide.push_capped, on the counts
   `budget` reads at that moment), re-read the pull request and, unless someone put it back
   in the queue, closed, merged or skipped it meanwhile (decide.stand_down), publish
   (landbot/land/publish.py): validate the commits, push with a lease on the head the job
   started from, arm auto-merge.

The result carries what the pushed fix changed (publish's numstat) and the command the
failure is reproduced with. The verdict JSON has no field for the agent's own command (a
contract: design.md), so it is the failing job's first `run:` step as triage read it.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from landbot import logs
from landbot.core.model import Drop, Evidence, FixerResult, History
from landbot.fixer.job import JobLimits, fix_checkout
from landbot.land.decide import conflict_already_merged, fix_head_moved, push_capped, stand_down
from landbot.land.model import Policy
from landbot.land.publish import PublishResult, publish

if TYPE_CHECKING:
    from landbot.config import Settings
    from landbot.fixer.actions import ActionsBackend
    from landbot.fixer.agents import Agent
    from landbot.git.workspace import Workspaces
    from landbot.github.models import PullState
    from landbot.github.ops import ActionsFixClient, FixClient

log = logging.getLogger("landbot.fixer.job")


def run_fix_job(
    settings: Settings,
    client: FixClient,
    workspaces: Workspaces,
    drop: Drop,
    evidence: Evidence,
    *,
    agent: Agent | None = None,
    limits: JobLimits = JobLimits(),
    model: str | None = None,
    budget: Callable[[], History] | None = None,
    policy: Policy | None = None,
) -> FixerResult:
    """One land-fixer job for `drop` (see the module docstring); the result for the land
    stage's decision. `budget` reads the PR's counts just before publishing (with `policy`,
    the push cap is checked there too; without, only the decision's check before the job).

    Raises LandbotError when the job could not run (the host cannot sandbox, the agent is
    not installed, git or GitHub failed); a refusal to publish comes back in `refused`.
    """
    pr = client.pull_request(drop.repo, drop.pr)
    moved = fix_head_moved(drop, pr.head_oid)
    if moved is not None:
        return moved
    with workspaces.job(
        drop.repo,
        drop.pr,
        drop.head_sha,
        pr.base_ref,
        head_ref=pr.head_ref,
        merge=drop.reason == "merge_conflict",
        token=client.git_token(drop.repo),
    ) as ws:
        if ws.merge is not None and ws.merge.up_to_date:
            return conflict_already_merged(pr.base_ref, ws.base_sha)
        verdict = fix_checkout(
            settings, ws, drop, evidence, pr.base_ref, agent=agent, limits=limits, model=model
        )
        reproduce = reproduce_command(evidence)
        if verdict.verdict != "fixed":
            return FixerResult(
                verdict.verdict, verdict.summary, verdict.recommendation, reproduce=reproduce
            )
        if budget is not None and policy is not None:
            capped = push_capped(budget(), policy, verdict.summary, verdict.recommendation)
            if capped is not None:
                logs.event(log, "fix not pushed: push cap", logging.WARNING, why=capped.refused)
                return dataclasses.replace(capped, reproduce=reproduce)
        fresh = client.pull_request(drop.repo, drop.pr)
        gone = _stood_down(fresh, policy, verdict.summary, verdict.recommendation, reproduce)
        if gone is not None:
            return gone
        published = publish(client, ws, fresh, settings)
    _published(drop, pr.head_ref, published)
    summary = verdict.summary
    recommendation = verdict.recommendation
    if published.auto_merge_error:
        summary += f" (pushed, but auto-merge could not be armed: {published.auto_merge_error})"
    return FixerResult(
        "fixed",
        summary=summary,
        recommendation=recommendation,
        pushed_sha=published.pushed_sha,
        refused=published.refused or "",
        auto_merge_armed=published.auto_merge_error is None,
        patch=published.patch or "",  # rendered by landbot (comments.py), not the agent's text
        files=published.files,
        reproduce=reproduce,
    )


def run_actions_fix_job(
    settings: Settings,
    client: ActionsFixClient,
    workspaces: Workspaces,
    backend: ActionsBackend,
    fix_job: int,
    drop: Drop,
    evidence: Evidence,
    *,
    budget: Callable[[], History] | None = None,
    policy: Policy | None = None,
) -> FixerResult:
    """One land-fixer job on the repository's runners (`[fixer] backend = "actions"`): one
    look at its dispatch (landbot/fixer/actions.py; FixWaiting until the run is done), then
    the run's verdict and bundle through the same path a local job's take: the head check,
    the push cap, and publish's quarantine and rules on a host work tree at the PR head."""
    pr = client.pull_request(drop.repo, drop.pr)
    moved = fix_head_moved(drop, pr.head_oid)
    if moved is not None:
        return moved
    taken = backend.step(fix_job, drop, evidence)
    reproduce = reproduce_command(evidence)
    if taken.failed or taken.verdict is None:
        why = f"the fix job on GitHub Actions failed: {taken.failed or 'no verdict'}"
        return FixerResult("needs_human", summary=why, refused=why, reproduce=reproduce)
    verdict = taken.verdict
    if verdict.verdict != "fixed":
        return FixerResult(
            verdict.verdict, verdict.summary, verdict.recommendation, reproduce=reproduce
        )
    if taken.bundle is None:
        why = "the fix job on GitHub Actions says fixed, but its artifact holds no commits"
        return FixerResult("needs_human", summary=why, refused=why, reproduce=reproduce)
    if budget is not None and policy is not None:
        capped = push_capped(budget(), policy, verdict.summary, verdict.recommendation)
        if capped is not None:
            logs.event(log, "fix not pushed: push cap", logging.WARNING, why=capped.refused)
            return dataclasses.replace(capped, reproduce=reproduce)
    fresh = client.pull_request(drop.repo, drop.pr)
    gone = _stood_down(fresh, policy, verdict.summary, verdict.recommendation, reproduce)
    if gone is not None:
        return gone
    with workspaces.job(
        drop.repo,
        drop.pr,
        drop.head_sha,
        pr.base_ref,
        head_ref=pr.head_ref,
        merge=drop.reason == "merge_conflict",
        token=client.git_token(drop.repo),
    ) as ws:
        published = publish(client, ws, fresh, settings, bundle=taken.bundle)
    _published(drop, pr.head_ref, published)
    summary = verdict.summary
    if published.auto_merge_error:
        summary += f" (pushed, but auto-merge could not be armed: {published.auto_merge_error})"
    return FixerResult(
        "fixed",
        summary=summary,
        recommendation=verdict.recommendation,
        pushed_sha=published.pushed_sha,
        refused=published.refused or "",
        auto_merge_armed=published.auto_merge_error is None,
        patch=published.patch or "",
        files=published.files,
        reproduce=reproduce,
    )


def _stood_down(
    fresh: PullState, policy: Policy | None, summary: str, recommendation: str, reproduce: str
) -> FixerResult | None:
    """The job's result, unpublished, when the PR is no longer landbot's to push to
    (decide.stand_down); the after-fixer decision then leaves the PR alone."""
    why = stand_down(fresh.snapshot(), (policy or Policy()).skip_label)
    if why is None:
        return None
    logs.event(log, "fix not pushed: the fixer stands down", logging.WARNING, why=why)
    return FixerResult(
        "fixed",
        summary=summary,
        recommendation=recommendation,
        refused=why,
        reproduce=reproduce,
    )


def _published(drop: Drop, branch: str, published: PublishResult) -> None:
    """The lines for publish's GitHub writes: the push, and arming auto-merge."""
    ids = logs.drop_fields(drop)
    if published.refused:
        logs.event(log, "fix not pushed", logging.WARNING, **ids, why=published.refused)
        return
    if published.pushed_sha is None:
        return  # publish always says why it pushed nothing; nothing else to say
    logs.event(
        log,
        "fix pushed",
        **ids,
        branch=branch,
        pushed_sha=published.pushed_sha,
        commits=len(published.commits),
        files=len(published.files),
    )
    if published.auto_merge_error:
        logs.event(
            log,
            "auto-merge not armed",
            logging.WARNING,
            **ids,
            pushed_sha=published.pushed_sha,
            error=published.auto_merge_error,
        )
    elif published.auto_merge_armed:
        logs.event(log, "auto-merge armed", **ids, pushed_sha=published.pushed_sha)


def reproduce_command(evidence: Evidence) -> str:
    """The failing job's first `run:` step (triage leaves `run` empty for a `uses:` step)."""
    return next((job.run for job in evidence.jobs if job.run.strip()), "")
