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
from landbot.github.models import Annotation, CheckRun, Job, QueueEvent, Step, WorkflowRun
from landbot.store.records import LedgerTest
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
    def __init__(
        self,
        groups: list[tuple[str, str | None]] = (),  # type: ignore[assignment]
        ledger: dict[tuple[str, str], LedgerTest] | None = None,
    ) -> None:
        self.groups = [
            SimpleNamespace(head_sha=sha, base_ref=base, head_ref="", base_sha=None)
            for sha, base in groups
        ]
        self.updates: list[dict[str, Any]] = []
        # The flaky-test ledger: what it answers, and what triage told it.
        self.records = ledger or {}
        self.asked: list[tuple[str, str]] = []
        self.failures: list[dict[str, Any]] = []
        self.retries: list[dict[str, Any]] = []

    def record_retry(self, **kw: Any) -> int:
        self.retries.append(kw)
        return 0

    def ledger(
        self, repo: str, tests: Any, *, since: Any, exclude_pr: int | None = None
    ) -> dict[tuple[str, str], LedgerTest]:
        wanted = list(tests)
        self.asked += wanted
        return {k: v for k, v in self.records.items() if k in wanted and exclude_pr not in v.prs}

    def record_test_failures(self, **kw: Any) -> int:
        self.failures.append(kw)
        return sum(len(t) for t in kw["failures"].values())

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
    # A flaky failure is re-enqueued: the PRs ahead (a listing of runs) are not read for it;
    # the PR's own head is (its check failing there too would make it genuine).
    assert gh.calls == ["check_runs b", "job 11", "job_log 11", "check_runs a"]
    [j] = ev.jobs
    assert (j.class_, j.step, j.error_lines) == ("flaky", "Run npm ci", (88,))
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
        "check_runs a",  # once for both flaky jobs
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


# --- positive evidence for flaky (triage/flaky.py) ------------------------------------------

PYTEST_TESTS = (
    "tests/test_pricing.py::test_bulk_discount",
    "tests/test_pricing.py::test_coupon_expired",
)


def pytest_log() -> bytes:
    return (FIXTURES / "pytest-genuine.log").read_bytes()


def flaky_record(test: str, check_name: str = "test", prs: tuple[int, ...] = (7, 8)) -> LedgerTest:
    import datetime as dt

    now = dt.datetime.now(dt.UTC)
    return LedgerTest(REPO, test, check_name, len(prs), prs, prs, len(prs), now, now)


def known_flaky(*tests: str, **kw: Any) -> dict[tuple[str, str], LedgerTest]:
    return {("test", t): flaky_record(t, **kw) for t in tests}


def test_the_ledger_makes_a_genuine_looking_failure_flaky() -> None:
    gh = MemoryGitHub(checks={GROUP: [check(11)], HEAD: []}, logs={11: pytest_log()})
    store = MemoryStore([(GROUP, "main")], ledger=known_flaky(*PYTEST_TESTS))
    ev = Gatherer()(gh, store, drop())  # type: ignore[arg-type]
    [j] = ev.jobs
    assert (j.class_, j.log_class, j.failed_tests) == ("flaky", "genuine", PYTEST_TESTS)
    assert "failed in 2 other pull requests in the last 7 days and passed on retry" in (
        j.flaky_evidence
    )
    # The reason leads with the evidence (clipped, as every reason is, at its length).
    assert ev.triage_class == "flaky" and j.flaky_evidence[:100] in ev.triage_reason
    # The head is read (absent there: no evidence either way); no PRs-ahead listing for a
    # re-enqueue. The ledger was asked about both tests, excluding this PR's own failures.
    assert gh.calls == ["check_runs b", "job 11", "job_log 11", "check_runs a"]
    assert store.asked == [("test", t) for t in PYTEST_TESTS]
    # This failure joins the ledger, and this group is the retry of the head's earlier ones.
    [rec] = store.failures
    assert (rec["sha"], rec["pr"], rec["head_sha"], rec["failures"]) == (
        GROUP,
        5,
        HEAD,
        {"test": PYTEST_TESTS},
    )
    [retry] = store.retries
    assert (retry["sha"], retry["passed"], retry["failed"]) == (
        GROUP,
        set(),
        {"test": PYTEST_TESTS},
    )


def test_control_without_ledger_evidence_it_stays_genuine_and_the_head_is_not_read() -> None:
    gh = MemoryGitHub(checks={GROUP: [check(11)], HEAD: []}, logs={11: pytest_log()})
    # Only one of the two failed tests is known flaky: the other is new, so the job is not.
    store = MemoryStore([(GROUP, "main")], ledger=known_flaky(PYTEST_TESTS[0]))
    ev = Gatherer()(gh, store, drop())  # type: ignore[arg-type]
    [j] = ev.jobs
    assert (j.class_, j.log_class, j.flaky_evidence) == ("genuine", None, "")
    assert "check_runs a" not in gh.calls


def test_a_failure_without_a_passed_retry_is_no_evidence() -> None:
    gh = MemoryGitHub(checks={GROUP: [check(11)]}, logs={11: pytest_log()})
    never_passed = {
        k: LedgerTest(REPO, k[1], "test", 3, (7, 8, 9), (), 0, v.first_seen, v.last_seen)
        for k, v in known_flaky(*PYTEST_TESTS).items()
    }
    ev = Gatherer()(gh, MemoryStore([(GROUP, "main")], ledger=never_passed), drop())  # type: ignore[arg-type]
    assert ev.triage_class == "genuine"


def test_the_same_failure_on_the_prs_own_head_is_genuine_whatever_the_ledger_says() -> None:
    head_run = check(21)  # the same check, run on the PR head (pull_request event)
    gh = MemoryGitHub(
        checks={GROUP: [check(11)], HEAD: [head_run]}, logs={11: pytest_log(), 21: pytest_log()}
    )
    store = MemoryStore([(GROUP, "main")], ledger=known_flaky(*PYTEST_TESTS))
    ev = Gatherer()(gh, store, drop())  # type: ignore[arg-type]
    [j] = ev.jobs
    assert (j.class_, j.log_class) == ("genuine", None)
    assert j.flaky_evidence.startswith("it failed the same way (`tests/test_pricing.py::")
    assert "on the pull request's own head aaaaaaa" in j.flaky_evidence
    assert ev.triage_class == "genuine"
    # The head's log is read to compare the tests; then the PRs ahead, for the hand-back.
    assert gh.calls == [
        "check_runs b",
        "job 11",
        "job_log 11",
        "check_runs a",
        "job_log 21",
        "merge_group_runs",
    ]


def test_the_head_failing_other_tests_is_not_the_same_failure() -> None:
    vitest = (FIXTURES / "vitest-genuine.log").read_bytes()
    gh = MemoryGitHub(
        checks={GROUP: [check(11)], HEAD: [check(21)]}, logs={11: pytest_log(), 21: vitest}
    )
    store = MemoryStore([(GROUP, "main")], ledger=known_flaky(*PYTEST_TESTS))
    ev = Gatherer()(gh, store, drop())  # type: ignore[arg-type]
    [j] = ev.jobs
    assert j.class_ == "flaky"  # the ledger's evidence stands
    assert "passed on retry" in j.flaky_evidence


def test_words_that_say_flaky_are_genuine_when_the_head_fails_the_same_check() -> None:
    gh = MemoryGitHub(
        checks={GROUP: [check(11, "build")], HEAD: [check(21, "build")]},
        logs={11: npm_log(), 21: npm_log()},
    )
    ev = Gatherer()(gh, MemoryStore([(GROUP, "main")]), drop())  # type: ignore[arg-type]
    [j] = ev.jobs
    assert (j.class_, j.log_class) == ("genuine", "flaky")
    assert "on the pull request's own head aaaaaaa" in j.flaky_evidence
    # No test named on either side: the same check failing is the same failure; its log
    # is not read (nothing to compare).
    assert "job_log 21" not in gh.calls


def test_words_that_say_flaky_stay_flaky_when_the_head_passed() -> None:
    gh = MemoryGitHub(
        checks={GROUP: [check(11, "build")], HEAD: [check(21, "build", conclusion="success")]},
        logs={11: npm_log()},
    )
    ev = Gatherer()(gh, MemoryStore([(GROUP, "main")]), drop())  # type: ignore[arg-type]
    [j] = ev.jobs
    assert (j.class_, j.log_class) == ("flaky", None)
    assert j.flaky_evidence == "the same check passed on the pull request's own head aaaaaaa"
    assert j.flaky_evidence in ev.triage_reason


class FailingHeadGitHub(MemoryGitHub):
    """GitHub refusing the head's check runs (a token without checks: read)."""

    def check_runs(self, repo: str, ref: str) -> list[CheckRun]:
        if ref == HEAD:
            self.calls.append("check_runs a (403)")
            raise GitHubError(403, "Resource not accessible by integration")
        return super().check_runs(repo, ref)


@pytest.mark.parametrize("words", ["flaky", "ledger"])
def test_a_github_error_on_the_head_is_no_evidence_not_another_class(words: str) -> None:
    log = npm_log() if words == "flaky" else pytest_log()
    ledger = known_flaky(*PYTEST_TESTS) if words == "ledger" else None
    gh = FailingHeadGitHub(checks={GROUP: [check(11)]}, logs={11: log})
    ev = Gatherer()(gh, MemoryStore([(GROUP, "main")], ledger=ledger), drop())  # type: ignore[arg-type]
    assert ev.triage_class == "flaky"  # as without the head: the words, or the ledger
    assert "check_runs a (403)" in gh.calls


def test_a_github_error_on_the_heads_log_keeps_the_same_check_failing() -> None:
    gone = GitHubError(403, "forbidden")
    gh = MemoryGitHub(
        checks={GROUP: [check(11)], HEAD: [check(21)]}, logs={11: pytest_log(), 21: gone}
    )
    store = MemoryStore([(GROUP, "main")], ledger=known_flaky(*PYTEST_TESTS))
    ev = Gatherer()(gh, store, drop())  # type: ignore[arg-type]
    # The listing said the check failed on the head; the log could not say which tests:
    # the same check failing is still the same failure (never flaky on a guess).
    assert ev.triage_class == "genuine"


def test_a_cancelled_or_infrastructure_job_is_not_weighed() -> None:
    log = (FIXTURES / "runner-shutdown.log").read_bytes()
    gh = MemoryGitHub(checks={GROUP: [check(11)], HEAD: [check(21)]}, logs={11: log})
    ev = Gatherer()(gh, MemoryStore([(GROUP, "main")]), drop())  # type: ignore[arg-type]
    assert ev.triage_class == "infrastructure"
    assert "check_runs a" not in gh.calls


# --- check-run annotations -----------------------------------------------------------------


@dataclass
class AnnotatingGitHub(MemoryGitHub):
    annotations: dict[int, list[Annotation] | GitHubError] = field(default_factory=dict)

    def check_run_annotations(self, repo: str, check_run_id: int) -> list[Annotation]:
        self.calls.append(f"annotations {check_run_id}")
        found = self.annotations.get(check_run_id, [])
        if isinstance(found, GitHubError):
            raise found
        return found


def annotated(job_id: int, count: int, name: str = "test") -> CheckRun:
    base = check(job_id, name)
    return CheckRun(
        base.id,
        base.name,
        base.status,
        base.conclusion,
        base.html_url,
        base.details_url,
        base.app_slug,
        None,
        None,
        annotations_count=count,
    )


EXIT = Annotation(".github", 1, "failure", "Process completed with exit code 1.")


def test_annotations_are_read_only_where_they_can_change_the_answer() -> None:
    success = (FIXTURES / "success.log").read_bytes()  # the log names no failure
    gh = AnnotatingGitHub(
        checks={GROUP: [annotated(11, 1), annotated(12, 1, "b")]},
        logs={11: success, 12: pytest_log()},
        annotations={11: [EXIT]},
    )
    Gatherer()(gh, MemoryStore([(GROUP, "main")]), drop())  # type: ignore[arg-type]
    # Job 11's log explains nothing: its annotations are read. Job 12's log names its
    # failing tests: one call would change nothing, so none is made.
    assert "annotations 11" in gh.calls and "annotations 12" not in gh.calls


def test_a_check_without_annotations_costs_no_call() -> None:
    success = (FIXTURES / "success.log").read_bytes()
    gh = AnnotatingGitHub(checks={GROUP: [annotated(11, 0)]}, logs={11: success})
    Gatherer()(gh, MemoryStore([(GROUP, "main")]), drop())  # type: ignore[arg-type]
    assert not [c for c in gh.calls if c.startswith("annotations")]


def test_annotations_outlive_a_log_github_no_longer_serves() -> None:
    gh = AnnotatingGitHub(
        checks={GROUP: [annotated(11, 1)]},
        logs={11: NotFound(404, "gone")},
        annotations={11: [EXIT]},
    )
    ev = Gatherer()(gh, MemoryStore([(GROUP, "main")]), drop())  # type: ignore[arg-type]
    assert "annotations 11" in gh.calls
    [j] = ev.jobs
    # An exit code alone names no cause: still "GitHub did not serve its log".
    assert j.summary == "GitHub did not serve its log (404)"


def test_a_github_error_on_annotations_is_no_evidence() -> None:
    success = (FIXTURES / "success.log").read_bytes()
    ok = AnnotatingGitHub(checks={GROUP: [annotated(11, 1)]}, logs={11: success})
    refused = AnnotatingGitHub(
        checks={GROUP: [annotated(11, 1)]},
        logs={11: success},
        annotations={11: GitHubError(403, "forbidden")},
    )
    control = Gatherer()(ok, MemoryStore([(GROUP, "main")]), drop())  # type: ignore[arg-type]
    ev = Gatherer()(refused, MemoryStore([(GROUP, "main")]), drop())  # type: ignore[arg-type]
    assert "annotations 11" in refused.calls
    assert ev.triage_class == control.triage_class and ev.jobs == control.jobs


# --- the step the jobs API chose -------------------------------------------------------------


def test_the_line_link_and_the_command_follow_the_step_the_jobs_api_chose() -> None:
    # The log alone blames its first failing step (a `continue-on-error` lint); the jobs API
    # says it succeeded and the tests failed: the link and the command are the tests'.
    from .conftest import SET_UP, gh_log, run_step

    lines = [
        *SET_UP,
        *run_step(
            "npm run lint", "src/a.js: 3 problems", "##[error]Process completed with exit code 1."
        ),
        *run_step("npm test", "FAIL src/a.test.js", "##[error]Process completed with exit code 2."),
        "Post job cleanup.",
    ]
    steps = (
        Step(1, "Set up job", "completed", "success"),
        Step(2, "Lint", "completed", "success"),
        Step(3, "Test", "completed", "failure"),
        Step(4, "Complete job", "completed", "success"),
    )

    class WithSteps(MemoryGitHub):
        def job(self, repo: str, job_id: int) -> Job:
            self.calls.append(f"job {job_id}")
            return Job(job_id, 7, "test", "completed", "failure", None, steps)

    gh = WithSteps(checks={GROUP: [check(11, "test")]}, logs={11: gh_log(lines)})
    ev = Gatherer()(gh, MemoryStore([(GROUP, "main")]), drop())  # type: ignore[arg-type]
    [j] = ev.jobs
    header = lines.index("##[group]Run npm test") + 1
    error = lines.index("##[error]Process completed with exit code 2.") + 1
    assert (j.step, j.run) == ("Run npm test", "npm test")
    assert j.line_url == f"{check(11).html_url}#step:3:{error - header + 1}"
    # Control: the same log with the jobs API agreeing with the log (the lint failed).
    steps = (*steps[:1], Step(2, "Lint", "completed", "failure"), *steps[2:])
    gh = WithSteps(checks={GROUP: [check(11, "test")]}, logs={11: gh_log(lines)})
    ev = Gatherer()(gh, MemoryStore([(GROUP, "main")]), drop())  # type: ignore[arg-type]
    [j] = ev.jobs
    lint = lines.index("##[group]Run npm run lint") + 1
    first = lines.index("##[error]Process completed with exit code 1.") + 1
    assert (j.step, j.run) == ("Run npm run lint", "npm run lint")
    assert j.line_url == f"{check(11).html_url}#step:2:{first - lint + 1}"


def test_the_command_of_a_composites_failing_step_is_its_own_script() -> None:
    from landbot.triage.gather import run_script
    from landbot.triage.log import parse_log

    # cpp/godot-precommit-clang-format.log 178-371: the step is `pre-commit/action`, the
    # command to re-run is its failing inner step's script, not the action's name.
    log = Path(__file__).parent / "real" / "cpp" / "godot-precommit-clang-format.log"
    parsed = parse_log(b"".join(log.read_bytes().splitlines(keepends=True)[177:371]))
    assert parsed.step_title == "Run pre-commit/action@v3.0.1"
    assert run_script(parsed).startswith("pre-commit run --show-diff-on-failure --color=always")
    assert "pre-commit/action" not in run_script(parsed)
