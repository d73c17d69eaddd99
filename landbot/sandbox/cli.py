"""`landbot sandbox run`: the command's body, and a fast path that skips Typer.

Typer (0.29) builds its parameter coercion on pydantic, so parsing any Typer command
imports pydantic: ~0.25 s here, more than the sandbox itself. `fast_path` parses exactly the
well-formed `landbot sandbox run [--workdir D] [--timeout S] [--memory MB] [--disk MB]
[--env N=V]... [--config F] [--stdin] -- CMD ...` by hand and runs it; anything else (help,
a typo, a missing value) returns None so Typer handles it with its usual messages. Both
paths end in `run_command`.

The command's standard input is /dev/null unless `--stdin` hands it the caller's (the
operator's terminal, or a pipe); its output, when it goes to a terminal, is made
terminal-safe by the runner.

The work tree runs on a file system of `--disk` MB of its own (default `[sandbox]
disk_mb`; disk.py), and one line on stderr says so when the run starts; `--disk 0` runs on
DIR itself and the line says it is not capped.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from landbot.errors import LandbotError
from landbot.sandbox.limits import cpu_cap

if TYPE_CHECKING:
    from landbot.sandbox.runner import SandboxResult

DEFAULT_TIMEOUT = 600.0
DEFAULT_MEMORY_MB = 2048


@dataclass
class RunArgs:
    workdir: Path | None = None
    timeout: float = DEFAULT_TIMEOUT
    memory: int = DEFAULT_MEMORY_MB
    env: list[str] = field(default_factory=list)
    config: Path | None = None
    command: list[str] = field(default_factory=list)
    stdin: bool = False  # hand the caller's standard input to the command
    disk: int | None = None  # MB; None: [sandbox] disk_mb


def parse_fast(args: Sequence[str]) -> RunArgs | None:
    """Parse the arguments after `sandbox run`, or None when Typer should (pure)."""
    out = RunArgs()
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            out.command = list(args[i + 1 :])
            break
        if arg == "--stdin":
            out.stdin = True
            i += 1
            continue
        name, eq, inline = arg.partition("=")
        if name not in ("--workdir", "--timeout", "--memory", "--disk", "--env", "--config"):
            return None
        if eq:
            value = inline
        elif i + 1 < len(args):
            i += 1
            value = args[i]
        else:
            return None
        try:
            if name == "--workdir":
                out.workdir = Path(value)
            elif name == "--timeout":
                out.timeout = float(value)
            elif name == "--memory":
                out.memory = int(value)
            elif name == "--disk":
                out.disk = int(value)
            elif name == "--env":
                out.env.append(value)
            else:
                out.config = Path(value)
        except ValueError:
            return None
        i += 1
    if out.workdir is None or not out.command:
        return None
    return out


def run_command(a: RunArgs) -> int:
    """Run `a.command` in the sandbox; returns the exit code (LandbotError on bad input)."""
    from landbot.sandbox.disk import cap_line, is_full, run_capped
    from landbot.sandbox.runner import check_host, prepare_workdir, run_sandboxed
    from landbot.sandbox.settings import load_sandbox_options

    if not a.command:
        raise LandbotError("no command given; usage: landbot sandbox run --workdir DIR -- CMD ...")
    if a.workdir is None:
        raise LandbotError("--workdir is required: the work tree the command may write")
    if a.timeout <= 0 or a.memory <= 0:
        raise LandbotError("--timeout and --memory must be positive")
    if a.disk is not None and a.disk < 0:
        raise LandbotError("--disk must be a size in MB, or 0 for no disk cap")
    job_vars: dict[str, str] = {}
    for item in a.env:
        name, sep, value = item.partition("=")
        if not sep:
            raise LandbotError(f"--env {item!r} is not NAME=VALUE")
        job_vars[name] = value
    check_host()  # before anything is touched
    options = load_sandbox_options(a.config)
    real = prepare_workdir(a.workdir, options.uid, options.gid)
    disk = options.disk_mb if a.disk is None else a.disk

    def run() -> tuple[SandboxResult, bool]:
        result = run_sandboxed(
            a.command,
            real,
            timeout=a.timeout,
            memory_mb=a.memory,
            env=job_vars,
            extra_ro_paths=options.read_only,
            stdin=None if a.stdin else subprocess.DEVNULL,
            uid=options.uid,
            gid=options.gid,
            chown=False,
            hidden=options.hidden,
            etc=options.etc,
            cpus=cpu_cap(options.cpus),
            tmp_mb=options.tmp_mb,
            fsize_mb=disk or None,
        )
        return result, bool(disk) and is_full(real)

    print(cap_line("sandbox run", disk), file=sys.stderr, flush=True)
    result, full = run_capped(real, disk, uid=options.uid, gid=options.gid, body=run)
    note = result.message()
    if note is None and full:
        note = (
            f"the work tree's file system (the disk cap of {disk} MB) is full: the "
            "command may have failed for that; pass a larger --disk if it needs more"
        )
    if note is not None:
        print(f"landbot: {note}", file=sys.stderr, flush=True)
    return result.exit_code


def fast_path(args: Sequence[str]) -> int | None:
    """Run a well-formed `sandbox run` without Typer; None means "let Typer parse it"."""
    parsed = parse_fast(args)
    if parsed is None:
        return None
    try:
        return run_command(parsed)
    except LandbotError as exc:
        print(f"landbot: {exc}", file=sys.stderr, flush=True)
        return exc.exit_code
    except KeyboardInterrupt:
        print("landbot: interrupted", file=sys.stderr, flush=True)
        return 130
