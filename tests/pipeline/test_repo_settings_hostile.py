"""RepoSettings given a repository file written to hurt the host: the drop's settings are
always an answer (never an exception), the file is reported once as invalid, and the last
good version stays in effect. The stand-in GitHub is test_repo_settings.py's."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import pytest

from landbot.config import Settings
from landbot.github.models import FileContent
from landbot.pipeline import repo_settings as rs
from landbot.repo_config import REPO_FILE
from landbot.store import Store

from .test_repo_settings import NARROW, REPO, Clock, FakeGitHub, action, make

DEEP = "x = " + "[" * 500 + "]" * 500 + "\n"


@pytest.fixture
def gh() -> FakeGitHub:
    return FakeGitHub()


@pytest.fixture
def clock() -> Clock:
    return Clock()


def test_a_file_nested_500_deep_is_reported_and_the_last_good_one_stays(
    store: Store, gh: FakeGitHub, clock: Clock
) -> None:
    repos = make(store, gh, clock)
    gh.commit(REPO_FILE, NARROW)
    good = repos.for_repo(REPO)
    assert action(good) == "handback"  # control: a good file is in effect
    gh.commit(REPO_FILE, DEEP)
    repos.read(REPO)  # raised RecursionError on every call before
    assert repos.for_repo(REPO) is good
    row = store.repo_file(REPO)
    assert row is not None and row.invalid and row.text == DEEP
    [(_, _, _, output)] = gh.runs
    assert output is not None
    [note] = output.annotations
    assert (note.path, note.start_line) == (REPO_FILE, 1)
    assert "not valid TOML for landbot: arrays or inline tables nested hundreds" in note.message
    # Read again at a later commit: that version is not reported twice.
    gh.commit("README.md", "hello")
    repos.read(REPO)
    assert len(gh.runs) == 1 and repos.for_repo(REPO) is good


def test_a_first_file_nested_500_deep_leaves_the_host_settings(
    store: Store, gh: FakeGitHub, clock: Clock
) -> None:
    host = Settings()
    gh.commit(REPO_FILE, DEEP)
    assert make(store, gh, clock, host).for_repo(REPO) is host
    assert len(gh.runs) == 1


def test_a_check_that_fails_makes_the_file_invalid_not_the_drop(
    store: Store, gh: FakeGitHub, clock: Clock, monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    real = rs.problems

    def breaks_on_marker(text: str, **kw: object) -> object:
        if "# marker" in text:
            raise RuntimeError("a bug in a check")
        return real(text, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(rs, "problems", breaks_on_marker)
    repos = make(store, gh, clock)
    gh.commit(REPO_FILE, NARROW)
    good = repos.for_repo(REPO)
    assert action(good) == "handback"  # control: the same check passes without the marker
    gh.commit(REPO_FILE, '[policy]\nreasons = { failed_checks = "note" }\n# marker\n')
    with caplog.at_level(logging.ERROR, logger="landbot.repo_settings"):
        repos.read(REPO)
    assert repos.for_repo(REPO) is good
    assert any("settings file check failed" in r.getMessage() for r in caplog.records)
    [(_, _, _, output)] = gh.runs
    assert output is not None
    assert "landbot could not check this file (RuntimeError)" in output.annotations[0].message


@dataclass
class SizedGitHub(FakeGitHub):
    """Records the `max_bytes` each read was given."""

    limits: list[int | None] = field(default_factory=list)

    def file_contents(
        self, repo: str, path: str, *, ref: str | None = None, max_bytes: int | None = None
    ) -> FileContent | None:
        self.limits.append(max_bytes)
        return super().file_contents(repo, path, ref=ref, max_bytes=max_bytes)


def test_the_read_asks_for_no_more_than_it_keeps(store: Store, clock: Clock) -> None:
    gh = SizedGitHub()
    host = Settings()
    gh.commit(REPO_FILE, "# padding\n" * (rs.MAX_FILE_BYTES // 10 + 1))
    assert make(store, gh, clock, host).for_repo(REPO) is host
    assert gh.limits == [rs.MAX_FILE_BYTES]
    assert gh.take_calls() == ["default_branch", "file_contents", "create_check_run"]
    row = store.repo_file(REPO)
    assert row is not None and row.text is None and row.invalid
    [(_, _, _, output)] = gh.runs
    assert output is not None and "over the 65536 bytes landbot reads" in output.summary
    # Control: a file of exactly MAX_FILE_BYTES is read and checked.
    exact = "#" * (rs.MAX_FILE_BYTES - 1) + "\n"
    gh.commit(REPO_FILE, exact)
    repos = make(store, gh, clock, host)
    repos.read(REPO)
    row = store.repo_file(REPO)
    assert row is not None and row.text == exact and not row.invalid
