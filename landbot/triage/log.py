"""Read a GitHub Actions job log as a stream and keep only what explains its failure.

A job log can be hundreds of megabytes, so it is never read whole: chunks are cut into
blocks of complete lines, and only C-level searches (one regular expression for the
``##[…]`` markers, ``bytes.find``/``count``) run on every block. They follow the whole
log's structure: the set-up, each step's section (from its ``##[group]Run …`` header,
nested groups aside, to the next header), and the post-job sections (``Post job
cleanup.``).

Every section that shows a failure is kept: an ``##[error]`` line outside the step's
header group, or a runner message (shutdown signal, lost communication). Of each, a
bounded *region*: the lines before its first error (from a ring of the section's tail, at
most three quarters of the section's bound), the lines after it, and the section's last
lines (where ``Process completed with exit code N`` and a runner's summary are). When no
section shows one, the last step before the post-job cleanup stands in if its last lines
report a failure in words (a compiler error printed without an annotation, a container
action that died). Only regions are decoded into text lines; everything else is merely
counted, so line numbers are always the file's true 1-based line numbers.

Bounds: the section being read may hold what the finished ones leave of ``max_bytes``,
at least half of it; finished sections are shrunk when they hold more than half, and at
most ``KEPT_SECTIONS`` are kept (the first and the latest).

A composite action's steps print their own ``##[group]Run …`` headers and no end: the
step is the composite's (``_composite_of`` says how the log tells), and failing inner
steps of one composite are one section (``_join_composites``).

``ParsedLog`` describes the section chosen from the log alone (``choose_section``);
``with_section`` gives the same log with another one chosen (the jobs API's failing step).

Lines are numbered by ``\\n`` alone (a ``\\r`` inside a line is a progress bar's redraw).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Protocol, cast

from landbot.core.linear import Searchable, Spanned

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
# Failing sections kept (a job rarely has more than two), and step headers remembered.
KEPT_SECTIONS = 4
# Lines kept of the last step when no step shows a failure (its end may say one), and
# the lines of its end read for one, whatever the bounds (each cut to LAST_LINE_BYTES).
PLAIN_LINES = 2000
TAIL_LINES = 30
LAST_LINE_BYTES = 4 * 4000
HEADERS_CAP = 2000

BOM = b"\xef\xbb\xbf"
_PREFIX = re.compile(rb"(?:\xef\xbb\xbf)?(?:\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z )?")
_TIMESTAMP = re.compile(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z ")
# CSI sequences (colours, cursor moves), OSC sequences (hyperlinks), two-byte escapes.
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]?")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")

_MARKERS = re.compile(rb"##\[(?:group\]|endgroup\]|error\]|start-action |end-action )")
_GROUP = b"##[group]"
_RUN = b"##[group]Run "
_ENDGROUP = b"##[endgroup]"
_ERROR = b"##[error]"
_POST = b"Post job cleanup."
_PREPARE = b"Prepare all required actions"
# Runners with composite markers (actions/runner #4243, 2026, behind a feature flag) print
# one around each step of a composite action (CompositeActionHandler.RunStepsAsync).
_START_ACTION = b"##[start-action "
_END_ACTION = b"##[end-action "
_JOB_NAME = b"Complete job name: "
_JOB_DEFINED = b"Job defined at: "
# The runner's first lines: a log that has one, but never completes the set-up (no
# `Complete job name:`) nor runs a step, ends where the runner died.
_RUNNER_START = b"Job is about to start running on the "
_JOB_LINES = (_JOB_NAME, _JOB_DEFINED, _RUNNER_START)
_ANCHORED = frozenset(
    {_GROUP, _ENDGROUP, _ERROR, _POST, _PREPARE, _START_ACTION, _END_ACTION, *_JOB_LINES}
)
# The runner's own failure messages; they may come without an ``##[error]`` prefix.
_RUNNER_MESSAGES = (b"received a shutdown signal", b"lost communication with the server")
# Annotations that end the job whatever failed before: the section holding one is the
# job's end (actions/runner: JobRunner, StepsRunner).
_TERMINAL = (
    b"The operation was cancel",
    b"has exceeded the maximum execution time",
    b"has timed out",
    b"Received request to deprovision",
    *_RUNNER_MESSAGES,
)


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
class Section:
    """One section of the log that shows a failure, as kept."""

    title: str | None
    """The step's ``Run …`` title; None for the set-up and the post-job sections. For an
    inner step of a composite action, the action's own (``Run owner/repo@v1``, ``Run
    ./.github/actions/test``): the step GitHub and the jobs API name (``_composite_of``)."""
    line: int | None
    """Line of the step's ``##[group]Run …`` header (the composite action's)."""
    start: int
    end: int
    script: tuple[str, ...]
    region: tuple[Line, ...]
    first_error: int
    """Its first ``##[error]`` or runner message (for ``last``: the first line of its
    end that reports a failure in words)."""
    signal: str
    """What showed the failure: ``error`` (an annotation), ``runner`` (a runner message),
    ``last`` (no annotation anywhere: the last step, whose end reports a failure),
    ``ended`` (the log ends in the runner's set-up, before any step: the runner died)."""
    terminal: bool = False
    """It holds a message that ends the job (cancelled, timed out, runner lost)."""
    post: bool = False
    truncated: bool = False
    steps_after: int = 0
    """Steps that ran after it before the post-job cleanup: after a real failure only
    ``if: always()`` steps run; after a ``continue-on-error`` step, all of them."""

    inner_title: str | None = None
    """For an inner step of a composite action: its own ``Run …`` title (its script is
    ``script``)."""
    before: tuple[Line, ...] = ()
    """The last lines (at most ``TAIL_LINES``) of the step that ran just before it."""

    @cached_property
    def error_texts(self) -> tuple[str, ...]:
        """The text of each of its ``##[error]`` annotations (without the marker)."""
        return tuple(line.text[len("##[error]") :] for line in self.region if line.is_error)


@dataclass(frozen=True)
class ParsedLog:
    """What the parser kept of one job log; the step fields describe the chosen section."""

    line_count: int
    byte_count: int
    first_error: int | None
    """Line of the chosen section's first error, None when the log shows no failure."""
    step_title: str | None
    """Title of the failing step's section (``Run npm ci``), None when no section precedes
    the first error (set-up, post-job cleanup) or there is no error."""
    step_line: int | None
    step_script: tuple[str, ...] = ()
    """The failing step's header group lines (script, shell, env), cleaned."""
    region: tuple[Line, ...] = ()
    """The failing step's lines around its first error and its last lines, in file order
    (a gap between them when the step was longer than the bounds)."""
    region_truncated: bool = False
    """True when the region starts after the step's start (cut by the bounds)."""
    retained_peak: int = 0
    """Most bytes of the log held at once (the bound's witness)."""
    sections: tuple[Section, ...] = ()
    """Every section kept that shows a failure, in file order."""
    chosen: int | None = None
    """Index in ``sections`` of the one the step fields describe."""
    sections_dropped: int = 0
    """Failing sections not kept (more than KEPT_SECTIONS)."""
    headers: tuple[tuple[int, str], ...] = ()
    """Every step section's (header line, ``Run …`` title), in order."""
    inner_headers: frozenset[int] = frozenset()
    """Lines of the headers in ``headers`` that are a composite action's steps, not the
    job's (``_composite_of``): the job's steps are the others."""
    job_name: Line | None = None
    """The set-up's ``Complete job name: …`` line."""
    workflow: Line | None = None
    """The set-up's ``Job defined at: <owner>/<repo>/.github/workflows/<file>@<ref>`` line."""
    post_line: int | None = None
    """Line of the first ``Post job cleanup.``: the steps' end."""

    def with_section(self, index: int) -> ParsedLog:
        """The same log with section `index` as the failing step."""
        s = self.sections[index]
        return replace(
            self,
            first_error=s.first_error,
            step_title=s.title,
            step_line=s.line,
            step_script=s.script,
            region=s.region,
            region_truncated=s.truncated,
            chosen=index,
        )

    @property
    def section(self) -> Section | None:
        """The chosen section."""
        return None if self.chosen is None else self.sections[self.chosen]

    @property
    def command_title(self) -> str | None:
        """The ``Run …`` title of the step whose script ``step_script`` is: the failing
        inner step when ``step_title`` is its composite action's, else ``step_title``."""
        section = self.section
        if section is not None and section.inner_title and section.title == self.step_title:
            return section.inner_title
        return self.step_title

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

    def search(self, pattern: Searchable) -> tuple[int, Spanned] | None:
        """The first match of `pattern` over the whole text (for patterns without hints;
        `re`'s or RE2's: core/linear.py)."""
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


_STAMPS = re.compile(rb"\n\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z ")
# _ANSI for many lines at once: an unterminated OSC sequence ends with its line.
_ANSI_LINES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b\n]*(?:\x07|\x1b\\)?|\x1b[@-_]?")


def clean_block(data: bytes) -> list[str]:
    """``clean_line`` of every line of `data` (lines joined by ``\\n``, the last one may
    lack it), with whole-block passes at C speed instead of one call per line."""
    if not data:
        return []
    text = b"\n" + (data[:-1] if data.endswith(b"\n") else data)
    if text.endswith(b"\r"):
        text = text[:-1]
    if b"\r\n" in text:
        text = text.replace(b"\r\n", b"\n")
    if BOM in text:
        text = text.replace(b"\n" + BOM, b"\n")
    text = _STAMPS.sub(b"\n", text)
    decoded = text.decode("utf-8", "replace")
    if "\x1b" in decoded:
        decoded = _ANSI_LINES.sub("", decoded)
    lines = decoded.split("\n")
    del lines[0]
    if "\r" in decoded:
        for i, line in enumerate(lines):
            if "\r" in line:
                parts = [p for p in line.split("\r") if p.strip()]
                lines[i] = parts[-1] if parts else ""
    if _CONTROL.search(decoded):
        lines = [_CONTROL.sub("", line) for line in lines]
    return [line if len(line) <= TEXT_CAP else line[:TEXT_CAP] for line in lines]


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
    prepared: bool = False
    """``Prepare all required actions`` is its group's next line: a local composite
    action readying its own steps' actions."""
    opener: bool = False
    """An action's header whose next step header follows at once: a composite action
    (its first step's header, or its ``Prepare all required actions``, comes next)."""
    first_inner: bool = False
    """It opened right after an opener's group: that composite's first step."""
    depth: int = 0
    """Composite markers open around it (``##[start-action …]`` not yet ended)."""

    @cached_property
    def group(self) -> tuple[str, ...]:
        """Its group's lines (inputs, or script, shell and env), cleaned."""
        return tuple(clean_line(raw) for raw in self.script.split(b"\n")[:SCRIPT_LINES_CAP])

    @cached_property
    def action(self) -> bool:
        """It runs an action (``uses:``), not a script: an action's title, and its group
        holds only ``with:``/``env:`` (a script's prints its lines and ``shell:``)."""
        if _ACTION_TITLE.match(self.title) is None:
            return False
        lines = [line for line in self.group if line]
        return not lines or (
            lines[0] in ("with:", "env:") and not any(x.startswith("shell: ") for x in lines)
        )

    @cached_property
    def top(self) -> bool:
        """A ``run:`` step with the runner's default shell: never a composite's inner
        step, whose ``run:`` steps must name their shell (actions/runner
        action_yaml.json: ``shell`` is required in a composite's run-step)."""
        if b"shell: " not in self.script:
            return False
        return any(_DEFAULT_SHELL.match(line) for line in self.group)

    def add_script(self, lines: bytes) -> None:
        room = LINE_CAP - len(self.script)
        if room <= 0:
            return
        part = lines[:room]
        if len(lines) > room:  # keep whole lines only
            part = part[: part.rfind(b"\n") + 1]
        self.script += part


@dataclass
class _Part:
    """A section while or after it is read: its structure and the bytes kept of it."""

    header: _Header | None
    start: int
    post: bool
    index: int
    """How many step headers came before this section's own."""
    error_line: int | None = None
    runner: bool = False
    terminal: bool = False
    pinned: list[_Block] = field(default_factory=list)
    pinned_bytes: int = 0
    pinned_after: int = 0
    collecting: bool = False
    after_left: int = 0
    tail: deque[_Block] = field(default_factory=deque)
    tail_bytes: int = 0
    tail_lines: int = 0
    last: deque[tuple[int, bytes]] = field(default_factory=lambda: deque(maxlen=TAIL_LINES))
    """Its last lines before any error (number, raw start of the line), whatever the
    bounds: whether its end reports a failure must not depend on them."""
    truncated: bool = False
    end: int = 0
    before: list[tuple[int, bytes]] = field(default_factory=list)
    """The last lines (before any error) of the step just before it."""

    def blocks(self) -> list[_Block]:
        return [*self.pinned, *self.tail]

    @property
    def size(self) -> int:
        return self.pinned_bytes + self.tail_bytes


def _trim_front(blocks: list[_Block], excess: int, *, keep_from: int | None = None) -> int:
    """Drop whole lines from the front of `blocks` (in place) until `excess` bytes are gone
    or line `keep_from` would go; the bytes dropped."""
    dropped = 0
    while blocks and dropped < excess:
        head = blocks[0]
        want = excess - dropped
        if keep_from is not None:
            room = _offset_of_line(head.data, max(0, keep_from - head.first))
            want = min(want, room)
            if want <= 0:
                break
        cut = head.data.find(b"\n", want - 1)
        if cut == -1 or cut + 1 >= len(head.data):
            if (
                keep_from is not None
                and head.first + _lines_in(head.data, 0, len(head.data)) > keep_from
            ):
                break  # the block holds line `keep_from`
            blocks.pop(0)
            dropped += len(head.data)
            continue
        head.first += head.data.count(b"\n", 0, cut + 1)
        head.data = head.data[cut + 1 :]
        dropped += cut + 1
    return dropped


def _remember_last(
    last: deque[tuple[int, bytes]], data: bytes, pos: int, end: int, end_line: int
) -> None:
    """Push the last lines of data[pos:end] (whole lines, the one after them numbered
    `end_line`), walking back from the end: no pass over the whole block."""
    want = last.maxlen or 0
    stop = end
    if stop > pos and data[stop - 1] == 0x0A:
        stop -= 1
    found: list[bytes] = []
    while len(found) < want and stop >= pos:
        nl = data.rfind(b"\n", pos, stop)
        start = pos if nl == -1 else nl + 1
        found.append(data[start : min(stop, start + LAST_LINE_BYTES)])
        if nl == -1:
            break
        stop = nl
    for back, raw in reversed(list(enumerate(found, 1))):
        last.append((end_line - back, raw))


def _drop_lines(blocks: list[_Block], count: int) -> int:
    """Drop `count` whole lines from the front of `blocks` (in place); the bytes dropped."""
    dropped = 0
    while blocks and count > 0:
        head = blocks[0]
        lines = _lines_in(head.data, 0, len(head.data))
        if lines <= count:
            blocks.pop(0)
            dropped += len(head.data)
            count -= lines
            continue
        cut = _offset_of_line(head.data, count)
        head.first += count
        head.data = head.data[cut:]
        dropped += cut
        count = 0
    return dropped


def _trim_back(blocks: list[_Block], excess: int, *, keep_to: int) -> int:
    """Drop whole lines from the end of `blocks` (in place) until `excess` bytes are gone,
    never line `keep_to` or one before it."""
    dropped = 0
    while blocks and dropped < excess:
        last = blocks[-1]
        floor = _offset_of_line(last.data, max(0, keep_to - last.first + 1))
        if last.first > keep_to and len(last.data) <= excess - dropped:
            blocks.pop()
            dropped += len(last.data)
            continue
        # The fewest lines from the end that free what is left, above the floor.
        target = len(last.data) - (excess - dropped)
        cut = last.data.rfind(b"\n", 0, max(0, target)) + 1 if target > 0 else 0
        keep = max(floor, cut)
        dropped += len(last.data) - keep
        last.data = last.data[:keep]
        if not last.data:
            blocks.pop()
        break
    return dropped


@dataclass
class _Scanner:
    max_bytes: int
    context_lines: int
    line: int = 1
    byte_count: int = 0
    ring: deque[_Block] = field(default_factory=deque)
    """The current section's lines before its first error (its tail, bounded)."""
    ring_bytes: int = 0
    peak: int = 0
    depth: int = 0
    in_header: bool = False
    part: _Part = field(default_factory=lambda: _Part(None, 1, False, 0))
    kept: list[_Part] = field(default_factory=list)
    """Finished sections that show a failure, in file order (bounded in number)."""
    kept_bytes: int = 0
    dropped: int = 0
    plain: _Part | None = None
    """The last finished step without a failure: the fallback when none shows one."""
    headers: list[tuple[int, str]] = field(default_factory=list)
    header_objs: list[_Header] = field(default_factory=list)
    marked: bool = False
    """The runner printed composite markers: they, not the heuristics, place the steps."""
    action_depth: int = 0
    """The step headers themselves (as ``headers``): what the log says of composites."""
    steps_before_post: int | None = None
    post_line: int | None = None
    runner_started: bool = False
    job_name: Line | None = None
    workflow: Line | None = None

    @property
    def budget(self) -> int:
        """Bytes the current section may hold: the bound less what finished ones keep."""
        plain = self.plain.size if self.plain is not None else 0
        return max(1, self.max_bytes - self.kept_bytes - plain)

    def held(self) -> int:
        plain = self.plain.size + _last_bytes(self.plain) if self.plain is not None else 0
        return self.ring_bytes + self.part.size + _last_bytes(self.part) + self.kept_bytes + plain

    def feed(self, data: bytes) -> None:
        first = self.line
        self.byte_count += len(data)
        self.peak = max(self.peak, self.held() + len(data))
        self.line = self._scan(data, first)
        self.peak = max(self.peak, self.held() + len(data))

    # --- the structure ------------------------------------------------------------------

    def _events(self, data: bytes) -> list[tuple[int, bytes]]:
        # One regular expression for the markers: it skips `##[debug]`, `##[command]` …
        # at C speed, and a debug-logging job prints millions of those.
        events = [(m.start(), m.group()) for m in _MARKERS.finditer(data)]
        needles: tuple[bytes, ...] = (_POST, _PREPARE, *_RUNNER_MESSAGES)
        if not self.headers and self.steps_before_post is None:
            needles += _JOB_LINES  # set-up: the job's name and workflow file
        for needle in needles:
            pos = data.find(needle)
            while pos != -1:
                events.append((pos, needle))
                pos = data.find(needle, pos + len(needle))
        if len(events) > 1:
            events.sort()
        return events

    def _scan(self, data: bytes, first: int) -> int:
        """Follow the structure of `data` (lines from `first`); the number of the line
        after it. Lines are counted once, up to each event, then to the end."""
        at, at_line = 0, first  # lines counted up to `at`
        taken, taken_line = 0, first  # bytes before `taken` were handed to a section
        # The header group's lines (script, shell, env) may span blocks: copy them as
        # they pass, so what is kept does not depend on where the chunks were cut.
        script_from: int | None = 0 if self.in_header else None
        for pos, needle in self._events(data):
            anchored = needle in _ANCHORED
            start = _at_line_start(data, pos) if anchored else None
            if anchored and start is None:
                continue
            line_start = data.rfind(b"\n", 0, pos) + 1 if start is None else start
            at_line += data.count(b"\n", at, line_start)
            at = line_start
            if needle == _POST or (needle == _GROUP and data.startswith(_RUN, pos)):
                if script_from is not None and self.part.header is not None:
                    self.part.header.add_script(data[script_from:line_start])
                script_from = None
                self._give(data, taken, line_start, taken_line, at_line)
                taken, taken_line = line_start, at_line
                self._finish(at_line - 1)
                if needle == _POST:
                    if self.steps_before_post is None:
                        self.steps_before_post = len(self.headers)
                        self.post_line = at_line
                    self._open(None, at_line, post=True)
                    self.in_header, self.depth = False, 0
                else:
                    end = data.find(b"\n", pos)
                    title = clean_line(data[pos + len(_GROUP) : None if end == -1 else end])
                    opened = _Header(title, at_line, depth=self.action_depth)
                    _link(self.part.header, opened)
                    self._open(opened, at_line, post=False)
                    self.in_header, self.depth = True, 1
                    script_from = len(data) if end == -1 else end + 1
            elif needle == _GROUP:
                self.depth += 1
            elif needle == _ENDGROUP:
                self.depth = max(0, self.depth - 1)
                header = self.part.header
                if self.in_header and self.depth == 0 and header is not None:
                    self.in_header = False
                    header.end = at_line
                    if script_from is not None:
                        header.add_script(data[script_from:line_start])
                    script_from = None
            elif needle == _START_ACTION:
                self.marked, self.action_depth = True, self.action_depth + 1
            elif needle == _END_ACTION:
                self.action_depth = max(0, self.action_depth - 1)
            elif needle == _PREPARE:
                header = self.part.header
                if header is not None and header.end is not None and header.end + 1 == at_line:
                    header.prepared = True
            elif needle in _JOB_LINES:
                if self.headers or self.steps_before_post is not None:
                    continue  # only the set-up's: a step may print such a line
                end = data.find(b"\n", pos)
                text = clean_line(data[line_start : None if end == -1 else end])
                if needle == _RUNNER_START:
                    self.runner_started = True
                elif needle == _JOB_NAME and self.job_name is None:
                    self.job_name = Line(at_line, text)
                elif needle == _JOB_DEFINED and self.workflow is None:
                    self.workflow = Line(at_line, text)
            elif not self.in_header:  # an error annotation or a runner message
                if self.part.error_line is None:
                    self._give(data, taken, line_start, taken_line, at_line)
                    taken, taken_line = line_start, at_line
                    self._first_error(at_line)
                if needle in _RUNNER_MESSAGES:
                    self.part.runner = True
                elif not self.part.terminal:
                    end = data.find(b"\n", pos)
                    raw = data[pos : len(data) if end == -1 else end]
                    self.part.terminal = any(t in raw for t in _TERMINAL)
        if script_from is not None and self.in_header and self.part.header is not None:
            self.part.header.add_script(data[script_from:])
        after = at_line + _lines_in(data, at, len(data))
        self._give(data, taken, len(data), taken_line, after)
        return after

    # --- the bytes of the current section -------------------------------------------------

    def _give(self, data: bytes, pos: int, end: int, line: int, end_line: int) -> None:
        """Hand data[pos:end] to the section: whole lines, numbered `line` to
        `end_line` - 1."""
        if end <= pos:
            return
        part = self.part
        if part.error_line is None:
            if not part.post and (part.header is not None or not self.headers):
                _remember_last(part.last, data, pos, end, end_line)
            self._ring_add(_Block(line, data[pos:end]))
            return
        if part.collecting:
            lines = _lines_in(data, pos, end)
            stop = end
            if lines > part.after_left:
                stop = pos + _offset_of_line(data[pos:end], part.after_left)
                lines = part.after_left
                part.collecting = False
            room = self.budget - self.budget // 8 - part.pinned_bytes
            if stop - pos > room:
                cut = data.rfind(b"\n", pos, pos + max(0, room))
                if cut == -1 and not part.pinned_after:
                    # The error line itself is always kept (LINE_CAP bounds it).
                    cut = data.find(b"\n", pos, end)
                    cut = end - 1 if cut == -1 else cut
                stop = pos if cut == -1 else cut + 1
                lines = _lines_in(data, pos, stop)
                part.collecting = False
            if stop > pos:
                part.pinned.append(_Block(line, data[pos:stop]))
                part.pinned_bytes += stop - pos
                part.pinned_after += stop - pos
            part.after_left -= lines
            line += lines
            pos = stop
            if pos >= end:
                return
        # After what was collected: the section's last lines (`context_lines` of them at
        # most), in a ring.
        part.tail.append(_Block(line, data[pos:end]))
        part.tail_bytes += end - pos
        part.tail_lines += _lines_in(data, pos, end)
        room = max(0, self.budget - part.pinned_bytes)
        if part.tail_bytes > room or part.tail_lines > self.context_lines:
            blocks = list(part.tail)
            if part.tail_lines > self.context_lines:
                part.tail_bytes -= _drop_lines(blocks, part.tail_lines - self.context_lines)
            if part.tail_bytes > room:
                part.tail_bytes -= _trim_front(blocks, part.tail_bytes - room)
            part.tail_lines = sum(_lines_in(b.data, 0, len(b.data)) for b in blocks)
            part.tail = deque(blocks)

    def _ring_add(self, block: _Block) -> None:
        self.ring.append(block)
        self.ring_bytes += len(block.data)
        bound = self.budget
        while self.ring_bytes > bound and self.ring:
            head = self.ring[0]
            excess = self.ring_bytes - bound
            cut = head.data.find(b"\n", excess - 1)
            if cut == -1 or cut + 1 >= len(head.data):
                self.ring.popleft()
                self.ring_bytes -= len(head.data)
                continue
            dropped = cut + 1
            head.first += head.data.count(b"\n", 0, dropped)
            head.data = head.data[dropped:]
            self.ring_bytes -= dropped

    def _first_error(self, line: int) -> None:
        """Pin the section's lines before its first error, then collect after it."""
        part = self.part
        part.error_line = line
        wanted = max(part.start, line - self.context_lines)
        kept: list[_Block] = []
        for block in self.ring:
            count = block.data.count(b"\n")
            if block.first + count <= wanted or not block.data:
                continue
            skip = max(0, wanted - block.first)
            kept.append(_Block(block.first + skip, block.data[_offset_of_line(block.data, skip) :]))
        size = sum(len(b.data) for b in kept)
        # A quarter of the bound is left for the error and what follows it.
        budget = self.budget - self.budget // 4
        if size > budget:
            size -= _trim_front(kept, size - budget)
        region_start = kept[0].first if kept else line
        part.truncated = region_start > part.start
        part.pinned, part.pinned_bytes, part.pinned_after = kept, size, 0
        self.ring.clear()
        self.ring_bytes = 0
        part.collecting = True
        part.after_left = self.context_lines

    # --- sections begin and end ---------------------------------------------------------

    def _open(self, header: _Header | None, line: int, *, post: bool) -> None:
        if header is not None and len(self.headers) < HEADERS_CAP:
            self.headers.append((line, header.title))
            self.header_objs.append(header)
        previous = self.part
        self.part = _Part(header, line, post, len(self.headers) - (header is not None))
        if not post and previous.header is not None and not previous.post:
            # The step before it: its last lines may say why this one fails when this
            # one prints nothing of its own (generic.py's earlier cause).
            self.part.before = [
                (n, raw) for n, raw in previous.last if not _in_header(previous.header, n)
            ]
        # Keep at least half of the bound for the section now read.
        if self.kept_bytes + (self.plain.size if self.plain else 0) > self.max_bytes // 2:
            cap = self.max_bytes // (2 * (KEPT_SECTIONS + 1))
            for kept in self.kept:
                self.kept_bytes -= _compact(kept, cap)
            if self.plain is not None:
                _compact(self.plain, cap)

    def _finish(self, end: int) -> None:
        part = self.part
        part.end = end
        if part.error_line is not None:
            self.plain = None  # a failure was seen: no fallback needed
            if len(self.kept) >= KEPT_SECTIONS:
                # Keep the first failures and the latest: drop the oldest after the first.
                gone = self.kept.pop(1)
                self.kept_bytes -= gone.size
                self.dropped += 1
            self.kept.append(part)
            self.kept_bytes += part.size
        elif not part.post and (part.header is not None or not self.headers) and not self.kept:
            # Only its end can show a failure in words: keep its last lines. A log with
            # no step headers at all (Jenkins, Buildkite, GitLab consoles, or a bare
            # command's output) is one step, read this way too.
            part.pinned = list(self.ring)
            part.pinned_bytes = self.ring_bytes
            lines = sum(_lines_in(b.data, 0, len(b.data)) for b in part.pinned)
            if lines > PLAIN_LINES:
                part.pinned_bytes -= _drop_lines(part.pinned, lines - PLAIN_LINES)
                part.truncated = True
            self.plain = part
        self.ring = deque()
        self.ring_bytes = 0

    # --- the result --------------------------------------------------------------------

    def _ended_in_set_up(self) -> Section | None:
        """The log ends in the runner's set-up, without an error: the runner died there."""
        part = self.part
        if not self.runner_started or self.headers or self.job_name is not None:
            return None
        if part.post or part.header is not None or part.error_line is not None or self.kept:
            return None
        part.pinned, part.pinned_bytes = list(self.ring), self.ring_bytes
        part.end = self.line - 1
        section = _section(part, "ended", 0, self.header_objs, self.marked)
        if not section.region:
            return None
        return replace(section, first_error=section.region[-1].number, terminal=True)

    def result(self) -> ParsedLog:
        ended = self._ended_in_set_up()
        self._finish(self.line - 1)
        sections: list[Section] = [] if ended is None else [ended]
        post_at = (
            self.steps_before_post if self.steps_before_post is not None else len(self.headers)
        )
        for part in self.kept:
            signal = "runner" if part.runner else "error"
            sections.append(_section(part, signal, post_at, self.header_objs, self.marked))
        if not sections and self.plain is not None:
            header = self.plain.header
            tail = [Line(n, clean_line(raw), _in_header(header, n)) for n, raw in self.plain.last]
            failing = _failure_in_tail(tail)
            if failing is not None:
                last = _section(self.plain, "last", post_at, self.header_objs, self.marked)
                kept = {line.number for line in last.region}
                region = sorted(
                    [*last.region, *(line for line in tail if line.number not in kept)],
                    key=lambda line: line.number,
                )
                sections.append(replace(last, first_error=failing, region=tuple(region)))
        sections = _join_composites(sections)
        chosen = choose_section(sections)
        parsed = ParsedLog(
            line_count=self.line - 1,
            byte_count=self.byte_count,
            first_error=None,
            step_title=None,
            step_line=None,
            retained_peak=self.peak,
            sections=tuple(sections),
            sections_dropped=self.dropped,
            headers=tuple(self.headers),
            inner_headers=_inner_headers(self.header_objs, self.marked),
            job_name=self.job_name,
            workflow=self.workflow,
            post_line=self.post_line,
        )
        return parsed if chosen is None else parsed.with_section(chosen)


def _join_composites(sections: Sequence[Section]) -> list[Section]:
    """One section per composite step: failing inner steps of the same composite action
    are one step of the job (a composite that lets an inner step fail, then fails with
    `exit 1`), so their kept lines are read together; the first error stays the first's."""
    out: list[Section] = []
    for section in sections:
        last = out[-1] if out else None
        if (
            last is not None
            and section.inner_title is not None
            and last.inner_title is not None
            and (section.title, section.line) == (last.title, last.line)
        ):
            out[-1] = replace(
                last,
                end=section.end,
                region=(*last.region, *section.region),
                terminal=last.terminal or section.terminal,
                steps_after=section.steps_after,
            )
            continue
        out.append(section)
    return out


def _last_bytes(part: _Part) -> int:
    return sum(len(raw) for _n, raw in part.last)


def _compact(part: _Part, cap: int) -> int:
    """Shrink a finished section to `cap` bytes; the bytes freed. What goes first: the
    oldest lines before its first error, then the start of its tail, then the lines after
    the error (never the error line itself)."""
    before = part.size
    excess = part.size - cap
    if excess > 0 and part.error_line is not None:
        part.pinned_bytes -= _trim_front(part.pinned, excess, keep_from=part.error_line)
        if part.pinned and part.pinned[0].first > part.start:
            part.truncated = True
        excess = part.size - cap
    if excess > 0:
        blocks = list(part.tail)
        part.tail_bytes -= _trim_front(blocks, excess)
        part.tail = deque(blocks)
        excess = part.size - cap
    if excess > 0 and part.error_line is not None:
        part.pinned_bytes -= _trim_back(part.pinned, excess, keep_to=part.error_line)
    elif excess > 0:  # a section without failure keeps its last lines
        part.pinned_bytes -= _trim_front(part.pinned, excess)
    return before - part.size


def _section(
    part: _Part, signal: str, post_at: int, headers: Sequence[_Header], marked: bool = False
) -> Section:
    header = part.header
    region: list[Line] = []
    for block in part.blocks():
        if not block.data:
            continue
        texts = clean_block(block.data)
        last = block.first + len(texts) - 1
        if (
            header is None
            or last < header.line
            or (header.end is not None and block.first > header.end)
        ):
            region.extend(Line(n, t) for n, t in enumerate(texts, block.first))
        else:
            region.extend(
                Line(n, t, _in_header(header, n)) for n, t in enumerate(texts, block.first)
            )
    script: tuple[str, ...] = ()
    if header is not None:
        script = tuple(clean_line(raw) for raw in header.script.split(b"\n")[:SCRIPT_LINES_CAP])
        script = tuple(s for s in script if s)
    after = 0 if part.post or header is None else max(0, post_at - part.index - 1)
    title, line = (header.title, header.line) if header else (None, None)
    inner = None
    if header is not None:
        outer = _composite_of(header, script, headers, marked=marked)
        if outer is not None:
            title, line, inner = headers[outer].title, headers[outer].line, header.title
    return Section(
        title=title,
        line=line,
        inner_title=inner,
        start=part.start,
        end=part.end,
        script=script,
        region=tuple(region),
        first_error=part.error_line if part.error_line is not None else part.end,
        signal=signal,
        terminal=part.terminal or part.runner,
        post=part.post,
        truncated=part.truncated,
        steps_after=after,
        before=tuple(Line(n, clean_line(raw)) for n, raw in part.before),
    )


# A remote composite action runs its own steps from the runner's copy of it:
# `/home/runner/work/_actions/<owner>/<repo>/<ref>/…` (`D:\\a\\_actions\\…` on Windows).
_ACTION_COPY = re.compile(
    r"_actions[/\\](?P<owner>[\w.-]+)[/\\](?P<repo>[\w.-]+)[/\\](?P<ref>[\w.-]+)"
)
# How the runner titles an action step (actions/runner Handler.PrintActionDetails):
# `Run ./path` (the repository's own) or `Run owner/repo[/path]@ref`.
_ACTION_TITLE = re.compile(r"^Run (?:\./\S+|[\w.-]+/[\w.-]+(?:/\S*)?@\S+)$")
# The default shell when a step names none (ScriptHandler: bash, `-e {0}`); `shell: bash`
# prints `--noprofile --norc -e -o pipefail {0}`.
_DEFAULT_SHELL = re.compile(r"^shell: \S*\bbash -e \{0\}$")


def _link(previous: _Header | None, opened: _Header) -> None:
    """Note what a new step header says of the one before it: an action whose group is
    followed at once by another step's header (or by its ``Prepare all required
    actions``) prints no output of its own: it is a composite, and this is its first step."""
    if previous is None or not previous.action:
        return
    if previous.prepared or (previous.end is not None and opened.line == previous.end + 1):
        previous.opener = True
        opened.first_inner = True


def _composite_of(
    header: _Header,
    script: Sequence[str],
    headers: Sequence[_Header],
    *,
    marked: bool = False,
    index: int | None = None,
    latest: int | None = -1,
) -> int | None:
    """Index in `headers` of the composite action a step runs in, if the log tells: a
    person, and the jobs API, name the step they wrote (``Run pre-commit/action@v3``,
    ``Run ./.github/actions/test``), not the action's internals.

    The log prints no end of a composite (runners before the 2026 composite markers), so:
    a step runs in the latest composite opened before it, unless a step between them (or
    itself) has the runner's default shell (a composite's run steps name theirs); an
    action step only when it is the composite's first step (a setup action after a
    composite is more often the job's own); a composite opened as another's first step
    is nested in it, one opened later is taken as the next step of the job. A remote
    composite's step that runs from the action's copy (``_actions/owner/repo/ref``) is
    its own whatever comes between. A runner that prints composite markers says it all: a
    step inside markers belongs to the latest step header opened outside them."""
    if index is None:
        index = next((i for i in range(len(headers) - 1, -1, -1) if headers[i] is header), None)
    if index is None:
        return None
    if marked:
        if header.depth == 0:
            return None
        return next((i for i in range(index - 1, -1, -1) if headers[i].depth == 0), None)
    found = _by_copy(header, script, headers, index)
    if found is None:
        found = _by_order(headers, index, latest)
    if found is None:
        return None
    while headers[found].first_inner and found > 0 and headers[found - 1].opener:
        found -= 1
    return None if found == index else found


def _inner_headers(headers: Sequence[_Header], marked: bool) -> frozenset[int]:
    """Lines of the headers that are a composite's steps: a step placed in a composite,
    and every step between the composite's header and it (an action among them too)."""
    inner: set[int] = set()
    covered = 0  # headers before this index are decided
    latest: int | None = None  # one pass: no look back per header
    for i, header in enumerate(headers):
        outer = _composite_of(
            header, header.group[:20], headers, marked=marked, index=i, latest=latest
        )
        if outer is not None:
            inner.update(h.line for h in headers[max(outer + 1, covered) : i + 1])
            covered = i + 1
        if header.top:
            latest = None
        elif header.opener:
            latest = i
    return frozenset(inner)


def _by_copy(
    header: _Header, script: Sequence[str], headers: Sequence[_Header], index: int
) -> int | None:
    m = _ACTION_COPY.search("\n".join((header.title, *script[:20])))
    if m is None:
        return None
    owner, repo, ref = (re.escape(m.group(g)) for g in ("owner", "repo", "ref"))
    outer = re.compile(rf"^Run {owner}/{repo}(?:/\S*)?@{ref}$", re.IGNORECASE)
    return next((i for i in range(index - 1, -1, -1) if outer.match(headers[i].title)), None)


def _by_order(headers: Sequence[_Header], index: int, latest: int | None = -1) -> int | None:
    """`latest`: the latest opener before `index` with no default-shell step after it, when
    the caller knows it (-1: look back for it)."""
    own = headers[index]
    if own.top:
        return None
    if own.opener:
        return index
    if own.action:
        return index - 1 if own.first_inner else None
    if latest is None or latest >= 0:
        return latest
    for i in range(index - 1, -1, -1):
        if headers[i].top:
            return None
        if headers[i].opener:
            return i
    return None


# The last lines of a step that failed without an annotation (a compiler's error, a
# container action that died) say so in words like these.
_FAILURE_TEXT = re.compile(
    r"\b(?:[Ee]rror|ERROR|[Ff]atal|FATAL)(?:\[\w+\])?:|\bFAIL(?:ED|URE)?\b|\bpanic:|"
    r"^Traceback \(most|Segmentation fault|exit (?:code|status) [1-9]|"
    r"make(?:\[\d+\])?: \*\*\*|npm ERR!|BUILD FAILED|\bfailed with exit code|"
    r"\bexited with (?:code|status) [1-9]"
)


def _failure_in_tail(region: Sequence[Line]) -> int | None:
    """The first line among a step's last lines that reports a failure, if any."""
    tail = [line for line in region if not line.header][-TAIL_LINES:]
    for line in tail:
        if _FAILURE_TEXT.search(line.text):
            return line.number
    return None


def choose_section(sections: Sequence[Section]) -> int | None:
    """Which failing section explains the job, from the log alone.

    The first failing step, before the set-up's and post-job sections: after a real
    failure only ``if: always()`` steps run, and what they report (an upload, a test
    report, a cancellation that came later) follows from it. A failing
    ``continue-on-error`` step followed by the real failure cannot be told from this in
    the log alone (its later steps ran either way); the jobs API can (``steps=``): its
    conclusion there is ``success``. Decided on real logs: in tests/triage/real/ every log
    with two failing steps has the first as its failure (the later ones upload reports or
    run a second check under ``if: always()``), and in the LogSage dataset's 250 failed
    jobs every step showing an ``##[error]`` has the API conclusion ``failure``, none a
    failed ``continue-on-error`` step.
    """
    if not sections:
        return None
    for i, section in enumerate(sections):
        if not section.post:
            return i
    return 0


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
