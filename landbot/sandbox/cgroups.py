"""A cgroup per sandboxed job: memory, pids and CPU caps, OOM detection, teardown.

The CPU cap is a CFS quota (`cpu.cfs_quota_us` over `cpu.cfs_period_us` on v1, `cpu.max`
on v2) where the host has the cpu controller; without it the caller falls back to nice and
RLIMIT_CPU (limits.py), and `JobCgroup.cpu_dir` is None.

cgroup v1 (separate `memory` and `pids` hierarchies) and v2 (one folder with `memory.max`
and `pids.max`) are both supported; v1 is used when it has both controllers, because a
hybrid host's v2 tree then has none. The job's cgroup is made INSIDE the supervisor's own
cgroup, so whatever limits the supervisor has still cover its jobs.

Parsing /proc/self/mountinfo and /proc/self/cgroup is pure; the rest are plain file writes.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from landbot.errors import LandbotError

NAME_PREFIX = "landbot-"


@dataclass(frozen=True)
class CgroupMount:
    fstype: str  # "cgroup" (v1) or "cgroup2"
    root: str  # the cgroup path mounted there
    mountpoint: str
    controllers: frozenset[str]  # v1 only: the controllers of that hierarchy


def parse_mountinfo(text: str) -> list[CgroupMount]:
    mounts = []
    for line in text.splitlines():
        left, sep, right = line.partition(" - ")
        if not sep:
            continue
        fields = left.split()
        tail = right.split()
        if len(fields) < 5 or len(tail) < 3 or tail[0] not in ("cgroup", "cgroup2"):
            continue
        options = frozenset(tail[2].split(",")) if tail[0] == "cgroup" else frozenset()
        mounts.append(
            CgroupMount(
                fstype=tail[0],
                root=_unescape(fields[3]),
                mountpoint=_unescape(fields[4]),
                controllers=options,
            )
        )
    return mounts


def _unescape(field: str) -> str:
    # mountinfo escapes space, tab, newline and backslash as \ooo.
    return field.encode().decode("unicode_escape") if "\\" in field else field


def parse_proc_cgroup(text: str) -> dict[str, str]:
    """Map each v1 controller (and "" for the v2 tree) to the process's cgroup path."""
    own: dict[str, str] = {}
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        for name in controllers.split(",") if controllers else [""]:
            own[name] = path
    return own


def _join(mount: CgroupMount, own_path: str) -> str:
    rel = own_path
    if mount.root != "/" and (own_path == mount.root or own_path.startswith(mount.root + "/")):
        rel = own_path[len(mount.root) :]
    return os.path.normpath(mount.mountpoint + "/" + rel.lstrip("/"))


def v1_parents(mounts: Iterable[CgroupMount], own: dict[str, str]) -> tuple[str, str] | None:
    """The supervisor's memory and pids cgroup folders on a v1 host, or None."""
    found: dict[str, str] = {}
    for m in mounts:
        if m.fstype != "cgroup":
            continue
        for ctl in ("memory", "pids"):
            if ctl in m.controllers and ctl in own and ctl not in found:
                found[ctl] = _join(m, own[ctl])
    if "memory" in found and "pids" in found:
        return found["memory"], found["pids"]
    return None


def v1_cpu_parent(mounts: Iterable[CgroupMount], own: dict[str, str]) -> str | None:
    """The supervisor's cgroup folder in the v1 cpu hierarchy, or None."""
    for m in mounts:
        if m.fstype == "cgroup" and "cpu" in m.controllers and "cpu" in own:
            return _join(m, own["cpu"])
    return None


def v2_parent(mounts: Iterable[CgroupMount], own: dict[str, str]) -> str | None:
    for m in mounts:
        if m.fstype == "cgroup2" and "" in own:
            return _join(m, own[""])
    return None


CPU_PERIOD_US = 100_000


@dataclass
class JobCgroup:
    version: int
    dirs: tuple[Path, ...]  # v1: (memory, pids); v2: (one folder,)
    cpu_dir: Path | None = None  # v1: the cpu hierarchy's folder; v2: dirs[0]; None: no cap

    @property
    def all_dirs(self) -> tuple[Path, ...]:
        extra = () if self.cpu_dir is None or self.cpu_dir in self.dirs else (self.cpu_dir,)
        return (*self.dirs, *extra)

    @property
    def procs_files(self) -> list[str]:
        return [str(d / "cgroup.procs") for d in self.all_dirs]

    def cpu_stat(self) -> dict[str, int]:
        """The cpu controller's counters (nr_periods, nr_throttled, ...), {} without one."""
        if self.cpu_dir is None:
            return {}
        out: dict[str, int] = {}
        with contextlib.suppress(OSError):
            for line in (self.cpu_dir / "cpu.stat").read_text().splitlines():
                name, _, value = line.partition(" ")
                with contextlib.suppress(ValueError):
                    out[name] = int(value)
        return out

    def pids(self) -> set[int]:
        out: set[int] = set()
        for f in self.procs_files:
            with contextlib.suppress(OSError):
                out.update(int(x) for x in Path(f).read_text().split())
        return out

    def oom_kills(self) -> int:
        """How many processes the memory cap killed (0 when the kernel cannot say)."""
        if self.version == 2:
            return _read_key(self.dirs[0] / "memory.events", "oom_kill")
        return _read_key(self.dirs[0] / "memory.oom_control", "oom_kill")

    def hit_limit(self) -> bool:
        """Whether an allocation ever hit the cap (older kernels have no oom_kill count)."""
        if self.version == 2:
            return _read_key(self.dirs[0] / "memory.events", "max") > 0
        return _read_int(self.dirs[0] / "memory.failcnt") > 0

    def memory_peak(self) -> int | None:
        name = "memory.peak" if self.version == 2 else "memory.max_usage_in_bytes"
        value = _read_int(self.dirs[0] / name, default=-1)
        return value if value >= 0 else None

    def kill_all(self) -> None:
        if self.version == 2 and (self.dirs[0] / "cgroup.kill").exists():
            with contextlib.suppress(OSError):
                (self.dirs[0] / "cgroup.kill").write_text("1")
        for pid in self.pids():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)

    def remove(self, timeout: float = 5.0) -> bool:
        """Kill what is left, wait until it is gone (the PID namespace dies
        asynchronously, so an immediate rmdir says "busy"), then remove the folders."""
        deadline = time.monotonic() + timeout
        while True:
            self.kill_all()
            removed = True
            for d in reversed(self.all_dirs):
                if not d.exists():
                    continue
                try:
                    d.rmdir()
                except OSError:
                    removed = False
            if removed or time.monotonic() > deadline:
                return removed
            time.sleep(0.01)


def _read_key(path: Path, key: str) -> int:
    try:
        for line in path.read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == key:
                return int(value)
    except (OSError, ValueError):
        pass
    return 0


def _read_int(path: Path, default: int = 0) -> int:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return default


def _write(path: Path, value: str) -> None:
    with open(path, "w") as f:
        f.write(value)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_stale(parents: Iterable[Path]) -> None:
    """Remove job cgroups left by a supervisor that was killed before its cleanup ran."""
    for parent in parents:
        try:
            entries = list(parent.iterdir())
        except OSError:
            continue
        for entry in entries:
            parts = entry.name.split("-")
            if len(parts) != 3 or not entry.name.startswith(NAME_PREFIX):
                continue
            if not parts[1].isdigit() or _alive(int(parts[1])):
                continue
            for pid in _pids_in(entry):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(OSError):
                entry.rmdir()


def _pids_in(folder: Path) -> list[int]:
    try:
        return [int(x) for x in (folder / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []


def _read_text(path: str) -> str:
    with open(path) as f:
        return f.read()


def cpu_quota_us(cpus: float, period_us: int = CPU_PERIOD_US) -> int:
    # The kernel refuses a quota under 1 ms.
    return max(int(cpus * period_us), 1000)


def create_job_cgroup(
    memory_bytes: int,
    pids_max: int,
    *,
    cpus: float | None = None,
    mountinfo: str | None = None,
    proc_cgroup: str | None = None,
) -> JobCgroup:
    """Make the job's cgroup with its caps, or raise LandbotError with the fix. `cpus`
    (cores, fractional) caps CPU where the host has the controller."""
    mounts = parse_mountinfo(
        mountinfo if mountinfo is not None else _read_text("/proc/self/mountinfo")
    )
    own = parse_proc_cgroup(
        proc_cgroup if proc_cgroup is not None else _read_text("/proc/self/cgroup")
    )
    name = f"{NAME_PREFIX}{os.getpid()}-{os.urandom(4).hex()}"
    v1 = v1_parents(mounts, own)
    if v1 is not None:
        parents = (Path(v1[0]), Path(v1[1]))
        sweep_stale(parents)
        cpu_parent = v1_cpu_parent(mounts, own) if cpus is not None else None
        cpu_dir = Path(cpu_parent) / name if cpu_parent is not None else None
        if cpu_parent is not None:
            sweep_stale([Path(cpu_parent)])
        job = JobCgroup(1, (parents[0] / name, parents[1] / name), cpu_dir)
        _make(job, parents[0])
        try:
            if cpu_dir is not None and cpus is not None:
                _write(cpu_dir / "cpu.cfs_period_us", str(CPU_PERIOD_US))
                _write(cpu_dir / "cpu.cfs_quota_us", str(cpu_quota_us(cpus)))
            mem = job.dirs[0]
            _write(mem / "memory.limit_in_bytes", str(memory_bytes))
            if (mem / "memory.memsw.limit_in_bytes").exists():
                # No escape into swap: memory+swap capped at the same figure.
                _write(mem / "memory.memsw.limit_in_bytes", str(memory_bytes))
            _write(job.dirs[1] / "pids.max", str(pids_max))
        except OSError as exc:
            job.remove(timeout=0)
            raise LandbotError(f"cannot set the job's cgroup limits: {exc}") from None
        return job
    v2 = v2_parent(mounts, own)
    if v2 is not None:
        parent = Path(v2)
        available = _read_text_or_empty(parent / "cgroup.controllers").split()
        if "memory" in available and "pids" in available:
            sweep_stale([parent])
            with_cpu = cpus is not None and "cpu" in available
            _enable_v2_controllers(parent, ("memory", "pids", "cpu") if with_cpu else ())
            job = JobCgroup(2, (parent / name,), parent / name if with_cpu else None)
            _make(job, parent)
            try:
                d = job.dirs[0]
                if with_cpu and cpus is not None:
                    _write(d / "cpu.max", f"{cpu_quota_us(cpus)} {CPU_PERIOD_US}")
                _write(d / "memory.max", str(memory_bytes))
                if (d / "memory.swap.max").exists():
                    _write(d / "memory.swap.max", "0")
                _write(d / "pids.max", str(pids_max))
            except OSError as exc:
                job.remove(timeout=0)
                raise LandbotError(f"cannot set the job's cgroup limits: {exc}") from None
            return job
    raise LandbotError(
        "no cgroup with memory and pids controllers for the sandbox's caps; mount cgroup v1 "
        "memory and pids hierarchies or cgroup v2 with both controllers enabled"
    )


def _read_text_or_empty(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _make(job: JobCgroup, parent: Path) -> None:
    try:
        for d in job.all_dirs:
            d.mkdir()
    except OSError as exc:
        job.remove(timeout=0)
        raise LandbotError(
            f"cannot create the job's cgroup under {parent}: {exc.strerror}; run landbot "
            "as root (or in a cgroup delegated to it)"
        ) from None


def _enable_v2_controllers(parent: Path, wanted: tuple[str, ...] = ()) -> None:
    control = parent / "cgroup.subtree_control"
    enabled = _read_text_or_empty(control).split()
    missing = [c for c in wanted or ("memory", "pids") if c not in enabled]
    if not missing:
        return
    try:
        _write(control, " ".join(f"+{c}" for c in missing))
    except OSError as exc:
        # v2's "no internal processes" rule: a cgroup holding processes cannot hand
        # controllers to children.
        raise LandbotError(
            f"cannot enable {' and '.join(missing)} for child cgroups of {parent}: "
            f"{exc.strerror}; run landbot in a cgroup of its own with those controllers "
            "delegated (e.g. a service with Delegate=yes)"
        ) from None


def job_cgroup_parents() -> list[Path]:
    """The folders job cgroups are made in (for sweeping after a crash)."""
    mounts = parse_mountinfo(_read_text("/proc/self/mountinfo"))
    own = parse_proc_cgroup(_read_text("/proc/self/cgroup"))
    v1 = v1_parents(mounts, own)
    if v1 is not None:
        cpu = v1_cpu_parent(mounts, own)
        return [Path(v1[0]), Path(v1[1]), *([Path(cpu)] if cpu is not None else [])]
    v2 = v2_parent(mounts, own)
    return [Path(v2)] if v2 is not None else []
