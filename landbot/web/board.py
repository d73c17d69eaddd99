"""The dashboard (`GET /`): per repository, the pull requests landbot is handling (one row
per PR, its drops folded in), the recent outcomes and the flakiest tests; filters by
repository and outcome as query parameters, so they work without JavaScript.

Served only to the operator: every client must send the dashboard token (`Authorization:
Bearer` or `?token=`, compared in constant time; landbot.web.access says where it comes
from), loopback or not, since a proxy on this host makes every client a loopback one. With
`[web] auth = "loopback"` there is no token, and only a client on this host's loopback (and
not through a proxy that says so) may read `/` and `/metrics`.

Every value that came from GitHub or from a job log (names, titles, reasons, summaries,
test ids) is untrusted text: it goes through `html.escape`, and the page is served with a
Content-Security-Policy that allows no script at all.
"""

from __future__ import annotations

import datetime as dt
import hmac
import html
import ipaddress
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import quote, urlencode, urlsplit

from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response

from landbot.config import Settings
from landbot.store import LedgerTest, Store, StoreCounts, StoredBreaker, utcnow
from landbot.store.views import (
    STATES,
    OpenJob,
    PullRow,
    SettledDrop,
    State,
    drop_state,
    merge_names,
    pull_rows,
    recent_outcomes,
    repositories,
)
from landbot.triage.flaky import FlakyPolicy
from landbot.web import access

CSP: Final = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src 'none'; base-uri 'none'; "
    "form-action 'none'; frame-ancestors 'none'"
)
# no-referrer: a ?token= in the page's address must not follow a link to GitHub.
HEADERS: Final = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
PR_ROWS: Final = 300  # pull requests read per page (the newest changes)
RECENT: Final = 10
FLAKY_WINDOW: Final = FlakyPolicy().window  # triage's own window, as /metrics reads it
WEEK: Final = dt.timedelta(days=7)
FLAKIEST: Final = 10
SUMMARY_CHARS: Final = 160
# A request that carries one of these came through a proxy: its peer address is the
# proxy's, so a loopback peer says nothing about who is asking.
FORWARDING: Final = ("forwarded", "x-forwarded-for", "x-forwarded-host", "x-real-ip")
STATE_LABEL: Final[Mapping[State, str]] = {s: s.replace("_", " ") for s in STATES}

_SEND_TOKEN: Final = (
    "open the address with ?token= that landbot serve prints at start-up (landbot status "
    "prints it too), or send the token as 'Authorization: Bearer TOKEN'"
)


# --- who may read it ------------------------------------------------------------------


def loopback_host(host: str) -> bool:
    """Whether an address (or `localhost`) is on this host's loopback."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _direct_loopback(request: Request) -> bool:
    if request.client is None or any(h in request.headers for h in FORWARDING):
        return False
    return loopback_host(request.client.host)


def supplied_token(request: Request) -> str | None:
    """The token a request sends: `Authorization: Bearer T`, else `?token=T`."""
    scheme, _, value = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    return request.query_params.get("token") or None


def token_matches(supplied: str | None, token: str) -> bool:
    """Constant-time comparison (hmac.compare_digest), so timing does not reveal a prefix."""
    return supplied is not None and hmac.compare_digest(supplied.encode(), token.encode())


def refusal(request: Request, settings: Settings) -> Response | None:
    """None when the operator may read the page; otherwise the one-line refusal. The token
    is `settings.web.token` (serve puts the generated one there): with none loaded under
    `auth = "token"`, nothing matches and every request is refused."""
    if settings.web.auth == "loopback":
        if _direct_loopback(request):
            return None
        return PlainTextResponse(
            f"{request.url.path} answers only clients on this host's loopback, as [web] auth "
            'is "loopback"; to read it from elsewhere remove that setting (the default, '
            '"token", asks every client for the dashboard token)\n',
            status_code=403,
            headers=HEADERS,
        )
    token = access.configured(settings)
    if token is not None and token_matches(supplied_token(request), token):
        return None
    return PlainTextResponse(
        f"{request.url.path} needs the dashboard token: {_SEND_TOKEN}\n",
        status_code=401,
        headers={**HEADERS, "WWW-Authenticate": 'Bearer realm="landbot"'},
    )


Endpoint = Callable[[Request], Awaitable[Response]]


def operator_only(settings: Settings, endpoint: Endpoint) -> Endpoint:
    """`endpoint` behind `refusal` (the dashboard, /metrics)."""

    async def guarded(request: Request) -> Response:
        refused = refusal(request, settings)
        return refused if refused is not None else await endpoint(request)

    guarded.__name__ = getattr(endpoint, "__name__", "guarded")
    return guarded


def exposure_warning(host: str, settings: Settings) -> str | None:
    """What `landbot serve` says at start-up when the dashboard needs no token."""
    if settings.web.auth != "loopback":
        return None
    if loopback_host(host):
        return (
            '[web] auth is "loopback": the dashboard and /metrics need no token, so a reverse '
            "proxy on this host that adds no X-Forwarded-For (nginx's plain proxy_pass) "
            "serves them to everyone it serves; remove that setting to require the token"
        )
    return (
        f"listening on {host}: /webhook is reachable from the network, but the dashboard "
        'and /metrics answer only loopback clients, as [web] auth is "loopback"; remove '
        "that setting to read them from elsewhere with the token"
    )


# --- links ----------------------------------------------------------------------------


def web_url(api_url: str) -> str:
    """The web address pull requests live at, from the REST API's: `api.github.com` →
    `github.com`, `api.SUB.ghe.com` → `SUB.ghe.com`, `HOST/api/v3` (Enterprise Server) →
    `HOST`; any other API (a simulator) serves its pages at its own address."""
    parts = urlsplit(api_url.rstrip("/"))
    netloc, path = parts.netloc, parts.path.rstrip("/")
    if path.endswith("/api/v3"):
        path = path[: -len("/api/v3")]
    elif not path and "@" not in netloc and netloc.lower().startswith("api."):
        netloc = netloc[len("api.") :]
    return f"{parts.scheme}://{netloc}{path}"


def _repo_url(base: str, repo: str) -> str:
    return f"{base}/{quote(repo, safe='/')}"


def _pr_url(base: str, repo: str, pr: int) -> str:
    return f"{_repo_url(base, repo)}/pull/{pr}"


# --- what the page shows --------------------------------------------------------------


@dataclass(frozen=True)
class Filters:
    """The query parameters: repository, outcome (a `State`), and a token given in the
    address (kept on every link so a filter does not log the operator out)."""

    repo: str | None = None
    outcome: State | None = None
    token: str | None = None

    def query(self, **change: str | None) -> str:
        values = {"repo": self.repo, "outcome": self.outcome, "token": self.token, **change}
        kept = {k: v for k, v in values.items() if v}
        return "?" + urlencode(kept) if kept else "?"


class BadFilter(ValueError):
    pass


def parse_filters(params: Mapping[str, str]) -> Filters:
    outcome = params.get("outcome") or None
    if outcome is not None and outcome not in STATES:
        raise BadFilter(f"unknown outcome {outcome!r}; use one of {', '.join(STATES)}")
    repo = (params.get("repo") or "").strip() or None
    if repo is not None and (repo.count("/") != 1 or len(repo) > 200):
        raise BadFilter(f"repository {repo[:80]!r} is not OWNER/NAME")
    state: State | None = next((s for s in STATES if s == outcome), None)
    return Filters(repo=repo, outcome=state, token=params.get("token") or None)


@dataclass(frozen=True)
class RepoSection:
    repo: str
    rows: tuple[PullRow, ...]  # after the outcome filter, newest change first
    total: int  # rows before the outcome filter
    recent: tuple[SettledDrop, ...]
    flaky: tuple[LedgerTest, ...]
    week: Mapping[State, int] = field(default_factory=dict)  # PRs changed in 7 days, by state
    # Each flaky test's issue (land/flaky_issues.py), by test id: (number, state).
    flaky_issues: Mapping[str, tuple[int, str]] = field(default_factory=dict)


@dataclass(frozen=True)
class Board:
    repos: tuple[str, ...]  # every repository the filter links offer
    sections: tuple[RepoSection, ...]
    counts: StoreCounts
    truncated: bool  # PR_ROWS pull requests were read: older ones are not shown
    now: dt.datetime = field(default_factory=utcnow)
    # The repositories whose breaker is open (issue 27.2): the page's banner.
    breakers: tuple[StoredBreaker, ...] = ()


def week_counts(rows: Sequence[PullRow], now: dt.datetime) -> dict[State, int]:
    """How many of these pull requests changed in the last 7 days, by state."""
    counts: dict[State, int] = {}
    for row in rows:
        if row.last_at >= now - WEEK:
            counts[row.state] = counts.get(row.state, 0) + 1
    return counts


def read_board(
    store: Store, filters: Filters, *, watched: Sequence[str] = (), now: dt.datetime | None = None
) -> Board:
    """Everything the page shows (blocking: run in a thread). Read-only."""
    now = now or utcnow()
    since = now - FLAKY_WINDOW
    known = merge_names([*repositories(store, ledger_since=since), *watched])
    if filters.repo is not None:
        spelled = {r.lower(): r for r in known}
        shown = [spelled.get(filters.repo.lower(), filters.repo)]
    else:
        shown = known
    rows = pull_rows(store, repo=filters.repo, limit=PR_ROWS)
    issues = [i for i in store.flaky_issues() if i.number is not None]
    sections = []
    for repo in shown:
        mine = [r for r in rows if r.repo.lower() == repo.lower()]
        kept = [r for r in mine if filters.outcome is None or r.state == filters.outcome]
        sections.append(
            RepoSection(
                repo=repo,
                rows=tuple(kept),
                total=len(mine),
                week=week_counts(mine, now),
                recent=tuple(recent_outcomes(store, repo=repo, limit=RECENT)),
                flaky=tuple(store.flakiest_tests(since=since, limit=FLAKIEST, repo=repo)),
                flaky_issues={
                    i.test: (i.number, i.state)
                    for i in issues
                    if i.number is not None and i.repo.lower() == repo.lower()
                },
            )
        )
    return Board(
        repos=tuple(known),
        sections=tuple(sections),
        counts=store.counts(),
        truncated=len(rows) >= PR_ROWS,
        now=now,
        breakers=tuple(b for b in store.breakers() if b.open),
    )


# --- HTML -----------------------------------------------------------------------------

_STYLE = """
.breaker { border: 2px solid #b00; background: #fee; padding: 0 0.6em; }
body { font: 14px/1.45 system-ui, sans-serif; margin: 1.5em; color: #1f2328; }
h1 { margin: 0 0 .2em; } h2 { margin: 1.6em 0 .3em; } h3 { margin: 1em 0 .3em; font-size: 1em; }
table { border-collapse: collapse; width: 100%; margin-bottom: .5em; }
th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid #d0d7de; }
td { vertical-align: top; }
th { background: #f6f8fa; font-weight: 600; }
code { font-size: 12px; }
nav p { margin: .3em 0; }
nav a { margin-right: .7em; }
nav a[aria-current] { font-weight: 700; text-decoration: none; color: #1f2328; }
.queue span { margin-right: 1.5em; }
.state { padding: 1px 6px; border-radius: 10px; background: #eaeef2; white-space: nowrap; }
.state-handling { background: #ddf4ff; } .state-requeued { background: #fff8c5; }
.state-fixed, .state-merged { background: #dafbe1; } .state-handed_back { background: #ffebe9; }
.state-failed { background: #ffcecb; }
.muted { color: #59636e; }
"""

_PR_COLUMNS = (
    "PR",
    "state",
    "drops",
    "latest reason",
    "class",
    "since first drop",
    "drop → outcome",
    "outcomes",
    "updated",
    "summary",
)
_RECENT_COLUMNS = ("updated", "PR", "reason", "class", "outcome", "summary")
_FLAKY_COLUMNS = (
    "test",
    "check",
    "failures",
    "pull requests",
    "passed on retry",
    "last seen",
    "issue",
)


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def when(value: dt.datetime) -> str:
    return value.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def duration(delta: dt.timedelta) -> str:
    """A span as a person reads it: the two largest units (`2d 3h`, `4m 10s`)."""
    seconds = max(int(delta.total_seconds()), 0)
    units = (("d", 86400), ("h", 3600), ("m", 60), ("s", 1))
    parts: list[str] = []
    for name, size in units:
        n, seconds = divmod(seconds, size)
        if n or parts:
            parts.append(f"{n}{name}")
        if len(parts) == 2:
            break
    return " ".join(parts) if parts else "0s"


def _short(text: str | None) -> str:
    value = text or ""
    cut = value if len(value) <= SUMMARY_CHARS else value[: SUMMARY_CHARS - 1] + "…"
    return f'<span title="{_e(value)}">{_e(cut)}</span>' if cut != value else _e(value)


def _state(state: State) -> str:
    return f'<span class="state state-{state}">{_e(STATE_LABEL[state])}</span>'


def _jobs(jobs: Sequence[OpenJob]) -> str:
    if not jobs:
        return ""
    said = ", ".join(f"{j.kind} {'running' if j.status == 'leased' else j.status}" for j in jobs)
    return f'<br><span class="muted">{_e(said)}</span>'


def _pr_link(base: str, repo: str, pr: int) -> str:
    return f'<a href="{_e(_pr_url(base, repo, pr))}">#{_e(pr)}</a>'


def _pr_row(row: PullRow, base: str, now: dt.datetime) -> str:
    latest = row.latest
    took = row.drop_to_outcome
    trail = [STATE_LABEL[drop_state(d)] for d in row.drops]
    if row.state == "merged" and drop_state(latest) != "merged":
        trail.append(STATE_LABEL["merged"])  # through a merge group, after the last drop
    outcomes = " → ".join(trail[-5:] if len(trail) <= 5 else ["…", *trail[-4:]])
    cells = [
        f'{_pr_link(base, row.repo, row.pr)}<br><code title="{_e(latest.head_sha)}">'
        f"{_e(latest.head_sha[:10])}</code>",
        _state(row.state) + _jobs(row.jobs),
        _e(len(row.drops)),
        _e(latest.reason),
        _e(latest.class_ or ""),
        f'<span title="{_e(when(row.first_drop_at))}">{_e(duration(now - row.first_drop_at))}'
        "</span>",
        _e(duration(took)) if took is not None else '<span class="muted">—</span>',
        _e(outcomes),
        f'<time datetime="{_e(row.last_at.isoformat())}">{_e(when(row.last_at))}</time>',
        _short(latest.summary),
    ]
    body = "".join(f"<td>{c}</td>" for c in cells)
    return f'<tr data-pr="{_e(row.repo)}#{_e(row.pr)}" data-state="{_e(row.state)}">{body}</tr>'


def _head(columns: Sequence[str]) -> str:
    return "<thead><tr>" + "".join(f"<th>{_e(c)}</th>" for c in columns) + "</tr></thead>"


def _table(cls: str, columns: Sequence[str], rows: Sequence[str], empty: str) -> str:
    body = "\n".join(rows) or f'<tr><td colspan="{len(columns)}" class="muted">{empty}</td></tr>'
    return f'<table class="{cls}">\n{_head(columns)}\n<tbody>\n{body}\n</tbody>\n</table>'


def _recent_row(item: SettledDrop, base: str) -> str:
    d = item.drop
    cells = [
        _e(when(d.updated_at)),
        _pr_link(base, d.repo, d.pr),
        _e(d.reason),
        _e(d.class_ or ""),
        _state(item.state),
        _short(d.summary),
    ]
    return "<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>"


def _flaky_row(t: LedgerTest, base: str, issues: Mapping[str, tuple[int, str]]) -> str:
    issue = issues.get(t.test)
    if issue is None:
        linked = '<span class="muted">none</span>'
    else:
        number, state = issue
        url = f"{_repo_url(base, t.repo)}/issues/{number}"
        linked = f'<a href="{_e(url)}">#{_e(number)}</a>' + (
            ' <span class="muted">closed</span>' if state == "closed" else ""
        )
    cells = [
        f"<code>{_e(t.test)}</code>",
        _e(t.check),
        _e(t.failures),
        _e(len(t.prs)),
        _e(t.retries_passed),
        _e(when(t.last_seen)),
        linked,
    ]
    return "<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>"


def _section(s: RepoSection, base: str, filters: Filters, now: dt.datetime) -> str:
    if s.total and filters.outcome is not None:
        empty = f"None of its {s.total} pull requests is {STATE_LABEL[filters.outcome]}."
    else:
        empty = "No pull request of this repository has been dropped."
    prs = _table("prs", _PR_COLUMNS, [_pr_row(r, base, now) for r in s.rows], _e(empty))
    recent = _table(
        "recent",
        _RECENT_COLUMNS,
        [_recent_row(i, base) for i in s.recent],
        "Nothing has been settled yet.",
    )
    flaky = _table(
        "flaky",
        _FLAKY_COLUMNS,
        [_flaky_row(t, base, s.flaky_issues) for t in s.flaky],
        "No test has failed and passed on retry.",
    )
    return f"""<section class="repo" data-repo="{_e(s.repo)}">
<h2><a href="{_e(_repo_url(base, s.repo))}">{_e(s.repo)}</a></h2>
{_week(s.week)}
<h3>Pull requests</h3>
{prs}
<h3>Recent outcomes</h3>
{recent}
<h3>Flakiest tests (last 7 days)</h3>
{flaky}
</section>"""


def _week(counts: Mapping[State, int]) -> str:
    total = sum(counts.values())
    if not total:
        return '<p class="week muted">No pull request changed in the last 7 days.</p>'
    said = ", ".join(f"{counts[s]} {STATE_LABEL[s]}" for s in STATES if counts.get(s))
    noun = "pull request" if total == 1 else "pull requests"
    return f'<p class="week">Last 7 days: {total} {noun} — {_e(said)}.</p>'


def _nav(board: Board, filters: Filters) -> str:
    def link(label: str, current: bool, **change: str | None) -> str:
        mark = ' aria-current="page"' if current else ""
        return f'<a href="{_e(filters.query(**change))}"{mark}>{_e(label)}</a>'

    repos = [link("all", filters.repo is None, repo=None)]
    chosen = (filters.repo or "").lower()
    repos += [link(r, r.lower() == chosen, repo=r) for r in board.repos]
    outcomes = [link("all", filters.outcome is None, outcome=None)]
    outcomes += [link(STATE_LABEL[s], filters.outcome == s, outcome=s) for s in STATES]
    return (
        '<nav aria-label="filters">\n'
        f'<p class="filter-repo">Repository: {" ".join(repos)}</p>\n'
        f'<p class="filter-outcome">Outcome: {" ".join(outcomes)}</p>\n'
        "</nav>"
    )


def _queue(counts: StoreCounts) -> str:
    queued = counts.jobs.get("queued", 0)
    running = counts.jobs.get("leased", 0)
    waiting = counts.deliveries.get("pending", 0)
    handling = counts.drops.get("pending", 0)
    parts = [
        f"drops being handled: {handling}",
        f"jobs queued: {queued}",
        f"jobs running: {running}",
        f"deliveries waiting: {waiting}",
    ]
    return '<p class="queue">' + "".join(f"<span>{_e(p)}</span>" for p in parts) + "</p>"


def _breakers(rows: Sequence[StoredBreaker], base: str) -> str:
    """The banner: one line per repository whose breaker is open, with its issue."""
    lines = []
    for b in rows:
        issue = (
            f' (<a href="{_e(_repo_url(base, b.repo))}/issues/{int(b.issue_number)}">'
            f"#{int(b.issue_number)}</a>)"
            if b.issue_number is not None
            else ""
        )
        since = when(b.opened_at) if b.opened_at is not None else "?"
        lines.append(
            f"<p><strong>Breaker open for {_e(b.repo)}</strong> since {_e(since)}: "
            f"{_e(b.detail or b.cause or '')}{issue}. Re-enqueues and fixer runs are held; "
            f"close it with <code>landbot breaker close {_e(b.repo)}</code>.</p>"
        )
    return f'<div class="breaker">{"".join(lines)}</div>' if lines else ""


def render(board: Board, filters: Filters, *, api_url: str) -> str:
    """The whole page, from what `read_board` read (pure)."""
    base = web_url(api_url)
    if board.sections:
        sections = "\n".join(_section(s, base, filters, board.now) for s in board.sections)
    else:
        sections = '<p class="muted">No drops recorded yet.</p>'
    more = (
        f'<p class="muted">Showing the {PR_ROWS} pull requests changed most recently.</p>'
        if board.truncated
        else ""
    )
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="referrer" content="no-referrer">
<meta http-equiv="refresh" content="30">
<title>landbot</title>
<style>{_STYLE}</style>
</head>
<body>
<h1>landbot</h1>
<p>Pull requests dropped from the merge queue, as of {_e(when(board.now))}; newest change
first. Times are UTC.</p>
{_breakers(board.breakers, base)}
{_queue(board.counts)}
{_nav(board, filters)}
{more}
{sections}
</body>
</html>
"""


InThread = Callable[[Callable[[], Any]], Awaitable[tuple[bool, Any]]]


async def respond(
    request: Request, settings: Settings, store: Store, in_thread: InThread
) -> Response:
    """`GET /`: the page, 400 for a filter it cannot apply, 503 when the store is silent.
    `in_thread` runs the blocking read with the receiver's timeout."""
    try:
        filters = parse_filters(request.query_params)
    except BadFilter as exc:
        return PlainTextResponse(f"{exc}\n", status_code=400, headers=HEADERS)
    done, board = await in_thread(lambda: read_board(store, filters, watched=settings.repos))
    if not done:
        return HTMLResponse(
            "<!doctype html><title>landbot</title><p>The store is not answering; "
            "see /healthz and the server log.</p>",
            status_code=503,
            headers=HEADERS,
        )
    return HTMLResponse(render(board, filters, api_url=settings.github.api_url), headers=HEADERS)
