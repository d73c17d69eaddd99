"""The dashboard token (landbot.web.access): made once with mode 600 in the state folder,
reused on every start, refused when anyone else could have read or written it, compared in
constant time, and shown in full only in the address a person opens."""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from landbot.config import Settings
from landbot.errors import LandbotError
from landbot.store import Store
from landbot.web import access, board
from landbot.web.app import create_app

from .conftest import make_settings


def state_settings(state: Path, **web: str) -> Settings:
    return Settings(fixer={"state_dir": state}, web=web)  # type: ignore[arg-type]


@pytest.fixture
def open_umask() -> Iterator[None]:
    """umask 0: whatever mode the token file gets is the one landbot asked for."""
    old = os.umask(0)
    try:
        yield
    finally:
        os.umask(old)


def test_the_first_start_makes_the_token_with_mode_600(tmp_path: Path, open_umask: None) -> None:
    state = tmp_path / "state" / "deeper"  # made if missing
    token = access.load_or_make(state_settings(state))
    path = state / "web-token"
    assert token is not None and path.read_text() == token + "\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert len(token) == 43 and token.replace("-", "").replace("_", "").isalnum()
    assert sorted(p.name for p in state.iterdir()) == ["web-token"]  # no draft left behind


def test_the_next_start_reuses_the_token(tmp_path: Path) -> None:
    settings = state_settings(tmp_path)
    first = access.load_or_make(settings)
    before = (tmp_path / "web-token").stat()
    assert access.load_or_make(settings) == first
    assert access.read(settings) == first
    after = (tmp_path / "web-token").stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    # The control: another state folder is another token.
    assert access.load_or_make(state_settings(tmp_path / "other")) != first


def test_serves_starting_at_once_agree_on_one_token(tmp_path: Path) -> None:
    settings = state_settings(tmp_path)
    start = threading.Barrier(8)
    got: list[str | None] = []

    def one() -> None:
        start.wait()
        got.append(access.load_or_make(settings))

    threads = [threading.Thread(target=one) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 8 and len(set(got)) == 1 and got[0] is not None
    assert sorted(p.name for p in tmp_path.iterdir()) == ["web-token"]


def test_reading_never_makes_one(tmp_path: Path) -> None:
    settings = state_settings(tmp_path / "state")
    assert access.read(settings) is None and not (tmp_path / "state").exists()
    line = access.status_line(settings)
    assert "no token yet" in line and str((tmp_path / "state" / "web-token").absolute()) in line


def test_a_token_set_or_switched_off_makes_no_file(tmp_path: Path) -> None:
    own = state_settings(tmp_path, token="the-operator-s-token")
    assert access.load_or_make(own) == "the-operator-s-token" == access.read(own)
    assert access.where(own) == "[web] token"
    off = state_settings(tmp_path, auth="loopback")
    assert access.load_or_make(off) is None and access.read(off) is None
    assert list(tmp_path.iterdir()) == []
    assert '[web] auth is "loopback"' in access.status_line(off)


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o620, 0o602, 0o644])
def test_a_token_file_others_may_read_or_write_is_refused(tmp_path: Path, mode: int) -> None:
    settings = state_settings(tmp_path)
    token = access.load_or_make(settings)
    path = tmp_path / "web-token"
    path.chmod(0o400)
    assert access.read(settings) == token  # the control: stricter than 600 is fine
    path.chmod(mode)
    with pytest.raises(LandbotError) as caught:
        access.load_or_make(settings)
    message = str(caught.value)
    assert f"mode {mode:o}" in message and f"chmod 600 {path}" in message
    assert "\n" not in message and str(token) not in message
    assert "readable or writable by others" in access.status_line(settings)


def test_a_token_file_that_is_not_landbot_s_is_refused(tmp_path: Path) -> None:
    settings = state_settings(tmp_path)
    path = tmp_path / "web-token"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_text("x" * 43 + "\n")
    elsewhere.chmod(0o600)
    path.symlink_to(elsewhere)
    with pytest.raises(LandbotError, match="cannot read the dashboard token"):
        access.load_or_make(settings)  # a link is not followed (it could point anywhere)
    path.unlink()
    path.mkdir()
    with pytest.raises(LandbotError, match="is not a regular file"):
        access.load_or_make(settings)
    path.rmdir()
    for garbled in ("", "short\n", "has a space in it, long enough\n"):
        path.write_text(garbled)
        path.chmod(0o600)
        with pytest.raises(LandbotError, match="does not hold a dashboard token"):
            access.load_or_make(settings)
    path.write_text("y" * 43 + "\n")  # the control: a good file is taken
    assert access.read(settings) == "y" * 43
    if os.geteuid() == 0:
        os.chown(path, 65534, 65534)
        with pytest.raises(LandbotError, match="belongs to uid 65534"):
            access.read(settings)


def test_the_address_a_person_opens() -> None:
    assert access.open_url("127.0.0.1", 8080, "abc") == "http://127.0.0.1:8080/?token=abc"
    assert access.open_url("0.0.0.0", 80, None) == "http://127.0.0.1:80/"
    assert access.open_url("::", 80, "t") == "http://[::1]:80/?token=t"
    assert access.open_url("::1", 80, "t") == "http://[::1]:80/?token=t"
    assert access.open_url("localhost", 1, "a b&c") == "http://localhost:1/?token=a%20b%26c"
    assert access.shown("abcdefgh") == "abcd…"


def test_the_token_is_compared_in_constant_time_on_every_request(
    monkeypatch: pytest.MonkeyPatch, store: Store
) -> None:
    seen: list[tuple[bytes, bytes]] = []
    real = board.hmac.compare_digest

    def compare(a: bytes, b: bytes) -> bool:
        seen.append((a, b))
        return real(a, b)

    monkeypatch.setattr(board.hmac, "compare_digest", compare)
    client = TestClient(create_app(make_settings(token="the-real-token"), store))
    assert client.get("/metrics", params={"token": "a-guess"}).status_code == 401
    ok = client.get("/metrics", headers={"Authorization": "Bearer the-real-token"})
    assert ok.status_code == 200
    assert seen == [(b"a-guess", b"the-real-token"), (b"the-real-token", b"the-real-token")]


def test_the_token_lives_where_jobs_never_look(tmp_path: Path) -> None:
    from landbot.sandbox.settings import host_secrets

    settings = state_settings(tmp_path / "state")
    path = access.token_path(settings)
    assert access.load_or_make(settings) is not None
    hidden = host_secrets(settings, tmp_path / "no-config.toml")
    assert any(path.absolute().is_relative_to(folder) for folder in hidden), hidden
