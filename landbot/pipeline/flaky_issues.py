"""The flaky-test issues' sweep: for each watched repository, each test the ledger shows
flaky or that has an open issue, decide (land/flaky_issues.py) and write
(land/issues.FlakyIssueWriter).

Run by a running worker every `EVERY_S` and by each `landbot poll`. It reads the store only
(two queries per repository, and the triage of the failures it shows); GitHub is called
only for a test whose issue must open, change, close or reopen. Off
(`[flaky_issues] enabled = false`), it is never run.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import socket
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from landbot import logs
from landbot.config import Settings
from landbot.core.model import JobFailure
from landbot.github.errors import GitHubError
from landbot.github.ops import IssueOps
from landbot.land import flaky_issues as fi
from landbot.land.issues import FlakyIssueWriter, IssueBusy
from landbot.land.plan import evidence_from
from landbot.store import FlakyTestHistory, Store, utcnow

log = logging.getLogger("landbot.pipeline.flaky_issues")

EVERY_S = 600.0  # how often a running worker sweeps


@dataclass
class SweepReport:
    """What one sweep did, by action (tests whose write failed are in `failed`)."""

    done: dict[str, list[str]] = field(default_factory=dict)
    failed: list[str] = field(default_factory=list)

    def count(self, action: str) -> int:
        return len(self.done.get(action, ()))


class FlakySweep:
    def __init__(
        self,
        settings: Settings,
        store: Store,
        gh: Callable[[], IssueOps],
        *,
        owner: str | None = None,
        clock: Callable[[], dt.datetime] = utcnow,
    ) -> None:
        self.settings = settings
        self.store = store
        self.policy = fi.FlakyIssuePolicy.from_settings(settings.flaky_issues)
        # Names this process's claims: a fresh one of another process is left to it.
        self.owner = owner or f"{socket.gethostname()}:{os.getpid()}:flaky"
        # The client is made on the first write: a sweep with nothing to do needs none.
        self._gh = gh
        self._writer: FlakyIssueWriter | None = None
        self.clock = clock

    @property
    def writer(self) -> FlakyIssueWriter:
        if self._writer is None:
            self._writer = FlakyIssueWriter(
                self.store, self._gh(), owner=self.owner, policy=self.policy
            )
        return self._writer

    def run(self, repos: Iterable[str] | None = None) -> SweepReport:
        report = SweepReport()
        if not self.policy.enabled:
            return report
        now = self.clock()
        since = now - self.policy.window
        for repo in self._repos(repos, since):
            self._repo(repo, now, since, report)
        return report

    def _repos(self, repos: Iterable[str] | None, since: dt.datetime) -> list[str]:
        if repos is not None:
            return list(repos)
        # As the ledger spells them (drops keep the name as GitHub sent it).
        known = self.store.ledger_repos(since) | {i.repo for i in self.store.flaky_issues()}
        return sorted(r for r in known if self.settings.watches(r))

    def _repo(self, repo: str, now: dt.datetime, since: dt.datetime, report: SweepReport) -> None:
        issues = {i.test: i for i in self.store.flaky_issues(repo)}
        histories = {
            h.test: h
            for h in self.store.flaky_histories(
                repo,
                since=since,
                min_passed_prs=self.policy.min_prs,
                also=[t for t, i in issues.items() if i.state == "open"],
            )
        }
        for test in sorted(set(histories) | {t for t, i in issues.items() if i.state == "open"}):
            history, issue = histories.get(test), issues.get(test)
            decision = fi.decide(self.policy, history, issue, now)
            if decision.action == "nothing":
                continue
            try:
                self.writer.apply(repo, test, decision, history, issue, self._jobs(history), now)
            except IssueBusy:
                continue  # another worker's sweep is making it: the next sweep sees it
            except GitHubError as exc:
                # The next sweep decides again from the store: nothing was recorded.
                logs.event(
                    log,
                    "flaky issue not written",
                    logging.WARNING,
                    repo=repo,
                    test=test,
                    action=decision.action,
                    error=exc,
                )
                report.failed.append(test)
                continue
            logs.event(
                log,
                f"flaky issue {decision.action}",
                repo=repo,
                test=test,
                why=decision.why,
            )
            report.done.setdefault(decision.action, []).append(test)

    def _jobs(self, history: FlakyTestHistory | None) -> dict[tuple[int, str], JobFailure]:
        """The triage of each failure the issue shows, by (drop id, check), from the drops'
        saved plans (a drop without one, or pruned, shows no lines)."""
        if history is None:
            return {}
        shown = list(reversed(history.failures))[: fi.SHOWN_FAILURES]
        out: dict[tuple[int, str], JobFailure] = {}
        plans: dict[int, dict[str, JobFailure]] = {}
        for f in shown:
            if f.drop_id is None:
                continue
            if f.drop_id not in plans:
                row = self.store.drop(f.drop_id)
                jobs: dict[str, JobFailure] = {}
                if row is not None and row.plan is not None:
                    try:
                        jobs = {j.job: j for j in evidence_from(row.plan).jobs}
                    except (KeyError, TypeError, ValueError):
                        jobs = {}  # a plan of an older shape: no lines, still an issue
                plans[f.drop_id] = jobs
            job = plans[f.drop_id].get(f.check)
            if job is not None:
                out[(f.drop_id, f.check)] = job
        return out


def sweep(settings: Settings, store: Store, gh: Callable[[], IssueOps]) -> SweepReport:
    """One sweep of every watched repository (nothing at all when the setting is off);
    `gh` makes the client, called only when something is to be written."""
    if not settings.flaky_issues.enabled:
        return SweepReport()
    return FlakySweep(settings, store, gh).run()
