"""Credentials: a plain token, or a GitHub App (App ID + private key file).

App auth, as GitHub documents it:
- a JWT (RS256, `iss` = App ID, `iat` 60 s in the past, `exp` 9 min ahead, under GitHub's
  10 min limit) authenticates as the App itself;
- the installation of a repository is `GET /repos/{owner}/{repo}/installation` (with the
  JWT), cached per repository;
- an installation token is `POST /app/installations/{id}/access_tokens` (with the JWT), valid
  for an hour; it is cached per installation and minted again 5 minutes before it expires.

The HTTP calls go through the client (its base URL, retry policy and call counter): the
auth objects receive an `AuthHttp` callable instead of owning a connection. The clock is
injectable so tests can move time.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from landbot.config import GitHubSettings
from landbot.errors import LandbotError
from landbot.github.errors import NotFound
from landbot.github.repos import repo_path

JWT_BACKDATE = 60.0  # GitHub's advice: iat a minute in the past against clock drift
JWT_LIFETIME = 9 * 60.0  # exp - now; GitHub refuses more than 10 minutes
TOKEN_REFRESH_MARGIN = 5 * 60.0  # mint a new installation token this long before expiry


class AuthHttp(Protocol):
    """How auth asks GitHub something: one JSON call with the given Authorization."""

    def __call__(self, method: str, path: str, *, authorization: str) -> Any: ...


@dataclass
class TokenAuth:
    """A plain token (a PAT, or Actions' GITHUB_TOKEN in a scheduled workflow)."""

    token: str
    kind: str = "token"

    def authorization(self, repo: str | None, http: AuthHttp) -> str:
        return f"token {self.token}"

    def git_token(self, repo: str, http: AuthHttp) -> str:
        return self.token

    def invalidate(self, repo: str | None) -> bool:
        return False  # nothing to refresh: a rejected plain token stays rejected


@dataclass
class _Cached:
    token: str
    expires_at: float


@dataclass
class AppAuth:
    """GitHub App auth: per-repository installation tokens, cached and refreshed."""

    app_id: int
    private_key: str  # PEM
    clock: Callable[[], float] = time.time
    kind: str = "app"
    _key: Any = field(default=None, repr=False)  # the parsed key, so each JWT skips parsing
    _jwt: _Cached | None = field(default=None, repr=False)
    _installations: dict[str, int] = field(default_factory=dict, repr=False)
    _tokens: dict[int, _Cached] = field(default_factory=dict, repr=False)

    def jwt(self) -> str:
        """A JWT for the App, reused until a minute before it expires."""
        now = self.clock()
        if self._jwt is not None and now < self._jwt.expires_at - 60:
            return self._jwt.token
        import jwt

        if self._key is None:
            self._key = _parsed_key(self.private_key)
        iat = int(now - JWT_BACKDATE)
        exp = int(now + JWT_LIFETIME)
        token = jwt.encode(
            {"iss": str(self.app_id), "iat": iat, "exp": exp}, self._key, algorithm="RS256"
        )
        self._jwt = _Cached(token, float(exp))
        return token

    def app_authorization(self) -> str:
        return f"Bearer {self.jwt()}"

    def installation_id(self, repo: str, http: AuthHttp) -> int:
        key = repo.lower()
        if key not in self._installations:
            try:
                data = http(
                    "GET", f"{repo_path(repo)}/installation", authorization=self.app_authorization()
                )
            except NotFound as exc:
                raise NotFound(
                    404,
                    f"the GitHub App {self.app_id} is not installed on {repo}; install it on "
                    "that repository (or fix LANDBOT_GITHUB__APP_ID)",
                    method=exc.method,
                    url=exc.url,
                ) from exc
            self._installations[key] = int(data["id"])
        return self._installations[key]

    def default_installation(self, http: AuthHttp) -> int:
        """The installation for a call that names no repository (a node-id mutation).

        Works when the App has one installation; otherwise the caller must name the repo.
        """
        known = set(self._installations.values())
        if len(known) == 1:
            return known.pop()
        data = http("GET", "/app/installations", authorization=self.app_authorization())
        ids = [int(item["id"]) for item in data]
        if len(ids) != 1:
            raise LandbotError(
                f"the GitHub App {self.app_id} has {len(ids)} installations; pass repo= to say "
                "which repository this call is for"
            )
        return ids[0]

    def installation_token(self, installation_id: int, http: AuthHttp) -> str:
        now = self.clock()
        cached = self._tokens.get(installation_id)
        if cached is not None and now < cached.expires_at - TOKEN_REFRESH_MARGIN:
            return cached.token
        data = http(
            "POST",
            f"/app/installations/{installation_id}/access_tokens",
            authorization=self.app_authorization(),
        )
        token = str(data["token"])
        expires_at = _parse_expiry(data.get("expires_at"), now)
        self._tokens[installation_id] = _Cached(token, expires_at)
        return token

    def authorization(self, repo: str | None, http: AuthHttp) -> str:
        installation = self.installation_id(repo, http) if repo else self.default_installation(http)
        return f"token {self.installation_token(installation, http)}"

    def git_token(self, repo: str, http: AuthHttp) -> str:
        return self.installation_token(self.installation_id(repo, http), http)

    def invalidate(self, repo: str | None) -> bool:
        """Forget the repository's installation and token after a 401 (revoked, reinstalled)."""
        if repo is None:
            had = bool(self._tokens)
            self._tokens.clear()
            return had
        installation = self._installations.pop(repo.lower(), None)
        if installation is None:
            return False
        self._tokens.pop(installation, None)
        return True


Auth = TokenAuth | AppAuth


def _parse_expiry(value: Any, now: float) -> float:
    """expires_at of an installation token; an hour from now if GitHub left it out."""
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value).timestamp()
        except ValueError:
            pass
    return now + 3600.0


def make_auth(settings: GitHubSettings, *, clock: Callable[[], float] = time.time) -> Auth:
    """The credentials the settings describe, or LandbotError naming what is missing.

    App auth wins when both are set: only an installation token's pushes and enqueues
    start workflows.
    """
    if settings.app_id is not None or settings.private_key_file is not None:
        if settings.app_id is None:
            raise LandbotError(
                "setting LANDBOT_GITHUB__APP_ID is not set but LANDBOT_GITHUB__PRIVATE_KEY_FILE "
                "is; set the App ID too (github.app_id in config/landbot.toml)"
            )
        if settings.private_key_file is None:
            raise LandbotError(
                "setting LANDBOT_GITHUB__PRIVATE_KEY_FILE is not set but LANDBOT_GITHUB__APP_ID "
                "is; point it at the App's private key (.pem)"
            )
        return AppAuth(settings.app_id, read_private_key(settings.private_key_file), clock)
    if settings.token is not None and settings.token.get_secret_value():
        return TokenAuth(settings.token.get_secret_value())
    raise LandbotError(
        "no GitHub credentials: set LANDBOT_GITHUB__TOKEN, or LANDBOT_GITHUB__APP_ID and "
        "LANDBOT_GITHUB__PRIVATE_KEY_FILE"
    )


def read_private_key(path: Path) -> str:
    """The App's PEM private key, checked to be an RSA key (GitHub's JWTs are RS256)."""
    try:
        pem = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise LandbotError(
            f"cannot read the GitHub App private key {path}: {reason}; fix "
            "LANDBOT_GITHUB__PRIVATE_KEY_FILE"
        ) from None
    from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey

    try:
        key = _parsed_key(pem)
    except (ValueError, TypeError) as exc:
        raise LandbotError(
            f"the GitHub App private key {path} is not an unencrypted PEM private key ({exc}); "
            "download a new key from the App's settings"
        ) from None
    if not isinstance(key, RSAPrivateKey):
        raise LandbotError(
            f"the GitHub App private key {path} is not an RSA key; GitHub App keys are RSA"
        )
    return pem


# Parsing a PEM key checks the RSA key's consistency: about 65 ms of CPU each time. Once per
# key per process, then, rather than once to check it and again for the first JWT of every
# client (a worker or a poll makes several). A failure is not cached (lru_cache keeps only
# results), so a key file mended while landbot runs is read afresh.
@functools.lru_cache(maxsize=4)
def _parsed_key(pem: str) -> Any:
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    return load_pem_private_key(pem.encode(), password=None)


__all__ = [
    "AppAuth",
    "Auth",
    "AuthHttp",
    "TokenAuth",
    "make_auth",
]
