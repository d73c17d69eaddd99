"""A hand-back sends one message beyond GitHub when `[notify] webhook_url` is set (issue 27,
point 5), to a local receiver; a receiver that is down fails nothing; unset, nothing is sent
and nothing changes."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from pydantic import SecretStr

from landbot.config import NotifySettings
from landbot.pipeline.process import Lander
from landbot.pipeline.worker import Worker

from .conftest import World
from .test_flaky_ledger import FAILING, head_checks
from .triage_support import handbacks, queue_and_fail

# SQLite only: what these tests prove is about GitHub and the decision, on store paths
# the land loop runs on both stores (conftest.BOTH_STORES).
STORES = ("sqlite",)


@pytest.fixture
def receiver() -> Iterator[tuple[str, list[dict[str, Any]], dict[str, int]]]:
    got: list[dict[str, Any]] = []
    answer = {"status": 200}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            got.append(json.loads(self.rfile.read(int(self.headers["content-length"]))))
            self.send_response(answer["status"])
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}/services/T/B/secret", got, answer
    server.shutdown()
    server.server_close()


def notifying(world: World, url: str) -> None:
    settings = world.settings.model_copy(
        update={"notify": NotifySettings(webhook_url=SecretStr(url))}
    )
    lander = Lander(settings, world.store, world.client)
    world.lander = lander
    world.worker = Worker(world.store, lambda: lander, name="test-worker")


def test_a_hand_back_sends_one_message(world: World, receiver: Any) -> None:
    url, got, _ = receiver
    notifying(world, url)
    head_checks(world, failing_branches=set())
    pr, _ = queue_and_fail(world, "feat-one", FAILING)
    world.client.bot_login()  # once per process: not part of either figure
    before = world.calls()
    world.settle()
    [handback] = handbacks(world, pr.number)
    [message] = got
    assert message == {
        "text": f"landbot handed acme/widgets#{pr.number} back to alice (failed checks): "
        f"https://github.com/acme/widgets/pull/{pr.number}#issuecomment-{handback.id}"
    }
    cost = world.calls() - before
    # Resumed (the drop's plan run again): the hand-back is kept, and so is its message.
    [drop] = world.store.drops()
    world.lander.process(drop.id)
    assert len(got) == 1
    # A message costs no GitHub call: the same figure as without one (the control below),
    # but for the baseline's listing of main's green runs (issue 26), which only the first
    # drop on a base commit makes (none found is remembered for the control's drop).
    assert cost == without_notify_cost(world, receiver) + 1


def without_notify_cost(world: World, receiver: Any) -> int:
    """The same hand-back on the same World with no URL set: its GitHub calls."""
    _, got, _ = receiver
    plain = Lander(world.settings, world.store, world.client)
    assert plain.actor.notify is None
    world.worker = Worker(world.store, lambda: plain, name="test-worker-2")
    pr, _ = queue_and_fail(world, "feat-two", FAILING, {"two.py": "x = 2\n"})
    before = world.calls()
    world.settle()
    assert handbacks(world, pr.number)
    assert len(got) == 1  # nothing more sent
    return world.calls() - before


def test_a_receiver_that_refuses_fails_nothing(world: World, receiver: Any) -> None:
    url, got, answer = receiver
    answer["status"] = 500
    notifying(world, url)
    head_checks(world, failing_branches=set())
    pr, _ = queue_and_fail(world, "feat-one", FAILING)
    world.settle()
    [drop] = world.store.drops()
    assert drop.outcome == "handed_back"
    assert len(handbacks(world, pr.number)) == 1 and len(got) == 1
