"""Benchmark: how fast does `POST /webhook` acknowledge a signed delivery?

Starts landbot's web app under uvicorn in its own process (127.0.0.1, a SQLite store in a
temporary directory, the settings `landbot serve` uses: log level warning), then drives it
from a second process with an open-loop load generator: signed `pull_request.dequeued`
deliveries, each with its own X-GitHub-Delivery, sent at a fixed rate whatever the server
does, each on a fresh connection as GitHub does. Latency is measured from the moment a
delivery was due, so a server that falls behind is charged for the queue it builds. The same
load then goes to a bare Starlette endpoint that only reads the body and answers 202: the
baseline of uvicorn, Starlette and the loopback on this machine.

After each landbot run the SQLite file is opened and every acknowledged delivery must be in
it: the figures count only durable acknowledgements.

    .venv/bin/python bench/webhook_ack.py                  # 50, 200, 500/s for 10 s each
    .venv/bin/python bench/webhook_ack.py --rates 200 --duration 5 --server landbot

Bounded: at most rate x duration deliveries per run, loopback only, every process ends.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import hmac
import json
import os
import platform
import resource
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PAYLOAD = ROOT / "tests" / "web" / "payloads" / "pull_request.dequeued.json"
SECRET = b"bench-secret"
WARMUP_S = 1.0


# --- the servers (run in a child process) ------------------------------------------------


def serve(kind: str, port: int, db: str, synchronous: str | None) -> None:
    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    if kind == "landbot":
        from landbot.config import Settings
        from landbot.store import Store
        from landbot.web.app import create_app

        settings = Settings(github={"webhook_secret": SECRET.decode()}, repos=[])
        store = Store.open(f"sqlite:///{db}")
        if synchronous:
            # Override the store's SQLite durability setting for every pooled connection.
            import sqlalchemy as sa

            sa.event.listen(
                store.engine,
                "connect",
                lambda conn, _: conn.execute(f"PRAGMA synchronous={synchronous}"),
            )
            store.engine.dispose()
        app = create_app(settings, store)
    else:

        async def ack(request: Request) -> Response:
            await request.body()
            return JSONResponse({"status": "accepted"}, status_code=202)

        async def health(request: Request) -> Response:
            return JSONResponse({"store": True})

        app = Starlette(
            routes=[
                Route("/webhook", ack, methods=["POST"]),
                Route("/healthz", health, methods=["GET"]),
            ]
        )
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


# --- the load generator (run in a child process) -----------------------------------------


class Deliveries:
    """Signed deliveries: one real payload with the PR number varied, a fresh GUID each."""

    def __init__(self, port: int, run: str) -> None:
        data = json.loads(PAYLOAD.read_bytes())
        data["number"] = 900000
        self.template = json.dumps(data, separators=(",", ":")).encode()
        self.port = port
        self.run = run

    def request(self, i: int) -> bytes:
        body = self.template.replace(b'"number":900000', b'"number":%d' % (900000 + i), 1)
        sig = hmac.new(SECRET, body, hashlib.sha256).hexdigest()
        head = (
            f"POST /webhook HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\n"
            "User-Agent: GitHub-Hookshot/bench\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nX-GitHub-Event: pull_request\r\n"
            f"X-GitHub-Delivery: {self.run}-{i:07d}\r\nX-GitHub-Hook-ID: 1\r\n"
            f"X-Hub-Signature-256: sha256={sig}\r\nConnection: close\r\n\r\n"
        )
        return head.encode() + body


async def one(port: int, payload: bytes) -> int:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(payload)
        await writer.drain()
        head = await reader.readuntil(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        length = 0
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":", 1)[1])
        await reader.readexactly(length)
        return status
    finally:
        writer.close()


async def drive(port: int, rate: float, duration: float, run: str) -> dict[str, Any]:
    deliveries = Deliveries(port, run)
    total = int(rate * (duration + WARMUP_S))
    warm = int(rate * WARMUP_S)
    payloads = [deliveries.request(i) for i in range(total)]  # signed before the clock runs
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    errors: list[str] = []
    ends: list[float] = []
    start = time.perf_counter() + 0.05
    loop = asyncio.get_running_loop()

    async def fire(i: int) -> None:
        due = start + i / rate
        delay = due - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        try:
            status = await asyncio.wait_for(one(port, payloads[i]), timeout=30)
        except Exception as exc:  # a refused or reset connection counts against the server
            errors.append(type(exc).__name__)
            return
        done = time.perf_counter()
        if i >= warm:
            latencies.append(done - due)
            ends.append(done)
            statuses[status] = statuses.get(status, 0) + 1

    # Open loop: every delivery is scheduled up front; none waits for another to finish.
    tasks = [loop.create_task(fire(i)) for i in range(total)]
    await asyncio.gather(*tasks)
    measured_start = start + warm / rate
    span = (max(ends) - measured_start) if ends else float("nan")
    lat = sorted(latencies)

    def pct(p: float) -> float:
        return lat[min(len(lat) - 1, int(p * len(lat)))] * 1000 if lat else float("nan")

    return {
        "rate": rate,
        "sent": total - warm,
        "ok": len(lat),
        "statuses": statuses,
        "errors": len(errors),
        "throughput": len(lat) / span if ends else 0.0,
        "median_ms": statistics.median(lat) * 1000 if lat else float("nan"),
        "p90_ms": pct(0.90),
        "p99_ms": pct(0.99),
        "max_ms": lat[-1] * 1000 if lat else float("nan"),
        "total_sent": total,
    }


# --- the GIL convoy, measured on its own ------------------------------------------------


def convoy(switch_interval: float, writes: int = 300) -> dict[str, float]:
    """Store-write latency in a thread while another thread is busy with Python code (as
    the event loop is under load), at a given GIL switch interval."""
    import threading

    from landbot.store import Store

    sys.setswitchinterval(switch_interval)
    body = json.dumps(json.loads(PAYLOAD.read_bytes()), separators=(",", ":")).encode()
    with tempfile.TemporaryDirectory(prefix="webhook-ack-bench-") as tmp:
        store = Store.open(f"sqlite:///{tmp}/landbot.db")
        stop = threading.Event()

        def busy() -> None:
            while not stop.is_set():
                sum(range(1000))

        thread = threading.Thread(target=busy)
        thread.start()
        lat = []
        try:
            for i in range(writes):
                t = time.perf_counter()
                store.record_delivery(f"c-{i}", "pull_request", "dequeued", "o/r", body)
                lat.append((time.perf_counter() - t) * 1000)
                time.sleep(0.002)
        finally:
            stop.set()
            thread.join()
            store.close()
    lat.sort()
    return {
        "switch_ms": switch_interval * 1000,
        "median_ms": statistics.median(lat),
        "p99_ms": lat[int(0.99 * len(lat))],
        "max_ms": lat[-1],
    }


# --- the conductor -----------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_up(port: int, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"server exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                if s.recv(64).startswith(b"HTTP/1.1 200"):
                    return
        except OSError:
            pass
        time.sleep(0.05)
    raise SystemExit("server did not come up")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a running process, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_one(kind: str, rate: float, duration: float, synchronous: str | None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="webhook-ack-bench-") as tmp:
        db = str(Path(tmp) / "landbot.db")
        port = free_port()
        me = [sys.executable, __file__]
        extra = ["--synchronous", synchronous] if synchronous else []
        server = subprocess.Popen([*me, "--serve", kind, "--port", str(port), "--db", db, *extra])
        try:
            wait_up(port, server)
            cpu0 = cpu_seconds(server.pid)
            children0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            load_args = ["--port", str(port), "--rate", str(rate), "--duration", str(duration)]
            load = subprocess.run(
                [*me, "--load", *load_args, "--run", f"{kind}-{int(rate)}"],
                capture_output=True,
                text=True,
                timeout=duration + WARMUP_S + 120,
                check=True,
            )
            server_cpu = cpu_seconds(server.pid) - cpu0
            children1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            load_cpu = (children1.ru_utime + children1.ru_stime) - (
                children0.ru_utime + children0.ru_stime
            )
        finally:
            server.send_signal(signal.SIGINT)
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
        result: dict[str, Any] = json.loads(load.stdout)
        result["server"] = kind
        result["loadavg"] = os.getloadavg()[0]  # other work on the machine during the run
        # CPU per delivery (warm-up included), in ms: where the two cores went.
        result["server_cpu_ms"] = server_cpu / result["total_sent"] * 1000
        result["load_cpu_ms"] = load_cpu / result["total_sent"] * 1000
        if kind == "landbot":
            with sqlite3.connect(db) as conn:
                (n,) = conn.execute("SELECT count(*) FROM deliveries").fetchone()
            result["stored"] = n
            acked = sum(v for k, v in result["statuses"].items() if int(k) == 202)
            # Every acknowledged delivery (warm-up included) must be in the file.
            assert n >= acked, f"acknowledged {acked} but stored {n}"
            assert n == result["total_sent"] - result["errors"], (n, result)
        return result


def table(results: list[dict[str, Any]]) -> str:
    lines = [
        "| server | rate/s | sent | 202 | errors | achieved/s | median ms | p90 ms | p99 ms"
        " | max ms | server CPU ms | client CPU ms | load avg |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r['server']} | {r['rate']:.0f} | {r['sent']} | {r['statuses'].get('202', 0)} "
            f"| {r['errors']} | {r['throughput']:.1f} | {r['median_ms']:.2f} | {r['p90_ms']:.2f} "
            f"| {r['p99_ms']:.2f} | {r['max_ms']:.2f} | {r['server_cpu_ms']:.2f}"
            f" | {r['load_cpu_ms']:.2f} | {r['loadavg']:.1f} |"
        )
    return "\n".join(lines)


def summary(results: list[dict[str, Any]]) -> str:
    """Per server and rate, the median over repeats of each figure, and landbot's p99 as a
    multiple of the baseline's."""
    groups: dict[tuple[str, float], list[dict[str, Any]]] = {}
    for r in results:
        groups.setdefault((r["server"], r["rate"]), []).append(r)
    lines = [
        "| server | rate/s | runs | achieved/s | median ms | p99 ms | p99 vs baseline |",
        "|---|---|---|---|---|---|---|",
    ]
    for (server, rate), rs in groups.items():
        p99 = statistics.median(r["p99_ms"] for r in rs)
        base = groups.get(("baseline", rate))
        ratio = p99 / statistics.median(r["p99_ms"] for r in base) if base else float("nan")
        lines.append(
            f"| {server} | {rate:.0f} | {len(rs)} "
            f"| {statistics.median(r['throughput'] for r in rs):.1f} "
            f"| {statistics.median(r['median_ms'] for r in rs):.2f} | {p99:.2f} | {ratio:.1f}x |"
        )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rates", default="50,200,500", help="deliveries a second, comma-separated")
    ap.add_argument("--duration", type=float, default=10.0, help="seconds per rate (max 60)")
    ap.add_argument("--server", choices=["both", "landbot", "baseline"], default="both")
    ap.add_argument(
        "--synchronous",
        choices=["full", "normal"],
        help="override SQLite's synchronous pragma in the landbot server (default: the store's)",
    )
    ap.add_argument("--repeat", type=int, default=1, help="runs per rate and server (max 5)")
    ap.add_argument(
        "--convoy",
        action="store_true",
        help="instead: store-write latency beside a busy thread at GIL switch intervals 5, 1 ms",
    )
    ap.add_argument("--convoy-child", type=float, help=argparse.SUPPRESS)
    ap.add_argument("--json", action="store_true", help="print the raw results as JSON too")
    # internal: the child processes
    ap.add_argument("--serve", choices=["landbot", "baseline"], help=argparse.SUPPRESS)
    ap.add_argument("--load", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--port", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--db", help=argparse.SUPPRESS)
    ap.add_argument("--rate", type=float, help=argparse.SUPPRESS)
    ap.add_argument("--run", default="run", help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.serve:
        serve(args.serve, args.port, args.db, args.synchronous)
        return
    if args.convoy:
        print("| GIL switch interval | write median ms | write p99 ms | write max ms |")
        print("|---|---|---|---|")
        for _ in range(3):
            for interval in (0.005, 0.001):
                c = subprocess.run(
                    [sys.executable, __file__, "--convoy-child", str(interval)],
                    capture_output=True,
                    text=True,
                    check=True,
                    timeout=120,
                )
                r = json.loads(c.stdout)
                print(
                    f"| {r['switch_ms']:.0f} ms | {r['median_ms']:.2f} | {r['p99_ms']:.2f}"
                    f" | {r['max_ms']:.2f} |"
                )
        return
    if args.convoy_child:
        print(json.dumps(convoy(args.convoy_child)))
        return
    if args.load:
        print(json.dumps(asyncio.run(drive(args.port, args.rate, args.duration, args.run))))
        return

    duration = min(args.duration, 60.0)
    args.repeat = max(1, min(args.repeat, 5))
    rates = [float(r) for r in args.rates.split(",")]
    if any(not 0 < r <= 2000 for r in rates):
        raise SystemExit("rates must be between 1 and 2000 a second")
    kinds = ["landbot", "baseline"] if args.server == "both" else [args.server]
    results = []
    # Repeats interleave landbot and the baseline so both see the same background load.
    for rate in rates:
        for rep in range(args.repeat):
            for kind in kinds:
                r = run_one(kind, rate, duration, args.synchronous)
                r["repeat"] = rep + 1
                print(
                    f"{kind:8} {rate:5.0f}/s #{rep + 1}: median {r['median_ms']:.2f} ms,"
                    f" p99 {r['p99_ms']:.2f} ms, {r['throughput']:.1f}/s achieved,"
                    f" {r['errors']} errors, load avg {r['loadavg']:.1f}",
                    file=sys.stderr,
                )
                results.append(r)
    py = platform.python_version()
    print(f"machine: {platform.platform()}, {os.cpu_count()} cores, Python {py}")
    sync = args.synchronous or "the store's default"
    print(
        f"{duration:.0f} s per run after {WARMUP_S:.0f} s of warm-up; payload {PAYLOAD.name};"
        f" SQLite synchronous: {sync}"
    )
    print(table(results))
    if args.repeat > 1:
        print()
        print(summary(results))
    if args.json:
        print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
