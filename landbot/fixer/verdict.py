"""The fixer agent's verdict: its JSON schema, and parsing it without ever crashing.

An agent writes `{"verdict": "fixed" | "flaky" | "needs_human", "summary": "...",
"recommendation": "...", "reproduced": true}` to `$LANDBOT_VERDICT_FILE` (Codex returns it
as its final message, held to `SCHEMA` by `--output-schema`). The agent is untrusted: the
file may be missing, huge, binary, not JSON, or JSON of the wrong shape. Each of those
becomes a `needs_human` verdict whose summary says what went wrong, so a person looks at
the pull request instead of the job failing.

Valid JSON can spell a lone surrogate (`"\\ud800"`), which no UTF-8 writer (the store,
GitHub's API) can encode: the text fields come out with each surrogate as U+FFFD
(core/text.py `encodable`), here where the JSON is decoded, for a local job's file and a
runner's artifact alike.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, cast, get_args

from landbot.core.model import Verdict
from landbot.core.text import encodable

VERDICTS: tuple[Verdict, ...] = get_args(Verdict)

MAX_VERDICT_BYTES = 64 * 1024  # a verdict is a few sentences; more is not a verdict
MAX_SUMMARY_CHARS = 1000
MAX_RECOMMENDATION_CHARS = 2000

# The schema Codex's `--output-schema` sends as the response's `text.format` (strict mode
# wants every property required and no others).
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "verdict": {
            "type": "string",
            "enum": list(VERDICTS),
            "description": "fixed: a fix is committed; flaky: the failing command passed "
            "when run again unchanged; needs_human: a person must decide",
        },
        "summary": {"type": "string", "description": "what you found, in one or two sentences"},
        "recommendation": {
            "type": "string",
            "description": "what a person should decide or do next (empty when fixed)",
        },
        "reproduced": {
            "type": "boolean",
            "description": "whether running the failing command reproduced the failure",
        },
    },
    "required": ["verdict", "summary", "recommendation", "reproduced"],
    "additionalProperties": False,
}

# Control characters other than newline and tab: they would garble a comment or a terminal.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\u202a-\u202e\u2066-\u2069]")
_FENCE = re.compile(r"^```[a-zA-Z]*\s*\n(.*)\n```$", re.DOTALL)


class VerdictError(ValueError):
    """The agent's verdict is unusable; the message says why, in a phrase."""


@dataclass(frozen=True)
class AgentVerdict:
    verdict: Verdict
    summary: str
    recommendation: str = ""
    reproduced: bool = False
    # True when the agent itself produced this verdict; False when landbot made it up
    # because the agent gave none (no file, garbage, a timeout).
    from_agent: bool = True

    def to_json(self) -> dict[str, Any]:
        """The contract object (what `landbot fixer run` prints)."""
        return {
            "verdict": self.verdict,
            "summary": self.summary,
            "recommendation": self.recommendation,
            "reproduced": self.reproduced,
        }


def _clean(text: str, limit: int) -> str:
    text = _CONTROL.sub("", encodable(text)).strip()
    if len(text) > limit:
        text = text[: limit - 1].rstrip() + "…"
    return text


def parse_verdict(data: bytes) -> AgentVerdict:
    """The verdict in `data` (a file's bytes, or Codex's last message), or VerdictError."""
    if len(data) > MAX_VERDICT_BYTES:
        raise VerdictError(f"it is {len(data)} bytes, more than the {MAX_VERDICT_BYTES} allowed")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise VerdictError("it is not UTF-8 text") from None
    text = text.strip()
    if not text:
        raise VerdictError("it is empty")
    fenced = _FENCE.match(text)  # a model may wrap its JSON in a markdown code block
    if fenced:
        text = fenced.group(1).strip()
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise VerdictError(f"it is not JSON ({exc.msg} at line {exc.lineno})") from None
    except RecursionError:
        raise VerdictError("it is JSON nested too deeply") from None
    if not isinstance(obj, dict):
        raise VerdictError(f"it is a JSON {type(obj).__name__}, not an object")
    verdict = obj.get("verdict")
    if verdict not in VERDICTS:
        raise VerdictError(
            f'its "verdict" is {json.dumps(verdict)[:40]}, not one of {", ".join(VERDICTS)}'
        )
    summary = obj.get("summary")
    # Judged once cleaned: a summary of control characters alone says nothing.
    if not isinstance(summary, str) or not _clean(summary, MAX_SUMMARY_CHARS):
        raise VerdictError('its "summary" is missing or not a non-empty string')
    recommendation = obj.get("recommendation", "")
    if not isinstance(recommendation, str):
        raise VerdictError('its "recommendation" is not a string')
    reproduced = obj.get("reproduced")
    if not isinstance(reproduced, bool):
        raise VerdictError('its "reproduced" is missing or not true/false')
    return AgentVerdict(
        verdict=cast(Verdict, verdict),
        summary=_clean(summary, MAX_SUMMARY_CHARS),
        recommendation=_clean(recommendation, MAX_RECOMMENDATION_CHARS),
        reproduced=reproduced,
    )


# --- verdicts landbot writes when the agent gave none ---------------------------------

_LOOK = "Look at the failure yourself; the operator running landbot has the fixer's output."


def no_verdict(exit_code: int) -> AgentVerdict:
    return AgentVerdict(
        "needs_human",
        f"the agent wrote no verdict (it exited with code {exit_code})",
        _LOOK,
        from_agent=False,
    )


def bad_verdict(problem: str) -> AgentVerdict:
    return AgentVerdict(
        "needs_human", f"the agent's verdict is unusable: {problem}", _LOOK, from_agent=False
    )


def timed_out(seconds: float) -> AgentVerdict:
    return AgentVerdict(
        "needs_human",
        f"the agent timed out after {seconds:g} s and was stopped",
        "Look at the failure yourself, or give the fixer more time.",
        from_agent=False,
    )


def out_of_memory(memory_mb: int) -> AgentVerdict:
    return AgentVerdict(
        "needs_human",
        f"the agent was killed by the sandbox's memory cap of {memory_mb} MB",
        "Look at the failure yourself, or give the fixer more memory.",
        from_agent=False,
    )


def judge(
    candidates: list[bytes | None],
    *,
    exit_code: int,
    timed_out_after: float | None = None,
    oom_mb: int | None = None,
) -> AgentVerdict:
    """The job's verdict from what the agent left (pure).

    `candidates` are the contents of the agent's verdict channels in order of preference
    (None: the file does not exist). A timeout or an OOM kill wins over whatever the agent
    wrote before it was stopped: a half-done job is not a fix.
    """
    if timed_out_after is not None:
        return timed_out(timed_out_after)
    if oom_mb is not None:
        return out_of_memory(oom_mb)
    present = [c for c in candidates if c is not None]
    if not present:
        return no_verdict(exit_code)
    problem = ""
    for data in present:
        try:
            return parse_verdict(data)
        except VerdictError as exc:
            problem = problem or str(exc)
    return bad_verdict(problem)
