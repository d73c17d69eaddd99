"""Wiring shared by the commands: settings → store, GitHub client, land loop, worker."""

from __future__ import annotations

import datetime as dt
import functools
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from landbot.config import Settings
from landbot.errors import LandbotError

if TYPE_CHECKING:
    from landbot.core.model import Drop, Evidence, FixerResult
    from landbot.git.workspace import Workspaces
    from landbot.github.client import GitHubClient
    from landbot.github.ops import ActionsFixClient, FixClient
    from landbot.land.model import Policy
    from landbot.pipeline.process import Lander
    from landbot.pipeline.repo_settings import RepoSettings
    from landbot.pipeline.worker import FixRunner, Worker
    from landbot.store import Store


def open_store(settings: Settings) -> Store:
    from landbot.store import Store

    try:
        return Store.open(settings.database_url)
    except LandbotError:
        raise
    except Exception as exc:  # cannot connect, cannot migrate
        raise LandbotError(
            f"cannot open the store at LANDBOT_DATABASE_URL ({exc.__class__.__name__}: "
            f"{str(exc).splitlines()[0][:200]}); check the URL and that the database is up"
        ) from None


def make_github(settings: Settings) -> GitHubClient:
    gh = settings.github
    if gh.token is None and (gh.app_id is None or gh.private_key_file is None):
        raise LandbotError(
            "no GitHub credentials: set LANDBOT_GITHUB__TOKEN, or LANDBOT_GITHUB__APP_ID and "
            "LANDBOT_GITHUB__PRIVATE_KEY_FILE"
        )
    if gh.token is None and gh.private_key_file is not None and not gh.private_key_file.is_file():
        raise LandbotError(
            f"setting LANDBOT_GITHUB__PRIVATE_KEY_FILE names {gh.private_key_file}, which does "
            "not exist; point it at the App's private key (PEM)"
        )
    from landbot.github.budget import BudgetPolicy, Planner
    from landbot.github.client import GitHubClient
    from landbot.github.tally import PROCESS_TALLY

    # From the first request on, this process's calls are tallied for the store (issue 28.4):
    # the Worker saves them, and `poll` and `retry` as they end (save_calls).
    PROCESS_TALLY.attach()
    return GitHubClient(gh, planner=Planner(BudgetPolicy.from_settings(settings.budget)))


def save_calls(store: Store) -> None:
    """Save this process's GitHub request counts in the store now (a short-lived command's
    last act, in its `finally`; a worker saves its own every few seconds)."""
    from landbot.github.tally import PROCESS_TALLY
    from landbot.pipeline.worker import save_tally

    save_tally(store, PROCESS_TALLY)


def make_repo_settings(settings: Settings, store: Store, gh: GitHubClient) -> RepoSettings:
    """Each repository's settings (the host's narrowed by its own file): one per process,
    shared by the land loop and the fixer, so both apply the same version of the file."""
    from landbot.pipeline.repo_settings import RepoSettings

    return RepoSettings(settings, store, gh)


def make_lander(
    settings: Settings,
    store: Store,
    *,
    progress: Callable[[str], None] | None = None,
    gh: GitHubClient | None = None,
    repo_settings: RepoSettings | None = None,
) -> Lander:
    from landbot.pipeline.process import Lander
    from landbot.pipeline.worker import failpoint_from_env

    client = gh or make_github(settings)
    per_repo = repo_settings or make_repo_settings(settings, store, client)
    return Lander(
        settings,
        store,
        client,
        progress=progress,
        failpoint=failpoint_from_env(),
        fixer_enabled=settings.fixer.enabled,
        settings_for=per_repo.for_repo,
    )


def make_fixer(
    settings: Settings,
    client: Callable[[], FixClient],
    store: Store | None = None,
    *,
    settings_for: Callable[[str], Settings] | None = None,
) -> FixRunner:
    """The land-fixer job as the worker runs it: host-side workspace, sandboxed agent,
    host-side publishing, with the worker's GitHub client. With `store`, the PR's push cap
    is read again just before publishing (two jobs on one PR cannot both pass it).

    Each job runs under its repository's settings (`settings_for`: its agent, command,
    limits, protected paths and caps); the mirrors and work trees are the host's, one set
    per process."""
    from landbot.fixer.job import JobLimits
    from landbot.git.workspace import Workspaces
    from landbot.land.model import Policy
    from landbot.pipeline.fix import run_fix_job

    of_repo = settings_for or (lambda repo: settings)

    # Made on first use: a worker may never see a fix job.
    workspaces = functools.cache(
        lambda: Workspaces.from_settings(settings, settings.fixer.state_dir)
    )

    def run(drop: Drop, evidence: Evidence) -> FixerResult:
        mine = of_repo(drop.repo)
        policy = Policy.from_settings(mine, fixer_enabled=True)
        if mine.fixer.backend == "actions":
            return _run_on_actions(mine, client, workspaces(), store, drop, evidence, policy)
        limits = JobLimits(timeout=mine.fixer.timeout, memory_mb=mine.fixer.memory_mb)
        return run_fix_job(
            mine,
            client(),
            workspaces(),
            drop,
            evidence,
            limits=limits,
            model=mine.fixer.model,
            budget=None
            if store is None
            else lambda: store.budget(drop.repo, drop.pr, drop.head_sha, window=policy.cap_window),
            policy=policy if store is not None else None,
        )

    return run


def _run_on_actions(
    settings: Settings,
    client: Callable[[], FixClient],
    workspaces: Workspaces,
    store: Store | None,
    drop: Drop,
    evidence: Evidence,
    policy: Policy,
) -> FixerResult:
    """One look at a fix job on the repository's runners (`[fixer] backend = "actions"`)."""
    from landbot.fixer.actions import CURRENT_JOB, ActionsBackend, ActionsOptions
    from landbot.pipeline.fix import run_actions_fix_job

    fix_job = CURRENT_JOB.get()
    if store is None or fix_job is None:
        raise LandbotError(
            '[fixer] backend = "actions" runs fix jobs from the worker\'s store only; run '
            '`landbot serve` or `landbot worker`, or set backend = "local"'
        )
    gh = client()
    if not hasattr(gh, "dispatch_workflow"):
        raise LandbotError('this GitHub client cannot dispatch workflows; set backend = "local"')
    actions_client = cast("ActionsFixClient", gh)
    backend = ActionsBackend(store, actions_client, ActionsOptions.from_settings(settings))
    return run_actions_fix_job(
        settings,
        actions_client,
        workspaces,
        backend,
        fix_job,
        drop,
        evidence,
        budget=lambda: store.budget(drop.repo, drop.pr, drop.head_sha, window=policy.cap_window),
        policy=policy,
    )


def make_worker(settings: Settings, store: Store, *, gh: GitHubClient | None = None) -> Worker:
    from landbot.github.tally import PROCESS_TALLY
    from landbot.pipeline.flaky_issues import EVERY_S, sweep
    from landbot.pipeline.worker import Worker

    # One client for the land loop and the fixer (the caller's, or made on first use), and
    # one reader of the repositories' own files for both.
    client = functools.cache(lambda: gh or make_github(settings))
    per_repo = functools.cache(lambda: make_repo_settings(settings, store, client()))
    lander = functools.cache(
        lambda: make_lander(settings, store, gh=client(), repo_settings=per_repo())
    )

    return Worker(
        store,
        lander,
        fixer=make_fixer(
            settings, client, store, settings_for=lambda repo: per_repo().for_repo(repo)
        ),
        fixer_concurrency=settings.fixer.concurrency,
        lease=dt.timedelta(seconds=settings.worker.lease_seconds),
        idle_sleep=settings.worker.idle_sleep,
        retention=dt.timedelta(days=settings.store.retention_days),
        # Off: never swept, so no call and no query for it.
        flaky_sweep=(lambda: sweep(settings, store, client))
        if settings.flaky_issues.enabled
        else None,
        flaky_every=EVERY_S,
        # Every process's requests reach the store, so one /metrics counts them all.
        calls=PROCESS_TALLY,
    )


def resolve_repo(settings: Settings, repo: str | None) -> str:
    if repo:
        return repo
    if len(settings.repos) == 1:
        return settings.repos[0]
    raise LandbotError("which repository? pass --repo OWNER/NAME (or set one in LANDBOT_REPOS)")


def parse_since(text: str) -> dt.datetime:
    """`--since TIME`: ISO 8601, a date or a date and time; no offset means UTC."""
    try:
        when = dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise LandbotError(
            f"--since {text!r} is not an ISO 8601 time; use e.g. 2026-12-01 or 2026-12-01T09:30:00Z"
        ) from None
    return when.replace(tzinfo=dt.UTC) if when.tzinfo is None else when.astimezone(dt.UTC)


def status_rows(
    store: Store,
    repo: str | None,
    *,
    limit: int | None,
    since: dt.datetime | None = None,
) -> list[dict[str, Any]]:
    """`landbot status --json`: one object per drop, newest first (design.md "Formats"),
    at most `limit` (None: every one), observed at or after `since`."""
    return [
        {
            "id": d.id,
            "repo": d.repo,
            "pr": d.pr,
            "head_sha": d.head_sha,
            "reason": d.reason,
            "raw_reason": d.raw_reason,
            "source": d.source,
            "class": d.class_,
            "outcome": d.outcome,
            "summary": d.summary,
            "observed_at": d.observed_at.isoformat(),
            "updated_at": d.updated_at.isoformat(),
        }
        for d in store.drops(repo, limit, since=since)
    ]


def dumps(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=False)
