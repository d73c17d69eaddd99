"""Baselines (issue 26): a passing log of the same job, normalised, kept, compared with."""

from __future__ import annotations

import contextlib
import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from landbot.errors import LandbotError
from landbot.triage.baseline import (
    MAX_KEYS,
    Baseline,
    BaselineError,
    line_key,
    mask,
    read_baseline,
    step_key,
)
from landbot.triage.explain import explain_log

STAMP = "2026-03-01T10:{:02d}:{:02d}.{:07d}Z "


def gh(lines: list[str], *, minute: int = 0) -> bytes:
    """A GitHub Actions log: each line with a timestamp (different per run)."""
    out = [STAMP.format(minute, i % 60, i * 7919 % 10**7) + line for i, line in enumerate(lines)]
    return ("\n".join(out) + "\n").encode()


def step(title: str, output: list[str], *, error: bool = False) -> list[str]:
    lines = [f"##[group]Run {title}", title, "shell: /usr/bin/bash -e {0}", "##[endgroup]"]
    lines += output
    if error:
        lines.append("##[error]Process completed with exit code 1.")
    return lines


FAILING = gh(
    step(
        "make test",
        [
            "building 3fa9c0d1 in /tmp/tmpa8x_k2q9 on port 41234",
            "Error: the deprecated flag is set (harmless)",
            "took 1.32s",
            "Error: widget count is 3, expected 4",
        ],
        error=True,
    )
)
PASSING = gh(
    step(
        "make test",
        [
            "building e1b2c3d4 in /tmp/tmpzz91_qq3 on port 50111",
            "Error: the deprecated flag is set (harmless)",
            "took 0.97s",
            "all 12 checks passed",
        ],
    ),
    minute=7,
)


def test_masking_makes_two_runs_print_the_same_line() -> None:
    assert mask("building 3fa9c0d1 on port 41234 took 1.32s (57%)") == mask(
        "building e1b2c3d4 on port 50111 took 0.97s (3%)"
    )
    assert mask("id 550e8400-e29b-41d4-a716-446655440000") == mask(
        "id 123e4567-e89b-12d3-a456-426614174000"
    )
    assert mask("wrote /tmp/tmpa8x_k2q9/out.txt") == mask("wrote /tmp/pytest-of-x9/out.txt")
    assert mask('  File "x.py", line 12, in f') == mask('  File "x.py", line 345, in f')
    # Control: words are not masked.
    assert mask("widget count is 3") != mask("gadget count is 3")
    assert step_key("Run pytest -n 4") == step_key("Run pytest -n 2")


def test_read_baseline_keeps_every_line_of_a_step_under_its_title() -> None:
    b = read_baseline(PASSING)
    assert b.has_step("Run make test")
    assert b.seen(line_key("Error: the deprecated flag is set (harmless)"), "Run make test")
    assert b.seen(line_key("building ffff0001 in /tmp/tmpother_1 on port 1"), "Run make test")
    assert not b.seen(line_key("Error: widget count is 3, expected 4"), "Run make test")


def test_reading_does_not_depend_on_where_the_chunks_are_cut() -> None:
    whole = read_baseline(PASSING)
    for size in (1, 7, 64):
        chunks = [PASSING[i : i + size] for i in range(0, len(PASSING), size)]
        assert read_baseline(chunks) == whole
    assert read_baseline(io.BytesIO(PASSING)) == whole


def test_a_plain_log_is_one_step() -> None:
    b = read_baseline(b"Started by user x\n[Pipeline] sh\n+ make\nBUILD SUCCESS\n")
    assert [title for title, _k in b.steps] == [""]
    assert b.seen(line_key("BUILD SUCCESS"))


def test_serialisation_round_trips() -> None:
    b = read_baseline(PASSING + gh(step("make lint", ["ok"])))
    data = b.to_bytes()
    assert data[:4] == b"LBBL"
    assert Baseline.from_bytes(data) == b
    assert Baseline.from_bytes(Baseline(()).to_bytes()) == Baseline(())


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"garbage that is long enough",
        b"\x80\x04\x95pickle",
        b"LBBL\x02\x01\x00\x00\x00\x00",  # another version
        b"LBBL\x01\x04\x00\x00\x00\x00",  # unknown flags
        b"LBBL\x01\x01\xff\xff\xff\xff",  # too many steps
        b"LBBL\x01\x01\x00\x00\x00\x01\x00\x02",  # truncated step
        b"LBBL\x01\x01\x00\x00\x00\x01\x00\x01\x00\x00\x00\x05x",  # keys missing
    ],
)
def test_from_bytes_refuses_what_is_not_a_baseline(data: bytes) -> None:
    with pytest.raises(BaselineError) as info:
        Baseline.from_bytes(data)
    assert isinstance(info.value, ValueError) and isinstance(info.value, LandbotError)


def test_from_bytes_refuses_unordered_keys_trailing_bytes_and_bad_titles() -> None:
    good = Baseline((("Run x", frozenset({1, 2})),)).to_bytes()
    head, keys = good[:-16], good[-16:]
    with pytest.raises(BaselineError, match="order"):
        Baseline.from_bytes(head + keys[8:] + keys[:8])
    with pytest.raises(BaselineError, match="trailing"):
        Baseline.from_bytes(good + b"\x00")
    bad_title = good.replace(b"Run x", b"Run \xff")
    with pytest.raises(BaselineError, match="UTF-8"):
        Baseline.from_bytes(bad_title)
    huge = b"LBBL\x01\x01\x00\x00\x00\x01\x00\x00" + (MAX_KEYS + 1).to_bytes(4, "big")
    with pytest.raises(BaselineError, match="larger"):
        Baseline.from_bytes(huge)


def test_a_baseline_makes_the_new_line_the_error_line() -> None:
    alone = explain_log(FAILING)
    compared = explain_log(FAILING, baselines=[read_baseline(PASSING)])
    new = (
        FAILING.decode()
        .splitlines()
        .index(next(x for x in FAILING.decode().splitlines() if "widget count" in x))
    )
    assert compared.error_lines == (new + 1,)
    # Control: the log alone does not tell the two `Error:` lines apart.
    assert alone.error_lines != compared.error_lines


def test_no_baseline_changes_nothing() -> None:
    assert explain_log(FAILING, baselines=()) == explain_log(FAILING)


def test_reading_holds_bounded_memory_on_many_long_distinct_lines() -> None:
    import tracemalloc

    def word(i: int) -> bytes:  # distinct after the digits are masked: letters g to z
        return bytes(103 + (i // 20**k) % 20 for k in range(4))

    lines = b"".join(word(i) + b"x" * 30_000 + b"\n" for i in range(2_000))
    tracemalloc.start()
    b = read_baseline(lines[i : i + (1 << 20)] for i in range(0, len(lines), 1 << 20))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    # 60 MB of distinct long lines; the lines seen lately are capped at 8 MB.
    assert peak < 30 * 1024 * 1024, peak
    assert b.size >= 1


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200), st.integers(min_value=0, max_value=80), st.binary(max_size=4))
def test_from_bytes_refuses_garbage_and_damage_with_one_error(
    garbage: bytes, at: int, patch: bytes
) -> None:
    good = Baseline((("Run x", frozenset({1, 2, 3})), ("", frozenset({7})))).to_bytes()
    damaged = good[:at] + patch + good[at + len(patch) :]
    for data in (garbage, damaged, good[:at]):
        with contextlib.suppress(BaselineError):  # refused: fine; anything else fails
            Baseline.from_bytes(data)
