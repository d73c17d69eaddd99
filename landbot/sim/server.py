"""The fake GitHub over HTTP: a Starlette app, and uvicorn in a background thread.

    with FakeGitHubServer(gh) as server:
        server.url            # http://127.0.0.1:<free port>, REST root; GraphQL at /graphql
        server.requests       # RequestLog: counts per "METHOD /template"
        server.faults         # Faults: make the next N requests to a route fail
        server.limits         # Limits: GitHub's rate limits, enforced where a test sets them

Every request is counted, may meet an injected fault, then is authenticated (401 without a
valid credential), then answered from the model after `gh.sync()` noticed any git pushes.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import secrets
import socket
import threading
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from landbot.sim.actions import ACTION_ROUTES
from landbot.sim.auth import AuthError, authenticate
from landbot.sim.faults import Fault, Faults, RecordedRequest, RequestLog
from landbot.sim.graphql_api import operation_name
from landbot.sim.limits import Limits, Refusal
from landbot.sim.model import FakeGitHub, FakeGitHubError
from landbot.sim.payloads import Urls
from landbot.sim.rest import COST_HEADER, ROUTES, BadRequest, Call, RouteSpec, error
from landbot.sim.state import App


def _fault_response(fault: Fault) -> Response:
    return JSONResponse(fault.body, status_code=fault.status, headers=fault.headers)


def _refused(refusal: Refusal) -> Response:
    return JSONResponse(refusal.body, status_code=refusal.status, headers=refusal.headers)


class _NoAnswer(Response):
    """GitHub answering nothing: the connection breaks off before any answer is read (the
    client sees what it sees when its timeout ends: no answer, the request maybe acted on)."""

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        raise ConnectionAbortedError("the fake GitHub answers nothing (Limits.silence)")


# REST routes GitHub counts as creating content (its 80-a-minute, 500-an-hour limit).
_CONTENT_ROUTES = ("/comments", "/issues", "/reactions", "/check-runs")


def _creates_content(spec: RouteSpec) -> bool:
    return spec.method == "POST" and spec.template.endswith(_CONTENT_ROUTES)


def _conditional(spec: RouteSpec, request: Request, response: Response) -> Response:
    """GitHub's conditional GETs: a 200 carries an `ETag` (its body's digest, weak, as
    GitHub's mostly are), and a request whose `If-None-Match` names it is answered 304 Not
    Modified with no body."""
    if (
        spec.method != "GET"
        or response.status_code != 200
        or not isinstance(response, JSONResponse)
    ):
        return response
    etag = f'W/"{hashlib.sha256(bytes(response.body)).hexdigest()[:32]}"'
    asked = {t.strip() for t in request.headers.get("if-none-match", "").split(",")}
    if etag in asked or "*" in asked:
        return Response(status_code=304, headers={"etag": etag})
    response.headers["etag"] = etag
    return response


class ModelRef:
    """The model a server answers from; `FakeGitHubServer.use` swaps it between tests."""

    def __init__(self, gh: FakeGitHub) -> None:
        self.gh = gh


def create_app(
    gh: FakeGitHub | ModelRef,
    *,
    requests: RequestLog | None = None,
    faults: Faults | None = None,
    extra_routes: list[Route] | None = None,
    blob_url: str | None = None,
    limits: Limits | None = None,
) -> Starlette:
    ref = gh if isinstance(gh, ModelRef) else ModelRef(gh)
    requests = requests if requests is not None else RequestLog()
    faults = faults if faults is not None else Faults()
    blob_secret = secrets.token_bytes(32)
    rates = limits if limits is not None else Limits()

    def endpoint(spec: RouteSpec) -> Callable[[Request], Awaitable[Response]]:
        async def handle(request: Request) -> Response:
            arrived = rates.clock()
            body = await request.body()
            operation = None
            if spec.template == "/graphql":
                try:
                    operation = operation_name(json.loads(body or b"null"))
                except ValueError:
                    operation = None
            if rates.silent():
                requests.record(
                    RecordedRequest(
                        spec.method, request.url.path, spec.key, 0, operation, at=arrived
                    )
                )
                return _NoAnswer()
            response = _answer(spec, request, body, operation)
            points = int(response.headers.get(COST_HEADER, "0"))
            if COST_HEADER in response.headers:
                del response.headers[COST_HEADER]
            response.headers.setdefault("x-github-request-id", uuid.uuid4().hex[:20].upper())
            version = request.headers.get("x-github-api-version", "2022-11-28")
            response.headers.setdefault("x-github-api-version-selected", version)
            requests.record(
                RecordedRequest(
                    method=spec.method,
                    path=request.url.path,
                    route=spec.key,
                    status=response.status_code,
                    operation=operation,
                    authorized="authorization" in request.headers,
                    at=arrived,
                    points=points,
                    conditional=response.status_code == 304,
                )
            )
            return response

        return handle

    def _answer(spec: RouteSpec, request: Request, body: bytes, operation: str | None) -> Response:
        fault = faults.take_at(spec.key, operation, request.url.path) or faults.take(
            spec.key, operation
        )
        if fault is not None and fault.hold:
            rates.hold(fault.hold)
        if fault is not None and not fault.take_effect:
            return _fault_response(fault)
        if spec.auth == "token":
            refusal = rates.refusal(spec.resource, content=_creates_content(spec))
            if refusal is not None:
                return _refused(refusal)
        gh = ref.gh
        try:
            gh.sync()
            caller = None
            if spec.auth != "none":
                caller = authenticate(gh, request.headers, jwt_route=spec.auth == "jwt")
            call = Call(
                gh=gh,
                caller=caller,
                params={k: str(v) for k, v in request.path_params.items()},
                query=request.query_params,
                headers=request.headers,
                body=body,
                url=request.url,
                blob_secret=blob_secret,
                blob_url=blob_url,
            )
            # Handlers read the model's dicts: hold its lock against a test thread's writes.
            with gh.lock:
                response = spec.handler(call)
            response = _conditional(spec, request, response)
            # A 304 costs nothing against the primary limit, as at GitHub.
            free = response.status_code == 304
            points = 0 if free else int(response.headers.get(COST_HEADER, "1"))
            if spec.auth != "none":
                credential = request.headers.get("authorization")
                for key, value in rates.headers(credential, spec.resource, points).items():
                    response.headers.setdefault(key, value)
        except AuthError as exc:
            response = error(401, exc.message)
        except FakeGitHubError as exc:
            response = error(exc.status, exc.message)
        except BadRequest as exc:
            response = error(exc.status, exc.message)
        if fault is not None:
            # The change happened, yet the caller sees a failure (a 5xx after the fact).
            return _fault_response(fault)
        return response

    async def not_found(request: Request) -> Response:
        requests.record(
            RecordedRequest(
                method=request.method,
                path=request.url.path,
                route=f"{request.method} {request.url.path}",
                status=404,
                authorized="authorization" in request.headers,
            )
        )
        return error(404, "Not Found")

    routes: list[Any] = [
        Route(spec.starlette_path, endpoint(spec), methods=[spec.method])
        for spec in (*ROUTES, *ACTION_ROUTES)
    ]
    routes.extend(extra_routes or [])
    app = Starlette(routes=routes)
    app.add_exception_handler(404, _wrap_404(not_found))
    app.add_exception_handler(405, _wrap_404(not_found))
    app.state.requests = requests
    app.state.faults = faults
    app.state.model = ref
    return app


def _wrap_404(handler: Callable[[Request], Awaitable[Response]]) -> Any:
    async def on_error(request: Request, exc: Exception) -> Response:
        return await handler(request)

    return on_error


def free_socket(host: str = "127.0.0.1", port: int = 0) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Accepted connections inherit it: without it a keep-alive response written in two
    # parts waits ~40 ms for the client's delayed ACK.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((host, port))
    return sock


class BackgroundServer:
    """Any ASGI app served by uvicorn from a daemon thread on already-bound sockets."""

    def __init__(self, app: Any, sockets: list[socket.socket]) -> None:
        self.app = app
        self.sockets = sockets
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self.sockets[0].getsockname()[:2]
        return f"http://{host}:{port}"

    def start(self) -> BackgroundServer:
        config = uvicorn.Config(self.app, log_level="warning", access_log=False, lifespan="off")
        server = uvicorn.Server(config)
        self._server = server
        self._thread = threading.Thread(
            target=lambda: asyncio.run(server.serve(sockets=self.sockets)),
            name=f"uvicorn-{self.url}",
            daemon=True,
        )
        self._thread.start()
        deadline = time.monotonic() + 10
        while not server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the server at {self.url} did not start")
            time.sleep(0.01)
        return self

    def signal_stop(self) -> None:
        """Ask the server to stop without waiting (uvicorn takes 0.1-0.3 s to wind down):
        several servers told at once stop side by side; `stop` then waits for this one."""
        if self._server is not None:
            self._server.should_exit = True

    def stop(self) -> None:
        self.signal_stop()
        if self._thread is not None:
            self._thread.join(timeout=10)
        for sock in self.sockets:
            sock.close()

    def __enter__(self) -> BackgroundServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class FakeGitHubServer:
    """Serve `gh` on 127.0.0.1 (a free port unless given) from a background thread."""

    def __init__(
        self,
        gh: FakeGitHub,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        control: bool = False,
        extra_routes: list[Route] | None = None,
        limits: Limits | None = None,
    ) -> None:
        """`control=True` adds the /_fake/... routes that drive the model over HTTP;
        `limits` (GitHub's rate limits, on a test's clock) is a new `Limits()` unless given."""
        self._ref = ModelRef(gh)
        self.limits = limits if limits is not None else Limits()
        self.requests = RequestLog()
        self.faults = Faults()
        self._sock = free_socket(host, port)
        self.host, self.port = self._sock.getsockname()[:2]
        self.url = f"http://{self.host}:{self.port}"
        # Log downloads redirect to another origin, like GitHub's to its storage host.
        self._blob_sock = free_socket(host, 0)
        self.blob_url = f"http://{host}:{self._blob_sock.getsockname()[1]}"
        routes = list(extra_routes or [])
        if control:
            from landbot.sim.control import control_routes

            routes += control_routes(gh, self.requests, self.faults)
        self.app = create_app(
            self._ref,
            requests=self.requests,
            faults=self.faults,
            extra_routes=routes,
            blob_url=self.blob_url,
            limits=self.limits,
        )
        self._background = BackgroundServer(self.app, [self._sock, self._blob_sock])

    @property
    def gh(self) -> FakeGitHub:
        return self._ref.gh

    def use(self, gh: FakeGitHub) -> FakeGitHub:
        """Answer from another model from now on, with counts and faults cleared.

        Lets a test suite start one server and give each test a fresh model.
        """
        self._ref.gh = gh
        self.requests.reset()
        self.faults.clear()
        gh.urls = Urls(api=self.url, web=gh.urls.web)
        return gh

    def settings_env(
        self, *, token: str | None = None, app: App | None = None, key_file: Path | None = None
    ) -> dict[str, str]:
        """LANDBOT_GITHUB__* for a landbot process using this server.

        Auth is a personal `token`, or an `app` whose private key is written to `key_file`.
        """
        env = {
            "LANDBOT_GITHUB__API_URL": self.url,
            "LANDBOT_GITHUB__GIT_URL": self.gh.git_url,
        }
        if self.gh.webhooks.secret:
            env["LANDBOT_GITHUB__WEBHOOK_SECRET"] = self.gh.webhooks.secret
        if token is not None:
            env["LANDBOT_GITHUB__TOKEN"] = token
        if app is not None:
            if key_file is None:
                raise ValueError("settings_env(app=...) needs key_file= to write the key to")
            app.write_private_key(key_file)
            env["LANDBOT_GITHUB__APP_ID"] = str(app.id)
            env["LANDBOT_GITHUB__PRIVATE_KEY_FILE"] = str(key_file)
        return env

    def start(self) -> FakeGitHubServer:
        # Payload URLs (url, html_url of API objects) point at this server from now on.
        self.gh.urls = Urls(api=self.url, web=self.gh.urls.web)
        self._background.start()
        return self

    def signal_stop(self) -> None:
        """Start stopping (see BackgroundServer.signal_stop); `stop` finishes it."""
        self._background.signal_stop()

    def stop(self) -> None:
        self._background.stop()
        self.gh.webhooks.close()

    def __enter__(self) -> FakeGitHubServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
