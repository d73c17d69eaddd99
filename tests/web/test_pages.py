"""GET /healthz, /metrics and the dashboard, against a real SQLite store."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from landbot.store import Store
from landbot.web.app import create_app

from .conftest import OPERATOR, make_settings, payload_bytes

BODY = payload_bytes("pull_request.dequeued.json")


def broken_store(tmp_path: Path) -> Store:
    """A store whose database file and directory have been deleted: nothing answers."""
    home = tmp_path / "gone"
    home.mkdir()  # Store.open creates no folder
    s = Store.open(f"sqlite:///{home / 'landbot.db'}")
    s.engine.dispose()
    shutil.rmtree(home)
    return s


# --- /healthz --------------------------------------------------------------------------


def test_healthz_is_200_when_store_and_worker_are_up(
    client_for: Callable[..., TestClient],
) -> None:
    r = client_for(worker_alive=lambda: True).get("/healthz")
    assert (r.status_code, r.json()) == (200, {"store": True, "worker": True})


def test_healthz_without_a_worker_check_reports_the_store_only(client: TestClient) -> None:
    r = client.get("/healthz")
    assert (r.status_code, r.json()) == (200, {"store": True, "worker": None})


def test_healthz_is_503_when_the_worker_is_down(client_for: Callable[..., TestClient]) -> None:
    r = client_for(worker_alive=lambda: False).get("/healthz")
    assert r.status_code == 503
    assert r.json() == {"store": True, "worker": False, "down": ["worker"]}


def test_healthz_is_503_when_the_worker_check_raises(
    client_for: Callable[..., TestClient],
) -> None:
    def dead() -> bool:
        raise RuntimeError("worker thread is gone")

    r = client_for(worker_alive=dead).get("/healthz")
    assert (r.status_code, r.json()["down"]) == (503, ["worker"])


def test_healthz_is_503_when_the_store_is_down(tmp_path: Path) -> None:
    client = TestClient(
        create_app(make_settings(), broken_store(tmp_path), worker_alive=lambda: True)
    )
    r = client.get("/healthz")
    assert r.status_code == 503
    assert r.json() == {"store": False, "worker": True, "down": ["store"]}


# /metrics: tests/web/test_prom.py.


# --- the dashboard -----------------------------------------------------------------------


def test_dashboard_lists_the_newest_drops_escaped(client: TestClient, store: Store) -> None:
    import datetime as dt

    t0 = dt.datetime(2025, 11, 3, 14, 0, tzinfo=dt.UTC)
    old, _ = store.add_drop(
        repo="octo-org/widgets", pr=1340, head_sha="a" * 40, reason="merge_conflict",
        source="poll", dedupe_key="old", observed_at=t0,
    )  # fmt: skip
    new, _ = store.add_drop(
        repo="octo-org/<script>alert(1)</script>", pr=1347,
        head_sha="7d1f3a0c9be4e21a5c8f3e6b0a4d2c1f9e8b7a65", reason="failed_checks",
        source="webhook", dedupe_key="new", observed_at=t0 + dt.timedelta(minutes=5),
    )  # fmt: skip
    store.update_drop(
        new, outcome="handed_back", class_="genuine",
        summary='test_sizes failed: expected "12" <got> & 13',
    )  # fmt: skip
    r = client.get("/")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/html")
    assert "script-src" not in r.headers["content-security-policy"]  # no script at all
    assert "default-src 'none'" in r.headers["content-security-policy"]
    page = r.text
    assert "<script" not in page
    assert "octo-org/&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "expected &quot;12&quot; &lt;got&gt; &amp; 13" in page
    assert page.index("#1347") < page.index("#1340")  # newest first
    assert ">7d1f3a0c9b</code>" in page
    assert '<a href="https://github.com/octo-org/widgets/pull/1340">#1340</a>' in page
    row = page[page.index("#1347") :].split("</tr>")[0]
    updated = store.drop(new).updated_at.strftime("%Y-%m-%d %H:%M:%SZ")  # type: ignore[union-attr]
    for cell in ("failed_checks", "genuine", "handed_back", updated):
        assert cell in row, cell
    assert old


def test_dashboard_with_no_drops_says_so(client: TestClient) -> None:
    r = client.get("/")
    assert r.status_code == 200 and "No drops recorded yet" in r.text


def test_dashboard_when_the_store_is_down(tmp_path: Path) -> None:
    app = create_app(make_settings(), broken_store(tmp_path))
    r = TestClient(app, client=("127.0.0.1", 50000), headers=OPERATOR).get("/")
    assert r.status_code == 503 and "store is not answering" in r.text


@pytest.mark.parametrize(
    ("api_url", "link"),
    [
        ("https://api.github.com", "https://github.com/o/r/pull/5"),
        ("https://ghe.example.com/api/v3", "https://ghe.example.com/o/r/pull/5"),
        ("http://127.0.0.1:9999", "http://127.0.0.1:9999/o/r/pull/5"),  # the simulator
    ],
)
def test_dashboard_links_to_the_pull_request_where_it_can(
    api_url: str, link: str | None, store: Store
) -> None:
    store.add_drop(
        repo="o/r", pr=5, head_sha="d" * 40, reason="manual", source="poll", dedupe_key="x"
    )
    settings = make_settings()
    settings.github.api_url = api_url
    client = TestClient(create_app(settings, store), client=("127.0.0.1", 50000), headers=OPERATOR)
    page = client.get("/").text
    if link:
        assert f'<a href="{link}">#5</a>' in page
    else:
        assert "<a " not in page and "#5" in page
