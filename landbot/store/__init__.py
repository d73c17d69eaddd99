"""Durable state: deliveries, drops, jobs with leases, comments, budgets, the action ledger,
repositories' own settings files, triage's baselines."""

from landbot.store.records import (
    FlakyTestHistory,
    LedgerFailure,
    LedgerTest,
    StoreCounts,
    StoredAction,
    StoredBaseline,
    StoredBaselineRun,
    StoredBreaker,
    StoredDelivery,
    StoredDrop,
    StoredFlakyIssue,
    StoredGroup,
    StoredJob,
    StoredPost,
    StoredRepoFile,
    StoredSweep,
)
from landbot.store.store import Lease, Store, utcnow

__all__ = [
    "FlakyTestHistory",
    "Lease",
    "LedgerFailure",
    "LedgerTest",
    "Store",
    "StoreCounts",
    "StoredAction",
    "StoredBaseline",
    "StoredBaselineRun",
    "StoredBreaker",
    "StoredDelivery",
    "StoredDrop",
    "StoredFlakyIssue",
    "StoredGroup",
    "StoredJob",
    "StoredPost",
    "StoredRepoFile",
    "StoredSweep",
    "utcnow",
]
