"""Prometheus text exposition (format 0.0.4), written by hand: a few counters and gauges.

Counters live in the process (they restart at zero, as Prometheus counters may); gauges are
read from the store on each scrape, so several replicas report the same shared state.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import get_args

from landbot.core.model import Outcome

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

# Every outcome of POST /webhook. All are exported from the start (at 0) so an alert on
# a rate never sees a series appear out of nothing.
OUTCOMES = (
    "accepted",  # stored for the worker
    "duplicate",  # this X-GitHub-Delivery was stored before
    "ignored_repo",  # a repository outside LANDBOT_REPOS: acknowledged, not stored
    "ping",  # GitHub's hook check
    "bad_signature",  # missing, sha1-only, malformed or wrong X-Hub-Signature-256
    "too_large",  # body over the cap
    "bad_json",  # body is not a JSON object
    "bad_request",  # a missing header, a bad Content-Length, a client gone mid-body
    "no_secret",  # the webhook secret is not configured: everything refused
    "store_error",  # the store failed to record it; GitHub shows the failure
)

# Known values (design.md) exported at 0 when the store has none of them.
DROP_OUTCOMES: tuple[Outcome, ...] = get_args(Outcome)
JOB_STATUSES = ("queued", "leased", "done", "failed", "cancelled")
DELIVERY_STATUSES = ("pending", "leased", "done", "failed")


@dataclass
class DeliveryCounters:
    """Deliveries by outcome; only touched from the event loop, so no lock is needed."""

    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(OUTCOMES, 0))

    def add(self, outcome: str) -> None:
        self.counts[outcome] = self.counts.get(outcome, 0) + 1


@dataclass(frozen=True)
class StoreGauges:
    drops: Mapping[str, int]
    jobs: Mapping[str, int]
    deliveries: Mapping[str, int]


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _family(
    name: str, kind: str, help_text: str, label: str, values: Iterable[tuple[str, int]]
) -> list[str]:
    lines = [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}"]
    lines += [f'{name}{{{label}="{_label(k)}"}} {v}' for k, v in values]
    return lines


def _with_known(known: Iterable[str], found: Mapping[str, int]) -> list[tuple[str, int]]:
    merged = dict.fromkeys(known, 0)
    merged.update(found)
    return sorted(merged.items())


def render(counters: DeliveryCounters, gauges: StoreGauges | None) -> str:
    """The exposition text; `gauges` is None when the store could not be read."""
    lines = _family(
        "landbot_webhook_deliveries_total",
        "counter",
        "Webhook deliveries received by this process, by outcome.",
        "outcome",
        sorted(counters.counts.items()),
    )
    lines += [
        "# HELP landbot_store_up Whether the store answered this scrape (1) or not (0).",
        "# TYPE landbot_store_up gauge",
        f"landbot_store_up {0 if gauges is None else 1}",
    ]
    if gauges is not None:
        lines += _family(
            "landbot_drops",
            "gauge",
            "Drops in the store, by outcome.",
            "outcome",
            _with_known(DROP_OUTCOMES, gauges.drops),
        )
        lines += _family(
            "landbot_jobs",
            "gauge",
            "Jobs in the store, by status.",
            "status",
            _with_known(JOB_STATUSES, gauges.jobs),
        )
        lines += _family(
            "landbot_deliveries",
            "gauge",
            "Stored webhook deliveries, by status (pending ones are the worker's backlog).",
            "status",
            _with_known(DELIVERY_STATUSES, gauges.deliveries),
        )
    return "\n".join(lines) + "\n"
