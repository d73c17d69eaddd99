"""Helpers for the quest tests: trees written to disk, real git repositories in tmp dirs."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from landbot.quest.findings import Finding
from landbot.quest.parse import parse_quest
from landbot.quest.rules import PathKind, check_quests, targets_to_look_up

Files = Mapping[str, str | bytes]
LANDBOT = str(Path(sys.executable).with_name("landbot"))


def as_bytes(content: str | bytes) -> bytes:
    return content if isinstance(content, bytes) else content.encode()


def check_files(files: Files, others: Mapping[str, PathKind] | None = None) -> list[str]:
    """The pure rules over in-memory quests, rendered as the CLI prints them."""
    quests = {path: parse_quest(path, as_bytes(data)) for path, data in files.items()}
    wanted = targets_to_look_up(quests)
    kinds = {p: (others or {}).get(p, PathKind.MISSING) for p in wanted}
    from landbot.quest.findings import sort_findings

    return [f.render() for f in sort_findings(check_quests(quests, kinds))]


def write_tree(root: Path, files: Mapping[str, str | bytes | None]) -> None:
    """Write (or, for None, delete) files below root."""
    for rel, content in files.items():
        target = root / rel
        if content is None:
            target.unlink()
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(as_bytes(content))


def rendered(findings: list[Finding]) -> list[str]:
    return [f.render() for f in findings]


@pytest.fixture(autouse=True)
def _isolated_git(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No developer config (hooks, signing, templates) reaches the test repositories."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Quest Test")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "quest@example.invalid")
    monkeypatch.setenv("GIT_COMMITTER_NAME", "Quest Test")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "quest@example.invalid")
    for key in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        monkeypatch.delenv(key, raising=False)
    # `landbot` (the merge driver command) must be found on PATH by git.
    monkeypatch.setenv("PATH", f"{Path(LANDBOT).parent}{os.pathsep}{os.environ['PATH']}")


class Repo:
    """A real git repository in a tmp dir."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.git("init", "-q", "-b", "main")

    def git(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            ["git", "-C", str(self.root), *args], capture_output=True, text=True, check=False
        )
        if check and done.returncode != 0:
            raise AssertionError(f"git {' '.join(args)} failed:\n{done.stdout}{done.stderr}")
        return done

    def write(self, files: Mapping[str, str | bytes | None]) -> None:
        write_tree(self.root, files)

    def commit(self, message: str, files: Mapping[str, str | bytes | None] | None = None) -> str:
        if files:
            self.write(files)
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", message)
        return self.git("rev-parse", "HEAD").stdout.strip()

    def landbot(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [LANDBOT, *args], cwd=self.root, capture_output=True, text=True, check=False
        )


@pytest.fixture
def repo(tmp_path: Path) -> Iterator[Repo]:
    path = tmp_path / "repo"
    path.mkdir()
    yield Repo(path)
