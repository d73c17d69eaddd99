"""landbot.triage.last_green against an in-memory GitHub and a real store: which green run
is a failed job's baseline, which calls finding and fetching it costs, what the store
keeps so the next drop on the same base costs none, and what a GitHub error leaves."""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from landbot.core.model import Drop
from landbot.github.errors import GitHubError, NotFound, RateLimited, ServerError
from landbot.github.models import CheckRun, Job, Step, WorkflowRun
from landbot.store import Store
from landbot.triage import gather as gather_module
from landbot.triage.baseline import Baseline, read_baseline
from landbot.triage.gather import Gatherer
from landbot.triage.last_green import RECHECK, LastGreen, Target, target_of

from .conftest import gh_log, run_step

REPO = "acme/widgets"
BASE_SHA = "a" * 40
OTHER_SHA = "b" * 40
GROUP = "c" * 40
GROUP_BRANCH = f"gh-readonly-queue/main/pr-7-{BASE_SHA}"
T0 = dt.datetime(2026, 12, 7, 12, 0, tzinfo=dt.UTC)

GREEN_LOG = gh_log(run_step("pytest -q", "collected 3 items", "3 passed in 0.10s"))
RED_LOG = gh_log(
    [
        *run_step("pytest -q", "collected 3 items", "E   assert 41 == 42", "1 failed in 0.1s"),
        "##[error]Process completed with exit code 1.",
    ]
)


def run(
    run_id: int,
    *,
    name: str = "CI",
    branch: str = "main",
    sha: str = BASE_SHA,
    conclusion: str = "success",
    event: str = "push",
) -> WorkflowRun:
    return WorkflowRun(
        run_id, name, branch, sha, "completed", conclusion, f"https://x/{run_id}", event=event
    )


def job(
    job_id: int,
    name: str = "test (3.12)",
    *,
    run_id: int = 100,
    conclusion: str = "success",
    workflow: str | None = "CI",
    branch: str | None = "main",
) -> Job:
    steps = (Step(1, "Set up job", "completed", "success"),)
    return Job(job_id, run_id, name, "completed", conclusion, None, steps, workflow, branch)


def failed(name: str = "test (3.12)", branch: str | None = GROUP_BRANCH) -> Job:
    return job(9, name, run_id=90, conclusion="failure", branch=branch)


@dataclass
class GreenGitHub:
    """A branch's green runs, runs' jobs and jobs' logs, recording every call."""

    push: dict[str, list[WorkflowRun]] = field(default_factory=dict)
    groups: list[WorkflowRun] = field(default_factory=list)
    jobs: dict[int, list[Job]] = field(default_factory=dict)
    logs: dict[int, bytes | GitHubError] = field(default_factory=dict)
    errors: dict[str, GitHubError] = field(default_factory=dict)
    calls: list[str] = field(default_factory=list)

    def green_runs(self, repo: str, branch: str, *, event: str = "push") -> list[WorkflowRun]:
        self.calls.append(f"green_runs {branch}")
        if "green_runs" in self.errors:
            raise self.errors["green_runs"]
        return self.push.get(branch, [])

    def merge_group_runs(self) -> list[WorkflowRun]:
        self.calls.append("merge_group_runs")
        if "merge_group_runs" in self.errors:
            raise self.errors["merge_group_runs"]
        return self.groups

    def run_jobs(self, repo: str, run_id: int) -> list[Job]:
        self.calls.append(f"run_jobs {run_id}")
        if "run_jobs" in self.errors:
            raise self.errors["run_jobs"]
        return self.jobs.get(run_id, [])

    @contextmanager
    def _log(self, job_id: int) -> Iterator[Iterator[bytes]]:
        found = self.logs[job_id]
        if isinstance(found, GitHubError):
            raise found
        yield iter([found[i : i + 100] for i in range(0, len(found), 100)])

    def job_log(self, repo: str, job_id: int) -> Any:
        self.calls.append(f"job_log {job_id}")
        return self._log(job_id)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store.open(f"sqlite:///{tmp_path / 'landbot.db'}")
    yield s
    s.close()


@dataclass
class Clock:
    now: dt.datetime = T0

    def __call__(self) -> dt.datetime:
        return self.now


def finder(gh: GreenGitHub, store: Store, clock: Clock | None = None, **kw: Any) -> LastGreen:
    """One drop's finder (a new one per drop, as the gatherer makes)."""
    return LastGreen(
        gh,  # type: ignore[arg-type]
        store,
        REPO,
        merge_group_runs=gh.merge_group_runs,
        max_bytes=1 << 20,
        now=clock or Clock(),
        **kw,
    )


def world() -> GreenGitHub:
    """main's newest green runs: Lint (newest), CI at the base commit, an older CI."""
    return GreenGitHub(
        push={"main": [run(101, name="Lint"), run(100), run(50, sha=OTHER_SHA)]},
        jobs={
            100: [
                job(1000, "test (3.13)"),
                job(1001, "test (3.12)"),
                job(1002, "lint"),
            ],
            101: [job(1010, "test (3.12)", run_id=101, workflow="Lint")],
        },
        logs={1001: GREEN_LOG, 1000: gh_log(["other matrix entry"]), 1010: gh_log(["lint"])},
    )


# --- what a failed job is compared with -----------------------------------------------------


def test_target_from_the_jobs_merge_group_branch() -> None:
    assert target_of(failed()) == Target("main", BASE_SHA, "CI", "test (3.12)")
    # A base with slashes; the group ref wins over what the drop says.
    ref = f"gh-readonly-queue/release/2.x/pr-3-{OTHER_SHA}"
    assert target_of(failed(branch=ref), base_ref="main", base_sha=BASE_SHA) == Target(
        "release/2.x", OTHER_SHA, "CI", "test (3.12)"
    )
    # Not a group's branch: the base the gatherer found for the drop, if any.
    assert target_of(failed(branch="feature"), base_ref="main") == Target(
        "main", None, "CI", "test (3.12)"
    )
    assert target_of(failed(branch=None)) is None  # no base known
    assert target_of(job(9, workflow=None, branch=GROUP_BRANCH)) is None  # no workflow name
    assert target_of(None) is None


def test_the_base_run_of_the_same_workflow_and_the_same_job_is_the_baseline(
    store: Store,
) -> None:
    gh = world()
    found = finder(gh, store).of(failed())
    # One listing of main's green runs, the CI run's jobs, and that job's log: the newest
    # green run of the failed job's workflow (not Lint's, though newer), and in it the job
    # of the same full name (not the other matrix entry).
    assert gh.calls == ["green_runs main", "run_jobs 100", "job_log 1001"]
    assert found == read_baseline(GREEN_LOG)
    kept = store.baseline(REPO, 100, "test (3.12)")
    assert kept is not None and Baseline.from_bytes(kept.data) == found
    assert (kept.job_id, kept.head_sha) == (1001, BASE_SHA)
    memo = store.baseline_run(REPO, "main", "CI", "test (3.12)", BASE_SHA)
    assert memo is not None and (memo.run_id, memo.run_sha, memo.job_id) == (100, BASE_SHA, 1001)


def test_the_next_drop_on_the_same_base_asks_github_nothing(store: Store) -> None:
    gh = world()
    first = finder(gh, store).of(failed())
    gh.calls.clear()
    clock = Clock(T0 + dt.timedelta(days=3))  # the base commit's own run holds, however long
    assert finder(gh, store, clock).of(failed()) == first
    assert gh.calls == []


def test_two_failed_jobs_of_a_drop_share_the_listings(store: Store) -> None:
    gh = world()
    green = finder(gh, store)
    assert green.of(failed("test (3.12)")) is not None
    assert green.of(failed("test (3.13)")) is not None
    assert gh.calls == ["green_runs main", "run_jobs 100", "job_log 1001", "job_log 1000"]


def test_another_base_commit_with_the_same_baseline_costs_the_listing_only(
    store: Store,
) -> None:
    gh = world()
    first = finder(gh, store).of(failed())
    gh.calls.clear()
    # A group stacked on the one ahead of it: built on another commit, same green run.
    stacked = failed(branch=f"gh-readonly-queue/main/pr-8-{GROUP}")
    assert finder(gh, store).of(stacked) == first
    assert gh.calls == ["green_runs main"]
    memo = store.baseline_run(REPO, "main", "CI", "test (3.12)", GROUP)
    assert memo is not None and (memo.run_id, memo.job_id) == (100, 1001)


def test_the_newest_green_merge_group_of_the_base_when_the_base_has_none(store: Store) -> None:
    gh = GreenGitHub(
        push={"main": [run(101, name="Lint")]},  # no green CI run on main
        groups=[
            run(203, branch=f"gh-readonly-queue/main/pr-7-{BASE_SHA}", conclusion="failure"),
            run(202, branch=f"gh-readonly-queue/release/pr-6-{BASE_SHA}", event="merge_group"),
            run(201, branch=f"gh-readonly-queue/main/pr-5-{OTHER_SHA}", event="merge_group"),
            run(200, branch=f"gh-readonly-queue/main/pr-4-{OTHER_SHA}", event="merge_group"),
        ],
        jobs={201: [job(2010, run_id=201)]},
        logs={2010: GREEN_LOG},
    )
    found = finder(gh, store).of(failed())
    # Not the failed group (203), nor another base's (202): the newest green group of main.
    assert gh.calls == ["green_runs main", "merge_group_runs", "run_jobs 201", "job_log 2010"]
    assert found == read_baseline(GREEN_LOG)
    assert store.baseline(REPO, 201, "test (3.12)") is not None


def test_no_green_run_is_the_log_alone_and_remembered_for_a_while(store: Store) -> None:
    gh = GreenGitHub(push={"main": [run(101, name="Lint")]})
    assert finder(gh, store).of(failed()) is None
    assert gh.calls == ["green_runs main", "merge_group_runs"]
    memo = store.baseline_run(REPO, "main", "CI", "test (3.12)", BASE_SHA)
    assert memo is not None and memo.run_id is None
    gh.calls.clear()
    assert finder(gh, store, Clock(T0 + RECHECK - dt.timedelta(seconds=1))).of(failed()) is None
    assert gh.calls == []  # the next drop on that base asks nothing...
    # ...until the base's runs may have turned green: then it looks again.
    gh.push["main"].insert(0, run(100))
    gh.jobs[100] = [job(1001)]
    gh.logs[1001] = GREEN_LOG
    assert finder(gh, store, Clock(T0 + RECHECK)).of(failed()) == read_baseline(GREEN_LOG)
    assert gh.calls == ["green_runs main", "run_jobs 100", "job_log 1001"]


def test_an_older_commits_run_is_looked_up_again_later(store: Store) -> None:
    """The newest green run tested an older commit (the base's own run was not done): it
    serves for a while, then the base's own run is looked for."""
    gh = GreenGitHub(
        push={"main": [run(50, sha=OTHER_SHA)]}, jobs={50: [job(500)]}, logs={500: GREEN_LOG}
    )
    assert finder(gh, store).of(failed()) is not None
    gh.calls.clear()
    assert finder(gh, store, Clock(T0 + RECHECK / 2)).of(failed()) is not None
    assert gh.calls == []
    assert finder(gh, store, Clock(T0 + RECHECK)).of(failed()) is not None
    assert gh.calls == ["green_runs main"]  # the same run again: kept, no download


def test_a_green_run_without_the_job_is_the_log_alone(store: Store) -> None:
    gh = world()
    gh.jobs[100] = [job(1001, conclusion="skipped"), job(1000, "test (3.13)")]
    assert finder(gh, store).of(failed()) is None
    assert gh.calls == ["green_runs main", "run_jobs 100"]
    memo = store.baseline_run(REPO, "main", "CI", "test (3.12)", BASE_SHA)
    assert memo is not None and memo.run_id is None


def test_a_job_with_no_workflow_name_asks_nothing(store: Store) -> None:
    gh = world()
    assert finder(gh, store).of(job(9, workflow=None, branch=GROUP_BRANCH)) is None
    assert finder(gh, store).of(None) is None
    assert gh.calls == []


# --- GitHub failing: the log alone, never a failed drop ----------------------------------


@pytest.mark.parametrize("where", ["green_runs", "run_jobs", "job_log"])
def test_a_server_error_is_the_log_alone_and_nothing_is_remembered(
    store: Store, where: str, caplog: pytest.LogCaptureFixture
) -> None:
    gh = world()
    error = ServerError(502, "Bad Gateway")
    if where == "job_log":
        gh.logs[1001] = error
    else:
        gh.errors[where] = error
    with caplog.at_level(logging.WARNING, "landbot.triage"):
        assert finder(gh, store).of(failed()) is None
    assert "no baseline for test (3.12) on main, the log alone (502" in caplog.text
    assert store.baseline_run(REPO, "main", "CI", "test (3.12)", BASE_SHA) is None
    assert store.baseline(REPO, 100, "test (3.12)") is None
    # The next drop asks again, and gets it.
    gh = world()
    assert finder(gh, store).of(failed()) == read_baseline(GREEN_LOG)


def test_a_listing_that_failed_is_not_asked_again_in_the_same_drop(store: Store) -> None:
    gh = world()
    gh.errors["green_runs"] = ServerError(503, "unavailable")
    green = finder(gh, store)
    assert green.of(failed("test (3.12)")) is None
    assert green.of(failed("test (3.13)")) is None
    assert gh.calls == ["green_runs main"]


def test_a_log_github_no_longer_serves_is_remembered_as_none(store: Store) -> None:
    gh = world()
    gh.logs[1001] = NotFound(404, "Not Found")
    assert finder(gh, store).of(failed()) is None
    memo = store.baseline_run(REPO, "main", "CI", "test (3.12)", BASE_SHA)
    assert memo is not None and memo.run_id is None
    gh.calls.clear()
    assert finder(gh, store).of(failed()) is None
    assert gh.calls == []


@pytest.mark.parametrize("where", ["green_runs", "merge_group_runs", "run_jobs", "job_log"])
def test_rate_limited_goes_up(store: Store, where: str) -> None:
    gh = world()
    gh.push["main"] = [] if where == "merge_group_runs" else gh.push["main"]
    limited = RateLimited(403, "API rate limit exceeded", retry_after=60)
    if where == "job_log":
        gh.logs[1001] = limited
    else:
        gh.errors[where] = limited
    with pytest.raises(RateLimited):
        finder(gh, store).of(failed())


def test_a_kept_baseline_that_does_not_read_back_is_fetched_again(store: Store) -> None:
    gh = world()
    store.save_baseline(
        repo=REPO, run_id=100, job_name="test (3.12)", job_id=1001, head_sha=None, data=b"junk"
    )
    assert finder(gh, store).of(failed()) == read_baseline(GREEN_LOG)
    assert gh.calls == ["green_runs main", "run_jobs 100", "job_log 1001"]
    kept = store.baseline(REPO, 100, "test (3.12)")
    assert kept is not None and Baseline.from_bytes(kept.data) == read_baseline(GREEN_LOG)


def test_a_remembered_run_whose_baseline_was_pruned_costs_its_log_only(store: Store) -> None:
    gh = world()
    finder(gh, store).of(failed())
    store.forget_baseline(REPO, 100, "test (3.12)")
    gh.calls.clear()
    assert finder(gh, store).of(failed()) == read_baseline(GREEN_LOG)
    assert gh.calls == ["job_log 1001"]


# --- the gatherer hands the baseline to the explanation ----------------------------------


@dataclass
class FullGitHub(GreenGitHub):
    """GreenGitHub with the rest of what the gatherer reads for one failed job."""

    checks: dict[str, list[CheckRun]] = field(default_factory=dict)

    def pull_request(self, repo: str, number: int) -> Any:
        raise AssertionError("not needed")

    def check_runs(self, repo: str, ref: str) -> list[CheckRun]:
        self.calls.append("check_runs")
        return self.checks.get(ref, [])

    def job(self, repo: str, job_id: int) -> Job:
        self.calls.append(f"job {job_id}")
        return failed()

    def merge_group_runs(self, repo: str = REPO, *, head_sha: str | None = None) -> Any:
        return super().merge_group_runs()

    def latest_queue_removal(self, repo: str, number: int) -> Any:
        return None

    def git_token(self, repo: str) -> str:
        return "token"

    def comments(self, *a: Any) -> Any: ...
    def create_comment(self, *a: Any) -> Any: ...
    def upsert_marked_comment(self, *a: Any, **k: Any) -> Any: ...
    def minimize_comment(self, *a: Any, **k: Any) -> Any: ...
    def add_reaction(self, *a: Any) -> Any: ...
    def enqueue(self, *a: Any, **k: Any) -> Any: ...
    def enable_auto_merge(self, *a: Any, **k: Any) -> Any: ...
    def collaborator_permission(self, *a: Any) -> Any: ...


def test_the_gatherer_explains_a_failed_job_with_its_baseline(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"https://github.com/{REPO}/actions/runs/90/job/9"
    check = CheckRun(
        9, "test (3.12)", "completed", "failure", url, url, "github-actions", None, None
    )
    gh = FullGitHub(**vars(world()), checks={GROUP: [check]})
    gh.logs[9] = RED_LOG
    seen: list[tuple[Baseline, ...]] = []
    explain = gather_module.explain_parsed

    def spy(*args: Any, **kw: Any) -> Any:
        seen.append(tuple(kw.get("baselines", ())))
        return explain(*args, **kw)

    monkeypatch.setattr(gather_module, "explain_parsed", spy)
    drop = Drop(REPO, 7, "d" * 40, "failed_checks", "webhook", merge_group_sha=GROUP)
    evidence = Gatherer()(gh, store, drop)  # type: ignore[arg-type]
    assert seen == [(read_baseline(GREEN_LOG),)]
    assert evidence.jobs[0].job == "test (3.12)"
    # The failed job's own log first; then its baseline: listing, jobs, log.
    assert gh.calls[:6] == [
        "check_runs",
        "job 9",
        "job_log 9",
        "green_runs main",
        "run_jobs 100",
        "job_log 1001",
    ]
    # A failed job's log the gatherer could not read gets no baseline looked up.
    gh2 = FullGitHub(**vars(world()), checks={GROUP: [check]})
    gh2.logs[9] = NotFound(404, "gone")
    seen.clear()
    Gatherer()(gh2, store, drop)  # type: ignore[arg-type]
    assert not any(c.startswith("green_runs") for c in gh2.calls)
