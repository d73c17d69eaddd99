"""Each failed job's baseline (issue 26): the same job's log on the newest green run of its
workflow on the base branch, else on the newest green merge group of that base's queue,
read into a `Baseline` (triage/baseline.py) and kept in the store per base run, so one
download serves every drop on that base.

What it costs a drop, on a base commit not seen before: one listing of the base's green
push runs (every workflow's: one serves all the drop's failed jobs); when the base has no
green run of the job's workflow, the newest merge-group runs (the listing triage reads
anyway for the PRs ahead: shared); one job listing per baseline run; each baseline job's
log (2: the API's redirect and the download). A later drop on the same base commit: none
(the store remembers which run, and keeps its baseline). A drop on another base commit
whose baseline is the same run: the listing only.

A baseline is an aid, never a reason to fail a drop: a GitHub error finding or fetching it
leaves the job with its log alone (a warning says why), except RateLimited, which goes up
as everywhere in triage. Nothing is remembered from an error but a log GitHub no longer
serves, so the next drop asks again.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from landbot.core.groups import parse_group_ref
from landbot.github.errors import GitHubError, RateLimited
from landbot.github.models import Job, WorkflowRun
from landbot.github.ops import ReadsGreenRuns, TriageGitHub
from landbot.triage.baseline import Baseline, BaselineError, read_baseline

if TYPE_CHECKING:
    from landbot.store import Store
    from landbot.store.records import StoredBaselineRun

log = logging.getLogger("landbot.triage")
K = TypeVar("K")
T = TypeVar("T")

# How long "this run is the baseline" (or "there is none") holds for a base commit whose
# own run was not the one found: that run may turn green meanwhile. The base commit's own
# green run holds until retention prunes it: nothing newer can be a better baseline.
RECHECK = dt.timedelta(minutes=15)
# Statuses of a log GitHub no longer serves (expired, deleted, forbidden to this token).
_GONE = frozenset({403, 404, 410})


@dataclass(frozen=True)
class Target:
    """What a failed job's baseline is looked up by: its base branch and the commit its
    merge group was built on, its workflow's name and its own full name (matrix values
    included, as the check run shows it)."""

    base_ref: str
    base_sha: str | None  # None: not known without a call (the store's memory is not used)
    workflow: str
    job: str


def target_of(
    job: Job | None, *, base_ref: str | None = None, base_sha: str | None = None
) -> Target | None:
    """A failed job's Target: the base from the job's own branch (a merge group's
    `gh-readonly-queue/<base>/pr-N-<sha>`), else the one given; None without a workflow
    name or a base branch (nothing to look for)."""
    if job is None or not job.workflow_name:
        return None
    ref = parse_group_ref(job.head_branch)
    if ref is not None:
        base_ref, base_sha = ref.base, ref.base_sha
    if not base_ref:
        return None
    return Target(base_ref, base_sha, job.workflow_name, job.name)


class _Failed(Exception):
    """A listing GitHub failed to give earlier in this drop: not asked for again."""

    def __init__(self, error: GitHubError) -> None:
        super().__init__(str(error))
        self.error = error


def usable(gh: TriageGitHub) -> bool:
    """Whether the client can list a branch's green runs (a client without it: no
    baselines, the log alone)."""
    return isinstance(gh, ReadsGreenRuns)


class LastGreen:
    """One drop's baselines: `finder.of(job)` is the Baseline of a failed job, or None.
    Each listing is read at most once per drop, whatever the number of failed jobs."""

    def __init__(
        self,
        gh: TriageGitHub,
        store: Store,
        repo: str,
        *,
        merge_group_runs: Callable[[], list[WorkflowRun]],
        max_bytes: int,
        base_ref: str | None = None,
        base_sha: str | None = None,
        now: Callable[[], dt.datetime] | None = None,
    ) -> None:
        from landbot.store import utcnow

        self._gh, self._store, self._repo = gh, store, repo
        # The base of a job whose own branch does not name one (the drop's group's).
        self._base_ref, self._base_sha = base_ref, base_sha
        self._merge_group_runs = merge_group_runs
        self._max_bytes = max_bytes
        self._now = now or utcnow
        self._runs: dict[str, list[WorkflowRun] | _Failed] = {}
        self._jobs: dict[int, list[Job] | _Failed] = {}

    def of(self, job: Job | None) -> Baseline | None:
        """The baseline of a failed job (None: none to compare with)."""
        return self(target_of(job, base_ref=self._base_ref, base_sha=self._base_sha))

    def __call__(self, target: Target | None) -> Baseline | None:
        if target is None:
            return None
        try:
            return self._baseline(target)
        except RateLimited:
            raise
        except GitHubError as exc:
            self._warn(target, exc)
        except _Failed as exc:
            self._warn(target, exc.error)
        return None

    def _warn(self, target: Target, exc: GitHubError) -> None:
        log.warning(
            "%s: no baseline for %s on %s, the log alone (%s: %s)",
            self._repo,
            target.job,
            target.base_ref,
            exc.status,
            exc,
        )

    # --- the lookup -------------------------------------------------------------------

    def _baseline(self, target: Target) -> Baseline | None:
        memo = self._remembered(target)
        if memo is not None:
            if memo.run_id is None:
                return None  # no green run to compare, a moment ago
            kept = self._kept(memo.run_id, target.job)
            if kept is not None:
                return kept[0]
            if memo.job_id is not None:  # known, but not kept (pruned, or unreadable)
                return self._fetch(target, memo.run_id, memo.run_sha, memo.job_id)
        run = self._find_run(target)
        if run is None:
            self._remember(target, None)
            return None
        kept = self._kept(run.id, target.job)  # a drop on another base commit fetched it
        if kept is not None:
            self._remember(target, run.id, run.head_sha, kept[1])
            return kept[0]
        jobs = _once(self._jobs, run.id, lambda: self._gh.run_jobs(self._repo, run.id))
        job = next((j for j in jobs if j.name == target.job and j.conclusion == "success"), None)
        if job is None:
            # The green run has no passing job of that name (skipped, renamed, another
            # matrix): nothing to compare with on this base.
            self._remember(target, None)
            return None
        return self._fetch(target, run.id, run.head_sha, job.id)

    def _remembered(self, target: Target) -> StoredBaselineRun | None:
        """The store's answer for this base commit, while it holds (RECHECK)."""
        if target.base_sha is None:
            return None
        memo = self._store.baseline_run(
            self._repo, target.base_ref, target.workflow, target.job, target.base_sha
        )
        if memo is None:
            return None
        if memo.run_id is not None and memo.run_sha == target.base_sha:
            return memo
        return memo if self._now() - memo.found_at < RECHECK else None

    def _find_run(self, target: Target) -> WorkflowRun | None:
        """The newest green run of the job's workflow on the base branch; else the newest
        green merge group of that base's queue."""
        gh, base = self._gh, target.base_ref
        if isinstance(gh, ReadsGreenRuns):
            for run in _once(self._runs, f"push:{base}", lambda: gh.green_runs(self._repo, base)):
                if run.name == target.workflow and run.conclusion == "success":
                    return run
        for run in _once(self._runs, "groups", self._merge_group_runs):
            ref = parse_group_ref(run.head_branch)
            if (
                ref is not None
                and ref.base == base
                and run.name == target.workflow
                and run.conclusion == "success"
            ):
                return run
        return None

    # --- the log, and the store -------------------------------------------------------

    def _kept(self, run_id: int, job: str) -> tuple[Baseline, int] | None:
        """The baseline the store keeps for the run's job, and the job's id."""
        stored = self._store.baseline(self._repo, run_id, job)
        if stored is None:
            return None
        try:
            return Baseline.from_bytes(stored.data), stored.job_id
        except BaselineError as exc:
            # Written by another version of landbot, or damaged: fetched again.
            log.warning(
                "%s: the kept baseline of run %s is unreadable (%s)", self._repo, run_id, exc
            )
            self._store.forget_baseline(self._repo, run_id, job)
            return None

    def _fetch(
        self, target: Target, run_id: int, run_sha: str | None, job_id: int
    ) -> Baseline | None:
        """The green job's log, streamed and byte-capped as a failing one, read into a
        Baseline; kept with the run it came from in one transaction."""
        try:
            with self._gh.job_log(self._repo, job_id) as chunks:
                baseline = read_baseline(chunks, max_bytes=self._max_bytes)
        except RateLimited:
            raise
        except GitHubError as exc:
            if exc.status in _GONE:
                # The green run's log is gone: no baseline on this base for a while.
                self._remember(target, None)
            raise
        with self._store.tx():
            self._store.save_baseline(
                repo=self._repo,
                run_id=run_id,
                job_name=target.job,
                job_id=job_id,
                head_sha=run_sha,
                data=baseline.to_bytes(),
            )
            self._remember(target, run_id, run_sha, job_id)
        return baseline

    def _remember(
        self,
        target: Target,
        run_id: int | None,
        run_sha: str | None = None,
        job_id: int | None = None,
    ) -> None:
        if target.base_sha is None:
            return
        self._store.remember_baseline_run(
            repo=self._repo,
            base_ref=target.base_ref,
            workflow=target.workflow,
            job_name=target.job,
            base_sha=target.base_sha,
            run_id=run_id,
            run_sha=run_sha,
            job_id=job_id,
            at=self._now(),
        )


def _once(cache: dict[K, list[T] | _Failed], key: K, fetch: Callable[[], list[T]]) -> list[T]:
    """A listing read once per drop; one GitHub failed to give is not asked for again."""
    if key not in cache:
        try:
            cache[key] = fetch()
        except RateLimited:
            raise
        except GitHubError as exc:
            cache[key] = _Failed(exc)
    got = cache[key]
    if isinstance(got, _Failed):
        raise got
    return got
