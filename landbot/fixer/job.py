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

`export_result` takes the job's commits out as data: after the agent's sandbox is gone, a
second short sandboxed command (git inside the sandbox, as the sandbox uid) writes a bundle
into `.git/landbot/`, and the host reads that one file (landbot/git/quarantine.py checks
and imports it; the host never runs git in the job's `.git`).

`run_local_job` is the same agent run on an operator's checkout (`landbot fixer run`): no
GitHub, no publishing. HEAD, MERGE_HEAD and the unmerged files are read by git in the
sandbox, and afterwards the checkout's `.git` keeps only git's normal layout
(`GITDIR_FILES` and friends), so an operator's later `git status` there reads nothing the
job planted.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from landbot.core.model import Drop, Evidence
from landbot.core.text import terminal_safe
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
from landbot.git.quarantine import BUNDLE_NAME, BundleLimits, ResultRefused, read_exchange_file

if TYPE_CHECKING:
    from landbot.config import Settings
    from landbot.git.workspace import Workspace
    from landbot.sandbox.runner import SandboxResult

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
    bundle: bytes | None = None  # run_local_job(export=True): the job's new commits
    bundle_refused: str | None = None  # ... or why there is no bundle


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


# The model API each agent speaks: the proxy forwards that API's calls and no others.
AGENT_API = {"codex": "openai-responses", "opencode": "openai-chat", "claude": "anthropic"}


def sandbox_options(settings: Settings) -> dict[str, Any]:
    """The sandbox settings every agent run takes: what it may see of /etc, its CPU, /tmp
    and file size caps (RLIMIT_FSIZE at the work tree's disk cap), and the host's own
    secrets, which it must not see (the run is refused if it would)."""
    from landbot.sandbox.limits import cpu_cap
    from landbot.sandbox.settings import host_secrets

    box = settings.sandbox
    return {
        "hidden": host_secrets(settings, settings._config_file),
        "etc": tuple(box.etc),
        "cpus": cpu_cap(box.cpus),
        "tmp_mb": box.tmp_mb,
        "fsize_mb": box.disk_mb or None,
    }


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
        api = settings.fixer.model_api or AGENT_API.get(agent.name, "any")
        proxy = (
            stack.enter_context(ModelProxy.from_settings(settings, api=api)) if use_proxy else None
        )
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
            **sandbox_options(settings),
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
        terminal_safe(verdict.summary),
    )
    if not verdict.from_agent:
        log.warning(
            "the %s agent gave no usable verdict; its stderr ends with: %s",
            agent.name,
            terminal_safe(_tail(result.stderr)[-2000:]),
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


# --- the result, out of the sandbox as data -------------------------------------------

# The export's timeout follows the size of what it can export (a job that blocks it, e.g.
# with a FIFO for `.git/packed-refs`, holds its worker this long, not a fixed 300 s): a
# floor for git to start, read refs and write a small bundle, plus the bytes of the job's
# object store at a rate well under what `git bundle` packs on a loaded 2-core host
# (bench/export_block.py), the bytes counted up to the bundle cap (BundleLimits.max_bytes,
# 64 MiB: 10 + 64 / 4 = 26 s at most).
EXPORT_FLOOR_S = 10.0
EXPORT_BYTES_PER_S = 4 << 20
EXPORT_MAX_ENTRIES = 100_000  # entries of .git/objects looked at; past it: the cap
EXPORT_MAX_DEPTH = 8  # levels under .git/objects walked (git uses 2); past it: the cap
_NOFOLLOW_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class _Uncounted(Exception):
    """The job's object store is too big to walk: it counts as the cap."""


EXPORT_MEMORY_MB = 1024
NO_HEAD, NOTHING_NEW = 3, 4  # the export script's own exit codes
# Run by git INSIDE the sandbox, after the agent's sandbox (and every process of it) is
# gone: whatever the job planted in .git (alternates, commondir, refs) is read there, by
# the sandbox uid, and only the bundle crosses to the host, where it is checked as data.
_EXPORT_SCRIPT = r"""
git rev-parse --verify --quiet 'HEAD^{commit}' >/dev/null || exit 3
n=$(git rev-list --count HEAD --not "$@") || exit 5
[ "$n" -gt 0 ] || exit 4
exec git bundle create --quiet .git/landbot/result.bundle HEAD --not "$@"
"""


def export_size(workdir: Path, limit: int) -> int:
    """The bytes under `workdir/.git/objects` (regular files, no link followed at any
    level, `.git` and `objects` included: each folder is opened O_NOFOLLOW and listed by
    its descriptor), counted up to `limit`: what an export of the job's commits can at most
    pack. `limit` when the folder holds more than EXPORT_MAX_ENTRIES entries or is deeper
    than EXPORT_MAX_DEPTH (the job made them; the host does not walk them all)."""
    counted = [0, 0]  # bytes, entries

    def walk(fd: int, depth: int) -> None:
        with os.scandir(fd) as it:
            items = []
            for entry in it:
                counted[1] += 1
                if counted[1] > EXPORT_MAX_ENTRIES:
                    raise _Uncounted
                items.append((entry.name, entry.stat(follow_symlinks=False)))
        for name, st in items:
            if counted[0] >= limit:
                return
            if stat.S_ISREG(st.st_mode):
                counted[0] += st.st_size
            elif stat.S_ISDIR(st.st_mode):
                if depth >= EXPORT_MAX_DEPTH:
                    raise _Uncounted
                try:
                    child = os.open(name, _NOFOLLOW_DIR, dir_fd=fd)
                except OSError:
                    continue  # swapped for a link or gone: nothing to count
                try:
                    walk(child, depth + 1)
                finally:
                    os.close(child)

    try:
        fd = os.open(workdir, _NOFOLLOW_DIR)
    except OSError:
        return 0
    try:
        for part in (".git", "objects"):
            parent, fd = fd, -1  # closed once: never a number another thread reopened
            try:
                fd = os.open(part, _NOFOLLOW_DIR, dir_fd=parent)
            finally:
                os.close(parent)
        walk(fd, 0)
    except _Uncounted:
        return limit
    except OSError:
        pass  # not there, a link, or not a folder: what was counted
    finally:
        if fd >= 0:
            os.close(fd)
    return min(counted[0], limit)


def export_timeout(size: int) -> float:
    """Seconds the export of a job whose object store holds `size` bytes may take (pure)."""
    return EXPORT_FLOOR_S + size / EXPORT_BYTES_PER_S


def _git_in_sandbox(
    script: str, args: tuple[str, ...], workdir: Path, uid: int, gid: int, timeout: float
) -> SandboxResult:
    """A short git script run in the sandbox on a job's work tree: the host's only way to
    look into a tree the job wrote."""
    from landbot.sandbox.runner import run_sandboxed

    return run_sandboxed(
        ["/bin/sh", "-c", script, "landbot-git", *args],
        workdir,
        timeout=timeout,
        memory_mb=EXPORT_MEMORY_MB,
        pids_max=64,
        capture=True,
        uid=uid,
        gid=gid,
        chown=False,
    )


def export_result(
    workdir: Path,
    exclude: tuple[str, ...],
    *,
    uid: int,
    gid: int,
    limit: int,
    timeout: float | None = None,
) -> bytes:
    """The job's new commits (HEAD, less what `exclude` reaches) as bundle bytes, written
    by git in the sandbox into `.git/landbot/` and read from there without following
    links. ResultRefused when there is nothing to take or the bundle is unfit. `timeout`
    defaults to `export_timeout` of the job's object store, counted up to `limit`."""
    if not exclude or not all(_is_sha(x) for x in exclude):
        raise LandbotError("export_result needs the object ids the job started from")
    workdir = Path(os.path.realpath(workdir))
    outputs = outputs_dir(workdir)
    if timeout is None:
        timeout = export_timeout(export_size(workdir, limit))
    _prepare_outputs(outputs, (), uid, gid)
    try:
        result = _git_in_sandbox(_EXPORT_SCRIPT, exclude, workdir, uid, gid, timeout)
        if result.timed_out:
            raise ResultRefused(
                f"git bundle in the sandbox did not finish in {timeout:.0f} s (the time "
                "allowed for the size of the job's commits): the job's repository blocks it"
            )
        if result.exit_code == NO_HEAD:
            raise ResultRefused("the job's work tree has no commit at HEAD")
        if result.exit_code == NOTHING_NEW:
            raise ResultRefused("the job made no commit: nothing to publish")
        if result.exit_code != 0:
            why = terminal_safe(_tail(result.stderr)[-300:], limit=300).strip()
            raise ResultRefused(
                f"git bundle in the sandbox failed (exit {result.exit_code}): "
                + (why.splitlines()[-1] if why else "no reason given")
            )
        data = read_exchange_file(workdir, BUNDLE_NAME, limit=limit, owner=uid)
        if data is None:
            raise ResultRefused("the job side wrote no bundle of its commits")
        return data
    finally:
        _remove_outputs(outputs)


def _is_sha(text: str) -> bool:
    return len(text) in (40, 64) and all(c in "0123456789abcdef" for c in text)


# --- the job on a local checkout (`landbot fixer run`) --------------------------------


MAX_UNMERGED = 10_000
MAX_STATE_BYTES = 4 * 1024 * 1024
# git INSIDE the sandbox reads what the task needs: a checkout a previous job wrote may
# hold anything under .git, and the host runs no git in it.
_STATE_SCRIPT = r"""
git rev-parse --verify --quiet 'HEAD^{commit}' || exit 3
if git rev-parse --verify --quiet 'MERGE_HEAD^{commit}'; then
  exec git diff --name-only -z --diff-filter=U
fi
echo -
"""


def parse_local_state(out: bytes) -> tuple[str, str | None, tuple[str, ...]]:
    """(HEAD, MERGE_HEAD or None, unmerged paths) from the state script's output: two
    lines of object ids (`-` for no merge), then NUL-separated paths. LandbotError when
    it is not that (the output comes from git running on what a job may have written)."""
    if len(out) > MAX_STATE_BYTES:
        raise LandbotError("the checkout's merge state is over 4 MiB; make a fresh checkout")
    head, _, rest = out.partition(b"\n")
    merge, _, paths = rest.partition(b"\n")
    if not _is_sha(head.decode("ascii", "replace")):
        raise LandbotError("git in the sandbox gave no commit id for HEAD; check the checkout")
    if merge == b"-" and not paths:
        return head.decode(), None, ()
    if not _is_sha(merge.decode("ascii", "replace")):
        raise LandbotError("git in the sandbox gave no commit id for MERGE_HEAD; check it")
    names = [p for p in paths.split(b"\0") if p]
    if len(names) > MAX_UNMERGED:
        raise LandbotError(f"the checkout has over {MAX_UNMERGED:,} unmerged files")
    conflicts = tuple(sorted({p.decode("utf-8", "surrogateescape") for p in names}))
    return head.decode(), merge.decode(), conflicts


def read_local_state(workdir: Path, uid: int, gid: int) -> tuple[str, str | None, tuple[str, ...]]:
    """HEAD, MERGE_HEAD and the unmerged files of `workdir`, read by git in the sandbox
    (the work tree must already belong to the sandbox uid)."""

    timeout = export_timeout(export_size(workdir, BundleLimits().max_bytes))
    result = _git_in_sandbox(_STATE_SCRIPT, (), workdir, uid, gid, timeout)
    if result.exit_code == NO_HEAD:
        raise LandbotError(f"{workdir} has no commit at HEAD; pass a git checkout with a commit")
    if result.exit_code != 0:
        why = terminal_safe(_tail(result.stderr)[-300:], limit=300).strip()
        raise LandbotError(
            f"cannot read the state of {workdir} (git exit {result.exit_code}): "
            + (why.splitlines()[-1] if why else "no reason given")
        )
    return parse_local_state(result.stdout or b"")


def local_task(
    workdir: Path,
    evidence_data: Any | None,
    *,
    state: tuple[str, str | None, tuple[str, ...]] | None = None,
    uid: int = 65534,
    gid: int = 65534,
) -> Task:
    """The task for a local checkout: its HEAD, its merge in progress (if any), and the
    evidence file's content (landbot's format or `landbot triage log --json`). `state`
    is `read_local_state`'s answer (read here, in the sandbox, when not given)."""
    head, base_sha, conflicts = state or read_local_state(workdir, uid, gid)
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


# --- the checkout's .git after a job: only git's normal layout stays ------------------

# What a job may leave in a local checkout's .git, so that an operator's later `git status`
# there reads nothing the job redirected: regular files and folders in git's own layout.
# Anything else (a symbolic link anywhere, commondir, gitdir, alternates, info/attributes,
# info/grafts, shallow, config.worktree, worktrees/, modules/, a rebase in progress, a
# FIFO) is removed. `config` and `hooks/` are the operator's and were read-only to the job.
GITDIR_FILES = frozenset(
    {
        "HEAD",
        "ORIG_HEAD",
        "FETCH_HEAD",
        "MERGE_HEAD",
        "MERGE_MSG",
        "MERGE_MODE",
        "AUTO_MERGE",
        "CHERRY_PICK_HEAD",
        "REVERT_HEAD",
        "COMMIT_EDITMSG",
        "SQUASH_MSG",
        "TAG_EDITMSG",
        "description",
        "index",
        "packed-refs",
    }
)
GITDIR_TREES = ("refs", "logs")  # any regular files below
# The operator's, read-only in the sandbox, left alone. (`branches/`, git init's empty
# legacy folder, is kept; a file in it is not.)
GITDIR_KEEP = ("config", "hooks")
INFO_FILES = frozenset({"exclude", "refs", "sparse-checkout"})
OBJECT_INFO_FILES = frozenset({"packs", "commit-graph"})
# The operator's own copies of these are put back after the job (a shallow clone, a clone
# with --reference, their attributes); whatever the job wrote there is not.
PRESERVED = ("shallow", "info/attributes", "objects/info/alternates")
_LOOSE_DIR = re.compile(r"[0-9a-f]{2}")
_LOOSE = re.compile(r"[0-9a-f]{38}|[0-9a-f]{62}")
_PACK = re.compile(r"pack-[0-9a-f]{40,64}\.(?:pack|idx|rev|keep|promisor|mtimes|bitmap)")
_GRAPH = re.compile(r"commit-graph-chain|graph-[0-9a-f]{40,64}\.graph")


def _allowed(rel: str, is_dir: bool) -> bool:
    """Whether `rel` (a path under .git, `/`-separated) belongs to git's normal layout."""
    parts = rel.split("/")
    top = parts[0]
    if len(parts) == 1:
        if is_dir:
            return top in (*GITDIR_TREES, "objects", "info", "branches")
        return top in GITDIR_FILES
    if top in GITDIR_TREES:
        return True
    if top == "info":
        return len(parts) == 2 and not is_dir and parts[1] in INFO_FILES
    if top != "objects":
        return False
    if len(parts) == 2:
        if is_dir:
            return parts[1] in ("pack", "info") or bool(_LOOSE_DIR.fullmatch(parts[1]))
        return False
    sub = parts[1]
    if len(parts) == 3 and not is_dir:
        if sub == "pack":
            return parts[2] == "multi-pack-index" or bool(_PACK.fullmatch(parts[2]))
        if sub == "info":
            return parts[2] in OBJECT_INFO_FILES
        return bool(_LOOSE_DIR.fullmatch(sub)) and bool(_LOOSE.fullmatch(parts[2]))
    if sub == "info" and parts[2] == "commit-graphs":
        return (len(parts) == 3 and is_dir) or (
            len(parts) == 4 and not is_dir and bool(_GRAPH.fullmatch(parts[3]))
        )
    return False


def unexpected_in_gitdir(workdir: Path) -> list[str]:
    """Paths under `workdir/.git` (relative, `/`-separated) outside git's normal layout,
    found without following a link; a folder that is not allowed is listed, not entered."""
    gitdir = workdir / ".git"
    found: list[str] = []
    stack = [""]
    while stack:
        rel = stack.pop()
        with os.scandir(gitdir / rel if rel else gitdir) as entries:
            for entry in entries:
                path = f"{rel}/{entry.name}" if rel else entry.name
                if not rel and entry.name in (*GITDIR_KEEP, OUTPUTS_DIR):
                    continue  # the operator's, or landbot's own exchange folder
                st = entry.stat(follow_symlinks=False)
                is_dir = stat.S_ISDIR(st.st_mode)
                if not (is_dir or stat.S_ISREG(st.st_mode)) or not _allowed(path, is_dir):
                    found.append(path)
                elif is_dir:
                    stack.append(path)
    return sorted(found)


def snapshot_preserved(workdir: Path) -> dict[str, bytes]:
    """The operator's own PRESERVED files (regular files only), to put back after a job."""
    saved: dict[str, bytes] = {}
    for rel in PRESERVED:
        data = _read_plain(workdir / ".git", rel)
        if data is not None:
            saved[rel] = data
    return saved


def _read_plain(gitdir: Path, rel: str) -> bytes | None:
    path = gitdir / rel
    if any(p.is_symlink() for p in (path, *path.parents) if p != gitdir and gitdir in p.parents):
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, MAX_OUTPUT_FILE)
    finally:
        os.close(fd)


def check_local_gitdir(workdir: Path) -> dict[str, bytes]:
    """Refuse a checkout whose .git holds what `sanitize_gitdir` would remove (it would be
    lost), other than PRESERVED files; return those for the sanitiser."""
    odd = [p for p in unexpected_in_gitdir(workdir) if p not in PRESERVED]
    if odd:
        raise LandbotError(
            f"{workdir}/.git/{odd[0]} is not part of a plain clone (a linked worktree, a "
            "submodule, a link, a rebase in progress or a job's leftover); `landbot fixer "
            "run` removes such files after the job: finish what is in progress or use a fresh clone"
        )
    return snapshot_preserved(workdir)


def sanitize_gitdir(workdir: Path, preserved: dict[str, bytes], uid: int, gid: int) -> list[str]:
    """After a job: remove from `workdir/.git` everything outside git's normal layout
    (never following a link), and put the operator's PRESERVED files back as they were.
    Returns what was removed (relative to .git)."""
    gitdir = workdir / ".git"
    removed = unexpected_in_gitdir(workdir)
    for rel in removed:
        path = gitdir / rel
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)  # walks by descriptor, follows no link
        else:
            path.unlink(missing_ok=True)
    for rel, data in preserved.items():
        path = gitdir / rel
        path.parent.mkdir(exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
        os.lchown(path, uid, gid)
    if removed:
        log.warning(
            "removed from %s/.git what the job left outside git's layout: %s",
            workdir,
            terminal_safe(", ".join(removed[:20]), limit=2000),
        )
    return removed


def run_local_job(
    settings: Settings,
    workdir: Path,
    *,
    evidence_file: Path | None = None,
    agent_name: str | None = None,
    limits: JobLimits = JobLimits(),
    model: str | None = None,
    export: bool = False,
    export_limit: int = BundleLimits().max_bytes,
    disk_mb: int | None = None,
    on_start: Callable[[str], None] | None = None,
) -> AgentOutcome:
    """`landbot fixer run`: the agent on an operator's checkout. No GitHub, no publishing;
    the checkout is handed to the sandbox uid (as `landbot sandbox run` does). With
    `export`, the job's new commits (over HEAD and MERGE_HEAD as they were) come back as
    `outcome.bundle`, taken as `export_result` takes a workspace's (`fixer run --out`).

    Everything the job's sandboxes do happens on a file system of `disk_mb` MB (default
    `[sandbox] disk_mb`; 0: none) holding a copy of the checkout, copied back after
    (landbot/sandbox/disk.py); `on_start` gets the line saying so, as the job starts."""
    from landbot.sandbox.disk import cap_line, run_capped
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
    uid, gid = settings.sandbox.uid, settings.sandbox.gid
    disk = settings.sandbox.disk_mb if disk_mb is None else disk_mb
    if disk != settings.sandbox.disk_mb:  # the agent's RLIMIT_FSIZE follows the cap
        box = settings.sandbox.model_copy(update={"disk_mb": disk})
        settings = settings.model_copy(update={"sandbox": box})
    preserved = check_local_gitdir(real)
    prepare_workdir(real, uid, gid)

    def job() -> AgentOutcome:
        # On the capped copy (disk.py): the checkout as the job leaves it, sanitised, is
        # what is copied back.
        state = read_local_state(real, uid, gid)
        task = local_task(real, data, state=state)
        task = replace(task, protected_paths=tuple(settings.fixer.protected_paths))
        if on_start is not None:  # the evidence was usable: the job starts
            on_start(cap_line("fixer run", disk))
        try:
            with _inputs_folder(None) as inputs:
                outcome = run_agent(
                    task, real, inputs, settings, agent=agent, limits=limits, model=model
                )
        finally:
            sanitize_gitdir(real, preserved, uid, gid)
        if not export:
            return outcome
        started = tuple(sha for sha in dict.fromkeys(state[:2]) if sha)
        try:
            bundle = export_result(real, started, uid=uid, gid=gid, limit=export_limit)
        except ResultRefused as exc:
            return replace(outcome, bundle_refused=str(exc))
        return replace(outcome, bundle=bundle)

    return run_capped(real, disk, uid=uid, gid=gid, body=job)
