"""Merge groups (which group commit tested which pull request), and a drop's saved plan.

Revision ID: 0003
Revises: 0002
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "merge_groups",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("repo", sa.String(200), nullable=False),
        sa.Column("pr", sa.Integer, nullable=False),
        sa.Column("head_sha", sa.String(40), nullable=False),
        sa.Column("head_ref", sa.String(400), nullable=False),
        sa.Column("base_ref", sa.String(300)),
        sa.Column("base_sha", sa.String(40)),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("failures", sa.JSON),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("updated_at", TS, nullable=False),
        sa.UniqueConstraint("repo", "head_sha", name="uq_merge_groups_repo_sha"),
    )
    op.create_index("ix_merge_groups_repo_pr", "merge_groups", ["repo", "pr"])
    with op.batch_alter_table("drops") as batch:
        # The decision, saved before acting, so a restarted worker finishes it instead of
        # deciding again on a state its own half-done actions changed.
        batch.add_column(sa.Column("plan", sa.JSON))
        # Which webhook delivery and which timeline event reported the removal: one drop
        # per removal, whichever door saw it first.
        batch.add_column(sa.Column("delivery_id", sa.String(100)))
        batch.add_column(sa.Column("removal_id", sa.String(100)))


def downgrade() -> None:
    with op.batch_alter_table("drops") as batch:
        batch.drop_column("removal_id")
        batch.drop_column("delivery_id")
        batch.drop_column("plan")
    op.drop_table("merge_groups")
