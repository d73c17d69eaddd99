"""An action ledger for exactly-once side effects, and evidence on drops.

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "actions",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("key", sa.String(300), nullable=False, unique=True),
        sa.Column("drop_id", sa.Integer, sa.ForeignKey("drops.id")),
        sa.Column("kind", sa.String(50), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("result", sa.JSON),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("updated_at", TS, nullable=False),
    )
    with op.batch_alter_table("drops") as batch:
        batch.add_column(sa.Column("evidence", sa.JSON))


def downgrade() -> None:
    with op.batch_alter_table("drops") as batch:
        batch.drop_column("evidence")
    op.drop_table("actions")
