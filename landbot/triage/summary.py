"""One line a person can act on: what failed, where, and what to do about it."""

from __future__ import annotations

import re
from collections.abc import Sequence

from landbot.triage.classify import Classification
from landbot.triage.context import TEST_KINDS, Mark
from landbot.triage.log import ParsedLog
from landbot.triage.signatures import NETWORK_WORDS

SUMMARY_CHARS = 300
# A composite's inner step title longer than this is left out of the summary.
INNER_CHARS = 80

_MINUTES = re.compile(r"maximum execution time of (\d+) minutes")
_NETWORK_WORD = re.compile("|".join(re.escape(w) for w in NETWORK_WORDS))
_HOST = re.compile(r"https?://([\w.-]+)|\bhost[= ]'?([\w.-]+)|\b([\w-]+(?:\.[\w-]+)+):\d{2,5}\b")


def summarize(
    result: Classification,
    *,
    step: str | None,
    parsed: ParsedLog,
    marks: Sequence[Mark],
) -> str:
    where = f"step '{step}'" if step else "the job"
    inner = parsed.command_title
    if step and inner and inner != parsed.step_title and len(inner) <= INNER_CHARS:
        # A composite action's step: name the inner step that failed too.
        where += f" (at its step '{inner}')"
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
        if sig == "go-test-timeout":
            text = (
                f"a Go test hung or ran past go test's -timeout in {where} "
                f"({ev.text.strip() if ev else 'panic: test timed out'}); find the test that "
                "hangs (the goroutine dump below the panic), or raise -timeout"
            )
        elif minutes:
            text = (
                f"the job hit its maximum execution time of {minutes.group(1)} minutes in "
                f"{where}; find what hangs or slows down, or raise timeout-minutes"
            )
        else:
            text = f"{where} hit its timeout-minutes; find what hangs, or raise the timeout"
    elif cls == "cancelled":
        if sig == "cancelled-by-others":
            said = ev.text.removeprefix("##[error]").strip() if ev else ""
            text = (
                f"the job was cancelled by another run or job ({said}) during {where}; not a "
                "failure of the pull request: re-run it if the run is still wanted"
            )
        elif sig == "dependencies-cancelled":
            text = (
                f"this gate job failed only because jobs it needs were cancelled ({where}); "
                "not a failure of the pull request: re-run the workflow"
            )
        else:
            text = (
                f"the job was cancelled during {where}; not a failure of the pull request: "
                "re-run it if the run is still wanted"
            )
    elif cls == "policy" and sig == "pr-gate":
        text = _gate(where, ev.text if ev else "", parsed)
    elif cls == "policy":
        findings = [m for m in marks if m.kind == "quest"]
        first = findings[0].text.removeprefix("quest: ") if findings else (ev.text if ev else "")
        text = (
            f"quest check found {_count(len(findings) or 1, 'problem')} in {where}: {first}"
            f"{_more(len(findings))}; fix the quest tree (specs/quest.md)"
        )
    elif cls == "flaky":
        text = _flaky(sig, where, ev.text if ev else "")
    else:
        text = _genuine(sig, where, exit_code, marks, ev.text if ev else "")
    text = " ".join(text.split())
    return text if len(text) <= SUMMARY_CHARS else text[: SUMMARY_CHARS - 1] + "…"


# What a gate on the pull request asks for, by the first word that names it.
_GATE_FIX = (
    (re.compile(r"milestone", re.I), "set the pull request's milestone"),
    (re.compile(r"changelog|\.changes\b", re.I), "add the changelog entry it asks for"),
    (
        re.compile(r"\bDCO\b|sign[- _]?off|Signed-off-by", re.I),
        "sign off the commits (git commit -s)",
    ),
    (
        re.compile(r"allow[- _]edits|maintainers? (?:can|to) (?:modify|edit)", re.I),
        'tick "Allow edits by maintainers" on the pull request',
    ),
    (re.compile(r"\blabels?\b", re.I), "set the labels it asks for"),
    (re.compile(r"title|semantic|conventional", re.I), "fix the pull request's title"),
)


def _gate(where: str, evidence: str, parsed: ParsedLog) -> str:
    """A check of the pull request itself (its title, labels, …), not of its code; what to
    do comes first, the check's own words (which may be long) after."""
    words = " ".join(
        [evidence, *(line.text for line in (parsed.job_name, parsed.workflow) if line)]
    )
    fix = next((f for pattern, f in _GATE_FIX if pattern.search(words)), "do what the check asks")
    if evidence.startswith(("Complete job name: ", "Job defined at: ")):
        job = parsed.job_name.text.removeprefix("Complete job name: ") if parsed.job_name else ""
        return (
            f"the job '{job}' checks the pull request itself, not its code, and failed in "
            f"{where}: {fix}, then re-run the check"
        )
    said = evidence.removeprefix("##[error]").strip()
    return (
        f"{where} checks the pull request itself, not its code: {fix}, then re-run the check; "
        f"it said: {said}"
    )


def _flaky(sig: str, where: str, evidence: str) -> str:
    word = _NETWORK_WORD.search(evidence)
    why = word.group(0) if word else "a network error"
    if sig == "registry-network":
        return (
            f"{where} lost its connection to a package registry ({why}); "
            "not the pull request's fault: re-run the job"
        )
    if sig == "registry-unavailable":
        return (
            f"a container registry failed to serve an image layer in {where}; "
            "not the pull request's fault: re-run the job"
        )
    if sig == "download-corrupt":
        return (
            f"a download came truncated or corrupt in {where} ({evidence.strip()}); not the "
            "pull request's fault: re-run the job"
        )
    if sig == "flaky-marker":
        return (
            f"a test failed and then passed on retry in {where} ({evidence.strip()}); "
            "re-run the job, and mark or fix the flaky test"
        )
    host = _HOST.search(evidence)
    to = f" to {next(g for g in host.groups() if g)}" if host else ""
    return (
        f"{where} failed on a network error{to} ({why}); a service it talks to did not "
        "answer: re-run the job, and if it keeps failing check that service"
    )


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
    if sig == "runner-vanished":
        return (
            "the log ends in the runner's set-up, after it took the job and before any step "
            "ran: the runner died; a runner failure, not the pull request's: re-run the job"
        )
    if sig == "runner-deprovisioned":
        return (
            f"the hosted runner was taken away (deprovisioned) during {where}; a runner "
            "failure, not the pull request's: re-run the job"
        )
    if sig == "runner-signal":
        return (
            f"{where} was stopped by a signal (SIGTERM/SIGINT, exit code {exit_code}) that "
            "nothing in the job sent: the runner or its machine was stopped; re-run the job"
        )
    if sig == "not-provisioned":
        return (
            f"the runner's pod or machine was never provisioned for {where}; a runner "
            "failure, not the pull request's: re-run the job, and check the runner pool"
        )
    if sig == "service-container":
        return (
            f"a service container of the job never became healthy ({where}); re-run it, "
            "and check the service's image and health check if it happens again"
        )
    if sig == "action-download":
        return (
            f"the runner could not download an action for {where}; GitHub's side, not the "
            "pull request's: re-run the job"
        )
    if sig == "cache-service":
        return (
            f"the Actions cache service failed during {where}; not the pull request's "
            "fault: re-run the job"
        )
    if sig == "rate-limited":
        return (
            f"a service refused {where} for its rate limit; not the pull request's fault: "
            "re-run the job later"
        )
    if sig == "out-of-memory":
        code = f" (exit code {exit_code})" if exit_code is not None else ""
        return (
            f"{where} was killed for running out of memory{code}; re-run it, and if it "
            "happens again reduce what the job holds in memory or use a larger runner"
        )
    if sig == "server-error":
        return (
            f"a service that {where} called answered with a server error (HTTP 5xx); its "
            "outage, not the pull request's: re-run the job later"
        )
    if sig == "dependabot-updater-crash":
        return (
            f"Dependabot's updater crashed in {where} (error type unknown_error); GitHub's "
            "side, not the repository's: re-run it, and report it to Dependabot if it stays"
        )
    if sig == "no-space-left":
        return (
            f"the runner ran out of disk space in {where} (No space left on device); "
            "re-run it, and free space in the workflow if it happens again"
        )
    return f"{where} failed for a reason outside the pull request ({sig}); re-run the job"


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
    if sig == "tool-error":
        return f"{where} failed: {evidence.strip()}; fix it and re-run the step"
    code = f" with exit code {exit_code}" if exit_code is not None else ""
    cause = _uncaught(marks) or _last_output(marks)
    because = f" after: {cause}" if cause else ""
    return f"{where} failed{code}{because}; reproduce the step locally and fix it"


_REASON_KINDS = frozenset({"js-error", "pytest-detail", "test-reason", "cargo-panic"})


def _reason_after(marks: Sequence[Mark], line: int) -> str | None:
    """The message that follows a failed test's name (vitest, jest, go, cargo)."""
    for m in marks:
        if line < m.line <= line + 10 and m.kind in _REASON_KINDS:
            return m.text.strip()
    return None


def _uncaught(marks: Sequence[Mark]) -> str:
    """The first error a script crashed on (Node's ``TypeError: …``): what the stack,
    a refused connection after it, or ``Node.js v20`` below it are only the tail of."""
    return next((m.text.strip() for m in marks if m.kind == "js-uncaught"), "")


def _last_output(marks: Sequence[Mark]) -> str:
    """The last plain output line above the first error: usually the tool's complaint."""
    errors = [m.line for m in marks if m.kind == "error"]
    above = [m for m in marks if m.kind != "error" and (not errors or m.line < errors[0])]
    return above[-1].text.strip() if above else ""


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _more(n: int) -> str:
    return f" (and {n - 1} more)" if n > 1 else ""
