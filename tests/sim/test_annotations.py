"""Check-run annotations and `continue-on-error` steps, as GitHub serves them.

GitHub makes an annotation of each issue the runner reports (`##[error]` lines, a workflow
command's `::error file=…,line=…::`); a check run's `output.annotations_count` says how
many, and `GET …/check-runs/{id}/annotations` lists them (githubkit's models check the
shape). A `continue-on-error` step that fails shows its error in the log, but the jobs
API's step `conclusion` is `success` (actions/runner: the step's Result becomes Succeeded,
its Outcome keeps the failure) and the job does not fail because of it.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from githubkit.compat import type_validate_python
from githubkit_schemas.v2026_03_10 import models

from landbot.sim import CheckScenario, FakeGitHub, FakeGitHubServer, JobSpec, StepSpec, WorkflowSpec
from landbot.sim.scenarios import AnnotationSpec, ScenarioError, standard_steps
from landbot.sim.state import Repository

MYPY = AnnotationSpec("src/app.py", 12, 'Incompatible return value type (got "str")', title="mypy")


def run(gh: FakeGitHub, repo: Repository, *steps: StepSpec) -> Any:
    scenario = CheckScenario(
        workflows=(WorkflowSpec(jobs=(JobSpec("test", steps=standard_steps(steps)),)),)
    )
    gh.set_checks(repo, scenario, event="merge_group")
    pr = gh.open_pull_request(repo, head="feature", files={"app.py": "X = 1\n"}, author="alice")
    gh.enqueue(pr, actor="maintainer")
    return gh.run_queue(repo)[-1]


def test_annotations_are_listed_with_their_paths_and_lines(
    gh: FakeGitHub, repo: Repository, api: httpx.Client
) -> None:
    step = run(gh, repo, StepSpec("Type check", "failure", run="mypy src", annotations=(MYPY,)))
    [check] = api.get(f"/repos/acme/widgets/commits/{step.group_sha}/check-runs").json()[
        "check_runs"
    ]
    assert check["output"]["annotations_count"] == 2
    notes = api.get(f"/repos/acme/widgets/check-runs/{check['id']}/annotations").json()
    for note in notes:
        type_validate_python(models.CheckAnnotation, note)
    assert [(n["path"], n["start_line"], n["annotation_level"], n["message"]) for n in notes] == [
        ("src/app.py", 12, "failure", MYPY.message),
        (".github", 1, "failure", "Process completed with exit code 1."),
    ]
    # The log shows the annotation's message as the runner writes an error.
    job = gh.jobs[check["id"]]
    assert f"##[error]{MYPY.message}" in job.log
    assert api.get("/repos/acme/widgets/check-runs/999999/annotations").status_code == 404


def test_a_passing_job_has_no_annotations(
    gh: FakeGitHub, repo: Repository, api: httpx.Client
) -> None:
    gh.set_checks(repo, CheckScenario.passing("test"), event="pull_request")
    pr = gh.open_pull_request(repo, head="ok", files={"app.py": "X = 2\n"}, author="alice")
    [check] = api.get(f"/repos/acme/widgets/commits/{pr.head_sha}/check-runs").json()["check_runs"]
    assert check["output"]["annotations_count"] == 0
    assert api.get(f"/repos/acme/widgets/check-runs/{check['id']}/annotations").json() == []


def test_a_failing_continue_on_error_step_is_reported_success(
    gh: FakeGitHub, repo: Repository, api: httpx.Client
) -> None:
    step = run(
        gh,
        repo,
        StepSpec("Lint", "failure", run="ruff check .", continue_on_error=True),
        StepSpec("Unit tests", "success", run="pytest -q"),
    )
    # The job passes: the queue merged it.
    assert step.action == "merged"
    [check] = api.get(f"/repos/acme/widgets/commits/{step.group_sha}/check-runs").json()[
        "check_runs"
    ]
    assert check["conclusion"] == "success"
    job = api.get(f"/repos/acme/widgets/actions/jobs/{check['id']}").json()
    type_validate_python(models.Job, job)
    assert {s["name"]: s["conclusion"] for s in job["steps"]}["Lint"] == "success"
    # ...though its log shows the step's failure, and GitHub still annotates it.
    log = gh.jobs[check["id"]].log
    assert "##[error]Process completed with exit code 1." in log
    assert check["output"]["annotations_count"] == 1


def test_control_the_same_step_without_continue_on_error_fails_the_job(
    gh: FakeGitHub, repo: Repository, api: httpx.Client
) -> None:
    step = run(
        gh,
        repo,
        StepSpec("Lint", "failure", run="ruff check ."),
        StepSpec("Unit tests", "skipped", run="pytest -q"),
    )
    assert step.action == "dropped"
    [check] = api.get(f"/repos/acme/widgets/commits/{step.group_sha}/check-runs").json()[
        "check_runs"
    ]
    job = api.get(f"/repos/acme/widgets/actions/jobs/{check['id']}").json()
    assert {s["name"]: s["conclusion"] for s in job["steps"]}["Lint"] == "failure"


def test_an_unknown_annotation_level_is_refused() -> None:
    with pytest.raises(ScenarioError, match="annotation level 'error' is not one of"):
        StepSpec("x", annotations=(AnnotationSpec("a.py", 1, "m", level="error"),))
    StepSpec("x", annotations=(AnnotationSpec("a.py", 1, "m", level="warning"),))  # control


def test_a_scenario_from_json_carries_both() -> None:
    scenario = CheckScenario.from_dict(
        {
            "workflows": [
                {
                    "jobs": [
                        {
                            "name": "test",
                            "steps": [
                                {
                                    "name": "Lint",
                                    "conclusion": "failure",
                                    "continue_on_error": True,
                                    "annotations": [{"path": "a.py", "line": 3, "message": "m"}],
                                }
                            ],
                        }
                    ]
                }
            ]
        }
    )
    [step] = scenario.workflows[0].jobs[0].steps
    assert step.continue_on_error and step.reported_conclusion == "success"
    assert step.annotations == (AnnotationSpec("a.py", 3, "m"),)


def test_a_fault_can_target_one_commits_route(
    gh: FakeGitHub, repo: Repository, server: FakeGitHubServer, api: httpx.Client
) -> None:
    pr = gh.open_pull_request(repo, head="f", files={"app.py": "X = 3\n"}, author="alice")
    route = "GET /repos/{owner}/{repo}/commits/{ref}/check-runs"
    server.faults.fail(route, 403, message="Resource not accessible", path=pr.head_sha)
    base = gh.branch_sha(repo, "main")
    assert api.get(f"/repos/acme/widgets/commits/{base}/check-runs").status_code == 200
    assert api.get(f"/repos/acme/widgets/commits/{pr.head_sha}/check-runs").status_code == 403
    assert api.get(f"/repos/acme/widgets/commits/{pr.head_sha}/check-runs").status_code == 200


def test_landbots_client_reads_the_count_and_the_annotations(
    gh: FakeGitHub, repo: Repository, server: FakeGitHubServer, token: str
) -> None:
    from landbot.config import GitHubSettings
    from landbot.github.client import GitHubClient

    step = run(gh, repo, StepSpec("Type check", "failure", run="mypy src", annotations=(MYPY,)))
    with GitHubClient(GitHubSettings(api_url=server.url, token=token)) as client:
        [check] = client.check_runs("acme/widgets", step.group_sha)
        assert check.annotations_count == 2
        notes = client.check_run_annotations("acme/widgets", check.id)
    assert [(n.path, n.start_line, n.annotation_level, n.title) for n in notes] == [
        ("src/app.py", 12, "failure", "mypy"),
        (".github", 1, "failure", ""),
    ]
    assert (
        server.requests.count("GET /repos/{owner}/{repo}/check-runs/{check_run_id}/annotations")
        == 1
    )
