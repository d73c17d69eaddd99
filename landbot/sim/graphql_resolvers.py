"""Resolvers over the model for GitHub's GraphQL schema (the part landbot uses).

Each GraphQL object type landbot reads has a small class here whose snake_case methods
resolve its camelCase fields (`headRefOid` → `head_ref_oid`, arguments likewise). A field
without a resolver is answered with a loud error naming it, never a silent null, so a
client that starts asking for something new finds out at once. Abstract types (Node,
Actor, the timeline unions) resolve through each object's `typename`.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from graphql import GraphQLResolveInfo

from landbot.sim import git
from landbot.sim.ids import iso
from landbot.sim.model import WRITE_ROLES, FakeGitHub, NotFound
from landbot.sim.state import (
    IssueComment,
    MergeQueue,
    PullRequest,
    QueueEntry,
    Repository,
    TimelineEvent,
    User,
)

Json = dict[str, Any]
MAX_PAGE = 100


class GraphQLFailure(Exception):
    """An error GitHub reports in `errors` with a `type`."""

    def __init__(self, type_: str, message: str) -> None:
        super().__init__(message)
        self.type = type_
        self.message = message


class NotServed(GraphQLFailure):
    def __init__(self, type_name: str, field: str) -> None:
        super().__init__(
            "NOT_SERVED_BY_FAKE",
            f"landbot's fake GitHub does not serve {type_name}.{field} yet; add it in "
            "landbot/sim/graphql_resolvers.py",
        )


@dataclass
class Context:
    gh: FakeGitHub
    viewer: str  # login acting (a user, or "<slug>[bot]")
    installation_id: int | None = None

    def can_see(self, repo: Repository) -> bool:
        if self.installation_id is not None:
            return self.gh.installations[self.installation_id].covers(repo.full_name)
        return not repo.private or self.gh.permission(repo, self.viewer) != "none"

    def require_write(self, repo: Repository, mutation: str) -> None:
        if self.installation_id is not None and self.can_see(repo):
            return
        if self.gh.permission(repo, self.viewer) not in WRITE_ROLES:
            raise GraphQLFailure(
                "FORBIDDEN",
                f"{self.viewer} does not have the correct permissions to execute `{mutation}`",
            )


_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")


def snake(name: str) -> str:
    return _CAMEL.sub("_", name).lower()


_MISSING = object()


def field_resolver(source: Any, info: GraphQLResolveInfo[Any], **args: Any) -> Any:
    name = info.field_name
    if isinstance(source, dict):
        if name in source:
            return source[name]
        raise NotServed(info.parent_type.name, name)
    attr = getattr(source, snake(name), _MISSING)
    if attr is _MISSING:
        raise NotServed(info.parent_type.name, name)
    if callable(attr):
        return attr(**{snake(k): v for k, v in args.items()})
    return attr


def type_resolver(value: Any, info: GraphQLResolveInfo[Any], abstract_type: Any) -> str:
    if isinstance(value, dict):
        return str(value["__typename"])
    return str(value.typename)


# --- connections --------------------------------------------------------------------------


def _cursor(index: int) -> str:
    return base64.b64encode(f"cursor:v2:{index}".encode()).decode()


def _index(cursor: str) -> int:
    try:
        return int(base64.b64decode(cursor).decode().rsplit(":", 1)[1])
    except (ValueError, IndexError):
        raise GraphQLFailure(
            "INVALID_CURSOR_ARGUMENTS", f"`{cursor}` does not appear to be a valid cursor."
        ) from None


def connection(
    items: Sequence[Any],
    *,
    field: str,
    first: int | None = None,
    last: int | None = None,
    after: str | None = None,
    before: str | None = None,
    **extra: Any,
) -> Json:
    """A Relay connection with GitHub's pagination rules (first/last required, at most 100)."""
    if first is None and last is None:
        raise GraphQLFailure(
            "MISSING_PAGINATION_BOUNDARIES",
            f"You must provide a `first` or `last` value to properly paginate the `{field}` "
            "connection.",
        )
    for name, value in (("first", first), ("last", last)):
        if value is not None and value > MAX_PAGE:
            raise GraphQLFailure(
                "EXCESSIVE_PAGINATION",
                f"Requesting {value} records on the `{field}` connection exceeds the `{name}` "
                f"limit of {MAX_PAGE} records.",
            )
    indexed = list(enumerate(items))
    if after is not None:
        start = _index(after)
        indexed = [(i, x) for i, x in indexed if i > start]
    if before is not None:
        end = _index(before)
        indexed = [(i, x) for i, x in indexed if i < end]
    window = indexed
    if first is not None:
        window = window[:first]
    if last is not None:
        window = window[-last:] if last else []
    has_next = bool(window) and window[-1][0] < (indexed[-1][0] if indexed else -1)
    has_prev = bool(window) and window[0][0] > (indexed[0][0] if indexed else 0)
    return {
        "nodes": [x for _, x in window],
        "edges": [{"cursor": _cursor(i), "node": x} for i, x in window],
        "pageInfo": {
            "hasNextPage": has_next,
            "hasPreviousPage": has_prev,
            "startCursor": _cursor(window[0][0]) if window else None,
            "endCursor": _cursor(window[-1][0]) if window else None,
        },
        "totalCount": len(items),
        **extra,
    }


# --- objects ------------------------------------------------------------------------------


class Actor:
    def __init__(self, ctx: Context, user: User) -> None:
        self.ctx, self.user = ctx, user
        self.typename = user.type  # "User" or "Bot"
        self.login = user.login
        self.id = user.node_id
        self.database_id = user.id
        self.name = user.name

    def url(self) -> str:
        return f"{self.ctx.gh.urls.web}/{self.user.login}"

    def resource_path(self) -> str:
        return f"/{self.user.login}"

    def avatar_url(self, size: int | None = None) -> str:
        return f"https://avatars.githubusercontent.com/u/{self.user.id}?v=4"


def actor(ctx: Context, login: str | None) -> Actor | None:
    return None if login is None else Actor(ctx, ctx.gh.user(login))


class Commit:
    typename = "Commit"

    def __init__(self, ctx: Context, repo: Repository, sha: str) -> None:
        self.ctx, self.repo, self.oid = ctx, repo, sha
        self.abbreviated_oid = sha[:7]

    def id(self) -> str:
        tail = base64.urlsafe_b64encode(f"{self.repo.id}:{self.oid}".encode()).decode()
        return f"C_kwDO{tail.rstrip('=')}"

    def message(self) -> str:
        return git.commit_message(self.repo.require_git(), self.oid)

    def message_headline(self) -> str:
        return self.message().splitlines()[0] if self.message() else ""

    def url(self) -> str:
        return f"{self.ctx.gh.urls.web}/{self.repo.full_name}/commit/{self.oid}"

    def parents(
        self,
        first: int | None = None,
        last: int | None = None,
        after: str | None = None,
        before: str | None = None,
    ) -> Json:
        nodes = [
            Commit(self.ctx, self.repo, p) for p in git.parents(self.repo.require_git(), self.oid)
        ]
        return connection(
            nodes, field="parents", first=first, last=last, after=after, before=before
        )


class Ref:
    typename = "Ref"

    def __init__(self, ctx: Context, repo: Repository, name: str) -> None:
        self.ctx, self.repo, self.name = ctx, repo, name
        self.prefix = "refs/heads/"
        self.id = f"REF_{repo.id}_{name}"

    def target(self) -> Commit | None:
        sha = self.repo.known_refs.get(f"refs/heads/{self.name}")
        return None if sha is None else Commit(self.ctx, self.repo, sha)


class RepositoryObject:
    typename = "Repository"

    def __init__(self, ctx: Context, repo: Repository) -> None:
        self.ctx, self.repo = ctx, repo
        self.id = repo.node_id
        self.database_id = repo.id
        self.name = repo.name
        self.name_with_owner = repo.full_name
        self.is_private = repo.private
        self.is_fork = repo.fork_of is not None
        self.is_archived = False

    def owner(self) -> Actor:
        return Actor(self.ctx, self.ctx.gh.user(self.repo.owner))

    def url(self) -> str:
        return f"{self.ctx.gh.urls.web}/{self.repo.full_name}"

    def default_branch_ref(self) -> Ref:
        return Ref(self.ctx, self.repo, self.repo.default_branch)

    def viewer_permission(self) -> str:
        return self.ctx.gh.permission(self.repo, self.ctx.viewer).upper()

    def object(self, oid: str | None = None, expression: str | None = None) -> Commit | None:
        """A commit by its oid (GitHub answers null for an object it does not have)."""
        if oid is None:
            raise NotServed("Repository", "object(expression:)")
        try:
            git.parents(self.repo.require_git(), oid)
        except Exception:  # not a commit of this repository: null, as GitHub answers
            return None
        return Commit(self.ctx, self.repo, oid)

    def pull_request(self, number: int) -> PullRequestObject:
        pr = self.repo.pulls.get(number)
        if pr is None:
            raise NotFound(f"Could not resolve to a PullRequest with the number of {number}.")
        return PullRequestObject(self.ctx, pr)

    def pull_requests(
        self,
        states: list[str] | None = None,
        first: int | None = None,
        last: int | None = None,
        after: str | None = None,
        before: str | None = None,
        order_by: Json | None = None,
        base_ref_name: str | None = None,
        head_ref_name: str | None = None,
        labels: list[str] | None = None,
    ) -> Json:
        pulls = [
            p
            for p in self.repo.pulls.values()
            if (not states or p.graphql_state in states)
            and (base_ref_name is None or p.base_ref == base_ref_name)
            and (head_ref_name is None or p.head_ref == head_ref_name)
            and (not labels or any(label in p.labels for label in labels))
        ]
        field = {"CREATED_AT": "created_at", "UPDATED_AT": "updated_at"}.get(
            (order_by or {}).get("field", "CREATED_AT"), "created_at"
        )
        descending = (order_by or {}).get("direction", "ASC") == "DESC"
        # Ties (same second) fall back to the number, in the same direction.
        pulls.sort(key=lambda p: (getattr(p, field), p.number), reverse=descending)
        nodes = [PullRequestObject(self.ctx, p) for p in pulls]
        return connection(
            nodes, field="pullRequests", first=first, last=last, after=after, before=before
        )

    def merge_queue(self, branch: str | None = None) -> MergeQueueObject | None:
        queue = self.ctx.gh.queue(self.repo, branch or self.repo.default_branch)
        return None if queue is None else MergeQueueObject(self.ctx, queue)


class MergeQueueObject:
    typename = "MergeQueue"

    def __init__(self, ctx: Context, queue: MergeQueue) -> None:
        self.ctx, self.queue = ctx, queue
        self.id = queue.node_id
        self.next_entry_estimated_time_to_merge = None

    def entries(
        self,
        first: int | None = None,
        last: int | None = None,
        after: str | None = None,
        before: str | None = None,
    ) -> Json:
        nodes = [MergeQueueEntryObject(self.ctx, e) for e in self.queue.entries]
        return connection(
            nodes, field="entries", first=first, last=last, after=after, before=before
        )

    def configuration(self) -> Json:
        cfg = self.queue.config
        return {
            "checkResponseTimeout": cfg.check_response_timeout_minutes,
            "maximumEntriesToBuild": cfg.maximum_entries_to_build,
            "maximumEntriesToMerge": cfg.maximum_entries_to_merge,
            "mergeMethod": cfg.merge_method,
            "mergingStrategy": cfg.merging_strategy,
            "minimumEntriesToMerge": cfg.minimum_entries_to_merge,
            "minimumEntriesToMergeWaitTime": cfg.minimum_entries_to_merge_wait_minutes,
        }

    def repository(self) -> RepositoryObject:
        return RepositoryObject(self.ctx, self.queue.repo)

    def url(self) -> str:
        return f"{self.ctx.gh.urls.web}/{self.queue.repo.full_name}/queue/{self.queue.branch}"

    def resource_path(self) -> str:
        return f"/{self.queue.repo.full_name}/queue/{self.queue.branch}"


class MergeQueueEntryObject:
    typename = "MergeQueueEntry"

    def __init__(self, ctx: Context, entry: QueueEntry) -> None:
        self.ctx, self.entry = ctx, entry
        self.id = entry.node_id
        self.state = entry.state
        self.jump = entry.jump
        self.solo = False
        self.estimated_time_to_merge = None

    def position(self) -> int:
        queue = self.entry.pr.repo.queues.get(self.entry.pr.base_ref)
        if queue is None or self.entry not in queue.entries:
            return 0
        return queue.entries.index(self.entry) + 1

    def enqueued_at(self) -> str | None:
        return iso(self.entry.enqueued_at)

    def enqueuer(self) -> Actor | None:
        return actor(self.ctx, self.entry.enqueuer)

    def head_commit(self) -> Commit:
        group = self.entry.group
        sha = group.head_sha if group is not None else self.entry.head_sha
        return Commit(self.ctx, self.entry.pr.repo, sha)

    def base_commit(self) -> Commit | None:
        group = self.entry.group
        return None if group is None else Commit(self.ctx, self.entry.pr.repo, group.base_sha)

    def pull_request(self) -> PullRequestObject:
        return PullRequestObject(self.ctx, self.entry.pr)

    def merge_queue(self) -> MergeQueueObject | None:
        queue = self.ctx.gh.queue(self.entry.pr.repo, self.entry.pr.base_ref)
        return None if queue is None else MergeQueueObject(self.ctx, queue)


def _typename(item_type: str) -> str:
    return "".join(part.capitalize() for part in item_type.split("_"))


class PullRequestObject:
    typename = "PullRequest"

    def __init__(self, ctx: Context, pr: PullRequest) -> None:
        self.ctx, self.pr = ctx, pr
        self.id = pr.node_id
        self.database_id = pr.id
        self.number = pr.number
        self.title = pr.title
        self.body = pr.body
        self.state = pr.graphql_state
        self.merged = pr.merged
        self.closed = pr.state == "closed"
        self.is_draft = pr.draft
        self.head_ref_oid = pr.head_sha
        self.head_ref_name = pr.head_ref
        self.base_ref_name = pr.base_ref
        self.is_cross_repository = pr.is_fork
        self.maintainer_can_modify = pr.maintainer_can_modify
        self.locked = False

    def base_ref_oid(self) -> str:
        return self.pr.repo.known_refs.get(f"refs/heads/{self.pr.base_ref}", self.pr.base_sha)

    def url(self) -> str:
        return f"{self.ctx.gh.urls.web}/{self.pr.repo.full_name}/pull/{self.pr.number}"

    permalink = url

    def resource_path(self) -> str:
        return f"/{self.pr.repo.full_name}/pull/{self.pr.number}"

    def created_at(self) -> str | None:
        return iso(self.pr.created_at)

    def updated_at(self) -> str | None:
        return iso(self.pr.updated_at)

    def merged_at(self) -> str | None:
        return iso(self.pr.merged_at)

    def closed_at(self) -> str | None:
        return iso(self.pr.closed_at)

    def author(self) -> Actor | None:
        return actor(self.ctx, self.pr.author)

    def merged_by(self) -> Actor | None:
        return actor(self.ctx, self.pr.merged_by)

    def repository(self) -> RepositoryObject:
        return RepositoryObject(self.ctx, self.pr.repo)

    def head_repository(self) -> RepositoryObject:
        return RepositoryObject(self.ctx, self.pr.head_repo)

    def head_repository_owner(self) -> Actor:
        return Actor(self.ctx, self.ctx.gh.user(self.pr.head_repo.owner))

    def head_ref(self) -> Ref | None:
        if f"refs/heads/{self.pr.head_ref}" not in self.pr.head_repo.known_refs:
            return None
        return Ref(self.ctx, self.pr.head_repo, self.pr.head_ref)

    def base_ref(self) -> Ref:
        return Ref(self.ctx, self.pr.repo, self.pr.base_ref)

    def merge_commit(self) -> Commit | None:
        sha = self.pr.merge_commit_sha
        return None if sha is None else Commit(self.ctx, self.pr.repo, sha)

    def labels(
        self,
        first: int | None = None,
        last: int | None = None,
        after: str | None = None,
        before: str | None = None,
        order_by: Json | None = None,
    ) -> Json:
        nodes = [
            {"__typename": "Label", "name": n, "id": f"LA_{self.pr.repo.id}_{n}", "color": "ededed"}
            for n in self.pr.labels
        ]
        return connection(nodes, field="labels", first=first, last=last, after=after, before=before)

    def is_in_merge_queue(self) -> bool:
        return self.ctx.gh._entry(self.pr) is not None

    def is_merge_queue_enabled(self) -> bool:
        return self.pr.base_ref in self.pr.repo.queue_branches

    def merge_queue_entry(self) -> MergeQueueEntryObject | None:
        entry = self.ctx.gh._entry(self.pr)
        return None if entry is None else MergeQueueEntryObject(self.ctx, entry)

    def merge_queue(self) -> MergeQueueObject | None:
        queue = self.ctx.gh.queue(self.pr.repo, self.pr.base_ref)
        return None if queue is None else MergeQueueObject(self.ctx, queue)

    def auto_merge_request(self) -> Json | None:
        auto = self.pr.auto_merge
        if auto is None:
            return None
        return {
            "enabledAt": iso(auto.enabled_at),
            "enabledBy": actor(self.ctx, auto.enabled_by),
            "mergeMethod": auto.merge_method,
            "commitHeadline": auto.commit_title,
            "commitBody": auto.commit_message,
            "authorEmail": None,
            "pullRequest": self,
        }

    def _conflicts(self) -> bool:
        base = self.base_ref_oid()
        sha, _ = git.merge_commit(
            self.pr.repo.require_git(), base=base, head=self.pr.head_sha, message="probe"
        )
        return sha is None

    def mergeable(self) -> str:
        if self.pr.merged or self.pr.state != "open":
            return "UNKNOWN"
        return "CONFLICTING" if self._conflicts() else "MERGEABLE"

    def merge_state_status(self) -> str:
        if self.pr.merged or self.pr.state != "open":
            return "UNKNOWN"
        if self._conflicts():
            return "DIRTY"
        checks = self.ctx.gh.checks_state(self.pr.repo, self.pr.head_sha)
        return {"success": "CLEAN", "none": "CLEAN", "pending": "BLOCKED", "failure": "BLOCKED"}[
            checks
        ]

    def commits(
        self,
        first: int | None = None,
        last: int | None = None,
        after: str | None = None,
        before: str | None = None,
    ) -> Json:
        repo = self.pr.repo
        text = git.out(
            repo.require_git(), "rev-list", "--reverse", f"{self.pr.base_sha}..{self.pr.head_sha}"
        )
        shas = text.splitlines() or [self.pr.head_sha]
        nodes = [
            {
                "__typename": "PullRequestCommit",
                "id": f"PURC_{self.pr.id}_{sha[:12]}",
                "commit": Commit(self.ctx, repo, sha),
                "pullRequest": self,
                "url": f"{self.url()}/commits/{sha}",
            }
            for sha in shas
        ]
        return connection(
            nodes, field="commits", first=first, last=last, after=after, before=before
        )

    def comments(
        self,
        first: int | None = None,
        last: int | None = None,
        after: str | None = None,
        before: str | None = None,
        order_by: Json | None = None,
    ) -> Json:
        nodes = [
            CommentObject(self.ctx, c)
            for c in self.ctx.gh.comments_on(self.pr.repo, self.pr.number)
        ]
        return connection(
            nodes, field="comments", first=first, last=last, after=after, before=before
        )

    def timeline_items(
        self,
        item_types: list[str] | None = None,
        first: int | None = None,
        last: int | None = None,
        after: str | None = None,
        before: str | None = None,
        since: str | None = None,
        skip: int | None = None,
    ) -> Json:
        items: list[tuple[Any, int, Any]] = [
            (e.created_at, e.id, TimelineObject(self.ctx, e, self.pr)) for e in self.pr.timeline
        ]
        items += [
            (c.created_at, c.id, CommentObject(self.ctx, c))
            for c in self.ctx.gh.comments_on(self.pr.repo, self.pr.number)
        ]
        items.sort(key=lambda t: (t[0], t[1]))
        wanted = {_typename(t) for t in item_types} if item_types else None
        nodes = [obj for _, _, obj in items if wanted is None or obj.typename in wanted]
        if skip:
            nodes = nodes[skip:]
        updated = iso(self.pr.updated_at)
        return connection(
            nodes,
            field="timelineItems",
            first=first,
            last=last,
            after=after,
            before=before,
            filteredCount=len(nodes),
            pageCount=len(nodes),
            updatedAt=updated,
        )


class CommentObject:
    typename = "IssueComment"

    def __init__(self, ctx: Context, comment: IssueComment) -> None:
        self.ctx, self.comment = ctx, comment
        self.id = comment.node_id
        self.database_id = comment.id
        self.full_database_id = str(comment.id)
        self.body = comment.body
        self.body_text = comment.body
        self.is_minimized = comment.minimized_reason is not None
        self.minimized_reason = comment.minimized_reason
        self.viewer_did_author = comment.author == ctx.viewer
        self.created_via_email = False
        self.includes_created_edit = comment.updated_at != comment.created_at

    def author(self) -> Actor | None:
        return actor(self.ctx, self.comment.author)

    def created_at(self) -> str | None:
        return iso(self.comment.created_at)

    def updated_at(self) -> str | None:
        return iso(self.comment.updated_at)

    published_at = created_at

    def last_edited_at(self) -> str | None:
        return iso(self.comment.updated_at) if self.includes_created_edit else None

    def url(self) -> str:
        c = self.comment
        return f"{self.ctx.gh.urls.web}/{c.repo}/pull/{c.issue_number}#issuecomment-{c.id}"

    def pull_request(self) -> PullRequestObject:
        return PullRequestObject(
            self.ctx, self.ctx.gh.pull(self.comment.repo, self.comment.issue_number)
        )

    issue = pull_request

    def author_association(self) -> str:
        from landbot.sim.payloads import author_association

        return author_association(self.ctx.gh.repo(self.comment.repo), self.comment.author)


class TimelineObject:
    """Any recorded timeline event; fields exist only where the event type has them."""

    def __init__(self, ctx: Context, event: TimelineEvent, pr: PullRequest) -> None:
        self.ctx, self.event, self.pr = ctx, event, pr
        self.typename = event.typename
        self.id = event.node_id
        data = event.data
        if "reason" in data:
            self.reason = data["reason"]
        if event.typename == "RemovedFromMergeQueueEvent":
            self.before_commit = Commit(ctx, pr.repo, data["before_commit"])
        if event.typename == "HeadRefForcePushedEvent":
            self.before_commit = Commit(ctx, pr.head_repo, data["before_commit"])
            self.after_commit = Commit(ctx, pr.head_repo, data["after_commit"])
            self.ref = Ref(ctx, pr.head_repo, data["ref"])
        if "enqueuer" in data:
            self.enqueuer = actor(ctx, data["enqueuer"])
        if event.typename == "AutoMergeEnabledEvent":
            self.enabler = actor(ctx, event.actor)
        if event.typename == "AutoMergeDisabledEvent":
            self.disabler = actor(ctx, event.actor)
            self.reason_code = None
        if event.typename == "MergedEvent":
            self.commit = Commit(ctx, pr.repo, data["commit"])
            self.merge_ref_name = data["ref"]
            self.merge_ref = Ref(ctx, pr.repo, data["ref"])
        if event.typename == "LabeledEvent":
            self.label = {
                "__typename": "Label",
                "name": data["label"],
                "id": f"LA_{pr.repo.id}_{data['label']}",
            }
            self.labelable = PullRequestObject(ctx, pr)
        if event.typename == "ClosedEvent":
            self.closable = PullRequestObject(ctx, pr)
            self.closer = None
            self.state_reason = None

    def actor(self) -> Actor | None:
        return actor(self.ctx, self.event.actor)

    def created_at(self) -> str | None:
        return iso(self.event.created_at)

    def pull_request(self) -> PullRequestObject:
        return PullRequestObject(self.ctx, self.pr)

    def merge_queue(self) -> MergeQueueObject | None:
        if "queue" not in self.event.data:
            raise NotServed(self.typename, "mergeQueue")
        queue = self.ctx.gh.queue(self.pr.repo, self.event.data["queue"])
        return None if queue is None else MergeQueueObject(self.ctx, queue)


def wrap(ctx: Context, obj: object) -> Any:
    """The resolver object for a model object (for `node(id:)`)."""
    if isinstance(obj, Repository):
        return RepositoryObject(ctx, obj)
    if isinstance(obj, PullRequest):
        return PullRequestObject(ctx, obj)
    if isinstance(obj, IssueComment):
        return CommentObject(ctx, obj)
    if isinstance(obj, QueueEntry):
        return MergeQueueEntryObject(ctx, obj)
    if isinstance(obj, MergeQueue):
        return MergeQueueObject(ctx, obj)
    if isinstance(obj, User):
        return Actor(ctx, obj)
    if isinstance(obj, TimelineEvent):
        pr = next(p for r in ctx.gh.repos.values() for p in r.pulls.values() if obj in p.timeline)
        return TimelineObject(ctx, obj, pr)
    return None


# --- the root -----------------------------------------------------------------------------


class Root:
    """Query and Mutation fields."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    # queries

    def repository(self, owner: str, name: str, follow_renames: bool = True) -> RepositoryObject:
        full = f"{owner}/{name}"
        repo = self.ctx.gh.repos.get(full.lower())
        if repo is None or not self.ctx.can_see(repo):
            raise NotFound(f"Could not resolve to a Repository with the name '{full}'.")
        return RepositoryObject(self.ctx, repo)

    def _node(self, node_id: str) -> Any:
        obj = self.ctx.gh.nodes.get(node_id)
        wrapped = None if obj is None else wrap(self.ctx, obj)
        if wrapped is None:
            raise NotFound(f"Could not resolve to a node with the global id of '{node_id}'")
        return wrapped

    def node(self, id: str) -> Any:
        return self._node(id)

    def nodes(self, ids: list[str]) -> list[Any]:
        return [self._node(i) for i in ids]

    def viewer(self) -> Actor:
        return Actor(self.ctx, self.ctx.gh.user(self.ctx.viewer))

    def rate_limit(self, dry_run: bool = False) -> Json:
        return {
            "cost": 1,
            "limit": 5000,
            "nodeCount": 1,
            "remaining": 4999,
            "resetAt": iso(self.ctx.gh.clock.now()),
            "used": 1,
        }

    # mutations

    def _pull(self, node_id: str, mutation: str) -> PullRequest:
        obj = self.ctx.gh.nodes.get(node_id)
        if not isinstance(obj, PullRequest) or not self.ctx.can_see(obj.repo):
            raise NotFound(f"Could not resolve to a node with the global id of '{node_id}'")
        self.ctx.require_write(obj.repo, mutation)
        return obj

    def enqueue_pull_request(self, input: Json) -> Json:
        pr = self._pull(input["pullRequestId"], "EnqueuePullRequest")
        entry = self.ctx.gh.enqueue(
            pr,
            actor=self.ctx.viewer,
            jump=bool(input.get("jump")),
            expected_head_oid=input.get("expectedHeadOid"),
        )
        return {
            "clientMutationId": input.get("clientMutationId"),
            "mergeQueueEntry": MergeQueueEntryObject(self.ctx, entry),
        }

    def dequeue_pull_request(self, input: Json) -> Json:
        pr = self._pull(input["id"], "DequeuePullRequest")
        entry = self.ctx.gh.dequeue(pr, actor=self.ctx.viewer)
        return {
            "clientMutationId": input.get("clientMutationId"),
            "mergeQueueEntry": MergeQueueEntryObject(self.ctx, entry),
        }

    def enable_pull_request_auto_merge(self, input: Json) -> Json:
        pr = self._pull(input["pullRequestId"], "EnablePullRequestAutoMerge")
        self.ctx.gh.enable_auto_merge(
            pr,
            actor=self.ctx.viewer,
            merge_method=input.get("mergeMethod") or "MERGE",
            expected_head_oid=input.get("expectedHeadOid"),
            commit_title=input.get("commitHeadline"),
            commit_message=input.get("commitBody"),
        )
        return {
            "clientMutationId": input.get("clientMutationId"),
            "pullRequest": PullRequestObject(self.ctx, pr),
            "actor": self.viewer(),
        }

    def disable_pull_request_auto_merge(self, input: Json) -> Json:
        pr = self._pull(input["pullRequestId"], "DisablePullRequestAutoMerge")
        self.ctx.gh.disable_auto_merge(pr, actor=self.ctx.viewer)
        return {
            "clientMutationId": input.get("clientMutationId"),
            "pullRequest": PullRequestObject(self.ctx, pr),
            "actor": self.viewer(),
        }

    def _comment(self, node_id: str) -> IssueComment:
        obj = self.ctx.gh.nodes.get(node_id)
        if not isinstance(obj, IssueComment):
            raise NotFound(f"Could not resolve to a node with the global id of '{node_id}'")
        return obj

    def minimize_comment(self, input: Json) -> Json:
        comment = self._comment(input["subjectId"])
        repo = self.ctx.gh.repo(comment.repo)
        if comment.author != self.ctx.viewer:
            self.ctx.require_write(repo, "MinimizeComment")
        self.ctx.gh.minimize_comment(comment, input["classifier"])
        return {
            "clientMutationId": input.get("clientMutationId"),
            "minimizedComment": CommentObject(self.ctx, comment),
        }

    def unminimize_comment(self, input: Json) -> Json:
        comment = self._comment(input["subjectId"])
        if comment.author != self.ctx.viewer:
            self.ctx.require_write(self.ctx.gh.repo(comment.repo), "UnminimizeComment")
        comment.minimized_reason = None
        return {
            "clientMutationId": input.get("clientMutationId"),
            "unminimizedComment": CommentObject(self.ctx, comment),
        }
