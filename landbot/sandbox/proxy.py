"""The model proxy: the sandbox's only way out.

A host-side HTTP forwarder on a unix socket in a per-job folder. The socket is bound into
the sandbox and re-exposed there on 127.0.0.1:PORT (relay.py), so the job reaches
`LANDBOT_MODEL_URL=http://127.0.0.1:PORT/<model path>` and nothing else. The proxy forwards
only the model calls an agent makes (proxy_policy.ENDPOINTS) to `[fixer] model_url`,
replacing whatever credentials the job sent with the real provider key (the key never
enters the sandbox; the job holds a placeholder, and the key is scrubbed from what comes
back), and streams responses (server-sent events) through as they arrive. With
`[sandbox] allowed_hosts` it also tunnels HTTPS CONNECT to those hosts only (package
registries), to the address it resolved and checked once. Anything else gets a 403 (405
for a method, 400 for a malformed request) with one line, and a log line.

Everything the job sends is hostile input to a process on the host, so it is bounded: a
fixed number of connections (the rest get a 503 at once, so threads stay bounded), a
deadline for each request head, an idle timeout, a total duration per connection, caps on
the head, the body and each tunnel direction, and a bounded list of refusals.

    with ModelProxy.from_settings(settings) as proxy:
        run_sandboxed(argv, workdir, ..., proxy=proxy.endpoint)
"""

from __future__ import annotations

import contextlib
import http.client
import io
import logging
import os
import re
import select
import shutil
import socket
import socketserver
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol

from landbot import logs
from landbot.errors import LandbotError
from landbot.sandbox.proxy_policy import (
    MODEL_APIS,
    KeyScrubber,
    ModelApi,
    ModelTarget,
    address_refusal,
    parse_chunk_size,
    parse_content_length,
    parse_model_url,
    printable,
    response_headers,
    route,
    upstream_headers,
)
from landbot.sandbox.runner import DEFAULT_GID, DEFAULT_UID, ProxyEndpoint

if TYPE_CHECKING:
    from landbot.config import Settings

log = logging.getLogger("landbot.sandbox.proxy")

RELAY_PORT = 18080  # on the sandbox's own loopback; any free port there would do
KEY_PLACEHOLDER = "landbot-placeholder-key"  # what the job may send; replaced by the proxy
UPSTREAM_CONNECT_TIMEOUT = 30.0
UPSTREAM_READ_TIMEOUT = 600.0  # a model may think for minutes between streamed events
MAX_REFUSALS_KEPT = 100  # a job that sends a million refused requests costs no memory
MAX_CHUNK_LINE = 1024
MAX_TRAILERS = 32
LINGER_BYTES = 64 * 1024  # read and dropped after a refusal, at most
LINGER_SECONDS = 0.5
_TOKEN = re.compile(rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+")

# Kept for callers that read it; the cap in force is ProxyLimits.max_body.
MAX_REQUEST_BODY = 8 * 1024 * 1024

Resolver = Callable[[str, int], Sequence[tuple[int, Any]]]  # -> (family, sockaddr) pairs


@dataclass(frozen=True)
class ProxyLimits:
    """What one job may spend of the proxy (the host process)."""

    max_connections: int = 16  # at once; a connection beyond gets a 503 at once
    idle_timeout: float = 30.0  # a request head must be complete within this; any gap too
    max_duration: float = 15 * 60.0  # one connection (or tunnel), start to end
    max_request_line: int = 8 * 1024
    max_header_bytes: int = 64 * 1024
    max_headers: int = 100
    # Codex sends the whole conversation each turn: 100 kB in the e2e test, a few MB at
    # the end of a long session; 8 MiB leaves room for that and little else.
    max_body: int = MAX_REQUEST_BODY
    max_tunnel_bytes: int = 1024**3  # per direction: a registry download, not a disk


class _Secret(Protocol):
    def get_secret_value(self) -> str: ...


@dataclass(frozen=True)
class Refusal:
    method: str
    target: str
    host: str | None
    reason: str
    at: float


class _Cut(Exception):
    """The client broke a limit mid-request: answer `status` (if any) and close."""

    def __init__(self, status: int | None, reason: str) -> None:
        super().__init__(reason)
        self.status, self.reason = status, reason


class _Reader:
    """Reads the client's socket under deadlines (a buffered file would let a slowloris
    keep one readline going forever, a byte at a time), counting every byte."""

    def __init__(self, sock: socket.socket, proxy: ModelProxy) -> None:
        self.sock, self.proxy = sock, proxy
        self.buf = bytearray()

    def _fill(self, want: int, deadline: float, what: str) -> bool:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise _Cut(408, f"{what} not complete in time")
        self.sock.settimeout(remaining)
        try:
            data = self.sock.recv(max(1, min(65536, want)))
        except TimeoutError:
            raise _Cut(408, f"{what} not complete in time") from None
        self.proxy._count_received(len(data))
        self.buf += data
        return bool(data)

    def readline(self, limit: int, deadline: float, what: str) -> bytes:
        """One line with its end; b"" at a clean end of stream; _Cut past `limit`."""
        while True:
            end = self.buf.find(b"\n", 0, limit)
            if end >= 0:
                line = bytes(self.buf[: end + 1])
                del self.buf[: end + 1]
                return line
            if len(self.buf) >= limit:
                raise _Cut(431 if "header" in what else 400, f"{what} is too long")
            if not self._fill(limit - len(self.buf), deadline, what):
                if self.buf:
                    raise _Cut(400, f"{what} ended early")
                return b""

    def read(self, n: int, deadline: Callable[[], float], what: str) -> bytes:
        while len(self.buf) < n:
            if not self._fill(n - len(self.buf), deadline(), what):
                raise _Cut(400, f"{what} ended early")
        data = bytes(self.buf[:n])
        del self.buf[:n]
        return data


class _Server(socketserver.UnixStreamServer):
    """One thread per connection, at most `max_connections` of them (ThreadingMixIn
    would start one for every connection a job opens)."""

    request_queue_size = 64

    def __init__(self, path: str, proxy: ModelProxy) -> None:
        self.proxy = proxy
        self.slots = threading.BoundedSemaphore(proxy.limits.max_connections)
        self.open: set[socket.socket] = set()
        self.lock = threading.Lock()
        # The job's log fields (its drop, PR, job id): each connection's thread logs with them.
        self.log_context = dict(logs.context())
        super().__init__(path, _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self.slots.acquire(blocking=False):
            self.proxy._busy(request)
            self.shutdown_request(request)
            return
        with self.lock:
            self.open.add(request)
        thread = threading.Thread(
            target=self._serve_one, args=(request, client_address), daemon=True
        )
        thread.start()

    def _serve_one(self, request: Any, client_address: Any) -> None:
        try:
            with logs.bound(**self.log_context):
                self.finish_request(request, client_address)
        except Exception:
            log.debug("proxy connection failed", exc_info=True)
        finally:
            with self.lock:
                self.open.discard(request)
            self.shutdown_request(request)
            self.slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        log.debug("proxy connection failed", exc_info=True)

    def close_open(self) -> None:
        """Ends the connections still served, so their threads end with the proxy."""
        with self.lock:
            for sock in list(self.open):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def setup(self) -> None:
        super().setup()
        self.proxy = self.server.proxy
        self.limits = self.proxy.limits
        self.deadline = time.monotonic() + self.limits.max_duration
        self.reader = _Reader(self.connection, self.proxy)
        self.command, self.path, self.request_version = "", "", "HTTP/1.1"
        self.requestline = ""

    # BaseHTTPRequestHandler assumes a TCP peer address; a unix socket has none.
    def address_string(self) -> str:
        return "sandbox"

    def log_message(self, format: str, *args: object) -> None:
        log.debug("proxy: " + format, *args)

    def _write_timeout(self) -> None:
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise _Cut(None, "the connection's total duration is over")
        self.connection.settimeout(min(self.limits.idle_timeout, remaining))

    def _answer(self, code: int, text: str, *, allow: str | None = None) -> None:
        body = (text + "\n").encode()
        self._write_timeout()
        self.send_response_only(code)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        if allow is not None:
            self.send_header("Allow", allow)
        if self.close_connection:
            self.send_header("Connection", "close")
        # One write, head and body together: a client reading once gets the reason too.
        buffered: list[bytes] = getattr(self, "_headers_buffer")  # noqa: B009
        buffered.append(b"\r\n" + body)
        self.flush_headers()

    def _refuse(self, status: int, reason: str) -> None:
        self.proxy._refuse(self.command, self.path, self.headers_host(), reason)
        self.close_connection = True
        allow = "GET, POST" if status == 405 else None
        with contextlib.suppress(OSError, _Cut):
            self._answer(status, f"landbot proxy: refused: {reason}", allow=allow)
            self._linger()

    def _linger(self) -> None:
        """Lets a client still sending its body finish, so it reads the refusal instead of
        a broken pipe; a little of it, briefly, discarded."""
        self.connection.shutdown(socket.SHUT_WR)
        end = min(time.monotonic() + LINGER_SECONDS, self.deadline)
        left = LINGER_BYTES
        while left > 0 and (remaining := end - time.monotonic()) > 0:
            self.connection.settimeout(remaining)
            try:
                data = self.connection.recv(min(65536, left))
            except OSError:
                return
            if not data:
                return
            self.proxy._count_received(len(data))
            left -= len(data)

    def headers_host(self) -> str | None:
        headers = getattr(self, "headers", None)
        return headers.get("Host") if headers is not None else None

    def handle_one_request(self) -> None:
        self.close_connection = True
        self.command, self.path = "", ""
        self.headers = http.client.HTTPMessage()
        try:
            if not self._read_head():
                return
            self._handle()
        except _Cut as cut:
            self.close_connection = True
            if cut.status is None:  # the duration ran out mid-response: just close
                self.proxy._refuse(self.command or "-", self.path, None, cut.reason)
            elif self.command or self.reader.buf:
                self._refuse(cut.status, cut.reason)
            # else: an idle keep-alive connection, closed quietly
        except (ConnectionError, TimeoutError, ValueError, http.client.HTTPException):
            self.close_connection = True  # whatever broke mid-request, the connection ends

    def _read_head(self) -> bool:
        """The request line and headers, within one deadline (False: the client left)."""
        limits = self.limits
        deadline = min(time.monotonic() + limits.idle_timeout, self.deadline)
        line = self.reader.readline(limits.max_request_line, deadline, "request line")
        if not line:
            return False
        self.requestline = line.decode("latin-1").rstrip("\r\n")
        words = self.requestline.split(" ")
        if len(words) != 3 or not words[0] or not words[1]:
            raise _Cut(400, f"request line {printable(self.requestline)!r} is malformed")
        self.command, self.path, version = words
        if version not in ("HTTP/1.1", "HTTP/1.0"):
            raise _Cut(400, f"HTTP version {printable(version)!r} is not supported")
        self.request_version = version
        lines: list[bytes] = []
        total = len(line)
        while True:
            line = self.reader.readline(
                limits.max_header_bytes - total + 1, deadline, "request header"
            )
            total += len(line)
            if total > limits.max_header_bytes:
                raise _Cut(431, f"request headers exceed {limits.max_header_bytes} bytes")
            if line in (b"\r\n", b"\n"):
                break
            if not line:
                raise _Cut(400, "request ended inside its headers")
            name, colon, value = line.partition(b":")
            # A token, a colon, a value without CR or NUL inside: what every server agrees on.
            inner = value[:-2] if value.endswith(b"\r\n") else value[:-1]
            if not colon or not _TOKEN.fullmatch(name) or b"\r" in inner or b"\0" in inner:
                raise _Cut(400, "a request header line is malformed (or folded)")
            lines.append(line)
            if len(lines) > limits.max_headers:
                raise _Cut(431, f"more than {limits.max_headers} request headers")
        try:
            self.headers = http.client.parse_headers(io.BytesIO(b"".join(lines) + b"\r\n"))
        except http.client.HTTPException as exc:
            raise _Cut(431, f"request headers cannot be parsed: {exc}") from None
        tokens = {t.strip().lower() for t in self.headers.get("Connection", "").split(",")}
        self.close_connection = version == "HTTP/1.0" or "close" in tokens
        return True

    def _handle(self) -> None:
        proxy = self.proxy
        hosts = self.headers.get_all("Host") or []
        if len(hosts) > 1:
            raise _Cut(400, "more than one Host header")
        decision = route(
            self.command,
            self.path,
            hosts[0] if hosts else None,
            model=proxy.model,
            relay_port=proxy.port,
            allowed_hosts=proxy.allowed_hosts,
            api=proxy.api,
        )
        if decision.kind == "refuse":
            self._refuse(decision.status, decision.reason)
            return
        if decision.kind == "tunnel":
            self._tunnel(decision.host, decision.port)
            return
        self._forward(decision.path)

    def _body_deadline(self) -> float:
        return min(time.monotonic() + self.limits.idle_timeout, self.deadline)

    def _read_body(self) -> bytes:
        """The request body, refused (before it is read, where the length says so) when
        framed ambiguously or larger than the cap."""
        cap = self.limits.max_body
        encodings = self.headers.get_all("Transfer-Encoding") or []
        lengths = self.headers.get_all("Content-Length") or []
        if encodings and lengths:
            raise _Cut(400, "Content-Length together with Transfer-Encoding")
        if encodings:
            if [e.strip().lower() for e in encodings] != ["chunked"]:
                raise _Cut(400, "only Transfer-Encoding: chunked is accepted")
            self._continue()
            return self._read_chunked(cap)
        if not lengths:
            return b""
        try:
            length = parse_content_length(lengths)
        except ValueError as exc:
            raise _Cut(400, str(exc)) from None
        if length > cap:
            raise _Cut(413, f"request body of {length} bytes exceeds {cap}")
        self._continue()
        return self.reader.read(length, self._body_deadline, "request body")

    def _read_chunked(self, cap: int) -> bytes:
        chunks: list[bytes] = []
        total = 0
        while True:
            line = self.reader.readline(MAX_CHUNK_LINE, self._body_deadline(), "chunk size")
            try:
                size = parse_chunk_size(line)
            except ValueError as exc:
                raise _Cut(400, str(exc)) from None
            if size == 0:
                break
            total += size
            if total > cap:
                raise _Cut(413, f"chunked request body exceeds {cap} bytes")
            chunks.append(self.reader.read(size, self._body_deadline, "request body"))
            if self.reader.readline(3, self._body_deadline(), "chunk end") not in (
                b"\r\n",
                b"\n",
            ):
                raise _Cut(400, "a chunk does not end where its size says")
        for _ in range(MAX_TRAILERS):
            trailer = self.reader.readline(MAX_CHUNK_LINE, self._body_deadline(), "trailer")
            if trailer in (b"\r\n", b"\n"):
                return b"".join(chunks)
            if not trailer:
                raise _Cut(400, "request ended inside its trailers")
        raise _Cut(431, f"more than {MAX_TRAILERS} trailers")

    def _continue(self) -> None:
        if self.headers.get("Expect", "").lower() == "100-continue":
            self._write_timeout()
            self.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")

    def _forward(self, path: str) -> None:
        proxy = self.proxy
        model = proxy.model
        assert model is not None
        body = self._read_body()
        key = proxy._key()
        headers = upstream_headers(list(self.headers.items()), model, key)
        conn: http.client.HTTPConnection | None = None
        try:
            conn = proxy._connect()
            conn.putrequest(self.command, path, skip_host=True, skip_accept_encoding=True)
            for name, value in headers:
                conn.putheader(name, value)
            if body or self.command == "POST":
                conn.putheader("Content-Length", str(len(body)))
            conn.endheaders(body or None)
            sock = conn.sock  # getresponse() forgets it when the model says Connection: close
            assert sock is not None
            upstream = conn.getresponse()
        except OSError as exc:
            if conn is not None:
                conn.close()
            logs.event(
                log, "model endpoint unreachable", logging.WARNING, host=model.netloc, error=exc
            )
            self.close_connection = True
            self._answer(502, f"landbot proxy: model endpoint unreachable: {exc}")
            return
        proxy._count("forwarded")
        try:
            self._relay_response(upstream, sock, KeyScrubber(key, KEY_PLACEHOLDER))
        finally:
            conn.close()

    def _relay_response(
        self,
        upstream: http.client.HTTPResponse,
        sock: socket.socket,
        scrub: KeyScrubber,
    ) -> None:
        self._write_timeout()
        self.send_response_only(upstream.status, upstream.reason)
        for name, value in response_headers(upstream.getheaders()):
            self.send_header(name, scrub.text(value))
        no_body = upstream.status in (204, 304) or upstream.status < 200
        chunked = not no_body and self.request_version == "HTTP/1.1"
        if chunked:  # the scrubber may change the length: always re-framed
            self.send_header("Transfer-Encoding", "chunked")
        elif not no_body:
            self.close_connection = True  # HTTP/1.0: the end of the body is the close
        self.end_headers()
        if no_body:
            return

        def send(data: bytes) -> None:
            if not data:
                return
            self._write_timeout()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data) if chunked else data)

        # read1 returns what has arrived, so each server-sent event goes on at once.
        while True:
            remaining = self.deadline - time.monotonic()
            if remaining <= 0:
                raise _Cut(None, "the connection's total duration is over")
            sock.settimeout(min(UPSTREAM_READ_TIMEOUT, remaining))
            try:
                data = upstream.read1(65536)
            except TimeoutError:
                if remaining < UPSTREAM_READ_TIMEOUT:  # it was the duration that ran out
                    raise _Cut(None, "the connection's total duration is over") from None
                raise
            if not data:
                break
            send(scrub.feed(data))
        send(scrub.flush())
        if chunked:
            self.wfile.write(b"0\r\n\r\n")

    def _tunnel(self, host: str, port: int) -> None:
        proxy = self.proxy
        try:
            addresses = proxy._resolve(host, port)
        except OSError as exc:
            self.close_connection = True
            self._answer(502, f"landbot proxy: cannot resolve {host}: {exc}")
            return
        # Resolved once: the address checked is the address connected to (no rebinding).
        usable: list[tuple[int, Any]] = []
        reasons: list[str] = []
        for family, sockaddr in addresses:
            why = address_refusal(str(sockaddr[0]), port, proxy.allowed_hosts)
            if why:
                reasons.append(why)
            else:
                usable.append((family, sockaddr))
        if not usable:
            self._refuse(403, f"CONNECT to {host}:{port} {reasons[0] if reasons else 'no address'}")
            return
        remote: socket.socket | None = None
        error: OSError | None = None
        for family, sockaddr in usable:
            candidate = socket.socket(family, socket.SOCK_STREAM)
            candidate.settimeout(min(UPSTREAM_CONNECT_TIMEOUT, self.limits.idle_timeout))
            try:
                candidate.connect(sockaddr)
            except OSError as exc:
                candidate.close()
                error = exc
                continue
            remote = candidate
            break
        if remote is None:
            logs.event(
                log, "proxy tunnel failed", logging.WARNING, host=host, port=port, error=error
            )
            self.close_connection = True
            self._answer(502, f"landbot proxy: cannot reach {host}:{port}: {error}")
            return
        proxy._count("tunnels")
        self.close_connection = True
        try:
            self._write_timeout()
            self.send_response_only(200, "Connection established")
            self.end_headers()
            early = bytes(self.reader.buf)  # what the client sent after the head
            self.reader.buf.clear()
            if early:
                remote.sendall(early)
            _splice(self.connection, remote, self.limits, self.deadline, proxy)
        finally:
            remote.close()


def _splice(
    a: socket.socket, b: socket.socket, limits: ProxyLimits, deadline: float, proxy: ModelProxy
) -> None:
    """Copy bytes both ways until both sides have closed, or a limit is reached."""
    open_ends = {a: b, b: a}
    sent = {a: 0, b: 0}
    for s in (a, b):
        s.settimeout(limits.idle_timeout)
    while open_ends:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            proxy._refuse("CONNECT", "", None, "the tunnel's total duration is over")
            return
        ready, _, _ = select.select(list(open_ends), [], [], min(limits.idle_timeout, remaining))
        if not ready:
            if remaining > limits.idle_timeout:
                proxy._refuse("CONNECT", "", None, "the tunnel was idle too long")
            return
        for src in ready:
            dst = open_ends[src]
            try:
                data = src.recv(65536)
            except OSError:
                data = b""
            if src is a:
                proxy._count_received(len(data))
            sent[src] += len(data)
            if sent[src] > limits.max_tunnel_bytes:
                proxy._refuse("CONNECT", "", None, "the tunnel passed its byte cap")
                return
            if data:
                try:
                    dst.sendall(data)
                except OSError:
                    return
            else:
                with contextlib.suppress(OSError):
                    dst.shutdown(socket.SHUT_WR)
                del open_ends[src]


def _system_resolve(host: str, port: int) -> list[tuple[int, Any]]:
    return [
        (family, sockaddr)
        for family, _, _, _, sockaddr in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        if family in (socket.AF_INET, socket.AF_INET6)
    ]


class ModelProxy:
    """The host side of the sandbox's network: a context manager serving one job."""

    def __init__(
        self,
        model_url: str | None,
        api_key: _Secret | str | None,
        *,
        allowed_hosts: Sequence[str] = (),
        uid: int = DEFAULT_UID,
        gid: int = DEFAULT_GID,
        port: int = RELAY_PORT,
        socket_dir: Path | None = None,
        api: ModelApi = "any",
        limits: ProxyLimits | None = None,
        resolve: Resolver | None = None,
    ) -> None:
        try:
            self.model: ModelTarget | None = parse_model_url(model_url) if model_url else None
        except ValueError as exc:
            raise LandbotError(f"setting LANDBOT_FIXER__MODEL_URL is invalid: {exc}") from None
        if api not in MODEL_APIS:
            raise LandbotError(f"model API {api!r} is unknown; use one of {', '.join(MODEL_APIS)}")
        self._api_key = api_key
        self.api: ModelApi = api
        self.limits = limits or ProxyLimits()
        self._resolve: Resolver = resolve or _system_resolve
        self.allowed_hosts = tuple(allowed_hosts)
        self.uid, self.gid, self.port = uid, gid, port
        self._socket_dir = socket_dir
        self._dir: Path | None = None
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.refused: list[Refusal] = []  # the first MAX_REFUSALS_KEPT
        self.refusals = 0  # all of them
        self.busy = 0  # connections turned away with a 503
        self.forwarded = 0
        self.tunnels = 0
        self.received = 0  # bytes read from the job's connections

    @classmethod
    def from_settings(cls, settings: Settings, **kwargs: object) -> ModelProxy:
        # `[fixer] model_api`, where the settings have it, narrows the calls to one API.
        api = getattr(settings.fixer, "model_api", None)
        if api is not None and "api" not in kwargs:
            kwargs["api"] = api
        return cls(
            settings.fixer.model_url,
            settings.fixer.model_api_key,
            allowed_hosts=settings.sandbox.allowed_hosts,
            uid=settings.sandbox.uid,
            gid=settings.sandbox.gid,
            **kwargs,  # type: ignore[arg-type]
        )

    def _key(self) -> str | None:
        key = self._api_key
        if key is None or isinstance(key, str):
            return key
        return key.get_secret_value()

    def _connect(self) -> http.client.HTTPConnection:
        model = self.model
        assert model is not None
        if model.scheme == "https":
            import ssl

            conn: http.client.HTTPConnection = http.client.HTTPSConnection(
                model.host,
                model.port,
                timeout=UPSTREAM_CONNECT_TIMEOUT,
                context=ssl.create_default_context(),
            )
        else:
            conn = http.client.HTTPConnection(
                model.host, model.port, timeout=UPSTREAM_CONNECT_TIMEOUT
            )
        conn.connect()
        assert conn.sock is not None
        conn.sock.settimeout(UPSTREAM_READ_TIMEOUT)
        return conn

    def _count(self, name: str) -> None:
        with self._lock:
            setattr(self, name, getattr(self, name) + 1)

    def _count_received(self, n: int) -> None:
        with self._lock:
            self.received += n

    def _refuse(self, method: str, target: str, host: str | None, reason: str) -> None:
        refusal = Refusal(
            printable(method, 20),
            printable(target, 500),
            printable(host) if host is not None else None,
            printable(reason, 500),
            time.time(),
        )
        with self._lock:
            self.refusals += 1
            n = self.refusals
            if n <= MAX_REFUSALS_KEPT:
                self.refused.append(refusal)
        if n <= MAX_REFUSALS_KEPT:
            logs.event(
                log,
                "proxy refused",
                logging.WARNING,
                method=refusal.method,
                target=refusal.target[:200],
                host=refusal.host,
                why=refusal.reason,
            )
        elif n == MAX_REFUSALS_KEPT + 1:
            log.warning("proxy: more than %d refusals; counting, not logging", MAX_REFUSALS_KEPT)

    def _busy(self, request: socket.socket) -> None:
        with self._lock:
            self.busy += 1
            n = self.busy
        if n == 1:
            log.warning(
                "proxy: the job opened more than %d connections at once; the rest get 503",
                self.limits.max_connections,
            )
        body = b"landbot proxy: refused: too many connections at once\n"
        with contextlib.suppress(OSError):
            request.setblocking(False)  # the accept loop never waits for a job
            request.send(
                b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\n"
                b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body)
            )

    @property
    def socket_path(self) -> Path:
        if self._dir is None:
            raise RuntimeError("the proxy is not running; use it as a context manager")
        return self._dir / "proxy.sock"

    @property
    def sandbox_url(self) -> str | None:
        """The model's base URL as the job sees it."""
        if self.model is None:
            return None
        return f"http://127.0.0.1:{self.port}{self.model.base_path}"

    @property
    def endpoint(self) -> ProxyEndpoint:
        """What `run_sandboxed(..., proxy=...)` needs: the socket and the job's variables."""
        env: dict[str, str] = {}
        if self.model is not None:
            env["LANDBOT_MODEL_URL"] = self.sandbox_url or ""
            env["LANDBOT_MODEL_KEY_PLACEHOLDER"] = KEY_PLACEHOLDER
        if self.allowed_hosts:
            proxy_url = f"http://127.0.0.1:{self.port}"
            for name in ("HTTPS_PROXY", "https_proxy"):
                env[name] = proxy_url
            for name in ("NO_PROXY", "no_proxy"):
                env[name] = "127.0.0.1,localhost"
        return ProxyEndpoint(socket_path=self.socket_path, port=self.port, env=env)

    def __enter__(self) -> ModelProxy:
        base = str(self._socket_dir) if self._socket_dir is not None else None
        self._dir = Path(tempfile.mkdtemp(prefix="landbot-proxy-", dir=base))
        try:
            # The sandbox uid may pass through the folder but not list it; the socket is its.
            os.chmod(self._dir, 0o711)
            server = _Server(str(self.socket_path), self)
            os.chown(self.socket_path, self.uid, self.gid)
            os.chmod(self.socket_path, 0o600)
        except BaseException:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None
            raise
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.close_open()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None
