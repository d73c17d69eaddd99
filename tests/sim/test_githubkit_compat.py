"""githubkit, the library landbot's client is built on, works against the fake unchanged.

This is the compatibility check for landbot/github (written in parallel): App auth with a
real JWT, installation tokens, strict response models, the log redirect, GraphQL errors.
"""

from __future__ import annotations

import pytest
from githubkit import AppAuthStrategy, AppInstallationAuthStrategy, GitHub, TokenAuthStrategy
from githubkit.cache import MemCacheStrategy
from githubkit.exception import GraphQLFailed, PrimaryRateLimitExceeded, RequestFailed

from landbot.sim import CheckScenario, FakeGitHub, FakeGitHubServer
from landbot.sim.state import Repository


def _client(server: FakeGitHubServer, auth: object) -> GitHub:  # type: ignore[type-arg]
    return GitHub(
        auth,  # type: ignore[arg-type]
        base_url=f"{server.url}/",
        auto_retry=False,
        http_cache=False,
        cache_strategy=MemCacheStrategy(),
    )


def test_app_installation_client_reads_a_drop(
    server: FakeGitHubServer, gh: FakeGitHub, repo: Repository, app_key: bytes
) -> None:
    app = gh.create_app("landbot", private_key_pem=app_key)
    inst = gh.install_app(app, "acme")
    pr = gh.open_pull_request(repo, head="feature", files={"app.py": "ANSWER = 43\n"})
    gh.set_checks(repo, CheckScenario.failing(output=["E   boom"]), event="merge_group")
    gh.enqueue(pr, actor="maintainer")
    group_sha = gh.run_queue(repo)[0].group_sha
    assert group_sha is not None

    as_app = _client(server, AppAuthStrategy(str(app.id), app_key.decode()))
    assert as_app.rest.apps.get_repo_installation("acme", "widgets").parsed_data.id == inst.id
    assert as_app.rest.apps.get_authenticated().parsed_data.slug == "landbot"

    g = _client(server, AppInstallationAuthStrategy(str(app.id), app_key.decode(), inst.id))
    assert g.rest.pulls.get("acme", "widgets", pr.number).parsed_data.node_id == pr.node_id
    checks = g.rest.checks.list_for_ref("acme", "widgets", group_sha, per_page=100).parsed_data
    assert [c.conclusion for c in checks.check_runs] == ["failure"]
    runs = g.rest.actions.list_workflow_runs_for_repo(
        "acme", "widgets", event="merge_group", head_sha=group_sha
    ).parsed_data
    jobs = g.rest.actions.list_jobs_for_workflow_run("acme", "widgets", runs.workflow_runs[0].id)
    job = jobs.parsed_data.jobs[0]
    log = g.rest.actions.download_job_logs_for_workflow_run("acme", "widgets", job.id)
    assert log.status_code == 200 and b"E   boom" in log.content
    data = g.graphql(
        "query($id: ID!) { node(id: $id) { ... on PullRequest { number isInMergeQueue } } }",
        {"id": pr.node_id},
    )
    assert data == {"node": {"number": pr.number, "isInMergeQueue": False}}
    assert server.requests.count("POST /app/installations/{installation_id}/access_tokens") == 1


def test_errors_reach_githubkit_as_github_errors(
    server: FakeGitHubServer, gh: FakeGitHub, repo: Repository, token: str
) -> None:
    g = _client(server, TokenAuthStrategy(token))
    with pytest.raises(GraphQLFailed) as invalid:
        g.graphql("query { viewer { nope } }")
    assert invalid.value.response.data is None
    assert invalid.value.response.errors[0].message == "Field 'nope' doesn't exist on type 'User'"

    server.faults.graphql_rate_limited()
    with pytest.raises(PrimaryRateLimitExceeded):
        g.graphql("query { viewer { login } }")
    assert g.graphql("query { viewer { login } }") == {"viewer": {"login": "maintainer"}}

    server.faults.fail("GET /repos/{owner}/{repo}/pulls/{pull_number}", 502)
    with pytest.raises(RequestFailed) as failed:
        g.rest.pulls.get("acme", "widgets", 1)
    assert failed.value.response.status_code == 502
