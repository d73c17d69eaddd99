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

import datetime as dt
import hashlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Protocol

from landbot import logs
from landbot.core.model import JobFailure
from landbot.errors import LandbotError
from landbot.github.errors import GitHubError, MutationOutcomeUnknown, NotFound
from landbot.github.models import FileContent, Issue
from landbot.github.ops import IssueOps, WritesIssues
from landbot.land.act import refused
from landbot.land.codeowners import test_owners
from landbot.land.flaky_issues import KIND, FlakyDecision, FlakyIssuePolicy, IssueText
from landbot.land.flaky_issues import body as flaky_body
from landbot.land.flaky_issues import marker as flaky_marker
from landbot.land.flaky_issues import title as flaky_title
from landbot.store import Store
from landbot.store.records import FlakyTestHistory, StoredFlakyIssue, StoredPost

log = logging.getLogger("landbot.land.issues")

# comment_posts' bounded columns (migration 0009).
_KEY_MAX = 300
_MARKER_MAX = 100
NO_PR = 0  # comment_posts.pr of a claim that is an issue, not a comment on a PR
# A create claimed by another sweep this recently may still be on its way: left to it.
CLAIM_BUSY = dt.timedelta(minutes=2)


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


class IssueBusy(LandbotError):
    """Another process claimed this issue's create moments ago and may be sending it now."""


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
    busy: dt.timedelta | None = None,
    now: dt.datetime | None = None,
) -> IssueRef:
    """Make issue `key` once: kept as posted, its number; claimed before without one, found
    by its marker; else created (with `label`, which the finding relies on).

    With `busy`, a claim another owner made less than `busy` ago raises IssueBusy instead:
    its POST may be in flight, and a look now would not find it (two sweeps of two workers;
    a job's writers need no such wait, the store leases one job of a PR at a time)."""
    if marker not in body:
        body = f"{marker}\n{body}"
    claim = store.claim_post(key, repo=repo, pr=NO_PR, marker=marker[:_MARKER_MAX], owner=owner)
    if claim.claimed == "posted" and claim.comment_id is not None:
        return IssueRef(int(claim.comment_id), claim.node_id, claim.url)
    if (
        busy is not None
        and claim.claimed == "posting"
        and claim.owner != owner
        and (now or dt.datetime.now(dt.UTC)) - claim.updated_at < busy
    ):
        raise IssueBusy(f"issue {key} is being made by {claim.owner}")
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


# --- one issue per flaky test ---------------------------------------------------------------


class FlakyIssueWriter:
    """Carries out flaky_issues.decide's decisions on GitHub, then records them in the store
    (`flaky_issues`), so a write that failed is decided again by the next sweep.

    Calls: opening reads CODEOWNERS (1 to 3 calls, where GitHub looks; once per repository
    per writer) and creates the issue (1; after a lost answer, 1 more to list landbot's
    issues with the label); an edit, a close or a reopen is 1 PATCH."""

    def __init__(self, store: Store, gh: IssueOps, *, owner: str, policy: FlakyIssuePolicy) -> None:
        self.store = store
        self.gh = gh
        self.owner = owner
        self.policy = policy
        self._codeowners: dict[str, FileContent | None] = {}

    def apply(
        self,
        repo: str,
        test: str,
        decision: FlakyDecision,
        history: FlakyTestHistory | None,
        issue: StoredFlakyIssue | None,
        jobs: Mapping[tuple[int, str], JobFailure],
        now: dt.datetime,
    ) -> StoredFlakyIssue | None:
        """Do what `decision` says; the row as recorded after it (None: nothing done)."""
        if decision.action == "nothing":
            return None
        if decision.action == "open":
            assert history is not None  # decide opens only on evidence
            return self._open(repo, test, history, issue, jobs, now)
        assert issue is not None and issue.number is not None  # the rest act on an issue
        owners = tuple((issue.owners or "").split())
        text = IssueText(owners=owners, quiet=self.policy.quiet)
        try:
            if decision.action == "close":
                if history is None:  # aged out of the ledger: nothing to show but the state
                    self.gh.close_issue(repo, issue.number)
                else:
                    closing = replace(text, closing=True)
                    self.gh.update_issue(
                        repo,
                        issue.number,
                        body=flaky_body(history, jobs, closing, now),
                        state="closed",
                        state_reason="completed",
                    )
                return self.store.save_flaky_issue(repo, test, state="closed", closed_at=now)
            assert history is not None  # update and reopen come from new failures
            self.gh.update_issue(
                repo,
                issue.number,
                body=flaky_body(history, jobs, text, now),
                state="open" if decision.action == "reopen" else None,
            )
        except NotFound:
            # Deleted or transferred by a person: landbot stops writing to it (a failure
            # after this would reopen it, and find it gone again).
            logs.event(
                log, "flaky issue gone", logging.WARNING, repo=repo, issue=issue.number, test=test
            )
            return self.store.save_flaky_issue(repo, test, state="closed", closed_at=now)
        return self.store.save_flaky_issue(
            repo, test, state="open", closed_at=None, **_shown(history)
        )

    def _open(
        self,
        repo: str,
        test: str,
        history: FlakyTestHistory,
        issue: StoredFlakyIssue | None,
        jobs: Mapping[tuple[int, str], JobFailure],
        now: dt.datetime,
    ) -> StoredFlakyIssue:
        if issue is not None and issue.owners is not None:
            owners = tuple(issue.owners.split())  # an earlier try's: the same mention
            where = None
        else:
            found = self._read_codeowners(repo)
            owners = test_owners(found.text if found else None, test)
            where = found.path if found else None
            # Kept before the create: a retry after a crash mentions the same owners.
            self.store.save_flaky_issue(repo, test, owners=" ".join(owners), number=None)
        text = IssueText(
            owners=owners, mention=True, quiet=self.policy.quiet, codeowners_path=where
        )
        ref = open_issue_once(
            self.store,
            self.gh,
            repo,
            key=issue_key(repo, KIND, test),
            marker=flaky_marker(test),
            label=self.policy.label,
            title=flaky_title(test),
            body=flaky_body(history, jobs, text, now),
            owner=self.owner,
            busy=CLAIM_BUSY,
        )
        return self.store.save_flaky_issue(
            repo, test, number=ref.number, state="open", closed_at=None, **_shown(history)
        )

    def _read_codeowners(self, repo: str) -> FileContent | None:
        if repo not in self._codeowners:
            try:
                self._codeowners[repo] = self.gh.codeowners(repo)
            except GitHubError as exc:
                # No owner is better than no issue: it says CODEOWNERS named none.
                logs.event(log, "CODEOWNERS not read", logging.WARNING, repo=repo, error=exc)
                self._codeowners[repo] = None
        return self._codeowners[repo]


def _shown(history: FlakyTestHistory | None) -> dict[str, object]:
    if history is None:
        return {}
    return {
        "failures_shown": len(history.failures),
        "passed_shown": len(history.passed_prs),
        "last_failure_at": history.last_failure_at,
    }
