"""Each repository's own settings file (issue 16): the last version read from its default
branch and the last good one, so every worker process applies the same settings and a file
made invalid keeps the last good one in effect.

One row per repository (its name lower-cased: GitHub's names are case-insensitive). `read_at`
is when the last read started; `pushed_at` is when a push to the default branch touched the
file: the row is stale while `pushed_at` is later than `read_at`. `reports` holds the blob
shas of the invalid versions reported (a `landbot config` check run each), so each is
reported once. Retention never prunes this table: a row is one small file per repository.

Revision ID: 0007
Revises: 0006
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "repo_files",
        sa.Column("repo", sa.String(200), primary_key=True),
        sa.Column("path", sa.Text, nullable=False),
        sa.Column("commit_sha", sa.String(40)),
        sa.Column("blob_sha", sa.String(40)),
        sa.Column("text", sa.Text),
        sa.Column("good_commit_sha", sa.String(40)),
        sa.Column("good_sha", sa.String(40)),
        sa.Column("good_text", sa.Text),
        sa.Column("read_at", TS),
        sa.Column("pushed_at", TS),
        sa.Column("reports", sa.JSON),
        sa.Column("updated_at", TS, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("repo_files")
