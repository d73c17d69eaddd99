"""Stage 3 against GitHub: what a drop's evidence is, read from GitHub and git.

For `failed_checks`: the merge-group commit (from the remembered `merge_group` event, else
the merge-group workflow runs whose branch names the PR, else the `beforeCommit` of the
PR's latest removal), its failed check runs, the failed Actions jobs with their steps,
each job's log streamed through `explain_log`, and one class for the drop
(`combine.overall`). For `merge_conflict`: the base merged into the head in the cached
mirror (`git merge-tree`), and the conflicting files.

The calls are bounded: one check-run listing per candidate commit, one job (or run's job
list) and one log per failed job, at most `max_logs` logs per drop. A log GitHub no longer
has is noted, not fatal; a network or server failure is raised, so the worker retries the
whole drop rather than save thin evidence.

Beyond the log (issue 14): a failed job's check-run annotations, read only where they can
change the answer (`annotations_matter`); and positive evidence for flaky (`weigh_flaky`,
triage/flaky.py): the flaky-test ledger in the store (no call), and the PR's own head's
check runs (one call, only when a job would be called flaky), with the head's log of a
check that failed there too. A GitHub error on any of these extra reads is no evidence:
the class is what the rest of the evidence says.

And the baseline (issue 26, triage/last_green.py): each failed job's log is compared with
the same job's last green log on the base branch (else the base's newest green merge
group), found and fetched once per base commit and kept in the store, so the next drop on
that base costs no call. No green run, or a GitHub error on the way: the log alone.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from landbot.core.groups import FAILED, parse_group_ref
from landbot.core.model import (
    NOT_ITS_FAULT,
    Drop,
    Evidence,
    FailedCheck,
    JobFailure,
    TriageClass,
)
from landbot.errors import LandbotError
from landbot.github.errors import GitHubError, RateLimited
from landbot.github.models import Annotation, CheckRun, Job, WorkflowRun
from landbot.github.ops import GitHubOps, ReadsAnnotations, TriageGitHub
from landbot.triage import flaky
from landbot.triage.baseline import Baseline
from landbot.triage.classify import Rule, compile_rules
from landbot.triage.combine import JobVerdict, evidence_why, overall
from landbot.triage.explain import LogExplanation, explain_parsed
from landbot.triage.last_green import LastGreen
from landbot.triage.last_green import usable as can_find_baselines
from landbot.triage.log import DEFAULT_MAX_BYTES, ParsedLog, parse_log
from landbot.triage.runs import ACTIONS_APP, JOB_URL, LOG_CONCLUSIONS, run_id_of

if TYPE_CHECKING:
    from landbot.config import Settings
    from landbot.store import Store

MAX_LOGS = 5
# Failed tests of one job kept in the evidence and the ledger (a broken build fails all).
MAX_TESTS = 20
# GitHub no longer serves the log (expired, deleted, forbidden to this token): note it.
_LOG_GONE = frozenset({403, 404, 410})

log = logging.getLogger("landbot.triage")


class Mirrors(Protocol):
    """A cached bare mirror per repository (landbot.git.workspace.Workspaces)."""

    def sync(
        self, repo: str, number: int, base_ref: str, *, token: str | None = None
    ) -> tuple[str, str]: ...

    def mirror_path(self, repo: str) -> Path: ...


@dataclass(frozen=True)
class GroupCommit:
    sha: str
    source: str
    checks: tuple[CheckRun, ...]

    @property
    def failed(self) -> tuple[CheckRun, ...]:
        return tuple(c for c in self.checks if c.conclusion in FAILED)


@dataclass
class Gatherer:
    """`Lander(gather=Gatherer.from_settings(settings))`: (gh, store, drop) -> Evidence."""

    rules: tuple[Rule, ...] = ()
    max_log_bytes: int = DEFAULT_MAX_BYTES
    max_logs: int = MAX_LOGS
    settings: Settings | None = None
    """For a conflict: the git URL, and the mirrors under `[fixer] state_dir` (read at
    first use), which the fixer's workspaces share: one fetch serves both."""
    flaky_policy: flaky.FlakyPolicy = field(default_factory=flaky.FlakyPolicy)
    _mirrors: Mirrors | None = field(default=None, repr=False)

    @classmethod
    def from_settings(cls, settings: Settings, *, mirrors: Mirrors | None = None) -> Gatherer:
        # Compiled now: a bad [[triage.rules]] entry stops start-up with one line.
        return cls(
            rules=compile_rules(settings.triage.rules),
            max_log_bytes=settings.triage.max_log_bytes,
            settings=settings,
            _mirrors=mirrors,
        )

    def __call__(self, gh: GitHubOps, store: Store, drop: Drop) -> Evidence:
        ops = triage_ops(gh)
        if drop.reason == "failed_checks":
            return self.failed_checks(ops, store, drop)
        if drop.reason == "merge_conflict":
            return self.conflict(ops, drop)
        if drop.reason == "checks_timed_out":
            # The names of the checks that never finished (a hand-back names them).
            return self.timed_out(ops, store, drop)
        return Evidence()

    # --- checks that timed out ------------------------------------------------------------

    def timed_out(self, gh: TriageGitHub, store: Store, drop: Drop) -> Evidence:
        """The checks of the merge group that never finished, by name (the hand-back after
        a second timeout names them)."""
        runs = RunsOnce(gh, drop.repo)
        group = find_group_commit(gh, store, drop, runs)
        if group is None:
            return Evidence()
        base, ahead = group_context(store, drop, group.sha, runs)
        return Evidence(
            group_sha=group.sha,
            group_base_sha=base,
            prs_ahead=ahead,
            timed_out_checks=never_finished(group.checks),
        )

    # --- failed checks --------------------------------------------------------------------

    def failed_checks(self, gh: TriageGitHub, store: Store, drop: Drop) -> Evidence:
        runs = RunsOnce(gh, drop.repo)
        group = find_group_commit(gh, store, drop, runs)
        if group is None:
            return Evidence(
                triage_reason=(
                    "landbot found no merge-group commit for this drop: no merge_group event, "
                    "no merge-group workflow run names it, and the removal event names no "
                    "commit but the pull request's head"
                )
            )
        failed = group.failed
        checks = tuple(
            FailedCheck(c.name, c.conclusion or "", c.html_url or c.details_url or "")
            for c in failed
        )
        if not failed:
            return Evidence(
                merge_group_source=group.source,
                triage_reason=f"no failed check on the merge-group commit {group.sha[:7]}",
            )
        if drop.id is not None and drop.merge_group_sha != group.sha:
            # The drop's own record of the commit the queue tested: the fixer starts there.
            store.update_drop(drop.id, merge_group_sha=group.sha)
        green = self.last_green(gh, store, drop, group, runs)
        verdicts, capped = self.explain_checks(gh, drop.repo, failed, green)
        verdicts = self.test_reports(gh, drop.repo, failed, verdicts)
        verdicts = self.weigh_flaky(gh, store, drop, group, verdicts)
        cls, reason = overall(verdicts)
        if capped:
            reason += (
                f" (landbot read {self.max_logs} of {self.max_logs + capped} failed jobs' logs; "
                "it reads at most that many per drop)"
            )
        # The PRs ahead matter to a person reproducing the failure, not to a re-enqueue of
        # one that is not the PR's fault: no listing of runs for that (unless already read).
        needed = cls not in NOT_ITS_FAULT or runs.read
        base, ahead = group_context(store, drop, group.sha, runs if needed else None)
        return Evidence(
            failed_checks=checks,
            triage_class=cls,
            triage_reason=reason,
            jobs=tuple(v.failure for v in verdicts),
            merge_group_source=group.source,
            group_sha=group.sha,
            group_base_sha=base,
            prs_ahead=ahead,
            quest_explanations=(
                self.quest_explanations(gh, drop, [v.failure for v in verdicts])
                if cls == "policy"
                else ()
            ),
        )

    def last_green(
        self, gh: TriageGitHub, store: Store, drop: Drop, group: GroupCommit, runs: RunsOnce
    ) -> LastGreen | None:
        """The drop's baseline finder (triage/last_green.py), given the base a job whose
        own branch does not name one is compared on (the group's row in the store: no
        call); None when the client cannot list green runs (the log alone)."""
        if not can_find_baselines(gh):
            return None
        base_ref, base_sha = drop.base_ref, None
        for row in store.groups_for(drop.repo, drop.pr):
            if row.head_sha == group.sha:
                ref = parse_group_ref(row.head_ref)
                base_ref = row.base_ref or (ref.base if ref else None) or base_ref
                base_sha = row.base_sha or (ref.base_sha if ref else None)
                break
        return LastGreen(
            gh,
            store,
            drop.repo,
            merge_group_runs=runs,
            max_bytes=self.max_log_bytes,
            base_ref=base_ref,
            base_sha=base_sha,
        )

    # --- positive evidence for flaky ------------------------------------------------------

    def weigh_flaky(
        self,
        gh: TriageGitHub,
        store: Store,
        drop: Drop,
        group: GroupCommit,
        verdicts: Sequence[JobVerdict],
    ) -> list[JobVerdict]:
        """Each failed job weighed on more than its words (triage/flaky.py): the ledger's
        record of its failed tests on other pull requests, and, when that could change the
        class, the same check on the pull request's own head. The ledger learns from this
        drop too: this group is the retry of the head's earlier failures, and its own
        failed tests are recorded. Reads cost nothing but the head's check runs (one call,
        only when a job would be called flaky) and the head's log when that check failed
        there too; a GitHub error on either is no evidence, never a class."""
        from landbot.store import utcnow

        now = utcnow()
        tested = {
            v.failure.job: v.failure.failed_tests
            for v in verdicts
            if v.failure.failed_tests and v.failure.class_ in flaky.WEIGHED
        }
        passed = {c.name for c in group.checks if c.conclusion == "success"}
        store.record_retry(
            repo=drop.repo,
            pr=drop.pr,
            head_sha=drop.head_sha,
            sha=group.sha,
            passed=passed,
            failed=tested,
            at=now,
        )
        records = store.ledger(
            drop.repo,
            [(job, test) for job, tests in tested.items() for test in tests],
            since=now - self.flaky_policy.window,
            exclude_pr=drop.pr,
        )
        store.record_test_failures(
            repo=drop.repo,
            pr=drop.pr,
            head_sha=drop.head_sha,
            sha=group.sha,
            failures=tested,
            drop_id=drop.id,
            at=now,
        )
        head = HeadChecks(self, gh, drop, group.sha)
        weighed: list[JobVerdict] = []
        for verdict in verdicts:
            job = verdict.failure
            ledger = {t: records[(job.job, t)] for t in job.failed_tests if (job.job, t) in records}
            seen = head(job) if flaky.head_matters(job, ledger, self.flaky_policy) else None
            after = flaky.weigh(job, ledger, seen, self.flaky_policy)
            if after.class_ != job.class_:
                why = after.flaky_evidence
            elif after.flaky_evidence:
                why = "; ".join(x for x in (verdict.why, after.flaky_evidence) if x)
            else:
                why = verdict.why
            weighed.append(JobVerdict(after, why))
        return weighed

    def head_tests(
        self, gh: TriageGitHub, repo: str, check: CheckRun, *, reports: bool = False
    ) -> tuple[str, ...] | None:
        """The failed tests the log of the head's own run of a check names (None: GitHub
        did not serve it); with `reports` (the group's job took its tests from a test
        report), those the head run's reports name first, so like is compared with like."""
        named = self.head_report_tests(gh, repo, check) if reports else ()
        if named:
            return named
        try:
            with gh.job_log(repo, check.id) as chunks:
                parsed = parse_log(chunks, max_bytes=self.max_log_bytes)
        except RateLimited:
            raise
        except GitHubError as exc:
            log.warning("%s: the head's log of %s not read (%s)", repo, check.name, exc.status)
            return None
        return explain_parsed(parsed, rules=self.rules).failed_tests[:MAX_TESTS]

    def quest_explanations(
        self, gh: TriageGitHub, drop: Drop, jobs: Sequence[JobFailure]
    ) -> tuple[str, ...]:
        """Each quest finding of the log explained from the pull request's change, read in
        the cached mirror (the one the conflict triage and the fixer share). Best effort:
        git trouble leaves the evidence without explanations, not the drop without triage."""
        from landbot.triage.quest_explain import explain_policy, findings_in_jobs

        if not findings_in_jobs(jobs):
            return ()  # nothing to explain: no fetch
        try:
            mirror, head, _, base_sha = self.synced(gh, drop)
        except LandbotError as exc:
            log.warning("%s#%s: no quest explanations: %s", drop.repo, drop.pr, exc)
            return ()
        return explain_policy(mirror, head, base_sha, jobs)

    def explain_checks(
        self,
        gh: TriageGitHub,
        repo: str,
        failed: Sequence[CheckRun],
        green: LastGreen | None = None,
    ) -> tuple[list[JobVerdict], int]:
        """A verdict per failed check, in GitHub's order; and how many logs the cap left."""
        wanted = [
            c for c in failed if c.app_slug == ACTIONS_APP and c.conclusion in LOG_CONCLUSIONS
        ]
        read = wanted[: self.max_logs]
        jobs = job_details(gh, repo, read)
        reading = {c.id for c in read}
        unread = {c.id for c in wanted[self.max_logs :]}
        verdicts: list[JobVerdict] = []
        for check in failed:
            if check.id in reading:
                verdicts.append(self.from_log(gh, repo, check, jobs.get(check.id), green))
            elif check.id in unread:
                verdicts.append(
                    without_log(
                        check,
                        "unknown",
                        f"log not read: landbot reads at most {self.max_logs} job logs per drop",
                    )
                )
            else:
                verdicts.append(no_log_verdict(check))
        return verdicts, len(unread)

    def from_log(
        self,
        gh: TriageGitHub,
        repo: str,
        check: CheckRun,
        job: Job | None,
        green: LastGreen | None = None,
    ) -> JobVerdict:
        steps = job.steps if job is not None else None
        try:
            with gh.job_log(repo, check.id) as chunks:
                # Parsed here rather than through explain_log: the failing step's echoed
                # script is the command a person re-runs.
                parsed = parse_log(chunks, max_bytes=self.max_log_bytes)
        except RateLimited:
            raise
        except GitHubError as exc:
            if exc.status not in _LOG_GONE:
                raise  # a network or server failure: the worker tries the drop again
            gone = f"GitHub did not serve its log ({exc.status})"
            # The check run's annotations outlive the log: the only evidence left.
            notes = self.annotations(gh, repo, check) if check.annotations_count else ()
            if notes:
                empty = parse_log(b"", max_bytes=self.max_log_bytes)
                explained = explain_parsed(empty, steps=steps, rules=self.rules, annotations=notes)
                if explained.class_ != "unknown":
                    return log_verdict(check, job, explained, None)
            return without_log(check, _by_conclusion(check), gone)
        # The same job's last green log (issue 26), read only once the failing one was:
        # its lines are not why this run failed. None found: the log alone.
        baselines: tuple[Baseline, ...] = ()
        if green is not None:
            found = green.of(job)
            baselines = (found,) if found is not None else ()
        explained = explain_parsed(parsed, steps=steps, rules=self.rules, baselines=baselines)
        if annotations_matter(check, explained):
            notes = self.annotations(gh, repo, check)
            if notes:
                explained = explain_parsed(
                    parsed, steps=steps, rules=self.rules, annotations=notes, baselines=baselines
                )
        # The section explained (the jobs API's step, when it chose another than the
        # log's): the line link and the command follow the step that failed.
        return log_verdict(check, job, explained, explained.parsed or parsed)

    def annotations(self, gh: TriageGitHub, repo: str, check: CheckRun) -> tuple[Annotation, ...]:
        """The check run's annotations (one call); none when the client cannot read them
        or GitHub refuses: extra evidence, never a reason to fail the drop."""
        if not isinstance(gh, ReadsAnnotations):
            return ()
        try:
            return tuple(gh.check_run_annotations(repo, check.id))
        except RateLimited:
            raise
        except GitHubError as exc:
            log.warning("%s: annotations of %s not read (%s)", repo, check.name, exc.status)
            return ()

    # --- merge conflicts ------------------------------------------------------------------

    def mirrors(self) -> Mirrors:
        if self._mirrors is None:
            from landbot.git.workspace import Workspaces

            if self.settings is None:
                raise LandbotError("triage of a merge conflict needs the settings (git URL)")
            self._mirrors = Workspaces.from_settings(self.settings, self.settings.fixer.state_dir)
        return self._mirrors

    def synced(self, gh: TriageGitHub, drop: Drop) -> tuple[Path, str, str, str]:
        """(mirror, head, base ref, base sha) with the PR and its base fetched into the
        cached mirror (the one the fixer shares)."""
        from landbot.git.workspace import has_commit

        mirrors = self.mirrors()
        base_ref = drop.base_ref or gh.pull_request(drop.repo, drop.pr).base_ref
        local = self.settings is not None and self.settings.github.git_url.startswith("file:")
        token = None if local else gh.git_token(drop.repo)
        fetched_head, base_sha = mirrors.sync(drop.repo, drop.pr, base_ref, token=token)
        mirror = mirrors.mirror_path(drop.repo)
        # The drop's head, as confirmed just before; the fetched ref only if it is missing.
        head = drop.head_sha if has_commit(mirror, drop.head_sha) else fetched_head
        return mirror, head, base_ref, base_sha

    def conflict(self, gh: TriageGitHub, drop: Drop) -> Evidence:
        from landbot.triage.conflicts import merge_conflicts

        mirror, head, base_ref, base_sha = self.synced(gh, drop)
        report = merge_conflicts(mirror, head, base_sha)
        if report.clean:
            reason = (
                f"`{base_ref}` at {base_sha[:7]} now merges cleanly into {head[:7]}: "
                "the conflict is gone"
            )
        else:
            quest = " (all quest files: the quest merge driver can merge them)"
            reason = (
                f"{len(report.files)} conflicting file{'s' if len(report.files) != 1 else ''} "
                f"merging `{base_ref}` at {base_sha[:7]}{quest if report.all_quest else ''}"
            )
        return Evidence(
            triage_reason=reason,
            conflict_files=report.files,
            conflicts_all_quest=report.all_quest,
            base_sha=base_sha,
        )

    # --- test reports (issue 26.4) --------------------------------------------------------

    def test_reports(
        self, gh: TriageGitHub, repo: str, failed: Sequence[CheckRun], verdicts: list[JobVerdict]
    ) -> list[JobVerdict]:
        """The failed tests the runs' JUnit XML artifacts name, preferred to the log's for
        the test names and the flaky ledger (triage/reports.py: one listing per run, a
        download per matching artifact)."""
        from landbot.triage.reports import with_reports

        return with_reports(gh, repo, failed, verdicts, patterns=self.report_patterns())

    def head_report_tests(self, gh: TriageGitHub, repo: str, check: CheckRun) -> tuple[str, ...]:
        """The failed tests the reports of the head's own run of a check name (one listing,
        and a download per matching artifact)."""
        from landbot.triage.reports import reported_tests

        return reported_tests(gh, repo, check, patterns=self.report_patterns())[:MAX_TESTS]

    def report_patterns(self) -> Sequence[str]:
        from landbot.triage.reports import DEFAULT_PATTERNS

        return self.settings.triage.report_artifacts if self.settings else DEFAULT_PATTERNS


# --- the merge-group commit -----------------------------------------------------------------


class RunsOnce:
    """The repository's newest merge-group workflow runs, listed at most once per drop
    (finding the group commit and the PRs ahead of it both read them)."""

    def __init__(self, gh: TriageGitHub, repo: str) -> None:
        self._gh, self._repo = gh, repo
        self._runs: list[WorkflowRun] | None = None

    @property
    def read(self) -> bool:
        return self._runs is not None

    def __call__(self) -> list[WorkflowRun]:
        if self._runs is None:
            self._runs = self._gh.merge_group_runs(self._repo)
        return self._runs


def find_group_commit(
    gh: TriageGitHub, store: Store, drop: Drop, runs: RunsOnce | None = None
) -> GroupCommit | None:
    """The commit the queue tested and failed, with its check runs.

    Routes are tried in order of cost; a candidate whose checks all passed cannot be why the
    PR was dropped, so the next route is tried. If no candidate has a failed check, the
    first one found is returned (the evidence then says no check failed).
    """
    first: GroupCommit | None = None
    seen: set[str] = set()
    for sha, source in group_candidates(gh, store, drop, runs or RunsOnce(gh, drop.repo)):
        if sha in seen:
            continue
        seen.add(sha)
        group = GroupCommit(sha, source, tuple(gh.check_runs(drop.repo, sha)))
        if group.failed:
            return group
        first = first or group
    return first


def group_candidates(
    gh: TriageGitHub, store: Store, drop: Drop, runs: RunsOnce
) -> Iterator[tuple[str, str]]:
    """(sha, where it came from), lazily: a later route costs calls only if it is reached."""
    if drop.merge_group_sha:
        yield drop.merge_group_sha, "recorded on the drop"
    groups = store.groups_for(drop.repo, drop.pr)
    if groups:
        newest = groups[0]
        # A row made from a failed check's webhook (the merge_group event missed) has no base.
        source = "merge_group event" if newest.base_ref else "failed check webhook"
        yield str(newest.head_sha), source
    for run in runs():  # newest first
        ref = parse_group_ref(run.head_branch)
        if ref is not None and ref.pr == drop.pr:
            yield run.head_sha, "merge-group workflow run"
            break
    removal = gh.latest_queue_removal(drop.repo, drop.pr)
    before = removal.before_commit if removal is not None else None
    # beforeCommit is usually the PR head (whose checks are not the group's): useless here.
    if before and before != drop.head_sha:
        yield before, "removal event beforeCommit"


# --- jobs and their logs --------------------------------------------------------------------


def job_details(gh: TriageGitHub, repo: str, checks: Sequence[CheckRun]) -> dict[int, Job]:
    """Each check's job (steps included): one call per run holding several, else per job."""
    by_run: dict[int | None, list[CheckRun]] = {}
    for check in checks:
        by_run.setdefault(run_id_of(check), []).append(check)
    jobs: dict[int, Job] = {}
    for run_id, members in by_run.items():
        if run_id is not None and len(members) > 1:
            ids = {c.id for c in members}
            jobs.update({j.id: j for j in gh.run_jobs(repo, run_id) if j.id in ids})
            continue
        for check in members:
            try:
                jobs[check.id] = gh.job(repo, check.id)
            except GitHubError as exc:
                if isinstance(exc, RateLimited) or exc.status not in _LOG_GONE:
                    raise
    return jobs


class HeadChecks:
    """The pull request's own head's check runs, listed at most once per drop, as the
    weighing of each job asks for its check."""

    def __init__(self, gatherer: Gatherer, gh: TriageGitHub, drop: Drop, group_sha: str):
        self._gatherer, self._gh, self._drop, self._group = gatherer, gh, drop, group_sha
        self._runs: list[CheckRun] | None = None
        self._unread = False
        self._tests: dict[int, tuple[str, ...] | None] = {}

    def runs(self) -> list[CheckRun] | None:
        """The head's check runs; None when GitHub would not list them."""
        if self._runs is None and not self._unread:
            try:
                self._runs = self._gh.check_runs(self._drop.repo, self._drop.head_sha)
            except RateLimited:
                raise
            except GitHubError as exc:
                log.warning(
                    "%s#%s: the head's checks not read (%s): no head evidence",
                    self._drop.repo,
                    self._drop.pr,
                    exc.status,
                )
                self._unread = True
        return self._runs

    def __call__(self, job: JobFailure) -> flaky.HeadCheck | None:
        if self._drop.head_sha == self._group:
            return None  # the head is the commit that failed: nothing outside the group
        runs = self.runs()
        if runs is None:
            return None
        same = [c for c in runs if c.name == job.job]
        if not same:
            return flaky.HeadCheck(self._drop.head_sha, "absent")
        check = max(same, key=lambda c: c.id)  # the newest run of it
        state = flaky.head_state(check.conclusion, check.status)
        tests: tuple[str, ...] | None = None
        if state == "failed" and job.failed_tests and check.app_slug == ACTIONS_APP:
            if check.id not in self._tests:
                self._tests[check.id] = self._gatherer.head_tests(
                    self._gh, self._drop.repo, check, reports=bool(job.tests_from)
                )
            tests = self._tests[check.id]
        return flaky.HeadCheck(self._drop.head_sha, state, tests)


def annotations_matter(check: CheckRun, e: LogExplanation) -> bool:
    """Whether the check run's annotations (one call) can change what the log alone says:
    it has some, and the log left the class unknown, lost the failing step's start, or
    named no step."""
    if not check.annotations_count:
        return False
    return e.class_ == "unknown" or e.truncated or e.step is None


def log_verdict(
    check: CheckRun, job: Job | None, e: LogExplanation, parsed: ParsedLog | None = None
) -> JobVerdict:
    cls = e.class_
    if cls == "unknown":
        cls = _by_conclusion(check)
    why = evidence_why(e.evidence[0].line, e.evidence[0].text) if e.evidence else ""
    url = check.html_url or (job.html_url if job else None) or check.details_url or ""
    failure = JobFailure(
        job=check.name,
        url=url,
        # The log's `Run …` title is the command: what a person (or the fixer) re-runs.
        step=e.step_title or e.step,
        error_lines=e.error_lines,
        excerpt=tuple((x.line, x.text) for x in e.excerpt),
        summary=e.summary,
        class_=cls,
        run=run_script(parsed) if parsed is not None else "",
        line_url=step_line_url(url, e, parsed.first_error if parsed is not None else None),
        signal=e.signal,
        failed_tests=tuple(e.failed_tests[:MAX_TESTS]),
    )
    return JobVerdict(failure, why)


def run_script(parsed: ParsedLog) -> str:
    """The failing step's own script, as the log echoes it in the step's header group
    (the lines before `shell:`). A `uses:` step's header shows `with:` and no `shell:`:
    its title names an action, not a command, so it gives no script."""
    command = parsed.command_title  # a composite's failing inner step: its own script
    if command is None or not command.startswith("Run "):
        return ""
    script: list[str] = []
    for line in parsed.step_script:
        if line.startswith("shell: "):
            break
        script.append(line)
    else:
        return ""  # no shell: not a `run:` step, or a header cut by the bounds
    title = command.removeprefix("Run ").strip()
    # GitHub echoes the whole script; a log that shows only the rest has it in the title.
    if title and (not script or script[0].strip() != title):
        script.insert(0, title)
    return "\n".join(line.rstrip() for line in script if line.strip())


def step_line_url(job_url: str, e: LogExplanation, error_line: int | None) -> str:
    """GitHub's link to the failing line of the step's log (`#step:N:L`, L counted from the
    step's own first line), when the job page, the step's number and its start are known."""
    m = JOB_URL.search(job_url)
    if m is None or "#" in job_url or e.step_number is None or e.step_line is None:
        return ""
    if error_line is None or error_line < e.step_line:
        return ""
    return f"{job_url}#step:{e.step_number}:{error_line - e.step_line + 1}"


def never_finished(checks: Sequence[CheckRun]) -> tuple[str, ...]:
    """The checks that did not finish: still queued or running when the queue gave up, or
    concluded `timed_out` / `stale`."""
    names: list[str] = []
    for check in checks:
        unfinished = check.status != "completed" or check.conclusion in ("timed_out", "stale")
        if unfinished and check.name not in names:
            names.append(check.name)
    return tuple(names)


# Merge groups followed back at most this far: a queue deeper than this is rare.
MAX_AHEAD = 20


def group_context(
    store: Store, drop: Drop, group_sha: str, runs: RunsOnce | None
) -> tuple[str | None, tuple[int, ...]]:
    """The commit the merge group was built on, and the pull requests ahead of this one in
    the group (oldest first): each group's ref names the commit it was built on, which is
    the group of the pull request ahead while there is one. One call (the newest
    merge-group runs)."""
    base: str | None = None
    for row in store.groups_for(drop.repo, drop.pr):
        if row.head_sha == group_sha:
            ref = parse_group_ref(row.head_ref)
            base = row.base_sha or (ref.base_sha if ref else None)
            break
    built_on: dict[str, tuple[int, str]] = {}
    if runs is None:
        return base, ()
    for run in runs():
        ref = parse_group_ref(run.head_branch)
        if ref is not None:
            built_on.setdefault(run.head_sha, (ref.pr, ref.base_sha))
    if base is None and group_sha in built_on:
        base = built_on[group_sha][1]
    ahead: list[int] = []
    cursor = base
    while cursor in built_on and len(ahead) < MAX_AHEAD:
        pr, cursor = built_on[cursor]
        if pr == drop.pr or pr in ahead:
            break  # a loop in what GitHub reported: stop rather than invent a queue
        ahead.append(pr)
    return base, tuple(reversed(ahead))


_CONCLUSION_CLASS: dict[str, TriageClass] = {
    "cancelled": "cancelled",
    "timed_out": "timeout",
    "stale": "infrastructure",
}


def _by_conclusion(check: CheckRun) -> TriageClass:
    """A class from GitHub's conclusion alone, when no log says more."""
    return _CONCLUSION_CLASS.get(check.conclusion or "", "unknown")


_NO_LOG = {
    "cancelled": "cancelled before it finished (a newer run, a concurrency group or fail-fast); "
    "not a failure of the pull request",
    "timed_out": "timed out before it reported",
    "stale": "GitHub marked it stale: it never completed",
    "action_required": "it waits for a person to act on GitHub (action_required)",
    "startup_failure": "its workflow could not start (startup_failure); check the workflow file",
}


def no_log_verdict(check: CheckRun) -> JobVerdict:
    """A failed check whose log is not read: cancelled, or not a GitHub Actions job."""
    conclusion = check.conclusion or ""
    summary = _NO_LOG.get(conclusion)
    if summary is None:
        app = f" of `{check.app_slug}`" if check.app_slug else ""
        summary = (
            f"the check{app} reported `{conclusion}`; landbot reads only GitHub Actions logs, "
            "so open the check for its details"
        )
    return without_log(check, _by_conclusion(check), summary)


def without_log(check: CheckRun, cls: TriageClass, summary: str) -> JobVerdict:
    failure = JobFailure(
        job=check.name,
        url=check.html_url or check.details_url or "",
        step=None,
        error_lines=(),
        excerpt=(),
        summary=summary,
        class_=cls,
    )
    return JobVerdict(failure, f"GitHub reports `{check.conclusion}`")


def triage_ops(gh: GitHubOps) -> TriageGitHub:
    if not isinstance(gh, TriageGitHub):
        raise TypeError(
            f"{type(gh).__name__} cannot read jobs and logs: triage needs run_jobs, job, "
            "job_log, latest_queue_removal and git_token (landbot.github.client.GitHubClient)"
        )
    return gh
