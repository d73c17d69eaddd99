"""Fixtures for the web tests: a real SQLite store, signed GitHub-shaped deliveries, and a
real uvicorn server on 127.0.0.1 in a thread.

The payloads in payloads/ follow GitHub's webhook schemas (`@octokit/openapi-webhooks`):
every field GitHub sends for these events is there; the names and numbers are invented.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
import uuid
import warnings
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from starlette.applications import Starlette

with warnings.catch_warnings():
    # Starlette 1.x prefers the httpx2 fork for its TestClient; httpx works and is what
    # landbot depends on, so its deprecation notice is not ours to act on.
    warnings.simplefilter("ignore", UserWarning)
    from starlette.testclient import TestClient

from landbot.config import Settings
from landbot.store import Store
from landbot.web.app import create_app
from landbot.web.signature import sign

SECRET = "correct horse battery staple"
PAYLOADS = Path(__file__).parent / "payloads"
WATCHED = "octo-org/widgets"  # the repository of every payload in payloads/


def payload_bytes(name: str) -> bytes:
    """A payload file's exact bytes (pretty-printed: the signature covers these bytes)."""
    return (PAYLOADS / name).read_bytes()


def payload(name: str) -> dict[str, Any]:
    data = json.loads(payload_bytes(name))
    assert isinstance(data, dict)
    return data


def compact(data: dict[str, Any]) -> bytes:
    return json.dumps(data, separators=(",", ":")).encode()


def headers_for(
    body: bytes,
    event: str = "pull_request",
    delivery: str | None = None,
    secret: str = SECRET,
) -> dict[str, str]:
    """The headers GitHub sends with `body`, signed with `secret`."""
    return {
        "Content-Type": "application/json",
        "User-Agent": "GitHub-Hookshot/6f2b1c4",
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery or str(uuid.uuid4()),
        "X-GitHub-Hook-ID": "512345678",
        "X-GitHub-Hook-Installation-Target-ID": "987654",
        "X-GitHub-Hook-Installation-Target-Type": "integration",
        "X-Hub-Signature-256": sign(secret.encode(), body),
    }


# The dashboard token of the web tests' apps, and the header the operator sends it in.
DASHBOARD_TOKEN = "dashboard-token-of-the-web-tests"
OPERATOR = {"Authorization": f"Bearer {DASHBOARD_TOKEN}"}


def make_settings(
    secret: str | None = SECRET,
    repos: list[str] | None = None,
    *,
    token: str | None = DASHBOARD_TOKEN,
    auth: str = "token",
) -> Settings:
    github: dict[str, Any] = {"webhook_secret": secret}
    web = {"auth": auth, "token": token}
    return Settings(github=github, repos=repos or [], web=web)  # type: ignore[arg-type]


def stored(store: Store) -> list[Any]:
    """Every delivery row in the store."""
    import sqlalchemy as sa

    from landbot.store.tables import deliveries

    with store.engine.connect() as conn:
        return list(conn.execute(sa.select(deliveries).order_by(deliveries.c.id)))


class Upload:
    """An ASGI `receive` that feeds `chunks` and counts what the app actually pulled."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self.chunks = iter(chunks)
        self.pulled = 0
        self.finished = False

    async def __call__(self) -> dict[str, Any]:
        chunk = next(self.chunks, None)
        if chunk is None:
            self.finished = True
            return {"type": "http.request", "body": b"", "more_body": False}
        self.pulled += len(chunk)
        return {"type": "http.request", "body": chunk, "more_body": True}


def call(app: Starlette, headers: dict[str, str], upload: Upload) -> tuple[int, dict[str, Any]]:
    """One POST /webhook straight into the ASGI app; (status, JSON body)."""
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/webhook",
        "raw_path": b"/webhook",
        "query_string": b"",
        "root_path": "",
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
        "client": ("127.0.0.1", 40000),
        "server": ("127.0.0.1", 8080),
    }
    asyncio.run(app(scope, upload, send))  # type: ignore[arg-type]
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return start["status"], json.loads(body)


@pytest.fixture
def store(sqlite_url: str) -> Iterator[Store]:
    s = Store.open(sqlite_url)
    yield s
    s.close()


@pytest.fixture
def client_for(store: Store) -> Callable[..., TestClient]:
    """A TestClient for an app built with the given settings (and the test's store)."""

    def build(settings: Settings | None = None, **kw: Any) -> TestClient:
        # The operator: a loopback peer that sends the dashboard token.
        app = create_app(settings or make_settings(), store, **kw)
        return TestClient(app, client=("127.0.0.1", 50000), headers=OPERATOR)

    return build


@pytest.fixture
def client(client_for: Callable[..., TestClient]) -> TestClient:
    return client_for()


@contextmanager
def live_server(app: Starlette) -> Iterator[tuple[str, int]]:
    """Serve `app` with uvicorn on 127.0.0.1 (an ephemeral port) in a thread."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.01)
    try:
        yield "127.0.0.1", port
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


@pytest.fixture
def server(store: Store) -> Iterator[tuple[str, int]]:
    with live_server(create_app(make_settings(), store)) as addr:
        yield addr


@pytest.fixture
def http(server: tuple[str, int]) -> Iterator[httpx.Client]:
    host, port = server
    with httpx.Client(base_url=f"http://{host}:{port}", timeout=30, headers=OPERATOR) as c:
        yield c
