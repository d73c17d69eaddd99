"""The model proxy, with a stdlib model server on the host's loopback.

Host side: requests sent straight to the proxy's unix socket. End to end: a python3 client
inside the real sandbox talking to LANDBOT_MODEL_URL, which only the relay and the proxy
connect to the model.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import logging
import os
import socket
import stat
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from landbot.sandbox.proxy import KEY_PLACEHOLDER, RELAY_PORT, ModelProxy

REAL_KEY = "sk-REAL-PROVIDER-KEY-123"
AUTH = {"authorization", "x-api-key", "api-key"}


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    all_headers: list[tuple[str, str]]  # every header line, duplicates included
    body: bytes


@dataclass
class ModelServer:
    url: str
    port: int
    seen: list[Seen] = field(default_factory=list)
    gate: threading.Event = field(default_factory=threading.Event)
    gate_waited: list[bool] = field(default_factory=list)


@pytest.fixture
def model() -> Iterator[ModelServer]:
    state = ModelServer(url="", port=0)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            pass

        def _record(self) -> None:
            n = int(self.headers.get("Content-Length") or 0)
            state.seen.append(
                Seen(
                    self.command,
                    self.path,
                    dict(self.headers.items()),
                    list(self.headers.items()),
                    self.rfile.read(n),
                )
            )

        def do_TRACE(self) -> None:
            # What an endpoint that follows the HTTP spec does: echo the request, key and all.
            self._record()
            echo = (self.requestline + "\r\n" + str(self.headers)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "message/http")
            self.send_header("Content-Length", str(len(echo)))
            self.end_headers()
            self.wfile.write(echo)

        def do_GET(self) -> None:
            self._record()
            body = json.dumps({"ok": True, "path": self.path}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:
            self._record()
            if self.headers.get("X-Echo"):
                # An endpoint that echoes the request: the key cut in two writes.
                echo = str(self.headers).encode()
                cut = echo.find(b"REAL") + 2
                self.send_response(200)
                self.send_header("X-Seen-Auth", self.headers.get("Authorization", ""))
                self.send_header("Content-Length", str(len(echo)))
                self.end_headers()
                self.wfile.write(echo[:cut])
                self.wfile.flush()
                self.wfile.write(echo[cut:])
                return
            # Server-sent events in lockstep: the second event is sent only once the test
            # says the client has the first, so a proxy that buffered would stall here.
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(b'event: response.created\ndata: {"n": 1}\n\n')
            self.wfile.flush()
            if self.headers.get("X-Lockstep"):
                state.gate_waited.append(state.gate.wait(timeout=5))
            self.wfile.write(b'event: response.completed\ndata: {"n": 2}\n\n')
            self.wfile.flush()
            self.close_connection = True

    # Every other method answers like GET, so a control shows what a forwarded one reaches.
    for method in ("PUT", "PATCH", "DELETE", "OPTIONS", "PROPFIND"):
        setattr(Handler, f"do_{method}", Handler.do_GET)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    state.port = server.server_address[1]
    state.url = f"http://127.0.0.1:{state.port}/v1"
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield state
    finally:
        state.gate.set()
        server.shutdown()
        server.server_close()


class UnixHTTPConnection(http.client.HTTPConnection):
    """What the relay does inside the sandbox: HTTP to the proxy's unix socket."""

    def __init__(self, path: Path, timeout: float = 5) -> None:
        super().__init__("127.0.0.1", RELAY_PORT, timeout=timeout)
        self._path = str(path)

    def connect(self) -> None:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self._path)
        self.sock = s


def request(
    proxy: ModelProxy,
    method: str,
    target: str,
    headers: dict[str, str] | None = None,
    body: bytes | None = None,
) -> tuple[int, bytes]:
    conn = UnixHTTPConnection(proxy.socket_path)
    try:
        conn.putrequest(method, target, skip_host="Host" in (headers or {}))
        for name, value in (headers or {}).items():
            conn.putheader(name, value)
        if body is not None:
            conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body)
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def test_the_model_sees_the_real_key_and_never_the_placeholder(model: ModelServer) -> None:
    with ModelProxy(model.url, REAL_KEY) as proxy:
        styles = [
            {"Authorization": f"Bearer {KEY_PLACEHOLDER}"},  # OpenAI-style clients
            {"x-api-key": KEY_PLACEHOLDER, "anthropic-version": "2023-06-01"},  # Anthropic
            {},  # no credentials at all
        ]
        for headers in styles:
            status, _ = request(proxy, "GET", "/v1/models", headers)
            assert status == 200
        assert proxy.forwarded == 3
    assert [s.headers.get("Authorization") for s in model.seen] == [
        f"Bearer {REAL_KEY}",
        None,
        f"Bearer {REAL_KEY}",
    ]
    assert model.seen[1].headers.get("x-api-key") == REAL_KEY
    assert model.seen[1].headers.get("anthropic-version") == "2023-06-01"
    for seen in model.seen:
        assert seen.headers["Host"] == f"127.0.0.1:{model.port}"
        assert KEY_PLACEHOLDER not in json.dumps(seen.all_headers)
        credentials = [n for n, _ in seen.all_headers if n.lower() in AUTH]
        assert len(credentials) == 1  # the real key, once


def test_a_request_body_reaches_the_model_intact(model: ModelServer) -> None:
    payload = json.dumps({"model": "scripted", "input": "x" * 100_000}).encode()
    with ModelProxy(model.url, REAL_KEY) as proxy:
        status, body = request(
            proxy, "POST", "/v1/responses", {"Content-Type": "application/json"}, payload
        )
    assert status == 200 and b'"n": 2' in body
    assert model.seen[0].body == payload


def test_other_destinations_are_refused_and_logged(
    model: ModelServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="landbot.sandbox.proxy")
    with ModelProxy(model.url, REAL_KEY) as proxy:
        # Controls: the proxy's own address and the model's absolute URL pass.
        assert request(proxy, "GET", "/v1/models")[0] == 200
        assert request(proxy, "GET", f"http://127.0.0.1:{model.port}/v1/models")[0] == 200
        attempts = [
            ("GET", "/v1/models", {"Host": "evil.example"}),
            ("GET", "http://evil.example/v1/models", {}),
            ("GET", f"http://127.0.0.1:{model.port + 1}/v1/models", {}),
            ("CONNECT", "evil.example:443", {"Host": "evil.example:443"}),
            ("CONNECT", f"127.0.0.1:{model.port}", {"Host": f"127.0.0.1:{model.port}"}),
            ("GET", "/admin", {}),
        ]
        for method, target, headers in attempts:
            status, body = request(proxy, method, target, headers)
            assert status == 403, (method, target)
            assert b"refused" in body
        refused = [(r.method, r.target) for r in proxy.refused]
    assert refused == [(m, t) for m, t, _ in attempts]
    assert len(model.seen) == 2  # only the controls reached the model
    assert sum("proxy refused" in r.getMessage() for r in caplog.records) == len(attempts)


def test_streamed_events_pass_as_they_come(model: ModelServer) -> None:
    with ModelProxy(model.url, REAL_KEY) as proxy:
        conn = UnixHTTPConnection(proxy.socket_path, timeout=3)
        conn.request("POST", "/v1/responses", body=b"{}", headers={"X-Lockstep": "1"})
        resp = conn.getresponse()
        assert resp.status == 200
        assert resp.getheader("Content-Type") == "text/event-stream"
        first = b""
        while b"\n\n" not in first:
            chunk = resp.read1(1024)  # times out (test fails) if the proxy buffers
            assert chunk, "stream ended before the first event"
            first += chunk
        assert b'"n": 1' in first and b'"n": 2' not in first
        model.gate.set()
        rest = resp.read()
        conn.close()
    assert b"response.completed" in rest
    assert model.gate_waited == [True]  # the model did wait for the client: real streaming


def test_an_unreachable_model_is_a_502(model: ModelServer) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead_port = s.getsockname()[1]
    with ModelProxy(f"http://127.0.0.1:{dead_port}/v1", REAL_KEY) as proxy:
        status, body = request(proxy, "GET", "/v1/models")
    assert status == 502 and b"unreachable" in body


@contextlib.contextmanager
def echo_server() -> Iterator[int]:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    srv.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except OSError:
                continue
            with conn:
                conn.sendall(b"ECHO:" + conn.recv(100))

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    try:
        yield srv.getsockname()[1]
    finally:
        stop.set()
        t.join()
        srv.close()


def _connect_through(socket_path: Path, target: str) -> bytes:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    s.connect(str(socket_path))
    s.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
    reply = s.recv(4096)
    if reply.startswith(b"HTTP/1.1 200"):
        s.sendall(b"ping")
        reply += s.recv(100)
    s.close()
    return reply


def test_connect_tunnels_only_to_allowed_hosts(model: ModelServer) -> None:
    with echo_server() as port:
        with ModelProxy(model.url, REAL_KEY, allowed_hosts=[f"127.0.0.1:{port}"]) as proxy:
            ok = _connect_through(proxy.socket_path, f"127.0.0.1:{port}")
            by_name = _connect_through(proxy.socket_path, f"localhost:{port}")
            other_port = _connect_through(proxy.socket_path, f"127.0.0.1:{model.port}")
            assert proxy.tunnels == 1
        assert ok.startswith(b"HTTP/1.1 200") and ok.endswith(b"ECHO:ping")
        assert by_name.startswith(b"HTTP/1.1 403")
        assert other_port.startswith(b"HTTP/1.1 403")


class FakeDNS:
    """A resolver the job might control: answers from a script, counting the questions."""

    def __init__(self, *answers: list[str]) -> None:
        self.answers = list(answers)
        self.asked: list[str] = []

    def __call__(self, host: str, port: int) -> list[tuple[int, Any]]:
        self.asked.append(host)
        addresses = self.answers[min(len(self.asked), len(self.answers)) - 1]
        return [(socket.AF_INET, (a, port)) for a in addresses]


def test_a_listed_name_that_resolves_inside_the_host_is_refused(model: ModelServer) -> None:
    with echo_server() as port:
        name = f"registry.example:{port}"
        # Control: once the operator lists the very address, the same tunnel works.
        dns = FakeDNS(["127.0.0.1"])
        with ModelProxy(
            model.url, REAL_KEY, allowed_hosts=[name, f"127.0.0.1:{port}"], resolve=dns
        ) as proxy:
            ok = _connect_through(proxy.socket_path, name)
        assert ok.endswith(b"ECHO:ping") and dns.asked == ["registry.example"]
        for address, kind in [
            ("127.0.0.1", b"loopback"),
            ("169.254.169.254", b"link-local"),  # the cloud metadata service
            ("10.1.2.3", b"private"),
            ("100.64.0.1", b"private"),  # carrier-grade NAT
            ("0.0.0.0", b"reserved"),
        ]:
            dns = FakeDNS([address])
            with ModelProxy(model.url, REAL_KEY, allowed_hosts=[name], resolve=dns) as proxy:
                refused = _connect_through(proxy.socket_path, name)
                assert proxy.tunnels == 0 and dns.asked == ["registry.example"]
            assert refused.startswith(b"HTTP/1.1 403") and kind in refused, refused


def test_the_tunnel_connects_to_the_address_it_checked(model: ModelServer) -> None:
    with echo_server() as port:
        name = f"registry.example:{port}"
        # DNS rebinding: a private address among the answers, then a second answer that
        # would point elsewhere. Only the checked, listed address of the first is used.
        dns = FakeDNS(["10.9.9.9", "127.0.0.1"], ["192.168.1.1"])
        with ModelProxy(
            model.url, REAL_KEY, allowed_hosts=[name, f"127.0.0.1:{port}"], resolve=dns
        ) as proxy:
            ok = _connect_through(proxy.socket_path, name)
            assert proxy.tunnels == 1
        assert ok.endswith(b"ECHO:ping")
        assert dns.asked == ["registry.example"]  # resolved once


def test_the_socket_belongs_to_the_sandbox_uid_alone(model: ModelServer) -> None:
    with ModelProxy(model.url, REAL_KEY) as proxy:
        st = proxy.socket_path.stat()
        folder = proxy.socket_path.parent.stat()
        assert stat.S_ISSOCK(st.st_mode)
        assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (65534, 0o600)
        assert stat.S_IMODE(folder.st_mode) == 0o711
        assert proxy.endpoint.env == {
            "LANDBOT_MODEL_URL": f"http://127.0.0.1:{RELAY_PORT}/v1",
            "LANDBOT_MODEL_KEY_PLACEHOLDER": KEY_PLACEHOLDER,
        }
        path = proxy.socket_path
    assert not path.exists() and not path.parent.exists()


# --- end to end: a client inside the sandbox ----------------------------------------------

CLIENT = r"""
import json, os, socket, sys, urllib.request, urllib.error
url = os.environ["LANDBOT_MODEL_URL"]
key = os.environ["LANDBOT_MODEL_KEY_PLACEHOLDER"]
req = urllib.request.Request(url + "/responses", data=b'{"stream": true}',
                             headers={"Authorization": "Bearer " + key})
with urllib.request.urlopen(req, timeout=10) as resp:
    print("EVENTS", resp.read().decode().count("data:"))
try:
    other = urllib.request.Request(url + "/models", headers={"Host": "evil.example"})
    urllib.request.urlopen(other)
except urllib.error.HTTPError as e:
    print("OTHER-HOST", e.code)
try:
    socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=3)
    print("DIRECT connected")
except OSError as e:
    print("DIRECT", type(e).__name__)
"""


def test_a_sandboxed_client_reaches_the_model_only_through_the_proxy(
    box: Any, h: Any, model: ModelServer
) -> None:
    argv = ["python3", "-c", CLIENT, str(model.port)]
    # Control: unconfined, the client reaches the model server directly.
    control = h.unconfined(
        argv,
        box.work,
        env={
            "PATH": "/usr/bin:/bin",
            "LANDBOT_MODEL_URL": model.url,
            "LANDBOT_MODEL_KEY_PLACEHOLDER": "x",
        },
    )
    assert "DIRECT connected" in control.stdout
    model.seen.clear()

    with ModelProxy(model.url, REAL_KEY) as proxy:
        result = h.confined(argv, box.work, proxy=proxy.endpoint)
        refused = list(proxy.refused)
    out = h.text(result.stdout)
    assert result.returncode == 0, h.text(result.stderr)
    assert "EVENTS 2" in out
    assert "OTHER-HOST 403" in out and len(refused) == 1
    assert "DIRECT ConnectionRefusedError" in out
    assert len(model.seen) == 1
    assert model.seen[0].headers["Authorization"] == f"Bearer {REAL_KEY}"
    assert KEY_PLACEHOLDER not in json.dumps(model.seen[0].all_headers)
    assert REAL_KEY not in out


TUNNEL_CLIENT = r"""
import os, socket, sys
proxy = os.environ["HTTPS_PROXY"].rsplit(":", 1)
for target in sys.argv[1:]:
    s = socket.create_connection((proxy[0].split("//")[1], int(proxy[1])), timeout=5)
    s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (target, target)).encode())
    reply = s.recv(4096)
    if reply.startswith(b"HTTP/1.1 200"):
        s.sendall(b"ping")
        reply = s.recv(100)
    print(target, reply.split(b"\r\n")[0].decode())
"""


def test_a_sandboxed_client_tunnels_to_an_allowed_registry_only(
    box: Any, h: Any, model: ModelServer
) -> None:
    with echo_server() as port:
        allowed, other = f"127.0.0.1:{port}", f"127.0.0.1:{model.port}"
        with ModelProxy(model.url, REAL_KEY, allowed_hosts=[allowed]) as proxy:
            result = h.confined(
                ["python3", "-c", TUNNEL_CLIENT, allowed, other], box.work, proxy=proxy.endpoint
            )
    out = h.text(result.stdout)
    assert result.returncode == 0, h.text(result.stderr)
    assert f"{allowed} ECHO:ping" in out
    assert f"{other} HTTP/1.1 403 Forbidden" in out


def test_the_relay_does_not_hold_the_jobs_output_open(box: Any, h: Any, model: ModelServer) -> None:
    # The command exits at once; if the relay kept stdout open, capture would hang until
    # the timeout.
    with ModelProxy(model.url, REAL_KEY) as proxy:
        result = h.confined(["echo", "done"], box.work, proxy=proxy.endpoint, timeout=10)
    assert not result.timed_out and h.text(result.stdout) == "done\n"
    assert os.environ.get("LANDBOT_MODEL_URL") is None  # nothing leaked into the host either


# --- only the model's own API gets the key ------------------------------------------------


def direct(model: ModelServer, method: str, target: str, headers: dict[str, str]) -> bytes:
    """The control: the same request straight to the upstream, as a proxy would send it."""
    conn = http.client.HTTPConnection("127.0.0.1", model.port, timeout=5)
    try:
        conn.request(method, target, headers=headers)
        resp = conn.getresponse()
        assert resp.status == 200, (method, target)
        return resp.read()
    finally:
        conn.close()


ATTACKS = [
    ("GET", "/v1/files"),
    ("POST", "/v1/files"),
    ("DELETE", "/v1/files/file-abc"),
    ("GET", "/v1/files/file-abc/content"),
    ("POST", "/v1/uploads"),
    ("POST", "/v1/fine_tuning/jobs"),
    ("GET", "/v1/organization/api_keys"),
    ("POST", "/v1/organization/invites"),
    ("GET", "/v1/organizations/org-1/api_keys"),  # Anthropic's admin API
    ("POST", "/v1/batches"),
    ("POST", "/v1/messages/batches"),
    ("POST", "/v1/vector_stores"),
    ("POST", "/v1/assistants"),
    ("GET", "/v1/responses/resp_123"),  # someone else's stored conversation
    ("DELETE", "/v1/responses/resp_123"),
    ("GET", "/v1/responses"),
    ("PUT", "/v1/responses"),
    ("PATCH", "/v1/chat/completions"),
    ("OPTIONS", "/v1/models"),
    ("PROPFIND", "/v1/models"),
    ("GET", "/v1/models/gpt-x/../../files"),
    ("DELETE", "/v1/models/ft:gpt-x:acme"),  # deletes a fine-tuned model
]


def test_only_the_model_calls_get_the_key(model: ModelServer) -> None:
    with ModelProxy(model.url, REAL_KEY) as proxy:
        # Controls: each model call an agent makes passes, with the key.
        for method, target in [
            ("POST", "/v1/responses"),
            ("POST", "/v1/chat/completions"),
            ("POST", "/v1/messages?beta=true"),
            ("POST", "/v1/messages/count_tokens?beta=true"),
            ("GET", "/v1/models"),
            ("GET", "/v1/models?client_version=0.171.0"),
        ]:
            status, _ = request(proxy, method, target, body=b"{}" if method == "POST" else None)
            assert status == 200, target
        assert [s.path for s in model.seen][-2:] == [
            "/v1/models",
            "/v1/models?client_version=0.171.0",
        ]
        assert all(s.headers["Authorization"] == f"Bearer {REAL_KEY}" for s in model.seen)
        model.seen.clear()
        for method, target in ATTACKS:
            # Control: the upstream answers this request when it is reached.
            direct(model, method, target, {"Authorization": "Bearer x"})
            assert len(model.seen) == 1 and model.seen[0].method == method
            model.seen.clear()
            status, body = request(proxy, method, target, {"Authorization": "Bearer x"})
            assert status in (403, 405), (method, target)
            assert body.startswith(b"landbot proxy: refused: ") and body.count(b"\n") == 1
            assert model.seen == [], (method, target)  # the upstream saw nothing
        assert len(proxy.refused) == len(ATTACKS)


def test_trace_would_echo_the_key_and_is_refused(model: ModelServer) -> None:
    # Control: reached, the upstream echoes the request, the key with it.
    echo = direct(model, "TRACE", "/v1/models", {"Authorization": f"Bearer {REAL_KEY}"})
    assert REAL_KEY.encode() in echo
    model.seen.clear()
    with ModelProxy(model.url, REAL_KEY) as proxy:
        status, body = request(proxy, "TRACE", "/v1/models")
        refused = [r.method for r in proxy.refused]
    assert status == 405 and b"TRACE" in body and REAL_KEY.encode() not in body
    assert refused == ["TRACE"] and model.seen == []


@pytest.mark.parametrize(
    "target",
    [
        "/v1/%66iles",
        "/v1/%46ILES",
        "/v1/responses/../files",
        "/v1/responses/%2e%2e/files",
        "/v1/responses%2f..%2ffiles",
        "/v1/%252e%252e/files",  # encoded twice
        "/v1/responses/..;/files",
        "/v1//files",
        "/v1/files/",
        "/v1/files;jsessionid=1",
        "/V1/FILES",
        "/v1/responses\\..\\files",
        "/v1/responses%00",
        "/v1/responses?purpose=fine-tune&x=1",  # a query no model call uses
        "/v1/responses#frag",
    ],
)
def test_path_tricks_do_not_reach_other_endpoints(model: ModelServer, target: str) -> None:
    with ModelProxy(model.url, REAL_KEY) as proxy:
        status, body = request(proxy, "POST", target, body=b"{}")
        assert status in (403, 405) and b"refused" in body, target
        assert len(proxy.refused) == 1
    assert model.seen == []


@pytest.mark.parametrize(
    "target",
    ["/v1//responses", "/v1/responses/", "/v1/Responses", "/v1/respons%65s", "/v1/responses;x"],
)
def test_spellings_of_a_model_call_reach_it_as_one_path(model: ModelServer, target: str) -> None:
    # The control of the test above: the same tricks on an allowed call are forwarded, and
    # the upstream sees only the canonical path, never the spelling that was matched.
    with ModelProxy(model.url, REAL_KEY) as proxy:
        status, _ = request(proxy, "POST", target, body=b"{}")
    assert status == 200
    assert [s.path for s in model.seen] == ["/v1/responses"]


def test_an_upstream_that_echoes_the_key_gets_it_scrubbed(model: ModelServer) -> None:
    # Control: straight to the upstream, the echo carries the key (in the body and header).
    conn = http.client.HTTPConnection("127.0.0.1", model.port, timeout=5)
    conn.request("POST", "/v1/responses", b"{}", {"X-Echo": "1", "Authorization": REAL_KEY})
    control = conn.getresponse()
    assert REAL_KEY.encode() in control.read() and control.getheader("X-Seen-Auth") == REAL_KEY
    conn.close()
    with ModelProxy(model.url, REAL_KEY) as proxy:
        c = UnixHTTPConnection(proxy.socket_path)
        c.request("POST", "/v1/responses", b"{}", {"X-Echo": "1"})
        resp = c.getresponse()
        body, seen_auth = resp.read(), resp.getheader("X-Seen-Auth") or ""
        c.close()
    assert model.seen[-1].headers["Authorization"] == f"Bearer {REAL_KEY}"  # it was sent
    assert REAL_KEY.encode() not in body and REAL_KEY not in seen_auth
    assert f"Bearer {KEY_PLACEHOLDER}".encode() in body and seen_auth.endswith(KEY_PLACEHOLDER)


def test_one_provider_api_narrows_the_calls(model: ModelServer) -> None:
    with ModelProxy(model.url, REAL_KEY, api="anthropic") as proxy:
        assert request(proxy, "POST", "/v1/messages?beta=true", body=b"{}")[0] == 200
        assert request(proxy, "POST", "/v1/responses", body=b"{}")[0] == 403
        assert request(proxy, "POST", "/v1/chat/completions", body=b"{}")[0] == 403
    assert [s.path for s in model.seen] == ["/v1/messages?beta=true"]
