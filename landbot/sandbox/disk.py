"""A disk cap for a work tree the operator names (`landbot sandbox run --workdir DIR`,
`landbot fixer run --workdir DIR`, which is what the Actions backend runs on a runner).

The worker's jobs already live on a file system of their own (git/workspace.py: a sparse
ext4 image of `[sandbox] disk_mb`, loop-mounted). An operator's folder is the operator's,
on whatever disk holds it, so here the same kind of image is made and mounted *over* DIR
in a private mount namespace of one thread (nobody else on the host sees the mount, and
it goes away with the thread, whatever happens):

1. the operator's DIR is bind-mounted aside (`<image folder>/tree`), then the image over
   DIR: the job sees its work tree at DIR's own path;
2. treecopy.py, in the sandbox as the sandbox uid, copies DIR onto the image;
3. the job runs on it (every sandbox of the run: `fixer run` reads the checkout's state,
   runs the agent and exports its commits there), with RLIMIT_FSIZE at the cap, so no file
   is larger than the image (not even a sparse one);
4. treecopy.py copies the tree back onto DIR (`.git/config` and `.git/hooks`, read-only to
   the job, are left alone), refusing before it writes anything when that is over the cap
   (hard links and sparse files count in full), then the image is unmounted and removed.

So a run adds at most the cap to the disk that holds DIR, and while it runs at most the cap
again to the one that holds the image (/var/tmp). A run holds a lock (flock) on its image
folder while it lasts; SIGTERM ends it as Ctrl-C does (the job is killed, the image
removed), and what a SIGKILLed run left (its lock is free then) is removed by the next
capped run, never a folder another live run holds. Cost: DIR is copied twice (the second
time only what changed); `--disk 0` (`[sandbox] disk_mb = 0`) runs on DIR itself, uncapped.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

from landbot.errors import LandbotError

DEFAULT_DISK_MB = 10240  # as SandboxSettings.disk_mb and git/workspace.py's jobs
MIN_DISK_MB = 8  # below this mkfs.ext4 makes no useful file system
COPY_MEMORY_MB = 256
COPY_FLOOR_S = 60.0  # a copy's timeout: this, plus the cap at COPY_MB_PER_S
COPY_MB_PER_S = 20.0
LOCAL_TIMEOUT = 120.0  # mkfs, mount
SKIP_BACK = (".git/config", ".git/hooks")  # the operator's, read-only to the job
MKFS = "mkfs.ext4"
MOUNT = "mount"
_CLONE_NEWNS = 0x00020000
_MS_REC = 1 << 14
_MS_PRIVATE = 1 << 18
_MNT_DETACH = 2
IMAGE_PREFIX = "landbot-disk-"  # <image_parent()>/landbot-disk-<pid>-<random>/
# A folder is made under the hidden name, locked, then renamed to IMAGE_PREFIX...: so every
# folder the sweep looks at is locked from the moment it has that name while its run lives.
NEW_PREFIX = "." + IMAGE_PREFIX
NEW_STALE_S = 60.0  # a hidden one this old lost its run between mkdtemp and rename (empty)
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC

T = TypeVar("T")


def cap_line(command: str, disk_mb: int) -> str:
    """The line a capped (or uncapped) run prints when it starts (pure)."""
    if not disk_mb:
        return (
            f"landbot {command}: disk NOT capped (--disk 0 / [sandbox] disk_mb = 0): the "
            "command can fill the file system that holds the work tree"
        )
    return (
        f"landbot {command}: disk capped at {disk_mb} MB (the work tree runs on an ext4 "
        f"file system of {disk_mb} MB of its own and is copied back after; RLIMIT_FSIZE "
        f"{disk_mb} MB)"
    )


def copy_timeout(disk_mb: int) -> float:
    """Seconds one copy of a capped tree may take (pure)."""
    return COPY_FLOOR_S + disk_mb / COPY_MB_PER_S


def image_parent() -> Path:
    # On disk (FHS), where /tmp may be a tmpfs that would hold the image in memory.
    return Path("/var/tmp") if os.path.isdir("/var/tmp") else Path(tempfile.gettempdir())


def is_full(path: Path) -> bool:
    """Whether the file system at `path` has (almost) no room left."""
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize < max(st.f_blocks * st.f_frsize // 100, 1 << 16)


def run_capped(workdir: Path, disk_mb: int, *, uid: int, gid: int, body: Callable[[], T]) -> T:
    """`body()` with `workdir` (resolved, owned by the sandbox uid) on a file system of
    `disk_mb` MB, copied back after `body` returns (not when it raises). 0: no cap, `body`
    runs on `workdir` itself. LandbotError when the host cannot do it or a copy fails."""
    if disk_mb < 0:
        raise LandbotError(f"--disk {disk_mb} is negative: give a size in MB, or 0 for no cap")
    if disk_mb == 0:
        return body()
    if disk_mb < MIN_DISK_MB:
        raise LandbotError(
            f"--disk {disk_mb} is too small for a file system: give at least {MIN_DISK_MB} "
            "MB, or 0 for no cap"
        )
    sweep_images()
    with _term_as_interrupt():
        return _in_private_mounts(lambda: _capped(workdir, disk_mb, uid, gid, body))


@contextlib.contextmanager
def _term_as_interrupt() -> Iterator[None]:
    """SIGTERM raises KeyboardInterrupt in the main thread (once: a second one must not
    cut the clean-up short), so a terminated run cleans up as an interrupted one does."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers belong to the main thread; its owner handles them
        return
    fired: list[bool] = []

    def on_term(signum: int, frame: object) -> None:
        if not fired:
            fired.append(True)
            raise KeyboardInterrupt

    old = signal.signal(signal.SIGTERM, on_term)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def sweep_images(parent: Path | None = None) -> list[str]:
    """Remove what killed capped runs left under `parent` (default image_parent()): each
    IMAGE_PREFIX folder of ours whose lock is free (its run is gone). A folder another live
    run holds is kept, a link or another user's folder is not touched, and `tree` (the
    operator's folder's mount point, in a namespace that died with its run) is only
    rmdir'ed, never emptied. Returns the names removed."""
    parent = parent or image_parent()
    removed: list[str] = []
    try:
        pfd = os.open(parent, _DIR_FLAGS)
    except OSError:
        return removed
    try:
        for name in os.listdir(pfd):
            if name.startswith(IMAGE_PREFIX) and _sweep_one(pfd, name):
                removed.append(name)
            elif name.startswith(NEW_PREFIX):
                with contextlib.suppress(OSError):
                    st = os.stat(name, dir_fd=pfd, follow_symlinks=False)
                    if st.st_uid == os.geteuid() and time.time() - st.st_mtime > NEW_STALE_S:
                        os.rmdir(name, dir_fd=pfd)  # empty, or it stays
    finally:
        os.close(pfd)
    return removed


def _sweep_one(pfd: int, name: str) -> bool:
    try:
        fd = os.open(name, _DIR_FLAGS, dir_fd=pfd)
    except OSError:
        return False  # gone, or a link: not ours to follow
    try:
        if os.fstat(fd).st_uid != os.geteuid():
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False  # a live run holds it
        with contextlib.suppress(OSError):
            os.unlink("disk.img", dir_fd=fd)
        with contextlib.suppress(OSError):
            os.rmdir("tree", dir_fd=fd)
        try:
            os.rmdir(name, dir_fd=pfd)
        except OSError:
            return False
        return True
    finally:
        os.close(fd)


def _new_image_folder() -> tuple[Path, int]:
    """A fresh image folder, and the descriptor whose lock says its run is alive (held
    until the run closes it, or dies)."""
    parent = image_parent()
    hidden = Path(tempfile.mkdtemp(prefix=f"{NEW_PREFIX}{os.getpid()}-", dir=parent))
    fd = os.open(hidden, _DIR_FLAGS)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        folder = parent / hidden.name[1:]
        os.rename(hidden, folder)  # a random name: nobody else's
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            hidden.rmdir()
        raise
    return folder, fd


# --- a mount namespace of one thread --------------------------------------------------


def _libc() -> Any:
    return ctypes.CDLL(None, use_errno=True)


def _unshare_mounts() -> None:
    libc = _libc()
    if libc.unshare(_CLONE_NEWNS) != 0 or libc.mount(None, b"/", None, _MS_REC | _MS_PRIVATE, None):
        err = ctypes.get_errno()
        raise LandbotError(
            f"cannot make a private mount namespace for the disk cap ({os.strerror(err)}): "
            "run landbot as root, or pass --disk 0 to run without a disk cap"
        )


def _in_private_mounts(fn: Callable[[], T]) -> T:
    """`fn()` in a new thread with a mount namespace of its own (unshare(CLONE_NEWNS)
    acts on the calling thread only): its mounts are seen by that thread and the
    processes it starts, never by the host, and vanish when the thread ends."""
    box: dict[str, Any] = {}
    done = threading.Event()

    def target() -> None:
        try:
            _unshare_mounts()
            box["value"] = fn()
        except BaseException as exc:  # handed to the caller's thread
            box["error"] = exc
        finally:
            done.set()

    thread = threading.Thread(target=target, name="landbot-disk-cap")
    thread.start()
    # Waited for on an Event, not thread.join(): a join interrupted by a signal marks the
    # thread as ended although it runs (CPython 3.11, bpo-45274's fix), so a second join
    # returned at once and the process exited before the thread had cleaned up.
    try:
        done.wait()
    except KeyboardInterrupt:
        # Only the main thread gets the signal: end the job the thread started, whose
        # sandbox then ends in the usual way, and let the thread clean up.
        _kill_children(thread.native_id)
        done.wait()
        thread.join()
        raise
    thread.join()
    if "error" in box:
        raise box["error"]
    value: T = box["value"]
    return value


def _kill_children(tid: int | None) -> None:
    with contextlib.suppress(OSError):
        pids = Path(f"/proc/self/task/{tid}/children").read_text().split()
        for pid in pids:  # each started in a session (process group) of its own
            with contextlib.suppress(OSError):
                os.killpg(int(pid), signal.SIGKILL)


# --- the image ------------------------------------------------------------------------


def _run(argv: Sequence[str], what: str) -> None:
    fix = "or pass --disk 0 to run without a disk cap"
    try:
        done = subprocess.run(argv, capture_output=True, timeout=LOCAL_TIMEOUT, check=False)
    except FileNotFoundError:
        raise LandbotError(
            f"{argv[0]} is not installed and the disk cap needs it: install "
            f"{'e2fsprogs' if argv[0] == MKFS else 'mount'}, {fix}"
        ) from None
    except subprocess.TimeoutExpired:
        raise LandbotError(f"{what} timed out, {fix}") from None
    if done.returncode != 0:
        lines = done.stderr.decode(errors="replace").strip().splitlines()
        raise LandbotError(
            f"{what} failed ({lines[-1] if lines else f'exit {done.returncode}'}): run as "
            f"root with a loop device (`modprobe loop`), {fix}"
        )


def _make_image(image: Path, disk_mb: int, uid: int, gid: int) -> None:
    fd = os.open(image, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.ftruncate(fd, disk_mb << 20)  # sparse: the disk pays only for what is written
    finally:
        os.close(fd)
    # As the worker's images (git/workspace.py): no journal, no blocks reserved for root.
    _run(
        [
            MKFS,
            "-q",
            "-F",
            "-O",
            "^has_journal",
            "-m",
            "0",
            "-E",
            f"nodiscard,root_owner={uid}:{gid}",
            str(image),
        ],
        f"{MKFS} of the work tree's disk image",
    )


def _umount(path: Path) -> None:
    libc = _libc()
    if libc.umount2(str(path).encode(), 0) != 0:
        libc.umount2(str(path).encode(), _MNT_DETACH)  # gone once its last user is


def _capped(workdir: Path, disk_mb: int, uid: int, gid: int, body: Callable[[], T]) -> T:
    folder, lock = _new_image_folder()
    image = folder / "disk.img"
    original = folder / "tree"
    mounted: list[Path] = []
    try:
        os.chmod(folder, 0o711)  # the sandbox uid reaches `tree` (bound in), lists nothing
        _make_image(image, disk_mb, uid, gid)
        original.mkdir(mode=0o755)
        _run([MOUNT, "--rbind", str(workdir), str(original)], "binding the work tree aside")
        mounted.append(original)
        _run(
            [MOUNT, "-t", "ext4", "-o", "loop,nosuid,nodev,noatime", str(image), str(workdir)],
            "mounting the work tree's disk image",
        )
        mounted.append(workdir)
        (workdir / "lost+found").rmdir()  # mkfs's, not the operator's
        free = os.statvfs(workdir)
        room = free.f_bavail * free.f_frsize
        _copy(original, workdir, room, disk_mb, uid, gid, (), "in", workdir)
        value = body()
        _copy(workdir, original, disk_mb << 20, disk_mb, uid, gid, SKIP_BACK, "back", workdir)
        return value
    finally:
        for point in reversed(mounted):
            _umount(point)
        image.unlink(missing_ok=True)
        # rmdir, never rmtree: `tree` may still be the operator's folder if an unmount failed.
        for leftover in (original, folder):
            with contextlib.suppress(OSError):
                leftover.rmdir()
        os.close(lock)  # last: until the folder is gone, no sweep may take it


def _copy(
    src: Path,
    dst: Path,
    budget: int,
    disk_mb: int,
    uid: int,
    gid: int,
    skip: Sequence[str],
    direction: str,
    shown: Path,
) -> None:
    from landbot.sandbox.runner import SYSTEM_PYTHON, run_sandboxed

    source = Path(__file__).with_name("treecopy.py").read_text()
    result = run_sandboxed(
        [SYSTEM_PYTHON, "-I", "-S", "-c", source, str(src), str(dst), str(budget), *skip],
        dst,
        timeout=copy_timeout(disk_mb),
        memory_mb=COPY_MEMORY_MB,
        pids_max=16,
        extra_ro_paths=(src,),
        capture=True,
        uid=uid,
        gid=gid,
        chown=False,
        fsize_mb=disk_mb,
    )
    if result.exit_code == 0:
        return
    lines = (result.stderr or b"").decode(errors="replace").strip().splitlines()
    why = lines[-1] if lines else (result.message() or f"exit {result.exit_code}")
    if result.exit_code == 4 and direction == "in":
        raise LandbotError(
            f"the work tree {shown} does not fit in the disk cap of {disk_mb} MB ({why}); "
            "pass a larger --disk (or [sandbox] disk_mb), or --disk 0 for no cap"
        )
    if result.exit_code == 4:
        raise LandbotError(
            f"the command left more than the disk cap of {disk_mb} MB to copy back ({why}); "
            f"nothing was copied back to {shown}"
        )
    where = "onto its capped file system" if direction == "in" else f"back to {shown}"
    raise LandbotError(f"copying the work tree {where} failed: {why}")
