"""The demo's world, wired as production is: the simulated GitHub served over HTTP, landbot
installed on it as a GitHub App, landbot's real webhook endpoint on loopback receiving the
signed deliveries, a SQLite store in a file, and the worker `landbot serve` runs
(`landbot.pipeline.wiring.make_worker`), so drops, triage, fixer jobs and publishing take the same
code paths as on a real repository. Only GitHub is simulated; git, the sandbox and the CI
commands are real.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from landbot.config import FixerSettings, GitHubSettings, Settings, WorkerSettings
from landbot.demo import project
from landbot.demo.ci import CiRun, DemoCI

if TYPE_CHECKING:
    from landbot.pipeline.worker import Worker
    from landbot.sim import FakeGitHub, FakeGitHubServer
    from landbot.sim.server import BackgroundServer
    from landbot.sim.state import PullRequest, Repository
    from landbot.store import Store

# The demo's own webhook secret: it signs deliveries between two servers on loopback.
WEBHOOK_SECRET = "landbot-demo-webhook-secret"
APP_SLUG = "landbot"
AGENT_TIMEOUT = 300.0  # seconds for one agent run (the scripted one takes one)


@dataclass
class World:
    root: Path
    gh: FakeGitHub
    repo: Repository
    server: FakeGitHubServer
    web: BackgroundServer
    settings: Settings
    store: Store
    worker: Worker
    ci: DemoCI
    bot: str
    webhook_url: str
    pulls: dict[str, PullRequest] = field(default_factory=dict)  # story key -> PR
    first_heads: dict[int, str] = field(default_factory=dict)  # PR -> head it was opened at

    def settle(self) -> int:
        """Deliver every webhook sent so far to landbot and let the worker finish its work,
        until nothing is left; returns how many pieces of work the worker did."""
        total = 0
        while True:
            self.gh.webhooks.flush()
            done = self.worker.drain()
            total += done
            if done == 0:
                return total


def demo_settings(
    base: Settings,
    *,
    api_url: str,
    git_url: str,
    app_id: int,
    key_file: Path,
    database: Path,
    state_dir: Path,
    fixer: FixerSettings,
) -> Settings:
    """landbot's settings for the demo: the operator's sandbox and triage settings (from
    `--config` and the environment), everything else pointing at the demo's world."""
    own = fixer.model_copy()
    own.state_dir = state_dir  # the mirrors and job work trees, inside the demo's folder
    own.timeout = AGENT_TIMEOUT
    return Settings(
        github=GitHubSettings(
            api_url=api_url,
            app_id=app_id,
            private_key_file=key_file,
            webhook_secret=WEBHOOK_SECRET,
            git_url=git_url,
        ),
        database_url=f"sqlite:///{database}",
        repos=[project.REPO],
        fixer=own,
        sandbox=base.sandbox,
        triage=base.triage,
        worker=WorkerSettings(lease_seconds=base.worker.lease_seconds, idle_sleep=0.05),
    )


@contextlib.contextmanager
def open_world(
    root: Path,
    base: Settings,
    fixer: FixerSettings,
    *,
    on_ci: Callable[[CiRun], None] | None = None,
) -> Iterator[World]:
    """Build the world under `root` (a folder the sandbox uid can traverse) and tear it
    down afterwards. The pull requests are opened by the caller (`open_pulls`)."""
    from landbot.pipeline.wiring import make_worker, open_store
    from landbot.sim import FakeGitHub, FakeGitHubServer
    from landbot.sim.server import BackgroundServer, free_socket
    from landbot.web.app import create_app

    project.build_repository(root / "calc")
    gh = FakeGitHub(root / "github", webhook_secret=WEBHOOK_SECRET)
    repo = gh.create_repo(project.REPO, import_git=root / "calc")
    gh.add_collaborator(repo, project.MAINTAINER, "admin")
    for pull in project.PULLS:
        gh.add_collaborator(repo, pull.author, "write")
    app = gh.create_app(APP_SLUG, name="landbot (demo)")
    gh.install_app(app, repos=[repo])
    key_file = app.write_private_key(root / "landbot-app-key.pem")
    assert repo.git_dir is not None
    ci = DemoCI(
        bare=repo.git_dir,
        runners=root / "runners",
        base_branch=project.BASE,
        on_run=on_ci,
    )
    gh.set_checks(repo, ci)
    with contextlib.ExitStack() as stack:
        server = stack.enter_context(FakeGitHubServer(gh))
        settings = demo_settings(
            base,
            api_url=server.url,
            git_url=gh.git_url,
            app_id=app.id,
            key_file=key_file,
            database=root / "landbot.db",
            state_dir=root / "fixer",
            fixer=fixer,
        )
        store = open_store(settings)
        stack.callback(store.close)
        worker = make_worker(settings, store)
        web = BackgroundServer(
            create_app(settings, store, worker_alive=worker.alive), [free_socket()]
        )
        web.start()
        stack.callback(web.stop)
        webhook_url = f"{web.url}/webhook"
        gh.webhooks.url = webhook_url
        # Delivered before the endpoint stops (callbacks run last-in, first-out).
        stack.callback(gh.webhooks.flush)
        yield World(
            root=root,
            gh=gh,
            repo=repo,
            server=server,
            web=web,
            settings=settings,
            store=store,
            worker=worker,
            ci=ci,
            bot=app.bot_login,
            webhook_url=webhook_url,
        )


def open_pulls(
    world: World, say: Callable[[str, int | None, str], None] | None = None, flaky: str = "flaky"
) -> None:
    """Open the demo's pull requests from their branches, in order, and have each author
    ask for it to merge when ready (auto-merge, which joins the merge queue once the pull
    request's own checks pass)."""
    gh, repo = world.gh, world.repo
    for pull in project.PULLS:
        pr = gh.open_pull_request(
            repo, head=pull.branch, title=pull.title, body=pull.body, author=pull.author
        )
        world.pulls[pull.key] = pr
        world.first_heads[pr.number] = pr.head_sha
        if say is not None:
            say(
                "github",
                pr.number,
                f"{pull.author} opened \u201c{pull.title}\u201d ({pull.branch})",
            )
    world.ci.flaky_pulls = frozenset({world.pulls[flaky].number})
    for pull in project.PULLS:
        pr = world.pulls[pull.key]
        gh.enable_auto_merge(pr, actor=pull.author)
        if say is not None:
            say("github", pr.number, f"{pull.author} enabled auto-merge: it joins the queue")
