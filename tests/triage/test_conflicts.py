"""Conflicting files of a merge_conflict drop, from real git repositories in tmp dirs."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from landbot.errors import LandbotError
from landbot.triage.conflicts import is_quest_file, merge_conflicts, parse_merge_tree


@pytest.fixture(autouse=True)
def _isolated_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    for key, value in {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }.items():
        monkeypatch.setenv(key, value)


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


class Repo:
    """A work tree to make history in, and the bare mirror triage reads."""

    def __init__(self, root: Path) -> None:
        self.work = root / "work"
        self.work.mkdir()
        git(self.work, "init", "-q", "-b", "main")
        self.bare = root / "mirror.git"

    def commit(
        self, branch: str, files: Mapping[str, str | None], *, base: str | None = None
    ) -> str:
        if base is not None:
            git(self.work, "checkout", "-q", "-B", branch, base)
        elif branch != git(self.work, "branch", "--show-current"):
            git(self.work, "checkout", "-q", branch)
        for name, content in files.items():
            path = self.work / name
            if content is None:
                path.unlink()
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(content)
        git(self.work, "add", "-A")
        git(self.work, "commit", "-q", "-m", f"{branch}: {', '.join(files)}")
        return git(self.work, "rev-parse", "HEAD")

    def mirror(self) -> Path:
        git(self.work.parent, "clone", "-q", "--mirror", str(self.work), str(self.bare))
        return self.bare


@pytest.fixture
def repo(tmp_path: Path) -> Iterator[Repo]:
    r = Repo(tmp_path)
    r.commit(
        "main",
        {
            "app.py": "a\nb\nc\n",
            "notes.txt": "keep\n",
            "quest/README.md": "# Plan\n\nroot\n",
            "quest/m0/task.md": "# [S] Task\n\nline\n",
        },
    )
    yield r


def test_clean_merge_has_no_conflicts(repo: Repo) -> None:
    base = repo.commit("main", {"notes.txt": "keep\nmore\n"})
    head = repo.commit("pr", {"app.py": "a\nPR\nc\n"}, base="main~1")
    report = merge_conflicts(repo.mirror(), head, base)
    assert report.clean and report.files == () and report.messages == ()
    assert not report.all_quest
    assert len(report.tree) == 40


def test_conflict_in_code(repo: Repo) -> None:
    base = repo.commit("main", {"app.py": "a\nMAIN\nc\n"})
    head = repo.commit("pr", {"app.py": "a\nPR\nc\n"}, base="main~1")
    report = merge_conflicts(repo.mirror(), head, base)
    assert report.files == ("app.py",)
    assert report.messages == ("CONFLICT (content): Merge conflict in app.py",)
    assert not report.all_quest and not report.clean


def test_conflict_only_in_quest_files(repo: Repo) -> None:
    base = repo.commit(
        "main", {"quest/m0/task.md": "# [S] Task\n\nMAIN\n", "quest/README.md": "# Plan\n\nM\n"}
    )
    head = repo.commit(
        "pr",
        {"quest/m0/task.md": "# [S] Task\n\nPR\n", "quest/README.md": "# Plan\n\nP\n"},
        base="main~1",
    )
    report = merge_conflicts(repo.mirror(), head, base)
    assert set(report.files) == {"quest/README.md", "quest/m0/task.md"}
    assert report.all_quest


def test_quest_and_code_conflicts_are_not_all_quest(repo: Repo) -> None:
    base = repo.commit("main", {"quest/m0/task.md": "# [S] Task\n\nMAIN\n", "app.py": "M\n"})
    head = repo.commit(
        "pr", {"quest/m0/task.md": "# [S] Task\n\nPR\n", "app.py": "P\n"}, base="main~1"
    )
    report = merge_conflicts(repo.mirror(), head, base)
    assert set(report.files) == {"app.py", "quest/m0/task.md"}
    assert not report.all_quest


def test_modify_delete_conflict(repo: Repo) -> None:
    base = repo.commit("main", {"notes.txt": None})
    head = repo.commit("pr", {"notes.txt": "changed\n"}, base="main~1")
    report = merge_conflicts(repo.mirror(), head, base)
    assert report.files == ("notes.txt",)
    assert report.messages[0].startswith("CONFLICT (modify/delete): notes.txt deleted in")


def test_the_mirror_is_not_changed(repo: Repo) -> None:
    base = repo.commit("main", {"app.py": "M\n"})
    head = repo.commit("pr", {"app.py": "P\n"}, base="main~1")
    bare = repo.mirror()
    refs = git(bare, "for-each-ref")
    merge_conflicts(bare, head, base)
    assert git(bare, "for-each-ref") == refs
    assert not (bare / "index").exists()


def test_a_missing_revision_is_one_line(repo: Repo) -> None:
    bare = repo.mirror()
    with pytest.raises(LandbotError) as err:
        merge_conflicts(bare, "main", "0" * 40)
    assert str(err.value) == (
        f"revision '{'0' * 40}' is not a commit in {bare}; fetch it into the mirror first"
    )


def test_unrelated_histories_are_refused(repo: Repo) -> None:
    git(repo.work, "checkout", "-q", "--orphan", "other")
    git(repo.work, "rm", "-q", "-rf", ".")
    other = repo.commit("other", {"x.txt": "x\n"})
    with pytest.raises(LandbotError) as err:
        merge_conflicts(repo.mirror(), other, "main")
    assert "refusing to merge unrelated histories" in str(err.value)
    assert "\n" not in str(err.value)


def test_too_old_git_is_refused(tmp_path: Path) -> None:
    fake = tmp_path / "git"
    fake.write_text("#!/bin/sh\necho 'git version 2.30.2'\n")
    fake.chmod(0o755)
    with pytest.raises(LandbotError, match="too old for merge-tree --write-tree"):
        merge_conflicts(tmp_path, "a", "b", git=str(fake))
    with pytest.raises(LandbotError, match="is not installed"):
        merge_conflicts(tmp_path, "a", "b", git=str(tmp_path / "nope"))


@pytest.mark.parametrize(
    ("path", "quest"),
    [
        ("quest/README.md", True),
        ("quest/m0/kix/sandbox/live-test.md", True),
        ("quest/notes.txt", False),
        ("docs/quest/a.md", False),
        ("questions/a.md", False),
        ("quest.md", False),
    ],
)
def test_quest_file_pattern(path: str, quest: bool) -> None:
    assert is_quest_file(path) is quest


def test_parse_keeps_paths_with_spaces_and_dedupes() -> None:
    out = (
        b"abc123\0dir/a b.txt\0dir/a b.txt\0quest/x.md\0\0"
        b"1\0dir/a b.txt\0CONFLICT (contents)\0"
        b"CONFLICT (content): Merge conflict in dir/a b.txt\n\0"
        b"1\0quest/x.md\0Auto-merging\0Auto-merging quest/x.md\n\0"
    )
    report = parse_merge_tree(out, conflicted=True)
    assert report.files == ("dir/a b.txt", "quest/x.md")
    assert report.messages == ("CONFLICT (content): Merge conflict in dir/a b.txt",)
    assert report.tree == "abc123"
