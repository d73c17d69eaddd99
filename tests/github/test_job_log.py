"""Job logs: follow the 302 to the storage host without the token, and stream the body."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from pytest_httpx import HTTPXMock, IteratorStream

from landbot.github.client import GitHubClient
from landbot.github.errors import NotFound

API = "https://api.test"
LOGS = f"{API}/repos/octo/widgets/actions/jobs/1001/logs"
BLOB = "https://blobs.test/logs/1001.txt?sig=abc&se=2027-01-15T08%3A01%3A00Z"


def redirect(httpx_mock: HTTPXMock, location: str = BLOB) -> None:
    httpx_mock.add_response(url=LOGS, status_code=302, headers={"Location": location})


def test_the_redirect_is_followed_without_the_authorization_header(
    client: GitHubClient, httpx_mock: HTTPXMock
) -> None:
    redirect(httpx_mock)
    httpx_mock.add_response(url=BLOB, content=b"2027-01-15T08:00:00.0000000Z hello\n")

    with client.job_log("octo/widgets", 1001) as chunks:
        body = b"".join(chunks)

    assert body == b"2027-01-15T08:00:00.0000000Z hello\n"
    api, blob = httpx_mock.get_requests()
    assert api.headers["authorization"] == "token tok-123"
    assert "authorization" not in blob.headers
    assert blob.url.host == "blobs.test"
    assert client.calls == 1  # the storage host is not an API call


def test_a_same_host_redirect_also_drops_the_token(
    client: GitHubClient, httpx_mock: HTTPXMock
) -> None:
    """httpx would keep Authorization for a same-origin redirect; the log fetch never sends it."""
    same = f"{API}/_blobs/1001.txt?sig=abc"
    redirect(httpx_mock, same)
    httpx_mock.add_response(url=same, content=b"log\n")

    with client.job_log("octo/widgets", 1001) as chunks:
        assert b"".join(chunks) == b"log\n"
    assert "authorization" not in httpx_mock.get_requests(url=same)[0].headers


def test_the_log_is_streamed_in_chunks_not_read_whole(
    client: GitHubClient, httpx_mock: HTTPXMock
) -> None:
    produced: list[int] = []

    def body() -> Iterator[bytes]:
        for n in range(5):
            produced.append(n)
            yield f"2027-01-15T08:00:0{n}.0000000Z line {n}\n".encode()

    redirect(httpx_mock)
    httpx_mock.add_response(url=BLOB, stream=IteratorStream(body()))

    with client.job_log("octo/widgets", 1001) as chunks:
        assert produced == []  # nothing read before the caller iterates
        first = next(chunks)
        assert first == b"2027-01-15T08:00:00.0000000Z line 0\n"
        assert produced == [0]  # one chunk pulled, the rest still at the server
        rest = list(chunks)

    assert len(rest) == 4
    assert produced == [0, 1, 2, 3, 4]


def test_a_log_served_directly_is_streamed_too(client: GitHubClient, httpx_mock: HTTPXMock) -> None:
    httpx_mock.add_response(url=LOGS, stream=IteratorStream([b"a\n", b"b\n"]))

    with client.job_log("octo/widgets", 1001) as chunks:
        assert list(chunks) == [b"a\n", b"b\n"]


def test_a_missing_log_is_not_found(client: GitHubClient, httpx_mock: HTTPXMock) -> None:
    httpx_mock.add_response(url=LOGS, status_code=404, json={"message": "Not Found"})

    with pytest.raises(NotFound), client.job_log("octo/widgets", 1001):
        pass
    assert len(httpx_mock.get_requests()) == 1


def test_a_storage_5xx_asks_the_api_again(
    client: GitHubClient, httpx_mock: HTTPXMock, fake_time: Any
) -> None:
    """The signed URL is short-lived, so a retry starts from the API for a fresh one."""
    fresh = BLOB.replace("sig=abc", "sig=def")
    redirect(httpx_mock)
    httpx_mock.add_response(url=BLOB, status_code=503)
    redirect(httpx_mock, fresh)
    httpx_mock.add_response(url=fresh, content=b"ok\n")

    with client.job_log("octo/widgets", 1001) as chunks:
        assert b"".join(chunks) == b"ok\n"
    assert fake_time.sleeps == [0.75]
    assert client.calls == 2


def test_a_timeout_before_the_redirect_is_retried(
    client: GitHubClient, httpx_mock: HTTPXMock, fake_time: Any
) -> None:
    httpx_mock.add_exception(httpx.ReadTimeout("slow"), url=LOGS)
    redirect(httpx_mock)
    httpx_mock.add_response(url=BLOB, content=b"ok\n")

    with client.job_log("octo/widgets", 1001) as chunks:
        assert b"".join(chunks) == b"ok\n"
    assert fake_time.sleeps == [0.75]
