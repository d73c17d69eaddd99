"""The flaky-test ledger (issue 14): each failed test of a failed check on a commit, and
what the retry of the same pull request head did.

One row per (repository, commit, check, test); `retry` goes from `pending` to `passed`
(the next merge group of the same head passed the check, or the pull request merged) or
`failed` (the test failed again). Tests that failed on other pull requests and passed on
retry are triage's positive evidence that a failure is flaky.

Revision ID: 0006
Revises: 0005
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "test_failures",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("repo", sa.String(200), nullable=False),
        sa.Column("test", sa.String(500), nullable=False),
        sa.Column("check_name", sa.String(300), nullable=False),
        sa.Column("pr", sa.Integer),
        sa.Column("head_sha", sa.String(40)),
        sa.Column("sha", sa.String(40), nullable=False),
        sa.Column("drop_id", sa.Integer),
        sa.Column("seen_at", TS, nullable=False),
        sa.Column("retry", sa.String(10), nullable=False, server_default="pending"),
        sa.Column("retried_at", TS),
        sa.UniqueConstraint("repo", "sha", "check_name", "test", name="uq_test_failures_commit"),
    )
    op.create_index("ix_test_failures_repo_test", "test_failures", ["repo", "test"])
    op.create_index("ix_test_failures_repo_pr", "test_failures", ["repo", "pr", "head_sha"])
    op.create_index("ix_test_failures_seen", "test_failures", ["seen_at"])


def downgrade() -> None:
    op.drop_index("ix_test_failures_seen", table_name="test_failures")
    op.drop_index("ix_test_failures_repo_pr", table_name="test_failures")
    op.drop_index("ix_test_failures_repo_test", table_name="test_failures")
    op.drop_table("test_failures")
