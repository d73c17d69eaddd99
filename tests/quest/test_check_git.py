"""`landbot quest check` in real git repositories: the spec's story, --base, --branch, exits."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from landbot.errors import LandbotError
from landbot.quest import check_tree, failing
from landbot.quest.rules import PathKind
from landbot.quest.source import Revision, WorkTree

from .conftest import LANDBOT, Repo, rendered

# ./scripts/test --fast leaves this module out: its tests start processes (landbot, git,
# the sandbox, servers) and take seconds each.
pytestmark = pytest.mark.slow

STORY = {
    "quest/README.md": "# m0 plan\n",
    "quest/m0/opencode-sdk.md": (
        "# [M] Move the runner to the opencode 2.x SDK\n\n"
        "## Required\n\n- [Live sandbox test](kix/sandbox/live-test.md)\n"
    ),
    "quest/m0/kix/sandbox/README.md": (
        "# Sandbox every runner job\n\n## Required\n\n- [Live test](live-test.md)\n"
    ),
    "quest/m0/kix/sandbox/live-test.md": "# [S] Check the sandbox boundary in CI\n",
}
EXPECTED = "quest: quest/m0/kix/sandbox/README.md: quest title must be '# [XS|S|M|L|XL] Title'"


def finish_live_test(repo: Repo) -> None:
    """What the pull request does: delete the finished quest and the two links to it."""
    repo.git("checkout", "-q", "-b", "quest/m0/kix/sandbox/live-test")
    repo.write(
        {
            "quest/m0/kix/sandbox/live-test.md": None,
            "quest/m0/opencode-sdk.md": "# [M] Move the runner to the opencode 2.x SDK\n",
            "quest/m0/kix/sandbox/README.md": "# Sandbox every runner job\n",
        }
    )
    repo.commit("Finish the live sandbox test")


def test_the_story_in_python(repo: Repo) -> None:
    repo.commit("plan", STORY)
    assert check_tree(repo.root) == []
    finish_live_test(repo)
    branch = "quest/m0/kix/sandbox/live-test"
    findings = check_tree(repo.root, base="main", branch=branch)
    assert rendered(findings) == [EXPECTED]
    assert failing(findings) == findings
    repo.write({"quest/m0/kix/sandbox/README.md": "# [S] Sandbox every runner job\n"})
    assert check_tree(repo.root, base="main", branch=branch) == []


def test_the_story_through_the_landbot_command(repo: Repo) -> None:
    repo.commit("plan", STORY)
    finish_live_test(repo)
    # The branch comes from the checkout; the base is read with git.
    done = repo.landbot("quest", "check", "--base", "main")
    assert (done.returncode, done.stderr, done.stdout) == (1, EXPECTED + "\n", "")
    # The same from another directory, with --root and --branch given.
    done = subprocess.run(
        [
            LANDBOT,
            "quest",
            "check",
            "--root",
            str(repo.root),
            "--base",
            "main",
            "--branch",
            "quest/m0/kix/sandbox/live-test",
        ],
        cwd="/",
        capture_output=True,
        text=True,
        check=False,
    )
    assert (done.returncode, done.stderr) == (1, EXPECTED + "\n")
    repo.commit("Size the parent", {"quest/m0/kix/sandbox/README.md": "# [S] Sandbox jobs\n"})
    done = repo.landbot("quest", "check", "--base", "main")
    assert (done.returncode, done.stderr, done.stdout) == (0, "", "")


def test_base_is_read_without_touching_the_work_tree_or_index(repo: Repo) -> None:
    repo.commit("plan", STORY)
    finish_live_test(repo)
    repo.write({"quest/m0/new.md": "# [S] Untracked, on disk\n", "notes.txt": "dirty\n"})
    repo.git("add", "notes.txt")
    before = (repo.git("status", "--porcelain").stdout, repo.git("rev-parse", "HEAD").stdout)
    index = (repo.root / ".git" / "index").read_bytes()
    check_tree(repo.root, base="main")
    after = (repo.git("status", "--porcelain").stdout, repo.git("rev-parse", "HEAD").stdout)
    assert before == after
    assert (repo.root / ".git" / "index").read_bytes() == index


def test_the_work_tree_is_checked_as_it_is_on_disk(repo: Repo) -> None:
    repo.commit("plan", STORY)
    # Uncommitted and untracked changes count; the committed tree does not.
    repo.write({"quest/m0/draft.md": "# draft without size\n"})
    assert rendered(check_tree(repo.root)) == [
        "quest: quest/m0/draft.md: quest title must be '# [XS|S|M|L|XL] Title'"
    ]


def test_findings_already_on_the_base_do_not_fail(repo: Repo) -> None:
    repo.commit("plan", {**STORY, "quest/m0/old.md": "# Old, never sized\n"})
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit("touch", {"quest/m0/opencode-sdk.md": STORY["quest/m0/opencode-sdk.md"] + "x\n"})
    old = (
        "quest: quest/m0/old.md: (already on the base) quest title must be '# [XS|S|M|L|XL] Title'"
    )
    done = repo.landbot("quest", "check", "--base", "main")
    assert (done.returncode, done.stderr) == (0, old + "\n")
    # Control: without --base the same finding fails the check.
    done = repo.landbot("quest", "check")
    assert done.returncode == 1
    # Control: a new finding in the change fails, and the old one is still marked.
    repo.write({"quest/m0/kix/sandbox/live-test.md": "# [XXL] Too big\n"})
    done = repo.landbot("quest", "check", "--base", "main")
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "quest: quest/m0/kix/sandbox/live-test.md: quest title must be '# [XS|S|M|L|XL] Title'",
        old,
    ]


def test_base_findings_match_by_file_and_message_not_line(repo: Repo) -> None:
    repo.commit("plan", {"quest/a.md": "# [S] A\n## Required\n- [gone](gone.md)\n"})
    repo.write({"quest/a.md": "# [S] A\n\nMore words.\n\n## Required\n- [gone](gone.md)\n"})
    findings = check_tree(repo.root, base="main")
    assert [(f.line, f.on_base) for f in findings] == [(6, True)]


def test_the_branch_rule(repo: Repo) -> None:
    repo.commit("plan", STORY)
    cases = {
        "quest/m0/opencode-sdk": 0,  # quest/m0/opencode-sdk.md
        "quest/m0/kix/sandbox": 0,  # quest/m0/kix/sandbox/README.md
        "quest/m0/kix": 1,  # a grouping folder is no quest
        "quest/m0/nothing-here": 1,
        "feature/anything": 0,  # not a quest branch
    }
    for branch, code in cases.items():
        done = repo.landbot("quest", "check", "--base", "main", "--branch", branch)
        assert done.returncode == code, branch
        expected = f"quest: {branch}: branch {branch} names no quest on the base\n"
        assert done.stderr == (expected if code else ""), branch
    # A quest that exists only on the branch is not on the base.
    repo.git("checkout", "-q", "-b", "quest/m0/brand-new")
    repo.commit("new quest", {"quest/m0/brand-new.md": "# [S] New\n"})
    done = repo.landbot("quest", "check", "--base", "main")
    assert done.returncode == 1
    assert (
        done.stderr
        == "quest: quest/m0/brand-new: branch quest/m0/brand-new names no quest on the base\n"
    )
    # Without --base there is no base to compare with: the branch rule does not apply.
    assert repo.landbot("quest", "check").returncode == 0


def test_json_output(repo: Repo) -> None:
    repo.commit("plan", {**STORY, "quest/m0/old.md": "# Old\n"})
    repo.write({"quest/m0/new.md": "# New\n"})
    done = repo.landbot("quest", "check", "--base", "main", "--json", "--branch", "quest/m0/old")
    assert done.returncode == 1
    assert done.stderr == ""
    message = "quest title must be '# [XS|S|M|L|XL] Title'"
    assert json.loads(done.stdout) == [
        {"path": "quest/m0/new.md", "line": 1, "message": message, "on_base": False},
        {"path": "quest/m0/old.md", "line": 1, "message": message, "on_base": True},
    ]
    repo.write({"quest/m0/new.md": None, "quest/m0/old.md": None})
    done = repo.landbot("quest", "check", "--json")
    assert (done.returncode, json.loads(done.stdout)) == (0, [])


def test_a_repository_without_a_quest_tree_passes(repo: Repo) -> None:
    repo.commit("code", {"src/main.py": "print()\n"})
    done = repo.landbot("quest", "check", "--base", "main")
    assert (done.returncode, done.stderr) == (0, "")


def test_non_utf8_content_and_names_are_findings_not_crashes(repo: Repo) -> None:
    repo.commit("plan", {"quest/a.md": b"# [S] Caf\xe9\n"})
    name = os.fsdecode(b"quest/b\xe9.md")
    (repo.root / name).write_bytes(b"# bad\n")
    done = repo.landbot("quest", "check", "--base", "main")
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "quest: quest/a.md: (already on the base) quest is not UTF-8 text: save it as UTF-8",
        "quest: quest/b\\xe9.md: quest title must be '# [XS|S|M|L|XL] Title'",
    ]


def test_revision_kinds_of_other_paths(repo: Repo) -> None:
    repo.commit("plan", {"quest/a.md": "# [S] A\n", "quest/notes.txt": "n\n", "docs/d.md": "d\n"})
    kinds = Revision(repo.root, "main").kinds(["quest/notes.txt", "docs", "docs/d.md", "nope.md"])
    assert kinds == {
        "quest/notes.txt": PathKind.FILE,
        "docs": PathKind.DIRECTORY,
        "docs/d.md": PathKind.FILE,
        "nope.md": PathKind.MISSING,
    }
    # Through the rules: a link to a file at base that is not a quest.
    repo.commit("link", {"quest/a.md": "# [S] A\n## Required\n- [n](notes.txt)\n"})
    assert rendered(check_tree(repo.root, base="HEAD")) == [
        "quest: quest/a.md: (already on the base) required link notes.txt is not a quest"
    ]


# --- exit 2: usage and environment errors ---------------------------------------------------


def test_an_unknown_revision_exits_2_with_one_line(repo: Repo) -> None:
    repo.commit("plan", STORY)
    for rev in ("no-such-branch", "--help-me", "deadbeef" * 5):
        done = repo.landbot("quest", "check", "--base", rev)
        assert done.returncode == 2, rev
        assert len(done.stderr.splitlines()) == 1
        assert "unknown revision" in done.stderr
    assert repo.landbot("quest", "check", "--base", "main").returncode == 0  # control


def test_no_repository_exits_2(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    done = subprocess.run(
        [LANDBOT, "quest", "check"], cwd=plain, capture_output=True, text=True, check=False
    )
    assert done.returncode == 2
    assert done.stderr.startswith("landbot: no git repository at")
    done = subprocess.run(
        [LANDBOT, "quest", "check", "--root", str(plain), "--base", "main"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert "no git repository" in done.stderr
    done = subprocess.run(
        [LANDBOT, "quest", "check", "--root", str(tmp_path / "missing")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert (done.returncode, len(done.stderr.splitlines())) == (2, 1)


def test_an_unreadable_quest_exits_2(repo: Repo) -> None:
    repo.commit("plan", STORY)
    (repo.root / "quest" / "broken.md").symlink_to("does-not-exist.md")
    done = repo.landbot("quest", "check")
    assert done.returncode == 2
    assert (
        done.stderr
        == "landbot: cannot read quest/broken.md: not a regular file; restore or remove it\n"
    )
    with pytest.raises(LandbotError):
        check_tree(repo.root)
    # A folder named like a quest is not one, and is not an error.
    (repo.root / "quest" / "broken.md").unlink()
    (repo.root / "quest" / "folder.md").mkdir()
    assert repo.landbot("quest", "check").returncode == 0


def test_a_large_quest_is_read_whole(repo: Repo) -> None:
    # Bigger than one read: the link at the very end must still be seen, on disk and at base.
    body = "".join(f"Line {n} of a long plan.\n" for n in range(20_000))
    text = f"# [XL] Long\n\n{body}\n## Required\n\n- [gone](gone.md)\n"
    assert len(text) > 4 * 65536
    repo.commit("plan", {"quest/long.md": text})
    assert rendered(check_tree(repo.root, base="main")) == [
        "quest: quest/long.md: (already on the base) required quest gone.md does not exist"
    ]


def test_the_quest_stage_imports_no_heavy_library() -> None:
    # It runs in other repositories' CI and before every push: the standard library only.
    code = "import sys, landbot.quest; print(' '.join(sorted(sys.modules)))"
    done = subprocess.run(
        [str(Path(LANDBOT).with_name("python")), "-c", code],
        capture_output=True,
        text=True,
        check=True,
    )
    loaded = {name.split(".")[0] for name in done.stdout.split()}
    heavy = {"typer", "click", "rich", "pydantic", "githubkit", "httpx", "sqlalchemy", "yaml"}
    assert "landbot" in loaded
    assert not loaded & heavy


def test_a_quest_folder_that_is_a_link_is_not_followed(repo: Repo, tmp_path: Path) -> None:
    elsewhere = tmp_path / "host"
    elsewhere.mkdir()
    (elsewhere / "host-only-name.md").write_text("# [S] Broken title without a link\n")
    # The control: the same folder, really at quest/, is read (its file is named).
    real = tmp_path / "copy"
    (real / "quest").mkdir(parents=True)
    (real / "quest" / "host-only-name.md").write_text("# [S] Broken title without a link\n")
    assert "quest/host-only-name.md" in WorkTree(real).files
    shutil.rmtree(repo.root / "quest", ignore_errors=True)
    (repo.root / "quest").symlink_to(elsewhere)
    with pytest.raises(LandbotError, match="quest is a symbolic link"):
        check_tree(repo.root)
    (repo.root / "quest").unlink()
    (repo.root / "quest").mkdir()
    (repo.root / "quest" / "link").symlink_to(elsewhere)
    with pytest.raises(LandbotError, match="quest/link: not a regular file"):
        check_tree(repo.root)
