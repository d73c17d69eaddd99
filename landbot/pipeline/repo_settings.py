"""The settings in effect for one repository: the host's, narrowed by the repository's own
file on its default branch (`[policy] repo_file`, `.github/landbot.toml` by default).

    repo_settings = RepoSettings(host, store, gh)      # one per process
    settings = repo_settings.for_repo("acme/widgets")  # the host's object when no file applies

The file is read again from GitHub when it has never been read, when a push to the default
branch touched it since the last read (the `push` webhook marks it stale: intake/events.py),
or when the last read is older than `TTL`. The TTL is there for the scheduled-Action mode,
which gets no webhooks: a file changed there takes effect within 15 minutes, at a cost of at
most 2 calls per repository per 15 minutes while nothing changes. Between reads every worker
process takes the file from the store, so all of them apply the same version.

One read costs at most 3 GitHub calls:

1. `gh.default_branch` (`GET /repos/{owner}/{repo}` and its branch: the tip's sha);
2. `gh.file_contents(path, ref=tip, max_bytes=MAX_FILE_BYTES)` (`GET /repos/{owner}/{repo}/
   contents/{path}`), skipped when the tip is the commit read last time (nothing was pushed:
   the file is the same). A file over `MAX_FILE_BYTES` is refused from the size GitHub gives:
   its bytes are never read.

A valid file takes effect (`repo_config.effective` over the host's settings). A missing one
(404, or a file deleted) means the host's settings. An invalid one, a widening value among
its problems, is not applied: the last good version stays in effect (the host's settings
when there was none), and it is reported once per blob sha through land/config_report.py (a
`landbot config` check run: 1 more call, and on a resumed claim 1 to look for it first). A
GitHub error while reading keeps what is in effect, is logged, and is tried again after
`RETRY_AFTER`, never failing a drop. Anything else that goes wrong checking the file (a
bug, or input no check foresaw) makes the file invalid, reported and logged like any other:
a repository's file must not be able to fail every drop of the repository.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from landbot import logs
from landbot.config import Settings
from landbot.github.errors import GitHubError, MutationOutcomeUnknown
from landbot.github.models import BranchHead, CheckRun, FileContent
from landbot.github.ops import ReadsFiles, WritesChecks
from landbot.land.config_report import find_report, report_invalid
from landbot.repo_config import RepoConfigError, effective, parse_repo_file, problems
from landbot.store import Store, StoredRepoFile, utcnow

log = logging.getLogger("landbot.repo_settings")

# How long a read stays good without a push webhook (see the module docstring).
TTL = dt.timedelta(minutes=15)
# After a failed read, how long this process keeps what is in effect before asking again
# (a drop asks for its settings several times: GitHub down must not mean a call each time).
RETRY_AFTER = dt.timedelta(seconds=60)
# A claimed report older than this never finished: its worker died (config_report.py).
REPORT_LEASE = dt.timedelta(minutes=5)
# A settings file is a few hundred bytes; one larger than this is refused, not stored.
MAX_FILE_BYTES = 64 * 1024


class RepoFileClient(ReadsFiles, WritesChecks, Protocol):
    """The GitHub calls of reading a repository's file and reporting it invalid."""

    def check_runs(self, repo: str, ref: str) -> list[CheckRun]: ...


@dataclass(frozen=True)
class _InEffect:
    path: str
    good_sha: str
    settings: Settings


class RepoSettings:
    """Each repository's effective settings, cached in the store and in this process."""

    def __init__(
        self,
        host: Settings,
        store: Store,
        gh: RepoFileClient,
        *,
        ttl: dt.timedelta = TTL,
        clock: Callable[[], dt.datetime] = utcnow,
    ) -> None:
        self.host = host
        self.store = store
        self.gh = gh
        self.ttl = ttl
        self.clock = clock
        self._lock = threading.Lock()
        self._in_effect: dict[str, _InEffect] = {}  # repo (lower) → its parsed good file
        self._failed_at: dict[str, dt.datetime] = {}  # repo (lower) → the last failed read

    def for_repo(self, repo: str) -> Settings:
        """The settings in effect for `repo`: the host's object itself when the host reads
        no file, or the repository has no good one."""
        path = self.host.policy.repo_file
        if not path:
            return self.host
        row = self.store.repo_file(repo)
        now = self.clock()
        if self._due(repo, path, row, now):
            row = self._read(repo, path, row, now)
        return self._settings(repo, path, row)

    def read(self, repo: str) -> StoredRepoFile | None:
        """Read the file from GitHub now, whatever the cache says; the row after."""
        path = self.host.policy.repo_file
        if not path:
            return None
        return self._read(repo, path, self.store.repo_file(repo), self.clock())

    # --- when to read --------------------------------------------------------------------

    def _due(self, repo: str, path: str, row: StoredRepoFile | None, now: dt.datetime) -> bool:
        with self._lock:
            failed = self._failed_at.get(repo.lower())
        if failed is not None and now - failed < RETRY_AFTER:
            return False
        if row is None or row.read_at is None or row.path != path or row.stale:
            return True
        return now - row.read_at >= self.ttl

    # --- reading -------------------------------------------------------------------------

    def _read(
        self, repo: str, path: str, row: StoredRepoFile | None, started: dt.datetime
    ) -> StoredRepoFile | None:
        try:
            tip = self.gh.default_branch(repo)
            if row is not None and row.path == path and row.commit_sha == tip.sha:
                # Nothing pushed since the last read: the file is the one read then.
                outcome = self._save_unchanged(repo, path, row, tip, started)
            else:
                content = self.gh.file_contents(repo, path, ref=tip.sha, max_bytes=MAX_FILE_BYTES)
                outcome = self._save(repo, path, tip, content, started)
        except GitHubError as exc:
            with self._lock:
                self._failed_at[repo.lower()] = started
            logs.event(
                log,
                "settings file not read",
                logging.WARNING,
                repo=repo,
                path=path,
                error=exc,
                kept="the last good version" if row and row.good_sha else "the host's settings",
            )
            return row
        with self._lock:
            self._failed_at.pop(repo.lower(), None)
        fresh = self.store.repo_file(repo)
        if fresh is not None:
            logs.event(
                log,
                "settings file read",
                logging.INFO if outcome != "unchanged" else logging.DEBUG,
                repo=repo,
                path=path,
                commit_sha=fresh.commit_sha,
                blob_sha=fresh.blob_sha,
                outcome=outcome,
            )
            if fresh.invalid and fresh.blob_sha and not fresh.reported(fresh.blob_sha):
                self._report(repo, fresh)
        return fresh

    def _save_unchanged(
        self, repo: str, path: str, row: StoredRepoFile, tip: BranchHead, started: dt.datetime
    ) -> str:
        self.store.save_repo_file_read(
            repo,
            path=path,
            commit_sha=tip.sha,
            blob_sha=row.blob_sha,
            text=row.text,
            good=not row.invalid,
            read_at=started,
        )
        return "unchanged"

    def _save(
        self,
        repo: str,
        path: str,
        tip: BranchHead,
        content: FileContent | None,
        started: dt.datetime,
    ) -> str:
        if content is None:
            self.store.save_repo_file_read(
                repo, path=path, commit_sha=tip.sha, blob_sha=None, text=None, good=False,
                read_at=started,
            )  # fmt: skip
            return "absent"
        found = self.problems(path, content.text, size=content.size, repo=repo)
        # A refused file too large to be a settings file is not kept in the store either.
        text = content.text
        kept_text = text if text is not None and len(text) <= MAX_FILE_BYTES else None
        self.store.save_repo_file_read(
            repo,
            path=path,
            commit_sha=tip.sha,
            blob_sha=content.sha,
            text=kept_text,
            good=not found,
            read_at=started,
        )
        return "invalid" if found else "good"

    def problems(
        self, path: str, text: str | None, *, size: int | None = None, repo: str = ""
    ) -> list[RepoConfigError]:
        """The file's problems against the host's settings (empty: it is good). `text` None:
        a file too large to keep (or read). Never raises: a check that fails is a problem."""
        n = max(size or 0, len((text or "").encode("utf-8", "replace")))
        if text is None or n > MAX_FILE_BYTES:
            what = f"{n} bytes" if n > MAX_FILE_BYTES else "too large"
            return [
                RepoConfigError(
                    path,
                    None,
                    f"the file is {what}, over the {MAX_FILE_BYTES} bytes landbot reads; "
                    "keep only the settings this repository changes",
                )
            ]
        try:
            return problems(text, file=path, host=self.host)
        except Exception as exc:  # whatever it is, the file is not applied
            logs.event(
                log, "settings file check failed", logging.ERROR, repo=repo, path=path, error=exc
            )
            return [
                RepoConfigError(
                    path,
                    1,
                    f"landbot could not check this file ({type(exc).__name__}); simplify it "
                    "to the settings this repository changes, or report it to the host",
                )
            ]

    # --- reporting an invalid file -------------------------------------------------------

    def _report(self, repo: str, row: StoredRepoFile) -> None:
        blob, commit = row.blob_sha, row.commit_sha
        assert blob is not None and commit is not None  # an invalid row was read at a commit
        claim = self.store.claim_repo_file_report(repo, blob, lease=REPORT_LEASE, now=self.clock())
        if claim in ("done", "started"):
            return
        kept = "the last good version" if row.good_sha else "the host's settings"
        try:
            if claim == "retake" and find_report(self.gh, repo, commit, blob) is not None:
                self.store.finish_repo_file_report(repo, blob, done=True)
                return
            report_invalid(
                self.gh,
                repo,
                commit,
                row.path,
                blob,
                self.problems(row.path, row.text, repo=repo),
                kept=kept,
            )
        except MutationOutcomeUnknown as exc:
            # It may exist: the claim stays, and once its lease is over the next read looks
            # for it (by its external id) before making it again.
            logs.event(log, "settings file report unknown", logging.WARNING, repo=repo, error=exc)
            return
        except GitHubError as exc:
            # Refused (an installation without `checks: write`, say): the next read tries again.
            self.store.finish_repo_file_report(repo, blob, done=False)
            logs.event(log, "settings file not reported", logging.WARNING, repo=repo, error=exc)
            return
        self.store.finish_repo_file_report(repo, blob, done=True)

    # --- the settings in effect ----------------------------------------------------------

    def _settings(self, repo: str, path: str, row: StoredRepoFile | None) -> Settings:
        if row is None or row.path != path or row.good_sha is None or row.good_text is None:
            return self.host
        key = repo.lower()
        with self._lock:
            known = self._in_effect.get(key)
        if known is not None and (known.path, known.good_sha) == (path, row.good_sha):
            return known.settings
        try:
            mine = effective(self.host, parse_repo_file(row.good_text, file=path))
        except Exception as exc:  # RepoConfigError, or whatever a bug raises
            # Good when stored, refused now (a newer landbot's stricter schema): the host's.
            logs.event(log, "stored settings file refused", logging.WARNING, repo=repo, error=exc)
            mine = self.host
        with self._lock:
            self._in_effect[key] = _InEffect(path, row.good_sha, mine)
        return mine
