"""Fixtures for the GitHub client tests: settings, a fake clock, a client, an RSA key.

HTTP is intercepted by pytest-httpx (githubkit is built on httpx): every mocked response
must be requested and every request must be mocked, so a retry that should not happen, or
a request that was not expected, fails the test.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from pydantic import SecretStr

from landbot.config import GitHubSettings
from landbot.github.client import GitHubClient
from landbot.github.retry import RetryPolicy
from landbot.sim.limits import FakeTime  # moves only when the code sleeps

API = "https://api.test"  # the tests' modules spell it out too


@pytest.fixture
def fake_time() -> FakeTime:
    return FakeTime()


@pytest.fixture
def settings() -> GitHubSettings:
    return GitHubSettings(api_url=API, token=SecretStr("tok-123"))


MakeClient = Callable[..., GitHubClient]


@pytest.fixture
def make_client(settings: GitHubSettings, fake_time: FakeTime) -> Iterator[MakeClient]:
    """Build clients on the fake clock (jitter fixed at 0.5); closed after the test."""
    made: list[GitHubClient] = []

    def make(github: GitHubSettings | None = None, **kwargs: Any) -> GitHubClient:
        kwargs.setdefault("rand", lambda: 0.5)
        kwargs.setdefault("policy", RetryPolicy())
        c = GitHubClient(github or settings, sleep=fake_time.sleep, clock=fake_time.clock, **kwargs)
        made.append(c)
        return c

    yield make
    for c in made:
        c.close()


@pytest.fixture
def client(make_client: MakeClient) -> GitHubClient:
    return make_client()


@dataclass
class AppKey:
    path: Path
    public_pem: bytes


@pytest.fixture(scope="session")
def app_key(tmp_path_factory: pytest.TempPathFactory) -> AppKey:
    """A throwaway 2048-bit RSA key, as GitHub hands out for an App."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )
    path = tmp_path_factory.mktemp("app") / "app.pem"
    path.write_bytes(pem)
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return AppKey(path, public)
