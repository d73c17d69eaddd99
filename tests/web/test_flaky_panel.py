"""The flakiest tests of the flaky-test ledger: a dashboard panel and one metric family,
`landbot_flaky_test_failures{repo,test}`, read from a real SQLite store."""

from __future__ import annotations

import re

from starlette.testclient import TestClient

from landbot.store import Store, utcnow

FLAKY = 'tests/test_net.py::test_fetch[<b>"x"</b>]'
NEW = "tests/test_app.py::test_new"


def failures(store: Store) -> None:
    """FLAKY failed on PRs 1-3 and passed on retry twice; NEW failed once, never retried."""
    now = utcnow()
    for pr in (1, 2, 3):
        store.record_test_failures(
            repo="o/r", pr=pr, head_sha=str(pr) * 40, sha=f"{pr}" * 40,
            failures={"test (3.12)": [FLAKY]}, at=now,
        )  # fmt: skip
    for pr in (1, 2):
        store.record_retry(
            repo="o/r", pr=pr, head_sha=str(pr) * 40, sha="f" * 40, passed=["test (3.12)"],
            failed={}, at=now,
        )  # fmt: skip
    store.record_test_failures(
        repo="o/r", pr=4, head_sha="4" * 40, sha="4" * 40, failures={"test": [NEW]}, at=now
    )


def series(text: str, name: str) -> dict[str, float]:
    """The samples of one family: {'{labels}': value}, each line well formed."""
    out: dict[str, float] = {}
    label = r'\w+="(?:[^"\\]|\\.)*"'
    for line in text.splitlines():
        if line.startswith(name + "{"):
            m = re.fullmatch(rf"{name}(\{{{label}(?:,{label})*\}}) (\d+(?:\.0)?)", line)
            assert m, line
            out[m.group(1)] = float(m.group(2))
    return out


def test_the_metric_counts_the_flakiest_tests(client: TestClient, store: Store) -> None:
    text = client.get("/metrics").text
    assert "# TYPE landbot_flaky_test_failures gauge" in text
    assert series(text, "landbot_flaky_test_failures") == {}  # the control: nothing yet
    failures(store)
    got = series(client.get("/metrics").text, "landbot_flaky_test_failures")
    # The label escapes the quotes; the test never retried is not among the flakiest.
    assert got == {'{repo="o/r",test="tests/test_net.py::test_fetch[<b>\\"x\\"</b>]"}': 3}


def test_the_dashboard_shows_the_flakiest_tests_escaped(client: TestClient, store: Store) -> None:
    assert "test_fetch[" not in client.get("/").text  # the control: nothing yet
    failures(store)
    page = client.get("/").text
    assert "<h3>Flakiest tests (last 7 days)</h3>" in page  # in the repository's section
    assert "<b>" not in page
    row = page[page.index("test_fetch[") :].split("</tr>")[0]
    cells = re.findall(r"<td>(.*?)</td>", row)
    assert cells[:4] == ["test (3.12)", "3", "3", "2"]  # check, failures, PRs, passed on retry
    assert "tests/test_net.py::test_fetch[&lt;b&gt;&quot;x&quot;&lt;/b&gt;]" in page
    assert NEW not in page
