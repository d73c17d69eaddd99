"""Webhook deliveries as GitHub makes them: headers, signature over the raw body, POST.

Every event the model emits is recorded in `Outbox.deliveries`. When a URL is configured a
background thread POSTs them in order (GitHub neither retries nor redelivers on its own,
so neither does this); `flush()` waits until everything emitted so far was attempted.
Tests that want to drive delivery themselves leave the URL unset and use `Delivery.send`
or the raw `body` and `headers`.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import queue
import threading
import uuid
from dataclasses import dataclass, field
from typing import Any

import httpx

from landbot.core.tls import client_context

HOOK_ID = 512_345_678
USER_AGENT = "GitHub-Hookshot/8b2d4e1"


def sign(secret: str | bytes, body: bytes) -> str:
    """The `X-Hub-Signature-256` value: `sha256=` + hex HMAC-SHA256 of the raw body."""
    key = secret.encode() if isinstance(secret, str) else secret
    return "sha256=" + hmac.new(key, body, hashlib.sha256).hexdigest()


def encode(payload: dict[str, Any]) -> bytes:
    # GitHub sends compact JSON; the signature covers exactly these bytes.
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()


@dataclass
class Delivery:
    event: str
    guid: str
    payload: dict[str, Any]
    body: bytes = field(repr=False)
    headers: dict[str, str] = field(repr=False)
    status: int | None = None  # the receiver's answer, when delivered by the outbox
    error: str | None = None

    @property
    def action(self) -> str | None:
        value = self.payload.get("action")
        return value if isinstance(value, str) else None

    def verify(self, secret: str) -> bool:
        return hmac.compare_digest(
            self.headers.get("X-Hub-Signature-256", ""), sign(secret, self.body)
        )

    def send(
        self, url: str, client: httpx.Client | None = None, timeout: float = 10.0
    ) -> httpx.Response:
        """POST this delivery to `url` exactly as GitHub would."""
        if client is not None:
            return client.post(url, content=self.body, headers=self.headers)
        return httpx.post(url, content=self.body, headers=self.headers, timeout=timeout)


def build_delivery(
    event: str,
    payload: dict[str, Any],
    *,
    secret: str | None,
    target_id: int | None = None,
    guid: str | None = None,
) -> Delivery:
    body = encode(payload)
    guid = guid or str(uuid.uuid4())
    headers = {
        "Accept": "*/*",
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "X-GitHub-Delivery": guid,
        "X-GitHub-Event": event,
        "X-GitHub-Hook-ID": str(HOOK_ID),
        "X-GitHub-Hook-Installation-Target-ID": str(target_id or 0),
        "X-GitHub-Hook-Installation-Target-Type": "integration",
    }
    if secret:
        headers["X-Hub-Signature-256"] = sign(secret, body)
        # GitHub still sends the legacy SHA-1 signature; receivers must ignore it.
        headers["X-Hub-Signature"] = (
            "sha1=" + hmac.new(secret.encode(), body, hashlib.sha1).hexdigest()
        )
    return Delivery(event=event, guid=guid, payload=payload, body=body, headers=headers)


class Outbox:
    def __init__(
        self,
        *,
        secret: str | None = None,
        url: str | None = None,
        target_id: int | None = None,
        timeout: float = 10.0,
    ) -> None:
        self.secret = secret
        self.target_id = target_id
        self.timeout = timeout
        self.deliveries: list[Delivery] = []
        self._lock = threading.Lock()
        # Deliveries to POST, and flush markers (an Event set once everything before it ran).
        self._pending: queue.Queue[Delivery | threading.Event] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._url: str | None = None
        self.url = url

    @property
    def url(self) -> str | None:
        return self._url

    @url.setter
    def url(self, value: str | None) -> None:
        self._url = value
        if value is not None and self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name="fake-github-webhooks", daemon=True
            )
            self._thread.start()

    def emit(self, event: str, payload: dict[str, Any]) -> Delivery:
        delivery = build_delivery(event, payload, secret=self.secret, target_id=self.target_id)
        with self._lock:
            self.deliveries.append(delivery)
        if self._url is not None:
            self._pending.put(delivery)
        return delivery

    def of(self, event: str, action: str | None = None) -> list[Delivery]:
        with self._lock:
            return [
                d
                for d in self.deliveries
                if d.event == event and (action is None or d.action == action)
            ]

    def clear(self) -> None:
        with self._lock:
            self.deliveries.clear()

    def flush(self, timeout: float = 10.0) -> None:
        """Wait until every delivery emitted so far has been POSTed (or failed)."""
        if self._thread is None:
            return
        done = threading.Event()
        self._pending.put(done)
        if not done.wait(timeout):
            raise TimeoutError("webhook deliveries did not finish in time")

    def close(self) -> None:
        if self._thread is not None:
            self.flush()

    def _run(self) -> None:
        with httpx.Client(timeout=self.timeout, verify=client_context()) as client:
            while True:
                item = self._pending.get()
                if isinstance(item, threading.Event):
                    item.set()
                    continue
                url = self._url
                if url is None:
                    continue
                try:
                    item.status = item.send(url, client).status_code
                except httpx.HTTPError as exc:
                    item.error = f"{type(exc).__name__}: {exc}"
