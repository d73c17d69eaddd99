"""Triage's baselines (issue 26): the same job's last green log, kept once per base run.

`baselines` holds one row per (repository, workflow run, job name): the compact form of
that job's log (`Baseline.to_bytes()`, triage/baseline.py) and when it was made, so one
download serves every drop on that base. `baseline_runs` remembers which run is the
baseline of a (repository, base branch, workflow, job name, base commit), so the next drop
on that base asks GitHub nothing; `run_id` None remembers that there was none. Its `key` is
a digest of those five (a branch or job name has no documented bound, an index has one).
Retention prunes both after `[store] retention_days`: a base moves on long before.

Revision ID: 0010
Revises: 0009
"""

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "baselines",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("repo", sa.String(200), nullable=False),
        sa.Column("run_id", sa.BigInteger, nullable=False),
        sa.Column("job_name", sa.String(300), nullable=False),
        sa.Column("job_id", sa.BigInteger, nullable=False),
        sa.Column("head_sha", sa.String(40)),
        sa.Column("data", sa.LargeBinary, nullable=False),
        sa.Column("made_at", TS, nullable=False),
        sa.UniqueConstraint("repo", "run_id", "job_name", name="uq_baselines_run_job"),
    )
    op.create_index("ix_baselines_made", "baselines", ["made_at"])
    op.create_table(
        "baseline_runs",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("key", sa.String(64), nullable=False, unique=True),
        sa.Column("repo", sa.String(200), nullable=False),
        sa.Column("base_ref", sa.Text, nullable=False),
        sa.Column("workflow", sa.Text, nullable=False),
        sa.Column("job_name", sa.Text, nullable=False),
        sa.Column("base_sha", sa.String(40), nullable=False),
        sa.Column("run_id", sa.BigInteger),
        sa.Column("run_sha", sa.String(40)),
        sa.Column("job_id", sa.BigInteger),
        sa.Column("found_at", TS, nullable=False),
    )
    op.create_index("ix_baseline_runs_found", "baseline_runs", ["found_at"])


def downgrade() -> None:
    op.drop_index("ix_baseline_runs_found", table_name="baseline_runs")
    op.drop_table("baseline_runs")
    op.drop_index("ix_baselines_made", table_name="baselines")
    op.drop_table("baselines")
