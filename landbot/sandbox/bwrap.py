"""What the sandbox can see, as a bubblewrap command line (pure code, no I/O).

The sandbox root is bubblewrap's own empty tmpfs, made read-only once set up. Into it go:
the system folders a toolchain needs (read-only), an allowlist of `/etc` entries and the
files generated for it (etc.py), what the operator lists (read-only), the
work tree at its own path (read-write) with `.git/hooks` and `.git/config` read-only, a
private `/tmp` and `HOME` of a bounded size, fresh `/proc` and `/dev`, and the proxy's
socket. Nothing else of the host exists inside. The seccomp filter (seccomp.py) arrives as a
file descriptor.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from dataclasses import dataclass

from landbot.errors import LandbotError
from landbot.sandbox.env import SANDBOX_HOME
from landbot.sandbox.etc import ETC, EtcEntry

# Read-only system folders; those absent on the host are skipped, symlinks (merged /usr)
# are recreated as symlinks. /etc is not one: only its allowlisted entries are bound.
SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
PRIVATE_TMPFS = ("/tmp", SANDBOX_HOME)
MODEL_SOCKET_IN_SANDBOX = "/run/landbot/model.sock"
HOSTNAME = "landbot-sandbox"

# Namespaces: every kind bubblewrap knows (user, pid, net, ipc, uts, cgroup), and no
# nested user namespace, so the job cannot gain capabilities of its own.
NAMESPACE_FLAGS = ("--unshare-all", "--unshare-user", "--disable-userns")
# Kill the sandbox when its supervisor dies; own session, so the job cannot push input to
# the supervisor's terminal (TIOCSTI).
LIFETIME_FLAGS = ("--die-with-parent", "--new-session")

# Folders the work tree and extra read-only paths may never be, or be inside of.
_FORBIDDEN_ROOTS = ("/proc", "/sys", "/dev", ETC)


@dataclass(frozen=True)
class SystemPath:
    path: str
    symlink: str | None = None  # the link's target when the host path is a symlink


@dataclass(frozen=True)
class MountPlan:
    workdir: str  # a real (resolved) absolute path
    system: tuple[SystemPath, ...]
    read_only: tuple[str, ...] = ()  # operator's paths and the command's folder, resolved
    protected: tuple[str, ...] = ()  # inside the work tree, bound read-only
    pinned: tuple[str, ...] = ()  # inside the work tree, bound onto themselves (see below)
    model_socket: str | None = None  # host path of the proxy's unix socket
    etc: tuple[EtcEntry, ...] = ()  # the /etc allowlist
    data_files: tuple[tuple[int, str], ...] = ()  # (fd, path inside): generated files
    seccomp_fd: int | None = None  # the compiled filter, for --seccomp
    tmp_bytes: int | None = None  # size of the private /tmp and HOME each


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def check_workdir(path: str) -> None:
    """Refuse a work tree that would expose or hide more than itself."""
    if not posixpath.isabs(path) or posixpath.normpath(path) != path:
        raise LandbotError(f"work tree {path} must be a normalized absolute path")
    depth = len([p for p in path.split("/") if p])
    if depth < 2:
        # `/`, `/tmp`, `/srv`…: binding it would show the host (and hide the private /tmp).
        raise LandbotError(
            f"work tree {path} is too close to / to be bound into the sandbox; "
            "use a folder of its own, e.g. /srv/landbot/work/JOB"
        )
    for root in (*SYSTEM_PATHS, *_FORBIDDEN_ROOTS, SANDBOX_HOME):
        if _within(path, root) or _within(root, path):
            raise LandbotError(
                f"work tree {path} overlaps {root}, which the sandbox sets up itself; "
                "use a folder of its own, e.g. /srv/landbot/work/JOB"
            )


def check_read_only(path: str, workdir: str) -> None:
    """Refuse an extra read-only path that would show the host wholesale."""
    if not posixpath.isabs(path) or posixpath.normpath(path) != path:
        raise LandbotError(f"read-only path {path} must be a normalized absolute path")
    if path == "/":
        raise LandbotError("read-only path / would show the whole host; list narrower paths")
    for root in (*_FORBIDDEN_ROOTS, *PRIVATE_TMPFS):
        if _within(root, path):
            raise LandbotError(
                f"read-only path {path} contains {root}, which the sandbox keeps private; "
                "list a narrower path in [sandbox] read_only"
            )
    if _within(workdir, path) and path != workdir:
        raise LandbotError(
            f"read-only path {path} contains the work tree {workdir} (and so other jobs' "
            "work trees); list a narrower path in [sandbox] read_only"
        )


def bwrap_argv(
    bwrap: str, plan: MountPlan, command: Sequence[str], *, status_fd: int | None = None
) -> list[str]:
    """The full bubblewrap command line that runs `command` under `plan`."""
    check_workdir(plan.workdir)
    argv = [bwrap, *NAMESPACE_FLAGS, *LIFETIME_FLAGS, "--hostname", HOSTNAME]
    for sp in plan.system:
        if sp.symlink is not None:
            argv += ["--symlink", sp.symlink, sp.path]
        else:
            argv += ["--ro-bind", sp.path, sp.path]
    for entry in plan.etc:
        if entry.symlink is not None:
            argv += ["--symlink", entry.symlink, entry.path]
        else:
            argv += ["--ro-bind", entry.source, entry.path]
    for fd, path in plan.data_files:
        argv += ["--perms", "0644", "--ro-bind-data", str(fd), path]
    argv += ["--proc", "/proc", "--dev", "/dev"]
    # Private, empty /tmp and HOME before the binds, so a work tree under /tmp is bound on
    # top of the private /tmp and nothing else of the host's /tmp shows.
    for tmp in PRIVATE_TMPFS:
        if plan.tmp_bytes is not None:
            argv += ["--size", str(plan.tmp_bytes)]
        argv += ["--tmpfs", tmp]
    for path in plan.read_only:
        check_read_only(path, plan.workdir)
        if _within(path, plan.workdir):
            continue  # already visible (read-write) as part of the work tree
        argv += ["--ro-bind", path, path]
    argv += ["--bind", plan.workdir, plan.workdir]
    for path in plan.pinned:
        # A folder bound onto itself is a mount point: the job can write inside it but
        # cannot rename or replace it (EBUSY), so `.git` stays the folder whose hooks and
        # config are read-only.
        _require_inside(path, plan.workdir)
        argv += ["--bind", path, path]
    for path in plan.protected:
        _require_inside(path, plan.workdir)
        argv += ["--ro-bind", path, path]
    if plan.model_socket is not None:
        argv += ["--ro-bind", plan.model_socket, MODEL_SOCKET_IN_SANDBOX]
    # Last: the sandbox's own root (bubblewrap's tmpfs) read-only, so the job can create
    # nothing outside the work tree, /tmp and HOME.
    argv += ["--remount-ro", "/"]
    if plan.seccomp_fd is not None:
        argv += ["--seccomp", str(plan.seccomp_fd)]
    if status_fd is not None:
        argv += ["--json-status-fd", str(status_fd)]
    argv += ["--chdir", plan.workdir, "--", *command]
    return argv


def _require_inside(path: str, workdir: str) -> None:
    if not _within(path, workdir) or path == workdir:
        raise LandbotError(f"{path} is not inside the work tree {workdir}")
