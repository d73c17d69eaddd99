"""Every process's GitHub requests are counted where one /metrics reads them (issue 28.4):
a separate `landbot worker` process saves its counts in the store, as it goes and as it
stops, and `landbot serve`'s /metrics reports them; the count is the simulated GitHub's own."""

from __future__ import annotations

from pathlib import Path

from landbot.web import prom

from .conftest import World
from .test_crash import settled, start_worker, wait_for


def test_a_worker_process_calls_reach_the_store_and_metrics(world: World, tmp_path: Path) -> None:
    pr = world.open_pr("feat-counted", {"app.py": "def answer():\n    return 42  # counted\n"})
    world.time_out_in_queue(pr)
    world.gh.webhooks.flush()  # the drop is stored by landbot's endpoint; nothing called yet
    assert world.store.call_counts() == {}
    before = world.calls()
    worker = start_worker(world, tmp_path, None)
    try:
        wait_for(lambda: settled(world))
    finally:
        worker.terminate()  # SIGTERM: the worker stops its loop and saves its last counts
        worker.wait(timeout=30)
    assert worker.returncode == 0
    assert world.store.drops()[0].outcome == "requeued"
    sent = world.calls() - before  # what the simulated GitHub answered, counted there
    counts = world.store.call_counts()
    assert sent > 0 and sum(counts.values()) == sent, (counts, world.server.requests.counts())
    assert {installation for installation, _, _ in counts} == {"token"}
    assert {api for _, api, _ in counts} == {"rest", "graphql"}

    text = prom.render(prom.DeliveryCounters(), prom.read_store(world.store)).decode()
    lines = [
        line
        for line in text.splitlines()
        if line.startswith("landbot_github_requests_all_processes_total{")
    ]
    assert sum(float(line.rsplit(" ", 1)[1]) for line in lines) == sent
