"""The store hands back frozen records named like its columns, and core values where they exist."""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any

import pytest
import sqlalchemy as sa

from landbot.core.model import Drop, History
from landbot.store import (
    Store,
    StoredAction,
    StoredDelivery,
    StoredDrop,
    StoredGroup,
    StoredJob,
)
from landbot.store import store as store_module
from landbot.store.tables import actions, deliveries, drops, jobs, merge_groups

SHA = "b" * 40
GROUP = "c" * 40
TTL = dt.timedelta(seconds=60)
T0 = dt.datetime(2026, 1, 1, 12, 0, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    ("record", "table"),
    [
        (StoredDrop, drops),
        (StoredJob, jobs),
        (StoredDelivery, deliveries),
        (StoredGroup, merge_groups),
        (StoredAction, actions),
    ],
)
def test_each_record_has_one_field_per_column(record: type[Any], table: sa.Table) -> None:
    fields = {"class" if f.name == "class_" else f.name for f in dataclasses.fields(record)}
    assert fields == {c.name for c in table.columns}


def test_a_drop_comes_back_as_a_record_holding_the_core_drop(store: Store) -> None:
    drop_id, _ = store.add_drop(
        repo="o/r", pr=7, head_sha=SHA, reason="failed_checks", source="webhook",
        dedupe_key="k", raw_reason="CI_FAILURE", merge_group_sha=GROUP, observed_at=T0,
        delivery_id="guid-1",
    )  # fmt: skip
    store.update_drop(drop_id, outcome="handed_back", class_="genuine", summary="boom", plan={})
    row = store.drop(drop_id)
    assert isinstance(row, StoredDrop) and store.drops() == [row]
    assert (row.class_, row.outcome, row.summary, row.plan, row.evidence) == (
        "genuine", "handed_back", "boom", {}, None,
    )  # fmt: skip
    assert (row.dedupe_key, row.delivery_id, row.removal_id) == ("k", "guid-1", None)
    assert row.updated_at >= row.created_at and row.updated_at.tzinfo is dt.UTC
    assert row.drop == Drop(
        repo="o/r", pr=7, head_sha=SHA, reason="failed_checks", source="webhook",
        raw_reason="CI_FAILURE", merge_group_sha=GROUP, observed_at=T0, id=drop_id,
    )  # fmt: skip
    with pytest.raises(dataclasses.FrozenInstanceError):
        row.outcome = "fixed"  # type: ignore[misc]
    assert store.drop(drop_id + 1) is None


def test_a_leased_delivery_holds_the_stored_delivery(store: Store) -> None:
    store.record_delivery("guid-1", "pull_request", "dequeued", "o/r", b'{"a": 1}')
    lease = store.lease_delivery("w1", TTL)
    assert lease is not None and isinstance(lease.payload, StoredDelivery)
    d = lease.payload
    assert (lease.id, lease.kind, lease.attempts) == (d.id, "pull_request", 1)
    assert (d.delivery_id, d.event, d.action, d.repo, d.body) == (
        "guid-1", "pull_request", "dequeued", "o/r", b'{"a": 1}',
    )  # fmt: skip
    assert (d.status, d.lease_owner, d.received_at.tzinfo) == ("leased", "w1", dt.UTC)


def test_jobs_come_back_as_records_and_a_job_lease_holds_its_payload(store: Store) -> None:
    job_id = store.add_job("fix", {"drop_id": 3, "mode": "agent"}, dedupe_key="o/r#1@x")
    assert job_id is not None
    lease = store.lease_job("w1", TTL)
    assert lease is not None and lease.payload == {"drop_id": 3, "mode": "agent"}
    store.finish_job(job_id, "w1", result={"verdict": "fixed"})
    job = store.job(job_id)
    assert isinstance(job, StoredJob) and store.jobs() == [job] == store.jobs("done")
    assert (job.kind, job.dedupe_key, job.status, job.attempts, job.result) == (
        "fix", "o/r#1@x", "done", 1, {"verdict": "fixed"},
    )  # fmt: skip
    assert store.jobs("queued") == [] and store.job(job_id + 1) is None


def test_merge_groups_come_back_as_records_newest_first(store: Store) -> None:
    store.remember_group(
        repo="o/r", pr=7, head_sha=GROUP, head_ref="gh-readonly-queue/main/pr-7-x",
        base_ref="main", base_sha="a" * 40, status="checks_requested",
    )  # fmt: skip
    failure = {"id": 5, "name": "test"}
    store.add_group_failure("o/r", "d" * 40, failure, pr=7, head_ref="gh-readonly-queue/main/y")
    newest, oldest = store.groups_for("o/r", 7)
    assert isinstance(newest, StoredGroup)
    assert (newest.head_sha, newest.base_ref, newest.failures) == ("d" * 40, None, [failure])
    assert (oldest.head_sha, oldest.base_ref, oldest.failures) == (GROUP, "main", [])
    assert store.groups_for("o/r", 8) == []


def test_the_action_ledger_comes_back_as_records(store: Store) -> None:
    drop_id, _ = store.add_drop(
        repo="o/r", pr=7, head_sha=SHA, reason="manual", source="poll", dedupe_key="k"
    )
    store.begin_action("a1", "requeue", drop_id)
    store.begin_action("a2", "status")
    store.finish_action("a1", "done", {"queued": True})
    [a1, a2] = store.actions()
    assert isinstance(a1, StoredAction)
    assert (a1.key, a1.kind, a1.drop_id, a1.status, a1.result) == (
        "a1", "requeue", drop_id, "done", {"queued": True},
    )  # fmt: skip
    assert (a2.drop_id, a2.status, a2.result) == (None, "started", None)
    assert store.actions(drop_id) == [a1]


def test_budgets_are_the_core_history(store: Store) -> None:
    assert store.budget("o/r", 1, SHA) == History()
    assert store.spend("o/r", 1, SHA, requeues=1) == History(requeues=1, fixer_attempts=0)
    assert store.spend("o/r", 1, SHA, fixes=2) == History(requeues=1, fixer_attempts=2)
    assert store.budget("o/r", 1, SHA) == History(1, 2)
    assert not hasattr(store_module, "Budget") and not hasattr(Store, "action_status")


def test_counts_group_every_row(store: Store) -> None:
    for pr, outcome in [(1, "handed_back"), (2, "handed_back"), (3, None)]:
        drop_id, _ = store.add_drop(
            repo="o/r", pr=pr, head_sha=SHA, reason="manual", source="poll", dedupe_key=str(pr)
        )
        if outcome:
            store.update_drop(drop_id, outcome=outcome)
    store.add_job("drop", {})
    store.record_delivery("g1", "ping", None, None, b"{}")
    store.record_delivery("g2", "ping", None, None, b"{}")
    store.lease_delivery("w", TTL)
    counts = store.counts()
    assert dict(counts.drops) == {"handed_back": 2, "pending": 1}
    assert dict(counts.jobs) == {"queued": 1}
    assert dict(counts.deliveries) == {"leased": 1, "pending": 1}
