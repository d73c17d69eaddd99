"""Oversized bodies are refused without being read whole: from an honest Content-Length
before any byte of the body, and while streaming when there is no or a false length.

The ASGI-level tests count exactly how many bytes the app pulled from the server; the
uvicorn tests send bodies that never end, so a server that waited for the end would hang.
"""

from __future__ import annotations

import itertools
import select
import socket
from collections.abc import Iterable

from landbot.store import Store
from landbot.web.app import create_app
from landbot.web.body import MAX_BODY_BYTES

from .conftest import (
    Upload,
    call,
    compact,
    headers_for,
    live_server,
    make_settings,
    payload,
    stored,
)

MiB = 1024 * 1024
CHUNK = MiB


def endless(chunk: bytes = b"x" * CHUNK, limit: int = 64 * MiB) -> Iterable[bytes]:
    """A body of `limit` bytes, far past the cap (the bound only keeps a broken app finite)."""
    return itertools.repeat(chunk, limit // len(chunk))


def padded_delivery(size: int) -> bytes:
    """A real dequeued payload grown to exactly `size` bytes with a long string field."""
    data = payload("pull_request.dequeued.json")
    data["pull_request"]["body"] = ""
    base = len(compact(data))
    data["pull_request"]["body"] = "w" * (size - base)
    body = compact(data)
    assert len(body) == size
    return body


def test_an_honest_content_length_over_the_cap_is_refused_before_reading(store: Store) -> None:
    app = create_app(make_settings(), store)
    headers = headers_for(b"{}")
    headers["Content-Length"] = str(MAX_BODY_BYTES + 1)
    upload = Upload(endless())
    status, body = call(app, headers, upload)
    assert status == 413
    assert f"larger than {MAX_BODY_BYTES} bytes" in body["error"]
    assert upload.pulled == 0  # not one byte of the body was read
    assert stored(store) == []


def test_a_chunked_body_is_cut_off_just_past_the_cap(store: Store) -> None:
    app = create_app(make_settings(), store)
    headers = headers_for(b"{}")  # no Content-Length: Transfer-Encoding chunked
    upload = Upload(endless())
    status, body = call(app, headers, upload)
    assert status == 413, body
    assert MAX_BODY_BYTES < upload.pulled <= MAX_BODY_BYTES + CHUNK
    assert not upload.finished
    assert stored(store) == []


def test_a_false_content_length_does_not_lift_the_cap(store: Store) -> None:
    app = create_app(make_settings(), store)
    headers = headers_for(b"{}")
    headers["Content-Length"] = "1000"  # claims a small body, then streams a huge one
    upload = Upload(endless())
    status, _ = call(app, headers, upload)
    assert status == 413
    assert upload.pulled <= MAX_BODY_BYTES + CHUNK and not upload.finished
    assert stored(store) == []


def test_a_25_mib_streamed_delivery_under_the_cap_is_accepted(store: Store) -> None:
    # Control for the three refusals above: GitHub's largest payload passes whole.
    app = create_app(make_settings(), store)
    body = padded_delivery(25 * MiB)
    headers = headers_for(body, delivery="big-1")
    chunks = (body[i : i + CHUNK] for i in range(0, len(body), CHUNK))
    upload = Upload(chunks)
    status, answer = call(app, headers, upload)
    assert (status, answer["status"]) == (202, "accepted")
    assert upload.finished and upload.pulled == len(body)
    [row] = stored(store)
    assert row.body == body and row.action == "dequeued"


def test_the_cap_is_exact(store: Store) -> None:
    app = create_app(make_settings(), store, max_body_bytes=64 * 1024)
    at_cap = padded_delivery(64 * 1024)
    over = padded_delivery(64 * 1024 + 1)
    status, _ = call(app, headers_for(over), Upload([over]))
    assert status == 413
    status, _ = call(app, headers_for(at_cap), Upload([at_cap]))
    assert status == 202
    assert [len(r.body) for r in stored(store)] == [64 * 1024]


def test_an_invalid_content_length_is_refused(store: Store) -> None:
    app = create_app(make_settings(), store)
    headers = headers_for(b"{}")
    headers["Content-Length"] = "12abc"
    status, body = call(app, headers, Upload([b"{}"]))
    assert status == 400 and "Content-Length" in body["error"]


# --- through a real uvicorn server -----------------------------------------------------


def _request_head(headers: dict[str, str], extra: str) -> bytes:
    lines = ["POST /webhook HTTP/1.1", "Host: 127.0.0.1"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    lines.append(extra)
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def _read_response(sock: socket.socket) -> tuple[int, bytes]:
    data = b""
    sock.settimeout(30)
    while b"\r\n\r\n" not in data:
        part = sock.recv(65536)
        if not part:
            break
        data += part
    head, _, rest = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), head + b"\r\n\r\n" + rest


def _deliver_ok(addr: tuple[str, int]) -> int:
    import httpx

    body = compact(payload("pull_request.dequeued.json"))
    r = httpx.post(f"http://{addr[0]}:{addr[1]}/webhook", content=body, headers=headers_for(body))
    return r.status_code


def test_uvicorn_answers_413_from_content_length_without_waiting_for_the_body(
    store: Store,
) -> None:
    with live_server(create_app(make_settings(), store)) as addr:
        with socket.create_connection(addr) as sock:
            headers = headers_for(b"{}")
            sock.sendall(_request_head(headers, f"Content-Length: {30 * MiB}"))
            # Not one byte of the 30 MiB is sent: the answer must come anyway.
            status, raw = _read_response(sock)
        assert status == 413
        assert b"connection: close" in raw.lower()
        assert stored(store) == []
        assert _deliver_ok(addr) == 202  # and the server goes on serving


def test_uvicorn_cuts_off_an_endless_chunked_body(store: Store) -> None:
    with live_server(create_app(make_settings(), store)) as addr:
        sent = 0
        with socket.create_connection(addr) as sock:
            sock.sendall(_request_head(headers_for(b"{}"), "Transfer-Encoding: chunked"))
            chunk = b"%x\r\n%s\r\n" % (256 * 1024, b"y" * 256 * 1024)
            answered = False
            while sent < 64 * MiB:
                readable, _, _ = select.select([sock], [], [], 0)
                if readable:
                    answered = True
                    break
                try:
                    sock.sendall(chunk)
                except (BrokenPipeError, ConnectionResetError):
                    answered = True  # the server hung up: its answer is in our buffer
                    break
                sent += 256 * 1024
            # The body never ended (no terminating 0-chunk): the server answered anyway.
            assert answered, f"no answer after {sent} bytes"
            status, _ = _read_response(sock)
        assert status == 413
        assert sent < 64 * MiB
        assert stored(store) == []
        assert _deliver_ok(addr) == 202
