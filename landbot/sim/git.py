"""Real git operations on the simulated GitHub's bare repositories.

Everything goes through plumbing commands on the bare repository (no work tree), so the
model never depends on a checkout and what landbot fetches and pushes is ordinary git.
"""

from __future__ import annotations

import functools
import os
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

# Files written into a commit: text, bytes, or None to delete the path.
FileContent = str | bytes | None

_IDENTITY_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_TERMINAL_PROMPT": "0",
}


class GitError(RuntimeError):
    """A git command failed; the message carries git's own stderr."""


@dataclass(frozen=True)
class Identity:
    name: str
    email: str


BOT_IDENTITY = Identity("GitHub", "noreply@github.com")


def _env(author: Identity | None = None, when: str | None = None) -> dict[str, str]:
    env = dict(os.environ)
    # A developer's global config (hooks, signing, templates) must not leak into the fake.
    env["HOME"] = env.get("LANDBOT_FAKE_GIT_HOME", tempfile.gettempdir())
    env.update(_IDENTITY_ENV)
    ident = author or BOT_IDENTITY
    env["GIT_AUTHOR_NAME"] = env["GIT_COMMITTER_NAME"] = ident.name
    env["GIT_AUTHOR_EMAIL"] = env["GIT_COMMITTER_EMAIL"] = ident.email
    if when is not None:
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = when
    for key in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_CONFIG_PARAMETERS"):
        env.pop(key, None)
    return env


def git(
    git_dir: Path,
    *args: str,
    input: bytes | None = None,
    env: Mapping[str, str] | None = None,
    check: bool = True,
) -> subprocess.CompletedProcess[bytes]:
    proc = subprocess.run(
        ["git", f"--git-dir={git_dir}", *args],
        input=input,
        capture_output=True,
        env=dict(env) if env is not None else _env(),
    )
    if check and proc.returncode != 0:
        raise GitError(
            f"git {' '.join(args)} failed ({proc.returncode}): "
            f"{proc.stderr.decode(errors='replace').strip()}"
        )
    return proc


def out(git_dir: Path, *args: str, input: bytes | None = None) -> str:
    return git(git_dir, *args, input=input).stdout.decode().strip()


def init_bare(git_dir: Path, default_branch: str) -> None:
    git_dir.parent.mkdir(parents=True, exist_ok=True)
    # No template: no sample hooks, and half the time of a default init.
    subprocess.run(
        [
            "git",
            "init",
            "--bare",
            "--quiet",
            "--template=",
            f"--initial-branch={default_branch}",
            str(git_dir),
        ],
        check=True,
        capture_output=True,
        env=_env(),
    )
    # Clients may fetch merge-group and PR commits by sha, as they can on GitHub.
    with (git_dir / "config").open("a") as config:
        config.write("[uploadpack]\n\tallowAnySHA1InWant = true\n")


def rev_parse(git_dir: Path, rev: str) -> str | None:
    proc = git(git_dir, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", check=False)
    return proc.stdout.decode().strip() or None if proc.returncode == 0 else None


def update_ref(git_dir: Path, ref: str, sha: str) -> None:
    git(git_dir, "update-ref", ref, sha)


def delete_ref(git_dir: Path, ref: str) -> None:
    git(git_dir, "update-ref", "-d", ref, check=False)


def _tree_from_files(git_dir: Path, parent: str | None, files: Mapping[str, FileContent]) -> str:
    """Write a tree: the parent's tree with `files` written over it (None deletes)."""
    with tempfile.TemporaryDirectory(prefix="landbot-fake-index-") as tmp:
        env = _env()
        env["GIT_INDEX_FILE"] = str(Path(tmp) / "index")
        if parent is not None:
            git(git_dir, "read-tree", parent, env=env)
        else:
            git(git_dir, "read-tree", "--empty", env=env)
        written = {p: c for p, c in sorted(files.items()) if c is not None}
        # One `hash-object` for all blobs: a process per file is most of a commit's cost.
        staged: list[str] = []
        for i, content in enumerate(written.values()):
            blob_file = Path(tmp) / f"blob-{i}"
            blob_file.write_bytes(content.encode() if isinstance(content, str) else content)
            staged.append(str(blob_file))
        shas = (
            git(git_dir, "hash-object", "-w", "--stdin-paths", input="\n".join(staged).encode())
            .stdout.decode()
            .split()
            if staged
            else []
        )
        blobs = dict(zip(written, shas, strict=True))
        lines: list[str] = []
        for path in sorted(files):
            if path in blobs:
                lines.append(f"100644 {blobs[path]}\t{path}")
            else:
                lines.append(f"0 {'0' * 40}\t{path}")
        if lines:
            git(
                git_dir,
                "update-index",
                "--index-info",
                input=("\n".join(lines) + "\n").encode(),
                env=env,
            )
        return git(git_dir, "write-tree", env=env).stdout.decode().strip()


def files_from_directory(source: Path) -> dict[str, FileContent]:
    """Every regular file under `source` (skipping a .git folder), as commit input."""
    files: dict[str, FileContent] = {}
    for path in sorted(source.rglob("*")):
        rel = path.relative_to(source)
        if rel.parts and rel.parts[0] == ".git":
            continue
        if path.is_file():
            files[rel.as_posix()] = path.read_bytes()
    return files


def commit_files(
    git_dir: Path,
    *,
    parent: str | None,
    files: Mapping[str, FileContent],
    message: str,
    author: Identity,
    when: str | None = None,
) -> str:
    """Create a commit on top of `parent` with `files` changed; return its sha."""
    tree = _tree_from_files(git_dir, parent, files)
    args = ["commit-tree", tree, "-m", message]
    if parent is not None:
        args[2:2] = ["-p", parent]
    return git(git_dir, *args, env=_env(author, when)).stdout.decode().strip()


def merge_commit(
    git_dir: Path,
    *,
    base: str,
    head: str,
    message: str,
    author: Identity = BOT_IDENTITY,
    when: str | None = None,
) -> tuple[str | None, list[str]]:
    """Merge `head` into `base` like GitHub's server does (no work tree).

    Returns (merge commit sha, []) or (None, conflicting paths) when git cannot merge.
    """
    proc = git(
        git_dir,
        "merge-tree",
        "--write-tree",
        "--name-only",
        "--no-messages",
        base,
        head,
        check=False,
    )
    lines = proc.stdout.decode().splitlines()
    if proc.returncode == 1:
        return None, sorted({line for line in lines[1:] if line})
    if proc.returncode != 0:
        raise GitError(f"git merge-tree failed: {proc.stderr.decode(errors='replace').strip()}")
    tree = lines[0].strip()
    sha = (
        git(
            git_dir,
            "commit-tree",
            tree,
            "-p",
            base,
            "-p",
            head,
            "-m",
            message,
            env=_env(author, when),
        )
        .stdout.decode()
        .strip()
    )
    return sha, []


def read_file(git_dir: Path, sha: str, path: str) -> bytes | None:
    proc = git(git_dir, "cat-file", "blob", f"{sha}:{path}", check=False)
    return proc.stdout if proc.returncode == 0 else None


def list_files(git_dir: Path, sha: str) -> list[str]:
    return out(git_dir, "ls-tree", "-r", "--name-only", sha).splitlines()


@functools.lru_cache(maxsize=4096)
def commit_message(git_dir: Path, sha: str) -> str:
    # A commit never changes: asking git once per sha is enough.
    return out(git_dir, "log", "-1", "--format=%B", sha)


@functools.lru_cache(maxsize=4096)
def parents(git_dir: Path, sha: str) -> tuple[str, ...]:
    """A commit's parents in order (a commit never changes, so once per sha)."""
    return tuple(out(git_dir, "log", "-1", "--format=%P", sha).split())


def is_ancestor(git_dir: Path, ancestor: str, descendant: str) -> bool:
    return (
        git(git_dir, "merge-base", "--is-ancestor", ancestor, descendant, check=False).returncode
        == 0
    )


def read_branch_refs(git_dir: Path) -> dict[str, str]:
    """The branch refs of a files-backend repository, read straight from disk.

    Pushes made by landbot with plain `git push` bypass the model, and a pusher may disable
    hooks (`-c core.hooksPath=/dev/null` reaches receive-pack through the environment), so
    the model notices pushes by reading the refs storage itself. Reading the files (loose
    refs override packed ones, as in git) costs far less than a `git for-each-ref` per
    request and has no timestamp granularity to miss a quick second push.
    """
    refs: dict[str, str] = {}
    try:
        packed = (git_dir / "packed-refs").read_text()
    except FileNotFoundError:
        packed = ""
    for line in packed.splitlines():
        if not line or line[0] in "#^":
            continue
        sha, _, name = line.partition(" ")
        if name.startswith("refs/heads/"):
            refs[name] = sha
    heads = git_dir / "refs" / "heads"
    for dirpath, _dirs, files in os.walk(heads):
        for name in files:
            if name.endswith(".lock"):
                continue
            path = Path(dirpath) / name
            try:
                value = path.read_text().strip()
            except (FileNotFoundError, IsADirectoryError):
                continue
            if len(value) == 40:
                refs[path.relative_to(git_dir).as_posix()] = value
    return refs


@dataclass(frozen=True)
class TreeEntry:
    """One `git ls-tree` line: mode (100644, 100755, 120000 symlink, 160000 submodule,
    040000 tree), object type, object sha, size (blobs only) and path."""

    mode: str
    kind: str  # blob | tree | commit
    sha: str
    size: int | None
    path: str


def tree_entry(git_dir: Path, commit: str, path: str) -> TreeEntry | None:
    """The entry at `path` in `commit`'s tree; None when there is none."""
    path = path.strip("/")
    if not path:
        tree = out(git_dir, "rev-parse", f"{commit}^{{tree}}")
        return TreeEntry("040000", "tree", tree, None, "")
    proc = git(git_dir, "ls-tree", "--long", "--full-tree", commit, "--", path, check=False)
    for line in proc.stdout.decode("utf-8", "surrogateescape").splitlines():
        meta, _, name = line.partition("\t")
        if name == path:
            return _entry(meta, name)
    return None


def tree_entries(git_dir: Path, commit: str, path: str) -> list[TreeEntry]:
    """The entries directly under the folder `path` ("" for the root) of `commit`."""
    prefix = f"{path.strip('/')}/" if path.strip("/") else ""
    where = ["--", prefix] if prefix else []
    proc = git(git_dir, "ls-tree", "--long", "--full-tree", commit, *where)
    entries = []
    for line in proc.stdout.decode("utf-8", "surrogateescape").splitlines():
        meta, _, name = line.partition("\t")
        entries.append(_entry(meta, name))
    return entries


def _entry(meta: str, name: str) -> TreeEntry:
    mode, kind, sha, size = meta.split()
    return TreeEntry(mode, kind, sha, None if size == "-" else int(size), name)


def read_blob(git_dir: Path, sha: str) -> bytes:
    return git(git_dir, "cat-file", "blob", sha).stdout


@dataclass(frozen=True)
class CommitInfo:
    sha: str
    tree: str
    author_name: str
    author_email: str
    author_date: str  # ISO 8601 with the author's offset, as git keeps it
    committer_name: str
    committer_email: str
    committer_date: str
    message: str
    parents: tuple[str, ...]


def commit_info(git_dir: Path, sha: str) -> CommitInfo:
    fields = out(
        git_dir,
        "log",
        "-1",
        "--format=%T%x00%an%x00%ae%x00%aI%x00%cn%x00%ce%x00%cI%x00%P%x00%B",
        sha,
    )
    tree, an, ae, ad, cn, ce, cd, parents_, message = fields.split("\x00", 8)
    return CommitInfo(sha, tree, an, ae, ad, cn, ce, cd, message.strip(), tuple(parents_.split()))


def changed_paths(git_dir: Path, sha: str) -> tuple[list[str], list[str], list[str]]:
    """(added, removed, modified) by `sha` against its first parent (all added for a root)."""
    proc = git(
        git_dir, "diff-tree", "--no-commit-id", "-r", "--name-status", "--root", "--no-renames", sha
    )
    added: list[str] = []
    removed: list[str] = []
    modified: list[str] = []
    for line in proc.stdout.decode("utf-8", "surrogateescape").splitlines():
        status, _, path = line.partition("\t")
        {"A": added, "D": removed}.get(status[:1], modified).append(path)
    return added, removed, modified


def new_commits(git_dir: Path, after: str, exclude: list[str], limit: int) -> list[str]:
    """Commits reachable from `after` but from none of `exclude`, oldest first (at most
    `limit`, the newest kept)."""
    args = ["rev-list", "--reverse", after, *(f"^{e}" for e in exclude)]
    shas = out(git_dir, *args).split()
    return shas[-limit:]
