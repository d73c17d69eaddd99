"""Deliveries become records and jobs; the same removal seen twice is one drop."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from landbot.core.groups import parse_group_ref
from landbot.github.models import PullRemovals, QueueEvent
from landbot.intake import events
from landbot.intake.poll import sweep
from landbot.pipeline import deliveries
from landbot.store import Store

HEAD = "a" * 40
BASE_SHA = "c" * 40
GROUP_SHA = "d" * 40
T0 = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.UTC)


def deliver(
    store: Store, event: str, payload: dict, *, guid: str = "g1", at: dt.datetime = T0
) -> str:  # type: ignore[type-arg]
    d = events.parse(guid, event, at, json.dumps(payload).encode())
    return deliveries.apply(d, store)


def dequeued(reason: str = "CI_FAILURE", head: str = HEAD, number: int = 7) -> dict:  # type: ignore[type-arg]
    return {
        "action": "dequeued",
        "number": number,
        "reason": reason,
        "pull_request": {
            "number": number,
            "head": {"sha": head, "ref": "feat"},
            "base": {"ref": "main"},
        },
        "repository": {"full_name": "o/r"},
    }


def test_dequeued_records_a_drop_and_a_job(store: Store) -> None:
    deliver(store, "pull_request", dequeued())
    [drop] = store.drops()
    assert (drop.repo, drop.pr, drop.head_sha, drop.reason, drop.raw_reason, drop.source) == (
        "o/r",
        7,
        HEAD,
        "failed_checks",
        "CI_FAILURE",
        "webhook",
    )
    [job] = store.jobs()
    assert (job.kind, job.payload["drop_id"], job.status) == ("drop", drop.id, "queued")


def test_undocumented_reason_is_kept_as_unknown(store: Store) -> None:
    deliver(store, "pull_request", dequeued("BRANCH_REMOVED"))
    [drop] = store.drops()
    assert (drop.reason, drop.raw_reason) == ("unknown", "BRANCH_REMOVED")


def test_webhook_then_poll_is_one_drop(store: Store) -> None:
    deliver(store, "pull_request", dequeued("CI_TIMEOUT"), at=T0)
    removal = QueueEvent(
        "removed", "RFMQE_1", T0 - dt.timedelta(seconds=3), "checks_timed_out", HEAD, "github"
    )
    pr = PullRemovals(
        "o/r",
        7,
        "PR_7",
        HEAD,
        "main",
        False,
        (QueueEvent("added", "A1", T0 - dt.timedelta(minutes=9), None, None, "alice"), removal),
    )

    class Sweep:
        calls = 0

        def queue_removals(self, repo: str, *, first: int = 50) -> list[PullRemovals]:
            self.calls += 1
            return [pr]

    gh = Sweep()
    assert sweep(store, gh, "o/r", now=T0) == []
    assert sweep(store, gh, "o/r", now=T0) == []  # again: still the same drop
    assert len(store.drops()) == 1 and len(store.jobs()) == 1 and gh.calls == 2


def test_poll_then_webhook_is_one_drop_and_poll_alone_records(store: Store) -> None:
    removal = QueueEvent("removed", "RFMQE_2", T0, "failed_checks", HEAD, "github")
    pr = PullRemovals("o/r", 8, "PR_8", HEAD, "main", False, (removal,))

    class Sweep:
        def queue_removals(self, repo: str, *, first: int = 50) -> list[PullRemovals]:
            return [pr]

    assert len(sweep(store, Sweep(), "o/r", now=T0)) == 1  # the control: a missed webhook
    deliver(store, "pull_request", dequeued(number=8), at=T0 + dt.timedelta(seconds=20))
    assert len(store.drops()) == 1


def test_poll_skips_queued_old_and_re_added(store: Store) -> None:
    old = QueueEvent("removed", "R_old", T0 - dt.timedelta(days=3), "failed_checks", HEAD, None)
    re_added = (
        QueueEvent("removed", "R1", T0, "failed_checks", HEAD, None),
        QueueEvent("added", "A2", T0, None, None, "bob"),
    )
    prs = [
        PullRemovals(
            "o/r",
            1,
            "P1",
            HEAD,
            "main",
            True,
            (QueueEvent("removed", "R0", T0, "failed_checks", HEAD, None),),
        ),
        PullRemovals("o/r", 2, "P2", HEAD, "main", False, (old,)),
        PullRemovals("o/r", 3, "P3", HEAD, "main", False, re_added),
        PullRemovals("o/r", 4, "P4", HEAD, "main", False, ()),
    ]

    class Sweep:
        def queue_removals(self, repo: str, *, first: int = 50) -> list[PullRemovals]:
            return prs

    assert sweep(store, Sweep(), "o/r", now=T0) == []


def test_the_same_pr_dropped_again_later_is_a_new_drop(store: Store) -> None:
    deliver(store, "pull_request", dequeued(), guid="g1", at=T0)
    deliver(store, "pull_request", dequeued(), guid="g2", at=T0 + dt.timedelta(hours=2))
    assert len(store.drops()) == 2


def test_synchronize_cancels_work_for_the_old_head(store: Store) -> None:
    deliver(store, "pull_request", dequeued())
    other = {**dequeued(number=9)}
    deliver(store, "pull_request", other, guid="g9")
    deliver(
        store,
        "pull_request",
        {
            "action": "synchronize",
            "number": 7,
            "before": HEAD,
            "after": "e" * 40,
            "pull_request": {},
            "repository": {"full_name": "o/r"},
        },
        guid="g2",
    )
    statuses = {j.payload["drop_id"]: j.status for j in store.jobs()}
    assert sorted(statuses.values()) == ["cancelled", "queued"]  # PR 9's job is untouched


def test_closed_cancels_the_pr_work(store: Store) -> None:
    deliver(store, "pull_request", dequeued())
    deliver(
        store,
        "pull_request",
        {"action": "closed", "number": 7, "pull_request": {}, "repository": {"full_name": "o/r"}},
        guid="g2",
    )
    assert [j.status for j in store.jobs()] == ["cancelled"]


def test_merge_group_and_failed_runs_are_remembered(store: Store) -> None:
    ref = f"refs/heads/gh-readonly-queue/release/2.x/pr-7-{BASE_SHA}"
    group = {
        "head_sha": GROUP_SHA,
        "head_ref": ref,
        "base_sha": BASE_SHA,
        "base_ref": "refs/heads/release/2.x",
    }
    deliver(
        store,
        "merge_group",
        {"action": "checks_requested", "merge_group": group, "repository": {"full_name": "o/r"}},
    )
    deliver(
        store,
        "workflow_run",
        {
            "action": "completed",
            "workflow_run": {
                "id": 5,
                "name": "CI",
                "conclusion": "failure",
                "head_sha": GROUP_SHA,
                "head_branch": ref.removeprefix("refs/heads/"),
                "html_url": "u",
            },
            "repository": {"full_name": "o/r"},
        },
        guid="g2",
    )
    deliver(
        store,
        "workflow_run",
        {
            "action": "completed",
            "workflow_run": {
                "id": 6,
                "name": "CI",
                "conclusion": "success",
                "head_sha": GROUP_SHA,
                "head_branch": ref.removeprefix("refs/heads/"),
            },
            "repository": {"full_name": "o/r"},
        },
        guid="g3",
    )
    deliver(
        store,
        "merge_group",
        {
            "action": "destroyed",
            "reason": "dequeued",
            "merge_group": group,
            "repository": {"full_name": "o/r"},
        },
        guid="g4",
    )
    [g] = store.groups_for("o/r", 7)
    assert (g.head_sha, g.base_ref, g.status) == (GROUP_SHA, "release/2.x", "destroyed:dequeued")
    assert [f["id"] for f in g.failures] == [5]


def test_retry_comment_becomes_a_command_job(store: Store) -> None:
    payload = {
        "action": "created",
        "issue": {"number": 7, "pull_request": {"url": "x"}},
        "comment": {
            "id": 99,
            "body": "flaky again\n/landbot retry\n",
            "user": {"login": "alice", "type": "User"},
        },
        "repository": {"full_name": "o/r"},
    }
    deliver(store, "issue_comment", payload)
    [job] = store.jobs()
    assert job.payload == {
        "command": "retry",
        "repo": "o/r",
        "pr": 7,
        "user": "alice",
        "comment_id": 99,
        "user_type": "User",
        "lines": ["/landbot retry"],
    }
    # Controls: prose mentioning the command, a quote of it, a bot, and an issue (not a PR)
    # make no job (`/landbot retryall` is one now: it gets the help text).
    for i, body in enumerate(["please /landbot retry this", "> /landbot retry"]):
        deliver(
            store,
            "issue_comment",
            {**payload, "comment": {**payload["comment"], "body": body}},
            guid=f"p{i}",
        )
    deliver(
        store,
        "issue_comment",
        {**payload, "comment": {**payload["comment"], "user": {"login": "x[bot]", "type": "Bot"}}},
        guid="b",
    )
    deliver(store, "issue_comment", {**payload, "issue": {"number": 7}}, guid="i")
    assert len(store.jobs()) == 1


def test_unknown_events_are_kept_and_not_a_crash(store: Store) -> None:
    assert deliver(
        store, "star", {"action": "created", "repository": {"full_name": "o/r"}}
    ).startswith("not handled")
    assert deliver(store, "pull_request", {**dequeued(), "action": "labeled"}).startswith(
        "not handled"
    )


def test_malformed_payload_raises_for_the_worker_to_record(store: Store) -> None:
    with pytest.raises(ValueError):
        deliver(store, "pull_request", {"action": "dequeued", "repository": {"full_name": "o/r"}})
    with pytest.raises(ValueError):
        events.parse("g", "pull_request", T0, b"[1, 2]")


@pytest.mark.parametrize(
    ("ref", "expected"),
    [
        (f"refs/heads/gh-readonly-queue/main/pr-12-{BASE_SHA}", ("main", 12)),
        (f"gh-readonly-queue/release/v2/pr-3-{BASE_SHA}", ("release/v2", 3)),
        (f"gh-readonly-queue/a/pr-1-x/pr-4-{BASE_SHA}", ("a/pr-1-x", 4)),
        ("refs/heads/main", None),
        (f"gh-readonly-queue/main/pr-x-{BASE_SHA}", None),
        ("gh-readonly-queue/main/pr-1-abc", None),
        (None, None),
    ],
)
def test_group_refs_parse_anchored_at_the_end(
    ref: str | None, expected: tuple[str, int] | None
) -> None:
    parsed = parse_group_ref(ref)
    assert (None if parsed is None else (parsed.base, parsed.pr)) == expected


def test_a_removal_after_the_drop_was_requeued_is_a_new_drop(store: Store) -> None:
    seen = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=30)
    deliver(store, "pull_request", dequeued("CI_TIMEOUT"), at=seen)
    [first] = store.drops()
    store.update_drop(first.id, outcome="requeued")  # re-enqueued now, just after
    later = seen + dt.timedelta(minutes=5)
    again = QueueEvent("removed", "R_again", later, "checks_timed_out", HEAD, "github")
    pr = PullRemovals("o/r", 7, "PR_7", HEAD, "main", False, (again,))

    class Sweep:
        def queue_removals(self, repo: str, *, first: int = 50) -> list[PullRemovals]:
            return [pr]

    # Within the same-removal window of the first drop, but after its re-enqueue: new.
    assert len(sweep(store, Sweep(), "o/r", now=later, lookback=dt.timedelta(days=400))) == 1
    assert len(store.drops()) == 2


def test_the_same_removal_of_a_handed_back_drop_is_still_one_drop(store: Store) -> None:
    deliver(store, "pull_request", dequeued("CI_FAILURE"), at=T0)
    [first] = store.drops()
    store.update_drop(first.id, outcome="handed_back")
    same = QueueEvent(
        "removed", "R_same", T0 - dt.timedelta(seconds=2), "failed_checks", HEAD, None
    )
    pr = PullRemovals("o/r", 7, "PR_7", HEAD, "main", False, (same,))

    class Sweep:
        def queue_removals(self, repo: str, *, first: int = 50) -> list[PullRemovals]:
            return [pr]

    assert sweep(store, Sweep(), "o/r", now=T0, lookback=dt.timedelta(days=400)) == []
    assert len(store.drops()) == 1


def test_a_drop_and_its_job_are_recorded_together_or_not_at_all(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("disk full")

    monkeypatch.setattr(store, "add_job", broken)
    with pytest.raises(RuntimeError):
        deliver(store, "pull_request", dequeued())
    assert store.drops() == []  # the drop rolled back with its job
    monkeypatch.undo()
    deliver(store, "pull_request", dequeued())  # the control: the same delivery records both
    assert len(store.drops()) == 1 and len(store.jobs()) == 1
