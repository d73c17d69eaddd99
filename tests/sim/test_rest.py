"""REST routes: GitHub-shaped JSON (checked with githubkit's models), auth, pagination, logs."""

from __future__ import annotations

import time
from typing import Any

import httpx
import jwt
import pytest
from githubkit.compat import type_validate_python
from githubkit_schemas.v2026_03_10 import models

from landbot.sim import CheckScenario, FakeGitHub, FakeGitHubServer
from landbot.sim import rest as rest_module
from landbot.sim.state import Repository


def valid(model: Any, data: Any) -> Any:
    """githubkit's model of GitHub's OpenAPI description accepts the JSON (raises if not)."""
    return type_validate_python(model, data)


@pytest.fixture
def dropped(gh: FakeGitHub, repo: Repository) -> Any:
    """A PR dropped from the queue by a failing job, as triage will find it."""
    pr = gh.open_pull_request(
        repo, head="feature", files={"app.py": "ANSWER = 43\n"}, author="alice"
    )
    gh.set_checks(
        repo,
        CheckScenario.failing(other_jobs=["lint", "docs"], output=["E   assert 43 == 42"]),
        pr=pr,
        event="merge_group",
    )
    gh.enqueue(pr, actor="maintainer")
    steps = gh.run_queue(repo)
    assert steps[-1].reason == "CI_FAILURE"
    return pr, steps[0].group_sha


def test_pull_request_and_repository(api: httpx.Client, dropped: Any) -> None:
    pr, _ = dropped
    body = api.get(f"/repos/acme/widgets/pulls/{pr.number}").json()
    parsed = valid(models.PullRequest, body)
    assert parsed.node_id == pr.node_id
    assert (body["head"]["sha"], body["head"]["ref"], body["base"]["ref"]) == (
        pr.head_sha,
        "feature",
        "main",
    )
    assert body["user"]["login"] == "alice"
    assert body["auto_merge"] is None and body["merged"] is False
    valid(models.FullRepository, api.get("/repos/acme/widgets").json())
    missing = api.get("/repos/acme/widgets/pulls/99")
    assert missing.status_code == 404
    assert missing.json()["message"] == "Not Found"


def test_merge_group_runs_jobs_and_check_runs(api: httpx.Client, dropped: Any) -> None:
    _, group_sha = dropped
    runs = api.get(
        "/repos/acme/widgets/actions/runs", params={"event": "merge_group", "head_sha": group_sha}
    )
    body = runs.json()
    assert body["total_count"] == 1
    [run] = body["workflow_runs"]
    valid(models.WorkflowRun, run)
    assert run["head_branch"].startswith("gh-readonly-queue/main/pr-1-")
    assert run["conclusion"] == "failure"
    # The PR-head run is not a merge_group run: the filter matters.
    assert (
        api.get("/repos/acme/widgets/actions/runs", params={"event": "pull_request"}).json()[
            "total_count"
        ]
        == 1
    )

    jobs = api.get(f"/repos/acme/widgets/actions/runs/{run['id']}/jobs").json()
    assert [(j["name"], j["conclusion"]) for j in jobs["jobs"]] == [
        ("lint", "success"),
        ("docs", "success"),
        ("test", "failure"),
    ]
    failed = jobs["jobs"][2]
    valid(models.Job, failed)
    assert [(s["number"], s["name"], s["conclusion"]) for s in failed["steps"]][2] == (
        3,
        "Run tests",
        "failure",
    )
    valid(models.Job, api.get(f"/repos/acme/widgets/actions/jobs/{failed['id']}").json())

    checks = api.get(f"/repos/acme/widgets/commits/{group_sha}/check-runs").json()
    assert checks["total_count"] == 3
    for check in checks["check_runs"]:
        valid(models.CheckRun, check)
    by_name = {c["name"]: c for c in checks["check_runs"]}
    assert by_name["test"]["id"] == failed["id"]  # an Actions check run's id is its job's id
    assert by_name["test"]["app"]["slug"] == "github-actions"


def test_a_branchs_green_push_runs_as_triage_lists_them(
    api: httpx.Client, gh: FakeGitHub, repo: Repository
) -> None:
    """`GET /actions/runs?branch=&status=success&event=push`: the baselines of triage
    (issue 26), each run shaped as GitHub's model, newest first, one page."""
    main = gh.branch_sha(repo, "main")
    assert main is not None
    gh.set_checks(repo, CheckScenario.failing(), sha=main, event="push")
    gh.run_checks(repo, main, event="push", head_branch="main")  # red
    gh.set_checks(repo, CheckScenario.passing("test", "lint"), sha=main, event="push")
    green = [gh.run_checks(repo, main, event="push", head_branch="main") for _ in range(2)]
    gh.run_checks(repo, main, event="pull_request", head_branch="main")  # not a push
    params = {
        "branch": "main",
        "status": "success",
        "event": "push",
        "exclude_pull_requests": "true",
        "per_page": 100,
    }
    body = api.get("/repos/acme/widgets/actions/runs", params=params).json()
    runs = body["workflow_runs"]
    for run in runs:
        valid(models.WorkflowRun, run)
    assert body["total_count"] == 2
    assert [(r["event"], r["head_branch"], r["conclusion"]) for r in runs] == [
        ("push", "main", "success")
    ] * 2
    assert runs[0]["id"] > runs[1]["id"]  # newest first
    assert all(r["pull_requests"] == [] for r in runs)
    jobs = api.get(f"/repos/acme/widgets/actions/runs/{runs[0]['id']}/jobs").json()["jobs"]
    assert {j["id"] for j in jobs} == {c.id for c in green[1]}
    for j in jobs:
        valid(models.Job, j)
        assert (j["workflow_name"], j["head_branch"], j["conclusion"]) == ("CI", "main", "success")
    other = api.get("/repos/acme/widgets/actions/runs", params={**params, "branch": "dev"})
    assert other.json() == {"total_count": 0, "workflow_runs": []}


def test_check_runs_paginate_with_link_headers(api: httpx.Client, dropped: Any) -> None:
    _, group_sha = dropped
    first = api.get(f"/repos/acme/widgets/commits/{group_sha}/check-runs", params={"per_page": 2})
    assert first.json()["total_count"] == 3
    assert len(first.json()["check_runs"]) == 2
    links = first.links
    assert "next" in links and "last" in links
    second = api.get(links["next"]["url"])
    assert len(second.json()["check_runs"]) == 1
    assert "next" not in second.links and "prev" in second.links
    names = {c["name"] for c in first.json()["check_runs"] + second.json()["check_runs"]}
    assert names == {"test", "lint", "docs"}
    # A branch name works as the ref too; an unknown ref is GitHub's 422.
    assert api.get("/repos/acme/widgets/commits/feature/check-runs").json()["total_count"] == 1
    unknown = api.get("/repos/acme/widgets/commits/nope/check-runs")
    assert unknown.status_code == 422
    assert unknown.json()["message"] == "No commit found for SHA: nope"


def test_job_log_redirect_refuses_authorization(
    api: httpx.Client, dropped: Any, server: FakeGitHubServer, token: str
) -> None:
    _, group_sha = dropped
    runs = api.get("/repos/acme/widgets/actions/runs", params={"head_sha": group_sha}).json()
    failed = api.get(
        f"/repos/acme/widgets/actions/runs/{runs['workflow_runs'][0]['id']}/jobs"
    ).json()["jobs"][2]

    redirect = api.get(f"/repos/acme/widgets/actions/jobs/{failed['id']}/logs")
    assert redirect.status_code == 302
    location = redirect.headers["location"]
    assert location.startswith(server.blob_url)  # another origin, like GitHub's storage host

    refused = httpx.get(location, headers={"Authorization": f"token {token}"})
    assert refused.status_code == 403
    assert b"AuthenticationFailed" in refused.content

    plain = httpx.get(location)  # control: the same URL without the header
    assert plain.status_code == 200
    assert plain.headers["content-type"].startswith("text/plain")
    assert "E   assert 43 == 42" in plain.text
    assert "##[error]Process completed with exit code 1." in plain.text

    # httpx drops the header itself when it follows a redirect to another origin.
    followed = api.get(
        f"/repos/acme/widgets/actions/jobs/{failed['id']}/logs", follow_redirects=True
    )
    assert followed.status_code == 200 and followed.text == plain.text

    tampered = httpx.get(location.replace("sig=", "sig=0"))
    assert tampered.status_code == 403


def test_job_log_url_expires(
    api: httpx.Client, dropped: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, group_sha = dropped
    runs = api.get("/repos/acme/widgets/actions/runs", params={"head_sha": group_sha}).json()
    failed = api.get(
        f"/repos/acme/widgets/actions/runs/{runs['workflow_runs'][0]['id']}/jobs"
    ).json()["jobs"][2]
    monkeypatch.setattr(rest_module, "LOG_URL_LIFETIME", -5)
    location = api.get(f"/repos/acme/widgets/actions/jobs/{failed['id']}/logs").headers["location"]
    expired = httpx.get(location)
    assert expired.status_code == 403
    assert b"expiry" in expired.content


def test_comments_reactions_and_permission(
    api: httpx.Client, gh: FakeGitHub, repo: Repository
) -> None:
    pr = gh.open_pull_request(repo, head="feature", files={"x.txt": "1\n"}, author="alice")
    created = api.post(
        f"/repos/acme/widgets/issues/{pr.number}/comments", json={"body": "<!-- m -->hi"}
    )
    assert created.status_code == 201
    comment = valid(models.IssueComment, created.json())
    assert comment.user is not None and comment.user.login == "maintainer"
    assert gh.deliveries_of("issue_comment", "created")[-1].payload["comment"]["id"] == comment.id

    edited = api.patch(
        f"/repos/acme/widgets/issues/comments/{comment.id}", json={"body": "<!-- m -->bye"}
    )
    assert edited.status_code == 200 and edited.json()["body"] == "<!-- m -->bye"
    listed = api.get(f"/repos/acme/widgets/issues/{pr.number}/comments").json()
    assert [c["body"] for c in listed] == ["<!-- m -->bye"]
    assert api.post(f"/repos/acme/widgets/issues/{pr.number}/comments", json={}).status_code == 422

    reaction = api.post(
        f"/repos/acme/widgets/issues/comments/{comment.id}/reactions", json={"content": "eyes"}
    )
    assert reaction.status_code == 201
    valid(models.Reaction, reaction.json())
    again = api.post(
        f"/repos/acme/widgets/issues/comments/{comment.id}/reactions", json={"content": "eyes"}
    )
    assert again.status_code == 200 and again.json()["id"] == reaction.json()["id"]

    # Someone else's comment can be edited only with write access.
    other = gh.add_comment(repo, pr.number, "mine", author="alice")
    gh.add_collaborator(repo, "maintainer", "triage")
    denied = api.patch(f"/repos/acme/widgets/issues/comments/{other.id}", json={"body": "x"})
    assert denied.status_code == 403
    gh.add_collaborator(repo, "maintainer", "write")
    assert (
        api.patch(f"/repos/acme/widgets/issues/comments/{other.id}", json={"body": "x"}).status_code
        == 200
    )

    gh.add_collaborator(repo, "helper", "maintain")
    perm = api.get("/repos/acme/widgets/collaborators/helper/permission").json()
    valid(models.RepositoryCollaboratorPermission, perm)
    assert (perm["permission"], perm["role_name"]) == ("write", "maintain")
    assert (
        api.get("/repos/acme/widgets/collaborators/alice/permission").json()["permission"] == "read"
    )
    assert api.get("/repos/acme/widgets/collaborators/ghost/permission").status_code == 404


def test_every_api_route_requires_a_valid_token(
    server: FakeGitHubServer, repo: Repository, token: str
) -> None:
    for headers in ({}, {"Authorization": "token ghp_wrong"}, {"Authorization": "Basic abc"}):
        response = httpx.get(f"{server.url}/repos/acme/widgets", headers=headers)
        assert response.status_code == 401
        assert response.json()["message"] in ("Requires authentication", "Bad credentials")
        graph = httpx.post(
            f"{server.url}/graphql", json={"query": "{ viewer { login } }"}, headers=headers
        )
        assert graph.status_code == 401
    ok = httpx.post(
        f"{server.url}/graphql",
        json={"query": "{ viewer { login } }"},
        headers={"Authorization": f"bearer {token}"},
    )
    assert ok.json() == {"data": {"viewer": {"login": "maintainer"}}}


def test_app_auth_flow(
    server: FakeGitHubServer, gh: FakeGitHub, repo: Repository, app_key: bytes
) -> None:
    app = gh.create_app("landbot", private_key_pem=app_key)
    other = gh.create_repo("elsewhere/thing")
    inst = gh.install_app(app, "acme")

    def with_jwt(jwt: str) -> httpx.Client:
        return httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {jwt}"})

    with with_jwt(app.jwt()) as client:
        found = client.get("/repos/acme/widgets/installation")
        assert found.status_code == 200
        valid(models.Installation, found.json())
        assert found.json()["id"] == inst.id
        assert client.get(f"/repos/{other.full_name}/installation").status_code == 404
        valid(models.Integration, client.get("/app").json())
        minted = client.post(f"/app/installations/{inst.id}/access_tokens")
        assert minted.status_code == 201
        valid(models.InstallationToken, minted.json())
        # A JWT is not an installation token.
        assert client.get("/repos/acme/widgets/pulls/1").status_code == 401

    installation_token = minted.json()["token"]
    with httpx.Client(
        base_url=server.url, headers={"Authorization": f"token {installation_token}"}
    ) as c:
        assert c.get("/repos/acme/widgets").status_code == 200
        assert c.get(f"/repos/{other.full_name}").status_code == 404  # not installed there
        assert c.get("/user").status_code == 403  # installations have no user
        viewer = c.post("/graphql", json={"query": "{ viewer { login } }"}).json()
        assert viewer == {"data": {"viewer": {"login": "landbot[bot]"}}}

    # A JWT signed by another key, or living too long, is refused (the control is above).
    stranger = gh.create_app("stranger")
    assert stranger.private_key_pem is not None
    now = int(time.time())
    claims = {"iss": str(app.id), "iat": now - 60, "exp": now + 540}
    wrong_key = jwt.encode(claims, stranger.private_key_pem, algorithm="RS256")
    with with_jwt(wrong_key) as client:
        assert client.get("/app").status_code == 401
    with with_jwt(app.jwt(lifetime=3600)) as client:
        too_long = client.get("/app")
        assert too_long.status_code == 401
        assert "too far in the future" in too_long.json()["message"]

    gh.clock.advance(hours=2)  # installation tokens last an hour
    expired = httpx.get(
        f"{server.url}/repos/acme/widgets", headers={"Authorization": f"token {installation_token}"}
    )
    assert expired.status_code == 401
