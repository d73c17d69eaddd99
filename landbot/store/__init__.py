"""Durable state: deliveries, drops, jobs with leases, comments, budgets, the action ledger."""

from landbot.store.store import Budget, Lease, Store, utcnow

__all__ = ["Budget", "Lease", "Store", "utcnow"]
