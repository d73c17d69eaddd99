"""Webhook deliveries: GitHub's headers, a verifiable signature, real payload shapes."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from githubkit import webhooks
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from landbot.sim import CheckScenario, FakeGitHub, fixtures
from landbot.sim.server import BackgroundServer, free_socket
from landbot.sim.state import Repository


def _drop_one(gh: FakeGitHub, repo: Repository) -> None:
    pr = gh.open_pull_request(
        repo, head="feature", files={"app.py": "ANSWER = 43\n"}, author="alice"
    )
    gh.set_checks(repo, CheckScenario.failing(), pr=pr, event="merge_group")
    app = gh.create_app("landbot")
    gh.install_app(app, "acme")
    gh.enable_auto_merge(pr, actor="maintainer")
    gh.add_comment(repo, pr.number, "/landbot retry", author="maintainer")
    gh.run_queue(repo)


def test_signature_verifies_over_the_raw_body(gh: FakeGitHub, repo: Repository) -> None:
    _drop_one(gh, repo)
    delivery = gh.deliveries_of("pull_request", "dequeued")[-1]
    expected = "sha256=" + hmac.new(b"s3cret", delivery.body, hashlib.sha256).hexdigest()
    assert delivery.headers["X-Hub-Signature-256"] == expected
    assert delivery.verify("s3cret")
    assert webhooks.verify("s3cret", delivery.body, delivery.headers["X-Hub-Signature-256"])
    # Controls: another secret, or one changed byte, does not verify.
    assert not delivery.verify("not-the-secret")
    tampered = delivery.body.replace(b'"CI_FAILURE"', b'"CI_FAILURX"')
    assert tampered != delivery.body
    assert not webhooks.verify("s3cret", tampered, delivery.headers["X-Hub-Signature-256"])

    assert delivery.headers["X-GitHub-Event"] == "pull_request"
    guids = [d.headers["X-GitHub-Delivery"] for d in gh.deliveries]
    assert len(set(guids)) == len(guids)  # unique per delivery: the dedup key
    assert json.loads(delivery.body) == delivery.payload


def test_dequeued_payload_has_what_intake_reads(gh: FakeGitHub, repo: Repository) -> None:
    _drop_one(gh, repo)
    payload = gh.deliveries_of("pull_request", "dequeued")[-1].payload
    pr = gh.pull(repo, 1)
    assert payload["action"] == "dequeued"
    assert payload["reason"] == "CI_FAILURE"
    assert payload["number"] == 1
    assert payload["pull_request"]["node_id"] == pr.node_id
    assert payload["pull_request"]["head"]["sha"] == pr.head_sha
    assert payload["pull_request"]["head"]["ref"] == "feature"
    assert payload["pull_request"]["base"]["ref"] == "main"
    assert payload["pull_request"]["user"]["login"] == "alice"
    assert payload["repository"]["full_name"] == "acme/widgets"
    assert payload["installation"]["id"] == gh.installation_for("acme/widgets").id  # type: ignore[union-attr]
    assert payload["sender"]["login"] == "github-merge-queue[bot]"


def test_every_delivered_shape_parses_as_githubs(gh: FakeGitHub, repo: Repository) -> None:
    _drop_one(gh, repo)
    kinds = set()
    for delivery in gh.deliveries:
        webhooks.parse_obj(delivery.event, delivery.payload)  # raises on a wrong shape
        kinds.add((delivery.event, delivery.action))
    assert {
        ("pull_request", "opened"),
        ("pull_request", "enqueued"),
        ("pull_request", "dequeued"),
        ("pull_request", "auto_merge_enabled"),
        ("pull_request", "auto_merge_disabled"),
        ("merge_group", "checks_requested"),
        ("merge_group", "destroyed"),
        ("check_run", "completed"),
        ("workflow_run", "completed"),
        ("issue_comment", "created"),
    } <= kinds


@pytest.mark.parametrize(
    ("event", "payload"),
    [
        ("pull_request", fixtures.pull_request_dequeued(reason="MERGE_CONFLICT")),
        ("pull_request", fixtures.pull_request_enqueued()),
        ("pull_request", fixtures.pull_request_synchronize()),
        ("pull_request", fixtures.pull_request_event("closed", fork_owner="someone")),
        ("merge_group", fixtures.merge_group_event()),
        ("merge_group", fixtures.merge_group_event("destroyed", reason="invalidated")),
        ("check_run", fixtures.check_run_completed()),
        ("workflow_run", fixtures.workflow_run_completed()),
        ("issue_comment", fixtures.issue_comment_created()),
    ],
)
def test_fixture_payloads_parse_as_githubs(event: str, payload: dict[str, Any]) -> None:
    webhooks.parse_obj(event, payload)


def test_fixture_values_are_the_ones_asked_for() -> None:
    body = fixtures.pull_request_dequeued(
        number=12, reason="CI_TIMEOUT", head_sha="a" * 40, labels=["x"]
    )
    assert (body["number"], body["reason"], body["pull_request"]["head"]["sha"]) == (
        12,
        "CI_TIMEOUT",
        "a" * 40,
    )
    assert [label["name"] for label in body["pull_request"]["labels"]] == ["x"]
    group = fixtures.merge_group_event(number=12, base_sha="b" * 40)
    assert group["merge_group"]["head_ref"] == f"refs/heads/gh-readonly-queue/main/pr-12-{'b' * 40}"
    assert "installation" not in fixtures.pull_request_enqueued(installation_id=None)
    delivery = fixtures.delivery("pull_request", body, secret="k")
    assert delivery.verify("k") and not delivery.verify("other")


class Receiver:
    """A webhook endpoint on a real socket that records what arrives."""

    def __init__(self) -> None:
        self.received: list[tuple[dict[str, str], bytes]] = []
        self.lock = threading.Lock()

        async def hook(request: Request) -> Response:
            body = await request.body()
            with self.lock:
                self.received.append((dict(request.headers), body))
            return Response(status_code=202)

        self.app = Starlette(routes=[Route("/webhook", hook, methods=["POST"])])


@pytest.fixture
def receiver() -> Iterator[tuple[Receiver, str]]:
    rec = Receiver()
    with BackgroundServer(rec.app, [free_socket()]) as server:
        yield rec, f"{server.url}/webhook"


def test_deliveries_are_posted_in_order(
    gh: FakeGitHub, repo: Repository, receiver: tuple[Receiver, str]
) -> None:
    rec, url = receiver
    earlier = len(gh.deliveries)  # the repository's first push, before a URL was set
    gh.webhooks.url = url
    _drop_one(gh, repo)
    gh.webhooks.flush()
    with rec.lock:
        got = list(rec.received)
    sent = gh.deliveries[earlier:]
    assert [h["x-github-delivery"] for h, _ in got] == [d.guid for d in sent]
    for (headers, body), delivery in zip(got, sent, strict=True):
        assert body == delivery.body
        assert webhooks.verify("s3cret", body, headers["x-hub-signature-256"])
        assert headers["content-type"] == "application/json"
        assert delivery.status == 202
