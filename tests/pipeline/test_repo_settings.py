"""RepoSettings: when a repository's own file is read, what is in effect after each kind of
read, and that an invalid version is reported once. GitHub here is a small in-memory
stand-in that counts its calls (the integration test runs the same through the simulated
GitHub over HTTP); the store is a real SQLite file."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

import pytest

from landbot.config import Settings
from landbot.github.errors import GitHubError, MutationOutcomeUnknown, ServerError
from landbot.github.models import BranchHead, CheckOutput, CheckRun, FileContent
from landbot.land.config_report import CONFIG_CHECK
from landbot.land.model import Policy
from landbot.pipeline import repo_settings as rs
from landbot.pipeline.repo_settings import RepoSettings
from landbot.repo_config import REPO_FILE
from landbot.store import Store, utcnow

REPO = "acme/widgets"
NARROW = '[policy]\nreasons = { failed_checks = "handback" }\n'
WIDER = '[policy]\nreasons = { failed_checks = "handback" }\nmax_requeues_per_pr = 99\n'


@dataclass
class FakeGitHub:
    """The calls RepoSettings makes, answered from `files` (path → text) at `tip`."""

    files: dict[str, str] = field(default_factory=dict)
    tip: str = "1" * 40
    calls: list[str] = field(default_factory=list)
    runs: list[tuple[str, str, str | None, CheckOutput | None]] = field(default_factory=list)
    fail_reads: int = 0  # the next N reads raise ServerError
    fail_create: type[GitHubError] | None = None

    def commit(self, path: str, text: str | None) -> None:
        if text is None:
            self.files.pop(path, None)
        else:
            self.files[path] = text
        self.tip = f"{int(self.tip[:8], 16) + 1:08x}" + "0" * 32

    def default_branch(self, repo: str) -> BranchHead:
        self.calls.append("default_branch")
        self._maybe_fail()
        return BranchHead("main", self.tip)

    def file_contents(
        self, repo: str, path: str, *, ref: str | None = None, max_bytes: int | None = None
    ) -> FileContent | None:
        self.calls.append("file_contents")
        self._maybe_fail()
        assert ref == self.tip  # read at the tip just read, not "the default branch"
        text = self.files.get(path)
        if text is None:
            return None
        sha = f"{abs(hash(text)) % 16**40:040x}"
        size = len(text.encode())
        if max_bytes is not None and size > max_bytes:  # as the client: the size, no bytes
            return FileContent(path=path, sha=sha, text=None, size=size)
        return FileContent(path=path, sha=sha, text=text, size=size)

    def _maybe_fail(self) -> None:
        if self.fail_reads:
            self.fail_reads -= 1
            raise ServerError(502, "Server Error")

    def create_check_run(
        self,
        repo: str,
        head_sha: str,
        *,
        name: str,
        status: str,
        external_id: str | None = None,
        details_url: str | None = None,
        conclusion: str | None = None,
        output: CheckOutput | None = None,
    ) -> CheckRun:
        self.calls.append("create_check_run")
        if self.fail_create is not None:
            if self.fail_create is MutationOutcomeUnknown:
                self.runs.append((head_sha, name, external_id, output))  # it did apply
            raise self.fail_create(500, "no answer")
        self.runs.append((head_sha, name, external_id, output))
        return self._run(len(self.runs), name, head_sha, external_id, conclusion)

    def update_check_run(self, repo: str, check_run_id: int, **_: object) -> CheckRun:
        raise AssertionError("a config report is made complete in one request")

    def check_runs(self, repo: str, ref: str) -> list[CheckRun]:
        self.calls.append("check_runs")
        return [
            self._run(i + 1, name, sha, ext, "failure")
            for i, (sha, name, ext, _) in enumerate(self.runs)
            if sha == ref
        ]

    @staticmethod
    def _run(i: int, name: str, sha: str, ext: str | None, conclusion: str | None) -> CheckRun:
        return CheckRun(
            id=i, name=name, status="completed", conclusion=conclusion, html_url=None,
            details_url=None, app_slug="landbot", started_at=None, completed_at=None,
            head_sha=sha, external_id=ext,
        )  # fmt: skip

    def take_calls(self) -> list[str]:
        out, self.calls = self.calls, []
        return out


class Clock:
    def __init__(self) -> None:
        self.now = utcnow()

    def __call__(self) -> dt.datetime:
        return self.now

    def advance(self, **kw: float) -> None:
        self.now += dt.timedelta(**kw)


@pytest.fixture
def gh() -> FakeGitHub:
    return FakeGitHub()


@pytest.fixture
def clock() -> Clock:
    return Clock()


def make(store: Store, gh: FakeGitHub, clock: Clock, host: Settings | None = None) -> RepoSettings:
    return RepoSettings(host or Settings(), store, gh, clock=clock)


def action(settings: Settings) -> str:
    return Policy.from_settings(settings).reasons["failed_checks"]


def test_no_file_read_when_the_host_reads_none(store: Store, gh: FakeGitHub) -> None:
    host = Settings()
    host.policy.repo_file = ""
    gh.files[REPO_FILE] = NARROW
    assert RepoSettings(host, store, gh).for_repo(REPO) is host
    assert gh.calls == [] and store.repo_file(REPO) is None


def test_a_repository_without_the_file_gets_the_host_settings_object(
    store: Store, gh: FakeGitHub, clock: Clock
) -> None:
    host = Settings()
    repos = make(store, gh, clock, host)
    assert repos.for_repo(REPO) is host
    assert gh.take_calls() == ["default_branch", "file_contents"]
    assert repos.for_repo(REPO) is host and gh.calls == []  # cached in the store


def test_a_narrowing_file_is_in_effect_and_read_once_per_ttl(
    store: Store, gh: FakeGitHub, clock: Clock
) -> None:
    host = Settings()
    gh.commit(REPO_FILE, NARROW)
    repos = make(store, gh, clock, host)
    mine = repos.for_repo(REPO)
    assert mine is not host and (action(mine), action(host)) == ("handback", "fix")
    assert gh.take_calls() == ["default_branch", "file_contents"]
    assert repos.for_repo(REPO) is mine and gh.calls == []  # the same object, no call
    clock.advance(minutes=14)
    repos.for_repo(REPO)
    assert gh.calls == []
    # Past the TTL the tip is read; it has not moved, so the file is not read again.
    clock.advance(minutes=2)
    assert repos.for_repo(REPO) is mine
    assert gh.take_calls() == ["default_branch"]
    # Another commit on the branch, past the TTL again: the file is read at the new tip.
    gh.commit("README.md", "hello")
    clock.advance(minutes=16)
    assert action(repos.for_repo(REPO)) == "handback"
    assert gh.take_calls() == ["default_branch", "file_contents"]


def test_another_process_takes_the_file_from_the_store(
    store: Store, gh: FakeGitHub, clock: Clock
) -> None:
    gh.commit(REPO_FILE, NARROW)
    assert action(make(store, gh, clock).for_repo(REPO)) == "handback"
    gh.take_calls()
    assert action(make(store, gh, clock).for_repo(REPO)) == "handback"
    assert gh.calls == []


def test_a_push_mark_makes_the_next_use_read_it_again(
    store: Store, gh: FakeGitHub, clock: Clock
) -> None:
    repos = make(store, gh, clock)
    gh.commit(REPO_FILE, NARROW)
    assert action(repos.for_repo(REPO)) == "handback"
    gh.commit(REPO_FILE, '[policy]\nreasons = { failed_checks = "note" }\n')
    assert action(repos.for_repo(REPO)) == "handback"  # within the TTL, not told: the old
    gh.take_calls()
    store.mark_repo_file_stale(REPO, REPO_FILE, at=clock.now + dt.timedelta(seconds=1))
    clock.advance(seconds=2)
    assert action(repos.for_repo(REPO)) == "note"
    assert gh.take_calls() == ["default_branch", "file_contents"]


def test_an_invalid_file_is_reported_once_and_the_last_good_one_stays(
    store: Store, gh: FakeGitHub, clock: Clock
) -> None:
    repos = make(store, gh, clock)
    gh.commit(REPO_FILE, NARROW)
    good = repos.for_repo(REPO)
    gh.commit(REPO_FILE, WIDER)  # max_requeues_per_pr past the host's 3, at line 3
    bad_tip = gh.tip
    assert repos.read(REPO) is not None
    assert repos.for_repo(REPO) is good
    [(sha, name, ext, output)] = gh.runs
    assert (sha, name) == (bad_tip, CONFIG_CHECK)
    row = store.repo_file(REPO)
    assert row is not None and ext == f"config:{row.blob_sha}" and row.reported(row.blob_sha or "")
    assert output is not None
    [note] = output.annotations
    assert (note.path, note.start_line, note.annotation_level) == (REPO_FILE, 3, "failure")
    assert "max_requeues_per_pr = 99 is above this host's limit 3" in note.message
    assert "line 3: policy.max_requeues_per_pr" in output.summary
    assert "landbot config check .github/landbot.toml" in output.summary
    assert "the last good version stays in effect" in output.summary
    # Read again (an unrelated push, the TTL): the same version is not reported again.
    gh.commit("README.md", "hello")
    repos.read(REPO)
    assert len(gh.runs) == 1 and repos.for_repo(REPO) is good


def test_an_invalid_first_file_leaves_the_host_settings(
    store: Store, gh: FakeGitHub, clock: Clock
) -> None:
    host = Settings()
    gh.commit(REPO_FILE, '[policy]\ncolour = "red"\n')
    assert make(store, gh, clock, host).for_repo(REPO) is host
    [(_, _, _, output)] = gh.runs
    assert output is not None and "the host's settings stays in effect" in output.summary
    assert [n.start_line for n in output.annotations] == [2]


def test_a_removed_file_means_the_host_settings_again(
    store: Store, gh: FakeGitHub, clock: Clock
) -> None:
    host = Settings()
    repos = make(store, gh, clock, host)
    gh.commit(REPO_FILE, NARROW)
    assert repos.for_repo(REPO) is not host
    gh.commit(REPO_FILE, None)
    repos.read(REPO)
    assert repos.for_repo(REPO) is host


def test_a_github_error_keeps_the_last_good_file_and_waits_before_asking_again(
    store: Store, gh: FakeGitHub, clock: Clock
) -> None:
    repos = make(store, gh, clock)
    gh.commit(REPO_FILE, NARROW)
    good = repos.for_repo(REPO)
    gh.commit(REPO_FILE, '[policy]\nreasons = { failed_checks = "note" }\n')
    gh.fail_reads = 1
    gh.take_calls()
    clock.advance(minutes=16)
    assert repos.for_repo(REPO) is good  # logged, not raised
    assert gh.take_calls() == ["default_branch"]
    clock.advance(seconds=30)
    assert repos.for_repo(REPO) is good and gh.calls == []  # not within RETRY_AFTER
    clock.advance(seconds=rs.RETRY_AFTER.total_seconds())
    assert action(repos.for_repo(REPO)) == "note"
    assert gh.take_calls() == ["default_branch", "file_contents"]


def test_a_refused_report_is_made_at_the_next_read(
    store: Store, gh: FakeGitHub, clock: Clock
) -> None:
    repos = make(store, gh, clock)
    gh.commit(REPO_FILE, WIDER)
    gh.fail_create = GitHubError  # 403: an installation without checks: write
    repos.read(REPO)
    assert gh.runs == []
    gh.fail_create = None
    repos.read(REPO)  # the tip has not moved: the stored text is reported
    assert len(gh.runs) == 1
    repos.read(REPO)
    assert len(gh.runs) == 1


def test_a_report_whose_answer_was_lost_is_looked_for_before_it_is_made_again(
    store: Store, gh: FakeGitHub, clock: Clock
) -> None:
    repos = make(store, gh, clock)
    gh.commit(REPO_FILE, WIDER)
    gh.fail_create = MutationOutcomeUnknown  # it applied, the answer never came
    repos.read(REPO)
    assert len(gh.runs) == 1
    gh.fail_create = None
    repos.read(REPO)  # within the claim's lease: someone may be reporting it
    assert len(gh.runs) == 1
    clock.advance(seconds=rs.REPORT_LEASE.total_seconds() + 1)
    gh.take_calls()
    repos.read(REPO)
    assert "check_runs" in gh.take_calls() and len(gh.runs) == 1  # found, not made again
    row = store.repo_file(REPO)
    assert row is not None and row.reported(row.blob_sha or "")


def test_a_widening_value_in_a_stored_good_file_is_clamped_to_a_lowered_host_limit(
    store: Store, gh: FakeGitHub, clock: Clock
) -> None:
    """Good when read (2 ≤ the host's 3); the host lowers its limit to 1 and restarts: the
    file is not read again within the TTL, and still cannot widen the host."""
    gh.commit(REPO_FILE, "[policy]\nmax_requeues_per_pr = 2\n")
    assert make(store, gh, clock).for_repo(REPO).policy.max_requeues_per_pr == 2
    lower = Settings()
    lower.policy.max_requeues_per_pr = 1
    gh.take_calls()
    assert make(store, gh, clock, lower).for_repo(REPO).policy.max_requeues_per_pr == 1
    assert gh.calls == []


def test_a_file_too_large_is_refused_and_not_stored(
    store: Store, gh: FakeGitHub, clock: Clock
) -> None:
    host = Settings()
    gh.commit(REPO_FILE, "# padding\n" * (rs.MAX_FILE_BYTES // 10 + 1))
    assert make(store, gh, clock, host).for_repo(REPO) is host
    row = store.repo_file(REPO)
    assert row is not None and row.text is None and row.invalid
    [(_, _, _, output)] = gh.runs
    assert output is not None and "over the 65536 bytes landbot reads" in output.summary
