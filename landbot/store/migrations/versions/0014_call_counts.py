"""Every process's GitHub requests (issue 28.4): `call_counts`, one row per process and
(installation, API, status) holding the count that process last saved; a process that
stopped saving long ago is folded into the `retired` rows, so the sums never fall.

Revision ID: 0014
Revises: 0013
"""

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "call_counts",
        sa.Column("process", sa.String(200), primary_key=True),
        sa.Column("installation", sa.String(100), primary_key=True),
        sa.Column("api", sa.String(16), primary_key=True),
        sa.Column("status", sa.String(16), primary_key=True),
        sa.Column("count", sa.BigInteger, nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("call_counts")
