"""The simulated GitHub plays Actions: dispatch, the run on the sim's runner, artifacts.

githubkit's client does every call, and every answer is parsed with githubkit's generated
response types (and every webhook with `githubkit.webhooks.parse_obj`). The end-to-end tests
run landbot's shipped caller and reusable workflow on the sim's runner, with a command agent
that commits a fix in landbot's real sandbox (bubblewrap).
"""

from __future__ import annotations

import io
import json
import subprocess
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from githubkit import GitHub, TokenAuthStrategy
from githubkit import webhooks as gk_webhooks
from githubkit.exception import RequestFailed
from githubkit_schemas.latest import models as m

from landbot.fixer.artifact import read_artifact, take_bundle
from landbot.git.quarantine import Quarantine
from landbot.sandbox.runner import SandboxUnavailable, check_host
from landbot.sim import FakeGitHub, FakeGitHubServer
from landbot.sim.actions import engine
from landbot.sim.state import Repository

# ./scripts/test --fast leaves this module out: its tests start processes (landbot, git,
# the sandbox, servers) and take seconds each.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
CALLER = ROOT / "config" / "landbot-fix.yml"
FIXED = {
    "verdict": "fixed",
    "summary": "set ANSWER to 42",
    "recommendation": "",
    "reproduced": True,
}

SIMPLE = """
name: simple
run-name: "simple ${{ inputs.job-id }}"
on:
  workflow_dispatch:
    inputs:
      job-id: {type: string, required: true}
      mode: {type: choice, options: [a, b], default: a}
      pr: {type: number, required: false}
jobs:
  work:
    runs-on: ubuntu-latest
    timeout-minutes: 5
    env:
      GREETING: hello
    steps:
      - name: Say
        id: say
        env:
          JOB_ID: ${{ inputs.job-id }}
        run: |
          echo "$GREETING $JOB_ID mode=${{ inputs.mode }}"
          echo "word=$JOB_ID-out" >> "$GITHUB_OUTPUT"
          echo "LATER=set-by-env" >> "$GITHUB_ENV"
          mkdir -p "$RUNNER_TEMP/art" && echo data > "$RUNNER_TEMP/art/a.txt"
          echo secret > "$RUNNER_TEMP/art/.hidden"
      - name: Use
        if: ${{ !cancelled() && steps.say.outputs.word != '' }}
        run: |
          test "${{ steps.say.outputs.word }}" = "${{ inputs.job-id }}-out"
          test "$LATER" = set-by-env
          if [ "${{ inputs.job-id }}" = fail ]; then exit 3; fi
          if [ "${{ inputs.job-id }}" = sleep ]; then sleep 600; fi
      - name: Skipped on success
        if: failure()
        run: echo never
      - uses: actions/upload-artifact@v6
        if: ${{ !cancelled() }}
        with:
          name: out-${{ inputs.job-id }}
          path: ${{ runner.temp }}/art
          retention-days: 1
"""
PUSHED_ONLY = "name: ci\non: [push]\njobs:\n  t:\n    runs-on: x\n    steps:\n      - run: 'true'\n"


@pytest.fixture
def repo(gh: FakeGitHub) -> Repository:
    repo = gh.create_repo(
        "acme/widgets",
        files={
            "app.py": "ANSWER = 41\n",
            ".github/workflows/simple.yml": SIMPLE,
            ".github/workflows/ci.yml": PUSHED_ONLY,
        },
    )
    gh.add_collaborator(repo, "maintainer", "write")
    return repo


@pytest.fixture
def kit(server: FakeGitHubServer, token: str) -> Iterator[GitHub[Any]]:
    with GitHub(TokenAuthStrategy(token), base_url=server.url) as client:
        yield client


def dispatch(kit: GitHub[Any], workflow: str, ref: str = "main", **inputs: Any) -> None:
    done = kit.rest.actions.create_workflow_dispatch(
        "acme", "widgets", workflow, data={"ref": ref, "inputs": inputs}
    )
    assert done.status_code == 204


def only_run(gh: FakeGitHub) -> int:
    (run_id,) = engine(gh).runs
    return run_id


def status(err: pytest.ExceptionInfo[RequestFailed]) -> tuple[int, str]:
    return err.value.response.status_code, err.value.response.json()["message"]


# --- dispatch and its refusals ------------------------------------------------------------


def test_dispatch_runs_the_job_lists_it_and_serves_its_artifact(
    gh: FakeGitHub, repo: Repository, kit: GitHub[Any], api: httpx.Client
) -> None:
    dispatch(kit, "simple.yml", **{"job-id": "j1", "pr": "7"})
    run = engine(gh).wait(only_run(gh))
    assert (run.status, run.conclusion) == ("completed", "success"), gh.jobs[run.job_ids[0]].log

    listed = kit.rest.actions.list_repo_workflows("acme", "widgets").parsed_data
    assert isinstance(listed, m.ReposOwnerRepoActionsWorkflowsGetResponse200)
    assert sorted(w.path for w in listed.workflows) == [
        ".github/workflows/ci.yml",
        ".github/workflows/simple.yml",
    ]
    runs = kit.rest.actions.list_workflow_runs(
        "acme", "widgets", "simple.yml", event="workflow_dispatch", status="success"
    ).parsed_data
    assert [r.display_title for r in runs.workflow_runs] == ["simple j1"]
    assert runs.workflow_runs[0].event == "workflow_dispatch"
    by_id = kit.rest.actions.list_workflow_runs("acme", "widgets", run.workflow_id).parsed_data
    assert [r.id for r in by_id.workflow_runs] == [run.id]
    none = kit.rest.actions.list_workflow_runs(
        "acme", "widgets", "simple.yml", head_sha="0" * 40
    ).parsed_data
    assert none.total_count == 0
    later = kit.rest.actions.list_workflow_runs(
        "acme", "widgets", "simple.yml", created=">=2999-01-01"
    ).parsed_data
    assert later.total_count == 0

    (job,) = kit.rest.actions.list_jobs_for_workflow_run("acme", "widgets", run.id).parsed_data.jobs
    assert job.name == "work" and job.conclusion == "success"
    assert [s.conclusion for s in job.steps or []] == ["success", "success", "skipped", "success"]
    log = api.get(f"/repos/acme/widgets/actions/jobs/{job.id}/logs", follow_redirects=True)
    assert "hello j1 mode=a" in log.text

    arts = kit.rest.actions.list_workflow_run_artifacts("acme", "widgets", run.id).parsed_data
    assert isinstance(arts, m.ReposOwnerRepoActionsRunsRunIdArtifactsGetResponse200)
    (art,) = arts.artifacts
    assert art.name == "out-j1" and not art.expired
    assert kit.rest.actions.get_artifact("acme", "widgets", art.id).parsed_data.id == art.id
    raw = kit.rest.actions.download_artifact("acme", "widgets", art.id, "zip")
    assert raw.status_code == 200 and raw.raw_response.history[0].status_code == 302
    assert zipfile.ZipFile(io.BytesIO(raw.content)).namelist() == ["a.txt"]  # no dot-file
    assert art.size_in_bytes == len(raw.content)


def test_dispatch_returns_the_run_when_asked(
    gh: FakeGitHub, repo: Repository, api: httpx.Client
) -> None:
    plain = api.post("/repos/acme/widgets/actions/workflows/simple.yml/dispatches",
                     json={"ref": "main", "inputs": {"job-id": "a"}})  # fmt: skip
    assert plain.status_code == 204 and plain.content == b""
    body = {"ref": "main", "inputs": {"job-id": "b"}, "return_run_details": True}
    numeric = engine(gh).workflow_id(repo, ".github/workflows/simple.yml")  # by its id, too
    asked = api.post(f"/repos/acme/widgets/actions/workflows/{numeric}/dispatches", json=body)
    assert asked.status_code == 200
    details = asked.json()
    run = gh.workflow_runs[details["workflow_run_id"]]
    assert run.display_title == "simple b"
    assert details["run_url"].endswith(f"/actions/runs/{run.id}")
    for run_id in engine(gh).runs:
        engine(gh).wait(run_id)


@pytest.mark.parametrize(
    ("workflow", "body", "want"),
    [
        ("nope.yml", {"ref": "main", "inputs": {"job-id": "x"}}, (404, "Not Found")),
        ("simple.yml", {"ref": "nowhere", "inputs": {"job-id": "x"}},
         (422, "No ref found for: nowhere")),
        ("ci.yml", {"ref": "main"}, (422, "Workflow does not have 'workflow_dispatch' trigger")),
        ("simple.yml", {"ref": "main", "inputs": {"job-id": "x", "extra": "1"}},
         (422, 'Unexpected inputs provided: ["extra"]')),
        ("simple.yml", {"ref": "main", "inputs": {}},
         (422, "Required input 'job-id' not provided")),
        ("simple.yml", {"ref": "main", "inputs": {"job-id": "x", "mode": "c"}},
         (422, "Provided value 'c' for input 'mode' not in the list of allowed values")),
        ("simple.yml", {"inputs": {"job-id": "x"}}, (422, "Invalid request.")),
    ],
)  # fmt: skip
def test_dispatch_refusals_as_github_answers_them(
    gh: FakeGitHub, repo: Repository, api: httpx.Client, workflow: str, body: Any, want: Any
) -> None:
    answer = api.post(f"/repos/acme/widgets/actions/workflows/{workflow}/dispatches", json=body)
    assert (answer.status_code, answer.json()["message"][: len(want[1])]) == want
    assert engine(gh).runs == {}
    # The control: the same workflow with good inputs is dispatched.
    good = api.post("/repos/acme/widgets/actions/workflows/simple.yml/dispatches",
                    json={"ref": "main", "inputs": {"job-id": "ok", "mode": "b"}})  # fmt: skip
    assert good.status_code == 204
    engine(gh).wait(only_run(gh))


def test_a_reader_may_not_dispatch(
    gh: FakeGitHub, repo: Repository, server: FakeGitHubServer
) -> None:
    gh.add_collaborator(repo, "reader", "read")
    reader = gh.create_token("reader")
    url = f"{server.url}/repos/acme/widgets/actions/workflows/simple.yml/dispatches"
    body = {"ref": "main", "inputs": {"job-id": "r"}}
    refused = httpx.post(url, json=body, headers={"Authorization": f"token {reader}"})
    assert refused.status_code == 403 and engine(gh).runs == {}
    writer = gh.create_token("maintainer")
    assert (
        httpx.post(url, json=body, headers={"Authorization": f"token {writer}"}).status_code == 204
    )
    engine(gh).wait(only_run(gh))


# --- the run: failure, hold, hang, cancel, timeout, webhooks ------------------------------


def test_a_failing_step_fails_the_run_and_later_steps_see_failure(
    gh: FakeGitHub, repo: Repository, kit: GitHub[Any]
) -> None:
    dispatch(kit, "simple.yml", **{"job-id": "fail"})
    run = engine(gh).wait(only_run(gh))
    job = gh.jobs[run.job_ids[0]]
    assert (run.conclusion, job.conclusion) == ("failure", "failure")
    assert [s.conclusion for s in job.steps] == ["success", "failure", "success", "success"]
    assert "##[error]Process completed with exit code 3." in job.log


def test_held_runs_stay_queued_or_in_progress_until_released(
    gh: FakeGitHub, repo: Repository, kit: GitHub[Any]
) -> None:
    gh.actions_runner.mode = "hold_queued"
    dispatch(kit, "simple.yml", **{"job-id": "held"})
    run_id = only_run(gh)
    time.sleep(0.3)
    got = kit.rest.actions.get_workflow_run("acme", "widgets", run_id).parsed_data
    assert got.status == "queued"
    engine(gh).release(run_id)
    assert engine(gh).wait(run_id).conclusion == "success"


def test_a_hung_run_stays_in_progress_until_cancelled(
    gh: FakeGitHub, repo: Repository, kit: GitHub[Any]
) -> None:
    gh.actions_runner.mode = "hang"
    dispatch(kit, "simple.yml", **{"job-id": "hung"})
    run_id = only_run(gh)
    deadline = time.monotonic() + 5
    while gh.workflow_runs[run_id].status != "in_progress" and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)
    assert gh.workflow_runs[run_id].status == "in_progress"
    assert kit.rest.actions.cancel_workflow_run("acme", "widgets", run_id).status_code == 202
    run = engine(gh).wait(run_id, 10)
    assert (run.status, run.conclusion) == ("completed", "cancelled")
    with pytest.raises(RequestFailed) as err:  # the control: a finished run cannot be cancelled
        kit.rest.actions.cancel_workflow_run("acme", "widgets", run_id)
    assert status(err)[0] == 409


def test_cancel_stops_a_running_step(gh: FakeGitHub, repo: Repository, kit: GitHub[Any]) -> None:
    dispatch(kit, "simple.yml", **{"job-id": "sleep"})
    run_id = only_run(gh)
    deadline = time.monotonic() + 10
    while not any(
        s.status == "in_progress" and s.name == "Use"
        for s in gh.jobs[gh.workflow_runs[run_id].job_ids[0]].steps
    ):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    kit.rest.actions.cancel_workflow_run("acme", "widgets", run_id)
    run = engine(gh).wait(run_id, 10)
    assert run.conclusion == "cancelled"
    assert engine(gh).artifacts_of(run_id) == []  # upload is `if: !cancelled()`


def test_a_step_past_the_deadline_times_the_job_out(
    gh: FakeGitHub, repo: Repository, kit: GitHub[Any]
) -> None:
    gh.actions_runner.timeout_seconds = 1.5
    dispatch(kit, "simple.yml", **{"job-id": "sleep"})
    run = engine(gh).wait(only_run(gh), 20)
    job = gh.jobs[run.job_ids[0]]
    assert (job.conclusion, run.conclusion) == ("timed_out", "failure")
    assert "exceeded the maximum execution time" in job.log


def test_webhooks_follow_the_run_and_parse_as_githubs(
    gh: FakeGitHub, repo: Repository, kit: GitHub[Any]
) -> None:
    dispatch(kit, "simple.yml", **{"job-id": "hooks"})
    engine(gh).wait(only_run(gh))
    seen = [
        (d.event, d.payload["action"]) for d in gh.deliveries if d.event.startswith("workflow_")
    ]
    assert seen == [
        ("workflow_run", "requested"),
        ("workflow_job", "queued"),
        ("workflow_run", "in_progress"),
        ("workflow_job", "in_progress"),
        ("workflow_job", "completed"),
        ("workflow_run", "completed"),
    ]
    for d in gh.deliveries:
        gk_webhooks.parse_obj(d.event, d.payload)  # raises on a wrong shape
    done = gh.deliveries_of("workflow_run", "completed")[-1].payload["workflow_run"]
    assert done["display_title"] == "simple hooks" and done["conclusion"] == "success"


def test_artifacts_can_be_replaced_dropped_or_expire(
    gh: FakeGitHub, repo: Repository, kit: GitHub[Any]
) -> None:
    dispatch(kit, "simple.yml", **{"job-id": "t"})
    run_id = only_run(gh)
    engine(gh).wait(run_id)
    (art,) = engine(gh).artifacts_of(run_id)
    engine(gh).replace_artifact(art.id, b"not a zip")
    assert (
        kit.rest.actions.download_artifact("acme", "widgets", art.id, "zip").content == b"not a zip"
    )
    gh.clock.advance(hours=48)
    with pytest.raises(RequestFailed) as err:
        kit.rest.actions.download_artifact("acme", "widgets", art.id, "zip")
    assert status(err) == (410, "Artifact has expired")
    engine(gh).replace_artifact(art.id, None)
    listed = kit.rest.actions.list_workflow_run_artifacts("acme", "widgets", run_id).parsed_data
    assert listed.total_count == 0


def test_an_expression_outside_the_subset_fails_the_run(
    gh: FakeGitHub, repo: Repository, kit: GitHub[Any]
) -> None:
    bad = SIMPLE.replace("${{ inputs.mode }}", "${{ format('{0}', inputs.mode) }}")
    gh.commit_file(repo, ".github/workflows/simple.yml", bad, message="format()")
    dispatch(kit, "simple.yml", **{"job-id": "x"})
    run = engine(gh).wait(only_run(gh))
    assert run.conclusion == "failure"
    assert "does not evaluate the function format()" in gh.jobs[run.job_ids[0]].log


# --- the shipped workflows, end to end ----------------------------------------------------


@pytest.fixture
def sandbox() -> None:
    try:
        check_host()
    except SandboxUnavailable as exc:
        pytest.skip(f"this host cannot run landbot's sandbox: {exc}")


def shipped_caller(agent_script: str) -> str:
    """config/landbot-fix.yml as a repository commits it, with a command agent and no setup."""
    doc = yaml.safe_load(CALLER.read_text())
    with_ = doc["jobs"]["fix"]["with"]
    for key in ("setup", "agent-package"):
        with_.pop(key, None)
    with_["agent"] = "command"
    with_["agent-command"] = json.dumps(["sh", "-c", agent_script])
    text: str = yaml.safe_dump(doc, sort_keys=False)
    return text


def fix_inputs(repo: Repository, gh: FakeGitHub, job_id: str) -> dict[str, str]:
    head = gh.branch_sha(repo, "main") or ""
    return {"drop-id": "d1", "pr": "1", "head-sha": head, "base-sha": head,
            "mode": "failed_checks", "job-id": job_id}  # fmt: skip


def test_the_shipped_workflows_fix_on_the_runner_and_the_artifact_imports(
    gh: FakeGitHub, repo: Repository, kit: GitHub[Any], sandbox: None, tmp_path: Path
) -> None:
    agent = (
        "echo 'ANSWER = 42' > app.py && git commit -qam 'Set the answer' && "
        f"printf '%s' '{json.dumps(FIXED)}' > \"$LANDBOT_VERDICT_FILE\""
    )
    gh.commit_file(repo, ".github/workflows/landbot-fix.yml", shipped_caller(agent),
                   message="landbot fix")  # fmt: skip
    gh.reusable_workflows["OWNER/landbot"] = ROOT
    inputs = fix_inputs(repo, gh, "job42")
    dispatch(kit, "landbot-fix.yml", **inputs)
    run = engine(gh).wait(only_run(gh), 300)
    job = gh.jobs[run.job_ids[0]]
    assert run.conclusion == "success", job.log
    assert run.display_title == "landbot fix job42" and job.name == "fix / fix"
    skipped = engine(gh).runs[run.id].outcome.skipped  # type: ignore[union-attr]
    assert any(s.startswith("sudo sysctl") for s in skipped), skipped
    assert any(s.startswith("pip install landbot @ git+") for s in skipped), skipped

    (art,) = kit.rest.actions.list_workflow_run_artifacts(
        "acme", "widgets", run.id
    ).parsed_data.artifacts
    assert art.name == "landbot-fix-job42"
    data = kit.rest.actions.download_artifact("acme", "widgets", art.id, "zip").content
    verdict, bundle = read_artifact(data)
    assert json.loads(verdict) == FIXED and bundle is not None
    mirror = tmp_path / "mirror.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(repo.git_dir), str(mirror)], check=True)
    with Quarantine(mirror, tmp_path / "mirror.lock") as q:
        tip = take_bundle(bundle, q, {inputs["head-sha"]})
        q.promote("refs/landbot/jobs/1")
    shown = subprocess.run(["git", f"--git-dir={mirror}", "show", f"{tip}:app.py"],
                           capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert shown == "ANSWER = 42\n"


def test_the_shipped_workflows_fail_the_run_when_the_agent_fails(
    gh: FakeGitHub, repo: Repository, kit: GitHub[Any], sandbox: None
) -> None:
    """The control of the one above: an agent that gives no verdict still uploads (the
    artifact says so) but the job fails, as landbot fixer run exits 1."""
    gh.commit_file(repo, ".github/workflows/landbot-fix.yml", shipped_caller("exit 5"),
                   message="landbot fix")  # fmt: skip
    gh.reusable_workflows["OWNER/landbot"] = ROOT
    dispatch(kit, "landbot-fix.yml", **fix_inputs(repo, gh, "job43"))
    run = engine(gh).wait(only_run(gh), 300)
    assert run.conclusion == "failure", gh.jobs[run.job_ids[0]].log


def test_the_upload_hook_serves_hostile_bytes_or_no_artifact(
    gh: FakeGitHub, repo: Repository, kit: GitHub[Any]
) -> None:
    hostile = b"PK\x05\x06" + b"\0" * 18  # an empty zip: whatever a runner chose to send
    gh.actions_runner.tamper = lambda run, name, data: hostile if name == "out-h" else None
    dispatch(kit, "simple.yml", **{"job-id": "h"})
    dispatch(kit, "simple.yml", **{"job-id": "gone"})
    first, second = sorted(engine(gh).runs)
    assert engine(gh).wait(first).conclusion == "success"
    assert engine(gh).wait(second).conclusion == "success"
    (art,) = kit.rest.actions.list_workflow_run_artifacts(
        "acme", "widgets", first
    ).parsed_data.artifacts
    assert kit.rest.actions.download_artifact("acme", "widgets", art.id, "zip").content == hostile
    dropped = kit.rest.actions.list_workflow_run_artifacts("acme", "widgets", second).parsed_data
    assert dropped.total_count == 0
    assert "dropped by the test's hook" in gh.jobs[gh.workflow_runs[second].job_ids[0]].log


def test_a_run_held_in_progress_finishes_once_released(
    gh: FakeGitHub, repo: Repository, kit: GitHub[Any]
) -> None:
    gh.actions_runner.mode = "hold_in_progress"
    dispatch(kit, "simple.yml", **{"job-id": "hip"})
    run_id = only_run(gh)
    deadline = time.monotonic() + 5
    while gh.workflow_runs[run_id].status != "in_progress":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    time.sleep(0.3)
    job = kit.rest.actions.get_job_for_workflow_run(
        "acme", "widgets", gh.workflow_runs[run_id].job_ids[0]
    )
    assert job.parsed_data.status == "in_progress"
    engine(gh).release(run_id)
    assert engine(gh).wait(run_id).conclusion == "success"


CHECKOUT = """
name: checkout
on:
  workflow_dispatch:
    inputs:
      depth: {type: string, default: "1"}
      persist: {type: boolean, default: true}
jobs:
  c:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v5
        with:
          path: src
          fetch-depth: ${{ inputs.depth }}
          persist-credentials: ${{ inputs.persist }}
      - uses: actions/setup-python@v6
      - working-directory: src
        run: |
          test "$(cat app.py)" = "ANSWER = 41"
          echo "commits=$(git rev-list --count HEAD)"
          if git config --get-regexp 'http\\..*extraheader' >/dev/null
          then echo kept-token; else echo no-token; fi
"""


@pytest.mark.parametrize(
    ("depth", "persist", "commits", "marker"),
    [("1", True, "1", "kept-token"), ("0", False, "2", "no-token")],
)
def test_checkout_honours_fetch_depth_and_persist_credentials(
    gh: FakeGitHub, repo: Repository, kit: GitHub[Any], depth: str, persist: bool, commits: str,
    marker: str,
) -> None:  # fmt: skip
    gh.commit_file(repo, ".github/workflows/checkout.yml", CHECKOUT, message="checkout")
    dispatch(kit, "checkout.yml", depth=depth, persist=persist)
    run = engine(gh).wait(only_run(gh))
    log = gh.jobs[run.job_ids[0]].log
    assert run.conclusion == "success", log
    assert f"commits={commits}" in log and f"\n{marker}" in log.replace("Z ", "\n")


def test_an_app_needs_actions_write_to_dispatch_and_read_to_list_artifacts(
    gh: FakeGitHub, repo: Repository, server: FakeGitHubServer, app_key: bytes
) -> None:
    app = gh.create_app(private_key_pem=app_key)
    inst = gh.install_app(app, repos=[repo])
    headers = {"Authorization": f"token {gh.mint_installation_token(inst.id).value}"}
    url = f"{server.url}/repos/acme/widgets/actions"
    body = {"ref": "main", "inputs": {"job-id": "app"}}
    assert (
        httpx.post(f"{url}/workflows/simple.yml/dispatches", json=body, headers=headers).status_code
        == 204
    )
    run_id = only_run(gh)
    engine(gh).wait(run_id)
    assert httpx.get(f"{url}/runs/{run_id}/artifacts", headers=headers).status_code == 200
    app.permissions["actions"] = "read"
    refused = httpx.post(f"{url}/workflows/simple.yml/dispatches", json=body, headers=headers)
    assert refused.status_code == 403 and len(engine(gh).runs) == 1
    assert httpx.get(f"{url}/runs/{run_id}/artifacts", headers=headers).status_code == 200
    del app.permissions["actions"]
    assert httpx.get(f"{url}/runs/{run_id}/artifacts", headers=headers).status_code == 403
