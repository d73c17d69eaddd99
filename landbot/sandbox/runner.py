"""Run one command confined: the land fixer's sandbox.

    result = run_sandboxed(["make", "test"], workdir, timeout=600, memory_mb=2048)

The command runs under bubblewrap, started as the unprivileged sandbox uid (never root:
root-run bubblewrap keeps capabilities), in new user, PID, network, IPC, UTS and cgroup
namespaces, seeing only the system folders, the operator's read-only paths and the work
tree (see bwrap.py; of `/etc` only an allowlist, etc.py), with a clean environment
(env.py), a seccomp filter (seccomp.py), a new session keyring, inside a cgroup with memory,
pids and CPU caps (cgroups.py) and rlimits as a backstop (limits.py). The wall-clock
timeout kills bubblewrap, and with it the whole PID namespace: grandchildren that `setsid`
away too. With a `ProxyEndpoint`, the model proxy's unix socket is bound in and re-exposed
on the sandbox's own 127.0.0.1 by relay.py.

Output is streamed: with `capture`, only the last `output_limit` bytes of each stream are
kept (the count of the rest is in the result); passed through to a terminal, it goes
through `terminal_safe` so no escape sequence of the job reaches the operator's screen.
`hidden` names host files (the App key, the config, the store: `host_secrets`) that must
not be visible inside: a plan that would show one is refused before anything runs.

Nothing here falls back to an unconfined run: a host that cannot sandbox gets a
LandbotError naming what to install or enable.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import platform
import select
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Protocol

from landbot.core.text import TerminalStream
from landbot.errors import LandbotError
from landbot.git.ownership import chown_tree, require_reachable
from landbot.sandbox import bwrap as bw
from landbot.sandbox.cgroups import JobCgroup, create_job_cgroup
from landbot.sandbox.env import sandbox_environment
from landbot.sandbox.etc import EtcPlan, plan_etc
from landbot.sandbox.limits import (
    cpu_cap,
    keyring_argv,
    launcher_argv,
    nice_argv,
    rlimits_for,
    setpriv_argv,
)
from landbot.sandbox.seccomp import SeccompUnavailable, filter_program, program_fd

DEFAULT_UID = 65534
DEFAULT_GID = 65534
DEFAULT_PIDS_MAX = 1024
# As SandboxSettings.cpus unset: half this host's cores (limits.cpu_cap).
DEFAULT_CPUS = cpu_cap(None)
DEFAULT_TMP_MB = 1024  # as SandboxSettings.tmp_mb
DEFAULT_OUTPUT_LIMIT = 1 << 20  # bytes of each stream kept with capture=True
_DRAIN_GRACE = 5.0  # seconds to wait for the output pipes to close once the job has ended
SYSTEM_PYTHON = "/usr/bin/python3"  # readable by the sandbox uid, unlike a venv under /root

EXIT_TIMEOUT = 124
EXIT_OOM = 137
EXIT_FSIZE = 128 + signal.SIGXFSZ  # a write past RLIMIT_FSIZE (the disk cap): 153


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
    stdout: bytes | None = None  # with capture=True: the last output_limit bytes
    stderr: bytes | None = None
    memory_peak: int | None = None  # bytes, as the cgroup saw it
    stdout_dropped: int = 0  # bytes before the tail that were not kept
    stderr_dropped: int = 0
    cpu_periods: int | None = None  # CFS periods the job ran in (None: no CPU controller)
    cpu_throttled: int | None = None  # periods in which the quota stopped it
    disk_mb: int | None = None  # the disk cap (RLIMIT_FSIZE) the job ran under, if any

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
        if self.disk_mb and self.returncode == EXIT_FSIZE:
            return (
                f"the command was stopped writing a file past the disk cap of {self.disk_mb} "
                f"MB (SIGXFSZ, exit {EXIT_FSIZE}); pass a larger --disk if it needs more"
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


@dataclass(frozen=True)
class HostTools:
    bwrap: str
    setpriv: str
    perl: str
    nice: str | None


def check_host(path: str | None = None) -> tuple[str, str]:
    """The paths of bwrap and setpriv, or SandboxUnavailable with the fix."""
    tools = host_tools(path)
    return tools.bwrap, tools.setpriv


def host_tools(path: str | None = None) -> HostTools:
    """Everything the sandbox needs from the host, or SandboxUnavailable with the fix."""
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
    perl = shutil.which("perl", path=path)
    if perl is None:
        raise SandboxUnavailable(
            "perl is missing: install perl-base (`apt-get install perl-base`); the sandbox "
            "uses it to give the job a session keyring of its own"
        )
    try:
        filter_program()
    except SeccompUnavailable as exc:
        raise SandboxUnavailable(str(exc)) from None
    return HostTools(bwrap, setpriv, perl, shutil.which("nice", path=path))


# --- what the sandbox sees ------------------------------------------------------------


def check_hidden(plan: bw.MountPlan, hidden: Sequence[Path]) -> None:
    """Refuse a plan under which one of `hidden` (host secrets) would be visible inside:
    each is compared, by realpath, with every host path the plan binds."""
    bound = [sp.path for sp in plan.system if sp.symlink is None]
    bound += [e.source for e in plan.etc if e.symlink is None]
    bound += [*plan.read_only, plan.workdir]
    if plan.model_socket is not None:
        bound.append(plan.model_socket)
    for secret in hidden:
        real = os.path.realpath(secret)
        for path in bound:
            if bw._within(real, os.path.realpath(path)):
                raise LandbotError(
                    f"{secret} would be visible inside the sandbox through {path}; move it "
                    f"out of {path} (or take {path} out of the sandbox's paths)"
                )


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
    etc: EtcPlan | None = None,
) -> bw.MountPlan:
    """Check every path the sandbox will bind and return the mount plan."""
    etc = etc if etc is not None else plan_etc((), uid, gid)
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
        etc=etc.entries,
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


class _Sink(Protocol):
    def write(self, data: bytes) -> None: ...
    def close(self) -> None: ...


class TailBuffer:
    """The last `limit` bytes written, and how many came before them: a job's output costs
    landbot at most twice `limit` in memory, however much the job writes."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.dropped = 0
        self._buf = bytearray()

    def write(self, data: bytes) -> None:
        self._buf += data
        if len(self._buf) > 2 * self.limit:  # trim in batches: amortized O(1) per byte
            self._trim()

    def _trim(self) -> None:
        cut = len(self._buf) - self.limit
        if cut > 0:
            del self._buf[:cut]
            self.dropped += cut

    def close(self) -> None:
        self._trim()

    def value(self) -> bytes:
        self._trim()
        return bytes(self._buf)


class TerminalSink:
    """Output bound for a terminal, relayed through terminal_safe chunk by chunk (a
    sequence split across chunks is held back until whole, then removed)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._stream = TerminalStream()

    def _send(self, text: str) -> None:
        data = text.encode("utf-8", "replace")
        with contextlib.suppress(OSError):  # the operator closed the terminal
            while data:
                data = data[os.write(self.fd, data) :]

    def write(self, data: bytes) -> None:
        self._send(self._stream.feed(data))

    def close(self) -> None:
        self._send(self._stream.feed(b"", final=True))


def _is_tty(fd: int) -> bool:
    try:
        return os.isatty(fd)
    except OSError:
        return False


def _pump(
    proc: subprocess.Popen[bytes],
    sinks: dict[int, _Sink],
    deadline: float,
    on_timeout: Any,
) -> bool:
    """Move the job's output into `sinks` until it has exited and its pipes are closed;
    kill it at `deadline`. Returns whether the timeout killed it."""
    timed_out = False
    exited = False
    grace_end: float | None = None
    try:
        pidfd: int | None = os.pidfd_open(proc.pid)
    except OSError:
        pidfd = None
    try:
        while True:
            if not exited and proc.poll() is not None:
                exited = True
            if exited and not sinks:
                return timed_out
            now = time.monotonic()
            if not exited and not timed_out and now >= deadline:
                timed_out = True
                on_timeout()
            if exited or timed_out:
                # Everything in the PID namespace dies with bwrap; a pipe still open after
                # the grace period is held by nothing we will wait for.
                grace_end = grace_end if grace_end is not None else now + _DRAIN_GRACE
                if now >= grace_end:
                    if not exited:
                        proc.wait()
                        exited = True
                    for fd, sink in list(sinks.items()):
                        sink.close()
                        os.close(fd)
                        del sinks[fd]
                    return timed_out
                wait = grace_end - now
            else:
                wait = deadline - now
            watch = list(sinks)
            if pidfd is not None and not exited:
                watch.append(pidfd)
            elif not exited:
                wait = min(wait, 0.05)  # no pidfd: poll the exit
            ready, _, _ = select.select(watch, [], [], max(wait, 0))
            for fd in ready:
                if fd == pidfd:
                    continue  # the loop's poll() sees the exit
                try:
                    data = os.read(fd, 65536)
                except BlockingIOError:
                    continue
                if data:
                    sinks[fd].write(data)
                else:
                    sinks[fd].close()
                    os.close(fd)
                    del sinks[fd]
    finally:
        if pidfd is not None:
            os.close(pidfd)
        for fd in list(sinks):
            with contextlib.suppress(OSError):
                os.close(fd)


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
    hidden: Sequence[Path] = (),
    etc: Sequence[str] = (),
    cpus: float | None = DEFAULT_CPUS,
    tmp_mb: int | None = DEFAULT_TMP_MB,
    output_limit: int = DEFAULT_OUTPUT_LIMIT,
    fsize_mb: int | None = None,
) -> SandboxResult:
    """Run `argv` in the sandbox with `workdir` as its writable work tree.

    `env` holds job variables (LANDBOT_* only; a secret-looking name is refused). With
    `capture`, the last `output_limit` bytes of stdout and stderr are returned instead of
    passed through (passed through to a terminal, they are made terminal-safe). `stdin`
    defaults to /dev/null (None inherits it). `hidden`: host paths that must not be visible
    inside (refused if they would be). `etc`: extra /etc entries to show. `cpus`: CPU cap
    in cores (None: none); `tmp_mb`: size of the private /tmp and HOME each (None: tmpfs
    default). `fsize_mb`: RLIMIT_FSIZE, the largest file the job may write (the disk cap of
    a work tree on its own file system, disk.py; None: unlimited). Raises LandbotError
    when the host cannot sandbox or a path cannot be bound;
    otherwise returns how the job ended.
    """
    if not argv:
        raise LandbotError("no command to run in the sandbox")
    if timeout <= 0 or memory_mb <= 0 or pids_max <= 0:
        raise LandbotError("timeout, memory and pids caps must be positive")
    if (cpus is not None and cpus <= 0) or (tmp_mb is not None and tmp_mb <= 0):
        raise LandbotError("the CPU and /tmp caps must be positive (None for no cap)")
    if output_limit <= 0:
        raise LandbotError("output_limit must be positive")
    if fsize_mb is not None and fsize_mb <= 0:
        raise LandbotError("the file size cap must be positive (None for no cap)")
    tools = host_tools()
    etc_plan = plan_etc(etc, uid, gid)
    real = prepare_workdir(workdir, uid, gid) if chown else Path(os.path.realpath(workdir))
    plan = plan_mounts(
        real,
        argv[0],
        uid=uid,
        gid=gid,
        extra_ro_paths=extra_ro_paths,
        model_socket=proxy.socket_path if proxy is not None else None,
        etc=etc_plan,
    )
    check_hidden(plan, hidden)
    command = list(argv) if proxy is None else relay_command(proxy.port, argv)
    job_env = sandbox_environment(
        env or {}, os.environ, dict(proxy.env) if proxy is not None else None
    )
    machine = platform.machine()
    keyring = keyring_argv(tools.perl, machine)
    fds: list[int] = []
    status_r, status_w = os.pipe()
    proc: subprocess.Popen[bytes] | None = None
    cgroup: JobCgroup | None = None
    timed_out = False
    tails: dict[str, TailBuffer] = {}
    start = time.monotonic()
    try:
        seccomp = program_fd()
        fds.append(seccomp)
        data_files = []
        for path, content in etc_plan.files:
            fd = _data_fd(content)
            fds.append(fd)
            data_files.append((fd, path))
        plan = dataclasses.replace(
            plan,
            data_files=tuple(data_files),
            seccomp_fd=seccomp,
            tmp_bytes=tmp_mb * 1024 * 1024 if tmp_mb is not None else None,
        )
        cgroup = create_job_cgroup(memory_mb * 1024 * 1024, pids_max, cpus=cpus)
        # Without a CPU controller: nice, and RLIMIT_CPU at the cap's share of the timeout.
        nice = nice_argv(tools.nice) if cgroup.cpu_dir is None and tools.nice else []
        full = launcher_argv(
            cgroup.procs_files,
            rlimits_for(
                timeout, memory_mb, cpus if cpus is not None else os.cpu_count() or 1, fsize_mb
            ),
            [
                *nice,
                *setpriv_argv(tools.setpriv, uid, gid),
                *keyring,
                *bw.bwrap_argv(tools.bwrap, plan, command, status_fd=status_w),
            ],
        )
        streams: dict[str, int] = {}
        child_out: dict[str, int | None] = {"stdout": None, "stderr": None}
        for name, own in (("stdout", 1), ("stderr", 2)):
            if capture or _is_tty(own):
                r, w = os.pipe()
                streams[name] = r
                child_out[name] = w
        try:
            proc = subprocess.Popen(
                full,
                env=job_env,
                cwd="/",
                stdin=stdin,
                stdout=child_out["stdout"],
                stderr=child_out["stderr"],
                pass_fds=(status_w, *fds),
                start_new_session=True,  # its own process group, killed as one; no terminal
            )
        finally:
            for end in child_out.values():
                if end is not None:
                    os.close(end)
        os.close(status_w)
        status_w = -1
        for fd in fds:
            os.close(fd)
        fds.clear()
        sinks: dict[int, _Sink] = {}
        for name, fd in streams.items():
            if capture:
                tails[name] = TailBuffer(output_limit)
                sinks[fd] = tails[name]
            else:
                sinks[fd] = TerminalSink(1 if name == "stdout" else 2)
        job_cgroup = cgroup
        running = proc
        timed_out = _pump(proc, sinks, start + timeout, lambda: _kill(running, job_cgroup))
        proc.wait()
    finally:
        duration = time.monotonic() - start
        for fd in fds:
            os.close(fd)
        if proc is not None and proc.returncode is None and cgroup is not None:
            _kill(proc, cgroup)  # interrupted: leave nothing behind
            proc.wait()
        if status_w >= 0:
            os.close(status_w)
        status = _read_available(status_r)
        os.close(status_r)
        oom_kills = hit_limit = 0
        peak = None
        cpu: dict[str, int] = {}
        with_cpu = False
        if cgroup is not None:
            oom_kills = cgroup.oom_kills()
            hit_limit = int(cgroup.hit_limit())
            peak = cgroup.memory_peak()
            cpu = cgroup.cpu_stat()
            with_cpu = cgroup.cpu_dir is not None
            cgroup.remove()
    assert proc is not None
    rc = proc.returncode
    returncode = 128 - rc if rc < 0 else rc
    out = tails["stdout"].value() if "stdout" in tails else None
    err = tails["stderr"].value() if "stderr" in tails else None
    if not timed_out and b'"child-pid"' not in status:
        detail = (err or b"").decode(errors="replace").strip().splitlines()
        raise SandboxUnavailable(
            "the sandbox could not start the command"
            + (f": {detail[-1]}" if detail else " (bubblewrap's message is above)")
        )
    oom = oom_kills > 0 or (returncode == EXIT_OOM and bool(hit_limit) and not timed_out)
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
        stdout_dropped=tails["stdout"].dropped if "stdout" in tails else 0,
        stderr_dropped=tails["stderr"].dropped if "stderr" in tails else 0,
        cpu_periods=cpu.get("nr_periods") if with_cpu else None,
        cpu_throttled=cpu.get("nr_throttled") if with_cpu else None,
        disk_mb=fsize_mb,
    )


def _data_fd(content: bytes) -> int:
    """A file descriptor holding `content` from its start (for bwrap --ro-bind-data)."""
    fd = os.memfd_create("landbot-etc", os.MFD_CLOEXEC)
    try:
        os.write(fd, content)
        os.lseek(fd, 0, os.SEEK_SET)
    except OSError:
        os.close(fd)
        raise
    return fd
