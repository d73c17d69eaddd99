"""A hostile client on the proxy's unix socket cannot make the host spend without bound.

Each attack is first made on a naive server (the control: the stdlib's threading server or
the recording upstream, reached directly), where it works, then on the proxy, where it is
cut; the upstream records every request, so a refusal shows it saw nothing.
"""

from __future__ import annotations

import contextlib
import logging
import select
import socket
import socketserver
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from landbot.sandbox.proxy import MAX_REFUSALS_KEPT, ModelProxy, ProxyLimits

# ./scripts/test --fast leaves this module out: its tests start processes (landbot, git,
# the sandbox, servers) and take seconds each.
pytestmark = pytest.mark.slow

KEY = "sk-REAL-limits-key"


@dataclass
class Upstream:
    port: int
    seen: list[tuple[str, str, bytes]] = field(default_factory=list)
    gate: threading.Event = field(default_factory=threading.Event)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    state = Upstream(0)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            # Naive on purpose: int() of whatever Content-Length says, read(-1) included.
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            state.seen.append((self.command, self.path, body))
            self.send_response(200)
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(b"data: first\n\n")
            self.wfile.flush()
            if self.headers.get("X-Hold"):
                state.gate.wait(timeout=10)  # a stream that does not end
            self.wfile.write(b"data: last\n\n")

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    state.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield state
    finally:
        state.gate.set()
        server.shutdown()
        server.server_close()


def unix(path: Path, timeout: float = 5) -> socket.socket:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(str(path))  # blocking: waits for room in the listen queue
    s.settimeout(timeout)
    return s


def tcp(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=5)


def exchange(s: socket.socket, data: bytes) -> bytes:
    """Sends `data`, then reads until the other side closes."""
    with contextlib.suppress(OSError):
        s.sendall(data)
    got = b""
    with contextlib.suppress(OSError):
        while chunk := s.recv(65536):
            got += chunk
    s.close()
    return got


def head(extra: str = "", target: str = "/v1/responses", method: str = "POST") -> bytes:
    return f"{method} {target} HTTP/1.1\r\nHost: 127.0.0.1:18080\r\n{extra}\r\n".encode()


def status(reply: bytes) -> int:
    return int(reply.split(b" ", 2)[1]) if reply.startswith(b"HTTP/1.1 ") else 0


def test_held_connections_do_not_become_threads(upstream: Upstream) -> None:
    n = 500
    # Control: a server with a thread per connection (what the proxy was) grows by 500.
    path = Path(f"/tmp/landbot-naive-{threading.get_ident()}.sock")
    path.unlink(missing_ok=True)

    class Hold(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            with contextlib.suppress(OSError):
                self.request.recv(1)

    naive = socketserver.ThreadingUnixStreamServer(str(path), Hold)
    naive.daemon_threads = True
    naive.request_queue_size = 64
    threading.Thread(target=naive.serve_forever, args=(0.05,), daemon=True).start()
    before = threading.active_count()
    held = [unix(path) for _ in range(n)]
    for _ in range(200):  # until the accept loop has caught up (a count, not a time)
        if threading.active_count() - before >= n:
            break
        time.sleep(0.05)
    grown = threading.active_count() - before
    for s in held:
        s.close()
    naive.shutdown()
    naive.server_close()
    path.unlink(missing_ok=True)
    assert grown >= n

    limits = ProxyLimits(max_connections=16)
    with ModelProxy(upstream.url, KEY, limits=limits) as proxy:
        before = threading.active_count()
        held = [unix(proxy.socket_path) for _ in range(n)]
        for _ in range(200):  # until the accept loop has seen them all
            if proxy.busy >= n - 16:
                break
            time.sleep(0.05)
        during = threading.active_count() - before
        busy = [s for s in held if select.select([s], [], [], 0)[0] and s.recv(12)]
        assert all(s.recv(0) == b"" for s in busy)
        assert proxy.busy == n - 16 == len(busy)
        for s in held:
            s.close()
        # Control: once the job lets go, the proxy serves again.
        reply = b""
        for _ in range(50):  # the freed slots come back as their threads see the close
            reply = exchange(unix(proxy.socket_path), head("Content-Length: 2\r\n") + b"{}")
            if status(reply) == 200:
                break
    assert during <= 16
    assert status(reply) == 200 and b"data: last" in reply


def test_a_negative_content_length_is_refused_and_nothing_is_read(upstream: Upstream) -> None:
    # Control: the naive upstream reads a negative length as "until the end", unbounded.
    s = tcp(upstream.port)
    s.sendall(head("Content-Length: -1\r\n") + b"A" * 5000)
    s.shutdown(socket.SHUT_WR)
    exchange(s, b"")
    assert upstream.seen == [("POST", "/v1/responses", b"A" * 5000)]
    upstream.seen.clear()

    with ModelProxy(upstream.url, KEY) as proxy:
        s = unix(proxy.socket_path)
        request = head("Content-Length: -1\r\n")
        s.sendall(request)  # and nothing more: the answer comes without a body being read
        reply = s.recv(4096)
        s.close()
        received = proxy.received
    assert status(reply) == 400 and b"is not a length" in reply
    assert received == len(request) and upstream.seen == []


@pytest.mark.parametrize(
    ("extra", "why"),
    [
        ("Content-Length: +2\r\n", b"is not a length"),
        ("Content-Length: 0x2\r\n", b"is not a length"),
        ("Content-Length: 2, 2\r\n", b"is not a length"),
        ("Content-Length: 2\r\nContent-Length: 3\r\n", b"more than one Content-Length"),
        ("Content-Length: 2\r\nContent-Length: 2\r\n", b"more than one Content-Length"),
        ("Content-Length: 2\r\nTransfer-Encoding: chunked\r\n", b"together with"),
        ("Transfer-Encoding: chunked, identity\r\n", b"only Transfer-Encoding: chunked"),
        ("Transfer-Encoding: xchunked\r\n", b"only Transfer-Encoding: chunked"),
        ("Content-Length: 99999999999999999999\r\n", b"is not a length"),
        ("X-Folded: a\r\n b\r\n", b"malformed (or folded)"),
        ("X-Nul: a\x00b\r\n", b"malformed"),
        ("X-Cr: a\rInjected: 1\r\n", b"malformed"),
        ("Bad Name: 1\r\n", b"malformed"),
        ("Host: evil.example\r\n", b"more than one Host"),
    ],
)
def test_ambiguous_framing_is_refused(upstream: Upstream, extra: str, why: bytes) -> None:
    with ModelProxy(upstream.url, KEY) as proxy:
        reply = exchange(unix(proxy.socket_path), head(extra) + b"{}")
    assert status(reply) == 400 and why in reply, reply
    assert upstream.seen == []


@pytest.mark.parametrize("size_line", [b"-1", b"0x2", b"+2", b" 2", b"2 ", b"zz", b"1" * 17])
def test_malformed_chunk_sizes_are_refused(upstream: Upstream, size_line: bytes) -> None:
    body = size_line + b"\r\n{}\r\n0\r\n\r\n"
    with ModelProxy(upstream.url, KEY) as proxy:
        reply = exchange(unix(proxy.socket_path), head("Transfer-Encoding: chunked\r\n") + body)
    assert status(reply) == 400 and b"chunk size" in reply
    assert upstream.seen == []


def test_a_body_over_the_cap_is_refused_after_reading_at_most_the_cap(upstream: Upstream) -> None:
    cap = 256 * 1024
    limits = ProxyLimits(max_body=cap)
    with ModelProxy(upstream.url, KEY, limits=limits) as proxy:
        # Control: a chunked body under the cap is forwarded whole.
        chunks = b"".join(b"%x\r\n%s\r\n" % (1000, b"c" * 1000) for _ in range(200))
        ok = exchange(
            unix(proxy.socket_path), head("Transfer-Encoding: chunked\r\n") + chunks + b"0\r\n\r\n"
        )
        assert status(ok) == 200 and upstream.seen[0][2] == b"c" * 200_000
        upstream.seen.clear()
        # A declared gigabyte: refused before a byte of it is read.
        declared = head("Content-Length: 1073741824\r\n")
        before = proxy.received
        s = unix(proxy.socket_path)
        s.sendall(declared)
        reply = s.recv(4096)
        s.close()
        assert proxy.received - before == len(declared)
        assert status(reply) == 413 and b"exceeds" in reply
        # A gigabyte sent chunked: read up to the cap, then cut.
        start = proxy.received
        s = unix(proxy.socket_path)
        s.sendall(head("Transfer-Encoding: chunked\r\n"))
        piece = b"%x\r\n%s\r\n" % (65536, b"g" * 65536)
        sent = 0
        with contextlib.suppress(OSError):
            while sent < 1024**3:
                s.sendall(piece)
                sent += len(piece)
        reply = b""
        with contextlib.suppress(OSError):
            reply = s.recv(4096)
        s.close()
        read = proxy.received - start
    assert status(reply) == 413 and b"exceeds" in reply
    assert sent < 1024**3
    # The cap, the chunk that crossed it, and what a refusal drains: never the gigabyte.
    assert read <= cap + 2 * 65536 + 1024 + 64 * 1024
    assert upstream.seen == []


def test_a_slowloris_is_cut_at_the_idle_timeout(upstream: Upstream) -> None:
    request = head("Content-Length: 2\r\n") + b"{}"
    limits = ProxyLimits(idle_timeout=0.5)
    with ModelProxy(upstream.url, KEY, limits=limits) as proxy:
        # Control: the same request, sent at once, is served.
        assert status(exchange(unix(proxy.socket_path), request)) == 200
        upstream.seen.clear()
        s = unix(proxy.socket_path)
        sent = 0
        for byte in request:
            try:
                s.sendall(bytes([byte]))
            except OSError:
                break
            sent += 1
            # A byte every tenth of a second, until the proxy answers (or closes).
            if select.select([s], [], [], 0.1)[0]:
                break
        reply = b""
        with contextlib.suppress(OSError):
            s.settimeout(5)
            reply = s.recv(4096)
        s.close()
        reasons = [r.reason for r in proxy.refused]
    assert sent < len(request)  # the proxy did not wait for the whole head
    assert status(reply) == 408
    assert reasons == ["request line not complete in time"] or reasons == [
        "request header not complete in time"
    ]
    assert upstream.seen == []


def test_too_many_or_too_large_headers_are_refused(upstream: Upstream) -> None:
    limits = ProxyLimits(max_headers=20, max_header_bytes=4096)
    with ModelProxy(upstream.url, KEY, limits=limits) as proxy:
        few = "".join(f"X-H{i}: 1\r\n" for i in range(10))
        assert status(exchange(unix(proxy.socket_path), head(few + "Content-Length: 0\r\n"))) == 200
        many = "".join(f"X-H{i}: 1\r\n" for i in range(30))
        big = "X-Big: " + "b" * 5000 + "\r\n"
        long_line = head(target="/v1/responses?" + "a" * 10_000)
        replies = [
            exchange(unix(proxy.socket_path), head(many)),
            exchange(unix(proxy.socket_path), head(big)),
            exchange(unix(proxy.socket_path), long_line),
        ]
    assert [status(r) for r in replies] == [431, 431, 400]
    assert len(upstream.seen) == 1  # the control only


def test_a_connection_ends_at_its_total_duration(upstream: Upstream) -> None:
    held = head("Content-Length: 2\r\nX-Hold: 1\r\n") + b"{}"
    with ModelProxy(upstream.url, KEY, limits=ProxyLimits(max_duration=0.5)) as proxy:
        cut = exchange(unix(proxy.socket_path), held)
        reasons = [r.reason for r in proxy.refused]
    upstream.gate.set()
    assert b"data: first" in cut and b"data: last" not in cut
    assert reasons == ["the connection's total duration is over"]
    # Control: with time left, the same stream ends normally once the upstream goes on.
    upstream.gate.clear()
    with ModelProxy(upstream.url, KEY) as proxy:
        s = unix(proxy.socket_path)
        s.sendall(held)
        first = s.recv(4096)
        upstream.gate.set()
        rest = exchange(s, b"")
    assert b"data: first" in first + rest and b"data: last" in first + rest


@contextlib.contextmanager
def sink() -> Iterator[tuple[int, list[int]]]:
    """A registry that swallows whatever it is sent, counting it."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    got: list[int] = [0]

    def serve() -> None:
        with contextlib.suppress(OSError):
            conn, _ = srv.accept()
            with conn:
                while data := conn.recv(65536):
                    got[0] += len(data)

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    try:
        yield srv.getsockname()[1], got
    finally:
        srv.close()
        t.join(timeout=5)


@pytest.mark.parametrize(("cap", "send", "whole"), [(10**6, 10**5, True), (10**5, 10**6, False)])
def test_a_tunnel_stops_at_its_byte_cap(
    upstream: Upstream, cap: int, send: int, whole: bool
) -> None:
    with sink() as (port, got):
        limits = ProxyLimits(max_tunnel_bytes=cap)
        allowed = [f"127.0.0.1:{port}"]
        with ModelProxy(upstream.url, KEY, allowed_hosts=allowed, limits=limits) as proxy:
            s = unix(proxy.socket_path)
            s.sendall(f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n".encode())
            assert s.recv(4096).startswith(b"HTTP/1.1 200")
            with contextlib.suppress(OSError):
                for _ in range(send // 10_000):
                    s.sendall(b"t" * 10_000)
            s.shutdown(socket.SHUT_WR)
            exchange(s, b"")
    # The control passes whole; past the cap, the registry gets at most the cap.
    assert (got[0] == send) if whole else (got[0] <= cap)


def test_refusals_are_bounded_and_printable(
    upstream: Upstream, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="landbot.sandbox.proxy")
    with ModelProxy(upstream.url, KEY) as proxy:
        for _ in range(MAX_REFUSALS_KEPT + 50):
            exchange(unix(proxy.socket_path), head(target="/v1/files\x1b[2J\x07"))
        kept, total = list(proxy.refused), proxy.refusals
    assert total == MAX_REFUSALS_KEPT + 50 and len(kept) == MAX_REFUSALS_KEPT
    assert all("\x1b" not in r.target and "\\x1b[2J" in r.target for r in kept)
    assert not any("\x1b" in r.getMessage() for r in caplog.records)
    assert len(caplog.records) == MAX_REFUSALS_KEPT + 1  # and one line saying so
    assert upstream.seen == []


@pytest.mark.parametrize("method", ["TRACE", "FOO", "get", "HEAD", "OPTIONS"])
def test_other_methods_get_405(upstream: Upstream, method: str) -> None:
    with ModelProxy(upstream.url, KEY) as proxy:
        reply = exchange(unix(proxy.socket_path), head(method=method, target="/v1/models"))
    assert status(reply) == 405 and b"Allow: GET, POST" in reply
    assert upstream.seen == []
