"""One issue per flaky test: what to do about it (pure), and its text (pure).

The flaky-test ledger (store `test_failures`, triage/flaky.py) records every failed test of
a merge group and whether the next try of the same pull request head passed. A test that
failed and then passed on retry on `min_prs` pull requests is flaky beyond doubt; landbot
opens one issue about it (a hidden marker, `<!-- landbot:flaky-test ID -->`, keeps it one),
edits that issue as new failures come (an edit notifies no one, so no comment is posted each
time), and closes it when the test has gone `quiet` days without failing. A test failing
again after its issue closed reopens the same issue.

`decide` is every decision, a function of the ledger's history of the test, the issue as
landbot last left it (store `flaky_issues`), the policy and the time. The writes are
land/issues.py's (FlakyIssueWriter); the sweep that runs both is pipeline/flaky_issues.py.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from landbot.config import FlakyIssuesSettings
from landbot.core.model import JobFailure
from landbot.store.records import FlakyTestHistory, LedgerFailure, StoredFlakyIssue

FlakyAction = Literal["open", "update", "reopen", "close", "nothing"]
KIND = "flaky-test"  # the marker's and the claim key's word
# GitHub's limits: an issue title of 256 characters, a body of 65536.
MAX_TITLE = 256
MAX_BODY = 65536
# Failures listed one by one in the body (newest first); older ones are counted.
SHOWN_FAILURES = 20
# Error lines shown per failure.
SHOWN_LINES = 6
# The ledger keeps a month (store.LEDGER_KEEP): the evidence is what it still holds.
WINDOW = dt.timedelta(days=30)


@dataclass(frozen=True)
class FlakyIssuePolicy:
    enabled: bool = True
    min_prs: int = 3
    quiet: dt.timedelta = dt.timedelta(days=7)
    label: str = "landbot:flaky"
    window: dt.timedelta = WINDOW

    @classmethod
    def from_settings(cls, settings: FlakyIssuesSettings) -> FlakyIssuePolicy:
        return cls(
            enabled=settings.enabled,
            min_prs=settings.min_prs,
            quiet=dt.timedelta(days=settings.quiet_days),
            label=settings.label,
        )


@dataclass(frozen=True)
class FlakyDecision:
    action: FlakyAction
    why: str


def decide(
    policy: FlakyIssuePolicy,
    history: FlakyTestHistory | None,
    issue: StoredFlakyIssue | None,
    now: dt.datetime,
) -> FlakyDecision:
    """What to do about one test's issue. `history` is the ledger's failures of the test
    within the policy's window (None: none); `issue` the issue as landbot last left it
    (None: never opened; a row without a number: its create was claimed, not confirmed)."""
    if not policy.enabled:
        return FlakyDecision("nothing", "flaky issues are off")
    passed = len(history.passed_prs) if history is not None else 0
    last = history.last_failure_at if history is not None else None
    quiet = last is None or now - last >= policy.quiet
    if issue is None or issue.number is None:
        if passed < policy.min_prs:
            return FlakyDecision(
                "nothing", f"passed on retry on {passed} pull request(s), under {policy.min_prs}"
            )
        if quiet:
            # Crossed the line long ago and quiet since: an issue now would only be closed.
            return FlakyDecision("nothing", "flaky, but no failure within the quiet period")
        return FlakyDecision("open", f"failed and passed on retry on {passed} pull requests")
    if issue.state == "open":
        if quiet:
            return FlakyDecision("close", "no failure within the quiet period")
        if _news(history, issue):
            return FlakyDecision("update", "new failures since the issue was last written")
        return FlakyDecision("nothing", "the issue shows every failure")
    # Closed by landbot: only a failure after the close brings it back.
    if (
        history is not None
        and last is not None
        and issue.closed_at is not None
        and last > issue.closed_at
        and passed >= policy.min_prs
    ):
        return FlakyDecision("reopen", "it failed again after its issue was closed")
    return FlakyDecision("nothing", "closed, and no failure since")


def _news(history: FlakyTestHistory | None, issue: StoredFlakyIssue) -> bool:
    """The ledger holds more than the issue shows: a newer failure, or more retries passed
    (a pending retry that passed since changes what the issue says)."""
    if history is None:
        return False
    last = history.last_failure_at
    newer = last is not None and (issue.last_failure_at is None or last > issue.last_failure_at)
    return newer or len(history.passed_prs) > issue.passed_shown


# --- the issue's text ---------------------------------------------------------------------


def marker(test: str) -> str:
    """The hidden marker that keeps one issue per test (`-->` inside would end it early)."""
    return f"<!-- landbot:{KIND} {test.replace('-->', '-- >')} -->"


def title(test: str) -> str:
    text = f"Flaky test: {' '.join(test.split())}"
    return text if len(text) <= MAX_TITLE else text[: MAX_TITLE - 1] + "…"


@dataclass(frozen=True)
class IssueText:
    """What the body says besides the ledger: the owners and the issue's state."""

    owners: tuple[str, ...] = ()
    mention: bool = False  # @-mention the owners (only in the body the issue opens with)
    closing: bool = False  # the body the issue is closed with
    quiet: dt.timedelta = dt.timedelta(days=7)
    codeowners_path: str | None = None  # where the owners came from


def body(
    history: FlakyTestHistory,
    jobs: Mapping[tuple[int, str], JobFailure],
    text: IssueText,
    now: dt.datetime,
) -> str:
    """The issue's body: the marker, what is known, each failure (newest first) with its
    pull request, commit, job and error lines. `jobs` holds the triage of each failure by
    (drop id, check); a failure without it is listed without lines."""
    test = history.test
    failures = list(reversed(history.failures))
    passed = history.passed_prs
    prs = history.prs
    checks = sorted({f.check for f in history.failures})
    out = [
        marker(test),
        f"`{_code(test)}` failed in {_n(len(failures), 'merge group')} on "
        f"{_n(len(prs), 'pull request')} and passed when retried on {len(passed)} of them "
        f"({_prs(passed)}): it is flaky. Check{'s' if len(checks) != 1 else ''}: "
        + ", ".join(f"`{_code(c)}`" for c in checks)
        + ".",
        "",
        _owners_line(text),
        "",
    ]
    if text.closing:
        last = history.last_failure_at
        when = f" (the last on {_day(last)})" if last is not None else ""
        out += [
            f"**Closed by landbot:** no failure in the last {_days(text.quiet)}{when}. "
            "landbot reopens this issue if it fails again.",
            "",
        ]
    else:
        out += [
            f"landbot edits this issue as new failures come and closes it after "
            f"{_days(text.quiet)} without one.",
            "",
        ]
    out.append(f"### Failures (newest first, last {_days(WINDOW)})")
    out.append("")
    for f in failures[:SHOWN_FAILURES]:
        out += _failure(f, jobs.get((f.drop_id, f.check)) if f.drop_id is not None else None)
    if len(failures) > SHOWN_FAILURES:
        more = len(failures) - SHOWN_FAILURES
        out += [f"…and {_n(more, 'older failure')}.", ""]
    out.append(f"<sub>landbot, {now.astimezone(dt.UTC).strftime('%Y-%m-%d %H:%M')} UTC</sub>")
    return _fit("\n".join(out))


def _owners_line(text: IssueText) -> str:
    where = f", `{text.codeowners_path}`" if text.codeowners_path else ""
    if not text.owners:
        found = f" (`{text.codeowners_path}`)" if text.codeowners_path else ""
        return f"**Owner:** none found in CODEOWNERS{found}."
    # An @-mention notifies, also in an edit that adds it: only the opening body has one.
    names = " ".join(text.owners) if text.mention else " ".join(f"`{o}`" for o in text.owners)
    return f"**Owner{'s' if len(text.owners) > 1 else ''}** (CODEOWNERS{where}): {names}"


def _failure(f: LedgerFailure, job: JobFailure | None) -> list[str]:
    retry = {"passed": "passed on retry", "failed": "failed again on retry"}.get(
        f.retry, "retry pending"
    )
    where = f"#{f.pr}" if f.pr is not None else "the base branch"
    head = f"- {_day(f.seen_at)} · {where} · merge group {f.sha[:7]} · `{_code(f.check)}`"
    if job is not None and job.url:
        head += f" · [job]({job.url})"
    head += f" · {retry}"
    lines = [head]
    if job is not None:
        shown = _error_lines(job)
        if shown:
            lines.append("  ```")
            lines += [f"  {n}: {t.replace('```', '` ` `')}" for n, t in shown]
            lines.append("  ```")
        elif job.summary:
            lines.append(f"  {_code(job.summary)}")
    return lines


def _error_lines(job: JobFailure) -> list[tuple[int, str]]:
    """The error lines of the excerpt (else its first lines), at most SHOWN_LINES."""
    errors = set(job.error_lines)
    chosen = [(n, t) for n, t in job.excerpt if n in errors] or list(job.excerpt)
    return [(n, t[:300]) for n, t in chosen[:SHOWN_LINES]]


def _fit(text: str) -> str:
    if len(text) <= MAX_BODY:
        return text
    cut = text[: MAX_BODY - 40]
    return cut[: cut.rfind("\n")] + "\n\n…trimmed (GitHub's size limit)."


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}{'s' if count != 1 else ''}"


def _prs(numbers: Sequence[int]) -> str:
    return ", ".join(f"#{n}" for n in numbers) or "none"


def _day(when: dt.datetime) -> str:
    return when.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


def _days(span: dt.timedelta) -> str:
    days = span.total_seconds() / 86400
    if days.is_integer():
        return f"{int(days)} day{'s' if days != 1 else ''}"
    return f"{span.total_seconds() / 3600:g} hours"


def _code(text: str) -> str:
    return " ".join(text.replace("`", "'").split())
