"""The simulated GitHub plays Actions: workflow_dispatch, runs on a small runner, artifacts.

    POST /repos/{o}/{r}/actions/workflows/{workflow_id}/dispatches   -> 204 (200 with
         return_run_details: true, as GitHub answers since 2026-02-19:
         https://github.blog/changelog/2026-02-19-workflow-dispatch-api-now-returns-run-ids)
    GET  /repos/{o}/{r}/actions/workflows, /actions/workflows/{workflow_id}/runs
    POST /repos/{o}/{r}/actions/runs/{run_id}/cancel                 -> 202
    GET  /repos/{o}/{r}/actions/runs/{run_id}/artifacts, /actions/artifacts,
         /actions/artifacts/{artifact_id}, /actions/artifacts/{artifact_id}/zip -> 302 to a
         signed URL on the blob host, valid one minute; 410 once expired.

A dispatch reads the workflow file from the repository's git at `ref`, checks the body
against githubkit's request model and the inputs against the file's `workflow_dispatch`
inputs (GitHub's 422s), and creates a run (event `workflow_dispatch`, `display_title` the
evaluated `run-name`) with one job. The job runs in a thread (runner.py) as
`gh.actions_runner` says: at once, held (queued or in progress) until `release()`, or hung
until cancelled. A caller job that `uses:` a reusable workflow is resolved from the
repository (`./.github/workflows/x.yml`) or from `gh.reusable_workflows` (an `OWNER/NAME`
mapped to a local checkout, e.g. this one for landbot's own). `workflow_run` (requested,
in_progress, completed) and `workflow_job` (queued, in_progress, completed) webhooks follow
the run; the job's log is served by the job-log route.

A job's conclusion is success, failure, cancelled (`POST .../cancel`, or `mode="hang"` and
cancelled) or timed_out (past `timeout-minutes`, or `gh.actions_runner.timeout_seconds`
when smaller); the run's is the job's, except that a timed-out job makes the run `failure`
as the scenario runs of model.py do (GitHub's documentation does not say; third-party
reports differ). Test hooks: `engine(gh).wait(run_id)`, `.release(run_id)`,
`.cancel(run_id)`, `.replace_artifact(id, bytes | None)`, `.add_artifact(run_id, name,
bytes)` (a second one of a name, which the upload refuses), and `gh.actions_runner.tamper`,
called at upload, to store other bytes (a hostile artifact) or none (no artifact).
"""

from __future__ import annotations

import hashlib
import hmac
import io
import json
import os
import subprocess
import tempfile
import threading
import time
import weakref
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from starlette.responses import JSONResponse, RedirectResponse, Response

from landbot.sim import git, payloads
from landbot.sim.expr import ExpressionError, interpolate, to_text
from landbot.sim.ids import iso, node_id
from landbot.sim.model import WRITE_ROLES, FakeGitHub, Forbidden, NotFound, Unprocessable
from landbot.sim.rest import (
    BadRequest,
    Call,
    RouteSpec,
    _app_may,
    _caller_app,
    _storage_error,
    _validation_error,
    paginate,
)
from landbot.sim.runner import JobOutcome, JobPlan, JobRunner, StepFailed, StepResult, _raw
from landbot.sim.state import Artifact, Job, Repository, RunnerSettings, Step, WorkflowRun

ARTIFACT_URL_LIFETIME = 60  # seconds: GitHub's artifact download URLs last one minute
MAX_INPUTS = 25  # GitHub's limit on a dispatch's inputs


@dataclass
class RunExtra:
    """What the Actions engine keeps about a dispatched run beyond the WorkflowRun."""

    run_id: int
    inputs: dict[str, Any]
    ref: str
    workflow: dict[str, Any]
    cancel: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)
    done: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None
    outcome: JobOutcome | None = None
    error: str | None = None


class Engine:
    """The Actions side of one FakeGitHub: dispatched runs and their artifacts."""

    def __init__(self, gh: FakeGitHub) -> None:
        self.gh = gh
        self.runs: dict[int, RunExtra] = {}

    @property
    def artifacts(self) -> dict[int, Artifact]:
        """The model's artifacts (the model keeps them: its own runs upload some too)."""
        return self.gh.artifacts

    # --- workflows in git -----------------------------------------------------------------

    def workflow_files(self, repo: Repository, sha: str) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for path in git.list_files(repo.require_git(), sha):
            if path.startswith(".github/workflows/") and path.endswith((".yml", ".yaml")):
                if "/" in path[len(".github/workflows/") :]:
                    continue
                raw = git.read_file(repo.require_git(), sha, path) or b""
                out[path] = _load(raw) or {}
        return out

    def workflow_id(self, repo: Repository, path: str) -> int:
        key = (repo.full_name.lower(), path)
        ids = self.gh._workflow_ids
        if key not in ids:
            ids[key] = self.gh.ids.next("workflow")
        return ids[key]

    def workflow_json(self, repo: Repository, path: str, doc: Mapping[str, Any]) -> Any:
        api, web = self.gh.urls.api, self.gh.urls.web
        wid = self.workflow_id(repo, path)
        name = str(doc.get("name") or path)
        return {
            "id": wid,
            "node_id": node_id("workflow", wid),
            "name": name,
            "path": path,
            "state": "active",
            "created_at": iso(repo.created_at),
            "updated_at": iso(repo.created_at),
            "url": f"{api}/repos/{repo.full_name}/actions/workflows/{wid}",
            "html_url": f"{web}/{repo.full_name}/blob/{repo.default_branch}/{path}",
            "badge_url": f"{web}/{repo.full_name}/workflows/{path.rsplit('/', 1)[-1]}/badge.svg",
        }

    def find_workflow(self, repo: Repository, workflow_id: str, sha: str) -> str | None:
        files = self.workflow_files(repo, sha)
        for path in files:
            if workflow_id in (path, path.rsplit("/", 1)[-1]):
                return path
            if workflow_id.isdigit() and int(workflow_id) == self.workflow_id(repo, path):
                return path
        return None

    # --- dispatch -------------------------------------------------------------------------

    def dispatch(
        self, repo: Repository, path: str, ref: str, sha: str, inputs: Mapping[str, Any], actor: str
    ) -> WorkflowRun:
        doc = self.workflow_files(repo, sha).get(path)
        if doc is None:
            raise NotFound("Not Found")
        on = _on(doc)
        triggers = on if isinstance(on, dict) else {t: None for t in _as_list(on)}
        if "workflow_dispatch" not in triggers:
            raise Unprocessable("Workflow does not have 'workflow_dispatch' trigger")
        declared = (triggers.get("workflow_dispatch") or {}).get("inputs") or {}
        given = dict(inputs)
        unknown = sorted(set(given) - set(declared))
        if unknown:
            raise Unprocessable(f"Unexpected inputs provided: {json.dumps(unknown)}")
        values: dict[str, Any] = {}
        for name, spec in declared.items():
            spec = spec or {}
            kind = spec.get("type", "string")
            if name not in given or given[name] in (None, ""):
                if spec.get("required") and "default" not in spec:
                    raise Unprocessable(f"Required input '{name}' not provided")
                raw: Any = spec.get("default", False if kind == "boolean" else "")
            else:
                raw = given[name]
            if (
                kind == "choice"
                and name in given
                and str(raw) not in map(str, spec.get("options") or [])
            ):
                raise Unprocessable(
                    f"Provided value '{raw}' for input '{name}' not in the list of allowed values"
                )
            # An input neither given nor defaulted is '' whatever its type.
            values[name] = raw if raw == "" else _typed(raw, kind, name)
        gh = self.gh
        now = gh.clock.now()
        wid = self.workflow_id(repo, path)
        key = (repo.full_name.lower(), path)
        gh._run_numbers[key] = gh._run_numbers.get(key, 0) + 1
        run_id = gh.ids.next("run")
        branch = ref.removeprefix("refs/heads/")
        run = WorkflowRun(
            id=run_id,
            node_id=node_id("run", run_id),
            repo=repo.full_name,
            name=str(doc.get("name") or path),
            path=path,
            workflow_id=wid,
            event="workflow_dispatch",
            head_sha=sha,
            head_branch=branch,
            status="queued",
            conclusion=None,
            run_number=gh._run_numbers[key],
            created_at=now,
            updated_at=now,
            check_suite_id=gh.ids.next("check_suite"),
            actor=actor,
        )
        extra = RunExtra(run_id=run_id, inputs=values, ref=ref, workflow=doc)
        github_ctx = self._github_context(repo, run, ref, actor, values)
        try:
            title = doc.get("run-name")
            run.display_title = (
                to_text(interpolate(str(title), {"inputs": values, "github": github_ctx}, _no))
                if title
                else run.name
            )
        except ExpressionError as exc:
            extra.error = f"run-name: {exc}"
            run.display_title = run.name
        gh.workflow_runs[run_id] = run
        self.runs[run_id] = extra
        job_name = self._job_name(doc)
        jid = gh.ids.next("job")
        job = Job(
            id=jid,
            node_id=node_id("job", jid),
            run_id=run_id,
            repo=repo.full_name,
            name=job_name,
            workflow_name=run.name,
            head_sha=sha,
            head_branch=branch,
            status="queued",
            conclusion=None,
            started_at=now,
            completed_at=None,
            steps=[],
            log="",
            required=False,
        )
        gh.jobs[jid] = job
        run.job_ids.append(jid)
        gh._job_check_run(repo, run, job)
        message = git.commit_message(repo.require_git(), sha)
        gh._emit("workflow_run", workflow_run_event(gh, repo, run, "requested", message))
        gh._emit("workflow_job", workflow_job_event(gh, repo, job, "queued"))
        extra.thread = threading.Thread(
            target=self._execute,
            args=(repo, run, job, extra),
            daemon=True,
            name=f"sim-run-{run_id}",
        )
        extra.thread.start()
        return run

    def _job_name(self, doc: Mapping[str, Any]) -> str:
        jobs: dict[str, Any] = doc.get("jobs") or {}
        first: tuple[str, Any] = next(iter(jobs.items()), ("build", {}))
        job_id, job = first[0], first[1] or {}
        name = str(job.get("name") or job_id)
        uses = job.get("uses")
        if isinstance(uses, str):
            callee = self._resolve_reusable(uses, None, None)
            if callee is not None:
                inner: dict[str, Any] = callee.get("jobs") or {}
                head: tuple[str, Any] = next(iter(inner.items()), ("job", {}))
                return f"{name} / {(head[1] or {}).get('name') or head[0]}"
        return name

    def _github_context(
        self, repo: Repository, run: WorkflowRun, ref: str, actor: str, inputs: Mapping[str, Any]
    ) -> dict[str, Any]:
        full_ref = ref if ref.startswith("refs/") else f"refs/heads/{ref}"
        return {
            "repository": repo.full_name,
            "repository_owner": repo.owner,
            "sha": run.head_sha,
            "ref": full_ref,
            "ref_name": full_ref.rsplit("/", 1)[-1],
            "event_name": "workflow_dispatch",
            "event": {"inputs": dict(inputs)},
            "actor": actor,
            "triggering_actor": actor,
            "run_id": run.id,
            "run_number": run.run_number,
            "run_attempt": 1,
            "workflow": run.name,
            "server_url": self.gh.urls.web,
            "api_url": self.gh.urls.api,
            "workspace": f"/tmp/_work/{repo.name}",
        }

    def _resolve_reusable(
        self, uses: str, repo: Repository | None, sha: str | None
    ) -> dict[str, Any] | None:
        """The called workflow's document, or None when the sim cannot find it."""
        if uses.startswith("./"):
            if repo is None or sha is None:
                return None
            raw = git.read_file(repo.require_git(), sha, uses[2:])
            return _load(raw)
        target, _, _ref = uses.partition("@")
        parts = target.split("/", 2)
        if len(parts) != 3:
            return None
        checkout = self.gh.reusable_workflows.get(f"{parts[0]}/{parts[1]}")
        if checkout is None:
            return None
        file = Path(checkout) / parts[2]
        return _load(file.read_bytes()) if file.is_file() else None

    # --- the run --------------------------------------------------------------------------

    def _plan(self, repo: Repository, run: WorkflowRun, job_name: str, extra: RunExtra) -> JobPlan:
        doc = extra.workflow
        jobs = doc.get("jobs") or {}
        if len(jobs) != 1:
            raise ValueError("the sim runner runs workflows of exactly one job")
        job = next(iter(jobs.values())) or {}
        settings = self.gh.actions_runner
        actor = run.actor or repo.owner
        github_ctx = self._github_context(repo, run, extra.ref, actor, extra.inputs)
        secrets = dict(settings.secrets)
        job_ctx: dict[str, Any] = {"status": "success"}
        inputs: dict[str, Any] = dict(extra.inputs)
        uses = job.get("uses")
        if isinstance(uses, str):
            callee = self._resolve_reusable(uses, repo, run.head_sha)
            if callee is None:
                raise ValueError(
                    f"the sim cannot find the reusable workflow {uses}: map its repository in "
                    "gh.reusable_workflows"
                )
            outer = {"inputs": inputs, "github": github_ctx, "secrets": secrets}
            with_ = {
                k: interpolate(_raw(v), outer, _no) for k, v in (job.get("with") or {}).items()
            }
            call_on = _on(callee) or {}
            call = (call_on.get("workflow_call") if isinstance(call_on, dict) else None) or {}
            declared = call.get("inputs") or {}
            unknown = sorted(set(with_) - set(declared))
            if unknown:
                raise ValueError(f"{uses}: unknown inputs {unknown}")
            inputs = {}
            for name, spec in declared.items():
                spec = spec or {}
                if name in with_:
                    inputs[name] = _typed(with_[name], spec.get("type", "string"), name)
                elif spec.get("required"):
                    raise ValueError(f"{uses}: the required input {name} is not given")
                else:
                    inputs[name] = spec.get("default", "")
            passed = job.get("secrets")
            if passed == "inherit":
                inner_secrets = secrets
            else:
                inner_secrets = {
                    k: to_text(interpolate(_raw(v), outer, _no)) for k, v in (passed or {}).items()
                }
            secrets = inner_secrets
            target, _, wref = uses.partition("@")
            owner_repo = "/".join(target.split("/", 2)[:2]) if not uses.startswith("./") else ""
            job_ctx.update(
                workflow_repository=owner_repo or repo.full_name,
                workflow_sha=wref or run.head_sha,
                workflow_ref=uses,
                workflow_file_path=target.split("/", 2)[-1] if owner_repo else uses[2:],
            )
            inner_jobs = callee.get("jobs") or {}
            if len(inner_jobs) != 1:
                raise ValueError("the sim runner runs reusable workflows of exactly one job")
            job = next(iter(inner_jobs.values())) or {}
        else:
            job_ctx.update(workflow_repository=repo.full_name, workflow_sha=run.head_sha)
        timeout = float(job.get("timeout-minutes") or 360)
        return JobPlan(
            name=job_name,
            steps=list(job.get("steps") or []),
            env=dict(job.get("env") or {}),
            timeout_minutes=timeout,
            contexts={"inputs": inputs, "github": github_ctx, "secrets": secrets, "job": job_ctx},
        )

    def _set(self, repo: Repository, run: WorkflowRun, job: Job, status: str) -> None:
        gh = self.gh
        with gh.lock:
            now = gh.clock.now()
            job.status = status
            run.status = status
            run.updated_at = now
            check = gh.check_runs.get(job.id)
            if check is not None:
                check.status = status
            if status == "in_progress":
                job.started_at = now
                if check is not None:
                    check.started_at = now
                message = git.commit_message(repo.require_git(), run.head_sha)
                gh._emit("workflow_run", workflow_run_event(gh, repo, run, "in_progress", message))
                gh._emit("workflow_job", workflow_job_event(gh, repo, job, "in_progress"))

    def _steps(self, job: Job, done: list[StepResult], current: str | None) -> None:
        with self.gh.lock:
            steps = [
                Step(i, r.name, "completed", r.conclusion, r.started, r.completed)
                for i, r in enumerate(done, start=1)
            ]
            if current is not None:
                now = self.gh.clock.now()
                steps.append(Step(len(done) + 1, current, "in_progress", None, now, None))
            job.steps = steps

    def _finish(
        self, repo: Repository, run: WorkflowRun, job: Job, conclusion: str, log: str
    ) -> None:
        gh = self.gh
        with gh.lock:
            now = gh.clock.now()
            job.status, job.conclusion, job.completed_at, job.log = (
                "completed",
                conclusion,
                now,
                log,
            )
            check = gh.check_runs.get(job.id)
            if check is not None:
                check.status, check.conclusion, check.completed_at = "completed", conclusion, now
            gh._emit("workflow_job", workflow_job_event(gh, repo, job, "completed"))
            if check is not None:
                gh._emit("check_run", payloads.check_run_event(gh, repo, check))
            run.status = "completed"
            run.conclusion = "failure" if conclusion == "timed_out" else conclusion
            run.updated_at = now
            message = git.commit_message(repo.require_git(), run.head_sha)
            gh._emit("workflow_run", workflow_run_event(gh, repo, run, "completed", message))

    def _execute(self, repo: Repository, run: WorkflowRun, job: Job, extra: RunExtra) -> None:
        settings: RunnerSettings = self.gh.actions_runner
        try:
            if settings.mode == "hold_queued":
                _wait(extra, extra.release)
            if extra.cancel.is_set():
                self._finish(
                    repo, run, job, "cancelled", "The run was cancelled before it started.\n"
                )
                return
            self._set(repo, run, job, "in_progress")
            if settings.mode in ("hold_in_progress", "hang"):
                _wait(extra, extra.release if settings.mode == "hold_in_progress" else None)
            if extra.cancel.is_set():
                self._finish(repo, run, job, "cancelled", "##[error]The operation was canceled.\n")
                return
            if extra.error is not None:
                self._finish(repo, run, job, "failure", f"##[error]{extra.error}\n")
                return
            try:
                plan = self._plan(repo, run, job.name, extra)
            except (ValueError, ExpressionError) as exc:
                extra.error = str(exc)
                self._finish(repo, run, job, "failure", f"##[error]{exc}\n")
                return
            limit = plan.timeout_minutes * 60
            if settings.timeout_seconds is not None:
                limit = min(limit, settings.timeout_seconds)
            base = settings.work_root or Path(self.gh.root) / "_runners"
            base.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryDirectory(prefix=f"run-{run.id}-", dir=base) as root:
                runner = JobRunner(
                    plan,
                    Path(root),
                    checkout=lambda w, dest: self._checkout(repo, run, w, dest),
                    upload=lambda w, host: self._upload(repo, run, w, host),
                    cancel=extra.cancel,
                    deadline=time.monotonic() + limit,
                    on_step=lambda done, current: self._steps(job, done, current),
                )
                outcome = runner.run()
            extra.outcome = outcome
            with self.gh.lock:
                job.steps = [
                    Step(i, r.name, "completed", r.conclusion, r.started, r.completed)
                    for i, r in enumerate(outcome.steps, start=1)
                ]
            self._finish(repo, run, job, outcome.conclusion, outcome.log)
        except Exception as exc:  # a bug of the sim: the run fails, saying so
            extra.error = f"the sim runner failed: {exc!r}"
            self._finish(repo, run, job, "failure", f"##[error]{extra.error}\n")
        finally:
            extra.done.set()

    def _checkout(
        self, repo: Repository, run: WorkflowRun, with_: Mapping[str, Any], dest: Path
    ) -> str:
        ref = to_text(with_.get("ref", "")) or run.head_sha
        depth = int(to_text(with_.get("fetch-depth", "1")) or 1)
        persist = to_text(with_.get("persist-credentials", "true")).lower() != "false"
        url = self.gh.clone_url(repo)
        dest.mkdir(parents=True, exist_ok=True)

        def g(*args: str) -> str:
            done = subprocess.run(
                ["git", *args], cwd=dest, capture_output=True, text=True, timeout=120
            )
            if done.returncode != 0:
                raise StepFailed(f"git {' '.join(args)}: {done.stderr.strip()}")
            return done.stdout

        g("init", "-q")
        g("remote", "add", "origin", url)
        deep = [] if depth == 0 else [f"--depth={depth}"]
        g("-c", "protocol.version=2", "fetch", "-q", "--no-tags", *deep, "origin",
          "+refs/heads/*:refs/remotes/origin/*" if depth == 0 else ref)  # fmt: skip
        if depth == 0:
            g("fetch", "-q", "origin", ref)
        g("checkout", "-q", "--detach", "FETCH_HEAD" if depth else ref)
        if persist:
            # As actions/checkout: the job's token in the repository's git config.
            g("config", "--local", f"http.{self.gh.urls.web}/.extraheader",
              f"AUTHORIZATION: basic sim-run-token-{run.id}")  # fmt: skip
        head = g("rev-parse", "HEAD").strip()
        return f"Checked out {repo.full_name} at {head} (depth {depth or 'all'})"

    def _upload(
        self, repo: Repository, run: WorkflowRun, with_: Mapping[str, Any], host: Any
    ) -> tuple[str, dict[str, str]]:

        name = to_text(with_.get("name", "")) or "artifact"
        paths = [p.strip() for p in to_text(with_.get("path", "")).splitlines() if p.strip()]
        hidden = to_text(with_.get("include-hidden-files", "false")).lower() == "true"
        missing = to_text(with_.get("if-no-files-found", "warn")) or "warn"
        days = int(to_text(with_.get("retention-days", "")) or 90)
        files: list[tuple[str, Path]] = []
        for jail in paths:
            p = host(jail)
            if p.is_dir():
                for f in sorted(p.rglob("*")):
                    rel = f.relative_to(p)
                    if f.is_file() and (hidden or not any(x.startswith(".") for x in rel.parts)):
                        files.append((rel.as_posix(), f))
            elif p.is_file() and (hidden or not p.name.startswith(".")):
                files.append((p.name, p))
        if not files:
            text = f"No files were found with the provided path: {' '.join(paths)}."
            if missing == "error":
                raise StepFailed(text)
            return (f"##[warning]{text} No artifacts will be uploaded.", {})
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
            for arc, f in files:
                z.write(f, arc)
        data = buf.getvalue()
        gh = self.gh
        with gh.lock:
            if any(a.run_id == run.id and a.name == name for a in self.artifacts.values()):
                raise StepFailed(
                    f"Failed to CreateArtifact: an artifact with this name already exists on "
                    f"the workflow run: {name}"
                )
            tamper = gh.actions_runner.tamper
            if tamper is not None:
                replaced = tamper(run, name, data)
                if replaced is None:  # the hook drops it: the run has no artifact
                    return (f"##[sim] the artifact {name} was dropped by the test's hook", {})
                data = bytes(replaced)
            now = gh.clock.now()
            aid = gh.ids.next("artifact")
            art = Artifact(aid, run.id, repo.full_name, name, data, now, now + timedelta(days=days))
            self.artifacts[aid] = art
        url = f"{gh.urls.web}/{repo.full_name}/actions/runs/{run.id}/artifacts/{aid}"
        return (
            f"Artifact {name} uploaded: {len(files)} file(s), id {aid}",
            {"artifact-id": str(aid), "artifact-url": url, "artifact-digest": art.digest[7:]},
        )

    # --- test hooks -----------------------------------------------------------------------

    def wait(self, run_id: int, timeout: float = 120) -> WorkflowRun:
        """Block until the run's job finished (or `timeout`); returns the run."""
        self.runs[run_id].done.wait(timeout)
        return self.gh.workflow_runs[run_id]

    def release(self, run_id: int) -> None:
        self.runs[run_id].release.set()

    def cancel(self, run_id: int) -> None:
        self.runs[run_id].cancel.set()

    def replace_artifact(self, artifact_id: int, data: bytes | None) -> None:
        """A hostile artifact (new bytes) or none at all (None: the API lists it no more)."""
        with self.gh.lock:
            if data is None:
                del self.artifacts[artifact_id]
            else:
                self.artifacts[artifact_id].data = data

    def add_artifact(self, run_id: int, name: str, data: bytes) -> int:
        return self.gh.add_artifact(run_id, name, data)

    def artifacts_of(self, run_id: int) -> list[Artifact]:
        return [a for a in self.artifacts.values() if a.run_id == run_id]


_ENGINES: weakref.WeakKeyDictionary[FakeGitHub, Engine] = weakref.WeakKeyDictionary()
_ENGINES_LOCK = threading.Lock()


def engine(gh: FakeGitHub) -> Engine:
    with _ENGINES_LOCK:
        found = _ENGINES.get(gh)
        if found is None:
            found = _ENGINES[gh] = Engine(gh)
        return found


def _no(name: str) -> bool:
    return name == "always"


def _wait(extra: RunExtra, until: threading.Event | None) -> None:
    while not extra.cancel.is_set() and not (until is not None and until.is_set()):
        extra.cancel.wait(0.05)


def _on(doc: Mapping[Any, Any]) -> Any:
    # YAML 1.1 (PyYAML) reads a bare `on:` key as the boolean True.
    return doc.get("on", doc.get(True))


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]


def _load(raw: bytes | None) -> dict[str, Any] | None:
    if raw is None:
        return None
    # Imported here: the server imports this module, and `landbot demo` (the `sim` extra)
    # runs without PyYAML; only a dispatch reads a workflow file.
    import yaml

    try:
        doc = yaml.safe_load(raw.decode("utf-8", "replace"))
    except yaml.YAMLError:
        return None
    return doc if isinstance(doc, dict) else None


def _typed(raw: Any, kind: str, name: str) -> Any:
    if kind == "boolean":
        if isinstance(raw, bool):
            return raw
        text = str(raw).lower()
        if text not in ("true", "false"):
            raise Unprocessable(f"Provided value '{raw}' for input '{name}' is not a boolean")
        return text == "true"
    if kind == "number":
        try:
            number = float(raw)
        except (TypeError, ValueError):
            raise Unprocessable(
                f"Provided value '{raw}' for input '{name}' is not a number"
            ) from None
        return int(number) if number.is_integer() else number
    return raw if isinstance(raw, str) else to_text(raw)


# --- payloads ---------------------------------------------------------------------------


def workflow_run_event(
    gh: FakeGitHub, repo: Repository, run: WorkflowRun, action: str, message: str
) -> Any:
    return payloads.workflow_run_event(gh, repo, run, action, message=message)


def workflow_job_event(gh: FakeGitHub, repo: Repository, job: Job, action: str) -> Any:
    body = payloads.job_json(gh, repo, job)
    run = gh.workflow_runs[job.run_id]
    if job.status == "queued":
        body["started_at"] = iso(job.started_at)
        body["steps"] = []
        body["runner_id"] = None
        body["runner_name"] = None
        body["runner_group_id"] = None
        body["runner_group_name"] = None
    body["run_attempt"] = run.run_attempt
    body["workflow_name"] = run.name
    payload: dict[str, Any] = {"action": action, "workflow_job": body}
    payload.update(payloads._envelope(gh, repo, run.actor or repo.owner))
    return payload


def artifact_json(gh: FakeGitHub, repo: Repository, art: Artifact) -> Any:
    api = gh.urls.api
    run = gh.workflow_runs[art.run_id]
    expired = art.expires_at <= gh.clock.now()
    return {
        "id": art.id,
        "node_id": node_id("artifact", art.id),
        "name": art.name,
        "size_in_bytes": len(art.data),
        "url": f"{api}/repos/{repo.full_name}/actions/artifacts/{art.id}",
        "archive_download_url": f"{api}/repos/{repo.full_name}/actions/artifacts/{art.id}/zip",
        "expired": expired,
        "created_at": iso(art.created_at),
        "expires_at": iso(art.expires_at),
        "updated_at": iso(art.created_at),
        "digest": art.digest,
        "workflow_run": {
            "id": run.id,
            "repository_id": repo.id,
            "head_repository_id": repo.id,
            "head_branch": run.head_branch,
            "head_sha": run.head_sha,
        },
    }


# --- routes -----------------------------------------------------------------------------


def _actions_may(call: Call, repo: Repository, level: str) -> None:
    app = _caller_app(call)
    if app is not None:
        if not _app_may(app, "actions", level):
            raise Forbidden("Resource not accessible by integration")
        return
    if (
        level == "write"
        and call.caller is not None
        and (call.gh.permission(repo, call.login) not in WRITE_ROLES)
    ):
        raise Forbidden("Must have admin rights to Repository.")


def create_dispatch(call: Call) -> Response:
    from githubkit_schemas.latest.models import (
        ReposOwnerRepoActionsWorkflowsWorkflowIdDispatchesPostBody as Body,
    )
    from pydantic import ValidationError

    repo = call.repo()
    _actions_may(call, repo, "write")
    data = call.json()
    details = data.pop("return_run_details", False) if isinstance(data, dict) else False
    try:
        body = Body.model_validate(data)
    except ValidationError as exc:
        raise _validation_error(exc) from None
    if not isinstance(details, bool):
        raise BadRequest(
            "Invalid request.\n\nFor 'properties/return_run_details': not a boolean.", 422
        )
    inputs = data.get("inputs") or {}
    if len(inputs) > MAX_INPUTS:
        raise Unprocessable(
            f"you may only define up to {MAX_INPUTS} `inputs` for a workflow_dispatch event"
        )
    ref = body.ref
    git_dir = repo.require_git()
    sha = None
    for full in (ref, f"refs/heads/{ref}", f"refs/tags/{ref}"):
        if full.startswith("refs/"):
            sha = git.rev_parse(git_dir, f"{full}^{{commit}}")
            if sha:
                break
    if sha is None:
        raise Unprocessable(f"No ref found for: {ref}")
    eng = engine(call.gh)
    workflow_id = call.params["workflow_id"]
    default_sha = call.gh.branch_sha(repo, repo.default_branch) or sha
    # GitHub names the workflow as it is on the default branch, and runs it as it is at ref.
    path = eng.find_workflow(repo, workflow_id, default_sha) or eng.find_workflow(
        repo, workflow_id, sha
    )
    if path is None:
        raise NotFound("Not Found")
    if path not in eng.workflow_files(repo, sha):
        raise Unprocessable(f"Workflow does not exist at ref {ref}")
    actor = call.login if call.caller is not None else repo.owner
    run = eng.dispatch(repo, path, ref, sha, inputs, actor)
    if details:
        api, web = call.gh.urls.api, call.gh.urls.web
        return JSONResponse(
            {
                "workflow_run_id": run.id,
                "run_url": f"{api}/repos/{repo.full_name}/actions/runs/{run.id}",
                "html_url": f"{web}/{repo.full_name}/actions/runs/{run.id}",
            }
        )
    return Response(status_code=204)


def list_workflows(call: Call) -> Response:
    repo = call.repo()
    eng = engine(call.gh)
    sha = call.gh.branch_sha(repo, repo.default_branch)
    files = eng.workflow_files(repo, sha) if sha else {}
    items = [eng.workflow_json(repo, p, d) for p, d in sorted(files.items())]
    page, headers = paginate(call, items)
    return JSONResponse({"total_count": len(items), "workflows": list(page)}, headers=headers)


def get_workflow(call: Call) -> Response:
    repo = call.repo()
    eng = engine(call.gh)
    sha = call.gh.branch_sha(repo, repo.default_branch) or ""
    path = eng.find_workflow(repo, call.params["workflow_id"], sha)
    if path is None:
        raise NotFound("Not Found")
    return JSONResponse(eng.workflow_json(repo, path, eng.workflow_files(repo, sha)[path]))


def _created_filter(expr: str) -> Any:
    """GitHub's `created` search syntax: >=D, <=D, >D, <D, D..D, D (dates or date-times)."""

    def parse(text: str) -> datetime:
        try:
            return datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            raise BadRequest(f"Invalid request: created {expr!r} is not a date", 422) from None

    def aware(d: datetime) -> datetime:
        from datetime import UTC

        return d if d.tzinfo else d.replace(tzinfo=UTC)

    for op in (">=", "<=", ">", "<"):
        if expr.startswith(op):
            bound = aware(parse(expr[len(op) :]))
            compare = {
                ">=": datetime.__ge__,
                "<=": datetime.__le__,
                ">": datetime.__gt__,
                "<": datetime.__lt__,
            }[op]
            return lambda t, b=bound, c=compare: c(t, b)
    if ".." in expr:
        lo, hi = expr.split("..", 1)
        a = aware(parse(lo)) if lo != "*" else None
        b = aware(parse(hi)) if hi != "*" else None
        if b is not None and len(hi) == 10:
            b += timedelta(days=1)
        return lambda t: (a is None or t >= a) and (b is None or t < b)
    day = aware(parse(expr))
    end = day + timedelta(days=1) if len(expr) == 10 else day
    return lambda t: day <= t <= end if len(expr) != 10 else day <= t < end


def list_workflow_runs(call: Call) -> Response:
    repo = call.repo()
    eng = engine(call.gh)
    wid = call.params["workflow_id"]
    sha = call.gh.branch_sha(repo, repo.default_branch) or ""
    path = eng.find_workflow(repo, wid, sha)
    runs = [r for r in call.gh.workflow_runs.values() if r.repo == repo.full_name]
    if path is not None:
        runs = [r for r in runs if r.path == path]
    elif wid.isdigit():
        runs = [r for r in runs if r.workflow_id == int(wid)]
        if not runs:
            raise NotFound("Not Found")
    else:
        raise NotFound("Not Found")
    q = call.query
    if "event" in q:
        runs = [r for r in runs if r.event == q["event"]]
    if "head_sha" in q:
        runs = [r for r in runs if r.head_sha == q["head_sha"]]
    if "branch" in q:
        runs = [r for r in runs if r.head_branch == q["branch"]]
    if "actor" in q:
        runs = [r for r in runs if (r.actor or repo.owner).lower() == q["actor"].lower()]
    if "status" in q:
        wanted = q["status"]
        runs = [r for r in runs if wanted in (r.status, r.conclusion)]
    if "created" in q:
        keep = _created_filter(q["created"])
        runs = [r for r in runs if keep(r.created_at)]
    runs.sort(key=lambda r: r.id, reverse=True)
    page, headers = paginate(call, runs)
    body = {
        "total_count": len(runs),
        "workflow_runs": [
            payloads.workflow_run_json(
                call.gh, repo, r, message=git.commit_message(repo.require_git(), r.head_sha)
            )
            for r in page
        ],
    }
    return JSONResponse(body, headers=headers)


def cancel_run(call: Call) -> Response:
    repo = call.repo()
    _actions_may(call, repo, "write")
    run = call.gh.workflow_runs.get(call.int_param("run_id"))
    if run is None or run.repo != repo.full_name:
        raise NotFound("Not Found")
    extra = engine(call.gh).runs.get(run.id)
    if run.status == "completed" or extra is None:
        return JSONResponse(
            {"message": "Cannot cancel a workflow run that is completed.", "status": "409"},
            status_code=409,
        )
    extra.cancel.set()
    return JSONResponse({}, status_code=202)


def list_run_artifacts(call: Call) -> Response:
    repo = call.repo()
    _actions_may(call, repo, "read")
    run = call.gh.workflow_runs.get(call.int_param("run_id"))
    if run is None or run.repo != repo.full_name:
        raise NotFound("Not Found")
    arts = engine(call.gh).artifacts_of(run.id)
    if "name" in call.query:
        arts = [a for a in arts if a.name == call.query["name"]]
    arts.sort(key=lambda a: a.id, reverse=True)
    page, headers = paginate(call, arts)
    items = [artifact_json(call.gh, repo, a) for a in page]
    return JSONResponse({"total_count": len(arts), "artifacts": items}, headers=headers)


def list_repo_artifacts(call: Call) -> Response:
    repo = call.repo()
    _actions_may(call, repo, "read")
    arts = [a for a in engine(call.gh).artifacts.values() if a.repo == repo.full_name]
    if "name" in call.query:
        arts = [a for a in arts if a.name == call.query["name"]]
    arts.sort(key=lambda a: a.id, reverse=True)
    page, headers = paginate(call, arts)
    items = [artifact_json(call.gh, repo, a) for a in page]
    return JSONResponse({"total_count": len(arts), "artifacts": items}, headers=headers)


def _artifact(call: Call, repo: Repository) -> Artifact:
    art = engine(call.gh).artifacts.get(call.int_param("artifact_id"))
    if art is None or art.repo != repo.full_name:
        raise NotFound("Not Found")
    return art


def get_artifact(call: Call) -> Response:
    repo = call.repo()
    _actions_may(call, repo, "read")
    return JSONResponse(artifact_json(call.gh, repo, _artifact(call, repo)))


def _sign(secret: bytes, artifact_id: int, expires: int) -> str:
    return hmac.new(
        secret, f"artifact:{artifact_id}:{expires}".encode(), hashlib.sha256
    ).hexdigest()


def download_artifact(call: Call) -> Response:
    repo = call.repo()
    _actions_may(call, repo, "read")
    art = _artifact(call, repo)
    if call.params["archive_format"] != "zip":
        raise NotFound("Not Found")
    if art.expires_at <= call.gh.clock.now():
        return JSONResponse(
            {
                "message": "Artifact has expired",
                "documentation_url": "https://docs.github.com/rest/actions/artifacts#download-an-artifact",
                "status": "410",
            },
            status_code=410,
        )
    expires = int(time.time()) + ARTIFACT_URL_LIFETIME
    base = call.blob_url or str(call.url.replace(path="", query="", fragment="")).rstrip("/")
    sig = _sign(call.blob_secret, art.id, expires)
    return RedirectResponse(f"{base}/_blobs/artifacts/{art.id}?se={expires}&sig={sig}", 302)


def blob_artifact(call: Call) -> Response:
    if "authorization" in call.headers:
        return _storage_error(
            403, "AuthenticationFailed",
            "Server failed to authenticate the request: an Authorization header is not "
            "allowed with a signed URL.",
        )  # fmt: skip
    try:
        aid = int(call.params["artifact_id"])
        expires = int(call.query.get("se", "0"))
    except ValueError:
        return _storage_error(403, "AuthenticationFailed", "Signature fields not well formed.")
    if not hmac.compare_digest(call.query.get("sig", ""), _sign(call.blob_secret, aid, expires)):
        return _storage_error(403, "AuthenticationFailed", "Signature did not match.")
    if expires < time.time():
        return _storage_error(403, "AuthenticationFailed", "Signed expiry time has passed.")
    art = engine(call.gh).artifacts.get(aid)
    if art is None:
        return _storage_error(404, "BlobNotFound", "The specified blob does not exist.")
    return Response(art.data, media_type="application/zip")


ACTION_ROUTES: tuple[RouteSpec, ...] = (
    RouteSpec("GET", "/repos/{owner}/{repo}/actions/workflows", list_workflows),
    RouteSpec("GET", "/repos/{owner}/{repo}/actions/workflows/{workflow_id}", get_workflow),
    RouteSpec(
        "POST", "/repos/{owner}/{repo}/actions/workflows/{workflow_id}/dispatches", create_dispatch
    ),
    RouteSpec(
        "GET", "/repos/{owner}/{repo}/actions/workflows/{workflow_id}/runs", list_workflow_runs
    ),
    RouteSpec("POST", "/repos/{owner}/{repo}/actions/runs/{run_id}/cancel", cancel_run),
    RouteSpec("GET", "/repos/{owner}/{repo}/actions/runs/{run_id}/artifacts", list_run_artifacts),
    RouteSpec("GET", "/repos/{owner}/{repo}/actions/artifacts", list_repo_artifacts),
    RouteSpec("GET", "/repos/{owner}/{repo}/actions/artifacts/{artifact_id}", get_artifact),
    RouteSpec(
        "GET",
        "/repos/{owner}/{repo}/actions/artifacts/{artifact_id}/{archive_format}",
        download_artifact,
    ),
    RouteSpec("GET", "/_blobs/artifacts/{artifact_id}", blob_artifact, auth="none"),
)

__all__ = ["ACTION_ROUTES", "Artifact", "Engine", "engine", "os"]
