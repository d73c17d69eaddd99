"""Issues on the simulated GitHub: create, edit, close, reopen, list, with GitHub's shapes
(githubkit's models), its body validation and its `issues` webhooks."""

from __future__ import annotations

from typing import Any

import httpx
from githubkit.compat import type_validate_python
from githubkit_schemas.v2026_03_10 import models

from landbot.sim import FakeGitHub, FakeGitHubServer
from landbot.sim.state import Repository

ISSUES = "/repos/acme/widgets/issues"


def valid(model: Any, data: Any) -> Any:
    return type_validate_python(model, data)


def test_create_edit_close_reopen(api: httpx.Client, gh: FakeGitHub, repo: Repository) -> None:
    made = api.post(ISSUES, json={"title": "Flaky: t", "body": "<!-- m -->\nhi", "labels": ["x"]})
    assert made.status_code == 201, made.text
    issue = valid(models.Issue, made.json())
    assert (issue.title, issue.state, [lbl.name for lbl in issue.labels]) == (
        "Flaky: t",
        "open",
        ["x"],
    )
    assert issue.user is not None and issue.user.login == "maintainer"
    assert "pull_request" not in made.json()  # an issue, not a pull request
    opened = gh.deliveries_of("issues", "opened")
    assert [d.payload["issue"]["number"] for d in opened] == [issue.number]
    valid(models.WebhookIssuesOpened, opened[0].payload)

    path = f"{ISSUES}/{issue.number}"
    edited = api.patch(path, json={"body": "<!-- m -->\nmore"})
    assert edited.status_code == 200 and edited.json()["body"] == "<!-- m -->\nmore"
    [edit] = gh.deliveries_of("issues", "edited")
    assert edit.payload["changes"] == {"body": {"from": "<!-- m -->\nhi"}}
    valid(models.WebhookIssuesEdited, edit.payload)
    # The same PATCH again changes nothing and emits nothing (repeatable).
    assert api.patch(path, json={"body": "<!-- m -->\nmore"}).status_code == 200
    assert len(gh.deliveries_of("issues", "edited")) == 1

    closed = api.patch(path, json={"state": "closed", "state_reason": "completed"}).json()
    assert (closed["state"], closed["state_reason"]) == ("closed", "completed")
    assert closed["closed_at"] is not None
    valid(models.WebhookIssuesClosed, gh.deliveries_of("issues", "closed")[0].payload)
    reopened = api.patch(path, json={"state": "open"}).json()
    assert (reopened["state"], reopened["state_reason"]) == ("open", "reopened")
    valid(models.WebhookIssuesReopened, gh.deliveries_of("issues", "reopened")[0].payload)
    assert valid(models.Issue, api.get(path).json()).state == "open"


def test_issue_numbers_are_shared_with_pull_requests(
    api: httpx.Client, gh: FakeGitHub, repo: Repository
) -> None:
    pr = gh.open_pull_request(repo, head="feature", files={"x.txt": "1\n"})
    number = api.post(ISSUES, json={"title": "t"}).json()["number"]
    assert number == pr.number + 1
    # A pull request is an issue to GET, and not one PATCH /issues edits in the model.
    assert api.get(f"{ISSUES}/{pr.number}").json()["pull_request"]
    assert api.get(f"{ISSUES}/999").status_code == 404


def test_bodies_are_validated(api: httpx.Client, repo: Repository) -> None:
    assert api.post(ISSUES, json={"body": "no title"}).status_code == 422
    assert api.post(ISSUES, json={"title": "x" * 257}).status_code == 422
    assert api.post(ISSUES, json={"title": "t", "body": "x" * 65537}).status_code == 422
    number = api.post(ISSUES, json={"title": "t"}).json()["number"]
    bad = api.patch(f"{ISSUES}/{number}", json={"state": "gone"})
    assert bad.status_code == 422 and "state" in bad.json()["message"]
    bad_reason = api.patch(f"{ISSUES}/{number}", json={"state_reason": "bored"})
    assert bad_reason.status_code == 422
    # Controls: the same requests, well formed.
    assert api.post(ISSUES, json={"title": "x" * 256, "body": "x" * 65536}).status_code == 201
    assert api.patch(f"{ISSUES}/{number}", json={"state": "closed"}).status_code == 200


def test_list_filters(api: httpx.Client, gh: FakeGitHub, repo: Repository) -> None:
    pr = gh.open_pull_request(repo, head="feature", files={"x.txt": "1\n"})
    gh.add_label(pr, "flaky")
    one = api.post(ISSUES, json={"title": "one", "labels": ["flaky"]}).json()["number"]
    two = api.post(ISSUES, json={"title": "two", "labels": ["flaky"]}).json()["number"]
    api.post(ISSUES, json={"title": "other", "labels": ["bug"]})
    gh.add_collaborator(repo, "bob", "write")
    with httpx.Client(
        base_url=str(api.base_url), headers={"Authorization": f"token {gh.create_token('bob')}"}
    ) as bob:
        theirs = bob.post(ISSUES, json={"title": "bob's", "labels": ["flaky"]}).json()["number"]
    api.patch(f"{ISSUES}/{one}", json={"state": "closed"})

    def numbers(**params: str) -> list[int]:
        body = api.get(ISSUES, params=params).json()
        for item in body:
            valid(models.Issue, item)
        return [i["number"] for i in body]

    assert numbers(labels="flaky", direction="asc") == [pr.number, two, theirs]
    assert numbers(labels="flaky", state="all", direction="asc") == [pr.number, one, two, theirs]
    assert numbers(labels="flaky", state="closed") == [one]
    assert numbers(labels="FLAKY", creator="bob") == [theirs]
    assert api.get(ISSUES, params={"state": "nope"}).status_code == 422


def test_an_app_needs_issues_write(
    server: FakeGitHubServer, gh: FakeGitHub, repo: Repository, app_key: bytes
) -> None:
    reader = gh.create_app("reader", private_key_pem=app_key)
    reader.permissions = {**reader.permissions, "issues": "read"}
    writer = gh.create_app("writer", private_key_pem=app_key)
    for app in (reader, writer):
        inst = gh.install_app(app, repos=[repo])
        token = gh.mint_installation_token(inst.id).value
        with httpx.Client(
            base_url=server.url, headers={"Authorization": f"token {token}"}
        ) as client:
            answer = client.post(ISSUES, json={"title": "t"})
        if app is reader:
            assert answer.status_code == 403
        else:  # control: the same App with issues: write
            assert answer.status_code == 201
            assert answer.json()["user"]["login"] == writer.bot_login
