"""Who is calling: an installation or personal token, or a GitHub App's RS256 JWT."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass

import jwt

from landbot.sim.model import FakeGitHub
from landbot.sim.state import App, Token

# GitHub refuses a JWT whose expiry is more than ten minutes ahead.
MAX_JWT_LIFETIME = 600
CLOCK_SKEW = 30


class AuthError(Exception):
    """401 with GitHub's message."""

    def __init__(self, message: str = "Bad credentials") -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class Caller:
    token: Token | None = None
    app: App | None = None

    @property
    def login(self) -> str:
        if self.token is not None:
            return self.token.login
        assert self.app is not None
        return self.app.bot_login


def credential(headers: Mapping[str, str]) -> str | None:
    value = headers.get("authorization")
    if not value:
        return None
    scheme, _, rest = value.partition(" ")
    if scheme.lower() not in ("token", "bearer") or not rest.strip():
        return None
    return rest.strip()


def looks_like_jwt(value: str) -> bool:
    return value.count(".") == 2 and value.startswith("eyJ")


def verify_app_jwt(gh: FakeGitHub, value: str) -> App:
    """The App whose private key signed this JWT, checked the way GitHub checks it."""
    try:
        claims = jwt.decode(value, options={"verify_signature": False})
        header = jwt.get_unverified_header(value)
    except jwt.PyJWTError:
        raise AuthError("A JSON web token could not be decoded") from None
    if header.get("alg") != "RS256":
        raise AuthError("A JSON web token could not be decoded")
    issuer = str(claims.get("iss", ""))
    app = next(
        (a for a in gh.apps.values() if issuer in (str(a.id), f"Iv23li{a.id:08d}")),
        None,
    )
    if app is None:
        raise AuthError("Integration not found")
    try:
        verified = jwt.decode(
            value,
            app.public_key_pem,
            algorithms=["RS256"],
            options={"require": ["exp", "iat", "iss"]},
            leeway=CLOCK_SKEW,
        )
    except jwt.ExpiredSignatureError:
        raise AuthError(
            "'Expiration time' claim ('exp') must be a numeric value representing the "
            "future time at which the assertion expires"
        ) from None
    except jwt.ImmatureSignatureError:
        raise AuthError(
            "'Issued at' claim ('iat') must be an Integer representing the time that the "
            "assertion was issued"
        ) from None
    except jwt.PyJWTError:
        raise AuthError("A JSON web token could not be decoded") from None
    if int(verified["exp"]) - time.time() > MAX_JWT_LIFETIME + CLOCK_SKEW:
        raise AuthError("'Expiration time' claim ('exp') is too far in the future")
    return app


def authenticate(gh: FakeGitHub, headers: Mapping[str, str], *, jwt_route: bool) -> Caller:
    """A token for API routes; a JWT for the App's own routes. Raises AuthError (401)."""
    value = credential(headers)
    if value is None:
        raise AuthError("Requires authentication")
    if looks_like_jwt(value):
        app = verify_app_jwt(gh, value)
        if not jwt_route:
            raise AuthError(
                "A JSON web token cannot be used for this endpoint; use an installation token"
            )
        return Caller(app=app)
    if jwt_route:
        raise AuthError("A JSON web token could not be decoded")
    token = gh.authenticate(value)
    if token is None:
        raise AuthError("Bad credentials")
    return Caller(token=token)
