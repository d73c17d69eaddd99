"""Payloads we did not write (octokit's published examples, see fixtures/README.md) parse
into the models and give the outcome they should against a real Store.

The models read an absent or unreadable field as None, so a misspelled field name would
read None silently: every test here also checks that each field landbot reads comes out
with the value the published payload holds.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from landbot.intake import events, payloads
from landbot.pipeline import deliveries
from landbot.store import Store

FIXTURES = Path(__file__).parent / "fixtures"
T0 = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.UTC)

# The pull request of the published pull_request examples.
REPO = "Codertocat/Hello-World"
PR = 2
HEAD = "ec26c3e57ca3a959ca5aad62de7213c562f8c821"
BEFORE = "f95f852bd8fca8fcc58a9a2d6c842781e32a215e"


def published(name: str) -> bytes:
    return (FIXTURES / f"{name}.payload.json").read_bytes()


def parse(event: str, body: bytes, guid: str = "g1") -> events.WebhookEvent[payloads.Payload]:
    return events.parse(guid, event, T0, body)


def queue_event(action: str, **fields: Any) -> bytes:
    """A pull_request.enqueued or .dequeued: no published example exists, so its fields per
    octokit's schema, filled with the real parts of the published synchronize payload."""
    real = json.loads(published("pull_request.synchronize"))
    keep = ("number", "pull_request", "repository", "installation", "sender")
    return json.dumps({"action": action, **{k: real[k] for k in keep}, **fields}).encode()


def a_drop(store: Store, head: str) -> int:
    drop_id, _ = events.record_drop(
        store,
        repo=REPO,
        pr=PR,
        head_sha=head,
        raw_reason="CI_FAILURE",
        source="webhook",
        observed_at=T0,
        delivery_id=f"earlier-{head[:7]}",
    )
    return drop_id


def test_a_dequeued_built_from_the_real_pull_request_records_a_drop(store: Store) -> None:
    d = parse("pull_request", queue_event("dequeued", reason="CI_FAILURE"))
    assert isinstance(d.payload, payloads.PullRequestDequeued)
    assert (d.repo, d.payload.pr_number, d.payload.pull_request.head.sha) == (REPO, PR, HEAD)
    assert deliveries.apply(d, store) == "drop 1 (new): CI_FAILURE"
    [drop] = store.drops()
    assert (drop.repo, drop.pr, drop.head_sha, drop.reason, drop.raw_reason) == (
        REPO,
        PR,
        HEAD,
        "failed_checks",
        "CI_FAILURE",
    )
    [job] = store.jobs()
    assert (job.kind, job.payload) == ("drop", {"drop_id": drop.id, "base_ref": "master"})


def test_an_enqueued_built_from_the_real_pull_request_is_noted(store: Store) -> None:
    d = parse("pull_request", queue_event("enqueued"))
    assert deliveries.apply(d, store) == f"{REPO}#{PR} entered the queue"
    assert store.jobs() == []


def test_the_real_synchronize_cancels_only_the_old_heads_work(store: Store) -> None:
    old, current = a_drop(store, BEFORE), a_drop(store, HEAD)
    d = parse("pull_request", published("pull_request.synchronize"))
    assert isinstance(d.payload, payloads.PullRequestSynchronize)
    assert d.payload.before == BEFORE
    assert deliveries.apply(d, store) == f"head moved from {BEFORE[:7]}: cancelled 1 job(s)"
    assert {j.drop_id: j.status for j in store.jobs()} == {old: "cancelled", current: "queued"}


def test_the_real_closed_cancels_the_pr_work_as_closed_not_merged(store: Store) -> None:
    a_drop(store, HEAD)
    d = parse("pull_request", published("pull_request.closed"))
    assert isinstance(d.payload, payloads.PullRequestClosed)
    assert d.payload.pull_request.merged is False  # read from the payload, not defaulted
    assert deliveries.apply(d, store) == "closed: cancelled 1 job(s)"
    [drop] = store.drops()
    assert (drop.outcome, drop.summary) == ("ignored", "the pull request is closed")


def test_the_real_merge_group_is_remembered_then_destroyed(store: Store) -> None:
    base_sha = "929f8209d40f77f4abc622a499c93a83babdbe64"  # from the group ref
    head_ref = f"refs/heads/gh-readonly-queue/main/pr-104-{base_sha}"
    d = parse("merge_group", published("merge_group.checks_requested"))
    assert isinstance(d.payload, payloads.MergeGroupEvent)
    assert deliveries.apply(d, store) == "group 2ffea6d for #104: checks_requested"
    [g] = store.groups_for("octo-org/octo-repo", 104)
    assert (g.head_sha, g.head_ref, g.base_ref, g.base_sha, g.status) == (
        "2ffea6db159f6b6c47a24e778fb9ef40cf6b1c7d",
        head_ref,
        "main",
        "380387fbc80638b734a49e1be1c4dfec1c01b33c",  # the payload's base_sha wins over the ref's
        "checks_requested",
    )
    d = parse("merge_group", published("merge_group.destroyed"), guid="g2")
    assert isinstance(d.payload, payloads.MergeGroupDestroyed)
    assert deliveries.apply(d, store) == "group 2ffea6d for #104: destroyed:merged"
    [g] = store.groups_for("octo-org/octo-repo", 104)
    assert g.status == "destroyed:merged"


def test_the_real_failed_check_run_is_not_on_a_merge_group(store: Store) -> None:
    d = parse("check_run", published("check_run.completed.1"))
    assert isinstance(d.payload, payloads.CheckRunCompleted)
    run = d.payload.check_run
    assert (run.id, run.name, run.conclusion, run.head_sha, run.html_url) == (
        128620228,
        "Octocoders-linter",
        "failure",
        HEAD,
        "https://github.com/Codertocat/Hello-World/runs/128620228",
    )
    assert run.check_suite.head_branch == "changes"  # an ordinary branch: not a group's
    assert deliveries.apply(d, store) == "not a failed merge-group check run"
    assert store.groups_for(REPO, PR) == []


def test_the_real_workflow_run_is_not_on_a_merge_group(store: Store) -> None:
    d = parse("workflow_run", published("workflow_run.completed"))
    assert isinstance(d.payload, payloads.WorkflowRunCompleted)
    run = d.payload.workflow_run
    assert (run.id, run.name, run.conclusion, run.head_sha, run.head_branch, run.html_url) == (
        289782451,
        "",
        "success",
        "3484a3fb816e0859fd6e1cea078d76385ff50625",
        "master",
        "https://github.com/octo-org/octo-repo/actions/runs/289782451",
    )
    assert deliveries.apply(d, store) == "not a failed merge-group workflow run"


def test_the_real_issue_comment_is_on_an_issue_not_a_pull_request(store: Store) -> None:
    d = parse("issue_comment", published("issue_comment.created"))
    assert isinstance(d.payload, payloads.IssueCommentCreated)
    issue, comment = d.payload.issue, d.payload.comment
    assert (issue.number, issue.is_pull_request) == (1, False)
    assert (comment.id, comment.user.login, comment.user.type) == (492700400, "Codertocat", "User")
    assert comment.body == "You are totally right! I'll get this fixed right away."
    assert deliveries.apply(d, store) == "not a pull request comment"
    assert store.jobs() == []


def test_a_real_pull_requests_issue_reads_as_a_pull_request() -> None:
    real = json.loads(published("issues.milestoned"))
    issue = payloads.Issue.model_validate(real["issue"])
    assert (issue.number, issue.is_pull_request) == (2, True)
