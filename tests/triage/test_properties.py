"""Properties: the parser survives any input, and its line numbers are the file's."""

from __future__ import annotations

import os
from collections.abc import Iterator

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from landbot.triage import explain_log, parse_log
from landbot.triage.log import choose_section

from .conftest import stamp

# TRIAGE_EXAMPLES=5000 for a deeper search than CI's.
SETTINGS = settings(
    max_examples=int(os.environ.get("TRIAGE_EXAMPLES", "300")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def line_count(data: bytes) -> int:
    """Lines as a text editor numbers them: split on \\n, a last unterminated one counts."""
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def split(data: bytes, cuts: list[int]) -> Iterator[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    last = 0
    for p in points:
        yield data[last:p]
        last = p
    yield data[last:]


LINE = st.one_of(
    st.sampled_from(
        [
            "##[group]Run make test",
            "##[group]Run npm ci",
            "##[group]Fetching",
            "##[endgroup]",
            "##[error]Process completed with exit code 1.",
            "##[error]Process completed with exit code 137.",
            "##[error]The operation was canceled.",
            "##[warning]careful",
            "Post job cleanup.",
            "The runner has received a shutdown signal.",
            "The hosted runner: X lost communication with the server.",
            "quest: quest/a.md: bad title",
            "FAILED tests/test_a.py::test_b - assert 1 == 2",
            " FAIL  src/a.test.ts > a > b",
            "Traceback (most recent call last):",
            '  File "x.py", line 1, in <module>',
            "ValueError: boom",
            "Killed",
            "npm ERR! code ECONNRESET",
            "No space left on device",
            '{"result": "cancelled"}',
            "Complete job name: changelog-check",
            "Job defined at: o/r/.github/workflows/labels.yml@refs/heads/main",
            "##[group]Run o/r/sub@v1",
            "##[group]Run /home/runner/work/_actions/o/r/v1/sub/run.sh",
            "src/a.c:1:2: error: expected ';'",
            "panic: test timed out after 1s",
            "Error: connect ECONNREFUSED 10.0.0.1:443",
            "\x1b[31mred\x1b[0m",
            # Composite actions: an action's inputs, the runner's preparation, shells,
            # and the 2026 runner's composite markers.
            "##[group]Run ./.github/actions/setup",
            "with:",
            "  node-version: 18",
            "env:",
            "Prepare all required actions",
            "shell: /usr/bin/bash -e {0}",
            "shell: /usr/bin/bash --noprofile --norc -e -o pipefail {0}",
            "##[start-action display=Run npm ci;id=__self.__run]",
            "##[end-action id=__self.__run;outcome=failure;conclusion=failure;duration_ms=9]",
            "",
        ]
    ),
    st.text(max_size=40),
)


@st.composite
def logs(draw: st.DrawFn) -> bytes:
    lines = draw(st.lists(LINE, max_size=60))
    stamped = draw(st.booleans())
    body = [f"{stamp(i)} {text}" if stamped else text for i, text in enumerate(lines)]
    sep = draw(st.sampled_from(["\n", "\r\n"]))
    data = sep.join(body).encode("utf-8", "surrogatepass")
    if draw(st.booleans()):
        data += sep.encode()
    if draw(st.booleans()):
        data = b"\xef\xbb\xbf" + data
    return data


def check_numbers(data: bytes, result: dict[str, object], count: int) -> None:
    lines = result["error_lines"]
    assert isinstance(lines, list)
    excerpt = result["excerpt"]
    assert isinstance(excerpt, list)
    numbers = [*lines, *(item["line"] for item in excerpt)]
    assert all(1 <= n <= count for n in numbers), (numbers, count)
    assert lines == sorted(set(lines))
    shown = [item["line"] for item in excerpt]
    assert shown == sorted(set(shown))


@SETTINGS
@given(data=st.binary(max_size=3000), cuts=st.lists(st.integers(min_value=0), max_size=8))
def test_arbitrary_bytes_never_raise(data: bytes, cuts: list[int]) -> None:
    parsed = parse_log(split(data, cuts), max_bytes=512, context_lines=20)
    assert parsed.line_count == line_count(data)
    assert parsed.byte_count == len(data)
    e = explain_log(split(data, cuts), max_bytes=512, context_lines=20)
    check_numbers(data, e.to_dict(), line_count(data))


@SETTINGS
@given(
    data=logs(),
    cuts=st.lists(st.integers(min_value=0), max_size=10),
    max_bytes=st.integers(min_value=1, max_value=4000),
    context=st.integers(min_value=1, max_value=50),
)
def test_structured_logs_report_lines_inside_the_file(
    data: bytes, cuts: list[int], max_bytes: int, context: int
) -> None:
    count = line_count(data)
    parsed = parse_log(split(data, cuts), max_bytes=max_bytes, context_lines=context)
    assert parsed.line_count == count
    for n in (parsed.first_error, parsed.step_line):
        assert n is None or 1 <= n <= count
    assert all(1 <= line.number <= count for line in parsed.region)
    numbers = [line.number for line in parsed.region]
    assert numbers == sorted(set(numbers))
    if parsed.first_error is not None:
        assert parsed.first_error in numbers  # the error itself is always kept
    e = explain_log(split(data, cuts), max_bytes=max_bytes, context_lines=context)
    check_numbers(data, e.to_dict(full=True), count)


@SETTINGS
@given(data=logs(), cuts=st.lists(st.integers(min_value=0), max_size=10))
def test_chunking_does_not_change_the_explanation(data: bytes, cuts: list[int]) -> None:
    whole = explain_log(data, max_bytes=2048).to_dict(full=True)
    chunked = explain_log(split(data, cuts), max_bytes=2048).to_dict(full=True)
    assert chunked == whole


@SETTINGS
@given(data=logs(), cuts=st.lists(st.integers(min_value=0), max_size=10))
def test_chunking_does_not_change_which_steps_are_a_composites(
    data: bytes, cuts: list[int]
) -> None:
    whole, chunked = parse_log(data), parse_log(split(data, cuts))
    assert chunked.inner_headers == whole.inner_headers
    assert [(s.title, s.line, s.inner_title) for s in chunked.sections] == [
        (s.title, s.line, s.inner_title) for s in whole.sections
    ]
    # A composite's step is after the composite's header, and is one the log shows.
    assert whole.inner_headers <= {line for line, _title in whole.headers}
    for s in whole.sections:
        if s.inner_title is not None:
            assert s.line is not None and s.line < s.start


@SETTINGS
@given(data=logs())
def test_the_bound_does_not_move_the_error(data: bytes) -> None:
    small = parse_log(data, max_bytes=64)
    large = parse_log(data)
    assert small.first_error == large.first_error
    assert small.step_line == large.step_line
    assert small.step_title == large.step_title


@SETTINGS
@given(
    # Arbitrary bytes on one line that cannot be an error: no newline, `#` or letters.
    body=st.binary(max_size=500).map(
        lambda b: bytes(0x2D if c in b"\n#" or 0x41 <= c <= 0x7A else c for c in b)
    ),
    invalid=st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x80\x80", b"\xf4\x90\x80\x80"]),
)
def test_invalid_utf8_without_final_newline(body: bytes, invalid: bytes) -> None:
    data = b"##[group]Run x\n##[endgroup]\n" + body + invalid + b"\n##[error]bad " + invalid
    parsed = parse_log(data)
    assert parsed.line_count == line_count(data)
    assert parsed.first_error == line_count(data)
    assert parsed.region[-1].text.startswith("##[error]bad ")


@SETTINGS
@given(
    data=logs(),
    cuts=st.lists(st.integers(min_value=0), max_size=10),
    max_bytes=st.integers(min_value=1, max_value=4000),
)
def test_every_kept_section_holds_its_error_in_file_order(
    data: bytes, cuts: list[int], max_bytes: int
) -> None:
    parsed = parse_log(split(data, cuts), max_bytes=max_bytes, context_lines=30)
    starts = [s.start for s in parsed.sections]
    assert starts == sorted(set(starts))
    for i, section in enumerate(parsed.sections):
        numbers = [line.number for line in section.region]
        assert numbers == sorted(set(numbers))
        assert section.first_error in numbers
        assert section.start <= section.first_error <= max(section.end, section.start)
        chosen = parsed.with_section(i)
        assert (chosen.first_error, chosen.chosen) == (section.first_error, i)
    assert parsed.chosen == choose_section(parsed.sections)
    # Which steps failed does not depend on the bound (while no section is dropped).
    large = parse_log(data)
    if not large.sections_dropped:
        assert [(s.start, s.first_error) for s in parsed.sections] == [
            (s.start, s.first_error) for s in large.sections
        ]
