"""The wiring applies each repository's own settings: the land loop through RepoSettings,
and the fixer per job (its agent, command, limits, caps), with one set of workspaces per
process. `run_fix_job` and the workspaces are stood in for: what is checked is what the
wiring hands them."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from landbot.config import Settings
from landbot.core.model import Drop, Evidence, FixerResult
from landbot.pipeline import wiring
from landbot.pipeline.repo_settings import RepoSettings
from landbot.repo_config import REPO_FILE
from landbot.store import Store

from .test_repo_settings import FakeGitHub

FILE = "[policy]\nmax_pushes_per_pr = 1\n[fixer]\ntimeout = 60\nmemory_mb = 512\n"


def drop(repo: str) -> Drop:
    return Drop(repo=repo, pr=7, head_sha="a" * 40, reason="failed_checks", source="webhook")


def test_the_fixer_runs_each_job_under_its_repositorys_settings(
    monkeypatch: pytest.MonkeyPatch, store: Store, tmp_path: Path
) -> None:
    import landbot.git.workspace
    import landbot.pipeline.fix

    seen: list[dict[str, Any]] = []
    made: list[object] = []

    def fake_run(settings: Settings, client: object, ws: object, d: Drop, e: Evidence,
                 **kw: Any) -> FixerResult:  # fmt: skip
        window: dt.timedelta = kw["policy"].cap_window
        seen.append(
            {"settings": settings, "limits": kw["limits"], "ws": ws, "window": window,
             "pushes": kw["policy"].max_pushes_per_pr, "budget": kw["budget"]()}
        )  # fmt: skip
        return FixerResult("needs_human", "s", "r")

    def fake_workspaces(settings: Settings, root: Path) -> object:
        made.append(settings)
        return object()

    monkeypatch.setattr(landbot.pipeline.fix, "run_fix_job", fake_run)
    monkeypatch.setattr(landbot.git.workspace.Workspaces, "from_settings", fake_workspaces)
    host = Settings()
    host.fixer.state_dir = tmp_path / "state"
    gh = FakeGitHub()
    gh.commit(REPO_FILE, FILE)
    per_repo = RepoSettings(host, store, gh)

    def of_repo(repo: str) -> Settings:
        return per_repo.for_repo(repo) if repo == "acme/own" else host

    run = wiring.make_fixer(host, lambda: object(), store, settings_for=of_repo)  # type: ignore[arg-type, return-value]
    run(drop("acme/own"), Evidence())
    run(drop("acme/plain"), Evidence())
    own, plain = seen
    assert own["settings"] is per_repo.for_repo("acme/own") and plain["settings"] is host
    assert (own["limits"].timeout, own["limits"].memory_mb) == (60, 512)
    assert (plain["limits"].timeout, plain["limits"].memory_mb) == (1800, 4096)
    assert (own["pushes"], plain["pushes"]) == (1, 2)  # the push cap checked before publishing
    # One set of mirrors and work trees, the host's, for every repository.
    assert made == [host] and own["ws"] is plain["ws"]


@pytest.fixture
def fix_runs(monkeypatch: pytest.MonkeyPatch) -> list[Settings]:
    """The settings each fix job runs under, in order (the job itself, and the work trees it
    would make, replaced)."""
    import landbot.git.workspace
    import landbot.pipeline.fix

    seen: list[Settings] = []

    def fake_run(settings: Settings, *a: Any, **kw: Any) -> FixerResult:
        seen.append(settings)
        return FixerResult("needs_human", "s", "r")

    monkeypatch.setattr(landbot.pipeline.fix, "run_fix_job", fake_run)
    monkeypatch.setattr(landbot.git.workspace.Workspaces, "from_settings", lambda s, r: object())
    return seen


def test_without_settings_for_the_fixer_runs_under_the_host_settings(
    store: Store, fix_runs: list[Settings]
) -> None:
    seen = fix_runs
    host = Settings()
    wiring.make_fixer(host, lambda: object(), store)(drop("acme/own"), Evidence())  # type: ignore[arg-type, return-value]
    assert seen == [host] and seen[0] is host


def test_the_land_loop_made_by_the_wiring_reads_the_repositorys_file(store: Store) -> None:
    gh = FakeGitHub()
    gh.commit(REPO_FILE, '[policy]\nreasons = { failed_checks = "handback" }\n')
    host = Settings()
    lander = wiring.make_lander(host, store, gh=gh)
    assert lander.policy_for("acme/own").reasons["failed_checks"] == "handback"
    assert gh.take_calls() == ["default_branch", "file_contents"]
    # The control: a host that reads no file.
    off = Settings()
    off.policy.repo_file = ""
    assert wiring.make_lander(off, store, gh=gh).settings_for("acme/own") is off
    assert gh.calls == []


def test_the_worker_shares_one_reader_between_the_land_loop_and_the_fixer(
    monkeypatch: pytest.MonkeyPatch, store: Store, fix_runs: list[Settings]
) -> None:
    seen = fix_runs
    made: list[RepoSettings] = []
    real = wiring.make_repo_settings

    def counting(*a: Any) -> RepoSettings:
        made.append(real(*a))
        return made[-1]

    monkeypatch.setattr(wiring, "make_repo_settings", counting)
    gh = FakeGitHub()
    gh.commit(REPO_FILE, FILE)
    worker = wiring.make_worker(Settings(), store, gh=gh)
    mine = worker.lander.settings_for("acme/own")
    assert worker.fixer is not None
    worker.fixer(drop("acme/own"), Evidence())
    assert len(made) == 1 and seen == [mine] and seen[0] is mine
