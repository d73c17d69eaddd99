"""What the land loop needs from GitHub: a Protocol, so the loop depends on operations, not
on a client (the real one is landbot.github.client.GitHubClient)."""

from __future__ import annotations

from typing import Any, Protocol

from landbot.github.models import CheckRun, Comment, EnqueueResult, PullState, WorkflowRun


class GitHubOps(Protocol):
    def pull_request(self, repo: str, number: int) -> PullState: ...

    def check_runs(self, repo: str, ref: str) -> list[CheckRun]: ...

    def merge_group_runs(self, repo: str, *, head_sha: str | None = None) -> list[WorkflowRun]: ...

    def comments(self, repo: str, number: int) -> list[Comment]: ...

    def create_comment(self, repo: str, number: int, body: str) -> Comment: ...

    def upsert_marked_comment(
        self, repo: str, number: int, marker: str, body: str, *, known_id: int | None = None
    ) -> Comment: ...

    def minimize_comment(
        self, node_id: str, classifier: str = "OUTDATED", *, repo: str | None = None
    ) -> Any: ...

    def add_reaction(self, repo: str, comment_id: int, content: str) -> Any: ...

    def enqueue(
        self, pr_node_id: str, expected_head_oid: str | None, *, repo: str | None = None
    ) -> EnqueueResult: ...

    def enable_auto_merge(
        self,
        pr_node_id: str,
        expected_head_oid: str,
        merge_method: str = "MERGE",
        *,
        repo: str | None = None,
    ) -> Any: ...

    def collaborator_permission(self, repo: str, username: str) -> str: ...
