"""GitHub's JSON (REST objects, GraphQL nodes) to the dataclasses of models.py.

Pure functions. Required fields are read with [] (a KeyError means GitHub, or a fake,
answered something else; the client turns it into a GitHubError); optional ones with .get.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from landbot.github.models import (
    Annotation,
    Artifact,
    BranchHead,
    CheckRun,
    Comment,
    EnqueueResult,
    Issue,
    Job,
    MergeQueueEntry,
    PullRemovals,
    PullState,
    QueueEvent,
    Step,
    WorkflowRun,
)


def timestamp(value: Any) -> datetime | None:
    """An ISO 8601 time from GitHub ("2026-11-03T10:15:30Z"), or None."""
    if not isinstance(value, str) or not value:
        return None
    return datetime.fromisoformat(value)


def _login(actor: Any) -> str | None:
    return str(actor["login"]) if isinstance(actor, dict) and actor.get("login") else None


def pull_state(repo: str, node: dict[str, Any]) -> PullState:
    labels = ((node.get("labels") or {}).get("nodes")) or []
    head_repo = node.get("headRepository")
    items = _timeline(node)
    removals = [e for e in (queue_event(i) for i in items) if e is not None and e.kind == "removed"]
    commits = ((node.get("commits") or {}).get("nodes")) or []
    return PullState(
        repo=repo,
        node_id=str(node["id"]),
        number=int(node["number"]),
        state=str(node["state"]),
        merged=bool(node.get("merged")),
        head_oid=str(node["headRefOid"]),
        head_ref=str(node["headRefName"]),
        base_ref=str(node["baseRefName"]),
        in_merge_queue=bool(node.get("isInMergeQueue")),
        auto_merge=node.get("autoMergeRequest") is not None,
        labels=tuple(str(label["name"]) for label in labels if label),
        author=_login(node.get("author")),
        maintainer_can_modify=bool(node.get("maintainerCanModify")),
        head_repo=str(head_repo["nameWithOwner"]) if isinstance(head_repo, dict) else None,
        url=str(node.get("url") or ""),
        last_removal=removals[-1] if removals else None,
        force_pushed_at=_force_pushes(items),
        commits=tuple(
            str(c["commit"]["oid"]) for c in commits if isinstance(c, dict) and c.get("commit")
        ),
    )


def check_run(obj: dict[str, Any]) -> CheckRun:
    app = obj.get("app")
    return CheckRun(
        id=int(obj["id"]),
        name=str(obj["name"]),
        status=str(obj.get("status") or ""),
        conclusion=obj.get("conclusion"),
        html_url=obj.get("html_url"),
        details_url=obj.get("details_url"),
        app_slug=app.get("slug") if isinstance(app, dict) else None,
        started_at=timestamp(obj.get("started_at")),
        completed_at=timestamp(obj.get("completed_at")),
        annotations_count=_annotations_count(obj.get("output")),
        head_sha=str(obj["head_sha"]) if obj.get("head_sha") else None,
        external_id=str(obj["external_id"]) if obj.get("external_id") else None,
    )


def _annotations_count(output: Any) -> int:
    count = output.get("annotations_count") if isinstance(output, dict) else None
    return count if isinstance(count, int) and count > 0 else 0


def annotation(obj: dict[str, Any]) -> Annotation:
    line = obj.get("start_line")
    end = obj.get("end_line")
    start = line if isinstance(line, int) else 0
    return Annotation(
        path=str(obj.get("path") or ""),
        start_line=start,
        annotation_level=str(obj.get("annotation_level") or ""),
        message=str(obj.get("message") or ""),
        title=str(obj.get("title") or ""),
        end_line=end if isinstance(end, int) and end != start else None,
    )


def branch_head(obj: dict[str, Any]) -> BranchHead:
    """`GET /repos/{o}/{r}/branches/{branch}`: its name and the commit at its tip."""
    return BranchHead(branch=str(obj["name"]), sha=str(obj["commit"]["sha"]))


class NotAFile(ValueError):
    """The contents API answered for something that is not a file (the text says what)."""


@dataclass(frozen=True)
class RawFile:
    """A `type: file` answer of the contents API; `content` None when GitHub sent none
    (`encoding: none`, a file over 1 MB: read it with the raw media type)."""

    path: str
    sha: str
    size: int
    content: bytes | None


def file_content(obj: Any) -> RawFile:
    """`GET /repos/{o}/{r}/contents/{path}` for a file. A directory is a list; a symlink
    whose target is not a file in the repository comes as `type: symlink`, a submodule as
    `type: submodule` (GitHub's docs): each is refused."""
    if isinstance(obj, list):
        raise NotAFile("is a directory")
    kind = obj["type"]
    if kind == "symlink":
        raise NotAFile(f"is a symlink to {obj.get('target')!r}, outside the repository's files")
    if kind == "submodule":
        raise NotAFile("is a submodule")
    if kind != "file":
        raise NotAFile(f"is a {kind}, not a file")
    encoding = obj.get("encoding")
    content: bytes | None
    if encoding == "base64":
        try:
            # GitHub wraps the base64 text at 60 characters: the newlines are not data.
            content = base64.b64decode("".join(str(obj["content"]).split()), validate=True)
        except binascii.Error as exc:
            raise ValueError(f"bad base64 content: {exc}") from None
    elif encoding == "none" or (encoding in (None, "") and not obj.get("content")):
        content = None
    else:
        raise ValueError(f"content encoding {encoding!r}")
    return RawFile(
        path=str(obj["path"]), sha=str(obj["sha"]), size=int(obj["size"]), content=content
    )


def workflow_run(obj: dict[str, Any]) -> WorkflowRun:
    return WorkflowRun(
        id=int(obj["id"]),
        name=obj.get("name"),
        head_branch=obj.get("head_branch"),
        head_sha=str(obj["head_sha"]),
        status=obj.get("status"),
        conclusion=obj.get("conclusion"),
        html_url=str(obj.get("html_url") or ""),
        display_title=str(obj.get("display_title") or ""),
        event=obj.get("event"),
        path=obj.get("path"),
        created_at=timestamp(obj.get("created_at")),
    )


def artifact(obj: dict[str, Any]) -> Artifact:
    run = obj.get("workflow_run") or {}
    return Artifact(
        id=int(obj["id"]),
        name=str(obj["name"]),
        size_in_bytes=int(obj["size_in_bytes"]),
        expired=bool(obj.get("expired")),
        run_id=int(run["id"]) if isinstance(run, dict) and run.get("id") is not None else None,
        head_sha=run.get("head_sha") if isinstance(run, dict) else None,
    )


def job(obj: dict[str, Any]) -> Job:
    steps = obj.get("steps") or []
    return Job(
        id=int(obj["id"]),
        run_id=int(obj["run_id"]) if obj.get("run_id") is not None else None,
        name=str(obj["name"]),
        status=obj.get("status"),
        conclusion=obj.get("conclusion"),
        html_url=obj.get("html_url"),
        steps=tuple(
            Step(
                number=int(s["number"]),
                name=str(s["name"]),
                status=s.get("status"),
                conclusion=s.get("conclusion"),
            )
            for s in steps
        ),
    )


def comment(obj: dict[str, Any]) -> Comment:
    return Comment(
        id=int(obj["id"]),
        node_id=str(obj.get("node_id") or ""),
        body=str(obj.get("body") or ""),
        user=_login(obj.get("user")),
        created_at=timestamp(obj.get("created_at")),
        html_url=obj.get("html_url"),
    )


def issue(obj: dict[str, Any]) -> Issue:
    labels = obj.get("labels") or []
    return Issue(
        number=int(obj["number"]),
        node_id=str(obj.get("node_id") or ""),
        title=str(obj["title"]),
        body=str(obj.get("body") or ""),
        state=str(obj["state"]),
        # GitHub lists a label as an object, or (in some payloads) as a bare name.
        labels=tuple(
            str(label["name"]) if isinstance(label, dict) else str(label)
            for label in labels
            if label
        ),
        user=_login(obj.get("user")),
        html_url=obj.get("html_url"),
        created_at=timestamp(obj.get("created_at")),
        updated_at=timestamp(obj.get("updated_at")),
        closed_at=timestamp(obj.get("closed_at")),
        state_reason=obj.get("state_reason"),
    )


def enqueue_result(data: dict[str, Any] | None) -> EnqueueResult:
    entry = ((data or {}).get("enqueuePullRequest") or {}).get("mergeQueueEntry") or {}
    position = entry.get("position")
    return EnqueueResult(
        already_queued=False,
        entry_id=entry.get("id"),
        state=entry.get("state"),
        position=int(position) if position is not None else None,
    )


def queue_event(node: dict[str, Any]) -> QueueEvent | None:
    kind = {"RemovedFromMergeQueueEvent": "removed", "AddedToMergeQueueEvent": "added"}.get(
        str(node.get("__typename"))
    )
    if kind is None:
        return None  # another timeline item type: not asked for, ignore
    before = node.get("beforeCommit")
    parents = ((before.get("parents") or {}).get("nodes") or []) if isinstance(before, dict) else []
    return QueueEvent(
        kind=kind,
        id=str(node["id"]),
        created_at=timestamp(node.get("createdAt")),
        reason=node.get("reason"),
        before_commit=str(before["oid"]) if isinstance(before, dict) else None,
        actor=_login(node.get("actor")),
        before_parents=tuple(str(p["oid"]) for p in parents if isinstance(p, dict)),
    )


def pull_removals(repo: str, node: dict[str, Any]) -> PullRemovals:
    items = _timeline(node)
    events = tuple(e for e in (queue_event(item) for item in items) if e is not None)
    return PullRemovals(
        repo=repo,
        number=int(node["number"]),
        node_id=str(node["id"]),
        head_oid=str(node["headRefOid"]),
        base_ref=str(node["baseRefName"]),
        in_merge_queue=bool(node.get("isInMergeQueue")),
        events=events,
        force_pushed_at=_force_pushes(items),
    )


def _timeline(node: dict[str, Any]) -> list[dict[str, Any]]:
    return [i for i in ((node.get("timelineItems") or {}).get("nodes")) or [] if i]


def _force_pushes(items: list[dict[str, Any]]) -> tuple[datetime, ...]:
    """The HeadRefForcePushedEvents' times, in timeline order."""
    pushes = (
        timestamp(i.get("createdAt"))
        for i in items
        if i.get("__typename") == "HeadRefForcePushedEvent"
    )
    return tuple(t for t in pushes if t is not None)


def merge_queue_entry(node: dict[str, Any]) -> MergeQueueEntry:
    pr = node.get("pullRequest") or {}
    head = node.get("headCommit")
    base = node.get("baseCommit")
    return MergeQueueEntry(
        id=str(node["id"]),
        state=str(node["state"]),
        position=int(node["position"]),
        pr_number=int(pr["number"]) if pr.get("number") is not None else None,
        pr_node_id=pr.get("id"),
        head_oid=str(head["oid"]) if isinstance(head, dict) else None,
        base_oid=str(base["oid"]) if isinstance(base, dict) else None,
        enqueued_at=timestamp(node.get("enqueuedAt")),
    )
