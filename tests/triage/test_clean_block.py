"""``clean_block`` (whole-block cleaning, for speed) says exactly what ``clean_line`` says."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from landbot.triage.log import clean_block, clean_line

PIECES = [
    b"a",
    b" ",
    b"\r",
    b"\n",
    b"\t",
    b"\x00",
    b"\x7f",
    b"\x1b",
    b"[31m",
    b"]8;;http://x\x07",
    b"\\",
    b"\xef\xbb\xbf",
    b"2026-11-03T10:15:00.1234567Z ",
    b"\xff",
    b"\xc3\xa9",
    b"\xe2\x82",
]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=40))
def test_clean_block_is_clean_line_per_line(pieces: list[bytes]) -> None:
    data = b"".join(pieces)
    raws = data.split(b"\n")
    if data.endswith(b"\n"):
        raws.pop()
    assert clean_block(data) == ([clean_line(raw) for raw in raws] if data else [])


def test_a_long_line_is_capped_like_clean_line() -> None:
    data = b"x" * 5000 + b"\n" + b"y\n"
    assert clean_block(data) == [clean_line(b"x" * 5000), "y"]
