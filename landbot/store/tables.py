"""The store's tables at the newest schema version.

Migrations under `migrations/versions/` are the source of truth for what a database holds;
this module mirrors the head revision for the queries, and a test checks that both agree.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import sqlalchemy as sa

metadata = sa.MetaData()


class UTCDateTime(sa.types.TypeDecorator[dt.datetime]):
    """Aware UTC datetimes in Python on every backend (SQLite hands back naive values)."""

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: dt.datetime | None, dialect: sa.Dialect) -> Any:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to the store; use landbot.store.utcnow()")
        value = value.astimezone(dt.UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: Any, dialect: sa.Dialect) -> dt.datetime | None:
        if value is None:
            return None
        assert isinstance(value, dt.datetime)
        return value.replace(tzinfo=dt.UTC) if value.tzinfo is None else value.astimezone(dt.UTC)


TS = UTCDateTime


class Str(sa.types.TypeDecorator[str]):
    """VARCHAR(n) that refuses a longer value on every backend, not only on PostgreSQL:
    SQLite ignores the length, so without this an overlong write passes every SQLite test
    and fails in production (issue 11)."""

    impl = sa.String
    cache_ok = True

    def process_bind_param(self, value: str | None, dialect: sa.Dialect) -> str | None:
        if value is not None and len(value) > self.length:
            raise ValueError(
                f"a {len(value)}-character value ({value[:40]!r}...) does not fit a"
                f" {self.length}-character column; bound the writer or widen the column"
                " in a migration"
            )
        return value

    def coerce_compared_value(self, op: Any, value: Any) -> Any:
        # Only writes are checked: a lookup by a longer value finds nothing, as on PostgreSQL.
        return self.impl_instance


# One row per webhook delivery, deduplicated by GitHub's X-GitHub-Delivery GUID. The raw body
# is kept so a worker can parse it later, off the request path.
deliveries = sa.Table(
    "deliveries",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("delivery_id", Str(100), nullable=False, unique=True),
    sa.Column("event", Str(100), nullable=False),
    sa.Column("action", sa.Text),  # 0004: any length GitHub sends
    sa.Column("repo", Str(200)),
    sa.Column("body", sa.LargeBinary, nullable=False),
    sa.Column("received_at", TS, nullable=False),
    sa.Column("status", Str(20), nullable=False, server_default="pending"),
    sa.Column("attempts", sa.Integer, nullable=False, server_default="0"),
    sa.Column("lease_owner", Str(200)),
    sa.Column("lease_expires_at", TS),
    sa.Column("processed_at", TS),
    sa.Column("error", sa.Text),
)

# A pull request dropped from a merge queue, whichever door it came through. `dedupe_key`
# makes the same removal seen by a webhook and by a poll sweep one drop.
drops = sa.Table(
    "drops",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("repo", Str(200), nullable=False),
    sa.Column("pr", sa.Integer, nullable=False),
    sa.Column("head_sha", Str(40), nullable=False),
    sa.Column("merge_group_sha", Str(40)),
    sa.Column("reason", Str(50), nullable=False),
    sa.Column("raw_reason", sa.Text),  # 0004: an undocumented reason
    sa.Column("source", Str(20), nullable=False),
    sa.Column("dedupe_key", Str(300), nullable=False, unique=True),
    sa.Column("class", Str(30)),
    sa.Column("outcome", Str(20), nullable=False, server_default="pending"),
    sa.Column("summary", sa.Text),
    sa.Column("evidence", sa.JSON),
    sa.Column("plan", sa.JSON),  # revision 0003: the decision, saved before acting
    sa.Column("delivery_id", Str(100)),  # 0003: the webhook that reported it
    sa.Column("removal_id", Str(100)),  # 0003: the timeline event that reported it
    sa.Column("observed_at", TS, nullable=False),
    sa.Column("created_at", TS, nullable=False),
    sa.Column("updated_at", TS, nullable=False),
    sa.Index("ix_drops_repo_pr", "repo", "pr"),
)

# Durable work items (a drop to process, a fixer run) leased by workers; an expired lease
# means the worker died and another may take the job.
jobs = sa.Table(
    "jobs",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("kind", Str(50), nullable=False),
    sa.Column("dedupe_key", Str(300), unique=True),
    sa.Column("drop_id", sa.Integer, sa.ForeignKey("drops.id")),
    sa.Column("payload", sa.JSON, nullable=False),
    sa.Column("status", Str(20), nullable=False, server_default="queued"),
    sa.Column("attempts", sa.Integer, nullable=False, server_default="0"),
    sa.Column("lease_owner", Str(200)),
    sa.Column("lease_expires_at", TS),
    sa.Column("not_before", TS),
    sa.Column("result", sa.JSON),
    sa.Column("error", sa.Text),
    sa.Column("created_at", TS, nullable=False),
    sa.Column("updated_at", TS, nullable=False),
    # 0009: the pull request the job acts on (repo lower-cased; None: no pull request). The
    # lease hands out no job of a PR while another job of it is leased and unexpired.
    sa.Column("repo", Str(200)),
    sa.Column("pr", sa.Integer),
    sa.Index("ix_jobs_status", "status", "kind"),
    sa.Index("ix_jobs_pr", "repo", "pr", "status"),
)

# The bot's own marked comments, so a sticky comment is edited rather than duplicated.
comments = sa.Table(
    "comments",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("repo", Str(200), nullable=False),
    sa.Column("pr", sa.Integer, nullable=False),
    sa.Column("marker", Str(100), nullable=False),
    sa.Column("comment_id", sa.BigInteger, nullable=False),
    sa.Column("node_id", Str(100)),
    sa.Column("updated_at", TS, nullable=False),
    sa.UniqueConstraint("repo", "pr", "marker", name="uq_comments_repo_pr_marker"),
)

# Automatic re-enqueues and fixer attempts spent per PR head.
budgets = sa.Table(
    "budgets",
    metadata,
    sa.Column("repo", Str(200), primary_key=True),
    sa.Column("pr", sa.Integer, primary_key=True),
    sa.Column("head_sha", Str(40), primary_key=True),
    sa.Column("requeues", sa.Integer, nullable=False, server_default="0"),
    sa.Column("fixer_attempts", sa.Integer, nullable=False, server_default="0"),
    sa.Column("updated_at", TS, nullable=False),
)

# Revision 0002: a ledger of side effects on GitHub, keyed so that a worker killed between
# deciding and acting does not act twice after restart.
actions = sa.Table(
    "actions",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("key", Str(300), nullable=False, unique=True),
    sa.Column("drop_id", sa.Integer, sa.ForeignKey("drops.id")),
    sa.Column("kind", Str(50), nullable=False),
    sa.Column("status", Str(20), nullable=False),
    sa.Column("result", sa.JSON),
    sa.Column("created_at", TS, nullable=False),
    sa.Column("updated_at", TS, nullable=False),
)


# Revision 0003: which merge-group commit tested which PR (from `merge_group` events), and the
# failed checks seen on it (from `check_run`/`workflow_run` events), for triage.
merge_groups = sa.Table(
    "merge_groups",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("repo", Str(200), nullable=False),
    sa.Column("pr", sa.Integer, nullable=False),
    sa.Column("head_sha", Str(40), nullable=False),
    # 0004: branch names have no documented bound, and `destroyed:<reason>` is GitHub's
    # reason (`destroyed:invalidated` did not fit the 20 characters of 0003)
    sa.Column("head_ref", sa.Text, nullable=False),
    sa.Column("base_ref", sa.Text),
    sa.Column("base_sha", Str(40)),
    sa.Column("status", sa.Text, nullable=False),
    sa.Column("failures", sa.JSON),
    sa.Column("created_at", TS, nullable=False),
    sa.Column("updated_at", TS, nullable=False),
    sa.UniqueConstraint("repo", "head_sha", name="uq_merge_groups_repo_sha"),
    sa.Index("ix_merge_groups_repo_pr", "repo", "pr"),
)


# Revision 0005: landbot's own actions on a pull request across its heads (a push of a fix,
# a re-enqueue, a fixer run, a cap hand-back), each head landbot saw, and each retry, with
# their time: the per-PR caps count them. `key` (the action ledger's) counts a replay once.
pr_actions = sa.Table(
    "pr_actions",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("key", Str(300), nullable=False, unique=True),
    sa.Column("repo", Str(200), nullable=False),
    sa.Column("pr", sa.Integer, nullable=False),
    # push, requeue, fixer_run, cap:<cap>, head (a head seen), reset (a retry)
    sa.Column("kind", Str(30), nullable=False),
    sa.Column("sha", Str(40)),  # the pushed commit, or the head seen
    sa.Column("at", TS, nullable=False),
    sa.Index("ix_pr_actions_repo_pr_at", "repo", "pr", "at"),
)


# Revision 0006: the flaky-test ledger. One row per failed test of a failed check on a
# commit (a merge group), from triage; `retry` says what the next try of the same PR head
# did: `pending`, `passed` (its next group passed that check, or the PR merged) or `failed`
# (the same test failed again). Tests that failed on other PRs and passed on retry are the
# positive evidence that a test is flaky (triage/flaky.py).
test_failures = sa.Table(
    "test_failures",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("repo", Str(200), nullable=False),
    sa.Column("test", Str(500), nullable=False),
    sa.Column("check_name", Str(300), nullable=False),
    sa.Column("pr", sa.Integer),  # None: a failure on the base branch
    sa.Column("head_sha", Str(40)),  # the PR head the group tested
    sa.Column("sha", Str(40), nullable=False),  # the commit it failed on
    sa.Column("drop_id", sa.Integer),
    sa.Column("seen_at", TS, nullable=False),
    sa.Column("retry", Str(10), nullable=False, server_default="pending"),
    sa.Column("retried_at", TS),
    sa.UniqueConstraint("repo", "sha", "check_name", "test", name="uq_test_failures_commit"),
    sa.Index("ix_test_failures_repo_test", "repo", "test"),
    sa.Index("ix_test_failures_repo_pr", "repo", "pr", "head_sha"),
    sa.Index("ix_test_failures_seen", "seen_at"),
)


# Revision 0007: each repository's own settings file (`[policy] repo_file`, read from its
# default branch): the last version read and the last good one, when it was read, whether a
# push has touched it since (stale while `pushed_at` is later than `read_at`), and the blob
# shas of the invalid versions already reported (`reports`: sha → {"state", "at"}). `repo`
# is lower-cased (GitHub's names are case-insensitive). Retention does not prune it.
repo_files = sa.Table(
    "repo_files",
    metadata,
    sa.Column("repo", Str(200), primary_key=True),
    sa.Column("path", sa.Text, nullable=False),
    sa.Column("commit_sha", Str(40)),  # the default-branch commit of the last read
    sa.Column("blob_sha", Str(40)),  # the file's blob at that commit; None: no file
    sa.Column("text", sa.Text),
    sa.Column("good_commit_sha", Str(40)),
    sa.Column("good_sha", Str(40)),  # None: no good file (the host's settings apply)
    sa.Column("good_text", sa.Text),
    sa.Column("read_at", TS),  # when the last read started; None: never read
    sa.Column("pushed_at", TS),  # the last push to the default branch that touched it
    sa.Column("reports", sa.JSON),
    sa.Column("updated_at", TS, nullable=False),
)


# Revision 0008: the `actions` fixer backend's dispatches, one per fix job (`fix_job`, the
# jobs row that waits for it): its one-time id (`key`, in the run's name and inputs), the
# drop, the repository (lower-cased) and installation the caps count by, the run once found,
# its state (queued: waiting for a slot; claimed: holding one; sending: the dispatch request
# went out, its answer unknown; sent: GitHub took it, the run not found yet; running: the
# run found; done), when the dispatch was
# last sent, and the deadline. A queued dispatch waits here, not on a runner.
fix_dispatches = sa.Table(
    "fix_dispatches",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("key", Str(64), nullable=False, unique=True),
    sa.Column("fix_job", sa.Integer, nullable=False, unique=True),
    sa.Column("drop_id", sa.Integer, nullable=False),
    sa.Column("repo", Str(200), nullable=False),
    sa.Column("installation", Str(64), nullable=False),
    sa.Column("workflow", Str(200), nullable=False),
    sa.Column("state", Str(20), nullable=False),
    sa.Column("run_id", sa.BigInteger),
    sa.Column("sent_at", TS),
    sa.Column("deadline", TS),
    sa.Column("outcome", sa.Text),
    sa.Column("created_at", TS, nullable=False),
    sa.Column("updated_at", TS, nullable=False),
    sa.Index("ix_fix_dispatches_state", "state", "repo", "installation"),
    sa.Index("ix_fix_dispatches_run", "run_id"),
)


# Revision 0009: each comment landbot makes once, claimed before its POST: the status
# comment of a PR (`key` status:<repo>#<pr>), the hand-back of a drop (handback:<drop>), a
# fix announcement (fix:<drop>:<commit>). "posting": the POST may have gone out (its answer
# unknown until the id is kept); "posted": `comment_id` is the comment. A later writer edits
# a posted one, and looks for a claimed one by its marker and tag before posting again.
comment_posts = sa.Table(
    "comment_posts",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("key", Str(300), nullable=False, unique=True),
    sa.Column("repo", Str(200), nullable=False),
    sa.Column("pr", sa.Integer, nullable=False),
    sa.Column("marker", Str(100), nullable=False),
    sa.Column("drop_id", sa.Integer),
    sa.Column("state", Str(20), nullable=False),
    sa.Column("owner", Str(200)),
    sa.Column("comment_id", sa.BigInteger),
    sa.Column("node_id", Str(100)),
    sa.Column("url", sa.Text),
    sa.Column("claimed_at", TS, nullable=False),
    sa.Column("updated_at", TS, nullable=False),
    sa.Index("ix_comment_posts_repo_pr", "repo", "pr"),
)


# Revision 0010: triage's baselines (issue 26). `baselines`: the compact form of one green
# job's log (`Baseline.to_bytes()`), once per (repository, workflow run, job name), so one
# download serves every drop on that base. `baseline_runs`: which run is the baseline of a
# (repository, base branch, workflow, job name, base commit), `key` a digest of the five;
# `run_id` None: there was none. Retention prunes both.
baselines = sa.Table(
    "baselines",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("repo", Str(200), nullable=False),
    sa.Column("run_id", sa.BigInteger, nullable=False),
    sa.Column("job_name", Str(300), nullable=False),
    sa.Column("job_id", sa.BigInteger, nullable=False),
    sa.Column("head_sha", Str(40)),
    sa.Column("data", sa.LargeBinary, nullable=False),
    sa.Column("made_at", TS, nullable=False),
    sa.UniqueConstraint("repo", "run_id", "job_name", name="uq_baselines_run_job"),
    sa.Index("ix_baselines_made", "made_at"),
)

baseline_runs = sa.Table(
    "baseline_runs",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("key", Str(64), nullable=False, unique=True),
    sa.Column("repo", Str(200), nullable=False),
    sa.Column("base_ref", sa.Text, nullable=False),
    sa.Column("workflow", sa.Text, nullable=False),
    sa.Column("job_name", sa.Text, nullable=False),
    sa.Column("base_sha", Str(40), nullable=False),
    sa.Column("run_id", sa.BigInteger),  # None: no green run to compare with
    sa.Column("run_sha", Str(40)),  # the commit that run tested
    sa.Column("job_id", sa.BigInteger),
    sa.Column("found_at", TS, nullable=False),
    sa.Index("ix_baseline_runs_found", "found_at"),
)


# Revision 0012: a breaker per repository (issue 27.2). One row per repository whose breaker
# has ever opened: open or closed now, why it opened (the cause's kind and a line naming it,
# with its links), when, the issue that says so, and the last run seen passing (what closes
# a breaker opened by failures of the runners, not of the code).
breakers = sa.Table(
    "breakers",
    metadata,
    sa.Column("repo", Str(200), primary_key=True),
    sa.Column("open", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("cause", Str(30)),  # red_base | infrastructure | same_failure | server_error
    sa.Column("detail", sa.Text),
    sa.Column("links", sa.JSON),
    sa.Column("opened_at", TS),
    sa.Column("closed_at", TS),
    sa.Column("closed_by", sa.Text),  # "landbot" (the cause is gone), or who closed it
    sa.Column("last_pass_at", TS),
    sa.Column("issue_number", sa.Integer),
    sa.Column("issue_url", sa.Text),
    sa.Column("issue_state", Str(10)),  # the state landbot last gave it: open | closed
    sa.Column("issue_body_sha", Str(64)),  # its body as landbot last wrote it (no needless edit)
    sa.Column("updated_at", TS, nullable=False),
)


# Revision 0013: GitHub's 5xx answers per repository (one row per job attempt GitHub failed
# with a server error), kept a day: the breaker counts those within its window (issue 27.2).
# `repo` lowercased, as the breakers' key.
server_errors = sa.Table(
    "server_errors",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("repo", Str(200), nullable=False),
    sa.Column("at", TS, nullable=False),
    sa.Index("ix_server_errors_repo_at", "repo", "at"),
)


# Revision 0014: the GitHub requests of every landbot process sharing the store (issue 28.4),
# so one /metrics counts them all: each process saves its own counts (absolute: a save
# repeated is harmless) by (installation, api, status); rows of a process gone quiet for the
# retention period are added into the process "retired" and deleted, so sums never fall.
call_counts = sa.Table(
    "call_counts",
    metadata,
    sa.Column("process", Str(200), primary_key=True),
    sa.Column("installation", Str(100), primary_key=True),
    sa.Column("api", Str(16), primary_key=True),
    sa.Column("status", Str(16), primary_key=True),
    sa.Column("count", sa.BigInteger, nullable=False),
    sa.Column("updated_at", TS, nullable=False),
)


# Revision 0011: one issue per flaky test (land/flaky_issues.py): its number (None until
# made), the state landbot left it in (open | closed), the owners CODEOWNERS named when it
# was opened (space-separated; mentioned then only), and what it last showed, so it is
# edited only when the ledger has more. `repo` as the ledger spells it.
flaky_issues = sa.Table(
    "flaky_issues",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("repo", Str(200), nullable=False),
    sa.Column("test", Str(500), nullable=False),
    sa.Column("number", sa.Integer),
    sa.Column("state", Str(10), nullable=False),
    sa.Column("owners", sa.Text),
    sa.Column("failures_shown", sa.Integer, nullable=False, server_default="0"),
    sa.Column("passed_shown", sa.Integer, nullable=False, server_default="0"),
    sa.Column("last_failure_at", TS),
    sa.Column("opened_at", TS, nullable=False),
    sa.Column("closed_at", TS),
    sa.Column("updated_at", TS, nullable=False),
    sa.UniqueConstraint("repo", "test", name="uq_flaky_issues_test"),
)


# Revision 0015: each watched repository's sweep state (issue 28.2): when `landbot poll` last
# swept it, and when its queue last showed activity (a merge_group or dequeue webhook, a drop
# recorded, entries in the queue at a sweep). `repo` lowercased. intake/poll.py `due`
# decides from these which repositories a run sweeps.
repo_sweeps = sa.Table(
    "repo_sweeps",
    metadata,
    sa.Column("repo", Str(200), primary_key=True),
    sa.Column("swept_at", TS),
    sa.Column("active_at", TS),
)
