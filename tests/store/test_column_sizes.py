"""Every string and number landbot writes fits its column, on SQLite and on PostgreSQL.

PostgreSQL enforces VARCHAR(n) and 32-bit INTEGER; SQLite enforces neither, so a value that
fits only on SQLite passes every SQLite test and fails in production (issue 11: a
`merge_group.destroyed` delivery for an invalidated group wrote `destroyed:invalidated`, 21
characters, into a 20-character column). Below: every bounded column of tables.py, the
longest value any writer can give it (built from the code that makes it where there is
such code), and a scenario that writes all of them through the Store on both backends.
"""

from __future__ import annotations

import datetime as dt
from typing import get_args

import pytest
import sqlalchemy as sa

from landbot.core import keys
from landbot.core.model import Outcome, Source, TriageClass
from landbot.core.reasons import REASONS
from landbot.land.act import status_key
from landbot.land.comments import FIX_MARKER, HANDBACK_MARKER, STATUS_MARKER
from landbot.land.flaky_issues import KIND
from landbot.land.flaky_issues import marker as flaky_marker
from landbot.land.issues import issue_key
from landbot.land.model import AnnounceFix, Cap, HandBack, Requeue, RunFixer, Status
from landbot.store import Store
from landbot.store.store import CHECK_NAME_CHARS, TEST_ID_CHARS
from landbot.store.tables import metadata
from landbot.web.app import MAX_HEADER_VALUE


def longest(values: object) -> str:
    return max((str(v) for v in values), key=len)  # type: ignore[attr-defined]


# GitHub's own limits: a login or organization is at most 39 characters, a repository name
# at most 100; PR numbers are GraphQL Int (32-bit); comment ids are 64-bit (past 2**31 now).
REPO = "o" * 39 + "/" + "r" * 100
PR = 2**31 - 1
COMMENT_ID = 2**63 - 1
SHA = "f" * 40  # GitHub has no SHA-256 repositories; a SHA-1 is 40 hex digits
# The webhook refuses an X-GitHub-Event or X-GitHub-Delivery longer than this (400).
DELIVERY = "d" * MAX_HEADER_VALUE
EVENT = "e" * MAX_HEADER_VALUE
# GraphQL node ids are opaque with no documented maximum; today's are under 40 characters
# (`RFMQE_kwDOABCDEF8AAAABkLtE2w`), so 100 leaves room. An assumption, kept visible here.
NODE_ID = "N" * 100
# Worker's default name: hostname (HOST_NAME_MAX 64 on Linux), pid (pid_max 4194304), id().
WORKER = "h" * 64 + ":4194304:" + "f" * 16
# Values GitHub sends in a payload with no bound of ours: the action, the dequeue reason,
# the destroyed group's reason, branch names (GitHub's limit is undocumented, ~250 bytes).
FREE = "x" * 5000
BASE_REF = "b" * 1000
GROUP_REF = f"refs/heads/gh-readonly-queue/{BASE_REF}/pr-{PR}-{SHA}"
ACTION_KINDS = [cls.__name__ for cls in (Requeue, Status, HandBack, RunFixer, AnnounceFix)]
LONGEST_ACTION_KEY = longest(
    keys.action(2**31 - 1, 99, kind, after_fixer=True, stage=stage)
    for kind in ACTION_KINDS
    for stage in ("", "release", "held")  # a waiting or held drop's later plans
)

# (table, column) -> the longest value any writer gives it. The writers, by column:
LONGEST: dict[tuple[str, str], str] = {
    # web/app.py record_delivery (headers capped at MAX_HEADER_VALUE; repo from the payload)
    ("deliveries", "delivery_id"): DELIVERY,
    ("deliveries", "event"): EVENT,
    ("deliveries", "action"): FREE,
    ("deliveries", "repo"): REPO,
    # the store's own leasing and the worker's finish_delivery
    ("deliveries", "status"): longest(["pending", "leased", "done", "error"]),
    ("deliveries", "lease_owner"): WORKER,
    # intake/events.py record_drop, intake/poll.py, pipeline/commands.py retry
    ("drops", "repo"): REPO,
    ("drops", "head_sha"): SHA,
    ("drops", "merge_group_sha"): SHA,
    ("drops", "reason"): longest(REASONS),
    ("drops", "raw_reason"): FREE,
    ("drops", "source"): longest(get_args(Source)),
    ("drops", "dedupe_key"): longest(
        [
            f"webhook:{DELIVERY}",
            f"removal:{NODE_ID}",
            f"{longest(get_args(Source))}:{REPO}#{PR}:comment-{COMMENT_ID}",
        ]
    ),
    ("drops", "delivery_id"): DELIVERY,
    ("drops", "removal_id"): NODE_ID,
    # pipeline/process.py, worker.py, deliveries.py (update_drop, cancel_jobs)
    ("drops", "class"): longest(get_args(TriageClass)),
    ("drops", "outcome"): longest(get_args(Outcome)),
    # intake/events.py (drop, command), land/act.py (fix)
    ("jobs", "kind"): longest(["drop", "fix", "command", "repo_file", "hold", "breaker_close"]),
    ("jobs", "dedupe_key"): longest(
        [
            keys.drop_job(REPO, PR, SHA, 2**31 - 1),
            keys.fix_job(REPO, PR, SHA, 2**31 - 1),
            f"command:{DELIVERY}",
            f"repo_file:{DELIVERY}",
            f"hold:{REPO}:{2**31 - 1}",  # store.ensure_repo_job: a finished one steps aside
        ]
    ),
    ("jobs", "status"): longest(["queued", "leased", "done", "failed", "cancelled"]),
    ("jobs", "lease_owner"): WORKER,
    # land/act.py save_comment
    ("comments", "repo"): REPO,
    ("comments", "marker"): longest(["status", "handback"]),
    ("comments", "node_id"): NODE_ID,
    # land/act.py spend, pipeline/commands.py reset_budget
    ("budgets", "repo"): REPO,
    ("budgets", "head_sha"): SHA,
    # land/act.py begin_action / finish_action
    ("actions", "key"): LONGEST_ACTION_KEY,
    ("actions", "kind"): longest(kind.lower() for kind in ACTION_KINDS),
    ("actions", "status"): longest(["started", "done", "failed"]),
    # intake/events.py remember_group (merge_group events) and add_group_failure
    ("merge_groups", "repo"): REPO,
    ("merge_groups", "head_sha"): SHA,
    ("merge_groups", "head_ref"): GROUP_REF,
    ("merge_groups", "base_ref"): BASE_REF,
    ("merge_groups", "base_sha"): SHA,
    ("merge_groups", "status"): "destroyed:" + FREE,
    # store.py record_push / note_head / reset_pr_caps / record_cap, and spend's keyed rows
    # (land/act.py passes the action ledger's key; pipeline/commands.py the drop's)
    ("pr_actions", "key"): longest(
        [
            f"push:{REPO}#{PR}:{SHA}",
            f"head:{REPO}#{PR}:{SHA}",
            f"{LONGEST_ACTION_KEY}:fixer_run",
            f"cap:{LONGEST_ACTION_KEY}",
            f"reset:drop:{2**31 - 1}",
        ]
    ),
    ("pr_actions", "repo"): REPO,
    ("pr_actions", "kind"): longest(
        ["push", "requeue", "fixer_run", "head", "reset", *(f"cap:{c}" for c in get_args(Cap))]
    ),
    ("pr_actions", "sha"): SHA,
    # triage/gather.py weigh_flaky: record_test_failures (longer ids and names are skipped
    # by the store, see test_an_overlong_test_id_is_skipped), record_retry, record_merged
    ("test_failures", "repo"): REPO,
    ("test_failures", "test"): "t" * TEST_ID_CHARS,
    ("test_failures", "check_name"): "c" * CHECK_NAME_CHARS,
    ("test_failures", "head_sha"): SHA,
    ("test_failures", "sha"): SHA,
    ("test_failures", "retry"): longest(["pending", "passed", "failed"]),
    # pipeline/repo_settings.py save_repo_file_read, intake/events.py mark_repo_file_stale
    ("repo_files", "repo"): REPO,
    ("repo_files", "commit_sha"): SHA,
    ("repo_files", "blob_sha"): SHA,
    ("repo_files", "good_commit_sha"): SHA,
    ("repo_files", "good_sha"): SHA,
    # fixer/actions.py: the one-time id (the workflow's job-id pattern allows 64), the
    # installation id (a 64-bit integer) and a workflow file name (config.check_workflow_file)
    ("fix_dispatches", "key"): "k" * 64,
    ("fix_dispatches", "repo"): REPO,
    ("fix_dispatches", "installation"): str(2**63 - 1),
    ("fix_dispatches", "workflow"): "w" * 100 + ".yaml",
    ("fix_dispatches", "state"): "claimed",
    # store.add_job: the job's pull request (its drop's, or a command's payload)
    ("jobs", "repo"): REPO,
    # land/act.py: the comments claimed before their POST (status, hand-back, fix)
    # ...and land/issues.py: the issues landbot keeps (a flaky test's: its key hashes a
    # long test id, its marker is cut to the column)
    ("comment_posts", "key"): longest(
        [
            status_key(REPO, PR),
            f"handback:{PR}",
            f"fix:{PR}:{SHA}",
            issue_key(REPO, KIND, "t" * TEST_ID_CHARS),
            issue_key(REPO, KIND, "t" * (300 - len(issue_key(REPO, KIND, "")))),
        ]
    ),
    ("comment_posts", "repo"): REPO,
    ("comment_posts", "marker"): longest(
        [STATUS_MARKER, HANDBACK_MARKER, FIX_MARKER, flaky_marker("t" * TEST_ID_CHARS)[:100]]
    ),
    ("comment_posts", "state"): longest(["posting", "posted"]),
    ("comment_posts", "owner"): WORKER,
    ("comment_posts", "node_id"): NODE_ID,
    # triage/gather.py: a green job's baseline (longer job names are not kept, see
    # test_baselines.py) and which run it was for a base commit (branch and names unbounded)
    ("baselines", "repo"): REPO.lower(),
    ("baselines", "job_name"): "c" * CHECK_NAME_CHARS,
    ("baselines", "head_sha"): SHA,
    ("baseline_runs", "key"): "k" * 64,  # a sha256 hex digest
    ("baseline_runs", "repo"): REPO.lower(),
    ("baseline_runs", "base_ref"): BASE_REF,
    ("baseline_runs", "workflow"): FREE,
    ("baseline_runs", "job_name"): FREE,
    ("baseline_runs", "base_sha"): SHA,
    ("baseline_runs", "run_sha"): SHA,
    # pipeline/process.py breaker_gate (open_breaker), land/breaker_issue.py
    ("breakers", "repo"): REPO,
    ("breakers", "cause"): longest(["red_base", "infrastructure", "same_failure", "server_error"]),
    ("breakers", "issue_state"): longest(["open", "closed"]),
    ("breakers", "issue_body_sha"): "f" * 64,
    # pipeline/worker.py: a job attempt GitHub failed with a 5xx (the breaker counts them)
    ("server_errors", "repo"): REPO.lower(),
    # github/tally.py process_name (host cut at 120, pid at most 7 digits, Unix time) and
    # CallRecord's labels (an installation id, "app", "token" or "unknown"; rest or graphql;
    # an HTTP status or "error"); the store also cuts each label to its column
    ("call_counts", "process"): f"{'h' * 120}:{2**22}:{2**32}",
    ("call_counts", "installation"): str(2**63),
    ("call_counts", "api"): "graphql",
    ("call_counts", "status"): "error",
    # intake/schedule.py via the store: a watched repository's name, lowercased
    ("repo_sweeps", "repo"): REPO.lower(),
    # pipeline/flaky_issues.py: one issue per flaky test (its id as the ledger keeps it)
    ("flaky_issues", "repo"): REPO,
    ("flaky_issues", "test"): "t" * TEST_ID_CHARS,
    ("flaky_issues", "state"): longest(["open", "closed"]),
}


def _bounded_columns() -> dict[tuple[str, str], int | None]:
    """Every string column of tables.py and its length (None: unbounded)."""
    out: dict[tuple[str, str], int | None] = {}
    for table in metadata.sorted_tables:
        for column in table.columns:
            kind = column.type
            if isinstance(kind, sa.types.TypeDecorator):
                kind = kind.impl_instance
            if isinstance(kind, sa.String):  # Text too (length None)
                out[(table.name, column.name)] = kind.length
    return out


def test_every_string_column_has_its_longest_value_listed() -> None:
    # A new bounded column without an entry here fails: say what the longest write is.
    columns = _bounded_columns()
    assert {c for c, n in columns.items() if n is not None} <= set(LONGEST)
    assert set(LONGEST) <= set(columns)


@pytest.mark.parametrize("column", sorted(LONGEST), ids=lambda c: f"{c[0]}.{c[1]}")
def test_longest_value_fits_its_column(column: tuple[str, str]) -> None:
    length = _bounded_columns()[column]
    assert length is None or len(LONGEST[column]) <= length, (
        f"{column[0]}.{column[1]} is String({length}); a writer gives it"
        f" {len(LONGEST[column])} characters"
    )


def test_the_longest_values_are_stored_and_read_back(store: Store) -> None:
    """Write every longest value through the Store (the writers' own path) and read each
    back unchanged; on PostgreSQL the database enforces every length and INTEGER range."""
    v = LONGEST
    assert store.record_delivery(DELIVERY, EVENT, v[("deliveries", "action")], REPO, b"{}")
    assert _column(store, "deliveries", "status") == [v[("deliveries", "status")]]
    delivery = store.lease_delivery(WORKER, dt.timedelta(minutes=5))
    assert delivery is not None
    assert _column(store, "deliveries", "lease_owner") == [WORKER]
    assert store.finish_delivery(delivery.id, WORKER, "error", error=FREE)

    drop_id, created = store.add_drop(
        repo=REPO,
        pr=PR,
        head_sha=SHA,
        reason=v[("drops", "reason")],
        raw_reason=v[("drops", "raw_reason")],
        source=v[("drops", "source")],
        dedupe_key=v[("drops", "dedupe_key")],
        merge_group_sha=SHA,
        delivery_id=DELIVERY,
        removal_id=NODE_ID,
    )
    assert created
    store.update_drop(drop_id, class_=v[("drops", "class")], outcome=v[("drops", "outcome")])

    job_key = v[("jobs", "dedupe_key")]
    job_id = store.add_job(v[("jobs", "kind")], {}, dedupe_key=job_key, drop_id=drop_id)
    assert job_id is not None
    job = store.lease_job(WORKER, dt.timedelta(minutes=5))
    assert job is not None and job.id == job_id
    assert _column(store, "jobs", "lease_owner") == [WORKER]
    assert store.finish_job(job_id, WORKER, v[("jobs", "status")])

    store.save_comment(REPO, PR, v[("comments", "marker")], COMMENT_ID, NODE_ID)
    store.spend(REPO, PR, SHA, requeues=1)
    assert store.spend(REPO, PR, SHA, fixes=1, key=LONGEST_ACTION_KEY).fixer_attempts == 1
    assert store.record_push(REPO, PR, SHA) and store.note_head(REPO, PR, SHA)
    assert store.reset_pr_caps(REPO, PR, key=f"drop:{2**31 - 1}")
    assert store.record_cap(REPO, PR, "fixer_runs", LONGEST_ACTION_KEY)
    assert store.begin_action(v[("actions", "key")], v[("actions", "kind")], drop_id) == "new"
    assert _column(store, "actions", "status") == [v[("actions", "status")]]
    store.finish_action(v[("actions", "key")], "failed")

    store.remember_group(
        repo=REPO,
        pr=PR,
        head_sha=SHA,
        head_ref=GROUP_REF,
        base_ref=BASE_REF,
        base_sha=SHA,
        status="checks_requested",
    )
    store.remember_group(  # the update path, as a destroyed event takes it
        repo=REPO,
        pr=PR,
        head_sha=SHA,
        head_ref=GROUP_REF,
        base_ref=BASE_REF,
        base_sha=SHA,
        status=v[("merge_groups", "status")],
    )
    store.add_group_failure(REPO, SHA, {"kind": "check_run", "id": 2**63 - 1}, pr=PR, head_ref="")
    test, check = v[("test_failures", "test")], v[("test_failures", "check_name")]
    assert store.record_test_failures(
        repo=REPO, pr=PR, head_sha=SHA, sha=SHA, failures={check: [test]}, drop_id=drop_id
    )
    other = "e" * 40
    assert store.record_retry(
        repo=REPO, pr=PR, head_sha=SHA, sha=other, passed=[], failed={check: [test]}
    )
    assert _column(store, "test_failures", "retry") == ["failed"]
    store.record_test_failures(
        repo=REPO, pr=PR, head_sha=SHA, sha=other, failures={check: [test]}, drop_id=drop_id
    )
    assert store.record_retry(
        repo=REPO, pr=PR, head_sha=SHA, sha="d" * 40, passed=[check], failed={}
    )
    assert sorted(_column(store, "test_failures", "retry")) == ["failed", "passed"]
    assert store.save_repo_file_read(
        REPO, path=FREE, commit_sha=SHA, blob_sha=SHA, text=FREE, good=True,
        read_at=dt.datetime.now(dt.UTC),
    )  # fmt: skip
    claimed = store.claim_dispatch(
        fix_job=PR, drop_id=drop_id, repo=REPO, installation=v[("fix_dispatches", "installation")],
        workflow=v[("fix_dispatches", "workflow")], key=v[("fix_dispatches", "key")], cap=1,
    )  # fmt: skip
    assert claimed.state == v[("fix_dispatches", "state")]
    post = {"repo": REPO, "pr": PR, "marker": v[("comment_posts", "marker")], "owner": WORKER}
    assert store.claim_post(v[("comment_posts", "key")], **post).claimed == "new"
    assert store.claim_post(f"handback:{PR}", **post, drop_id=drop_id).claimed == "new"
    store.posted(f"handback:{PR}", COMMENT_ID, NODE_ID, FREE)
    big = 2**63 - 1  # workflow run and job ids are 64-bit
    job_name = v[("baselines", "job_name")]
    assert store.save_baseline(
        repo=REPO, run_id=big, job_name=job_name, job_id=big, head_sha=SHA, data=b"\0" * 1000
    )
    assert store.baseline(REPO, big, job_name) is not None
    store.remember_baseline_run(
        repo=REPO, base_ref=BASE_REF, workflow=FREE, job_name=FREE, base_sha=SHA,
        run_id=big, run_sha=SHA, job_id=big,
    )  # fmt: skip
    assert store.baseline_run(REPO, BASE_REF, FREE, FREE, SHA) is not None
    now = dt.datetime.now(dt.UTC)
    assert store.open_breaker(
        REPO, cause=v[("breakers", "cause")], detail=FREE, links=[FREE], at=now
    )
    store.set_breaker_issue(
        REPO, number=PR, url=FREE, state=v[("breakers", "issue_state")],
        body_sha=v[("breakers", "issue_body_sha")],
    )  # fmt: skip
    store.save_flaky_issue(
        REPO, v[("flaky_issues", "test")], number=2**31 - 1, state=v[("flaky_issues", "state")]
    )
    store.note_server_error(REPO, now)
    labels = (v[("call_counts", "installation")], v[("call_counts", "api")], "error")
    store.save_call_counts(v[("call_counts", "process")], {labels: 2**62}, now)
    store.note_queue_activity(REPO, now)

    for (table, column), value in sorted(LONGEST.items()):
        # Leases end and statuses move on: those were checked when written, above.
        written_before = column == "lease_owner" or (table, column) in {
            ("deliveries", "status"),
            ("actions", "status"),
            ("test_failures", "retry"),
        }
        if column == "key" and table == "baseline_runs":
            assert len(str(_column(store, table, column)[0])) == 64  # a digest, not this value
            continue
        if not written_before:
            assert value in _column(store, table, column), f"{table}.{column}"
    assert store.comment_ref(REPO, PR, "handback") == (COMMENT_ID, NODE_ID)
    [group] = store.groups_for(REPO, PR)
    assert group.status == v[("merge_groups", "status")]
    assert group.failures == [{"kind": "check_run", "id": 2**63 - 1}]


def _column(store: Store, table: str, column: str) -> list[object]:
    with store.engine.connect() as conn:
        return list(conn.execute(sa.select(metadata.tables[table].c[column])).scalars())


def test_an_overlong_write_is_refused_on_both_backends(store: Store) -> None:
    """SQLite ignores VARCHAR lengths; the store's Str type refuses there what PostgreSQL
    refuses, so the SQLite runs of every test catch an overlong write too."""
    drop_id, _ = store.add_drop(
        repo="o/r", pr=1, head_sha=SHA, reason="manual", source="poll", dedupe_key="k"
    )
    store.update_drop(drop_id, outcome="x" * 20)  # the control: exactly the column's length
    with pytest.raises(sa.exc.StatementError, match=r"too long|does not fit"):
        store.update_drop(drop_id, outcome="x" * 21)
    stored = store.drop(drop_id)
    assert stored is not None and stored.outcome == "x" * 20  # nothing half-written


def test_a_lookup_by_a_longer_value_finds_nothing_on_both_backends(store: Store) -> None:
    # Only writes are checked: PostgreSQL compares an overlong value and matches no row.
    store.spend(REPO, PR, SHA, requeues=1)
    assert store.budget(REPO, PR, SHA).requeues == 1  # the control
    assert store.budget(REPO + "x" * 100, PR, SHA).requeues == 0


def test_an_overlong_test_id_is_skipped(store: Store) -> None:
    """A test id or check name past the ledger's key lengths is not a useful key: the store
    skips it (on both backends) and keeps the rest; the control is one character shorter."""
    ok, too_long = "t" * TEST_ID_CHARS, "t" * (TEST_ID_CHARS + 1)
    added = store.record_test_failures(
        repo=REPO,
        pr=PR,
        head_sha=SHA,
        sha=SHA,
        failures={"check": [ok, too_long], "c" * (CHECK_NAME_CHARS + 1): ["x"]},
    )
    assert added == 1
    assert _column(store, "test_failures", "test") == [ok]
