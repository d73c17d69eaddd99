"""The `push` webhook the sim sends on every branch created, moved or deleted.

Each payload is parsed by githubkit's generated webhook model (`WebhookPush`, from GitHub's
published webhook schema), and its field names are compared with two real payloads octokit
publishes (verbatim copies in tests/intake/fixtures, see the README there): a new branch with
a commit, and a deleted branch with an installation.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from githubkit.webhooks import parse_obj

from landbot.sim import FakeGitHub, git
from landbot.sim.state import Repository

FIXTURES = Path(__file__).parents[1] / "intake" / "fixtures"
ZERO = "0" * 40


def _real(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / name).read_text())
    return data


def _pushes(gh: FakeGitHub) -> list[dict[str, Any]]:
    return [d.payload for d in gh.deliveries_of("push")]


def _keys(value: Any) -> set[str]:
    return set(value) if isinstance(value, dict) else set()


def test_a_commit_on_the_default_branch_sends_a_push(gh: FakeGitHub, repo: Repository) -> None:
    app = gh.create_app("landbot")
    gh.install_app(app, "acme")
    before = gh.branch_sha(repo, "main")
    sha = gh.commit_file(repo, ".github/landbot.toml", "[policy]\n", author="maintainer")
    push = _pushes(gh)[-1]
    parsed = parse_obj("push", push)  # githubkit's WebhookPush: raises on a wrong shape
    assert parsed.ref == "refs/heads/main"
    assert (push["before"], push["after"]) == (before, sha)
    assert (push["created"], push["deleted"], push["forced"]) == (False, False, False)
    [commit] = push["commits"]
    assert commit["id"] == sha and push["head_commit"] == commit
    assert (commit["added"], commit["removed"], commit["modified"]) == (
        [".github/landbot.toml"],
        [],
        [],
    )
    assert commit["author"]["username"] == "maintainer"
    assert push["pusher"]["name"] == "maintainer" and push["sender"]["login"] == "maintainer"
    assert push["installation"]["id"] == gh.installation_for("acme/widgets").id  # type: ignore[union-attr]
    assert push["repository"]["default_branch"] == "main"
    # A change and a removal are told apart.
    gh.commit_file(repo, ".github/landbot.toml", "[policy]\nskip_label = 'x'\n")
    gh.commit_file(repo, ".github/landbot.toml", None)
    changed, removed = _pushes(gh)[-2:]
    assert changed["head_commit"]["modified"] == [".github/landbot.toml"]
    assert removed["head_commit"]["removed"] == [".github/landbot.toml"]


def test_field_names_match_real_payloads(gh: FakeGitHub, repo: Repository) -> None:
    app = gh.create_app("landbot")
    gh.install_app(app, "acme")
    gh.commit_file(repo, "NEW.md", "hi\n", branch="topic", author="maintainer")
    created = _pushes(gh)[-1]
    real_new = _real("push.with-new-branch.payload.json")
    assert created["created"] is True and created["before"] == ZERO
    # Every top-level field of the real payload is here (the sim adds none of its own but
    # `installation`, which the real new-branch example, sent to a repository hook, lacks).
    assert set(real_new) <= set(created) <= set(real_new) | {"installation"}
    assert _keys(created["head_commit"]) == _keys(real_new["head_commit"])
    assert _keys(created["head_commit"]["author"]) == _keys(real_new["head_commit"]["author"])
    assert _keys(created["pusher"]) == _keys(real_new["pusher"])
    assert _keys(real_new["repository"]) - _keys(created["repository"]) == set()
    # As GitHub sends them: epoch seconds in the push's repository, the web URL as `url`.
    assert isinstance(created["repository"]["created_at"], int)
    assert isinstance(created["repository"]["pushed_at"], int)
    assert created["repository"]["url"] == created["repository"]["html_url"]
    assert created["compare"].endswith(f"/commit/{created['after'][:12]}")
    parse_obj("push", created)
    parse_obj("push", real_new)  # the control: githubkit takes the real one too

    gh.sync()
    git.delete_ref(repo.require_git(), "refs/heads/topic")  # a push deleting the branch
    gh.sync()
    deleted = _pushes(gh)[-1]
    real_deleted = _real("push.with-installation.payload.json")
    assert (deleted["deleted"], deleted["after"], deleted["commits"]) == (True, ZERO, [])
    assert deleted["head_commit"] is None and real_deleted["head_commit"] is None
    assert set(deleted) == set(real_deleted)
    assert _keys(deleted["installation"]) == _keys(real_deleted["installation"])
    parse_obj("push", deleted)
    parse_obj("push", real_deleted)


def test_a_plain_git_push_and_a_force_push_are_noticed(
    gh: FakeGitHub, repo: Repository, tmp_path: Path
) -> None:
    git_dir = repo.require_git()
    main = gh.branch_sha(repo, "main")
    assert main is not None
    one = git.commit_files(
        git_dir,
        parent=main,
        files={"a.txt": "1\n"},
        message="one",
        author=git.Identity("Dev", "dev@example.com"),
    )
    git.update_ref(git_dir, "refs/heads/main", one)  # as `git push` would, behind the model
    gh.git_pusher = "landbot-bot"
    gh.sync()
    push = _pushes(gh)[-1]
    assert (push["before"], push["after"], push["forced"]) == (main, one, False)
    assert push["pusher"]["name"] == "landbot-bot"
    assert "username" not in push["head_commit"]["author"]  # an email of no account
    # A rewrite: main back to a sibling of `one` is a forced push listing the new commit.
    other = git.commit_files(
        git_dir,
        parent=main,
        files={"b.txt": "2\n"},
        message="other",
        author=git.Identity("Dev", "dev@example.com"),
    )
    git.update_ref(git_dir, "refs/heads/main", other)
    gh.sync()
    forced = _pushes(gh)[-1]
    assert forced["forced"] is True and [c["id"] for c in forced["commits"]] == [other]
    assert forced["head_commit"]["added"] == ["b.txt"]
    parse_obj("push", forced)


def test_the_merge_queue_pushes_are_sent_too(gh: FakeGitHub, repo: Repository) -> None:
    pr = gh.open_pull_request(repo, head="feature", files={"app.py": "ANSWER = 42\n"})
    gh.enqueue(pr, actor="maintainer")
    gh.run_queue(repo)
    refs = [(p["ref"], p["created"], p["deleted"]) for p in _pushes(gh)]
    group = next(r for r, created, _ in refs if "gh-readonly-queue" in r and created)
    assert (group, False, True) in refs  # the temporary branch, deleted after the merge
    assert ("refs/heads/main", False, False) in refs  # main fast-forwards to the group
    senders = {p["sender"]["login"] for p in _pushes(gh) if "gh-readonly-queue" in p["ref"]}
    assert senders == {"github-merge-queue[bot]"}
    for payload in _pushes(gh):
        parse_obj("push", payload)


def test_a_fork_s_push_is_not_the_base_repository_s(gh: FakeGitHub, repo: Repository) -> None:
    app = gh.create_app("landbot")
    gh.install_app(app, repos=[repo])
    gh.open_pull_request(repo, head="patch", files={"app.py": "ANSWER = 7\n"}, fork="outsider")
    assert {p["repository"]["full_name"] for p in _pushes(gh)} == {"acme/widgets"}
    # The control: a push to the base repository itself is sent.
    gh.commit_file(repo, "x.txt", "x\n")
    assert _pushes(gh)[-1]["head_commit"]["added"] == ["x.txt"]
