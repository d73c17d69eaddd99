"""Making untrusted text inert where it lands: a GitHub comment, or a terminal.

    encodable(summary)          # for anything that encodes it: no lone surrogate
    text_of(raw_bytes)          # bytes from a job or a log, as encodable text
    inert(summary)              # for Markdown: no live mention, link, image or HTML
    terminal_safe(stderr_tail)  # for a terminal or a log: no escape or control sequence
    TerminalStream().feed(chunk)  # the same, chunk by chunk

Text that a job, a log or a check name wrote is the attacker's: in a comment an `@name`
notifies, a `[text](url)` or a bare URL sends readers elsewhere, raw HTML can draw a fake
landbot message or hide one; on a terminal an escape sequence can rewrite the screen, set
the window title or, on some terminals, answer back as if typed.

Text must also be encodable before it lands: a Python `str` can hold a lone surrogate
(U+D800..U+DFFF), which valid JSON spells `"\\ud800"` and `surrogateescape` makes of a
byte that is not UTF-8, and UTF-8 cannot encode one, so the store, an HTTP body or a log
file raises UnicodeEncodeError on it. Where text from a job or a log is decoded (JSON,
bytes), each surrogate becomes U+FFFD (the replacement character, what a strict UTF-8
decoder with `errors="replace"` puts for a bad byte): the text stays readable and says
that something was there. `inert` and `terminal_safe` do it too, so no comment or
terminal line can carry one whatever its source.
"""

from __future__ import annotations

import codecs
import re

ZWSP = "\u200b"  # zero-width space: breaks a sigil or a scheme without changing the look
REPLACEMENT = "\ufffd"
_SURROGATE = re.compile("[\ud800-\udfff]")

# @name, @org/team and #123 (or GH-123) only notify or cross-link right before a name or number.
_SIGIL = re.compile(r"([@#])(?=[A-Za-z0-9_])")
_GH_REF = re.compile(r"\b(GH)-(?=\d)", re.IGNORECASE)
# A scheme GitHub autolinks, and www. (which it autolinks too).
_AUTOLINK = re.compile(r"\b(https?|ftp|mailto|file|javascript|data)(:)", re.IGNORECASE)
_WWW = re.compile(r"\b(www)(\.)", re.IGNORECASE)
# Characters that start Markdown links, images, HTML and entities.
_MARKUP = {"<": "&lt;", ">": "&gt;", "&": "&amp;", "[": "\\[", "]": "\\]", "!": "\\!"}
_MARKUP_RE = re.compile(r"[<>&\[\]!]")
# C0 controls but tab and newline, DEL, C1 controls, and the bidirectional overrides that
# make text read differently from what it is ("Trojan source").
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def encodable(text: str) -> str:
    """`text` with every surrogate code point as U+FFFD: it encodes as UTF-8."""
    if text.isascii():
        return text
    return _SURROGATE.sub(REPLACEMENT, text)


def text_of(data: bytes) -> str:
    """Bytes a job or a log wrote, as text: UTF-8, each bad byte sequence U+FFFD (a strict
    decoder never yields a surrogate, so the result is encodable)."""
    return data.decode("utf-8", "replace")


def inert(text: str) -> str:
    """`text` for a Markdown comment: it renders as the same words, and notifies, links,
    embeds and marks up nothing."""
    text = encodable(text).replace("\r\n", "\n")
    text = _CONTROL.sub("", text)
    text = _MARKUP_RE.sub(lambda m: _MARKUP[m.group(0)], text)
    text = _SIGIL.sub("\\1" + ZWSP, text)
    text = _GH_REF.sub("\\1-" + ZWSP, text)
    text = _AUTOLINK.sub("\\1" + ZWSP + "\\2", text)
    return _WWW.sub("\\1" + ZWSP + "\\2", text)


# ESC and what follows it: CSI (ESC [ … final), OSC/DCS/SOS/PM/APC (up to BEL or ESC \),
# or a two-character sequence. An unfinished one at the end of the text is dropped too.
_ESCAPE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]?|[\]PX^_][^\x07\x1b]*(?:\x07|\x1b\\)?|[ -~]?)")


def terminal_safe(data: bytes | str, limit: int | None = None) -> str:
    """`data` with every escape sequence and control character removed but newline and tab
    (a lone carriage return, which overwrites a line, included). With `limit`, only the
    last `limit` characters are kept."""
    text = text_of(data) if isinstance(data, bytes) else encodable(data)
    text = _ESCAPE.sub("", text.replace("\r\n", "\n"))
    text = _CONTROL.sub("", text)
    if limit is not None and len(text) > limit:
        text = text[-limit:]
    return text


class TerminalStream:
    """terminal_safe for a stream: a UTF-8 character or an escape sequence split across
    chunks is held back until it is whole, so no part of it reaches the terminal."""

    _HOLD = 4096  # an unfinished sequence longer than this is dropped, not held forever

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._pending = ""

    def feed(self, chunk: bytes, final: bool = False) -> str:
        text = self._pending + self._decoder.decode(chunk, final)
        self._pending = ""
        if not final:
            cut = _unfinished(text)
            if cut is not None and len(text) - cut <= self._HOLD:
                text, self._pending = text[:cut], text[cut:]
            if text.endswith("\r"):
                text, self._pending = text[:-1], "\r" + self._pending
        return terminal_safe(text)

    def close(self) -> str:
        return self.feed(b"", final=True)


def _unfinished(text: str) -> int | None:
    """Where an escape sequence that `text` ends in the middle of starts, or None."""
    start = text.rfind("\x1b")
    if start == -1:
        return None
    match = _COMPLETE.match(text, start)
    return None if match is not None else start


_COMPLETE = re.compile(
    r"\x1b(?:\[[0-?]*[ -/]*[@-~]|[\]PX^_][^\x07\x1b]*(?:\x07|\x1b\\)|(?![\[\]PX^_])[ -~])"
)
