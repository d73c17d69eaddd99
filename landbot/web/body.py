"""Reading a request body with a hard cap, without ever holding more than the cap.

GitHub caps payloads at 25 MB; anything larger is not from GitHub. An honest Content-Length
over the cap is refused before one byte of the body is read; a body without one (chunked) or
with a false one is counted while it streams and refused as soon as it passes the cap.
"""

from __future__ import annotations

from contextlib import aclosing

from starlette.datastructures import Headers
from starlette.requests import Request

MAX_BODY_BYTES = 26 * 1024 * 1024  # 26 MiB: GitHub's 25 MB plus headroom


class BodyTooLarge(Exception):
    def __init__(self, seen: int, cap: int) -> None:
        super().__init__(
            f"request body is larger than {cap} bytes ({seen} or more); "
            "GitHub webhook payloads are at most 25 MB"
        )


class BadContentLength(Exception):
    pass


def declared_length(headers: Headers) -> int | None:
    """The Content-Length header as a number, None when absent."""
    values = headers.getlist("content-length")
    if not values:
        return None
    if len(set(values)) != 1 or not values[0].strip().isdigit():
        raise BadContentLength(f"invalid Content-Length header {', '.join(values)!r}")
    return int(values[0])


async def read_capped(request: Request, cap: int = MAX_BODY_BYTES) -> bytes:
    """The whole body, or BodyTooLarge as soon as more than `cap` bytes have arrived."""
    length = declared_length(request.headers)
    if length is not None and length > cap:
        raise BodyTooLarge(length, cap)
    chunks: list[bytes] = []
    seen = 0
    # aclosing: leaving early must close Starlette's stream generator, not leave it pending.
    async with aclosing(request.stream()) as stream:
        async for chunk in stream:
            seen += len(chunk)
            if seen > cap:
                raise BodyTooLarge(seen, cap)
            chunks.append(chunk)
    return b"".join(chunks)
