"""POST /webhook: verify, store once, acknowledge; every refusal next to its control."""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from landbot.store import Store

from .conftest import (
    SECRET,
    WATCHED,
    compact,
    headers_for,
    make_settings,
    payload,
    payload_bytes,
    stored,
)

DEQUEUED = "pull_request.dequeued.json"


def test_a_signed_dequeued_delivery_is_stored_byte_for_byte(
    client: TestClient, store: Store
) -> None:
    body = payload_bytes(DEQUEUED)  # pretty-printed, as in the file: the raw bytes count
    headers = headers_for(body, delivery="72d3162e-cc78-11e3-81ab-4c9367dc0958")
    r = client.post("/webhook", content=body, headers=headers)
    assert r.status_code == 202, r.text
    assert r.json() == {"status": "accepted", "delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958"}
    [row] = stored(store)
    assert (row.delivery_id, row.event, row.action, row.repo, row.status) == (
        "72d3162e-cc78-11e3-81ab-4c9367dc0958",
        "pull_request",
        "dequeued",
        WATCHED,
        "pending",
    )
    assert row.body == body
    assert json.loads(row.body)["reason"] == "CI_FAILURE"


def test_the_same_delivery_id_twice_is_acknowledged_and_stored_once(
    client: TestClient, store: Store
) -> None:
    body = payload_bytes(DEQUEUED)
    headers = headers_for(body, delivery="d-1")
    first = client.post("/webhook", content=body, headers=headers)
    again = client.post("/webhook", content=body, headers=headers)
    assert first.status_code == 202
    assert again.status_code == 200 and again.json()["status"] == "duplicate"
    assert [r.delivery_id for r in stored(store)] == ["d-1"]
    # Control: a new delivery id with the same body is a new delivery.
    other = client.post("/webhook", content=body, headers=headers_for(body, delivery="d-2"))
    assert other.status_code == 202
    assert [r.delivery_id for r in stored(store)] == ["d-1", "d-2"]


def _sha1(body: bytes) -> str:
    return "sha1=" + hmac.new(SECRET.encode(), body, hashlib.sha1).hexdigest()


BODY = payload_bytes(DEQUEUED)
SIGNATURE_CASES: dict[str, Callable[[dict[str, str]], None]] = {
    "wrong secret": lambda h: h.update(
        {"X-Hub-Signature-256": headers_for(BODY, secret="not the secret")["X-Hub-Signature-256"]}
    ),
    "signature of another body": lambda h: h.update(
        {"X-Hub-Signature-256": headers_for(BODY + b" ")["X-Hub-Signature-256"]}
    ),
    "missing": lambda h: h.pop("X-Hub-Signature-256"),
    "sha1 only, correct": lambda h: (
        h.pop("X-Hub-Signature-256"),
        h.update({"X-Hub-Signature": _sha1(BODY)}),
    ),
    "no sha256= prefix": lambda h: h.update(
        {"X-Hub-Signature-256": h["X-Hub-Signature-256"].removeprefix("sha256=")}
    ),
    "sha1 value in the sha256 header": lambda h: h.update(
        {"X-Hub-Signature-256": _sha1(BODY).replace("sha1=", "sha256=")}
    ),
    "not hex": lambda h: h.update({"X-Hub-Signature-256": "sha256=" + "z" * 64}),
}


@pytest.mark.parametrize("case", sorted(SIGNATURE_CASES))
def test_a_bad_signature_is_refused_and_nothing_is_stored(
    case: str, client: TestClient, store: Store
) -> None:
    good = headers_for(BODY, delivery="sig-1")
    bad = dict(good)
    SIGNATURE_CASES[case](bad)
    r = client.post("/webhook", content=BODY, headers=bad)
    assert r.status_code == 401, r.text
    assert "X-Hub-Signature" in r.json()["error"]
    assert stored(store) == []
    # Control: the identical request with the right signature is accepted.
    ok = client.post("/webhook", content=BODY, headers=good)
    assert ok.status_code == 202, ok.text
    assert len(stored(store)) == 1


def test_sha1_only_says_sha256_is_required(client: TestClient) -> None:
    headers = headers_for(BODY)
    headers.pop("X-Hub-Signature-256")
    headers["X-Hub-Signature"] = _sha1(BODY)
    r = client.post("/webhook", content=BODY, headers=headers)
    assert r.status_code == 401
    assert "sha1" in r.json()["error"] and "X-Hub-Signature-256" in r.json()["error"]


@pytest.mark.parametrize(
    ("body", "content_type", "needle"),
    [
        (b'{"action": "dequeued", ', "application/json", "not valid JSON"),
        (b"\xff\xfe\x00garbage", "application/json", "not valid JSON"),
        (b"payload=%7B%22action%22%7D", "application/x-www-form-urlencoded", "application/json"),
        (b'["a", "list"]', "application/json", "not an object"),
    ],
)
def test_invalid_json_with_a_valid_signature_is_refused(
    body: bytes, content_type: str, needle: str, client: TestClient, store: Store
) -> None:
    headers = headers_for(body)
    headers["Content-Type"] = content_type
    r = client.post("/webhook", content=body, headers=headers)
    assert r.status_code == 400
    assert needle in r.json()["error"]
    assert stored(store) == []
    # Control: valid JSON through the same app is stored.
    assert client.post("/webhook", content=BODY, headers=headers_for(BODY)).status_code == 202
    assert len(stored(store)) == 1


@pytest.mark.parametrize("header", ["X-GitHub-Event", "X-GitHub-Delivery"])
def test_a_missing_github_header_is_refused(header: str, client: TestClient, store: Store) -> None:
    headers = headers_for(BODY)
    del headers[header]
    r = client.post("/webhook", content=BODY, headers=headers)
    assert r.status_code == 400
    assert r.json() == {"error": f"missing {header} header"}
    assert stored(store) == []
    r = client.post("/webhook", content=BODY, headers=headers_for(BODY))
    assert r.status_code == 202


def test_an_overlong_delivery_id_is_refused(client: TestClient, store: Store) -> None:
    r = client.post("/webhook", content=BODY, headers=headers_for(BODY, delivery="x" * 101))
    assert r.status_code == 400 and "longer than 100" in r.json()["error"]
    r = client.post("/webhook", content=BODY, headers=headers_for(BODY, delivery="x" * 100))
    assert r.status_code == 202
    assert [len(row.delivery_id) for row in stored(store)] == [100]


def test_an_unknown_event_is_accepted_and_kept_for_the_worker(
    client: TestClient, store: Store
) -> None:
    body = payload_bytes("star.created.json")
    r = client.post("/webhook", content=body, headers=headers_for(body, event="star"))
    assert r.status_code == 202
    [row] = stored(store)
    assert (row.event, row.action, row.repo) == ("star", "created", WATCHED)


def test_a_removal_reason_github_has_not_documented_is_accepted(
    client: TestClient, store: Store
) -> None:
    data = payload(DEQUEUED)
    data["reason"] = "BRANCH_REMOVED"
    body = compact(data)
    r = client.post("/webhook", content=body, headers=headers_for(body))
    assert r.status_code == 202
    [row] = stored(store)
    assert json.loads(row.body)["reason"] == "BRANCH_REMOVED"


def test_a_repository_outside_landbot_repos_is_acknowledged_not_stored(
    client_for: Callable[..., TestClient], store: Store
) -> None:
    client = client_for(make_settings(repos=[WATCHED, "octo-org/other"]))
    data = payload(DEQUEUED)
    data["repository"]["full_name"] = "octo-org/gadgets"
    body = compact(data)
    r = client.post("/webhook", content=body, headers=headers_for(body))
    assert r.status_code == 202
    assert r.json()["status"] == "ignored"
    assert "octo-org/gadgets is not in LANDBOT_REPOS; not stored" in r.json()["detail"]
    assert stored(store) == []
    # Control: a listed repository (any letter case, as GitHub may spell it) is stored.
    data["repository"]["full_name"] = "Octo-Org/Widgets"
    body = compact(data)
    r = client.post("/webhook", content=body, headers=headers_for(body))
    assert r.status_code == 202 and r.json()["status"] == "accepted"
    assert [row.repo for row in stored(store)] == ["Octo-Org/Widgets"]


def test_a_delivery_without_a_repository_is_stored_even_with_landbot_repos(
    client_for: Callable[..., TestClient], store: Store
) -> None:
    # installation events name no single repository: the worker decides about them.
    client = client_for(make_settings(repos=[WATCHED]))
    body = compact({"action": "created", "installation": {"id": 51234567}})
    r = client.post("/webhook", content=body, headers=headers_for(body, event="installation"))
    assert r.status_code == 202
    assert [(row.event, row.repo) for row in stored(store)] == [("installation", None)]


def test_ping_is_answered_and_not_queued(client: TestClient, store: Store) -> None:
    body = payload_bytes("ping.json")
    r = client.post("/webhook", content=body, headers=headers_for(body, event="ping"))
    assert r.status_code == 200 and r.json()["status"] == "pong"
    assert stored(store) == []
    # A ping is verified like any delivery.
    bad = headers_for(body, event="ping", secret="wrong")
    assert client.post("/webhook", content=body, headers=bad).status_code == 401


def test_without_a_secret_every_delivery_is_refused(
    client_for: Callable[..., TestClient], store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="landbot.web"):
        client = client_for(make_settings(secret=None))
    assert "LANDBOT_GITHUB__WEBHOOK_SECRET is not set" in caplog.text
    for headers in (headers_for(BODY, secret=""), {"X-GitHub-Event": "pull_request"}):
        r = client.post("/webhook", content=BODY, headers=headers)
        assert r.status_code == 500
        assert "LANDBOT_GITHUB__WEBHOOK_SECRET" in r.json()["error"]
    assert stored(store) == []
    # An empty secret is no secret either.
    empty = client_for(make_settings(secret=""))
    assert (
        empty.post("/webhook", content=BODY, headers=headers_for(BODY, secret="")).status_code
        == 500
    )
    # Control: the same store behind an app with the secret accepts the signed delivery.
    ok = client_for(make_settings()).post("/webhook", content=BODY, headers=headers_for(BODY))
    assert ok.status_code == 202


def test_a_store_failure_is_not_acknowledged(tmp_path: Path) -> None:
    from landbot.web.app import create_app

    home = tmp_path / "db"
    home.mkdir()  # Store.open creates no folder
    broken = Store.open(f"sqlite:///{home / 'landbot.db'}")
    client = TestClient(create_app(make_settings(), broken))
    assert client.post("/webhook", content=BODY, headers=headers_for(BODY)).status_code == 202
    broken.engine.dispose()
    shutil.rmtree(home)  # the database and its directory are gone: writes fail
    r = client.post("/webhook", content=BODY, headers=headers_for(BODY))
    assert r.status_code == 503
    assert "not accepted" in r.json()["error"]
    broken.close()


def test_only_post_is_allowed(client: TestClient) -> None:
    assert client.get("/webhook").status_code == 405
