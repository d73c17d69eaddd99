"""githubkit's own client against the sim's check runs, contents, branches and labels.

githubkit's methods are generated from GitHub's OpenAPI description, and `parsed_data`
parses each answer into its generated response model (CheckRun, ContentFile,
BranchWithProtection, Label...): an answer of the wrong shape fails here. Each refusal is
sent raw (githubkit's own body validation off, so the sim's is what refuses) and has a
control that the same client's valid request succeeds.
"""

from __future__ import annotations

import base64
from typing import Any

import pytest
from githubkit import AppInstallationAuthStrategy, GitHub, TokenAuthStrategy
from githubkit.cache import MemCacheStrategy
from githubkit.exception import RequestFailed
from githubkit.webhooks import parse_obj

from landbot.sim import FakeGitHub, FakeGitHubServer
from landbot.sim.state import App, Repository

OWNER, NAME = "acme", "widgets"


def _client(server: FakeGitHubServer, auth: Any, *, validate: bool = True) -> GitHub[Any]:
    return GitHub(
        auth,
        base_url=f"{server.url}/",
        auto_retry=False,
        http_cache=False,
        cache_strategy=MemCacheStrategy(),
        rest_api_validate_body=validate,
    )


@pytest.fixture
def app(gh: FakeGitHub, repo: Repository, app_key: bytes) -> App:
    made = gh.create_app("landbot", private_key_pem=app_key)
    gh.install_app(made, "acme")
    return made


def _as_app(server: FakeGitHubServer, gh: FakeGitHub, app: App, app_key: bytes, **kw: Any) -> Any:
    inst = gh.installation_for("acme/widgets")
    assert inst is not None
    auth = AppInstallationAuthStrategy(str(app.id), app_key.decode(), inst.id)
    return _client(server, auth, **kw)


def _head(gh: FakeGitHub, repo: Repository) -> str:
    sha = gh.branch_sha(repo, "main")
    assert sha is not None
    return sha


def _notes(n: int) -> list[dict[str, Any]]:
    return [
        {
            "path": f"src/m{i}.py",
            "start_line": i + 1,
            "end_line": i + 1,
            "annotation_level": "failure",
            "message": f"error {i}",
        }
        for i in range(n)
    ]


def test_create_update_get_and_list_annotations_parse(
    server: FakeGitHubServer, gh: FakeGitHub, repo: Repository, app: App, app_key: bytes
) -> None:
    g = _as_app(server, gh, app, app_key)
    pr = gh.open_pull_request(repo, head="feature", files={"app.py": "ANSWER = 42\n"})
    made = g.rest.checks.create(
        OWNER,
        NAME,
        name="landbot",
        head_sha=pr.head_sha,
        status="in_progress",
        external_id="drop:1",
        output={"title": "Working", "summary": "Triage runs", "annotations": _notes(50)},
    ).parsed_data
    assert (made.status, made.conclusion, made.external_id) == ("in_progress", None, "drop:1")
    assert made.app is not None and made.app.slug == "landbot"
    assert [p.number for p in made.pull_requests] == [pr.number]
    assert made.output.annotations_count == 50
    done = g.rest.checks.update(
        OWNER,
        NAME,
        made.id,
        conclusion="action_required",
        output={"summary": "Handed back", "text": "how to reproduce", "annotations": _notes(3)},
    ).parsed_data
    assert (done.status, done.conclusion) == ("completed", "action_required")
    assert done.completed_at is not None
    assert (done.output.title, done.output.summary) == ("Working", "Handed back")  # kept
    assert done.output.annotations_count == 53  # appended, not replaced
    again = g.rest.checks.get(OWNER, NAME, made.id).parsed_data
    assert again.model_dump() == done.model_dump()
    notes = g.rest.checks.list_annotations(OWNER, NAME, made.id, per_page=100).parsed_data
    assert len(notes) == 53
    assert [n.message for n in notes[-3:]] == ["error 0", "error 1", "error 2"]
    assert notes[0].blob_href.endswith(f"/blob/{pr.head_sha}/src/m0.py")
    listed = g.rest.checks.list_for_ref(OWNER, NAME, pr.head_sha).parsed_data
    mine = [c for c in listed.check_runs if c.app is not None and c.app.slug == "landbot"]
    assert [c.id for c in mine] == [made.id]
    # Webhooks as GitHub sends them: created, then completed, by the App's bot.
    hooks = [d for d in gh.deliveries_of("check_run") if d.payload["check_run"]["id"] == made.id]
    assert [d.action for d in hooks] == ["created", "completed"]
    assert {d.payload["sender"]["login"] for d in hooks} == {"landbot[bot]"}
    for d in hooks:  # githubkit's generated webhook models take them
        parsed = parse_obj("check_run", d.payload)
        assert parsed.check_run.external_id == "drop:1"
    # CI finishing the head's checks leaves the App's own run alone.
    gh.complete_checks(repo, pr.head_sha, "success")
    assert gh.check_runs[made.id].conclusion == "action_required"


REFUSED: list[tuple[str, dict[str, Any], str]] = [
    ("completed without a conclusion", {"status": "completed"}, "conclusion"),
    ("an unknown conclusion", {"conclusion": "great"}, "conclusion"),
    ("an unknown status", {"status": "running"}, "status"),
    ("an output without a title", {"output": {"summary": "s"}}, "title"),
    ("an output without a summary", {"output": {"title": "t"}}, "summary"),
    ("a summary over 65535", {"output": {"title": "t", "summary": "x" * 65536}}, "summary"),
    (
        "51 annotations",
        {"output": {"title": "t", "summary": "s", "annotations": _notes(51)}},
        "annotations",
    ),
    (
        "an unknown level",
        {
            "output": {
                "title": "t",
                "summary": "s",
                "annotations": [{**_notes(1)[0], "annotation_level": "error"}],
            }
        },
        "annotation_level",
    ),
    (
        "start_line after end_line",
        {
            "output": {
                "title": "t",
                "summary": "s",
                "annotations": [{**_notes(1)[0], "start_line": 9, "end_line": 3}],
            }
        },
        "end_line",
    ),
    (
        "columns across lines",
        {
            "output": {
                "title": "t",
                "summary": "s",
                "annotations": [
                    {**_notes(1)[0], "end_line": 4, "start_column": 1, "end_column": 2}
                ],
            }
        },
        "single line",
    ),
]


@pytest.mark.parametrize(("what", "extra", "named"), REFUSED, ids=[r[0] for r in REFUSED])
def test_github_s_refusals_on_create(
    server: FakeGitHubServer,
    gh: FakeGitHub,
    repo: Repository,
    app: App,
    app_key: bytes,
    what: str,
    extra: dict[str, Any],
    named: str,
) -> None:
    raw = _as_app(server, gh, app, app_key, validate=False)
    body = {"name": "landbot", "head_sha": _head(gh, repo), **extra}
    with pytest.raises(RequestFailed) as refused:
        raw.rest.checks.create(OWNER, NAME, data=body)
    assert refused.value.response.status_code == 422
    assert named in refused.value.response.json()["message"]
    assert gh.check_runs_by(repo, _head(gh, repo), "landbot") == []
    # The control: the same client, the body made valid, is taken.
    output = {"title": "t", "summary": "s" * 65535, "annotations": _notes(50)}
    fixed: dict[str, Any] = {"name": "landbot", "head_sha": _head(gh, repo)}
    fixed.update(status="completed", conclusion="neutral", output=output)
    made = raw.rest.checks.create(OWNER, NAME, data=fixed).parsed_data
    assert made.conclusion == "neutral" and made.output.annotations_count == 50


def test_github_s_refusals_on_update(
    server: FakeGitHubServer, gh: FakeGitHub, repo: Repository, app: App, app_key: bytes
) -> None:
    raw = _as_app(server, gh, app, app_key, validate=False)
    made = raw.rest.checks.create(
        OWNER, NAME, data={"name": "landbot", "head_sha": _head(gh, repo)}
    ).parsed_data
    assert made.status == "queued"
    for body in (
        {"status": "completed"},
        {"conclusion": "fine"},
        {"output": {"title": "t"}},
        {"output": {"summary": "s", "annotations": _notes(51)}},
    ):
        with pytest.raises(RequestFailed) as refused:
            raw.rest.checks.update(OWNER, NAME, made.id, data=body)
        assert refused.value.response.status_code == 422, body
    assert gh.check_runs[made.id].status == "queued"  # nothing of it was applied
    ok = raw.rest.checks.update(
        OWNER, NAME, made.id, data={"output": {"summary": "s", "annotations": _notes(50)}}
    ).parsed_data
    assert ok.output.annotations_count == 50 and ok.status == "queued"


def test_only_an_app_with_checks_write_writes_check_runs(
    server: FakeGitHubServer,
    gh: FakeGitHub,
    repo: Repository,
    app: App,
    app_key: bytes,
    token: str,
) -> None:
    body: Any = {"name": "landbot", "head_sha": _head(gh, repo), "status": "in_progress"}
    as_user = _client(server, TokenAuthStrategy(token))
    with pytest.raises(RequestFailed) as personal:
        as_user.rest.checks.create(OWNER, NAME, data=body)
    assert personal.value.response.status_code == 403
    assert personal.value.response.json()["message"] == "You must authenticate via a GitHub App."
    app.permissions["checks"] = "read"
    as_app = _as_app(server, gh, app, app_key)
    with pytest.raises(RequestFailed) as reader:
        as_app.rest.checks.create(OWNER, NAME, data=body)
    assert reader.value.response.status_code == 403
    # The control: with checks: write the same request is taken; another App cannot PATCH it.
    app.permissions["checks"] = "write"
    made = as_app.rest.checks.create(OWNER, NAME, data=body)
    other = gh.create_app("other-bot", private_key_pem=app_key)
    gh.install_app(other, repos=[repo])
    inst = next(i for i in gh.installations.values() if i.app_id == other.id)
    as_other = _client(
        server, AppInstallationAuthStrategy(str(other.id), app_key.decode(), inst.id)
    )
    with pytest.raises(RequestFailed) as foreign:
        as_other.rest.checks.update(
            OWNER, NAME, made.parsed_data.id, data={"conclusion": "success"}
        )
    assert foreign.value.response.status_code == 403
    assert gh.check_runs[made.parsed_data.id].status == "in_progress"


def test_get_content_serves_the_blob_at_the_ref(
    server: FakeGitHubServer, gh: FakeGitHub, repo: Repository, app: App, app_key: bytes
) -> None:
    from githubkit_schemas.latest.models import ContentFile

    g = _as_app(server, gh, app, app_key)
    text = "[policy]\n" + "# a long comment line to wrap the base64 at sixty\n" * 3
    first = gh.commit_file(repo, ".github/landbot.toml", text)
    gh.commit_file(repo, ".github/landbot.toml", "[policy]\n")
    got = g.rest.repos.get_content(OWNER, NAME, ".github/landbot.toml", ref=first).parsed_data
    assert isinstance(got, ContentFile)
    assert (got.type, got.encoding, got.path, got.size) == ("file", "base64", got.path, len(text))
    lines = got.content.split("\n")
    assert lines[-1] == "" and all(len(line) == 60 for line in lines[:-2])  # as GitHub wraps
    assert base64.b64decode(got.content) == text.encode()
    from landbot.sim import git

    blob = git.tree_entry(repo.require_git(), first, ".github/landbot.toml")
    assert blob is not None and got.sha == blob.sha
    now = g.rest.repos.get_content(OWNER, NAME, ".github/landbot.toml").parsed_data
    assert isinstance(now, ContentFile) and base64.b64decode(now.content) == b"[policy]\n"
    folder = g.rest.repos.get_content(OWNER, NAME, ".github").parsed_data
    assert isinstance(folder, list) and [(e.type, e.name) for e in folder] == [
        ("file", "landbot.toml")
    ]
    for missing in ({"path": "nope.toml"}, {"path": "app.py", "ref": "no-such-branch"}):
        with pytest.raises(RequestFailed) as absent:
            g.rest.repos.get_content(OWNER, NAME, **missing)
        assert absent.value.response.status_code == 404
    branch = g.rest.repos.get_branch(OWNER, NAME, "main").parsed_data
    assert branch.name == "main" and branch.commit.sha == gh.branch_sha(repo, "main")
    assert branch.commit.parents[0].sha == first


def test_contents_need_the_contents_permission(
    server: FakeGitHubServer, gh: FakeGitHub, repo: Repository, app: App, app_key: bytes
) -> None:
    from githubkit_schemas.latest.models import ContentFile

    app.permissions.pop("contents")
    g = _as_app(server, gh, app, app_key)
    with pytest.raises(RequestFailed) as refused:
        g.rest.repos.get_content(OWNER, NAME, "app.py")
    assert refused.value.response.status_code == 403
    app.permissions["contents"] = "read"  # the control
    got = g.rest.repos.get_content(OWNER, NAME, "app.py")
    file = got.parsed_data
    assert isinstance(file, ContentFile) and base64.b64decode(file.content) == b"ANSWER = 41\n"


def test_labels_add_and_remove_parse_and_reach_graphql(
    server: FakeGitHubServer,
    gh: FakeGitHub,
    repo: Repository,
    app: App,
    app_key: bytes,
    token: str,
) -> None:
    g = _as_app(server, gh, app, app_key)
    pr = gh.open_pull_request(repo, head="feature", files={"app.py": "ANSWER = 42\n"})
    labels = g.rest.issues.add_labels(OWNER, NAME, pr.number, labels=["landbot:fixing"])
    assert [label.name for label in labels.parsed_data] == ["landbot:fixing"]
    # A name differing only in case is the same label, as on GitHub.
    g.rest.issues.add_labels(OWNER, NAME, pr.number, labels=["LANDBOT:FIXING"])
    assert gh.labels_of(pr) == ["landbot:fixing"] and repo.labels == ["landbot:fixing"]
    seen = g.graphql(
        "query($o: String!, $n: String!, $pr: Int!) { repository(owner: $o, name: $n) "
        "{ pullRequest(number: $pr) { labels(first: 10) { nodes { name } } } } }",
        {"o": OWNER, "n": NAME, "pr": pr.number},
    )
    assert seen["repository"]["pullRequest"]["labels"]["nodes"] == [{"name": "landbot:fixing"}]
    left = g.rest.issues.remove_label(OWNER, NAME, pr.number, "landbot:fixing").parsed_data
    assert left == []
    with pytest.raises(RequestFailed) as gone:
        g.rest.issues.remove_label(OWNER, NAME, pr.number, "landbot:fixing")
    assert gone.value.response.status_code == 404
    assert gone.value.response.json()["message"] == "Label does not exist"
    events = [
        (d.action, d.payload["label"]["name"])
        for d in gh.deliveries_of("pull_request")
        if d.action in ("labeled", "unlabeled")
    ]
    assert events == [
        ("labeled", "landbot:fixing"),
        ("unlabeled", "landbot:fixing"),
    ]
    for d in gh.deliveries_of("pull_request"):
        parse_obj("pull_request", d.payload)  # labeled / unlabeled as GitHub's schema has them
    # A reader may not label; the control is the writer above (and a triager here).
    gh.add_collaborator(repo, "reader", "read")
    as_reader = _client(server, TokenAuthStrategy(gh.create_token("reader")))
    with pytest.raises(RequestFailed) as refused:
        as_reader.rest.issues.add_labels(OWNER, NAME, pr.number, labels=["x"])
    assert refused.value.response.status_code == 403 and gh.labels_of(pr) == []
    gh.add_collaborator(repo, "triager", "triage")
    as_triager = _client(server, TokenAuthStrategy(gh.create_token("triager")))
    as_triager.rest.issues.add_labels(OWNER, NAME, pr.number, labels=["x"])
    assert gh.labels_of(pr) == ["x"]


def test_new_routes_are_counted_and_take_faults(
    server: FakeGitHubServer, gh: FakeGitHub, repo: Repository, app: App, app_key: bytes
) -> None:
    g = _as_app(server, gh, app, app_key)
    route = "POST /repos/{owner}/{repo}/check-runs"
    server.faults.fail(route, 502)
    body = {"name": "landbot", "head_sha": _head(gh, repo), "status": "in_progress"}
    with pytest.raises(RequestFailed) as failed:
        g.rest.checks.create(OWNER, NAME, data=body)
    assert failed.value.response.status_code == 502
    assert gh.check_runs_by(repo, _head(gh, repo), "landbot") == []
    g.rest.checks.create(OWNER, NAME, data=body)  # the fault is used up: the control
    assert server.requests.count(route) == 2
    assert server.requests.count(route, status=502) == 1
    assert len(gh.check_runs_by(repo, _head(gh, repo), "landbot")) == 1
