"""A repository's own settings file, end to end: the simulated GitHub serves it from the
default branch and sends the `push` webhook when a commit changes it; landbot (as a GitHub
App, which check runs need) reads it, applies it over the host's settings, and reports an
invalid version once with a `landbot config` check run on the commit, keeping the last good
one. Every test runs on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from landbot.config import Settings
from landbot.github.client import GitHubClient
from landbot.land.config_report import CONFIG_CHECK
from landbot.pipeline.process import Lander
from landbot.pipeline.repo_settings import RepoSettings
from landbot.pipeline.worker import Worker
from landbot.repo_config import REPO_FILE
from landbot.sim import CheckScenario, FakeGitHub, FakeGitHubServer
from landbot.store import Store

from .conftest import FILES, SECRET, SLUG, app_auth, github_settings, serving

CONTROL = "acme/widgets"  # no file: the host's settings
OWN = "acme/gizmos"  # its own file
NARROW = '[policy]\nreasons = { failed_checks = "handback" }\n'
# Line 3 widens a host limit (3 re-enqueues per PR): refused like any other problem.
WIDER = '[policy]\nreasons = { failed_checks = "handback" }\nmax_requeues_per_pr = 99\n'
CANCELLED = CheckScenario.failing("test", step="Run tests", run="make test", conclusion="cancelled")
READ_ROUTES = (
    "GET /repos/{owner}/{repo}",
    "GET /repos/{owner}/{repo}/branches/{branch}",
    "GET /repos/{owner}/{repo}/contents/{path}",
)

# SQLite only: what these tests prove is about GitHub and the decision, on store paths
# the land loop runs on both stores (conftest.BOTH_STORES).
STORES = ("sqlite",)
CREATE_CHECK = "POST /repos/{owner}/{repo}/check-runs"


@dataclass
class AppWorld:
    gh: FakeGitHub
    server: FakeGitHubServer
    repos: dict[str, Any]
    store: Store
    settings: Settings
    client: GitHubClient
    repo_settings: RepoSettings
    lander: Lander
    worker: Worker
    app: Any

    def settle(self) -> int:
        self.gh.webhooks.flush()
        return self.worker.drain()

    def commit(self, repo: str, path: str, text: str | None) -> str:
        sha: str = self.gh.commit_file(self.repos[repo], path, text, author="alice")
        return sha

    def config_runs(self, repo: str) -> list[Any]:
        """Every `landbot config` check run on any commit of `repo`, oldest first."""
        return sorted(
            (c for c in self.gh.check_runs.values() if c.repo == repo and c.name == CONFIG_CHECK),
            key=lambda c: c.id,
        )

    def read_calls(self) -> dict[str, int]:
        counts = self.server.requests.counts()
        return {r: counts.get(r, 0) for r in (*READ_ROUTES, CREATE_CHECK)}

    def fail_in_queue(self, repo: str, head: str) -> Any:
        pr = self.gh.open_pull_request(
            self.repos[repo],
            head=head,
            files={"app.py": f"def answer():\n    return 41  # {head}\n"},
            author="alice",
        )
        self.gh.set_checks(self.repos[repo], CANCELLED, pr=pr, event="merge_group")
        self.gh.enqueue(pr, actor="alice")
        assert self.gh.run_queue(self.repos[repo])[-1].action == "dropped"
        return pr


@pytest.fixture
def world(tmp_path: Path, database_url: str) -> Iterator[AppWorld]:
    gh = FakeGitHub(tmp_path / "github", webhook_secret=SECRET)
    repos = {name: gh.create_repo(name, files=FILES) for name in (CONTROL, OWN)}
    app = gh.create_app(SLUG)
    gh.install_app(app, repos=list(repos.values()))
    for repo in repos.values():
        gh.add_collaborator(repo, "alice", "write")
    auth = app_auth(app, tmp_path / "app.pem")
    with FakeGitHubServer(gh) as server:
        settings = Settings(
            github=github_settings(server, gh, **auth),
            database_url=database_url,
            repos=list(repos),
        )
        store = Store.open(settings.database_url)
        # No waits between retries: a 502 test retries to the end at once.
        client = GitHubClient(settings.github, mutation_gap=0, sleep=lambda s: None)
        per_repo = RepoSettings(settings, store, client)
        lander = Lander(settings, store, client, settings_for=per_repo.for_repo)
        worker = Worker(store, lambda: lander, name="test-worker")
        with serving(gh, settings, store, client, server):
            yield AppWorld(
                gh, server, repos, store, settings, client, per_repo, lander, worker, app
            )


def failed_checks_action(world: AppWorld, repo: str) -> str:
    return world.lander.policy_for(repo).reasons["failed_checks"]


def test_a_file_that_narrows_the_policy_changes_the_outcome(world: AppWorld) -> None:
    world.commit(OWN, REPO_FILE, NARROW)
    world.settle()  # the push webhook queues the read
    control = world.fail_in_queue(CONTROL, "feat-c")
    own = world.fail_in_queue(OWN, "feat-o")
    world.settle()
    outcome = {(d.repo, d.pr): d.outcome for d in world.store.drops()}
    # A cancelled job is not the PR's fault: the host re-enqueues it; the file says hand back.
    assert outcome == {(CONTROL, control.number): "requeued", (OWN, own.number): "handed_back"}
    assert world.lander.settings_for(CONTROL) is world.settings
    assert world.config_runs(OWN) == [] and world.config_runs(CONTROL) == []


def test_a_push_making_the_file_invalid_is_reported_once_and_the_last_good_one_kept(
    world: AppWorld,
) -> None:
    world.commit(OWN, REPO_FILE, NARROW)
    world.settle()
    assert failed_checks_action(world, OWN) == "handback"
    before = world.read_calls()
    bad = world.commit(OWN, REPO_FILE, WIDER)
    world.settle()
    [run] = world.config_runs(OWN)
    assert (run.head_sha, run.status, run.conclusion, run.app_slug) == (
        bad, "completed", "failure", world.app.slug,
    )  # fmt: skip
    [note] = run.api_annotations
    assert (note.path, note.start_line, note.end_line, note.annotation_level) == (
        REPO_FILE, 3, 3, "failure",
    )  # fmt: skip
    assert "max_requeues_per_pr = 99 is above this host's limit 3" in note.message
    assert "line 3:" in run.summary and f"landbot config check {REPO_FILE}" in run.summary
    # The last good version stays in effect, and its widening value never applies.
    assert failed_checks_action(world, OWN) == "handback"
    assert world.lander.settings_for(OWN).policy.max_requeues_per_pr == 3
    row = world.store.repo_file(OWN)
    assert row is not None and row.invalid and row.commit_sha == bad
    # The re-read after the push: the repository, its branch, the file; then the report.
    after = world.read_calls()
    assert {r: after[r] - before[r] for r in after} == {
        READ_ROUTES[0]: 1, READ_ROUTES[1]: 1, READ_ROUTES[2]: 1, CREATE_CHECK: 1,
    }  # fmt: skip

    # A push of another file: no GitHub call at all, and no second report.
    calls = world.server.requests.total
    world.commit(OWN, "README.md", "hello\n")
    world.settle()
    assert world.server.requests.total == calls
    # Read again anyway (the TTL's re-read): the same invalid version, not reported again.
    world.repo_settings.read(OWN)
    assert len(world.config_runs(OWN)) == 1
    assert failed_checks_action(world, OWN) == "handback"

    # Fixed: the new version takes effect, with no report.
    world.commit(OWN, REPO_FILE, '[policy]\nreasons = { failed_checks = "note" }\n')
    world.settle()
    assert failed_checks_action(world, OWN) == "note"
    assert len(world.config_runs(OWN)) == 1


def test_the_file_removed_means_the_host_settings(world: AppWorld) -> None:
    world.commit(OWN, REPO_FILE, NARROW)
    world.settle()
    assert world.lander.settings_for(OWN) is not world.settings
    world.commit(OWN, REPO_FILE, None)
    world.settle()
    assert world.lander.settings_for(OWN) is world.settings
    assert failed_checks_action(world, OWN) == "fix"  # the host's default


def test_a_502_on_the_contents_read_keeps_the_last_good_file(world: AppWorld) -> None:
    world.commit(OWN, REPO_FILE, NARROW)
    world.settle()
    # Every attempt of the client's retry policy fails (5 attempts).
    world.server.faults.fail(READ_ROUTES[2], 502, times=5)
    world.commit(OWN, REPO_FILE, '[policy]\nreasons = { failed_checks = "note" }\n')
    world.settle()
    assert world.server.requests.count(READ_ROUTES[2], status=502) == 5
    assert failed_checks_action(world, OWN) == "handback"  # the last good one, no failure
    assert [j.status for j in world.store.jobs() if j.kind == "repo_file"] == ["done", "done"]
    # Another worker process (no memory of the failure): still stale, it reads the new one.
    other = RepoSettings(world.settings, world.store, world.client)
    assert other.for_repo(OWN).policy.reasons["failed_checks"] == "note"
    assert world.config_runs(OWN) == []
