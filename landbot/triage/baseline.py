"""The same job's passing log, reduced to what a failing log is compared with.

LogSage and CiDiff (issue 26) explain a failure by what is *new*: the lines of the failing
log whose normalised form the job's last green run never printed. A ``Baseline`` is that
green run's contribution: the set of its normalised lines, per step where the log shows
steps (the ``##[group]Run …`` sections; ``""`` holds the lines outside any step, and the
whole of a plain log from another CI).

Normalising makes two runs of the same job print the same line: timestamps, ANSI codes
and control characters go (as ``log.clean_line``); every digit becomes ``0`` (durations,
elapsed counters, ports, percentages, line numbers in stack frames, dates); a token of
hex digits and letters that holds a digit becomes ``0`` (SHAs, hex ids, UUIDs); a
temporary path's random part goes. Lines are kept as 64-bit keys (BLAKE2b), so a
baseline is small enough to keep in a database and to hold in memory whatever the log's
size (at most ``MAX_KEYS``).

Reading is streamed like ``parse_log`` and done on whole blocks with C-level passes
(``bytes.translate``, regular expressions with a literal start, ``split``, ``set``): a
per-line Python loop over a 200 MB log would be too slow. The same ``mask`` serves the
failing log's lines (``line_key``), so both sides agree.
"""

from __future__ import annotations

import hashlib
import itertools
import re
import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property

from landbot.errors import LandbotError
from landbot.triage.log import (
    _ANSI,
    DEFAULT_MAX_BYTES,
    LINE_CAP,
    LogSource,
    _blocks,
)

__all__ = [
    "Baseline",
    "BaselineError",
    "line_key",
    "mask",
    "read_baseline",
    "step_key",
]

# Bytes of a normalised line that make its key: longer lines rarely differ only after it.
KEY_BYTES = 512
# Keys kept of one passing log (about 60 MB of Python ints at worst while reading, 8 MB
# serialised): a log with more distinct lines is compared on its first ones.
MAX_KEYS = 400_000
MAX_STEPS = 2_000
TITLE_CAP = 1_000
# Distinct raw lines remembered to skip hashing them again (cleared when full).
_RECENT_CAP = 50_000
# …and at most this many bytes of them: a log of long distinct lines stays bounded.
_RECENT_BYTES = 8 * 1024 * 1024

_MAGIC = b"LBBL"
_VERSION = 1
_HEAD = struct.Struct(">4sBBI")  # magic, version, flags, steps
_STEP = struct.Struct(">HI")  # title bytes, keys
_COMPLETE = 1


class BaselineError(LandbotError, ValueError):
    """Bytes that are not a serialised baseline (refused, never interpreted)."""


# --- normalising ------------------------------------------------------------------------

_DIGITS = bytes.maketrans(b"123456789", b"000000000")
# After the digits are zeros: the runner's timestamp prefix at a line's start.
_STAMP = re.compile(rb"0000-00-00T00:00:00(?:\.0+)?Z ")
_ANSI_B = re.compile(_ANSI.pattern.encode())
# clean_line's control characters (after the ANSI codes and the redraws).
_CONTROLS = bytes(c for c in range(32) if c not in (9, 10)) + b"\x7f"
# A hex token that holds a digit: from its first zero on, then the hex letters before it
# (the same pattern on the reversed text): `3fa9c0d` and `e29b41d4` both become `0`.
_HEX_AFTER = re.compile(rb"0[0a-fA-F]*")
_HEX_BEFORE = re.compile(rb"0[a-fA-F]+")
# Temporary files and folders: a random name under a temp root.
_TEMP = re.compile(
    rb"(?:/tmp/|/var/folders/|\\Temp\\|/Temp/|\\tmp\\)[^\s/\\'\"]+"
    rb"|\btmp[\w-]{6,}|\bpytest-0\b"
)


def _mask_cleaned(data: bytes) -> bytes:
    """Mask what varies between runs in cleaned text (lines joined by ``\\n``)."""
    data = data.translate(_DIGITS)
    if b"0" in data:
        data = _HEX_AFTER.sub(b"0", data)
        data = _HEX_BEFORE.sub(b"0", data[::-1])[::-1]
    if b"tmp" in data or b"Temp" in data or b"/var/folders/" in data:
        data = _TEMP.sub(b"<tmp>", data)
    return data


def mask(text: str) -> bytes:
    """The normalised form of one cleaned line (a ``Line``'s text), as the key sees it."""
    return _mask_cleaned(text.encode("utf-8", "replace"))


def _key(normalised: bytes) -> int:
    return int.from_bytes(hashlib.blake2b(normalised[:KEY_BYTES], digest_size=8).digest())


def line_key(text: str) -> int:
    """The key of one cleaned line (``Line.text``): the same as the baseline's for the
    same line printed by another run."""
    return _key(mask(text).strip())


def step_key(title: str | None) -> str:
    """A step's title as baselines index it (``""``: outside any step)."""
    if not title:
        return ""
    return mask(title).decode("utf-8", "replace").strip()[:TITLE_CAP]


def _raw_key(raw: bytes) -> int | None:
    """The key of one raw line whose digits are already zeros (``clean_line``, then
    ``mask``), None for a blank one."""
    if raw.endswith(b"\r"):
        raw = raw[:-1]
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    m = _STAMP.match(raw)
    if m is not None:
        raw = raw[m.end() :]
    if b"\x1b" in raw:
        raw = _ANSI_B.sub(b"", raw)
    if b"\r" in raw:
        # A progress bar redraws the line: a terminal shows the last non-empty drawing.
        parts = [p for p in raw.split(b"\r") if p.strip()]
        raw = parts[-1] if parts else b""
    line = _mask_cleaned(raw.translate(None, _CONTROLS)).strip()
    return _key(line) if line else None


# --- the value --------------------------------------------------------------------------


@dataclass(frozen=True)
class Baseline:
    """A passing log's normalised lines, as keys, per step (``""``: outside any step)."""

    steps: tuple[tuple[str, frozenset[int]], ...]
    complete: bool = True
    """False when the passing log had more distinct lines than ``MAX_KEYS``."""

    @cached_property
    def _by_step(self) -> dict[str, frozenset[int]]:
        out: dict[str, frozenset[int]] = {}
        for title, keys in self.steps:
            out[title] = out.get(title, frozenset()) | keys
        return out

    @property
    def size(self) -> int:
        return sum(len(keys) for _t, keys in self.steps)

    def has_step(self, title: str | None) -> bool:
        return step_key(title) in self._by_step

    def seen(self, key: int, step: str | None = None) -> bool:
        """Whether the passing log printed a line of this key: in the step of that title
        when it has one, else anywhere (a renamed step, a plain log)."""
        if step is not None:
            keys = self._by_step.get(step_key(step))
            if keys is not None:
                return key in keys
        return any(key in keys for _t, keys in self.steps)

    def to_bytes(self) -> bytes:
        """A compact, versioned form: header, then per step its title and sorted keys."""
        out = [_HEAD.pack(_MAGIC, _VERSION, _COMPLETE if self.complete else 0, len(self.steps))]
        for title, keys in self.steps:
            raw = title.encode("utf-8")[:TITLE_CAP]
            out.append(_STEP.pack(len(raw), len(keys)))
            out.append(raw)
            ordered = sorted(keys)
            out.append(struct.pack(f">{len(ordered)}Q", *ordered))
        return b"".join(out)

    @classmethod
    def from_bytes(cls, data: bytes) -> Baseline:
        """Read ``to_bytes``'s form; anything else (garbage, truncated, too big, another
        version) is refused with a BaselineError. Nothing in it is evaluated."""
        view = memoryview(bytes(data))
        if len(view) < _HEAD.size:
            raise BaselineError("not a landbot baseline: too short")
        magic, version, flags, count = _HEAD.unpack_from(view, 0)
        if magic != _MAGIC:
            raise BaselineError("not a landbot baseline: wrong magic bytes")
        if version != _VERSION:
            raise BaselineError(f"landbot baseline version {version} is not supported")
        if flags & ~_COMPLETE:
            raise BaselineError("not a landbot baseline: unknown flags")
        if count > MAX_STEPS:
            raise BaselineError(f"baseline has {count} steps, more than {MAX_STEPS}")
        pos = _HEAD.size
        steps: list[tuple[str, frozenset[int]]] = []
        total = 0
        for _ in range(count):
            if pos + _STEP.size > len(view):
                raise BaselineError("baseline is truncated")
            size, n = _STEP.unpack_from(view, pos)
            pos += _STEP.size
            total += n
            if size > TITLE_CAP or total > MAX_KEYS:
                raise BaselineError("baseline is larger than a baseline can be")
            if pos + size + 8 * n > len(view):
                raise BaselineError("baseline is truncated")
            try:
                title = bytes(view[pos : pos + size]).decode("utf-8")
            except UnicodeDecodeError:
                raise BaselineError("baseline step title is not UTF-8") from None
            pos += size
            keys = struct.unpack_from(f">{n}Q", view, pos)
            pos += 8 * n
            if any(a >= b for a, b in itertools.pairwise(keys)):
                raise BaselineError("baseline keys are not in order")
            steps.append((title, frozenset(keys)))
        if pos != len(view):
            raise BaselineError("baseline has trailing bytes")
        return cls(tuple(steps), complete=bool(flags & _COMPLETE))


# --- reading ----------------------------------------------------------------------------

_RUN = b"##[group]Run "


@dataclass
class _Reader:
    """Keys of the distinct lines, per step. A block's lines are compared as they are
    (digits made zeros: a C-level ``translate``) against the lines seen lately, so only
    a line not seen yet is cleaned, masked and hashed: a test log prints the same few
    shapes of line millions of times."""

    steps: dict[str, set[int]]
    title: str = ""
    keys: int = 0
    complete: bool = True
    recent: set[bytes] = field(default_factory=set)
    recent_bytes: int = 0

    def add(self, block: bytes) -> None:
        fresh = set(block.split(b"\n"))
        fresh -= self.recent
        if not fresh:
            return
        size = sum(map(len, fresh))
        if len(self.recent) > _RECENT_CAP or self.recent_bytes + size > _RECENT_BYTES:
            self.recent.clear()
            self.recent_bytes = 0
        self.recent |= fresh
        self.recent_bytes += size
        keys = self.steps.setdefault(self.title, set())
        for raw in fresh:
            key = _raw_key(raw[:LINE_CAP])
            if key is None or key in keys:
                continue
            if self.keys >= MAX_KEYS:
                self.complete = False
                return
            keys.add(key)
            self.keys += 1

    def open_step(self, title: str) -> None:
        self.title = title
        self.recent = set()  # another step: its lines are its own
        self.recent_bytes = 0


def _step_cuts(data: bytes) -> Iterator[tuple[int, int, str | None]]:
    """(start, end, title) of the parts of a block (digits made zeros); title None: the
    part continues the step before it. A header is ``##[group]Run …`` at a line's start
    (after a BOM and the runner's timestamp)."""
    pos = 0
    title: str | None = None
    at = data.find(_RUN)
    while at != -1:
        start = data.rfind(b"\n", 0, at) + 1
        end = data.find(b"\n", at)
        end = len(data) if end == -1 else end
        prefix = data[start:at].removeprefix(b"\xef\xbb\xbf")
        if not prefix or _STAMP.fullmatch(prefix):
            yield pos, start, title
            raw = data[at + len(b"##[group]") : end]
            clean = _ANSI_B.sub(b"", raw).translate(None, _CONTROLS)
            title = _mask_cleaned(clean).decode("utf-8", "replace").strip()[:TITLE_CAP]
            pos = start
        at = data.find(_RUN, end)
    yield pos, len(data), title


def read_baseline(source: LogSource, *, max_bytes: int = DEFAULT_MAX_BYTES) -> Baseline:
    """Read a passing log (a binary file, an iterable of byte chunks, or bytes) into a
    Baseline; holds one block (about 1 MiB), the lines seen lately and the keys.

    ``max_bytes`` bounds the block a chunk without newlines can grow to (as parse_log's
    ``LINE_CAP`` does), at least one line's cap.
    """
    if max_bytes < 1:
        raise ValueError("max_bytes must be at least 1")
    reader = _Reader(steps={})
    for block in _bounded(_blocks(source), max(LINE_CAP, max_bytes)):
        data = block.translate(_DIGITS)
        for start, end, title in _step_cuts(data):
            if title is not None:
                reader.open_step(title)
            if end > start:
                reader.add(data[start:end])
    steps = tuple((title, frozenset(keys)) for title, keys in reader.steps.items() if keys)
    return Baseline(steps[:MAX_STEPS], complete=reader.complete)


def _bounded(blocks: Iterable[bytes], cap: int) -> Iterator[bytes]:
    for block in blocks:
        for pos in range(0, len(block), cap):
            yield block[pos : pos + cap]
