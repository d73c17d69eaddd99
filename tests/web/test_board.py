"""The dashboard (`GET /`, landbot.web.board) and its read-only views (landbot.store.views),
against a real SQLite store: one row per pull request, states and durations, filters,
links for any API URL, escaping, and who may read it (every refusal beside its control)."""

from __future__ import annotations

import datetime as dt
import html
import logging
import re
from collections.abc import Callable
from hashlib import sha1
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from starlette.testclient import TestClient

from landbot.config import Settings, load_settings
from landbot.land import decide
from landbot.store import Store, StoredDrop, utcnow
from landbot.store.tables import drops
from landbot.store.views import MERGED_WHY, fold, pull_rows
from landbot.web import board
from landbot.web.app import create_app

from .conftest import DASHBOARD_TOKEN, OPERATOR, make_settings

LOOPBACK = ("127.0.0.1", 50000)
REMOTE = ("203.0.113.9", 50000)  # TEST-NET-3: never a real peer
WIDGETS = "octo-org/widgets"
GADGETS = "octo-org/gadgets"
FLAKY_TEST = 'tests/test_net.py::test_fetch[<b>"x"</b>]'


# --- seeding a store the way the pipeline leaves it ------------------------------------


def add(
    store: Store,
    repo: str,
    pr: int,
    *,
    observed: dt.datetime,
    updated: dt.datetime,
    outcome: str = "pending",
    reason: str = "failed_checks",
    class_: str | None = None,
    summary: str | None = None,
    head: str | None = None,
) -> int:
    """One drop as the pipeline records it (add_drop, then update_drop with what it
    decided); its `updated_at` set to `updated`, since the store stamps the real time."""
    drop_id, _ = store.add_drop(
        repo=repo, pr=pr, head_sha=head or sha1(f"{repo}#{pr}".encode()).hexdigest(), reason=reason,
        source="webhook", dedupe_key=f"{repo}#{pr}@{observed.isoformat()}", observed_at=observed,
    )  # fmt: skip
    values: dict[str, Any] = {"outcome": outcome}
    if class_ is not None:
        values["class_"] = class_
    if summary is not None:
        values["summary"] = summary
    store.update_drop(drop_id, **values)
    with store.tx() as conn:
        conn.execute(drops.update().where(drops.c.id == drop_id).values(updated_at=updated))
    return drop_id


def seed(store: Store, now: dt.datetime) -> None:
    """Two repositories, every state: widgets #101 handed back after two drops, #102
    re-enqueued (flaky), #103 being handled (a fixer job queued), #104 merged before landbot
    acted, #105 re-enqueued and then merged through its merge group; gadgets #7 fixed, #8
    failed. A flaky test in widgets' ledger."""
    h = dt.timedelta(hours=1)
    m = dt.timedelta(minutes=1)
    add(store, WIDGETS, 101, observed=now - 5 * h, updated=now - 5 * h + 4 * m,
        outcome="requeued", class_="flaky", summary="re-enqueued: a flaky test")  # fmt: skip
    add(store, WIDGETS, 101, observed=now - 2 * h, updated=now - 2 * h + 7 * m,
        outcome="handed_back", class_="genuine",
        summary='test_sizes failed: expected "12" <got> & 13')  # fmt: skip
    add(store, WIDGETS, 102, observed=now - 3 * h, updated=now - 3 * h + 2 * m,
        outcome="requeued", class_="infrastructure", summary="runner lost")  # fmt: skip
    handling = add(store, WIDGETS, 103, observed=now - 10 * m, updated=now - 9 * m)
    store.add_job("fixer", {"drop_id": handling}, drop_id=handling)
    add(store, WIDGETS, 104, observed=now - 4 * h, updated=now - 4 * h + m,
        outcome="ignored", summary=MERGED_WHY)  # fmt: skip
    add(store, WIDGETS, 105, observed=now - 6 * h, updated=now - 6 * h + m,
        outcome="requeued", class_="flaky", summary="re-enqueued")  # fmt: skip
    store.remember_group(
        repo=WIDGETS, pr=105, head_sha="5" * 40, head_ref="gh-readonly-queue/main/pr-105-x",
        base_ref="main", base_sha="6" * 40, status="destroyed:merged",
    )  # fmt: skip
    add(store, GADGETS, 7, observed=now - 8 * h, updated=now - 7 * h,
        outcome="fixed", class_="genuine", summary="the fixer pushed a fix")  # fmt: skip
    add(store, GADGETS, 8, observed=now - 30 * m, updated=now - 20 * m,
        outcome="failed", summary="GitHub refused: 403")  # fmt: skip
    for pr in (101, 102, 103):
        store.record_test_failures(
            repo=WIDGETS, pr=pr, head_sha=str(pr % 10) * 40, sha=f"{pr}".ljust(40, "0"),
            failures={"test (3.12)": [FLAKY_TEST]}, at=now - h,
        )  # fmt: skip
    store.record_retry(
        repo=WIDGETS, pr=101, head_sha="1" * 40, sha="f" * 40, passed=["test (3.12)"],
        failed={}, at=now - h,
    )  # fmt: skip


def settings(
    token: str | None = DASHBOARD_TOKEN, api_url: str | None = None, **kw: Any
) -> Settings:
    s = make_settings(token=token, **kw)
    if api_url is not None:
        s.github.api_url = api_url
    return s


@pytest.fixture
def page_for(store: Store) -> Callable[..., TestClient]:
    """A client of an app over the test's store; by default the operator (a loopback peer
    sending the token), `operator=False` a reader who sends none."""

    def build(
        s: Settings | None = None, client: tuple[str, int] = LOOPBACK, operator: bool = True
    ) -> TestClient:
        headers = OPERATOR if operator else None
        return TestClient(create_app(s or settings(), store), client=client, headers=headers)

    return build


def rows_of(page: str) -> list[str]:
    """The `repo#pr` of each PR row, in page order."""
    return [html.unescape(m) for m in re.findall(r'<tr data-pr="([^"]+)"', page)]


def text(cell: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", cell)).split())


def row(page: str, key: str) -> list[str]:
    """The cells of one PR row, as text."""
    start = page.index(f'<tr data-pr="{html.escape(key)}"')
    return [text(c) for c in re.findall(r"<td>(.*?)</td>", page[start:].split("</tr>")[0], re.S)]


# --- the pure parts --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("api_url", "web"),
    [
        ("https://api.github.com", "https://github.com"),
        ("https://api.github.com/", "https://github.com"),
        ("https://ghe.example/api/v3", "https://ghe.example"),
        ("https://ghe.example/api/v3/", "https://ghe.example"),
        ("https://api.octocorp.ghe.com", "https://octocorp.ghe.com"),  # GHE.com (data residency)
        ("http://127.0.0.1:38211", "http://127.0.0.1:38211"),  # the simulator serves both
    ],
)
def test_web_url_follows_from_the_api_url(api_url: str, web: str) -> None:
    assert board.web_url(api_url) == web


def test_the_merged_text_is_the_decisions() -> None:
    assert MERGED_WHY == decide._MERGED


def _drop(i: int, *, at: dt.datetime, outcome: str = "pending", **kw: Any) -> StoredDrop:
    fields: dict[str, Any] = {
        "id": i, "repo": "o/r", "pr": 1, "head_sha": "a" * 40, "merge_group_sha": None,
        "reason": "failed_checks", "raw_reason": None, "source": "webhook",
        "dedupe_key": str(i), "class_": None, "outcome": outcome, "summary": None,
        "evidence": None, "plan": None, "delivery_id": None, "removal_id": None,
        "observed_at": at, "created_at": at, "updated_at": kw.pop("updated", at),
    }  # fmt: skip
    return StoredDrop(**{**fields, **kw})


T0 = dt.datetime(2026, 11, 3, 14, 0, tzinfo=dt.UTC)
MIN = dt.timedelta(minutes=1)


def test_fold_takes_the_newest_drop_and_counts_them_all() -> None:
    newer = _drop(2, at=T0 + 10 * MIN, outcome="handed_back", updated=T0 + 13 * MIN)
    older = _drop(1, at=T0, outcome="requeued", updated=T0 + MIN)
    r = fold("o/r", 1, [newer, older])  # any order in, oldest first out
    assert (r.state, len(r.drops), r.latest.id, r.first_drop_at) == ("handed_back", 2, 2, T0)
    assert r.drop_to_outcome == 3 * MIN and r.last_at == T0 + 13 * MIN


def test_fold_a_pending_drop_is_handling_with_no_outcome_yet() -> None:
    r = fold("o/r", 1, [_drop(1, at=T0, outcome="requeued"), _drop(2, at=T0 + MIN)])
    assert (r.state, r.outcome_at, r.drop_to_outcome) == ("handling", None, None)


@pytest.mark.parametrize(
    ("drop", "merged_at"),
    [
        (_drop(1, at=T0, outcome="ignored", summary=MERGED_WHY, updated=T0 + MIN), T0 + MIN),
        (_drop(1, at=T0, reason="merged", outcome="ignored", updated=T0 + MIN), T0),
        (_drop(1, at=T0, reason="already_merged", outcome="ignored"), T0),
    ],
)
def test_fold_a_merged_pull_request_is_merged_not_dropped(
    drop: StoredDrop, merged_at: dt.datetime
) -> None:
    r = fold("o/r", 1, [drop])
    assert (r.state, r.merged_at) == ("merged", merged_at)


def test_fold_a_merge_group_that_merged_makes_it_merged() -> None:
    requeued = _drop(1, at=T0, outcome="requeued", updated=T0 + MIN)
    assert fold("o/r", 1, [requeued]).state == "requeued"  # the control: no merge known
    r = fold("o/r", 1, [requeued], merged_at=T0 + 20 * MIN)
    assert (r.state, r.drop_to_outcome, r.last_at) == ("merged", 20 * MIN, T0 + 20 * MIN)
    # A closed PR left alone is not merged.
    closed = _drop(2, at=T0, outcome="ignored", summary="the pull request is closed")
    assert fold("o/r", 2, [closed]).state == "ignored"


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0s"), (59, "59s"), (61, "1m 1s"), (3600, "1h 0m"), (90061, "1d 1h"), (-5, "0s")],
)
def test_duration_reads_as_a_person_says_it(seconds: int, text: str) -> None:
    assert board.duration(dt.timedelta(seconds=seconds)) == text


def test_filters_refuse_what_they_cannot_apply() -> None:
    assert board.parse_filters({"outcome": "handed_back", "repo": "o/r"}) == board.Filters(
        repo="o/r", outcome="handed_back"
    )
    with pytest.raises(board.BadFilter, match="unknown outcome 'dropped'; use one of handling"):
        board.parse_filters({"outcome": "dropped"})
    with pytest.raises(board.BadFilter, match="is not OWNER/NAME"):
        board.parse_filters({"repo": "widgets"})


# --- the page ----------------------------------------------------------------------------


def test_one_row_per_pull_request_with_its_state(
    page_for: Callable[..., TestClient], store: Store
) -> None:
    now = utcnow()
    seed(store, now)
    r = page_for().get("/")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    page = r.text
    keys = rows_of(page)
    expected = [f"{WIDGETS}#{n}" for n in (101, 102, 103, 104, 105)]
    expected += [f"{GADGETS}#{n}" for n in (7, 8)]
    assert sorted(keys) == sorted(expected)  # each PR once, although #101 has 2 drops
    cells = row(page, f"{WIDGETS}#101")
    assert cells[0].startswith("#101") and cells[1:5] == [
        "handed back",
        "2",
        "failed_checks",
        "genuine",
    ]
    assert cells[6] == "7m 0s"  # drop → outcome, of the newest drop
    assert cells[7] == "requeued → handed back"  # its drops' outcomes, oldest first
    assert row(page, f"{WIDGETS}#103")[1] == "handling fixer queued"  # the live queue
    assert row(page, f"{WIDGETS}#103")[6] == "—"
    assert row(page, f"{WIDGETS}#104")[1] == "merged"  # not "ignored", not dropped
    assert row(page, f"{WIDGETS}#105")[1] == "merged"  # through its merge group
    assert row(page, f"{WIDGETS}#105")[7] == "requeued → merged"
    assert row(page, f"{GADGETS}#7")[1:3] == ["fixed", "1"]
    assert row(page, f"{GADGETS}#8")[1] == "failed"
    # Since the first drop: #101's first drop was five hours ago.
    assert row(page, f"{WIDGETS}#101")[5].startswith(("5h", "4h 59m"))
    # The queue line.
    assert "jobs queued: 1" in page and "drops being handled: 1" in page


def test_rows_are_sorted_by_the_time_they_show(
    page_for: Callable[..., TestClient], store: Store
) -> None:
    now = utcnow()
    # Observed in one order, changed in the other: the page must follow one time only.
    add(store, WIDGETS, 1, observed=now - 50 * MIN, updated=now - 1 * MIN, outcome="requeued")
    add(store, WIDGETS, 2, observed=now - 10 * MIN, updated=now - 5 * MIN, outcome="requeued")
    add(store, WIDGETS, 3, observed=now - 30 * MIN, updated=now - 3 * MIN, outcome="requeued")
    page = page_for().get("/").text
    assert rows_of(page) == [f"{WIDGETS}#1", f"{WIDGETS}#3", f"{WIDGETS}#2"]
    shown = re.findall(r'<tr data-pr=.*?<time datetime="([^"]+)">', page)
    assert shown == sorted(shown, reverse=True) and len(shown) == 3


def test_the_view_reads_the_newest_pull_requests_first(store: Store) -> None:
    now = utcnow()
    for pr in range(1, 6):
        add(store, WIDGETS, pr, observed=now - pr * MIN, updated=now - pr * MIN)
    got = pull_rows(store, limit=3)
    assert [r.pr for r in got] == [1, 2, 3]
    assert [r.pr for r in pull_rows(store, repo=WIDGETS.upper(), limit=10)] == [1, 2, 3, 4, 5]
    assert pull_rows(store, repo="octo-org/other") == []


def test_filters_by_outcome_and_repository_keep_each_other(
    page_for: Callable[..., TestClient], store: Store
) -> None:
    seed(store, utcnow())
    client = page_for()
    everything = rows_of(client.get("/").text)
    assert f"{WIDGETS}#102" in everything  # the control the filter must take away
    page = client.get("/", params={"outcome": "handed_back"}).text
    assert rows_of(page) == [f"{WIDGETS}#101"]
    assert "None of its 2 pull requests is handed back." in page  # gadgets' section says so
    # The repository links keep the outcome chosen, and mark it.
    assert f'href="?repo={WIDGETS.replace("/", "%2F")}&amp;outcome=handed_back"' in page
    assert '<a href="?outcome=handed_back" aria-current="page">handed back</a>' in page
    both = client.get("/", params={"repo": GADGETS, "outcome": "fixed"}).text
    assert rows_of(both) == [f"{GADGETS}#7"]
    assert WIDGETS not in re.findall(r'<section class="repo" data-repo="([^"]+)"', both)
    # Repository names are case-insensitive, as on GitHub.
    assert sorted(rows_of(client.get("/", params={"repo": GADGETS.upper()}).text)) == [
        f"{GADGETS}#7",
        f"{GADGETS}#8",
    ]


def test_a_filter_it_cannot_apply_is_refused_in_one_line(
    page_for: Callable[..., TestClient],
) -> None:
    r = page_for().get("/", params={"outcome": "dropped"})
    assert r.status_code == 400
    assert r.text.count("\n") == 1 and "unknown outcome 'dropped'" in r.text


@pytest.mark.parametrize(
    ("api_url", "web"),
    [
        ("https://api.github.com", "https://github.com"),
        ("https://ghe.example/api/v3", "https://ghe.example"),
        ("http://127.0.0.1:38211", "http://127.0.0.1:38211"),
    ],
)
def test_links_work_for_any_api_url(
    api_url: str, web: str, page_for: Callable[..., TestClient], store: Store
) -> None:
    now = utcnow()
    add(store, WIDGETS, 5, observed=now, updated=now, outcome="handed_back")
    page = page_for(settings(api_url=api_url)).get("/").text
    assert f'<a href="{web}/{WIDGETS}/pull/5">#5</a>' in page
    assert f'<h2><a href="{web}/{WIDGETS}">{WIDGETS}</a></h2>' in page


def test_everything_from_github_is_text(page_for: Callable[..., TestClient], store: Store) -> None:
    now = utcnow()
    hostile = "octo-org/<script>alert(1)</script>"
    summary = 'PR "<script>alert(2)</script>" & <img src=x onerror=alert(3)>'
    add(store, hostile, 9, observed=now, updated=now, outcome="handed_back", class_="genuine",
        summary=summary)  # fmt: skip
    store.record_test_failures(
        repo=hostile, pr=9, head_sha="9" * 40, sha="9" * 40, failures={"<i>c</i>": [FLAKY_TEST]},
    )  # fmt: skip
    store.record_retry(
        repo=hostile, pr=9, head_sha="9" * 40, sha="8" * 40, passed=["<i>c</i>"], failed={},
    )  # fmt: skip
    r = page_for().get("/")
    page = r.text
    for tag in ("<script", "<img", "<b>", "<i>"):
        assert tag not in page, tag
    assert "octo-org/&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "PR &quot;&lt;script&gt;alert(2)&lt;/script&gt;&quot; &amp; &lt;img" in page
    assert "tests/test_net.py::test_fetch[&lt;b&gt;&quot;x&quot;&lt;/b&gt;]" in page
    # The filter link to that repository is percent-encoded, then escaped.
    assert 'href="?repo=octo-org%2F%3Cscript%3Ealert%281%29%3C%2Fscript%3E"' in page
    csp = r.headers["content-security-policy"]
    assert "default-src 'none'" in csp and "script-src" not in csp
    assert r.headers["referrer-policy"] == "no-referrer"


def test_recent_outcomes_and_flakiest_tests_per_repository(
    page_for: Callable[..., TestClient], store: Store
) -> None:
    seed(store, utcnow())
    page = page_for().get("/").text
    widgets = page[page.index(f'data-repo="{WIDGETS}"') :].split("</section>")[0]
    gadgets = page[page.index(f'data-repo="{GADGETS}"') :].split("</section>")[0]
    recent = widgets[widgets.index('<table class="recent">') :].split("</table>")[0]
    # Settled drops, newest change first; the merged one says merged.
    assert re.findall(r">#(\d+)</a>", recent) == ["101", "102", "104", "101", "105"]
    assert "merged" in recent
    flaky = widgets[widgets.index('<table class="flaky">') :].split("</table>")[0]
    cells = re.findall(r"<td>(.*?)</td>", flaky)
    assert cells[1:5] == ["test (3.12)", "3", "3", "1"]  # check, failures, PRs, retries passed
    assert "No test has failed and passed on retry." in gadgets  # the control: none there
    # The week's tally, by state (#7 changed 7 hours ago, #8 20 minutes ago).
    assert "Last 7 days: 5 pull requests — 1 handling, 1 requeued, 1 handed back, 2 merged." in (
        widgets
    )
    assert "Last 7 days: 2 pull requests — 1 fixed, 1 failed." in gadgets


def test_the_week_counts_only_the_last_seven_days(store: Store) -> None:
    now = utcnow()
    add(store, WIDGETS, 1, observed=now - dt.timedelta(days=9), updated=now - dt.timedelta(days=8),
        outcome="handed_back")  # fmt: skip
    add(store, WIDGETS, 2, observed=now - dt.timedelta(days=2), updated=now - dt.timedelta(days=2),
        outcome="handed_back")  # fmt: skip
    assert board.week_counts(pull_rows(store), now) == {"handed_back": 1}
    assert board.week_counts(pull_rows(store), now + dt.timedelta(days=6)) == {}


def test_an_empty_store_says_so(page_for: Callable[..., TestClient]) -> None:
    r = page_for().get("/")
    assert r.status_code == 200 and "No drops recorded yet." in r.text


def test_a_watched_repository_with_no_drop_has_its_section(
    page_for: Callable[..., TestClient],
) -> None:
    page = page_for(settings(repos=[GADGETS])).get("/").text
    assert f'data-repo="{GADGETS}"' in page
    assert "No pull request of this repository has been dropped." in page


def test_the_store_down_is_a_503(tmp_path: Path) -> None:
    from .test_pages import broken_store

    app = create_app(settings(), broken_store(tmp_path))
    r = TestClient(app, client=LOOPBACK, headers=OPERATOR).get("/")
    assert r.status_code == 503 and "store is not answering" in r.text


# --- served only to the operator -----------------------------------------------------------


@pytest.mark.parametrize("path", ["/", "/metrics"])
def test_by_default_every_reader_sends_the_token_loopback_too(
    path: str, page_for: Callable[..., TestClient]
) -> None:
    # The control: the operator, with the token, from loopback, elsewhere or via a proxy.
    assert page_for(client=LOOPBACK).get(path).status_code == 200
    assert page_for(client=REMOTE).get(path).status_code == 200
    proxied = page_for().get(path, headers={"X-Forwarded-For": "198.51.100.7"})
    assert proxied.status_code == 200
    # Without it, loopback is no pass: a proxy on this host makes every reader loopback.
    for peer in (LOOPBACK, ("::1", 1), REMOTE):
        refused = page_for(client=peer, operator=False).get(path)
        assert refused.status_code == 401, peer
        assert refused.text.count("\n") == 1 and "needs the dashboard token" in refused.text
        assert DASHBOARD_TOKEN not in refused.text


@pytest.mark.parametrize("path", ["/", "/metrics"])
def test_with_no_token_loaded_nothing_is_served(
    path: str, page_for: Callable[..., TestClient]
) -> None:
    # An app built without a token (serve always loads one) fails closed, not open.
    bare = page_for(settings(token=None), client=LOOPBACK, operator=False)
    for headers in ({}, {"Authorization": "Bearer "}, {"Authorization": "Bearer None"}):
        assert bare.get(path, headers=headers).status_code == 401
    assert bare.get(path, params={"token": ""}).status_code == 401
    assert page_for(settings(), client=LOOPBACK).get(path).status_code == 200  # the control


@pytest.mark.parametrize("path", ["/", "/metrics"])
def test_auth_loopback_switches_the_token_off_for_loopback_only(
    path: str, page_for: Callable[..., TestClient]
) -> None:
    off = settings(token=None, auth="loopback")
    assert page_for(off, client=LOOPBACK, operator=False).get(path).status_code == 200
    assert page_for(off, client=("::1", 1), operator=False).get(path).status_code == 200
    r = page_for(off, client=REMOTE, operator=False).get(path)
    assert r.status_code == 403
    assert r.text.count("\n") == 1 and '[web] auth is "loopback"' in r.text
    # Through a proxy that says so, the peer is loopback but the reader is not.
    via_proxy = page_for(off, client=LOOPBACK, operator=False).get(
        path, headers={"X-Forwarded-For": "198.51.100.7"}
    )
    assert via_proxy.status_code == 403


@pytest.mark.parametrize("path", ["/", "/metrics"])
def test_with_a_token_every_reader_must_send_it(
    path: str, page_for: Callable[..., TestClient]
) -> None:
    client = page_for(settings(token="s3cret-token"), client=REMOTE, operator=False)
    assert client.get(path, headers={"Authorization": "Bearer s3cret-token"}).status_code == 200
    assert client.get(path, params={"token": "s3cret-token"}).status_code == 200
    for refused in (
        client.get(path),
        client.get(path, headers={"Authorization": "Bearer s3cret-tokeN"}),
        client.get(path, params={"token": "s3cret"}),
        client.get(path, headers={"Authorization": "Basic s3cret-token"}),
    ):
        assert refused.status_code == 401
        assert refused.headers["www-authenticate"].startswith("Bearer")
        assert "s3cret" not in refused.text and refused.text.count("\n") == 1
    # A token set applies to loopback too: behind a local proxy every reader is loopback.
    local = page_for(settings(token="s3cret-token"), client=LOOPBACK, operator=False)
    assert local.get(path).status_code == 401


def test_the_webhook_and_health_stay_public(page_for: Callable[..., TestClient]) -> None:
    remote = page_for(client=REMOTE, operator=False)
    assert remote.get("/healthz").status_code == 200
    assert remote.post("/webhook", content=b"{}").status_code == 401  # unsigned, not 403


def test_the_token_is_compared_in_constant_time(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[bytes, bytes]] = []

    def compare(a: bytes, b: bytes) -> bool:
        seen.append((a, b))
        return a == b

    monkeypatch.setattr(board.hmac, "compare_digest", compare)
    assert board.token_matches("abc", "abc") and not board.token_matches("abd", "abc")
    assert seen == [(b"abc", b"abc"), (b"abd", b"abc")]
    assert not board.token_matches(None, "abc")


def test_a_token_given_in_the_address_stays_on_the_filter_links(
    page_for: Callable[..., TestClient], store: Store
) -> None:
    seed(store, utcnow())
    remote = page_for(settings(token="t0k"), client=REMOTE, operator=False)
    page = remote.get("/", params={"token": "t0k"}).text
    links = re.findall(r"<nav.*?</nav>", page, re.S)[0]
    hrefs = re.findall(r'href="([^"]+)"', links)
    assert hrefs and all("token=t0k" in h for h in hrefs)
    # Sent as a header, it appears nowhere in the page.
    header = remote.get("/", headers={"Authorization": "Bearer t0k"})
    assert "t0k" not in header.text


def test_serve_warns_whenever_the_dashboard_needs_no_token() -> None:
    # The token (the default) needs no warning, wherever serve listens.
    for host in ("127.0.0.1", "localhost", "0.0.0.0"):
        assert board.exposure_warning(host, settings()) is None
        assert board.exposure_warning(host, settings(token=None)) is None
    off = settings(token=None, auth="loopback")
    beyond = board.exposure_warning("0.0.0.0", off)
    assert beyond is not None and "answer only loopback clients" in beyond
    local = board.exposure_warning("127.0.0.1", off)
    assert local is not None and "proxy_pass" in local and "to everyone it serves" in local


def test_web_settings_load_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)  # no config/landbot.toml here
    s = load_settings()
    assert (s.web.host, s.web.port, s.web.auth, s.web.token) == ("127.0.0.1", 8080, "token", None)
    monkeypatch.setenv("LANDBOT_WEB__HOST", "0.0.0.0")
    monkeypatch.setenv("LANDBOT_WEB__PORT", "9090")
    monkeypatch.setenv("LANDBOT_WEB__TOKEN", "from-env")
    s = load_settings()
    assert (s.web.host, s.web.port) == ("0.0.0.0", 9090) and s.web.token is not None
    assert s.web.token.get_secret_value() == "from-env" and "from-env" not in repr(s)
    # Blank is unset (the generated token), not "off": off is said with auth = "loopback".
    monkeypatch.setenv("LANDBOT_WEB__TOKEN", " ")
    assert load_settings().web.token is None and load_settings().web.auth == "token"
    monkeypatch.delenv("LANDBOT_WEB__TOKEN")
    monkeypatch.setenv("LANDBOT_WEB__AUTH", "loopback")
    assert load_settings().web.auth == "loopback"


@pytest.mark.parametrize(
    ("env", "says"),
    [
        ({"LANDBOT_WEB__AUTH": "none"}, "LANDBOT_WEB__AUTH in the environment is invalid"),
        (
            {"LANDBOT_WEB__AUTH": "loopback", "LANDBOT_WEB__TOKEN": "t0ken-and-off"},
            'a token is set but [web] auth is "loopback"',
        ),
    ],
)
def test_web_auth_refuses_what_it_cannot_mean(
    env: dict[str, str], says: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from landbot.errors import LandbotError

    monkeypatch.chdir(tmp_path)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(LandbotError) as caught:
        load_settings()
    assert says in str(caught.value) and "\n" not in str(caught.value)
    assert "t0ken-and-off" not in str(caught.value)


def test_the_page_counts_no_rows_twice_across_repositories(store: Store) -> None:
    # Two repositories with the same PR number stay two rows.
    now = utcnow()
    add(store, WIDGETS, 1, observed=now, updated=now)
    add(store, GADGETS, 1, observed=now, updated=now)
    assert sorted(r.repo for r in pull_rows(store)) == [GADGETS, WIDGETS]
    with store.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(drops)).scalar() == 2


def test_serve_listens_where_told_and_serves_the_dashboard_with_its_token(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    store: Store,
    caplog: pytest.LogCaptureFixture,
) -> None:
    import threading

    import uvicorn
    from typer.testing import CliRunner

    from landbot import cli
    from landbot import ready as ready_module
    from landbot.pipeline import wiring

    class Worker:
        def run(self, stop: threading.Event) -> None:
            stop.wait()

        def alive(self) -> bool:
            return True

    bound: list[dict[str, Any]] = []
    monkeypatch.chdir(tmp_path)  # no config/landbot.toml here; the state folder: .landbot
    # Everything but the address and the token is someone else's test: no GitHub, no server.
    monkeypatch.setattr(cli, "_start_logs", lambda settings: logging.INFO)
    monkeypatch.setattr(ready_module, "check_ready", lambda settings, **kw: None)
    monkeypatch.setattr(wiring, "make_github", lambda settings: None)
    monkeypatch.setattr(wiring, "open_store", lambda settings: store)
    monkeypatch.setattr(wiring, "make_worker", lambda settings, store, **kw: Worker())
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: bound.append({"app": app, **kw}))

    def serve(*args: str) -> TestClient:
        caplog.clear()
        result = CliRunner().invoke(cli.app, ["serve", *args])
        assert result.exit_code == 0, result.output
        # Not a terminal: the whole token is printed nowhere.
        token_file = tmp_path / ".landbot" / "web-token"
        assert token_file.read_text().strip() not in result.output + caplog.text
        return TestClient(bound[-1]["app"], client=LOOPBACK)

    def said(level: int = logging.INFO) -> list[tuple[str, dict[str, Any]]]:
        """serve's own lines at `level` or above: (message, fields)."""
        return [
            (r.getMessage(), getattr(r, "landbot_fields", {}))
            for r in caplog.records
            if r.name == "landbot.serve" and r.levelno >= level
        ]

    def dashboard_line() -> dict[str, Any]:
        [fields] = [f for message, f in said() if message.startswith("dashboard")]
        return fields

    token_file = tmp_path / ".landbot" / "web-token"
    with caplog.at_level(logging.INFO, logger="landbot.serve"):
        app = serve()
        assert (bound[-1]["host"], bound[-1]["port"]) == ("127.0.0.1", 8080)
        token = token_file.read_text().strip()
        assert len(token) >= 40 and oct(token_file.stat().st_mode & 0o777) == "0o600"
        # The app serve runs asks for that token, from loopback too.
        assert app.get("/").status_code == 401
        assert app.get("/", headers={"Authorization": f"Bearer {token}"}).status_code == 200
        assert app.get("/metrics", params={"token": token}).status_code == 200
        # The log shows where it is and its first characters only; no warning.
        assert dashboard_line() == {
            "url": "http://127.0.0.1:8080/",
            "token": f"{token[:4]}…",
            "token_from": str(Path.cwd() / ".landbot" / "web-token"),
        }
        assert said(logging.WARNING) == []
        monkeypatch.setenv("LANDBOT_WEB__HOST", "0.0.0.0")
        monkeypatch.setenv("LANDBOT_WEB__PORT", "9091")
        app = serve()
        assert (bound[-1]["host"], bound[-1]["port"]) == ("0.0.0.0", 9091)
        assert token_file.read_text().strip() == token  # reused, not made again
        assert app.get("/", params={"token": token}).status_code == 200
        assert said(logging.WARNING) == []  # beyond loopback, but the token guards it
        serve("--host", "127.0.0.1", "--port", "9092")  # the options win over the settings
        assert (bound[-1]["host"], bound[-1]["port"]) == ("127.0.0.1", 9092)
        monkeypatch.setenv("LANDBOT_WEB__TOKEN", "the-operator-s-own-token")
        app = serve()
        assert app.get("/", params={"token": token}).status_code == 401  # the setting wins
        assert app.get("/", params={"token": "the-operator-s-own-token"}).status_code == 200
        assert dashboard_line()["token_from"] == "[web] token"
        monkeypatch.delenv("LANDBOT_WEB__TOKEN")
        monkeypatch.setenv("LANDBOT_WEB__AUTH", "loopback")
        app = serve()
        assert app.get("/").status_code == 200  # switched off: a loopback peer is enough
        [(warning, _)] = said(logging.WARNING)
        assert "answer only loopback clients" in warning
        assert not [m for m, _ in said() if m.startswith("dashboard")]


def test_the_page_reads_the_same_on_postgresql(postgres_databases: Any) -> None:
    """The views' queries (GROUP BY with an aggregate order, DISTINCT, IN) on the other
    backend: the same rows and states as on SQLite."""
    now = utcnow()
    on_pg = Store.open(postgres_databases.create())
    try:
        seed(on_pg, now)
        page = TestClient(create_app(settings(), on_pg), client=LOOPBACK, headers=OPERATOR)
        page = page.get("/").text
        assert len(rows_of(page)) == 7
        assert row(page, f"{WIDGETS}#101")[1:3] == ["handed back", "2"]
        assert row(page, f"{WIDGETS}#105")[1] == "merged"
        assert row(page, f"{WIDGETS}#103")[1] == "handling fixer queued"
        handed = TestClient(create_app(settings(), on_pg), client=LOOPBACK, headers=OPERATOR).get(
            "/", params={"outcome": "handed_back", "repo": WIDGETS.upper()}
        )
        assert rows_of(handed.text) == [f"{WIDGETS}#101"]
    finally:
        on_pg.close()
