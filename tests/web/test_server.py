"""The receiver under a real uvicorn server on 127.0.0.1: deliveries over HTTP, the server
surviving bad requests, and the event loop free while a store write waits."""

from __future__ import annotations

import concurrent.futures
import socket
import sqlite3
import sys
import threading
from pathlib import Path

import httpx
import pytest

from landbot.store import Store
from landbot.web import app as app_module
from landbot.web.app import create_app

from .conftest import (
    WATCHED,
    compact,
    headers_for,
    live_server,
    make_settings,
    payload,
    payload_bytes,
    stored,
)

BODY = payload_bytes("pull_request.dequeued.json")


def test_a_delivery_over_http_is_stored_once(http: httpx.Client, store: Store) -> None:
    headers = headers_for(BODY, delivery="live-1")
    first = http.post("/webhook", content=BODY, headers=headers)
    again = http.post("/webhook", content=BODY, headers=headers)
    assert (first.status_code, again.status_code) == (202, 200)
    assert [(r.delivery_id, r.repo, r.body) for r in stored(store)] == [("live-1", WATCHED, BODY)]


def test_the_server_keeps_serving_after_each_bad_request(
    http: httpx.Client, server: tuple[str, int], store: Store
) -> None:
    def bad_signature() -> int:
        h = headers_for(BODY, secret="wrong")
        return http.post("/webhook", content=BODY, headers=h).status_code

    def bad_json() -> int:
        body = b"{not json"
        return http.post("/webhook", content=body, headers=headers_for(body)).status_code

    def missing_event() -> int:
        h = headers_for(BODY)
        del h["X-GitHub-Event"]
        return http.post("/webhook", content=BODY, headers=h).status_code

    def too_large() -> int:
        with socket.create_connection(server) as sock:
            h = headers_for(b"{}")
            head = "".join(f"{k}: {v}\r\n" for k, v in h.items())
            request = f"POST /webhook HTTP/1.1\r\nHost: x\r\n{head}Content-Length: {10**9}\r\n\r\n"
            sock.sendall(request.encode())
            return int(sock.recv(4096).split()[1])

    def not_http() -> int:
        with socket.create_connection(server) as sock:
            sock.sendall(b"\x16\x03\x01 TLS hello to a plain-HTTP port\r\n\r\n")
            return int(sock.recv(4096).split()[1])

    def wrong_method() -> int:
        return http.put("/webhook", content=BODY).status_code

    cases = [
        (bad_signature, 401),
        (bad_json, 400),
        (missing_event, 400),
        (too_large, 413),
        (not_http, 400),
        (wrong_method, 405),
    ]
    for n, (bad, status) in enumerate(cases):
        assert bad() == status, bad.__name__
        good = http.post("/webhook", content=BODY, headers=headers_for(BODY, delivery=f"ok-{n}"))
        assert good.status_code == 202, bad.__name__
    assert http.get("/healthz").status_code == 200
    assert [r.delivery_id for r in stored(store)] == [f"ok-{n}" for n in range(len(cases))]


class WatchedStore(Store):
    """The real store, telling the test when a delivery write has started."""

    entered = threading.Event()

    def record_delivery(
        self, delivery_id: str, event: str, action: str | None, repo: str | None, body: bytes
    ) -> bool:
        self.entered.set()
        return super().record_delivery(delivery_id, event, action, repo, body)


def test_a_store_write_waiting_on_a_lock_does_not_block_other_requests(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(app_module, "STORE_TIMEOUT_S", 0.5)
    db = tmp_path / "landbot.db"
    store = WatchedStore.open(f"sqlite:///{db}")
    # Another connection holds SQLite's write lock, so the delivery's transaction waits.
    blocker = sqlite3.connect(db, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    ping = payload_bytes("ping.json")
    other = compact({**payload("pull_request.dequeued.json"), "repository": {"full_name": "a/b"}})
    try:
        with (
            live_server(create_app(make_settings(repos=[WATCHED]), store)) as (host, port),
            httpx.Client(base_url=f"http://{host}:{port}", timeout=5) as http,
            concurrent.futures.ThreadPoolExecutor(1) as pool,
        ):
            pending = pool.submit(
                http.post,
                "/webhook",
                content=BODY,
                headers=headers_for(BODY, delivery="w-1"),
                timeout=60,
            )
            assert WatchedStore.entered.wait(10), "the delivery never reached the store"
            # The write waits in its thread; the event loop answers everything that does
            # not need the store at once, and a store read gives up instead of hanging.
            for _ in range(3):
                r = http.post("/webhook", content=ping, headers=headers_for(ping, event="ping"))
                assert r.status_code == 200
                r = http.post("/webhook", content=BODY, headers=headers_for(BODY, secret="x"))
                assert r.status_code == 401
                r = http.post("/webhook", content=other, headers=headers_for(other))
                assert r.json()["status"] == "ignored"
            r = http.get("/healthz")
            # Store reads start a plain BEGIN: in WAL mode they do not wait behind a writer.
            assert r.status_code == 200, r.json()
            assert not pending.done(), pending.result()
            blocker.execute("ROLLBACK")
            assert pending.result(timeout=30).status_code == 202
            assert http.get("/healthz").status_code == 200
        assert [r.delivery_id for r in stored(store)] == ["w-1"]
    finally:
        blocker.close()
        store.close()


def test_an_unlisted_repository_over_http(store: Store) -> None:
    data = payload("pull_request.dequeued.json")
    data["repository"]["full_name"] = "someone/else"
    body = compact(data)
    with (
        live_server(create_app(make_settings(repos=[WATCHED]), store)) as (host, port),
        httpx.Client(base_url=f"http://{host}:{port}") as http,
    ):
        r = http.post("/webhook", content=body, headers=headers_for(body))
        assert (r.status_code, r.json()["status"]) == (202, "ignored")
        assert stored(store) == []
        r = http.post("/webhook", content=BODY, headers=headers_for(BODY))
        assert (r.status_code, r.json()["status"]) == (202, "accepted")
        assert len(stored(store)) == 1


def test_the_server_shortens_the_gil_switch_interval_while_it_runs(store: Store) -> None:
    before = sys.getswitchinterval()
    assert before > app_module.SWITCH_INTERVAL_S  # Python's default, 5 ms
    with live_server(create_app(make_settings(), store)):
        assert sys.getswitchinterval() == app_module.SWITCH_INTERVAL_S
    assert sys.getswitchinterval() == before
