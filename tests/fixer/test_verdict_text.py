"""Text a job controls is encodable before it lands (issue 29): a verdict is valid JSON
that may spell a lone surrogate (`"\\ud800"`), which no UTF-8 writer (the store, GitHub's
API) can encode. Each becomes U+FFFD where the JSON is decoded, for a local job's verdict
file and a runner's artifact alike; ordinary text beyond ASCII passes unchanged."""

from __future__ import annotations

import io
import json
import sqlite3
import zipfile

import pytest

from landbot.fixer.agents import claude_result
from landbot.fixer.artifact import MANIFEST_NAME, VERDICT_NAME, manifest, read_artifact
from landbot.fixer.verdict import VerdictError, judge, parse_verdict

# As JSON spells them: a lone high, a lone low, the low half surrogateescape makes of 0xff.
LONE = ["\\ud800", "\\udfff", "\\udcff"]
PLAIN = "café, 日本語, 🎉 and ‽"


def verdict_bytes(summary: str, recommendation: str = "") -> bytes:
    """A verdict whose text fields are given as JSON source (escapes kept as written)."""
    return (
        '{"verdict": "needs_human", "summary": "' + summary + '", '
        '"recommendation": "' + recommendation + '", "reproduced": false}'
    ).encode()


def lands(text: str) -> str:
    """`text` after the writes that failed on a surrogate: UTF-8, and a SQLite row."""
    text.encode("utf-8")
    with sqlite3.connect(":memory:") as db:
        (back,) = db.execute("select ?", (text,)).fetchone()
    assert back == text
    return text


def artifact_of(verdict: bytes) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr(VERDICT_NAME, verdict)
        z.writestr(MANIFEST_NAME, manifest({VERDICT_NAME: verdict}))
    return out.getvalue()


@pytest.mark.parametrize("lone", LONE)
def test_a_lone_surrogate_in_a_verdict_becomes_the_replacement_character(lone: str) -> None:
    data = verdict_bytes(f"the test {lone} fails", f"look {lone}")
    assert json.loads(data)["summary"] != "the test \ufffd fails"  # the control: it is there
    v = parse_verdict(data)
    assert lands(v.summary) == "the test \ufffd fails"
    assert lands(v.recommendation) == "look \ufffd"
    lands(json.dumps(v.to_json(), ensure_ascii=False))  # what `landbot fixer run` prints


@pytest.mark.parametrize("lone", LONE)
def test_the_local_verdict_file_and_a_runners_artifact_read_the_same(lone: str) -> None:
    data = verdict_bytes(f"x{lone}y")
    local = judge([data], exit_code=0)  # a local job's $LANDBOT_VERDICT_FILE
    remote = judge([read_artifact(artifact_of(data)).verdict], exit_code=0)  # a runner's
    assert local == remote and local.from_agent
    assert lands(local.summary) == "x\ufffdy"


def test_control_ordinary_text_beyond_ascii_passes_unchanged() -> None:
    raw = parse_verdict(verdict_bytes(PLAIN, PLAIN))
    # The same text as JSON escapes, the emoji as a surrogate pair (which JSON joins).
    escaped = json.dumps(PLAIN)[1:-1]
    assert "\\ud83c\\udf89" in escaped
    for v in (raw, parse_verdict(verdict_bytes(escaped, escaped))):
        assert v.summary == PLAIN and v.recommendation == PLAIN


def test_a_summary_of_nothing_but_control_characters_is_no_summary() -> None:
    with pytest.raises(VerdictError, match="summary"):
        parse_verdict(verdict_bytes("\\u0001\\u0007 \\u202e"))
    assert parse_verdict(verdict_bytes("\\u0001 ok")).summary == "ok"  # the control


def test_claudes_final_message_with_a_lone_surrogate_is_read() -> None:
    # `claude -p --output-format json`: the verdict is the text of "result", so the
    # surrogate is decoded once, by claude_result, before the verdict is parsed.
    text = '{"verdict": "needs_human", "summary": "found it \ud800", "reproduced": false}'
    stdout = json.dumps({"type": "result", "result": text}).encode()
    assert b"\\ud800" in stdout  # the control: valid JSON, ASCII, spelling the surrogate
    data = claude_result(stdout)
    assert data is not None
    assert lands(parse_verdict(data).summary) == "found it \ufffd"
