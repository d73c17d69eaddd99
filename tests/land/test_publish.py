"""Publishing a fix: the host-side rules, the leased push, auto-merge, the fork hand-back.

Real git: the simulated GitHub's bare repositories are the remotes (file:// URLs), the job's
work tree comes from `Workspaces`, and the "agent" commits in it as the sandbox uid. GitHub
itself is the simulated one, over HTTP, driven through the real `GitHubClient`.
"""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from landbot.config import GitHubSettings, Settings
from landbot.git.workspace import Workspace, Workspaces, mounts_under
from landbot.github.client import GitHubClient
from landbot.github.models import PullState
from landbot.land.publish import (
    Limits,
    PublishOptions,
    PublishResult,
    bound_text,
    details_block,
    glob_regex,
    protected_changes,
    publish,
)
from landbot.sim import CheckScenario, FakeGitHub, FakeGitHubServer
from landbot.sim.state import PullRequest, Repository

from ..conftest import require_sandbox

# ./scripts/test --fast leaves this module out: its tests start processes (landbot, git,
# the sandbox, servers) and take seconds each.
pytestmark = pytest.mark.slow

UID = GID = 65534
QUEST_ROOT = "# Widgets\n"
QUEST_SHIP = "# [S] Ship it\n\n## Required\n\n- [Design](design.md)\n"
QUEST_DESIGN = "# [M] Design\n"
FILES: dict[str, str | bytes | None] = {
    "README.md": "# widgets\n",
    "app.py": "ANSWER = 41\n",
    ".github/workflows/ci.yml": "on: [pull_request, merge_group]\njobs: {}\n",
}


@pytest.fixture(autouse=True)
def _isolated_git(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path_factory.mktemp("home")))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")


@dataclass
class World:
    root: Path
    gh: FakeGitHub
    server: FakeGitHubServer
    client: GitHubClient
    token: str
    workspaces: Workspaces
    options: PublishOptions

    def repo(
        self, name: str = "acme/widgets", files: Mapping[str, str | bytes | None] = FILES
    ) -> Repository:
        repo = self.gh.create_repo(name, files=dict(files))
        self.gh.add_collaborator(repo, "maintainer", "write")
        return repo

    def state(self, repo: Repository, pr: PullRequest) -> PullState:
        return self.client.pull_request(repo.full_name, pr.number)

    def job(
        self, repo: Repository, pr: PullRequest, *, merge: bool = False
    ) -> AbstractContextManager[Workspace]:
        return self.workspaces.job(
            repo.full_name,
            pr.number,
            pr.head_sha,
            pr.base_ref,
            head_ref=pr.head_ref,
            merge=merge,
            token=self.token,
        )

    def branch(self, repo: Repository, branch: str) -> str | None:
        return self.gh.branch_sha(repo, branch)


@pytest.fixture
def world() -> Iterator[World]:
    root = Path(tempfile.mkdtemp(prefix="landbot-pub-", dir="/tmp"))
    os.chmod(root, 0o755)
    gh = FakeGitHub(root / "github")
    token = gh.create_token("maintainer")
    try:
        with FakeGitHubServer(gh) as server:
            settings = GitHubSettings(api_url=server.url, token=token, git_url=gh.git_url)
            with GitHubClient(settings, mutation_gap=0) as client:
                yield World(
                    root=root,
                    gh=gh,
                    server=server,
                    client=client,
                    token=token,
                    workspaces=Workspaces(root / "state", git_url=gh.git_url, uid=UID, gid=GID),
                    options=PublishOptions.from_settings(Settings(github=settings)),
                )
    finally:
        for point in mounts_under(root):  # a test that failed inside a job
            subprocess.run(["umount", "-l", str(point)], capture_output=True)
        shutil.rmtree(root, ignore_errors=True)


def pending_checks(world: World, repo: Repository) -> None:
    """Checks that never finish: an armed auto-merge stays armed (and visible) for the test."""
    world.gh.set_checks(repo, CheckScenario.pending())


def as_agent(ws: Workspace, *argv: str) -> subprocess.CompletedProcess[str]:
    """A command in the work tree as the sandbox uid (the agent's view, unconfined)."""
    done = subprocess.run(
        ["setpriv", f"--reuid={UID}", f"--regid={GID}", "--clear-groups", "--", *argv],
        cwd=ws.path,
        env={"PATH": "/usr/bin:/bin", "HOME": "/tmp", "GIT_CONFIG_NOSYSTEM": "1"},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    return done


def agent_commit(ws: Workspace, files: Mapping[str, str | None], message: str = "Fix") -> str:
    for rel, content in files.items():
        target = ws.path / rel
        if content is None:
            target.unlink()
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)
        for p in [target, *target.parents]:
            if p == ws.path:
                break
            os.chown(p, UID, GID)
    as_agent(ws, "git", "add", "-A")
    as_agent(ws, "git", "commit", "-q", "-m", message)
    return as_agent(ws, "git", "rev-parse", "HEAD").stdout.strip()


def only_refusal(result: PublishResult, *needles: str) -> None:
    assert result.pushed_sha is None and result.refused is not None, result
    for needle in needles:
        assert needle in result.refused, result.refused


# --- the pure rules -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        (".github/workflows/**", ".github/workflows/ci.yml", True),
        (".github/workflows/**", ".github/workflows/sub/x.yml", True),
        (".github/workflows/**", ".github/workflowsX/ci.yml", False),
        (".github/workflows/**", "src/.github/workflows/ci.yml", False),
        (".github/workflows/", ".github/workflows/ci.yml", True),
        ("*.lock", "poetry.lock", True),
        ("*.lock", "sub/poetry.lock", False),
        ("**/*.lock", "sub/poetry.lock", True),
        ("**/*.lock", "poetry.lock", True),
        ("CODEOWNERS", "CODEOWNERS", True),
        ("CODEOWNERS", "docs/CODEOWNERS", False),
        ("src/?.py", "src/a.py", True),
        ("src/?.py", "src/ab.py", False),
        ("src/[ab].py", "src/b.py", True),
        ("src/[!ab].py", "src/b.py", False),
        ("a+b(c).txt", "a+b(c).txt", True),
    ],
)
def test_protected_globs(pattern: str, path: str, matches: bool) -> None:
    assert bool(glob_regex(pattern).match(path)) is matches


W = ".github/workflows/ci.yml"
P = (".github/workflows/**",)


def test_protected_changes_without_a_merge() -> None:
    head = {W: "100644 a"}
    assert protected_changes(P, head, {W: "100644 a"}) == []
    assert protected_changes(P, head, {W: "100644 b"}) == [(W, P[0], "the fix changes it")]
    assert protected_changes(P, head, {W: "100755 a"}) == [(W, P[0], "the fix changes it")]
    assert protected_changes(P, head, {}) == [(W, P[0], "the fix changes it")]  # deleted
    added = ".github/workflows/new.yml"
    assert protected_changes(P, head, {W: "100644 a", added: "100644 x"})[0][0] == added
    assert protected_changes(P, {"app.py": "1"}, {"app.py": "2"}) == []


@pytest.mark.parametrize(
    ("mb", "head", "base", "new", "why"),
    [
        ("a", "a", "b", "b", None),  # only the base changed it: the base's version
        ("a", "a", "b", "a", "the fix changes it"),  # ...dropping the base's change is not
        ("a", "b", "a", "b", None),  # only the PR changed it: the PR's version
        ("a", "b", "a", "a", "the fix changes it"),
        ("a", "b", "b", "b", None),  # both the same way
        ("a", "b", "c", "b", "both the pull request and the base change it"),
        ("a", "b", "c", "c", "both the pull request and the base change it"),
        ("a", "a", "a", "z", "the fix changes it"),
        (None, None, "b", "b", None),  # the base added it
        (None, None, "b", None, "the fix changes it"),
    ],
)
def test_protected_changes_with_the_base_merged(
    mb: str | None, head: str | None, base: str | None, new: str | None, why: str | None
) -> None:
    def entries(oid: str | None) -> dict[str, str]:
        return {} if oid is None else {W: f"100644 {oid}"}

    got = protected_changes(P, entries(head), entries(new), entries(base), entries(mb))
    assert got == ([] if why is None else [(W, P[0], why)])


def test_bounded_patch_and_details_block() -> None:
    text = "".join(f"line {i}\n" for i in range(1000))
    cut = bound_text(text, 500)
    assert len(cut) <= 500 and cut.startswith("line 0\n") and "characters not shown" in cut
    assert bound_text("short\n", 500) == "short\n"
    block = details_block("``` not a fence\n</details> neither\n", "The fix")
    assert block.startswith("<details><summary>The fix</summary>")
    assert "\n````diff\n" in block and block.endswith("\n````\n\n</details>")


# --- publishing -----------------------------------------------------------------------


def test_a_good_fix_is_pushed_and_auto_merge_armed(world: World) -> None:
    repo = world.repo()
    pending_checks(world, repo)
    pr = world.gh.open_pull_request(repo, head="feat", files={"app.py": "ANSWER = 42\n"})
    with world.job(repo, pr) as ws:
        new = agent_commit(ws, {"app.py": "ANSWER = 42  # fixed\n"})
        result = publish(world.client, ws, world.state(repo, pr), world.options)
    assert result.refused is None, result.refused
    assert result.pushed_sha == new and result.commits == (new,)
    assert result.auto_merge_armed and result.auto_merge_error is None
    assert world.branch(repo, "feat") == new  # the remote branch moved to the fix
    after = world.gh.pull(repo, pr.number)
    assert after.head_sha == new and after.auto_merge is not None
    assert world.server.requests.count(operation="EnablePullRequestAutoMerge") == 1
    # The job ref used while publishing is gone from the mirror.
    refs = subprocess.run(
        ["git", f"--git-dir={ws.mirror}", "for-each-ref", "refs/landbot/"],
        capture_output=True,
        text=True,
    ).stdout
    assert refs == ""


def test_a_fix_touching_a_workflow_is_refused_and_the_same_fix_elsewhere_is_pushed(
    world: World,
) -> None:
    repo = world.repo()
    pending_checks(world, repo)
    pr = world.gh.open_pull_request(repo, head="feat", files={"app.py": "ANSWER = 42\n"})
    change = "on: [pull_request, merge_group]\njobs: {steal: {runs-on: x}}\n"
    with world.job(repo, pr) as ws:
        agent_commit(ws, {".github/workflows/ci.yml": change})
        result = publish(world.client, ws, world.state(repo, pr), world.options)
    only_refusal(result, ".github/workflows/ci.yml", "protected path", ".github/workflows/**")
    assert world.branch(repo, "feat") == pr.head_sha
    assert world.gh.pull(repo, pr.number).auto_merge is None

    # A commit that changes the workflow and a later one that puts it back: still refused.
    with world.job(repo, pr) as ws:
        agent_commit(ws, {".github/workflows/ci.yml": change})
        agent_commit(ws, {".github/workflows/ci.yml": FILES[".github/workflows/ci.yml"]})  # type: ignore[dict-item]
        result = publish(world.client, ws, world.state(repo, pr), world.options)
    only_refusal(result, "changes .github/workflows/ci.yml")

    # The control: the same change in an unprotected path is pushed.
    with world.job(repo, pr) as ws:
        new = agent_commit(ws, {"ci/ci.yml": change})
        result = publish(world.client, ws, world.state(repo, pr), world.options)
    assert result.pushed_sha == new and world.branch(repo, "feat") == new


def test_a_commit_that_does_not_descend_from_the_head_is_refused(world: World) -> None:
    repo = world.repo()
    pr = world.gh.open_pull_request(repo, head="feat", files={"app.py": "ANSWER = 42\n"})
    with world.job(repo, pr) as ws:
        as_agent(ws, "git", "reset", "-q", "--hard", "origin/main")
        agent_commit(ws, {"app.py": "ANSWER = 42\n"}, "Rewrite the PR")
        result = publish(world.client, ws, world.state(repo, pr), world.options)
    only_refusal(result, "does not descend from the pull request's head", pr.head_sha[:12])
    assert world.branch(repo, "feat") == pr.head_sha


def test_a_job_without_a_commit_publishes_nothing(world: World) -> None:
    repo = world.repo()
    pr = world.gh.open_pull_request(repo, head="feat", files={"app.py": "ANSWER = 42\n"})
    with world.job(repo, pr) as ws:
        (ws.path / "app.py").write_text("uncommitted\n")
        result = publish(world.client, ws, world.state(repo, pr), world.options)
    only_refusal(result, "made no commit")


def test_a_head_that_moved_during_the_job_is_not_overwritten(world: World) -> None:
    repo = world.repo()
    pending_checks(world, repo)
    pr = world.gh.open_pull_request(repo, head="feat", files={"app.py": "ANSWER = 42\n"})
    before = world.state(repo, pr)  # read before the job, as the job runner does
    with world.job(repo, pr) as ws:
        fix = agent_commit(ws, {"app.py": "ANSWER = 42  # fixed\n"})
        author = world.gh.push(repo, "feat", {"README.md": "# the author pushed\n"})
        # The PR state is stale, so only the lease stands between the fix and the push.
        result = publish(world.client, ws, before, world.options)
        only_refusal(result, "moved during the job", "feat")
        assert world.branch(repo, "feat") == author
        # With a fresh read the move is seen before any push.
        fresh = publish(world.client, ws, world.state(repo, pr), world.options)
        only_refusal(fresh, "head moved during the job")
    assert world.branch(repo, "feat") == author
    assert fix != author and world.gh.pull(repo, pr.number).auto_merge is None
    # The control is test_a_good_fix_is_pushed_and_auto_merge_armed: same flow, no move.


def test_a_quest_check_failure_is_refused(world: World) -> None:
    files = {
        **FILES,
        "quest/README.md": QUEST_ROOT,
        "quest/ship.md": QUEST_SHIP,
        "quest/design.md": QUEST_DESIGN,
    }
    repo = world.repo(files=files)
    pending_checks(world, repo)
    pr = world.gh.open_pull_request(repo, head="feat", files={"app.py": "ANSWER = 42\n"})
    with world.job(repo, pr) as ws:
        # Finishing a quest but leaving the link to it: a quest rule breaks.
        agent_commit(ws, {"quest/design.md": None})
        result = publish(world.client, ws, world.state(repo, pr), world.options)
    only_refusal(result, "quest check", "quest/ship.md", "required quest design.md does not exist")
    assert world.branch(repo, "feat") == pr.head_sha
    assert not list(ws.mirror.glob("worktrees/*"))  # the check's checkout is gone

    # The control: in the same repository, a fix that keeps the quest tree right is pushed.
    with world.job(repo, pr) as ws:
        new = agent_commit(ws, {"app.py": "ANSWER = 42  # fixed\n"})
        result = publish(world.client, ws, world.state(repo, pr), world.options)
    assert result.pushed_sha == new, result.refused


def test_a_fork_without_maintainer_edits_gets_a_patch(world: World) -> None:
    repo = world.repo()
    pr = world.gh.open_pull_request(
        repo,
        head="feat",
        files={"app.py": "ANSWER = 42\n"},
        fork="stranger",
        author="stranger",
        maintainer_can_modify=False,
    )
    fork = world.gh.repo("stranger/widgets")
    with world.job(repo, pr) as ws:
        new = agent_commit(ws, {"app.py": "ANSWER = 42  # fixed\n"}, "Fix the answer")
        result = publish(world.client, ws, world.state(repo, pr), world.options)
    assert result.pushed_sha is None and result.patch is not None
    assert result.refused is not None and "does not allow edits from maintainers" in result.refused
    assert world.branch(fork, "feat") == pr.head_sha  # nothing pushed to the fork
    assert world.server.requests.count(operation="EnablePullRequestAutoMerge") == 0
    assert "Subject: [PATCH] Fix the answer" in result.patch
    assert "+ANSWER = 42  # fixed" in result.patch
    assert result.details().startswith("<details>")
    # The patch is the fix: `git am` on the PR head gives the same tree.
    check = world.root / "am"
    subprocess.run(["git", "clone", "-q", str(fork.git_dir), str(check)], check=True)
    subprocess.run(["git", "checkout", "-q", "--detach", pr.head_sha], cwd=check, check=True)
    subprocess.run(
        ["git", "-c", "user.name=a", "-c", "user.email=a@a", "am", "-q"],
        cwd=check,
        input=result.patch,
        text=True,
        check=True,
    )
    assert (check / "app.py").read_text() == "ANSWER = 42  # fixed\n"
    assert (
        subprocess.run(
            ["git", "log", "-1", "--format=%s"], cwd=check, capture_output=True, text=True
        ).stdout.strip()
        == "Fix the answer"
    )
    del new


def test_a_fork_that_allows_maintainer_edits_is_pushed_to(world: World) -> None:
    repo = world.repo()
    pending_checks(world, repo)
    pr = world.gh.open_pull_request(
        repo,
        head="feat",
        files={"app.py": "ANSWER = 42\n"},
        fork="friend",
        author="friend",
        maintainer_can_modify=True,
    )
    with world.job(repo, pr) as ws:
        new = agent_commit(ws, {"app.py": "ANSWER = 42  # fixed\n"})
        result = publish(world.client, ws, world.state(repo, pr), world.options)
    assert result.pushed_sha == new and result.patch is None, result.refused
    assert world.branch(world.gh.repo("friend/widgets"), "feat") == new
    assert result.auto_merge_armed


def test_size_caps(world: World) -> None:
    repo = world.repo()
    pending_checks(world, repo)
    pr = world.gh.open_pull_request(repo, head="feat", files={"app.py": "ANSWER = 42\n"})
    small = replace(world.options, limits=Limits(max_files=2, max_diff_bytes=2000))
    with world.job(repo, pr) as ws:
        agent_commit(ws, {f"gen/{i}.py": f"X = {i}\n" for i in range(3)})
        result = publish(world.client, ws, world.state(repo, pr), small)
    only_refusal(result, "changes 3 files", "cap of 2")
    with world.job(repo, pr) as ws:
        agent_commit(ws, {"big.txt": "x" * 5000})
        result = publish(world.client, ws, world.state(repo, pr), small)
    only_refusal(result, "over 2,000 bytes")
    # The control: two small files are within both caps.
    with world.job(repo, pr) as ws:
        new = agent_commit(ws, {f"gen/{i}.py": f"X = {i}\n" for i in range(2)})
        result = publish(world.client, ws, world.state(repo, pr), small)
    assert result.pushed_sha == new, result.refused


def mirror_state(ws: Workspace) -> tuple[int, str]:
    """(object files, refs) of the mirror: a refused fix must leave both as they were."""
    files = sum(len(f) for _, _, f in os.walk(ws.mirror / "objects"))
    refs = subprocess.run(
        ["git", f"--git-dir={ws.mirror}", "for-each-ref"], capture_output=True, text=True
    ).stdout
    return files, refs


def secret_repo(world: World) -> tuple[Path, str]:
    """Another repository's root-only mirror holding a private blob; (its path, the blob)."""
    secret = world.root / "state" / "mirrors" / "other" / "secret.git"
    subprocess.run(["git", "init", "-q", "--bare", str(secret)], check=True)
    blob = subprocess.run(
        ["git", f"--git-dir={secret}", "hash-object", "-w", "--stdin"],
        input="the other repository's private key\n",
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    os.chmod(secret.parent, 0o700)
    return secret, blob


@pytest.mark.parametrize("plant", ["alternates", "objects-symlink", "commondir"])
def test_a_job_s_git_cannot_bring_another_repository_s_objects(world: World, plant: str) -> None:
    repo = world.repo()
    pr = world.gh.open_pull_request(repo, head="feat", files={"app.py": "ANSWER = 42\n"})
    secret, blob = secret_repo(world)
    with world.job(repo, pr) as ws:
        gitdir = ws.path / ".git"
        # A commit whose tree names the other repository's blob (the job knows its id).
        tree = as_agent(ws, "git", "mktree", "--missing").stdout  # empty input: empty tree
        listing = f"100644 blob {blob}\tstolen.txt\n"
        tree = subprocess.run(
            [
                "setpriv",
                f"--reuid={UID}",
                f"--regid={GID}",
                "--clear-groups",
                "git",
                "mktree",
                "--missing",
            ],
            cwd=ws.path,
            input=listing,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        commit = as_agent(ws, "git", "commit-tree", tree, "-p", "HEAD", "-m", "Fix").stdout
        as_agent(ws, "git", "update-ref", "HEAD", commit.strip())
        if plant == "alternates":
            (gitdir / "objects" / "info").mkdir(exist_ok=True)
            (gitdir / "objects" / "info" / "alternates").write_text(f"{secret}/objects\n")
        elif plant == "objects-symlink":
            own = gitdir / "objects"
            shutil.copytree(secret / "objects", own, dirs_exist_ok=True, symlinks=True)
            shutil.rmtree(own / blob[:2])
            (own / blob[:2]).symlink_to(secret / "objects" / blob[:2])
        else:
            evil = ws.path / "evil"
            shutil.copytree(gitdir, evil, symlinks=True)
            shutil.rmtree(evil / "objects")
            (evil / "objects").symlink_to(secret / "objects")
            (gitdir / "commondir").write_text(f"{secret}\n")
        # The control: root-run host git in the job's .git (the old import) reads the blob.
        host = subprocess.run(
            ["git", "-c", "safe.directory=*", f"--git-dir={gitdir}", "cat-file", "-p", blob],
            capture_output=True,
            text=True,
        )
        assert "private key" in host.stdout, host.stderr
        before = mirror_state(ws)
        result = publish(world.client, ws, world.state(repo, pr), world.options)
        # The marker: git in the sandbox did try the export, and could not read the blob.
        only_refusal(result)
        # (git in the sandbox either cannot resolve HEAD or cannot pack the blob)
        assert any(m in (result.refused or "") for m in ("in the sandbox failed", "at HEAD"))
        assert mirror_state(ws) == before
        gone = subprocess.run(["git", f"--git-dir={ws.mirror}", "cat-file", "-e", blob])
        assert gone.returncode != 0
    assert world.branch(repo, "feat") == pr.head_sha


@pytest.mark.parametrize("kind", ["symlink", "gitlink"])
def test_a_fix_adding_a_link_is_refused(world: World, kind: str) -> None:
    repo = world.repo()
    pr = world.gh.open_pull_request(repo, head="feat", files={"app.py": "ANSWER = 42\n"})
    with world.job(repo, pr) as ws:
        if kind == "symlink":
            (ws.path / "etc").symlink_to("/etc")
            os.lchown(ws.path / "etc", UID, GID)
            as_agent(ws, "git", "add", "etc")
        else:
            as_agent(ws, "git", "update-index", "--add", "--cacheinfo", f"160000,{pr.head_sha},sub")
        as_agent(ws, "git", "commit", "-q", "-m", "Fix")
        before = mirror_state(ws)
        result = publish(world.client, ws, world.state(repo, pr), world.options)
        only_refusal(result, "symbolic link" if kind == "symlink" else "gitlink")
        assert mirror_state(ws) == before
    # The control: the same job writing a plain file is pushed.
    with world.job(repo, pr) as ws:
        new = agent_commit(ws, {"etc": "plain\n"})
        result = publish(world.client, ws, world.state(repo, pr), world.options)
    assert result.pushed_sha == new, result.refused


def test_a_quest_symlink_is_refused_without_a_look_at_the_host(world: World) -> None:
    repo = world.repo(files={**FILES, "quest/ship.md": QUEST_SHIP, "quest/design.md": QUEST_DESIGN})
    pr = world.gh.open_pull_request(repo, head="feat", files={"app.py": "ANSWER = 42\n"})
    host = world.root / "host-secrets"
    host.mkdir()
    (host / "host-only-name.md").write_text("# nothing\n")
    with world.job(repo, pr) as ws:
        shutil.rmtree(ws.path / "quest")
        (ws.path / "quest").symlink_to(host)
        os.lchown(ws.path / "quest", UID, GID)
        as_agent(ws, "git", "add", "-A")
        as_agent(ws, "git", "commit", "-q", "-m", "Fix")
        result = publish(world.client, ws, world.state(repo, pr), world.options)
    only_refusal(result, "quest")
    assert "host-only-name" not in (result.refused or "")


def test_a_blob_over_the_cap_is_refused_before_any_diff(world: World) -> None:
    repo = world.repo()
    pr = world.gh.open_pull_request(repo, head="feat", files={"app.py": "ANSWER = 42\n"})
    small = replace(world.options, limits=Limits(max_blob_bytes=4000))
    with world.job(repo, pr) as ws:
        agent_commit(ws, {"big.txt": "x" * 5000})
        before = mirror_state(ws)
        result = publish(world.client, ws, world.state(repo, pr), small)
        only_refusal(result, "a blob of 5,000 bytes")
        assert mirror_state(ws) == before
    with world.job(repo, pr) as ws:  # the control: under the cap it is pushed
        new = agent_commit(ws, {"big.txt": "x" * 3000})
        result = publish(world.client, ws, world.state(repo, pr), small)
    assert result.pushed_sha == new, result.refused


def test_a_zlib_bomb_is_refused_before_git_inflates_it(world: World) -> None:
    repo = world.repo()
    pr = world.gh.open_pull_request(repo, head="feat", files={"app.py": "ANSWER = 42\n"})
    with world.job(repo, pr) as ws:
        zeros = ws.path / "zeros.bin"
        with open(zeros, "wb") as f:
            f.truncate(64 * 1024 * 1024)
        os.chown(zeros, UID, GID)
        as_agent(ws, "git", "add", "zeros.bin")
        as_agent(ws, "git", "commit", "-q", "-m", "Fix")
        size = as_agent(ws, "git", "cat-file", "-s", "HEAD:zeros.bin").stdout.strip()
        assert size == str(64 * 1024 * 1024)  # the control: it does inflate to 64 MiB
        before = mirror_state(ws)
        result = publish(world.client, ws, world.state(repo, pr), world.options)
        only_refusal(result, "once inflated")
        assert mirror_state(ws) == before


def test_a_refused_fix_leaves_the_mirror_as_it_was(world: World) -> None:
    repo = world.repo()
    pr = world.gh.open_pull_request(repo, head="feat", files={"app.py": "ANSWER = 42\n"})
    with world.job(repo, pr) as ws:
        new = agent_commit(ws, {".github/workflows/ci.yml": "on: push\n"})
        before = mirror_state(ws)
        result = publish(world.client, ws, world.state(repo, pr), world.options)
        only_refusal(result, "protected path")
        assert mirror_state(ws) == before
        assert subprocess.run(["git", f"--git-dir={ws.mirror}", "cat-file", "-e", new]).returncode
        assert not list(ws.mirror.parent.glob("*quarantine*"))
    with world.job(repo, pr) as ws:  # the control: a pushed fix is in the mirror
        new = agent_commit(ws, {"app.py": "ANSWER = 42  # fixed\n"})
        result = publish(world.client, ws, world.state(repo, pr), world.options)
        assert result.pushed_sha == new
        done = subprocess.run(["git", f"--git-dir={ws.mirror}", "cat-file", "-e", new])
        assert done.returncode == 0


def _conflict(world: World, repo: Repository, *, code: bool) -> PullRequest:
    quest = QUEST_SHIP
    head: dict[str, str | bytes | None] = {
        "quest/ship.md": quest + "- [Docs](docs.md)\n",
        "quest/docs.md": "# [S] Docs\n",
    }
    base: dict[str, str | bytes | None] = {
        "quest/ship.md": quest + "- [Tests](tests.md)\n",
        "quest/tests.md": "# [S] Tests\n",
        ".github/workflows/ci.yml": "on: [merge_group]\n",
    }
    if code:
        head["app.py"] = "ANSWER = 42\n"
        base["app.py"] = "ANSWER = 40\n"
    pr = world.gh.open_pull_request(repo, head="feat", files=head)
    world.gh.push(repo, "main", base)
    return pr


QUEST_FILES = {
    **FILES,
    "quest/README.md": QUEST_ROOT,
    "quest/ship.md": QUEST_SHIP,
    "quest/design.md": QUEST_DESIGN,
}


def test_a_clean_host_merge_is_published(world: World) -> None:
    repo = world.repo(files=QUEST_FILES)
    pending_checks(world, repo)
    pr = _conflict(world, repo, code=False)
    with world.job(repo, pr, merge=True) as ws:
        assert ws.merge is not None and ws.merge.merge_sha is not None and not ws.needs_agent
        # The base changed the workflow; taking it through the merge is not the fix's change.
        result = publish(world.client, ws, world.state(repo, pr), world.options)
    assert result.pushed_sha == ws.merge.merge_sha, result.refused
    assert world.branch(repo, "feat") == ws.merge.merge_sha
    assert result.auto_merge_armed


def test_an_agent_resolved_conflict_is_published_and_one_without_the_base_refused(
    world: World,
) -> None:
    repo = world.repo(files=QUEST_FILES)
    pending_checks(world, repo)
    pr = _conflict(world, repo, code=True)
    with world.job(repo, pr, merge=True) as ws:
        assert ws.merge is not None and ws.merge.conflicts == ("app.py",)
        # Giving up on the merge and committing on the head alone does not fix a conflict.
        as_agent(ws, "git", "merge", "--abort")
        agent_commit(ws, {"app.py": "ANSWER = 42  # fixed\n"})
        result = publish(world.client, ws, world.state(repo, pr), world.options)
    only_refusal(result, "does not contain the base main")

    # The control: the agent resolves the conflict and commits the merge.
    with world.job(repo, pr, merge=True) as ws:
        (ws.path / "app.py").write_text("ANSWER = 42\n")
        as_agent(ws, "git", "add", "app.py")
        as_agent(ws, "git", "commit", "-q", "--no-edit")
        new = as_agent(ws, "git", "rev-parse", "HEAD").stdout.strip()
        result = publish(world.client, ws, world.state(repo, pr), world.options)
    assert result.pushed_sha == new, result.refused
    assert world.branch(repo, "feat") == new


def test_a_merge_that_drops_the_base_s_workflow_change_is_refused(world: World) -> None:
    repo = world.repo(files=QUEST_FILES)
    pr = _conflict(world, repo, code=True)  # the base also changed the workflow
    with world.job(repo, pr, merge=True) as ws:
        (ws.path / "app.py").write_text("ANSWER = 42\n")
        # Keeping the PR's old workflow in the merge: no commit "changes" it against both
        # parents, but landing it would undo the base's workflow change.
        as_agent(ws, "git", "checkout", "HEAD", "--", ".github/workflows/ci.yml")
        as_agent(ws, "git", "add", "app.py")
        as_agent(ws, "git", "commit", "-q", "--no-edit")
        result = publish(world.client, ws, world.state(repo, pr), world.options)
    only_refusal(result, "the fix changes it: .github/workflows/ci.yml is a protected path")
    assert world.branch(repo, "feat") == pr.head_sha
    # The control is the agent-resolved conflict above: the base's workflow kept, pushed.


def test_the_token_never_lands_in_a_file_or_the_config(world: World) -> None:
    repo = world.repo()
    pending_checks(world, repo)
    pr = world.gh.open_pull_request(repo, head="feat", files={"app.py": "ANSWER = 42\n"})
    token = world.client.git_token(repo.full_name)
    assert token == world.token
    needles = [token.encode(), base64.b64encode(f"x-access-token:{token}".encode())]

    def leaks(folder: Path) -> list[Path]:
        # A job's disk image is scanned through its mount (the job folder), not as 10 GB
        # of raw bytes.
        images = world.workspaces.images
        return [
            p
            for p in folder.rglob("*")
            if p.is_file()
            and not p.is_symlink()
            and not p.is_relative_to(images)
            and any(n in p.read_bytes() for n in needles)
        ]

    state = world.workspaces.root
    with world.job(repo, pr) as ws:
        agent_commit(ws, {"app.py": "ANSWER = 42  # fixed\n"})
        result = publish(world.client, ws, world.state(repo, pr), world.options)
        assert result.pushed_sha is not None
        assert leaks(state) == [] and leaks(world.gh.root) == []
        for where in ([f"--git-dir={ws.mirror}"], ["-C", str(ws.path)]):
            listed = subprocess.run(
                ["git", "-c", f"safe.directory={ws.path}", *where, "config", "--list"],
                capture_output=True,
            ).stdout
            assert listed and not any(n in listed for n in needles)
        # The control: the scan does find the token when it is there.
        (ws.job_dir / "planted").write_bytes(b"x " + needles[0])
        assert leaks(state) == [ws.job_dir / "planted"]


@pytest.mark.parametrize("overlay", [True, False], ids=["overlay", "full-checkout"])
def test_a_fix_committed_inside_the_real_sandbox_is_published(world: World, overlay: bool) -> None:
    """The whole host side around bubblewrap: the job's checkout works in the sandbox (its
    own .git, hooks and config read-only, the mirror out of sight) and its commit lands."""
    from landbot.sandbox.runner import run_sandboxed

    require_sandbox()
    repo = world.repo()
    pending_checks(world, repo)
    pr = world.gh.open_pull_request(repo, head="feat", files={"app.py": "ANSWER = 42\n"})
    script = (
        "set -e; test ! -e {mirror}; printf 'ANSWER = 42  # fixed\\n' > app.py; "
        "git commit -qam 'Fix inside the sandbox'; git rev-parse HEAD"
    )
    world.workspaces = Workspaces(
        world.root / "state", git_url=world.gh.git_url, uid=UID, gid=GID, overlay=overlay
    )
    with world.job(repo, pr) as ws:
        done = run_sandboxed(
            ["/bin/sh", "-c", script.format(mirror=ws.mirror)],
            ws.path,
            timeout=60,
            memory_mb=512,
            capture=True,
            uid=UID,
            gid=GID,
        )
        assert done.returncode == 0, (done.stderr or b"").decode()
        new = (done.stdout or b"").decode().strip()
        result = publish(world.client, ws, world.state(repo, pr), world.options)
    assert result.pushed_sha == new, result.refused
    assert world.branch(repo, "feat") == new and result.auto_merge_armed
    assert world.workspaces.stats.overlay_jobs == (1 if overlay else 0)


# --- answers that never came (issue 11): the branch head and the auto-merge request say ---


def break_off_after_the_ref_update(world: World, repo: Repository, *, landed: bool = True) -> Path:
    """A real fault in real git: the remote's receive-pack dies right after it committed the
    ref update (or, not `landed`, before it took any lock), without telling the pusher, as a
    dropped connection does. One push only."""
    bare = Path(world.gh.clone_url(repo).removeprefix("file://"))
    state = "committed" if landed else "*"
    hook = bare / "hooks" / ("reference-transaction" if landed else "pre-receive")
    hook.parent.mkdir(exist_ok=True)
    hook.write_text(
        f'#!/bin/sh\ncase "$1" in {state}) rm -f -- "$0"; kill -9 "$PPID";; esac\nexit 0\n'
    )
    hook.chmod(0o755)
    return hook


def count_pushes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Each push publish sends (git itself says "up to date" for a ref already at `new`,
    so only a count tells a second push from none)."""
    import landbot.land.publish as publish_mod

    sent: list[str] = []
    real = publish_mod.push_with_lease

    def spy(*args: Any, **kwargs: Any) -> Any:
        sent.append(args[2])
        return real(*args, **kwargs)

    monkeypatch.setattr(publish_mod, "push_with_lease", spy)
    return sent


def test_a_push_whose_answer_was_lost_after_it_landed_is_not_pushed_again(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    pushes = count_pushes(monkeypatch)
    repo = world.repo()
    pending_checks(world, repo)
    pr = world.gh.open_pull_request(repo, head="lost", files={"app.py": "ANSWER = 42\n"})
    hook = break_off_after_the_ref_update(world, repo)
    with world.job(repo, pr) as ws:
        new = agent_commit(ws, {"app.py": "ANSWER = 42  # fixed\n"})
        result = publish(world.client, ws, world.state(repo, pr), world.options)
    assert not hook.exists()  # the fault fired: the push lost its answer
    assert result.refused is None, result.refused
    assert result.pushed_sha == new and result.auto_merge_armed
    assert world.branch(repo, "lost") == new
    assert pushes == [new]  # read back, not sent again


def test_the_control_a_push_lost_before_it_landed_is_pushed_once_more(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    pushes = count_pushes(monkeypatch)
    repo = world.repo()
    pending_checks(world, repo)
    pr = world.gh.open_pull_request(repo, head="unlanded", files={"app.py": "ANSWER = 42\n"})
    hook = break_off_after_the_ref_update(world, repo, landed=False)
    with world.job(repo, pr) as ws:
        new = agent_commit(ws, {"app.py": "ANSWER = 42  # fixed\n"})
        head = ws.head_sha
        result = publish(world.client, ws, world.state(repo, pr), world.options)
    assert not hook.exists()  # the fault fired before the ref moved
    assert result.refused is None and result.pushed_sha == new, result
    assert world.branch(repo, "unlanded") == new != head
    assert pushes == [new, new]


@pytest.mark.parametrize("applied", [True, False], ids=["applied", "not-applied"])
def test_auto_merge_answered_502_is_checked_on_the_pr(world: World, applied: bool) -> None:
    repo = world.repo()
    pending_checks(world, repo)
    pr = world.gh.open_pull_request(repo, head="arm", files={"app.py": "ANSWER = 42\n"})
    world.server.faults.fail(
        "POST /graphql", 502, operation="EnablePullRequestAutoMerge", take_effect=applied
    )
    with world.job(repo, pr) as ws:
        new = agent_commit(ws, {"app.py": "ANSWER = 42  # fixed\n"})
        result = publish(world.client, ws, world.state(repo, pr), world.options)
    assert result.pushed_sha == new
    assert result.auto_merge_armed and result.auto_merge_error is None, result.auto_merge_error
    assert world.gh.pull(repo, pr.number).auto_merge is not None
    sent = world.server.requests.count(operation="EnablePullRequestAutoMerge")
    assert sent == (1 if applied else 2)


def test_auto_merge_github_refuses_is_reported_not_retried(world: World) -> None:
    repo = world.repo()
    pending_checks(world, repo)
    pr = world.gh.open_pull_request(repo, head="arm-no", files={"app.py": "ANSWER = 42\n"})
    world.server.faults.fail(
        "POST /graphql", 422, operation="EnablePullRequestAutoMerge", message="Not allowed"
    )
    with world.job(repo, pr) as ws:
        agent_commit(ws, {"app.py": "ANSWER = 42  # fixed\n"})
        result = publish(world.client, ws, world.state(repo, pr), world.options)
    assert not result.auto_merge_armed and "Not allowed" in (result.auto_merge_error or "")
    assert world.server.requests.count(operation="EnablePullRequestAutoMerge") == 1


# --- text a job controls: paths that are not UTF-8 (issue 29) -------------------------


def agent_commit_raw(ws: Workspace, name: bytes, data: bytes, message: str = "Fix") -> str:
    """The agent's commit of one file whose name is `name` as bytes (any bytes git takes)."""
    target = os.path.join(os.fsencode(ws.path), name)
    with open(target, "wb") as handle:
        handle.write(data)
    os.chown(target, UID, GID)
    as_agent(ws, "git", "add", "-A")
    as_agent(ws, "git", "commit", "-q", "-m", message)
    return as_agent(ws, "git", "rev-parse", "HEAD").stdout.strip()


def utf8(text: str | None) -> str:
    """`text`, having checked that it encodes (the store and GitHub's API need UTF-8)."""
    assert text is not None
    text.encode("utf-8")
    return text


def test_a_fix_writing_a_path_that_is_not_utf8_is_refused_with_the_line(world: World) -> None:
    repo = world.repo()
    pending_checks(world, repo)
    pr = world.gh.open_pull_request(repo, head="feat", files={"app.py": "ANSWER = 42\n"})
    for name in (b"caf\xe9.txt", b"docs/\xed\xa0\x80.md"):  # Latin-1; an encoded surrogate
        with world.job(repo, pr) as ws:
            (ws.path / "docs").mkdir(exist_ok=True)
            os.chown(ws.path / "docs", UID, GID)
            before = mirror_state(ws)
            agent_commit_raw(ws, name, b"fixed\n")
            result = publish(world.client, ws, world.state(repo, pr), world.options)
            shown = name.decode("utf-8", "backslashreplace")
            only_refusal(result, "writes a path that is not UTF-8", f"({shown})", "rename it")
            assert "\n" not in utf8(result.refused)
            assert mirror_state(ws) == before
    assert world.branch(repo, "feat") == pr.head_sha
    # The control: names in UTF-8 beyond ASCII go through, and read back unchanged.
    names = ["café.txt", "日本/語.md", "🎉 party.txt"]
    with world.job(repo, pr) as ws:
        new = agent_commit(ws, {name: "fixed\n" for name in names})
        result = publish(world.client, ws, world.state(repo, pr), world.options)
    assert result.pushed_sha == new, result.refused
    assert sorted(path for path, _a, _d in result.files) == sorted(names)


def raw_branch(repo: Repository, branch: str, parent: str, name: bytes) -> str:
    """A commit on `parent` adding a file named `name` (bytes), at `branch` in the sim's
    repository, made with git directly (the sim's own commits take text names)."""
    git_dir = str(repo.git_dir)
    env = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "GIT_INDEX_FILE": f"{git_dir}/pr-index",
           "GIT_AUTHOR_NAME": "alice", "GIT_AUTHOR_EMAIL": "alice@example.com",
           "GIT_COMMITTER_NAME": "alice", "GIT_COMMITTER_EMAIL": "alice@example.com"}  # fmt: skip

    def git(*args: str, data: bytes | None = None) -> bytes:
        done = subprocess.run(["git", f"--git-dir={git_dir}", *args], input=data, env=env,
                              capture_output=True, check=True)  # fmt: skip
        return done.stdout.strip()

    blob = git("hash-object", "-w", "--stdin", data=b"the author's own file\n").decode()
    git("read-tree", parent)
    git("update-index", "--index-info", data=b"100644 " + blob.encode() + b"\t" + name + b"\n")
    tree = git("write-tree").decode()
    sha = git("commit-tree", tree, "-p", parent, "-m", "Add a file").decode()
    git("update-ref", f"refs/heads/{branch}", sha)
    os.unlink(env["GIT_INDEX_FILE"])
    return sha


def test_a_pull_request_holding_a_path_that_is_not_utf8_is_still_fixed(world: World) -> None:
    """The rule is about the fix's own paths: the author's name in bytes is theirs, and
    the protected-path rules (RE2 globs) read it without failing."""
    repo = world.repo()
    pending_checks(world, repo)
    head = raw_branch(repo, "feat", world.branch(repo, "main") or "", b"notes-\xff.txt")
    world.gh.sync()
    pr = world.gh.open_pull_request(repo, head="feat")
    assert pr.head_sha == head
    with world.job(repo, pr) as ws:
        new = agent_commit(ws, {"app.py": "ANSWER = 42\n"})
        result = publish(world.client, ws, world.state(repo, pr), world.options)
    assert result.pushed_sha == new, result.refused
    assert [path for path, _a, _d in result.files] == ["app.py"]
