"""Fixtures shared by every test folder."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest


def _pg_bin(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    for candidate in sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"), reverse=True):
        return str(candidate)
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A throwaway PostgreSQL server on a unix socket, for the store's PostgreSQL tests.

    LANDBOT_TEST_POSTGRES_URL points the tests at an existing server instead.
    """
    if os.environ.get("LANDBOT_TEST_POSTGRES_URL"):
        yield os.environ["LANDBOT_TEST_POSTGRES_URL"]
        return
    initdb, postgres = _pg_bin("initdb"), _pg_bin("postgres")
    if not initdb or not postgres:
        pytest.skip("PostgreSQL is not installed (scripts/setup installs it); skipping its tests")
    # PostgreSQL refuses to run as root: run it as an unprivileged user.
    user = "postgres" if _has_user("postgres") else "nobody"
    base = Path(tempfile.mkdtemp(prefix="landbot-pg-"))
    data, sock = base / "data", base / "sock"
    sock.mkdir()
    shutil.chown(base, user)
    shutil.chown(sock, user)
    drop = (
        ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups"]
        if os.getuid() == 0
        else []
    )
    subprocess.run(
        [*drop, initdb, "-D", str(data), "-U", "landbot", "--auth=trust", "-E", "UTF8"],
        check=True,
        capture_output=True,
    )
    port = _free_port()
    proc = subprocess.Popen(
        [
            *drop,
            postgres,
            "-D",
            str(data),
            "-k",
            str(sock),
            "-p",
            str(port),
            "-c",
            "listen_addresses=",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while not (sock / f".s.PGSQL.{port}").exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the test PostgreSQL server did not start")
            time.sleep(0.05)
        time.sleep(0.2)
        yield f"postgresql+psycopg://landbot@/postgres?host={sock}&port={port}"
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        shutil.rmtree(base, ignore_errors=True)


def _has_user(name: str) -> bool:
    import pwd

    try:
        pwd.getpwnam(name)
        return True
    except KeyError:
        return False
