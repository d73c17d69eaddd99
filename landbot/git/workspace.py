"""A land-fixer job's checkout: a cached bare mirror per repository, one clone per job.

    workspaces = Workspaces(state_dir / "fixer", git_url=settings.github.git_url,
                            uid=settings.sandbox.uid, gid=settings.sandbox.gid)
    workspaces.prune()                      # what a crashed process left (sweep=True,
                                            # as from_settings gives: before every job)
    with workspaces.job("acme/widgets", 42, head_sha, "main", merge=True,
                        token=client.git_token("acme/widgets")) as ws:
        ws.path          # the work tree: give it to the sandbox
        ws.merge         # for a conflict: the host's merge commit, or the conflicting files

Layout under the root folder:

    mirrors/                 mode 700, root only: the sandbox uid cannot even reach it
      OWNER/REPO.git         bare mirror; fetches only refs/pull/N/head and the base branch
      OWNER/REPO.lock        flock: one fetch, clone or gc at a time per mirror
      OWNER/REPO.trees/SHA   a pristine checkout of SHA, owned by the sandbox uid (overlay)
    images/                  mode 700, root only: one sparse ext4 image per job (disk_mb)
      OWNER.REPO.prN.XXXX.img
    jobs/                    mode 755, so bubblewrap (started as the sandbox uid) can bind
      OWNER.REPO.prN.XXXX/   one job (`Workspace.job_dir`), root-owned, mode 755; with a
                             disk cap, its image loop-mounted here (nosuid, nodev):
        .lock                held while the job lives (prune skips it)
        work/                the work tree, owned by the sandbox uid (`Workspace.path`)
        upper/ overlay/      the overlay's upper layer and scratch folder (overlay jobs)
        clone/ check/        scratch: the clone before it moves, publish's quest checkout

Why a clone and not `git worktree add`: the agent commits inside the sandbox, and a linked
work tree keeps its index, HEAD and objects in the mirror, which the sandbox must neither
see nor write (and, bound elsewhere, could not find). A local clone of the mirror has its
own `.git` folder (whose hooks and config the sandbox binds read-only) and hard-links the
mirror's object files instead of copying them: they stay root-owned and read-only
(`chown_tree` skips files with several links), so nothing the job does reaches the
mirror. `git worktree` is still used on the host, for the checkout `publish` runs
`quest check` in; `prune` cleans up after both.

Writing every file of a big tree is most of a job's set-up, so where the host allows it
(root, overlayfs) the files come from an overlay instead: the lower layer is a pristine
checkout of one commit, made once per repository and shared read-only by every job; the
job's `.git` and whatever it changes live in its own upper layer. Checking out the PR head
then rewrites only the files that differ from the pristine commit, and the index, already
refreshed against the pristine files once, needs no re-hashing. Without overlayfs (no
permission to mount) every job checks out the whole tree, with the same result.

With a disk cap (`disk_mb`, the default) everything a job writes, and everything the host
writes for it, is on the job's own file system: a job that fills it gets ENOSPC, the
host's disk stays as it was, and removing the job is an unmount. The clone then crosses
file systems and git copies the mirror's object files instead of linking them.

Every git command here goes through `run_git`: hardened (`HARDENING`, `git_env`: no hook,
no filter, pager, editor, helper or transport that the trees, the repositories or the
host's own git configuration could name), with a timeout that kills git's whole process
group, and refused on a repository whose layout the host did not make (`check_layout`,
`check_config`), because the trees hold untrusted content. A token goes to git through
the environment of that one command (`GIT_CONFIG_COUNT`, an `http.extraHeader`), never
through argv, a URL or a file.
"""

from __future__ import annotations

import base64
import contextlib
import ctypes
import errno
import fcntl
import logging
import os
import re
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from landbot import logs
from landbot.errors import LandbotError
from landbot.git.ownership import chown_tree

log = logging.getLogger("landbot.git.workspace")

# Applied to every host-side git command. The trees and the repositories' content are
# untrusted, so nothing they name may run a program or reach a host on the host's behalf.
HARDENING: tuple[tuple[str, str], ...] = (
    ("core.hooksPath", "/dev/null"),  # no hook of any repository (receive-pack's too)
    ("core.fsmonitor", "false"),  # a command git would run on every status
    ("credential.helper", ""),  # the token comes per command, never from a helper
    # Every transport refused but the one a network command names on its own command line
    # (run_git adds `protocol.<scheme>.allow`): no submodule, promisor or rewritten URL
    # reaches another host or a local path, and `ext::` never runs a command.
    ("protocol.allow", "never"),
    ("protocol.ext.allow", "never"),
    ("submodule.recurse", "false"),
    ("fetch.recurseSubmodules", "false"),
    ("commit.gpgSign", "false"),  # gpg is a program too
    ("gc.autoDetach", "false"),  # no background gc outliving the mirror lock
    ("maintenance.autoDetach", "false"),
    ("advice.detachedHead", "false"),
    ("core.pager", "cat"),  # never a pager (GIT_PAGER too, in git_env)
    ("core.editor", "false"),  # never an editor: a command that wants one fails
    ("sequence.editor", "false"),
    ("core.sshCommand", "false"),  # ssh is refused above; no ssh program either
    ("core.askPass", ""),  # no password prompt program (GIT_ASKPASS too)
    ("core.attributesFile", "/dev/null"),  # not ~/.config/git/attributes
    # A repository found by walking up from the working directory (a bare repository
    # planted inside a tree) is refused; landbot always names its repository.
    ("safe.bareRepository", "explicit"),
    # Only used with alternates, which check_layout refuses; `true` lists no refs and
    # runs nothing a repository chose.
    ("core.alternateRefsCommand", "true"),
    # uploadpack.packObjectsHook is honoured only from system, global and command-line
    # config: the first two are off (git_env), the last is this list.
)

# Variables from the caller's environment that would point git somewhere else or make it
# run a program (git_env then sets its own values for some of them).
_GIT_ENV_DROPPED = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_CONFIG",
    "GIT_CONFIG_SYSTEM",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
    "GIT_EXTERNAL_DIFF",
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_PROXY_COMMAND",
    "GIT_ALLOW_PROTOCOL",  # it would override protocol.allow
    "GIT_EXEC_PATH",
    "GIT_TEMPLATE_DIR",
    "GIT_SHALLOW_FILE",
    "GIT_REPLACE_REF_BASE",
    "GIT_ATTR_SOURCE",
    "SSH_ASKPASS",
)

# What git_env sets whatever the caller's environment says.
_GIT_ENV_FIXED = {
    "GIT_CONFIG_NOSYSTEM": "1",  # not /etc/gitconfig
    "GIT_CONFIG_GLOBAL": os.devnull,  # not ~/.gitconfig nor ~/.config/git/config
    "GIT_ATTR_NOSYSTEM": "1",  # not /etc/gitattributes
    "GIT_TERMINAL_PROMPT": "0",  # never wait for a password
    "GIT_ASKPASS": "",  # set and empty: git asks no program (nor core.askPass, SSH_ASKPASS)
    "GIT_PAGER": "cat",
    "GIT_EDITOR": "false",
    "GIT_SEQUENCE_EDITOR": "false",
    "GIT_NO_REPLACE_OBJECTS": "1",  # refs/replace cannot rewrite what we read
}

# Timeouts (seconds) of one host git command, by what it does: network commands and those
# that write a whole tree get the long one. A caller may pass its own.
NETWORK_TIMEOUT = 300.0
LOCAL_TIMEOUT = 120.0
_SLOW_COMMANDS = frozenset(
    {"fetch", "clone", "push", "ls-remote", "checkout", "checkout-index", "merge", "worktree"}
)
_NETWORK_COMMANDS = frozenset({"fetch", "clone", "push", "ls-remote"})
_PROTOCOLS = frozenset({"https", "http", "file"})  # what landbot's git_url may use
_KILL_GRACE = 10.0  # after a kill, how long to wait for the process group's pipes to close

# Each job's folder is a file system of this many MB (`[sandbox] disk_mb`, 0: no cap):
# 10 GiB holds the checkout, dependencies and build output of a large repository; the
# image is sparse, so the host's disk pays only for what a job writes.
DEFAULT_DISK_MB = 10240
MKFS = "mkfs.ext4"
MOUNT = "mount"

QUEST_ATTRIBUTES = "quest/**/*.md merge=quest"  # as landbot.quest.install.ATTRIBUTES_LINE


@dataclass(frozen=True)
class Identity:
    """Who the host's own commits (a clean merge) are by."""

    name: str = "landbot"
    email: str = "landbot@users.noreply.github.com"


LANDBOT = Identity()


class WorkspaceError(LandbotError):
    """A job's checkout could not be made; the message says what failed and what to do."""


# --- running git ----------------------------------------------------------------------


def auth_config(token: str | None) -> list[tuple[str, str]]:
    """The config entries that authenticate one git command over HTTPS (GitHub's scheme)."""
    if not token:
        return []
    basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
    return [("http.extraHeader", f"Authorization: Basic {basic}")]


def git_env(
    config: Sequence[tuple[str, str]] = (),
    base: Mapping[str, str] | None = None,
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """An environment for one git command: the caller's, without variables that redirect
    git, with `config` passed as command-scope settings (GIT_CONFIG_COUNT)."""
    env = {
        k: v
        for k, v in (os.environ if base is None else base).items()
        if k not in _GIT_ENV_DROPPED
        and not k.startswith("GIT_CONFIG_KEY_")
        and not k.startswith("GIT_CONFIG_VALUE_")
    }
    env.update(_GIT_ENV_FIXED)
    if config:
        env["GIT_CONFIG_COUNT"] = str(len(config))
        for i, (key, value) in enumerate(config):
            env[f"GIT_CONFIG_KEY_{i}"] = key
            env[f"GIT_CONFIG_VALUE_{i}"] = value
    if extra:
        env.update(extra)
    return env


def redact(text: str, token: str | None) -> str:
    """`text` with the token (and its Basic-auth form) replaced by ***."""
    if not token:
        return text
    for secret in (token, base64.b64encode(f"x-access-token:{token}".encode()).decode()):
        text = text.replace(secret, "***")
    return text


def _subcommand(args: Sequence[str]) -> str:
    return next((a for a in args if not a.startswith("-")), "")


def remote_protocols(args: Sequence[str]) -> set[str]:
    """The transports of the remotes a network command names on its command line (a URL's
    scheme, `file` for a path): the only ones run_git lets it use."""
    found: set[str] = set()
    if _subcommand(args) not in _NETWORK_COMMANDS:
        return found
    for arg in args:
        scheme, sep, _ = arg.partition("://")
        if sep and scheme.isalnum():
            found.add(scheme.lower())
        elif arg.startswith("/"):
            found.add("file")
    return found & _PROTOCOLS


def run_git(
    args: Sequence[str],
    *,
    cwd: Path | None = None,
    git_dir: Path | None = None,
    token: str | None = None,
    config: Sequence[tuple[str, str]] = (),
    env: Mapping[str, str] | None = None,
    input: bytes | None = None,
    check: bool = True,
    what: str | None = None,
    timeout: float | None = None,
    protocols: Sequence[str] = (),
) -> subprocess.CompletedProcess[bytes]:
    """Run one host-side git command, hardened and bounded in time; raise WorkspaceError
    when `check` and it fails (git's message, token redacted), and whatever `check` when it
    outlives `timeout` (default: NETWORK_TIMEOUT or LOCAL_TIMEOUT by command) or the
    repository's layout is refused (check_layout). `protocols` adds transports to those of
    the remotes named in `args`."""
    if git_dir is not None:
        check_layout(git_dir)
    elif cwd is not None and os.path.lexists(cwd / ".git"):
        check_layout(cwd / ".git")
    sub = _subcommand(args)
    if timeout is None:
        timeout = NETWORK_TIMEOUT if sub in _SLOW_COMMANDS else LOCAL_TIMEOUT
    allowed = sorted(remote_protocols(args) | set(protocols))
    argv = ["git"]
    for key, value in (*HARDENING, *((f"protocol.{p}.allow", "always") for p in allowed)):
        argv += ["-c", f"{key}={value}"]
    if git_dir is not None:
        argv.append(f"--git-dir={git_dir}")
    argv += list(args)
    label = what or f"git {sub or 'command'}"
    try:
        # Its own process group: git's children (upload-pack, a merge driver, index-pack)
        # die with it on a timeout.
        proc = subprocess.Popen(
            argv,
            # No cwd: "/", so git never finds a repository in landbot's own folder.
            cwd=cwd if cwd is not None else "/",
            stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=git_env([*config, *auth_config(token)], extra=env),
            start_new_session=True,
        )
    except FileNotFoundError:
        raise WorkspaceError("git is not installed: install git (`apt-get install git`)") from None
    try:
        stdout, stderr = proc.communicate(input, timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        raise WorkspaceError(
            f"{label} timed out after {timeout:g} s and was killed: a special file (FIFO, "
            "device) where git expects a regular one, or a remote that does not answer; "
            "look at the repository, or pass a longer timeout"
        ) from None
    except BaseException:
        _kill_group(proc)
        raise
    done = subprocess.CompletedProcess(argv, proc.returncode, stdout, stderr)
    if check and done.returncode != 0:
        message = redact(done.stderr.decode(errors="replace").strip(), token)
        last = message.splitlines()[-1] if message else f"exit {done.returncode}"
        raise WorkspaceError(f"{label} failed: {last}")
    return done


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    try:
        proc.communicate(timeout=_KILL_GRACE)
    except subprocess.TimeoutExpired:
        # A child left the group and still holds a pipe: stop reading, reap git itself.
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
        proc.wait()


# --- what the host accepts of a repository it runs git on ---------------------------

# Files of a repository folder that make git read another repository, other objects or
# another history. The host never writes them in a mirror or a job's clone, and a fetch
# cannot create them: present, someone else did.
_PLANTED = (
    "commondir",  # the repository's refs, objects and config are elsewhere
    "gitdir",  # a linked work tree's back-pointer, meaningless at the top
    "objects/info/alternates",  # objects of another repository (another's private ones)
    "objects/info/http-alternates",
    "info/grafts",  # rewrites parents: another history than the objects say
    "shallow",  # cut-off history (and GIT_SHALLOW_FILE is dropped)
)
# Files git opens and reads to the end: a symlink would read a host file, a FIFO or a
# device would block git.
_REGULAR = (
    "HEAD",
    "config",
    "index",
    "packed-refs",
    "info/attributes",
    "info/exclude",
    "info/sparse-checkout",
    "objects/info/packs",
)


def check_layout(git_dir: Path) -> None:
    """Refuse a repository folder whose layout the host did not make (_PLANTED, a symlink
    or special file where git expects a regular file, a `.git` that points elsewhere).

    A `.git` file is accepted only as `git worktree add` writes it: pointing at
    `<repository>/worktrees/<name>`, whose `commondir` leads back to a repository that
    passes this check itself."""
    st = _lstat(git_dir)
    if st is None:
        return  # nothing there: git's own error says so
    if stat.S_ISLNK(st.st_mode):
        raise WorkspaceError(f"{git_dir} is a symbolic link: refusing to run git on it")
    if stat.S_ISREG(st.st_mode) and git_dir.name == ".git":
        _check_linked(git_dir)
        return
    if not stat.S_ISDIR(st.st_mode):
        raise WorkspaceError(f"{git_dir} is not a folder: refusing to run git on it")
    for name in _PLANTED:
        if os.path.lexists(git_dir / name):
            raise WorkspaceError(
                f"{git_dir / name} exists, and landbot never writes it: refusing to run git "
                "in that repository; remove the repository (prune) and let landbot make it again"
            )
    for name in _REGULAR:
        entry = _lstat(git_dir / name)
        if entry is not None and not stat.S_ISREG(entry.st_mode):
            raise WorkspaceError(
                f"{git_dir / name} is not a regular file: refusing to run git in that "
                "repository; remove the repository and let landbot make it again"
            )
    for name in ("objects", "refs", "info", "hooks"):
        entry = _lstat(git_dir / name)
        if entry is not None and stat.S_ISLNK(entry.st_mode):
            raise WorkspaceError(f"{git_dir / name} is a symbolic link: refusing to run git there")


def _check_linked(dot_git: Path) -> None:
    problem = f"{dot_git} is a file that does not point at a linked work tree of a repository"
    try:
        with open(dot_git, "rb", buffering=0) as f:
            text = f.read(4097).decode()
    except (OSError, UnicodeDecodeError):
        raise WorkspaceError(f"{problem}: refusing to run git there") from None
    target_text = text.removeprefix("gitdir: ").strip()
    if not text.startswith("gitdir: ") or "\n" in target_text or len(text) > 4096:
        raise WorkspaceError(f"{problem}: refusing to run git there")
    target = Path(os.path.normpath(dot_git.parent / target_text))
    common = target.parent.parent
    if target.parent.name != "worktrees" or not os.path.isdir(target):
        raise WorkspaceError(f"{problem}: refusing to run git there")
    try:
        named = (target / "commondir").read_text().strip()
    except OSError:
        raise WorkspaceError(f"{problem}: refusing to run git there") from None
    if Path(os.path.normpath(target / named)) != common:
        raise WorkspaceError(f"{problem}: refusing to run git there")
    check_layout(common)


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None


# Keys a repository config the host wrote may hold (git's own at init and clone, and
# landbot's); anything else, such as filter.*, diff.*.command or textconv, merge.*.driver,
# include.*, core.fsmonitor or a url.*.insteadOf, was put there by someone else and would
# run a program or redirect git on the host. The quest merge driver comes per command.
_CONFIG_ALLOWED = re.compile(
    r"core\.(repositoryformatversion|filemode|bare|logallrefupdates|symlinks|ignorecase"
    r"|precomposeunicode)"
    r"|extensions\.objectformat"
    r"|user\.(name|email)"
    r"|gc\.auto|maintenance\.auto"
    r"|(transfer|fetch|receive)\.fsckobjects"
    r"|remote\.[^\n]+\.(url|fetch)"
    r"|branch\.[^\n]+\.(remote|merge)"
)


def check_config(git_dir: Path) -> None:
    """Refuse a repository config with any key the host does not write (_CONFIG_ALLOWED)."""
    path = git_dir / "config"
    if not path.is_file():
        return
    listed = run_git(
        ["config", "--file", str(path), "--no-includes", "--list", "-z"],
        what=f"reading {path}",
    ).stdout
    for record in listed.split(b"\0"):
        key = record.partition(b"\n")[0].decode("utf-8", "replace")
        if key and not _CONFIG_ALLOWED.fullmatch(key.lower()):
            raise WorkspaceError(
                f"{path} sets {key}, which landbot never writes (it could run a program on "
                "the host): refusing that repository; remove it and let landbot make it again"
            )


def rev_parse(git_dir: Path, rev: str) -> str | None:
    done = run_git(
        ["rev-parse", "--verify", "--quiet", "--end-of-options", rev], git_dir=git_dir, check=False
    )
    return done.stdout.decode().strip() or None if done.returncode == 0 else None


def has_commit(git_dir: Path, sha: str) -> bool:
    return rev_parse(git_dir, f"{sha}^{{commit}}") is not None


def is_ancestor(git_dir: Path, ancestor: str, descendant: str) -> bool:
    done = run_git(
        ["merge-base", "--is-ancestor", ancestor, descendant], git_dir=git_dir, check=False
    )
    if done.returncode not in (0, 1):
        raise WorkspaceError(
            f"git merge-base failed: {done.stderr.decode(errors='replace').strip()}"
        )
    return done.returncode == 0


def check_branch_name(name: str) -> None:
    """Refuse a branch name git would not accept (it ends up in refspecs and argv)."""
    if not name or name.startswith("-"):
        raise WorkspaceError(f"branch name {name!r} is not valid")
    done = run_git(["check-ref-format", f"refs/heads/{name}"], check=False)
    if done.returncode != 0:
        raise WorkspaceError(f"branch name {name!r} is not a valid git branch name")


def split_repo(repo: str) -> tuple[str, str]:
    owner, _, name = repo.partition("/")
    for part in (owner, name):
        if not part or part in (".", "..") or "/" in part or part.startswith("."):
            raise WorkspaceError(f"repository {repo!r} is not OWNER/NAME")
    return owner, name


def repo_url(template: str, repo: str) -> str:
    owner, name = split_repo(repo)
    return template.format(owner=owner, repo=name)


# --- locks ----------------------------------------------------------------------------


@contextlib.contextmanager
def file_lock(path: Path, *, shared: bool = False) -> Iterator[None]:
    """flock on `path`: between processes, and between threads (each opens its own)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


# --- the job's checkout ---------------------------------------------------------------


@dataclass(frozen=True)
class MergeOutcome:
    """How merging the base into the PR head went on the host."""

    merge_sha: str | None  # the host's merge commit, when the merge was clean
    conflicts: tuple[str, ...] = ()  # files left conflicted for the agent
    up_to_date: bool = False  # the head already contained the base: nothing to merge

    @property
    def clean(self) -> bool:
        return not self.conflicts


@dataclass(frozen=True)
class Workspace:
    """One job's checkout. `path` is the work tree (owned by the sandbox uid); the mirror
    and everything else the host needs afterwards (publish) come with it."""

    repo: str
    number: int
    path: Path
    job_dir: Path  # root-owned folder around the work tree (host-side scratch space too)
    mirror: Path
    mirror_lock: Path
    head_sha: str  # the PR head the work tree started at
    base_ref: str
    base_sha: str
    merge: MergeOutcome | None  # set for a conflict job

    @property
    def conflict(self) -> bool:
        return self.merge is not None

    @property
    def needs_agent(self) -> bool:
        """False when the host already did the whole job (a clean merge)."""
        return self.merge is None or bool(self.merge.conflicts)

    @property
    def name(self) -> str:
        return self.job_dir.name


def driver_command(python: str = sys.executable) -> str:
    """The quest merge driver as git runs it on the host (`landbot` need not be on PATH)."""
    return f"{shlex.quote(python)} -m landbot quest merge-driver %O %A %B %P"


@dataclass
class Stats:
    """What the mirrors cost so far (evidence for tests and the benchmark)."""

    clones: int = 0
    fetches: int = 0
    jobs: int = 0
    overlay_jobs: int = 0
    pristine_trees: int = 0  # pristine checkouts made (overlay)
    disk_jobs: int = 0  # jobs whose folder was a size-capped file system of its own
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, name: str) -> None:
        with self.lock:
            setattr(self, name, getattr(self, name) + 1)


class Workspaces:
    """The mirrors and job work trees under one root folder (see the module docstring)."""

    def __init__(
        self,
        root: Path,
        *,
        git_url: str,
        uid: int,
        gid: int,
        identity: Identity = LANDBOT,
        overlay: bool | None = None,
        disk_mb: int = DEFAULT_DISK_MB,
        sweep: bool = False,
    ) -> None:
        """`overlay`: None uses overlayfs when the host allows it, False never, True
        requires it (a job fails instead of falling back). `disk_mb`: the size of the file
        system each job's folder is (0: no cap, the jobs folder's own file system).
        `sweep`: every job starts with `prune` (what `from_settings` gives the worker)."""
        if disk_mb < 0:
            raise WorkspaceError(f"disk_mb {disk_mb} is negative: give a size in MB, or 0")
        self.root = Path(os.path.realpath(root))
        self.disk_mb = disk_mb
        self.sweep = sweep
        self.overlay = overlay
        self.overlay_problem: str | None = None  # why overlayfs was given up, if it was
        self.git_url = git_url
        self.uid = uid
        self.gid = gid
        self.identity = identity
        self.mirrors = self.root / "mirrors"
        self.jobs = self.root / "jobs"
        self.images = self.root / "images"  # the jobs' disk images: root only
        self.stats = Stats()
        if not self.root.is_dir():
            # The jobs below must be reachable by the sandbox uid (bubblewrap binds them as
            # that uid); an existing folder keeps the mode its operator gave it.
            self.root.mkdir(parents=True)
            os.chmod(self.root, 0o755)
        self.mirrors.mkdir(mode=0o700, exist_ok=True)
        os.chmod(self.mirrors, 0o700)
        self.jobs.mkdir(mode=0o755, exist_ok=True)
        os.chmod(self.jobs, 0o755)
        self.images.mkdir(mode=0o700, exist_ok=True)
        os.chmod(self.images, 0o700)
        self._jobs_lock = self.root / "jobs.lock"

    @classmethod
    def from_settings(cls, settings: object, root: Path) -> Workspaces:
        """From `landbot.config.Settings` (typed loosely to keep this module light)."""
        github = settings.github  # type: ignore[attr-defined]
        sandbox = settings.sandbox  # type: ignore[attr-defined]
        return cls(
            root,
            git_url=github.git_url,
            uid=sandbox.uid,
            gid=sandbox.gid,
            disk_mb=int(getattr(sandbox, "disk_mb", DEFAULT_DISK_MB)),
            sweep=True,
        )

    # --- mirrors ----------------------------------------------------------------------

    def mirror_path(self, repo: str) -> Path:
        owner, name = split_repo(repo)
        return self.mirrors / owner / f"{name}.git"

    def _lock_path(self, repo: str) -> Path:
        owner, name = split_repo(repo)
        return self.mirrors / owner / f"{name}.lock"

    def sync(
        self, repo: str, number: int, base_ref: str, *, token: str | None = None
    ) -> tuple[str, str]:
        """Bring the mirror up to date for PR `number`: (PR head sha, base sha) as fetched."""
        with file_lock(self._prepare_lock(repo)):
            return self._sync_locked(repo, number, base_ref, token)

    def _prepare_lock(self, repo: str) -> Path:
        lock = self._lock_path(repo)
        lock.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        return lock

    def _refspecs(self, number: int, base_ref: str) -> list[str]:
        return [
            f"+refs/heads/{base_ref}:refs/heads/{base_ref}",
            f"+refs/pull/{number}/head:refs/pull/{number}/head",
        ]

    def _sync_locked(
        self, repo: str, number: int, base_ref: str, token: str | None
    ) -> tuple[str, str]:
        if number <= 0:
            raise WorkspaceError(f"pull request number {number} is not valid")
        check_branch_name(base_ref)
        mirror = self.mirror_path(repo)
        url = repo_url(self.git_url, repo)
        if not remote_protocols(["fetch", url]):
            raise WorkspaceError(
                f"git_url {self.git_url!r} uses a transport landbot does not allow: use "
                "https://…/{owner}/{repo}.git (file:// or http:// in tests)"
            )
        fetch = ["fetch", "--no-tags", "--no-write-fetch-head", "--quiet", "--end-of-options"]
        what = f"fetching {repo}#{number} and {base_ref} into the mirror"
        if not (mirror / "HEAD").is_file():
            # First use: clone into a temporary name, so a failed clone leaves no mirror.
            partial = Path(tempfile.mkdtemp(prefix=f".{mirror.name}.", dir=mirror.parent))
            try:
                run_git(["init", "--bare", "--quiet", "--template=", str(partial)])
                run_git(["config", "core.logAllRefUpdates", "false"], git_dir=partial)
                run_git(
                    [*fetch, url, *self._refspecs(number, base_ref)],
                    git_dir=partial,
                    token=token,
                    what=what,
                )
                partial.rename(mirror)
            finally:
                shutil.rmtree(partial, ignore_errors=True)
            self.stats.add("clones")
        else:
            check_config(mirror)  # a planted filter or include would run in the mirror
            run_git(
                [*fetch, url, *self._refspecs(number, base_ref)],
                git_dir=mirror,
                token=token,
                what=what,
            )
            self.stats.add("fetches")
        head = rev_parse(mirror, f"refs/pull/{number}/head")
        base = rev_parse(mirror, f"refs/heads/{base_ref}")
        assert head is not None and base is not None  # the fetch just wrote both
        return head, base

    # --- jobs -------------------------------------------------------------------------

    @contextlib.contextmanager
    def job(
        self,
        repo: str,
        number: int,
        head_sha: str,
        base_ref: str,
        *,
        head_ref: str | None = None,
        merge: bool = False,
        token: str | None = None,
    ) -> Iterator[Workspace]:
        """A work tree at `head_sha` for the duration of the block, removed afterwards
        whatever happens. With `merge`, the base is merged in on the host first (quest
        merge driver enabled): a clean merge is committed, otherwise the tree is left in
        the middle of the merge with the conflicts for the agent."""
        if self.sweep:
            self._sweep()
        job_dir, lock_fd = self._new_job_dir(repo, number)
        held: list[int] = [lock_fd]  # the job's lock, and its pristine tree's (shared)
        try:
            yield self._prepare(
                job_dir,
                held,
                repo,
                number,
                head_sha,
                base_ref,
                head_ref=head_ref,
                merge=merge,
                token=token,
            )
        finally:
            self._remove_job(job_dir, held)

    def _sweep(self) -> None:
        """Clean up what a dead job left before this one starts. A SIGKILLed worker leaves
        its job folder mounted (the disk image, an overlay on it) and its pristine tree held
        by nobody; any process sharing the state folder may be the next to run a job, so
        each job sweeps (live jobs hold their locks and are kept). A sweep that fails does
        not fail the job: the next one tries again."""
        try:
            removed = self.prune()
        except (OSError, WorkspaceError) as exc:
            logs.event(log, "dead jobs not swept", logging.WARNING, error=exc)
            return
        if removed:
            names = [p.name for p in removed]
            logs.event(log, "dead jobs swept", jobs=len(removed), job_dirs=names)

    def _new_job_dir(self, repo: str, number: int) -> tuple[Path, int]:
        owner, name = split_repo(repo)
        # Created under the shared jobs lock and locked at once, so a concurrent prune
        # (which takes the jobs lock exclusively) never sees a job without its lock.
        with file_lock(self._jobs_lock, shared=True):
            job_dir = Path(tempfile.mkdtemp(prefix=f"{owner}.{name}.pr{number}.", dir=self.jobs))
            try:
                if self.disk_mb:
                    self._mount_disk(job_dir)
                os.chmod(job_dir, 0o755)  # (the new file system's root, when mounted)
                fd = os.open(job_dir / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
                fcntl.flock(fd, fcntl.LOCK_EX)
            except BaseException:
                if _remove_mounts(job_dir):
                    shutil.rmtree(job_dir, ignore_errors=True)
                self.image_path(job_dir).unlink(missing_ok=True)
                raise
        self.stats.add("jobs")
        return job_dir, fd

    def image_path(self, job_dir: Path) -> Path:
        return self.images / f"{job_dir.name}.img"

    def _mount_disk(self, job_dir: Path) -> None:
        """Make the job's folder a file system of its own of `disk_mb` MB: a sparse ext4
        image, loop-mounted, so nothing the job (or the host for it) writes there can fill
        the host's disk. The image costs only what is written to it."""
        image = self.image_path(job_dir)
        fd = os.open(image, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.ftruncate(fd, self.disk_mb << 20)
        finally:
            os.close(fd)
        no_cap = "or set `[sandbox] disk_mb = 0` to run jobs without a disk cap"
        # No journal: the file system lives as long as one job and is never fsck'ed.
        # No reserved blocks: root on the host gets no more room than the job.
        mkfs = [MKFS, "-q", "-F", "-O", "^has_journal", "-m", "0", "-E", "nodiscard", str(image)]
        try:
            made = subprocess.run(mkfs, capture_output=True, timeout=LOCAL_TIMEOUT, check=False)
        except FileNotFoundError:
            raise WorkspaceError(
                f"{MKFS} is not installed, and a job's disk cap needs it: install e2fsprogs "
                f"(`apt-get install e2fsprogs`), {no_cap}"
            ) from None
        except subprocess.TimeoutExpired:
            raise WorkspaceError(f"{MKFS} of the job's disk image timed out: {no_cap}") from None
        if made.returncode != 0:
            raise WorkspaceError(
                f"{MKFS} of the job's disk image failed ({_last_line(made.stderr)}): {no_cap}"
            )
        mount = [MOUNT, "-t", "ext4", "-o", "loop,nosuid,nodev,noatime", str(image), str(job_dir)]
        try:
            done = subprocess.run(mount, capture_output=True, timeout=LOCAL_TIMEOUT, check=False)
        except FileNotFoundError:
            raise WorkspaceError(f"{MOUNT} is not installed: install mount, {no_cap}") from None
        except subprocess.TimeoutExpired:
            raise WorkspaceError(f"mounting the job's disk image timed out: {no_cap}") from None
        if done.returncode != 0:
            raise WorkspaceError(
                f"cannot mount the job's disk image ({_last_line(done.stderr)}): run landbot "
                f"as root with a loop device (`modprobe loop`), {no_cap}"
            )
        self.stats.add("disk_jobs")

    def _remove_job(self, job_dir: Path, held: list[int]) -> None:
        try:
            check = job_dir / "check"
            if check.exists():
                # publish's quest-check checkout is a linked work tree of the mirror.
                with contextlib.suppress(WorkspaceError):
                    run_git(["worktree", "remove", "--force", str(check)], cwd=check)
            # The job's lock lives on its disk image, which cannot be unmounted while the
            # lock is open; the pristine tree's stays held until the overlay is gone.
            os.close(held.pop(0))
            if _remove_mounts(job_dir):
                shutil.rmtree(job_dir, ignore_errors=True)
                self.image_path(job_dir).unlink(missing_ok=True)
        finally:
            for fd in held:
                os.close(fd)

    def _prepare(
        self,
        job_dir: Path,
        held: list[int],
        repo: str,
        number: int,
        head_sha: str,
        base_ref: str,
        *,
        head_ref: str | None,
        merge: bool,
        token: str | None,
    ) -> Workspace:
        mirror = self.mirror_path(repo)
        lock = self._prepare_lock(repo)
        work = job_dir / "work"
        pristine: str | None = None
        with file_lock(lock):
            _, base_sha = self._sync_locked(repo, number, base_ref, token)
            if not has_commit(mirror, head_sha):
                raise WorkspaceError(
                    f"commit {head_sha} of {repo}#{number} is not in the mirror after the "
                    "fetch: the pull request's head moved; confirm the drop again"
                )
            if self.overlay is not False and self.overlay_problem is None:
                pristine = self._pristine(repo, mirror, base_sha, head_sha)
                held.append(self._use_tree(repo, pristine))
            # A local clone hard-links the object files (see the module docstring); the
            # lock keeps a gc in the mirror from swapping packs under it.
            clone = job_dir / "clone"
            run_git(
                [
                    "clone",
                    "--quiet",
                    "--no-checkout",
                    "--no-tags",
                    "--single-branch",
                    "--template=",
                    "--branch",
                    base_ref,
                    "--end-of-options",
                    str(mirror),
                    str(clone),
                ],
                what="cloning the mirror into the job's work tree",
            )
        gitdir = clone / ".git"
        # The job's own repository: no remote (the sandbox cannot reach one), an identity
        # for the agent's commits (the config is read-only in the sandbox), no gc.
        run_git(["remote", "remove", "origin"], git_dir=gitdir)
        for key, value in (
            ("user.name", self.identity.name),
            ("user.email", self.identity.email),
            ("gc.auto", "0"),
            ("maintenance.auto", "false"),
        ):
            run_git(["config", key, value], git_dir=gitdir)
        check_config(gitdir)  # before the checkout and merge: no filter or driver in it
        run_git(["update-ref", f"refs/remotes/origin/{base_ref}", base_sha], git_dir=gitdir)
        if pristine is not None and self._mount(repo, pristine, job_dir, clone):
            # The overlay's files and index are the pristine commit's, but the clone's HEAD
            # is the base as fetched now: the checkout must start from what is on disk, or
            # its two-way merge takes the difference for local changes and aborts on every
            # path both the PR and the base changed since (a conflict drop's very files).
            run_git(["update-ref", "--no-deref", "HEAD", pristine], git_dir=work / ".git")
            self.stats.add("overlay_jobs")
        else:
            if pristine is not None:
                os.close(held.pop())  # overlayfs is not available after all
                shutil.rmtree(self.trees_path(repo), ignore_errors=True)
            clone.rename(work)
        run_git(["checkout", "--quiet", "--detach", head_sha], cwd=work, what="checking out")
        outcome = None
        if merge:
            outcome = self._merge(work, head_sha, base_ref, base_sha, head_ref or f"#{number}")
        chown_tree(work, self.uid, self.gid)
        # The chown changed the owner and ctime of what the host wrote, which the index
        # records: refresh it, or the agent's git would call those files modified.
        run_git(
            ["update-index", "-q", "--refresh"],
            cwd=work,
            config=[("safe.directory", str(work))],
            check=False,
        )
        index = work / ".git" / "index"
        if index.exists():
            os.lchown(index, self.uid, self.gid)
        return Workspace(
            repo=repo,
            number=number,
            path=work,
            job_dir=job_dir,
            mirror=mirror,
            mirror_lock=lock,
            head_sha=head_sha,
            base_ref=base_ref,
            base_sha=base_sha,
            merge=outcome,
        )

    # --- overlay: pristine trees ------------------------------------------------------

    def trees_path(self, repo: str) -> Path:
        owner, name = split_repo(repo)
        return self.mirrors / owner / f"{name}.trees"

    def _pristine(self, repo: str, mirror: Path, base_sha: str, head_sha: str) -> str:
        """The commit of the pristine tree this job's overlay sits on (under the mirror
        lock): the newest one, unless the PR head is too far from it; then the base's."""
        trees = self.trees_path(repo)
        trees.mkdir(mode=0o700, exist_ok=True)
        current = _newest_tree(trees)
        if (
            current is not None
            and has_commit(mirror, current)
            and count_changes(mirror, current, head_sha) <= PRISTINE_MAX_DRIFT
        ):
            return current
        if not (trees / base_sha).is_dir():
            self._make_tree(mirror, trees, base_sha)
        return base_sha

    def _make_tree(self, mirror: Path, trees: Path, sha: str) -> None:
        partial = Path(tempfile.mkdtemp(prefix=".tmp-", dir=trees))
        index = trees / f"{partial.name}.index"
        try:
            env = {"GIT_INDEX_FILE": str(index)}
            run_git(["read-tree", sha], git_dir=mirror, env=env)
            run_git(
                [f"--work-tree={partial}", "checkout-index", "--all", "--force"],
                git_dir=mirror,
                env=env,
                what="writing the pristine tree",
            )
            chown_tree(partial, self.uid, self.gid)
            partial.rename(trees / sha)
            os.utime(trees / sha)  # newest: the one later jobs sit on
        finally:
            index.unlink(missing_ok=True)
            shutil.rmtree(partial, ignore_errors=True)
        self.stats.add("pristine_trees")

    def _use_tree(self, repo: str, sha: str) -> int:
        """Hold the pristine tree (shared) while a job's overlay sits on it."""
        fd = os.open(self.trees_path(repo) / f"{sha}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(fd, fcntl.LOCK_SH)
        return fd

    def _mount(self, repo: str, sha: str, job_dir: Path, clone: Path) -> bool:
        """Mount the job's overlay at job_dir/work with the clone's .git in its upper
        layer; False (and overlayfs given up) when the host does not allow it."""
        trees = self.trees_path(repo)
        upper, scratch, work = job_dir / "upper", job_dir / "overlay", job_dir / "work"
        for folder in (upper, scratch, work):
            folder.mkdir(mode=0o755)
        clone_git = clone / ".git"
        clone_git.rename(upper / ".git")  # same file system: the hard links survive
        cached = trees / f"{sha}.index"
        if cached.is_file():
            shutil.copyfile(cached, upper / ".git" / "index")
        try:
            mount_overlay(trees / sha, upper, scratch, work)
        except OSError as exc:
            (upper / ".git").rename(clone_git)
            for folder in (upper, scratch, work):
                folder.rmdir()
            if self.overlay:
                raise WorkspaceError(f"cannot mount the job's overlay: {exc.strerror}") from None
            self.overlay_problem = f"overlayfs unavailable ({exc.strerror}): full checkouts"
            return False
        clone.rmdir()
        if not cached.is_file():
            # Index the pristine files once (hashing every file); later jobs copy it and
            # git finds every entry clean from its stat data alone.
            run_git(["read-tree", sha], cwd=work)
            run_git(["update-index", "-q", "--refresh"], cwd=work, check=False)
            partial = trees / f".{sha}.index.{job_dir.name}"
            shutil.copyfile(work / ".git" / "index", partial)
            partial.rename(cached)
        else:
            run_git(["update-index", "-q", "--refresh"], cwd=work, check=False)
        return True

    def _merge(
        self, work: Path, head_sha: str, base_ref: str, base_sha: str, head_name: str
    ) -> MergeOutcome:
        """Merge the base into the head with the quest merge driver (host side, as root,
        before the tree is handed over)."""
        info = work / ".git" / "info"
        info.mkdir(exist_ok=True)
        # info/attributes outranks the repository's own .gitattributes and changes no
        # tracked file; removed after the merge.
        attributes = info / "attributes"
        attributes.write_text(QUEST_ATTRIBUTES + "\n")
        ident = {
            "GIT_AUTHOR_NAME": self.identity.name,
            "GIT_AUTHOR_EMAIL": self.identity.email,
            "GIT_COMMITTER_NAME": self.identity.name,
            "GIT_COMMITTER_EMAIL": self.identity.email,
        }
        message = (
            f"Merge {base_ref} into {head_name}\n\n"
            f"The merge queue dropped this pull request for a conflict with {base_ref}.\n"
            f"landbot merged {base_ref} ({base_sha[:12]}) on the host; the quest merge "
            "driver resolved every conflict.\n"
        )
        try:
            done = run_git(
                ["merge", "--no-ff", "--no-edit", "--quiet", "-m", message, base_sha],
                cwd=work,
                env=ident,
                config=[
                    ("merge.quest.name", "landbot quest merge driver"),
                    ("merge.quest.driver", driver_command()),
                    ("rerere.enabled", "false"),
                    ("merge.renames", "true"),
                ],
                check=False,
            )
        finally:
            attributes.unlink(missing_ok=True)
        head = rev_parse(work / ".git", "HEAD")
        if done.returncode == 0:
            if head is None or rev_parse(work / ".git", "MERGE_HEAD") is not None:
                raise WorkspaceError("git merge reported success but left no commit")
            if head == head_sha:
                return MergeOutcome(merge_sha=None, up_to_date=True)
            return MergeOutcome(merge_sha=head)
        unmerged = run_git(
            ["diff", "--no-ext-diff", "--no-textconv", "--name-only", "-z", "--diff-filter=U"],
            cwd=work,
        ).stdout
        conflicts = tuple(
            sorted(p.decode("utf-8", "surrogateescape") for p in unmerged.split(b"\0") if p)
        )
        if not conflicts:
            detail = (
                done.stderr.decode(errors="replace").strip()
                or done.stdout.decode(errors="replace").strip()
            )
            raise WorkspaceError(f"git merge of {base_ref} failed: {detail or 'no reason given'}")
        return MergeOutcome(merge_sha=None, conflicts=conflicts)

    # --- start-up ---------------------------------------------------------------------

    def prune(self) -> list[Path]:
        """Remove what a crashed process left: job folders whose lock nobody holds, the
        mirrors' stale linked work trees and job refs. Returns the folders removed."""
        removed: list[Path] = []
        with file_lock(self._jobs_lock):
            for entry in sorted(self.jobs.iterdir()):
                if entry.is_symlink() or not entry.is_dir():
                    entry.unlink(missing_ok=True)
                    removed.append(entry)
                    continue
                if self._job_alive(entry):
                    continue
                if _remove_mounts(entry):  # never delete through a mount left behind
                    shutil.rmtree(entry, ignore_errors=True)
                    self.image_path(entry).unlink(missing_ok=True)
                    removed.append(entry)
            # Images whose job folder is gone (a crash between making and mounting one).
            for image in sorted(self.images.iterdir()):
                if not (self.jobs / image.name.removesuffix(".img")).is_dir():
                    image.unlink(missing_ok=True)
        for owner in sorted(self.mirrors.iterdir()):
            if not owner.is_dir():
                continue
            names = {p.name[: -len(".git")] for p in owner.glob("*.git")}
            names |= {p.name[1:].partition(".git.")[0] for p in owner.glob(".*.git.*")}
            for name in sorted(names):
                # Under the mirror's lock: a clone in progress elsewhere holds it.
                with file_lock(owner / f"{name}.lock"):
                    for partial in owner.glob(f".{name}.git.*"):
                        shutil.rmtree(partial, ignore_errors=True)  # a clone that died
                    mirror = owner / f"{name}.git"
                    if (mirror / "HEAD").is_file():
                        run_git(["worktree", "prune"], git_dir=mirror)
                        self._drop_job_refs(mirror)
                    trees = owner / f"{name}.trees"
                    if trees.is_dir():
                        _prune_trees(trees)
        return removed

    @staticmethod
    def _job_alive(job_dir: Path) -> bool:
        try:
            fd = os.open(job_dir / ".lock", os.O_RDWR)
        except OSError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)
        return False

    def _drop_job_refs(self, mirror: Path) -> None:
        live = {p.name for p in self.jobs.iterdir()}
        refs = run_git(
            ["for-each-ref", "--format=%(refname)", JOB_REFS], git_dir=mirror
        ).stdout.decode()
        for ref in refs.split():
            if ref.removeprefix(JOB_REFS + "/") not in live:
                run_git(["update-ref", "-d", ref], git_dir=mirror)


def _last_line(stderr: bytes) -> str:
    lines = stderr.decode(errors="replace").strip().splitlines()
    return lines[-1] if lines else "no message"


JOB_REFS = "refs/landbot/jobs"  # in a mirror: a job's imported result while it is published


def job_ref(ws: Workspace) -> str:
    return f"{JOB_REFS}/{ws.name}"


# --- overlayfs ------------------------------------------------------------------------

PRISTINE_MAX_DRIFT = 1000  # files a PR head may differ from the pristine tree by
_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_MNT_DETACH = 2
_MS_NOSUID, _MS_NODEV = 2, 4


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def mount_overlay(lower: Path, upper: Path, scratch: Path, target: Path) -> None:
    """Mount an overlay (raises OSError). `redirect_dir=on` lets the job rename folders
    that come from the lower layer, as on any other file system."""
    paths = [str(p) for p in (lower, upper, scratch, target)]
    if any(c in p for p in paths for c in ",:\\\n"):
        raise OSError(errno.EINVAL, f"a path unfit for overlay options: {paths}")
    options = f"lowerdir={paths[0]},upperdir={paths[1]},workdir={paths[2]},redirect_dir=on"
    # nosuid, nodev: the job's files are the job's, whatever their mode bits say.
    flags = _MS_NOSUID | _MS_NODEV
    if _libc().mount(b"overlay", paths[3].encode(), b"overlay", flags, options.encode()) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))


def mounts_under(folder: Path) -> list[Path]:
    """Mount points at or below `folder` (from /proc/self/mountinfo), deepest first."""
    top = str(folder)
    found = []
    with contextlib.suppress(OSError), open("/proc/self/mountinfo") as info:
        for line in info:
            fields = line.split(" ")
            if len(fields) < 5:
                continue
            # Octal escapes (\040 for a space) in the mount point.
            point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[4])
            if point == top or point.startswith(top + "/"):
                found.append(Path(point))
    return sorted(found, key=lambda p: len(p.parts), reverse=True)


def _remove_mounts(folder: Path) -> bool:
    """Unmount everything below `folder`; False if something stays mounted."""
    for point in mounts_under(folder):
        libc = _libc()
        if libc.umount2(str(point).encode(), 0) != 0 and ctypes.get_errno() == errno.EBUSY:
            libc.umount2(str(point).encode(), _MNT_DETACH)  # gone once its last user is
    return not mounts_under(folder)


def _newest_tree(trees: Path) -> str | None:
    done = [p for p in trees.iterdir() if p.is_dir() and _SHA.fullmatch(p.name)]
    if not done:
        return None
    return max(done, key=lambda p: p.stat().st_mtime).name


def _prune_trees(trees: Path) -> None:
    """Remove half-made pristine trees, and every tree but the newest no job sits on."""
    for partial in trees.glob(".tmp-*"):
        if partial.is_dir():
            shutil.rmtree(partial, ignore_errors=True)
        else:
            partial.unlink(missing_ok=True)
    for stray in trees.glob(".*.index.*"):
        stray.unlink(missing_ok=True)
    newest = _newest_tree(trees)
    for tree in trees.iterdir():
        if not tree.is_dir() or not _SHA.fullmatch(tree.name) or tree.name == newest:
            continue
        fd = os.open(trees / f"{tree.name}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            continue  # a live job's overlay sits on it
        else:
            shutil.rmtree(tree, ignore_errors=True)
            (trees / f"{tree.name}.index").unlink(missing_ok=True)
        finally:
            os.close(fd)


def count_changes(git_dir: Path, old: str, new: str) -> int:
    out = run_git(
        ["diff-tree", "-r", "--name-only", "-z", "--no-renames", old, new], git_dir=git_dir
    ).stdout
    return sum(1 for p in out.split(b"\0") if p)
