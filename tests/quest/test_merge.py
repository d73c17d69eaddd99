"""The quest merge driver: unit tests on bytes, then real `git merge` with the driver on."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from landbot.quest import DRIVER_COMMAND, install_merge_driver, merge_quest, self_command
from landbot.quest.merge import merge_sets, merge_text

from .conftest import LANDBOT, Repo


def quest(*items: str, title: str = "# [M] Quest", body: str = "Some prose.\n") -> bytes:
    required = "".join(f"- [{i}]({i}.md)\n" for i in items)
    return f"{title}\n\n{body}\n## Required\n\n{required}\n## Notes\n\nEnd.\n".encode()


# --- on bytes -------------------------------------------------------------------------------


def test_both_sides_add_to_required() -> None:
    result = merge_quest(quest("a"), quest("a", "b"), quest("a", "c"))
    assert result.clean
    assert result.data == quest("a", "b", "c")
    # Control: git's plain text merge of the same three versions conflicts.
    assert merge_text(quest("a"), quest("a", "b"), quest("a", "c")).conflicts == 1


def test_one_removes_while_the_other_adds() -> None:
    result = merge_quest(quest("a", "b"), quest("b"), quest("a", "b", "c"))
    assert (result.clean, result.data) == (True, quest("b", "c"))
    result = merge_quest(quest("a", "b"), quest("a", "b", "c"), quest("b"))
    assert (result.clean, result.data) == (True, quest("b", "c"))


def test_the_same_item_added_on_both_sides_is_kept_once() -> None:
    result = merge_quest(quest("a"), quest("a", "b"), quest("b", "a"))
    assert (result.clean, result.data) == (True, quest("a", "b"))


def test_theirs_additions_keep_their_place() -> None:
    result = merge_quest(quest("a", "z"), quest("a", "b", "z"), quest("0", "a", "m", "z"))
    assert result.data == quest("0", "a", "b", "m", "z")


def test_prose_and_required_merge_together() -> None:
    base = quest("a")
    ours = quest("a", "b", body="Ours changed the prose.\n")
    theirs = quest("a", "c", title="# [L] Quest")
    result = merge_quest(base, ours, theirs)
    assert result.clean
    assert result.data == quest(
        "a", "b", "c", title="# [L] Quest", body="Ours changed the prose.\n"
    )


def test_both_edit_the_same_prose_line_conflicts_and_required_still_merges() -> None:
    base = quest("a")
    ours = quest("a", "b", body="Ours says this.\n")
    theirs = quest("a", "c", body="Theirs says that.\n")
    result = merge_quest(base, ours, theirs)
    assert result.conflicts == 1
    text = result.data.decode()
    assert "<<<<<<< ours\nOurs says this.\n=======\nTheirs says that.\n>>>>>>> theirs\n" in text
    assert "## Required\n\n- [a](a.md)\n- [b](b.md)\n- [c](c.md)\n\n## Notes" in text


def test_crlf_files_stay_crlf() -> None:
    def crlf(data: bytes) -> bytes:
        return data.replace(b"\n", b"\r\n")

    result = merge_quest(crlf(quest("a")), crlf(quest("a", "b")), crlf(quest("a", "c")))
    assert (result.clean, result.data) == (True, crlf(quest("a", "b", "c")))


def test_a_section_deleted_on_one_side_keeps_the_others_additions() -> None:
    base = b"# [M] Q\n\n## Required\n\n- [a](a.md)\n"
    ours = b"# [M] Q\n"  # a was finished: ours dropped the whole section
    theirs = b"# [M] Q\n\n## Required\n\n- [a](a.md)\n- [b](b.md)\n"
    result = merge_quest(base, ours, theirs)
    assert (result.clean, result.data) == (True, b"# [M] Q\n\n## Required\n\n- [b](b.md)\n")
    # When nothing is left to require, the deletion stands.
    result = merge_quest(base, ours, base)
    assert (result.clean, result.data) == (True, ours)


def test_both_sides_add_a_section_where_there_was_none() -> None:
    base = b"# [M] Q\n\nText.\n"
    ours = b"# [M] Q\n\nText.\n\n## Required\n\n- [a](a.md)\n"
    theirs = b"# [M] Q\n\nText.\n\n## Required\n\n- [b](b.md)\n"
    result = merge_quest(base, ours, theirs)
    assert (result.clean, result.data) == (
        True,
        b"# [M] Q\n\nText.\n\n## Required\n\n- [a](a.md)\n- [b](b.md)\n",
    )


def test_an_emptied_list_and_an_addition() -> None:
    base = b"# [M] Q\n\n## Required\n\n- [a](a.md)\n\n## Notes\n"
    ours = b"# [M] Q\n\n## Required\n\n## Notes\n"
    theirs = b"# [M] Q\n\n## Required\n\n- [a](a.md)\n- [b](b.md)\n\n## Notes\n"
    result = merge_quest(base, ours, theirs)
    assert result.clean
    assert result.data == b"# [M] Q\n\n## Required\n\n- [b](b.md)\n## Notes\n"


def test_items_with_continuation_lines_and_loose_lists() -> None:
    base = b"# Q\n## Required\n\n- [a](a.md)\n  because a\n\n- [b](b.md)\n"
    ours = b"# Q\n## Required\n\n- [a](a.md)\n  because a\n\n- [b](b.md)\n\n- [c](c.md)\n"
    theirs = b"# Q\n## Required\n\n- [b](b.md)\n"
    result = merge_quest(base, ours, theirs)
    assert (result.clean, result.data) == (
        True,
        b"# Q\n## Required\n\n- [b](b.md)\n\n- [c](c.md)\n",
    )


def test_non_utf8_bytes_survive() -> None:
    base = quest("a").replace(b"prose", b"pr\xe9se")
    ours = quest("a", "b").replace(b"prose", b"pr\xe9se")
    theirs = quest("a", "c").replace(b"prose", b"pr\xe9se")
    result = merge_quest(base, ours, theirs)
    assert (result.clean, result.data) == (
        True,
        quest("a", "b", "c").replace(b"prose", b"pr\xe9se"),
    )


def test_a_placeholder_lookalike_in_the_file_is_left_alone() -> None:
    lookalike = b"LANDBOT-QUEST-REQUIRED-LIST-0000000000000000\n"
    result = merge_quest(
        quest("a") + lookalike, quest("a", "b") + lookalike, quest("a") + lookalike
    )
    assert result.data == quest("a", "b") + lookalike


def test_merge_sets() -> None:
    def items(*keys: str) -> list[tuple[str, str]]:
        return [(k, k) for k in keys]

    assert merge_sets(items("a", "b"), items("a", "b"), items("a", "b")) == items("a", "b")
    assert merge_sets(items("a"), items(), items("a", "b")) == items("b")
    assert merge_sets(items(), items("x"), items("y")) == items("x", "y")


# --- the command ----------------------------------------------------------------------------


def run_driver(
    tmp_path: Path, base: bytes, ours: bytes, theirs: bytes, *path: str
) -> tuple[int, bytes]:
    files = []
    for name, data in (("O", base), ("A", ours), ("B", theirs)):
        (tmp_path / name).write_bytes(data)
        files.append(str(tmp_path / name))
    done = subprocess.run(
        [LANDBOT, "quest", "merge-driver", *files, *path], capture_output=True, check=False
    )
    return done.returncode, (tmp_path / "A").read_bytes()


def test_the_driver_command_writes_the_result_to_ours(tmp_path: Path) -> None:
    code, data = run_driver(tmp_path, quest("a"), quest("a", "b"), quest("a", "c"), "quest/q.md")
    assert (code, data) == (0, quest("a", "b", "c"))
    # A path that is not a quest is merged as plain text: here, a conflict.
    code, data = run_driver(tmp_path, quest("a"), quest("a", "b"), quest("a", "c"), "docs/q.md")
    assert code == 1
    assert b"<<<<<<<" in data


def test_the_driver_command_fails_cleanly_on_a_missing_file(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            LANDBOT,
            "quest",
            "merge-driver",
            str(tmp_path / "x"),
            str(tmp_path / "y"),
            str(tmp_path / "z"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("landbot: merge driver cannot read")


# --- real git merges ------------------------------------------------------------------------


def diverge(repo: Repo, path: str, base: bytes, ours: bytes, theirs: bytes) -> None:
    """main holds `ours`, branch `theirs` holds `theirs`, both from `base`."""
    repo.commit("base", {path: base})
    repo.git("checkout", "-q", "-b", "theirs")
    repo.commit("theirs", {path: theirs})
    repo.git("checkout", "-q", "main")
    repo.commit("ours", {path: ours})


@pytest.fixture
def driven(repo: Repo) -> Repo:
    install_merge_driver(repo.root)
    repo.commit("enable the quest merge driver")
    return repo


@pytest.mark.parametrize("path", ["quest/m0/q.md", "quest/README.md", "quest/it's a quest.md"])
def test_git_merge_both_add_to_required(driven: Repo, path: str) -> None:
    diverge(driven, path, quest("a"), quest("a", "b"), quest("a", "c"))
    done = driven.git("merge", "--no-edit", "theirs", check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (driven.root / path).read_bytes() == quest("a", "b", "c")


def test_the_driver_through_this_interpreter_needs_no_landbot_on_path(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_merge_driver(repo.root, command=self_command())
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    diverge(repo, "quest/q.md", quest("a"), quest("a", "b"), quest("a", "c"))
    done = repo.git("merge", "--no-edit", "theirs", check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (repo.root / "quest/q.md").read_bytes() == quest("a", "b", "c")


def test_git_merge_without_the_driver_conflicts(repo: Repo) -> None:
    # Control for the test above: the same histories, no driver.
    diverge(repo, "quest/m0/q.md", quest("a"), quest("a", "b"), quest("a", "c"))
    assert repo.git("merge", "--no-edit", "theirs", check=False).returncode == 1


def test_git_merge_one_removes_one_adds(driven: Repo) -> None:
    diverge(driven, "quest/q.md", quest("a", "b"), quest("b"), quest("a", "b", "c"))
    assert driven.git("merge", "--no-edit", "theirs", check=False).returncode == 0
    assert (driven.root / "quest/q.md").read_bytes() == quest("b", "c")


def test_git_merge_same_prose_line_conflicts(driven: Repo) -> None:
    diverge(
        driven,
        "quest/q.md",
        quest("a"),
        quest("a", "b", body="Ours says this.\n"),
        quest("a", "c", body="Theirs says that.\n"),
    )
    done = driven.git("merge", "--no-edit", "theirs", check=False)
    assert done.returncode != 0
    assert "CONFLICT (content): Merge conflict in quest/q.md" in done.stdout
    text = (driven.root / "quest/q.md").read_text()
    assert "<<<<<<< ours\nOurs says this.\n=======\nTheirs says that.\n>>>>>>> theirs\n" in text
    assert "- [a](a.md)\n- [b](b.md)\n- [c](c.md)\n" in text
    assert "quest/q.md" in driven.git("diff", "--name-only", "--diff-filter=U").stdout


def test_git_leaves_a_non_quest_file_to_itself(repo: Repo, tmp_path: Path) -> None:
    log = tmp_path / "driver.log"
    wrapper = tmp_path / "driver.sh"
    wrapper.write_text(f'#!/bin/sh\necho "$4" >> {log}\nexec {LANDBOT} quest merge-driver "$@"\n')
    wrapper.chmod(0o755)
    install_merge_driver(repo.root, command=f"{wrapper} %O %A %B %P")
    repo.commit("enable", {"docs/plan.md": quest("a"), "quest/q.md": quest("a")})
    repo.git("checkout", "-q", "-b", "theirs")
    repo.commit("theirs", {"docs/plan.md": quest("a", "c"), "quest/q.md": quest("a", "c")})
    repo.git("checkout", "-q", "main")
    repo.commit("ours", {"docs/plan.md": quest("a", "b"), "quest/q.md": quest("a", "b")})
    done = repo.git("merge", "--no-edit", "theirs", check=False)
    assert done.returncode == 1
    # git called the driver for the quest only, and merged docs/plan.md itself (a conflict).
    assert log.read_text() == "quest/q.md\n"
    assert repo.git("diff", "--name-only", "--diff-filter=U").stdout == "docs/plan.md\n"
    assert (repo.root / "quest/q.md").read_bytes() == quest("a", "b", "c")


def test_install_is_idempotent(repo: Repo) -> None:
    (repo.root / ".gitattributes").write_text("*.png binary")  # no final newline
    changes = install_merge_driver(repo.root)
    assert len(changes) == 3
    assert (repo.root / ".gitattributes").read_text() == "*.png binary\nquest/**/*.md merge=quest\n"
    assert repo.git("config", "merge.quest.driver").stdout.strip() == DRIVER_COMMAND
    assert DRIVER_COMMAND == "landbot quest merge-driver %O %A %B %P"
    assert install_merge_driver(repo.root) == []
    assert (repo.root / ".gitattributes").read_text() == "*.png binary\nquest/**/*.md merge=quest\n"
    # The attribute applies to quests at any depth, the root included, and to nothing else.
    for path, expected in (
        ("quest/README.md", "quest"),
        ("quest/a/b/c.md", "quest"),
        ("quest/a.txt", "unspecified"),
        ("docs/a.md", "unspecified"),
    ):
        out = repo.git("check-attr", "merge", "--", path).stdout
        assert out.strip().endswith(f": merge: {expected}"), out


def test_install_through_the_command(repo: Repo) -> None:
    done = repo.landbot("quest", "install-merge-driver")
    assert done.returncode == 0
    assert "merge=quest" in done.stdout
    done = repo.landbot("quest", "install-merge-driver", "--root", str(repo.root))
    assert (done.returncode, done.stdout) == (
        0,
        "the quest merge driver is already installed; nothing changed\n",
    )
