"""Counts read from the store for /metrics and the dashboard: one GROUP BY per table.

`Store.drops()` is capped at 200 rows and `Store.jobs()` returns whole rows, so neither can
count a busy store; these read-only aggregate queries can. (They belong in `Store` as a
`counts()` method; they live here until the store grows one.)
"""

from __future__ import annotations

import sqlalchemy as sa

from landbot.store import Store
from landbot.store.tables import deliveries, drops, jobs
from landbot.web.metrics import StoreGauges


def _count_by(conn: sa.Connection, column: sa.Column[str]) -> dict[str, int]:
    rows = conn.execute(sa.select(column, sa.func.count()).group_by(column))
    return {str(key): int(n) for key, n in rows}


def store_gauges(store: Store) -> StoreGauges:
    """Drops by outcome, jobs by status and deliveries by status (blocking: run in a thread)."""
    with store.engine.connect() as conn:
        return StoreGauges(
            drops=_count_by(conn, drops.c.outcome),
            jobs=_count_by(conn, jobs.c.status),
            deliveries=_count_by(conn, deliveries.c.status),
        )
