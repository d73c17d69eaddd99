"""The `landbot` command line: thin, one function per command.

Each command imports its stage lazily, so a command pays only for what it uses (the sandbox
runner in particular must start fast). Errors end in one line on stderr and exit 2.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, NoReturn

import typer

from landbot.errors import LandbotError

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


# --- pipeline -------------------------------------------------------------------------


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8080,
    config: ConfigOpt = None,
) -> None:
    """Webhook receiver, worker and dashboard in one process."""
    import threading

    import uvicorn

    from landbot.config import load_settings, require
    from landbot.pipeline.wiring import make_github, make_worker, open_store
    from landbot.web.app import create_app

    settings = load_settings(config)
    require(
        settings.github.webhook_secret, "LANDBOT_GITHUB__WEBHOOK_SECRET", "[github] webhook_secret"
    )
    make_github(settings)  # fail now, in one line, when the credentials are missing
    store = open_store(settings)
    work = make_worker(settings, store)
    stop = threading.Event()
    thread = threading.Thread(target=work.run, args=(stop,), name="landbot-worker", daemon=True)
    thread.start()
    typer.echo(f"landbot: serving on http://{host}:{port} (POST /webhook, GET /healthz)", err=True)
    try:
        uvicorn.run(
            create_app(settings, store, worker_alive=work.alive),
            host=host,
            port=port,
            log_level="warning",
        )
    finally:
        stop.set()
        thread.join(timeout=30)


@app.command()
def worker(config: ConfigOpt = None) -> None:
    """The worker alone (several may share a PostgreSQL store)."""
    import signal
    import threading

    from landbot.config import load_settings
    from landbot.pipeline.wiring import make_github, make_worker, open_store

    settings = load_settings(config)
    make_github(settings)
    store = open_store(settings)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    typer.echo(f"landbot: worker started on {settings.database_url}", err=True)
    make_worker(settings, store).run(stop)


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
    from landbot.intake.poll import sweep
    from landbot.pipeline.poll import finish_own_work, own_drops
    from landbot.pipeline.wiring import make_github, make_worker, open_store
    from landbot.store import utcnow

    settings = load_settings(config)
    repos = repo or settings.repos
    if not repos:
        raise LandbotError("no repository to sweep: pass --repo OWNER/NAME or set LANDBOT_REPOS")
    gh = make_github(settings)
    store = open_store(settings)
    new: list[int] = []
    for name in repos:
        found = sweep(store, gh, name, now=utcnow())
        typer.echo(f"landbot: {name}: {len(found)} new drop(s)", err=True)
        new.extend(found)
    if no_process:
        return
    own = own_drops(store, repos, new, now=utcnow())
    run = finish_own_work(store, make_worker(settings, store, gh=gh), own)
    typer.echo(f"landbot: ran {run.ran} job(s) for {len(own)} drop(s)", err=True)
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
    from landbot.pipeline.wiring import make_lander, open_store, resolve_repo

    settings = load_settings(config)
    name = resolve_repo(settings, repo)
    store = open_store(settings)
    lander = make_lander(settings, store, progress=lambda msg: typer.echo(f"… {msg}", err=True))
    decision = retry_pr(lander, store, name, pr, source="operator")
    typer.echo(f"{name}#{pr}: {decision.outcome}: {decision.why}")


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

    When more drops match than --limit shows, one line on stderr says so.
    """
    from landbot.config import load_settings
    from landbot.pipeline.wiring import dumps, open_store, parse_since, status_rows

    after = parse_since(since) if since is not None else None
    settings = load_settings(config)
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
        typer.echo(dumps(rows))
        return
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from landbot.core.text import terminal_safe

    table = Table("repo", "PR", "head", "reason", "class", "outcome", "updated", "why")
    for r in rows:
        # A summary can quote a job or a log: no markup of rich's, no escape sequence.
        table.add_row(
            r["repo"],
            str(r["pr"]),
            r["head_sha"][:7],
            r["reason"],
            r["class"] or "",
            r["outcome"],
            r["updated_at"][:19],
            escape(terminal_safe(r["summary"] or "")),
        )
    Console().print(table if rows else "no drops recorded yet")


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
    file: Annotated[Path, typer.Argument(help="A GitHub Actions job log.")],
    json_: JsonOpt = False,
    config: ConfigOpt = None,
) -> None:
    """Explain one GitHub Actions job log: failing step, error lines, class."""
    import itertools

    from landbot.config import load_settings
    from landbot.triage.classify import compile_rules
    from landbot.triage.explain import explain_log
    from landbot.triage.log import archive_kind
    from landbot.triage.report import render_text

    settings = load_settings(config)
    rules = compile_rules(settings.triage.rules)  # a bad rule fails before the file is read
    try:
        with file.open("rb") as stream:
            head = stream.read(4)
            kind = archive_kind(head)
            if kind is not None:
                raise LandbotError(
                    f"{file} is {kind}, not a job log; extract one job's log from it and "
                    "pass that file"
                )
            # No seek: FILE may be a pipe (`<(gh run view --log-failed …)`).
            chunks = itertools.chain([head], iter(lambda: stream.read(1 << 20), b""))
            explanation = explain_log(chunks, rules=rules, max_bytes=settings.triage.max_log_bytes)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise LandbotError(
            f"cannot read {file}: {reason}; pass a readable GitHub Actions job log"
        ) from None
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
    cap did.
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
    model: Annotated[
        str | None, typer.Option(help="Model name the agent asks for (its default if unset).")
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

    from landbot.config import load_settings
    from landbot.fixer.job import JobLimits, run_local_job

    if timeout <= 0 or memory <= 0:
        _fail("--timeout and --memory must be positive")
    settings = load_settings(config)
    outcome = run_local_job(
        settings,
        workdir,
        evidence_file=evidence,
        agent_name=agent,
        limits=JobLimits(timeout=timeout, memory_mb=memory),
        model=model,
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
    typer.echo(json.dumps(outcome.verdict.to_json()))
    raise typer.Exit(0 if outcome.verdict.from_agent else 1)


@app_app.command("manifest")
def app_manifest(
    webhook_url: Annotated[
        str, typer.Option(help="Where GitHub sends webhooks: https://HOST/webhook.")
    ] = "https://landbot.example.com/webhook",
    name: Annotated[str | None, typer.Option(help="The App's name on GitHub.")] = None,
    config: ConfigOpt = None,
) -> None:
    """Print the GitHub App manifest (events and least permissions) for registering the App."""
    import json

    from landbot.manifest import render

    typer.echo(json.dumps(render(webhook_url, name), indent=2))


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
