"""Publish a land-fixer job's commits: validate them on the host, push, arm auto-merge.

    result = publish(client, ws, pr, settings)
    result.pushed_sha     # the PR's new head, or None
    result.refused        # why nothing was pushed (which rule, which path), or None
    result.patch          # for a fork that does not allow maintainer edits: the fix as text

Nothing the job left is trusted, and the host runs no git in the job's `.git`. Git inside
the sandbox exports the job's new commits as a bundle (landbot/fixer/job.py
`export_result`); the host reads that one file as data, checks its header and pack
(landbot/git/quarantine.py: one ref, prerequisites only the PR head and base, every
object's size capped before git inflates it) and imports it into a quarantine, a fresh
root-only repository that sees the mirror's objects through alternates the host wrote.
Every rule then runs against the quarantine:

- the new head descends from the PR head the job started at (and, for a conflict, contains
  the base commit the job merged);
- no new commit, and not the result as a whole, changes a protected path
  (`[fixer] protected_paths`, globs where `**` crosses folders); for a conflict, a
  protected path must end up as a plain merge of the PR and the base would leave it;
- every blob it adds is sized (`cat-file --batch-check`) before any diff is made, and no
  commit adds a symbolic link or a gitlink;
- every path a new commit writes is UTF-8 (a name git holds as bytes that are not is
  refused: the host's text, its store and GitHub's API carry paths as UTF-8);
- the change stays under the size caps (`Limits`);
- `quest check --base <base>` passes on a fresh host-side checkout of the new head when
  the repository has a `quest/` tree (a `quest` that is a link, or a link under it, is
  refused without a checkout).

Only a fix that passed every rule is fetched from the quarantine into the mirror (under
the mirror lock, under a job ref) to be pushed; a refused one leaves the mirror as it was,
and the quarantine is removed whatever happens.

Then the new head is pushed to the PR's branch only if that branch is still at the commit
the job started from (`--force-with-lease=refs/heads/<branch>:<sha>`), with the token in
the environment of that one git command, and auto-merge is armed for the new head. A fork
whose author does not allow maintainer edits is not pushed to: the result carries the
patch for a hand-back instead.

When the answer is lost (the push broke off before git heard the ref's status, or GitHub
answered the auto-merge request with a 5xx or not in time), the state is read back instead
of guessed: the branch head (`git ls-remote`) says whether the push landed, and is pushed
once more under the same lease only if it is still where the job started; the PR's
auto-merge request at the new head says whether arming took, and is sent once more only
if it is not armed and the head is still the fix.
"""

from __future__ import annotations

import logging
import shutil
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from landbot.core.globs import glob_pattern
from landbot.core.linear import LinearPattern
from landbot.core.text import encodable, text_of
from landbot.errors import LandbotError
from landbot.fixer.job import export_result
from landbot.git.quarantine import BundleLimits, Quarantine, ResultRefused, parse_bundle
from landbot.git.workspace import (
    HARDENING,
    Workspace,
    WorkspaceError,
    check_branch_name,
    file_lock,
    git_env,
    is_ancestor,
    job_ref,
    redact,
    repo_url,
    run_git,
)
from landbot.github.errors import MutationOutcomeUnknown
from landbot.land.comments import details_block

log = logging.getLogger("landbot.land")

if TYPE_CHECKING:
    from landbot.config import Settings
    from landbot.github.models import PullState
    from landbot.github.ops import FixClient


class PublishError(LandbotError):
    """Publishing could not be attempted or finished (git or GitHub failed, not a rule)."""


@dataclass(frozen=True)
class Limits:
    """Caps on what a fix may change (a runaway agent, vendored dependencies)."""

    max_files: int = 100
    max_diff_bytes: int = 512 * 1024
    max_commits: int = 20
    max_patch_chars: int = 50_000  # a hand-back comment holds at most 65,536
    max_blob_bytes: int = 8 * 1024 * 1024  # any blob the fix adds, sized before any diff
    max_bundle_bytes: int = 64 * 1024 * 1024  # the bundle the job side writes
    max_objects: int = 20_000  # in the bundle's pack
    max_object_bytes: int = 16 * 1024 * 1024  # any object in the pack, inflated
    max_unpacked_bytes: int = 256 * 1024 * 1024  # the pack's objects, inflated

    def bundle(self) -> BundleLimits:
        return BundleLimits(
            max_bytes=self.max_bundle_bytes,
            max_objects=self.max_objects,
            max_object_bytes=max(self.max_object_bytes, self.max_blob_bytes),
            max_unpacked_bytes=self.max_unpacked_bytes,
        )


@dataclass(frozen=True)
class PublishResult:
    pushed_sha: str | None = None
    refused: str | None = None
    patch: str | None = None  # bounded; for a fork without maintainer edits
    commits: tuple[str, ...] = ()  # the job's new commits, oldest first
    auto_merge_armed: bool = False
    auto_merge_error: str | None = None  # pushed, but GitHub refused to arm auto-merge
    # What the pushed fix changed on the branch: (path, added, deleted; -1 for binary).
    files: tuple[tuple[str, int, int], ...] = ()

    def details(self, summary: str = "The fix as a patch") -> str:
        """The patch as a collapsed `<details>` block for a hand-back comment ('' if none)."""
        if not self.patch:
            return ""
        return details_block(self.patch, summary)


# --- pure rules -----------------------------------------------------------------------


def glob_regex(pattern: str) -> LinearPattern:
    """A path glob compiled by RE2 (linear time in the path, whatever the glob):
    `**` any number of folders, `*` and `?` within one name, `[...]` a class; a trailing
    `/` or `/**` means everything below (core/globs.py)."""
    return glob_pattern(pattern)


def protected_pattern(path: str, patterns: Iterable[str]) -> str | None:
    """The first pattern that protects `path` (a bad byte kept by surrogateescape is
    matched as U+FFFD: RE2 takes UTF-8 only, and no glob names such a byte), or None."""
    shown = encodable(path)
    for pattern in patterns:
        if pattern.strip() and glob_regex(pattern).match(shown):
            return pattern
    return None


Entries = Mapping[str, str]  # path -> "mode oid" in one commit


def protected_changes(
    patterns: Sequence[str],
    head: Entries,
    new: Entries,
    base: Entries | None = None,
    merge_base: Entries | None = None,
) -> list[tuple[str, str, str]]:
    """(path, pattern, why) for every protected path the job changed.

    Without `base`, a protected path must be at `new` exactly as at `head`. With `base`
    (the job merged it), it must be what a plain three-way merge gives when only one side
    changed it; when both the PR and the base changed it, any result is a person's call.
    """
    paths = set(head) | set(new)
    if base is not None:
        paths |= set(base) | set(merge_base or {})
    out: list[tuple[str, str, str]] = []
    for path in sorted(paths):
        pattern = protected_pattern(path, patterns)
        if pattern is None:
            continue
        want = head.get(path)
        if base is not None:
            h, b, m = head.get(path), base.get(path), (merge_base or {}).get(path)
            if h == m:
                want = b
            elif b in (m, h):
                want = h
            else:
                out.append((path, pattern, "both the pull request and the base change it"))
                continue
        if new.get(path) != want:
            out.append((path, pattern, "the fix changes it"))
    return out


def bound_text(text: str, limit: int) -> str:
    """`text` cut to at most `limit` characters at a line end, saying so when cut."""
    if len(text) <= limit:
        return text
    note = f"\n[… cut: {len(text) - limit:,} of {len(text):,} characters not shown]\n"
    head = text[: max(0, limit - len(note))]
    cut = head.rfind("\n")
    return (head[: cut + 1] if cut > 0 else head) + note


# --- reading the job's result ---------------------------------------------------------


def take_result(
    ws: Workspace, q: Quarantine, options: PublishOptions, data: bytes | None = None
) -> str:
    """The job's new commits, exported by git in the sandbox as a bundle (or `data`, the
    bundle a job on a runner handed back: the `actions` backend), checked as data and
    imported into the quarantine `q`; the new head. ResultRefused says why not."""
    known = tuple(dict.fromkeys((ws.head_sha, ws.base_sha)))
    limits = options.limits
    if data is None:
        data = export_result(
            ws.path, known, uid=options.uid, gid=options.gid, limit=limits.max_bundle_bytes
        )
    bundle = parse_bundle(data, limits.bundle())
    return q.import_bundle(data, bundle, set(known))


def tree_entries(mirror: Path, commit: str, keep: Sequence[str]) -> dict[str, str]:
    """path -> "mode oid" for the protected paths (`keep` patterns) of `commit`."""
    out = run_git(["ls-tree", "-r", "-z", "--full-tree", commit], git_dir=mirror).stdout
    entries: dict[str, str] = {}
    for record in out.split(b"\0"):
        if not record:
            continue
        meta, _, raw = record.partition(b"\t")
        path = raw.decode("utf-8", "surrogateescape")
        if protected_pattern(path, keep) is not None:
            mode, _, oid = meta.decode().split(" ")
            entries[path] = f"{mode} {oid}"
    return entries


def changed_paths(mirror: Path, old: str, new: str) -> set[str]:
    out = run_git(
        ["diff", "--name-only", "-z", "--no-renames", old, new, "--"], git_dir=mirror
    ).stdout
    return {p.decode("utf-8", "surrogateescape") for p in out.split(b"\0") if p}


def numstat(mirror: Path, old: str, new: str, limit: int) -> tuple[tuple[str, int, int], ...]:
    """(path, lines added, lines deleted) from `old` to `new`, -1 for a binary file, at
    most `limit` files (the validated fix is within the size caps already)."""
    out = run_git(
        ["diff", "--numstat", "-z", "--no-renames", "--no-ext-diff", "--no-textconv", old, new],
        git_dir=mirror,
    ).stdout
    files: list[tuple[str, int, int]] = []
    for record in out.split(b"\0"):
        if not record or len(files) >= limit:
            continue
        added, deleted, raw = record.split(b"\t", 2)
        path = text_of(raw)  # for the comment only: no surrogate
        binary = added == b"-" or deleted == b"-"
        files.append((path, -1 if binary else int(added), -1 if binary else int(deleted)))
    return tuple(files)


def commit_raw_paths(mirror: Path, commit: str) -> list[bytes]:
    """Paths a commit changes, as git holds them: against its parent, or, for a merge,
    those that match no parent (what the merge's resolution itself wrote)."""
    out = run_git(
        ["diff-tree", "-r", "-c", "--root", "--no-commit-id", "--name-only", "-z", commit],
        git_dir=mirror,
    ).stdout
    return [p for p in out.split(b"\0") if p]


def commit_paths(mirror: Path, commit: str) -> list[str]:
    """`commit_raw_paths` as text (a byte that is not UTF-8 kept by surrogateescape)."""
    return [p.decode("utf-8", "surrogateescape") for p in commit_raw_paths(mirror, commit)]


def non_utf8_path(mirror: Path, commit: str) -> str | None:
    """The first path `commit` writes that is not UTF-8, shown with its bad bytes escaped
    (`caf\\xe9.txt`) and cut to 120 characters; None when every one is UTF-8."""
    for raw in commit_raw_paths(mirror, commit):
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:
            shown = raw.decode("utf-8", "backslashreplace")
            return shown if len(shown) <= 120 else shown[:119] + "…"
    return None


def diff_bytes(mirror: Path, old: str, new: str, paths: Sequence[str], stop_after: int) -> int:
    """Size of the binary diff of `paths`, reading no further than `stop_after` bytes."""
    if not paths:
        return 0  # (no pathspec would mean every path)
    argv = ["git"]
    for key, value in HARDENING:
        argv += ["-c", f"{key}={value}"]
    argv += [
        f"--git-dir={mirror}",
        "diff",
        "--binary",
        "--no-color",
        "--no-ext-diff",
        "--no-textconv",
        "--no-renames",
        old,
        new,
        "--",
        *(f":(literal){p}" for p in paths),
    ]
    total = 0
    with subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=git_env()
    ) as proc:
        assert proc.stdout is not None
        while chunk := proc.stdout.read(65536):
            total += len(chunk)
            if total > stop_after:
                proc.kill()
                break
    return total


def make_patch(mirror: Path, head: str, new: str, base: str | None, limit: int) -> str:
    """The job's commits as `git format-patch` text; a merge commit, which format-patch
    cannot express, as the resolution of its conflicts (`git show --remerge-diff`)."""
    exclude = [f"^{head}"] + ([f"^{base}"] if base else [])
    patch = run_git(
        ["format-patch", "--stdout", "--no-signature", "--no-renames", new, *exclude],
        git_dir=mirror,
    ).stdout.decode("utf-8", "replace")
    merges = run_git(
        ["rev-list", "--merges", "--reverse", new, *exclude], git_dir=mirror
    ).stdout.split()
    for merge in merges:
        shown = run_git(
            [
                "show",
                "--remerge-diff",
                "--no-color",
                "--format=# merge %H: %s%n# how its conflicts were resolved:",
                merge.decode(),
            ],
            git_dir=mirror,
        ).stdout.decode("utf-8", "replace")
        patch += ("\n" if patch else "") + shown
    return bound_text(patch, limit)


# --- the rules, against the mirror ----------------------------------------------------


def _short(sha: str) -> str:
    return sha[:12]


def new_objects(repo: Path, new: str, exclude: Sequence[str]) -> list[tuple[str, str, int]]:
    """(oid, type, size) of every object `new` reaches that `exclude` does not, sized by
    `cat-file --batch-check` (reads no content)."""
    oids = run_git(
        ["rev-list", "--objects", "--no-object-names", new, "--not", *exclude], git_dir=repo
    ).stdout
    if not oids.strip():
        return []
    out = run_git(
        ["cat-file", "--batch-check=%(objectname) %(objecttype) %(objectsize)"],
        git_dir=repo,
        input=oids,
    ).stdout
    found = []
    for line in out.decode().splitlines():
        oid, kind, size = line.split(" ")
        found.append((oid, kind, int(size)))
    return found


LINK_MODES = {"120000": "a symbolic link", "160000": "a submodule (gitlink)"}


def added_links(repo: Path, commit: str) -> list[tuple[str, str]]:
    """(path, what) for every symbolic link or gitlink `commit` writes (for a merge, what
    matches none of its parents), from the raw diff: no content is read."""
    out = run_git(
        ["diff-tree", "-r", "-z", "-c", "--raw", "--root", "--no-commit-id", commit],
        git_dir=repo,
    ).stdout
    fields = out.split(b"\0")
    found = []
    for meta, raw in zip(fields[0::2], fields[1::2], strict=False):
        if not meta.startswith(b":"):
            continue
        parents = len(meta) - len(meta.lstrip(b":"))
        modes = meta.lstrip(b":").decode().split(" ")[: parents + 1]
        what = LINK_MODES.get(modes[-1]) if modes else None
        if what is not None:
            found.append((raw.decode("utf-8", "replace"), what))
    return found


def validate(
    ws: Workspace,
    new: str,
    *,
    protected: Sequence[str],
    limits: Limits,
    repo: Path | None = None,
) -> tuple[str | None, tuple[str, ...]]:
    """(refusal or None, the job's new commits oldest first), all read from `repo` (the
    quarantine, which sees the mirror's objects; the mirror by default)."""
    mirror, head = repo or ws.mirror, ws.head_sha
    base = ws.base_sha if ws.conflict else None
    if new == head:
        return "the job made no commit: nothing to publish", ()
    if not is_ancestor(mirror, head, new):
        return (
            f"commit {_short(new)} does not descend from the pull request's head "
            f"{_short(head)}: a fix must build on the pull request, not replace it",
            (),
        )
    if base is not None and not is_ancestor(mirror, base, new):
        return (
            f"commit {_short(new)} does not contain the base {ws.base_ref} "
            f"({_short(base)}): a conflict fix must merge the base",
            (),
        )
    contains_base = is_ancestor(mirror, ws.base_sha, new) and not is_ancestor(
        mirror, ws.base_sha, head
    )
    exclude = [f"^{head}"] + ([f"^{ws.base_sha}"] if contains_base else [])
    commits = tuple(
        c.decode()
        for c in run_git(["rev-list", "--reverse", new, *exclude], git_dir=mirror).stdout.split()
    )
    if len(commits) > limits.max_commits:
        return (
            f"the fix has {len(commits)} commits, more than the cap of {limits.max_commits}",
            commits,
        )
    # Sized before anything below reads a blob: a small commit can hold a huge blob.
    for oid, kind, size in new_objects(mirror, new, [head, ws.base_sha]):
        if kind == "blob" and size > limits.max_blob_bytes:
            return (
                f"the fix adds a blob of {size:,} bytes ({_short(oid)}), over the cap of "
                f"{limits.max_blob_bytes:,}",
                commits,
            )
    # First of the path rules: every later one reads paths as text (RE2 globs, messages).
    for commit in commits:
        bad = non_utf8_path(mirror, commit)
        if bad is not None:
            return (
                f"commit {_short(commit)} writes a path that is not UTF-8 ({bad}): landbot "
                "publishes UTF-8 file names only; rename it in UTF-8 or fix the pull request "
                "by hand",
                commits,
            )
    for commit in commits:
        for path, what in added_links(mirror, commit):
            return (
                f"commit {_short(commit)} adds {path} as {what}: a fix holds files only",
                commits,
            )
    for commit in commits:
        for path in commit_paths(mirror, commit):
            pattern = protected_pattern(path, protected)
            if pattern is not None:
                return (
                    f"commit {_short(commit)} changes {path}, a protected path "
                    f"({pattern} in [fixer] protected_paths)",
                    commits,
                )
    entries = {c: tree_entries(mirror, c, protected) for c in {head, new}}
    base_entries = merge_base_entries = None
    if contains_base:
        mb = run_git(["merge-base", head, ws.base_sha], git_dir=mirror).stdout.decode().strip()
        base_entries = tree_entries(mirror, ws.base_sha, protected)
        merge_base_entries = tree_entries(mirror, mb, protected) if mb else {}
    changes = protected_changes(
        protected, entries[head], entries[new], base_entries, merge_base_entries
    )
    if changes:
        path, pattern, why = changes[0]
        return (
            f"{why}: {encodable(path)} is a protected path ({pattern} in [fixer] protected_paths)",
            commits,
        )
    touched = changed_paths(mirror, head, new)
    if contains_base:
        # A path the merge took from the base as it is there is not the fix's change.
        touched &= changed_paths(mirror, ws.base_sha, new)
    if len(touched) > limits.max_files:
        return (
            f"the fix changes {len(touched)} files, more than the cap of {limits.max_files}",
            commits,
        )
    size = diff_bytes(mirror, head, new, sorted(touched), limits.max_diff_bytes)
    if size > limits.max_diff_bytes:
        return (
            f"the fix's diff is over {limits.max_diff_bytes:,} bytes (the cap): too large "
            "to publish without a person",
            commits,
        )
    return None, commits


def quest_problem(
    ws: Workspace, new: str, branch: str | None, repo: Path | None = None
) -> str | None:
    """`quest check --base <base>` on a fresh host-side checkout of `new` (from `repo`, the
    quarantine), when there is a quest tree. A `quest` that is not a folder, or a link
    under it, is refused without checking anything out."""
    mirror = repo or ws.mirror
    quest: dict[str, bytes] = {}
    for c in (new, ws.base_sha):
        top = run_git(["ls-tree", "-z", c, "--", "quest"], git_dir=mirror).stdout
        if c == new and top and not top.startswith(b"040000 "):
            return (
                "quest is not a folder in the fix (a link or a file): "
                "the quest tree holds files only"
            )
        quest[c] = run_git(["ls-tree", "-r", "-z", c, "--", "quest/"], git_dir=mirror).stdout
    if not any(quest.values()):
        return None
    for record in quest[new].split(b"\0"):
        if record and not record.startswith((b"100644 ", b"100755 ")):
            path = record.partition(b"\t")[2].decode("utf-8", "replace")
            return (
                f"{path} is not a plain file (a link or a submodule): "
                "the quest tree holds files only"
            )
    from landbot.quest import check_tree, failing

    check = ws.job_dir / "check"
    try:
        run_git(
            ["worktree", "add", "--detach", "--quiet", str(check), new],
            git_dir=mirror,
            what="checking out the fix for quest check",
        )
        findings = failing(check_tree(check, base=ws.base_sha, branch=branch))
    except LandbotError as exc:
        return f"quest check could not run: {exc}"
    finally:
        # A linked work tree of the quarantine, which goes away with it.
        shutil.rmtree(check, ignore_errors=True)
    if not findings:
        return None
    shown = encodable("; ".join(f.render() for f in findings[:3]))  # quest paths: any bytes
    more = f" (and {len(findings) - 3} more)" if len(findings) > 3 else ""
    return f"quest check --base {_short(ws.base_sha)} fails: {shown}{more}"


# --- pushing --------------------------------------------------------------------------


@dataclass(frozen=True)
class PushOutcome:
    ok: bool
    rejected: str | None = None  # git's or GitHub's reason for a refused ref update
    stale: bool = False  # the lease refused: the branch is not where the job started


def parse_porcelain(text: str) -> PushOutcome:
    """`git push --porcelain`: one line per ref, flag first (`!` rejected)."""
    for line in text.splitlines():
        if not line or line[0] not in " +-*=!" or "\t" not in line:
            continue
        flag, _, rest = line.partition("\t")
        if flag == "!":
            reason = rest.partition("\t")[2].strip()
            return PushOutcome(False, rejected=reason, stale="stale info" in reason)
    return PushOutcome(True)


def push_with_lease(
    mirror: Path, url: str, new: str, branch: str, expected: str, token: str | None
) -> PushOutcome:
    done = run_git(
        [
            "push",
            "--porcelain",
            "--no-verify",
            f"--force-with-lease=refs/heads/{branch}:{expected}",
            "--end-of-options",
            url,
            f"{new}:refs/heads/{branch}",
        ],
        git_dir=mirror,
        token=token,
        check=False,
    )
    outcome = parse_porcelain(done.stdout.decode(errors="replace"))
    if done.returncode != 0 and outcome.ok:
        message = redact(done.stderr.decode(errors="replace").strip(), token)
        raise PublishError(
            f"git push to {branch} failed: {message.splitlines()[-1] if message else 'no reason'}"
        )
    return outcome


def remote_head(mirror: Path, url: str, branch: str, token: str | None) -> str | None:
    """The branch's commit on the remote (None when the branch does not exist)."""
    done = run_git(
        ["ls-remote", "--end-of-options", url, f"refs/heads/{branch}"],
        git_dir=mirror,
        token=token,
        check=False,
    )
    if done.returncode != 0:
        message = redact(done.stderr.decode(errors="replace").strip(), token)
        raise PublishError(
            f"cannot read {branch} back after a push without an answer: "
            f"{message.splitlines()[-1] if message else 'no reason'}; retry the job"
        )
    for line in done.stdout.decode(errors="replace").splitlines():
        sha, _, ref = line.partition("\t")
        if ref.strip() == f"refs/heads/{branch}":
            return sha.strip()
    return None


def push_verified(
    mirror: Path, url: str, new: str, branch: str, expected: str, token: str | None
) -> PushOutcome:
    """`push_with_lease`, and when its answer is lost, the branch read back: at `new` it
    landed; still at `expected` it did not, and is pushed once more under the same lease;
    anywhere else someone else moved it (the lease would refuse: stale)."""
    try:
        return push_with_lease(mirror, url, new, branch, expected, token)
    except PublishError as lost:
        at = remote_head(mirror, url, branch, token)
        if at == new:
            return PushOutcome(True)
        if at != expected:
            return PushOutcome(False, rejected=f"the branch is at {at}", stale=True)
        log.warning("the push to %s got no answer and did not land (%s); once more", branch, lost)
        return push_with_lease(mirror, url, new, branch, expected, token)


def arm_auto_merge(client: FixClient, pr: PullState, new: str, merge_method: str) -> str | None:
    """Arm auto-merge for `new`; None when armed, else why not. An answer that never
    came is checked on the PR: armed at `new`, it took; not armed at `new`, sent once more."""
    try:
        client.enable_auto_merge(pr.node_id, new, merge_method, repo=pr.repo)
        return None
    except MutationOutcomeUnknown as exc:
        try:
            now = client.pull_request(pr.repo, pr.number)
        except LandbotError as read:
            return f"{exc}; and the pull request could not be re-read: {read}"
        if now.head_oid != new:
            return f"the head moved to {_short(now.head_oid)} before auto-merge was armed"
        if now.auto_merge:
            return None
    except LandbotError as exc:
        return str(exc)
    try:
        client.enable_auto_merge(pr.node_id, new, merge_method, repo=pr.repo)
    except LandbotError as exc:
        return str(exc)
    return None


# --- the whole step -------------------------------------------------------------------


@dataclass(frozen=True)
class PublishOptions:
    """Settings publishing reads, separable from `Settings` for callers without one."""

    git_url: str
    protected_paths: tuple[str, ...] = (".github/workflows/**",)
    limits: Limits = field(default_factory=Limits)
    merge_method: str = "MERGE"
    uid: int = 65534  # the sandbox's, which the job side's export runs as
    gid: int = 65534

    @classmethod
    def from_settings(cls, settings: Settings, limits: Limits | None = None) -> PublishOptions:
        return cls(
            git_url=settings.github.git_url,
            protected_paths=tuple(settings.fixer.protected_paths),
            limits=limits or Limits(),
            uid=settings.sandbox.uid,
            gid=settings.sandbox.gid,
        )


def publish(
    client: FixClient,
    ws: Workspace,
    pr: PullState,
    settings: Settings | PublishOptions,
    *,
    bundle: bytes | None = None,
) -> PublishResult:
    """Validate the job's commits in `ws` (or in `bundle`, a runner's) and push them to
    `pr`'s branch (see the module docstring). A rule that refuses comes back in `refused`;
    git or GitHub failing to answer raises PublishError."""
    options = (
        settings if isinstance(settings, PublishOptions) else PublishOptions.from_settings(settings)
    )
    if pr.repo.lower() != ws.repo.lower() or pr.number != ws.number:
        raise PublishError(f"{pr.repo}#{pr.number} is not the pull request of job {ws.name}")
    if pr.head_oid != ws.head_sha:
        return PublishResult(
            refused=f"the pull request's head moved during the job (now {_short(pr.head_oid)}, "
            f"the job started at {_short(ws.head_sha)}): nothing pushed"
        )
    try:
        with Quarantine(ws.mirror, ws.mirror_lock) as q:
            try:
                new = take_result(ws, q, options, bundle)
            except ResultRefused as exc:
                return PublishResult(refused=encodable(str(exc)))
            refused, commits = validate(
                ws, new, protected=options.protected_paths, limits=options.limits, repo=q.path
            )
            if refused is None:
                refused = quest_problem(ws, new, pr.head_ref, repo=q.path)
            if refused is not None:
                return PublishResult(refused=refused, commits=commits)
            if pr.is_fork and not pr.maintainer_can_modify:
                base = ws.base_sha if is_ancestor(q.path, ws.base_sha, new) else None
                patch = make_patch(q.path, ws.head_sha, new, base, options.limits.max_patch_chars)
                return PublishResult(
                    refused=f"the author of {pr.repo}#{pr.number} does not allow edits from "
                    "maintainers on their fork: the fix is attached as a patch",
                    patch=patch,
                    commits=commits,
                )
            if pr.head_repo is None:
                return PublishResult(
                    refused="the pull request's head repository was deleted: nothing to push to",
                    commits=commits,
                )
            check_branch_name(pr.head_ref)
            # For the comment that announces the push: what it changes on the branch.
            files = numstat(q.path, ws.head_sha, new, options.limits.max_files)
            token = client.git_token(ws.repo)
            with file_lock(ws.mirror_lock):
                # Only now, every rule passed, do the fix's objects reach the mirror.
                q.promote(job_ref(ws))
                outcome = push_verified(
                    ws.mirror,
                    repo_url(options.git_url, pr.head_repo),
                    new,
                    pr.head_ref,
                    ws.head_sha,
                    token,
                )
        if outcome.stale:
            return PublishResult(
                refused=f"the branch {pr.head_ref} moved during the job (it is no longer at "
                f"{_short(ws.head_sha)}): nothing pushed",
                commits=commits,
            )
        if not outcome.ok:
            return PublishResult(
                refused=f"the push to {pr.head_ref} was rejected: {outcome.rejected}",
                commits=commits,
            )
        problem = arm_auto_merge(client, pr, new, options.merge_method)
        if problem is not None:
            return PublishResult(
                pushed_sha=new, commits=commits, auto_merge_error=problem, files=files
            )
        return PublishResult(pushed_sha=new, commits=commits, auto_merge_armed=True, files=files)
    except WorkspaceError as exc:
        raise PublishError(str(exc)) from None
    finally:
        with file_lock(ws.mirror_lock):
            run_git(["update-ref", "-d", job_ref(ws)], git_dir=ws.mirror, check=False)
