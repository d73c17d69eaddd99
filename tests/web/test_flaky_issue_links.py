"""The dashboard links each flaky test to the issue landbot keeps about it (issue 27.3)."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

from landbot.store import Store, utcnow
from landbot.web import board

REPO = "octo-org/widgets"
LINKED = "tests/test_net.py::test_fetch"
CLOSED = "tests/test_db.py::test_pool"
ALONE = "tests/test_app.py::test_answer"


def test_each_flaky_test_links_its_issue(tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'x.db'}")
    now = utcnow()
    for pr, test in ((1, LINKED), (2, CLOSED), (3, ALONE)):
        head = f"{pr:040x}"
        store.record_test_failures(
            repo=REPO, pr=pr, head_sha=head, sha=f"{100 + pr:040x}", failures={"t": [test]},
            at=now - dt.timedelta(hours=1),
        )  # fmt: skip
        store.record_merged(REPO, pr, head_sha=head, at=now)
    store.save_flaky_issue(REPO, LINKED, number=41)
    store.save_flaky_issue(REPO, CLOSED, number=42, state="closed", closed_at=now)
    store.save_flaky_issue("octo-org/other", ALONE, number=43)  # another repository's
    filters = board.Filters(repo=None, outcome=None, token=None)
    page = board.render(
        board.read_board(store, filters, now=now), filters, api_url="https://api.github.com"
    )
    flaky = page[page.index('<table class="flaky">') :].split("</table>")[0]
    rows = {
        re.search(r"<code>(.*?)</code>", row).group(1): row  # type: ignore[union-attr]
        for row in flaky.split("<tr>")[2:]
    }
    url = "https://github.com/octo-org/widgets/issues"
    assert f'<a href="{url}/41">#41</a></td>' in rows[LINKED]
    assert f'<a href="{url}/42">#42</a> <span class="muted">closed</span>' in rows[CLOSED]
    # The control: a test without an issue here (only another repository's) links none.
    assert "issues/" not in rows[ALONE] and ">none<" in rows[ALONE]
    store.close()
