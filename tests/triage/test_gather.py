"""landbot.triage.gather against an in-memory GitHub: which calls it makes, in which order,
and what it does when GitHub no longer has a log. (The integration tests run the same code
against the simulated GitHub over HTTP.)"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from landbot.config import GitHubSettings, Settings, TriageRule
from landbot.core.model import Drop
from landbot.errors import LandbotError
from landbot.github.client import GitHubClient
from landbot.github.errors import GitHubError, NotFound, RateLimited, ServerError
from landbot.github.models import CheckRun, Job, QueueEvent, Step, WorkflowRun
from landbot.triage.gather import (
    Gatherer,
    find_group_commit,
    no_log_verdict,
    run_id_of,
    triage_ops,
)

HEAD = "a" * 40
GROUP = "b" * 40
OTHER = "c" * 40
REPO = "acme/widgets"
FIXTURES = Path(__file__).parent / "fixtures"


def check(
    job_id: int, name: str = "test", conclusion: str = "failure", app: str = "github-actions"
) -> CheckRun:
    url = f"https://github.com/{REPO}/actions/runs/7/job/{job_id}"
    return CheckRun(job_id, name, "completed", conclusion, url, url, app, None, None)


def job(job_id: int, name: str = "test") -> Job:
    steps = (
        Step(1, "Set up job", "completed", "success"),
        Step(2, "Install dependencies", "completed", "failure"),
    )
    return Job(job_id, 7, name, "completed", "failure", None, steps)


@dataclass
class MemoryGitHub:
    """Just enough of GitHubClient for triage, recording every call."""

    checks: dict[str, list[CheckRun]] = field(default_factory=dict)
    runs: list[WorkflowRun] = field(default_factory=list)
    removal: QueueEvent | None = None
    logs: dict[int, bytes | GitHubError] = field(default_factory=dict)
    calls: list[str] = field(default_factory=list)

    def pull_request(self, repo: str, number: int) -> Any:
        raise AssertionError("not needed")

    def check_runs(self, repo: str, ref: str) -> list[CheckRun]:
        self.calls.append(f"check_runs {ref[:1]}")
        return self.checks.get(ref, [])

    def merge_group_runs(self, repo: str, *, head_sha: str | None = None) -> list[WorkflowRun]:
        self.calls.append("merge_group_runs")
        return self.runs

    def latest_queue_removal(self, repo: str, number: int) -> QueueEvent | None:
        self.calls.append("latest_queue_removal")
        return self.removal

    def run_jobs(self, repo: str, run_id: int) -> list[Job]:
        self.calls.append(f"run_jobs {run_id}")
        return [job(c.id, c.name) for cs in self.checks.values() for c in cs]

    def job(self, repo: str, job_id: int) -> Job:
        self.calls.append(f"job {job_id}")
        return job(job_id)

    @contextmanager
    def _log(self, job_id: int) -> Iterator[Iterator[bytes]]:
        found = self.logs[job_id]
        if isinstance(found, GitHubError):
            raise found
        yield iter([found[i : i + 1000] for i in range(0, len(found), 1000)])

    def job_log(self, repo: str, job_id: int) -> Any:
        self.calls.append(f"job_log {job_id}")
        return self._log(job_id)

    def git_token(self, repo: str) -> str:
        return "token"

    # The rest of GitHubOps (the land loop's writes): never called by triage.
    def comments(self, *a: Any) -> Any: ...
    def create_comment(self, *a: Any) -> Any: ...
    def upsert_marked_comment(self, *a: Any, **k: Any) -> Any: ...
    def minimize_comment(self, *a: Any, **k: Any) -> Any: ...
    def add_reaction(self, *a: Any) -> Any: ...
    def enqueue(self, *a: Any, **k: Any) -> Any: ...
    def enable_auto_merge(self, *a: Any, **k: Any) -> Any: ...
    def collaborator_permission(self, *a: Any) -> Any: ...


class MemoryStore:
    def __init__(self, groups: list[tuple[str, str | None]] = ()) -> None:  # type: ignore[assignment]
        self.groups = [
            SimpleNamespace(head_sha=sha, base_ref=base, head_ref="", base_sha=None)
            for sha, base in groups
        ]
        self.updates: list[dict[str, Any]] = []

    def groups_for(self, repo: str, pr: int) -> list[Any]:
        return self.groups

    def update_drop(self, drop_id: int, **values: Any) -> None:
        self.updates.append(values)


def drop(**kw: Any) -> Drop:
    return Drop(
        repo=REPO, pr=5, head_sha=HEAD, reason="failed_checks", source="webhook", id=1, **kw
    )


def group_run(sha: str, pr: int = 5) -> WorkflowRun:
    branch = f"gh-readonly-queue/release/v1/pr-{pr}-{'d' * 40}"  # a base with a slash
    return WorkflowRun(1, "CI", branch, sha, "completed", "failure", "")


def npm_log() -> bytes:
    return (FIXTURES / "npm-econnreset.log").read_bytes()


# --- the group commit ----------------------------------------------------------------------


def test_the_first_route_that_finds_failed_checks_wins_and_later_ones_cost_nothing() -> None:
    gh = MemoryGitHub(checks={GROUP: [check(1)]}, runs=[group_run(OTHER)])
    found = find_group_commit(gh, MemoryStore([(GROUP, "main")]), drop())  # type: ignore[arg-type]
    assert found is not None and (found.sha, found.source) == (GROUP, "merge_group event")
    assert gh.calls == ["check_runs b"]


def test_a_remembered_group_whose_checks_passed_is_passed_over() -> None:
    """A stale group (its checks green) cannot be why the PR was dropped: the next route
    is asked, and its commit, with a failure, is the one."""
    another_pr = "e" * 40
    gh = MemoryGitHub(
        checks={OTHER: [check(1, conclusion="success")], GROUP: [check(2)], another_pr: [check(3)]}
    )
    gh.runs = [group_run(another_pr, pr=6), group_run(GROUP)]  # newest first
    found = find_group_commit(gh, MemoryStore([(OTHER, "main")]), drop())  # type: ignore[arg-type]
    assert found is not None and (found.sha, found.source) == (GROUP, "merge-group workflow run")
    assert gh.calls == ["check_runs c", "merge_group_runs", "check_runs b"]


def test_a_group_from_a_failed_check_webhook_says_so() -> None:
    gh = MemoryGitHub(checks={GROUP: [check(1)]})
    found = find_group_commit(gh, MemoryStore([(GROUP, None)]), drop())  # type: ignore[arg-type]
    assert found is not None and found.source == "failed check webhook"


def test_before_commit_is_used_only_when_it_is_not_the_head() -> None:
    removal = QueueEvent("removed", "E1", None, "failed_checks", GROUP, "github-merge-queue")
    gh = MemoryGitHub(checks={GROUP: [check(1)]}, removal=removal)
    found = find_group_commit(gh, MemoryStore(), drop())  # type: ignore[arg-type]
    assert found is not None and found.source == "removal event beforeCommit"
    head = MemoryGitHub(removal=QueueEvent("removed", "E1", None, None, HEAD, None))
    assert find_group_commit(head, MemoryStore(), drop()) is None  # type: ignore[arg-type]
    assert head.calls == ["merge_group_runs", "latest_queue_removal"]


def test_without_any_failure_the_first_candidate_is_reported() -> None:
    gh = MemoryGitHub(checks={GROUP: [check(1, conclusion="success")]})
    found = find_group_commit(gh, MemoryStore([(GROUP, "main")]), drop())  # type: ignore[arg-type]
    assert found is not None and found.sha == GROUP and found.failed == ()
    gatherer = Gatherer()
    ev = gatherer(gh, MemoryStore([(GROUP, "main")]), drop())  # type: ignore[arg-type]
    assert ev.triage_class is None and ev.triage_reason.startswith("no failed check")


# --- jobs and logs -------------------------------------------------------------------------


def test_logs_are_explained_with_the_steps_and_the_group_is_recorded() -> None:
    gh = MemoryGitHub(checks={GROUP: [check(11, "build")]}, logs={11: npm_log()})
    store = MemoryStore([(GROUP, "main")])
    ev = Gatherer()(gh, store, drop())  # type: ignore[arg-type]
    # A flaky failure is re-enqueued: the PRs ahead (a listing of runs) are not read for it.
    assert gh.calls == ["check_runs b", "job 11", "job_log 11"]
    [j] = ev.jobs
    assert (j.class_, j.step, j.error_lines) == ("flaky", "Run npm ci", (88, 98))
    assert "step 'Install dependencies'" in j.summary  # the step's name from the jobs API
    assert ev.triage_class == "flaky" and store.updates == [{"merge_group_sha": GROUP}]


def test_a_genuine_failure_reads_the_prs_ahead_once() -> None:
    # The control of the test above: a failure a person must reproduce gets the PRs ahead
    # in the group (one listing of runs, shared with the group-commit routes).
    log = (FIXTURES / "pytest-genuine.log").read_bytes()
    gh = MemoryGitHub(checks={GROUP: [check(11, "test")]}, logs={11: log})
    ev = Gatherer()(gh, MemoryStore([(GROUP, "main")]), drop())  # type: ignore[arg-type]
    assert ev.triage_class == "genuine"
    assert gh.calls == ["check_runs b", "job 11", "job_log 11", "merge_group_runs"]


def test_jobs_of_one_run_are_listed_once() -> None:
    checks = [check(11, "a"), check(12, "b"), check(13, "c", conclusion="cancelled")]
    gh = MemoryGitHub(checks={GROUP: checks}, logs={11: npm_log(), 12: npm_log()})
    Gatherer()(gh, MemoryStore([(GROUP, "main")]), drop())  # type: ignore[arg-type]
    assert gh.calls == [
        "check_runs b",
        "run_jobs 7",
        "job_log 11",
        "job_log 12",
    ]


@pytest.mark.parametrize("status", [404, 410, 403])
def test_a_log_github_no_longer_has_is_noted(status: int) -> None:
    gone = (NotFound if status == 404 else GitHubError)(status, "gone")
    gh = MemoryGitHub(checks={GROUP: [check(11, conclusion="timed_out")]}, logs={11: gone})
    ev = Gatherer()(gh, MemoryStore([(GROUP, "main")]), drop())  # type: ignore[arg-type]
    [j] = ev.jobs
    assert j.class_ == "timeout" and j.summary == f"GitHub did not serve its log ({status})"


@pytest.mark.parametrize(
    "error",
    [ServerError(502, "bad gateway"), RateLimited(403, "slow down", retry_after=60.0)],
)
def test_a_server_failure_or_a_rate_limit_is_raised_for_the_worker_to_retry(
    error: GitHubError,
) -> None:
    gh = MemoryGitHub(checks={GROUP: [check(11)]}, logs={11: error})
    with pytest.raises(type(error)):
        Gatherer()(gh, MemoryStore([(GROUP, "main")]), drop())  # type: ignore[arg-type]


def test_a_repository_rule_from_the_settings_decides() -> None:
    rule = TriageRule.model_validate({"pattern": r"npm ERR! network", "class": "infrastructure"})
    settings = Settings(github=GitHubSettings(), triage={"rules": [rule]})  # type: ignore[arg-type]
    gh = MemoryGitHub(checks={GROUP: [check(11)]}, logs={11: npm_log()})
    ev = Gatherer.from_settings(settings)(gh, MemoryStore([(GROUP, "main")]), drop())  # type: ignore[arg-type]
    assert ev.triage_class == "infrastructure"
    # Control: without the rule, the built-in signature calls the same log flaky.
    plain = MemoryGitHub(checks={GROUP: [check(11)]}, logs={11: npm_log()})
    assert Gatherer()(plain, MemoryStore([(GROUP, "main")]), drop()).triage_class == "flaky"  # type: ignore[arg-type]


def test_a_bad_rule_stops_start_up_with_one_line() -> None:
    rule = TriageRule.model_validate({"pattern": "(unclosed", "class": "flaky"})
    settings = Settings(github=GitHubSettings(), triage={"rules": [rule]})  # type: ignore[arg-type]
    with pytest.raises(LandbotError, match=r"triage rule 1 \(pattern '\(unclosed'\)"):
        Gatherer.from_settings(settings)


@pytest.mark.parametrize(
    ("conclusion", "app", "cls", "words"),
    [
        ("cancelled", "github-actions", "cancelled", "not a failure of the pull request"),
        ("timed_out", "circleci", "timeout", "timed out before it reported"),
        ("stale", "github-actions", "infrastructure", "stale"),
        ("action_required", "github-actions", "unknown", "waits for a person"),
        ("startup_failure", "github-actions", "unknown", "could not start"),
        ("failure", "circleci", "unknown", "the check of `circleci` reported `failure`"),
    ],
)
def test_checks_without_a_log_get_their_class_from_the_conclusion(
    conclusion: str, app: str, cls: str, words: str
) -> None:
    v = no_log_verdict(check(1, conclusion=conclusion, app=app))
    assert v.failure.class_ == cls and words in v.failure.summary
    assert v.why == f"GitHub reports `{conclusion}`"


def test_run_id_comes_from_the_jobs_own_url() -> None:
    assert run_id_of(check(11)) == 7
    other = CheckRun(
        12, "x", "completed", "failure", "https://ci.example/12", None, "ci", None, None
    )
    assert run_id_of(other) is None
    mismatched = CheckRun(
        12,
        "x",
        "completed",
        "failure",
        f"https://github.com/{REPO}/actions/runs/7/job/99",
        None,
        "github-actions",
        None,
        None,
    )
    assert run_id_of(mismatched) is None


def test_triage_needs_a_client_that_reads_logs() -> None:
    with pytest.raises(TypeError, match="cannot read jobs and logs"):
        triage_ops(object())  # type: ignore[arg-type]
    client = GitHubClient(GitHubSettings(token="t"))  # type: ignore[arg-type]
    assert triage_ops(client) is client  # control: the real client has every method


def test_a_conflict_without_settings_is_refused_before_any_call() -> None:
    gh = MemoryGitHub()
    conflict = Drop(repo=REPO, pr=5, head_sha=HEAD, reason="merge_conflict", source="webhook")
    with pytest.raises(LandbotError, match="needs the settings"):
        Gatherer()(gh, MemoryStore(), conflict)  # type: ignore[arg-type]
    assert gh.calls == []
