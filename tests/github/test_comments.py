"""The marked-comment upsert: the bot edits its own comment, never anyone else's."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pytest_httpx import HTTPXMock

from landbot.github.client import GitHubClient

API = "https://api.test"
LIST = f"{API}/repos/octo/widgets/issues/5/comments?per_page=100"
CREATE = f"{API}/repos/octo/widgets/issues/5/comments"
MARKER = "<!-- landbot:status -->"
BOT = "octo-bot"  # GET /user of the token


def comment(id_: int, login: str, body: str) -> dict[str, Any]:
    return {
        "id": id_,
        "node_id": f"IC_{id_}",
        "body": body,
        "user": {"login": login},
        "created_at": "2027-01-15T08:00:00Z",
        "html_url": f"https://github.test/octo/widgets/pull/5#issuecomment-{id_}",
    }


def edit_url(id_: int) -> str:
    return f"{API}/repos/octo/widgets/issues/comments/{id_}"


@pytest.fixture
def whoami(httpx_mock: HTTPXMock) -> None:
    httpx_mock.add_response(url=f"{API}/user", json={"login": BOT})


def sent_body(httpx_mock: HTTPXMock, method: str) -> str:
    (request,) = httpx_mock.get_requests(method=method)
    body: str = json.loads(request.content)["body"]
    return body


def test_it_edits_its_own_marked_comment(
    client: GitHubClient, httpx_mock: HTTPXMock, whoami: None
) -> None:
    httpx_mock.add_response(
        url=LIST,
        json=[
            comment(1, "alice", "please land this"),
            comment(2, BOT, f"{MARKER}\nold status"),
        ],
    )
    new = f"{MARKER}\nnew status"
    httpx_mock.add_response(url=edit_url(2), method="PATCH", json=comment(2, BOT, new))

    got = client.upsert_marked_comment("octo/widgets", 5, MARKER, new)

    assert got.id == 2 and got.body == new
    assert sent_body(httpx_mock, "PATCH") == new
    assert not httpx_mock.get_requests(method="POST")


def test_another_users_comment_with_the_marker_is_never_edited(
    client: GitHubClient, httpx_mock: HTTPXMock, whoami: None
) -> None:
    httpx_mock.add_response(
        url=LIST, json=[comment(1, "mallory", f"{MARKER}\nI pasted the bot's marker")]
    )
    new = f"{MARKER}\nstatus"
    httpx_mock.add_response(url=CREATE, method="POST", status_code=201, json=comment(3, BOT, new))

    got = client.upsert_marked_comment("octo/widgets", 5, MARKER, new)

    assert got.id == 3
    assert sent_body(httpx_mock, "POST") == new
    assert not httpx_mock.get_requests(method="PATCH")


def test_it_creates_the_comment_when_there_is_none(
    client: GitHubClient, httpx_mock: HTTPXMock, whoami: None
) -> None:
    httpx_mock.add_response(url=LIST, json=[comment(1, BOT, "a comment without the marker")])
    httpx_mock.add_response(
        url=CREATE, method="POST", status_code=201, json=comment(3, BOT, f"{MARKER}\nstatus")
    )

    got = client.upsert_marked_comment("octo/widgets", 5, MARKER, "status")

    assert got.id == 3
    # the marker is added so the next upsert finds this comment
    assert sent_body(httpx_mock, "POST") == f"{MARKER}\nstatus"


def test_an_unchanged_comment_is_not_sent_again(
    client: GitHubClient, httpx_mock: HTTPXMock, whoami: None
) -> None:
    body = f"{MARKER}\nsame"
    httpx_mock.add_response(url=LIST, json=[comment(2, BOT, body)])

    got = client.upsert_marked_comment("octo/widgets", 5, MARKER, body)

    assert got.id == 2
    assert not httpx_mock.get_requests(method="PATCH")
    assert not httpx_mock.get_requests(method="POST")


def test_with_several_own_marked_comments_the_latest_is_edited(
    client: GitHubClient, httpx_mock: HTTPXMock, whoami: None
) -> None:
    httpx_mock.add_response(
        url=LIST, json=[comment(2, BOT, f"{MARKER}\nolder"), comment(4, BOT, f"{MARKER}\nnewer")]
    )
    httpx_mock.add_response(url=edit_url(4), method="PATCH", json=comment(4, BOT, f"{MARKER}\nx"))

    assert client.upsert_marked_comment("octo/widgets", 5, MARKER, f"{MARKER}\nx").id == 4


def test_a_known_id_is_edited_without_listing(client: GitHubClient, httpx_mock: HTTPXMock) -> None:
    body = f"{MARKER}\nstatus"
    httpx_mock.add_response(url=edit_url(2), method="PATCH", json=comment(2, BOT, body))

    assert client.upsert_marked_comment("octo/widgets", 5, MARKER, body, known_id=2).id == 2
    assert client.calls == 1


def test_a_known_id_that_was_deleted_falls_back_to_the_listing(
    client: GitHubClient, httpx_mock: HTTPXMock, whoami: None
) -> None:
    body = f"{MARKER}\nstatus"
    httpx_mock.add_response(
        url=edit_url(2), method="PATCH", status_code=404, json={"message": "Not Found"}
    )
    httpx_mock.add_response(url=LIST, json=[])
    httpx_mock.add_response(url=CREATE, method="POST", status_code=201, json=comment(7, BOT, body))

    assert client.upsert_marked_comment("octo/widgets", 5, MARKER, body, known_id=2).id == 7


def test_mutations_are_spaced_a_second_apart(
    client: GitHubClient, httpx_mock: HTTPXMock, fake_time: Any
) -> None:
    httpx_mock.add_response(
        url=CREATE, method="POST", status_code=201, json=comment(3, BOT, "x"), is_reusable=True
    )

    client.create_comment("octo/widgets", 5, "x")
    assert fake_time.sleeps == []  # the first mutation does not wait
    client.create_comment("octo/widgets", 5, "x")
    assert fake_time.sleeps == [1.0]  # the clock had not moved: a full second
    fake_time.now += 5
    client.create_comment("octo/widgets", 5, "x")
    assert fake_time.sleeps == [1.0]  # long enough apart already


def test_reactions_and_minimizing(client: GitHubClient, httpx_mock: HTTPXMock) -> None:
    httpx_mock.add_response(
        url=f"{API}/repos/octo/widgets/issues/comments/2/reactions",
        method="POST",
        match_json={"content": "eyes"},
        status_code=201,
        json={"id": 1, "content": "eyes"},
    )
    httpx_mock.add_response(
        url=f"{API}/graphql",
        method="POST",
        json={"data": {"minimizeComment": {"minimizedComment": {"isMinimized": True}}}},
    )

    client.add_reaction("octo/widgets", 2, "eyes")
    client.minimize_comment("IC_2")

    gql = json.loads(httpx_mock.get_requests(url=f"{API}/graphql")[0].content)
    assert gql["variables"] == {"subjectId": "IC_2", "classifier": "OUTDATED"}
    assert gql["query"].lstrip().startswith("# Fold")  # the document from queries/


def test_a_reaction_after_a_502_is_retried_since_github_dedupes_it(
    client: GitHubClient, httpx_mock: HTTPXMock, fake_time: Any
) -> None:
    url = f"{API}/repos/octo/widgets/issues/comments/2/reactions"
    httpx_mock.add_response(url=url, method="POST", status_code=502)
    httpx_mock.add_response(url=url, method="POST", status_code=200, json={"id": 1})

    client.add_reaction("octo/widgets", 2, "+1")

    assert fake_time.sleeps == [0.75]
