"""A real reverse proxy on the same host, in front of a real `landbot serve`: Debian's nginx,
started by the test on a loopback port with a config written into tmp_path, `proxy_pass`
plain (no forwarding header; `Host` becomes the upstream's address), so every request
reaches landbot from 127.0.0.1 and looks like the operator's. The dashboard and /metrics
must still ask for the token; the webhook must still get through (its HMAC is its guard).

Skipped, with the reason printed, only where nginx is not installed (`scripts/setup`
installs it; `LANDBOT_NGINX` names another binary), and never under CI, which must run it.
"""

from __future__ import annotations

import json
import os
import pty
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from landbot.sim import FakeGitHub, FakeGitHubServer
from landbot.store import Store
from landbot.web.app import create_app
from landbot.web.signature import sign

from .conftest import SECRET, live_server, make_settings

# ./scripts/test --fast leaves this module out: its tests start processes (landbot, git,
# the sandbox, servers) and take seconds each.
pytestmark = pytest.mark.slow

LANDBOT = str(Path(sys.executable).parent / "landbot")
PING = json.dumps({"zen": "Keep it logically awesome.", "hook_id": 1}).encode()


@pytest.fixture
def nginx() -> str:
    found = os.environ.get("LANDBOT_NGINX") or shutil.which("nginx")
    if found is None and os.path.exists("/usr/sbin/nginx"):  # not on a user's PATH
        found = "/usr/sbin/nginx"
    if found is None:
        reason = "nginx is not installed (apt-get install nginx; scripts/setup installs it)"
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the reverse-proxy tests: {reason}")
        print(f"skipping: {reason}")
        pytest.skip(reason)
    return found


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def wait_for(ready: Callable[[], bool], what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ready():
            return
        time.sleep(0.1)
    raise AssertionError(f"{what} did not happen within {timeout:.0f} s")


@contextmanager
def nginx_in_front(binary: str, folder: Path, upstream: int) -> Iterator[str]:
    """nginx on a free loopback port forwarding everything to 127.0.0.1:`upstream` with a
    plain proxy_pass; yields its base URL."""
    folder.mkdir()
    port = free_port()
    conf = folder / "nginx.conf"
    temp = "\n".join(
        f"  {kind}_temp_path {folder / kind};" for kind in ("client_body", "proxy", "fastcgi")
    )
    conf.write_text(
        f"""worker_processes 1;
daemon off;
pid {folder / "nginx.pid"};
error_log stderr warn;
events {{ worker_connections 64; }}
http {{
  access_log off;
{temp}
  uwsgi_temp_path {folder / "uwsgi"};
  scgi_temp_path {folder / "scgi"};
  server {{
    listen 127.0.0.1:{port};
    location / {{ proxy_pass http://127.0.0.1:{upstream}; }}
  }}
}}
"""
    )
    log = folder / "nginx.log"
    with log.open("wb") as out:
        # -e stderr: nginx opens its built-in error log before reading the config.
        proc = subprocess.Popen(
            [binary, "-e", "stderr", "-p", str(folder), "-c", str(conf)],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def listening() -> bool:
        if proc.poll() is not None:
            raise AssertionError(f"nginx exited {proc.returncode}: {log.read_text()}")
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", port)) == 0

    try:
        wait_for(listening, "nginx listening")
        yield f"http://127.0.0.1:{port}"
    finally:
        stop(proc)


def stop(proc: subprocess.Popen[Any]) -> None:
    with_group = proc.poll() is None
    if with_group:
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


class Serve:
    """One `landbot serve` process; its stderr on a terminal (a pty) or in a file."""

    def __init__(self, env: dict[str, str], cwd: Path, port: int, log: Path, tty: bool) -> None:
        self.url = f"http://127.0.0.1:{port}"
        self.log = log
        self.screen = bytearray()
        argv = [LANDBOT, "--log-level", "debug", "serve", "--port", str(port)]
        self.master: int | None = None
        if tty:
            self.master, terminal = pty.openpty()
            self.proc = subprocess.Popen(
                argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=terminal, start_new_session=True,
            )  # fmt: skip
            os.close(terminal)
            self.pump = threading.Thread(target=self._read_screen, daemon=True)
            self.pump.start()
        else:
            with log.open("wb") as out:
                self.proc = subprocess.Popen(
                    argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=out,
                    stderr=subprocess.STDOUT, start_new_session=True,
                )  # fmt: skip
        wait_for(self._healthy, "landbot serve answering /healthz", 60)

    def _read_screen(self) -> None:
        assert self.master is not None
        while True:
            try:
                chunk = os.read(self.master, 4096)
            except OSError:  # EIO: the process closed the terminal
                return
            if not chunk:
                return
            self.screen.extend(chunk)

    def output(self) -> str:
        if self.master is not None:
            return self.screen.decode(errors="replace")
        return self.log.read_text(errors="replace")

    def _healthy(self) -> bool:
        if self.proc.poll() is not None:
            raise AssertionError(f"landbot serve exited {self.proc.returncode}: {self.output()}")
        try:
            return httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    def stop(self) -> None:
        stop(self.proc)
        if self.master is not None:
            self.pump.join(timeout=10)
            os.close(self.master)


def ping(secret: str = SECRET) -> dict[str, str]:
    return {
        "Content-Type": "application/json",
        "X-GitHub-Event": "ping",
        "X-GitHub-Delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958",
        "X-Hub-Signature-256": sign(secret.encode(), PING),
    }


def test_through_a_proxy_on_this_host_the_dashboard_needs_the_token(
    nginx: str, tmp_path: Path
) -> None:
    gh = FakeGitHub(tmp_path / "github", webhook_secret=SECRET)
    state = tmp_path / "state"
    work = tmp_path / "cwd"  # no config/landbot.toml here
    work.mkdir()
    app_port = free_port()
    with FakeGitHubServer(gh) as github:
        env = {k: v for k, v in os.environ.items() if not k.startswith("LANDBOT_")}
        env.update(github.settings_env(token=gh.create_token("landbot-bot")))
        env.update(
            LANDBOT_DATABASE_URL=f"sqlite:///{tmp_path / 'landbot.db'}",
            LANDBOT_FIXER__STATE_DIR=str(state),
            LANDBOT_WORKER__IDLE_SLEEP="0.1",
        )
        # The first start, on a terminal: it makes the token and prints the address.
        first = Serve(env, work, app_port, tmp_path / "first.log", tty=True)
        try:
            wait_for(lambda: "/?token=" in first.output(), "the address with the token")
            time.sleep(0.2)  # the rest of the line
            found = re.search(r"landbot: dashboard: (http://\S+/\?token=(\S+))", first.output())
            assert found is not None, first.output()
            address, token = found.groups()
            assert address == f"http://127.0.0.1:{app_port}/?token={token}"
            token_file = state / "web-token"
            assert token_file.read_text() == token + "\n"
            assert oct(token_file.stat().st_mode & 0o777) == "0o600"
            made = token_file.stat()

            with (
                nginx_in_front(nginx, tmp_path / "nginx", app_port) as proxy,
                httpx.Client(base_url=proxy, timeout=30) as client,
            ):
                for path in ("/", "/metrics"):
                    refused = client.get(path)  # from 127.0.0.1, as every proxied client
                    assert refused.status_code == 401, (path, refused.text)
                    assert "needs the dashboard token" in refused.text
                    wrong = client.get(path, params={"token": token[:-1] + "x"})
                    assert wrong.status_code == 401
                # The control: with the token, through the same proxy, both are served.
                page = client.get("/", params={"token": token})
                assert page.status_code == 200 and "<title>landbot</title>" in page.text
                metrics = client.get("/metrics", headers={"Authorization": f"Bearer {token}"})
                assert metrics.status_code == 200 and "landbot_build_info" in metrics.text
                # The webhook and health stay open; the webhook's HMAC is checked.
                assert client.get("/healthz").status_code == 200
                pong = client.post("/webhook", content=PING, headers=ping())
                assert pong.status_code == 200 and pong.json()["status"] == "pong"
                forged = client.post("/webhook", content=PING, headers=ping("not the secret"))
                assert forged.status_code == 401
        finally:
            first.stop()
        # The whole token is on the terminal once: in the address, not in a log line.
        assert first.output().count(token) == 1, first.output()
        assert f"token={token[:4]}…" in first.output()

        # The next start, its stderr a file (a log): the same token, never written whole.
        second = Serve(env, work, app_port, tmp_path / "second.log", tty=False)
        try:
            again = token_file.stat()
            assert token_file.read_text() == token + "\n"
            assert (again.st_ino, again.st_mtime_ns) == (made.st_ino, made.st_mtime_ns)
            with (
                nginx_in_front(nginx, tmp_path / "nginx-2", app_port) as proxy,
                httpx.Client(base_url=proxy, timeout=30) as client,
            ):
                assert client.get("/", params={"token": token}).status_code == 200
                assert client.get("/metrics").status_code == 401
                # Pasted in the wrong place, it is still a secret the log masks.
                assert client.get(f"/{token}").status_code == 404
        finally:
            second.stop()
        log = second.output()
        # The access lines of those requests (--log-level debug), the token masked.
        assert "GET /?token=***" in log and '"GET /*** HTTP' in log
        assert token not in log and "landbot: dashboard: http" not in log
        [said] = [json.loads(line) for line in log.splitlines() if '"event": "dashboard' in line]
        assert (said["token"], said["token_from"]) == (f"{token[:4]}…", str(token_file))


def test_a_plain_proxy_passes_for_loopback_when_the_token_is_switched_off(
    nginx: str, tmp_path: Path, store: Store
) -> None:
    """Why the token is the default: with `[web] auth = "loopback"` the old rule holds, and
    nginx's plain proxy_pass defeats it (served through the proxy to anyone). The same app
    with the default refuses the same request."""
    off = make_settings(token=None, auth="loopback")
    with (
        live_server(create_app(off, store)) as (_, port),
        nginx_in_front(nginx, tmp_path / "nginx", port) as proxy,
    ):
        assert httpx.get(f"{proxy}/", timeout=30).status_code == 200  # the hole
        assert httpx.get(f"http://127.0.0.1:{port}/", timeout=30).status_code == 200
    with (
        live_server(create_app(make_settings(), store)) as (_, port),
        nginx_in_front(nginx, tmp_path / "nginx-2", port) as proxy,
    ):
        assert httpx.get(f"{proxy}/", timeout=30).status_code == 401
        assert httpx.get(f"{proxy}/metrics", timeout=30).status_code == 401
