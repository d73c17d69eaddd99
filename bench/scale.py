"""A scale benchmark (issue 28, point 5): one App on many repositories, a day of merge-queue
drops compressed into minutes, on 1, 2 and 4 `landbot worker` processes sharing PostgreSQL.

    .venv/bin/python bench/scale.py --repos 50 --drops 200 --minutes 1 --workers 1,2,4
    .venv/bin/python bench/scale.py --repos 1000 --drops 10000 --minutes 15 --json

What runs: the simulated GitHub (landbot/sim) in this process behind an ASGI layer that adds
GitHub's answer latency (--latency-ms, 50 by default) to every call, counts each call, and
keeps GitHub's primary limit (--budget, 5,000 an hour per resource, REST and GraphQL) per
*simulated* hour: the `x-ratelimit-*` headers say what is left of the simulated hour and
when it resets (in real time), and a call past it is refused as GitHub refuses it.
`landbot serve` receives the webhooks (its built-in worker off, as in bench/soak.py, so the
worker count is exact), N `landbot worker` processes take the jobs, and `landbot poll
--no-process` sweeps every repository each --sweep-minutes of the simulated day (the
scheduled sweep; back to back when a sweep takes longer than that in real time). landbot
is an App installed on every repository, with its defaults: the budget planner, the
`landbot` check run, the breaker, the flaky-test issues; no fixer agent is configured
(genuine failures are handed back). The breaker's window and recheck are divided by the
compression, so that it sees the drops of a simulated half hour, not of a day.

The day: --drops drop-to-be pull requests opened beforehand in --repos repositories (their
git work is done before the clock starts), then each enqueued and removed at its time of the
simulated day: a working-hours curve plus bursts (many repositories' drops within a few
simulated minutes, as when a CI provider has an outage). The kinds: flaky (an npm
ECONNRESET log: re-enqueued), genuine (a failing test: handed back), conflict (handed back),
a check timeout (re-enqueued), a manual removal (nothing to do). A re-enqueued PR merges the
next time its repository's queue moves.

Measured per worker count: GitHub calls per simulated hour (REST requests and GraphQL
points; a query costs 1 point on the simulated GitHub) against the budget, per drop and per
sweep; drop-to-action latency (the `dequeued` webhook sent → the re-enqueue or hand-back
seen on the simulated GitHub), p50/p99; throughput (actions a second, from the first webhook
to the last action); peak RSS and CPU seconds of every process (`wait4`). Checked: every
drop reached an outcome in the store, nothing was done twice (a second enqueue of one head,
a second hand-back or status comment on one PR).

Not GitHub-faithful, on purpose: the simulated GitHub here skips `sync` (nobody pushes with
git directly: the fixer is off), sends `push` webhooks for default branches only (landbot
reads no other), runs no checks on PR heads (`auto_checks` off) and delivers none of the
preparation's webhooks: each would cost this process git subprocesses per call or per PR.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import json
import logging
import math
import os
import queue
import random
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import soak  # its PostgreSQL helpers, route_key, NoWorker

ROOT = Path(__file__).resolve().parent.parent
OWNER = "acme"
SECRET = "scale-webhook-secret"
SLUG = "scale-landbot"
HANDBACK_MARKER = "<!-- landbot:handback -->"
STATUS_MARKER = "<!-- landbot:status -->"
DAY = 86_400.0
# A day's drops by kind: what a busy organisation's queues drop (a guess, stated as one).
MIX = {"flaky": 0.40, "genuine": 0.25, "conflict": 0.10, "timeout": 0.10, "manual": 0.15}
ACTIONABLE = {"flaky", "genuine", "conflict", "timeout"}
# The poll sweep's GraphQL operations: one repository's, the batched one (issue 28.2), and
# the small follow-up asking for removal commits' parents.
SWEEP_OPERATIONS = ("QueueRemovals", "QueueRemovalsBatch", "CommitParents")


# --- the child processes: the real CLI commands --------------------------------------------


def child(kind: str) -> None:
    """`landbot serve|worker|poll` as the CLI runs them; serve's built-in worker off."""
    import landbot.cli as cli
    import landbot.pipeline.wiring as wiring
    from landbot.config import Settings

    gap = os.environ.get("SCALE_MUTATION_GAP")
    if gap:
        # Only when asked (--mutation-gap): landbot's own client, planner and all, with
        # another pause between mutations (no setting exists for it).
        from landbot.github.budget import BudgetPolicy, Planner
        from landbot.github.client import GitHubClient

        def make_github(settings: Settings) -> GitHubClient:
            planner = Planner(BudgetPolicy.from_settings(settings.budget))
            return GitHubClient(settings.github, planner=planner, mutation_gap=float(gap))

        wiring.make_github = make_github
    if kind == "serve":

        def no_worker(settings: Settings, store: Any, *, gh: Any = None) -> Any:
            return soak.NoWorker()

        wiring.make_worker = no_worker
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")
    if kind == "serve":
        cli.serve(host="127.0.0.1", port=int(os.environ["SCALE_PORT"]), config=None)
    elif kind == "worker":
        cli.worker(config=None)
    elif kind == "poll":
        cli.poll(repo=None, no_process=True, config=None)
    else:
        raise SystemExit(f"unknown child {kind!r}")


# --- the simulated clock and GitHub's answers -------------------------------------------------


class SimClock:
    """The simulated day on the real clock: `factor` simulated seconds a real second."""

    def __init__(self, factor: float) -> None:
        self.factor = factor
        self.t0 = time.monotonic()
        self.epoch0 = time.time()

    def start(self) -> None:
        self.t0, self.epoch0 = time.monotonic(), time.time()

    def now(self) -> float:
        """Simulated seconds since the day began."""
        return (time.monotonic() - self.t0) * self.factor

    def epoch_at(self, sim_seconds: float) -> float:
        """The real epoch time at which the simulated clock reads `sim_seconds`."""
        return self.epoch0 + sim_seconds / self.factor


@dataclass
class Call:
    at: float  # simulated seconds
    resource: str  # core, graphql, or storage (the log host: no budget)
    key: str  # route and GraphQL operation
    status: int


class GitHubLatency:
    """ASGI layer before the simulated GitHub: the answer latency, every call counted, and
    the primary budget per simulated hour and resource (GitHub's headers, its refusal)."""

    def __init__(self, app: Any, clock: SimClock, api_port: int, latency: float, budget: int):
        self.app, self.clock, self.api_port = app, clock, api_port
        self.latency, self.budget = latency, budget
        self.lock = threading.Lock()
        self.calls: list[Call] = []
        self.used: Counter[tuple[str, int]] = Counter()
        self.refused = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        await asyncio.sleep(self.latency)  # GitHub's answer is ~50 ms away
        sim = self.clock.now()
        hour = int(sim // 3600)
        api = scope.get("server", (None, None))[1] == self.api_port
        res = "storage"
        if api:
            res = "graphql" if scope["path"] == "/graphql" else "core"
        body = b""
        if res == "graphql":
            chunks = []
            while True:
                msg = await receive()
                chunks.append(msg.get("body", b""))
                if not msg.get("more_body"):
                    break
            body = b"".join(chunks)
        key, _ = soak.route_key(scope["method"], scope["path"], body)
        replayed = False

        async def replay() -> Any:
            nonlocal replayed
            if res == "graphql" and not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        reset = math.ceil(self.clock.epoch_at((hour + 1) * 3600))
        with self.lock:
            over = res != "storage" and self.used[(res, hour)] >= self.budget
            if over:
                self.refused += 1
        if over:
            await self._refuse(send, res, reset)
            self._record(Call(sim, res, key, 403))
            return
        status = 0

        async def counted(message: Any) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                names = {k.lower() for k, _ in message.get("headers", [])}
                if b"x-ratelimit-resource" in names:
                    message = {**message, "headers": self._limit_headers(message, res, hour)}
            await send(message)

        with self.lock:
            if res != "storage":
                self.used[(res, hour)] += 1
        await self.app(scope, replay, counted)
        self._record(Call(sim, res, key, status))

    def _record(self, call: Call) -> None:
        with self.lock:
            self.calls.append(call)

    def _limit_headers(self, message: Any, res: str, hour: int) -> list[Any]:
        with self.lock:
            used = self.used[(res, hour)]
        reset = math.ceil(self.clock.epoch_at((hour + 1) * 3600))
        ours = {
            b"x-ratelimit-limit": str(self.budget).encode(),
            b"x-ratelimit-remaining": str(max(0, self.budget - used)).encode(),
            b"x-ratelimit-used": str(used).encode(),
            b"x-ratelimit-reset": str(reset).encode(),
            b"x-ratelimit-resource": res.encode(),
        }
        kept = [(k, v) for k, v in message["headers"] if k.lower() not in ours]
        return kept + list(ours.items())

    async def _refuse(self, send: Any, res: str, reset: int) -> None:
        headers = {
            "x-ratelimit-limit": str(self.budget),
            "x-ratelimit-remaining": "0",
            "x-ratelimit-used": str(self.budget),
            "x-ratelimit-reset": str(reset),
            "x-ratelimit-resource": res,
        }
        if res == "graphql":
            status, body = 200, {"errors": [{"type": "RATE_LIMITED", "message": "limit"}]}
        else:
            status, body = 403, {"message": "API rate limit exceeded."}
        for message in soak._json_response(status, body, headers):
            await send(message)


def scale_github(root: Path) -> Any:
    """A FakeGitHub for many repositories: what it does per call or per PR for pushes
    nobody makes here is skipped, and the bot's re-enqueues and hand-backs are timed."""
    from landbot.sim import FakeGitHub, merge_queue

    class ScaleGitHub(FakeGitHub):
        bot = ""
        # (repo, PR) -> [(what, monotonic time, head)] of the bot's actions
        actions: dict[tuple[str, int], list[tuple[str, float, str]]]

        def sync(self) -> list[tuple[str, str, str | None, str]]:
            # Reads every repository's refs on every call; nobody pushes with git here.
            return []

        def _emit_push(
            self, repo: Any, ref: str, old: str | None, new: str | None, pusher: str | None
        ) -> None:
            if ref == f"refs/heads/{repo.default_branch}":  # the only push landbot reads
                super()._emit_push(repo, ref, old, new, pusher)

        def _branch_moved(
            self, repo: Any, branch: str, old: str | None, new: str, pusher: str | None
        ) -> None:
            # The model's own loop reads every PR of every repository; no forks here.
            for pr in list(repo.pulls.values()):
                if pr.state == "open" and pr.head_ref == branch and pr.head_sha != new:
                    self._pr_head_changed(pr, new, pusher)
            q = repo.queues.get(branch)
            if q is not None:
                merge_queue.base_moved(self, q, new)

        def enqueue(self, pr: Any, *, actor: str, **kw: Any) -> Any:
            with self.lock:
                entry = super().enqueue(pr, actor=actor, **kw)
                if actor == self.bot:
                    self._did(pr.repo.full_name, pr.number, "enqueue", pr.head_sha)
                return entry

        def add_comment(self, repo: Any, number: int, body: str, *, author: str) -> Any:
            with self.lock:
                comment = super().add_comment(repo, number, body, author=author)
                if author == self.bot:
                    what = "handback" if HANDBACK_MARKER in body else "comment"
                    self._did(repo.full_name, number, what, self.pull(repo, number).head_sha)
                return comment

        def _did(self, repo: str, number: int, what: str, head: str) -> None:
            self.actions.setdefault((repo, number), []).append((what, time.monotonic(), head))

    gh = ScaleGitHub(root, webhook_secret=SECRET, auto_checks=False)
    gh.actions = {}
    return gh


# --- the day ---------------------------------------------------------------------------------


@dataclass
class Planned:
    at: float  # simulated second of the day
    repo: str
    kind: str
    number: int = 0


def plan_day(repos: list[str], drops: int, rng: random.Random) -> list[Planned]:
    """`drops` drops over a simulated day: four fifths on a working-hours curve (most
    between 07:00 and 19:00 UTC, fewer at night), one fifth in bursts of ~20 drops across
    repositories within 5 simulated minutes."""
    burst_total = drops // 5
    steady = drops - burst_total

    def hour_weight(h: float) -> float:
        return 0.25 + math.exp(-(((h - 13.0) / 4.0) ** 2))

    times: list[float] = []
    while len(times) < steady:
        t = rng.uniform(0, DAY)
        if rng.random() * 1.25 < hour_weight(t / 3600):
            times.append(t)
    left = burst_total
    while left > 0:
        size = min(left, max(1, int(rng.gauss(20, 5))))
        start = rng.uniform(0, DAY - 300)
        times += [start + rng.uniform(0, 300) for _ in range(size)]
        left -= size
    kinds = list(MIX)
    weights = [MIX[k] for k in kinds]
    return sorted(
        (Planned(t, rng.choice(repos), rng.choices(kinds, weights)[0]) for t in times),
        key=lambda p: p.at,
    )


# --- one run -----------------------------------------------------------------------------------


@dataclass
class Config:
    repos: int = 50
    drops: int = 200
    minutes: float = 2.0  # real minutes for the simulated day
    workers: int = 1
    latency_ms: float = 50.0
    budget: int = 5000
    sweep_minutes: float = 5.0  # simulated; 0: no sweep
    mutation_gap: float | None = None  # None: landbot's own (1 s)
    seed: int = 28
    deadline: float = 900.0  # real seconds for the day and its drain
    store: str = ""  # PostgreSQL server URL


@dataclass
class Report:
    config: dict[str, Any]
    figures: dict[str, Any] = field(default_factory=dict)
    checks: dict[str, Any] = field(default_factory=dict)


def percentile(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, max(0, math.ceil(p / 100 * len(s)) - 1))]


class Scale:
    def __init__(self, cfg: Config, tmp: Path) -> None:
        self.cfg, self.tmp = cfg, tmp
        self.rng = random.Random(cfg.seed)
        self.clock = SimClock(DAY / (cfg.minutes * 60))
        self.children: dict[str, subprocess.Popen[bytes]] = {}
        self.usage: dict[str, dict[str, float]] = {}
        self.sent_at: dict[tuple[str, int], float] = {}  # the dequeued webhook, monotonic
        self.outbox: queue.Queue[Any] = queue.Queue()
        self.acks: list[float] = []
        self.ack_status: Counter[str] = Counter()
        self.sweeps: list[dict[str, float]] = []
        self.stopping = threading.Event()

    # --- setup -------------------------------------------------------------------------

    def setup(self) -> None:
        from landbot.sim import CheckScenario
        from landbot.sim.payloads import Urls
        from landbot.sim.server import BackgroundServer, create_app, free_socket

        t = time.monotonic()
        self.gh = gh = scale_github(self.tmp / "github")
        names = [f"{OWNER}/repo-{i:04d}" for i in range(self.cfg.repos)]
        self.repos = {
            n: gh.create_repo(n, files={"app.py": "def answer():\n    return 42\n"}) for n in names
        }
        app = gh.create_app(SLUG)
        gh.install_app(app, OWNER)
        gh.bot = app.bot_login
        self.key_file = app.write_private_key(self.tmp / "app.pem")
        self.app_id = app.id
        for r in self.repos.values():
            gh.add_collaborator(r, "alice", "write")
        self.plan = plan_day(names, self.cfg.drops, self.rng)
        flake = CheckScenario.failing(
            "build", step="Install dependencies", run="npm ci", log=soak.NPM_LOG.read_text()
        )
        failing, passing = CheckScenario.failing(), CheckScenario.passing()
        runs: Counter[tuple[str, int]] = Counter()
        conflicted: set[str] = set()
        for i, p in enumerate(self.plan):
            repo = self.repos[p.repo]
            files = {f"src/change-{i:05d}.txt": f"{i}\n"}
            if p.kind == "conflict":
                files["conflict.txt"] = f"pr {i}\n"
                conflicted.add(p.repo)
            pr = gh.open_pull_request(repo, head=f"change-{i:05d}", files=files, author="alice")
            p.number = pr.number

            def scenario(ctx: Any, p: Planned = p) -> Any:
                runs[(p.repo, p.number)] += 1
                if p.kind == "genuine":
                    return failing
                if p.kind == "flaky" and runs[(p.repo, p.number)] == 1:
                    return flake
                return passing

            gh.set_checks(repo, scenario, pr=pr, event="merge_group")
        for name in conflicted:  # the base adds the file each conflict PR adds too
            gh.push(self.repos[name], "main", {"conflict.txt": "base\n"}, author="alice")
        self.prep_deliveries = len(gh.webhooks.deliveries)
        self.sent = self.prep_deliveries  # the preparation's webhooks are not sent
        self.names = names
        sock, blob = free_socket(), free_socket()
        self.api = f"http://127.0.0.1:{sock.getsockname()[1]}"
        blob_url = f"http://127.0.0.1:{blob.getsockname()[1]}"
        gh.urls = Urls(api=self.api, web=gh.urls.web)
        self.latency = GitHubLatency(
            create_app(gh, blob_url=blob_url),
            self.clock,
            sock.getsockname()[1],
            self.cfg.latency_ms / 1000,
            self.cfg.budget,
        )
        self.server = BackgroundServer(self.latency, [sock, blob]).start()
        from landbot.sim.postgres import free_port
        from landbot.store import Store

        self.db_url = soak.fresh_database(self.cfg.store, f"scale_{uuid.uuid4().hex[:10]}")
        self.store = Store.open(self.db_url)
        self.port = free_port()
        self.webhook = f"http://127.0.0.1:{self.port}/webhook"
        import httpx

        self.http = httpx.Client(timeout=30.0)
        self.prep_seconds = time.monotonic() - t

    def env(self) -> dict[str, str]:
        keep = ("LANDBOT_", "SCALE_", "SOAK_")
        env = {k: v for k, v in os.environ.items() if not k.startswith(keep)}
        factor = self.clock.factor
        env.update(
            LANDBOT_GITHUB__API_URL=self.api,
            LANDBOT_GITHUB__GIT_URL=self.gh.git_url,
            LANDBOT_GITHUB__APP_ID=str(self.app_id),
            LANDBOT_GITHUB__PRIVATE_KEY_FILE=str(self.key_file),
            LANDBOT_GITHUB__WEBHOOK_SECRET=SECRET,
            LANDBOT_DATABASE_URL=self.db_url,
            LANDBOT_REPOS=",".join(self.names),
            LANDBOT_FIXER__STATE_DIR=str(self.tmp / "state"),
            LANDBOT_WEB__AUTH="loopback",
            # The breaker counts a simulated half hour, not a compressed day.
            LANDBOT_BREAKER__WINDOW_MINUTES=f"{30 / factor:.6f}",
            LANDBOT_BREAKER__RECHECK_MINUTES=f"{10 / factor:.6f}",
            SCALE_PORT=str(self.port),
            PYTHONUNBUFFERED="1",
        )
        if self.cfg.mutation_gap is not None:
            env["SCALE_MUTATION_GAP"] = str(self.cfg.mutation_gap)
        pythonpath = os.environ.get("PYTHONPATH")
        env["PYTHONPATH"] = str(ROOT) + (os.pathsep + pythonpath if pythonpath else "")
        return env

    def spawn(self, name: str, kind: str) -> subprocess.Popen[bytes]:
        log = self.tmp / f"{name}.log"
        with open(log, "ab") as out:
            proc = subprocess.Popen(
                [sys.executable, __file__, "--child", kind],
                env=self.env(),
                cwd=self.tmp,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        self.children[name] = proc
        return proc

    def start_children(self) -> None:
        serve = self.spawn("serve", "serve")
        deadline = time.monotonic() + 60
        while True:
            try:
                if self.http.get(f"http://127.0.0.1:{self.port}/healthz").status_code < 500:
                    break
            except Exception:
                pass
            if time.monotonic() > deadline or serve.poll() is not None:
                raise RuntimeError(f"landbot serve did not come up: {self.tail('serve')}")
            time.sleep(0.1)
        for i in range(self.cfg.workers):
            self.spawn(f"worker-{i + 1}", "worker")

    def tail(self, name: str) -> str:
        path = self.tmp / f"{name}.log"
        return path.read_text(errors="replace")[-2000:] if path.exists() else ""

    def reap(
        self, name: str, proc: subprocess.Popen[bytes], timeout: float, *, term_on: Any = None
    ) -> None:
        """Wait for `proc` with wait4 (never Popen.poll, which would reap it first): its peak
        RSS and CPU seconds, kept under `name`. SIGTERM once `term_on` is set; SIGKILL after
        `timeout` seconds from then."""
        deadline = None if term_on is not None else time.monotonic() + timeout
        while True:
            self.sample_rss(name, proc)
            pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if deadline is None and term_on.is_set():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(proc.pid, signal.SIGTERM)
                deadline = time.monotonic() + timeout
            if deadline is not None and time.monotonic() > deadline:
                os.kill(proc.pid, signal.SIGKILL)
                pid, status, ru = os.wait4(proc.pid, 0)
                break
            time.sleep(0.05)
        proc.returncode = os.waitstatus_to_exitcode(status)
        mine = self.usage.setdefault(name, {"rss_mb": 0.0, "cpu_s": 0.0, "runs": 0})
        mine["cpu_s"] += ru.ru_utime + ru.ru_stime
        mine["runs"] += 1

    def sample_rss(self, name: str, proc: subprocess.Popen[bytes]) -> None:
        """The process's peak RSS so far (VmHWM). Not wait4's ru_maxrss: a child spawned
        from this process starts with this process's peak, which exec does not reset."""
        try:
            status = Path(f"/proc/{proc.pid}/status").read_text()
        except OSError:
            return
        for line in status.splitlines():
            if line.startswith("VmHWM:"):
                mine = self.usage.setdefault(name, {"rss_mb": 0.0, "cpu_s": 0.0, "runs": 0})
                mine["rss_mb"] = max(mine["rss_mb"], int(line.split()[1]) / 1024)

    def stop_children(self) -> None:
        for name, proc in self.children.items():
            if proc.returncode is None:
                self.sample_rss(name, proc)
                with contextlib.suppress(ProcessLookupError):
                    os.kill(proc.pid, signal.SIGINT if name == "serve" else signal.SIGTERM)
        for name, proc in self.children.items():
            if proc.returncode is None:
                with contextlib.suppress(ChildProcessError):
                    self.reap(name, proc, 30)

    def close(self) -> None:
        self.stopping.set()
        with contextlib.suppress(Exception):
            self.stop_children()
        with contextlib.suppress(Exception):
            self.http.close()
        with contextlib.suppress(Exception):
            self.server.stop()
        with contextlib.suppress(Exception):
            self.store.close()

    # --- webhooks: delivered in order by one sender thread ------------------------------

    def pump(self) -> None:
        with self.gh.webhooks._lock:
            pending = self.gh.webhooks.deliveries[self.sent :]
            self.sent += len(pending)
        for d in pending:
            self.outbox.put(d)

    def sender(self) -> None:
        while True:
            d = self.outbox.get()
            if d is None:
                return
            if d.event == "pull_request" and d.action == "dequeued":
                key = (d.payload["repository"]["full_name"], d.payload["number"])
                self.sent_at.setdefault(key, time.monotonic())
            t = time.perf_counter()
            try:
                status = str(d.send(self.webhook, self.http).status_code)
            except Exception as exc:
                status = type(exc).__name__
            self.acks.append(time.perf_counter() - t)
            self.ack_status[status] += 1

    # --- the sweep, on the simulated schedule ----------------------------------------------

    def sweeper(self) -> None:
        every = self.cfg.sweep_minutes * 60
        next_at = 0.0
        while not self.stopping.is_set():
            wait = (next_at - self.clock.now()) / self.clock.factor
            if wait > 0 and self.stopping.wait(min(wait, 1.0)):
                return
            if wait > 0:
                continue
            start, t = self.clock.now(), time.monotonic()
            proc = self.spawn("poll", "poll")
            self.reap("poll", proc, 30, term_on=self.stopping)
            if proc.returncode == 0:
                self.sweeps.append(
                    {"at": start, "sim_s": self.clock.now() - start, "s": time.monotonic() - t}
                )
            next_at = start + every

    # --- the day ----------------------------------------------------------------------------

    def drop(self, p: Planned) -> None:
        from landbot.sim import merge_queue
        from landbot.sim.state import QUEUE_BOT

        gh, repo = self.gh, self.repos[p.repo]
        pr = gh.pull(repo, p.number)
        entry = gh.enqueue(pr, actor="alice")
        if p.kind == "manual":
            gh.dequeue(pr, actor="alice")
        elif p.kind == "timeout":
            webhook, timeline = merge_queue.REASONS["timeout"]
            with gh.lock:
                merge_queue.remove(
                    gh, entry, webhook_reason=webhook, timeline_reason=timeline, actor=QUEUE_BOT
                )
        else:
            # The queue builds its groups, the re-enqueued PRs ahead merge, this one drops.
            gh.run_queue(repo)
        self.pump()

    def quiet(self) -> bool:
        counts = self.store.counts()
        busy = counts.drops.get("pending", 0) + counts.deliveries.get("pending", 0)
        busy += counts.jobs.get("queued", 0) + counts.jobs.get("leased", 0)
        return busy == 0 and self.outbox.empty()

    def run(self) -> Report:
        self.setup()
        self.start_children()
        send = threading.Thread(target=self.sender, name="webhooks", daemon=True)
        send.start()
        self.clock.start()
        self.latency.calls.clear()
        self.latency.used.clear()
        sweep = None
        if self.cfg.sweep_minutes > 0:
            sweep = threading.Thread(target=self.sweeper, name="sweeper", daemon=True)
            sweep.start()
        start = time.monotonic()
        deadline = start + self.cfg.deadline
        done = 0
        for p in self.plan:
            while self.clock.now() < p.at and time.monotonic() < deadline:
                time.sleep(min(0.05, (p.at - self.clock.now()) / self.clock.factor))
            if time.monotonic() >= deadline:
                break
            self.drop(p)
            done += 1
        day_end = time.monotonic()
        finished = False
        while time.monotonic() < deadline:
            if done == len(self.plan) and self.quiet():
                time.sleep(1.0)  # a delivery just applied may queue a job
                if self.quiet():
                    finished = True
                    break
            time.sleep(0.5)
        drained = time.monotonic()
        self.stopping.set()
        self.outbox.put(None)
        send.join(timeout=30)
        if sweep is not None:
            sweep.join(timeout=120)
        sim_end = self.clock.now()
        self.stop_children()
        return self.report(done, finished, start, day_end, drained, sim_end)

    # --- the figures ------------------------------------------------------------------------

    def report(
        self,
        done: int,
        finished: bool,
        start: float,
        day_end: float,
        drained: float,
        sim_end: float,
    ) -> Report:
        cfg = self.cfg
        rep = Report(config={**vars(cfg), "store": "postgresql"})
        rep.config["compression"] = round(self.clock.factor, 1)
        calls = list(self.latency.calls)
        per_hour: dict[str, Counter[int]] = defaultdict(Counter)
        for c in calls:
            per_hour[c.resource][int(c.at // 3600)] += 1
        sweep_calls = sum(1 for c in calls if c.key.endswith(SWEEP_OPERATIONS))
        budgeted = [c for c in calls if c.resource != "storage"]
        drop_calls = len(budgeted) - sweep_calls
        hours = max(1.0, sim_end / 3600)

        def hourly(res: str) -> dict[str, Any]:
            by = per_hour.get(res, Counter())
            peak = max(by.values(), default=0)
            total = sum(by.values())
            # The day's work whenever it was done (a backlog spills past the day's end).
            return {"total": total, "day_mean_per_hour": round(total / 24), "peak_hour": peak}

        hour_drops = Counter(int(p.at // 3600) for p in self.plan[:done])
        peak_drops = max(hour_drops.values(), default=0)
        per_drop_rest = sum(per_hour["core"].values()) / max(1, done)
        per_drop_gql = (sum(per_hour["graphql"].values()) - sweep_calls) / max(1, done)
        sweeps_done = len(self.sweeps)
        per_repo_sweep = sweep_calls / max(1, sweeps_done) / cfg.repos
        sweeps_an_hour = 60 / cfg.sweep_minutes if cfg.sweep_minutes else 0.0

        def demand(repos: int, drops_per_day: int) -> dict[str, Any]:
            """What the day's peak hour asks of GitHub at this size: the drops of the
            busiest hour of this plan (scaled) at this run's calls per drop, plus a sweep
            of every repository each sweep interval at this run's points per repository."""
            drops_hour = peak_drops * drops_per_day / max(1, done)
            rest = drops_hour * per_drop_rest
            gql = drops_hour * per_drop_gql + repos * sweeps_an_hour * per_repo_sweep
            return {
                "repos": repos,
                "drops_per_day": drops_per_day,
                "peak_hour_drops": round(drops_hour),
                "rest": round(rest),
                "graphql_points": round(gql),
                "of_which_sweep": round(repos * sweeps_an_hour * per_repo_sweep),
                "rest_share": round(rest / cfg.budget, 2),
                "graphql_share": round(gql / cfg.budget, 2),
            }

        drops = self.store.drops(None, limit=None)
        ours = {(p.repo, p.number): p for p in self.plan[:done]}
        outcomes = Counter(d.outcome for d in drops)
        first = {}
        for d in sorted(drops, key=lambda d: d.id):
            first.setdefault((d.repo, d.pr), d)
        unreached = [k for k in ours if k not in first or first[k].outcome == "pending"]
        # Latency: the dequeued webhook sent -> the first re-enqueue or hand-back after it.
        latencies: list[float] = []
        action_times: list[float] = []
        no_action = []
        dup_enqueues = dup_handbacks = 0
        for key, p in ours.items():
            acts = self.gh.actions.get(key, [])
            heads = Counter(h for what, _, h in acts if what == "enqueue")
            dup_enqueues += sum(n - 1 for n in heads.values() if n > 1)
            handbacks = sum(1 for what, _, _ in acts if what == "handback")
            dup_handbacks += max(0, handbacks - 1)
            if p.kind not in ACTIONABLE:
                continue
            sent = self.sent_at.get(key)
            hit = [t for what, t, _ in acts if what in ("enqueue", "handback")]
            if sent is None or not hit:
                no_action.append(f"{key[0]}#{key[1]} {p.kind}")
                continue
            latencies.append(hit[0] - sent)
            action_times.append(hit[0])
        dup_status = 0
        for key in ours:
            repo = self.repos[key[0]]
            mine = [c for c in self.gh.comments_on(repo, key[1]) if c.author == self.gh.bot]
            dup_status += max(0, sum(STATUS_MARKER in c.body for c in mine) - 1)
        first_sent = min(self.sent_at.values(), default=start)
        last_action = max(action_times, default=first_sent)
        span = max(1e-9, last_action - first_sent)
        rep.checks = {
            "drops_planned": len(self.plan),
            "drops_made": done,
            "finished": finished,
            "drops_without_outcome": len(unreached),
            "actionable_without_action": len(no_action),
            "duplicate_enqueues": dup_enqueues,
            "duplicate_handbacks": dup_handbacks,
            "duplicate_status_comments": dup_status,
            "drops_failed": outcomes.get("failed", 0),
            "examples": (unreached[:3], no_action[:3]),
        }
        usage = dict(self.usage)
        usage["bench (simulated GitHub, webhooks, this process)"] = {
            "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "cpu_s": time.process_time(),
            "runs": 1,
        }
        workers = {k: v for k, v in usage.items() if k.startswith("worker-")}
        busy = sum(v["cpu_s"] for v in workers.values()) / max(
            1e-9, len(workers) * (drained - start)
        )
        acks = sorted(self.acks) or [0.0]
        sweeps = self.sweeps
        rep.figures = {
            "prep_s": round(self.prep_seconds, 1),
            "day_s": round(day_end - start, 1),
            "drain_s": round(drained - day_end, 1),
            "simulated_hours": round(sim_end / 3600, 2),
            "kinds": dict(Counter(p.kind for p in self.plan[:done])),
            "outcomes": dict(outcomes),
            "rest": hourly("core"),
            "graphql_points": hourly("graphql"),
            "calls_per_drop_rest": round(per_drop_rest, 2),
            "points_per_drop_graphql": round(per_drop_gql, 2),
            "peak_hour_demand": demand(cfg.repos, done),
            "peak_hour_demand_full_size": demand(1000, 10_000),
            "storage_downloads": sum(1 for c in calls if c.resource == "storage"),
            "refused_by_budget": self.latency.refused,
            "calls_per_drop": round(drop_calls / max(1, done), 2),
            "calls_per_actionable_drop": round(
                drop_calls / max(1, sum(p.kind in ACTIONABLE for p in self.plan[:done])), 2
            ),
            "calls_by_route": dict(Counter(c.key for c in budgeted).most_common(25)),
            "sweeps": len(sweeps),
            "sweep_points": sweep_calls,
            "points_per_sweep": round(sweep_calls / max(1, len(sweeps)), 1),
            "sweep_real_s_median": round(statistics.median([s["s"] for s in sweeps]), 1)
            if sweeps
            else None,
            "sweeps_per_sim_hour": round(len(sweeps) / hours, 2),
            "points_per_repo_sweep": round(per_repo_sweep, 2),
            "latency_s": {
                "n": len(latencies),
                "p50": round(percentile(latencies, 50), 2),
                "p99": round(percentile(latencies, 99), 2),
                "max": round(max(latencies, default=float("nan")), 2),
            },
            "offered_drops_per_s": round(done / max(1e-9, day_end - start), 2),
            "throughput_actions_per_s": round(len(action_times) / span, 3),
            "backlog_at_day_end_s": round(max(0.0, last_action - day_end), 1),
            "worker_cpu_share": round(busy, 3),
            "webhook_ack_p99_ms": round(percentile(acks, 99) * 1000, 1),
            "webhook_answers": dict(self.ack_status),
            "processes": {
                k: {
                    "rss_mb": round(v["rss_mb"], 1),
                    "cpu_s": round(v["cpu_s"], 1),
                    "runs": v["runs"],
                }
                for k, v in usage.items()
            },
        }
        return rep


def run_scale(cfg: Config) -> Report:
    tmp = Path(tempfile.mkdtemp(prefix="landbot-scale-", dir="/tmp"))
    run = Scale(cfg, tmp)
    try:
        return run.run()
    finally:
        run.close()
        if os.environ.get("SCALE_KEEP"):
            print(f"kept {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def render(rep: Report) -> str:
    c, f, k = rep.config, rep.figures, rep.checks
    lat = f["latency_s"]
    lines = [
        f"{c['workers']} worker(s): {c['repos']} repos, {k['drops_made']}/{c['drops']} drops,"
        f" day in {c['minutes']} min (x{c['compression']}), latency {c['latency_ms']:.0f} ms,"
        f" sweep every {c['sweep_minutes']} sim min; prep {f['prep_s']} s, day {f['day_s']} s,"
        f" drain {f['drain_s']} s; {'finished' if k['finished'] else 'DEADLINE HIT'}",
        f"  kinds {f['kinds']}; outcomes {f['outcomes']}",
        f"  calls: REST {f['rest']['total']}, GraphQL {f['graphql_points']['total']} points"
        f" (sweeps {f['sweep_points']}); measured peak sim hour REST {f['rest']['peak_hour']},"
        f" GraphQL {f['graphql_points']['peak_hour']}; refused by the budget"
        f" {f['refused_by_budget']}; log downloads {f['storage_downloads']}",
        f"  per drop: REST {f['calls_per_drop_rest']}, GraphQL {f['points_per_drop_graphql']}"
        f" (per actionable drop, all: {f['calls_per_actionable_drop']}); sweeps {f['sweeps']}"
        f" ({f['points_per_sweep']} points each, {f['points_per_repo_sweep']} a repository,"
        f" median {f['sweep_real_s_median']} s real)",
        f"  peak-hour demand at this size: {f['peak_hour_demand']}",
        f"  peak-hour demand at 1,000 repos, 10,000 drops a day: {f['peak_hour_demand_full_size']}",
        f"  latency webhook->action p50 {lat['p50']} s, p99 {lat['p99']} s, max {lat['max']} s"
        f" (n={lat['n']}); offered {f['offered_drops_per_s']} drops/s, throughput"
        f" {f['throughput_actions_per_s']} actions/s, last action"
        f" {f['backlog_at_day_end_s']} s after the day's last drop",
        f"  worker CPU share {f['worker_cpu_share']:.0%} (CPU seconds / wall seconds);"
        f" webhook ack p99 {f['webhook_ack_p99_ms']} ms",
    ]
    for name, u in f["processes"].items():
        lines.append(
            f"  . {name}: peak RSS {u['rss_mb']} MB, CPU {u['cpu_s']} s"
            + (f" over {u['runs']} runs" if u["runs"] > 1 else "")
        )
    checks = {key: v for key, v in k.items() if key != "examples"}
    lines.append(f"  checks {checks}")
    if any(k["examples"]):
        lines.append(f"  e.g. {k['examples']}")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repos", type=int, default=1000)
    ap.add_argument("--drops", type=int, default=10_000, help="drops in the simulated day")
    ap.add_argument("--minutes", type=float, default=15.0, help="real minutes for the day")
    ap.add_argument("--workers", default="1,2,4", help="worker counts, one run each")
    ap.add_argument("--latency-ms", type=float, default=50.0)
    ap.add_argument("--budget", type=int, default=5000, help="per simulated hour and resource")
    ap.add_argument("--sweep-minutes", type=float, default=5.0, help="simulated; 0: none")
    ap.add_argument("--mutation-gap", type=float, default=None, help="seconds (landbot: 1)")
    ap.add_argument("--seed", type=int, default=28)
    ap.add_argument("--deadline", type=float, default=1800.0, help="real seconds per run")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child)
        return
    counts = [int(n) for n in args.workers.split(",") if n.strip()]
    reports: list[Report] = []
    started = time.monotonic()
    with soak.postgres_server() as url:
        for n in counts:
            cfg = Config(
                repos=args.repos,
                drops=args.drops,
                minutes=args.minutes,
                workers=n,
                latency_ms=args.latency_ms,
                budget=args.budget,
                sweep_minutes=args.sweep_minutes,
                mutation_gap=args.mutation_gap,
                seed=args.seed,
                deadline=args.deadline,
                store=url,
            )
            reports.append(run_scale(cfg))
            print(render(reports[-1]), flush=True)
    base = reports[0].figures["throughput_actions_per_s"] if reports else 0
    for rep in reports[1:]:
        ratio = rep.figures["throughput_actions_per_s"] / base if base else float("nan")
        print(f"throughput {rep.config['workers']} workers / {counts[0]}: {ratio:.2f}x")
    print(
        f"machine: {os.cpu_count()} cores; {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC;"
        f" {time.monotonic() - started:.0f} s in all"
    )
    if args.json:
        print(json.dumps([vars(r) for r in reports], indent=2, default=str))


if __name__ == "__main__":
    main()
