"""The simulated GitHub: state plus the behaviour GitHub has, over real bare git repositories.

`FakeGitHub` is what tests build scenarios with and what the HTTP server serves. Every
public method takes the model's lock, so a test thread and the server thread can both use
it. Pushes made with plain git (landbot pushes to `file:///ROOT/{owner}/{repo}.git`) are
noticed by `sync()`, which the server calls before every request.
"""

from __future__ import annotations

import functools
import secrets
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from landbot.sim import git, merge_queue, payloads
from landbot.sim.ids import Clock, Ids, node_id
from landbot.sim.payloads import Urls
from landbot.sim.scenarios import (
    PASSING,
    CheckContext,
    CheckScenario,
    JobSpec,
    ScenarioRule,
    ScenarioSource,
    StepSpec,
    choose_scenario,
    job_annotations,
    render_job_log,
)
from landbot.sim.state import (
    ACTIONS_APP_ID,
    ACTIONS_APP_SLUG,
    ApiAnnotation,
    App,
    Artifact,
    AutoMerge,
    CheckRun,
    Installation,
    Issue,
    IssueComment,
    Job,
    MergeQueue,
    PullRequest,
    QueueEntry,
    Reaction,
    Repository,
    RunnerSettings,
    Step,
    TimelineEvent,
    Token,
    User,
    WorkflowRun,
)
from landbot.sim.webhooks import Delivery, Outbox

P = ParamSpec("P")
R = TypeVar("R")

ROLES = ("admin", "maintain", "write", "triage", "read")
WRITE_ROLES = frozenset({"admin", "maintain", "write"})
REACTIONS = frozenset({"+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"})
MINIMIZE_CLASSIFIERS = {
    "SPAM": "spam",
    "ABUSE": "abuse",
    "OFF_TOPIC": "off-topic",
    "OUTDATED": "outdated",
    "DUPLICATE": "duplicate",
    "RESOLVED": "resolved",
}
# GitHub documents no reason for a PR leaving the queue because its head moved; these
# are our choice (landbot must treat them as "not a drop to fix").
HEAD_PUSH_WEBHOOK_REASON = "UNKNOWN_REMOVAL_REASON"
HEAD_PUSH_TIMELINE_REASON = "unknown"
ZERO_SHA = "0" * 40
# "The array includes a maximum of 2048 commits" (the push webhook's `commits`).
PUSH_COMMITS_MAX = 2048


def _public_pem(key: Any) -> bytes:
    pem: bytes = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return pem


@functools.lru_cache(maxsize=16)
def _public_of_pem(private_pem: bytes) -> bytes:
    return _public_pem(serialization.load_pem_private_key(private_pem, password=None))


class FakeGitHubError(Exception):
    """An error GitHub would answer with; `status` for REST, `gql_type` for GraphQL."""

    status = 422
    gql_type = "UNPROCESSABLE"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class NotFound(FakeGitHubError):
    status = 404
    gql_type = "NOT_FOUND"


class Unprocessable(FakeGitHubError):
    pass


class Forbidden(FakeGitHubError):
    status = 403
    gql_type = "FORBIDDEN"


def _locked(method: Callable[P, R]) -> Callable[P, R]:
    @functools.wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        self = args[0]
        with self.lock:  # type: ignore[attr-defined]
            return method(*args, **kwargs)

    return wrapper


class FakeGitHub:
    """GitHub's state for one test or one demo: repositories, PRs, queues, CI, comments."""

    def __init__(
        self,
        root: Path,
        *,
        webhook_secret: str | None = "fake-webhook-secret",
        webhook_url: str | None = None,
        clock: Clock | None = None,
        urls: Urls | None = None,
        auto_checks: bool = True,
        removal_before_commit: str = "head",
    ) -> None:
        self.root = Path(root).resolve()
        self.root.mkdir(parents=True, exist_ok=True)
        self.lock = threading.RLock()
        self.clock = clock or Clock()
        self.ids = Ids()
        self.urls = urls or Urls()
        self.webhooks = Outbox(secret=webhook_secret, url=webhook_url)
        # Run the check scenario on every new PR head (as a `pull_request` workflow would).
        self.auto_checks = auto_checks
        # What a removal's `beforeCommit` names once a merge group exists: "head" (the PR
        # head) or "group" (the group commit); GitHub has been seen doing both (merge_queue.py).
        self.removal_before_commit = removal_before_commit
        self.users: dict[str, User] = {}
        self.repos: dict[str, Repository] = {}
        self.apps: dict[int, App] = {}
        self.installations: dict[int, Installation] = {}
        self.tokens: dict[str, Token] = {}
        self.comments: dict[int, IssueComment] = {}
        self.check_runs: dict[int, CheckRun] = {}
        self.jobs: dict[int, Job] = {}
        self.workflow_runs: dict[int, WorkflowRun] = {}
        # Workflow runs' artifacts: uploaded by a dispatched run (actions.py) or by a check
        # scenario's run here (the model keeps them, so it needs nothing of actions.py).
        self.artifacts: dict[int, Artifact] = {}
        self.nodes: dict[str, object] = {}
        self._rules: dict[str, list[ScenarioRule]] = {}
        self._job_specs: dict[int, JobSpec] = {}
        self._workflow_ids: dict[tuple[str, str], int] = {}
        self._run_numbers: dict[tuple[str, str], int] = {}
        self._check_suites: dict[tuple[str, str, int], int] = {}  # (repo, sha, app id)
        # Who a push noticed by `sync()` (plain git, e.g. landbot's) is credited to; None:
        # the bot of the App installed on the repository, else its owner.
        self.git_pusher: str | None = None
        # GitHub takes check runs from Apps only: a personal token's POST is a 403. Set to
        # True to let personal tokens stand in for an Actions GITHUB_TOKEN (an installation
        # token of the github-actions App, which may write checks): their runs are then
        # credited to github-actions, as a GITHUB_TOKEN's are.
        self.tokens_write_checks_as_actions = False
        # The Actions runner of dispatched runs (actions.py), and where a reusable workflow
        # of another repository (`uses: OWNER/NAME/path@ref`) is read from: a local checkout.
        self.actions_runner = RunnerSettings()
        self.reusable_workflows: dict[str, Path] = {}

    # --- lookups (the World protocol of payloads.py) --------------------------------------

    @property
    def git_url(self) -> str:
        """The clone/push URL template for LANDBOT_GITHUB__GIT_URL."""
        return f"file://{self.root}/{{owner}}/{{repo}}.git"

    def clone_url(self, repo: Repository | str) -> str:
        """`git_url` filled in for one repository."""
        full = repo.full_name if isinstance(repo, Repository) else repo
        owner, name = full.split("/", 1)
        return self.git_url.format(owner=owner, repo=name)

    @property
    def deliveries(self) -> list[Delivery]:
        return self.webhooks.deliveries

    @_locked
    def user(self, login: str) -> User:
        user = self.users.get(login.lower())
        if user is None:
            kind = "bot" if login.endswith("[bot]") else "user"
            uid = self.ids.next("user")
            user = User(login=login, id=uid, node_id=node_id(kind, uid))
            self.users[login.lower()] = user
            self.nodes[user.node_id] = user
        return user

    def known_user(self, login: str) -> User | None:
        return self.users.get(login.lower())

    def installation_for(self, full_name: str) -> Installation | None:
        return next((i for i in self.installations.values() if i.covers(full_name)), None)

    def app_by_slug(self, slug: str) -> App | None:
        return next((a for a in self.apps.values() if a.slug == slug), None)

    @_locked
    def repo(self, full_name: str) -> Repository:
        repo = self.repos.get(full_name.lower())
        if repo is None:
            raise NotFound(f"Could not resolve to a Repository with the name '{full_name}'.")
        return repo

    @_locked
    def pull(self, repo: Repository | str, number: int) -> PullRequest:
        repo = self.repo(repo) if isinstance(repo, str) else repo
        pr = repo.pulls.get(number)
        if pr is None:
            raise NotFound(f"Could not resolve to a PullRequest with the number of {number}.")
        return pr

    def deliveries_of(self, event: str, action: str | None = None) -> list[Delivery]:
        return self.webhooks.of(event, action)

    def _emit(self, event: str, payload: dict[str, Any]) -> Delivery:
        return self.webhooks.emit(event, payload)

    # --- repositories and git -------------------------------------------------------------

    def identity(self, login: str) -> git.Identity:
        user = self.user(login)
        return git.Identity(user.name or user.login, user.email)

    def _git_date(self) -> str:
        return f"{int(self.clock.now().timestamp())} +0000"

    @_locked
    def create_repo(
        self,
        full_name: str,
        *,
        files: Mapping[str, git.FileContent] | None = None,
        source_dir: Path | None = None,
        import_git: Path | None = None,
        default_branch: str = "main",
        private: bool = False,
        merge_queue: bool = True,
        message: str = "Initial commit",
        author: str | None = None,
    ) -> Repository:
        """A repository backed by a real bare git repo.

        Its content is the branches and history of an existing git repository
        (`import_git`), or one first commit of `source_dir`'s files plus `files`.
        """
        owner, _, name = full_name.partition("/")
        if not owner or not name or "/" in name:
            raise ValueError(f"{full_name!r} is not OWNER/NAME")
        if full_name.lower() in self.repos:
            raise ValueError(f"repository {full_name} already exists")
        repo = self._new_repo(owner, name, default_branch=default_branch, private=private)
        if merge_queue:
            repo.queue_branches.add(default_branch)
        if import_git is not None:
            git.git(
                repo.require_git(),
                "fetch",
                "--quiet",
                str(import_git),
                "+refs/heads/*:refs/heads/*",
            )
            repo.known_refs = git.read_branch_refs(repo.require_git())
            if f"refs/heads/{default_branch}" not in repo.known_refs:
                raise ValueError(f"{import_git} has no branch {default_branch}")
            return repo
        content: dict[str, git.FileContent] = {}
        if source_dir is not None:
            content.update(git.files_from_directory(source_dir))
        content.update(files or {})
        if not content:
            content = {"README.md": f"# {name}\n"}
        sha = git.commit_files(
            repo.require_git(),
            parent=None,
            files=content,
            message=message,
            author=self.identity(author or owner),
            when=self._git_date(),
        )
        self._write_branch(repo, default_branch, sha, pusher=author or owner)
        return repo

    def _new_repo(self, owner: str, name: str, *, default_branch: str, private: bool) -> Repository:
        git_dir = self.root / owner / f"{name}.git"
        git.init_bare(git_dir, default_branch)
        rid = self.ids.next("repo")
        repo = Repository(
            owner=owner,
            name=name,
            id=rid,
            node_id=node_id("repo", rid),
            default_branch=default_branch,
            created_at=self.clock.now(),
            git_dir=git_dir,
            private=private,
        )
        self.user(owner)
        repo.collaborators[owner] = "admin"
        self.repos[repo.full_name.lower()] = repo
        self.nodes[repo.node_id] = repo
        return repo

    @_locked
    def fork_repo(self, repo: Repository, owner: str) -> Repository:
        """`owner`'s fork of `repo` (created on first use, with all of its branches)."""
        existing = self.repos.get(f"{owner}/{repo.name}".lower())
        if existing is not None:
            return existing
        fork = self._new_repo(
            owner, repo.name, default_branch=repo.default_branch, private=repo.private
        )
        fork.fork_of = repo
        git.git(
            fork.require_git(),
            "fetch",
            "--quiet",
            str(repo.require_git()),
            "+refs/heads/*:refs/heads/*",
        )
        fork.known_refs = git.read_branch_refs(fork.require_git())
        return fork

    @_locked
    def branch_sha(self, repo: Repository, branch: str) -> str | None:
        return git.rev_parse(repo.require_git(), f"refs/heads/{branch}")

    @_locked
    def set_merge_queue(self, repo: Repository, branch: str, enabled: bool = True) -> None:
        if enabled:
            repo.queue_branches.add(branch)
        else:
            repo.queue_branches.discard(branch)

    def _write_branch(
        self, repo: Repository, branch: str, sha: str, *, pusher: str | None = None
    ) -> str | None:
        """Move a branch (the model's own ref updates): only the `push` webhook follows."""
        ref = f"refs/heads/{branch}"
        old = repo.known_refs.get(ref)
        git.update_ref(repo.require_git(), ref, sha)
        repo.known_refs[ref] = sha
        repo.pushed_at = self.clock.now()
        if old != sha:
            self._emit_push(repo, ref, old, sha, pusher)
        return old

    def _delete_branch(self, repo: Repository, branch: str, *, pusher: str | None = None) -> None:
        ref = f"refs/heads/{branch}"
        git.delete_ref(repo.require_git(), ref)
        old = repo.known_refs.pop(ref, None)
        if old is not None:
            self._emit_push(repo, ref, old, None, pusher)

    def _emit_push(
        self, repo: Repository, ref: str, old: str | None, new: str | None, pusher: str | None
    ) -> None:
        """The `push` webhook GitHub sends for every branch created, moved or deleted."""
        if repo.fork_of is not None and self.installation_for(repo.full_name) is None:
            return  # a fork's pushes reach only hooks and Apps of the fork itself
        git_dir = repo.require_git()
        who = pusher or self._default_pusher(repo)
        commits: list[git.CommitInfo] = []
        changes: list[tuple[list[str], list[str], list[str]]] = []
        forced = False
        if new is not None:
            # The commits new to this push: not on `old`, nor (for a new branch) on any
            # other branch, as GitHub lists them.
            if old is not None:
                exclude = [old]
                forced = not git.is_ancestor(git_dir, old, new)
            else:
                exclude = [s for r, s in repo.known_refs.items() if r != ref and s != new]
            for sha in git.new_commits(git_dir, new, exclude, PUSH_COMMITS_MAX):
                commits.append(git.commit_info(git_dir, sha))
                changes.append(git.changed_paths(git_dir, sha))
        head = None
        if new is not None:
            head = commits[-1] if commits else git.commit_info(git_dir, new)
            head_changes = changes[-1] if commits else git.changed_paths(git_dir, new)
        self._emit(
            "push",
            payloads.push_event(
                self,
                repo,
                ref=ref,
                before=old or ZERO_SHA,
                after=new or ZERO_SHA,
                forced=forced,
                commits=list(zip(commits, changes, strict=True)),
                head=(head, head_changes) if head is not None else None,
                pusher=who,
            ),
        )

    def _default_pusher(self, repo: Repository) -> str:
        if self.git_pusher is not None:
            return self.git_pusher
        inst = self.installation_for(repo.full_name)
        if inst is not None and inst.app_id in self.apps:
            return self.apps[inst.app_id].bot_login
        return repo.owner

    @_locked
    def commit_file(
        self,
        repo: Repository,
        path: str,
        text: str | bytes | None,
        *,
        branch: str | None = None,
        author: str | None = None,
        message: str | None = None,
    ) -> str:
        """Commit one file (None deletes it) on `branch` (the default branch when None) with
        real git, as a person pushing would; the `push` webhook follows. Returns the sha."""
        return self.push(
            repo,
            branch or repo.default_branch,
            {path: text},
            message=message or f"Update {path}",
            author=author,
        )

    @_locked
    def push(
        self,
        repo: Repository,
        branch: str,
        files: Mapping[str, git.FileContent],
        *,
        message: str = "Update",
        author: str | None = None,
        parent: str | None = None,
    ) -> str:
        """Commit `files` on top of `branch` (or `parent`) and push it, like a user would."""
        git_dir = repo.require_git()
        ref = f"refs/heads/{branch}"
        start = (
            parent
            or repo.known_refs.get(ref)
            or repo.known_refs[f"refs/heads/{repo.default_branch}"]
        )
        sha = git.commit_files(
            git_dir,
            parent=start,
            files=files,
            message=message,
            author=self.identity(author or repo.owner),
            when=self._git_date(),
        )
        self.move_branch(repo, branch, sha, pusher=author)
        return sha

    @_locked
    def move_branch(
        self, repo: Repository, branch: str, sha: str, *, pusher: str | None = None
    ) -> None:
        """A push that sets `branch` to `sha`, with everything GitHub does after a push."""
        old = self._write_branch(repo, branch, sha, pusher=pusher)
        if old != sha:
            self._branch_moved(repo, branch, old, sha, pusher)

    @_locked
    def sync(self) -> list[tuple[str, str, str | None, str]]:
        """Notice pushes made with git directly; returns (repo, ref, old, new) per change."""
        changes: list[tuple[str, str, str | None, str]] = []
        for repo in list(self.repos.values()):
            if repo.git_dir is None:
                continue
            current = git.read_branch_refs(repo.git_dir)
            for ref, sha in current.items():
                old = repo.known_refs.get(ref)
                if old != sha:
                    repo.known_refs[ref] = sha
                    repo.pushed_at = self.clock.now()
                    changes.append((repo.full_name, ref, old, sha))
                    self._emit_push(repo, ref, old, sha, None)
                    self._branch_moved(repo, ref.removeprefix("refs/heads/"), old, sha, None)
            for ref in set(repo.known_refs) - set(current):
                old = repo.known_refs.pop(ref)
                self._emit_push(repo, ref, old, None, None)
        return changes

    def _branch_moved(
        self, repo: Repository, branch: str, old: str | None, new: str, pusher: str | None
    ) -> None:
        for other in self.repos.values():
            for pr in other.pulls.values():
                if (
                    pr.state == "open"
                    and pr.head_repo is repo
                    and pr.head_ref == branch
                    and pr.head_sha != new
                ):
                    self._pr_head_changed(pr, new, pusher)
        queue = repo.queues.get(branch)
        if queue is not None:
            merge_queue.base_moved(self, queue, new)

    # --- users, apps, tokens --------------------------------------------------------------

    @_locked
    def add_collaborator(self, repo: Repository, login: str, role: str = "write") -> None:
        if role not in ROLES:
            raise ValueError(f"role {role!r} is not one of {', '.join(ROLES)}")
        self.user(login)
        repo.collaborators[login] = role

    def permission(self, repo: Repository, login: str) -> str:
        """The user's role on the repository: admin, maintain, write, triage, read or none."""
        role = repo.collaborators.get(login) or next(
            (r for name, r in repo.collaborators.items() if name.lower() == login.lower()), None
        )
        if role is not None:
            return role
        if login.endswith("[bot]") and self.app_by_slug(login.removesuffix("[bot]")) is not None:
            return "write" if self.installation_for(repo.full_name) is not None else "none"
        return "none" if repo.private else "read"

    @_locked
    def add_artifact(self, run_id: int, name: str, data: bytes) -> int:
        """One more artifact on the run, whatever its name (the upload route refuses a
        second of one name, as GitHub's does; a test needs two to see landbot refuse
        them); its id."""
        run = self.workflow_runs[run_id]
        now = self.clock.now()
        aid = self.ids.next("artifact")
        self.artifacts[aid] = Artifact(
            aid, run_id, run.repo, name, data, now, now + timedelta(days=90)
        )
        return aid

    @_locked
    def create_app(
        self,
        slug: str = "landbot",
        *,
        name: str | None = None,
        owner: str = "landbot-dev",
        app_id: int | None = None,
        private_key_pem: bytes | None = None,
        public_key_pem: bytes | None = None,
    ) -> App:
        """A GitHub App verifying JWTs with its public key.

        Give the App's `private_key_pem` (or only a `public_key_pem`), or let a fresh RSA
        key be made; `App.private_key_pem` / `App.write_private_key` hand it to landbot.
        """
        private_pem = private_key_pem
        if public_key_pem is None:
            if private_pem is None:
                key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
                private_pem = key.private_bytes(
                    serialization.Encoding.PEM,
                    serialization.PrivateFormat.TraditionalOpenSSL,
                    serialization.NoEncryption(),
                )
                public_key_pem = _public_pem(key)
            else:
                # Parsing checks the key (about 65 ms); a key reused across Apps is parsed once.
                public_key_pem = _public_of_pem(private_pem)
        aid = app_id if app_id is not None else self.ids.next("app")
        app = App(
            id=aid,
            slug=slug,
            name=name or slug,
            node_id=node_id("app", aid),
            owner=owner,
            public_key_pem=public_key_pem,
            private_key_pem=private_pem,
            created_at=self.clock.now(),
            permissions=dict(payloads.APP_PERMISSIONS),
            events=list(payloads.APP_EVENTS),
        )
        self.apps[aid] = app
        self.user(app.bot_login)
        self.user(owner)
        return app

    @_locked
    def install_app(
        self, app: App, account: str | None = None, *, repos: Iterable[Repository] | None = None
    ) -> Installation:
        """Install `app` on every repository of `account`, or on the given `repos` only."""
        selected = list(repos or ())
        if account is None:
            if not selected:
                raise ValueError("install_app needs an account or repositories")
            account = selected[0].owner
        inst = Installation(
            id=self.ids.next("installation"),
            app_id=app.id,
            account=account,
            created_at=self.clock.now(),
            repository_selection="selected" if selected else "all",
            repositories={r.full_name.lower() for r in selected},
        )
        self.installations[inst.id] = inst
        self.user(account)
        if self.webhooks.target_id is None:
            self.webhooks.target_id = app.id
        return inst

    @_locked
    def create_token(self, login: str, *, value: str | None = None) -> str:
        """A personal access token acting as `login` (for LANDBOT_GITHUB__TOKEN)."""
        value = value or "ghp_" + secrets.token_urlsafe(27)
        self.user(login)
        self.tokens[value] = Token(value=value, login=login)
        return value

    @_locked
    def mint_installation_token(self, installation_id: int) -> Token:
        inst = self.installations.get(installation_id)
        if inst is None:
            raise NotFound("Not Found")
        app = self.apps[inst.app_id]
        token = Token(
            value="ghs_" + secrets.token_urlsafe(27),
            login=app.bot_login,
            installation_id=inst.id,
            expires_at=self.clock.now() + timedelta(hours=1),
        )
        self.tokens[token.value] = token
        return token

    @_locked
    def authenticate(self, value: str) -> Token | None:
        token = self.tokens.get(value)
        if token is None:
            return None
        if token.expires_at is not None and token.expires_at <= self.clock.now():
            return None
        return token

    def can_access(self, token: Token, repo: Repository) -> bool:
        if token.installation_id is not None:
            return self.installations[token.installation_id].covers(repo.full_name)
        return not repo.private or self.permission(repo, token.login) != "none"

    # --- pull requests --------------------------------------------------------------------

    @_locked
    def open_pull_request(
        self,
        repo: Repository,
        *,
        head: str,
        base: str | None = None,
        files: Mapping[str, git.FileContent] | None = None,
        title: str | None = None,
        body: str = "",
        author: str = "octocat",
        labels: Iterable[str] = (),
        fork: str | None = None,
        maintainer_can_modify: bool = True,
        draft: bool = False,
        message: str | None = None,
    ) -> PullRequest:
        """Open a PR from `head` (in `fork`'s fork when given) into `base`.

        With `files`, a commit with those files is first pushed on `head` (created from the
        base branch when it does not exist yet).
        """
        base = base or repo.default_branch
        base_sha = repo.known_refs.get(f"refs/heads/{base}")
        if base_sha is None:
            raise NotFound(f"base branch {base} does not exist in {repo.full_name}")
        head_repo = self.fork_repo(repo, fork) if fork else repo
        ref = f"refs/heads/{head}"
        if files is not None:
            parent = head_repo.known_refs.get(ref) or base_sha
            if head_repo is not repo and parent == base_sha:
                git.git(
                    head_repo.require_git(), "fetch", "--quiet", str(repo.require_git()), base_sha
                )
            sha = git.commit_files(
                head_repo.require_git(),
                parent=parent,
                files=files,
                message=message or title or f"Change {head}",
                author=self.identity(author),
                when=self._git_date(),
            )
            self._write_branch(head_repo, head, sha, pusher=author)
        head_sha = head_repo.known_refs.get(ref)
        if head_sha is None:
            raise NotFound(f"head branch {head} does not exist in {head_repo.full_name}")
        self.user(author)
        number = repo.next_number
        repo.next_number += 1
        pid = self.ids.next("pull")
        now = self.clock.now()
        pr = PullRequest(
            repo=repo,
            number=number,
            id=pid,
            node_id=node_id("pull", pid),
            title=title or f"Change {head}",
            body=body,
            author=author,
            head_repo=head_repo,
            head_ref=head,
            head_sha=head_sha,
            base_ref=base,
            base_sha=base_sha,
            created_at=now,
            updated_at=now,
            draft=draft,
            labels=list(labels),
            maintainer_can_modify=maintainer_can_modify,
        )
        repo.pulls[number] = pr
        self.nodes[pr.node_id] = pr
        self._update_pull_ref(pr)
        self._emit("pull_request", payloads.pull_request_event(self, pr, "opened", author))
        if self.auto_checks:
            self._run_pr_checks(pr)
        return pr

    def _update_pull_ref(self, pr: PullRequest) -> None:
        base_git = pr.repo.require_git()
        ref = f"refs/pull/{pr.number}/head"
        if pr.head_repo is pr.repo:
            git.update_ref(base_git, ref, pr.head_sha)
        else:
            git.git(
                base_git,
                "fetch",
                "--quiet",
                "--no-tags",
                str(pr.head_repo.require_git()),
                f"+refs/heads/{pr.head_ref}:{ref}",
            )

    def _pr_head_changed(self, pr: PullRequest, new: str, pusher: str | None) -> None:
        before = pr.head_sha
        pr.head_sha = new
        pr.updated_at = self.clock.now()
        self._update_pull_ref(pr)
        if not git.is_ancestor(pr.head_repo.require_git(), before, new):
            # A push that rewrites history is a timeline item of its own (a fast-forward push
            # adds `PullRequestCommit` items instead, which the simulation does not record).
            self._timeline(
                pr,
                "HeadRefForcePushedEvent",
                pusher or pr.author,
                before_commit=before,
                after_commit=new,
                ref=pr.head_ref,
            )
        entry = self._entry(pr)
        if entry is not None:
            merge_queue.remove(
                self,
                entry,
                webhook_reason=HEAD_PUSH_WEBHOOK_REASON,
                timeline_reason=HEAD_PUSH_TIMELINE_REASON,
                actor=pusher or pr.author,
                before_commit=before,
                disable_auto_merge=False,
            )
        if (
            pr.auto_merge is not None
            and pusher is not None
            and self.permission(pr.repo, pusher) not in WRITE_ROLES
        ):
            # GitHub switches auto-merge off when someone without write access pushes.
            self._clear_auto_merge(pr, actor=pusher, reason="Pushed by a user without write access")
        self._emit(
            "pull_request",
            payloads.pull_request_event(
                self, pr, "synchronize", pusher or pr.author, before=before, after=new
            ),
        )
        if self.auto_checks:
            self._run_pr_checks(pr)

    @_locked
    def add_label(self, pr: PullRequest, name: str, *, actor: str | None = None) -> None:
        """Label the PR (emits `labeled`); a label the repository lacks is created first, and
        names match regardless of case, as on GitHub."""
        name = self._repo_label(pr.repo, name)
        if name in pr.labels:
            return
        pr.labels.append(name)
        pr.updated_at = self.clock.now()
        self._timeline(pr, "LabeledEvent", actor or pr.repo.owner, label=name)
        self._emit(
            "pull_request",
            payloads.pull_request_event(
                self,
                pr,
                "labeled",
                actor or pr.repo.owner,
                label=payloads.label_json(self, pr.repo, name),
            ),
        )

    def _repo_label(self, repo: Repository, name: str) -> str:
        existing = next((n for n in repo.labels if n.lower() == name.lower()), None)
        if existing is None:
            repo.labels.append(name)
            return name
        return existing

    @_locked
    def remove_label(self, pr: PullRequest, name: str, *, actor: str | None = None) -> bool:
        """Take the label off the PR (emits `unlabeled`); False when it did not have it."""
        found = next((n for n in pr.labels if n.lower() == name.lower()), None)
        if found is None:
            return False
        pr.labels.remove(found)
        pr.updated_at = self.clock.now()
        self._timeline(pr, "UnlabeledEvent", actor or pr.repo.owner, label=found)
        self._emit(
            "pull_request",
            payloads.pull_request_event(
                self,
                pr,
                "unlabeled",
                actor or pr.repo.owner,
                label=payloads.label_json(self, pr.repo, found),
            ),
        )
        return True

    def labels_of(self, pr: PullRequest) -> list[str]:
        """The PR's labels, in the order they were added."""
        return list(pr.labels)

    @_locked
    def close_pull_request(self, pr: PullRequest, *, actor: str | None = None) -> None:
        entry = self._entry(pr)
        if entry is not None:
            merge_queue.remove(
                self,
                entry,
                webhook_reason="MANUAL",
                timeline_reason="manual",
                actor=actor or pr.author,
            )
        pr.state = "closed"
        pr.closed_at = pr.updated_at = self.clock.now()
        self._timeline(pr, "ClosedEvent", actor or pr.author)
        self._emit(
            "pull_request", payloads.pull_request_event(self, pr, "closed", actor or pr.author)
        )

    def _timeline(
        self, pr: PullRequest, typename: str, actor: str | None, **data: Any
    ) -> TimelineEvent:
        eid = self.ids.next("event")
        event = TimelineEvent(
            typename=typename,
            id=eid,
            node_id=node_id("event", eid),
            created_at=self.clock.now(),
            actor=actor,
            data=data,
        )
        pr.timeline.append(event)
        self.nodes[event.node_id] = event
        return event

    # --- checks ---------------------------------------------------------------------------

    @_locked
    def set_checks(
        self,
        repo: Repository,
        scenario: ScenarioSource,
        *,
        sha: str | None = None,
        pr: int | PullRequest | None = None,
        event: str | None = None,
    ) -> None:
        """What CI reports for commits matching (sha, PR, event); the most specific rule wins.

        `event` is "pull_request" (a PR head) or "merge_group" (a merge-group commit); `pr`
        matches both the PR's heads and its merge groups. Without any rule, one workflow
        "CI" with a job "test" passes.
        """
        number = pr.number if isinstance(pr, PullRequest) else pr
        self._rules.setdefault(repo.full_name.lower(), []).append(
            ScenarioRule(scenario=scenario, sha=sha, pr=number, event=event)
        )

    def _check_context(
        self, repo: Repository, sha: str, event: str, head_branch: str, pulls: tuple[int, ...]
    ) -> CheckContext:
        git_dir = repo.require_git()

        def read(path: str) -> str | None:
            data = git.read_file(git_dir, sha, path)
            return None if data is None else data.decode(errors="replace")

        return CheckContext(
            repo=repo.full_name,
            sha=sha,
            event=event,
            head_branch=head_branch,
            pull_numbers=pulls,
            read_file=read,
            files=lambda: git.list_files(git_dir, sha),
        )

    def _run_pr_checks(self, pr: PullRequest) -> None:
        # A fork's head commit is in the base repository too (refs/pull/N/head).
        self.run_checks(
            pr.repo, pr.head_sha, event="pull_request", head_branch=pr.head_ref, pulls=(pr.number,)
        )

    @_locked
    def run_checks(
        self,
        repo: Repository,
        sha: str,
        *,
        event: str,
        head_branch: str,
        pulls: tuple[int, ...] = (),
    ) -> list[CheckRun]:
        """Run the scenario for `sha`: workflow runs, jobs, logs, check runs, webhooks."""
        ctx = self._check_context(repo, sha, event, head_branch, pulls)
        scenario: CheckScenario = choose_scenario(self._rules.get(repo.full_name.lower(), []), ctx)
        created: list[CheckRun] = []
        message = git.commit_message(repo.require_git(), sha)
        now = self.clock.now()
        for wf in scenario.workflows:
            key = (repo.full_name.lower(), wf.path)
            if key not in self._workflow_ids:
                self._workflow_ids[key] = self.ids.next("workflow")
            self._run_numbers[key] = self._run_numbers.get(key, 0) + 1
            run_id = self.ids.next("run")
            run = WorkflowRun(
                id=run_id,
                node_id=node_id("run", run_id),
                repo=repo.full_name,
                name=wf.name,
                path=wf.path,
                workflow_id=self._workflow_ids[key],
                event=event,
                head_sha=sha,
                head_branch=head_branch,
                status="in_progress",
                conclusion=None,
                run_number=self._run_numbers[key],
                created_at=now,
                updated_at=now,
                # GitHub leaves pull_requests empty for merge-group runs (observed).
                pull_numbers=list(pulls) if event == "pull_request" else [],
                check_suite_id=self.ids.next("check_suite"),
            )
            self.workflow_runs[run.id] = run
            for spec in wf.jobs:
                job = self._create_job(repo, run, spec, now)
                created.append(self._job_check_run(repo, run, job))
            for name, data in wf.artifacts:
                self.add_artifact(run.id, name, data)
            self._refresh_run(repo, run, message)
        for other in scenario.checks:
            cid = self.ids.next("check_run")
            completed = other.conclusion is not None
            run_ = CheckRun(
                id=cid,
                node_id=node_id("check_run", cid),
                repo=repo.full_name,
                name=other.name,
                head_sha=sha,
                status="completed" if completed else "in_progress",
                conclusion=other.conclusion,
                app_slug=other.app,
                app_id=0,
                started_at=now,
                completed_at=now if completed else None,
                check_suite_id=self.ids.next("check_suite"),
                html_url=f"https://{other.app}.example/checks/{cid}",
                details_url=f"https://{other.app}.example/checks/{cid}",
                summary=other.summary,
                text=other.text,
                required=other.required,
                pull_numbers=list(pulls) if event == "pull_request" else [],
            )
            self.check_runs[cid] = run_
            self.nodes[run_.node_id] = run_
            created.append(run_)
            if completed:
                self._emit("check_run", payloads.check_run_event(self, repo, run_))
        if event == "pull_request":
            for number in pulls:
                pr = repo.pulls.get(number)
                if pr is not None and pr.head_sha == sha:
                    self._maybe_auto_merge(pr)
        return created

    def _create_job(self, repo: Repository, run: WorkflowRun, spec: JobSpec, now: datetime) -> Job:
        jid = self.ids.next("job")
        conclusion = spec.final_conclusion()
        completed = conclusion is not None
        steps = _job_steps(spec.steps, completed, now)
        log = (
            render_job_log(
                spec, repo=repo.full_name, sha=run.head_sha, started=self.clock.precise()
            )
            if completed
            else ""
        )
        job = Job(
            id=jid,
            node_id=node_id("job", jid),
            run_id=run.id,
            repo=repo.full_name,
            name=spec.name,
            workflow_name=run.name,
            head_sha=run.head_sha,
            head_branch=run.head_branch,
            status="completed" if completed else "in_progress",
            conclusion=conclusion,
            started_at=now,
            completed_at=now if completed else None,
            steps=steps,
            log=log,
            required=spec.required,
            annotations=list(job_annotations(spec, log)) if completed else [],
        )
        self.jobs[jid] = job
        self._job_specs[jid] = spec
        run.job_ids.append(jid)
        return job

    def _job_check_run(self, repo: Repository, run: WorkflowRun, job: Job) -> CheckRun:
        url = f"{self.urls.web}/{repo.full_name}/actions/runs/{run.id}/job/{job.id}"
        check = CheckRun(
            id=job.id,
            node_id=job.node_id,
            repo=repo.full_name,
            name=job.name,
            head_sha=job.head_sha,
            status=job.status,
            conclusion=job.conclusion,
            app_slug=ACTIONS_APP_SLUG,
            app_id=ACTIONS_APP_ID,
            started_at=job.started_at,
            completed_at=job.completed_at,
            check_suite_id=run.check_suite_id,
            html_url=url,
            details_url=url,
            required=job.required,
            job_id=job.id,
            pull_numbers=list(run.pull_numbers),
            annotations=list(job.annotations),
        )
        self.check_runs[check.id] = check
        self.nodes[check.node_id] = check
        if check.status == "completed":
            self._emit("check_run", payloads.check_run_event(self, repo, check))
        return check

    def _refresh_run(self, repo: Repository, run: WorkflowRun, message: str) -> None:
        jobs = [self.jobs[j] for j in run.job_ids]
        if any(j.status != "completed" for j in jobs) or run.status == "completed":
            return
        conclusions = {j.conclusion for j in jobs}
        if conclusions & {"failure", "timed_out", "startup_failure"}:
            run.conclusion = "failure"
        elif "cancelled" in conclusions:
            run.conclusion = "cancelled"
        elif "action_required" in conclusions:
            run.conclusion = "action_required"
        else:
            run.conclusion = "success"
        run.status = "completed"
        run.updated_at = self.clock.now()
        self._emit("workflow_run", payloads.workflow_run_event(self, repo, run, message=message))

    @_locked
    def complete_checks(self, repo: Repository, sha: str, conclusion: str = "success") -> int:
        """Finish every check still running on `sha` with `conclusion`; returns how many."""
        now = self.clock.now()
        finished = 0
        message = git.commit_message(repo.require_git(), sha)
        touched_runs: set[int] = set()
        for check in list(self.check_runs.values()):
            if check.repo != repo.full_name or check.head_sha != sha or check.status == "completed":
                continue
            if check.via_api:
                continue  # an App's own run finishes when that App says so, not with CI
            check.status, check.conclusion, check.completed_at = "completed", conclusion, now
            if check.job_id is not None:
                job = self.jobs[check.job_id]
                spec = _finished_spec(self._job_specs[job.id], conclusion)
                job.status, job.conclusion, job.completed_at = "completed", conclusion, now
                job.steps = _job_steps(spec.steps, True, job.started_at)
                job.log = render_job_log(
                    spec, repo=repo.full_name, sha=sha, started=self.clock.precise()
                )
                job.annotations = list(job_annotations(spec, job.log))
                check.annotations = list(job.annotations)
                touched_runs.add(job.run_id)
            self._emit("check_run", payloads.check_run_event(self, repo, check))
            finished += 1
        for run_id in sorted(touched_runs):
            self._refresh_run(repo, self.workflow_runs[run_id], message)
        for pr in repo.pulls.values():
            if pr.head_sha == sha:
                self._maybe_auto_merge(pr)
        return finished

    def checks_state(self, repo: Repository, sha: str) -> str:
        """The required checks of `sha`: "success", "failure", "pending" or "none"."""
        latest: dict[str, CheckRun] = {}
        for check in self.check_runs.values():
            mine = check.repo == repo.full_name and check.head_sha == sha and check.required
            if mine and (check.name not in latest or check.id > latest[check.name].id):
                latest[check.name] = check
        if not latest:
            return "none"
        runs = latest.values()
        if any(c.status == "completed" and c.conclusion not in PASSING for c in runs):
            return "failure"
        if any(c.status != "completed" for c in runs):
            return "pending"
        return "success"

    @_locked
    def create_check_run(
        self,
        repo: Repository,
        app: App | None,
        *,
        name: str,
        head_sha: str,
        status: str | None = None,
        conclusion: str | None = None,
        external_id: str | None = None,
        details_url: str | None = None,
        started_at: datetime | None = None,
        title: str | None = None,
        summary: str | None = None,
        text: str | None = None,
        annotations: Iterable[ApiAnnotation] = (),
    ) -> CheckRun:
        """A check run an App made through the API (emits `check_run` `created`, and
        `completed` when it was made completed); `app` None is GitHub Actions (a
        GITHUB_TOKEN's run). Not a required check: no branch protection names it."""
        slug, aid = (app.slug, app.id) if app is not None else (ACTIONS_APP_SLUG, ACTIONS_APP_ID)
        sender = f"{slug}[bot]"
        now = self.clock.now()
        completed = conclusion is not None
        cid = self.ids.next("check_run")
        suite_key = (repo.full_name.lower(), head_sha, aid)
        if suite_key not in self._check_suites:
            self._check_suites[suite_key] = self.ids.next("check_suite")
        run = CheckRun(
            id=cid,
            node_id=node_id("check_run", cid),
            repo=repo.full_name,
            name=name,
            head_sha=head_sha,
            status="completed" if completed else (status or "queued"),
            conclusion=conclusion,
            app_slug=slug,
            app_id=aid,
            started_at=started_at or now,
            completed_at=now if completed else None,
            check_suite_id=self._check_suites[suite_key],
            html_url=f"{self.urls.web}/{repo.full_name}/runs/{cid}",
            details_url=details_url or f"{self.urls.web}/apps/{slug}",
            summary=summary or "",
            text=text or "",
            required=False,
            pull_numbers=[
                p.number
                for p in repo.pulls.values()
                if p.state == "open" and p.head_sha == head_sha and not p.is_fork
            ],
            via_api=True,
            external_id=external_id,
            title=title,
            api_annotations=list(annotations),
        )
        self.check_runs[cid] = run
        self.nodes[run.node_id] = run
        self._emit("check_run", payloads.check_run_event(self, repo, run, "created", sender))
        if completed:
            self._emit("check_run", payloads.check_run_event(self, repo, run, "completed", sender))
        return run

    @_locked
    def update_check_run(
        self,
        run: CheckRun,
        *,
        name: str | None = None,
        status: str | None = None,
        conclusion: str | None = None,
        external_id: str | None = None,
        details_url: str | None = None,
        title: str | None = None,
        summary: str | None = None,
        text: str | None = None,
        annotations: Iterable[ApiAnnotation] = (),
    ) -> CheckRun:
        """PATCH a check run: fields given replace theirs, annotations are appended (as
        GitHub does); `completed` is emitted when the run completes."""
        was_completed = run.status == "completed"
        if name is not None:
            run.name = name
        if external_id is not None:
            run.external_id = external_id
        if details_url is not None:
            run.details_url = details_url
        if title is not None:
            run.title = title
        if summary is not None:
            run.summary = summary
        if text is not None:
            run.text = text
        run.api_annotations.extend(annotations)
        if conclusion is not None:
            # "Providing conclusion will automatically set the status parameter to completed."
            run.status, run.conclusion = "completed", conclusion
            run.completed_at = self.clock.now()
        elif status is not None:
            run.status = status
            if status != "completed":
                run.conclusion, run.completed_at = None, None
        repo = self.repo(run.repo)
        if run.status == "completed" and not was_completed:
            sender = f"{run.app_slug}[bot]"
            self._emit("check_run", payloads.check_run_event(self, repo, run, "completed", sender))
        return run

    def check_runs_by(self, repo: Repository, sha: str, app_slug: str) -> list[CheckRun]:
        """The check runs `app_slug` made on `sha`, oldest first."""
        return sorted(
            (c for c in self.check_runs_for(repo, sha) if c.app_slug == app_slug),
            key=lambda c: c.id,
        )

    def check_runs_for(self, repo: Repository, sha: str) -> list[CheckRun]:
        return [
            c for c in self.check_runs.values() if c.repo == repo.full_name and c.head_sha == sha
        ]

    # --- merge queue ----------------------------------------------------------------------

    @_locked
    def queue(self, repo: Repository, branch: str | None = None) -> MergeQueue | None:
        """The merge queue of `branch` (default branch by default), None when it has none."""
        branch = branch or repo.default_branch
        if branch not in repo.queue_branches:
            return None
        queue = repo.queues.get(branch)
        if queue is None:
            queue = MergeQueue(
                repo=repo, branch=branch, node_id=node_id("queue", f"{repo.id}:{branch}")
            )
            repo.queues[branch] = queue
            self.nodes[queue.node_id] = queue
        return queue

    @_locked
    def queue_entry(self, pr: PullRequest) -> QueueEntry | None:
        """The PR's entry in its base branch's merge queue, None when it is not queued."""
        return self._entry(pr)

    def _entry(self, pr: PullRequest) -> QueueEntry | None:
        queue = pr.repo.queues.get(pr.base_ref)
        return None if queue is None else queue.entry_for(pr)

    @_locked
    def enqueue(
        self,
        pr: PullRequest,
        *,
        actor: str,
        jump: bool = False,
        expected_head_oid: str | None = None,
    ) -> QueueEntry:
        """`enqueuePullRequest`: add the PR to its base branch's queue now."""
        if pr.merged or pr.state != "open":
            raise Unprocessable("Pull request is not open")
        if expected_head_oid is not None and expected_head_oid != pr.head_sha:
            raise Unprocessable(
                f"Expected head oid {expected_head_oid} does not match the pull request's "
                f"head oid {pr.head_sha}"
            )
        queue = self.queue(pr.repo, pr.base_ref)
        if queue is None:
            raise Unprocessable(f"Merge queue is not enabled for the {pr.base_ref} branch")
        if queue.entry_for(pr) is not None:
            raise Unprocessable("Pull request is already in the queue")
        eid = self.ids.next("queue_entry")
        entry = QueueEntry(
            id=eid,
            node_id=node_id("queue_entry", eid),
            pr=pr,
            enqueued_at=self.clock.now(),
            enqueuer=actor,
            head_sha=pr.head_sha,
            jump=jump,
        )
        if jump:
            # A jump goes ahead of everything not already being tested.
            index = next(
                (i for i, e in enumerate(queue.entries) if e.group is None), len(queue.entries)
            )
            queue.entries.insert(index, entry)
        else:
            queue.entries.append(entry)
        self.nodes[entry.node_id] = entry
        pr.updated_at = self.clock.now()
        self._timeline(pr, "AddedToMergeQueueEvent", actor, enqueuer=actor, queue=queue.branch)
        self._emit("pull_request", payloads.pull_request_event(self, pr, "enqueued", actor))
        return entry

    @_locked
    def dequeue(self, pr: PullRequest, *, actor: str) -> QueueEntry:
        """`dequeuePullRequest`: remove the PR by hand (reason MANUAL)."""
        entry = self._entry(pr)
        if entry is None:
            raise Unprocessable("Pull request is not in the queue")
        merge_queue.remove(
            self, entry, webhook_reason="MANUAL", timeline_reason="manual", actor=actor
        )
        return entry

    @_locked
    def enable_auto_merge(
        self,
        pr: PullRequest,
        *,
        actor: str,
        merge_method: str = "MERGE",
        expected_head_oid: str | None = None,
        commit_title: str | None = None,
        commit_message: str | None = None,
    ) -> None:
        """`enablePullRequestAutoMerge`: queue (or merge) once the PR's checks pass."""
        if pr.merged or pr.state != "open":
            raise Unprocessable("Pull request is not open")
        if expected_head_oid is not None and expected_head_oid != pr.head_sha:
            raise Unprocessable(
                f"Expected head oid {expected_head_oid} does not match the pull request's "
                f"head oid {pr.head_sha}"
            )
        pr.auto_merge = AutoMerge(
            enabled_by=actor,
            merge_method=merge_method,
            enabled_at=self.clock.now(),
            commit_title=commit_title,
            commit_message=commit_message,
        )
        pr.updated_at = self.clock.now()
        self._timeline(pr, "AutoMergeEnabledEvent", actor)
        self._emit(
            "pull_request", payloads.pull_request_event(self, pr, "auto_merge_enabled", actor)
        )
        self._maybe_auto_merge(pr)

    @_locked
    def disable_auto_merge(self, pr: PullRequest, *, actor: str) -> None:
        if pr.auto_merge is None:
            raise Unprocessable("Auto merge is not enabled for this pull request")
        self._clear_auto_merge(pr, actor=actor, reason=None)

    def _clear_auto_merge(self, pr: PullRequest, *, actor: str, reason: str | None) -> None:
        if pr.auto_merge is None:
            return
        pr.auto_merge = None
        pr.updated_at = self.clock.now()
        self._timeline(pr, "AutoMergeDisabledEvent", actor, reason=reason)
        extra = {"reason": reason} if reason else {}
        self._emit(
            "pull_request",
            payloads.pull_request_event(self, pr, "auto_merge_disabled", actor, **extra),
        )

    def _maybe_auto_merge(self, pr: PullRequest) -> None:
        if pr.auto_merge is None or pr.state != "open" or pr.merged or self._entry(pr) is not None:
            return
        if self.checks_state(pr.repo, pr.head_sha) not in ("success", "none"):
            return
        if self.queue(pr.repo, pr.base_ref) is not None:
            self.enqueue(pr, actor=pr.auto_merge.enabled_by)
        else:
            merge_queue.merge_directly(self, pr)

    @_locked
    def queue_step(
        self, repo: Repository, branch: str | None = None
    ) -> merge_queue.QueueStep | None:
        """One transition of the queue's head entry (build its group, or decide it)."""
        self.sync()
        queue = self.queue(repo, branch)
        return None if queue is None else merge_queue.step(self, queue)

    @_locked
    def run_queue(
        self, repo: Repository | None = None, *, max_steps: int = 100
    ) -> list[merge_queue.QueueStep]:
        """Step every queue until each is empty or waiting on checks; returns what happened."""
        self.sync()
        done: list[merge_queue.QueueStep] = []
        repos = [repo] if repo is not None else list(self.repos.values())
        for _ in range(max_steps):
            progressed = False
            for r in repos:
                for queue in list(r.queues.values()):
                    result = merge_queue.step(self, queue)
                    if result is None or result.action == "waiting":
                        continue
                    done.append(result)
                    progressed = True
            if not progressed:
                return done
        return done

    # --- issues (not pull requests) ---------------------------------------------------------

    @_locked
    def create_issue(
        self,
        repo: Repository,
        title: str,
        body: str = "",
        *,
        author: str,
        labels: Iterable[str] = (),
    ) -> Issue:
        """Open an issue (emits `issues` `opened`); its number is the repository's next, as
        pull requests' are. A label the repository lacks is created, as GitHub does."""
        number = repo.next_number
        repo.next_number += 1
        iid = self.ids.next("issue")
        now = self.clock.now()
        issue = Issue(
            repo=repo.full_name,
            number=number,
            id=iid,
            node_id=node_id("issue", iid),
            title=title,
            body=body,
            author=author,
            created_at=now,
            updated_at=now,
        )
        for name in labels:
            name = self._repo_label(repo, name)
            if name not in issue.labels:
                issue.labels.append(name)
        self.user(author)
        repo.issues[number] = issue
        self.nodes[issue.node_id] = issue
        self._emit("issues", payloads.issues_event(self, repo, issue, "opened", author))
        return issue

    @_locked
    def issue(self, repo: Repository | str, number: int) -> Issue:
        repo = self.repo(repo) if isinstance(repo, str) else repo
        issue = repo.issues.get(number)
        if issue is None:
            raise NotFound(f"Could not resolve to an Issue with the number of {number}.")
        return issue

    @_locked
    def edit_issue(
        self,
        issue: Issue,
        *,
        actor: str,
        title: str | None = None,
        body: str | None = None,
        state: str | None = None,
        state_reason: str | None = None,
    ) -> Issue:
        """Change an issue: `edited` for its title or body (with `changes`), `closed` or
        `reopened` for its state, each emitted only when something changed (as GitHub)."""
        repo = self.repo(issue.repo)
        changes: dict[str, Any] = {}
        if title is not None and title != issue.title:
            changes["title"] = {"from": issue.title}
            issue.title = title
        if body is not None and body != issue.body:
            changes["body"] = {"from": issue.body}
            issue.body = body
        now = self.clock.now()
        if changes:
            issue.updated_at = now
            self._emit(
                "issues",
                payloads.issues_event(self, repo, issue, "edited", actor, changes=changes),
            )
        if state is not None and state != issue.state:
            issue.state = state
            issue.updated_at = now
            if state == "closed":
                issue.closed_at, issue.closed_by = now, actor
                issue.state_reason = state_reason or "completed"
                action = "closed"
            else:
                issue.closed_at = issue.closed_by = None
                issue.state_reason = "reopened"
                action = "reopened"
            self.user(actor)
            self._emit("issues", payloads.issues_event(self, repo, issue, action, actor))
        elif state_reason is not None and issue.state == "closed":
            issue.state_reason = state_reason
        return issue

    def issues_of(self, repo: Repository) -> list[Issue]:
        """The repository's issues (not pull requests), oldest first."""
        return sorted(repo.issues.values(), key=lambda i: i.number)

    # --- comments -------------------------------------------------------------------------

    @_locked
    def add_comment(self, repo: Repository, number: int, body: str, *, author: str) -> IssueComment:
        """A comment on PR `number` by `author` (emits `issue_comment` `created`); on an
        issue's number, a comment on that issue."""
        if number in repo.issues and number not in repo.pulls:
            return self._issue_comment(repo, number, body, author=author)
        pr = self.pull(repo, number)
        comment = self._new_comment(repo, number, body, author)
        pr.updated_at = comment.created_at
        self._emit("issue_comment", payloads.issue_comment_event(self, pr, comment))
        return comment

    def _new_comment(self, repo: Repository, number: int, body: str, author: str) -> IssueComment:
        """A comment on PR or issue `number`, made and kept (no webhook: the caller's)."""
        cid = self.ids.next("comment")
        now = self.clock.now()
        comment = IssueComment(
            id=cid,
            node_id=node_id("comment", cid),
            repo=repo.full_name,
            issue_number=number,
            author=author,
            body=body,
            created_at=now,
            updated_at=now,
        )
        self.user(author)
        self.comments[cid] = comment
        self.nodes[comment.node_id] = comment
        return comment

    def _issue_comment(
        self, repo: Repository, number: int, body: str, *, author: str
    ) -> IssueComment:
        issue = repo.issues[number]
        comment = self._new_comment(repo, number, body, author)
        payload = {
            "action": "created",
            "issue": payloads.plain_issue_json(self, repo, issue),
            "comment": payloads.comment_json(self, repo, comment),
        }
        payload.update(payloads._envelope(self, repo, author))
        self._emit("issue_comment", payload)
        return comment

    @_locked
    def comment(self, comment_id: int) -> IssueComment:
        comment = self.comments.get(comment_id)
        if comment is None:
            raise NotFound("Not Found")
        return comment

    @_locked
    def edit_comment(self, comment_id: int, body: str, *, editor: str) -> IssueComment:
        comment = self.comment(comment_id)
        old = comment.body
        comment.body = body
        comment.updated_at = self.clock.now()
        pr = self.pull(comment.repo, comment.issue_number)
        payload = payloads.issue_comment_event(
            self, pr, comment, "edited", changes={"body": {"from": old}}
        )
        payload["sender"] = payloads.user_json(self, editor)
        self._emit("issue_comment", payload)
        return comment

    def comments_on(self, repo: Repository, number: int) -> list[IssueComment]:
        return sorted(
            (
                c
                for c in self.comments.values()
                if c.repo == repo.full_name and c.issue_number == number
            ),
            key=lambda c: c.id,
        )

    @_locked
    def add_reaction(self, comment_id: int, content: str, *, user: str) -> tuple[Reaction, bool]:
        """Returns (reaction, created); a repeated reaction by the same user is not duplicated."""
        if content not in REACTIONS:
            raise Unprocessable(f"content {content!r} is not a valid reaction")
        comment = self.comment(comment_id)
        for reaction in comment.reactions:
            if reaction.user == user and reaction.content == content:
                return reaction, False
        rid = self.ids.next("reaction")
        reaction = Reaction(
            id=rid,
            node_id=node_id("reaction", rid),
            content=content,
            user=user,
            created_at=self.clock.now(),
        )
        comment.reactions.append(reaction)
        return reaction, True

    @_locked
    def minimize_comment(self, comment: IssueComment, classifier: str) -> None:
        if classifier not in MINIMIZE_CLASSIFIERS:
            raise Unprocessable(f"classifier {classifier!r} is not valid")
        comment.minimized_reason = MINIMIZE_CLASSIFIERS[classifier]

    # --- summary for people (demo, control API) -------------------------------------------

    @_locked
    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {"repos": {}}
        for repo in self.repos.values():
            out["repos"][repo.full_name] = {
                "branches": {r.removeprefix("refs/heads/"): s for r, s in repo.known_refs.items()},
                "pulls": {
                    pr.number: {
                        "state": pr.graphql_state,
                        "head_sha": pr.head_sha,
                        "node_id": pr.node_id,
                        "queued": self._entry(pr) is not None,
                        "auto_merge": pr.auto_merge is not None,
                    }
                    for pr in repo.pulls.values()
                },
                "queues": {b: [e.pr.number for e in q.entries] for b, q in repo.queues.items()},
            }
        return out


def _job_steps(specs: Iterable[StepSpec], completed: bool, start: datetime) -> list[Step]:
    steps: list[Step] = []
    for number, spec in enumerate(specs, start=1):
        at = start + timedelta(seconds=number)
        if completed:
            conclusion = spec.reported_conclusion or "success"
            steps.append(Step(number, spec.name, "completed", conclusion, at, at))
        elif number == 1:
            steps.append(Step(number, spec.name, "completed", "success", at, at))
        elif number == 2:
            steps.append(Step(number, spec.name, "in_progress", None, at, None))
        else:
            steps.append(Step(number, spec.name, "queued", None, None, None))
    return steps


def _finished_spec(spec: JobSpec, conclusion: str) -> JobSpec:
    """A pending job's spec once it finished with `conclusion`."""
    if conclusion in PASSING:
        return replace(spec, pending=False, conclusion=conclusion)
    steps: list[StepSpec] = []
    hit = False
    for s in spec.steps:
        own = (
            s.name in ("Set up job", "Complete job")
            or s.name.startswith("Post ")
            or "checkout" in s.name
        )
        if own:
            steps.append(replace(s, conclusion="success"))
        elif not hit:
            steps.append(replace(s, conclusion=conclusion))
            hit = True
        else:
            steps.append(replace(s, conclusion="skipped"))
    return replace(spec, pending=False, conclusion=conclusion, steps=tuple(steps))
