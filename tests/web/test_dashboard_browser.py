"""The dashboard in a real headless browser: Debian's chromium, driven by Playwright, against
a real uvicorn server on 127.0.0.1 and a real SQLite store. The page loads with no CSP
violation, the filters are links a person clicks, a row that a filter must take away goes,
and a screenshot of each view is kept under `$LANDBOT_ARTIFACTS` (default
`tests/web/artifacts/`, git-ignored).

Skipped, with the reason printed, only when chromium is not installed (`scripts/setup`
installs it; `LANDBOT_CHROMIUM` names another binary), and never under CI, which must run
it. Playwright itself is a test dependency, so its absence is a failure.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from landbot.store import Store, utcnow
from landbot.web import access
from landbot.web.app import create_app

from .conftest import DASHBOARD_TOKEN, live_server
from .test_board import GADGETS, WIDGETS, add, seed, settings

# ./scripts/test --fast leaves this module out: its tests start processes (landbot, git,
# the sandbox, servers) and take seconds each.
pytestmark = pytest.mark.slow

CHROMIUM = os.environ.get("LANDBOT_CHROMIUM", "/usr/bin/chromium")
# No sandbox (the tests may run as root), and no background connections: on a machine
# without the internet they are refused, many at a time, and slow the start.
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def artifacts() -> Path:
    out = Path(os.environ.get("LANDBOT_ARTIFACTS") or Path(__file__).parent / "artifacts")
    out.mkdir(parents=True, exist_ok=True)
    return out


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not (os.access(CHROMIUM, os.X_OK) or shutil.which(CHROMIUM)):
        why = f"chromium is not installed at {CHROMIUM}: run scripts/setup (apt chromium)"
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the browser tests: {why}")
        pytest.skip(why)
    with sync_playwright() as p:
        launched = p.chromium.launch(
            executable_path=CHROMIUM,
            args=FLAGS,  # Playwright gives it a new empty profile of its own
        )
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def browser_page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    try:
        yield context.new_page()
    finally:
        context.close()


def shown(page: Page) -> list[str]:
    """The `repo#pr` of each PR row on screen, in order."""
    rows = page.locator("tr[data-pr]")
    return [str(rows.nth(i).get_attribute("data-pr")) for i in range(rows.count())]


@pytest.mark.slow  # a browser start: several seconds
def test_the_dashboard_in_a_browser(browser_page: Page, store: Store) -> None:
    page = browser_page
    now = utcnow()
    seed(store, now)
    hostile = 'PR "<script>window.pwned = 1</script>" & <img src=x onerror="window.pwned=2">'
    add(store, GADGETS, 9, observed=now, updated=now, outcome="handed_back", summary=hostile)
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    out = artifacts()

    with live_server(create_app(settings(api_url="http://127.0.0.1:38211"), store)) as (
        host,
        port,
    ):
        # The address `landbot serve` prints: the dashboard's, with its token.
        page.goto(access.open_url(host, port, DASHBOARD_TOKEN))
        expect(page).to_have_title("landbot")
        everything = shown(page)
        assert len(everything) == 8 and f"{WIDGETS}#102" in everything
        # Untrusted text is text: no script ran, no element was made from it.
        assert page.evaluate("window.pwned") is None
        assert page.locator("script, img").count() == 0
        expect(page.locator(f'tr[data-pr="{GADGETS}#9"]')).to_contain_text("<script>")
        link = page.locator(f'tr[data-pr="{WIDGETS}#101"] a').first
        assert link.get_attribute("href") == f"http://127.0.0.1:38211/{WIDGETS}/pull/101"
        page.screenshot(path=str(out / "dashboard.png"), full_page=True)

        # Choose an outcome: the requeued PR (the control) goes, the handed-back ones stay.
        page.locator("nav .filter-outcome a", has_text="handed back").click()
        page.wait_for_url(f"**/?outcome=handed_back&token={DASHBOARD_TOKEN}")
        handed_back = shown(page)
        assert f"{WIDGETS}#102" not in handed_back
        assert sorted(handed_back) == sorted([f"{WIDGETS}#101", f"{GADGETS}#9"])
        expect(page.locator('nav a[aria-current="page"]', has_text="handed back")).to_be_visible()
        page.screenshot(path=str(out / "dashboard-handed-back.png"), full_page=True)

        # Then a repository: the outcome chosen stays on the link.
        page.locator("nav .filter-repo a", has_text=GADGETS).click()
        page.wait_for_url(
            f"**/?repo=octo-org%2Fgadgets&outcome=handed_back&token={DASHBOARD_TOKEN}"
        )
        assert shown(page) == [f"{GADGETS}#9"]
        assert page.locator("section.repo").count() == 1
        page.screenshot(path=str(out / "dashboard-gadgets-handed-back.png"), full_page=True)

        # Back to all outcomes of that repository.
        page.locator("nav .filter-outcome a", has_text="all").click()
        page.wait_for_url(f"**/?repo=octo-org%2Fgadgets&token={DASHBOARD_TOKEN}")
        assert sorted(shown(page)) == sorted(f"{GADGETS}#{n}" for n in (7, 8, 9))

    assert problems == [], problems  # no CSP violation, no script error
    for name in ("dashboard.png", "dashboard-handed-back.png", "dashboard-gadgets-handed-back.png"):
        assert (out / name).stat().st_size > 10_000, name


@pytest.mark.slow
def test_a_token_in_the_address_survives_every_filter(browser_page: Page, store: Store) -> None:
    page = browser_page
    seed(store, utcnow())
    with live_server(create_app(settings(token="s3cret"), store)) as (host, port):
        refused = page.goto(f"http://{host}:{port}/")
        assert refused is not None and refused.status == 401  # the control: no token
        page.goto(f"http://{host}:{port}/?token=s3cret")
        assert len(shown(page)) == 7
        page.locator("nav .filter-outcome a", has_text="requeued").click()
        page.wait_for_url("**/?outcome=requeued&token=s3cret")
        assert shown(page) == [f"{WIDGETS}#102"]
        page.locator("nav .filter-repo a", has_text=GADGETS).click()
        page.wait_for_url("**/?repo=octo-org%2Fgadgets&outcome=requeued&token=s3cret")
        assert shown(page) == []
        expect(page.locator("section.repo")).to_contain_text(
            "None of its 2 pull requests is requeued."
        )
