"""One issue per flaky test (issue 27, point 3).

`flaky_issues` holds, per repository and test id, the issue landbot keeps about it: its
number (None until made; the create is claimed in `comment_posts` first), whether landbot
left it open or closed, the owners CODEOWNERS named when it was opened (mentioned then,
and never again), and what the issue last showed (`failures_shown`, `passed_shown`,
`last_failure_at`): an issue is edited only when the ledger has more than that.

Revision ID: 0011
Revises: 0010
"""

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "flaky_issues",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("repo", sa.String(200), nullable=False),
        sa.Column("test", sa.String(500), nullable=False),
        sa.Column("number", sa.Integer),
        sa.Column("state", sa.String(10), nullable=False),
        sa.Column("owners", sa.Text),
        sa.Column("failures_shown", sa.Integer, nullable=False, server_default="0"),
        sa.Column("passed_shown", sa.Integer, nullable=False, server_default="0"),
        sa.Column("last_failure_at", TS),
        sa.Column("opened_at", TS, nullable=False),
        sa.Column("closed_at", TS),
        sa.Column("updated_at", TS, nullable=False),
        sa.UniqueConstraint("repo", "test", name="uq_flaky_issues_test"),
    )


def downgrade() -> None:
    op.drop_table("flaky_issues")
