"""Untrusted text made inert: for a Markdown comment, and for a terminal."""

from __future__ import annotations

import random
import re

import pytest

from landbot.core.text import ZWSP, TerminalStream, encodable, inert, terminal_safe, text_of

HOSTILE = (
    "Fixed it. cc @octocat @acme/maintainers, see #12 and GH-7; details at "
    "https://evil.example/x or www.evil.example, [click](https://evil.example) "
    '![pixel](https://evil.example/p.png) <img src="https://evil.example/t.png"> '
    "<!-- landbot:status --> &#64;octocat \u202eevil\u202c"
)


def test_inert_leaves_no_live_mention_link_image_or_html() -> None:
    out = inert(HOSTILE)
    assert not re.search(r"@[A-Za-z0-9]", out)  # every @ is followed by a zero-width space
    assert not re.search(r"#\d", out) and not re.search(r"GH-\d", out)
    assert "https://" not in out and "www." not in out
    assert "<" not in out and ">" not in out  # no tag, no comment, no fake marker
    assert "](" not in out.replace("\\](", "")  # brackets escaped: no link syntax
    assert "&#64;" not in out  # an entity cannot spell an @ back
    assert "\u202e" not in out


def test_inert_control_plain_text_is_unchanged() -> None:
    # The control: ordinary prose, code and numbers stay exactly as written.
    text = "The test `test_parse` failed: expected 3, got 4 (see tests/test_parse.py:12).\n"
    assert inert(text) == text


def test_inert_reads_the_same_once_rendered() -> None:
    # The zero-width space is invisible; the words are the same.
    assert inert("ping @octocat").replace(ZWSP, "") == "ping @octocat"


ESCAPES = [
    "\x1b[31mred\x1b[0m",
    "\x1b]0;owned title\x07",
    "\x1b]8;;https://evil.example\x1b\\link\x1b]8;;\x1b\\",
    "\x1bP+q\x1b\\",  # DCS: a terminal query that some terminals answer as typed input
    "\x9b31m",  # C1 CSI
    "over\rwrite",
    "\x1b[2J\x1b[H",
    "bell\x07 back\x08space",
]


@pytest.mark.parametrize("seq", ESCAPES)
def test_terminal_safe_removes_every_escape_and_control(seq: str) -> None:
    out = terminal_safe(seq.encode())
    assert "\x1b" not in out and "\x07" not in out and "\r" not in out and "\x08" not in out
    assert not any(0x80 <= ord(c) <= 0x9F for c in out)


def test_terminal_safe_control_keeps_text_newlines_and_tabs() -> None:
    text = "line one\n\tline two\r\nünïcode ✓\n"
    assert terminal_safe(text.encode()) == "line one\n\tline two\nünïcode ✓\n"


def test_terminal_safe_limit_keeps_the_tail() -> None:
    assert terminal_safe("a" * 10 + "END", limit=3) == "END"


def test_a_stream_split_anywhere_leaks_nothing() -> None:
    data = ("ok " + " ".join(ESCAPES) + " ✓ done\n").encode() * 3
    rng = random.Random(7)
    for _ in range(300):
        cuts = sorted(rng.sample(range(1, len(data)), 6))
        stream = TerminalStream()
        out = "".join(
            stream.feed(data[a:b]) for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)
        )
        out += stream.close()
        assert "\x1b" not in out and "\r" not in out and "\x07" not in out
        assert out == terminal_safe(data)


# --- encodable (issue 29) ---------------------------------------------------------------

LONE = ["\ud800", "\udbff", "\udc00", "\udfff", b"caf\xe9".decode("utf-8", "surrogateescape")]


@pytest.mark.parametrize("lone", LONE)
def test_every_surrogate_becomes_one_replacement_character(lone: str) -> None:
    with pytest.raises(UnicodeEncodeError):  # the control: this is what broke the writes
        f"a {lone} b".encode()
    out = encodable(f"a {lone} b")
    assert out == f"a {lone[:-1]}\ufffd b"  # each sample ends in its one surrogate
    out.encode()
    for sink in (inert, terminal_safe):
        sink(f"a {lone} b").encode()  # a comment or a terminal line cannot carry one


def test_encodable_control_ordinary_text_is_unchanged() -> None:
    for text in ("plain", "café", "日本語", "🎉 party", "\ufffd already", ""):
        assert encodable(text) == text
    assert text_of("café 日本 🎉".encode()) == "café 日本 🎉"


def test_text_of_bad_bytes_is_encodable() -> None:
    # Latin-1, a truncated sequence, an encoded surrogate (which strict UTF-8 refuses).
    for raw in (b"caf\xe9", b"\xe6\x97", b"\xed\xa0\x80"):
        out = text_of(raw)
        out.encode()
        assert "\ufffd" in out
