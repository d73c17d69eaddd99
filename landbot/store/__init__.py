"""Durable state: deliveries, drops, jobs with leases, comments, budgets, the action ledger."""

from landbot.store.records import (
    LedgerTest,
    StoreCounts,
    StoredAction,
    StoredDelivery,
    StoredDrop,
    StoredGroup,
    StoredJob,
)
from landbot.store.store import Lease, Store, utcnow

__all__ = [
    "Lease",
    "LedgerTest",
    "Store",
    "StoreCounts",
    "StoredAction",
    "StoredDelivery",
    "StoredDrop",
    "StoredGroup",
    "StoredJob",
    "utcnow",
]
