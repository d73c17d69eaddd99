"""Run one command confined: the land fixer's sandbox.

    result = run_sandboxed(["make", "test"], workdir, timeout=600, memory_mb=2048)

The command runs under bubblewrap, started as the unprivileged sandbox uid (never root:
root-run bubblewrap keeps capabilities), in new user, PID, network, IPC, UTS and cgroup
namespaces, seeing only the system folders, the operator's read-only paths and the work
tree (see bwrap.py), with a clean environment (sandbox_env.py), inside a cgroup with memory
and pids caps (cgroups.py) and rlimits as a backstop (limits.py). The wall-clock timeout
kills bubblewrap, and with it the whole PID namespace: grandchildren that `setsid` away
too. With a `ProxyEndpoint`, the model proxy's unix socket is bound in and re-exposed on
the sandbox's own 127.0.0.1 by relay.py.

Nothing here falls back to an unconfined run: a host that cannot sandbox gets a
LandbotError naming what to install or enable.
"""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from landbot.errors import LandbotError
from landbot.git.ownership import chown_tree, require_reachable
from landbot.sandbox import bwrap as bw
from landbot.sandbox.cgroups import JobCgroup, create_job_cgroup
from landbot.sandbox.env import sandbox_environment
from landbot.sandbox.limits import launcher_argv, rlimits_for, setpriv_argv

DEFAULT_UID = 65534
DEFAULT_GID = 65534
DEFAULT_PIDS_MAX = 1024
SYSTEM_PYTHON = "/usr/bin/python3"  # readable by the sandbox uid, unlike a venv under /root

EXIT_TIMEOUT = 124
EXIT_OOM = 137


class SandboxUnavailable(LandbotError):
    """This host cannot run the sandbox; the message says what to install or enable."""


@dataclass(frozen=True)
class ProxyEndpoint:
    """What a running model proxy gives a job: its socket and the job's variables."""

    socket_path: Path
    port: int  # where the relay listens on the sandbox's own loopback
    env: Mapping[str, str] = field(default_factory=dict)  # e.g. LANDBOT_MODEL_URL


@dataclass(frozen=True)
class SandboxResult:
    """How a sandboxed job ended."""

    returncode: int  # as the job reported it; 128+N when killed by signal N
    timed_out: bool
    oom: bool  # the memory cap killed a process of the job
    duration: float  # seconds, start to exit
    timeout: float
    memory_mb: int
    stdout: bytes | None = None  # with capture=True
    stderr: bytes | None = None
    memory_peak: int | None = None  # bytes, as the cgroup saw it

    @property
    def exit_code(self) -> int:
        """The `landbot sandbox run` exit code: the command's, 124 on timeout, 137 on OOM."""
        if self.timed_out:
            return EXIT_TIMEOUT
        if self.oom and self.returncode != 0:
            return EXIT_OOM
        return self.returncode

    def message(self) -> str | None:
        """One line about a limit that ended (or touched) the job, or None."""
        if self.timed_out:
            return (
                f"the command timed out after {self.timeout:g} s and was killed "
                f"with everything it started (exit {EXIT_TIMEOUT})"
            )
        if self.oom and self.returncode != 0:
            return (
                f"the command was killed by the sandbox's memory cap of {self.memory_mb} MB "
                f"(exit {EXIT_OOM})"
            )
        if self.oom:
            return (
                f"a process of the job was killed by the memory cap of {self.memory_mb} MB; "
                "the command itself exited 0"
            )
        return None


# --- host checks ----------------------------------------------------------------------


def userns_problem(sysctls: Mapping[str, str]) -> str | None:
    """Why unprivileged user namespaces are off, from /proc/sys values (pure)."""
    if sysctls.get("kernel/unprivileged_userns_clone", "1").strip() == "0":
        return (
            "unprivileged user namespaces are disabled on this host; enable them with "
            "`sysctl -w kernel.unprivileged_userns_clone=1`"
        )
    if sysctls.get("user/max_user_namespaces", "1").strip() == "0":
        return (
            "user namespaces are disabled on this host (user.max_user_namespaces is 0); "
            "enable them with `sysctl -w user.max_user_namespaces=10000`"
        )
    if sysctls.get("kernel/apparmor_restrict_unprivileged_userns", "0").strip() == "1":
        return (
            "AppArmor forbids unprivileged user namespaces on this host; allow them with "
            "`sysctl -w kernel.apparmor_restrict_unprivileged_userns=0` or an AppArmor "
            "profile for /usr/bin/bwrap"
        )
    return None


def _read_sysctls() -> dict[str, str]:
    out = {}
    for name in (
        "kernel/unprivileged_userns_clone",
        "user/max_user_namespaces",
        "kernel/apparmor_restrict_unprivileged_userns",
    ):
        with contextlib.suppress(OSError):
            out[name] = Path("/proc/sys", name).read_text()
    return out


def check_host(path: str | None = None) -> tuple[str, str]:
    """The paths of bwrap and setpriv, or SandboxUnavailable with the fix."""
    bwrap = shutil.which("bwrap", path=path)
    if bwrap is None:
        raise SandboxUnavailable(
            "bubblewrap is not installed: install it with `apt-get install bubblewrap`; "
            "the fixer never runs a job unconfined"
        )
    setpriv = shutil.which("setpriv", path=path)
    if setpriv is None:
        raise SandboxUnavailable(
            "setpriv is missing: install util-linux (`apt-get install util-linux`); "
            "the sandbox needs it to drop to the sandbox uid"
        )
    problem = userns_problem(_read_sysctls())
    if problem is not None:
        raise SandboxUnavailable(problem + "; the fixer never runs a job unconfined")
    if os.geteuid() != 0:
        raise SandboxUnavailable(
            "the sandbox must be started by root: it drops the job to the sandbox uid and "
            "gives it a cgroup (the job itself never runs as root); run landbot as root"
        )
    return bwrap, setpriv


# --- what the sandbox sees ------------------------------------------------------------


def system_paths() -> tuple[bw.SystemPath, ...]:
    out = []
    for p in bw.SYSTEM_PATHS:
        if os.path.islink(p):
            out.append(bw.SystemPath(p, os.readlink(p)))
        elif os.path.isdir(p):
            out.append(bw.SystemPath(p))
    return tuple(out)


def _git_protections(workdir: Path) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(.git pinned, its hooks and config read-only) when the work tree has a .git folder."""
    gitdir = workdir / ".git"
    if gitdir.is_symlink() or not gitdir.is_dir():
        return (), ()  # no repository, or a worktree's .git file pointing elsewhere
    hooks = gitdir / "hooks"
    if not hooks.exists() and not hooks.is_symlink():
        hooks.mkdir()  # so the job cannot create hooks either
    protected = []
    for p in (hooks, gitdir / "config"):
        if p.is_symlink():
            raise LandbotError(
                f"{p} is a symlink: the work tree was tampered with; make a fresh checkout"
            )
        if p.exists():
            protected.append(str(p))
    return (str(gitdir),), tuple(protected)


def _command_folder(argv0: str, workdir: str) -> str | None:
    """The folder of a command given by absolute path, when it needs binding."""
    if not argv0.startswith("/"):
        return None
    folder = os.path.dirname(os.path.normpath(argv0))
    for root in (*bw.SYSTEM_PATHS, workdir):
        if folder == root or folder.startswith(root + "/"):
            return None
    return folder


def relay_command(port: int, argv: Sequence[str]) -> list[str]:
    if not os.access(SYSTEM_PYTHON, os.X_OK):
        raise SandboxUnavailable(
            f"{SYSTEM_PYTHON} is missing; the sandbox's model relay needs it: "
            "`apt-get install python3`"
        )
    source = Path(__file__).with_name("relay.py").read_text()
    return [
        SYSTEM_PYTHON,
        "-I",
        "-S",
        "-c",
        source,
        str(port),
        bw.MODEL_SOCKET_IN_SANDBOX,
        "--",
        *argv,
    ]


def plan_mounts(
    workdir: Path,
    argv0: str,
    *,
    uid: int,
    gid: int,
    extra_ro_paths: Sequence[Path] = (),
    model_socket: Path | None = None,
) -> bw.MountPlan:
    """Check every path the sandbox will bind and return the mount plan."""
    wd = str(workdir)
    bw.check_workdir(wd)
    require_reachable(workdir, uid, gid, "the work tree")
    pinned, protected = _git_protections(workdir)
    read_only: list[str] = []
    for extra in extra_ro_paths:
        real = os.path.realpath(extra)
        if not os.path.exists(real):
            raise LandbotError(f"read-only path {extra} does not exist; fix [sandbox] read_only")
        bw.check_read_only(real, wd)
        require_reachable(Path(real), uid, gid, "the read-only path")
        read_only.append(real)
    folder = _command_folder(argv0, wd)
    if folder is not None:
        if not os.path.isdir(folder):
            raise LandbotError(f"the command {argv0} does not exist")
        bw.check_read_only(folder, wd)
        require_reachable(Path(folder), uid, gid, "the command's folder")
        read_only.append(folder)
    if model_socket is not None:
        require_reachable(model_socket, uid, gid, "the model proxy's socket")
    return bw.MountPlan(
        workdir=wd,
        system=system_paths(),
        read_only=tuple(read_only),
        protected=protected,
        pinned=pinned,
        model_socket=str(model_socket) if model_socket is not None else None,
    )


def prepare_workdir(workdir: Path, uid: int = DEFAULT_UID, gid: int = DEFAULT_GID) -> Path:
    """Resolve the work tree and hand it to the sandbox uid (git wants its owner)."""
    real = Path(os.path.realpath(workdir))
    if not real.is_dir():
        raise LandbotError(f"work tree {workdir} is not a folder; pass an existing --workdir")
    bw.check_workdir(str(real))
    _git_protections(real)  # create .git/hooks before the chown walks it
    chown_tree(real, uid, gid)
    return real


# --- running --------------------------------------------------------------------------


def _kill(proc: subprocess.Popen[bytes], cgroup: JobCgroup) -> None:
    # Killing bubblewrap takes its PID namespace down (--die-with-parent on the inner
    # init); the cgroup sweep gets anything caught between fork and namespace entry.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    cgroup.kill_all()


def _wait_exit(proc: subprocess.Popen[bytes], timeout: float) -> bool:
    """Wait for `proc` to exit; False on timeout. A pidfd wakes at once, where
    Popen.wait(timeout) polls with sleeps of up to 50 ms."""
    try:
        pidfd = os.pidfd_open(proc.pid)
    except OSError:
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return False
        return True
    try:
        ready, _, _ = select.select([pidfd], [], [], timeout)
    finally:
        os.close(pidfd)
    if not ready:
        return False
    proc.wait()
    return True


def _read_available(fd: int) -> bytes:
    os.set_blocking(fd, False)
    chunks = []
    while True:
        try:
            data = os.read(fd, 65536)
        except BlockingIOError:
            break
        if not data:
            break
        chunks.append(data)
    return b"".join(chunks)


def run_sandboxed(
    argv: Sequence[str],
    workdir: Path,
    *,
    timeout: float,
    memory_mb: int,
    pids_max: int = DEFAULT_PIDS_MAX,
    env: Mapping[str, str] | None = None,
    extra_ro_paths: Sequence[Path] = (),
    proxy: ProxyEndpoint | None = None,
    capture: bool = False,
    stdin: int | IO[Any] | None = subprocess.DEVNULL,
    uid: int = DEFAULT_UID,
    gid: int = DEFAULT_GID,
    chown: bool = True,
) -> SandboxResult:
    """Run `argv` in the sandbox with `workdir` as its writable work tree.

    `env` holds job variables (LANDBOT_* only; a secret-looking name is refused). With
    `capture`, stdout and stderr are returned instead of passed through. `stdin` defaults
    to /dev/null (None inherits it). Raises LandbotError when the host cannot sandbox or a
    path cannot be bound; otherwise returns how the job ended.
    """
    if not argv:
        raise LandbotError("no command to run in the sandbox")
    if timeout <= 0 or memory_mb <= 0 or pids_max <= 0:
        raise LandbotError("timeout, memory and pids caps must be positive")
    bwrap, setpriv = check_host()
    real = prepare_workdir(workdir, uid, gid) if chown else Path(os.path.realpath(workdir))
    plan = plan_mounts(
        real,
        argv[0],
        uid=uid,
        gid=gid,
        extra_ro_paths=extra_ro_paths,
        model_socket=proxy.socket_path if proxy is not None else None,
    )
    command = list(argv) if proxy is None else relay_command(proxy.port, argv)
    job_env = sandbox_environment(
        env or {}, os.environ, dict(proxy.env) if proxy is not None else None
    )
    cgroup = create_job_cgroup(memory_mb * 1024 * 1024, pids_max)
    status_r, status_w = os.pipe()
    proc: subprocess.Popen[bytes] | None = None
    timed_out = False
    out = err = None
    start = time.monotonic()
    try:
        full = launcher_argv(
            cgroup.procs_files,
            rlimits_for(timeout, memory_mb, os.cpu_count() or 1),
            [
                *setpriv_argv(setpriv, uid, gid),
                *bw.bwrap_argv(bwrap, plan, command, status_fd=status_w),
            ],
        )
        pipe = subprocess.PIPE if capture else None
        proc = subprocess.Popen(
            full,
            env=job_env,
            cwd="/",
            stdin=stdin,
            stdout=pipe,
            stderr=pipe,
            pass_fds=(status_w,),
            start_new_session=True,  # its own process group, killed as one; no terminal
        )
        os.close(status_w)
        status_w = -1
        if capture:
            try:
                out, err = proc.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
                _kill(proc, cgroup)
                out, err = proc.communicate()
        elif not _wait_exit(proc, timeout):
            timed_out = True
            _kill(proc, cgroup)
            proc.wait()
    finally:
        duration = time.monotonic() - start
        if proc is not None and proc.returncode is None:  # interrupted: leave nothing behind
            _kill(proc, cgroup)
            proc.wait()
        if status_w >= 0:
            os.close(status_w)
        status = _read_available(status_r)
        os.close(status_r)
        oom_kills = cgroup.oom_kills()
        hit_limit = cgroup.hit_limit()
        peak = cgroup.memory_peak()
        cgroup.remove()
    assert proc is not None
    rc = proc.returncode
    returncode = 128 - rc if rc < 0 else rc
    if not timed_out and b'"child-pid"' not in status:
        detail = (err or b"").decode(errors="replace").strip().splitlines()
        raise SandboxUnavailable(
            "the sandbox could not start the command"
            + (f": {detail[-1]}" if detail else " (bubblewrap's message is above)")
        )
    oom = oom_kills > 0 or (returncode == EXIT_OOM and hit_limit and not timed_out)
    return SandboxResult(
        returncode=returncode,
        timed_out=timed_out,
        oom=oom,
        duration=duration,
        timeout=timeout,
        memory_mb=memory_mb,
        stdout=out,
        stderr=err,
        memory_peak=peak,
    )
