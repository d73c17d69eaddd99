"""Benchmark: does `POST /webhook` stay fast while a `landbot worker` beside it restarts?

Starts landbot's web app under uvicorn in its own process (as `bench/webhook_ack.py` does) on
a store that already holds a history (done deliveries of 24 KB, GitHub's real shape) and a
backlog (pending deliveries a worker has not taken yet, as after a worker was down). An
open-loop generator sends signed deliveries at a fixed rate; meanwhile the conductor starts a
real `landbot worker` process on the same store, SIGKILLs it, and starts it again, several
times. Each (re)start opens the store (migrations on open), takes up the backlog and the
dead worker's expired leases (a short lease, so recovery happens inside the run). Every
acknowledgement is then put in its window: "restart" (from a worker's start to 3 s after it)
or "steady" (the rest), and after the run every acknowledged delivery must be in the store.

The worker's GitHub is a closed loopback port: its drop jobs fail to connect and are retried
later, which is all this benchmark needs from them (no address but 127.0.0.1 is used).

    .venv/bin/python bench/webhook_restart.py                       # SQLite, then PostgreSQL
    .venv/bin/python bench/webhook_restart.py --store sqlite --history 20000

Bounded: rate x duration deliveries, one server, one worker at a time, every process ends.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from webhook_ack import PAYLOAD, SECRET, Deliveries, free_port, one, wait_up  # noqa: E402

REPO = "octo-org/widgets"  # the payload's repository
RESTART_WINDOW_S = 3.0
LEASE_S = 2.0


# --- the server (a child process) ---------------------------------------------------------


def serve(url: str, port: int) -> None:
    import uvicorn

    from landbot.config import Settings
    from landbot.store import Store
    from landbot.web.app import create_app

    settings = Settings(github={"webhook_secret": SECRET.decode()}, repos=[REPO])
    store = Store.open(url)
    uvicorn.run(create_app(settings, store), host="127.0.0.1", port=port, log_level="warning")


# --- the store ----------------------------------------------------------------------------


def seed(url: str, history: int, backlog: int) -> None:
    """A store as it is after weeks of use and a worker's downtime."""
    from landbot.store import Store
    from landbot.store.tables import deliveries

    store = Store.open(url)
    body = PAYLOAD.read_bytes()
    now = dt.datetime.now(dt.UTC)
    rows = [
        {
            "delivery_id": f"old-{i}",
            "event": "pull_request",
            "action": "dequeued",
            "repo": REPO,
            "body": body,
            "received_at": now - dt.timedelta(days=30),
            "status": "done" if i < history else "pending",
        }
        for i in range(history + backlog)
    ]
    with store.engine.begin() as conn:
        for start in range(0, len(rows), 1000):
            conn.execute(deliveries.insert(), rows[start : start + 1000])
    store.close()


def stored(url: str) -> int:
    import sqlalchemy as sa

    from landbot.store import Store
    from landbot.store.tables import deliveries

    store = Store.open(url, migrate=False)
    try:
        with store.engine.connect() as conn:
            return int(
                conn.execute(
                    sa.select(sa.func.count()).where(deliveries.c.delivery_id.like("bench-%"))
                ).scalar_one()
            )
    finally:
        store.close()


@contextmanager
def postgres() -> Iterator[str]:
    """A throwaway PostgreSQL server on a unix socket (the one the store tests start)."""
    from landbot.sim.postgres import NotInstalled, throwaway_server

    try:
        with throwaway_server(prefix="restart-bench-pg-") as url:
            yield url
    except NotInstalled as exc:
        raise SystemExit(str(exc)) from None


# --- the load (a child process) ----------------------------------------------------------


async def drive(port: int, rate: float, duration: float) -> list[dict[str, Any]]:
    """Every delivery's due time (CLOCK_MONOTONIC, shared by all processes), latency and
    status."""
    deliveries = Deliveries(port, "bench")
    total = int(rate * duration)
    payloads = [deliveries.request(i) for i in range(total)]
    out: list[dict[str, Any]] = []
    start = time.monotonic() + 0.05

    async def fire(i: int) -> None:
        due = start + i / rate
        delay = due - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        try:
            status = await asyncio.wait_for(one(port, payloads[i]), timeout=30)
        except Exception as exc:
            out.append({"due": due, "error": type(exc).__name__})
            return
        out.append({"due": due, "latency": time.monotonic() - due, "status": status})

    await asyncio.gather(*(fire(i) for i in range(total)))
    return out


# --- the conductor -----------------------------------------------------------------------


def worker_env(url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LANDBOT_")}
    env.update(
        LANDBOT_DATABASE_URL=url,
        LANDBOT_GITHUB__TOKEN="bench-token",
        LANDBOT_GITHUB__API_URL=f"http://127.0.0.1:{free_port()}",  # nothing listens
        LANDBOT_REPOS=REPO,
        LANDBOT_WORKER__LEASE_SECONDS=str(LEASE_S),
        LANDBOT_WORKER__IDLE_SLEEP="0.2",
    )
    return env


def run_one(
    store: str, rate: float, duration: float, kills: int, history: int, backlog: int
) -> dict[str, Any]:
    with (
        tempfile.TemporaryDirectory(prefix="restart-bench-") as tmp,
        postgres() if store == "postgresql" else _sqlite(tmp) as url,
    ):
        t0 = time.monotonic()
        seed(url, history, backlog)
        seeded_s = time.monotonic() - t0
        port = free_port()
        me = [sys.executable, __file__]
        server = subprocess.Popen([*me, "--serve", url, "--port", str(port)])
        starts: list[float] = []
        worker: subprocess.Popen[bytes] | None = None
        try:
            wait_up(port, server)
            load = subprocess.Popen(
                [
                    *me,
                    "--load",
                    "--port",
                    str(port),
                    "--rate",
                    str(rate),
                    "--duration",
                    str(duration),
                ],
                stdout=subprocess.PIPE,
            )
            # Restarts spread over the run: start, let it work, SIGKILL mid-work, start again.
            gap = duration / (kills + 1)
            cmd = [sys.executable, "-m", "landbot", "worker"]
            for k in range(kills + 1):
                time.sleep(gap * 0.5 if k == 0 else 0.3)
                starts.append(time.monotonic())
                worker = subprocess.Popen(
                    cmd, env=worker_env(url), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
                )
                if k < kills:
                    time.sleep(gap * 0.8)
                    worker.send_signal(signal.SIGKILL)
                    worker.wait()
            out, _ = load.communicate(timeout=duration + 120)
        finally:
            if worker is not None and worker.poll() is None:
                worker.send_signal(signal.SIGTERM)
                try:
                    worker.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    worker.kill()
                    worker.wait()
            server.send_signal(signal.SIGINT)
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
        samples: list[dict[str, Any]] = json.loads(out)
        acked = sum(1 for s in samples if s.get("status") == 202)
        n = stored(url)
        assert n >= acked, f"acknowledged {acked} but stored {n}"
    return summarize(store, samples, starts, history, backlog, seeded_s, n)


@contextmanager
def _sqlite(tmp: str) -> Iterator[str]:
    yield f"sqlite:///{tmp}/landbot.db"


def summarize(
    store: str,
    samples: list[dict[str, Any]],
    starts: list[float],
    history: int,
    backlog: int,
    seeded_s: float,
    stored_n: int,
) -> dict[str, Any]:
    def in_restart(due: float) -> bool:
        return any(s <= due <= s + RESTART_WINDOW_S for s in starts)

    windows: dict[str, list[float]] = {"restart": [], "steady": []}
    errors = 0
    statuses: dict[int, int] = {}
    for s in samples:
        if "error" in s:
            errors += 1
            continue
        statuses[s["status"]] = statuses.get(s["status"], 0) + 1
        windows["restart" if in_restart(s["due"]) else "steady"].append(s["latency"] * 1000)
    result: dict[str, Any] = {
        "store": store,
        "history": history,
        "backlog": backlog,
        "restarts": len(starts),
        "sent": len(samples),
        "statuses": statuses,
        "errors": errors,
        "stored": stored_n,
        "seeded_s": seeded_s,
        "loadavg": os.getloadavg()[0],
    }
    for name, lat in windows.items():
        lat.sort()
        result[name] = {
            "n": len(lat),
            "median_ms": statistics.median(lat) if lat else float("nan"),
            "p99_ms": lat[min(len(lat) - 1, int(0.99 * len(lat)))] if lat else float("nan"),
            "max_ms": lat[-1] if lat else float("nan"),
        }
    return result


def table(results: list[dict[str, Any]]) -> str:
    lines = [
        "| store | history | backlog | restarts | window | acks | median ms | p99 ms | max ms"
        " | non-202 | errors | load avg |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        other = sum(v for k, v in r["statuses"].items() if int(k) != 202)
        for name in ("restart", "steady"):
            w = r[name]
            lines.append(
                f"| {r['store']} | {r['history']} | {r['backlog']} | {r['restarts']} | {name} "
                f"| {w['n']} | {w['median_ms']:.2f} | {w['p99_ms']:.2f} | {w['max_ms']:.2f} "
                f"| {other} | {r['errors']} | {r['loadavg']:.1f} |"
            )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", choices=["sqlite", "postgresql", "both"], default="both")
    ap.add_argument("--rate", type=float, default=50.0, help="deliveries a second (max 300)")
    ap.add_argument("--duration", type=float, default=20.0, help="seconds (max 120)")
    ap.add_argument("--kills", type=int, default=3, help="SIGKILLs of the worker (max 10)")
    ap.add_argument("--history", type=int, default=5000, help="done deliveries in the store")
    ap.add_argument("--backlog", type=int, default=200, help="pending deliveries in the store")
    ap.add_argument("--json", action="store_true", help="print the raw results as JSON too")
    ap.add_argument("--serve", help=argparse.SUPPRESS)
    ap.add_argument("--load", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--port", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--rate-child", type=float, help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.serve:
        serve(args.serve, args.port)
        return
    if args.load:
        print(json.dumps(asyncio.run(drive(args.port, args.rate, args.duration))))
        return
    if not 0 < args.rate <= 300 or not 0 < args.duration <= 120 or not 0 <= args.kills <= 10:
        raise SystemExit("--rate 1..300, --duration up to 120, --kills 0..10")
    if not 0 <= args.history <= 50_000 or not 0 <= args.backlog <= 5000:
        raise SystemExit("--history 0..50000, --backlog 0..5000")
    stores = ["sqlite", "postgresql"] if args.store == "both" else [args.store]
    results = []
    for store in stores:
        r = run_one(store, args.rate, args.duration, args.kills, args.history, args.backlog)
        print(
            f"{store}: restart p99 {r['restart']['p99_ms']:.1f} ms max"
            f" {r['restart']['max_ms']:.1f} ms; steady p99 {r['steady']['p99_ms']:.1f} ms",
            file=sys.stderr,
        )
        results.append(r)
    print(
        f"machine: {platform.platform()}, {os.cpu_count()} cores, Python"
        f" {platform.python_version()}; {args.rate:.0f}/s for {args.duration:.0f} s,"
        f" worker lease {LEASE_S:.0f} s, restart window {RESTART_WINDOW_S:.0f} s"
    )
    print(table(results))
    if args.json:
        print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
