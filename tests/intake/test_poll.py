"""The sweep records a drop only at a head it can show was the one removed.

Each refusal has its control: the same removal, told apart by one fact (the commit named,
its parents, a force push's time), is recorded.
"""

from __future__ import annotations

import datetime as dt
import json
import logging

import pytest

from landbot.github import parse
from landbot.github.models import PullRemovals, QueueEvent
from landbot.intake import events
from landbot.intake.poll import Unmatched, removed_head, sweep, sweep_report
from landbot.pipeline import deliveries
from landbot.store import Store

HEAD = "a" * 40  # the PR head now
OLD = "b" * 40  # an older head, before a push
BASE = "c" * 40
GROUP = "d" * 40  # a merge-group commit
T0 = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.UTC)


class Sweep:
    def __init__(self, *prs: PullRemovals) -> None:
        self.prs = list(prs)

    def queue_removals(self, repo: str, *, first: int = 50) -> list[PullRemovals]:
        return self.prs


def removal(
    before: str | None, parents: tuple[str, ...] = (), *, at: dt.datetime = T0, rid: str = "R1"
) -> QueueEvent:
    return QueueEvent("removed", rid, at, "failed_checks", before, "github", parents)


def pull(
    event: QueueEvent, *, head: str = HEAD, pushed: tuple[dt.datetime, ...] = ()
) -> PullRemovals:
    return PullRemovals("o/r", 7, "PR_7", head, "main", False, (event,), pushed)


# (what GitHub named as removed, its parents, force pushes) -> the head recorded, or None
CASES = [
    pytest.param(HEAD, (), (), HEAD, id="the head itself"),
    pytest.param(GROUP, (BASE, HEAD), (), HEAD, id="the group commit built on the head"),
    pytest.param(OLD, (), (), None, id="an older head: pushed since"),
    pytest.param(GROUP, (BASE, OLD), (), None, id="a group commit built on an older head"),
    pytest.param(GROUP, (HEAD, BASE), (), None, id="head as first parent: not a group commit"),
    pytest.param(GROUP, (BASE,), (), None, id="a squash group: the head is not a parent"),
    pytest.param(GROUP, (BASE, HEAD, OLD), (), None, id="an octopus: not a group commit"),
    pytest.param(None, (), (), None, id="no commit named"),
    pytest.param(HEAD, (), (T0,), None, id="force-pushed at the removal"),
    pytest.param(HEAD, (), (T0 + dt.timedelta(minutes=3),), None, id="force-pushed after"),
    pytest.param(GROUP, (BASE, HEAD), (T0 + dt.timedelta(minutes=3),), None, id="group, pushed"),
    pytest.param(HEAD, (), (T0 - dt.timedelta(minutes=3),), HEAD, id="force-pushed before"),
]


@pytest.mark.parametrize(("before", "parents", "pushed", "expected"), CASES)
def test_removed_head(
    before: str | None,
    parents: tuple[str, ...],
    pushed: tuple[dt.datetime, ...],
    expected: str | None,
) -> None:
    pr = pull(removal(before, parents), pushed=pushed)
    got = removed_head(pr, pr.events[-1])
    if expected is None:
        assert isinstance(got, Unmatched)
        assert (got.pr, got.removal_id, got.removed, got.head) == (7, "R1", before, HEAD)
    else:
        assert got == expected


@pytest.mark.parametrize(("before", "parents", "pushed", "expected"), CASES)
def test_sweep_records_only_the_removed_head(
    store: Store,
    before: str | None,
    parents: tuple[str, ...],
    pushed: tuple[dt.datetime, ...],
    expected: str | None,
) -> None:
    result = sweep_report(
        store, Sweep(pull(removal(before, parents), pushed=pushed)), "o/r", now=T0
    )
    if expected is None:
        assert result.new == [] and len(result.unmatched) == 1
        assert store.drops() == [] and store.jobs() == []
    else:
        assert len(result.new) == 1 and result.unmatched == []
        [drop] = store.drops()
        assert (drop.head_sha, drop.source, drop.removal_id) == (expected, "poll", "R1")
        assert len(store.jobs()) == 1


def test_an_unmatched_removal_is_logged(store: Store, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="landbot.intake.poll"):
        assert sweep(store, Sweep(pull(removal(OLD))), "o/r", now=T0) == []
    [line] = [r for r in caplog.records if "nothing to do" in r.getMessage()]
    fields = line.landbot_fields  # the identifiers are fields of the line, not only words
    assert (fields["repo"], fields["pr"], fields["removed_sha"], fields["head_sha"]) == (
        "o/r",
        7,
        OLD,
        HEAD,
    )


def dequeued(head: str, at: dt.datetime, store: Store, guid: str = "g1") -> str:
    body = {
        "action": "dequeued",
        "number": 7,
        "reason": "CI_FAILURE",
        "pull_request": {"number": 7, "head": {"sha": head, "ref": "f"}, "base": {"ref": "main"}},
        "repository": {"full_name": "o/r"},
    }
    return str(
        deliveries.apply(events.parse(guid, "pull_request", at, json.dumps(body).encode()), store)
    )


@pytest.mark.parametrize(
    ("before", "parents"), [(HEAD, ()), (GROUP, (BASE, HEAD))], ids=["head", "group"]
)
def test_webhook_then_sweep_of_one_removal_is_one_drop(
    store: Store, before: str, parents: tuple[str, ...]
) -> None:
    dequeued(HEAD, T0 + dt.timedelta(seconds=2), store)
    result = sweep_report(store, Sweep(pull(removal(before, parents))), "o/r", now=T0)
    [drop] = store.drops()
    assert result.new == [] and result.seen == [drop.id]
    assert (drop.source, drop.head_sha, drop.removal_id) == ("webhook", HEAD, "R1")
    assert len(store.jobs()) == 1


@pytest.mark.parametrize(
    ("before", "parents"), [(HEAD, ()), (GROUP, (BASE, HEAD))], ids=["head", "group"]
)
def test_sweep_then_webhook_of_one_removal_is_one_drop(
    store: Store, before: str, parents: tuple[str, ...]
) -> None:
    [new] = sweep(store, Sweep(pull(removal(before, parents))), "o/r", now=T0)
    dequeued(HEAD, T0 + dt.timedelta(seconds=20), store)
    [drop] = store.drops()
    assert (drop.id, drop.source, drop.head_sha, drop.delivery_id) == (new, "poll", HEAD, "g1")
    assert len(store.jobs()) == 1


def test_a_webhook_at_the_old_head_and_a_sweep_after_a_push_do_nothing_new(store: Store) -> None:
    """The webhook's drop stays the only one: the sweep names the old head, now gone."""
    dequeued(OLD, T0 + dt.timedelta(seconds=2), store)
    result = sweep_report(store, Sweep(pull(removal(OLD))), "o/r", now=T0)
    assert result.new == [] and result.seen == [] and len(result.unmatched) == 1
    [drop] = store.drops()
    assert (drop.head_sha, drop.removal_id) == (OLD, None)


def test_the_sweep_reads_parents_and_force_pushes_from_the_answer() -> None:
    node = {
        "id": "PR_7",
        "number": 7,
        "headRefOid": HEAD,
        "baseRefName": "main",
        "isInMergeQueue": False,
        "timelineItems": {
            "nodes": [
                {
                    "__typename": "RemovedFromMergeQueueEvent",
                    "id": "R1",
                    "createdAt": "2026-11-30T12:00:00Z",
                    "reason": "failed_checks",
                    "beforeCommit": {
                        "oid": GROUP,
                        "parents": {"nodes": [{"oid": BASE}, {"oid": HEAD}]},
                    },
                    "actor": {"login": "github-merge-queue"},
                },
                {"__typename": "HeadRefForcePushedEvent", "createdAt": "2026-11-30T12:01:00Z"},
            ]
        },
    }
    pr = parse.pull_removals("o/r", node)
    [event] = pr.events
    assert event.before_parents == (BASE, HEAD)
    assert pr.force_pushed_at == (T0 + dt.timedelta(minutes=1),)
    assert isinstance(removed_head(pr, event), Unmatched)  # pushed after the removal
    # The control: the same answer without the force push ties the group commit to the head.
    node["timelineItems"]["nodes"] = node["timelineItems"]["nodes"][:1]  # type: ignore[index]
    pr = parse.pull_removals("o/r", node)
    assert pr.force_pushed_at == () and removed_head(pr, pr.events[0]) == HEAD
