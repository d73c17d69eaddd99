"""GitHub's 5xx answers per repository (issue 27.2): `server_errors`, one row per job attempt
GitHub failed with a server error, kept a day; the breaker counts those within its window.

Revision ID: 0013
Revises: 0012
"""

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "server_errors",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("repo", sa.String(200), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_server_errors_repo_at", "server_errors", ["repo", "at"])


def downgrade() -> None:
    op.drop_index("ix_server_errors_repo_at", "server_errors")
    op.drop_table("server_errors")
