"""Read a GitHub Actions job log as a stream and keep only what explains its failure.

A job log can be hundreds of megabytes, so it is never read whole: chunks are cut into
blocks of complete lines, and only C-level searches (one regular expression for the
``##[…]`` markers, ``bytes.find``/``count``) run on every block. They follow the log's
structure (``##[group]Run …`` step headers, nested groups, ``Post job cleanup.``) until
the first real error: a ``##[error]`` line outside a step's header group, or a runner
message (shutdown signal, lost communication).

Until then the last ``max_bytes`` of lines are kept in a ring (the tail of what was read);
at the first error, the failing step's lines before it are taken from that ring (three
quarters of the bound at most), the ring is dropped, and the rest of the step after the
error is collected (the last quarter). Only this
*region* is decoded into text lines; everything else is merely counted, so line numbers are
always the file's true 1-based line numbers, however much was dropped.

Lines are numbered by ``\\n`` alone (a ``\\r`` inside a line is a progress bar's redraw).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import Protocol, cast

DEFAULT_MAX_BYTES = 20 * 1024 * 1024
# Lines of the failing step kept on each side of the first error: a test runner's summary
# and the ``##[error]`` that follows it are near the error, not megabytes away.
DEFAULT_CONTEXT_LINES = 20_000
READ_SIZE = 1 << 20
# A line longer than this keeps only its start (its number is still right).
LINE_CAP = 64 * 1024
# Characters of a line kept as text for matching and display.
TEXT_CAP = 4000
# Lines of a step's header group (its script, shell and env) kept.
SCRIPT_LINES_CAP = 200

BOM = b"\xef\xbb\xbf"
_PREFIX = re.compile(rb"(?:\xef\xbb\xbf)?(?:\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z )?")
_TIMESTAMP = re.compile(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z ")
# CSI sequences (colours, cursor moves), OSC sequences (hyperlinks), two-byte escapes.
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]?")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")

_MARKERS = re.compile(rb"##\[(?:group|endgroup|error)\]")
_GROUP = b"##[group]"
_RUN = b"##[group]Run "
_ENDGROUP = b"##[endgroup]"
_ERROR = b"##[error]"
_POST = b"Post job cleanup."
_ANCHORED = frozenset({_GROUP, _ENDGROUP, _ERROR, _POST})
# The runner's own failure messages; they may come without an ``##[error]`` prefix.
_RUNNER_MESSAGES = (b"received a shutdown signal", b"lost communication with the server")


class SupportsRead(Protocol):
    def read(self, size: int, /) -> bytes: ...


LogSource = SupportsRead | Iterable[bytes] | bytes | bytearray | memoryview


@dataclass(frozen=True, slots=True)
class Line:
    """One line of the log: its 1-based number in the file and its cleaned text.

    ``header`` marks the lines of the step's header group (the echoed script, ``shell:``,
    ``env:``): they show what ran, never what happened.
    """

    number: int
    text: str
    header: bool = False

    @property
    def is_error(self) -> bool:
        return self.text.startswith("##[error]") and not self.header


@dataclass(frozen=True)
class ParsedLog:
    """What the parser kept of one job log."""

    line_count: int
    byte_count: int
    first_error: int | None
    """Line of the first real error, None when the log shows no failure."""
    step_title: str | None
    """Title of the failing step's section (``Run npm ci``), None when no section precedes
    the first error (set-up, post-job cleanup) or there is no error."""
    step_line: int | None
    step_script: tuple[str, ...] = ()
    """The failing step's header group lines (script, shell, env), cleaned."""
    region: tuple[Line, ...] = ()
    """The failing step's lines around the first error, in file order."""
    region_truncated: bool = False
    """True when the region starts after the step's start (cut by the bounds)."""
    retained_peak: int = 0
    """Most bytes of the log held at once (the bound's witness)."""

    @cached_property
    def output(self) -> TextIndex:
        """The region's non-header lines, searchable at C speed."""
        return TextIndex(tuple(line for line in self.region if not line.header))

    @cached_property
    def error_annotations(self) -> tuple[int, ...]:
        """Lines of the ``##[error]`` annotations in the failing step."""
        return tuple(line.number for line in self.region if line.is_error)

    @cached_property
    def exit_code(self) -> int | None:
        """The failing process's exit code (``Process completed with exit code N``)."""
        found: int | None = None
        for idx, m in self.output.grep(_EXIT_CODE, ["\n##[error]Process completed"]):
            found = int(m.group(1))
            if self.first_error is None or self.output.lines[idx].number >= self.first_error:
                return found
        return found


_EXIT_CODE = re.compile(r"^##\[error\]Process completed with exit code (\d+)")


class TextIndex:
    """The region's lines joined into one string, searched at C speed.

    A regular expression anchored with ``(?m)^`` is tried at every position of a string,
    which is slow; so recognizers name literal *hints* that ``str.find`` locates, and their
    pattern runs only on the lines holding a hint. A hint that starts with ``\\n`` matches at
    the start of a line (the text starts with a newline so the first line has one too).
    """

    def __init__(self, lines: tuple[Line, ...]) -> None:
        self.lines = lines
        self.text = "\n" + "\n".join(line.text for line in lines)
        starts: list[int] = []
        pos = 1
        for line in lines:
            starts.append(pos)
            pos += len(line.text) + 1
        self._starts = starts
        self._lower: str | None = None

    def index_at(self, offset: int) -> int:
        """Index in ``lines`` of the line holding ``offset`` of ``text`` (-1: before it)."""
        return bisect_right(self._starts, offset) - 1

    def candidates(self, hints: Iterable[str], *, ignore_case: bool = False) -> list[int]:
        """Indexes of the lines that contain one of `hints`, in order."""
        if not self.lines:
            return []
        if ignore_case:
            if self._lower is None:
                self._lower = self.text.lower()
            text = self._lower
        else:
            text = self.text
        found: set[int] = set()
        for hint in hints:
            shift = 1 if hint.startswith("\n") else 0
            pos = text.find(hint)
            while pos != -1:
                idx = self.index_at(pos + shift)
                found.add(idx)
                line_end = self._starts[idx + 1] - 1 if idx + 1 < len(self._starts) else len(text)
                pos = text.find(hint, max(pos + 1, line_end))
        return sorted(found)

    def grep(
        self, pattern: re.Pattern[str], hints: Iterable[str], *, ignore_case: bool = False
    ) -> Iterator[tuple[int, re.Match[str]]]:
        """Lines (index, match) where `pattern` matches, among those holding a hint."""
        for idx in self.candidates(hints, ignore_case=ignore_case):
            m = pattern.search(self.lines[idx].text)
            if m is not None:
                yield idx, m

    def search(self, pattern: re.Pattern[str]) -> tuple[int, re.Match[str]] | None:
        """The first match of `pattern` over the whole text (for patterns without hints)."""
        for m in pattern.finditer(self.text):
            idx = self.index_at(m.start())
            if idx >= 0:
                return idx, m
        return None


def clean_line(raw: bytes) -> str:
    """The text of one raw line: no BOM, timestamp, ANSI codes or control characters."""
    if raw.endswith(b"\n"):
        raw = raw[:-1]
    if raw.endswith(b"\r"):
        raw = raw[:-1]
    if raw.startswith(BOM):
        raw = raw[3:]
    m = _TIMESTAMP.match(raw)
    if m:
        raw = raw[m.end() :]
    text = raw.decode("utf-8", "replace")
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    if "\r" in text:
        # A progress bar redraws the line: a terminal shows the last non-empty drawing.
        parts = [p for p in text.split("\r") if p.strip()]
        text = parts[-1] if parts else ""
    text = _CONTROL.sub("", text)
    return text[:TEXT_CAP]


def _chunks(source: LogSource) -> Iterator[bytes]:
    if isinstance(source, bytes | bytearray | memoryview):
        yield bytes(source)
        return
    read = getattr(source, "read", None)
    if callable(read):
        while True:
            chunk = read(READ_SIZE)
            if not chunk:
                return
            yield bytes(chunk)
    else:
        for chunk in cast(Iterable[bytes], source):
            yield bytes(chunk)


def _blocks(source: LogSource) -> Iterator[bytes]:
    """Blocks of complete lines; the last block may lack its final newline.

    A line that grows past LINE_CAP without a newline keeps only its start, so a log
    without newlines cannot make this hold more than LINE_CAP bytes of it.
    """
    carry = b""
    skipping = False
    for chunk in _chunks(source):
        if not chunk:
            continue
        last = chunk.rfind(b"\n")
        if last == -1:
            if not skipping:
                carry += chunk
                if len(carry) > LINE_CAP:
                    carry, skipping = carry[:LINE_CAP], True
            continue
        # While skipping, the rest of an overlong line is dropped up to its newline.
        begin = chunk.find(b"\n") if skipping else 0
        block = carry + chunk[begin : last + 1]
        carry, skipping = chunk[last + 1 :], False
        if len(carry) > LINE_CAP:
            carry, skipping = carry[:LINE_CAP], True
        yield block
    if carry:
        yield carry


def _line_count(data: bytes) -> int:
    n = data.count(b"\n")
    return n if not data or data.endswith(b"\n") else n + 1


def _lines_in(data: bytes, pos: int, end: int) -> int:
    """Lines in data[pos:end], counting an unterminated last one."""
    if end <= pos:
        return 0
    return data.count(b"\n", pos, end) + (0 if data[end - 1] == 0x0A else 1)


def _offset_of_line(data: bytes, skip: int) -> int:
    """Offset in `data` of the start of its line number `skip` (0-based)."""
    pos = 0
    for _ in range(skip):
        nl = data.find(b"\n", pos)
        if nl == -1:
            return len(data)
        pos = nl + 1
    return pos


def _at_line_start(data: bytes, pos: int) -> int | None:
    """Start of the line holding `pos` when only a BOM and a timestamp precede `pos`."""
    start = data.rfind(b"\n", 0, pos) + 1
    if pos - start > 40:
        return None
    if _PREFIX.fullmatch(data, start, pos) is None:
        return None
    return start


@dataclass(slots=True)
class _Block:
    first: int
    data: bytes


@dataclass
class _Header:
    title: str
    line: int
    end: int | None = None
    script: bytes = b""

    def add_script(self, lines: bytes) -> None:
        room = LINE_CAP - len(self.script)
        if room <= 0:
            return
        part = lines[:room]
        if len(lines) > room:  # keep whole lines only
            part = part[: part.rfind(b"\n") + 1]
        self.script += part


@dataclass
class _Scanner:
    max_bytes: int
    context_lines: int
    line: int = 1
    byte_count: int = 0
    ring: deque[_Block] = field(default_factory=deque)
    ring_bytes: int = 0
    peak: int = 0
    depth: int = 0
    in_header: bool = False
    header: _Header | None = None
    section_start: int = 1
    error_line: int | None = None
    region: list[_Block] = field(default_factory=list)
    region_bytes: int = 0
    region_truncated: bool = False
    after_lines_left: int = 0
    collecting: bool = False

    def feed(self, data: bytes) -> None:
        first = self.line
        self.byte_count += len(data)
        self.peak = max(self.peak, self.ring_bytes + self.region_bytes + len(data))
        if self.error_line is None:
            self._scan(data, first)
            if self.error_line is None:
                self._keep(data, first)
        elif self.collecting:
            self._collect(data, first, 0)
        self.line += _line_count(data)

    # --- before the first error: follow the structure, keep the tail -----------------

    def _events(self, data: bytes) -> list[tuple[int, bytes]]:
        # One regular expression for the markers: it skips `##[debug]`, `##[command]` …
        # at C speed, and a debug-logging job prints millions of those.
        events = [(m.start(), m.group()) for m in _MARKERS.finditer(data)]
        for needle in (_POST, *_RUNNER_MESSAGES):
            pos = data.find(needle)
            while pos != -1:
                events.append((pos, needle))
                pos = data.find(needle, pos + len(needle))
        events.sort()
        return events

    def _scan(self, data: bytes, first: int) -> None:
        cursor, cursor_line = 0, first
        # The header group's lines (script, shell, env) may span blocks: copy them as
        # they pass, so what is kept does not depend on where the chunks were cut.
        script_from: int | None = 0 if self.in_header else None
        for pos, needle in self._events(data):
            anchored = needle in _ANCHORED
            start = _at_line_start(data, pos) if anchored else None
            if anchored and start is None:
                continue
            line_start = data.rfind(b"\n", 0, pos) + 1 if start is None else start
            cursor_line += data.count(b"\n", cursor, line_start)
            cursor = line_start
            if needle == _POST:
                self.header, self.in_header, self.depth = None, False, 0
                self.section_start = cursor_line
                script_from = None
            elif needle == _GROUP:
                if data.startswith(_RUN, pos):
                    end = data.find(b"\n", pos)
                    title = clean_line(data[pos + len(_GROUP) : None if end == -1 else end])
                    self.header = _Header(title, cursor_line)
                    self.in_header, self.depth = True, 1
                    self.section_start = cursor_line
                    script_from = len(data) if end == -1 else end + 1
                else:
                    self.depth += 1
            elif needle == _ENDGROUP:
                self.depth = max(0, self.depth - 1)
                if self.in_header and self.depth == 0 and self.header is not None:
                    self.in_header = False
                    self.header.end = cursor_line
                    if script_from is not None:
                        self.header.add_script(data[script_from:line_start])
                    script_from = None
            elif needle == _ERROR:
                if not self.in_header:
                    self._first_error(data, first, line_start, cursor_line)
                    return
            elif not self.in_header:  # a runner message
                self._first_error(data, first, line_start, cursor_line)
                return
        if self.in_header and self.header is not None and script_from is not None:
            self.header.add_script(data[script_from:])

    def _keep(self, data: bytes, first: int) -> None:
        self.ring.append(_Block(first, data))
        self.ring_bytes += len(data)
        while self.ring_bytes > self.max_bytes and self.ring:
            head = self.ring[0]
            excess = self.ring_bytes - self.max_bytes
            cut = head.data.find(b"\n", excess - 1)
            if cut == -1 or cut + 1 >= len(head.data):
                self.ring.popleft()
                self.ring_bytes -= len(head.data)
                continue
            dropped = cut + 1
            head.first += head.data.count(b"\n", 0, dropped)
            head.data = head.data[dropped:]
            self.ring_bytes -= dropped

    # --- at the first error: pin the step's lines before it, then collect after it ----

    def _first_error(self, data: bytes, first: int, line_start: int, line: int) -> None:
        self.error_line = line
        wanted = max(self.section_start, line - self.context_lines)
        parts = [*self.ring, _Block(first, data[:line_start])]
        kept: list[_Block] = []
        for block in parts:
            count = block.data.count(b"\n")
            if block.first + count <= wanted or not block.data:
                continue
            skip = max(0, wanted - block.first)
            kept.append(_Block(block.first + skip, block.data[_offset_of_line(block.data, skip) :]))
        size = sum(len(b.data) for b in kept)
        # Keep the bound, with a quarter of it left for the error and what follows it:
        # drop whole lines from the front until the lines before the error fit.
        budget = self.max_bytes - self.max_bytes // 4
        while kept and size > budget:
            head = kept[0]
            excess = size - budget
            cut = head.data.find(b"\n", excess - 1)
            if cut == -1 or cut + 1 >= len(head.data):
                kept.pop(0)
                size -= len(head.data)
                continue
            head.first += head.data.count(b"\n", 0, cut + 1)
            head.data = head.data[cut + 1 :]
            size -= cut + 1
        region_start = kept[0].first if kept else line
        self.region_truncated = region_start > self.section_start
        self.region, self.region_bytes = kept, size
        self.ring.clear()
        self.ring_bytes = 0
        self.collecting = True
        self.after_lines_left = self.context_lines
        self._collect(data, first, line_start, line)

    def _collect(self, data: bytes, first: int, start: int, start_line: int | None = None) -> None:
        """Add the failing step's lines from `start` on, up to its end or the bounds."""
        end = len(data)
        pos = start
        # Stop at the next step or the post-job cleanup: the failing step ends there.
        for needle in (_RUN, _POST):
            found = data.find(needle, start)
            while found != -1 and found < end:
                line_start = _at_line_start(data, found)
                if line_start is not None and line_start >= start:
                    end = line_start
                    self.collecting = False
                    break
                found = data.find(needle, found + len(needle))
        lines = _lines_in(data, pos, end)
        if lines > self.after_lines_left:
            end = pos + _offset_of_line(data[pos:end], self.after_lines_left)
            lines = self.after_lines_left
            self.collecting = False
        if self.region_bytes + (end - pos) > self.max_bytes:
            room = self.max_bytes - self.region_bytes
            cut = data.rfind(b"\n", pos, pos + room)
            if cut == -1 and start_line is not None:
                # The error line itself is always kept (LINE_CAP bounds it in practice).
                cut = data.find(b"\n", pos, end)
                cut = end - 1 if cut == -1 else cut
            end = pos if cut == -1 else cut + 1
            lines = _lines_in(data, pos, end)
            self.collecting = False
        if end > pos:
            line = start_line if start_line is not None else first + data.count(b"\n", 0, pos)
            self.region.append(_Block(line, data[pos:end]))
            self.region_bytes += end - pos
        self.after_lines_left -= lines

    # --- the result --------------------------------------------------------------------

    def result(self) -> ParsedLog:
        header = self.header if self.error_line is not None else None
        region: list[Line] = []
        if self.error_line is not None:
            for block in self.region:
                raws = block.data.split(b"\n")
                if block.data.endswith(b"\n"):
                    raws.pop()
                for number, raw in enumerate(raws, block.first):
                    region.append(Line(number, clean_line(raw), _in_header(header, number)))
        script: tuple[str, ...] = ()
        if header is not None:
            script = tuple(clean_line(raw) for raw in header.script.split(b"\n")[:SCRIPT_LINES_CAP])
            script = tuple(s for s in script if s)
        return ParsedLog(
            line_count=self.line - 1,
            byte_count=self.byte_count,
            first_error=self.error_line,
            step_title=header.title if header else None,
            step_line=header.line if header else None,
            step_script=script,
            region=tuple(region),
            region_truncated=self.region_truncated,
            retained_peak=self.peak,
        )


def _in_header(header: _Header | None, number: int) -> bool:
    if header is None or number < header.line:
        return False
    return header.end is None or number <= header.end


_ARCHIVES = ((b"PK\x03\x04", "a zip archive"), (b"\x1f\x8b", "a gzip file"))


def archive_kind(head: bytes) -> str | None:
    """What compressed file `head` (its first bytes) starts, if any.

    A whole run's logs download as a zip (one file per job); triage reads one job's log.
    """
    for magic, name in _ARCHIVES:
        if head.startswith(magic):
            return name
    return None


def parse_log(
    source: LogSource,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    context_lines: int = DEFAULT_CONTEXT_LINES,
) -> ParsedLog:
    """Parse a job log from a binary file, an iterable of byte chunks, or bytes.

    At most about `max_bytes` of the log (plus one chunk) is held at once.
    """
    if max_bytes < 1:
        raise ValueError("max_bytes must be at least 1")
    if context_lines < 1:
        raise ValueError("context_lines must be at least 1")
    scanner = _Scanner(max_bytes=max_bytes, context_lines=context_lines)
    for block in _blocks(source):
        scanner.feed(block)
    return scanner.result()
