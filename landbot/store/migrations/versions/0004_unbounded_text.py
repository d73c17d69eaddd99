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
    _alter(widen=True)


def downgrade() -> None:
    # Narrowing fails on PostgreSQL if a longer value is stored: nothing is cut silently.
    _alter(widen=False)


def _alter(*, widen: bool) -> None:
    # One batch per table: on SQLite each batch copies the whole table once.
    for table in dict.fromkeys(t for t, *_ in WIDENED):
        with op.batch_alter_table(table) as batch:
            for t, column, old, nullable in WIDENED:
                if t == table:
                    new, was = (sa.Text(), old) if widen else (old, sa.Text())
                    batch.alter_column(
                        column, type_=new, existing_type=was, existing_nullable=nullable
                    )
