"""A throwaway PostgreSQL server on a unix socket: the store and integration tests, the
fault soak and the benchmarks all start theirs here (no TCP listener, removed on exit).

    with throwaway_server() as url:      # postgresql+psycopg://landbot@/postgres?host=...
        ...
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path


class NotInstalled(RuntimeError):
    """No initdb/postgres on this machine."""


def pg_bin(name: str) -> str | None:
    """A PostgreSQL program on PATH, or in Debian's /usr/lib/postgresql/<version>/bin."""
    found = shutil.which(name)
    if found:
        return found
    for candidate in sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"), reverse=True):
        return str(candidate)
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _user() -> str:
    # PostgreSQL refuses to run as root: run it as an unprivileged user.
    try:
        pwd.getpwnam("postgres")
        return "postgres"
    except KeyError:
        return "nobody"


@contextlib.contextmanager
def throwaway_server(*, durable: bool = True, prefix: str = "landbot-pg-") -> Iterator[str]:
    """Start a server, yield its URL, stop it and remove its files. `durable=False` turns
    fsync off, so the CREATE/DROP DATABASE of every test (each a checkpoint) costs
    milliseconds, not a second of disk flushes; benchmarks keep the default."""
    initdb, postgres = pg_bin("initdb"), pg_bin("postgres")
    if not initdb or not postgres:
        raise NotInstalled("PostgreSQL is not installed (scripts/setup installs it)")
    base = Path(tempfile.mkdtemp(prefix=prefix))
    data, sock = base / "data", base / "sock"
    sock.mkdir()
    drop: list[str] = []
    if os.getuid() == 0:
        user = _user()
        shutil.chown(base, user)
        shutil.chown(sock, user)
        drop = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups"]
    subprocess.run(
        [*drop, initdb, "-D", str(data), "-U", "landbot", "--auth=trust", "-E", "UTF8"],
        check=True,
        capture_output=True,
        timeout=120,
    )
    port = free_port()
    fast = [] if durable else ["fsync=off", "synchronous_commit=off", "full_page_writes=off"]
    settings = [arg for value in ["listen_addresses=", *fast] for arg in ("-c", value)]
    proc = subprocess.Popen(
        [*drop, postgres, "-D", str(data), "-k", str(sock), "-p", str(port), *settings],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while not (sock / f".s.PGSQL.{port}").exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the throwaway PostgreSQL server did not start")
            time.sleep(0.05)
        time.sleep(0.2)
        yield f"postgresql+psycopg://landbot@/postgres?host={sock}&port={port}"
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        shutil.rmtree(base, ignore_errors=True)


def database_url(server_url: str, name: str) -> str:
    """The URL of database `name` on the server of `server_url`."""
    import sqlalchemy as sa

    return sa.engine.make_url(server_url).set(database=name).render_as_string(False)
