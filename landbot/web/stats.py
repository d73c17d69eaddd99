"""The store's counts as the gauges /metrics and the dashboard show."""

from __future__ import annotations

from landbot.store import Store
from landbot.web.metrics import StoreGauges


def store_gauges(store: Store) -> StoreGauges:
    """Drops by outcome, jobs by status and deliveries by status (blocking: run in a thread)."""
    counts = store.counts()
    return StoreGauges(drops=counts.drops, jobs=counts.jobs, deliveries=counts.deliveries)
