"""The client's check runs, labels and repository files against the simulated GitHub.

Real HTTP to the sim's server (not pytest-httpx): the sim validates each request body
against githubkit's generated request models, so a body the client gets wrong is refused
here as GitHub would refuse it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import SecretStr

from landbot.config import GitHubSettings, Settings
from landbot.github.client import GitHubClient
from landbot.github.errors import GitHubError
from landbot.github.models import Annotation, CheckOutput
from landbot.pipeline import repo_settings as rs
from landbot.pipeline.repo_settings import RepoSettings
from landbot.repo_config import REPO_FILE
from landbot.sim import FakeGitHub, FakeGitHubServer
from landbot.sim.state import App, Repository
from landbot.store import Store

from .conftest import AppKey

REPO = "acme/widgets"
ROUTE_CREATE = "POST /repos/{owner}/{repo}/check-runs"
ROUTE_UPDATE = "PATCH /repos/{owner}/{repo}/check-runs/{check_run_id}"
CONTENTS = "GET /repos/{owner}/{repo}/contents/{path}"
LINE = "# " + "x" * 80 + "\n"
TWO_MB = LINE * (2 * 1024 * 1024 // len(LINE))
HUNDRED_KB = LINE * (100 * 1024 // len(LINE))


@pytest.fixture
def gh(tmp_path: Path) -> FakeGitHub:
    return FakeGitHub(tmp_path / "github")


@pytest.fixture
def repo(gh: FakeGitHub) -> Repository:
    return gh.create_repo(REPO, files={"app.py": "ANSWER = 41\n"})


@pytest.fixture
def app(gh: FakeGitHub, repo: Repository, app_key: AppKey) -> App:
    made = gh.create_app("landbot", private_key_pem=app_key.path.read_bytes())
    gh.install_app(made, "acme")
    return made


@pytest.fixture
def server(gh: FakeGitHub) -> Iterator[FakeGitHubServer]:
    with FakeGitHubServer(gh) as running:
        yield running


@pytest.fixture
def client(server: FakeGitHubServer, app: App, tmp_path: Path) -> Iterator[GitHubClient]:
    key = app.write_private_key(tmp_path / "app.pem")
    settings = GitHubSettings(api_url=server.url, app_id=app.id, private_key_file=key)
    with GitHubClient(settings, mutation_gap=0) as made:
        yield made


def _notes(n: int) -> tuple[Annotation, ...]:
    return tuple(
        Annotation(
            path=f"tests/test_{i}.py",
            start_line=i + 1,
            annotation_level="failure",
            message=f"assert {i} == {i + 1}",
            title="test failed" if i % 2 else "",
            end_line=i + 3 if i == 7 else None,
        )
        for i in range(n)
    )


def test_a_check_run_goes_in_progress_then_completed(
    client: GitHubClient, gh: FakeGitHub, repo: Repository, server: FakeGitHubServer
) -> None:
    pr = gh.open_pull_request(repo, head="feature", files={"app.py": "ANSWER = 42\n"})
    made = client.create_check_run(
        REPO, pr.head_sha, name="landbot", status="in_progress", external_id="drop:7"
    )
    assert (made.status, made.conclusion, made.head_sha) == ("in_progress", None, pr.head_sha)
    assert (made.external_id, made.app_slug) == ("drop:7", "landbot")
    done = client.update_check_run(
        REPO,
        made.id,
        status="completed",
        conclusion="action_required",
        details_url="https://github.com/acme/widgets/pull/1#issuecomment-5",
        output=CheckOutput(title="Handed back: a test fails", summary="**test** failed"),
    )
    assert (done.status, done.conclusion) == ("completed", "action_required")
    assert done.details_url == "https://github.com/acme/widgets/pull/1#issuecomment-5"
    [run] = gh.check_runs_by(repo, pr.head_sha, "landbot")
    assert (run.title, run.summary) == ("Handed back: a test fails", "**test** failed")
    # The client finds it again among the head's check runs (a resumed job does).
    listed = [c for c in client.check_runs(REPO, pr.head_sha) if c.external_id == "drop:7"]
    assert [c.id for c in listed] == [made.id]
    assert server.requests.count(ROUTE_CREATE) == 1
    assert server.requests.count(ROUTE_UPDATE) == 1


@pytest.mark.parametrize(
    ("count", "patches"),
    [(0, 0), (50, 0), (51, 1), (100, 1), (101, 2), (130, 2)],
)
def test_annotations_go_fifty_per_request(
    client: GitHubClient,
    gh: FakeGitHub,
    repo: Repository,
    server: FakeGitHubServer,
    count: int,
    patches: int,
) -> None:
    sha = gh.branch_sha(repo, "main")
    assert sha is not None
    notes = _notes(count)
    output = CheckOutput(title="Handed back", summary="summary", text="details", annotations=notes)
    made = client.create_check_run(
        REPO, sha, name="landbot", status="completed", conclusion="failure", output=output
    )
    assert server.requests.count(ROUTE_CREATE) == 1
    assert server.requests.count(ROUTE_UPDATE) == patches
    assert made.annotations_count == count
    got = client.check_run_annotations(REPO, made.id)  # the first page: up to 100
    assert [(a.path, a.start_line, a.message) for a in got] == [
        (a.path, a.start_line, a.message) for a in notes[:100]
    ]
    # end_line None is sent as the start line (GitHub requires one); a range stays a range.
    if count > 7:
        assert got[7].end_line == 10 and got[6].end_line is None


def test_an_update_appends_its_annotations_in_batches_too(
    client: GitHubClient, gh: FakeGitHub, repo: Repository, server: FakeGitHubServer
) -> None:
    sha = gh.branch_sha(repo, "main")
    assert sha is not None
    made = client.create_check_run(REPO, sha, name="landbot", status="in_progress")
    output = CheckOutput(title="t", summary="s", annotations=_notes(75))
    done = client.update_check_run(REPO, made.id, conclusion="failure", output=output)
    assert server.requests.count(ROUTE_UPDATE) == 2
    assert done.annotations_count == 75
    [run] = gh.check_runs_by(repo, sha, "landbot")
    assert [a.start_line for a in run.api_annotations] == list(range(1, 76))


def test_a_refused_body_is_a_github_error(
    client: GitHubClient, gh: FakeGitHub, repo: Repository
) -> None:
    sha = gh.branch_sha(repo, "main")
    assert sha is not None
    with pytest.raises(GitHubError) as refused:
        client.create_check_run(REPO, sha, name="landbot", status="completed")  # no conclusion
    assert refused.value.status == 422
    with pytest.raises(GitHubError) as unknown:
        client.create_check_run(REPO, "0" * 40, name="landbot", status="queued")
    assert unknown.value.status == 422 and "No commit found" in unknown.value.message
    # The control: the same call with a conclusion is taken.
    ok = client.create_check_run(
        REPO, sha, name="landbot", status="completed", conclusion="neutral"
    )
    assert ok.conclusion == "neutral"


def test_a_personal_token_cannot_write_checks(
    server: FakeGitHubServer, gh: FakeGitHub, repo: Repository
) -> None:
    gh.add_collaborator(repo, "maintainer", "admin")
    settings = GitHubSettings(api_url=server.url, token=SecretStr(gh.create_token("maintainer")))
    sha = gh.branch_sha(repo, "main")
    assert sha is not None
    with GitHubClient(settings, mutation_gap=0) as as_user:
        with pytest.raises(GitHubError) as refused:
            as_user.create_check_run(REPO, sha, name="landbot", status="in_progress")
        assert refused.value.status == 403
        assert refused.value.message == "You must authenticate via a GitHub App."
        assert as_user.check_runs(REPO, sha) == []  # reading is fine (the control)
        # A model standing personal tokens in for an Actions GITHUB_TOKEN takes the same call,
        # and the run is GitHub Actions' (as a GITHUB_TOKEN's is).
        gh.tokens_write_checks_as_actions = True
        made = as_user.create_check_run(REPO, sha, name="landbot", status="in_progress")
        assert made.app_slug == "github-actions"
        done = as_user.update_check_run(REPO, made.id, conclusion="success")
        assert done.conclusion == "success"
        hooks = [d.payload["sender"]["login"] for d in gh.deliveries_of("check_run")]
        assert hooks == ["github-actions[bot]", "github-actions[bot]"]


def test_labels_are_added_and_removed(
    client: GitHubClient, gh: FakeGitHub, repo: Repository, server: FakeGitHubServer
) -> None:
    pr = gh.open_pull_request(repo, head="feature", files={"app.py": "ANSWER = 42\n"})
    assert "landbot:fixing" not in repo.labels
    client.add_label(REPO, pr.number, "landbot:fixing")
    client.add_label(REPO, pr.number, "landbot:fixing")  # again: harmless
    assert gh.labels_of(pr) == ["landbot:fixing"]
    assert "landbot:fixing" in repo.labels  # GitHub creates a label the repository lacks
    assert client.pull_request(REPO, pr.number).labels == ("landbot:fixing",)
    assert client.remove_label(REPO, pr.number, "landbot:fixing") is True
    assert gh.labels_of(pr) == []
    assert client.remove_label(REPO, pr.number, "landbot:fixing") is False  # GitHub's 404
    # A name that needs quoting in the path reaches the right label.
    client.add_label(REPO, pr.number, "needs/a human?")
    assert client.remove_label(REPO, pr.number, "needs/a human?") is True
    actions = [d.action for d in gh.deliveries_of("pull_request") if d.action != "opened"]
    assert actions == ["labeled", "unlabeled", "labeled", "unlabeled"]
    assert (
        server.requests.count("DELETE /repos/{owner}/{repo}/issues/{issue_number}/labels/{name}")
        == 3
    )


def test_a_label_on_a_missing_pull_request_is_not_found(client: GitHubClient) -> None:
    with pytest.raises(GitHubError) as missing:
        client.add_label(REPO, 99, "x")
    assert missing.value.status == 404
    assert client.remove_label(REPO, 99, "x") is False


def test_default_branch_and_file_contents(
    client: GitHubClient, gh: FakeGitHub, repo: Repository, server: FakeGitHubServer
) -> None:
    text = '[policy]\nskip_label = "no-bot"\n# ünïcode survives\n'
    sha = gh.commit_file(repo, ".github/landbot.toml", text)
    head = client.default_branch(REPO)
    assert (head.branch, head.sha) == ("main", sha)
    found = client.file_contents(REPO, ".github/landbot.toml")
    assert found is not None
    assert found.text == text and found.path == ".github/landbot.toml"
    assert found.size == len(text.encode())
    blob = gh.branch_sha(repo, "main")
    assert blob == sha
    assert found.sha != sha and len(found.sha) == 40  # the blob's sha, not the commit's
    # At an older commit the file is not there; a missing path is None, not an error.
    first = client.file_contents(REPO, ".github/landbot.toml", ref=_parent(gh, repo, sha))
    assert first is None
    assert client.file_contents(REPO, "nope.toml") is None
    assert server.requests.count("GET /repos/{owner}/{repo}/branches/{branch}") == 1


def _parent(gh: FakeGitHub, repo: Repository, sha: str) -> str:
    from landbot.sim import git

    return git.parents(repo.require_git(), sha)[0]


def test_what_is_not_a_utf8_file_is_refused(
    client: GitHubClient, gh: FakeGitHub, repo: Repository
) -> None:
    gh.push(repo, "main", {"cfg/latin1.toml": "café = 1\n".encode("latin-1")})
    gh.push(repo, "main", {"cfg/inner/x.toml": "x = 1\n"})
    with pytest.raises(GitHubError, match="is not UTF-8 text; save it as UTF-8"):
        client.file_contents(REPO, "cfg/latin1.toml")
    with pytest.raises(GitHubError, match="is a directory; name a file"):
        client.file_contents(REPO, "cfg")
    # The control: a UTF-8 file beside them reads.
    found = client.file_contents(REPO, "cfg/inner/x.toml")
    assert found is not None and found.text == "x = 1\n"


def test_symlinks_are_followed_to_a_file_and_refused_outside(
    client: GitHubClient, gh: FakeGitHub, repo: Repository
) -> None:
    from landbot.sim import git

    git_dir = repo.require_git()
    base = gh.push(repo, "main", {"real.toml": "a = 1\n"})
    # Symlinks need a tree entry of mode 120000: written with git plumbing.
    inside = git.git(git_dir, "hash-object", "-w", "--stdin", input=b"real.toml").stdout
    outside = git.git(git_dir, "hash-object", "-w", "--stdin", input=b"../../etc/passwd").stdout
    tree_lines = git.out(git_dir, "ls-tree", base)
    tree_lines += f"\n120000 blob {inside.decode().strip()}\tlink.toml"
    tree_lines += f"\n120000 blob {outside.decode().strip()}\tout.toml\n"
    tree = git.out(git_dir, "mktree", input=tree_lines.encode())
    commit = git.out(git_dir, "commit-tree", tree, "-p", base, "-m", "links")
    gh.move_branch(repo, "main", commit)
    linked = client.file_contents(REPO, "link.toml")
    assert linked is not None and linked.text == "a = 1\n"
    with pytest.raises(GitHubError, match=r"is a symlink to '\.\./\.\./etc/passwd'"):
        client.file_contents(REPO, "out.toml")


def test_a_file_over_one_megabyte_is_read_with_the_raw_media_type(
    client: GitHubClient, gh: FakeGitHub, repo: Repository, server: FakeGitHubServer
) -> None:
    big = "# " + "x" * 80 + "\n"
    text = big * (1024 * 1024 // len(big) + 10)
    assert len(text) > 1024 * 1024
    gh.commit_file(repo, "big.toml", text)
    found = client.file_contents(REPO, "big.toml")
    assert found is not None and found.text == text and found.size == len(text)
    # Two requests: the object (no content, encoding "none"), then the raw bytes.
    assert server.requests.count("GET /repos/{owner}/{repo}/contents/{path}") == 2
    small = client.file_contents(REPO, "app.py")
    assert small is not None and small.text == "ANSWER = 41\n"
    assert server.requests.count("GET /repos/{owner}/{repo}/contents/{path}") == 3


# --- file_contents(..., max_bytes=): a file larger than the caller keeps is answered from
# the contents object's `size`, without the raw read (up to 100 MB) GitHub's docs prescribe
# for a file over 1 MB. Requests are counted.


@pytest.mark.parametrize("text", [TWO_MB, HUNDRED_KB], ids=["over 1 MB", "under 1 MB"])
def test_a_file_over_max_bytes_is_its_size_without_its_bytes(
    client: GitHubClient, gh: FakeGitHub, repo: Repository, server: FakeGitHubServer, text: str
) -> None:
    gh.commit_file(repo, "big.toml", text)
    found = client.file_contents(REPO, "big.toml", max_bytes=64 * 1024)
    assert found is not None
    assert (found.text, found.size, found.path) == (None, len(text), "big.toml")
    assert len(found.sha) == 40
    assert server.requests.count(CONTENTS) == 1  # the object only: no raw read
    # Control: at or under the limit, and without one, the file is read in full.
    whole = client.file_contents(REPO, "big.toml", max_bytes=len(text))
    assert whole is not None and whole.text == text
    unbounded = client.file_contents(REPO, "big.toml")
    assert unbounded is not None and unbounded.text == text
    raw_reads = 2 if len(text) > 1024 * 1024 else 0  # GitHub sends no content over 1 MB
    assert server.requests.count(CONTENTS) == 3 + raw_reads


def test_repo_settings_refuses_a_2_mb_file_from_its_size(
    client: GitHubClient, gh: FakeGitHub, repo: Repository, server: FakeGitHubServer, store: Store
) -> None:
    gh.commit_file(repo, REPO_FILE, TWO_MB)
    host = Settings()
    assert RepoSettings(host, store, client).for_repo(REPO) is host
    assert server.requests.count(CONTENTS) == 1
    assert server.requests.count(ROUTE_CREATE) == 1  # the `landbot config` report, once
    row = store.repo_file(REPO)
    assert row is not None and row.invalid and row.text is None
    [run] = [r for r in gh.check_runs.values() if r.name == "landbot config"]
    assert run.conclusion == "failure"
    assert f"over the {rs.MAX_FILE_BYTES} bytes landbot reads" in run.summary
