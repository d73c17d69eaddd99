"""The HTTP front door of `landbot serve`: the webhook receiver, health, metrics, dashboard.

`POST /webhook` only verifies, stores and acknowledges. It never parses payloads into models
and never calls GitHub: the worker reads the stored delivery later. A delivery is answered
202 only after the store has committed it, so an acknowledged delivery survives a crash.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import sqlalchemy as sa
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from landbot import logs
from landbot.config import Settings
from landbot.store import Store
from landbot.web import board, prom
from landbot.web.body import MAX_BODY_BYTES, BadContentLength, BodyTooLarge, read_capped
from landbot.web.inbox import Inbox, StoreBusy
from landbot.web.signature import header_problem, signature_matches
from landbot.web.wal import WalCheckpointer

log = logging.getLogger("landbot.web")

# Bodies above this are hashed and parsed in a worker thread: HMAC and json.loads of a
# multi-megabyte payload would otherwise stall every other request on the event loop.
INLINE_BYTES = 1024 * 1024
# Widths of the deliveries table's columns (PostgreSQL enforces them; SQLite would not).
MAX_HEADER_VALUE = 100
STORE_TIMEOUT_S = 5.0
# A store write runs in a thread while the event loop parses requests. SQLite releases the
# GIL for every statement, and each time the write thread wants it back it may wait for the
# loop's thread for a whole switch interval (5 ms by default): four statements, up to 20 ms.
# At 1 ms a write's p99 under a busy loop drops from ~35 ms to ~10 ms (bench/README.md).
SWITCH_INTERVAL_S = 0.001


def _refuse(status: int, message: str, *, close: bool = False) -> JSONResponse:
    # close: the rest of the body is unread; tell the server to drop the connection rather
    # than drain an arbitrarily long upload for a request already answered.
    headers = {"Connection": "close"} if close else None
    return JSONResponse({"error": message}, status_code=status, headers=headers)


def _text(payload: dict[str, Any], key: str) -> str | None:
    value = payload.get(key)
    return value if isinstance(value, str) else None


def _refused(status: int, outcome: str, why: object, headers: Any) -> None:
    """The line for a refused delivery: what GitHub's headers said it was, and why."""
    logs.event(
        log,
        "webhook refused",
        logging.WARNING,
        delivery_id=headers.get("x-github-delivery"),
        github_event=headers.get("x-github-event"),
        status=status,
        outcome=outcome,
        why=why,
    )


def _repository(payload: dict[str, Any]) -> str | None:
    repo = payload.get("repository")
    return _text(repo, "full_name") if isinstance(repo, dict) else None


class _Receiver:
    """The request handlers, sharing the settings snapshot, the store and the counters."""

    def __init__(
        self,
        settings: Settings,
        store: Store,
        worker_alive: Callable[[], bool] | None,
        max_body: int,
    ) -> None:
        raw = settings.github.webhook_secret
        secret = raw.get_secret_value() if raw is not None else ""
        self.secret: bytes | None = secret.encode() if secret else None
        self.settings = settings
        self.store = store
        self.worker_alive = worker_alive
        self.max_body = max_body
        self.counters = prom.DeliveryCounters()
        # Deliveries are written through the inbox, which never waits in SQLite's busy
        # handler behind a worker that is catching up (landbot.web.inbox).
        self.inbox = Inbox(store)

    def _count(self, outcome: str, response: Response) -> Response:
        self.counters.add(outcome)
        return response

    async def webhook(self, request: Request) -> Response:
        if self.secret is None:
            return self._count(
                "no_secret",
                _refuse(
                    500,
                    "webhook secret is not configured: set LANDBOT_GITHUB__WEBHOOK_SECRET; "
                    "landbot refuses unsigned deliveries",
                ),
            )
        headers = request.headers
        signature = headers.get("x-hub-signature-256")
        problem = header_problem(signature, headers.get("x-hub-signature"))
        if problem is not None or signature is None:
            _refused(401, "bad_signature", problem, headers)
            return self._count("bad_signature", _refuse(401, problem or "missing signature"))

        try:
            body = await read_capped(request, self.max_body)
        except BodyTooLarge as exc:
            _refused(413, "too_large", exc, headers)
            return self._count("too_large", _refuse(413, str(exc), close=True))
        except BadContentLength as exc:
            return self._count("bad_request", _refuse(400, str(exc), close=True))
        except ClientDisconnect:
            return self._count(
                "bad_request", _refuse(400, "the client disconnected before the body ended")
            )

        large = len(body) > INLINE_BYTES
        if large:
            valid = await run_in_threadpool(signature_matches, self.secret, body, signature)
        else:
            valid = signature_matches(self.secret, body, signature)
        if not valid:
            _refused(401, "bad_signature", "signature does not match the body", headers)
            return self._count(
                "bad_signature",
                _refuse(
                    401,
                    "X-Hub-Signature-256 does not match the body; check that "
                    "LANDBOT_GITHUB__WEBHOOK_SECRET is the App's webhook secret",
                ),
            )

        event = headers.get("x-github-event", "").strip()
        delivery = headers.get("x-github-delivery", "").strip()
        for name, value in (("X-GitHub-Event", event), ("X-GitHub-Delivery", delivery)):
            if not value:
                return self._count("bad_request", _refuse(400, f"missing {name} header"))
            if len(value) > MAX_HEADER_VALUE:
                return self._count(
                    "bad_request",
                    _refuse(400, f"{name} header is longer than {MAX_HEADER_VALUE} characters"),
                )

        try:
            payload = await run_in_threadpool(json.loads, body) if large else json.loads(body)
        except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError
            hint = ""
            if "x-www-form-urlencoded" in headers.get("content-type", ""):
                hint = "; set the webhook's content type to application/json"
            return self._count("bad_json", _refuse(400, f"body is not valid JSON ({exc}){hint}"))
        if not isinstance(payload, dict):
            return self._count(
                "bad_json",
                _refuse(400, f"body is a JSON {type(payload).__name__}, not an object"),
            )

        if event == "ping":
            # GitHub's check that the hook works: nothing for the worker to do.
            logs.event(
                log, "webhook ping", delivery_id=delivery, hook_id=headers.get("x-github-hook-id")
            )
            return self._count("ping", JSONResponse({"status": "pong", "delivery": delivery}))

        action = _text(payload, "action")
        repo = _repository(payload)
        if repo is not None and not self.settings.watches(repo):
            logs.event(
                log,
                "webhook ignored: repository not watched",
                repo=repo,
                delivery_id=delivery,
                github_event=event,
                action=action,
            )
            return self._count(
                "ignored_repo",
                JSONResponse(
                    {
                        "status": "ignored",
                        "delivery": delivery,
                        "detail": f"repository {repo} is not in LANDBOT_REPOS; not stored",
                    },
                    status_code=202,
                ),
            )

        try:
            created = await run_in_threadpool(
                self.inbox.record, delivery, event, action, repo, body
            )
        except sa.exc.IntegrityError:
            created = False  # a concurrent copy of this delivery won the unique key
        except (sa.exc.SQLAlchemyError, StoreBusy):
            logs.event(
                log,
                "webhook not stored",
                logging.ERROR,
                exc_info=True,
                repo=repo,
                delivery_id=delivery,
                github_event=event,
                action=action,
            )
            return self._count(
                "store_error",
                _refuse(
                    503,
                    "the store could not record this delivery, so it was not accepted; "
                    "redeliver it once the store is back",
                ),
            )
        if not created:
            logs.event(
                log, "webhook duplicate", logging.DEBUG, delivery_id=delivery, github_event=event
            )
            return self._count(
                "duplicate", JSONResponse({"status": "duplicate", "delivery": delivery})
            )
        logs.event(
            log,
            "webhook stored",
            logging.DEBUG,
            repo=repo,
            delivery_id=delivery,
            github_event=event,
            action=action,
            bytes=len(body),
        )
        return self._count(
            "accepted", JSONResponse({"status": "accepted", "delivery": delivery}, 202)
        )

    async def _in_thread(self, func: Callable[[], Any]) -> tuple[bool, Any]:
        """(finished, result) of a blocking store call, giving up after STORE_TIMEOUT_S."""
        with anyio.move_on_after(STORE_TIMEOUT_S):
            try:
                return True, await anyio.to_thread.run_sync(func, abandon_on_cancel=True)
            except sa.exc.SQLAlchemyError:
                log.exception("store read failed")
                return False, None
        return False, None

    async def healthz(self, request: Request) -> Response:
        done, answer = await self._in_thread(self.store.ping)
        store_ok = bool(done and answer)
        worker_ok: bool | None = None
        if self.worker_alive is not None:
            try:
                worker_ok = bool(self.worker_alive())
            except Exception:
                log.exception("worker liveness check failed")
                worker_ok = False
        down = [name for name, ok in (("store", store_ok), ("worker", worker_ok)) if ok is False]
        body: dict[str, Any] = {"store": store_ok, "worker": worker_ok}
        if down:
            body["down"] = down
        return JSONResponse(body, status_code=503 if down else 200)

    async def metrics(self, request: Request) -> Response:
        done, figures = await self._in_thread(lambda: prom.read_store(self.store))
        text = prom.render(self.counters, figures if done else None)
        return Response(text, media_type=prom.CONTENT_TYPE)

    async def dashboard(self, request: Request) -> Response:
        return await board.respond(request, self.settings, self.store, self._in_thread)


def create_app(
    settings: Settings,
    store: Store,
    *,
    worker_alive: Callable[[], bool] | None = None,
    max_body_bytes: int = MAX_BODY_BYTES,
) -> Starlette:
    """The Starlette app. The caller owns `store` (and closes it); `worker_alive` is polled
    by /healthz when given. Counters are at `app.state.counters`. Under a server, the app's
    lifespan runs SQLite's WAL checkpoints in a background thread (landbot.web.wal)."""
    receiver = _Receiver(settings, store, worker_alive, max_body_bytes)
    checkpointer = WalCheckpointer.for_engine(store.engine)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        # Runs under a server (uvicorn); a bare TestClient skips it, which only means
        # SQLite checkpoints stay inline and the switch interval stays as it was.
        previous = sys.getswitchinterval()
        sys.setswitchinterval(min(previous, SWITCH_INTERVAL_S))
        if checkpointer is not None:
            checkpointer.start()
        try:
            yield
        finally:
            if checkpointer is not None:
                checkpointer.stop()
            receiver.inbox.close()
            sys.setswitchinterval(previous)

    if receiver.secret is None:
        log.warning(
            "LANDBOT_GITHUB__WEBHOOK_SECRET is not set: every webhook delivery will be "
            "refused with 500 until it is"
        )
    app = Starlette(
        routes=[
            Route("/webhook", receiver.webhook, methods=["POST"]),
            Route("/healthz", receiver.healthz, methods=["GET"]),
            # The operator's only: loopback, or the [web] token (landbot.web.board).
            Route("/metrics", board.operator_only(settings, receiver.metrics), methods=["GET"]),
            Route("/", board.operator_only(settings, receiver.dashboard), methods=["GET"]),
        ],
        lifespan=lifespan,
    )
    app.state.counters = receiver.counters
    app.state.checkpointer = checkpointer
    return app
