"""A fault soak: many pull requests dropping from the queue while GitHub misbehaves and the
worker is killed, with the invariants counted at the end.

    .venv/bin/python bench/soak.py --seed 11 --prs 40 --store both      # a few minutes
    .venv/bin/python bench/soak.py --seed 11 --prs 12 --store sqlite --json
    .venv/bin/python bench/soak.py --seeds 20 --prs 30 --store postgres --fixer  # the worst of 20

With --seeds N, seeds --seed .. --seed+N-1 run one after another on each store (one
PostgreSQL server, a fresh database per run) and the report ends with the worst run of each
invariant (its value and seed) and the sum over all runs: one lucky seed proves nothing.
With --fixer, the fixer is on (a command agent in the real sandbox that answers
needs_human), so genuine failures go through a fix job: a drop job and its fix job of one
pull request, the case of two jobs of one PR at once (issue 29).

What runs: the simulated GitHub (landbot/sim) in this process behind a fault layer that
fails a set share of requests (502, secondary rate limit 403 + retry-after, 429, the primary
limit running out, an answer slower than the client's timeout, a dropped connection, a
mutation that applied but answered 502); `landbot serve` (webhook intake) and two
`landbot worker` processes as children on one store (a throwaway PostgreSQL server, or a
SQLite file); `landbot poll` children in between. The children run the real CLI commands
(landbot.cli.serve / worker / poll) with two changes: the GitHub client's timeout and
mutation gap (2 s and 0.1 s instead of 30 s and 1 s; no setting exists for them), so a slow
answer costs seconds, not half a minute; and serve's built-in worker is off (no setting
exists for that either), so every process that takes a job is one the soak kills: with it
on, the unkilled serve took the jobs and no failpoint ever fired. This process is GitHub:
it opens the pull requests, drives the merge queue and its clock, pushes and closes as
people do, delivers the webhooks (some twice, some never: a poll must find those), and
SIGKILLs the workers: a random one per kill, both at a failpoint kill, restarted with
`LANDBOT_FAILPOINT` (one marker for both, so whichever first reaches that point dies
there). Each run reports whether its failpoint fired; the summary, how many runs had one.

Reproducible from --seed: the scenario (kinds, which webhooks are withheld or repeated,
when the worker dies) and the fault schedule (a function of the seed, the route and the
n-th call to it). Thread timing is not: which drop meets the n-th fault can differ.
Bounded: every wait has a deadline; --deadline caps the whole run.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import hashlib
import json
import logging
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
REPO = "acme/widgets"
BOT = "landbot-bot"
SECRET = "soak-webhook-secret"
NPM_LOG = ROOT / "tests" / "triage" / "fixtures" / "npm-econnreset.log"
STATUS_MARKER = "<!-- landbot:status -->"
HANDBACK_MARKER = "<!-- landbot:handback -->"
QUEUE_TIMEOUT_S = 3
# The --fixer agent: it looks, and hands the PR back to a person.
GIVE_UP = (
    "import json, os; json.dump({'verdict': 'needs_human', 'summary': 'soak agent',"
    " 'recommendation': 'look', 'reproduced': True},"
    " open(os.environ['LANDBOT_VERDICT_FILE'], 'w'))"
)
ID_IN_PATH = re.compile(r"/[0-9a-f]{40}|/\d+")
# Where a failpoint kill dies: between deciding and acting, and right before or after the
# re-enqueue, the status comment and the hand-back (landbot/pipeline/process.py, land/act.py).
FAILPOINTS = (
    "after_decide",
    "before_requeue",
    "before_status",
    "after_status",
    "before_handback",
    "after_handback",
)
WORKERS = ("worker-a", "worker-b")
FAULT_KINDS = ("502", "secondary", "429", "primary", "slow", "drop", "applied_502")
MUTATION_OPS = (
    "EnqueuePullRequest",
    "DequeuePullRequest",
    "EnablePullRequestAutoMerge",
    "MinimizeComment",
)
# Reasons the queue never produces on its own: removed by hand with GitHub's spelling.
SPECIAL = {
    "roll_back": ("ROLL_BACK", "roll_back"),
    "branch_protections": ("BRANCH_PROTECTIONS", "branch_protections"),
    "git_tree_invalid": ("GIT_TREE_INVALID", "git_tree_invalid"),
    "invalid_merge_commit": ("INVALID_MERGE_COMMIT", "invalid_merge_commit"),
    "queue_cleared": ("QUEUE_CLEARED", "queue_cleared"),
    "already_merged": ("ALREADY_MERGED", "already_merged"),
}
KINDS = (
    "flaky",
    "genuine",
    "cancelled",
    "timeout",
    "conflict",
    "manual",
    "merged",
    "pushed_in_queue",
    "skip_label",
    *SPECIAL,
)
# Kinds whose drop a person may follow with a push or a close (not manual, not merged).
FOLLOWABLE = {"flaky", "genuine", "cancelled", "timeout", "conflict", *SPECIAL} - {
    "queue_cleared",
    "already_merged",
}


# --- the child processes: the real CLI commands, with a faster GitHub client -------------


def child(kind: str) -> None:
    """Run `landbot serve|worker|poll` as the CLI does, with the client's timeout and
    mutation gap from SOAK_CLIENT_TIMEOUT / SOAK_MUTATION_GAP."""
    import landbot.cli as cli
    import landbot.pipeline.wiring as wiring
    from landbot.config import Settings
    from landbot.github.client import GitHubClient

    timeout = float(os.environ["SOAK_CLIENT_TIMEOUT"])
    gap = float(os.environ["SOAK_MUTATION_GAP"])

    def make_github(settings: Settings) -> GitHubClient:
        return GitHubClient(settings.github, timeout=timeout, mutation_gap=gap)

    # The commands import make_github from wiring when they run: this one is theirs.
    wiring.make_github = make_github
    if kind == "serve":

        def no_worker(settings: Settings, store: Any, *, gh: Any = None) -> Any:
            return NoWorker()

        wiring.make_worker = no_worker
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")
    if kind == "serve":
        cli.serve(host="127.0.0.1", port=int(os.environ["SOAK_PORT"]), config=None)
    elif kind == "worker":
        cli.worker(config=None)
    elif kind == "poll":
        cli.poll(repo=None, no_process=False, config=None)
    else:
        raise SystemExit(f"unknown child {kind!r}")


class NoWorker:
    """serve's built-in worker, off: the jobs go to the `landbot worker` children only."""

    def run(self, stop: threading.Event) -> None:
        stop.wait()

    def alive(self, within: float = 60.0) -> bool:
        return True  # nothing to be alive: /healthz reports the store


# --- GitHub misbehaving: a fault layer in front of the simulated GitHub ------------------


class FaultPlan:
    """Which request fails, and how: a function of (seed, route, n-th call to it)."""

    def __init__(self, seed: int, rate: float, slow: float) -> None:
        self.seed, self.rate, self.slow = seed, rate, slow
        self._lock = threading.Lock()
        self._seen: Counter[str] = Counter()
        self.injected: Counter[str] = Counter()
        self.calls = 0
        self.on = True

    def pick(self, key: str, mutation: bool) -> str | None:
        with self._lock:
            self.calls += 1
            n = self._seen[key]
            self._seen[key] += 1
            if not self.on:
                return None
        digest = hashlib.sha256(f"{self.seed}:{key}:{n}".encode()).digest()
        rng = random.Random(digest)
        if rng.random() >= self.rate:
            return None
        kinds = FAULT_KINDS if mutation else FAULT_KINDS[:-1]
        kind = rng.choice(kinds)
        if kind == "drop" and rng.random() < 0.5:
            kind = "drop_after"  # the connection drops after GitHub did the work
        with self._lock:
            self.injected[kind] += 1
        return kind


def route_key(method: str, path: str, body: bytes) -> tuple[str, bool]:
    """(a key naming the route and GraphQL operation, whether it is a mutation)."""
    key = f"{method} {ID_IN_PATH.sub('/N', path)}"
    if path.endswith("/graphql"):
        try:
            doc = json.loads(body or b"{}")
            query = str(doc.get("query", ""))
        except ValueError:
            return key, False
        m = re.search(r"\b(query|mutation)\s+(\w+)", query)
        if m:
            return f"{key} {m.group(2)}", m.group(1) == "mutation"
        return key, query.lstrip().startswith("mutation")
    return key, method not in ("GET", "HEAD")


class Dropped(Exception):
    """Raised after a partial answer: uvicorn then closes the connection mid-response."""


def _json_response(status: int, body: dict[str, Any], headers: dict[str, str]) -> list[Any]:
    data = json.dumps(body).encode()
    hs = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    hs += [(k.encode(), v.encode()) for k, v in headers.items()]
    return [
        {"type": "http.response.start", "status": status, "headers": hs},
        {"type": "http.response.body", "body": data},
    ]


class FaultyApp:
    """ASGI middleware: every request to the simulated GitHub passes the FaultPlan."""

    def __init__(self, app: Any, plan: FaultPlan) -> None:
        self.app, self.plan = app, plan

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"].startswith("/_fake"):
            await self.app(scope, receive, send)
            return
        chunks = []
        while True:
            msg = await receive()
            chunks.append(msg.get("body", b""))
            if not msg.get("more_body"):
                break
        body = b"".join(chunks)
        replayed = False

        async def replay() -> Any:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        key, mutation = route_key(scope["method"], scope["path"], body)
        kind = self.plan.pick(key, mutation)
        if kind is None:
            await self.app(scope, replay, send)
            return
        captured: list[Any] = []

        async def capture(message: Any) -> None:
            captured.append(message)

        now = int(time.time())
        if kind == "502":
            out = _json_response(502, {"message": "Server Error"}, {})
        elif kind == "secondary":
            out = _json_response(
                403,
                {"message": "You have exceeded a secondary rate limit."},
                {"retry-after": "1"},
            )
        elif kind == "429":
            out = _json_response(429, {"message": "Too many requests"}, {"retry-after": "1"})
        elif kind == "primary":
            out = _json_response(
                403,
                {"message": "API rate limit exceeded."},
                {
                    "x-ratelimit-limit": "5000",
                    "x-ratelimit-remaining": "0",
                    "x-ratelimit-reset": str(now + 1),
                },
            )
        elif kind == "applied_502":
            await self.app(scope, replay, capture)  # the change happens...
            out = _json_response(502, {"message": "Server Error"}, {})  # ...the answer fails
        elif kind == "slow":
            await self.app(scope, replay, capture)
            await asyncio.sleep(self.plan.slow)
            out = captured
        else:  # "drop" before GitHub did anything, "drop_after" once it had
            if kind == "drop_after":
                await self.app(scope, replay, capture)
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": [(b"content-length", b"4096")],
                }
            )
            await send({"type": "http.response.body", "body": b"{", "more_body": True})
            raise Dropped(key)
        with contextlib.suppress(Exception):  # a client that gave up is gone
            for message in out:
                await send(message)


# --- GitHub's side of the invariants: every mutation landbot attempts, as it reaches it ---


@dataclass
class Attempt:
    op: str
    pr: int
    head: str  # the PR's head when the mutation reached GitHub
    target: str | None  # the head an enqueue or auto-merge named (expectedHeadOid)
    state: str  # open, closed, merged
    last_removal_head: str | None
    last_removal_reason: str | None
    body: str = ""
    applied: bool = False
    error: str = ""


def soak_github(root: Path) -> Any:
    """A FakeGitHub that records every mutation by the bot before doing it."""
    from landbot.sim import FakeGitHub

    class SoakGitHub(FakeGitHub):
        attempts: list[Attempt]
        # (PR, commit) a push took out of the queue: the head had moved when GitHub removed it.
        pushed_out: set[tuple[int, str]]

        def _pr_head_changed(self, pr: Any, new: str, pusher: str | None) -> None:
            if self._entry(pr) is not None:
                self.pushed_out.add((pr.number, pr.head_sha))
            super()._pr_head_changed(pr, new, pusher)

        def _record(self, op: str, pr: Any, target: str | None, body: str = "") -> Attempt:
            removals = [e for e in pr.timeline if e.typename == "RemovedFromMergeQueueEvent"]
            last = removals[-1] if removals else None
            state = "merged" if pr.merged else pr.state
            a = Attempt(
                op,
                pr.number,
                pr.head_sha,
                target,
                state,
                last.data.get("before_commit") if last else None,
                last.data.get("reason") if last else None,
                body,
            )
            self.attempts.append(a)
            return a

        def _attempt(self, a: Attempt | None, call: Callable[[], Any]) -> Any:
            try:
                result = call()
            except Exception as exc:
                if a is not None:
                    a.error = str(exc)[:200]
                raise
            if a is not None:
                a.applied = True
            return result

        def enqueue(self, pr: Any, *, actor: str, **kw: Any) -> Any:
            with self.lock:
                a = (
                    self._record("enqueue", pr, kw.get("expected_head_oid"))
                    if actor == BOT
                    else None
                )
                return self._attempt(
                    a, lambda: super(SoakGitHub, self).enqueue(pr, actor=actor, **kw)
                )

        def enable_auto_merge(self, pr: Any, *, actor: str, **kw: Any) -> None:
            with self.lock:
                target = kw.get("expected_head_oid")
                a = self._record("auto_merge", pr, target) if actor == BOT else None
                self._attempt(
                    a, lambda: super(SoakGitHub, self).enable_auto_merge(pr, actor=actor, **kw)
                )

        def add_comment(self, repo: Any, number: int, body: str, *, author: str) -> Any:
            with self.lock:
                pr = self.pull(repo, number)
                a = self._record("comment", pr, None, body) if author == BOT else None
                return self._attempt(
                    a,
                    lambda: super(SoakGitHub, self).add_comment(repo, number, body, author=author),
                )

        def edit_comment(self, comment_id: int, body: str, *, editor: str) -> Any:
            with self.lock:
                c = self.comments.get(comment_id)
                a = None
                if c is not None and editor == BOT:
                    a = self._record("edit", self.pull(c.repo, c.issue_number), None, body)
                return self._attempt(
                    a, lambda: super(SoakGitHub, self).edit_comment(comment_id, body, editor=editor)
                )

        def minimize_comment(self, comment: Any, classifier: str) -> None:
            with self.lock:
                a = self._record("minimize", self.pull(comment.repo, comment.issue_number), None)
                self._attempt(
                    a, lambda: super(SoakGitHub, self).minimize_comment(comment, classifier)
                )

    gh = SoakGitHub(root, webhook_secret=SECRET)
    gh.attempts = []
    gh.pushed_out = set()
    return gh


# --- the stores ---------------------------------------------------------------------------


@contextlib.contextmanager
def postgres_server() -> Iterator[str]:
    """A throwaway PostgreSQL server on a unix socket (the one the tests start)."""
    from landbot.sim.postgres import NotInstalled, throwaway_server

    try:
        with throwaway_server(prefix="landbot-soak-pg-") as url:
            yield url
    except NotInstalled as exc:
        raise SystemExit(str(exc)) from None


def fresh_database(server_url: str, name: str) -> str:
    """A new, empty database on the server of `server_url`; its URL."""
    import sqlalchemy as sa

    engine = sa.create_engine(server_url, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    engine.dispose()
    from landbot.sim.postgres import database_url

    return database_url(server_url, name)


# --- the scenario ----------------------------------------------------------------------------


@dataclass
class Pull:
    kind: str
    branch: str
    missed: bool = False  # its first removal's webhook never comes
    follow: str | None = None  # "push" or "close" after its drop
    number: int = 0
    merge_group_runs: int = 0
    removed: bool = False
    followed: bool = False


@dataclass
class Config:
    seed: int = 11
    prs: int = 40
    fault_rate: float = 0.10
    kills: int = 3  # kill waves: a random worker SIGKILLed, both at a failpoint kill
    failpoint_kills: int = 1
    failpoints: tuple[str, ...] = FAILPOINTS  # one is picked per failpoint kill
    polls: int = 3
    store: str = "sqlite"  # "sqlite" or a PostgreSQL server URL
    deadline: float = 240.0  # seconds for the whole run
    wave: int = 6
    client_timeout: float = 2.0
    slow: float = 3.0
    mutation_gap: float = 0.1
    lease: float = 3.0
    dup_rate: float = 0.2
    miss_rate: float = 0.2
    pythonpath: str = ""  # put first on the children's path (a mutated copy of landbot)
    fixer: bool = False  # a command agent in the sandbox answers needs_human


@dataclass
class Report:
    config: dict[str, Any]
    seconds: float = 0.0
    finished: bool = False  # the store went quiet before the deadline
    removals: int = 0
    drops: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)
    invariants: dict[str, int] = field(default_factory=dict)
    examples: dict[str, list[str]] = field(default_factory=dict)
    figures: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Removal:
    """One removal in a PR's timeline, with what the soak did around it."""

    pr: int
    head: str | None  # the commit GitHub removed (the timeline's beforeCommit)
    reason: str  # normalized
    kind: str
    withheld: bool  # its dequeue webhook was never delivered
    moved_before_a_poll: bool  # a person pushed or closed at once (before any poll ran)
    pushed_out: bool  # a push removed it: the head had already moved on when GitHub did


def not_owed(r: Removal) -> str | None:
    """Why landbot owed no drop for `r` (None: it owed one, at r.head with r.reason).

    A delivered dequeue webhook is always a drop at the commit removed, whatever came next
    (for a push while queued too: the drop is recorded there and decided "ignored"). With
    the webhook withheld only a sweep can find the removal, and a sweep records a removal
    only when the timeline ties it to the PR's current head (README, "A drop is the commit
    GitHub removed"; landbot/intake/poll.py); a push to a queued PR "is recognised from the
    timeline and nothing is done for the head nobody queued". So a withheld removal is owed
    nothing when the head it removed was gone before a sweep could look: the push that
    removed it (`pushed_out`), or a person's push or close right after (`moved_before_a_poll`).
    And a withheld removal because the PR merged is owed nothing: the policy for `merged`
    is nothing (README, "The policy per drop reason"), and a sweep reads open pull requests
    only (landbot/github/queries/queue_removals.graphql), so no door could see it (why the
    `merged` kind's webhook is never withheld; a flaky PR whose group was rebuilt and merged
    has only this removal).
    """
    if not r.withheld:
        return None
    if r.reason == "merged":
        return "merged, webhook withheld: nothing to do for a merged PR, and no sweep sees it"
    if r.pushed_out:
        return "pushed while queued, webhook withheld: the removed head was gone at once"
    if r.moved_before_a_poll:
        return "webhook withheld, then pushed or closed before a poll: the head was gone"
    return None


def tally_removals(
    removals: list[Removal], have: Counter[tuple[int, str | None, str]]
) -> tuple[list[Removal], list[tuple[Removal, str]]]:
    """(removals lost, removals no drop was owed for): each removal owed a drop must have
    one at (PR, commit removed, reason); `have` counts the drops per such key."""
    left = Counter(have)
    lost: list[Removal] = []
    spared: list[tuple[Removal, str]] = []
    # Owed removals take the drops first: a drop landbot made anyway for a removal it owed
    # nothing for cannot stand in for one it owed.
    for r in sorted(removals, key=lambda r: not_owed(r) is not None):
        key = (r.pr, r.head, r.reason)
        if left[key] > 0:
            left[key] -= 1
            continue
        why = not_owed(r)
        if why is None:
            lost.append(r)
        else:
            spared.append((r, why))
    return lost, spared


class Soak:
    def __init__(self, cfg: Config, tmp: Path) -> None:
        self.cfg, self.tmp = cfg, tmp
        self.rng = random.Random(cfg.seed)
        self.start = time.monotonic()
        self.children: dict[str, subprocess.Popen[bytes]] = {}
        self.logs: list[Path] = []
        self.acks: list[float] = []
        self.ack_status: Counter[str] = Counter()
        self.sent = 0
        self.withheld: list[str] = []
        self.dups: list[Any] = []
        self.killed: set[int] = set()  # pids of the workers the soak SIGKILLed
        self.workers: list[subprocess.Popen[bytes]] = []  # every worker it started
        self.incarnation = 0
        # (failpoint, marker): the workers started from a failpoint kill on carry it.
        self.armed: list[tuple[str, Path]] = []
        self.poll_runs: list[dict[str, Any]] = []

    # the clock of the run
    def left(self) -> float:
        return self.cfg.deadline - (time.monotonic() - self.start)

    # --- setup ---------------------------------------------------------------------------

    def setup(self) -> None:
        from landbot.sim.faults import RequestLog
        from landbot.sim.payloads import Urls
        from landbot.sim.server import BackgroundServer, create_app, free_socket

        self.gh = gh = soak_github(self.tmp / "github")
        files = {"app.py": "def answer():\n    return 42\n"}
        self.repo = gh.create_repo(REPO, files=files)
        self.token = gh.create_token(BOT)
        gh.add_collaborator(self.repo, BOT, "write")
        gh.add_collaborator(self.repo, "alice", "write")
        sock, blob = free_socket(), free_socket()
        self.api = f"http://127.0.0.1:{sock.getsockname()[1]}"
        blob_url = f"http://127.0.0.1:{blob.getsockname()[1]}"
        gh.urls = Urls(api=self.api, web=gh.urls.web)
        self.requests = RequestLog()
        self.plan = FaultPlan(self.cfg.seed, self.cfg.fault_rate, self.cfg.slow)
        app = FaultyApp(create_app(gh, requests=self.requests, blob_url=blob_url), self.plan)
        self.server = BackgroundServer(app, [sock, blob]).start()
        logging.getLogger("uvicorn.error").disabled = True  # the dropped connections
        if self.cfg.store == "sqlite":
            self.db_url = f"sqlite:///{self.tmp / 'landbot.db'}"
        else:
            self.db_url = fresh_database(
                self.cfg.store, f"soak_{self.cfg.seed}_{uuid.uuid4().hex[:8]}"
            )
        from landbot.store import Store

        self.store = Store.open(self.db_url)  # migrates before the children start
        from landbot.sim.postgres import free_port

        self.port = free_port()
        self.webhook = f"http://127.0.0.1:{self.port}/webhook"
        import httpx

        self.http = httpx.Client(timeout=10.0)
        self.pulls = self._plan_pulls()
        queue = self.gh.queue(self.repo)
        assert queue is not None
        # A short check timeout, so the simulated clock stays within a minute of the real
        # one: the webhook's drop and the poll's drop of one removal are matched by time.
        queue.config.check_response_timeout_minutes = QUEUE_TIMEOUT_S / 60

    def _plan_pulls(self) -> list[Pull]:
        kinds = [KINDS[i % len(KINDS)] for i in range(self.cfg.prs)]
        self.rng.shuffle(kinds)
        pulls = []
        for i, kind in enumerate(kinds):
            p = Pull(kind, f"feat-{i:03d}-{kind}")
            p.missed = kind not in ("merged",) and self.rng.random() < self.cfg.miss_rate
            if kind in FOLLOWABLE and self.rng.random() < 0.35:
                p.follow = "push" if self.rng.random() < 0.75 else "close"
            pulls.append(p)
        return pulls

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("LANDBOT_", "SOAK_"))}
        env.update(
            LANDBOT_GITHUB__API_URL=self.api,
            LANDBOT_GITHUB__GIT_URL=self.gh.git_url,
            LANDBOT_GITHUB__TOKEN=self.token,
            LANDBOT_GITHUB__WEBHOOK_SECRET=SECRET,
            LANDBOT_DATABASE_URL=self.db_url,
            LANDBOT_REPOS=REPO,
            LANDBOT_WORKER__LEASE_SECONDS=str(self.cfg.lease),
            LANDBOT_WORKER__IDLE_SLEEP="0.1",
            LANDBOT_FIXER__STATE_DIR=str(self.tmp / "state"),
            SOAK_CLIENT_TIMEOUT=str(self.cfg.client_timeout),
            SOAK_MUTATION_GAP=str(self.cfg.mutation_gap),
            SOAK_PORT=str(self.port),
            PYTHONUNBUFFERED="1",
        )
        if self.cfg.fixer:
            # The real sandbox runs it: the fix job, its hand-back, its status comment.
            env["LANDBOT_FIXER__COMMAND"] = json.dumps(["/usr/bin/python3", "-c", GIVE_UP])
            env["LANDBOT_FIXER__TIMEOUT"] = "60"
        if self.cfg.pythonpath:
            env["PYTHONPATH"] = self.cfg.pythonpath
        env.update(extra)
        return env

    def spawn(self, kind: str, **extra: str) -> subprocess.Popen[bytes]:
        log = self.tmp / f"{kind}-{len(self.logs)}.log"
        self.logs.append(log)
        with open(log, "wb") as out:
            return subprocess.Popen(
                [sys.executable, __file__, "--child", kind],
                env=self.env(**extra),
                cwd=self.tmp,
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    def start_children(self) -> None:
        self.children["serve"] = self.spawn("serve")
        deadline = time.monotonic() + 30
        while True:
            try:
                if self.http.get(f"http://127.0.0.1:{self.port}/healthz").status_code < 500:
                    break
            except Exception:
                pass
            if time.monotonic() > deadline or self.children["serve"].poll() is not None:
                raise RuntimeError(f"landbot serve did not come up: {self.tail('serve')}")
            time.sleep(0.1)
        for name in WORKERS:
            self.start_worker(name)

    def start_worker(self, name: str) -> None:
        self.incarnation += 1
        extra = {}
        if self.armed and not self.armed[-1][1].exists():
            failpoint, marker = self.armed[-1]
            extra = {"LANDBOT_FAILPOINT": failpoint, "LANDBOT_FAILPOINT_MARKER": str(marker)}
        self.children[name] = worker = self.spawn("worker", **extra)
        self.workers.append(worker)

    def reap(self) -> None:
        """Restart a worker that died by itself (at its failpoint: SIGKILL within)."""
        for name in WORKERS:
            worker = self.children.get(name)
            if worker is not None and worker.returncode is None and worker.poll() is not None:
                self.start_worker(name)

    def failpoints_fired(self) -> list[str]:
        return [fp for fp, marker in self.armed if marker.exists()]

    def failpoint_deaths(self) -> set[int]:
        """The pids of the workers that died at their failpoint. Counted from the markers
        (each names the process that wrote it, and SIGKILLed itself right after), not from
        exit codes seen on the way: a worker that dies at its failpoint between a look and
        the soak's own kill, or while the children stop, was counted nowhere before."""
        ours = {w.pid for w in self.workers}
        pids = set()
        for _, marker in self.armed:
            if marker.exists():
                fields = marker.read_text().split()
                if len(fields) == 2 and fields[1].isdigit() and int(fields[1]) in ours:
                    pids.add(int(fields[1]))
        return pids

    def tail(self, kind: str) -> str:
        logs = [p for p in self.logs if p.name.startswith(kind)]
        return logs[-1].read_text(errors="replace")[-2000:] if logs else ""

    def stop_children(self) -> None:
        for name, proc in self.children.items():
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT if name == "serve" else signal.SIGTERM)
        for proc in self.children.values():
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=15)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.stop_children()
        with contextlib.suppress(Exception):
            self.http.close()
        with contextlib.suppress(Exception):
            self.server.stop()
        with contextlib.suppress(Exception):
            self.store.close()

    # --- webhooks as GitHub delivers them: some twice, some never ------------------------

    def pump(self) -> None:
        with self.gh.webhooks._lock:
            pending = self.gh.webhooks.deliveries[self.sent :]
            self.sent += len(pending)
        resend, self.dups = self.dups, []
        for d in pending:
            if d.event == "pull_request" and d.action == "dequeued":
                number = d.payload["number"]
                p = self.by_number.get(number)
                if p is not None and p.missed and not p.removed:
                    p.removed = True
                    self.withheld.append(d.guid)
                    continue
                if p is not None:
                    p.removed = True
            self.deliver(d)
            if self.rng.random() < self.cfg.dup_rate:
                self.dups.append(d)
        for d in resend:
            self.deliver(d)

    def deliver(self, d: Any) -> None:
        t = time.perf_counter()
        try:
            status = str(d.send(self.webhook, self.http).status_code)
        except Exception as exc:  # GitHub does not redeliver: the poll must find it
            status = type(exc).__name__
        self.acks.append(time.perf_counter() - t)
        self.ack_status[status] += 1

    # --- people and the queue ------------------------------------------------------------

    def open_pulls(self) -> None:
        from landbot.sim import CheckScenario

        failing = CheckScenario.failing()
        flake = CheckScenario.failing(
            "build", step="Install dependencies", run="npm ci", log=NPM_LOG.read_text()
        )
        cancelled = CheckScenario.failing("test", conclusion="cancelled")
        passing, pending = CheckScenario.passing(), CheckScenario.pending()
        first = {"flaky": flake, "cancelled": cancelled, "timeout": pending}
        self.by_number: dict[int, Pull] = {}
        for p in self.pulls:
            files = {f"src/{p.branch}.txt": f"{p.branch}\n"}
            if p.kind == "conflict":
                files["conflict.txt"] = f"{p.branch}\n"
            pr = self.gh.open_pull_request(self.repo, head=p.branch, files=files, author="alice")
            p.number = pr.number
            self.by_number[pr.number] = p
            labels = ["landbot:skip"] if p.kind == "skip_label" else []
            for label in labels:
                self.gh.add_label(pr, label, actor="alice")

            def scenario(ctx: Any, p: Pull = p) -> Any:
                p.merge_group_runs += 1
                if p.kind in ("genuine", "skip_label"):
                    return failing
                if p.kind in first and p.merge_group_runs == 1:
                    return first[p.kind]
                return passing

            self.gh.set_checks(self.repo, scenario, pr=pr, event="merge_group")
        self.pump()

    def pr(self, p: Pull) -> Any:
        return self.gh.pull(self.repo, p.number)

    def run_queue(self) -> None:
        """Step the queue until it is empty, timing out checks that never report."""
        for _ in range(30):
            self.gh.run_queue(self.repo)
            self.pump()
            queue = self.gh.queue(self.repo)
            if queue is None or not queue.entries:
                return
            # The head waits on checks that never report: let the queue's timeout pass.
            self.gh.clock.advance(seconds=QUEUE_TIMEOUT_S + 1)

    def wave(self, pulls: list[Pull]) -> None:
        from landbot.sim import merge_queue
        from landbot.sim.state import QUEUE_BOT

        for p in pulls:
            self.gh.enqueue(self.pr(p), actor="alice")
        self.pump()
        for p in pulls:
            pr = self.pr(p)
            entry = self.gh.queue_entry(pr)
            if entry is None:
                continue
            if p.kind == "manual":
                self.gh.dequeue(pr, actor="alice")
            elif p.kind == "pushed_in_queue":
                self.gh.push(self.repo, p.branch, {f"src/{p.branch}.txt": "v2\n"}, author="alice")
            elif p.kind in SPECIAL:
                webhook, timeline = SPECIAL[p.kind]
                with self.gh.lock:
                    merge_queue.remove(
                        self.gh,
                        entry,
                        webhook_reason=webhook,
                        timeline_reason=timeline,
                        actor=QUEUE_BOT,
                    )
        self.pump()
        # Build the first group (a pending one waits), then move the base under it: the
        # group is invalidated, and the conflict PRs of this wave now conflict.
        self.gh.queue_step(self.repo)
        self.pump()
        conflicts = [p for p in pulls if p.kind == "conflict"]
        if conflicts:
            self.gh.push(
                self.repo, "main", {"conflict.txt": f"main {self.rng.random()}\n"}, author="alice"
            )
            self.pump()
        self.run_queue()

    def follow_up(self) -> None:
        """A person pushes to, or closes, a PR after its drop: at once when landbot never
        heard of the drop (only a poll can find it), else once landbot has settled it."""
        settled = {d.pr for d in self.store.drops(REPO, limit=10_000) if d.outcome != "pending"}
        for p in self.pulls:
            if p.follow is None or p.followed or not p.removed:
                continue
            pr = self.pr(p)
            if pr.state != "open" or self.gh.queue_entry(pr) is not None:
                continue
            if not (p.missed or p.number in settled):
                continue
            p.followed = True
            if p.follow == "push":
                self.gh.push(
                    self.repo, p.branch, {f"src/{p.branch}.txt": "moved\n"}, author="alice"
                )
            else:
                self.gh.close_pull_request(pr, actor="alice")
        self.pump()

    def poll(self) -> None:
        t = time.monotonic()
        proc = self.spawn("poll")
        try:
            proc.wait(timeout=max(5.0, min(90.0, self.left())))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        out = self.tail("poll")
        new = sum(int(n) for n in re.findall(r"(\d+) new drop", out))
        done = sum(int(n) for n in re.findall(r"(?:processed|ran) (\d+) (?:item|job)", out))
        self.poll_runs.append(
            {"rc": proc.returncode, "new": new, "processed": done, "s": time.monotonic() - t}
        )
        self.pump()

    def maybe_kill(self, wave: int, kill_waves: set[int], fp_waves: dict[int, str]) -> None:
        self.reap()
        if wave not in kill_waves:
            return
        time.sleep(self.rng.uniform(0.2, 1.5))  # mid-work
        failpoint = fp_waves.get(wave)
        # A failpoint kill kills both, so that every job taker restarts carrying it.
        victims = list(WORKERS) if failpoint else [self.rng.choice(WORKERS)]
        if failpoint:
            self.armed.append((failpoint, self.tmp / f"fired-{len(self.armed)}"))
        for name in victims:
            worker = self.children[name]
            if worker.poll() is None:
                worker.kill()
                self.killed.add(worker.pid)
            worker.wait(timeout=15)
            self.start_worker(name)

    # --- the run -------------------------------------------------------------------------

    def quiet(self) -> bool:
        counts = self.store.counts()
        busy = counts.drops.get("pending", 0) + counts.deliveries.get("pending", 0)
        busy += counts.jobs.get("queued", 0) + counts.jobs.get("leased", 0)
        queue = self.gh.queue(self.repo)
        return busy == 0 and (queue is None or not queue.entries)

    def run(self) -> Report:
        cfg = self.cfg
        self.setup()
        self.start_children()
        self.open_pulls()
        waves = [self.pulls[i : i + cfg.wave] for i in range(0, len(self.pulls), cfg.wave)]
        n = len(waves)
        kill_waves = set(self.rng.sample(range(n), min(cfg.kills, n)))
        fp_waves = {
            w: self.rng.choice(cfg.failpoints) for w in sorted(kill_waves)[: cfg.failpoint_kills]
        }
        poll_waves = {round((i + 1) * n / (cfg.polls + 1)) for i in range(cfg.polls)}
        for i, w in enumerate(waves):
            if self.left() < 30:
                break
            self.wave(w)
            self.maybe_kill(i, kill_waves, fp_waves)
            time.sleep(0.5)
            self.follow_up()
            if i in poll_waves:
                self.poll()
        # Landbot's re-enqueues come back to the queue; people follow up; a last poll.
        last_poll = False
        finished = False
        while self.left() > 0:
            self.run_queue()
            self.follow_up()
            self.maybe_kill(-1, set(), {})
            if self.quiet() and all(
                p.followed or p.follow is None or not p.removed or self.pr(p).state != "open"
                for p in self.pulls
            ):
                if last_poll:
                    finished = self.quiet()
                    if finished:
                        break
                else:
                    self.poll()
                    last_poll = True
                    continue
            time.sleep(0.5)
        self.stop_children()
        return self.report(finished)

    # --- the invariants ------------------------------------------------------------------

    def report(self, finished: bool) -> Report:
        from landbot.core.reasons import normalize

        cfg = self.cfg
        rep = Report(config={k: v for k, v in vars(cfg).items()})
        rep.config["store"] = "sqlite" if cfg.store == "sqlite" else "postgresql"
        rep.seconds = round(time.monotonic() - self.start, 1)
        rep.finished = finished
        drops = self.store.drops(REPO, limit=100_000)
        rep.drops = len(drops)
        rep.outcomes = dict(Counter(d.outcome for d in drops))
        ex: dict[str, list[str]] = {}

        def note(name: str, text: str) -> None:
            ex.setdefault(name, [])
            if len(ex[name]) < 5:
                ex[name].append(text)

        # Every removal GitHub made that landbot owed a drop (see not_owed) must be a drop
        # at the commit removed, with its reason.
        removals = []
        for p in self.pulls:
            events = [e for e in self.pr(p).timeline if e.typename == "RemovedFromMergeQueueEvent"]
            for i, e in enumerate(events):
                head = e.data.get("before_commit")
                removals.append(
                    Removal(
                        pr=p.number,
                        head=head,
                        reason=normalize(e.data.get("reason")),
                        kind=p.kind,
                        withheld=p.missed and i == 0,  # pump withholds the first dequeue
                        moved_before_a_poll=p.followed,
                        pushed_out=(p.number, head) in self.gh.pushed_out,
                    )
                )
        rep.removals = len(removals)
        have: Counter[tuple[int, str | None, str]] = Counter(
            (d.pr, d.head_sha, d.reason) for d in drops
        )
        want = Counter((r.pr, r.head, r.reason) for r in removals)
        lost_removals, spared = tally_removals(removals, have)
        lost, superseded = len(lost_removals), len(spared)
        for r, spare in spared:
            note("removals_unrecorded_not_owed", f"#{r.pr} {r.kind} {r.reason}: {spare}")
        for r in lost_removals:
            note(
                "drops_lost",
                f"#{r.pr} {r.kind} {r.reason} at {str(r.head)[:7]}"
                f" (webhook withheld: {r.withheld})",
            )
        extra = sum(max(0, have[k] - want.get(k, 0)) for k in have)
        for d in drops:
            if want.get((d.pr, d.head_sha, d.reason), 0) < have[(d.pr, d.head_sha, d.reason)]:
                note(
                    "drops_not_matching_a_removal",
                    f"#{d.pr} {d.reason} at {d.head_sha[:7]} from {d.source}: {d.outcome}",
                )
        failed = [d for d in drops if d.outcome == "failed"]
        for d in failed:
            note("drops_failed", f"#{d.pr} {d.reason} ({d.source}): {d.summary}")
        pending = [d for d in drops if d.outcome == "pending"]
        jobs = self.store.jobs()
        for d in pending:
            held = [
                f"{j.kind}:{j.status} x{j.attempts} {j.error or ''}"[:120]
                for j in jobs
                if j.drop_id == d.id
            ]
            note("drops_unfinished", f"#{d.pr} {d.reason} ({d.source}): {d.summary}; jobs {held}")

        # Mutations, as they reached GitHub.
        attempts: list[Attempt] = self.gh.attempts
        wrong = 0
        wrong_applied = 0
        on_manual = 0
        for a in attempts:
            why = None
            if a.op in ("enqueue", "auto_merge"):
                if a.state != "open":
                    why = f"the PR had {a.state}"
                elif a.last_removal_head is None:
                    why = "never removed from the queue"
                elif (a.target or a.head) != a.last_removal_head or a.head != a.last_removal_head:
                    why = "the head moved since the drop"
            elif a.state == "closed":
                why = "the PR had closed"
            elif a.last_removal_head is not None and a.head != a.last_removal_head:
                why = "the head moved since the drop"
            if why is not None:
                wrong += 1
                wrong_applied += a.applied
                note(
                    "wrong_mutations",
                    f"{a.op} #{a.pr} ({self.by_number[a.pr].kind}): {why}"
                    f"{'' if a.applied else ' [refused: ' + a.error[:60] + ']'}",
                )
            if a.op in ("comment", "edit") and a.last_removal_reason == "manual":
                on_manual += 1
                note("comments_on_manual_removals", f"{a.op} #{a.pr}")
        enq = Counter(
            (a.pr, a.target or a.head) for a in attempts if a.op == "enqueue" and a.applied
        )
        budget = 1  # [policy] max_requeues_per_head, the default the children run with
        dup_enq = sum(n - budget for n in enq.values() if n > budget)
        for (pr, head), n in enq.items():
            if n > 1:
                note("duplicate_enqueues", f"#{pr} at {head[:7]}: {n}")
        dup_comments = 0
        for p in self.pulls:
            mine = [c for c in self.gh.comments_on(self.repo, p.number) if c.author == BOT]
            status = [c for c in mine if STATUS_MARKER in c.body]
            if len(status) > 1:
                dup_comments += len(status) - 1
                note("duplicate_comments", f"#{p.number}: {len(status)} status comments")
            heads = Counter(
                m.group(1)
                for c in mine
                if HANDBACK_MARKER in c.body and (m := re.search(r"at `([0-9a-f]{7,})`", c.body))
            )
            for head, n in heads.items():
                if n > 1:
                    dup_comments += n - 1
                    note("duplicate_comments", f"#{p.number}: {n} hand-backs at {head}")
            # One hand-back per drop, whatever head it names (a new comment per drop).
            per_drop = Counter(
                m.group(1)
                for c in mine
                if HANDBACK_MARKER in c.body and (m := re.search(r"landbot:drop (\d+)", c.body))
            )
            for tag, n in per_drop.items():
                if n > 1 and all(h < 2 for h in heads.values()):
                    dup_comments += n - 1
                    note("duplicate_comments", f"#{p.number}: {n} hand-backs of drop {tag}")
        import sqlalchemy as sa

        with self.store.engine.connect() as conn:
            rows = conn.execute(
                sa.text("SELECT event, action, error FROM deliveries WHERE status = 'error'")
            ).all()
        for event, action, error in rows:
            note("deliveries_failed", f"{event}.{action}: {str(error)[:160]}")
        rep.invariants = {
            "drops_lost": lost,
            "deliveries_failed": len(rows),
            "drops_failed": len(failed),
            "drops_unfinished": len(pending),
            "drops_at_no_removal": extra,  # at a head no removal was of, or twice
            "duplicate_enqueues": dup_enq,
            "removals_unrecorded_not_owed": superseded,
            "duplicate_comments": dup_comments,
            "wrong_mutations": wrong,
            "wrong_mutations_applied": wrong_applied,
            "comments_on_manual_removals": on_manual,
        }
        rep.examples = ex
        counts = self.store.counts()
        acks = sorted(self.acks) or [0.0]
        calls = self.plan.calls
        rep.figures = {
            "github_calls": calls,
            "github_calls_per_removal": round(calls / max(1, rep.removals), 1),
            "faults_injected": dict(self.plan.injected),
            "bot_mutation_attempts": dict(Counter(a.op for a in attempts)),
            "bot_mutations_refused": sum(not a.applied for a in attempts),
            "webhooks_sent": len(acks),
            "webhooks_withheld": len(self.withheld),
            "webhook_answers": dict(self.ack_status),
            "webhook_ack_p99_ms": round(acks[int(0.99 * (len(acks) - 1))] * 1000, 1),
            "webhook_ack_max_ms": round(acks[-1] * 1000, 1),
            "deliveries_by_status": dict(counts.deliveries),
            "jobs_by_status": dict(counts.jobs),
            # A worker that died at its failpoint just before the soak's kill counts there.
            "worker_sigkills": len(self.killed - self.failpoint_deaths()),
            "worker_failpoint_kills": len(self.failpoint_deaths()),
            "failpoints_armed": [fp for fp, _ in self.armed],
            "failpoints_fired": self.failpoints_fired(),
            "polls": self.poll_runs,
            "kinds": dict(Counter(p.kind for p in self.pulls)),
            "median_ack_ms": round(statistics.median(acks) * 1000, 1),
        }
        return rep


def run_soak(cfg: Config) -> Report:
    tmp = Path(tempfile.mkdtemp(prefix="landbot-soak-", dir="/tmp"))
    if cfg.fixer:
        os.chmod(tmp, 0o755)  # the sandbox's uid reaches the fixer's state folder in it
    soak = Soak(cfg, tmp)
    try:
        return soak.run()
    finally:
        soak.close()
        if os.environ.get("SOAK_KEEP"):
            print(f"kept {tmp}", file=sys.stderr)
        else:
            unmount_below(tmp)
            shutil.rmtree(tmp, ignore_errors=True)


def unmount_below(folder: Path) -> None:
    """Unmount what the last killed worker's fix job left mounted (its disk image, the
    overlay on it): a later job would sweep it, but this run has ended. Else the loop
    device stays taken and rmtree would empty a mounted file system, not remove it."""
    from landbot.git.workspace import mounts_under

    for point in mounts_under(folder):  # deepest first
        subprocess.run(["umount", "-l", str(point)], capture_output=True, check=False)


def failpoint_line(rep: Report) -> str:
    """Whether the run's failpoint kill happened: armed is not fired (a worker may never
    reach that point), and a run whose failpoint never fired says so."""
    f = rep.figures
    armed, fired = f["failpoints_armed"], f["failpoints_fired"]
    if not armed:
        return "no failpoint armed"
    if not fired:
        return f"failpoint {'/'.join(armed)} armed, NEVER FIRED (0 failpoint kills)"
    return f"failpoint {'/'.join(fired)} fired ({f['worker_failpoint_kills']} failpoint kills)"


def render(rep: Report) -> str:
    c = rep.config
    lines = [
        f"store {c['store']}, seed {c['seed']}, {c['prs']} PRs, faults {c['fault_rate']:.0%},"
        f" {rep.figures['worker_sigkills']} SIGKILLs + {rep.figures['worker_failpoint_kills']}"
        f" at a failpoint ({failpoint_line(rep)}), {len(rep.figures['polls'])} polls:"
        f" {rep.seconds} s,"
        f" {'finished' if rep.finished else 'DEADLINE HIT (work left)'}",
        f"removals {rep.removals}, drops {rep.drops}, outcomes {rep.outcomes}",
    ]
    lines += [f"  {k}: {v}" for k, v in rep.invariants.items()]
    for k, v in rep.figures.items():
        lines.append(f"  . {k}: {v}")
    for k, items in rep.examples.items():
        for item in items:
            lines.append(f"  e.g. {k}: {item}")
    return "\n".join(lines)


ZERO_INVARIANTS = (
    "drops_lost",
    "deliveries_failed",
    "drops_failed",
    "drops_unfinished",
    "drops_at_no_removal",
    "duplicate_enqueues",
    "duplicate_comments",
    "wrong_mutations",
    "wrong_mutations_applied",
    "comments_on_manual_removals",
)


def one_line(rep: Report) -> str:
    """A run in one line: its seed, time, and every invariant that is not 0."""
    c = rep.config
    bad = {k: v for k, v in rep.invariants.items() if v and k in ZERO_INVARIANTS}
    f = rep.figures
    return (
        f"{c['store']:10} seed {c['seed']:3}: {rep.seconds:6.1f} s,"
        f" {'finished' if rep.finished else 'DEADLINE HIT'}, removals {rep.removals},"
        f" drops {rep.drops}, faults {sum(f['faults_injected'].values())},"
        f" kills {f['worker_sigkills']}+{f['worker_failpoint_kills']} ({failpoint_line(rep)}):"
        f" {bad or 'every invariant 0'}"
    )


def worst(reports: list[Report]) -> str:
    """The worst run of each invariant over all runs (its value and seed), and the sums."""
    lines = [f"worst over {len(reports)} runs (value, store and seed of the worst; sum):"]
    for key in (*ZERO_INVARIANTS, "removals_unrecorded_not_owed"):
        values = [(r.invariants.get(key, 0), r) for r in reports]
        top, rep = max(values, key=lambda v: v[0])
        where = f" ({rep.config['store']} seed {rep.config['seed']})" if top else ""
        lines.append(f"  {key}: worst {top}{where}, sum {sum(v for v, _ in values)}")
    unfinished = [r for r in reports if not r.finished]
    lines.append(
        f"  runs that hit the deadline: {len(unfinished)}"
        + (f" (seeds {[r.config['seed'] for r in unfinished]})" if unfinished else "")
    )
    secs = sorted(r.seconds for r in reports)
    faults = sum(sum(r.figures["faults_injected"].values()) for r in reports)
    sigkills = sum(r.figures["worker_sigkills"] for r in reports)
    fp_kills = sum(r.figures["worker_failpoint_kills"] for r in reports)
    fixes = sum(r.figures["jobs_by_status"].get("done", 0) for r in reports)
    lines.append(
        f"  wall per run: median {statistics.median(secs):.1f} s, max {secs[-1]:.1f} s;"
        f" faults injected {faults}, worker SIGKILLs {sigkills} + {fp_kills} at a failpoint,"
        f" jobs done {fixes}"
    )
    armed = [r for r in reports if r.figures["failpoints_armed"]]
    fired = [r for r in armed if r.figures["worker_failpoint_kills"]]
    never = [r.config["seed"] for r in armed if not r.figures["worker_failpoint_kills"]]
    fired_at = Counter(fp for r in fired for fp in r.figures["failpoints_fired"])
    lines.append(
        f"  runs with a failpoint kill: {len(fired)} of {len(reports)}"
        f" ({dict(sorted(fired_at.items()))})"
        + (f"; armed but never fired: seeds {never}" if never else "")
    )
    clean = all(
        r.finished and all(r.invariants.get(k, 0) == 0 for k in ZERO_INVARIANTS) for r in reports
    )
    lines.append(f"  verdict: {'0 of every invariant over all runs' if clean else 'VIOLATIONS'}")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=11, help="the first seed")
    ap.add_argument("--seeds", type=int, default=1, help="how many seeds, from --seed on")
    ap.add_argument("--prs", type=int, default=40)
    ap.add_argument("--fault-rate", type=float, default=0.10)
    ap.add_argument("--kills", type=int, default=3, help="worker SIGKILLs (one at a failpoint)")
    ap.add_argument("--polls", type=int, default=3)
    ap.add_argument("--store", choices=["sqlite", "postgres", "both"], default="both")
    ap.add_argument("--deadline", type=float, default=240.0, help="seconds per run (max 600)")
    ap.add_argument("--fixer", action="store_true", help="a needs_human agent in the sandbox")
    ap.add_argument("--pythonpath", default="", help="children import landbot from here first")
    ap.add_argument("--verbose", action="store_true", help="each run's full report too")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child)
        return
    base = Config(
        seed=args.seed,
        prs=max(1, min(args.prs, 200)),
        fault_rate=max(0.0, min(args.fault_rate, 0.5)),
        kills=args.kills,
        polls=args.polls,
        deadline=max(30.0, min(args.deadline, 600.0)),
        pythonpath=args.pythonpath,
        fixer=args.fixer,
    )
    seeds = range(args.seed, args.seed + max(1, args.seeds))
    reports: list[Report] = []
    started = time.monotonic()

    def run_all(store: str) -> None:
        for seed in seeds:
            reports.append(run_soak(Config(**{**vars(base), "seed": seed, "store": store})))
            rep = reports[-1]
            verbose = args.verbose or len(seeds) == 1
            show = verbose or any(rep.invariants.get(k) for k in ZERO_INVARIANTS)
            print(render(rep) if show else one_line(rep), flush=True)

    stores = ["sqlite", "postgres"] if args.store == "both" else [args.store]
    for kind in stores:
        if kind == "sqlite":
            run_all("sqlite")
        else:
            with postgres_server() as url:
                run_all(url)
    if len(reports) > 1:
        print(worst(reports))
    print(
        f"machine: {os.cpu_count()} cores; {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC;"
        f" {time.monotonic() - started:.0f} s in all"
    )
    if args.json:
        print(json.dumps([vars(r) for r in reports], indent=2, default=str))


if __name__ == "__main__":
    main()
