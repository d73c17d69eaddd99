"""The `actions` fixer backend's dispatches (issue 17): one row per fix job dispatched as
a workflow run on the repository's runners, so the per-repository and per-installation
caps count across workers, a queued dispatch waits in the store, and a dispatch whose
answer was lost is looked for by its one-time id before it is sent again.

Revision ID: 0008
Revises: 0007
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "fix_dispatches",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("key", sa.String(64), nullable=False, unique=True),
        sa.Column("fix_job", sa.Integer, nullable=False, unique=True),
        sa.Column("drop_id", sa.Integer, nullable=False),
        sa.Column("repo", sa.String(200), nullable=False),
        sa.Column("installation", sa.String(64), nullable=False),
        sa.Column("workflow", sa.String(200), nullable=False),
        sa.Column("state", sa.String(20), nullable=False),
        sa.Column("run_id", sa.BigInteger),
        sa.Column("sent_at", TS),
        sa.Column("deadline", TS),
        sa.Column("outcome", sa.Text),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("updated_at", TS, nullable=False),
    )
    op.create_index("ix_fix_dispatches_state", "fix_dispatches", ["state", "repo", "installation"])
    op.create_index("ix_fix_dispatches_run", "fix_dispatches", ["run_id"])


def downgrade() -> None:
    op.drop_index("ix_fix_dispatches_run", "fix_dispatches")
    op.drop_index("ix_fix_dispatches_state", "fix_dispatches")
    op.drop_table("fix_dispatches")
