"""An acknowledged delivery is durable: kill -9 the server mid-stream, and every delivery it
answered 202 is in the SQLite file afterwards."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

from landbot.store import Store

from .conftest import SECRET, compact, headers_for, payload, stored

SERVER = """
import sys, uvicorn
from landbot.config import Settings
from landbot.store import Store
from landbot.web.app import create_app
app = create_app(Settings(github={"webhook_secret": sys.argv[1]}), Store.open(sys.argv[2]))
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[3]), log_level="warning")
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_every_acknowledged_delivery_survives_kill_9(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'landbot.db'}"
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("LANDBOT_")}
    proc = subprocess.Popen([sys.executable, "-c", SERVER, SECRET, url, str(port)], env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"{base}/healthz").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, "server did not start"
            time.sleep(0.05)

        acked: list[str] = []
        lock = threading.Lock()
        stop = threading.Event()
        data = payload("pull_request.dequeued.json")

        def send(worker: int) -> None:
            with httpx.Client(base_url=base, timeout=10) as http:
                for n in range(10_000):
                    if stop.is_set():
                        return
                    delivery = f"kill-{worker}-{n}"
                    body = compact({**data, "number": n})
                    try:
                        r = http.post(
                            "/webhook", content=body, headers=headers_for(body, delivery=delivery)
                        )
                    except httpx.TransportError:
                        return  # the server died under this request: it was never acknowledged
                    if r.status_code == 202:
                        with lock:
                            acked.append(delivery)

        senders = [threading.Thread(target=send, args=(w,)) for w in range(4)]
        for t in senders:
            t.start()
        while len(acked) < 60:
            assert all(t.is_alive() for t in senders), "a sender stopped early"
            time.sleep(0.005)
        proc.send_signal(signal.SIGKILL)  # mid-stream: requests are in flight right now
        proc.wait(timeout=10)
        stop.set()
        for t in senders:
            t.join(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()

    store = Store.open(url)
    try:
        kept = {row.delivery_id for row in stored(store)}
    finally:
        store.close()
    missing = set(acked) - kept
    assert not missing, f"{len(missing)} acknowledged deliveries were lost: {sorted(missing)[:5]}"
    assert len(acked) >= 60
