"""git: a rebase conflict."""

from __future__ import annotations

from landbot.triage.recognisers import git as rec

from .conftest import corpus, failures, kinds


def test_conflict_and_could_not_apply() -> None:
    # tests/triage/real/shell-lint/nvm-rebase-container-action-conflict.log, 263-272.
    got = kinds(
        rec.ECOSYSTEM, corpus("shell-lint/nvm-rebase-container-action-conflict.log", 263, 272)
    )
    assert got == {264: "git-conflict", 272: "git-apply"}


def test_a_diff_shows_each_file_its_first_hunk_and_changes() -> None:
    # tests/triage/real/python/open-webui-black-then-git-diff.log, 212-226 (`git diff
    # --exit-code` after black): the file, the hunk, the first four changed lines; the
    # unchanged context lines (217-219, 224-226) and `---`/`+++` (214-215) are not marked.
    log = "python/open-webui-black-then-git-diff.log"
    got = kinds(rec.ECOSYSTEM, corpus(log, 212, 226))
    assert got == {
        212: "diff-file",
        216: "diff-hunk",
        220: "diff-change",
        221: "diff-change",
        222: "diff-change",
        223: "diff-change",
    }
    # A diff is context, never an error line: the check's exit code says it failed.
    assert failures(rec.ECOSYSTEM, corpus(log, 212, 226)) == {}


def test_pre_commit_show_diff_on_failure() -> None:
    # tests/triage/real/cpp/godot-precommit-clang-format.log, 339-369; the hook's own
    # `- hook id:` lines (340-341) are not diff lines.
    got = kinds(rec.ECOSYSTEM, corpus("cpp/godot-precommit-clang-format.log", 339, 369))
    assert got == {358: "diff-file", 362: "diff-hunk", 366: "diff-change"}
