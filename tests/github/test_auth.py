"""GitHub App auth: the JWT, the installation per repository, cached and refreshed tokens."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from pydantic import SecretStr
from pytest_httpx import HTTPXMock

from landbot.config import GitHubSettings
from landbot.errors import LandbotError
from landbot.github.auth import (
    JWT_BACKDATE,
    TOKEN_REFRESH_MARGIN,
    AppAuth,
    TokenAuth,
    make_auth,
)
from landbot.github.errors import NotFound

API = "https://api.test"
START = 1_800_000_000.0
INSTALLATION_URL = f"{API}/repos/octo/widgets/installation"
TOKENS_URL = f"{API}/app/installations/42/access_tokens"
PERMISSION_URL = f"{API}/repos/octo/widgets/collaborators/alice/permission"
PERMISSION = {"permission": "write", "role_name": "write", "user": {"login": "alice"}}


def iso(epoch: float) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.fixture
def app_settings(app_key: Any) -> GitHubSettings:
    return GitHubSettings(api_url=API, app_id=123, private_key_file=app_key.path)


def add_installation(httpx_mock: HTTPXMock, installation_id: int = 42) -> None:
    httpx_mock.add_response(url=INSTALLATION_URL, json={"id": installation_id, "app_id": 123})


def add_token(httpx_mock: HTTPXMock, token: str, expires_at: float) -> None:
    httpx_mock.add_response(
        url=TOKENS_URL,
        method="POST",
        status_code=201,
        json={"token": token, "expires_at": iso(expires_at), "permissions": {}},
    )


def bearer(request: httpx.Request) -> str:
    kind, _, value = request.headers["authorization"].partition(" ")
    assert kind == "Bearer"
    return value


# --- the JWT ----------------------------------------------------------------------------


def test_the_jwt_is_rs256_from_the_app_id_backdated_and_short_lived(
    app_key: Any, fake_time: Any
) -> None:
    auth = AppAuth(123, app_key.path.read_text(), clock=fake_time.clock)
    token = auth.jwt()

    assert jwt.get_unverified_header(token)["alg"] == "RS256"
    # verify the signature with the App's public key; time checks are ours (fake clock)
    claims = jwt.decode(
        token,
        app_key.public_pem,
        algorithms=["RS256"],
        options={"verify_exp": False, "verify_iat": False, "verify_nbf": False},
    )
    assert claims["iss"] == "123"
    assert claims["iat"] < START and claims["iat"] == START - JWT_BACKDATE
    assert START < claims["exp"] <= START + 600


def test_the_jwt_does_not_verify_with_another_key(app_key: Any, fake_time: Any) -> None:
    """The control: the signature check above can fail."""
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048).public_key()
    other_pem = other.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    token = AppAuth(123, app_key.path.read_text(), clock=fake_time.clock).jwt()
    with pytest.raises(jwt.InvalidSignatureError):
        jwt.decode(token, other_pem, algorithms=["RS256"], options={"verify_exp": False})


def test_the_jwt_is_reused_until_a_minute_before_expiry(app_key: Any, fake_time: Any) -> None:
    auth = AppAuth(123, app_key.path.read_text(), clock=fake_time.clock)
    first = auth.jwt()
    fake_time.now += 7 * 60
    assert auth.jwt() == first
    fake_time.now += 2 * 60  # now within a minute of exp (9 min after minting)
    assert auth.jwt() != first


# --- installation and token -------------------------------------------------------------


def test_the_installation_is_found_from_the_repository_and_its_token_reused(
    make_client: Any, app_settings: GitHubSettings, httpx_mock: HTTPXMock
) -> None:
    client = make_client(app_settings)
    add_installation(httpx_mock)
    add_token(httpx_mock, "ghs_first", START + 3600)
    httpx_mock.add_response(url=PERMISSION_URL, json=PERMISSION, is_reusable=True)

    assert client.collaborator_permission("octo/widgets", "alice") == "write"
    assert client.collaborator_permission("octo/widgets", "alice") == "write"

    lookup, mint, *calls = httpx_mock.get_requests()
    assert lookup.url == INSTALLATION_URL and lookup.method == "GET"
    assert mint.url == TOKENS_URL and mint.method == "POST"
    claims = jwt.decode(bearer(lookup), options={"verify_signature": False})
    assert claims["iss"] == "123"
    assert bearer(mint) == bearer(lookup)
    # minted once, used twice
    assert [r.headers["authorization"] for r in calls] == ["token ghs_first"] * 2
    assert client.calls == 4


def test_the_token_is_minted_again_when_near_expiry(
    make_client: Any, app_settings: GitHubSettings, httpx_mock: HTTPXMock, fake_time: Any
) -> None:
    client = make_client(app_settings)
    add_installation(httpx_mock)
    add_token(httpx_mock, "ghs_first", START + 3600)
    add_token(httpx_mock, "ghs_second", START + 2 * 3600)
    httpx_mock.add_response(url=PERMISSION_URL, json=PERMISSION, is_reusable=True)

    client.collaborator_permission("octo/widgets", "alice")
    fake_time.now = START + 3600 - TOKEN_REFRESH_MARGIN - 1  # not yet: reused
    client.collaborator_permission("octo/widgets", "alice")
    fake_time.now = START + 3600 - TOKEN_REFRESH_MARGIN + 1  # inside the margin: refreshed
    client.collaborator_permission("octo/widgets", "alice")

    used = [r.headers["authorization"] for r in httpx_mock.get_requests(url=PERMISSION_URL)]
    assert used == ["token ghs_first", "token ghs_first", "token ghs_second"]
    assert len(httpx_mock.get_requests(url=INSTALLATION_URL)) == 1  # installation cached


def test_git_token_is_the_installation_token(
    make_client: Any, app_settings: GitHubSettings, httpx_mock: HTTPXMock
) -> None:
    client = make_client(app_settings)
    add_installation(httpx_mock)
    add_token(httpx_mock, "ghs_push", START + 3600)

    assert client.git_token("octo/widgets") == "ghs_push"
    assert client.git_token("octo/widgets") == "ghs_push"  # cached: no second mint


def test_git_token_with_a_plain_token(client: Any) -> None:
    assert client.git_token("octo/widgets") == "tok-123"


def test_a_401_forgets_the_token_and_tries_once_more(
    make_client: Any, app_settings: GitHubSettings, httpx_mock: HTTPXMock
) -> None:
    client = make_client(app_settings)
    add_installation(httpx_mock)
    add_token(httpx_mock, "ghs_revoked", START + 3600)
    httpx_mock.add_response(url=PERMISSION_URL, status_code=401, json={"message": "Bad creds"})
    add_installation(httpx_mock)
    add_token(httpx_mock, "ghs_fresh", START + 3600)
    httpx_mock.add_response(url=PERMISSION_URL, json=PERMISSION)

    assert client.collaborator_permission("octo/widgets", "alice") == "write"
    used = [r.headers["authorization"] for r in httpx_mock.get_requests(url=PERMISSION_URL)]
    assert used == ["token ghs_revoked", "token ghs_fresh"]


def test_a_401_with_a_plain_token_is_not_retried(client: Any, httpx_mock: HTTPXMock) -> None:
    from landbot.github.errors import GitHubError

    httpx_mock.add_response(url=PERMISSION_URL, status_code=401, json={"message": "Bad creds"})
    with pytest.raises(GitHubError) as caught:
        client.collaborator_permission("octo/widgets", "alice")
    assert caught.value.status == 401


def test_an_app_not_installed_on_the_repository_says_so(
    make_client: Any, app_settings: GitHubSettings, httpx_mock: HTTPXMock
) -> None:
    client = make_client(app_settings)
    httpx_mock.add_response(url=INSTALLATION_URL, status_code=404, json={"message": "Not Found"})

    with pytest.raises(NotFound, match="not installed on octo/widgets"):
        client.collaborator_permission("octo/widgets", "alice")


def test_a_node_id_mutation_uses_the_installation_of_the_pull_request_read_before(
    make_client: Any, app_settings: GitHubSettings, httpx_mock: HTTPXMock
) -> None:
    client = make_client(app_settings)
    add_installation(httpx_mock)
    add_token(httpx_mock, "ghs_first", START + 3600)
    pr = {
        "id": "PR_5",
        "number": 5,
        "state": "OPEN",
        "merged": False,
        "headRefOid": "a" * 40,
        "headRefName": "f",
        "baseRefName": "main",
        "isInMergeQueue": False,
        "autoMergeRequest": None,
        "labels": {"nodes": []},
        "author": {"login": "alice"},
        "maintainerCanModify": False,
        "headRepository": {"nameWithOwner": "octo/widgets"},
        "url": "https://github.test/octo/widgets/pull/5",
    }
    httpx_mock.add_response(
        url=f"{API}/graphql", json={"data": {"repository": {"pullRequest": pr}}}
    )
    httpx_mock.add_response(
        url=f"{API}/graphql",
        json={"data": {"dequeuePullRequest": {"mergeQueueEntry": {"id": "MQE_1"}}}},
    )

    state = client.pull_request("octo/widgets", 5)
    client.dequeue(state.node_id)  # no repo given: remembered from the read

    graphql = httpx_mock.get_requests(url=f"{API}/graphql")
    assert [r.headers["authorization"] for r in graphql] == ["token ghs_first"] * 2


def test_a_node_id_call_with_no_known_repository_uses_the_single_installation(
    make_client: Any, app_settings: GitHubSettings, httpx_mock: HTTPXMock
) -> None:
    client = make_client(app_settings)
    httpx_mock.add_response(url=f"{API}/app/installations", json=[{"id": 42}])
    add_token(httpx_mock, "ghs_only", START + 3600)
    httpx_mock.add_response(
        url=f"{API}/graphql",
        json={"data": {"minimizeComment": {"minimizedComment": {"isMinimized": True}}}},
    )

    client.minimize_comment("IC_1")

    call = httpx_mock.get_requests(url=f"{API}/graphql")[0]
    assert call.headers["authorization"] == "token ghs_only"


def test_a_node_id_call_with_several_installations_asks_for_the_repository(
    make_client: Any, app_settings: GitHubSettings, httpx_mock: HTTPXMock
) -> None:
    client = make_client(app_settings)
    httpx_mock.add_response(url=f"{API}/app/installations", json=[{"id": 42}, {"id": 43}])

    with pytest.raises(LandbotError, match="2 installations; pass repo="):
        client.minimize_comment("IC_1")


def test_the_bot_login_of_an_app_is_its_slug_with_bot(
    make_client: Any, app_settings: GitHubSettings, httpx_mock: HTTPXMock
) -> None:
    client = make_client(app_settings)
    httpx_mock.add_response(url=f"{API}/app", json={"id": 123, "slug": "landbot-test"})

    assert client.bot_login() == "landbot-test[bot]"
    assert client.bot_login() == "landbot-test[bot]"  # cached
    (request,) = httpx_mock.get_requests()
    assert request.headers["authorization"].startswith("Bearer ")


def test_the_bot_login_of_a_token_is_its_user_or_the_actions_bot(
    make_client: Any, httpx_mock: HTTPXMock
) -> None:
    httpx_mock.add_response(url=f"{API}/user", json={"login": "octo-bot"})
    assert make_client().bot_login() == "octo-bot"
    httpx_mock.add_response(
        url=f"{API}/user",
        status_code=403,
        json={"message": "Resource not accessible by integration"},
    )
    assert make_client().bot_login() == "github-actions[bot]"


# --- settings -----------------------------------------------------------------------------


def test_make_auth_picks_the_kind_from_the_settings(app_key: Any) -> None:
    assert isinstance(make_auth(GitHubSettings(token=SecretStr("t"))), TokenAuth)
    app = make_auth(GitHubSettings(app_id=1, private_key_file=app_key.path))
    assert isinstance(app, AppAuth) and app.app_id == 1
    both = GitHubSettings(token=SecretStr("t"), app_id=1, private_key_file=app_key.path)
    assert isinstance(make_auth(both), AppAuth)  # an installation token starts workflows


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({}, "no GitHub credentials: set LANDBOT_GITHUB__TOKEN"),
        ({"token": SecretStr("")}, "no GitHub credentials"),
        ({"app_id": 1}, "LANDBOT_GITHUB__PRIVATE_KEY_FILE is not set"),
        ({"private_key_file": Path("k.pem")}, "LANDBOT_GITHUB__APP_ID is not set"),
        (
            {"app_id": 1, "private_key_file": Path("/nonexistent/k.pem")},
            "cannot read the GitHub App private key /nonexistent/k.pem",
        ),
    ],
)
def test_missing_or_half_credentials_are_one_clear_line(
    fields: dict[str, Any], message: str
) -> None:
    with pytest.raises(LandbotError) as caught:
        make_auth(GitHubSettings(**fields))
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_key_file_that_is_not_a_pem_key_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "k.pem"
    bad.write_text("-----BEGIN NOTHING-----\nxx\n")
    with pytest.raises(LandbotError, match="is not an unencrypted PEM private key"):
        make_auth(GitHubSettings(app_id=1, private_key_file=bad))


def test_a_key_that_is_not_rsa_is_refused(tmp_path: Path) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    path = tmp_path / "ec.pem"
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    with pytest.raises(LandbotError, match="is not an RSA key"):
        make_auth(GitHubSettings(app_id=1, private_key_file=path))
