"""A fix job's result as an artifact: what a runner writes, and what the host reads back.

    write_artifact(out_dir, verdict_json, bundle)       # the runner: `landbot fixer run --out`
    verdict, bundle = read_artifact(zip_bytes_or_dir)   # the host: hostile data, checked
    tip = take_bundle(bundle, quarantine, known)        # then as a local job's bundle

Groundwork for the `actions` fixer backend (issue 17): a fix job runs on a GitHub Actions
runner of the repository (`.github/workflows/landbot-fix-job.yml`) and hands back data only,
never a credential. The folder holds exactly three files at its root:

- `verdict.json`: the verdict JSON `landbot fixer run` prints (UTF-8, judged by verdict.py
  on the host as a local job's verdict is);
- `result.bundle`: the job's new commits as a git bundle, absent when it made none (checked
  by landbot/git/quarantine.py `parse_bundle` and imported into a quarantine, exactly as a
  local job's bundle);
- `manifest.json`: the format, and each other file's size and sha256.

GitHub serves an artifact as one zip file: `GET /repos/{owner}/{repo}/actions/artifacts/
{artifact_id}/zip` answers 302 with a `Location` (a blob-storage URL valid for one minute;
the `archive_format` must be `zip`; a GitHub App needs `actions: read`)
(https://docs.github.com/en/rest/actions/artifacts#download-an-artifact).
actions/upload-artifact v4 streams the files into a ZIP archive per artifact, immutable once
uploaded (https://github.com/actions/upload-artifact#v4---whats-new, and
actions/toolkit packages/artifact/docs/faq.md, "Compression? ZIP? How is my artifact
stored?"); a directory given as `path` is uploaded with its contents at the archive's root,
and files whose names start with a dot are left out (v4.4, `include-hidden-files`). The
workflow uses v6, which changed only the runtime to Node.js 24 (v5 and v6 release notes,
https://github.com/actions/upload-artifact/releases).

Everything in the zip came from a runner that ran the pull request's own code (the
repository's setup steps run there, outside any sandbox), so the zip is read as hostile:
no `..`, absolute or backslashed names, no symbolic link, folder or other non-regular entry,
no duplicate name, no unexpected file, no encryption, only stored or deflated entries; every
entry's declared size is capped before it is inflated, inflation stops one byte past the
declared size (a central directory that lies is caught), the compression ratio of a large
entry is capped, the manifest must name exactly the files present with their true sizes and
digests, and the verdict must be UTF-8. Each refusal is an `ArtifactRefused` (a
`ResultRefused`) with one line saying what was wrong.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import stat
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from landbot.core.zips import CORRUPT, read_bounded
from landbot.errors import LandbotError
from landbot.git.quarantine import (
    BUNDLE_NAME,
    BundleLimits,
    Quarantine,
    ResultRefused,
    parse_bundle,
)

VERDICT_NAME = "verdict.json"
MANIFEST_NAME = "manifest.json"
FORMAT = "landbot-fix-result"
VERSION = 1
NAMES = (MANIFEST_NAME, VERDICT_NAME, BUNDLE_NAME)
_S_IFMT = 0o170000


class ArtifactRefused(ResultRefused):
    """The artifact cannot be taken: the message names what was wrong with it."""


@dataclass(frozen=True)
class ArtifactLimits:
    """Caps checked before (and while) anything is inflated."""

    max_zip_bytes: int = 80 * 1024 * 1024  # the download itself
    max_entries: int = 16  # entries looked at, before the names are checked
    max_manifest_bytes: int = 16 * 1024
    max_verdict_bytes: int = 64 * 1024  # verdict.py judges far less than this
    max_bundle_bytes: int = BundleLimits().max_bytes
    max_total_bytes: int = BundleLimits().max_bytes + 80 * 1024  # every entry, inflated
    max_ratio: int = 100  # inflated / compressed, for an entry over ratio_floor
    ratio_floor: int = 1024 * 1024  # small entries (a verdict) may compress well

    def cap(self, name: str) -> int:
        return {
            MANIFEST_NAME: self.max_manifest_bytes,
            VERDICT_NAME: self.max_verdict_bytes,
            BUNDLE_NAME: self.max_bundle_bytes,
        }[name]


class Artifact(NamedTuple):
    verdict: bytes
    bundle: bytes | None


# --- the runner's side ------------------------------------------------------------------


def manifest(files: dict[str, bytes]) -> bytes:
    """The manifest naming `files` (name -> content) with their sizes and sha256."""
    entries = {
        name: {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
        for name, data in sorted(files.items())
    }
    body = {"format": FORMAT, "version": VERSION, "files": entries}
    return (json.dumps(body, indent=2, sort_keys=True) + "\n").encode()


def write_artifact(out_dir: Path, verdict: bytes, bundle: bytes | None) -> list[Path]:
    """Write the artifact's files into `out_dir` (created if absent; it must hold nothing
    else, or the upload would carry that too and the host would refuse it); the paths."""
    try:
        verdict.decode("utf-8")
    except UnicodeDecodeError:
        raise LandbotError("the verdict to write is not UTF-8 text") from None
    out_dir.mkdir(parents=True, exist_ok=True)
    if out_dir.is_symlink():
        raise LandbotError(f"--out {out_dir} is a symbolic link; pass a real folder")
    if any(out_dir.iterdir()):
        raise LandbotError(f"--out {out_dir} is not empty; pass a new or empty folder")
    files = {VERDICT_NAME: verdict}
    if bundle is not None:
        files[BUNDLE_NAME] = bundle
    written = []
    # The manifest last: an interrupted write leaves no manifest, which the host refuses.
    for name, data in [*files.items(), (MANIFEST_NAME, manifest(files))]:
        path = out_dir / name
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        written.append(path)
    return written


# --- the host's side --------------------------------------------------------------------


def read_artifact(source: bytes | Path, limits: ArtifactLimits = ArtifactLimits()) -> Artifact:
    """The verdict and the bundle (None when the job made no commit) from an artifact: the
    zip GitHub serves (bytes) or a folder holding its files. ArtifactRefused otherwise."""
    files = _read_dir(source, limits) if isinstance(source, Path) else _read_zip(source, limits)
    return _check(files)


def take_bundle(
    data: bytes, quarantine: Quarantine, known: set[str], limits: BundleLimits = BundleLimits()
) -> str:
    """The artifact's bundle into `quarantine`, as a local job's is (landbot/land/publish.py
    `take_result`): parsed and capped, then imported; the new head."""
    bundle = parse_bundle(data, limits)
    return quarantine.import_bundle(data, bundle, known)


def _check_name(name: str) -> None:
    if not name:
        raise ArtifactRefused("the artifact holds an entry with an empty name")
    shown = ascii(name)[1:-1][:80]
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        raise ArtifactRefused(f"the artifact holds an absolute path {shown}: nothing taken")
    if "\\" in name or "\0" in name:
        raise ArtifactRefused(f"the artifact holds a name with a backslash or NUL: {shown}")
    if ".." in name.split("/"):
        raise ArtifactRefused(f"the artifact holds a path out of its folder {shown}")
    if name not in NAMES:
        raise ArtifactRefused(
            f"the artifact holds an unexpected file {shown}; it may hold only " + ", ".join(NAMES)
        )


def _read_zip(data: bytes, limits: ArtifactLimits) -> dict[str, bytes]:
    if len(data) > limits.max_zip_bytes:
        raise ArtifactRefused(
            f"the artifact is {len(data):,} bytes, over the cap of {limits.max_zip_bytes:,}"
        )
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise ArtifactRefused(f"the artifact is not a zip file: {exc}") from None
    with archive:
        infos = archive.infolist()
        if len(infos) > limits.max_entries:
            raise ArtifactRefused(f"the artifact holds {len(infos)} entries; at most 3 belong")
        seen: set[str] = set()
        for info in infos:
            name = info.filename
            _check_name(name.rstrip("/") if info.is_dir() else name)
            if name in seen:
                raise ArtifactRefused(f"the artifact holds {name} twice: nothing taken")
            seen.add(name)
            mode = (info.external_attr >> 16) & _S_IFMT
            if info.is_dir() or mode not in (0, stat.S_IFREG):
                kind = "a symbolic link" if mode == stat.S_IFLNK else "not a regular file"
                raise ArtifactRefused(f"the artifact's {name} is {kind}: nothing taken")
            if info.flag_bits & 0x1:
                raise ArtifactRefused(f"the artifact's {name} is encrypted")
            if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
                raise ArtifactRefused(
                    f"the artifact's {name} uses compression method {info.compress_type}; "
                    "only stored or deflated entries are taken"
                )
            cap = limits.cap(name)
            if info.file_size > cap:
                raise ArtifactRefused(
                    f"the artifact's {name} is {info.file_size:,} bytes inflated, over the "
                    f"cap of {cap:,}"
                )
            ratio = info.file_size / max(info.compress_size, 1)
            if info.file_size > limits.ratio_floor and ratio > limits.max_ratio:
                raise ArtifactRefused(
                    f"the artifact's {name} inflates {ratio:,.0f} times, over the cap of "
                    f"{limits.max_ratio}: a zip bomb"
                )
        _check_total(sum(info.file_size for info in infos), limits)
        return {info.filename: _inflate(archive, info) for info in infos}


def _check_total(total: int, limits: ArtifactLimits) -> None:
    if total > limits.max_total_bytes:
        raise ArtifactRefused(
            f"the artifact's files come to {total:,} bytes inflated, over the cap of "
            f"{limits.max_total_bytes:,}"
        )


def _inflate(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    """The entry's bytes, read with core/zips.py's bound."""
    try:
        data = read_bounded(archive, info)
    except CORRUPT as exc:
        # CRC mismatch, a local header that names another file, a truncated stream.
        raise ArtifactRefused(f"the artifact's {info.filename} is corrupt: {exc}") from None
    except zlib.error as exc:  # a crafted deflate stream
        raise ArtifactRefused(f"the artifact's {info.filename} does not inflate: {exc}") from None
    if len(data) != info.file_size:
        raise ArtifactRefused(
            f"the artifact's {info.filename} inflates to "
            f"{'more' if len(data) > info.file_size else 'less'} than the {info.file_size:,} "
            "bytes it declares"
        )
    return data


def _read_dir(folder: Path, limits: ArtifactLimits) -> dict[str, bytes]:
    """The files of an unpacked artifact, opened without following links."""
    try:
        dir_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        raise ArtifactRefused(f"cannot open the artifact folder {folder}: {exc.strerror}") from None
    try:
        names = os.listdir(dir_fd)
        if len(names) > limits.max_entries:
            raise ArtifactRefused(f"the artifact holds {len(names)} entries; at most 3 belong")
        files: dict[str, bytes] = {}
        for name in sorted(names):
            _check_name(name)
            try:
                fd = os.open(
                    name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd
                )
            except OSError:
                raise ArtifactRefused(
                    f"the artifact's {name} is a symbolic link or cannot be opened: nothing taken"
                ) from None
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                os.close(fd)
                raise ArtifactRefused(f"the artifact's {name} is not a regular file")
            with os.fdopen(fd, "rb") as handle:
                cap = limits.cap(name)
                if st.st_size > cap:
                    raise ArtifactRefused(
                        f"the artifact's {name} is {st.st_size:,} bytes, over the cap of {cap:,}"
                    )
                data = handle.read(cap + 1)
                if len(data) > cap:
                    raise ArtifactRefused(f"the artifact's {name} grew over the cap of {cap:,}")
            files[name] = data
            _check_total(sum(len(d) for d in files.values()), limits)
        return files
    finally:
        os.close(dir_fd)


def _check(files: dict[str, bytes]) -> Artifact:
    """The manifest against the files, then the verdict's encoding."""
    raw = files.pop(MANIFEST_NAME, None)
    if raw is None:
        raise ArtifactRefused("the artifact holds no manifest.json: not a landbot fix result")
    try:
        body = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise ArtifactRefused("the artifact's manifest.json is not JSON") from None
    if (
        not isinstance(body, dict)
        or body.get("format") != FORMAT
        or body.get("version") != VERSION
        or not isinstance(body.get("files"), dict)
    ):
        raise ArtifactRefused(
            f"the artifact's manifest is not a {FORMAT} manifest of version {VERSION}"
        )
    listed: dict[str, object] = body["files"]
    if set(listed) != set(files):
        missing = sorted(set(listed) - set(files))
        extra = sorted(set(files) - set(listed))
        what = f"names {missing[0]}, which is absent" if missing else f"leaves out {extra[0]}"
        raise ArtifactRefused(f"the artifact's manifest {what}: the manifest lies")
    for name, data in files.items():
        entry = listed[name]
        if not isinstance(entry, dict):
            raise ArtifactRefused(f"the artifact's manifest entry for {name} is not an object")
        if (
            entry.get("size") != len(data)
            or entry.get("sha256") != hashlib.sha256(data).hexdigest()
        ):
            raise ArtifactRefused(
                f"the artifact's {name} does not match the size and sha256 its manifest gives"
            )
    verdict = files.get(VERDICT_NAME)
    if verdict is None:
        raise ArtifactRefused("the artifact holds no verdict.json")
    try:
        verdict.decode("utf-8")
    except UnicodeDecodeError:
        raise ArtifactRefused("the artifact's verdict.json is not UTF-8 text") from None
    return Artifact(verdict=verdict, bundle=files.get(BUNDLE_NAME))
