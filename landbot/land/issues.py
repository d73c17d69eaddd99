"""Issues landbot keeps itself (a flaky test's, the breaker's): made once, edited after.

Each issue carries a hidden marker in its body and is claimed in the store's comment
ledger (`comment_posts`, the same claim-before-POST the comments use) before its POST:

mutation        after an unknown outcome (or a claim found without a number)
--------------  --------------------------------------------------------------------------
create          landbot's own issues with the label are listed (`own_issues`) for the
                marker: found, it is the one (kept as posted); not found, created once more
edit, close,    sent again: a PATCH setting the same fields gives the same issue
reopen

A claim kept as posted is never created again: every later writer edits that number.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from typing import Protocol

from landbot import logs
from landbot.github.errors import GitHubError, MutationOutcomeUnknown
from landbot.github.models import Issue
from landbot.github.ops import WritesIssues
from landbot.land.act import refused
from landbot.store.records import StoredPost

log = logging.getLogger("landbot.land.issues")

# comment_posts' bounded columns (migration 0009).
_KEY_MAX = 300
_MARKER_MAX = 100
NO_PR = 0  # comment_posts.pr of a claim that is an issue, not a comment on a PR


class ClaimsPosts(Protocol):
    """The store's comment ledger, as the issue writer uses it."""

    def claim_post(
        self,
        key: str,
        *,
        repo: str,
        pr: int,
        marker: str,
        owner: str,
        drop_id: int | None = None,
    ) -> StoredPost: ...

    def posted(
        self, key: str, comment_id: int, node_id: str | None, url: str | None = None
    ) -> None: ...

    def post(self, key: str) -> StoredPost | None: ...


@dataclass(frozen=True)
class IssueRef:
    """The issue a claim stands for: its number (and node id and address when known)."""

    number: int
    node_id: str | None = None
    url: str | None = None
    created: bool = False  # made by this call (not found again, nor kept before)


def issue_key(repo: str, kind: str, name: str) -> str:
    """The ledger key of issue `kind` (e.g. "flaky-test") about `name` in `repo`: bounded,
    so a long test id hashes."""
    key = f"issue:{repo.lower()}:{kind}:{name}"
    if len(key) <= _KEY_MAX:
        return key
    digest = hashlib.sha256(name.encode()).hexdigest()
    return f"issue:{repo.lower()}:{kind}:sha256:{digest}"[:_KEY_MAX]


def find_marked(gh: WritesIssues, repo: str, label: str, marker: str) -> Issue | None:
    """landbot's own issue carrying `marker` (an open one first, else the newest)."""
    mine = [i for i in gh.own_issues(repo, label) if marker in i.body]
    if not mine:
        return None
    open_ = [i for i in mine if i.state == "open"]
    return (open_ or mine)[-1]


def open_issue_once(
    store: ClaimsPosts,
    gh: WritesIssues,
    repo: str,
    *,
    key: str,
    marker: str,
    label: str,
    title: str,
    body: str,
    owner: str,
) -> IssueRef:
    """Make issue `key` once: kept as posted, its number; claimed before without one, found
    by its marker; else created (with `label`, which the finding relies on)."""
    if marker not in body:
        body = f"{marker}\n{body}"
    claim = store.claim_post(key, repo=repo, pr=NO_PR, marker=marker[:_MARKER_MAX], owner=owner)
    if claim.claimed == "posted" and claim.comment_id is not None:
        return IssueRef(int(claim.comment_id), claim.node_id, claim.url)
    found = find_marked(gh, repo, label, marker) if claim.claimed == "posting" else None
    created = found is None
    if found is None:
        try:
            found = _create(gh, repo, title, body, label)
        except MutationOutcomeUnknown:
            # Made or not: the marker says which; created once more only if not.
            found = find_marked(gh, repo, label, marker)
            created = found is None
            if found is None:
                found = _create(gh, repo, title, body, label)
    store.posted(key, found.number, found.node_id, found.html_url)
    logs.event(log, "issue opened" if created else "issue found", repo=repo, issue=found.number)
    return IssueRef(found.number, found.node_id, found.html_url, created=created)


def _create(gh: WritesIssues, repo: str, title: str, body: str, label: str) -> Issue:
    try:
        return gh.create_issue(repo, title, body, labels=(label,))
    except MutationOutcomeUnknown:
        raise
    except GitHubError as exc:
        raise refused("issue", exc) from exc
