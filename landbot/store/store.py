"""The store: every durable fact landbot keeps, behind small typed methods.

Each method is one short transaction. Leases make work survive a killed worker: a job or a
delivery whose lease expired is handed to the next worker that asks.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import json
import threading
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import sqlalchemy as sa

from landbot.core.model import History, Outcome
from landbot.store import db
from landbot.store.records import (
    ACTIVE_DISPATCH_STATES,
    FlakyTestHistory,
    LedgerFailure,
    LedgerTest,
    StoreCounts,
    StoredAction,
    StoredBaseline,
    StoredBaselineRun,
    StoredBreaker,
    StoredDelivery,
    StoredDispatch,
    StoredDrop,
    StoredFlakyIssue,
    StoredGroup,
    StoredJob,
    StoredPost,
    StoredRepoFile,
    StoredSweep,
)
from landbot.store.tables import (
    TS,
    actions,
    baseline_runs,
    baselines,
    breakers,
    budgets,
    call_counts,
    comment_posts,
    comments,
    deliveries,
    drops,
    fix_dispatches,
    flaky_issues,
    jobs,
    merge_groups,
    pr_actions,
    repo_files,
    repo_sweeps,
    server_errors,
    test_failures,
)


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


# Invalid versions of a repository's settings file remembered as reported, per repository.
REPO_FILE_REPORTS_KEPT = 20

# The flaky-test ledger keeps a month; triage weighs the last week of it.
LEDGER_KEEP = dt.timedelta(days=30)
TEST_ID_CHARS = 500

# GitHub's 5xx answers are kept a day: longer than any breaker window worth having.
SERVER_ERRORS_KEPT = dt.timedelta(days=1)
# The `call_counts` process that holds the counts of processes long gone (retire_call_counts).
RETIRED = "retired"
CHECK_NAME_CHARS = 300


def _ledger_records(rows: Sequence[sa.Row[Any]]) -> dict[tuple[str, str], LedgerTest]:
    """Rows of `test_failures` (oldest first) as one record per (check, test)."""
    grouped: dict[tuple[str, str, str], list[sa.Row[Any]]] = {}
    for row in rows:
        grouped.setdefault((row.repo, row.check_name, row.test), []).append(row)
    out: dict[tuple[str, str], LedgerTest] = {}
    for (repo, check, test), group in grouped.items():
        prs = tuple(dict.fromkeys(r.pr for r in group if r.pr is not None))
        passed = tuple(
            dict.fromkeys(r.pr for r in group if r.pr is not None and r.retry == "passed")
        )
        out[(check, test)] = LedgerTest(
            repo=repo,
            test=test,
            check=check,
            failures=len(group),
            prs=prs,
            passed_prs=passed,
            retries_passed=sum(1 for r in group if r.retry == "passed"),
            first_seen=_aware(min(r.seen_at for r in group)),
            last_seen=_aware(max(r.seen_at for r in group)),
        )
    return out


def _aware(when: dt.datetime) -> dt.datetime:
    """A time read back by an aggregate (SQLite's MAX bypasses the column type: naive)."""
    return when if when.tzinfo is not None else when.replace(tzinfo=dt.UTC)


def _fields(row: sa.Row[Any]) -> dict[str, Any]:
    """A row's columns as record fields (column `class` is field `class_`)."""
    return {("class_" if name == "class" else name): v for name, v in row._mapping.items()}


def _locked_reports(conn: sa.Connection, key: str) -> dict[str, Any] | None:
    """The repository's settings-file reports, its row locked until the transaction ends
    (two workers must not both claim one report); None when no read was saved."""
    row = conn.execute(
        sa.select(repo_files.c.reports).where(repo_files.c.repo == key).with_for_update()
    ).first()
    return None if row is None else dict(row.reports or {})


P = TypeVar("P")


@dataclass(frozen=True)
class Lease(Generic[P]):
    """A leased row (delivery or job): its id, what it holds, and which attempt this is.

    `payload` is the whole `StoredDelivery` for a delivery, the job's JSON payload for a job.
    """

    id: int
    kind: str
    payload: P
    attempts: int
    owner: str


class Store:
    def __init__(self, engine: sa.Engine) -> None:
        self.engine = engine
        self._local = threading.local()  # the open write transaction of each thread
        insert: Any
        if engine.dialect.name == "postgresql":
            from sqlalchemy.dialects.postgresql import insert
        else:
            from sqlalchemy.dialects.sqlite import insert
        self._insert_delivery = (
            insert(deliveries)
            .on_conflict_do_nothing(index_elements=["delivery_id"])
            .returning(deliveries.c.id)
        )
        # Two workers may record the same group at once (a merge_group event and a failed
        # check): the loser's insert is a no-op, and both then update the one row.
        self._insert_group = insert(merge_groups).on_conflict_do_nothing(
            index_elements=["repo", "head_sha"]
        )
        # A drop triaged again (a retried job) records its failures once.
        self._insert_test_failure = (
            insert(test_failures)
            .on_conflict_do_nothing(index_elements=["repo", "sha", "check_name", "test"])
            .returning(test_failures.c.id)
        )
        # Two workers may record one spend at once (a resumed plan): one row per key.
        self._insert_pr_action = (
            insert(pr_actions)
            .on_conflict_do_nothing(index_elements=["key"])
            .returning(pr_actions.c.id)
        )
        # A push webhook and a read may create a repository's file row at once.
        self._insert_repo_file = insert(repo_files).on_conflict_do_nothing(index_elements=["repo"])
        # A webhook and a sweep may make a repository's sweep row at once: one row.
        self._insert_sweep = insert(repo_sweeps).on_conflict_do_nothing(index_elements=["repo"])
        # Two drops on one base may fetch its baseline at once: the first row stays (the
        # same run's same job: the same log).
        self._insert_baseline = (
            insert(baselines)
            .on_conflict_do_nothing(index_elements=["repo", "run_id", "job_name"])
            .returning(baselines.c.id)
        )
        # A later lookup of the same base (the remembered answer grew stale) replaces it.
        run_insert = insert(baseline_runs)
        self._upsert_baseline_run = run_insert.on_conflict_do_update(
            index_elements=["key"],
            set_={c: run_insert.excluded[c] for c in ("run_id", "run_sha", "job_id", "found_at")},
        )
        # Two writers may claim one comment at once: one row, the loser reads it.
        self._insert_post = (
            insert(comment_posts)
            .on_conflict_do_nothing(index_elements=["key"])
            .returning(comment_posts.c.id)
        )

    @classmethod
    def open(cls, url: str, *, migrate: bool = True) -> Store:
        engine = db.make_engine(url)
        if migrate:
            db.upgrade(engine)
        return cls(engine)

    def close(self) -> None:
        self.engine.dispose()

    @contextmanager
    def tx(self) -> Iterator[sa.Connection]:
        """One write transaction; nested calls in the same thread join the outer one, so
        several steps can be made atomic by wrapping them in `with store.tx():`."""
        current: sa.Connection | None = getattr(self._local, "conn", None)
        if current is not None:
            yield current
            return
        with self.engine.connect() as conn:
            conn.execution_options(**{db.WRITE: True})
            with conn.begin():
                self._local.conn = conn
                try:
                    yield conn
                finally:
                    self._local.conn = None

    def ping(self) -> bool:
        try:
            with self.engine.connect() as conn:
                conn.execute(sa.text("SELECT 1"))
            return True
        except sa.exc.SQLAlchemyError:
            return False

    # --- deliveries ------------------------------------------------------------------

    def record_delivery(
        self, delivery_id: str, event: str, action: str | None, repo: str | None, body: bytes
    ) -> bool:
        """Store a webhook delivery once; False when this delivery id was already stored."""
        values = {
            "delivery_id": delivery_id,
            "event": event,
            "action": action,
            "repo": repo,
            "body": body,
            "received_at": utcnow(),
            "status": "pending",
        }
        with self.tx() as conn:
            # One statement, built once: this is on the webhook's request path.
            # A row comes back only when it was inserted (rowcount is -1 with RETURNING).
            return conn.execute(self._insert_delivery, values).first() is not None

    def lease_delivery(self, owner: str, ttl: dt.timedelta) -> Lease[StoredDelivery] | None:
        row = self._lease(deliveries, owner, ttl)
        if row is None:
            return None
        delivery = StoredDelivery(**_fields(row))
        return Lease(delivery.id, delivery.event, delivery, delivery.attempts, owner)

    def finish_delivery(
        self, delivery_row_id: int, owner: str, status: str = "done", error: str | None = None
    ) -> bool:
        return self._finish(deliveries, delivery_row_id, owner, status, error=error)

    # --- jobs ------------------------------------------------------------------------

    def add_job(
        self,
        kind: str,
        payload: Mapping[str, Any],
        *,
        dedupe_key: str | None = None,
        drop_id: int | None = None,
        not_before: dt.datetime | None = None,
        holds_pr: bool = True,
    ) -> int | None:
        """Queue a job; None when a job with this dedupe key exists already.

        The job's pull request (one job of a PR is leased at a time) is its drop's, or the
        payload's `repo` and `pr` (a command, a check-run settlement). `holds_pr=False`: a
        job that writes none of the PR's sticky comments and acts on no drop (`skip`,
        `unskip`, `help`) is stored with no PR, so it neither waits for the PR's leased job
        (a fix job may hold it for half an hour) nor holds the PR back itself."""
        now = utcnow()
        with self.tx() as conn:
            if dedupe_key is not None:
                found = conn.execute(
                    sa.select(jobs.c.id).where(jobs.c.dedupe_key == dedupe_key)
                ).first()
                if found:
                    return None
            repo, pr = self._job_pr(conn, payload, drop_id) if holds_pr else (None, None)
            return _insert_job(
                conn,
                kind=kind,
                payload=dict(payload),
                dedupe_key=dedupe_key,
                drop_id=drop_id,
                repo=repo,
                pr=pr,
                not_before=not_before,
                status="queued",
                created_at=now,
                updated_at=now,
            )

    @staticmethod
    def _job_pr(
        conn: sa.Connection, payload: Mapping[str, Any], drop_id: int | None
    ) -> tuple[str | None, int | None]:
        """The pull request a job acts on: its drop's, else its payload's; (None, None)
        for a job of no pull request."""
        repo: Any = payload.get("repo")
        pr: Any = payload.get("pr")
        if drop_id is not None:
            row = conn.execute(
                sa.select(drops.c.repo, drops.c.pr).where(drops.c.id == drop_id)
            ).first()
            if row is not None:
                repo, pr = row.repo, row.pr
        if isinstance(repo, str) and isinstance(pr, int) and not isinstance(pr, bool):
            return repo.lower(), pr  # GitHub's names are case-insensitive
        return None, None

    def lease_job(
        self,
        owner: str,
        ttl: dt.timedelta,
        kinds: tuple[str, ...] | None = None,
        *,
        cap: tuple[str, int] | None = None,
        drop_ids: Sequence[int] | None = None,
    ) -> Lease[dict[str, Any]] | None:
        """Lease the oldest runnable job (of `drop_ids` only, when given: a poll's own
        work). `cap=(kind, n)`: no job of `kind` is handed out while n of them are leased by
        any worker (the fixer's concurrency). No job of a pull request is handed out while
        another job of it is leased and unexpired: the next waits until the first finished
        its actions (or its worker died and the lease ran out)."""
        row = self._lease(jobs, owner, ttl, kinds=kinds, cap=cap, drop_ids=drop_ids)
        if row is None:
            return None
        job = StoredJob(**_fields(row))
        return Lease(job.id, job.kind, job.payload, job.attempts, owner)

    def claim_pr(
        self, drop_id: int, owner: str, ttl: dt.timedelta, kind: str = "release"
    ) -> int | None:
        """Lease a drop's pull request for work another job does inline (the hold job
        releasing the repository's waiting and held drops, one by one): a job row of `kind`
        for the drop, leased by `owner` at once, under the same lock and rule as
        `lease_job`. None while another job of the PR is leased and unexpired (one job of a
        PR at a time). `finish_job` gives the PR back; a holder killed meanwhile leaves the
        row to expire, and a worker then takes it as a job of its own."""
        now = utcnow()
        with self.tx() as conn:
            if conn.dialect.name == "postgresql":
                _serialize_leases(conn)
            repo, pr = self._job_pr(conn, {}, drop_id)
            if repo is None or pr is None:
                raise ValueError(f"no drop {drop_id}")
            busy = conn.execute(
                sa.select(jobs.c.id)
                .where(
                    jobs.c.repo == repo,
                    jobs.c.pr == pr,
                    jobs.c.status == "leased",
                    jobs.c.lease_expires_at >= now,
                )
                .limit(1)
            ).first()
            if busy is not None:
                return None
            return _insert_job(
                conn,
                kind=kind,
                payload={"drop_id": drop_id},
                drop_id=drop_id,
                repo=repo,
                pr=pr,
                status="leased",
                lease_owner=owner,
                lease_expires_at=now + ttl,
                attempts=1,
                created_at=now,
                updated_at=now,
            )

    def renew_lease(self, table: str, row_id: int, owner: str, ttl: dt.timedelta) -> bool:
        t = {"jobs": jobs, "deliveries": deliveries}[table]
        with self.tx() as conn:
            res = conn.execute(
                t.update()
                .where(t.c.id == row_id, t.c.lease_owner == owner, t.c.status == "leased")
                .values(lease_expires_at=utcnow() + ttl)
            )
            return res.rowcount == 1

    def finish_job(
        self,
        job_id: int,
        owner: str,
        status: str = "done",
        *,
        result: Any = None,
        error: str | None = None,
    ) -> bool:
        """Close a job this worker holds; False when the lease was lost to another worker."""
        return self._finish(jobs, job_id, owner, status, result=result, error=error)

    def retry_job(self, job_id: int, owner: str, not_before: dt.datetime, error: str) -> bool:
        """Give a job back for a later attempt (a transient failure)."""
        return self._give_back(job_id, owner, not_before, error, count_attempt=True)

    def _give_back(
        self, job_id: int, owner: str, not_before: dt.datetime, error: str, *, count_attempt: bool
    ) -> bool:
        """Queue a job this worker holds again for `not_before`; without `count_attempt`, the
        attempt its lease counted is given back too."""
        with self.tx() as conn:
            values: dict[str, Any] = {
                "status": "queued",
                "lease_owner": None,
                "lease_expires_at": None,
                "not_before": not_before,
                "error": error,
                "updated_at": utcnow(),
            }
            if not count_attempt:
                greatest = sa.func.max if conn.dialect.name == "sqlite" else sa.func.greatest
                values["attempts"] = greatest(jobs.c.attempts - 1, 0)
            res = conn.execute(
                jobs.update()
                .where(jobs.c.id == job_id, jobs.c.lease_owner == owner)
                .values(**values)
            )
            return res.rowcount == 1

    def cancel_jobs(self, dedupe_prefix: str, *, outcome: Outcome, why: str) -> int:
        """Cancel queued jobs whose dedupe key starts with `dedupe_prefix` (an old head, a
        closed PR); their pending drops end with `outcome` and `why` (the decision's)."""
        now = utcnow()
        with self.tx() as conn:
            cond = (
                jobs.c.status == "queued",
                jobs.c.dedupe_key.startswith(dedupe_prefix, autoescape=True),
            )
            # One statement picks and cancels the jobs: a job another worker commits between
            # a separate SELECT and the UPDATE would be cancelled with its drop left pending.
            cancelled = conn.execute(
                jobs.update()
                .where(*cond)
                .values(status="cancelled", updated_at=now)
                .returning(jobs.c.drop_id)
            ).all()
            drop_ids = [r.drop_id for r in cancelled if r.drop_id is not None]
            if drop_ids:
                conn.execute(
                    drops.update()
                    .where(drops.c.id.in_(drop_ids), drops.c.outcome == "pending")
                    .values(outcome=outcome, summary=why, updated_at=now)
                )
            return len(cancelled)

    def job(self, job_id: int) -> StoredJob | None:
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(jobs).where(jobs.c.id == job_id)).first()
        return StoredJob(**_fields(row)) if row is not None else None

    def open_jobs(self, drop_ids: Sequence[int]) -> list[StoredJob]:
        """The queued or leased jobs of these drops, oldest first."""
        q = sa.select(jobs).where(
            jobs.c.drop_id.in_(drop_ids), jobs.c.status.in_(("queued", "leased"))
        )
        with self.engine.connect() as conn:
            return [StoredJob(**_fields(row)) for row in conn.execute(q.order_by(jobs.c.id))]

    def jobs(self, status: str | None = None) -> list[StoredJob]:
        q = sa.select(jobs).order_by(jobs.c.id)
        if status is not None:
            q = q.where(jobs.c.status == status)
        with self.engine.connect() as conn:
            return [StoredJob(**_fields(row)) for row in conn.execute(q)]

    # --- drops -----------------------------------------------------------------------

    def add_drop(
        self,
        *,
        repo: str,
        pr: int,
        head_sha: str,
        reason: str,
        source: str,
        dedupe_key: str,
        raw_reason: str | None = None,
        merge_group_sha: str | None = None,
        observed_at: dt.datetime | None = None,
        delivery_id: str | None = None,
        removal_id: str | None = None,
    ) -> tuple[int, bool]:
        """Record a drop once per dedupe key; returns (drop id, created)."""
        now = utcnow()
        with self.tx() as conn:
            found = conn.execute(
                sa.select(drops.c.id).where(drops.c.dedupe_key == dedupe_key)
            ).first()
            if found:
                if merge_group_sha:
                    conn.execute(
                        drops.update()
                        .where(drops.c.id == found.id, drops.c.merge_group_sha.is_(None))
                        .values(merge_group_sha=merge_group_sha, updated_at=now)
                    )
                return int(found.id), False
            res = conn.execute(
                drops.insert().values(
                    repo=repo,
                    pr=pr,
                    head_sha=head_sha,
                    merge_group_sha=merge_group_sha,
                    reason=reason,
                    raw_reason=raw_reason,
                    source=source,
                    dedupe_key=dedupe_key,
                    delivery_id=delivery_id,
                    removal_id=removal_id,
                    outcome="pending",
                    observed_at=observed_at or now,
                    created_at=now,
                    updated_at=now,
                )
            )
            pk = res.inserted_primary_key
            assert pk is not None
            return int(pk[0]), True

    def update_drop(self, drop_id: int, **values: Any) -> None:
        # head_sha only to correct a drop a webhook recorded at a head GitHub did not remove.
        allowed = {
            "outcome",
            "summary",
            "class_",
            "evidence",
            "merge_group_sha",
            "plan",
            "head_sha",
        }
        unknown = set(values) - allowed
        if unknown:
            raise ValueError(f"cannot update drop fields {sorted(unknown)}")
        if "class_" in values:
            values["class"] = values.pop("class_")
        with self.tx() as conn:
            conn.execute(
                drops.update().where(drops.c.id == drop_id).values(**values, updated_at=utcnow())
            )

    def drop(self, drop_id: int) -> StoredDrop | None:
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(drops).where(drops.c.id == drop_id)).first()
        return StoredDrop(**_fields(row)) if row is not None else None

    def drops(
        self,
        repo: str | None = None,
        limit: int | None = 200,
        *,
        since: dt.datetime | None = None,
    ) -> list[StoredDrop]:
        """Drops, newest first (by observed_at, then id): at most `limit` (None: all),
        observed at or after `since`."""
        q = sa.select(drops).order_by(drops.c.observed_at.desc(), drops.c.id.desc())
        if limit is not None:
            q = q.limit(limit)
        if repo is not None:  # GitHub's names are case-insensitive
            q = q.where(sa.func.lower(drops.c.repo) == repo.lower())
        if since is not None:
            q = q.where(drops.c.observed_at >= since)
        with self.engine.connect() as conn:
            return [StoredDrop(**_fields(row)) for row in conn.execute(q)]

    def link_removal(
        self,
        *,
        repo: str,
        pr: int,
        head_sha: str,
        reason: str,
        around: dt.datetime,
        window: dt.timedelta,
        delivery_id: str | None = None,
        removal_id: str | None = None,
    ) -> int | None:
        """The drop this report is another door's view of, linked to it; None if none.

        A webhook (`delivery_id`) and a timeline event (`removal_id`) report the same
        removal when they name the same PR head and reason within `window`, and the drop
        has not been linked to another report of the same door yet.
        """
        door = drops.c.delivery_id if delivery_id is not None else drops.c.removal_id
        own = delivery_id if delivery_id is not None else removal_id
        with self.tx() as conn:
            seen = conn.execute(sa.select(drops.c.id).where(door == own)).first()
            if seen is not None:
                return int(seen.id)
            twin = conn.execute(
                sa.select(drops.c.id)
                .where(
                    drops.c.repo == repo,
                    drops.c.pr == pr,
                    drops.c.head_sha == head_sha,
                    drops.c.reason == reason,
                    door.is_(None),
                    drops.c.observed_at >= around - window,
                    drops.c.observed_at <= around + window,
                    # Re-enqueued before this report: the PR was removed again, a new drop.
                    sa.not_(sa.and_(drops.c.outcome == "requeued", drops.c.updated_at < around)),
                )
                .order_by(drops.c.id)
                .limit(1)
            ).first()
            if twin is None:
                return None
            conn.execute(drops.update().where(drops.c.id == twin.id).values({door.name: own}))
            return int(twin.id)

    # --- merge groups ----------------------------------------------------------------

    def remember_group(
        self,
        *,
        repo: str,
        pr: int,
        head_sha: str,
        head_ref: str,
        base_ref: str | None,
        base_sha: str | None,
        status: str,
    ) -> None:
        now = utcnow()
        with self.tx() as conn:
            self._ensure_group(
                conn, repo, pr, head_sha, head_ref, now, base_ref=base_ref, base_sha=base_sha
            )
            conn.execute(
                merge_groups.update()
                .where(merge_groups.c.repo == repo, merge_groups.c.head_sha == head_sha)
                .values(
                    status=status,
                    head_ref=head_ref,
                    base_ref=sa.func.coalesce(merge_groups.c.base_ref, base_ref),
                    base_sha=sa.func.coalesce(merge_groups.c.base_sha, base_sha),
                    updated_at=now,
                )
            )
            if status == "destroyed:merged":
                # The pull request merged through this group: the retry landbot gave it passed.
                self.record_merged(repo, pr, at=now)

    def add_group_failure(
        self, repo: str, head_sha: str, failure: Mapping[str, Any], *, pr: int, head_ref: str
    ) -> None:
        """Remember a failed check or run on a group commit (creating the group if the
        `merge_group` event was missed)."""
        now = utcnow()
        with self.tx() as conn:
            self._ensure_group(conn, repo, pr, head_sha, head_ref, now)
            # FOR UPDATE (PostgreSQL): two failures of one group must not overwrite each other.
            row = conn.execute(
                sa.select(merge_groups.c.id, merge_groups.c.failures)
                .where(merge_groups.c.repo == repo, merge_groups.c.head_sha == head_sha)
                .with_for_update()
            ).one()
            failures = [f for f in (row.failures or []) if f != dict(failure)]
            conn.execute(
                merge_groups.update()
                .where(merge_groups.c.id == row.id)
                .values(failures=[*failures, dict(failure)], updated_at=now)
            )

    def _ensure_group(
        self,
        conn: sa.Connection,
        repo: str,
        pr: int,
        head_sha: str,
        head_ref: str,
        now: dt.datetime,
        **known: Any,
    ) -> None:
        """Insert the group's row unless it exists (a no-op for the loser of a race)."""
        conn.execute(
            self._insert_group.values(
                repo=repo,
                pr=pr,
                head_sha=head_sha,
                head_ref=head_ref,
                status="checks_requested",
                failures=[],
                created_at=now,
                updated_at=now,
                **known,
            )
        )

    def groups_for(self, repo: str, pr: int) -> list[StoredGroup]:
        """The merge groups that tested `pr`, newest first."""
        q = (
            sa.select(merge_groups)
            .where(merge_groups.c.repo == repo, merge_groups.c.pr == pr)
            .order_by(merge_groups.c.id.desc())
        )
        with self.engine.connect() as conn:
            return [StoredGroup(**_fields(row)) for row in conn.execute(q)]

    # --- the flaky-test ledger --------------------------------------------------------

    def record_test_failures(
        self,
        *,
        repo: str,
        pr: int | None,
        head_sha: str | None,
        sha: str,
        failures: Mapping[str, Sequence[str]],
        drop_id: int | None = None,
        at: dt.datetime | None = None,
    ) -> int:
        """Each failed test (check name → test ids) of the failed checks on commit `sha`,
        once per (commit, check, test); rows older than `LEDGER_KEEP` go. Returns how many
        rows were added. A test id or check name too long to be a useful key is skipped."""
        now = at or utcnow()
        rows = [
            {
                "repo": repo,
                "test": test,
                "check_name": check,
                "pr": pr,
                "head_sha": head_sha,
                "sha": sha,
                "drop_id": drop_id,
                "seen_at": now,
                "retry": "pending",
            }
            for check, tests in failures.items()
            for test in dict.fromkeys(tests)
            if test and len(test) <= TEST_ID_CHARS and len(check) <= CHECK_NAME_CHARS
        ]
        added = 0
        with self.tx() as conn:
            conn.execute(test_failures.delete().where(test_failures.c.seen_at < now - LEDGER_KEEP))
            for row in rows:
                added += conn.execute(self._insert_test_failure, row).first() is not None
        return added

    def record_retry(
        self,
        *,
        repo: str,
        pr: int,
        head_sha: str,
        sha: str,
        passed: Collection[str],
        failed: Mapping[str, Collection[str]],
        at: dt.datetime | None = None,
    ) -> int:
        """What merge group `sha`, a later try of the same pull request head, did with the
        failures the ledger holds for that head: a check that passed there passed its
        retry; a test that failed there again failed it. Returns the rows updated."""
        now = at or utcnow()
        t = test_failures
        pending = (
            t.c.repo == repo,
            t.c.pr == pr,
            t.c.head_sha == head_sha,
            t.c.sha != sha,
            t.c.retry == "pending",
            t.c.seen_at <= now,
        )
        updated = 0
        with self.tx() as conn:
            if passed:
                updated += conn.execute(
                    t.update()
                    .where(*pending, t.c.check_name.in_(list(passed)))
                    .values(retry="passed", retried_at=now)
                ).rowcount
            for check, tests in failed.items():
                if tests:
                    updated += conn.execute(
                        t.update()
                        .where(*pending, t.c.check_name == check, t.c.test.in_(list(tests)))
                        .values(retry="failed", retried_at=now)
                    ).rowcount
        return updated

    def record_merged(
        self,
        repo: str,
        pr: int,
        *,
        head_sha: str | None = None,
        at: dt.datetime | None = None,
    ) -> int:
        """The pull request merged at `head_sha` (a `pull_request` `closed` event names it):
        that head's failures passed their retry. Without the head (a merge group that
        merged), only when landbot's newest decision on the PR was a re-enqueue, of the
        head it names (a push since would have taken the PR out of the queue and made a
        newer drop). Returns the rows updated."""
        now = at or utcnow()
        with self.tx() as conn:
            if head_sha is None:
                newest = conn.execute(
                    sa.select(drops.c.head_sha, drops.c.outcome)
                    .where(drops.c.repo == repo, drops.c.pr == pr)
                    .order_by(drops.c.id.desc())
                    .limit(1)
                ).first()
                if newest is None or newest.outcome != "requeued":
                    return 0
                head_sha = str(newest.head_sha)
            t = test_failures
            return int(
                conn.execute(
                    t.update()
                    .where(
                        t.c.repo == repo,
                        t.c.pr == pr,
                        t.c.head_sha == head_sha,
                        t.c.retry == "pending",
                        t.c.seen_at <= now,
                    )
                    .values(retry="passed", retried_at=now)
                ).rowcount
            )

    def ledger(
        self,
        repo: str,
        tests: Iterable[tuple[str, str]],
        *,
        since: dt.datetime,
        exclude_pr: int | None = None,
    ) -> dict[tuple[str, str], LedgerTest]:
        """The ledger's record of each (check, test) asked for, seen since `since`, without
        the failures of pull request `exclude_pr` (its own are not evidence about others).
        A test the ledger has no failure of is absent."""
        wanted = set(tests)
        if not wanted:
            return {}
        t = test_failures
        q = sa.select(t).where(
            t.c.repo == repo, t.c.seen_at >= since, t.c.test.in_(sorted({x for _, x in wanted}))
        )
        if exclude_pr is not None:
            q = q.where(sa.or_(t.c.pr.is_(None), t.c.pr != exclude_pr))
        with self.engine.connect() as conn:
            rows = [r for r in conn.execute(q.order_by(t.c.id)) if (r.check_name, r.test) in wanted]
        return _ledger_records(rows)

    def flakiest_tests(
        self, *, since: dt.datetime, limit: int = 10, repo: str | None = None
    ) -> list[LedgerTest]:
        """The tests that failed since `since` and passed on retry at least once, most
        retries passed first (then most failures): the repository's flakiest tests."""
        t = test_failures
        passed = sa.func.sum(sa.case((t.c.retry == "passed", 1), else_=0))
        q = (
            sa.select(t.c.repo, t.c.check_name, t.c.test)
            .where(t.c.seen_at >= since)
            .group_by(t.c.repo, t.c.check_name, t.c.test)
            .having(passed >= 1)
            .order_by(passed.desc(), sa.func.count().desc(), t.c.repo, t.c.test)
            .limit(limit)
        )
        if repo is not None:
            q = q.where(t.c.repo == repo)
        with self.engine.connect() as conn:
            top = [(r.repo, r.check_name, r.test) for r in conn.execute(q)]
            if not top:
                return []
            rows = conn.execute(
                sa.select(t)
                .where(t.c.seen_at >= since, t.c.test.in_(sorted({x for _, _, x in top})))
                .order_by(t.c.id)
            ).all()
        wanted = set(top)
        records = _ledger_records([r for r in rows if (r.repo, r.check_name, r.test) in wanted])
        by_key = {(rec.repo, rec.check, rec.test): rec for rec in records.values()}
        return [by_key[k] for k in top if k in by_key]

    # --- one issue per flaky test -----------------------------------------------------

    def flaky_histories(
        self,
        repo: str,
        *,
        since: dt.datetime,
        min_passed_prs: int,
        also: Iterable[str] = (),
    ) -> list[FlakyTestHistory]:
        """The ledger's failures since `since` of each test of `repo` that failed on at
        least `min_passed_prs` pull requests whose retry passed (any check), and of the
        tests in `also` (those with an open issue; absent when the ledger has none). Two
        queries whatever the count: the candidates by aggregate, then their rows."""
        t = test_failures
        passed_prs = sa.func.count(
            sa.distinct(sa.case((t.c.retry == "passed", t.c.pr), else_=None))
        )
        candidates = (
            sa.select(t.c.test)
            .where(t.c.repo == repo, t.c.seen_at >= since)
            .group_by(t.c.test)
            .having(passed_prs >= min_passed_prs)
        )
        with self.engine.connect() as conn:
            tests = {r.test for r in conn.execute(candidates)} | set(also)
            if not tests:
                return []
            rows = conn.execute(
                sa.select(t)
                .where(t.c.repo == repo, t.c.seen_at >= since, t.c.test.in_(sorted(tests)))
                .order_by(t.c.seen_at, t.c.id)
            ).all()
        grouped: dict[str, list[LedgerFailure]] = {}
        for r in rows:
            grouped.setdefault(r.test, []).append(
                LedgerFailure(
                    check=r.check_name,
                    pr=r.pr,
                    head_sha=r.head_sha,
                    sha=r.sha,
                    drop_id=r.drop_id,
                    seen_at=_aware(r.seen_at),
                    retry=r.retry,
                )
            )
        return [
            FlakyTestHistory(repo=repo, test=test, failures=tuple(grouped[test]))
            for test in sorted(grouped)
        ]

    def ledger_repos(self, since: dt.datetime) -> set[str]:
        """The repositories with a ledger failure since `since`, as the ledger spells them."""
        t = test_failures
        with self.engine.connect() as conn:
            q = sa.select(t.c.repo).where(t.c.seen_at >= since).distinct()
            return {str(r.repo) for r in conn.execute(q)}

    def flaky_issues(self, repo: str | None = None) -> list[StoredFlakyIssue]:
        """The flaky tests' issues (of `repo`, else all), by test."""
        q = sa.select(flaky_issues).order_by(flaky_issues.c.repo, flaky_issues.c.test)
        if repo is not None:
            q = q.where(flaky_issues.c.repo == repo)
        with self.engine.connect() as conn:
            return [StoredFlakyIssue(**_fields(r)) for r in conn.execute(q)]

    def flaky_issue(self, repo: str, test: str) -> StoredFlakyIssue | None:
        t = flaky_issues
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(t).where(t.c.repo == repo, t.c.test == test)).first()
        return StoredFlakyIssue(**_fields(row)) if row is not None else None

    def save_flaky_issue(self, repo: str, test: str, **fields: Any) -> StoredFlakyIssue:
        """Record the flaky test's issue (its number, state, owners, what it showed): the
        fields given, on its row (made on first save, `state` open unless given)."""
        allowed = {
            "number",
            "state",
            "owners",
            "failures_shown",
            "passed_shown",
            "last_failure_at",
            "closed_at",
        }
        unknown = set(fields) - allowed
        if unknown:
            raise ValueError(f"not a flaky_issues field: {sorted(unknown)}")
        now = utcnow()
        t = flaky_issues
        with self.tx() as conn:
            res = conn.execute(
                t.update()
                .where(t.c.repo == repo, t.c.test == test)
                .values(**fields, updated_at=now)
            )
            if res.rowcount == 0:
                conn.execute(
                    t.insert().values(
                        repo=repo,
                        test=test,
                        **{"state": "open", **fields},
                        opened_at=now,
                        updated_at=now,
                    )
                )
        found = self.flaky_issue(repo, test)
        assert found is not None  # just written
        return found

    # --- comments --------------------------------------------------------------------

    def comment_id(self, repo: str, pr: int, marker: str) -> int | None:
        ref = self.comment_ref(repo, pr, marker)
        return ref[0] if ref else None

    def comment_ref(self, repo: str, pr: int, marker: str) -> tuple[int, str | None] | None:
        """(comment id, node id) of the bot's comment of kind `marker` on a PR."""
        with self.engine.connect() as conn:
            row = conn.execute(
                sa.select(comments.c.comment_id, comments.c.node_id).where(
                    comments.c.repo == repo, comments.c.pr == pr, comments.c.marker == marker
                )
            ).first()
            return (int(row.comment_id), row.node_id) if row else None

    def save_comment(
        self, repo: str, pr: int, marker: str, comment_id: int, node_id: str | None
    ) -> None:
        now = utcnow()
        with self.tx() as conn:
            res = conn.execute(
                comments.update()
                .where(comments.c.repo == repo, comments.c.pr == pr, comments.c.marker == marker)
                .values(comment_id=comment_id, node_id=node_id, updated_at=now)
            )
            if res.rowcount == 0:
                conn.execute(
                    comments.insert().values(
                        repo=repo,
                        pr=pr,
                        marker=marker,
                        comment_id=comment_id,
                        node_id=node_id,
                        updated_at=now,
                    )
                )

    # --- comments landbot makes once ---------------------------------------------------

    def claim_post(
        self,
        key: str,
        *,
        repo: str,
        pr: int,
        marker: str,
        owner: str,
        drop_id: int | None = None,
    ) -> StoredPost:
        """Claim making comment `key` before its POST. The record's `claimed` says what was
        there: "new" (post it), "posting" (an earlier claim's POST may have applied: look
        for it by its marker and tag first) or "posted" (it exists: never post it again)."""
        now = utcnow()
        t = comment_posts
        with self.tx() as conn:
            # A row comes back only when it was inserted (rowcount is -1 with RETURNING).
            made = (
                conn.execute(
                    self._insert_post.values(
                        key=key,
                        repo=repo,
                        pr=pr,
                        marker=marker,
                        drop_id=drop_id,
                        state="posting",
                        owner=owner,
                        claimed_at=now,
                        updated_at=now,
                    )
                ).first()
                is not None
            )
            row = conn.execute(sa.select(t).where(t.c.key == key).with_for_update()).one()
            if made:
                claimed = "new"
            elif row.state == "posted" and row.comment_id is not None:
                claimed = "posted"
            else:
                claimed = "posting"
                conn.execute(t.update().where(t.c.id == row.id).values(owner=owner, updated_at=now))
        return StoredPost(**_fields(row), claimed=claimed)

    def posted(
        self, key: str, comment_id: int, node_id: str | None, url: str | None = None
    ) -> None:
        """Comment `key` is made (or found): its id is kept, so every later writer edits it."""
        t = comment_posts
        with self.tx() as conn:
            conn.execute(
                t.update()
                .where(t.c.key == key)
                .values(
                    state="posted",
                    comment_id=comment_id,
                    node_id=node_id,
                    url=url,
                    updated_at=utcnow(),
                )
            )

    def post(self, key: str) -> StoredPost | None:
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(comment_posts).where(comment_posts.c.key == key)).first()
        return StoredPost(**_fields(row)) if row is not None else None

    # --- budgets ---------------------------------------------------------------------

    def budget(
        self,
        repo: str,
        pr: int,
        head_sha: str,
        *,
        window: dt.timedelta | None = None,
        now: dt.datetime | None = None,
    ) -> History:
        """Requeues and fixer attempts spent on this PR head (none yet: zeros), and
        landbot's own actions on the PR across its heads (`History.pr_*`), counted since
        the later of `now - window` (None: no bound) and the PR's last reset: a retry, or a
        head landbot saw that is not one it pushed (a push that is not landbot's)."""
        with self.engine.connect() as conn:
            row = conn.execute(
                sa.select(budgets.c.requeues, budgets.c.fixer_attempts).where(
                    budgets.c.repo == repo, budgets.c.pr == pr, budgets.c.head_sha == head_sha
                )
            ).first()
            counts = self._pr_counts(conn, repo, pr, window, now or utcnow())
        head = (int(row.requeues), int(row.fixer_attempts)) if row else (0, 0)
        return History(
            *head,
            pr_pushes=counts.get("push", 0),
            pr_requeues=counts.get("requeue", 0),
            pr_fixer_runs=counts.get("fixer_run", 0),
            pr_capped=frozenset(k.removeprefix("cap:") for k in counts if k.startswith("cap:")),
        )

    def _pr_counts(
        self,
        conn: sa.Connection,
        repo: str,
        pr: int,
        window: dt.timedelta | None,
        now: dt.datetime,
    ) -> dict[str, int]:
        t = pr_actions
        of_pr = (t.c.repo == repo, t.c.pr == pr)
        ours = sa.select(t.c.sha).where(*of_pr, t.c.kind == "push", t.c.sha.is_not(None))
        reset = conn.execute(
            sa.select(sa.func.max(t.c.at)).where(
                *of_pr,
                sa.or_(
                    t.c.kind == "reset",
                    # A head landbot did not push: someone else pushed, the counts restart.
                    sa.and_(t.c.kind == "head", t.c.sha.not_in(ours)),
                ),
            )
        ).scalar_one_or_none()
        bounds = [b for b in (reset, now - window if window is not None else None) if b]
        cond = [*of_pr, t.c.kind.not_in(("head", "reset"))]
        if bounds:
            cond.append(t.c.at >= max(_aware(b) for b in bounds))
        rows = conn.execute(sa.select(t.c.kind, sa.func.count()).where(*cond).group_by(t.c.kind))
        return {str(kind): int(n) for kind, n in rows}

    def spend(
        self,
        repo: str,
        pr: int,
        head_sha: str,
        *,
        requeues: int = 0,
        fixes: int = 0,
        key: str | None = None,
    ) -> History:
        """Spend from this PR head's budget, and, in the same transaction, record the spend
        on the PR (its caps across heads); returns what is spent now, this included.

        `key` (the action ledger's key of the action that spends) makes it idempotent: a
        plan replayed after a crash finds its spend recorded and spends nothing again."""
        now = utcnow()
        key_ = (budgets.c.repo == repo, budgets.c.pr == pr, budgets.c.head_sha == head_sha)
        with self.tx() as conn:
            fresh = True
            if key is not None:
                kinds = ["requeue"] * bool(requeues) + ["fixer_run"] * bool(fixes)
                recorded = [
                    self._pr_action(conn, f"{key}:{kind}", repo, pr, kind, None, now)
                    for kind in kinds
                ]
                fresh = all(recorded)
            if fresh:
                self._spend_head(conn, key_, repo, pr, head_sha, requeues, fixes, now)
            row = conn.execute(
                sa.select(budgets.c.requeues, budgets.c.fixer_attempts).where(*key_)
            ).first()
        return History(int(row.requeues), int(row.fixer_attempts)) if row else History()

    def _spend_head(
        self,
        conn: sa.Connection,
        key: tuple[Any, ...],
        repo: str,
        pr: int,
        head_sha: str,
        requeues: int,
        fixes: int,
        now: dt.datetime,
    ) -> None:
        res = conn.execute(
            budgets.update()
            .where(*key)
            .values(
                requeues=budgets.c.requeues + requeues,
                fixer_attempts=budgets.c.fixer_attempts + fixes,
                updated_at=now,
            )
        )
        if res.rowcount == 0:
            conn.execute(
                budgets.insert().values(
                    repo=repo,
                    pr=pr,
                    head_sha=head_sha,
                    requeues=requeues,
                    fixer_attempts=fixes,
                    updated_at=now,
                )
            )

    def _pr_action(
        self,
        conn: sa.Connection,
        key: str,
        repo: str,
        pr: int,
        kind: str,
        sha: str | None,
        at: dt.datetime,
    ) -> bool:
        """Record one row of `pr_actions` once per key; False when the key was recorded."""
        values = {"key": key, "repo": repo, "pr": pr, "kind": kind, "sha": sha, "at": at}
        # A row comes back only when it was inserted (rowcount is -1 with RETURNING).
        return conn.execute(self._insert_pr_action, values).first() is not None

    def record_push(self, repo: str, pr: int, pushed_sha: str) -> bool:
        """landbot pushed `pushed_sha` (a fix) to the PR: it counts against the push cap,
        and a drop at that head is not someone else's push. Once per commit."""
        with self.tx() as conn:
            key = f"push:{repo}#{pr}:{pushed_sha}"
            return self._pr_action(conn, key, repo, pr, "push", pushed_sha, utcnow())

    def note_head(self, repo: str, pr: int, head_sha: str) -> bool:
        """landbot saw the PR at `head_sha`; a head it did not push itself resets the PR's
        caps from now (whichever order the push and the head are recorded in). Once per
        head; True the first time."""
        with self.tx() as conn:
            key = f"head:{repo}#{pr}:{head_sha}"
            return self._pr_action(conn, key, repo, pr, "head", head_sha, utcnow())

    def reset_pr_caps(self, repo: str, pr: int, key: str) -> bool:
        """A person asked landbot to try again (`/landbot retry`, `landbot retry`): the PR's
        caps count from now. Once per request `key`."""
        with self.tx() as conn:
            return self._pr_action(conn, f"reset:{key}", repo, pr, "reset", None, utcnow())

    def record_cap(self, repo: str, pr: int, cap: str, key: str) -> bool:
        """landbot handed the PR back for reaching `cap`: a second drop past it, before a
        reset or the window's end, mentions no one again. Once per action `key`."""
        with self.tx() as conn:
            return self._pr_action(conn, f"cap:{key}", repo, pr, f"cap:{cap}", None, utcnow())

    def reset_budget(self, repo: str, pr: int, head_sha: str) -> None:
        with self.tx() as conn:
            conn.execute(
                budgets.delete().where(
                    budgets.c.repo == repo, budgets.c.pr == pr, budgets.c.head_sha == head_sha
                )
            )

    # --- action ledger ---------------------------------------------------------------

    def begin_action(self, key: str, kind: str, drop_id: int | None = None) -> str:
        """Claim side effect `key`. Returns "new", or the status it already has
        ("started": a previous attempt may have acted, re-read GitHub; "done"; "failed")."""
        now = utcnow()
        with self.tx() as conn:
            row = conn.execute(sa.select(actions.c.status).where(actions.c.key == key)).first()
            if row:
                return str(row.status)
            conn.execute(
                actions.insert().values(
                    key=key,
                    kind=kind,
                    drop_id=drop_id,
                    status="started",
                    created_at=now,
                    updated_at=now,
                )
            )
            return "new"

    def finish_action(self, key: str, status: str = "done", result: Any = None) -> None:
        with self.tx() as conn:
            conn.execute(
                actions.update()
                .where(actions.c.key == key)
                .values(status=status, result=result, updated_at=utcnow())
            )

    def actions(self, drop_id: int | None = None) -> list[StoredAction]:
        q = sa.select(actions).order_by(actions.c.id)
        if drop_id is not None:
            q = q.where(actions.c.drop_id == drop_id)
        with self.engine.connect() as conn:
            return [StoredAction(**_fields(row)) for row in conn.execute(q)]

    # --- triage's baselines (issue 26) ---------------------------------------------------

    def baseline(self, repo: str, run_id: int, job_name: str) -> StoredBaseline | None:
        """The baseline kept for job `job_name` of workflow run `run_id` (None: not kept)."""
        t = baselines
        with self.engine.connect() as conn:
            row = conn.execute(
                sa.select(t).where(
                    t.c.repo == repo.lower(), t.c.run_id == run_id, t.c.job_name == job_name
                )
            ).first()
        if row is None:
            return None
        return StoredBaseline(
            repo=row.repo,
            run_id=int(row.run_id),
            job_name=row.job_name,
            job_id=int(row.job_id),
            head_sha=row.head_sha,
            data=bytes(row.data),
            made_at=row.made_at,
        )

    def save_baseline(
        self,
        *,
        repo: str,
        run_id: int,
        job_name: str,
        job_id: int,
        head_sha: str | None,
        data: bytes,
        at: dt.datetime | None = None,
    ) -> bool:
        """Keep a green job's baseline; False when one is kept already (a racing worker's:
        the same run's job, so the same log), or the job's name is too long to be a key
        (longer than CHECK_NAME_CHARS: kept nowhere, fetched again next time)."""
        if len(job_name) > CHECK_NAME_CHARS:
            return False
        with self.tx() as conn:
            made = conn.execute(
                self._insert_baseline,
                dict(
                    repo=repo.lower(),
                    run_id=run_id,
                    job_name=job_name,
                    job_id=job_id,
                    head_sha=head_sha,
                    data=data,
                    made_at=at or utcnow(),
                ),
            )
            return made.first() is not None

    def forget_baseline(self, repo: str, run_id: int, job_name: str) -> None:
        """Drop a kept baseline triage could not read back (written by another version)."""
        t = baselines
        with self.tx() as conn:
            conn.execute(
                t.delete().where(
                    t.c.repo == repo.lower(), t.c.run_id == run_id, t.c.job_name == job_name
                )
            )

    @staticmethod
    def _baseline_key(repo: str, base_ref: str, workflow: str, job_name: str, sha: str) -> str:
        parts = [repo.lower(), base_ref, workflow, job_name, sha]
        return hashlib.sha256(json.dumps(parts).encode()).hexdigest()

    def baseline_run(
        self, repo: str, base_ref: str, workflow: str, job_name: str, base_sha: str
    ) -> StoredBaselineRun | None:
        """Which run was found as the baseline of this job on this base commit (None:
        never looked up, or pruned)."""
        key = self._baseline_key(repo, base_ref, workflow, job_name, base_sha)
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(baseline_runs).where(baseline_runs.c.key == key)).first()
        if row is None:
            return None
        return StoredBaselineRun(
            repo=row.repo,
            base_ref=row.base_ref,
            workflow=row.workflow,
            job_name=row.job_name,
            base_sha=row.base_sha,
            run_id=None if row.run_id is None else int(row.run_id),
            run_sha=row.run_sha,
            job_id=None if row.job_id is None else int(row.job_id),
            found_at=row.found_at,
        )

    def remember_baseline_run(
        self,
        *,
        repo: str,
        base_ref: str,
        workflow: str,
        job_name: str,
        base_sha: str,
        run_id: int | None,
        run_sha: str | None = None,
        job_id: int | None = None,
        at: dt.datetime | None = None,
    ) -> None:
        """Remember the run found as this job's baseline on this base commit (`run_id`
        None: none was found); a later lookup of the same replaces it."""
        key = self._baseline_key(repo, base_ref, workflow, job_name, base_sha)
        with self.tx() as conn:
            conn.execute(
                self._upsert_baseline_run.values(
                    key=key,
                    repo=repo.lower(),
                    base_ref=base_ref,
                    workflow=workflow,
                    job_name=job_name,
                    base_sha=base_sha,
                    run_id=run_id,
                    run_sha=run_sha,
                    job_id=job_id,
                    found_at=at or utcnow(),
                )
            )

    # --- repository settings files -----------------------------------------------------

    def repo_file(self, repo: str) -> StoredRepoFile | None:
        """The repository's settings file as last read (None: never read nor pushed to)."""
        with self.engine.connect() as conn:
            row = conn.execute(
                sa.select(repo_files).where(repo_files.c.repo == repo.lower())
            ).first()
        return StoredRepoFile(**_fields(row)) if row is not None else None

    def repo_files(self) -> list[StoredRepoFile]:
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(repo_files).order_by(repo_files.c.repo))
            return [StoredRepoFile(**_fields(row)) for row in rows]

    def _ensure_repo_file(
        self, conn: sa.Connection, repo: str, path: str, now: dt.datetime
    ) -> None:
        conn.execute(self._insert_repo_file.values(repo=repo, path=path, updated_at=now))

    def mark_repo_file_stale(self, repo: str, path: str, *, at: dt.datetime | None = None) -> None:
        """A push to the default branch touched `path` at `at`: the file is read again at
        its next use. A row is made when there is none (`path` is then the one to read)."""
        when = at or utcnow()
        key = repo.lower()
        with self.tx() as conn:
            self._ensure_repo_file(conn, key, path, when)
            t = repo_files
            conn.execute(
                t.update()
                .where(t.c.repo == key, sa.or_(t.c.pushed_at.is_(None), t.c.pushed_at < when))
                .values(pushed_at=when, updated_at=utcnow())
            )

    def save_repo_file_read(
        self,
        repo: str,
        *,
        path: str,
        commit_sha: str,
        blob_sha: str | None,
        text: str | None,
        good: bool,
        read_at: dt.datetime,
    ) -> bool:
        """Record one read of the file, started at `read_at`, at default-branch commit
        `commit_sha`: the file was `blob_sha`/`text`, or absent (None). `good`: it passed
        validation and is now in effect. Refused, the last good version stays in effect
        (unless it was of another path); absent, there is no good version either.

        False (nothing written) when a read that started later is recorded already: two
        workers may read at once, and the older answer must not replace the newer."""
        t = repo_files
        key = repo.lower()
        now = utcnow()
        values: dict[str, Any] = {
            "path": path,
            "commit_sha": commit_sha,
            "blob_sha": blob_sha,
            "text": text,
            "read_at": read_at,
            "updated_at": now,
        }
        no_good = {"good_commit_sha": None, "good_sha": None, "good_text": None}
        with self.tx() as conn:
            self._ensure_repo_file(conn, key, path, now)
            before = conn.execute(
                sa.select(t.c.path).where(t.c.repo == key).with_for_update()
            ).one()
            if blob_sha is None:
                values.update(no_good)
            elif good:
                values.update(good_commit_sha=commit_sha, good_sha=blob_sha, good_text=text)
            elif before.path != path:
                values.update(no_good)  # a good version of another file does not apply
            res = conn.execute(
                t.update()
                .where(t.c.repo == key, sa.or_(t.c.read_at.is_(None), t.c.read_at <= read_at))
                .values(**values)
            )
            return res.rowcount == 1

    def claim_repo_file_report(
        self, repo: str, blob_sha: str, *, lease: dt.timedelta, now: dt.datetime | None = None
    ) -> str:
        """Claim reporting invalid version `blob_sha` of the repository's file. "new": the
        caller reports it; "retake": a claim older than `lease` never finished (its worker
        died, maybe after reporting: look first); "started": another worker is reporting
        it; "done": it was reported."""
        when = now or utcnow()
        key = repo.lower()
        t = repo_files
        with self.tx() as conn:
            reports = _locked_reports(conn, key)
            if reports is None:
                raise ValueError(f"no settings file read for {repo}; save the read first")
            entry = reports.get(blob_sha)
            if isinstance(entry, dict):
                if entry.get("state") == "done":
                    return "done"
                at = dt.datetime.fromisoformat(str(entry.get("at")))
                if at > when - lease:
                    return "started"
            reports[blob_sha] = {"state": "started", "at": when.isoformat()}
            newest = sorted(reports.items(), key=lambda kv: str(kv[1].get("at")), reverse=True)
            kept = dict(newest[:REPO_FILE_REPORTS_KEPT])
            conn.execute(
                t.update().where(t.c.repo == key).values(reports=kept, updated_at=utcnow())
            )
            return "retake" if isinstance(entry, dict) else "new"

    def finish_repo_file_report(self, repo: str, blob_sha: str, *, done: bool) -> None:
        """The report of `blob_sha` was made (`done`), or failed: the claim goes, so the next
        read tries again."""
        key = repo.lower()
        t = repo_files
        with self.tx() as conn:
            reports = _locked_reports(conn, key)
            if reports is None:
                return
            if done:
                reports[blob_sha] = {"state": "done", "at": utcnow().isoformat()}
            else:
                reports.pop(blob_sha, None)
            conn.execute(
                t.update().where(t.c.repo == key).values(reports=reports, updated_at=utcnow())
            )

    # --- counts ----------------------------------------------------------------------

    def counts(self) -> StoreCounts:
        """Drops by outcome, jobs and deliveries by status: one GROUP BY per table, so a
        busy store is counted whole (`drops()` stops at its limit)."""

        def by(conn: sa.Connection, column: sa.Column[str]) -> dict[str, int]:
            rows = conn.execute(sa.select(column, sa.func.count()).group_by(column))
            return {str(key): int(n) for key, n in rows}

        with self.engine.connect() as conn:
            return StoreCounts(
                drops=by(conn, drops.c.outcome),
                jobs=by(conn, jobs.c.status),
                deliveries=by(conn, deliveries.c.status),
            )

    # --- the actions fixer backend's dispatches ---------------------------------------

    def dispatch_for(self, fix_job: int) -> StoredDispatch | None:
        """The dispatch of fix job `fix_job` (a jobs row id), if it has one."""
        q = sa.select(fix_dispatches).where(fix_dispatches.c.fix_job == fix_job)
        with self.engine.connect() as conn:
            row = conn.execute(q).first()
        return StoredDispatch(**_fields(row)) if row is not None else None

    def dispatch(self, key: str) -> StoredDispatch | None:
        q = sa.select(fix_dispatches).where(fix_dispatches.c.key == key)
        with self.engine.connect() as conn:
            row = conn.execute(q).first()
        return StoredDispatch(**_fields(row)) if row is not None else None

    def claim_dispatch(
        self,
        *,
        fix_job: int,
        drop_id: int,
        repo: str,
        installation: str,
        workflow: str,
        key: str,
        cap: int,
    ) -> StoredDispatch:
        """The fix job's dispatch, made (queued) when it has none; a queued one takes a slot
        (state claimed) when fewer than `cap` dispatches of its repository, and fewer than
        `cap` of its installation, are active, and no older one of either waits. Counted in
        one write transaction (as `_lease` counts its cap), so two workers cannot both take
        the last slot."""
        now = utcnow()
        t = fix_dispatches
        repo = repo.lower()
        with self.tx() as conn:
            if conn.dialect.name == "postgresql":
                conn.execute(sa.text("SELECT pg_advisory_xact_lock(4243)"))
            row = conn.execute(sa.select(t).where(t.c.fix_job == fix_job)).first()
            if row is None:
                conn.execute(
                    t.insert().values(
                        key=key,
                        fix_job=fix_job,
                        drop_id=drop_id,
                        repo=repo,
                        installation=installation,
                        workflow=workflow,
                        state="queued",
                        created_at=now,
                        updated_at=now,
                    )
                )
                row = conn.execute(sa.select(t).where(t.c.fix_job == fix_job)).one()
            if row.state == "queued":
                # A dispatch whose fix job no longer waits (cancelled by a push, failed)
                # holds no slot and keeps no one waiting.
                live = t.c.fix_job.in_(
                    sa.select(jobs.c.id).where(jobs.c.status.in_(("queued", "leased")))
                )
                for column, value in ((t.c.repo, row.repo), (t.c.installation, row.installation)):
                    active = conn.execute(
                        sa.select(sa.func.count())
                        .select_from(t)
                        .where(column == value, t.c.state.in_(ACTIVE_DISPATCH_STATES), live)
                    ).scalar_one()
                    older = conn.execute(
                        sa.select(sa.func.count())
                        .select_from(t)
                        .where(column == value, t.c.state == "queued", t.c.id < row.id, live)
                    ).scalar_one()
                    if active + older >= cap:
                        break
                else:
                    conn.execute(
                        t.update().where(t.c.id == row.id).values(state="claimed", updated_at=now)
                    )
                    row = conn.execute(sa.select(t).where(t.c.id == row.id)).one()
            return StoredDispatch(**_fields(row))

    def update_dispatch(self, key: str, **values: Any) -> StoredDispatch:
        """Set columns of the dispatch `key` (state, run_id, sent_at, deadline, outcome)."""
        t = fix_dispatches
        with self.tx() as conn:
            conn.execute(t.update().where(t.c.key == key).values(**values, updated_at=utcnow()))
            row = conn.execute(sa.select(t).where(t.c.key == key)).one()
        return StoredDispatch(**_fields(row))

    def dispatch_of_run(self, repo: str, run_id: int) -> StoredDispatch | None:
        """The dispatch whose run is `run_id` in `repo`, if landbot started it."""
        t = fix_dispatches
        q = sa.select(t).where(t.c.repo == repo.lower(), t.c.run_id == run_id)
        with self.engine.connect() as conn:
            row = conn.execute(q).first()
        return StoredDispatch(**_fields(row)) if row is not None else None

    def dispatches(self, state: str | None = None) -> list[StoredDispatch]:
        q = sa.select(fix_dispatches).order_by(fix_dispatches.c.id)
        if state is not None:
            q = q.where(fix_dispatches.c.state == state)
        with self.engine.connect() as conn:
            return [StoredDispatch(**_fields(row)) for row in conn.execute(q)]

    def wake_job(self, job_id: int) -> bool:
        """Make a queued job runnable now (a webhook said what it waits for happened)."""
        with self.tx() as conn:
            res = conn.execute(
                jobs.update()
                .where(jobs.c.id == job_id, jobs.c.status == "queued")
                .values(not_before=None, updated_at=utcnow())
            )
            return res.rowcount == 1

    def defer_job(self, job_id: int, owner: str, not_before: dt.datetime, note: str) -> bool:
        """Give a job back to wait until `not_before` without counting an attempt (a fix
        job waiting for its run on Actions: waiting is not failing)."""
        return self._give_back(job_id, owner, not_before, note, count_attempt=False)

    # --- a repository's hold job (issue 27: a red base, the breaker) -------------------

    def ensure_repo_job(self, kind: str, repo: str, not_before: dt.datetime | None) -> int:
        """The one open job of `kind` for `repo` (queued or leased), made when there is
        none; an earlier `not_before` than the open job's brings it forward."""
        key = f"{kind}:{repo.lower()}"
        now = utcnow()
        with self.tx() as conn:
            row = conn.execute(
                sa.select(jobs.c.id, jobs.c.status, jobs.c.not_before).where(
                    jobs.c.dedupe_key == key
                )
            ).first()
            if row is not None and row.status in ("queued", "leased"):
                if row.status == "queued" and (
                    not_before is None
                    or (row.not_before is not None and _aware(row.not_before) > not_before)
                ):
                    conn.execute(
                        jobs.update()
                        .where(jobs.c.id == row.id)
                        .values(not_before=not_before, updated_at=now)
                    )
                return int(row.id)
            if row is not None:
                # A finished one keeps its row (retention prunes it): its key steps aside.
                conn.execute(
                    jobs.update()
                    .where(jobs.c.id == row.id)
                    .values(dedupe_key=f"{key}:{row.id}", updated_at=now)
                )
            return _insert_job(
                conn,
                kind=kind,
                payload={"repo": repo},
                dedupe_key=key,
                not_before=not_before,
                status="queued",
                created_at=now,
                updated_at=now,
            )

    def wake_repo_job(self, kind: str, repo: str) -> bool:
        """Make the repository's queued job of `kind` runnable now (a webhook said the base
        changed); False when there is none waiting."""
        with self.tx() as conn:
            res = conn.execute(
                jobs.update()
                .where(jobs.c.dedupe_key == f"{kind}:{repo.lower()}", jobs.c.status == "queued")
                .values(not_before=None, updated_at=utcnow())
            )
            return res.rowcount == 1

    def waiting_drops(self, repo: str, outcomes: Sequence[str]) -> list[StoredDrop]:
        """The repository's drops with one of `outcomes`, oldest first (the order they go
        back in the queue)."""
        q = (
            sa.select(drops)
            .where(sa.func.lower(drops.c.repo) == repo.lower(), drops.c.outcome.in_(outcomes))
            .order_by(drops.c.observed_at.asc(), drops.c.id.asc())
        )
        with self.engine.connect() as conn:
            return [StoredDrop(**_fields(row)) for row in conn.execute(q)]

    # --- a breaker per repository (issue 27.2) ----------------------------------------

    def breaker(self, repo: str) -> StoredBreaker | None:
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(breakers).where(breakers.c.repo == repo.lower())).first()
        return StoredBreaker(**_fields(row)) if row is not None else None

    def breakers(self) -> list[StoredBreaker]:
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(breakers).order_by(breakers.c.repo)).all()
        return [StoredBreaker(**_fields(r)) for r in rows]

    def open_breaker(
        self, repo: str, *, cause: str, detail: str, links: Sequence[str], at: dt.datetime
    ) -> bool:
        """Open the repository's breaker; False when it was open already (one opening,
        whichever worker sees the cause first)."""
        key = repo.lower()
        with self.tx() as conn:
            row = conn.execute(
                sa.select(breakers.c.open).where(breakers.c.repo == key).with_for_update()
            ).first()
            values = {
                "open": True,
                "cause": cause,
                "detail": detail,
                "links": list(links),
                "opened_at": at,
                "closed_at": None,
                "closed_by": None,
                "updated_at": utcnow(),
            }
            if row is None:
                conn.execute(breakers.insert().values(repo=key, **values))
                return True
            if row.open:
                return False
            conn.execute(breakers.update().where(breakers.c.repo == key).values(**values))
            return True

    def close_breaker(self, repo: str, *, by: str, at: dt.datetime) -> bool:
        """Close it; False when it was not open."""
        with self.tx() as conn:
            res = conn.execute(
                breakers.update()
                .where(breakers.c.repo == repo.lower(), breakers.c.open.is_(True))
                .values(open=False, closed_at=at, closed_by=by, updated_at=utcnow())
            )
            return res.rowcount == 1

    def note_pass(self, repo: str, at: dt.datetime) -> bool:
        """A run passed in the repository (what closes a breaker the runners opened); only
        an open breaker keeps it. False when none is open."""
        with self.tx() as conn:
            res = conn.execute(
                breakers.update()
                .where(breakers.c.repo == repo.lower(), breakers.c.open.is_(True))
                .values(last_pass_at=at, updated_at=utcnow())
            )
            return res.rowcount == 1

    def set_breaker_issue(
        self, repo: str, *, number: int | None, url: str | None, state: str, body_sha: str
    ) -> None:
        with self.tx() as conn:
            conn.execute(
                breakers.update()
                .where(breakers.c.repo == repo.lower())
                .values(
                    issue_number=number,
                    issue_url=url,
                    issue_state=state,
                    issue_body_sha=body_sha,
                    updated_at=utcnow(),
                )
            )

    def note_server_error(self, repo: str, at: dt.datetime) -> None:
        """A job attempt of the repository GitHub failed with a 5xx (the breaker counts them);
        the repository's rows older than a day go."""
        key = repo.lower()
        with self.tx() as conn:
            conn.execute(
                server_errors.delete().where(
                    server_errors.c.repo == key, server_errors.c.at < at - SERVER_ERRORS_KEPT
                )
            )
            conn.execute(server_errors.insert().values(repo=key, at=at))

    def server_errors(self, repo: str, since: dt.datetime) -> list[dt.datetime]:
        """When GitHub failed the repository's job attempts with a 5xx since `since`, oldest
        first."""
        q = (
            sa.select(server_errors.c.at)
            .where(server_errors.c.repo == repo.lower(), server_errors.c.at >= since)
            .order_by(server_errors.c.at)
        )
        with self.engine.connect() as conn:
            return [_aware(t) for t in conn.execute(q).scalars()]

    # --- every process's GitHub requests (issue 28.4) ----------------------------------

    def save_call_counts(
        self, process: str, counts: Mapping[tuple[str, str, str], int], at: dt.datetime
    ) -> None:
        """This process's GitHub requests so far, by (installation, api, status): absolute
        counts, so a save repeated or lost costs nothing; the rows saved are replaced."""
        if not counts:
            return
        with self.tx() as conn:
            conn.execute(call_counts.delete().where(call_counts.c.process == process))
            conn.execute(
                call_counts.insert(),
                [
                    {
                        "process": process,
                        "installation": installation[:100],
                        "api": api[:16],
                        "status": status[:16],
                        "count": n,
                        "updated_at": at,
                    }
                    for (installation, api, status), n in sorted(counts.items())
                ],
            )

    def call_counts(self) -> dict[tuple[str, str, str], int]:
        """Every process's GitHub requests as last saved, summed by (installation, api,
        status): what /metrics reports for the whole deployment."""
        c = call_counts.c
        q = sa.select(c.installation, c.api, c.status, sa.func.sum(c.count)).group_by(
            c.installation, c.api, c.status
        )
        with self.engine.connect() as conn:
            return {(i, a, st): int(n) for i, a, st, n in conn.execute(q)}

    def retire_call_counts(self, before: dt.datetime) -> int:
        """Fold the rows of processes that last saved before `before` (stopped, or killed)
        into the process RETIRED, so the table stays small and the sums never fall.
        Returns how many rows went."""
        c = call_counts.c
        with self.tx() as conn:
            old = conn.execute(
                sa.select(c.installation, c.api, c.status, sa.func.sum(c.count))
                .where(c.updated_at < before, c.process != RETIRED)
                .group_by(c.installation, c.api, c.status)
            ).all()
            if not old:
                return 0
            kept = {
                (i, a, st): int(n)
                for i, a, st, n in conn.execute(
                    sa.select(c.installation, c.api, c.status, c.count).where(c.process == RETIRED)
                )
            }
            for installation, api, status, n in old:
                key = (installation, api, status)
                kept[key] = kept.get(key, 0) + int(n)
            gone = conn.execute(
                call_counts.delete().where(c.updated_at < before, c.process != RETIRED)
            ).rowcount
            conn.execute(call_counts.delete().where(c.process == RETIRED))
            conn.execute(
                call_counts.insert(),
                [
                    {
                        "process": RETIRED,
                        "installation": i,
                        "api": a,
                        "status": st,
                        "count": n,
                        "updated_at": before,
                    }
                    for (i, a, st), n in sorted(kept.items())
                ],
            )
        return int(gone or 0)

    # --- sweeps (issue 28.2) ------------------------------------------------------------

    def sweep_states(self, repos: Iterable[str]) -> dict[str, StoredSweep]:
        """The sweep rows of `repos`, by lowercased name (a repository never seen: none)."""
        keys = sorted({r.lower() for r in repos})
        out: dict[str, StoredSweep] = {}
        with self.engine.connect() as conn:
            # In slices: a thousand names stay under every backend's bound-parameter limit.
            for i in range(0, len(keys), 500):
                part = keys[i : i + 500]
                rows = conn.execute(sa.select(repo_sweeps).where(repo_sweeps.c.repo.in_(part)))
                for row in rows:
                    out[row.repo] = StoredSweep(**_fields(row))
        return out

    def note_queue_activity(self, repo: str, at: dt.datetime) -> None:
        """The repository's merge queue showed activity at `at` (a webhook, a drop, entries
        seen): its sweeps come every run while that is recent. An older time changes nothing."""
        key = repo.lower()
        t = repo_sweeps
        with self.tx() as conn:
            conn.execute(self._insert_sweep.values(repo=key))
            conn.execute(
                t.update()
                .where(t.c.repo == key, sa.or_(t.c.active_at.is_(None), t.c.active_at < at))
                .values(active_at=at)
            )

    def note_swept(self, repos: Iterable[str], at: dt.datetime) -> None:
        """`repos` were swept at `at` (their answers came, with or without removals)."""
        t = repo_sweeps
        with self.tx() as conn:
            for key in sorted({r.lower() for r in repos}):
                conn.execute(self._insert_sweep.values(repo=key))
                conn.execute(t.update().where(t.c.repo == key).values(swept_at=at))

    # --- leasing ---------------------------------------------------------------------

    def _lease(
        self,
        table: sa.Table,
        owner: str,
        ttl: dt.timedelta,
        kinds: tuple[str, ...] | None = None,
        cap: tuple[str, int] | None = None,
        drop_ids: Sequence[int] | None = None,
    ) -> sa.Row[Any] | None:
        now = utcnow()
        pg = self.engine.dialect.name == "postgresql"
        params: dict[str, Any] = {"now": now}
        if kinds is not None:
            params["kinds"] = list(kinds)
        if drop_ids is not None:
            params["drop_ids"] = list(drop_ids)
        with self.tx() as conn:
            if table is jobs and pg:
                # The cap and the one-job-per-PR rule are read in the same write transaction
                # as the lease, so two workers cannot both take the last slot or two jobs of
                # one PR. SQLite's BEGIN IMMEDIATE serializes them; PostgreSQL's READ
                # COMMITTED needs a lock to do the same (each statement then sees the
                # leases committed before it).
                _serialize_leases(conn)
            capped = False
            if cap is not None:
                params["cap_kind"] = cap[0]
                running = conn.execute(_running_of_kind(table.name), params).scalar_one()
                capped = running >= cap[1]
            pick = _lease_pick(table.name, kinds is not None, drop_ids is not None, capped, pg)
            found = conn.execute(pick, params).first()
            if found is None:
                return None
            update, reread = _lease_take(table.name)
            conn.execute(update, {"b_id": found.id, "b_owner": owner, "b_until": now + ttl})
            return conn.execute(reread, {"b_id": found.id}).one()

    def _finish(
        self,
        table: sa.Table,
        row_id: int,
        owner: str,
        status: str,
        *,
        result: Any = None,
        error: str | None = None,
    ) -> bool:
        now = utcnow()
        values: dict[str, Any] = {"status": status, "lease_owner": None, "lease_expires_at": None}
        if table is jobs:
            values.update(result=result, error=error, updated_at=now)
        else:
            values.update(error=error, processed_at=now)
        with self.tx() as conn:
            res = conn.execute(
                table.update()
                .where(table.c.id == row_id, table.c.lease_owner == owner)
                .values(**values)
            )
            return res.rowcount == 1


# The lease statements, built once per shape with bound parameters: building them anew
# for every lease (an alias of `jobs` copies its columns) and generating their cache keys
# was most of a lease's CPU, paid twice per worker step, idle or not.
_LEASED = {deliveries.name: deliveries, jobs.name: jobs}


@functools.cache
def _lease_pick(name: str, kinds: bool, drop_ids: bool, capped: bool, pg: bool) -> sa.Select[Any]:
    """The oldest runnable row's id: free (new, or leased and expired), of the kinds and
    drops asked (`:kinds`, `:drop_ids`), due (`not_before`), not of `:cap_kind` when that
    kind is at its cap, and for jobs none of a PR another unexpired lease holds."""
    table = _LEASED[name]
    now = sa.bindparam("now", type_=TS())
    free = sa.or_(
        table.c.status == "pending" if table is deliveries else table.c.status == "queued",
        sa.and_(table.c.status == "leased", table.c.lease_expires_at < now),
    )
    cond: list[Any] = [free]
    if kinds:
        cond.append(table.c.kind.in_(sa.bindparam("kinds", expanding=True)))
    if drop_ids:
        cond.append(table.c.drop_id.in_(sa.bindparam("drop_ids", expanding=True)))
    if "not_before" in table.c:
        cond.append(sa.or_(table.c.not_before.is_(None), table.c.not_before <= now))
    if table is jobs:
        # One job of a pull request in flight at a time: a second job of it (the fix job
        # a drop job queued, a command) would race the first's comments and mutations.
        other = jobs.alias("other")
        busy = sa.exists().where(
            other.c.repo == jobs.c.repo,
            other.c.pr == jobs.c.pr,
            other.c.id != jobs.c.id,
            other.c.status == "leased",
            other.c.lease_expires_at >= now,
        )
        cond.append(sa.or_(jobs.c.pr.is_(None), jobs.c.repo.is_(None), ~busy))
    if capped:
        cond.append(table.c.kind != sa.bindparam("cap_kind"))
    pick = sa.select(table.c.id).where(*cond).order_by(table.c.id).limit(1)
    if pg:
        # Several landbot processes share PostgreSQL: skip rows another one holds.
        pick = pick.with_for_update(skip_locked=True)
    return pick


@functools.cache
def _running_of_kind(name: str) -> sa.Select[Any]:
    """How many rows of `:cap_kind` hold an unexpired lease (the fixer's cap)."""
    table = _LEASED[name]
    return (
        sa.select(sa.func.count())
        .select_from(table)
        .where(
            table.c.kind == sa.bindparam("cap_kind"),
            table.c.status == "leased",
            table.c.lease_expires_at >= sa.bindparam("now", type_=TS()),
        )
    )


@functools.cache
def _lease_take(name: str) -> tuple[sa.Update, sa.Select[Any]]:
    """Take row `:b_id` for `:b_owner` until `:b_until`, then read it back."""
    table = _LEASED[name]
    update = (
        table.update()
        .where(table.c.id == sa.bindparam("b_id"))
        .values(
            status="leased",
            lease_owner=sa.bindparam("b_owner"),
            lease_expires_at=sa.bindparam("b_until", type_=TS()),
            attempts=table.c.attempts + 1,
        )
    )
    return update, sa.select(table).where(table.c.id == sa.bindparam("b_id"))


def _serialize_leases(conn: sa.Connection) -> None:
    """On PostgreSQL, one transaction at a time reads and takes jobs' leases (the fixer's cap,
    one job of a PR at a time): held until the transaction ends."""
    conn.execute(sa.text("SELECT pg_advisory_xact_lock(4242)"))


def _insert_job(conn: sa.Connection, **values: Any) -> int:
    """Insert one job row; its id."""
    pk = conn.execute(jobs.insert().values(**values)).inserted_primary_key
    assert pk is not None
    return int(pk[0])
