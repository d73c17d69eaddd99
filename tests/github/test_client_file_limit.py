"""`file_contents(..., max_bytes=)` against the simulated GitHub over HTTP: a file larger
than the caller keeps is answered from the contents object's `size`, without the raw read
(up to 100 MB) GitHub's docs prescribe for a file over 1 MB. Requests are counted."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from landbot.config import GitHubSettings, Settings
from landbot.github.client import GitHubClient
from landbot.pipeline import repo_settings as rs
from landbot.pipeline.repo_settings import RepoSettings
from landbot.repo_config import REPO_FILE
from landbot.sim import FakeGitHub, FakeGitHubServer
from landbot.sim.state import App, Repository
from landbot.store import Store

from .conftest import AppKey

REPO = "acme/widgets"
CONTENTS = "GET /repos/{owner}/{repo}/contents/{path}"
CREATE = "POST /repos/{owner}/{repo}/check-runs"
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
    assert server.requests.count(CREATE) == 1  # the `landbot config` report, once
    row = store.repo_file(REPO)
    assert row is not None and row.invalid and row.text is None
    [run] = [r for r in gh.check_runs.values() if r.name == "landbot config"]
    assert run.conclusion == "failure"
    assert f"over the {rs.MAX_FILE_BYTES} bytes landbot reads" in run.summary
