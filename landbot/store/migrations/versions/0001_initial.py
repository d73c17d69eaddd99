"""Initial schema: deliveries, drops, jobs, comments, budgets.

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "deliveries",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("delivery_id", sa.String(100), nullable=False, unique=True),
        sa.Column("event", sa.String(100), nullable=False),
        sa.Column("action", sa.String(100)),
        sa.Column("repo", sa.String(200)),
        sa.Column("body", sa.LargeBinary, nullable=False),
        sa.Column("received_at", TS, nullable=False),
        sa.Column("status", sa.String(20), nullable=False, server_default="pending"),
        sa.Column("attempts", sa.Integer, nullable=False, server_default="0"),
        sa.Column("lease_owner", sa.String(200)),
        sa.Column("lease_expires_at", TS),
        sa.Column("processed_at", TS),
        sa.Column("error", sa.Text),
    )
    op.create_table(
        "drops",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("repo", sa.String(200), nullable=False),
        sa.Column("pr", sa.Integer, nullable=False),
        sa.Column("head_sha", sa.String(40), nullable=False),
        sa.Column("merge_group_sha", sa.String(40)),
        sa.Column("reason", sa.String(50), nullable=False),
        sa.Column("raw_reason", sa.String(100)),
        sa.Column("source", sa.String(20), nullable=False),
        sa.Column("dedupe_key", sa.String(300), nullable=False, unique=True),
        sa.Column("class", sa.String(30)),
        sa.Column("outcome", sa.String(20), nullable=False, server_default="pending"),
        sa.Column("summary", sa.Text),
        sa.Column("observed_at", TS, nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("updated_at", TS, nullable=False),
    )
    op.create_index("ix_drops_repo_pr", "drops", ["repo", "pr"])
    op.create_table(
        "jobs",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("kind", sa.String(50), nullable=False),
        sa.Column("dedupe_key", sa.String(300), unique=True),
        sa.Column("drop_id", sa.Integer, sa.ForeignKey("drops.id")),
        sa.Column("payload", sa.JSON, nullable=False),
        sa.Column("status", sa.String(20), nullable=False, server_default="queued"),
        sa.Column("attempts", sa.Integer, nullable=False, server_default="0"),
        sa.Column("lease_owner", sa.String(200)),
        sa.Column("lease_expires_at", TS),
        sa.Column("not_before", TS),
        sa.Column("result", sa.JSON),
        sa.Column("error", sa.Text),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("updated_at", TS, nullable=False),
    )
    op.create_index("ix_jobs_status", "jobs", ["status", "kind"])
    op.create_table(
        "comments",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("repo", sa.String(200), nullable=False),
        sa.Column("pr", sa.Integer, nullable=False),
        sa.Column("marker", sa.String(100), nullable=False),
        sa.Column("comment_id", sa.BigInteger, nullable=False),
        sa.Column("node_id", sa.String(100)),
        sa.Column("updated_at", TS, nullable=False),
        sa.UniqueConstraint("repo", "pr", "marker", name="uq_comments_repo_pr_marker"),
    )
    op.create_table(
        "budgets",
        sa.Column("repo", sa.String(200), primary_key=True),
        sa.Column("pr", sa.Integer, primary_key=True),
        sa.Column("head_sha", sa.String(40), primary_key=True),
        sa.Column("requeues", sa.Integer, nullable=False, server_default="0"),
        sa.Column("fixer_attempts", sa.Integer, nullable=False, server_default="0"),
        sa.Column("updated_at", TS, nullable=False),
    )


def downgrade() -> None:
    for table in ("budgets", "comments", "jobs", "drops", "deliveries"):
        op.drop_table(table)
