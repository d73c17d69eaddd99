"""Conditional requests (issue 28.2): a GET read again sends `If-None-Match` with the ETag
of its last answer; GitHub's 304 costs nothing against the primary limit and the answer
kept is used. Each beside its control: the resource changed, a 200 with the new body."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from landbot.config import GitHubSettings
from landbot.github.client import CALL_OBSERVERS, CallRecord, GitHubClient
from landbot.sim import CheckScenario, FakeGitHub, FakeGitHubServer

REPO = "acme/widgets"


@pytest.fixture
def sim(tmp_path: Path) -> Iterator[tuple[FakeGitHub, FakeGitHubServer, GitHubClient]]:
    gh = FakeGitHub(tmp_path / "github")
    repo = gh.create_repo(REPO, files={"app.py": "x = 1\n", ".github/landbot.toml": "a = 1\n"})
    token = gh.create_token("landbot-bot")
    gh.add_collaborator(repo, "landbot-bot", "write")
    with FakeGitHubServer(gh) as server:
        client = GitHubClient(GitHubSettings(api_url=server.url, token=token), mutation_gap=0)
        try:
            yield gh, server, client
        finally:
            client.close()


def remaining(heard: list[CallRecord]) -> list[int]:
    return [c.rate_limit.remaining for c in heard if c.rate_limit is not None]


def test_check_runs_read_again_unchanged_is_a_free_304(
    sim: tuple[FakeGitHub, FakeGitHubServer, GitHubClient],
) -> None:
    gh, server, client = sim
    repo = gh.repo(REPO)
    tip = repo.known_refs["refs/heads/main"]
    heard: list[CallRecord] = []
    CALL_OBSERVERS.append(heard.append)
    try:
        first = client.check_runs(REPO, tip)  # the hold sweep's read of the base
        again = client.check_runs(REPO, tip)
        # The control: CI runs on the base, and the same read gets a 200 with its runs.
        gh.set_checks(repo, CheckScenario.failing(), sha=tip)
        gh.run_checks(repo, tip, event="push", head_branch="main")
        changed = client.check_runs(REPO, tip)
    finally:
        CALL_OBSERVERS.remove(heard.append)
    assert again == first and changed != first
    assert [c.status for c in heard] == ["200", "304", "200"]
    assert client.calls == 3 and client.not_modified == 1  # a 304 is a call, shown apart
    assert server.requests.not_modified() == 1
    before, after_304, after_200 = remaining(heard)
    assert after_304 == before and after_200 == before - 1  # the 304 cost nothing


def test_the_repository_settings_reads_are_conditional(
    sim: tuple[FakeGitHub, FakeGitHubServer, GitHubClient],
) -> None:
    """pipeline/repo_settings.py's reads (the default branch, its tip, the file)."""
    gh, server, client = sim
    tip = client.default_branch(REPO)
    text = client.file_contents(REPO, ".github/landbot.toml", ref=tip.sha)
    assert client.default_branch(REPO) == tip
    assert client.file_contents(REPO, ".github/landbot.toml", ref=tip.sha) == text
    assert client.not_modified == 3
    # The control: a push moves the tip: the branch's answer comes back 200 with it (the
    # repository's own answer changes too when its pushed_at does).
    gh.push(gh.repo(REPO), "main", {"app.py": "x = 3\n"}, message="move")
    moved = client.default_branch(REPO)
    branch_read = server.requests.entries[-1]
    assert branch_read.route.endswith("/branches/{branch}") and branch_read.status == 200
    assert moved.sha != tip.sha


def test_a_forgotten_etag_is_a_plain_read(
    sim: tuple[FakeGitHub, FakeGitHubServer, GitHubClient],
) -> None:
    """The control of the cache itself: without the kept ETag, no If-None-Match, a 200."""
    _, server, client = sim
    client.default_branch(REPO)
    client._etags.clear()
    client.default_branch(REPO)
    assert client.not_modified == 0 and server.requests.not_modified() == 0
