"""A breaker per repository (issue 27.2): `breakers`, one row per repository whose breaker
has ever opened (open or closed now, its cause, its issue, the last run seen passing).

Revision ID: 0012
Revises: 0011
"""

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "breakers",
        sa.Column("repo", sa.String(200), primary_key=True),
        sa.Column("open", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("cause", sa.String(30)),
        sa.Column("detail", sa.Text),
        sa.Column("links", sa.JSON),
        sa.Column("opened_at", TS),
        sa.Column("closed_at", TS),
        sa.Column("closed_by", sa.Text),
        sa.Column("last_pass_at", TS),
        sa.Column("issue_number", sa.Integer),
        sa.Column("issue_url", sa.Text),
        sa.Column("issue_state", sa.String(10)),
        sa.Column("issue_body_sha", sa.String(64)),
        sa.Column("updated_at", TS, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("breakers")
