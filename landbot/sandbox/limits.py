"""How a sandboxed job is started: join its cgroup, set rlimits, drop to the sandbox uid.

The launcher is a few lines of `/bin/sh` run as root that join the job's cgroup(s) with
their own pid and set rlimits, then `exec setpriv` (uid, gid, no groups, no capabilities,
no_new_privs) which `exec`s bubblewrap. Everything is one process id, so bubblewrap and all
it starts are in the cgroup from the first instruction, and nothing runs as root after the
`exec`. Using `exec` instead of a Python `preexec_fn` keeps the fork free of the
supervisor's threads (the model proxy runs in the same process). Pure code: it only builds
argument lists.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

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
shift 2
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
    - not RLIMIT_NPROC: it counts every process of the uid on the host (all concurrent
      jobs share the uid), so it would cap the wrong thing; the pids cgroup does it.
    """

    data_kib: int
    cpu_seconds: int


def rlimits_for(timeout: float, memory_mb: int, cpus: int) -> Rlimits:
    return Rlimits(
        data_kib=2 * memory_mb * 1024,
        cpu_seconds=math.ceil(timeout) * max(cpus, 1) + 10,
    )


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
        *then,
    ]
