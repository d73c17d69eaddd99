"""An entry of a zip from someone else (a runner's artifact), inflated in memory with a
bound: never more than one byte past the size its central directory declares, so an entry
that understates its size is caught before the rest of it is inflated. Callers word the
refusals (fixer/artifact.py refuses the artifact, triage/junit.py skips the report)."""

from __future__ import annotations

import zipfile

_CHUNK = 1 << 16

# What zipfile and zlib raise for an entry that is corrupt: a CRC mismatch, a local header
# naming another file, a truncated or crafted deflate stream.
CORRUPT = (zipfile.BadZipFile, OSError, EOFError, ValueError)


def read_bounded(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    """The entry's bytes, at most `info.file_size + 1` of them (more than declared when the
    result is longer). Raises what CORRUPT names, or zlib.error."""
    chunks: list[bytes] = []
    got = 0
    with archive.open(info) as entry:
        while got <= info.file_size:
            piece = entry.read(min(_CHUNK, info.file_size + 1 - got))
            if not piece:
                break
            chunks.append(piece)
            got += len(piece)
    return b"".join(chunks)
