"""`landbot poll` runs the work its sweeps found, not the whole store: the simulated GitHub,
real git, a SQLite store, landbot's real lander and worker."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from landbot.config import GitHubSettings, Settings
from landbot.github.client import GitHubClient
from landbot.intake.poll import sweep
from landbot.pipeline.poll import finish_own_work, own_drops
from landbot.pipeline.process import Lander
from landbot.pipeline.worker import Worker
from landbot.sim import CheckScenario, FakeGitHub, FakeGitHubServer
from landbot.store import Store, utcnow

REPO = "acme/widgets"
FILES = {"app.py": "def answer():\n    return 42\n"}


@dataclass
class World:
    gh: FakeGitHub
    repo: Any
    store: Store
    client: GitHubClient
    worker: Worker

    def drop_unheard(self, head: str) -> Any:
        """A PR that fails in the queue while landbot hears no webhook."""
        pr = self.gh.open_pull_request(self.repo, head=head, files={"app.py": f"# {head}\n"})
        self.gh.set_checks(self.repo, CheckScenario.failing(), pr=pr, event="merge_group")
        self.gh.enqueue(pr, actor="alice")
        assert self.gh.run_queue(self.repo)[-1].action == "dropped"
        return pr

    def sweep(self) -> list[int]:
        now = self.gh.clock.now() + dt.timedelta(seconds=1)
        return sweep(self.store, self.client, REPO, now=now)

    def own(self, new: list[int]) -> list[int]:
        return own_drops(self.store, [REPO], new, now=self.gh.clock.now())


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    gh = FakeGitHub(tmp_path / "github", webhook_secret="s")
    repo = gh.create_repo(REPO, files=FILES)
    token = gh.create_token("landbot-bot")
    gh.add_collaborator(repo, "landbot-bot", "write")
    gh.add_collaborator(repo, "alice", "write")
    gh.webhooks.url = None  # landbot hears nothing: only the sweep finds drops
    with FakeGitHubServer(gh) as server:
        settings = Settings(
            github=GitHubSettings(api_url=server.url, token=token, git_url=gh.git_url),
            database_url=f"sqlite:///{tmp_path / 'landbot.db'}",
            repos=[REPO],
        )
        store = Store.open(settings.database_url)
        client = GitHubClient(settings.github, mutation_gap=0)
        lander = Lander(settings, store, client)
        worker = Worker(store, lambda: lander, name="poll-test")
        try:
            yield World(gh, repo, store, client, worker)
        finally:
            client.close()
            store.close()


def others_work(store: Store) -> int:
    """Work that is not the poll's: a webhook delivery and a webhook drop with its job,
    both waiting for a worker."""
    store.record_delivery("other-delivery", "ping", None, REPO, b"{}")
    drop_id, _ = store.add_drop(
        repo=REPO,
        pr=999,
        head_sha="f" * 40,
        reason="checks_timed_out",
        source="webhook",
        dedupe_key="webhook:other",
        delivery_id="other",
    )
    job = store.add_job("drop", {"drop_id": drop_id}, dedupe_key="other-job", drop_id=drop_id)
    assert job is not None
    return job


def test_a_poll_runs_the_jobs_of_its_drops_and_leaves_the_rest(world: World) -> None:
    other_job = others_work(world.store)
    pr = world.drop_unheard("feat-a")
    new = world.sweep()
    assert len(new) == 1
    own = world.own(new)
    assert own == new  # the webhook's drop is not the poll's
    run = finish_own_work(world.store, world.worker, own)
    assert (run.ran, run.left) == (1, [])
    [mine] = [d for d in world.store.drops() if d.pr == pr.number]
    assert mine.outcome == "handed_back"
    # Left alone: the other drop's job and the delivery wait for a worker...
    assert world.store.job(other_job).status == "queued"  # type: ignore[union-attr]
    assert world.store.counts().deliveries == {"pending": 1}
    # ...and the control: a worker can run them (they were runnable all along).
    assert world.worker.drain() == 2
    assert world.store.job(other_job).status != "queued"  # type: ignore[union-attr]


def test_an_earlier_polls_unfinished_drop_is_finished_by_the_next_poll(world: World) -> None:
    world.drop_unheard("feat-b")
    first = world.sweep()  # a run that recorded the drop and was killed before its work
    assert len(first) == 1
    assert world.sweep() == []  # the next sweep finds nothing new...
    own = world.own([])
    assert own == first  # ...but the drop is still its own, pending
    run = finish_own_work(world.store, world.worker, own)
    assert run.ran == 1
    [drop] = world.store.drops()
    assert drop.outcome == "handed_back"
    assert world.own([]) == []  # settled: no longer pending


def test_a_retry_due_soon_is_waited_for_and_one_due_later_is_left(world: World) -> None:
    world.drop_unheard("feat-c")
    [drop_id] = world.sweep()
    [job] = world.store.jobs("queued")
    # As a transient GitHub failure leaves it: queued again, not before a while.
    lease = world.store.lease_job("someone", dt.timedelta(seconds=60))
    assert lease is not None and lease.id == job.id
    assert world.store.retry_job(job.id, "someone", utcnow() + dt.timedelta(hours=1), "502")
    run = finish_own_work(world.store, world.worker, [drop_id], wait=1)
    assert (run.ran, [j.id for j in run.left]) == (0, [job.id])
    # The control: the same retry due in a moment is waited for and run.
    lease = world.store.lease_job("someone", dt.timedelta(seconds=60))
    assert lease is None  # not due: nobody can take it
    soon = utcnow() + dt.timedelta(seconds=0.3)
    with world.store.tx() as conn:
        from landbot.store.tables import jobs

        conn.execute(jobs.update().where(jobs.c.id == job.id).values(not_before=soon))
    run = finish_own_work(world.store, world.worker, [drop_id], wait=30)
    assert (run.ran, run.left) == (1, [])


def test_a_job_another_live_worker_holds_is_not_waited_for(world: World) -> None:
    world.drop_unheard("feat-d")
    [drop_id] = world.sweep()
    held = world.store.lease_job("serve-worker", dt.timedelta(minutes=5))
    assert held is not None
    slept: list[float] = []
    run = finish_own_work(world.store, world.worker, [drop_id], sleep=slept.append)
    assert (run.ran, [j.id for j in run.left], slept) == (0, [held.id], [])
    # The control: once that worker's lease has run out (it died), the poll takes it.
    assert world.store.renew_lease("jobs", held.id, "serve-worker", dt.timedelta(seconds=-1))
    run = finish_own_work(world.store, world.worker, [drop_id])
    assert (run.ran, run.left) == (1, [])


def test_a_polls_drop_is_logged_from_its_sweep_to_its_outcome(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    pr = world.drop_unheard("feat-logged")
    with caplog.at_level("INFO", logger="landbot"):
        [drop_id] = world.sweep()
        finish_own_work(world.store, world.worker, [drop_id])
    seen = [
        {"event": r.getMessage(), **getattr(r, "landbot_context", {}), **r.landbot_fields}
        for r in caplog.records
        if hasattr(r, "landbot_fields")
    ]
    [drop] = world.store.drops()
    [recorded] = [e for e in seen if e["event"] == "drop recorded"]
    assert recorded == {
        **recorded,
        "repo": REPO,
        "pr": pr.number,
        "head_sha": drop.head_sha,
        "drop_id": drop_id,
        "source": "poll",
        "removal_id": drop.removal_id,
    }
    assert "delivery_id" not in recorded  # no webhook reported it
    [swept] = [e for e in seen if e["event"] == "sweep finished"]
    assert (swept["repo"], swept["new"], swept["seen"], swept["unmatched"]) == (REPO, 1, 0, 0)
    # Then one line for the decision, each action, and the outcome, all naming the drop.
    names = [e["event"] for e in seen if e.get("drop_id") == drop_id]
    # The `landbot` check run is started before triage, so its line comes before the
    # decision's (GitHub refuses this World's personal token one: a warning).
    assert names[:3] == ["drop recorded", "check run refused", "drop decided"]
    assert "handed back" in names and names[-1] == "drop settled"
    [settled] = [e for e in seen if e["event"] == "drop settled"]
    assert (settled["pr"], settled["outcome"]) == (pr.number, drop.outcome)
