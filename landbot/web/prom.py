"""GET /metrics on prometheus_client: the Prometheus text format (0.0.4).

Two kinds of figures, told apart by where they live:

- What happens in this process is counted as it happens, in this module's own
  `CollectorRegistry` (never prometheus_client's global one): GitHub requests by
  installation, API and status, and the rate limit GitHub last reported to each
  installation (landbot.github.client's CALL_OBSERVERS); fixer runs and their durations by
  verdict (landbot.pipeline.worker's FIXER_OBSERVERS); webhook deliveries by outcome (the
  receiver's counters). They restart at zero with the process, as counters may. Under
  `landbot serve` the worker runs in the same process, so its calls and runs are here; a
  separate `landbot worker` process has no /metrics of its own, so every process also
  saves its GitHub request counts in the store (landbot.github.tally), read below.
- What the store knows is read on each scrape (`read_store`, in a thread), so every
  replica reports the same shared figures (aggregate them with max, not sum): drops by
  repository and reason, settled drops by repository, reason, class and outcome, the time
  from a drop to its outcome and to the merge (histograms), what is open now (jobs queued
  and running, deliveries waiting, drops pending) and the flakiest tests. Drops are never
  pruned (landbot.store.retention), so their counts only grow: counters. A count of open
  work is a current state: a gauge.
"""

from __future__ import annotations

import datetime as dt
import platform
from bisect import bisect_left, bisect_right
from collections import Counter as Tally
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Final

import sqlalchemy as sa
from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    Info,
    disable_created_metrics,
)
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4, generate_latest
from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.utils import floatToGoString

from landbot import __version__
from landbot.core.model import WAITING
from landbot.github import budget
from landbot.github import client as github_client
from landbot.github.client import CallRecord
from landbot.pipeline import worker as worker_module
from landbot.pipeline.worker import FixerRun
from landbot.store import LedgerTest, Store, utcnow
from landbot.store.tables import deliveries, drops, jobs, merge_groups
from landbot.store.views import MERGED_REASONS, MERGED_WHY, OPEN_JOBS
from landbot.triage.flaky import FlakyPolicy

CONTENT_TYPE: Final = CONTENT_TYPE_PLAIN_0_0_4

# Seconds. A drop settles in minutes when it is re-enqueued, in up to the fixer's limit
# (30 min by default) plus CI when it is fixed; a merge follows a whole CI run of the queue.
OUTCOME_BUCKETS: Final = (30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400, 43200, 86400)
MERGE_BUCKETS: Final = (300, 600, 1200, 1800, 3600, 7200, 14400, 28800, 86400, 172800, 604800)
FIXER_BUCKETS: Final = (10, 30, 60, 120, 300, 600, 900, 1200, 1800, 2700, 3600, 7200)

WAITING_DELIVERIES: Final = ("pending", "leased")
WAITING_OUTCOMES: Final = WAITING
NO_CLASS: Final = "none"  # the class label of a drop settled without triage
# The flakiest tests of triage's window (as the dashboard shows them).
FLAKY_WINDOW: Final = FlakyPolicy().window
FLAKIEST: Final = 20

# Every outcome of POST /webhook. All are exported from the start (at 0) so an alert on
# a rate never sees a series appear out of nothing.
OUTCOMES: Final = (
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


@dataclass
class DeliveryCounters:
    """The receiver's deliveries by outcome; only touched from the event loop, so no lock
    is needed."""

    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(OUTCOMES, 0))

    def add(self, outcome: str) -> None:
        self.counts[outcome] = self.counts.get(outcome, 0) + 1


# --- what happens in this process -------------------------------------------------------


class ProcessMetrics:
    """The instruments of this process, in their own registry."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.github_requests = Counter(
            "landbot_github_requests",
            "HTTP requests this process sent to the GitHub API (retries and auth calls "
            "included), by installation ('app': the App's own JWT calls; 'token': a "
            "token), API (rest, graphql) and HTTP status ('error': no answer).",
            ["installation", "api", "status"],
            registry=r,
        )
        self.rate_remaining = Gauge(
            "landbot_github_rate_limit_remaining",
            "Requests left in the rate-limit window, as GitHub's last answer to this process "
            "said (X-RateLimit-Remaining), by installation and resource (core, graphql...).",
            ["installation", "resource"],
            registry=r,
        )
        self.rate_quota = Gauge(
            "landbot_github_rate_limit_quota",
            "Requests allowed per rate-limit window (X-RateLimit-Limit), by installation "
            "and resource.",
            ["installation", "resource"],
            registry=r,
        )
        self.rate_reset = Gauge(
            "landbot_github_rate_limit_reset_timestamp_seconds",
            "When the rate-limit window refills, Unix time (X-RateLimit-Reset), by "
            "installation and resource.",
            ["installation", "resource"],
            registry=r,
        )
        self.fixer_runs = Histogram(
            "landbot_fixer_run_duration_seconds",
            "Fixer runs this process finished and how long each took, by repository and "
            "verdict (fixed, flaky, needs_human; 'error': the run failed).",
            ["repo", "verdict"],
            buckets=FIXER_BUCKETS,
            registry=r,
        )
        self.build = Info("landbot_build", "The landbot version serving this.", registry=r)
        self.build.info({"version": __version__, "python": platform.python_version()})

    def on_call(self, record: CallRecord) -> None:
        self.github_requests.labels(record.installation, record.api, record.status).inc()
        limit = record.rate_limit
        if limit is not None:
            labels = (record.installation, limit.resource)
            self.rate_remaining.labels(*labels).set(limit.remaining)
            self.rate_quota.labels(*labels).set(limit.limit)
            self.rate_reset.labels(*labels).set(limit.reset)

    def on_fixer_run(self, run: FixerRun) -> None:
        self.fixer_runs.labels(run.repo, run.verdict).observe(max(run.seconds, 0.0))

    def attach(self) -> None:
        """Start counting this process's GitHub calls and fixer runs here."""
        if self.on_call not in github_client.CALL_OBSERVERS:
            github_client.CALL_OBSERVERS.append(self.on_call)
        if self.on_fixer_run not in worker_module.FIXER_OBSERVERS:
            worker_module.FIXER_OBSERVERS.append(self.on_fixer_run)

    def detach(self) -> None:
        if self.on_call in github_client.CALL_OBSERVERS:
            github_client.CALL_OBSERVERS.remove(self.on_call)
        if self.on_fixer_run in worker_module.FIXER_OBSERVERS:
            worker_module.FIXER_OBSERVERS.remove(self.on_fixer_run)

    @contextmanager
    def attached(self) -> Iterator[ProcessMetrics]:
        self.attach()
        try:
            yield self
        finally:
            self.detach()


# No `_created` series: in the text format each is one more gauge per counter, which
# Prometheus does not need to see a counter reset (and landbot is the process's only user).
disable_created_metrics()  # type: ignore[no-untyped-call]

# Attached on import: `landbot serve` imports the web app (and so this module) before it
# starts the worker thread, whose first GitHub call must already be counted.
PROCESS: Final = ProcessMetrics()
PROCESS.attach()


# --- what the store knows -------------------------------------------------------------


@dataclass(frozen=True)
class Histo:
    """Observations as a Prometheus histogram: cumulative counts at each bound, the sum."""

    bounds: tuple[float, ...]
    cumulative: tuple[int, ...]  # observations <= each bound
    count: int
    total: float

    @classmethod
    def of(cls, values: Iterable[float], bounds: Sequence[float]) -> Histo:
        ordered = sorted(values)
        # bisect_right: an observation equal to a bound is within it (le: "less or equal").
        cumulative = tuple(bisect_right(ordered, b) for b in bounds)
        return cls(tuple(float(b) for b in bounds), cumulative, len(ordered), float(sum(ordered)))


@dataclass(frozen=True)
class StoreFigures:
    """What one scrape read from the store (`read_store`)."""

    # (repo, reason) -> drops recorded; (repo, reason, class, outcome) -> drops settled
    drops: Mapping[tuple[str, str], int] = field(default_factory=dict)
    settled: Mapping[tuple[str, str, str, str], int] = field(default_factory=dict)
    pending: Mapping[str, int] = field(default_factory=dict)  # repo -> drops pending now
    # (repo, outcome) -> seconds from each settled drop to its outcome
    to_outcome: Mapping[tuple[str, str], Histo] = field(default_factory=dict)
    to_merge: Mapping[str, Histo] = field(default_factory=dict)  # repo -> drop to merge
    jobs: Mapping[tuple[str, str, str], int] = field(default_factory=dict)  # repo, kind, status
    deliveries: Mapping[str, int] = field(default_factory=dict)  # status -> waiting now
    flaky: Sequence[LedgerTest] = ()
    breakers: Mapping[str, bool] = field(default_factory=dict)  # repo -> its breaker is open
    # (installation, api, status) -> GitHub requests of every process, as each last saved
    calls: Mapping[tuple[str, str, str], int] = field(default_factory=dict)


def _aware(value: Any) -> dt.datetime:
    """A time as read back (SQLite's aggregates and raw columns may be naive UTC)."""
    if isinstance(value, str):
        value = dt.datetime.fromisoformat(value)
    assert isinstance(value, dt.datetime), value
    return value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)


def _seconds(start: dt.datetime, end: dt.datetime) -> float:
    return max((end - start).total_seconds(), 0.0)


def read_store(store: Store, *, now: dt.datetime | None = None) -> StoreFigures:
    """Every figure /metrics reads from the store, on one connection (blocking: run it in
    a thread). Reads every drop's times, which grows with the store: 20,000 drops take
    about 0.4 s on SQLite (measured on a 2-core machine), within the scrape's 5 s."""
    now = now or utcnow()
    merged_self = sa.and_(drops.c.outcome == "ignored", drops.c.summary == MERGED_WHY)
    with store.engine.connect() as conn:
        drop_rows = conn.execute(
            sa.select(
                drops.c.repo,
                drops.c.pr,
                drops.c.reason,
                drops.c["class"].label("triage_class"),
                drops.c.outcome,
                drops.c.observed_at,
                drops.c.updated_at,
                merged_self.label("merged_self"),
            )
        ).all()
        group_rows = conn.execute(
            sa.select(merge_groups.c.repo, merge_groups.c.pr, merge_groups.c.updated_at).where(
                merge_groups.c.status == "destroyed:merged"
            )
        ).all()
        job_rows = conn.execute(
            sa.select(jobs.c.kind, jobs.c.status, jobs.c.payload, drops.c.repo)
            .select_from(jobs.outerjoin(drops, jobs.c.drop_id == drops.c.id))
            .where(jobs.c.status.in_(OPEN_JOBS))
        ).all()
        delivery_rows = conn.execute(
            sa.select(deliveries.c.status, sa.func.count())
            .where(deliveries.c.status.in_(WAITING_DELIVERIES))
            .group_by(deliveries.c.status)
        ).all()
    flaky = store.flakiest_tests(since=now - FLAKY_WINDOW, limit=FLAKIEST)
    breaker_rows = store.breakers()

    recorded: Tally[tuple[str, str]] = Tally()
    settled: Tally[tuple[str, str, str, str]] = Tally()
    pending: Tally[str] = Tally()
    to_outcome: dict[tuple[str, str], list[float]] = {}
    # When each PR merged, as far as the store knows: a merge group of it merged, GitHub
    # removed it because it merged, or landbot found it merged (views.fold's notion).
    merges: dict[tuple[str, int], list[dt.datetime]] = {}
    for g in group_rows:
        merges.setdefault((g.repo, g.pr), []).append(_aware(g.updated_at))
    for d in drop_rows:
        if d.reason in MERGED_REASONS:
            merges.setdefault((d.repo, d.pr), []).append(_aware(d.observed_at))
        elif d.merged_self:
            merges.setdefault((d.repo, d.pr), []).append(_aware(d.updated_at))
    for times in merges.values():
        times.sort()
    to_merge: dict[str, list[float]] = {}
    for d in drop_rows:
        recorded[(d.repo, d.reason)] += 1
        observed = _aware(d.observed_at)
        if d.outcome == "pending" or d.outcome in WAITING_OUTCOMES:
            # Waiting for the base or held by the breaker: still landbot's to carry on.
            pending[d.repo] += 1
        else:
            settled[(d.repo, d.reason, d.triage_class or NO_CLASS, d.outcome)] += 1
            # A settled drop's last update is its settlement (Lander.settle writes last).
            seconds = _seconds(observed, _aware(d.updated_at))
            to_outcome.setdefault((d.repo, d.outcome), []).append(seconds)
        if d.reason in MERGED_REASONS:
            continue  # a report of the merge itself, not a drop that waited for one
        times = merges.get((d.repo, d.pr), [])
        at = bisect_left(times, observed)
        if at < len(times):
            to_merge.setdefault(d.repo, []).append(_seconds(observed, times[at]))

    open_jobs: Tally[tuple[str, str, str]] = Tally()
    for j in job_rows:
        repo = j.repo
        if repo is None and isinstance(j.payload, dict):
            repo = j.payload.get("repo")  # a command job names its repository
        open_jobs[(str(repo or ""), j.kind, j.status)] += 1
    return StoreFigures(
        drops=dict(recorded),
        settled=dict(settled),
        pending=dict(pending),
        to_outcome={k: Histo.of(v, OUTCOME_BUCKETS) for k, v in to_outcome.items()},
        to_merge={k: Histo.of(v, MERGE_BUCKETS) for k, v in to_merge.items()},
        jobs=dict(open_jobs),
        deliveries={str(status): int(n) for status, n in delivery_rows},
        flaky=tuple(flaky),
        breakers={b.repo: b.open for b in breaker_rows},
        calls=store.call_counts(),
    )


def _histogram(name: str, doc: str, labels: list[str]) -> HistogramMetricFamily:
    return HistogramMetricFamily(name, doc, labels=labels)


def _add(family: HistogramMetricFamily, labels: Sequence[str], h: Histo) -> None:
    buckets = [(_le(b), float(n)) for b, n in zip(h.bounds, h.cumulative, strict=True)]
    buckets.append(("+Inf", float(h.count)))
    family.add_metric(list(labels), buckets, h.total)


def _le(bound: float) -> str:
    # As prometheus_client's own histograms spell it ("30.0"); the library is untyped here.
    return str(floatToGoString(bound))  # type: ignore[no-untyped-call]


def store_families(figures: StoreFigures | None) -> list[Metric]:
    """The store's figures as metric families (pure: the tests feed it figures)."""
    up = GaugeMetricFamily(
        "landbot_store_up", "Whether the store answered this scrape (1) or not (0)."
    )
    up.add_metric([], 0.0 if figures is None else 1.0)
    if figures is None:
        return [up]

    recorded = CounterMetricFamily(
        "landbot_drops",
        "Drops recorded in the store (kept forever), by repository and normalized reason.",
        labels=["repo", "reason"],
    )
    for (repo, reason), n in sorted(figures.drops.items()):
        recorded.add_metric([repo, reason], n)
    settled = CounterMetricFamily(
        "landbot_drops_settled",
        "Drops that reached an outcome (requeued, fixed, handed_back, ignored, failed), by "
        "repository, reason, triage class ('none': settled untriaged) and outcome.",
        labels=["repo", "reason", "class", "outcome"],
    )
    for key, n in sorted(figures.settled.items()):
        settled.add_metric(list(key), n)
    pending = GaugeMetricFamily(
        "landbot_drops_pending",
        "Drops landbot is handling now (no outcome yet), by repository.",
        labels=["repo"],
    )
    for repo, n in sorted(figures.pending.items()):
        pending.add_metric([repo], n)

    to_outcome = _histogram(
        "landbot_drop_to_outcome_seconds",
        "From a drop (as observed) to its outcome, by repository and outcome.",
        ["repo", "outcome"],
    )
    for labels, h in sorted(figures.to_outcome.items()):
        _add(to_outcome, labels, h)
    to_merge = _histogram(
        "landbot_drop_to_merge_seconds",
        "From a drop to the pull request's merge (its merge group merged, or GitHub or "
        "landbot saw it merged), for drops whose pull request merged, by repository.",
        ["repo"],
    )
    for repo, h in sorted(figures.to_merge.items()):
        _add(to_merge, [repo], h)

    queued = GaugeMetricFamily(
        "landbot_jobs_queued",
        "Jobs waiting for a worker now (the queue's depth), by repository and kind "
        "(drop, fix, command).",
        labels=["repo", "kind"],
    )
    running = GaugeMetricFamily(
        "landbot_jobs_running",
        "Jobs a worker holds now, by repository and kind.",
        labels=["repo", "kind"],
    )
    for (repo, kind, status), n in sorted(figures.jobs.items()):
        (queued if status == "queued" else running).add_metric([repo, kind], n)
    waiting = GaugeMetricFamily(
        "landbot_deliveries_waiting",
        "Stored webhook deliveries the worker has not processed yet (its backlog), by "
        "status (pending, leased).",
        labels=["status"],
    )
    for status in WAITING_DELIVERIES:
        waiting.add_metric([status], figures.deliveries.get(status, 0))

    breaker = GaugeMetricFamily(
        "landbot_breaker_open",
        "Whether the repository's breaker is open (1: drops held, no re-enqueue, no fixer "
        "run) or closed (0), for each repository whose breaker has ever opened.",
        labels=["repo"],
    )
    for repo, is_open in sorted(figures.breakers.items()):
        breaker.add_metric([repo], 1.0 if is_open else 0.0)
    every = CounterMetricFamily(  # issue 28.4
        "landbot_github_requests_all_processes",
        "HTTP requests every landbot process sharing this store (serve, each worker, poll, "
        "retry) sent to the GitHub API, as each last saved its count (every 15 s, and as it "
        "ends), by installation, API and status. The same on every replica: aggregate with "
        "max. landbot_github_requests is this process's alone, counted live.",
        labels=["installation", "api", "status"],
    )
    for (installation, api, status), calls in sorted(figures.calls.items()):
        every.add_metric([installation, api, status], calls)

    return [
        up,
        recorded,
        settled,
        pending,
        to_outcome,
        to_merge,
        queued,
        running,
        waiting,
        breaker,
        every,
    ]


def flaky_family(tests: Sequence[LedgerTest]) -> GaugeMetricFamily:
    """`landbot_flaky_test_failures{repo,test}`: the failures, within the ledger's window,
    of each of the flakiest tests (a test in several checks is summed)."""
    per: Tally[tuple[str, str]] = Tally()
    for t in tests:
        per[(t.repo, t.test)] += t.failures
    family = GaugeMetricFamily(
        "landbot_flaky_test_failures",
        "Failures in the last week of the tests that also passed on retry (the flakiest "
        "tests), by repository and test.",
        labels=["repo", "test"],
    )
    for (repo, test), n in sorted(per.items()):
        family.add_metric([repo, test], n)
    return family


def webhook_family(counters: DeliveryCounters) -> CounterMetricFamily:
    family = CounterMetricFamily(
        "landbot_webhook_deliveries",
        "Webhook deliveries received by this process, by outcome.",
        labels=["outcome"],
    )
    counts = {**dict.fromkeys(OUTCOMES, 0), **counters.counts}
    for outcome, n in sorted(counts.items()):
        family.add_metric([outcome], n)
    return family


def budget_families(planners: Iterable[budget.Planner]) -> list[GaugeMetricFamily]:
    """What this process's budget planners know now (landbot.github.budget): the primary
    budget left and the time to its reset per installation and resource, the calls waiting
    and the secondary hold per installation. Several planners in one process (one per
    client) are folded the careful way: the least left, the latest reset, the longest hold,
    the calls waiting summed."""
    left: dict[tuple[str, str], float] = {}
    reset: dict[tuple[str, str], float] = {}
    waiting: Tally[str] = Tally()
    held: dict[str, float] = {}
    for planner in list(planners):
        for f in planner.figures():
            key = (f.installation, f.resource)
            left[key] = min(left.get(key, f.remaining), f.remaining)
            reset[key] = max(reset.get(key, 0.0), f.reset_in)
        waiting.update(planner.waiting())
        for name, seconds in planner.held().items():
            held[name] = max(held.get(name, 0.0), seconds)
    by_resource = ["installation", "resource"]
    remaining = GaugeMetricFamily(
        "landbot_budget_remaining",
        "GitHub's primary budget this process counts as left (the last answer's "
        "X-RateLimit-Remaining, less the requests sent since), by installation and resource.",
        labels=by_resource,
    )
    to_reset = GaugeMetricFamily(
        "landbot_budget_reset_seconds",
        "Seconds until that budget refills, by installation and resource.",
        labels=by_resource,
    )
    calls = GaugeMetricFamily(
        "landbot_budget_calls_waiting",
        "GitHub calls of this process waiting for a limit to pass, by installation.",
        labels=["installation"],
    )
    hold = GaugeMetricFamily(
        "landbot_budget_hold_seconds",
        "Seconds a secondary rate limit still holds every call of the installation.",
        labels=["installation"],
    )
    for key in sorted(left):
        remaining.add_metric(list(key), left[key])
        to_reset.add_metric(list(key), reset[key])
    for name in sorted(set(waiting) | set(held)):
        calls.add_metric([name], waiting[name])
        hold.add_metric([name], held.get(name, 0.0))
    return [remaining, to_reset, calls, hold]


@dataclass(frozen=True)
class _Scrape:
    """One scrape's families: the process's registry, then the families built for it."""

    registry: CollectorRegistry
    families: Sequence[Metric]

    def collect(self) -> Iterable[Metric]:
        yield from self.registry.collect()
        yield from self.families


def render(
    counters: DeliveryCounters,
    figures: StoreFigures | None,
    *,
    process: ProcessMetrics = PROCESS,
    planners: Iterable[budget.Planner] = budget.PLANNERS,
) -> bytes:
    """The exposition text; `figures` is None when the store could not be read."""
    families: list[Metric] = [
        webhook_family(counters),
        *budget_families(planners),
        *store_families(figures),
    ]
    if figures is not None:
        families.append(flaky_family(figures.flaky))
    return generate_latest(_Scrape(process.registry, families))
