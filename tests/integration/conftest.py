"""A world for the land loop's integration tests: the simulated GitHub served over HTTP, a
real git repository, landbot's real webhook endpoint on loopback receiving GitHub's signed
deliveries, a store (a SQLite file, and again a new database on the session's throwaway
PostgreSQL: a module runs on both unless its `STORES` says otherwise), and a worker the test
drives step by step."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from landbot.config import GitHubSettings, Settings
from landbot.github.client import GitHubClient
from landbot.pipeline.process import Lander
from landbot.pipeline.worker import Worker
from landbot.sim import FakeGitHub, FakeGitHubServer
from landbot.sim.server import BackgroundServer, free_socket
from landbot.store import Store
from landbot.web.app import create_app

SECRET = "integration-webhook-secret"
REPO = "acme/widgets"
SLUG = "acme-landbot"  # the App, where landbot runs as one
FILES = {
    "app.py": "def answer():\n    return 42\n",
    "tests/test_app.py": (
        "from app import answer\n\n\ndef test_answer():\n    assert answer() == 42\n"
    ),
}


@dataclass
class World:
    gh: FakeGitHub
    server: FakeGitHubServer
    repo: Any
    store: Store
    settings: Settings
    client: GitHubClient
    lander: Lander
    worker: Worker
    webhook_url: str
    bot: str

    def open_pr(self, head: str, files: dict[str, str], author: str = "alice") -> Any:
        return self.gh.open_pull_request(self.repo, head=head, files=files, author=author)

    def time_out_in_queue(self, pr: Any) -> str | None:
        """Queue `pr` with checks that never report and let the queue's timeout drop it;
        returns the webhook reason of the last queue step (CI_TIMEOUT)."""
        from landbot.sim import CheckScenario

        self.gh.set_checks(self.repo, CheckScenario.pending(), pr=pr, event="merge_group")
        self.gh.enqueue(pr, actor="alice")
        self.gh.run_queue(self.repo)
        self.gh.clock.advance(minutes=61)
        reason: str | None = self.gh.run_queue(self.repo)[-1].reason
        return reason

    def settle(self) -> int:
        """Deliver every pending webhook to landbot, then let the worker finish its work."""
        self.gh.webhooks.flush()
        return self.worker.drain()

    def calls(self) -> int:
        return self.server.requests.total

    def mutations(self) -> list[str]:
        ops = self.server.requests.operations()
        return sorted(
            op
            for op in ops.elements()
            if op
            in (
                "EnqueuePullRequest",
                "DequeuePullRequest",
                "EnablePullRequestAutoMerge",
                "MinimizeComment",
            )
        )

    def bot_comments(self, number: int) -> list[Any]:
        return [c for c in self.gh.comments_on(self.repo, number) if c.author == self.bot]


# The stores a module's tests run on: both unless it says otherwise with a module-level
# `STORES = ("sqlite",)`. PostgreSQL enforces what SQLite does not (column lengths, 32-bit
# integers, NUL-free text, row locks), so the land loop, its crashes, leases, caps, breaker
# and dispatches run on both; a module whose tests are about GitHub's side (what is posted,
# asked and decided) and touch the store only through paths those run already says so,
# rather than prove the same thing twice (issue 25; tests/store runs every method on both).
BOTH_STORES = ("sqlite", "postgresql")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "database_url" in metafunc.fixturenames:
        stores = getattr(metafunc.module, "STORES", BOTH_STORES)
        metafunc.parametrize("database_url", stores, indirect=True)


@pytest.fixture
def database_url(request: pytest.FixtureRequest) -> str:
    """The World's store, a SQLite file or a new PostgreSQL database (`STORES` above)."""
    if request.param == "sqlite":
        url: str = request.getfixturevalue("sqlite_url")
        return url
    url = request.getfixturevalue("postgres_databases").create()
    return url


def github_settings(server: FakeGitHubServer, gh: FakeGitHub, **auth: Any) -> GitHubSettings:
    """landbot's settings for the served sim, with `auth` (a token, or an App's id and key)."""
    return GitHubSettings(api_url=server.url, webhook_secret=SECRET, git_url=gh.git_url, **auth)


def app_auth(app: Any, key_file: Path) -> dict[str, Any]:
    """`github_settings` keywords for landbot as `app`, its private key written to `key_file`."""
    return {"app_id": app.id, "private_key_file": app.write_private_key(key_file)}


@contextmanager
def serving(
    gh: FakeGitHub,
    settings: Settings,
    store: Store,
    client: GitHubClient,
    sim: FakeGitHubServer | None = None,
) -> Iterator[str]:
    """landbot's webhook endpoint on loopback with the sim's webhooks aimed at it (its URL);
    on the way out the last deliveries go, then the endpoint, the client and the store close.
    The `sim` server serving `gh`, when given, starts stopping beside the endpoint (each
    takes 0.1-0.3 s; one after the other, that was a third of an integration test's cost)."""
    web = BackgroundServer(create_app(settings, store), [free_socket()])
    web.start()
    gh.webhooks.url = f"{web.url}/webhook"
    try:
        yield gh.webhooks.url
    finally:
        gh.webhooks.flush()
        if sim is not None:
            sim.signal_stop()
        web.stop()
        client.close()
        store.close()


@functools.cache
def app_key_pair() -> tuple[bytes, bytes]:
    """One RSA key (private and public PEM) for every World's App in this test process: the
    sim's own per-App key costs 70 ms to make and landbot 65 ms to check, per test, and no
    World's test is about which key it is (tests/github/test_auth.py is)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return private, public


@contextmanager
def running_world(tmp_path: Path, database_url: str, *, as_app: bool) -> Iterator[World]:
    """The World, landbot authenticated with a personal token or as the App `acme-landbot`
    (installation tokens; GitHub takes check runs from Apps only)."""
    gh = FakeGitHub(tmp_path / "github", webhook_secret=SECRET)
    repo = gh.create_repo(REPO, files=FILES)
    if as_app:
        private, public = app_key_pair()
        app = gh.create_app(SLUG, private_key_pem=private, public_key_pem=public)
        gh.install_app(app, repos=[repo])
        bot = app.bot_login
        auth = app_auth(app, tmp_path / "app.pem")
    else:
        bot = "landbot-bot"
        auth = {"token": gh.create_token(bot)}
        gh.add_collaborator(repo, bot, "write")
    gh.add_collaborator(repo, "alice", "write")
    with FakeGitHubServer(gh) as server:
        settings = Settings(
            github=github_settings(server, gh, **auth), database_url=database_url, repos=[REPO]
        )
        store = Store.open(settings.database_url)
        client = GitHubClient(settings.github, mutation_gap=0)
        lander = Lander(settings, store, client)
        worker = Worker(store, lambda: lander, name="test-worker")
        with serving(gh, settings, store, client, server) as url:
            yield World(gh, server, repo, store, settings, client, lander, worker, url, bot)


@pytest.fixture
def world(tmp_path: Path, database_url: str) -> Iterator[World]:
    with running_world(tmp_path, database_url, as_app=False) as world:
        yield world


@pytest.fixture
def app_world(tmp_path: Path, database_url: str) -> Iterator[World]:
    """The World with landbot as the App `acme-landbot` instead of a personal token."""
    with running_world(tmp_path, database_url, as_app=True) as world:
        yield world


@pytest.fixture
def sandbox_dir() -> Iterator[Path]:
    """A folder the sandbox uid can traverse (pytest's own tmp root is mode 700)."""
    import os
    import shutil
    import tempfile

    path = Path(tempfile.mkdtemp(prefix="landbot-caps-"))
    os.chmod(path, 0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def with_command_agent(world: World, folder: Path, script: str) -> None:
    """Switch the World's land loop and worker to the real fixer with a command agent (the
    script, run in the sandbox), under the World's settings as they are now."""
    import os
    import stat

    agent = folder / "agent" / "fix.py"
    agent.parent.mkdir()
    agent.write_text(script)
    agent.chmod(agent.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    os.chmod(agent.parent, 0o755)
    use_real_fixer(world, [str(agent)], folder / "state")


def use_real_fixer(world: World, command: list[str], state_dir: Path) -> None:
    """Switch the World's land loop and worker to the real fixer running `command` in the
    sandbox, with its jobs under `state_dir`."""
    from landbot.pipeline.wiring import make_fixer

    world.settings.fixer.command = command
    world.settings.fixer.state_dir = state_dir
    world.settings.fixer.timeout = 60
    lander = Lander(world.settings, world.store, world.client, fixer_enabled=True)
    world.lander = lander
    world.worker = Worker(
        world.store,
        lambda: lander,
        fixer=make_fixer(world.settings, lambda: world.client, world.store),
    )


@pytest.fixture
def needs_bwrap() -> None:
    """The real sandbox's tests fail (never skip) without bubblewrap: CI installs it."""
    import shutil

    if shutil.which("bwrap") is None:
        pytest.fail("bubblewrap is not installed: run scripts/setup (CI installs it)")


def load_bench(name: str) -> ModuleType:
    """bench/NAME.py as a module (bench/ is not a package): the soak and the scale bench,
    run small by their tests so they cannot rot."""
    import importlib.util
    import sys

    path = Path(__file__).resolve().parents[2] / "bench" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"landbot_bench_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module
