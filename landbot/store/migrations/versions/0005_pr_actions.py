"""landbot's own actions per pull request across its heads, and what resets their count.

Budgets per head (0001) never stopped landbot: every fix makes a new head (issue 13). Each
row is one push of a fix, re-enqueue, fixer run or cap hand-back, a head landbot saw, or a
`/landbot retry`, with its time; the caps count rows since the window's start or the last
reset, whichever is later. `key` makes a replayed plan count once.

Revision ID: 0005
Revises: 0004
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "pr_actions",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("key", sa.String(300), nullable=False, unique=True),
        sa.Column("repo", sa.String(200), nullable=False),
        sa.Column("pr", sa.Integer, nullable=False),
        sa.Column("kind", sa.String(30), nullable=False),
        sa.Column("sha", sa.String(40)),
        sa.Column("at", TS, nullable=False),
    )
    op.create_index("ix_pr_actions_repo_pr_at", "pr_actions", ["repo", "pr", "at"])


def downgrade() -> None:
    op.drop_index("ix_pr_actions_repo_pr_at", table_name="pr_actions")
    op.drop_table("pr_actions")
