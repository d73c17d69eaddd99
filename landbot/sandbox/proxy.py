"""The model proxy: the sandbox's only way out.

A host-side HTTP forwarder on a unix socket in a per-job folder. The socket is bound into
the sandbox and re-exposed there on 127.0.0.1:PORT (relay.py), so the job reaches
`LANDBOT_MODEL_URL=http://127.0.0.1:PORT/<model path>` and nothing else. The proxy forwards
only to `[fixer] model_url`, replacing whatever credentials the job sent with the real
provider key (the key never enters the sandbox; the job holds a placeholder), and streams
responses (server-sent events) through as they arrive. With `[sandbox] allowed_hosts` it
also tunnels HTTPS CONNECT to those hosts only (package registries). Anything else gets a
403 and a log line.

    with ModelProxy.from_settings(settings) as proxy:
        run_sandboxed(argv, workdir, ..., proxy=proxy.endpoint)
"""

from __future__ import annotations

import contextlib
import http.client
import logging
import os
import select
import shutil
import socket
import socketserver
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Protocol

from landbot.errors import LandbotError
from landbot.sandbox.proxy_policy import (
    ModelTarget,
    parse_model_url,
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
MAX_REQUEST_BODY = 64 * 1024 * 1024
UPSTREAM_CONNECT_TIMEOUT = 30.0
UPSTREAM_READ_TIMEOUT = 600.0  # a model may think for minutes between streamed events


class _Secret(Protocol):
    def get_secret_value(self) -> str: ...


@dataclass(frozen=True)
class Refusal:
    method: str
    target: str
    host: str | None
    reason: str
    at: float


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    block_on_close = False
    proxy: ModelProxy


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    # BaseHTTPRequestHandler assumes a TCP peer address; a unix socket has none.
    def address_string(self) -> str:
        return "sandbox"

    def log_message(self, format: str, *args: object) -> None:
        log.debug("proxy: " + format, *args)

    def _answer(self, code: int, text: str) -> None:
        body = (text + "\n").encode()
        self.send_response(code)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _handle(self) -> None:
        proxy = self.server.proxy
        decision = route(
            self.command,
            self.path,
            self.headers.get("Host"),
            model=proxy.model,
            relay_port=proxy.port,
            allowed_hosts=proxy.allowed_hosts,
        )
        if decision.kind == "refuse":
            proxy._refuse(self.command, self.path, self.headers.get("Host"), decision.reason)
            self.close_connection = True
            self._answer(403, f"landbot proxy: refused: {decision.reason}")
            return
        if decision.kind == "tunnel":
            self._tunnel(decision.host, decision.port)
            return
        self._forward(decision.path)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _handle
    do_CONNECT = do_TRACE = _handle

    def _read_body(self) -> bytes | None:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            chunks = []
            total = 0
            while True:
                line = self.rfile.readline(1024)
                size = int(line.split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    break
                total += size
                if total > MAX_REQUEST_BODY:
                    return None
                chunks.append(self.rfile.read(size))
                self.rfile.readline(1024)
            return b"".join(chunks)
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_REQUEST_BODY:
            return None
        return self.rfile.read(length) if length else b""

    def _forward(self, path: str) -> None:
        proxy = self.server.proxy
        model = proxy.model
        assert model is not None
        try:
            body = self._read_body()
        except ValueError:
            self.close_connection = True
            self._answer(400, "landbot proxy: malformed request body")
            return
        if body is None:
            self.close_connection = True
            self._answer(413, "landbot proxy: request body too large")
            return
        headers = upstream_headers(list(self.headers.items()), model, proxy._key())
        conn: http.client.HTTPConnection | None = None
        try:
            conn = proxy._connect()
            conn.putrequest(self.command, path, skip_host=True, skip_accept_encoding=True)
            for name, value in headers:
                conn.putheader(name, value)
            if body or self.command in ("POST", "PUT", "PATCH"):
                conn.putheader("Content-Length", str(len(body)))
            conn.endheaders(body or None)
            upstream = conn.getresponse()
        except OSError as exc:
            if conn is not None:
                conn.close()
            log.warning("model endpoint %s unreachable: %s", model.netloc, exc)
            self.close_connection = True
            self._answer(502, f"landbot proxy: model endpoint unreachable: {exc}")
            return
        proxy.forwarded += 1
        try:
            self._relay_response(upstream)
        finally:
            conn.close()

    def _relay_response(self, upstream: http.client.HTTPResponse) -> None:
        self.send_response_only(upstream.status, upstream.reason)
        for name, value in response_headers(upstream.getheaders()):
            self.send_header(name, value)
        length = upstream.getheader("Content-Length")
        no_body = self.command == "HEAD" or upstream.status in (204, 304) or upstream.status < 200
        chunked = not no_body and length is None and self.request_version == "HTTP/1.1"
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        elif not no_body and length is None:
            self.close_connection = True  # HTTP/1.0: the end of the body is the close
        self.end_headers()
        if no_body:
            return
        # read1 returns what has arrived, so each server-sent event goes on at once.
        while True:
            data = upstream.read1(65536)
            if not data:
                break
            if chunked:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            else:
                self.wfile.write(data)
        if chunked:
            self.wfile.write(b"0\r\n\r\n")

    def _tunnel(self, host: str, port: int) -> None:
        try:
            remote = socket.create_connection((host, port), timeout=UPSTREAM_CONNECT_TIMEOUT)
        except OSError as exc:
            log.warning("CONNECT %s:%s failed: %s", host, port, exc)
            self.close_connection = True
            self._answer(502, f"landbot proxy: cannot reach {host}:{port}: {exc}")
            return
        self.server.proxy.tunnels += 1
        self.send_response_only(200, "Connection established")
        self.end_headers()
        self.close_connection = True
        remote.settimeout(None)
        client = self.connection
        try:
            _splice(client, remote)
        finally:
            remote.close()

    def handle_one_request(self) -> None:
        try:
            super().handle_one_request()
        except (ConnectionError, TimeoutError):
            self.close_connection = True


def _splice(a: socket.socket, b: socket.socket) -> None:
    """Copy bytes both ways until both sides have closed."""
    open_ends = {a: b, b: a}
    while open_ends:
        ready, _, _ = select.select(list(open_ends), [], [], UPSTREAM_READ_TIMEOUT)
        if not ready:
            return
        for src in ready:
            dst = open_ends[src]
            try:
                data = src.recv(65536)
            except OSError:
                data = b""
            if data:
                try:
                    dst.sendall(data)
                except OSError:
                    return
            else:
                with contextlib.suppress(OSError):
                    dst.shutdown(socket.SHUT_WR)
                del open_ends[src]


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
    ) -> None:
        try:
            self.model: ModelTarget | None = parse_model_url(model_url) if model_url else None
        except ValueError as exc:
            raise LandbotError(f"setting LANDBOT_FIXER__MODEL_URL is invalid: {exc}") from None
        self._api_key = api_key
        self.allowed_hosts = tuple(allowed_hosts)
        self.uid, self.gid, self.port = uid, gid, port
        self._socket_dir = socket_dir
        self._dir: Path | None = None
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self.refused: list[Refusal] = []
        self.forwarded = 0
        self.tunnels = 0

    @classmethod
    def from_settings(cls, settings: Settings, **kwargs: object) -> ModelProxy:
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

    def _refuse(self, method: str, target: str, host: str | None, reason: str) -> None:
        self.refused.append(Refusal(method, target[:500], host, reason, time.time()))
        log.warning("proxy refused %s %s (Host: %s): %s", method, target[:200], host, reason)

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
            server = _Server(str(self.socket_path), _Handler)
            server.proxy = self
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
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None
