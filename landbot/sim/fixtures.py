"""Webhook payloads without a model: one function per event shape, for intake tests.

They build the same JSON as the simulated GitHub sends (payloads.py), from a few keyword
arguments with sensible defaults, e.g.

    body = fixtures.pull_request_dequeued(number=7, reason="CI_FAILURE")
    delivery = fixtures.delivery("pull_request", body, secret="s3cret")
    client.post("/webhook", content=delivery.body, headers=delivery.headers)
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from landbot.sim import payloads
from landbot.sim.ids import node_id
from landbot.sim.payloads import Urls
from landbot.sim.state import (
    App,
    CheckRun,
    Installation,
    IssueComment,
    MergeGroup,
    PullRequest,
    Repository,
    User,
    WorkflowRun,
)
from landbot.sim.webhooks import Delivery, build_delivery

EPOCH = datetime(2026, 1, 5, 9, 30, tzinfo=UTC)
DEFAULT_INSTALLATION_ID = 42


def fake_sha(*parts: object) -> str:
    """A stable 40-hex id for fixtures (not a real commit)."""
    return hashlib.sha1(":".join(map(str, parts)).encode()).hexdigest()


class FixtureWorld:
    """The lookups payload builders need, without git or a model."""

    def __init__(
        self, *, installation_id: int | None = DEFAULT_INSTALLATION_ID, urls: Urls | None = None
    ) -> None:
        self.urls = urls or Urls()
        self.installation_id = installation_id
        self._users: dict[str, User] = {}

    def user(self, login: str) -> User:
        user = self._users.get(login.lower())
        if user is None:
            uid = 1000 + int(fake_sha("user", login.lower())[:6], 16) % 9_000_000
            user = User(
                login=login,
                id=uid,
                node_id=node_id("bot" if login.endswith("[bot]") else "user", uid),
            )
            self._users[login.lower()] = user
        return user

    def installation_for(self, full_name: str) -> Installation | None:
        if self.installation_id is None:
            return None
        return Installation(
            id=self.installation_id, app_id=901, account=full_name.split("/")[0], created_at=EPOCH
        )

    def app_by_slug(self, slug: str) -> App | None:
        return None


def repository(
    full_name: str = "acme/widgets", *, default_branch: str = "main", private: bool = False
) -> Repository:
    owner, _, name = full_name.partition("/")
    rid = 100_000 + int(fake_sha("repo", full_name)[:5], 16)
    return Repository(
        owner=owner,
        name=name,
        id=rid,
        node_id=node_id("repo", rid),
        default_branch=default_branch,
        created_at=EPOCH,
        private=private,
    )


def pull_request(
    repo: Repository | str = "acme/widgets",
    *,
    number: int = 7,
    head_sha: str | None = None,
    head_ref: str = "feature",
    base_ref: str = "main",
    base_sha: str | None = None,
    author: str = "alice",
    title: str | None = None,
    labels: Iterable[str] = (),
    fork_owner: str | None = None,
    maintainer_can_modify: bool = True,
    state: str = "open",
    merged: bool = False,
) -> PullRequest:
    base_repo = repository(repo) if isinstance(repo, str) else repo
    head_repo = base_repo if fork_owner is None else repository(f"{fork_owner}/{base_repo.name}")
    if fork_owner is not None:
        head_repo.fork_of = base_repo
    pid = 200_000_000 + number
    pr = PullRequest(
        repo=base_repo,
        number=number,
        id=pid,
        node_id=node_id("pull", f"{base_repo.full_name}#{number}"),
        title=title or f"Change {head_ref}",
        body="",
        author=author,
        head_repo=head_repo,
        head_ref=head_ref,
        head_sha=head_sha or fake_sha(base_repo.full_name, number, "head"),
        base_ref=base_ref,
        base_sha=base_sha or fake_sha(base_repo.full_name, base_ref),
        created_at=EPOCH,
        updated_at=EPOCH,
        state=state,
        merged=merged,
        labels=list(labels),
        maintainer_can_modify=maintainer_can_modify,
    )
    base_repo.pulls[number] = pr
    return pr


def _world(installation_id: int | None) -> FixtureWorld:
    return FixtureWorld(installation_id=installation_id)


def pull_request_event(
    action: str,
    *,
    sender: str | None = None,
    installation_id: int | None = DEFAULT_INSTALLATION_ID,
    extra: dict[str, Any] | None = None,
    **pr: Any,
) -> dict[str, Any]:
    """`pull_request` with any action; keyword arguments go to `pull_request(...)`."""
    world = _world(installation_id)
    obj = pull_request(**pr)
    return payloads.pull_request_event(world, obj, action, sender or obj.author, **(extra or {}))


def pull_request_dequeued(
    *, reason: str = "CI_FAILURE", sender: str = "github-merge-queue[bot]", **pr: Any
) -> dict[str, Any]:
    return pull_request_event("dequeued", sender=sender, extra={"reason": reason}, **pr)


def pull_request_enqueued(*, sender: str = "maintainer", **pr: Any) -> dict[str, Any]:
    return pull_request_event("enqueued", sender=sender, **pr)


def pull_request_synchronize(*, before: str | None = None, **pr: Any) -> dict[str, Any]:
    obj_before = before or fake_sha("before", pr.get("number", 7))
    head = pr.setdefault("head_sha", fake_sha("after", pr.get("number", 7)))
    return pull_request_event("synchronize", extra={"before": obj_before, "after": head}, **pr)


def _group(
    repo: Repository, number: int, base_ref: str, base_sha: str | None, head_sha: str | None
) -> MergeGroup:
    base_sha = base_sha or fake_sha(repo.full_name, base_ref)
    return MergeGroup(
        head_sha=head_sha or fake_sha(repo.full_name, number, "group", base_sha),
        head_ref=f"refs/heads/gh-readonly-queue/{base_ref}/pr-{number}-{base_sha}",
        base_sha=base_sha,
        base_ref=f"refs/heads/{base_ref}",
        created_at=EPOCH,
        message=f"Merge pull request #{number} from {repo.owner}:feature",
    )


def merge_group_event(
    action: str = "checks_requested",
    *,
    repo: str = "acme/widgets",
    number: int = 7,
    base_ref: str = "main",
    base_sha: str | None = None,
    head_sha: str | None = None,
    reason: str | None = None,
    author: str = "alice",
    sender: str = "maintainer",
    installation_id: int | None = DEFAULT_INSTALLATION_ID,
) -> dict[str, Any]:
    """`merge_group` `checks_requested`, or `destroyed` with a reason (merged/invalidated/...)."""
    world = _world(installation_id)
    r = repository(repo)
    group = _group(r, number, base_ref, base_sha, head_sha)
    return payloads.merge_group_event(
        world, r, group, action, sender=sender, author=author, reason=reason
    )


def check_run_completed(
    *,
    repo: str = "acme/widgets",
    name: str = "test",
    conclusion: str = "failure",
    head_sha: str | None = None,
    check_run_id: int = 50_000_000_001,
    app: str = "github-actions",
    run_id: int = 9_000_000_001,
    installation_id: int | None = DEFAULT_INSTALLATION_ID,
) -> dict[str, Any]:
    world = _world(installation_id)
    r = repository(repo)
    url = f"https://github.com/{repo}/actions/runs/{run_id}/job/{check_run_id}"
    run = CheckRun(
        id=check_run_id,
        node_id=node_id("job", check_run_id),
        repo=repo,
        name=name,
        head_sha=head_sha or fake_sha(repo, "group"),
        status="completed",
        conclusion=conclusion,
        app_slug=app,
        app_id=15368,
        started_at=EPOCH,
        completed_at=EPOCH,
        check_suite_id=20_000_000_001,
        html_url=url,
        details_url=url,
        job_id=check_run_id if app == "github-actions" else None,
    )
    return payloads.check_run_event(world, r, run)


def workflow_run_completed(
    *,
    repo: str = "acme/widgets",
    name: str = "CI",
    conclusion: str = "failure",
    event: str = "merge_group",
    head_sha: str | None = None,
    head_branch: str | None = None,
    run_id: int = 9_000_000_001,
    installation_id: int | None = DEFAULT_INSTALLATION_ID,
) -> dict[str, Any]:
    world = _world(installation_id)
    r = repository(repo)
    sha = head_sha or fake_sha(repo, "group")
    if head_branch is None:
        head_branch = (
            f"gh-readonly-queue/main/pr-7-{fake_sha(repo, 'main')}"
            if event == "merge_group"
            else "feature"
        )
    run = WorkflowRun(
        id=run_id,
        node_id=node_id("run", run_id),
        repo=repo,
        name=name,
        path=".github/workflows/ci.yml",
        workflow_id=700_001,
        event=event,
        head_sha=sha,
        head_branch=head_branch,
        status="completed",
        conclusion=conclusion,
        run_number=1,
        created_at=EPOCH,
        updated_at=EPOCH,
        check_suite_id=20_000_000_001,
    )
    return payloads.workflow_run_event(world, r, run, message="Merge pull request")


def issue_comment_created(
    *,
    body: str = "/landbot retry",
    author: str = "maintainer",
    comment_id: int = 1_000_000_001,
    installation_id: int | None = DEFAULT_INSTALLATION_ID,
    **pr: Any,
) -> dict[str, Any]:
    world = _world(installation_id)
    obj = pull_request(**pr)
    comment = IssueComment(
        id=comment_id,
        node_id=node_id("comment", comment_id),
        repo=obj.repo.full_name,
        issue_number=obj.number,
        author=author,
        body=body,
        created_at=EPOCH,
        updated_at=EPOCH,
    )
    return payloads.issue_comment_event(world, obj, comment)


def delivery(
    event: str, payload: dict[str, Any], *, secret: str | None, guid: str | None = None
) -> Delivery:
    """Headers and raw body exactly as GitHub would POST them (signed with `secret`)."""
    return build_delivery(event, payload, secret=secret, guid=guid)
