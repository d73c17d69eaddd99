"""GET /metrics on prometheus_client: every family read back from a real scrape, checked by
`promtool check metrics` (Debian's `prometheus` package; scripts/setup installs it), and
the store's figures on SQLite and PostgreSQL."""

from __future__ import annotations

import datetime as dt
import os
import shutil
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from prometheus_client.parser import text_string_to_metric_families
from pydantic import SecretStr
from pytest_httpx import HTTPXMock

from landbot import __version__
from landbot.config import GitHubSettings
from landbot.core.model import Drop, Evidence, FixerResult
from landbot.github import client as github_client
from landbot.github.client import CallRecord, GitHubClient, RateLimit
from landbot.github.retry import RetryPolicy
from landbot.pipeline.worker import FIXER_OBSERVERS, FixerRun, Worker
from landbot.store import Store, utcnow
from landbot.store.tables import deliveries, jobs
from landbot.web import prom
from landbot.web.app import create_app
from landbot.web.prom import DeliveryCounters, ProcessMetrics, StoreFigures

from .conftest import (
    OPERATOR,
    Upload,
    call,
    compact,
    headers_for,
    make_settings,
    payload,
    payload_bytes,
)

# ./scripts/test --fast leaves this module out: its tests start processes (landbot, git,
# the sandbox, servers) and take seconds each.
pytestmark = pytest.mark.slow

with warnings.catch_warnings():
    warnings.simplefilter("ignore", UserWarning)
    from starlette.testclient import TestClient

BODY = payload_bytes("pull_request.dequeued.json")
API = "https://api.test"
LOOPBACK = ("127.0.0.1", 50000)  # /metrics answers the operator only (landbot.web.board)
Labels = frozenset[tuple[str, str]]


def samples(text: str) -> dict[tuple[str, Labels], float]:
    """Every sample of an exposition, parsed by prometheus_client's own parser (which
    refuses a malformed line): {(name, labels): value}."""
    out: dict[tuple[str, Labels], float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            key = (s.name, frozenset(s.labels.items()))
            assert key not in out, f"{key} twice"
            out[key] = s.value
    return out


def value(got: dict[tuple[str, Labels], float], name: str, **labels: str) -> float:
    return got[(name, frozenset(labels.items()))]


def families(text: str) -> dict[str, str]:
    """{family name: type}, from the # TYPE lines."""
    out = {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            out[name] = kind
    return out


def client_for(store: Store, **kw: Any) -> TestClient:
    return TestClient(create_app(make_settings(**kw), store), client=LOOPBACK, headers=OPERATOR)


@pytest.fixture(params=["sqlite", "postgresql"])
def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """The store on each backend (tests/store/conftest.py's pattern): the figures are SQL."""
    if request.param == "sqlite":
        s = Store.open(f"sqlite:///{tmp_path / 'landbot.db'}")
    else:
        s = Store.open(request.getfixturevalue("postgres_databases").create())
    yield s
    s.close()


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[Store]:
    s = Store.open(f"sqlite:///{tmp_path / 'landbot.db'}")
    yield s
    s.close()


def ago(**kw: float) -> dt.datetime:
    return utcnow() - dt.timedelta(**kw)


def add_drop(store: Store, pr: int, key: str, *, reason: str = "failed_checks", **kw: Any) -> int:
    drop_id, created = store.add_drop(
        repo=kw.pop("repo", "o/r"), pr=pr, head_sha=kw.pop("head", "a" * 40), reason=reason,
        source="webhook", dedupe_key=key, **kw,
    )  # fmt: skip
    assert created
    return drop_id


def merged_group(store: Store, pr: int, sha: str, repo: str = "o/r") -> None:
    store.remember_group(
        repo=repo, pr=pr, head_sha=sha, head_ref=f"gh-readonly-queue/main/pr-{pr}-{'b' * 40}",
        base_ref="main", base_sha="b" * 40, status="destroyed:merged",
    )  # fmt: skip


def populate(store: Store) -> None:
    """A store with a bit of everything /metrics reads."""
    a = add_drop(store, 1, "k1", observed_at=ago(minutes=90))
    store.update_drop(a, outcome="requeued", class_="flaky")
    merged_group(store, 1, "c" * 40)
    b = add_drop(store, 2, "k2", reason="merge_conflict", repo='we"ird\\org/x\ny')
    store.add_job("drop", {"drop_id": b}, drop_id=b)
    store.add_job("command", {"command": "retry", "repo": "o/r", "pr": 3})
    store.record_delivery("d1", "pull_request", "dequeued", "o/r", b"{}")
    now = utcnow()
    store.record_test_failures(
        repo="o/r", pr=1, head_sha="a" * 40, sha="c" * 40,
        failures={"test (3.12)": ["tests/test_net.py::test_fetch"]}, at=now,
    )  # fmt: skip
    store.record_retry(
        repo="o/r", pr=1, head_sha="a" * 40, sha="f" * 40, passed=["test (3.12)"], failed={},
        at=now,
    )  # fmt: skip


def full_scrape(store: Store) -> str:
    """A scrape with every family populated, the process's own instruments included."""
    populate(store)
    process = ProcessMetrics()
    process.on_call(CallRecord("42", "rest", "200", RateLimit("core", 5000, 4321, 1.8e9)))
    process.on_call(CallRecord("app", "rest", "201", None))
    process.on_fixer_run(FixerRun("o/r", "fixed", 95.0))
    counters = DeliveryCounters()
    counters.add("accepted")
    return prom.render(counters, prom.read_store(store), process=process).decode()


# --- promtool ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def promtool() -> str:
    found = shutil.which("promtool")
    if found is None:
        why = "promtool is not installed (Debian's `prometheus` package; scripts/setup)"
        if os.environ.get("CI"):  # scripts/setup installs it: CI must run these
            pytest.fail(f"CI must run the promtool checks: {why}")
        print(f"skipping the promtool checks: {why}", file=sys.stderr)
        pytest.skip(why)
    return found


def promtool_check(promtool: str, text: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [promtool, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60
    )


def test_promtool_accepts_the_whole_exposition(promtool: str, sqlite_store: Store) -> None:
    text = full_scrape(sqlite_store)
    result = promtool_check(promtool, text)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (result.stdout + result.stderr).strip() == ""  # no lint warning either


def test_promtool_accepts_the_exposition_when_the_store_is_down(promtool: str) -> None:
    text = prom.render(DeliveryCounters(), None, process=ProcessMetrics()).decode()
    result = promtool_check(promtool, text)
    assert result.returncode == 0, result.stdout + result.stderr


BREAKAGES = {
    # The defect issue 15 names: an all-time count published as a gauge.
    "count-as-gauge": (
        lambda t: t.replace(
            "# TYPE landbot_drops_total counter", "# TYPE landbot_drops_total gauge"
        ),
        'non-counter metrics should not have "_total" suffix',
    ),
    "counter-without-total": (
        lambda t: t.replace("landbot_drops_total", "landbot_drops"),
        'counter metrics should have "_total" suffix',
    ),
    "not-seconds": (
        lambda t: t.replace("landbot_drop_to_merge_seconds", "landbot_drop_to_merge_milliseconds"),
        'use base unit "seconds"',
    ),
    "not-a-number": (
        lambda t: t.replace("landbot_store_up 1.0", "landbot_store_up one"),
        "expected float as value",
    ),
    "label-unescaped": (
        lambda t: t.replace('repo="we\\"ird', 'repo="we"ird'),
        "unexpected end of label value",
    ),
    "family-twice": (
        lambda t: t + "# TYPE landbot_store_up gauge\n",
        'second TYPE line for metric name "landbot_store_up"',
    ),
}


@pytest.mark.parametrize("name", sorted(BREAKAGES))
def test_promtool_rejects_a_broken_exposition(
    promtool: str, sqlite_store: Store, name: str
) -> None:
    """The control: the same exposition, broken in one place, fails the check, and for
    that reason."""
    breakage, reason = BREAKAGES[name]
    text = full_scrape(sqlite_store)
    broken = breakage(text)
    assert broken != text
    result = promtool_check(promtool, broken)
    assert result.returncode != 0
    assert reason in result.stdout + result.stderr


# --- the families -------------------------------------------------------------------------


def test_every_family_is_there_with_its_type_and_unit(sqlite_store: Store) -> None:
    kinds = families(full_scrape(sqlite_store))
    assert kinds == {
        "landbot_github_requests_total": "counter",
        "landbot_github_rate_limit_remaining": "gauge",
        "landbot_github_rate_limit_quota": "gauge",
        "landbot_github_rate_limit_reset_timestamp_seconds": "gauge",
        "landbot_budget_remaining": "gauge",
        "landbot_budget_reset_seconds": "gauge",
        "landbot_budget_calls_waiting": "gauge",
        "landbot_budget_hold_seconds": "gauge",
        "landbot_fixer_run_duration_seconds": "histogram",
        "landbot_build_info": "gauge",
        "landbot_webhook_deliveries_total": "counter",
        "landbot_store_up": "gauge",
        "landbot_drops_total": "counter",
        "landbot_drops_settled_total": "counter",
        "landbot_drops_pending": "gauge",
        "landbot_drop_to_outcome_seconds": "histogram",
        "landbot_drop_to_merge_seconds": "histogram",
        "landbot_jobs_queued": "gauge",
        "landbot_jobs_running": "gauge",
        "landbot_deliveries_waiting": "gauge",
        "landbot_flaky_test_failures": "gauge",
        "landbot_breaker_open": "gauge",
        "landbot_github_requests_all_processes_total": "counter",
    }
    # No `_created` series: this process's counters are plain counters.
    assert not any(name.endswith("_created") for name in kinds)


def test_build_info_names_the_version(sqlite_store: Store) -> None:
    got = samples(full_scrape(sqlite_store))
    [(labels, v)] = [(dict(k[1]), v) for k, v in got.items() if k[0] == "landbot_build_info"]
    assert v == 1 and labels["version"] == __version__


def test_the_store_figures_read_back_through_the_app(sqlite_store: Store) -> None:
    populate(sqlite_store)
    got = samples(client_for(sqlite_store).get("/metrics").text)
    weird = 'we"ird\\org/x\ny'  # the parser undid the escaping the exposition needs
    assert value(got, "landbot_drops_total", repo="o/r", reason="failed_checks") == 1
    assert value(got, "landbot_drops_total", repo=weird, reason="merge_conflict") == 1
    settled = dict(repo="o/r", reason="failed_checks", outcome="requeued")
    assert value(got, "landbot_drops_settled_total", **settled, **{"class": "flaky"}) == 1
    assert value(got, "landbot_drops_pending", repo=weird) == 1
    assert ("landbot_drops_pending", frozenset({("repo", "o/r")})) not in got  # settled
    assert value(got, "landbot_jobs_queued", repo=weird, kind="drop") == 1
    assert value(got, "landbot_jobs_queued", repo="o/r", kind="command") == 1
    assert value(got, "landbot_deliveries_waiting", status="pending") == 1
    assert value(got, "landbot_deliveries_waiting", status="leased") == 0
    flaky = dict(repo="o/r", test="tests/test_net.py::test_fetch")
    assert value(got, "landbot_flaky_test_failures", **flaky) == 1
    assert value(got, "landbot_store_up") == 1


def test_the_drop_counters_are_counters_they_never_go_down(any_store: Store) -> None:
    """A drop moves from pending to settled: the drops counter stays, the settled one
    rises, the pending gauge falls (a state); pruning the store moves no counter."""
    from landbot.store.retention import prune

    drop_id = add_drop(any_store, 7, "k7", observed_at=ago(minutes=5))
    job = any_store.add_job("drop", {"drop_id": drop_id}, drop_id=drop_id)
    before = prom.read_store(any_store)
    assert before.drops == {("o/r", "failed_checks"): 1}
    assert before.settled == {} and before.pending == {"o/r": 1}

    any_store.update_drop(drop_id, outcome="handed_back", class_="genuine")
    lease = any_store.lease_job("w", dt.timedelta(seconds=60))
    assert lease is not None and lease.id == job
    any_store.finish_job(job, "w", "done", result={})
    after = prom.read_store(any_store)
    assert after.drops == before.drops
    assert after.settled == {("o/r", "failed_checks", "genuine", "handed_back"): 1}
    assert after.pending == {}

    pruned = prune(any_store, dt.timedelta(days=7), now=utcnow() + dt.timedelta(days=30))
    assert pruned.jobs == 1  # the finished job went...
    final = prom.read_store(any_store)
    assert (final.drops, final.settled) == (after.drops, after.settled)  # ...no count moved


def test_time_from_drop_to_outcome(any_store: Store) -> None:
    """Observed 90 s before it settled: in the 120 s bucket, not the 60 s one."""
    drop_id = add_drop(any_store, 1, "k1", observed_at=ago(seconds=90))
    add_drop(any_store, 2, "k2", observed_at=ago(hours=5))  # pending: not observed yet
    any_store.update_drop(drop_id, outcome="requeued")
    h = prom.read_store(any_store).to_outcome
    assert set(h) == {("o/r", "requeued")}
    got = dict(zip(h[("o/r", "requeued")].bounds, h[("o/r", "requeued")].cumulative, strict=True))
    assert (got[60], got[120], h[("o/r", "requeued")].count) == (0, 1, 1)
    assert 90 <= h[("o/r", "requeued")].total < 100


def test_time_from_drop_to_merge(any_store: Store) -> None:
    # PR 1: dropped 100 minutes ago, its merge group merged now: 6,000 s.
    add_drop(any_store, 1, "k1", observed_at=ago(minutes=100))
    merged_group(any_store, 1, "c" * 40)
    # PR 2: dropped at t0, and GitHub removed it for having merged 90 minutes later.
    t0 = ago(hours=3)
    add_drop(any_store, 2, "k2", observed_at=t0)
    add_drop(any_store, 2, "k2m", reason="merged", observed_at=t0 + dt.timedelta(minutes=90))
    # The controls: PR 3 never merged; PR 4 merged before this drop of it (a later drop
    # waits for a later merge).
    add_drop(any_store, 3, "k3", observed_at=ago(hours=1))
    merged_group(any_store, 4, "d" * 40)
    add_drop(any_store, 4, "k4", observed_at=utcnow() + dt.timedelta(seconds=5))

    h = prom.read_store(any_store).to_merge["o/r"]
    got = dict(zip(h.bounds, h.cumulative, strict=True))
    assert h.count == 2  # PRs 1 and 2; the `merged` report itself is no drop waiting
    assert (got[3600], got[7200]) == (0, 2)  # 6,000 s and 5,400 s
    assert 11_400 <= h.total < 11_500


def test_only_open_jobs_make_the_queue(any_store: Store) -> None:
    drop_id = add_drop(any_store, 1, "k1")
    for _ in range(3):
        any_store.add_job("fix", {"drop_id": drop_id}, drop_id=drop_id)
    lease = any_store.lease_job("w", dt.timedelta(seconds=60))
    assert lease is not None
    done = any_store.add_job("drop", {"drop_id": drop_id}, drop_id=drop_id)
    assert done is not None
    with any_store.tx() as conn:  # a finished job is history, not queue
        conn.execute(jobs.update().where(jobs.c.id == done).values(status="done"))
    assert prom.read_store(any_store).jobs == {
        ("o/r", "fix", "queued"): 2,
        ("o/r", "fix", "leased"): 1,
    }


def test_metrics_count_deliveries_by_outcome(sqlite_store: Store) -> None:
    client = client_for(sqlite_store, repos=["octo-org/widgets"])

    def post(body: bytes, **kw: str) -> int:
        headers = headers_for(body, **{k: v for k, v in kw.items() if k != "drop"})
        if "drop" in kw:
            del headers[kw["drop"]]
        return client.post("/webhook", content=body, headers=headers).status_code

    other = compact({**payload("pull_request.dequeued.json"), "repository": {"full_name": "x/y"}})
    assert post(BODY, delivery="a") == 202
    assert post(BODY, delivery="b") == 202
    assert post(BODY, delivery="a") == 200
    assert post(BODY, secret="wrong") == 401
    assert post(BODY, drop="X-Hub-Signature-256") == 401
    assert post(b"{oops") == 400
    assert post(BODY, drop="X-GitHub-Event") == 400
    assert post(other) == 202
    assert post(payload_bytes("ping.json"), event="ping") == 200
    too_big = headers_for(b"{}")
    too_big["Content-Length"] = str(27 * 1024 * 1024)
    # The test client computes its own Content-Length; call the ASGI app directly instead.
    assert call(client.app, too_big, Upload([]))[0] == 413  # type: ignore[arg-type]

    r = client.get("/metrics")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/plain; version=0.0.4")
    got = samples(r.text)
    expected = {
        "accepted": 2,
        "duplicate": 1,
        "bad_signature": 2,
        "bad_json": 1,
        "bad_request": 1,
        "ignored_repo": 1,
        "ping": 1,
        "too_large": 1,
        "no_secret": 0,  # every outcome is exported from the start
        "store_error": 0,
    }
    for outcome, n in expected.items():
        assert value(got, "landbot_webhook_deliveries_total", outcome=outcome) == n, outcome
    assert value(got, "landbot_deliveries_waiting", status="pending") == 2  # the stored ones


def test_metrics_still_answer_when_the_store_is_down(tmp_path: Path) -> None:
    home = tmp_path / "gone"
    home.mkdir()
    store = Store.open(f"sqlite:///{home / 'landbot.db'}")
    store.engine.dispose()
    shutil.rmtree(home)
    r = client_for(store).get("/metrics")
    assert r.status_code == 200
    got = samples(r.text)
    assert value(got, "landbot_store_up") == 0
    assert value(got, "landbot_webhook_deliveries_total", outcome="accepted") == 0
    assert not any(name.startswith("landbot_drops") for name, _ in got)


def test_figures_render_pure() -> None:
    """store_families on figures made by hand: the histogram's buckets are cumulative."""
    h = prom.Histo.of([5.0, 30.0, 31.0, 9999.0], (30, 60))
    assert (h.cumulative, h.count, h.total) == ((2, 3), 4, 10065.0)  # 30 is within le=30
    text = prom.render(
        DeliveryCounters(), StoreFigures(to_merge={"o/r": h}), process=ProcessMetrics()
    ).decode()
    got = samples(text)
    assert value(got, "landbot_drop_to_merge_seconds_bucket", repo="o/r", le="30.0") == 2
    assert value(got, "landbot_drop_to_merge_seconds_bucket", repo="o/r", le="+Inf") == 4
    assert value(got, "landbot_drop_to_merge_seconds_count", repo="o/r") == 4


# --- what happens in this process -----------------------------------------------------------


@pytest.fixture
def process() -> Iterator[ProcessMetrics]:
    """Fresh instruments attached to the hooks for one test (the module's own PROCESS
    counts too, as it does in `landbot serve`)."""
    with ProcessMetrics().attached() as p:
        yield p


def scrape(process: ProcessMetrics) -> dict[tuple[str, Labels], float]:
    return samples(prom.render(DeliveryCounters(), None, process=process).decode())


def token_client(policy: RetryPolicy | None = None) -> GitHubClient:
    settings = GitHubSettings(api_url=API, token=SecretStr("tok-123"))
    return GitHubClient(settings, sleep=lambda s: None, policy=policy or RetryPolicy())


def github_samples(got: dict[tuple[str, Labels], float]) -> list[tuple[str, Labels]]:
    return [k for k in got if k[0].startswith("landbot_github_")]


RATE = {
    "x-ratelimit-limit": "5000",
    "x-ratelimit-remaining": "4999",
    "x-ratelimit-reset": "1800000600",
    "x-ratelimit-resource": "core",
}
PERMISSION = f"{API}/repos/octo/widgets/collaborators/alice/permission"


def test_github_calls_are_counted_with_the_rate_limit_left(
    process: ProcessMetrics, httpx_mock: HTTPXMock
) -> None:
    assert github_samples(scrape(process)) == []  # the control: nothing counted yet
    httpx_mock.add_response(url=PERMISSION, json={"permission": "write"}, headers=RATE)
    httpx_mock.add_response(
        url=PERMISSION, status_code=404, json={"message": "Not Found"},
        headers={**RATE, "x-ratelimit-remaining": "4998"},
    )  # fmt: skip
    graphql = {**RATE, "x-ratelimit-resource": "graphql", "x-ratelimit-remaining": "4900"}
    httpx_mock.add_response(
        url=f"{API}/graphql", json={"data": {"repository": {"mergeQueue": None}}}, headers=graphql
    )
    with token_client() as gh:
        assert gh.collaborator_permission("octo/widgets", "alice") == "write"
        assert gh.collaborator_permission("octo/widgets", "alice") == "none"
        assert gh.merge_queue_entries("octo/widgets", "main") == []
        assert gh.calls == 3
    got = scrape(process)
    req = "landbot_github_requests_total"
    assert value(got, req, installation="token", api="rest", status="200") == 1
    assert value(got, req, installation="token", api="rest", status="404") == 1
    assert value(got, req, installation="token", api="graphql", status="200") == 1
    left = "landbot_github_rate_limit_remaining"
    assert value(got, left, installation="token", resource="core") == 4998  # the last answer
    assert value(got, left, installation="token", resource="graphql") == 4900
    assert value(got, "landbot_github_rate_limit_quota", installation="token", resource="core")
    reset = "landbot_github_rate_limit_reset_timestamp_seconds"
    assert value(got, reset, installation="token", resource="core") == 1_800_000_600


def test_the_budget_left_its_reset_and_the_calls_waiting(httpx_mock: HTTPXMock) -> None:
    now = 1_800_000_000.0
    httpx_mock.add_response(url=PERMISSION, json={"permission": "write"}, headers=RATE)
    settings = GitHubSettings(api_url=API, token=SecretStr("tok-123"))
    with GitHubClient(settings, sleep=lambda s: None, clock=lambda: now) as gh:
        got = samples(prom.render(DeliveryCounters(), None, planners=[gh.planner]).decode())
        assert not any(k[0] == "landbot_budget_remaining" for k in got)  # control: unknown
        gh.collaborator_permission("octo/widgets", "alice")
        gh.planner._state("token").hold_until = now + 30  # as a secondary limit leaves it
        got = samples(prom.render(DeliveryCounters(), None, planners=[gh.planner]).decode())
    assert value(got, "landbot_budget_remaining", installation="token", resource="core") == 4999
    assert value(got, "landbot_budget_reset_seconds", installation="token", resource="core") == 600
    assert value(got, "landbot_budget_calls_waiting", installation="token") == 0
    assert value(got, "landbot_budget_hold_seconds", installation="token") == 30


def test_a_call_that_got_no_answer_is_counted_as_an_error(
    process: ProcessMetrics, httpx_mock: HTTPXMock
) -> None:
    httpx_mock.add_exception(httpx.ConnectError("refused"), url=PERMISSION)
    # One attempt: the policy would retry a connection refused.
    with token_client(RetryPolicy(max_attempts=1)) as gh, pytest.raises(Exception, match="refused"):
        gh.collaborator_permission("octo/widgets", "alice")
    got = scrape(process)
    assert value(got, "landbot_github_requests_total", installation="token", api="rest",
                 status="error") == 1  # fmt: skip
    assert not any(k[0] == "landbot_github_rate_limit_remaining" for k in got)


def test_app_calls_are_counted_per_installation(
    process: ProcessMetrics, httpx_mock: HTTPXMock, tmp_path: Path
) -> None:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = tmp_path / "app.pem"
    pem.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        )
    )
    expires = (utcnow() + dt.timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    app_rate = {**RATE, "x-ratelimit-remaining": "4990"}
    httpx_mock.add_response(
        url=f"{API}/repos/octo/widgets/installation", json={"id": 42, "app_id": 1},
        headers=app_rate,
    )  # fmt: skip
    httpx_mock.add_response(
        url=f"{API}/app/installations/42/access_tokens", method="POST", status_code=201,
        json={"token": "ghs_x", "expires_at": expires}, headers=app_rate,
    )  # fmt: skip
    httpx_mock.add_response(url=PERMISSION, json={"permission": "admin"}, headers=RATE)
    settings = GitHubSettings(api_url=API, app_id=1, private_key_file=pem)
    # A node-id mutation names no repository: the App's one installation, same token.
    minimized = {"data": {"minimizeComment": {"minimizedComment": {"isMinimized": True}}}}
    httpx_mock.add_response(url=f"{API}/graphql", json=minimized)
    with GitHubClient(settings, sleep=lambda s: None) as gh:
        assert gh.collaborator_permission("octo/widgets", "alice") == "admin"
        gh.minimize_comment("IC_1")
        assert gh.calls == 4  # naming the installation cost no request (httpx_mock checks)
    got = scrape(process)
    req = "landbot_github_requests_total"
    assert value(got, req, installation="app", api="rest", status="200") == 1
    assert value(got, req, installation="app", api="rest", status="201") == 1
    assert value(got, req, installation="42", api="rest", status="200") == 1
    assert value(got, req, installation="42", api="graphql", status="200") == 1
    left = "landbot_github_rate_limit_remaining"
    assert value(got, left, installation="app", resource="core") == 4990
    assert value(got, left, installation="42", resource="core") == 4999


def test_an_observer_that_fails_does_not_fail_the_call(httpx_mock: HTTPXMock) -> None:
    def broken(record: CallRecord) -> None:
        raise RuntimeError("observer bug")

    httpx_mock.add_response(url=PERMISSION, json={"permission": "read"})
    github_client.CALL_OBSERVERS.append(broken)
    try:
        with token_client() as gh:
            assert gh.collaborator_permission("octo/widgets", "alice") == "read"
    finally:
        github_client.CALL_OBSERVERS.remove(broken)


class _Lander:
    """The worker's view of the land loop for a fix job: the drop, then the decision."""

    def __init__(self, drop: Drop) -> None:
        self.drop = drop

    def before_fix(self, drop_id: int) -> tuple[Drop, Evidence, None]:
        return self.drop, Evidence(), None

    def process(self, drop_id: int, fixer: FixerResult | None = None) -> Any:
        return type("Decision", (), {"outcome": "fixed", "why": "fixed"})()

    def progress(self, msg: str) -> None:
        pass

    def failed(self, drop_id: int, decision: Any) -> None:
        pass  # the drop's check run: none here


@pytest.mark.parametrize("verdict", ["fixed", "needs_human", "error"])
def test_fixer_runs_are_counted_by_verdict(
    process: ProcessMetrics, sqlite_store: Store, verdict: str
) -> None:
    drop_id = add_drop(sqlite_store, 1, "k1")
    row = sqlite_store.drop(drop_id)
    assert row is not None

    def fixer(drop: Drop, evidence: Evidence) -> FixerResult:
        if verdict == "error":
            raise ValueError("the agent is not installed")
        return FixerResult(verdict=verdict)  # type: ignore[arg-type]

    worker = Worker(sqlite_store, lambda: _Lander(row.drop), fixer=fixer)  # type: ignore[arg-type, return-value]
    sqlite_store.add_job("fix", {"drop_id": drop_id}, drop_id=drop_id)
    lease = sqlite_store.lease_job("w", dt.timedelta(seconds=60))
    assert lease is not None
    worker.name = "w"
    worker.run_job(lease)
    got = scrape(process)
    runs = "landbot_fixer_run_duration_seconds_count"
    assert value(got, runs, repo="o/r", verdict=verdict) == 1
    others = [k for k in got if k[0] == runs and ("verdict", verdict) not in k[1]]
    assert others == []  # the control: no other verdict counted
    assert process.on_fixer_run in FIXER_OBSERVERS


def test_delivery_rows_used_by_the_metrics_are_the_stores(sqlite_store: Store) -> None:
    """landbot_deliveries_waiting counts pending and leased rows only."""
    for i in range(3):
        sqlite_store.record_delivery(f"d{i}", "ping", None, None, b"{}")
    with sqlite_store.tx() as conn:
        conn.execute(
            deliveries.update().where(deliveries.c.delivery_id == "d0").values(status="done")
        )
    lease = sqlite_store.lease_delivery("w", dt.timedelta(seconds=60))
    assert lease is not None
    assert prom.read_store(sqlite_store).deliveries == {"pending": 1, "leased": 1}
