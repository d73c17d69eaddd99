"""The `actions` fixer backend: a fix job run as a workflow on the repository's own runners.

    backend = ActionsBackend(store, client, ActionsOptions.from_settings(settings))
    taken = backend.step(job, drop, evidence)   # a RunResult, or raises FixWaiting

With `[fixer] backend = "actions"`, a fix job is a `workflow_dispatch` of `[fixer] workflow`
(the caller config/landbot-fix.yml a repository commits; it runs landbot's reusable
.github/workflows/landbot-fix-job.yml) with the drop, the PR, its head and base, the mode
and a one-time id. Each call of `step` moves the job's dispatch (a `fix_dispatches` row) on
by one look and returns, so no worker thread waits an hour for a runner:

- queued: waits in the store for a slot: `[fixer] concurrency` dispatches at a time per
  repository and per installation (Store.claim_dispatch counts both in one transaction);
- claimed → sending: the row says "sending" before the request goes out. A dispatch is not
  idempotent, so after an answer that never came (MutationOutcomeUnknown, a broken
  connection, a worker killed mid-call) the run is looked for by its id first, and the
  dispatch is sent again only when no run carries the id `resend_after` later;
- sent: GitHub took it (204); the run is found by its `display_title` (the caller's
  `run-name: landbot fix <job-id>`) among the workflow's recent workflow_dispatch runs;
- running: the run is read until it completes; a `workflow_run` webhook for it wakes the
  waiting job at once (intake/events.py), the poll every `poll` is the fallback;
- done: completed with success → its artifact `landbot-fix-<job-id>` (exactly one by that
  name: a run with two is refused, neither taken) is downloaded (capped) and read as
  hostile data (artifact.py `read_artifact`); the verdict is judged by
  verdict.py as a local job's is, and the bundle goes to publish's quarantine and rules
  (landbot/pipeline/fix.py). A run that failed, was cancelled or timed out, uploaded no
  artifact or an unfit one, or did not finish by the deadline (the run is then cancelled on
  GitHub, best effort, so a hung runner is freed) is a `RunResult` with
  `failed` saying which, which the pipeline hands back.

Waiting raises FixWaiting: the worker puts the job back with a not-before time without
counting an attempt (Store.defer_job).
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import re
import secrets
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from landbot import logs
from landbot.core.model import Drop, Evidence
from landbot.core.text import encodable
from landbot.fixer.artifact import ArtifactLimits, ArtifactRefused, read_artifact
from landbot.fixer.prompt import Task, evidence_json
from landbot.fixer.verdict import AgentVerdict, judge
from landbot.github.errors import GitHubError, MutationOutcomeUnknown, NetworkError
from landbot.store import utcnow

if TYPE_CHECKING:
    from landbot.config import Settings
    from landbot.github.models import WorkflowRun
    from landbot.github.ops import RunsWorkflows
    from landbot.store import Store
    from landbot.store.records import StoredDispatch

log = logging.getLogger("landbot.fixer.actions")

# GitHub's limits on a workflow_dispatch's inputs: "The maximum number of top-level
# properties for inputs is 25. The maximum payload for inputs is 65,535 characters."
# (https://docs.github.com/en/actions/writing-workflows/workflow-syntax-for-github-actions#onworkflow_dispatchinputs)
MAX_INPUTS = 25
MAX_INPUT_CHARS = 65_535
# The reusable workflow's own check of the id (landbot-fix-job.yml "Check the dispatch
# inputs"): ^[A-Za-z0-9_-]{1,64}$.
KEY_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,64}")
ARTIFACT_PREFIX = "landbot-fix-"
SUCCESS = "success"

# The jobs row id of the fix job this thread is running (set by the worker around the
# fixer): the dispatch is keyed by it, so a job put back to wait finds its dispatch again.
CURRENT_JOB: ContextVar[int | None] = ContextVar("landbot_fix_job", default=None)


class FixWaiting(Exception):
    """The fix job waits (for a slot, its run, its run's end): not a failure. The worker
    gives the job back until `not_before`."""

    def __init__(self, not_before: dt.datetime, note: str) -> None:
        super().__init__(note)
        self.not_before = not_before
        self.note = note


@dataclass(frozen=True)
class RunResult:
    """What a dispatched fix job handed back: its verdict and bundle, or why nothing."""

    verdict: AgentVerdict | None = None
    bundle: bytes | None = None
    failed: str = ""  # non-empty: nothing to take, and why (for the hand-back)
    run_url: str = ""


@dataclass(frozen=True)
class ActionsOptions:
    workflow: str = "landbot-fix.yml"
    deadline: dt.timedelta = dt.timedelta(minutes=60)
    poll: dt.timedelta = dt.timedelta(seconds=30)
    cap: int = 1  # dispatches at a time per repository, and per installation
    # How long a dispatch whose answer was lost may have no run before it is sent again.
    resend_after: dt.timedelta = dt.timedelta(minutes=2)
    # Runs are looked for from this long before the dispatch (clocks differ).
    skew: dt.timedelta = dt.timedelta(minutes=5)
    limits: ArtifactLimits = field(default_factory=ArtifactLimits)

    @classmethod
    def from_settings(cls, settings: Settings) -> ActionsOptions:
        f = settings.fixer
        return cls(
            workflow=f.workflow,
            deadline=dt.timedelta(minutes=f.actions_deadline_minutes),
            poll=dt.timedelta(seconds=f.actions_poll_seconds),
            cap=f.concurrency,
        )


def new_key(drop_id: int) -> str:
    """A one-time job id: the drop and 64 random bits (never reused, so a run of an
    earlier dispatch is never taken for this one)."""
    key = f"d{int(drop_id)}-{secrets.token_hex(8)}"
    assert KEY_PATTERN.fullmatch(key)
    return key


def artifact_name(key: str) -> str:
    return ARTIFACT_PREFIX + key


def carries_key(run: WorkflowRun, key: str) -> bool:
    """The run's title names the job id as a whole word (`landbot fix <job-id>`): a key
    that is the prefix of another's does not match it."""
    return key in run.display_title.split()


def mode_of(drop: Drop) -> str:
    return "merge_conflict" if drop.reason == "merge_conflict" else "failed_checks"


def dispatch_inputs(drop: Drop, evidence: Evidence, key: str) -> dict[str, str]:
    """The caller workflow's inputs (config/landbot-fix.yml), all strings as the dispatch
    API takes them; the evidence JSON only when the whole stays within GitHub's limit (the
    agent then works from the PR alone, and the hand-back does not depend on it)."""
    base = evidence.base_sha or drop.head_sha  # unused by failed_checks; must be a commit id
    inputs = {
        "drop-id": str(drop.id if drop.id is not None else 0),
        "pr": str(drop.pr),
        "head-sha": drop.head_sha,
        "base-sha": base,
        "mode": mode_of(drop),
        "job-id": key,
    }
    task = Task(drop=drop, evidence=evidence, base_ref=drop.base_ref, base_sha=evidence.base_sha)
    text = json.dumps(evidence_json(task), separators=(",", ":"))
    if _chars({**inputs, "evidence": text}) <= MAX_INPUT_CHARS:
        inputs["evidence"] = text
    assert len(inputs) <= MAX_INPUTS
    return inputs


def _chars(inputs: dict[str, str]) -> int:
    # Counted as the JSON object GitHub receives, which is at least the payload it limits.
    return len(json.dumps(inputs, separators=(",", ":")))


class ActionsBackend:
    """Moves one fix job's dispatch on by one look per `step` (see the module docstring)."""

    def __init__(
        self,
        store: Store,
        client: RunsWorkflows,
        options: ActionsOptions,
        *,
        clock: Any = utcnow,
    ) -> None:
        self.store = store
        self.client = client
        self.options = options
        self.clock = clock

    def step(self, fix_job: int, drop: Drop, evidence: Evidence) -> RunResult:
        """The run's result once it is done; FixWaiting until then."""
        if drop.id is None:
            raise ValueError("a fix job on Actions needs its drop's id")
        o = self.options
        d = self.store.claim_dispatch(
            fix_job=fix_job,
            drop_id=drop.id,
            repo=drop.repo,
            installation=self.client.installation_of(drop.repo),
            workflow=o.workflow,
            key=new_key(drop.id),
            cap=o.cap,
        )
        with logs.bound(dispatch=d.key, run_id=d.run_id):
            return self._step(d, drop, evidence)

    def _step(self, d: StoredDispatch, drop: Drop, evidence: Evidence) -> RunResult:
        now = self.clock()
        o = self.options
        if d.state == "queued":
            raise FixWaiting(now + o.poll, f"waiting for a fix slot ({o.cap} at a time)")
        if d.state == "done" and d.run_id is None:
            return RunResult(failed=d.outcome or "the fix run ended without a result")
        if d.state == "claimed":
            return self._send(d, drop, evidence, now)
        if d.state in ("sending", "sent"):
            run = self._find_run(d, drop)
            if run is None:
                return self._not_found(d, drop, evidence, now)
            d = self.store.update_dispatch(d.key, state="running", run_id=run.id)
            logs.event(log, "fix run found", run_id=run.id, url=run.html_url)
        assert d.run_id is not None
        run = self.client.workflow_run(drop.repo, d.run_id)
        if run.status != "completed":
            if d.deadline is not None and now >= d.deadline:
                self._cancel(drop.repo, run)
                return self._fail(d, f"the fix run did not finish in {_minutes(o.deadline)}", run)
            raise FixWaiting(_until(now + o.poll, d.deadline), f"fix run {run.id}: {run.status}")
        if run.conclusion != SUCCESS:
            return self._fail(
                d, f"the fix run ended {run.conclusion or 'without a conclusion'}", run
            )
        return self._collect(d, drop, run)

    # --- dispatching --------------------------------------------------------------------

    def _send(
        self, d: StoredDispatch, drop: Drop, evidence: Evidence, now: dt.datetime
    ) -> RunResult:
        o = self.options
        deadline = d.deadline or now + o.deadline
        # Written before the request: if its answer is lost (or this process dies), the next
        # look knows it may have gone out and looks for the run before sending it again.
        d = self.store.update_dispatch(d.key, state="sending", sent_at=now, deadline=deadline)
        ref = drop.base_ref or "main"
        try:
            sent = self.client.dispatch_workflow(
                drop.repo, d.workflow, ref, dispatch_inputs(drop, evidence, d.key)
            )
        except (MutationOutcomeUnknown, NetworkError) as exc:
            logs.event(log, "fix dispatch outcome unknown", logging.WARNING, error=exc)
            raise FixWaiting(now + o.poll, f"dispatch of {d.workflow}: no answer") from None
        except GitHubError as exc:
            if exc.status >= 500 or exc.status == 429:
                raise  # transient: the worker retries (the row stays "sending": looked for first)
            return self._fail(
                d,
                f"the fix workflow {d.workflow} could not be dispatched on {ref} ({exc}); "
                f"commit landbot's config/landbot-fix.yml as .github/workflows/{d.workflow} "
                "on the default branch and give the App actions: write",
                None,
            )
        logs.event(log, "fix dispatched", workflow=d.workflow, ref=ref, run_id=sent.run_id)
        if sent.run_id is not None:
            self.store.update_dispatch(d.key, state="running", run_id=sent.run_id)
        else:
            self.store.update_dispatch(d.key, state="sent")
        raise FixWaiting(now + min(o.poll, dt.timedelta(seconds=5)), f"dispatched {d.workflow}")

    def _find_run(self, d: StoredDispatch, drop: Drop) -> WorkflowRun | None:
        since = (d.sent_at or d.created_at) - self.options.skew
        runs = self.client.workflow_runs(
            drop.repo, d.workflow, event="workflow_dispatch", created_after=since
        )
        mine = [r for r in runs if carries_key(r, d.key)]
        return min(mine, key=lambda r: r.id) if mine else None

    def _not_found(
        self, d: StoredDispatch, drop: Drop, evidence: Evidence, now: dt.datetime
    ) -> RunResult:
        o = self.options
        if d.deadline is not None and now >= d.deadline:
            return self._fail(d, f"no run of {d.workflow} started in {_minutes(o.deadline)}", None)
        sent_at = d.sent_at or d.created_at
        if d.state == "sending" and now - sent_at >= o.resend_after:
            # Its answer was lost and no run carries its id: it never reached GitHub.
            logs.event(log, "fix dispatch sent again", logging.WARNING, first_sent=sent_at)
            return self._send(d, drop, evidence, now)
        raise FixWaiting(_until(now + o.poll, d.deadline), f"looking for the run of {d.key}")

    # --- the result -------------------------------------------------------------------

    def _collect(self, d: StoredDispatch, drop: Drop, run: WorkflowRun) -> RunResult:
        name = artifact_name(d.key)
        found = [a for a in self.client.run_artifacts(drop.repo, run.id) if a.name == name]
        if not found:
            return self._fail(d, f"the fix run uploaded no artifact {name}", run)
        if len(found) > 1:
            # Which one landbot's own step wrote cannot be told from outside (a step of the
            # pull request's setup can upload under the same name first): take neither.
            return self._fail(
                d,
                f"the fix run uploaded {len(found)} artifacts named {name}, not one: neither "
                "was taken; look at the run for a step that uploads under landbot's name, "
                "then /landbot retry",
                run,
            )
        [art] = found
        if art.expired:
            return self._fail(d, f"the fix run's artifact {name} expired before it was read", run)
        cap = self.options.limits.max_zip_bytes
        if art.size_in_bytes > cap:
            return self._fail(
                d, f"the fix run's artifact is {art.size_in_bytes:,} bytes, over {cap:,}", run
            )
        try:
            data = self.client.download_artifact(drop.repo, art.id, max_bytes=cap)
            taken = read_artifact(data, self.options.limits)
        except ArtifactRefused as exc:
            return self._fail(d, f"the fix run's artifact was refused: {exc}", run)
        except GitHubError as exc:
            if exc.status >= 500 or exc.status == 429:
                raise
            return self._fail(d, f"the fix run's artifact could not be downloaded: {exc}", run)
        # Judged exactly as a local job's verdict file is (verdict.py).
        verdict = judge([taken.verdict], exit_code=0)
        self.store.update_dispatch(d.key, state="done", outcome=f"collected: {verdict.verdict}")
        logs.event(
            log, "fix run collected", verdict=verdict.verdict, bundle=taken.bundle is not None
        )
        return RunResult(verdict=verdict, bundle=taken.bundle, run_url=run.html_url)

    def _cancel(self, repo: str, run: WorkflowRun) -> None:
        """Past the deadline landbot stops waiting; cancelling the run frees the runner a
        hung job holds. Best effort: a refusal (the run just finished, the App lacks
        actions: write) is logged and the job fails all the same."""
        try:
            self.client.cancel_workflow_run(repo, run.id)
        except GitHubError as exc:
            logs.event(log, "fix run not cancelled", logging.WARNING, run_id=run.id, error=exc)
            return
        logs.event(log, "fix run cancelled", run_id=run.id, status=run.status)

    def _fail(self, d: StoredDispatch, why: str, run: WorkflowRun | None) -> RunResult:
        url = run.html_url if run is not None else ""
        # `why` may quote GitHub's or the artifact's words: stored and handed back as text.
        text = encodable(f"{why} ({url})" if url else why)
        self.store.update_dispatch(d.key, state="done", outcome=text[:2000])
        logs.event(log, "fix run failed", logging.WARNING, why=text)
        return RunResult(failed=text, run_url=url)


def _until(when: dt.datetime, deadline: dt.datetime | None) -> dt.datetime:
    return when if deadline is None else min(when, deadline)


def _minutes(span: dt.timedelta) -> str:
    minutes = span.total_seconds() / 60
    return f"{minutes:g} minutes" if minutes != 1 else "1 minute"
