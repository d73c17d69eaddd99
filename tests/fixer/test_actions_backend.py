"""The `actions` fixer backend (landbot/fixer/actions.py) against a fake GitHub that keeps
runs and artifacts as the REST API describes them, with a real store: the caps per
repository and per installation, finding the run by its one-time id, each way a run ends
without a result, and a dispatch whose answer was lost not sent twice."""

from __future__ import annotations

import datetime as dt
import io
import json
import stat
import zipfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest
from pydantic import ValidationError

from landbot.config import FixerSettings, GitHubSettings, Settings
from landbot.core.model import Drop, Evidence
from landbot.errors import LandbotError
from landbot.fixer.actions import (
    MAX_INPUT_CHARS,
    MAX_INPUTS,
    ActionsBackend,
    ActionsOptions,
    FixWaiting,
    artifact_name,
    carries_key,
    dispatch_inputs,
)
from landbot.fixer.artifact import MANIFEST_NAME, VERDICT_NAME, manifest
from landbot.github.errors import GitHubError, MutationOutcomeUnknown, NotFound
from landbot.github.models import Artifact, Dispatched, WorkflowRun
from landbot.intake import events
from landbot.pipeline import deliveries
from landbot.ready import check_ready
from landbot.repo_config import effective, parse_repo_file, problems
from landbot.store import Store

HEAD = "a" * 40
BASE = "b" * 40
T0 = dt.datetime(2026, 12, 1, 12, 0, tzinfo=dt.UTC)
VERDICT = {"verdict": "needs_human", "summary": "the test needs a person", "reproduced": True}


def artifact_zip(files: Mapping[str, bytes], *, link: str | None = None) -> bytes:
    """An artifact as GitHub serves it: one zip, the folder's files at its root."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in {**files, MANIFEST_NAME: manifest(dict(files))}.items():
            z.writestr(name, data)
        if link is not None:
            info = zipfile.ZipInfo(link)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            z.writestr(info, "/etc/shadow")
    return out.getvalue()


GOOD_ZIP = artifact_zip({VERDICT_NAME: json.dumps(VERDICT).encode()})


@dataclass
class FakeActions:
    """Runs and artifacts as GET .../actions/... returns them; `dispatch_workflow` makes a
    run titled as landbot's caller names it (`run-name: landbot fix <job-id>`)."""

    installation: str = "1"
    runs: dict[int, WorkflowRun] = field(default_factory=dict)
    artifacts: dict[int, list[tuple[Artifact, bytes]]] = field(default_factory=dict)
    dispatched: list[dict[str, str]] = field(default_factory=list)
    # What the next dispatch does: "ok" (204), "lost" (made the run, the answer lost),
    # "dropped" (lost before GitHub), "missing" (404: no such workflow).
    next_dispatch: str = "ok"
    make_run: bool = True
    cancelled: list[int] = field(default_factory=list)
    refuse_cancel: bool = False  # answer 409, as for a run that has completed

    def installation_of(self, repo: str) -> str:
        return self.installation

    def dispatch_workflow(
        self, repo: str, workflow: str, ref: str, inputs: Mapping[str, str]
    ) -> Dispatched:
        mode, self.next_dispatch = self.next_dispatch, "ok"
        if mode == "missing":
            raise NotFound(404, "Not Found", method="POST", url="/dispatches")
        if mode == "dropped":
            raise MutationOutcomeUnknown(0, "timed out")
        self.dispatched.append(dict(inputs))
        if self.make_run:
            run_id = 1000 + len(self.runs)
            self.runs[run_id] = WorkflowRun(
                id=run_id,
                name="landbot fix",
                head_branch=ref,
                head_sha="c" * 40,
                status="queued",
                conclusion=None,
                html_url=f"https://github.test/{repo}/actions/runs/{run_id}",
                display_title=f"landbot fix {inputs['job-id']}",
                event="workflow_dispatch",
                created_at=T0,
            )
        if mode == "lost":
            raise MutationOutcomeUnknown(502, "Bad Gateway")
        return Dispatched(run_id=None)

    def workflow_runs(
        self,
        repo: str,
        workflow: str,
        *,
        event: str | None = None,
        created_after: dt.datetime | None = None,
    ) -> list[WorkflowRun]:
        return [
            r
            for r in self.runs.values()
            if (event is None or r.event == event)
            and (created_after is None or r.created_at is None or r.created_at >= created_after)
        ]

    def workflow_run(self, repo: str, run_id: int) -> WorkflowRun:
        return self.runs[run_id]

    def cancel_workflow_run(self, repo: str, run_id: int) -> None:
        if self.refuse_cancel:
            raise GitHubError(409, "Cannot cancel a workflow run that is completed.")
        self.cancelled.append(run_id)

    def run_artifacts(self, repo: str, run_id: int) -> list[Artifact]:
        return [a for a, _ in self.artifacts.get(run_id, [])]

    def download_artifact(self, repo: str, artifact_id: int, *, max_bytes: int) -> bytes:
        for pairs in self.artifacts.values():
            for a, data in pairs:
                if a.id == artifact_id:
                    return data
        raise NotFound(404, "Not Found")

    # --- the test's hands ---

    def finish(self, run_id: int, conclusion: str, zip_bytes: bytes | None = None) -> None:
        self.runs[run_id] = replace(self.runs[run_id], status="completed", conclusion=conclusion)
        if zip_bytes is not None:
            key = self.runs[run_id].display_title.split()[-1]
            pairs = self.artifacts.setdefault(run_id, [])
            art = Artifact(id=run_id * 10 + len(pairs), name=artifact_name(key),
                           size_in_bytes=len(zip_bytes), expired=False, run_id=run_id)  # fmt: skip
            pairs.append((art, zip_bytes))


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> dt.datetime:
        return self.now


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store.open(f"sqlite:///{tmp_path / 'landbot.db'}")
    yield s
    s.close()


def fix_job(store: Store, repo: str = "o/r", pr: int = 7) -> tuple[int, Drop]:
    drop_id, _ = store.add_drop(
        repo=repo, pr=pr, head_sha=HEAD, reason="failed_checks", source="webhook",
        dedupe_key=f"{repo}#{pr}",
    )  # fmt: skip
    job = store.add_job("fix", {"drop_id": drop_id}, drop_id=drop_id, dedupe_key=f"fix:{repo}#{pr}")
    assert job is not None
    drop = Drop(repo=repo, pr=pr, head_sha=HEAD, reason="failed_checks", source="webhook",
                base_ref="main", id=drop_id)  # fmt: skip
    return job, drop


def backend(store: Store, gh: FakeActions, clock: Clock, **options: object) -> ActionsBackend:
    opts = replace(ActionsOptions(), **options)  # type: ignore[arg-type]
    return ActionsBackend(store, gh, opts, clock=clock)


def waits(b: ActionsBackend, job: int, drop: Drop) -> FixWaiting:
    with pytest.raises(FixWaiting) as caught:
        b.step(job, drop, Evidence(base_sha=BASE))
    return caught.value


def run_of(store: Store, job: int) -> int:
    d = store.dispatch_for(job)
    assert d is not None and d.run_id is not None
    return d.run_id


def started(store: Store, gh: FakeActions, clock: Clock, **options: object) -> tuple[
    ActionsBackend, int, Drop, int
]:  # fmt: skip
    """A dispatched job whose run was found: (backend, job, drop, run id)."""
    b = backend(store, gh, clock, **options)
    job, drop = fix_job(store)
    waits(b, job, drop)  # dispatched
    waits(b, job, drop)  # found its run; it is queued on a runner
    return b, job, drop, run_of(store, job)


# --- the caps ---------------------------------------------------------------------------


def test_a_second_job_of_the_repository_waits_in_the_store_for_the_slot(store: Store) -> None:
    gh, clock = FakeActions(), Clock()
    b = backend(store, gh, clock, cap=1)
    first, d1 = fix_job(store, pr=1)
    second, d2 = fix_job(store, pr=2)
    assert "dispatched" in waits(b, first, d1).note
    assert "waiting for a fix slot" in waits(b, second, d2).note
    assert len(gh.dispatched) == 1  # the second is not on a runner
    d = store.dispatch_for(second)
    assert d is not None and d.state == "queued"
    # The first run ends: its slot goes to the second.
    gh.finish(run_of_found(store, b, first, d1), "success", GOOD_ZIP)
    assert b.step(first, d1, Evidence()).verdict is not None
    assert "dispatched" in waits(b, second, d2).note
    assert len(gh.dispatched) == 2


def run_of_found(store: Store, b: ActionsBackend, job: int, drop: Drop) -> int:
    waits(b, job, drop)  # finds the run
    return run_of(store, job)


def test_the_cap_counts_per_installation_too(store: Store) -> None:
    gh, clock = FakeActions(installation="42"), Clock()
    b = backend(store, gh, clock, cap=1)
    first, d1 = fix_job(store, repo="o/one")
    second, d2 = fix_job(store, repo="o/two")
    waits(b, first, d1)
    assert "waiting for a fix slot" in waits(b, second, d2).note  # same installation
    # The control: another installation's repository is not held up.
    other = backend(store, FakeActions(installation="43"), clock, cap=1)
    third, d3 = fix_job(store, repo="p/three")
    assert "dispatched" in waits(other, third, d3).note


def test_a_cap_of_two_dispatches_two(store: Store) -> None:
    gh, clock = FakeActions(), Clock()
    b = backend(store, gh, clock, cap=2)
    jobs = [fix_job(store, pr=n) for n in (1, 2, 3)]
    notes = [waits(b, job, drop).note for job, drop in jobs]
    assert ["dispatched" in n for n in notes] == [True, True, False]
    assert len(gh.dispatched) == 2


def test_a_cancelled_fix_job_gives_its_slot_back(store: Store) -> None:
    gh, clock = FakeActions(), Clock()
    b = backend(store, gh, clock, cap=1)
    first, d1 = fix_job(store, pr=1)
    second, d2 = fix_job(store, pr=2)
    waits(b, first, d1)
    assert "waiting for a fix slot" in waits(b, second, d2).note
    # A push to PR 1 cancels its queued fix job (intake): its run no longer holds a slot.
    assert store.cancel_jobs("fix:o/r#1", outcome="ignored", why="pushed") == 1
    assert "dispatched" in waits(b, second, d2).note


# --- finding the run ----------------------------------------------------------------------


def test_the_run_is_found_by_its_one_time_id_in_the_title(store: Store) -> None:
    gh, clock = FakeActions(), Clock()
    b = backend(store, gh, clock)
    job, drop = fix_job(store)
    waits(b, job, drop)
    d = store.dispatch_for(job)
    assert d is not None and d.state == "sent" and d.run_id is None
    # Another dispatch's run whose id starts with this one's is not it.
    decoy = replace(next(iter(gh.runs.values())), id=1, display_title=f"landbot fix {d.key}0")
    gh.runs[1] = decoy
    assert not carries_key(decoy, d.key)
    waits(b, job, drop)
    assert run_of(store, job) == 1000
    assert gh.dispatched[0]["job-id"] == d.key


def test_no_run_by_the_deadline_is_a_failure(store: Store) -> None:
    gh, clock = FakeActions(make_run=False), Clock()
    b = backend(store, gh, clock, deadline=dt.timedelta(minutes=10))
    job, drop = fix_job(store)
    waits(b, job, drop)
    clock.now += dt.timedelta(minutes=9)
    waits(b, job, drop)  # the control: before the deadline it waits
    clock.now += dt.timedelta(minutes=2)
    result = b.step(job, drop, Evidence())
    assert result.failed == "no run of landbot-fix.yml started in 10 minutes"


# --- how a run ends -----------------------------------------------------------------------


def test_a_successful_run_hands_back_its_verdict(store: Store) -> None:
    gh, clock = FakeActions(), Clock()
    b, job, drop, run = started(store, gh, clock)
    gh.runs[run] = replace(gh.runs[run], status="in_progress")
    assert "in_progress" in waits(b, job, drop).note
    gh.finish(run, "success", GOOD_ZIP)
    result = b.step(job, drop, Evidence())
    assert result.failed == ""
    assert result.verdict is not None and result.verdict.verdict == "needs_human"
    assert result.verdict.summary == "the test needs a person"
    assert result.bundle is None


@pytest.mark.parametrize("conclusion", ["failure", "cancelled", "timed_out"])
def test_a_run_that_did_not_succeed_is_a_failure_saying_how(store: Store, conclusion: str) -> None:
    gh, clock = FakeActions(), Clock()
    b, job, drop, run = started(store, gh, clock)
    gh.finish(run, conclusion, GOOD_ZIP)
    result = b.step(job, drop, Evidence())
    assert result.verdict is None
    assert result.failed.startswith(f"the fix run ended {conclusion} (https://github.test/")


def test_a_run_without_its_artifact_is_a_failure(store: Store) -> None:
    gh, clock = FakeActions(), Clock()
    b, job, drop, run = started(store, gh, clock)
    gh.finish(run, "success")
    key = gh.runs[run].display_title.split()[-1]
    # Another job's artifact in the run is not this one's.
    other = Artifact(id=5, name=artifact_name("d9-0000000000000000"), size_in_bytes=1,
                     expired=False)  # fmt: skip
    gh.artifacts[run] = [(other, GOOD_ZIP)]
    result = b.step(job, drop, Evidence())
    assert result.failed.startswith(f"the fix run uploaded no artifact landbot-fix-{key}")


def test_two_artifacts_with_its_name_are_refused_and_neither_is_taken(store: Store) -> None:
    gh, clock = FakeActions(), Clock()
    b, job, drop, run = started(store, gh, clock)
    # A step of the PR's own setup uploaded a crafted result under the expected name
    # first; landbot's step uploaded the real one after it.
    planted = {"verdict": "fixed", "summary": "planted", "reproduced": True}
    gh.finish(run, "success", artifact_zip({VERDICT_NAME: json.dumps(planted).encode()}))
    gh.finish(run, "success", GOOD_ZIP)
    key = gh.runs[run].display_title.split()[-1]
    result = b.step(job, drop, Evidence())
    assert result.verdict is None and result.bundle is None
    assert result.failed.startswith(
        f"the fix run uploaded 2 artifacts named landbot-fix-{key}, not one: neither was taken"
    ), result.failed
    assert "\n" not in result.failed
    d = store.dispatch_for(job)
    assert d is not None and d.state == "done" and d.outcome == result.failed


def test_control_one_artifact_with_its_name_beside_others_is_taken(store: Store) -> None:
    gh, clock = FakeActions(), Clock()
    b, job, drop, run = started(store, gh, clock)
    other = Artifact(id=5, name=artifact_name("d9-0000000000000000"), size_in_bytes=1,
                     expired=False)  # fmt: skip
    gh.artifacts[run] = [(other, GOOD_ZIP)]
    gh.finish(run, "success", GOOD_ZIP)
    result = b.step(job, drop, Evidence())
    assert result.failed == ""
    assert result.verdict is not None and result.verdict.summary == "the test needs a person"


def test_a_verdict_with_a_lone_surrogate_comes_back_encodable(store: Store) -> None:
    gh, clock = FakeActions(), Clock()
    b, job, drop, run = started(store, gh, clock)
    verdict = b'{"verdict": "needs_human", "summary": "caf\\ud800 \xc3\xa9", "reproduced": true}'
    assert "\ud800" in json.loads(verdict)["summary"]  # the control: valid JSON spells one
    gh.finish(run, "success", artifact_zip({VERDICT_NAME: verdict}))
    result = b.step(job, drop, Evidence())
    assert result.verdict is not None and result.verdict.summary == "caf\ufffd \u00e9"
    result.verdict.summary.encode()


def test_a_refusal_quoting_a_lone_surrogate_is_stored_and_handed_back_encodable(
    store: Store,
) -> None:
    gh, clock = FakeActions(), Clock()
    b, job, drop, run = started(store, gh, clock)
    gh.finish(run, "success", GOOD_ZIP)

    def refuse(repo: str, artifact_id: int, *, max_bytes: int) -> bytes:
        raise GitHubError(403, "Resource not accessible: caf\ud800")  # GitHub's JSON, decoded

    gh.download_artifact = refuse  # type: ignore[method-assign]
    result = b.step(job, drop, Evidence())
    assert "could not be downloaded" in result.failed and "caf\ufffd" in result.failed
    d = store.dispatch_for(job)
    assert d is not None and d.outcome == result.failed


def test_a_hostile_artifact_is_refused(store: Store) -> None:
    gh, clock = FakeActions(), Clock()
    b, job, drop, run = started(store, gh, clock)
    hostile = artifact_zip({VERDICT_NAME: json.dumps(VERDICT).encode()}, link="result.bundle")
    gh.finish(run, "success", hostile)
    result = b.step(job, drop, Evidence())
    assert result.verdict is None
    assert "the fix run's artifact was refused" in result.failed
    assert "symbolic link" in result.failed


def test_a_run_that_never_finishes_fails_at_the_deadline(store: Store) -> None:
    gh, clock = FakeActions(), Clock()
    b, job, drop, run = started(store, gh, clock, deadline=dt.timedelta(minutes=30))
    gh.runs[run] = replace(gh.runs[run], status="in_progress")
    clock.now += dt.timedelta(minutes=29, seconds=50)
    wait = waits(b, job, drop)
    assert wait.not_before <= T0 + dt.timedelta(minutes=30)  # wakes no later than the deadline
    clock.now = T0 + dt.timedelta(minutes=30)
    result = b.step(job, drop, Evidence())
    assert result.failed.startswith("the fix run did not finish in 30 minutes")
    d = store.dispatch_for(job)
    assert d is not None and d.state == "done" and not d.active


def test_a_missing_workflow_is_a_failure_naming_the_file_to_commit(store: Store) -> None:
    gh, clock = FakeActions(next_dispatch="missing"), Clock()
    b = backend(store, gh, clock)
    job, drop = fix_job(store)
    result = b.step(job, drop, Evidence())
    assert "could not be dispatched" in result.failed
    assert ".github/workflows/landbot-fix.yml" in result.failed


# --- a dispatch is not idempotent -----------------------------------------------------------


def test_a_lost_answer_is_looked_up_before_dispatching_again(store: Store) -> None:
    gh, clock = FakeActions(next_dispatch="lost"), Clock()
    b = backend(store, gh, clock)
    job, drop = fix_job(store)
    assert "no answer" in waits(b, job, drop).note
    d = store.dispatch_for(job)
    assert d is not None and d.state == "sending"
    clock.now += dt.timedelta(minutes=5)  # long past resend_after
    waits(b, job, drop)
    assert len(gh.dispatched) == 1  # GitHub had made the run: found, not sent again
    assert run_of(store, job) == 1000


def test_a_dispatch_that_never_reached_github_is_sent_again(store: Store) -> None:
    gh, clock = FakeActions(next_dispatch="dropped"), Clock()
    b = backend(store, gh, clock, resend_after=dt.timedelta(minutes=2))
    job, drop = fix_job(store)
    waits(b, job, drop)
    clock.now += dt.timedelta(minutes=1)
    waits(b, job, drop)
    assert gh.dispatched == []  # the control: within resend_after it only looks
    clock.now += dt.timedelta(minutes=1)
    waits(b, job, drop)
    assert len(gh.dispatched) == 1
    waits(b, job, drop)
    assert run_of(store, job) == 1000


# --- inputs -----------------------------------------------------------------------------


def test_the_inputs_carry_the_evidence_only_within_githubs_limit() -> None:
    drop = Drop(repo="o/r", pr=7, head_sha=HEAD, reason="failed_checks", source="webhook", id=3)
    small = dispatch_inputs(drop, Evidence(base_sha=BASE, triage_reason="x"), "d3-0123456789abcdef")
    assert small["mode"] == "failed_checks" and small["base-sha"] == BASE
    assert small["drop-id"] == "3" and small["pr"] == "7" and small["head-sha"] == HEAD
    assert json.loads(small["evidence"])  # the agent's evidence, as JSON
    assert len(small) <= MAX_INPUTS
    big = dispatch_inputs(
        drop, Evidence(triage_reason="x" * MAX_INPUT_CHARS), "d3-0123456789abcdef"
    )
    assert "evidence" not in big
    assert len(json.dumps(big)) <= MAX_INPUT_CHARS


# --- the webhook wakes the waiting job -----------------------------------------------------


def completed(run_id: int, title: str, repo: str = "o/r") -> events.WebhookEvent:  # type: ignore[type-arg]
    body = {
        "action": "completed",
        "repository": {"full_name": repo},
        "workflow_run": {"id": run_id, "name": "landbot fix", "conclusion": "success",
                         "head_sha": "c" * 40, "head_branch": "main", "display_title": title},
    }  # fmt: skip
    return events.parse(f"g{run_id}", "workflow_run", T0, json.dumps(body).encode())


def test_a_completed_fix_run_wakes_its_waiting_job(store: Store) -> None:
    gh, clock = FakeActions(), Clock()
    _b, job, _drop, run = started(store, gh, clock)
    store.lease_job("w", dt.timedelta(minutes=1))
    assert store.defer_job(job, "w", T0 + dt.timedelta(hours=1), "waiting")
    row = store.job(job)
    assert row is not None and row.not_before is not None
    # The control: a run landbot did not start wakes nothing.
    note = deliveries.apply(completed(55, "CI"), store)
    assert "fix run" not in note
    row = store.job(job)
    assert row is not None and row.not_before is not None
    note = deliveries.apply(completed(run, gh.runs[run].display_title), store)
    assert "woken" in note
    row = store.job(job)
    assert row is not None and row.not_before is None and row.status == "queued"


def test_waiting_counts_no_attempt(store: Store) -> None:
    job, _ = fix_job(store)
    for _ in range(8):  # more than the worker's MAX_ATTEMPTS
        lease = store.lease_job("w", dt.timedelta(minutes=1))
        assert lease is not None and lease.id == job and lease.attempts == 1
        assert store.defer_job(job, "w", T0, "waiting")


# --- the settings -------------------------------------------------------------------------


def host(**fixer: object) -> Settings:
    return Settings(
        github=GitHubSettings(token="ghs_test", webhook_secret="s"),
        database_url="sqlite:///:memory:",
        fixer=FixerSettings(**fixer),
    )


def test_the_backend_defaults_to_local_and_a_workflow_must_be_a_file_name() -> None:
    f = FixerSettings()
    assert (f.backend, f.workflow, f.actions_deadline_minutes) == ("local", "landbot-fix.yml", 60)
    assert not f.enabled  # the control: the default host runs no fixer
    assert FixerSettings(backend="actions").enabled  # the runner's workflow picks the agent
    assert FixerSettings(workflow="fix.yaml").workflow == "fix.yaml"
    for bad in ("../ci.yml", ".github/workflows/fix.yml", "fix.sh", ""):
        with pytest.raises(ValidationError, match="is not a workflow file name"):
            FixerSettings(workflow=bad)
    with pytest.raises(ValidationError):
        FixerSettings(backend="lambda")


def test_a_repository_may_choose_actions_never_local_over_a_hosts_actions() -> None:
    local_host = host(agent="command", command=["true"])
    mine = parse_repo_file('[fixer]\nbackend = "actions"\nworkflow = "fix.yml"\n')
    assert problems('[fixer]\nbackend = "actions"\n', host=local_host) == []
    chosen = effective(local_host, mine).fixer
    assert (chosen.backend, chosen.workflow) == ("actions", "fix.yml")
    assert local_host.fixer.backend == "local"  # the host's own settings are untouched
    actions_host = host(backend="actions")
    [problem] = problems('[fixer]\nbackend = "local"\n', host=actions_host)
    assert "cannot move them onto the host" in str(problem) and problem.line == 2
    assert problems('[fixer]\nbackend = "local"\n', host=local_host) == []  # the control
    assert effective(
        actions_host, parse_repo_file('[fixer]\nbackend = "local"\n')
    ).fixer.backend == ("actions")


def test_an_actions_host_needs_no_agent_of_its_own_to_start() -> None:
    with pytest.raises(LandbotError, match="needs \\[fixer\\] model_url"):
        check_ready(host(agent="codex"))  # the control: a local model agent needs a model
    check_ready(host(agent="codex", backend="actions"))
