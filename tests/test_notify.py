"""Notifications beyond GitHub (issue 27, point 5) against a local receiver on 127.0.0.1:
one unsigned JSON `{"text": …}` POST, the URL never logged whole, a short timeout, and a
failure that is logged and never raised."""

from __future__ import annotations

import io
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from pydantic import SecretStr

from landbot import logs
from landbot.config import NotifySettings, Settings
from landbot.notify import MAX_TEXT, notify, where

SECRET_PATH = "/services/T0001/B0002/abcdefghijklmnopqrstuvwx"


@dataclass
class Receiver:
    url: str
    got: list[tuple[str, dict[str, str], bytes]] = field(default_factory=list)
    answer: int = 200
    delay: float = 0.0
    location: str | None = None


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    state: dict[str, Receiver] = {}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            r = state["r"]
            body = self.rfile.read(int(self.headers.get("content-length", 0)))
            r.got.append((self.path, dict(self.headers), body))
            time.sleep(r.delay)
            self.send_response(r.answer)
            if r.location:
                self.send_header("Location", r.location)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    state["r"] = Receiver(url=f"http://127.0.0.1:{server.server_port}{SECRET_PATH}")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield state["r"]
    server.shutdown()
    server.server_close()


@pytest.fixture
def log_out() -> Iterator[io.StringIO]:
    out = io.StringIO()
    logs.configure("debug", stream=out, json_lines=True)
    yield out
    logs.reset()
    logs.forget_secrets()


def settings(url: str | None, timeout: float = 3) -> NotifySettings:
    return NotifySettings(webhook_url=SecretStr(url) if url else None, timeout=timeout)


def test_one_json_post_with_the_text(receiver: Receiver, log_out: io.StringIO) -> None:
    assert notify(settings(receiver.url), "landbot handed acme/widgets#7 back") is True
    [(path, headers, body)] = receiver.got
    assert path == SECRET_PATH
    assert json.loads(body) == {"text": "landbot handed acme/widgets#7 back"}
    assert headers["Content-Type"] == "application/json"
    # Unsigned: no signature or credential header of any kind.
    assert not [h for h in headers if "signature" in h.lower() or h.lower() == "authorization"]
    assert SECRET_PATH not in log_out.getvalue()


def test_the_settings_object_or_its_section(receiver: Receiver) -> None:
    whole = Settings(notify=settings(receiver.url))
    assert notify(whole, "a") is True and len(receiver.got) == 1


def test_unset_sends_nothing(receiver: Receiver) -> None:
    assert notify(settings(None), "nothing") is False
    assert notify(Settings(), "nothing") is False
    assert receiver.got == []
    assert notify(settings(receiver.url), "control") is True  # the control: set, sent
    assert len(receiver.got) == 1


def test_a_refusal_is_logged_not_raised(receiver: Receiver, log_out: io.StringIO) -> None:
    receiver.answer = 500
    assert notify(settings(receiver.url), "x") is False
    text = log_out.getvalue()
    assert "notification refused" in text and '"status": 500' in text
    assert SECRET_PATH not in text and "abcdefghijkl" not in text
    assert "http://127.0.0.1/…" in text  # where it went: scheme and host only


def test_a_slow_receiver_is_given_up_quickly(receiver: Receiver, log_out: io.StringIO) -> None:
    receiver.delay = 2.0
    start = time.monotonic()
    assert notify(settings(receiver.url, timeout=0.3), "x") is False
    assert time.monotonic() - start < 1.5
    assert "notification not sent" in log_out.getvalue()
    assert "ReadTimeout" in log_out.getvalue()
    assert SECRET_PATH not in log_out.getvalue()


def test_nobody_listening_is_logged(log_out: io.StringIO) -> None:
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert notify(settings(f"http://127.0.0.1:{port}{SECRET_PATH}"), "x") is False
    assert "ConnectError" in log_out.getvalue()
    assert SECRET_PATH not in log_out.getvalue()


def test_a_redirect_is_not_followed(receiver: Receiver) -> None:
    receiver.answer = 302
    receiver.location = receiver.url.replace(SECRET_PATH, "/elsewhere")
    assert notify(settings(receiver.url), "x") is False
    assert [p for p, _, _ in receiver.got] == [SECRET_PATH]  # not sent on


def test_a_long_text_is_cut(receiver: Receiver) -> None:
    assert notify(settings(receiver.url), "y" * (MAX_TEXT + 500)) is True
    text = json.loads(receiver.got[0][2])["text"]
    assert len(text) == MAX_TEXT and text.endswith("…")


def test_the_url_is_masked_in_librarys_lines_too(receiver: Receiver, log_out: io.StringIO) -> None:
    """httpx logs each request's URL at info (shown at debug): the whole URL is a secret."""
    assert notify(settings(receiver.url), "x") is True
    assert "HTTP Request" in log_out.getvalue()  # the control: httpx did log the request
    assert SECRET_PATH not in log_out.getvalue()


@pytest.mark.parametrize("bad", ["ftp://x/y", "hooks.slack.com/services/x", "file:///etc/passwd"])
def test_only_http_urls_are_taken(bad: str) -> None:
    with pytest.raises(ValueError) as caught:
        settings(bad)
    assert bad not in str(caught.value)  # the refusal does not echo the secret
    assert settings("https://hooks.example.com/x").webhook_url is not None  # control


def test_where_keeps_only_scheme_and_host() -> None:
    assert where("https://hooks.slack.com/services/T/B/X") == "https://hooks.slack.com/…"
