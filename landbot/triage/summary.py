"""One line a person can act on: what failed, where, and what to do about it."""

from __future__ import annotations

import re
from collections.abc import Sequence

from landbot.triage.classify import Classification
from landbot.triage.context import TEST_KINDS, Mark
from landbot.triage.log import ParsedLog

SUMMARY_CHARS = 300

_MINUTES = re.compile(r"maximum execution time of (\d+) minutes")
_NETWORK_WORD = re.compile(
    r"ECONNRESET|ETIMEDOUT|ESOCKETTIMEDOUT|EAI_AGAIN|ECONNREFUSED|socket hang up|Read timed out|"
    r"Connection reset by peer|Connection timed out|Could not resolve host|"
    r"Temporary failure in name resolution|TLS handshake timeout"
)


def summarize(
    result: Classification,
    *,
    step: str | None,
    parsed: ParsedLog,
    marks: Sequence[Mark],
) -> str:
    where = f"step '{step}'" if step else "the job"
    cls = result.class_
    ev = result.evidence[0] if result.evidence else None
    sig = ev.signature if ev else ""
    exit_code = parsed.exit_code
    if cls == "unknown":
        text = (
            f"no failure found in this log ({parsed.line_count} lines); "
            "look at the job's annotations on GitHub"
        )
    elif sig.startswith("rule "):
        assert ev is not None
        text = f"{where} matched the repository's triage {sig} ({cls}): {ev.text.strip()}"
    elif cls == "infrastructure":
        text = _infrastructure(sig, where, exit_code)
    elif cls == "timeout":
        minutes = _MINUTES.search(ev.text) if ev else None
        if minutes:
            text = (
                f"the job hit its maximum execution time of {minutes.group(1)} minutes in "
                f"{where}; find what hangs or slows down, or raise timeout-minutes"
            )
        else:
            text = f"{where} hit its timeout-minutes; find what hangs, or raise the timeout"
    elif cls == "cancelled":
        if sig == "dependencies-cancelled":
            text = (
                f"this gate job failed only because jobs it needs were cancelled ({where}); "
                "not a failure of the pull request: re-run the workflow"
            )
        else:
            text = (
                f"the job was cancelled during {where}; not a failure of the pull request: "
                "re-run it if the run is still wanted"
            )
    elif cls == "policy":
        findings = [m for m in marks if m.kind == "quest"]
        first = findings[0].text.removeprefix("quest: ") if findings else (ev.text if ev else "")
        text = (
            f"quest check found {_count(len(findings) or 1, 'problem')} in {where}: {first}"
            f"{_more(len(findings))}; fix the quest tree (specs/quest.md)"
        )
    elif cls == "flaky":
        word = _NETWORK_WORD.search(ev.text) if ev else None
        why = word.group(0) if word else "a network error"
        text = (
            f"{where} lost its connection to a package registry ({why}); "
            "not the pull request's fault: re-run the job"
        )
    else:
        text = _genuine(sig, where, exit_code, marks, ev.text if ev else "")
    text = " ".join(text.split())
    return text if len(text) <= SUMMARY_CHARS else text[: SUMMARY_CHARS - 1] + "…"


def _infrastructure(sig: str, where: str, exit_code: int | None) -> str:
    if sig == "runner-shutdown":
        return (
            f"the runner shut down during {where}; a runner failure, not the pull request's: "
            "re-run the job"
        )
    if sig == "runner-lost-communication":
        return (
            f"the runner lost communication with GitHub during {where}; a runner failure, "
            "not the pull request's: re-run the job"
        )
    if sig == "out-of-memory":
        code = f" (exit code {exit_code})" if exit_code is not None else ""
        return (
            f"{where} was killed for running out of memory{code}; re-run it, and if it "
            "happens again reduce what the job holds in memory or use a larger runner"
        )
    return (
        f"the runner ran out of disk space in {where} (No space left on device); "
        "re-run it, and free space in the workflow if it happens again"
    )


def _genuine(
    sig: str, where: str, exit_code: int | None, marks: Sequence[Mark], evidence: str
) -> str:
    tests = [m for m in marks if m.kind in TEST_KINDS]
    if tests:
        first = tests[0].text.strip()
        first = re.sub(r"^(?:FAILED|ERROR|FAIL|--- FAIL:)\s+", "", first)
        why = _reason_after(marks, tests[0].line) if " - " not in first else None
        if why:
            first = f"{first}: {why}"
        return (
            f"{_count(len(tests), 'test')} failed in {where}: {first}{_more(len(tests))}; "
            "reproduce it locally and fix the code or the test"
        )
    if sig == "python-traceback":
        return f"{where} raised {evidence.strip()}; reproduce it locally and fix it"
    if sig == "test-failed":
        return f"a test failed in {where}: {evidence.strip()}; reproduce it locally and fix it"
    code = f" with exit code {exit_code}" if exit_code is not None else ""
    cause = _last_output(marks)
    because = f" after: {cause}" if cause else ""
    return f"{where} failed{code}{because}; reproduce the step locally and fix it"


_REASON_KINDS = frozenset({"js-error", "pytest-detail", "test-reason", "cargo-panic"})


def _reason_after(marks: Sequence[Mark], line: int) -> str | None:
    """The message that follows a failed test's name (vitest, jest, go, cargo)."""
    for m in marks:
        if line < m.line <= line + 10 and m.kind in _REASON_KINDS:
            return m.text.strip()
    return None


def _last_output(marks: Sequence[Mark]) -> str:
    """The last plain output line above the first error: usually the tool's complaint."""
    errors = [m.line for m in marks if m.kind == "error"]
    above = [m for m in marks if m.kind != "error" and (not errors or m.line < errors[0])]
    return above[-1].text.strip() if above else ""


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _more(n: int) -> str:
    return f" (and {n - 1} more)" if n > 1 else ""
