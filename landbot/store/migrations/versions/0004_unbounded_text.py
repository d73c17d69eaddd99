"""Free text GitHub chooses the length of becomes TEXT: a delivery's action, a drop's raw
reason, a merge group's refs and status.

PostgreSQL enforces VARCHAR(n) and SQLite does not: `destroyed:invalidated` (21 characters)
was refused by the 20-character `merge_groups.status` on PostgreSQL only (issue 11).
Widening keeps every row; on PostgreSQL VARCHAR to TEXT rewrites nothing.

Revision ID: 0004
Revises: 0003
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

# (table, column, its 0003 type, nullable)
WIDENED = [
    ("deliveries", "action", sa.String(100), True),
    ("drops", "raw_reason", sa.String(100), True),
    ("merge_groups", "head_ref", sa.String(400), False),
    ("merge_groups", "base_ref", sa.String(300), True),
    ("merge_groups", "status", sa.String(20), False),
]


def upgrade() -> None:
    for table, column, old, nullable in WIDENED:
        with op.batch_alter_table(table) as batch:
            batch.alter_column(column, type_=sa.Text, existing_type=old, existing_nullable=nullable)


def downgrade() -> None:
    # Narrowing fails on PostgreSQL if a longer value is stored: nothing is cut silently.
    for table, column, old, nullable in reversed(WIDENED):
        with op.batch_alter_table(table) as batch:
            batch.alter_column(column, type_=old, existing_type=sa.Text, existing_nullable=nullable)
