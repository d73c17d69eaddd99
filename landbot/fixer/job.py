"""The land fixer proper: the agent in the sandbox on a prepared checkout, and its verdict.

    verdict = fix_checkout(settings, ws, drop, evidence, base_ref)   # -> AgentVerdict

The checkout comes from the cached mirror (landbot/git/workspace.py); for a conflict the
base is already merged on the host with the quest merge driver, and a clean merge needs no
agent. Otherwise the prompt and the evidence are written into the job's `agent/` folder
(next to the checkout, never inside it, bound read-only into the sandbox), and the agent
runs in the sandbox with the checkout as its working directory, through the model proxy
when a model is configured. Its verdict comes back through `<checkout>/.git/landbot/` (the
one writable place the sandbox shares with the host, where git commits nothing), read
without following links and with a size cap, and is judged by verdict.py: no verdict,
garbage or a timeout is a `needs_human` verdict saying so. Nothing here pushes: publishing
is the land stage's (landbot/land/publish.py), and the order is the pipeline's
(landbot/pipeline/fix.py).

`run_local_job` is the same agent run on an operator's checkout (`landbot fixer run`): no
GitHub, no publishing.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from landbot.core.model import Drop, Evidence
from landbot.errors import LandbotError
from landbot.fixer.agents import Agent, Invocation, JobPaths, ModelAccess, make_agent
from landbot.fixer.prompt import (
    EvidenceFormatError,
    Task,
    build_prompt,
    evidence_from_json,
    evidence_json,
)
from landbot.fixer.verdict import AgentVerdict, judge

if TYPE_CHECKING:
    from landbot.config import Settings
    from landbot.git.workspace import Workspace

log = logging.getLogger("landbot.fixer.job")

OUTPUTS_DIR = "landbot"  # <checkout>/.git/landbot: the job's writable exchange folder
INPUTS_DIR = "agent"  # <job dir>/agent: prompt, evidence, schema (read-only in the sandbox)
MAX_OUTPUT_FILE = 256 * 1024  # read no more of an agent-written file (verdict.py caps lower)
OUTPUT_TAIL = 16 * 1024  # of the agent's stdout and stderr, kept for the log


@dataclass(frozen=True)
class JobLimits:
    """The sandbox's limits for one agent run."""

    timeout: float = 1800.0
    memory_mb: int = 4096
    pids_max: int = 1024


@dataclass(frozen=True)
class AgentOutcome:
    """How one agent run ended."""

    agent: str
    verdict: AgentVerdict
    exit_code: int  # as `landbot sandbox run` reports it (124 timeout, 137 memory cap)
    duration: float
    stdout_tail: bytes = b""
    stderr_tail: bytes = b""
    refused: tuple[str, ...] = ()  # requests the proxy refused, for the log


# --- the exchange folders -------------------------------------------------------------


def outputs_dir(workdir: Path) -> Path:
    gitdir = workdir / ".git"
    if gitdir.is_symlink() or not gitdir.is_dir():
        raise LandbotError(
            f"{workdir} is not a git checkout with its own .git folder; pass a clone (a linked "
            "worktree keeps its repository outside, where the sandbox cannot reach it)"
        )
    return gitdir / OUTPUTS_DIR


def read_output(workdir: Path, name: str, limit: int = MAX_OUTPUT_FILE) -> bytes | None:
    """A file the job wrote in `.git/landbot/`, or None when there is none.

    The job controls that folder: every step refuses a symbolic link (a verdict file
    linked to a host secret would be read as root and posted in a comment), a non-regular
    file (a FIFO would block the host) is ignored, and at most `limit` + 1 bytes are read.
    """
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
    fds: list[int] = []
    try:
        fds.append(os.open(workdir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC))
        for part in (".git", OUTPUTS_DIR):
            fds.append(os.open(part, flags | os.O_DIRECTORY, dir_fd=fds[-1]))
        fds.append(os.open(name, flags | os.O_NONBLOCK, dir_fd=fds[-1]))
        if not stat.S_ISREG(os.fstat(fds[-1]).st_mode):
            log.warning("the job's %s is not a regular file; ignored", name)
            return None
        chunks: list[bytes] = []
        left = limit + 1
        while left > 0:
            data = os.read(fds[-1], min(left, 65536))
            if not data:
                break
            chunks.append(data)
            left -= len(data)
        return b"".join(chunks)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            log.warning("the job made %s or its folder a symbolic link; ignored", name)
        return None
    finally:
        for fd in reversed(fds):
            os.close(fd)


def _write(path: Path, text: str) -> None:
    path.write_text(text)
    os.chmod(path, 0o644)


def _prepare_outputs(outputs: Path, dirs: tuple[str, ...], uid: int, gid: int) -> None:
    _remove_outputs(outputs)  # a previous run's, or one the repository brought along
    outputs.mkdir(mode=0o755)
    for name in dirs:
        (outputs / name).mkdir(mode=0o755)
        os.chown(outputs / name, uid, gid)
    os.chown(outputs, uid, gid)


def _remove_outputs(outputs: Path) -> None:
    # rmtree does not follow symbolic links (it walks by file descriptor), so whatever the
    # job left there is removed, nothing it points to.
    if outputs.is_symlink():
        outputs.unlink()
    elif outputs.exists():
        shutil.rmtree(outputs, ignore_errors=True)


def _tail(data: bytes | None) -> bytes:
    return (data or b"")[-OUTPUT_TAIL:]


# --- running the agent ----------------------------------------------------------------


def require_model(agent: Agent, settings: Settings) -> None:
    if agent.needs_model and not settings.fixer.model_url:
        raise LandbotError(
            f"the {agent.name} agent needs a model: set [fixer] model_url "
            "(LANDBOT_FIXER__MODEL_URL) and [fixer] model_api_key"
        )


def run_agent(
    task: Task,
    workdir: Path,
    inputs: Path,
    settings: Settings,
    *,
    agent: Agent,
    limits: JobLimits = JobLimits(),
    model: str | None = None,
    chown: bool = False,
) -> AgentOutcome:
    """Run `agent` on `task` in the sandbox with `workdir` as its work tree.

    `inputs` is an existing folder outside `workdir` that the sandbox uid can reach; the
    prompt and evidence are written there. `chown` hands the work tree to the sandbox uid
    first (a workspace's tree already is). Raises LandbotError when the host cannot
    sandbox or the agent cannot start; whatever the agent does, returns its verdict.
    """
    from landbot.sandbox.proxy import KEY_PLACEHOLDER, ModelProxy
    from landbot.sandbox.runner import EXIT_OOM, run_sandboxed

    uid, gid = settings.sandbox.uid, settings.sandbox.gid
    workdir = Path(os.path.realpath(workdir))
    outputs = outputs_dir(workdir)
    paths = JobPaths(inputs=Path(os.path.realpath(inputs)), outputs=outputs)
    use_proxy = bool(settings.fixer.model_url or settings.sandbox.allowed_hosts)
    require_model(agent, settings)
    prompt = build_prompt(task)
    with contextlib.ExitStack() as stack:
        proxy = stack.enter_context(ModelProxy.from_settings(settings)) if use_proxy else None
        access = None
        if proxy is not None and proxy.sandbox_url is not None:
            access = ModelAccess(url=proxy.sandbox_url, placeholder=KEY_PLACEHOLDER, model=model)
        invocation: Invocation = agent.invocation(paths, prompt, access)
        _write(paths.prompt, prompt)
        _write(paths.evidence, json.dumps(evidence_json(task), indent=2) + "\n")
        for name, text in invocation.input_files.items():
            _write(paths.inputs / name, text)
        _prepare_outputs(outputs, invocation.output_dirs, uid, gid)
        stack.callback(_remove_outputs, outputs)
        log.info("running the %s agent in the sandbox on %s", agent.name, workdir)
        result = run_sandboxed(
            invocation.argv,
            workdir,
            timeout=limits.timeout,
            memory_mb=limits.memory_mb,
            pids_max=limits.pids_max,
            env=invocation.env,
            extra_ro_paths=(paths.inputs, *invocation.read_only, *settings.sandbox.read_only),
            proxy=proxy.endpoint if proxy is not None else None,
            capture=True,
            uid=uid,
            gid=gid,
            chown=chown,
        )
        candidates = [read_output(workdir, name) for name in invocation.verdict_files]
        if invocation.stdout_verdict is not None and result.stdout:
            candidates.append(invocation.stdout_verdict(result.stdout))
        refused = (
            tuple(f"{r.method} {r.target}: {r.reason}" for r in proxy.refused) if proxy else ()
        )
    code = result.exit_code
    verdict = judge(
        candidates,
        exit_code=code,
        timed_out_after=result.timeout if result.timed_out else None,
        oom_mb=result.memory_mb if code == EXIT_OOM and result.oom else None,
    )
    log.info(
        "the %s agent exited %s after %.1f s: %s (%s)",
        agent.name,
        code,
        result.duration,
        verdict.verdict,
        verdict.summary,
    )
    if not verdict.from_agent:
        log.warning(
            "the %s agent gave no usable verdict; its stderr ends with: %s",
            agent.name,
            _tail(result.stderr)[-2000:].decode(errors="replace"),
        )
    return AgentOutcome(
        agent=agent.name,
        verdict=verdict,
        exit_code=code,
        duration=result.duration,
        stdout_tail=_tail(result.stdout),
        stderr_tail=_tail(result.stderr),
        refused=refused,
    )


@contextlib.contextmanager
def _inputs_folder(parent: Path | None) -> Iterator[Path]:
    """A root-owned folder, mode 755, for the job's read-only files."""
    if parent is not None:
        folder = parent / INPUTS_DIR
        folder.mkdir(mode=0o755)
        os.chmod(folder, 0o755)
        yield folder
        return
    # Under /tmp (mode 1777), so the sandbox uid can reach it whatever TMPDIR says.
    folder = Path(tempfile.mkdtemp(prefix="landbot-fixer-", dir="/tmp"))
    try:
        os.chmod(folder, 0o755)
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# --- the job on a pull request --------------------------------------------------------


def fix_checkout(
    settings: Settings,
    ws: Workspace,
    drop: Drop,
    evidence: Evidence,
    base_ref: str,
    *,
    agent: Agent | None = None,
    limits: JobLimits = JobLimits(),
    model: str | None = None,
) -> AgentVerdict:
    """The verdict on one job work tree: the host's clean merge, or the agent's. `agent`
    defaults to `[fixer] agent` (made only when the job needs one).

    Raises LandbotError when the agent could not run (the host cannot sandbox, the agent is
    not installed); whatever the agent does, returns its verdict.
    """
    merge = ws.merge
    if not ws.needs_agent:
        log.info("%s#%s: the conflict merged cleanly on the host", drop.repo, drop.pr)
        return AgentVerdict(
            "fixed",
            f"landbot merged {base_ref} ({(ws.base_sha or '')[:12]}) into the pull request; "
            "the quest merge driver resolved every conflict",
            reproduced=True,
            from_agent=False,
        )
    task = Task(
        drop=replace(drop, base_ref=drop.base_ref or base_ref),
        evidence=evidence,
        conflicts=merge.conflicts if merge is not None else (),
        base_ref=base_ref,
        base_sha=ws.base_sha if merge is not None else evidence.base_sha,
        protected_paths=tuple(settings.fixer.protected_paths),
    )
    chosen = agent or make_agent(settings.fixer.agent, settings.fixer.command)
    with _inputs_folder(ws.job_dir) as inputs:
        outcome = run_agent(
            task, ws.path, inputs, settings, agent=chosen, limits=limits, model=model
        )
    return outcome.verdict


# --- the job on a local checkout (`landbot fixer run`) --------------------------------


def _git_out(workdir: Path, *args: str) -> tuple[int, bytes]:
    from landbot.git.workspace import run_git

    done = run_git(list(args), cwd=workdir, config=[("safe.directory", str(workdir))], check=False)
    return done.returncode, done.stdout


def local_task(workdir: Path, evidence_data: Any | None) -> Task:
    """The task for a local checkout: its HEAD, its merge in progress (if any), and the
    evidence file's content (landbot's format or `landbot triage log --json`)."""
    code, out = _git_out(workdir, "rev-parse", "--verify", "HEAD")
    if code != 0:
        raise LandbotError(f"{workdir} has no commit at HEAD; pass a git checkout with a commit")
    head = out.decode().strip()
    conflicts: tuple[str, ...] = ()
    base_sha: str | None = None
    code, out = _git_out(workdir, "rev-parse", "--verify", "--quiet", "MERGE_HEAD")
    if code == 0:
        base_sha = out.decode().strip()
        _, unmerged = _git_out(workdir, "diff", "--name-only", "-z", "--diff-filter=U")
        conflicts = tuple(
            sorted(p.decode("utf-8", "surrogateescape") for p in unmerged.split(b"\0") if p)
        )
    if evidence_data is None:
        drop = Drop(
            repo="",
            pr=0,
            head_sha=head,
            reason="merge_conflict" if conflicts else "failed_checks",
            source="operator",
        )
        evidence = Evidence()
    else:
        try:
            drop, evidence = evidence_from_json(evidence_data, head_sha=head, conflicts=conflicts)
        except EvidenceFormatError as exc:
            raise LandbotError(f"the evidence file is not usable: {exc}") from None
    return Task(
        drop=drop,
        evidence=evidence,
        conflicts=conflicts,
        base_ref=drop.base_ref,
        base_sha=base_sha or evidence.base_sha,
    )


def run_local_job(
    settings: Settings,
    workdir: Path,
    *,
    evidence_file: Path | None = None,
    agent_name: str | None = None,
    limits: JobLimits = JobLimits(),
    model: str | None = None,
) -> AgentOutcome:
    """`landbot fixer run`: the agent on an operator's checkout. No GitHub, no publishing;
    the checkout is handed to the sandbox uid (as `landbot sandbox run` does)."""
    from landbot.sandbox.runner import check_host, prepare_workdir

    real = Path(os.path.realpath(workdir))
    if not real.is_dir():
        raise LandbotError(f"work tree {workdir} is not a folder; pass an existing --workdir")
    outputs_dir(real)
    data: Any | None = None
    if evidence_file is not None:
        try:
            data = json.loads(evidence_file.read_text())
        except OSError as exc:
            raise LandbotError(
                f"cannot read the evidence file {evidence_file}: {exc.strerror}"
            ) from None
        except ValueError as exc:
            raise LandbotError(f"the evidence file {evidence_file} is not JSON: {exc}") from None
    agent = make_agent(agent_name or settings.fixer.agent, settings.fixer.command)
    require_model(agent, settings)
    check_host()
    task = local_task(real, data)
    task = replace(task, protected_paths=tuple(settings.fixer.protected_paths))
    prepare_workdir(real, settings.sandbox.uid, settings.sandbox.gid)
    with _inputs_folder(None) as inputs:
        return run_agent(task, real, inputs, settings, agent=agent, limits=limits, model=model)
