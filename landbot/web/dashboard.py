"""The dashboard page: newest drops in a table, plain HTML, every value escaped.

Values come from GitHub (repository names, reasons) and from triage (summaries quoting job
logs), so all of them are untrusted text: each one goes through `html.escape`, and the page
is served with a Content-Security-Policy that allows no script at all.
"""

from __future__ import annotations

import datetime as dt
import html
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

from landbot.store import StoredDrop
from landbot.web.metrics import StoreGauges

CSP = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"
SUMMARY_CHARS = 160

_STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #1f2328; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid #d0d7de; }
th { background: #f6f8fa; }
code { font-size: 12px; }
.counts span { margin-right: 1.5em; }
"""


def web_url(api_url: str) -> str | None:
    """github.com (or an Enterprise host) for PR links; None when it cannot be told."""
    api = api_url.rstrip("/")
    if api == "https://api.github.com":
        return "https://github.com"
    if api.endswith("/api/v3"):
        return api[: -len("/api/v3")]
    return None


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _when(value: Any) -> str:
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%SZ")
    return "" if value is None else str(value)


def _pr_cell(row: StoredDrop, base: str | None) -> str:
    number = _e(row.pr)
    if base is None:
        return f"#{number}"
    href = f"{base}/{quote(row.repo, safe='/')}/pull/{quote(str(row.pr), safe='')}"
    return f'<a href="{_e(href)}">#{number}</a>'


def _summary(value: Any) -> str:
    text = "" if value is None else str(value)
    if len(text) > SUMMARY_CHARS:
        text = text[: SUMMARY_CHARS - 1] + "…"
    return _e(text)


def render(
    drops: Sequence[StoredDrop],
    gauges: StoreGauges | None,
    *,
    api_url: str = "https://api.github.com",
    now: dt.datetime | None = None,
) -> str:
    """The whole page. `drops` are the store's, newest first."""
    base = web_url(api_url)
    counts = ""
    if gauges is not None:
        parts = [f"<span>drops {_e(k)}: {_e(v)}</span>" for k, v in sorted(gauges.drops.items())]
        parts += [f"<span>jobs {_e(k)}: {_e(v)}</span>" for k, v in sorted(gauges.jobs.items())]
        pending = gauges.deliveries.get("pending", 0)
        parts.append(f"<span>deliveries waiting: {_e(pending)}</span>")
        counts = f'<p class="counts">{"".join(parts)}</p>'
    rows = []
    for row in drops:
        head = row.head_sha
        rows.append(
            "<tr>"
            f"<td>{_e(row.repo)}</td>"
            f"<td>{_pr_cell(row, base)}</td>"
            f'<td><code title="{_e(head)}">{_e(head[:10])}</code></td>'
            f"<td>{_e(row.reason)}</td>"
            f"<td>{_e(row.class_)}</td>"
            f"<td>{_e(row.outcome)}</td>"
            f"<td>{_e(_when(row.updated_at))}</td>"
            f"<td>{_summary(row.summary)}</td>"
            "</tr>"
        )
    body = "\n".join(rows) if rows else '<tr><td colspan="8">No drops recorded yet.</td></tr>'
    stamp = _when(now or dt.datetime.now(dt.UTC))
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="refresh" content="30">
<title>landbot</title>
<style>{_STYLE}</style>
</head>
<body>
<h1>landbot</h1>
<p>Newest pull requests dropped from the merge queue, as of {_e(stamp)}.</p>
{counts}
<table>
<thead><tr><th>repo</th><th>PR</th><th>head</th><th>reason</th><th>class</th><th>outcome</th><th>updated</th><th>summary</th></tr></thead>
<tbody>
{body}
</tbody>
</table>
</body>
</html>
"""
