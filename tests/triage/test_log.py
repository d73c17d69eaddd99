"""The streaming parser: structure, first error, region, bounds, true line numbers."""

from __future__ import annotations

import io
from collections.abc import Iterator

import pytest

from landbot.triage.log import LINE_CAP, _blocks, _Scanner, clean_line, parse_log

from .conftest import BOM, SET_UP, gh_log, run_step


def numbered(lines: list[str]) -> dict[str, int]:
    """1-based line of each distinct text (for readable assertions)."""
    return {text: i for i, text in enumerate(lines, 1)}


def test_finds_the_step_section_before_the_first_error() -> None:
    lines = [
        *SET_UP,
        *run_step("actions/checkout@v4"),
        *run_step("make build", "building", "built"),
        *run_step(
            "make test", "running 3 tests", "boom", "##[error]Process completed with exit code 2."
        ),
        "Post job cleanup.",
        "Cleaning up orphan processes",
    ]
    at = numbered(lines)
    parsed = parse_log(gh_log(lines))
    assert parsed.first_error == at["##[error]Process completed with exit code 2."]
    assert parsed.step_title == "Run make test"
    assert parsed.step_line == at["##[group]Run make test"]
    assert parsed.step_script == ("make test", "shell: /usr/bin/bash -e {0}")
    assert parsed.exit_code == 2
    assert parsed.line_count == len(lines)
    # The region is the failing step: from its header to its end, header lines marked.
    numbers = [line.number for line in parsed.region]
    assert numbers == list(range(at["##[group]Run make test"], at["Post job cleanup."]))
    assert [line.text for line in parsed.region if not line.header] == [
        "running 3 tests",
        "boom",
        "##[error]Process completed with exit code 2.",
    ]
    assert parsed.error_annotations == (at["##[error]Process completed with exit code 2."],)
    assert not parsed.region_truncated


def test_a_log_without_error_has_no_failing_step() -> None:
    lines = [*SET_UP, *run_step("make test", "ok"), "##[warning]slow", "Post job cleanup."]
    parsed = parse_log(gh_log(lines))
    assert parsed.first_error is None
    assert parsed.step_title is None and parsed.step_line is None
    assert parsed.region == ()
    assert parsed.line_count == len(lines)


def test_error_text_inside_a_step_script_is_not_an_error() -> None:
    # The header group echoes the script: a line there is what ran, not what happened.
    lines = [
        *run_step(
            "./check.sh",
            "all good",
            script=[
                "##[error]this is a comment in the script",
                'echo "The runner has received a shutdown signal"',
            ],
        ),
        "Post job cleanup.",
    ]
    assert parse_log(gh_log(lines)).first_error is None
    # Control: the same text as output is an error.
    lines_out = [*run_step("./check.sh", "##[error]this is output"), "Post job cleanup."]
    assert parse_log(gh_log(lines_out)).first_error == 5


def test_error_marker_must_start_the_line() -> None:
    lines = [*run_step("grep x log.txt", "log.txt: ##[error]old failure quoted"), "done"]
    assert parse_log(gh_log(lines)).first_error is None
    # Control: at the start of the line (after the timestamp) it counts.
    lines = [*run_step("grep x log.txt", "##[error]old failure"), "done"]
    assert parse_log(gh_log(lines)).first_error == 5


def test_nested_tool_groups_do_not_end_the_step() -> None:
    lines = [
        *run_step(
            "npm test",
            "##[group]Installing",
            "##[group]inner",
            "x",
            "##[endgroup]",
            "##[endgroup]",
            "##[group]Testing",
            "fail!",
            "##[endgroup]",
            "##[error]Process completed with exit code 1.",
        ),
    ]
    parsed = parse_log(gh_log(lines))
    assert parsed.step_title == "Run npm test"
    assert parsed.step_line == 1
    assert parsed.first_error == len(lines)


def test_an_error_after_post_job_cleanup_has_no_run_step() -> None:
    lines = [
        *run_step("make test", "ok"),
        "Post job cleanup.",
        "##[error]Failed to save cache",
        "Cleaning up orphan processes",
    ]
    parsed = parse_log(gh_log(lines))
    assert parsed.first_error == 7
    assert parsed.step_title is None and parsed.step_line is None
    assert [line.number for line in parsed.region] == [6, 7, 8]


def test_an_error_in_set_up_has_no_step() -> None:
    lines = [
        "Current runner version: '2.321.0'",
        "Prepare all required actions",
        "##[error]Unable to resolve action `actions/chekout@v4`, repository not found",
    ]
    parsed = parse_log(gh_log(lines))
    assert parsed.first_error == 3
    assert parsed.step_title is None


def test_runner_message_without_prefix_is_an_error() -> None:
    lines = [
        *run_step("sleep 9000", "sleeping"),
        "The hosted runner: GitHub Actions 3 lost communication with the server.",
    ]
    parsed = parse_log(gh_log(lines))
    assert parsed.first_error == 6
    assert parsed.step_title == "Run sleep 9000"


def test_region_stops_at_the_next_step() -> None:
    lines = [
        *run_step("make test", "bad", "##[error]Process completed with exit code 1."),
        *run_step("upload logs", "uploaded", "##[error]later error"),
    ]
    parsed = parse_log(gh_log(lines))
    assert parsed.first_error == 6
    assert parsed.region[-1].number == 6
    assert parsed.error_annotations == (6,)


@pytest.mark.parametrize("bom", [True, False])
@pytest.mark.parametrize("stamps", [True, False])
def test_bom_and_timestamps_are_optional(bom: bool, stamps: bool) -> None:
    lines = [*run_step("make", "oops"), "##[error]Process completed with exit code 2."]
    data = gh_log(lines, bom=bom) if stamps else (BOM if bom else b"") + "\n".join(lines).encode()
    parsed = parse_log(data)
    assert parsed.first_error == 6
    assert parsed.step_title == "Run make"
    assert parsed.step_line == 1


def test_clean_line_strips_timestamp_ansi_bom_and_controls() -> None:
    raw = (
        BOM + b"2026-11-03T10:15:30.1234567Z \x1b[31mFAILED\x1b[0m x\x07 \x1b]8;;http://x\x07y\r\n"
    )
    assert clean_line(raw) == "FAILED x y"
    assert clean_line(b"progress 10%\rprogress 100%") == "progress 100%"
    assert clean_line(b"\xff\xfebad utf-8") == "\ufffd\ufffdbad utf-8"
    # Only a leading timestamp is a prefix.
    assert clean_line(b"at 2026-11-03T10:15:30.1234567Z ok") == "at 2026-11-03T10:15:30.1234567Z ok"


def chunked(data: bytes, size: int) -> Iterator[bytes]:
    for i in range(0, len(data), size):
        yield data[i : i + size]


def big_failing_log(filler_lines: int) -> tuple[bytes, int, int]:
    """A step with many output lines then a failure: (log, header line, error line)."""
    lines = [
        *SET_UP,
        *run_step("pytest -v"),
        *(f"tests/test_mod.py::test_{i} PASSED" for i in range(filler_lines)),
        "FAILED tests/test_mod.py::test_last - assert 1 == 2",
        "##[error]Process completed with exit code 1.",
        "Post job cleanup.",
    ]
    return gh_log(lines), len(SET_UP) + 1, len(lines) - 1


def test_line_numbers_stay_true_when_the_start_is_dropped() -> None:
    data, header, error = big_failing_log(50_000)
    assert len(data) > 3_000_000
    parsed = parse_log(chunked(data, 65_536), max_bytes=100_000)
    assert parsed.first_error == error
    assert parsed.step_line == header  # remembered although its bytes were dropped
    assert parsed.step_title == "Run pytest -v"
    assert parsed.region_truncated
    assert parsed.region[0].number > header
    assert parsed.region[-1].number == error
    texts = {line.number: line.text for line in parsed.region}
    assert texts[error - 1] == "FAILED tests/test_mod.py::test_last - assert 1 == 2"
    # The witness of the bound: never much more than max_bytes plus one chunk.
    assert parsed.retained_peak <= 100_000 + 65_536 * 2
    # Control: unbounded, the same numbers and the whole step.
    full = parse_log(data, context_lines=10**6)
    assert (full.first_error, full.step_line) == (error, header)
    assert full.region[0].number == header and not full.region_truncated


def test_context_lines_bound_the_region() -> None:
    data, _header, error = big_failing_log(1000)
    parsed = parse_log(data, context_lines=10)
    assert parsed.region[0].number == error - 10
    assert parsed.region_truncated


def test_an_early_error_is_kept_when_megabytes_follow_it() -> None:
    # A step fails, then an `if: always()` step prints a lot: the failure is still found.
    lines = [
        *run_step("make test", "E: broken", "##[error]Process completed with exit code 1."),
        *run_step("cat debug.log", *(f"debug {i}" for i in range(100_000))),
    ]
    parsed = parse_log(chunked(gh_log(lines), 32_768), max_bytes=50_000)
    assert parsed.first_error == 6
    assert parsed.step_title == "Run make test"
    assert parsed.line_count == len(lines)


def test_a_file_object_is_read_in_chunks() -> None:
    data, header, error = big_failing_log(100)

    class Recording(io.BytesIO):
        sizes: list[int]

        def read(self, size: int | None = -1, /) -> bytes:
            self.sizes.append(-1 if size is None else size)
            return super().read(size)

    stream = Recording(data)
    stream.sizes = []
    parsed = parse_log(stream)
    assert parsed.first_error == error and parsed.step_line == header
    assert stream.sizes and all(s > 0 for s in stream.sizes)  # never read() whole


def test_an_overlong_line_keeps_its_start_and_the_count() -> None:
    huge = "x" * (LINE_CAP * 5)
    lines = [*run_step("make", huge), "##[error]Process completed with exit code 1."]
    parsed = parse_log(chunked(gh_log(lines), 4096))
    assert parsed.first_error == 6
    long = next(line for line in parsed.region if line.number == 5)
    assert long.text.startswith("xxx")
    assert parsed.retained_peak < LINE_CAP * 3


def test_crlf_lines() -> None:
    data = gh_log([*run_step("make", "oops"), "##[error]Process completed with exit code 2."])
    parsed = parse_log(data.replace(b"\n", b"\r\n"))
    assert parsed.first_error == 6
    assert parsed.region[-1].text == "##[error]Process completed with exit code 2."
    assert parsed.step_title == "Run make"


def test_bad_bounds_are_refused() -> None:
    with pytest.raises(ValueError):
        parse_log(b"", max_bytes=0)
    with pytest.raises(ValueError):
        parse_log(b"", context_lines=0)


def test_empty_log() -> None:
    parsed = parse_log(b"")
    assert (parsed.line_count, parsed.first_error, parsed.region) == (0, None, ())


def test_the_lines_before_the_error_fill_three_quarters_of_the_bound() -> None:
    # Every line is exactly 100 bytes with its timestamp and newline.
    filler = [f"out {i:04d} " + "." * 61 for i in range(50)]
    lines = [*run_step("make"), *filler, "##[error]Process completed with exit code 1."]
    data = gh_log(lines, bom=False)
    assert all(len(raw) == 99 for raw in data.split(b"\n")[4:54])
    error = len(lines)
    parsed = parse_log(data, max_bytes=1000)
    # 750 bytes of whole lines before the error: 7 lines of 100 bytes.
    assert [line.number for line in parsed.region] == list(range(error - 7, error + 1))


def test_the_tail_ring_keeps_the_longest_whole_line_suffix() -> None:
    lines = [b"%03d" % i + b"x" * 96 + b"\n" for i in range(10)]  # 100 bytes each
    for bound in (200, 250, 299):  # exactly two lines fit, with room to spare, just
        scanner = _Scanner(max_bytes=bound, context_lines=100)
        for i in range(0, 10, 3):
            scanner.feed(b"".join(lines[i : i + 3]))
            kept = b"".join(block.data for block in scanner.ring)
            assert scanner.ring_bytes == len(kept) <= bound
            # The most whole lines that fit: two.
            assert kept == b"".join(lines[: min(i + 3, 10)][-2:])
            assert scanner.ring[0].first == min(i + 3, 10) - 1


def test_an_overlong_line_split_over_chunks_keeps_only_its_start() -> None:
    line = b"a" * LINE_CAP + b"b" * LINE_CAP + b"END\nnext\n"
    chunks = [line[i : i + 1000] for i in range(0, len(line), 1000)]
    blocks = list(_blocks(chunks))
    assert b"".join(blocks) == b"a" * LINE_CAP + b"\nnext\n"
