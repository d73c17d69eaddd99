"""A job's result taken as data: a bundle read out of the work tree, checked, imported
into a quarantine repository, and only after validation copied into the mirror.

    data = read_exchange_file(work, "result.bundle", limit=..., owner=uid)  # bytes or None
    header = parse_bundle(data, limits)       # pure: header, prerequisites, pack walk
    with Quarantine(mirror) as q:             # root-only bare repo next to the mirror
        tip = q.import_bundle(data, header, known={head, base})
        ...validate against q.path (it sees the mirror's objects through alternates)...
        q.promote(job_ref)                    # the fix's objects reach the mirror

The host never runs git in the job's `.git`: the job side (in the sandbox) writes the
bundle into the exchange folder; here it is opened without following links, sized before
it is read, and parsed by this module before git sees it. The pack is walked in Python:
every object's declared size, and every delta's result size, is capped before git inflates
anything, so a small pack cannot expand into gigabytes in the host's git.

The quarantine is a local clone of the mirror (its object files hard-linked, so nothing is
copied) and lives next to it (`mirrors/OWNER/.NAME.git.quarantine-XXXX`, inside
the mode-700 owner folder), so a crash leaves it where `Workspaces.prune` removes a failed
clone's partial mirror.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import shutil
import stat
import tempfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from landbot.errors import LandbotError
from landbot.git.workspace import file_lock, run_git

BUNDLE_NAME = "result.bundle"
EXCHANGE_DIR = "landbot"  # <work tree>/.git/landbot, as landbot.fixer.job.OUTPUTS_DIR
FIX_REF = "refs/landbot/fix"  # the bundle's one ref, in the quarantine
MAX_HEADER = 64 * 1024
_OID = re.compile(rb"[0-9a-f]{40}|[0-9a-f]{64}")
_REF = re.compile(rb"HEAD|refs/[A-Za-z0-9._/-]{1,200}")
_FSCK = [
    ("transfer.fsckObjects", "true"),
    ("fetch.fsckObjects", "true"),
    ("receive.fsckObjects", "true"),
    ("core.bigFileThreshold", "1m"),  # stream big blobs instead of holding them whole
    ("gc.auto", "0"),
]


class ResultRefused(LandbotError):
    """The job's result cannot be taken: the message names what was wrong with it."""


@dataclass(frozen=True)
class BundleLimits:
    """Caps checked before git sees the bundle."""

    max_bytes: int = 64 * 1024 * 1024
    max_objects: int = 20_000
    max_object_bytes: int = 16 * 1024 * 1024  # one object or delta result, inflated
    max_unpacked_bytes: int = 256 * 1024 * 1024  # every object, inflated, together
    timeout: float = 300.0  # for each git command on the quarantine


@dataclass(frozen=True)
class Bundle:
    """A parsed bundle: its one ref and its prerequisites (both checked by `parse_bundle`)."""

    version: int
    object_format: str
    prerequisites: tuple[str, ...]
    tip: str
    ref: str
    pack_offset: int
    objects: int


# --- reading the file the job side wrote ----------------------------------------------


def read_exchange_file(workdir: Path, name: str, *, limit: int, owner: int) -> bytes | None:
    """`<workdir>/.git/landbot/<name>`, or None when the job side wrote none.

    Every component is opened without following links; the file must be a regular file
    with one link, owned by the sandbox uid `owner`, and at most `limit` bytes by fstat
    before a byte is read (a FIFO, a device, a hard link to someone else's file, a huge
    file are refused with ResultRefused).
    """
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
    fds: list[int] = []
    try:
        try:
            fds.append(os.open(workdir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC))
            for part in (".git", EXCHANGE_DIR):
                fds.append(os.open(part, flags | os.O_DIRECTORY, dir_fd=fds[-1]))
            fds.append(os.open(name, flags | os.O_NONBLOCK, dir_fd=fds[-1]))
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                raise ResultRefused(
                    f"the job made .git/{EXCHANGE_DIR}/{name} or a folder on its way a "
                    "symbolic link: nothing taken"
                ) from None
            raise ResultRefused(f"cannot open the job's {name}: {exc.strerror}") from None
        st = os.fstat(fds[-1])
        if not stat.S_ISREG(st.st_mode):
            raise ResultRefused(f"the job's {name} is not a regular file: nothing taken")
        if st.st_nlink != 1:
            raise ResultRefused(f"the job's {name} has {st.st_nlink} hard links: nothing taken")
        if st.st_uid != owner:
            raise ResultRefused(
                f"the job's {name} is owned by uid {st.st_uid}, not the sandbox's: nothing taken"
            )
        if st.st_size > limit:
            raise ResultRefused(
                f"the job's {name} is {st.st_size:,} bytes, over the cap of {limit:,}"
            )
        chunks: list[bytes] = []
        left = limit + 1
        while left > 0:
            data = os.read(fds[-1], min(left, 1 << 20))
            if not data:
                break
            chunks.append(data)
            left -= len(data)
        if left <= 0:
            raise ResultRefused(f"the job's {name} grew over the cap of {limit:,} bytes")
        return b"".join(chunks)
    finally:
        for fd in reversed(fds):
            os.close(fd)


# --- the bundle, parsed (pure) --------------------------------------------------------


def parse_bundle(data: bytes, limits: BundleLimits = BundleLimits()) -> Bundle:
    """The bundle's header and pack, checked: v2 or v3, no filter, exactly one ref, every
    object's inflated size under the caps, the pack's checksum right. ResultRefused
    otherwise. Prerequisites are checked against what the host knows by the caller."""
    if len(data) > limits.max_bytes:
        raise ResultRefused(f"the bundle is {len(data):,} bytes, over the cap")
    end = data.find(b"\n\n", 0, MAX_HEADER)
    if end < 0:
        raise ResultRefused("the bundle has no header end within 64 KiB: not a bundle")
    lines = data[:end].split(b"\n")
    first = lines.pop(0)
    versions = {b"# v2 git bundle": 2, b"# v3 git bundle": 3}
    if first not in versions:
        raise ResultRefused("the file is not a git bundle of version 2 or 3")
    version = versions[first]
    object_format = "sha1"
    prerequisites: list[str] = []
    refs: list[tuple[str, str]] = []
    for line in lines:
        if line.startswith(b"@"):
            if version != 3:
                raise ResultRefused("a v2 bundle cannot carry capabilities")
            if line == b"@object-format=sha1":
                object_format = "sha1"
            elif line == b"@object-format=sha256":
                object_format = "sha256"
            else:
                raise ResultRefused("the bundle asks for a capability landbot does not take")
            continue
        if line.startswith(b"-"):
            oid = line[1:].split(b" ", 1)[0]
            if not _OID.fullmatch(oid):
                raise ResultRefused("the bundle names a prerequisite that is not an object id")
            prerequisites.append(oid.decode())
            continue
        oid, _, ref = line.partition(b" ")
        if not _OID.fullmatch(oid) or not _REF.fullmatch(ref) or b".." in ref:
            raise ResultRefused("the bundle's header holds a line that is not a ref")
        refs.append((oid.decode(), ref.decode()))
    hexlen = 64 if object_format == "sha256" else 40
    if any(len(o) != hexlen for o in [*prerequisites, *(r[0] for r in refs)]):
        raise ResultRefused(f"the bundle mixes object ids of other lengths than {object_format}")
    if len(refs) != 1:
        raise ResultRefused(f"the bundle carries {len(refs)} refs; landbot takes exactly one")
    objects = walk_pack(data, end + 2, object_format, limits)
    return Bundle(
        version=version,
        object_format=object_format,
        prerequisites=tuple(prerequisites),
        tip=refs[0][0],
        ref=refs[0][1],
        pack_offset=end + 2,
        objects=objects,
    )


def walk_pack(data: bytes, start: int, object_format: str, limits: BundleLimits) -> int:
    """The number of objects in the pack at `data[start:]`, every one's inflated size
    (and every delta's result size) checked against the caps while inflating in small
    steps; ResultRefused for anything over a cap, truncated or corrupt."""
    hash_len = 32 if object_format == "sha256" else 20
    if data[start : start + 4] != b"PACK" or len(data) < start + 12 + hash_len:
        raise ResultRefused("the bundle's pack has no pack header")
    version = int.from_bytes(data[start + 4 : start + 8], "big")
    count = int.from_bytes(data[start + 8 : start + 12], "big")
    if version not in (2, 3):
        raise ResultRefused(f"the bundle's pack is of version {version}, not 2 or 3")
    if count > limits.max_objects:
        raise ResultRefused(
            f"the bundle's pack holds {count:,} objects, over the cap of {limits.max_objects:,}"
        )
    trailer = len(data) - hash_len
    digest = hashlib.sha256 if object_format == "sha256" else hashlib.sha1
    if digest(data[start:trailer]).digest() != data[trailer:]:
        raise ResultRefused("the bundle's pack checksum is wrong: a corrupt pack")
    pos = start + 12
    unpacked = 0
    for _ in range(count):
        if pos >= trailer:
            raise ResultRefused("the bundle's pack ends before its last object")
        c = data[pos]
        kind, size, shift = (c >> 4) & 7, c & 15, 4
        pos += 1
        while c & 0x80:
            if pos >= trailer or shift > 60:
                raise ResultRefused("the bundle's pack holds a corrupt object header")
            c = data[pos]
            size |= (c & 0x7F) << shift
            shift += 7
            pos += 1
        if kind == 6:  # offset delta: a base offset, then the delta's zlib data
            c = data[pos]
            pos += 1
            while c & 0x80:
                if pos >= trailer:
                    raise ResultRefused("the bundle's pack holds a corrupt delta")
                c = data[pos]
                pos += 1
        elif kind == 7:  # reference delta: the base's object id
            pos += hash_len
        elif kind not in (1, 2, 3, 4):
            raise ResultRefused(f"the bundle's pack holds an object of unknown type {kind}")
        if kind in (1, 2, 3, 4) and size > limits.max_object_bytes:
            raise ResultRefused(
                f"the bundle holds an object of {size:,} bytes once inflated, over the cap "
                f"of {limits.max_object_bytes:,}"
            )
        pos, head = _inflate(data, pos, trailer, size)
        if kind in (6, 7):
            result = _delta_result_size(head)
            if result > limits.max_object_bytes:
                raise ResultRefused(
                    f"the bundle holds a delta that makes an object of {result:,} bytes, over "
                    f"the cap of {limits.max_object_bytes:,}"
                )
            size = max(size, result)
        unpacked += size
        if unpacked > limits.max_unpacked_bytes:
            raise ResultRefused(
                f"the bundle's objects come to more than {limits.max_unpacked_bytes:,} bytes "
                "once inflated, over the cap"
            )
    if pos != trailer:
        raise ResultRefused("the bundle's pack holds data after its last object")
    return count


def _inflate(data: bytes, pos: int, end: int, size: int) -> tuple[int, bytes]:
    """Inflate one zlib stream at `data[pos:end]` of exactly `size` bytes, a step at a
    time; (the position after it, its first 32 bytes)."""
    inflater = zlib.decompressobj()
    out = 0
    head = b""
    step = 1 << 16
    try:
        while not inflater.eof:
            if pos >= end:
                raise ResultRefused("the bundle's pack ends inside an object")
            chunk = data[pos : min(pos + step, end)]
            pos += len(chunk)
            piece = inflater.decompress(chunk, step)
            while True:
                out += len(piece)
                if len(head) < 32:
                    head += piece[: 32 - len(head)]
                if out > size:
                    raise ResultRefused("the bundle holds an object larger than it says")
                if not inflater.unconsumed_tail or inflater.eof:
                    break
                piece = inflater.decompress(inflater.unconsumed_tail, step)
    except zlib.error:
        raise ResultRefused("the bundle's pack holds data that does not inflate") from None
    if out != size:
        raise ResultRefused("the bundle holds an object smaller than it says")
    return pos - len(inflater.unused_data), head


def _delta_result_size(head: bytes) -> int:
    """The result size a delta declares (its second varint)."""
    pos = 0
    values: list[int] = []
    for _ in range(2):
        value = shift = 0
        while True:
            if pos >= len(head):
                raise ResultRefused("the bundle holds a delta with a corrupt header")
            c = head[pos]
            pos += 1
            value |= (c & 0x7F) << shift
            shift += 7
            if not c & 0x80:
                break
        values.append(value)
    return values[1]


# --- the quarantine -------------------------------------------------------------------


class Quarantine:
    """A fresh root-only bare repository next to `mirror`, a local clone of it (object
    files hard-linked: nothing is copied, and the mirror's layout check allows no
    alternates file): prerequisites resolve, and nothing imported reaches the mirror
    until `promote`. Removed on exit whatever happens."""

    def __init__(self, mirror: Path, lock: Path, *, timeout: float = 300.0) -> None:
        self.mirror = Path(os.path.realpath(mirror))
        self.lock = lock
        self.timeout = timeout
        self.path = Path(
            tempfile.mkdtemp(prefix=f".{self.mirror.name}.quarantine-", dir=self.mirror.parent)
        )

    def __enter__(self) -> Quarantine:
        try:
            os.chmod(self.path, 0o700)
            # Under the mirror's lock: a gc there must not swap packs under the links.
            with file_lock(self.lock):
                run_git(
                    [
                        "clone",
                        "--bare",
                        "--local",
                        "--quiet",
                        "--no-tags",
                        "--template=",
                        "--end-of-options",
                        str(self.mirror),
                        str(self.path),
                    ],
                    timeout=self.timeout,
                    what="making the quarantine",
                )
            for key, value in (("core.logAllRefUpdates", "false"), ("gc.auto", "0")):
                run_git(["config", key, value], git_dir=self.path)
        except BaseException:
            shutil.rmtree(self.path, ignore_errors=True)
            raise
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        shutil.rmtree(self.path, ignore_errors=True)

    def import_bundle(self, data: bytes, bundle: Bundle, known: set[str]) -> str:
        """Index the bundle's pack (`index-pack --strict`, thin deltas completed from the
        mirror) and point FIX_REF at its tip; the tip. Every prerequisite must be one of
        `known` (the commits the job started from); ResultRefused otherwise."""
        foreign = [p for p in bundle.prerequisites if p not in known]
        if foreign:
            raise ResultRefused(
                f"the bundle builds on {foreign[0][:12]}, which is not the pull request's "
                "head or base the job started from"
            )
        if bundle.tip in known:
            raise ResultRefused("the job made no commit: nothing to publish")
        done = run_git(
            ["index-pack", "--stdin", "--fix-thin", "--strict", "--keep=landbot quarantine"],
            git_dir=self.path,
            config=_FSCK,
            input=data[bundle.pack_offset :],
            check=False,
            timeout=self.timeout,
        )
        if done.returncode != 0:
            message = done.stderr.decode(errors="replace").strip().splitlines()
            raise ResultRefused(
                "the bundle's objects failed git's checks: "
                + (message[-1] if message else f"index-pack exit {done.returncode}")
            )
        # Everything the tip reaches must be here or in the mirror (a tree naming an
        # object of another repository is refused, not looked up elsewhere).
        walk = run_git(
            ["rev-list", "--objects", "--missing=error", bundle.tip, "--not", *sorted(known)],
            git_dir=self.path,
            config=_FSCK,
            check=False,
            timeout=self.timeout,
        )
        if walk.returncode != 0:
            raise ResultRefused(
                f"the fix {bundle.tip[:12]} refers to objects neither it nor the mirror holds"
            )
        kind = run_git(["cat-file", "-t", bundle.tip], git_dir=self.path, check=False)
        if kind.stdout.strip() != b"commit":
            raise ResultRefused("the bundle's ref is not a commit")
        run_git(["update-ref", FIX_REF, bundle.tip], git_dir=self.path)
        return bundle.tip

    def promote(self, ref: str) -> None:
        """Copy the fix's objects into the mirror under `ref` (call under the mirror lock,
        only after every rule passed)."""
        run_git(
            [
                "fetch",
                "--no-tags",
                "--no-write-fetch-head",
                "--quiet",
                "--end-of-options",
                str(self.path),
                f"+{FIX_REF}:{ref}",
            ],
            git_dir=self.mirror,
            config=_FSCK,
            timeout=self.timeout,
            what="copying the validated fix into the mirror",
        )
