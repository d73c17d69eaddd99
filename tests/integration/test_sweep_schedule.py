"""A thousand watched repositories, twenty of them active (issue 28.2): which ones a poll run
sweeps, what that costs in GitHub's GraphQL points (the sim charges GitHub's cost:
sim/graphql_cost.py), and a repository missing from a batch sparing the others. On SQLite
and PostgreSQL (the sweep state is the store's).

The 999 other repositories are the model's alone (no git behind them: they have no pull
requests, and a sweep reads nothing else of them); acme/widgets is real, with a drop no
webhook told of.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from landbot.config import GitHubSettings
from landbot.github.client import CALL_OBSERVERS, CallRecord, GitHubClient
from landbot.intake import events
from landbot.intake.poll import ManyResult, sweep_many
from landbot.intake.schedule import Intervals, due
from landbot.sim import CheckScenario, FakeGitHub, FakeGitHubServer
from landbot.sim.ids import node_id
from landbot.sim.state import Repository
from landbot.store import Store

REPO = "acme/widgets"
FLEET = [f"fleet/r{i:03d}" for i in range(999)]
ALL = [REPO, *FLEET]
BUSY = FLEET[:19]  # with acme/widgets (its drop), the twenty active ones
EVERY = Intervals(active=dt.timedelta(minutes=60), idle=dt.timedelta(minutes=60))
BATCH = 50
# GitHub's cost per repository of the batched sweep: its pull requests (1) and each one's
# timeline (50) are the connections: 51 requests, over 100.
PER_REPO = 51


def points(repos: int) -> int:
    """GitHub's cost of sweeping `repos` repositories in queries of BATCH: each query's
    connections over 100, rounded to the nearest, at least 1."""
    full, rest = divmod(repos, BATCH)
    batches = [BATCH] * full + ([rest] if rest else [])
    return sum(max(1, int(n * PER_REPO / 100 + 0.5)) for n in batches)


@dataclass
class World:
    gh: FakeGitHub
    server: FakeGitHubServer
    store: Store
    client: GitHubClient

    def now(self, minutes: float = 0) -> dt.datetime:
        return self.gh.clock.now() + dt.timedelta(minutes=minutes)

    def run(self, repos: list[str], at: dt.datetime) -> tuple[ManyResult, int]:
        """One poll run's sweep of `repos`: its result and the GraphQL points it cost."""
        before = self.server.requests.points()
        result = sweep_many(self.store, self.client, repos, now=at, batch=BATCH)
        return result, self.server.requests.points() - before

    def chosen(self, at: dt.datetime) -> list[str]:
        return [d.repo for d in due(ALL, self.store.sweep_states(ALL), at, EVERY)]


def payload_only(gh: FakeGitHub, full_name: str) -> Repository:
    owner, _, name = full_name.partition("/")
    rid = gh.ids.next("repo")
    repo = Repository(owner, name, rid, node_id("repo", rid), "main", gh.clock.now())
    gh.repos[full_name.lower()] = repo
    gh.nodes[repo.node_id] = repo
    return repo


@pytest.fixture
def fleet(tmp_path: Path, database_url: str) -> Iterator[World]:
    gh = FakeGitHub(tmp_path / "github", webhook_secret="s")
    repo = gh.create_repo(REPO, files={"app.py": "x = 1\n"})
    token = gh.create_token("landbot-bot")
    gh.add_collaborator(repo, "landbot-bot", "write")
    gh.add_collaborator(repo, "alice", "write")
    gh.webhooks.url = None  # no webhook: the sweep alone finds the drop
    pr = gh.open_pull_request(repo, head="feature", files={"app.py": "x = 2\n"})
    gh.set_checks(repo, CheckScenario.failing(), pr=pr, event="merge_group")
    gh.enqueue(pr, actor="alice")
    assert gh.run_queue(repo)[-1].action == "dropped"
    for name in FLEET:
        payload_only(gh, name)
    with FakeGitHubServer(gh) as server:
        settings = GitHubSettings(api_url=server.url, token=token, git_url=gh.git_url)
        store = Store.open(database_url)
        client = GitHubClient(settings, mutation_gap=0)
        try:
            yield World(gh, server, store, client)
        finally:
            client.close()
            store.close()


def queue_webhook(store: Store, repo: str, guid: str, at: dt.datetime) -> None:
    body = {
        "action": "checks_requested",
        "merge_group": {
            "head_sha": "d" * 40,
            "head_ref": f"refs/heads/gh-readonly-queue/main/pr-3-{'c' * 40}",
            "base_sha": "c" * 40,
        },
        "repository": {"full_name": repo},
    }
    events.handle(events.parse(guid, "merge_group", at, json.dumps(body).encode()), store)


def test_a_sweep_of_1000_repositories_with_20_active_costs_at_most_60_points(
    fleet: World,
) -> None:
    # The first run: every repository is new, so every one is swept, 50 to a query.
    t0 = fleet.now(1)
    assert fleet.chosen(t0) == ALL
    first, cost = fleet.run(fleet.chosen(t0), t0)
    assert len(first.swept) == 1000 and first.queries == 20 and len(first.new) == 1
    assert cost == points(1000) == 20 * 26  # 50 x 51 = 2,550 connections: 26 points a query

    # Nineteen more queues move (merge_group webhooks; no GitHub call), acme/widgets' drop
    # keeps it active: twenty active repositories, 980 idle ones swept a few minutes ago.
    calls = fleet.client.calls
    for i, name in enumerate(BUSY):
        queue_webhook(fleet.store, name, f"g{i}", fleet.now(2))
    assert fleet.client.calls == calls

    t1 = fleet.now(6)
    chosen = fleet.chosen(t1)
    assert sorted(chosen) == sorted([REPO, *BUSY])
    heard: list[CallRecord] = []
    CALL_OBSERVERS.append(heard.append)
    try:
        fleet.client.pull_request(REPO, 1)  # the GraphQL budget left before the run: a read
        second, cost = fleet.run(chosen, t1)
    finally:
        CALL_OBSERVERS.remove(heard.append)
    assert second.queries == 1 and second.new == [] and len(second.seen) == 1
    assert cost == points(20) == 10  # 20 x 51 = 1,020 connections
    assert cost <= 60
    # GitHub's own figure (the sim's x-ratelimit-remaining for graphql) fell by as much.
    left = [c.rate_limit.remaining for c in heard if c.api == "graphql" and c.rate_limit]
    assert left[0] - left[-1] == cost

    # The control: the same run sweeping every repository, as before issue 28, costs 520.
    _, everything = fleet.run(ALL, t1)
    assert everything == points(1000) > 60

    # An hour on, the activity is old: each repository is swept once its idle interval
    # passed since its own last sweep (the 20 above and all 1000 in the control: none yet).
    assert fleet.chosen(fleet.now(62)) == []
    assert len(fleet.chosen(fleet.now(67))) == 1000


def test_a_missing_repository_in_a_batch_spares_the_others(
    fleet: World, caplog: pytest.LogCaptureFixture
) -> None:
    at = fleet.now(1)
    with caplog.at_level(logging.WARNING, logger="landbot.intake.poll"):
        result, cost = fleet.run([FLEET[0], "fleet/gone", REPO, FLEET[1]], at)
    assert result.queries == 1 and cost == 2  # 4 x 51 = 204 connections
    assert list(result.missing) == ["fleet/gone"]
    assert "Could not resolve to a Repository" in result.missing["fleet/gone"]
    assert sorted(result.swept) == sorted([FLEET[0], REPO, FLEET[1]])
    assert len(result.new) == 1  # acme/widgets' drop, found beside the error
    [line] = [r for r in caplog.records if r.getMessage().startswith("repository not swept")]
    assert line.landbot_fields["repo"] == "fleet/gone"  # type: ignore[attr-defined]
    # Asked again at its idle interval, not every run (its row is marked swept).
    assert "fleet/gone" in fleet.store.sweep_states(["fleet/gone"])


def test_entries_in_the_queue_keep_a_repository_active(fleet: World) -> None:
    """A sweep that sees a pull request in the queue marks the repository active; the
    control: the fleet's empty repositories stay idle."""
    pr = fleet.gh.open_pull_request(fleet.gh.repo(REPO), head="queued", files={"b.py": "y = 1\n"})
    fleet.gh.enqueue(pr, actor="alice")
    at = fleet.now(1)
    fleet.run([REPO, FLEET[0]], at)
    states = fleet.store.sweep_states([REPO, FLEET[0]])
    assert states[REPO.lower()].active_at == at
    assert states[FLEET[0]].active_at is None
    assert fleet.chosen(fleet.now(20)) == [REPO, *[r for r in ALL if r not in (REPO, FLEET[0])]]
