"""When each watched repository was last swept and last showed queue activity (issue 28.2):
`repo_sweeps`, one row per repository (lowercased). `landbot poll` sweeps a repository
every run while its activity is recent, and an idle one only when its idle interval passed.

Revision ID: 0015
Revises: 0014
"""

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "repo_sweeps",
        sa.Column("repo", sa.String(200), primary_key=True),
        sa.Column("swept_at", sa.DateTime(timezone=True)),
        sa.Column("active_at", sa.DateTime(timezone=True)),
    )


def downgrade() -> None:
    op.drop_table("repo_sweeps")
