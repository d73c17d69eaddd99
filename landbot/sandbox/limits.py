"""How a sandboxed job is started: join its cgroup, set rlimits, drop to the sandbox uid.

The launcher is a few lines of `/bin/sh` run as root that join the job's cgroup(s) with
their own pid and set rlimits, then `exec setpriv` (uid, gid, no groups, no capabilities,
no_new_privs), which `exec`s a one-line Perl (perl-base is Essential on Debian) that joins
a new, empty session keyring (the supervisor's would otherwise be the job's: whatever keys
landbot or its operator's session hold) and `exec`s bubblewrap. Without a CPU controller,
`nice` goes before setpriv. Everything is one process id, so bubblewrap and all
it starts are in the cgroup from the first instruction, and nothing runs as root after the
`exec`. Using `exec` instead of a Python `preexec_fn` keeps the fork free of the
supervisor's threads (the model proxy runs in the same process). Pure code: it only builds
argument lists.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass

from landbot.errors import LandbotError

# The launcher exits 125 when it cannot join the cgroup or set a limit; nothing of the job
# has run then.
_LAUNCHER = r"""
while [ "$1" != -- ]; do
  echo $$ > "$1" || { echo "landbot: cannot join cgroup $1" >&2; exit 125; }
  shift
done
shift
ulimit -c 0 || exit 125
ulimit -d "$1" || exit 125
ulimit -t "$2" || exit 125
ulimit -f "$3" || exit 125
shift 3
exec "$@"
"""


@dataclass(frozen=True)
class Rlimits:
    """Per-process backstops; the cgroup is the real cap.

    - core 0: a crash leaves no core file with the job's memory in the work tree;
    - data (private writable memory of ONE process) at twice the cgroup cap: it only bites
      when the cgroup is missing, and never pre-empts the cgroup's OOM kill (which is how
      the job learns it hit the cap). Not RLIMIT_AS: JavaScript engines reserve tens of GB
      of address space they never touch;
    - cpu seconds: wall-clock timeout times the cores, plus slack;
    - file size (RLIMIT_FSIZE, in the 512-byte blocks of dash's `ulimit -f`) at the disk
      cap when there is one: no file, not even a sparse one, is larger than the work
      tree's file system (a write past it gets SIGXFSZ, exit 153); "unlimited" otherwise;
    - not RLIMIT_NPROC: it counts every process of the uid on the host (all concurrent
      jobs share the uid), so it would cap the wrong thing; the pids cgroup does it.
    """

    data_kib: int
    cpu_seconds: int
    fsize_blocks: int | None = None  # 512-byte blocks; None: unlimited


def rlimits_for(
    timeout: float, memory_mb: int, cpus: float, fsize_mb: int | None = None
) -> Rlimits:
    return Rlimits(
        data_kib=2 * memory_mb * 1024,
        cpu_seconds=math.ceil(math.ceil(timeout) * max(cpus, 0.01)) + 10,
        fsize_blocks=fsize_mb * 2048 if fsize_mb else None,
    )


def host_cores() -> int:
    """The cores this process may run on (its affinity, as a container's cpuset sets it)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except OSError:
        return os.cpu_count() or 1


def cpu_cap(cpus: float | None, cores: int | None = None) -> float:
    """One job's CPU cap in cores: `[sandbox] cpus` when set, else half the host's cores
    (1.0 of 2, 0.5 of 1), so a job (or two) never takes every core of a small host from
    the webhook receiver, the worker and the model proxy."""
    if cpus is not None:
        return cpus
    return (cores if cores is not None else host_cores()) / 2


# keyctl(2)'s number per machine (Perl's syscall.ph is not in perl-base).
KEYCTL_NR = {"x86_64": 250, "aarch64": 219, "armv7l": 311, "i686": 288, "riscv64": 219}
KEYCTL_JOIN_SESSION_KEYRING = 1
_KEYRING = (
    "syscall($ARGV[0] + 0, $ARGV[1] + 0, 0) >= 0 or do {"
    ' print STDERR "landbot: cannot join a new session keyring: $!\\n"; exit 125 };'
    " splice @ARGV, 0, 2;"
    ' exec {$ARGV[0]} @ARGV or do { print STDERR "landbot: cannot run $ARGV[0]: $!\\n";'
    " exit 125 }"
)


def keyring_argv(perl: str, machine: str) -> list[str]:
    """Join a new anonymous session keyring, then exec the rest of the command line."""
    nr = KEYCTL_NR.get(machine)
    if nr is None:
        raise LandbotError(
            f"no keyctl syscall number known for {machine}; add it to "
            "landbot/sandbox/limits.py KEYCTL_NR"
        )
    return [perl, "-e", _KEYRING, str(nr), str(KEYCTL_JOIN_SESSION_KEYRING)]


NICENESS = 10  # the fallback when the host has no CPU controller


def nice_argv(nice: str) -> list[str]:
    return [nice, "-n", str(NICENESS)]


def setpriv_argv(setpriv: str, uid: int, gid: int) -> list[str]:
    """Drop to uid:gid with no supplementary groups, no capabilities and no_new_privs."""
    return [
        setpriv,
        f"--reuid={uid}",
        f"--regid={gid}",
        "--clear-groups",
        "--inh-caps=-all",
        "--bounding-set=-all",
        "--no-new-privs",
        "--",
    ]


def launcher_argv(
    cgroup_procs: Sequence[str], limits: Rlimits, then: Sequence[str], sh: str = "/bin/sh"
) -> list[str]:
    """`sh -c LAUNCHER` joining `cgroup_procs` files, setting `limits`, then exec `then`."""
    if any(path == "--" for path in cgroup_procs):
        raise ValueError("a cgroup path cannot be '--'")
    return [
        sh,
        "-c",
        _LAUNCHER,
        "landbot-launch",
        *cgroup_procs,
        "--",
        str(limits.data_kib),
        str(limits.cpu_seconds),
        str(limits.fsize_blocks) if limits.fsize_blocks is not None else "unlimited",
        *then,
    ]
