"""Durable state: deliveries, drops, jobs with leases, comments, budgets, the action ledger,
repositories' own settings files."""

from landbot.store.records import (
    LedgerTest,
    StoreCounts,
    StoredAction,
    StoredBreaker,
    StoredDelivery,
    StoredDrop,
    StoredGroup,
    StoredJob,
    StoredPost,
    StoredRepoFile,
)
from landbot.store.store import Lease, Store, utcnow

__all__ = [
    "Lease",
    "LedgerTest",
    "Store",
    "StoreCounts",
    "StoredAction",
    "StoredBreaker",
    "StoredDelivery",
    "StoredDrop",
    "StoredGroup",
    "StoredJob",
    "StoredPost",
    "StoredRepoFile",
    "utcnow",
]
