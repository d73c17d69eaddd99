"""The `landbot` command line: thin, one function per command.

Each command imports its stage lazily, so a command pays only for what it uses (the sandbox
runner in particular must start fast). Errors end in one line on stderr and exit 2.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

from landbot.errors import LandbotError

if TYPE_CHECKING:  # typing only: each command imports its stage when it runs
    from landbot.config import Settings
    from landbot.github.client import GitHubClient
    from landbot.store import Store

app = typer.Typer(
    name="landbot",
    help="Keeps a GitHub merge queue moving: notices dropped pull requests, works out why, "
    "fixes them in a sandbox, and puts them back or hands them back.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
triage_app = typer.Typer(help="Explain CI failures.", no_args_is_help=True)
quest_app = typer.Typer(help="Validate and merge quest trees.", no_args_is_help=True)
sandbox_app = typer.Typer(help="The fixer's sandbox.", no_args_is_help=True)
fixer_app = typer.Typer(help="The land fixer.", no_args_is_help=True)
app.add_typer(triage_app, name="triage")
app.add_typer(quest_app, name="quest")
app.add_typer(sandbox_app, name="sandbox")
app.add_typer(fixer_app, name="fixer")
breaker_app = typer.Typer(
    help="A repository's breaker (drops held while the repository is the problem).",
    no_args_is_help=True,
)
app.add_typer(breaker_app, name="breaker")
config_app = typer.Typer(help="landbot's settings.", no_args_is_help=True)
app.add_typer(config_app, name="config")
app_app = typer.Typer(help="The GitHub App.", no_args_is_help=True)
app.add_typer(app_app, name="app")

ConfigOpt = Annotated[
    Path | None,
    typer.Option("--config", help="Settings file (default: config/landbot.toml).", dir_okay=False),
]
RepoOpt = Annotated[
    list[str] | None, typer.Option("--repo", help="OWNER/NAME (repeatable).", show_default=False)
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON for tools.")]


def _fail(message: str, code: int = 2) -> NoReturn:
    typer.echo(f"landbot: {message}", err=True)
    raise typer.Exit(code)


def _print_version(value: bool) -> None:
    if value:
        from landbot import __version__

        typer.echo(f"landbot {__version__}")
        raise typer.Exit(0)


@app.callback()
def _global_options(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            help="Print landbot's version and exit.",
            callback=_print_version,
            is_eager=True,
        ),
    ] = False,
    log_level: Annotated[
        str | None,
        typer.Option(
            "--log-level",
            help="debug, info, warning or error (default: LANDBOT_LOG_LEVEL, else info).",
            metavar="LEVEL",
            show_default=False,
        ),
    ] = None,
) -> None:
    # The options before the command (`landbot --version`); one callback for all of them:
    # add a global option here, not in a second @app.callback (it would replace this one).
    from landbot import logs

    # Checked here, before any command runs: a bad level is one line and exit 2.
    _log_level[0] = logs.level_from(log_level)


# The level `--log-level` or LANDBOT_LOG_LEVEL asked for (set by the callback above).
_log_level: list[int | None] = [None]


def _start_logs(settings: object) -> int:
    """Set up the log for a long-running command; its secrets are never written."""
    from landbot import logs

    level = _log_level[0] if _log_level[0] is not None else logs.level_from(None)
    logs.configure(level, settings=settings)
    return level


# --- pipeline -------------------------------------------------------------------------


@app.command()
def serve(
    host: Annotated[
        str | None, typer.Option(help="Address to listen on (default: [web] host, 127.0.0.1).")
    ] = None,
    port: Annotated[
        int | None, typer.Option(help="Port to listen on (default: [web] port, 8080).")
    ] = None,
    config: ConfigOpt = None,
) -> None:
    """Webhook receiver, worker and dashboard in one process.

    The dashboard and /metrics need the dashboard token (made at the first start, in
    [fixer] state_dir/web-token); on a terminal, serve prints the address to open with it.
    """
    import threading

    from landbot.config import load_settings

    # The settings first: a refusal of them is the commonest start, and the second or so
    # of importing the web app, the store and the pipeline would only delay its one line.
    settings = load_settings(config)
    level = _start_logs(settings)
    from landbot.ready import check_ready

    check_ready(settings, webhook=True)  # every setting it would fail on later, now
    import uvicorn

    from landbot.pipeline.wiring import make_github, make_worker, open_store
    from landbot.web import access
    from landbot.web.app import create_app

    host = host or settings.web.host
    port = port if port is not None else settings.web.port
    token = access.load_or_make(settings)
    token_from = access.where(settings)
    from landbot import logs

    logs.add_secrets([token])  # an access log line of GET /?token= shows it masked
    settings = access.with_token(settings, token)
    gh = make_github(settings)  # fail now, in one line, when the credentials are missing
    store = open_store(settings)
    work = make_worker(settings, store, gh=gh)
    stop = threading.Event()
    thread = threading.Thread(target=work.run, args=(stop,), name="landbot-worker", daemon=True)
    thread.start()
    logs.event(
        logging.getLogger("landbot.serve"),
        "serving",
        url=f"http://{host}:{port}",
        routes="POST /webhook, GET /healthz, GET /metrics, GET /",
        database=logs.safe_url(settings.database_url),
        repos=settings.repos or "every repository the App is installed on",
    )
    if token is not None:
        # The log gets the token's first characters only: it may end in a journal others
        # read. A person at a terminal gets the whole address (as Jupyter prints it).
        logs.event(
            logging.getLogger("landbot.serve"),
            "dashboard needs its token; landbot status prints the address with it",
            url=access.open_url(host, port, None),
            token=access.shown(token),
            token_from=token_from,
        )
        if sys.stderr.isatty():
            typer.echo(f"landbot: dashboard: {access.open_url(host, port, token)}", err=True)
    from landbot.web.board import exposure_warning

    warning = exposure_warning(host, settings)
    if warning is not None:
        logging.getLogger("landbot.serve").warning(warning)
    try:
        uvicorn.run(
            create_app(settings, store, worker_alive=work.alive),
            host=host,
            port=port,
            # uvicorn's lines go through landbot's handler (JSON or human, redacted).
            log_config=None,
            log_level=logs.uvicorn_level(level),
            access_log=level <= logging.DEBUG,
        )
    finally:
        stop.set()
        thread.join(timeout=30)


@app.command()
def worker(config: ConfigOpt = None) -> None:
    """The worker alone (several may share a PostgreSQL store)."""
    import signal
    import threading

    from landbot import logs
    from landbot.config import load_settings

    settings = load_settings(config)  # before the heavy imports, as in `serve`
    _start_logs(settings)
    from landbot.ready import check_ready

    check_ready(settings)
    from landbot.pipeline.wiring import make_github, make_worker, open_store

    gh = make_github(settings)
    store = open_store(settings)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    # The URL's password masked: it is a secret, and this line goes to a log.
    logs.event(
        logging.getLogger("landbot.worker"),
        "worker started",
        database=logs.safe_url(settings.database_url),
    )
    make_worker(settings, store, gh=gh).run(stop)


@app.command()
def poll(
    repo: RepoOpt = None,
    no_process: Annotated[
        bool, typer.Option("--no-process", help="Only record drops for a running worker.")
    ] = False,
    config: ConfigOpt = None,
) -> None:
    """One reconciliation sweep of the merge queues, then the work it found, then exit.

    Processes only its own drops: the ones the sweep recorded, and earlier polls' drops of
    the last day still pending (the jobs a killed or timed-out run left), with the fix jobs
    they lead to. Every other job in the store is left to the workers.
    """
    from landbot.config import load_settings

    settings = load_settings(config)  # before the heavy imports, as in `serve`
    _start_logs(settings)
    repos = repo or settings.repos
    if not repos:
        raise LandbotError("no repository to sweep: pass --repo OWNER/NAME or set LANDBOT_REPOS")
    from landbot.ready import check_ready

    check_ready(settings, work=not no_process)  # --no-process runs no job
    from landbot.pipeline.wiring import make_github, open_store, save_calls

    gh = make_github(settings)
    store = open_store(settings)
    try:
        _poll(settings, store, gh, repos, named=bool(repo), no_process=no_process)
    finally:
        save_calls(store)  # this run's GitHub requests, for /metrics (issue 28.4)


def _poll(
    settings: Settings,
    store: Store,
    gh: GitHubClient,
    repos: list[str],
    *,
    named: bool,
    no_process: bool,
) -> None:
    import datetime as dt

    from landbot.intake.poll import sweep_many
    from landbot.intake.schedule import Intervals, due
    from landbot.pipeline.poll import finish_own_work, hold_sweeps, own_drops
    from landbot.pipeline.wiring import make_worker
    from landbot.store import utcnow

    now = utcnow()
    # Repositories named with --repo are swept now (a person asked); the watched ones when
    # intake/schedule.py says they can find something.
    if named:
        chosen = list(repos)
    else:
        intervals = Intervals(
            active=dt.timedelta(minutes=settings.poll.active_minutes),
            idle=dt.timedelta(minutes=settings.poll.idle_minutes),
        )
        chosen = [d.repo for d in due(repos, store.sweep_states(repos), now, intervals)]
    swept = sweep_many(store, gh, chosen, now=now, batch=settings.poll.batch)
    new = swept.new
    typer.echo(
        f"landbot: swept {len(swept.swept)} of {len(repos)} repositories in {swept.queries} "
        f"GraphQL quer{'y' if swept.queries == 1 else 'ies'}: {len(new)} new drop(s)",
        err=True,
    )
    for name, why in swept.missing.items():
        typer.echo(f"landbot: {name}: not swept: {why}", err=True)
    if swept.deferred:
        typer.echo(
            f"landbot: {len(swept.not_swept)} repositories left for the next run: {swept.deferred}",
            err=True,
        )
    if no_process:
        return
    own = own_drops(store, repos, new, now=utcnow())
    worker = make_worker(settings, store, gh=gh)
    run = finish_own_work(store, worker, own)
    typer.echo(f"landbot: ran {run.ran} job(s) for {len(own)} drop(s)", err=True)
    # The sweep is the scheduled Action's only webhook: waiting drops are looked at again.
    held = hold_sweeps(store, worker.lander, repos)
    if held:
        typer.echo(f"landbot: {held} drop(s) still held (a red base or an open breaker)", err=True)
    # A scheduled poll may be the only process: it sweeps the flaky tests' issues too.
    worker.flaky_due()
    if run.left:
        typer.echo(
            f"landbot: {len(run.left)} job(s) of these drops still open (a retry not due yet, "
            "or another worker holds it); the next poll or a worker finishes them",
            err=True,
        )


@app.command()
def retry(
    pr: Annotated[int, typer.Argument(help="Pull request number.")],
    repo: Annotated[str | None, typer.Option("--repo", help="OWNER/NAME.")] = None,
    config: ConfigOpt = None,
) -> None:
    """Re-run triage and a land attempt for one pull request."""
    from landbot.config import load_settings
    from landbot.pipeline.commands import retry as retry_pr
    from landbot.pipeline.wiring import make_lander, open_store, resolve_repo, save_calls

    settings = load_settings(config)
    _start_logs(settings)
    name = resolve_repo(settings, repo)
    store = open_store(settings)
    lander = make_lander(settings, store, progress=lambda msg: typer.echo(f"… {msg}", err=True))
    try:
        decision = retry_pr(lander, store, name, pr, source="operator")
    finally:
        save_calls(store)  # its GitHub requests, for /metrics (issue 28.4)
    typer.echo(f"{name}#{pr}: {decision.outcome}: {decision.why}")


@breaker_app.command("close")
def breaker_close(
    repo: Annotated[str, typer.Argument(help="OWNER/NAME.")],
    config: ConfigOpt = None,
) -> None:
    """Close a repository's breaker now: its held drops go back in the queue in their order,
    and its issue is closed. Exit 1 when it was not open."""
    from landbot.config import load_settings
    from landbot.pipeline.wiring import make_lander, open_store, resolve_repo

    settings = load_settings(config)
    _start_logs(settings)
    name = resolve_repo(settings, repo)
    store = open_store(settings)
    lander = make_lander(settings, store, progress=lambda msg: typer.echo(f"… {msg}", err=True))
    if not lander.close_breaker(name, by="the operator (landbot breaker close)"):
        typer.echo(f"landbot: the breaker of {name} is not open", err=True)
        raise typer.Exit(1)
    typer.echo(f"{name}: the breaker is closed; its held drops went back in the queue")


@app.command()
def status(
    repo: Annotated[str | None, typer.Option("--repo", help="OWNER/NAME.")] = None,
    json_: JsonOpt = False,
    limit: Annotated[
        int,
        typer.Option(
            "--limit", min=0, help="Show at most N drops, newest first (0: every one).", metavar="N"
        ),
    ] = 200,  # what `landbot status` has always shown
    since: Annotated[
        str | None,
        typer.Option(
            "--since",
            help="Only drops observed at or after TIME (ISO 8601; no offset means UTC).",
            metavar="TIME",
            show_default=False,
        ),
    ] = None,
    config: ConfigOpt = None,
) -> None:
    """Drops, jobs and outcomes, newest first.

    When more drops match than --limit shows, one line on stderr says so. The table fits
    the terminal (COLUMNS): the summary is cut, never the repository. Without --json, a
    line on stderr gives the dashboard's address: with its token when stderr is a terminal,
    else with its first characters and where the whole one is.
    """
    from landbot.config import load_settings
    from landbot.pipeline.wiring import dumps, open_store, parse_since, status_rows
    from landbot.ready import check_store
    from landbot.web import access

    after = parse_since(since) if since is not None else None
    settings = load_settings(config)
    if repo is not None:
        repo = repo.strip()
        watched = {r.lower() for r in settings.repos}
        if watched and repo.lower() not in watched:
            raise LandbotError(
                f"--repo {repo} is not a watched repository; the watched ones are "
                f"{', '.join(settings.repos)} (LANDBOT_REPOS, or repos in the settings file)"
            )
    check_store(settings)
    # One row more than asked for tells whether there are more.
    rows = status_rows(open_store(settings), repo, limit=limit + 1 if limit else None, since=after)
    if limit and len(rows) > limit:
        rows = rows[:limit]
        typer.echo(
            f"landbot: showing the newest {limit} drops; older ones: --since TIME, or "
            "--limit 0 for every one",
            err=True,
        )
    if json_:
        typer.echo(dumps(rows))  # for tools, whose output often ends in a log: no token
        return
    # The whole token only to a person at a terminal (as serve): cron or CI output is a log.
    whole = sys.stderr.isatty()
    typer.echo(f"landbot: {access.status_line(settings, whole=whole)}", err=True)
    import shutil

    if not rows:
        typer.echo(f"no drops of {repo} recorded yet" if repo else "no drops recorded yet")
        return
    width = shutil.get_terminal_size((80, 24)).columns  # COLUMNS, else the terminal, else 80
    for line in status_lines(rows, width):
        typer.echo(line)


# The columns `landbot status` drops first when the terminal is narrow, and the space the
# summary keeps before one more is dropped.
_OPTIONAL_COLUMNS = ("class", "reason", "head")
_MIN_WHY = 24


def status_lines(rows: list[dict[str, object]], width: int) -> list[str]:
    """`landbot status` as plain lines at most `width` cells wide (pure): every column
    sized to its content; the summary gets the rest and is cut with …; the repository is
    never cut. Narrow terminals lose the class, the reason, the head, then the year; when
    the summary still has too little room, it goes on a line of its own under its row."""
    from rich.cells import cell_len, set_cell_size

    from landbot.core.text import terminal_safe

    def cells(r: dict[str, object]) -> dict[str, str]:
        updated = str(r["updated_at"])
        return {
            "repo": str(r["repo"]),
            "PR": f"#{r['pr']}",
            "head": str(r["head_sha"])[:7],
            "reason": str(r["reason"]),
            "class": str(r["class"] or ""),
            "outcome": str(r["outcome"]),
            "updated": f"{updated[:10]} {updated[11:16]}",
            # A summary can quote a job or a log: no escape sequence reaches the terminal.
            "why": " ".join(terminal_safe(str(r["summary"] or "")).split()),
        }

    table = [cells(r) for r in rows]
    order = ["repo", "PR", "head", "reason", "class", "outcome", "updated"]
    sizes = {c: max(cell_len(c), *(cell_len(t[c]) for t in table)) for c in order}
    shown = list(order)

    def room() -> int:  # cells left for the summary, two spaces between columns
        return width - sum(sizes[c] + 2 for c in shown)

    for optional in _OPTIONAL_COLUMNS:
        if room() >= _MIN_WHY:
            break
        shown.remove(optional)
    if room() < _MIN_WHY:  # then the year goes: "11-01 12:00"
        for t in table:
            t["updated"] = t["updated"][5:]
        sizes["updated"] = max(cell_len("updated"), *(cell_len(t["updated"]) for t in table))
    # Still no room (a long repository name): the summary goes under its row, indented.
    below = room() < _MIN_WHY
    why = max(width - 4, 8) if below else room()

    def cut(text: str) -> str:
        return set_cell_size(text, why - 1) + "…" if cell_len(text) > why else text

    out = []
    header = {c: c for c in [*order, "why"]}
    for t in [header, *table]:
        parts = [set_cell_size(t[c], sizes[c]) for c in shown]
        if below:
            out.append("  ".join(parts).rstrip())
            if t is not header and t["why"]:
                out.append("    " + cut(t["why"]))
        else:
            out.append("  ".join([*parts, cut(t["why"])]).rstrip())
    return out


@config_app.command("show")
def config_show(json_: JsonOpt = False, config: ConfigOpt = None) -> None:
    """The effective settings and where each value came from (default, FILE:LINE, or an
    environment variable); secrets are masked but shown as set. Exit 2 on a bad setting."""
    import json

    from landbot.config import effective, load_settings, render_show

    settings = load_settings(config)
    if json_:
        source = settings._config_file
        typer.echo(
            json.dumps(
                {
                    "config_file": None if source is None else str(source),
                    "settings": [row.to_json() for row in effective(settings)],
                },
                indent=2,
                ensure_ascii=False,
            )
        )
    else:
        typer.echo(render_show(settings), nl=False)


@config_app.command("check")
def config_check(
    file: Annotated[
        Path,
        typer.Argument(help="A repository's settings file.", dir_okay=False),
    ] = Path(".github/landbot.toml"),
    host_limits: Annotated[
        bool,
        typer.Option(
            "--host-limits",
            help="Also check it against this host's settings (--config, the environment): "
            "a value past the host's limits is a problem.",
        ),
    ] = False,
    config: ConfigOpt = None,
) -> None:
    """Validate a repository's `.github/landbot.toml`: exit 0 and `FILE: valid`, or exit 1
    and each problem on its own line (FILE:LINE: what; the fix); exit 2 if FILE is missing."""
    from landbot.repo_config import problems

    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        _fail(f"{file} does not exist; give the path of a repository's landbot.toml")
    except (OSError, UnicodeDecodeError) as exc:
        _fail(f"cannot read {file}: {exc}; give a readable UTF-8 file")
    host = None
    if host_limits:
        from landbot.config import load_settings

        host = load_settings(config)
    found = problems(text, file=str(file), host=host)
    for problem in found:
        typer.echo(str(problem), err=True)
    if found:
        raise typer.Exit(1)
    typer.echo(f"{file}: valid")


@config_app.command("schema")
def config_schema() -> None:
    """Print the JSON schema of a repository's `.github/landbot.toml`, for editors."""
    import json

    from landbot.repo_config import json_schema

    typer.echo(json.dumps(json_schema(), indent=2, ensure_ascii=False))


@app.command()
def demo(
    agent: Annotated[str, typer.Option(help="Agent to use: scripted or codex.")] = "scripted",
    json_: JsonOpt = False,
    keep: Annotated[
        bool, typer.Option("--keep", help="Keep the demo's folder (repositories, store).")
    ] = False,
    config: ConfigOpt = None,
) -> None:
    """The whole pipeline on an embedded simulated GitHub, real git and the real sandbox.

    Five pull requests join the merge queue of a real git repository; four of them tell a
    story (a flaky runner, a quest check failure, a quest conflict, a genuine bug the
    fixer repairs). Exits 0 when every story ended as described, 1 when one did not.
    """
    from landbot.config import load_settings
    from landbot.demo.run import run_demo

    base = load_settings(config)  # the operator's [sandbox] and [triage] settings apply
    if json_:
        from landbot.demo.render import PlainReporter

        outcome = run_demo(agent, base, PlainReporter(sys.stderr), keep=keep)
        typer.echo(outcome.dumps())
    else:
        from rich.console import Console

        from landbot.demo.render import ConsoleReporter, print_summary

        console = Console()
        reporter = ConsoleReporter(console)
        with console.status("[dim]starting…[/]") as status:
            reporter.status = status
            outcome = run_demo(agent, base, reporter, keep=keep)
        print_summary(console, outcome)
    raise typer.Exit(0 if outcome.as_described else 1)


# --- triage ---------------------------------------------------------------------------


@triage_app.command("log")
def triage_log(
    file: Annotated[
        Path,
        typer.Argument(help="A GitHub Actions job log, or plain text from another CI's job."),
    ],
    baseline: Annotated[
        list[Path] | None,
        typer.Option(
            "--baseline",
            metavar="PASS",
            help="A passing log of the same job to compare with (repeat for more): a line "
            "it printed too is not why FILE failed.",
        ),
    ] = None,
    json_: JsonOpt = False,
    config: ConfigOpt = None,
) -> None:
    """Explain one job log (GitHub Actions, or plain text from another CI): failing step,
    error lines, class."""
    import itertools
    from collections.abc import Iterator
    from typing import BinaryIO

    from landbot.config import load_settings
    from landbot.triage.baseline import Baseline, read_baseline
    from landbot.triage.classify import compile_rules
    from landbot.triage.explain import explain_log
    from landbot.triage.log import archive_kind
    from landbot.triage.report import render_text

    settings = load_settings(config)
    rules = compile_rules(settings.triage.rules)  # a bad rule fails before the file is read
    max_bytes = settings.triage.max_log_bytes

    def chunks(path: Path, stream: BinaryIO) -> Iterator[bytes]:
        head = stream.read(4)
        kind = archive_kind(head)
        if kind is not None:
            raise LandbotError(
                f"{path} is {kind}, not a job log; extract one job's log from it and pass that file"
            )
        # No seek: a file may be a pipe (`<(gh run view --log-failed …)`).
        return itertools.chain([head], iter(lambda: stream.read(1 << 20), b""))

    baselines: list[Baseline] = []
    current = file
    try:
        for path in baseline or ():
            current = path
            with path.open("rb") as stream:
                baselines.append(read_baseline(chunks(path, stream), max_bytes=max_bytes))
        current = file
        with file.open("rb") as stream:
            explanation = explain_log(
                chunks(file, stream), rules=rules, max_bytes=max_bytes, baselines=baselines
            )
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise LandbotError(f"cannot read {current}: {reason}; pass a readable job log") from None
    if json_:
        typer.echo(explanation.to_json())
    else:
        typer.echo(render_text(explanation, file.name))


# --- quest ----------------------------------------------------------------------------


@quest_app.command("check")
def quest_check(
    root: Annotated[
        Path | None,
        typer.Option(help="Repository work tree (default: the current repository's root)."),
    ] = None,
    base: Annotated[str | None, typer.Option(help="Base revision to compare with.")] = None,
    branch: Annotated[
        str | None,
        typer.Option(help="The pull request's head branch name (default: the current branch)."),
    ] = None,
    json_: JsonOpt = False,
    config: ConfigOpt = None,
) -> None:
    """Validate a quest tree: findings on stderr, exit 1 when the change broke a rule."""
    import json

    from landbot.quest import check_tree, current_branch, failing, repo_root

    top = repo_root(Path.cwd()) if root is None else root
    if branch is None:
        branch = current_branch(top)
    findings = check_tree(top, base=base, branch=branch)
    if json_:
        typer.echo(json.dumps([f.as_json() for f in findings], indent=2, ensure_ascii=False))
    else:
        for finding in findings:
            # A path that is not UTF-8 must not crash the report: show its bytes escaped.
            line = finding.render().encode("utf-8", "surrogateescape")
            typer.echo(line.decode("utf-8", "backslashreplace"), err=True)
    raise typer.Exit(1 if failing(findings) else 0)


@quest_app.command("merge-driver")
def quest_merge_driver(
    base: Annotated[Path, typer.Argument(help="%O: the common ancestor's version.")],
    ours: Annotated[Path, typer.Argument(help="%A: our version; the result is written here.")],
    theirs: Annotated[Path, typer.Argument(help="%B: their version.")],
    path: Annotated[str | None, typer.Argument(help="%P: the path in the repository.")] = None,
    config: ConfigOpt = None,
) -> None:
    """Git merge driver for quest files: `## Required` merged as a set, the rest by git."""
    from landbot.quest import merge_driver

    raise typer.Exit(merge_driver(base, ours, theirs, path))


@quest_app.command("install-merge-driver")
def quest_install_merge_driver(
    root: Annotated[
        Path | None,
        typer.Option(help="Repository work tree (default: the current repository's root)."),
    ] = None,
) -> None:
    """Enable the quest merge driver: the .gitattributes line and the git config."""
    from landbot.quest import install_merge_driver

    changes = install_merge_driver(Path.cwd() if root is None else root)
    for change in changes:
        typer.echo(change)
    if not changes:
        typer.echo("the quest merge driver is already installed; nothing changed")


# --- sandbox and fixer ----------------------------------------------------------------


@sandbox_app.command(
    "run", context_settings={"allow_extra_args": True, "ignore_unknown_options": True}
)
def sandbox_run(
    ctx: typer.Context,
    workdir: Annotated[Path, typer.Option(help="Work tree, writable inside the sandbox.")],
    timeout: Annotated[float, typer.Option(help="Wall-clock limit in seconds.")] = 600.0,
    memory: Annotated[int, typer.Option(help="Memory cap in MB.")] = 2048,
    disk: Annotated[
        int | None,
        typer.Option(
            help="Disk cap in MB: the work tree runs on a file system of this size "
            "(default [sandbox] disk_mb; 0: no cap).",
            show_default=False,
        ),
    ] = None,
    env: Annotated[
        list[str] | None,
        typer.Option(
            "--env",
            help="Job variable NAME=VALUE for the command (LANDBOT_* only; repeatable).",
            show_default=False,
        ),
    ] = None,
    stdin: Annotated[
        bool, typer.Option("--stdin", help="Hand your standard input to the command.")
    ] = False,
    config: ConfigOpt = None,
) -> None:
    """Run one command in the fixer sandbox: `landbot sandbox run --workdir DIR -- CMD ...`.

    Exits with the command's own code, 124 when the timeout killed it, 137 when the memory
    cap did. The first line on stderr says which disk cap applies.
    """
    # Only the sandbox's own modules (see landbot/sandbox/cli.py for its fast path).
    from landbot.sandbox.cli import RunArgs, run_command

    command = list(ctx.args)
    if command[:1] == ["--"]:
        command = command[1:]
    code = run_command(
        RunArgs(
            workdir=workdir,
            timeout=timeout,
            memory=memory,
            disk=disk,
            env=list(env or []),
            config=config,
            command=command,
            stdin=stdin,
        )
    )
    raise typer.Exit(code)


@fixer_app.command("run")
def fixer_run(
    workdir: Annotated[Path, typer.Option(help="A local checkout.")],
    evidence: Annotated[Path | None, typer.Option(help="Evidence JSON from triage.")] = None,
    agent: Annotated[str | None, typer.Option(help="command, codex, claude or opencode.")] = None,
    timeout: Annotated[float, typer.Option(help="Wall-clock limit in seconds.")] = 1800.0,
    memory: Annotated[int, typer.Option(help="Memory cap in MB.")] = 4096,
    disk: Annotated[
        int | None,
        typer.Option(
            help="Disk cap in MB: the checkout runs on a file system of this size "
            "(default [sandbox] disk_mb; 0: no cap).",
            show_default=False,
        ),
    ] = None,
    model: Annotated[
        str | None, typer.Option(help="Model name the agent asks for (its default if unset).")
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            help="Also write the result artifact here (verdict, bundle of the fix commits, "
            "manifest): a new or empty folder."
        ),
    ] = None,
    config: ConfigOpt = None,
) -> None:
    """Run one land-fixer job on a local checkout; prints the verdict JSON.

    The agent runs in the sandbox with the checkout as its work tree (in the middle of a
    merge, for a conflict); nothing is pushed. Exits 0 when the agent gave a verdict
    (whatever it says), 1 when it gave none (no verdict, garbage, a timeout), 2 on a usage
    or environment error. The agent's own output goes to stderr.
    """
    import json
    import os

    from landbot.config import load_settings
    from landbot.fixer.job import JobLimits, run_local_job

    if timeout <= 0 or memory <= 0:
        _fail("--timeout and --memory must be positive")
    if disk is not None and disk < 0:
        _fail("--disk must be a size in MB, or 0 for no disk cap")
    if out is not None and (out.is_symlink() or (out.exists() and not out.is_dir())):
        _fail(f"--out {out} is not a folder; pass a new or empty folder")
    if out is not None and out.is_dir() and any(out.iterdir()):
        _fail(f"--out {out} is not empty; pass a new or empty folder")
    if out is not None and Path(os.path.realpath(out)).is_relative_to(os.path.realpath(workdir)):
        # The job writes there: it could plant files or a link in place of the folder.
        _fail(f"--out {out} is inside the work tree; pass a folder outside --workdir")
    settings = load_settings(config)
    outcome = run_local_job(
        settings,
        workdir,
        evidence_file=evidence,
        agent_name=agent,
        limits=JobLimits(timeout=timeout, memory_mb=memory),
        model=model,
        export=out is not None,
        disk_mb=disk,
        on_start=lambda line: typer.echo(line, err=True),
    )
    from landbot.core.text import terminal_safe

    # The job wrote all of this: no escape sequence of its reaches the operator's terminal.
    for tail in (outcome.stdout_tail, outcome.stderr_tail):
        if tail:
            text = terminal_safe(tail)
            sys.stderr.write(text)
            sys.stderr.write("" if text.endswith("\n") else "\n")
    for refusal in outcome.refused:
        typer.echo(f"landbot: the proxy refused {terminal_safe(refusal)}", err=True)
    if not outcome.verdict.from_agent:
        typer.echo(f"landbot: {terminal_safe(outcome.verdict.summary)}", err=True)
    verdict_json = json.dumps(outcome.verdict.to_json())
    if out is not None:
        from landbot.fixer.artifact import write_artifact

        if outcome.bundle_refused:
            typer.echo(f"landbot: no commits in the artifact: {outcome.bundle_refused}", err=True)
        write_artifact(out, (verdict_json + "\n").encode(), outcome.bundle)
    typer.echo(verdict_json)
    raise typer.Exit(0 if outcome.verdict.from_agent else 1)


@app_app.command("manifest")
def app_manifest(
    webhook_url: Annotated[
        str, typer.Option(help="Where GitHub sends webhooks: https://HOST/webhook.")
    ] = "https://landbot.example.com/webhook",
    name: Annotated[str | None, typer.Option(help="The App's name on GitHub.")] = None,
    url: Annotated[
        str | None,
        typer.Option(help="The App's homepage, yours (default: the webhook URL's origin)."),
    ] = None,
    config: ConfigOpt = None,
) -> None:
    """Print the GitHub App manifest (events and least permissions) for registering the App."""
    import json

    from landbot.manifest import render

    typer.echo(json.dumps(render(webhook_url, name, url=url), indent=2))


@app_app.command("create")
def app_create(
    webhook_url: Annotated[
        str, typer.Option(help="Where GitHub will send webhooks: https://HOST/webhook.")
    ],
    name: Annotated[
        str | None, typer.Option(help="The App's name (unique on GitHub; you can edit it there).")
    ] = None,
    url: Annotated[
        str | None,
        typer.Option(help="The App's homepage, yours (default: the webhook URL's origin)."),
    ] = None,
    org: Annotated[
        str | None, typer.Option(help="Register the App for this organization, not for you.")
    ] = None,
    web_url: Annotated[
        str | None,
        typer.Option(help="GitHub's web address (default: from [github] api_url)."),
    ] = None,
    port: Annotated[int, typer.Option(help="Loopback port of the page (0: any free one).")] = 0,
    key_file: Annotated[
        Path | None,
        typer.Option(
            help="Where the App's private key goes (mode 0600; default: beside the settings).",
            dir_okay=False,
        ),
    ] = None,
    open_browser: Annotated[
        bool, typer.Option("--open/--no-open", help="Open the page in a browser.")
    ] = True,
    timeout: Annotated[float, typer.Option(help="Seconds to wait for GitHub's answer.")] = 900.0,
    config: Annotated[
        Path | None,
        typer.Option(
            "--config",
            help="Settings file to write (default: config/landbot.toml; made when missing).",
            dir_okay=False,
        ),
    ] = None,
) -> None:
    """Register the GitHub App from its manifest and keep its ID, key and webhook secret.

    Serves a one-page form on 127.0.0.1 that posts the manifest to GitHub; GitHub's
    redirect comes back to it with a code, which is traded for the App. The key goes to a
    new file of mode 0600 and [github] app_id, private_key_file and webhook_secret into the
    settings file (mode 0600).
    """
    from landbot import app_setup
    from landbot.config import DEFAULT_CONFIG_FILE, load_settings
    from landbot.manifest import render

    target = config if config is not None else DEFAULT_CONFIG_FILE
    # The API URL from the settings there are (the file may not exist yet).
    settings = load_settings(target if target.is_file() else None)
    api_url = settings.github.api_url
    web = web_url.rstrip("/") if web_url else app_setup.web_url_for(api_url)
    manifest = render(webhook_url, name, url=url)
    import re

    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", str(manifest["name"])).strip(".-") or "landbot"
    default_key = target.parent / f"{stem}.private-key.pem"
    key = key_file if key_file is not None else default_key
    app_setup.check_targets(target, key)  # before GitHub creates anything

    def ready(page: str) -> None:
        typer.echo(f"landbot: open {page} and press its button to create the App", err=True)
        if open_browser:
            import webbrowser

            webbrowser.open(page)

    created = app_setup.run_flow(
        manifest,
        action=lambda state: app_setup.form_action(web, org, state),
        finish=lambda code: app_setup.keep_credentials(
            app_setup.convert(api_url, code), target, key
        ),
        port=port,
        timeout=timeout,
        on_ready=ready,
    )
    typer.echo(f"created the GitHub App {created.slug} (App ID {created.app_id})")
    typer.echo(f"  private key:     {created.key_file} (mode 0600)")
    kept = "app_id, private_key_file" + (", webhook_secret" if created.webhook_secret_kept else "")
    typer.echo(f"  settings:        {created.config_file} ([github] {kept}; mode 0600)")
    typer.echo(f"  client ID:       {created.client_id} (for the watch workflow)")
    typer.echo(f"  install it here: {created.install_url}")


def main() -> None:
    if sys.argv[1:3] == ["sandbox", "run"]:
        # The sandbox runner starts per job: skip Typer (and the pydantic it imports) for a
        # well-formed call; help and errors still go through Typer below.
        from landbot.sandbox.cli import fast_path

        code = fast_path(sys.argv[3:])
        if code is not None:
            sys.exit(code)
    try:
        app()
    except LandbotError as exc:
        typer.echo(f"landbot: {exc}", err=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        typer.echo("landbot: interrupted", err=True)
        sys.exit(130)


if __name__ == "__main__":
    main()
