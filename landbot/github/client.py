"""GitHubClient: the typed GitHub operations every stage calls (sync).

Built on githubkit (`GitHub`, `auto_retry=False`, `http_cache=False`, its own
`MemCacheStrategy()`) pointed at `settings.api_url`, so a local fake is reached by URL;
GraphQL goes to `<api_url>/graphql`. Every call runs under the one retry policy of
retry.py, and counts in `client.calls` (every HTTP request sent to the API, retries and
auth calls included) so tests can assert call budgets. Each request is also reported to
`CALL_OBSERVERS` (its installation, status and `X-RateLimit-*` figures), which is where
landbot.web.prom counts them for /metrics.

githubkit and httpx are imported on first use: building a client costs nothing, and a
command that never talks to GitHub never imports them.
"""

from __future__ import annotations

import logging
import random
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import quote, urljoin

from landbot.config import GitHubSettings
from landbot.core.tls import client_context
from landbot.github import budget, documents, parse
from landbot.github.auth import AppAuth, Auth, make_auth
from landbot.github.errors import (
    GitHubError,
    GraphQLError,
    NetworkError,
    NotFound,
    RateLimited,
    ServerError,
)
from landbot.github.models import (
    Annotation,
    Artifact,
    BranchHead,
    CheckOutput,
    CheckRun,
    Comment,
    Dispatched,
    EnqueueResult,
    FileContent,
    Issue,
    Job,
    MergeQueueEntry,
    PullRemovals,
    PullState,
    QueueEvent,
    SweptBatch,
    WorkflowRun,
)
from landbot.github.ops import CODEOWNERS_PATHS
from landbot.github.repos import repo_path, split_repo
from landbot.github.retry import Retrier, RetryPolicy, rate_limit_wait, reset_wait

if TYPE_CHECKING:
    import httpx
    from githubkit import GitHub, UnauthAuthStrategy

log = logging.getLogger("landbot.github")

T = TypeVar("T")

API_VERSION = "2022-11-28"
USER_AGENT = "landbot"
PER_PAGE = 100
# GITHUB_TOKEN cannot read GET /user; comments it writes are by this account.
ACTIONS_BOT = "github-actions[bot]"
# "The Checks API limits the number of annotations to a maximum of 50 per API request. To
# create more than 50 annotations, you have to make multiple requests to the Update a check
# run endpoint. Each time you update the check run, annotations are appended"
# (docs.github.com/rest/checks/runs#create-a-check-run, the `output.annotations` parameter).
ANNOTATIONS_PER_REQUEST = 50
# Get repository content: files over 1 MB come with `"encoding": "none"` and an empty
# `content`; "to get the contents of these larger files, use the raw media type"
# (docs.github.com/rest/repos/contents#get-repository-content).
RAW_MEDIA_TYPE = "application/vnd.github.raw+json"
# GitHub ignores a CODEOWNERS file over 3 MB ("About code owners"); landbot reads no more.
CODEOWNERS_MAX = 3 * 1024 * 1024
# Permission names GitHub defines; a custom role's name falls back to `permission`.
ROLES = ("admin", "maintain", "write", "triage", "read", "none")
_NODE_MEMORY = 10_000  # node id -> repository entries kept for App auth of node-id calls
# Conditional requests (issue 28.2): the last answers to GETs with their ETags, sent back as
# `If-None-Match`; GitHub's 304 costs nothing against the primary limit ("Rate limits for the
# REST API": "making a conditional request ... does not count against your primary rate
# limit if a 304 response is returned"). Bounded: the least recently used goes first, and an
# answer over _ETAG_MAX_BYTES is not kept (a big list is rarely read twice unchanged).
_ETAG_ENTRIES = 512
_ETAG_MAX_BYTES = 512 * 1024


@dataclass(frozen=True)
class RateLimit:
    """The `X-RateLimit-*` headers of one answer: the budget of one resource (core, graphql,
    search...) of the credentials that made the request."""

    resource: str
    limit: int
    remaining: int
    reset: float  # epoch seconds when `remaining` refills


@dataclass(frozen=True)
class CallRecord:
    """One HTTP request sent to the API (a retry is another one), as /metrics counts it."""

    # The App installation's id; "app" for the App's own JWT calls (installation lookup,
    # token minting); "token" for a personal or Actions token.
    installation: str
    api: str  # "rest" or "graphql"
    status: str  # the HTTP status code, or "error" when no answer came
    rate_limit: RateLimit | None


# Called after every request to the API, in the thread that made it (landbot.web.prom adds
# its counters here). An observer that raises is logged and does not fail the call.
CALL_OBSERVERS: list[Callable[[CallRecord], None]] = []


def rate_limit_of(headers: Mapping[str, str]) -> RateLimit | None:
    """The rate-limit figures of an answer; None when it has none (or they do not parse)."""
    try:
        return RateLimit(
            resource=headers.get("x-ratelimit-resource") or "core",
            limit=int(headers["x-ratelimit-limit"]),
            remaining=int(headers["x-ratelimit-remaining"]),
            reset=float(headers.get("x-ratelimit-reset") or 0),
        )
    except (KeyError, ValueError):
        return None


def _notify(record: CallRecord) -> None:
    for observe in tuple(CALL_OBSERVERS):
        try:
            observe(record)
        except Exception:  # counting must never fail a call to GitHub
            log.exception("a GitHub call observer failed")


class GitHubClient:
    """One GitHub connection with its credentials, retry policy and call counter.

    `sleep`, `clock` (epoch seconds) and `rand` are injectable so tests neither sleep nor
    depend on chance. Not thread-safe: the worker is a plain loop.
    """

    def __init__(
        self,
        settings: GitHubSettings,
        *,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.time,
        rand: Callable[[], float] = random.random,
        policy: RetryPolicy | None = None,
        auth: Auth | None = None,
        timeout: float = 30.0,
        mutation_gap: float = 1.0,
        planner: budget.Planner | None = None,
    ) -> None:
        self.settings = settings
        # Every request waits here while a limit of its installation holds (budget.py).
        self.planner = planner or budget.Planner(clock=clock, sleep=sleep)
        self.calls = 0
        self.auth: Auth = auth if auth is not None else make_auth(settings, clock=clock)
        self.mutation_gap = mutation_gap  # GitHub asks for ~1 s between mutations
        self._sleep = sleep
        self._clock = clock
        self._timeout = timeout
        self._retrier = Retrier(policy or RetryPolicy(), sleep=sleep, rand=rand)
        self._gh: GitHub[UnauthAuthStrategy] | None = None
        self._download: httpx.Client | None = None
        self._bot_login: str | None = None
        self._node_repos: dict[str, str] = {}
        self._last_mutation: float | None = None
        # Whose credentials the request being sent uses (CallRecord.installation).
        self._installation = "token"
        self._token_installations: dict[int, str] = {}
        # (installation, url, params, accept) -> (ETag, the answer it came with).
        self._etags: OrderedDict[tuple[str, str, str, str], tuple[str, httpx.Response]] = (
            OrderedDict()
        )
        self.not_modified = 0  # GETs GitHub answered 304 (counted in `calls` too)

    # --- lifecycle -------------------------------------------------------------------

    def close(self) -> None:
        if self._gh is not None:
            self._gh.__exit__(None, None, None)
            self._gh = None
        if self._download is not None:
            self._download.close()
            self._download = None

    def __enter__(self) -> GitHubClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- pull requests ---------------------------------------------------------------

    def pull_request(self, repo: str, number: int) -> PullState:
        owner, name = split_repo(repo)
        data = self._graphql(
            "pull_request", {"owner": owner, "name": name, "number": number}, repo=repo
        )
        node = ((data.get("repository") or {}).get("pullRequest")) or None
        if node is None:
            raise NotFound(404, f"pull request {repo}#{number} does not exist")
        state = self._parse(partial(parse.pull_state, repo), node, "pull request")
        self._remember(state.node_id, repo)
        return state

    def queue_removals(self, repo: str, *, first: int = 50) -> list[PullRemovals]:
        """Recently updated open PRs with their last 5 queue events (one GraphQL call)."""
        owner, name = split_repo(repo)
        data = self._graphql(
            "queue_removals", {"owner": owner, "name": name, "first": first}, repo=repo
        )
        repository = data.get("repository")
        if repository is None:
            raise NotFound(404, f"repository {repo} does not exist or is not visible")
        nodes = ((repository.get("pullRequests") or {}).get("nodes")) or []
        out = [self._parse(partial(parse.pull_removals, repo), n, "pull request") for n in nodes]
        for pr in out:
            self._remember(pr.node_id, repo)
        return out

    def queue_removals_many(self, repos: Sequence[str], *, first: int = 50) -> SweptBatch:
        """`queue_removals` of several repositories in one GraphQL query, one alias each
        (without beforeCommit's parents: `commit_parents`). The repositories must share
        their credentials (one App installation). A repository GitHub answers with an error
        (missing, not accessible: an error whose path names its alias, null data there) is
        in `missing`; the others' answers are kept."""
        if not repos:
            return SweptBatch({}, {})
        variables: dict[str, Any] = {"first": first}
        for i, repo in enumerate(repos):
            variables[f"owner{i}"], variables[f"name{i}"] = split_repo(repo)
        text = documents.batched("queue_removals_batch", len(repos))
        data, errors = self._graphql_partial("queue_removals_batch", text, variables, repos[0])
        found: dict[str, list[PullRemovals]] = {}
        missing: dict[str, str] = {}
        for i, repo in enumerate(repos):
            repository = data.get(f"r{i}")
            if repository is None:
                missing[repo] = errors.get(f"r{i}") or "no data for this repository"
                continue
            nodes = ((repository.get("pullRequests") or {}).get("nodes")) or []
            prs = [
                self._parse(partial(parse.pull_removals, repo), n, "pull request") for n in nodes
            ]
            for pr in prs:
                self._remember(pr.node_id, repo)
            found[repo] = prs
        return SweptBatch(found, missing)

    def commit_parents(
        self, commits: Sequence[tuple[str, str]]
    ) -> dict[tuple[str, str], tuple[str, ...]]:
        """The parents of each (repository, commit oid), in one GraphQL query; a commit
        GitHub does not have (or a repository it does not answer for) is left out."""
        if not commits:
            return {}
        variables: dict[str, Any] = {}
        for i, (repo, oid) in enumerate(commits):
            variables[f"owner{i}"], variables[f"name{i}"] = split_repo(repo)
            variables[f"oid{i}"] = oid
        text = documents.batched("commit_parents", len(commits))
        data, _ = self._graphql_partial("commit_parents", text, variables, commits[0][0])
        out: dict[tuple[str, str], tuple[str, ...]] = {}
        for i, key in enumerate(commits):
            commit = (data.get(f"c{i}") or {}).get("object")
            if isinstance(commit, dict) and isinstance(commit.get("parents"), dict):
                nodes = commit["parents"].get("nodes") or []
                out[key] = tuple(str(n["oid"]) for n in nodes if isinstance(n, dict))
        return out

    def latest_queue_removal(self, repo: str, number: int) -> QueueEvent | None:
        """The PR's latest `RemovedFromMergeQueueEvent` (one GraphQL call); None if never."""
        owner, name = split_repo(repo)
        data = self._graphql(
            "latest_queue_removal", {"owner": owner, "name": name, "number": number}, repo=repo
        )
        node = ((data.get("repository") or {}).get("pullRequest")) or None
        if node is None:
            raise NotFound(404, f"pull request {repo}#{number} does not exist")
        items = ((node.get("timelineItems") or {}).get("nodes")) or []
        events = [self._parse(parse.queue_event, i, "timeline item") for i in items if i]
        removals = [e for e in events if e is not None and e.kind == "removed"]
        return removals[-1] if removals else None

    def merge_queue_entries(
        self, repo: str, branch: str, *, first: int = 100
    ) -> list[MergeQueueEntry]:
        """The merge queue of `branch` ([] when the branch has no merge queue)."""
        owner, name = split_repo(repo)
        data = self._graphql(
            "merge_queue_entries",
            {"owner": owner, "name": name, "branch": branch, "first": first},
            repo=repo,
        )
        queue = (data.get("repository") or {}).get("mergeQueue")
        if queue is None:
            return []
        nodes = ((queue.get("entries") or {}).get("nodes")) or []
        return [self._parse(parse.merge_queue_entry, n, "queue entry") for n in nodes]

    def enqueue(
        self, pr_node_id: str, expected_head_oid: str | None, *, repo: str | None = None
    ) -> EnqueueResult:
        """Put the PR at the back of the queue; "already in the queue" counts as success."""
        try:
            data = self._graphql(
                "enqueue_pull_request",
                {"pullRequestId": pr_node_id, "expectedHeadOid": expected_head_oid},
                repo=self._repo_of(pr_node_id, repo),
            )
        except GraphQLError as exc:
            if already_queued(exc):
                return EnqueueResult(already_queued=True, entry_id=None, state=None, position=None)
            raise
        return self._parse(parse.enqueue_result, data, "enqueue")

    def dequeue(self, pr_node_id: str, *, repo: str | None = None) -> None:
        self._graphql(
            "dequeue_pull_request", {"id": pr_node_id}, repo=self._repo_of(pr_node_id, repo)
        )

    def enable_auto_merge(
        self,
        pr_node_id: str,
        expected_head_oid: str | None,
        merge_method: str = "MERGE",
        *,
        repo: str | None = None,
    ) -> None:
        """Arm auto-merge: the PR joins the queue once its required checks pass."""
        self._graphql(
            "enable_auto_merge",
            {
                "pullRequestId": pr_node_id,
                "expectedHeadOid": expected_head_oid,
                "mergeMethod": merge_method,
            },
            repo=self._repo_of(pr_node_id, repo),
        )

    # --- checks and Actions ----------------------------------------------------------

    def check_runs(self, repo: str, ref: str) -> list[CheckRun]:
        path = f"{repo_path(repo)}/commits/{quote(ref, safe='/')}/check-runs"
        items = self._paginate(repo, path, {}, key="check_runs")
        return [self._parse(parse.check_run, i, "check run") for i in items]

    def check_run_annotations(self, repo: str, check_run_id: int) -> list[Annotation]:
        """A check run's annotations (for an Actions job: its `##[error]` and problem-matcher
        lines, with paths and lines): the first page (100), one call."""
        path = f"{repo_path(repo)}/check-runs/{int(check_run_id)}/annotations"
        items = self._paginate(repo, path, {}, key=None, max_pages=1)
        return [self._parse(parse.annotation, i, "annotation") for i in items]

    def merge_group_runs(self, repo: str, *, head_sha: str | None = None) -> list[WorkflowRun]:
        """Merge-group workflow runs: those of one commit, or else the newest 100 (one call:
        a busy repository has thousands, and a drop's group is among the recent ones)."""
        params = {"event": "merge_group"}
        if head_sha:
            params["head_sha"] = head_sha
        items = self._paginate(
            repo,
            f"{repo_path(repo)}/actions/runs",
            params,
            key="workflow_runs",
            max_pages=None if head_sha else 1,
        )
        return [self._parse(parse.workflow_run, i, "workflow run") for i in items]

    def green_runs(self, repo: str, branch: str, *, event: str = "push") -> list[WorkflowRun]:
        """The newest successful workflow runs of `event` on `branch`, every workflow's,
        newest first: one page of 100, one call (triage's baselines, issue 26: the failed
        job's workflow among them; a busy base has thousands of runs, the newest serve)."""
        params = {
            "branch": branch,
            "status": "success",
            "event": event,
            "exclude_pull_requests": "true",  # a push run's PRs: a smaller answer, unused
        }
        items = self._paginate(
            repo, f"{repo_path(repo)}/actions/runs", params, key="workflow_runs", max_pages=1
        )
        return [self._parse(parse.workflow_run, i, "workflow run") for i in items]

    def run_jobs(self, repo: str, run_id: int) -> list[Job]:
        path = f"{repo_path(repo)}/actions/runs/{int(run_id)}/jobs"
        items = self._paginate(repo, path, {}, key="jobs")
        return [self._parse(parse.job, i, "job") for i in items]

    def job(self, repo: str, job_id: int) -> Job:
        data = self._rest("GET", f"{repo_path(repo)}/actions/jobs/{int(job_id)}", repo=repo)
        return self._parse(parse.job, data, "job")

    def job_log(
        self, repo: str, job_id: int, *, chunk_size: int | None = None
    ) -> AbstractContextManager[Iterator[bytes]]:
        """Stream one job's log: `with client.job_log(repo, id) as chunks: for b in chunks:`.

        The API answers 302 to a short-lived plain-text URL on another host; that URL is
        fetched WITHOUT the Authorization header (it carries its own signature, and the
        token must not leak to the storage host). Nothing is read before the caller iterates.
        """
        return self._job_log(repo, job_id, chunk_size)

    # --- Actions: the fixer backend's workflow runs --------------------------------------

    def dispatch_workflow(
        self, repo: str, workflow: str, ref: str, inputs: Mapping[str, str]
    ) -> Dispatched:
        """POST .../actions/workflows/{workflow}/dispatches: start one run of `workflow` (a
        file name in .github/workflows) on `ref` with `inputs`.

        Not idempotent: it is sent once (no retry after a request that may have reached
        GitHub; MutationOutcomeUnknown then), and after an unknown outcome the caller looks
        for the run by its one-time id before sending it again. GitHub answers 204, or 200
        with `workflow_run_id` when asked for the run's details.
        (https://docs.github.com/en/rest/actions/workflows#create-a-workflow-dispatch-event)
        """
        path = f"{repo_path(repo)}/actions/workflows/{quote(workflow, safe='')}/dispatches"
        body = {"ref": ref, "inputs": dict(inputs), "return_run_details": True}
        data = self._rest("POST", path, repo=repo, json=body)
        run_id = data.get("workflow_run_id") if isinstance(data, dict) else None
        return Dispatched(run_id=int(run_id) if run_id is not None else None)

    def workflow_runs(
        self,
        repo: str,
        workflow: str,
        *,
        event: str | None = None,
        created_after: datetime | None = None,
    ) -> list[WorkflowRun]:
        """The newest runs (one page of 100) of `workflow`, of `event`, created at or after
        `created_after`, each with its `display_title` (the run-name landbot's caller sets to
        carry the one-time job id)."""
        params: dict[str, Any] = {}
        if event:
            params["event"] = event
        if created_after is not None:
            at = created_after.astimezone(UTC).replace(microsecond=0, tzinfo=None)
            params["created"] = f">={at.isoformat()}Z"
        path = f"{repo_path(repo)}/actions/workflows/{quote(workflow, safe='')}/runs"
        items = self._paginate(repo, path, params, key="workflow_runs", max_pages=1)
        return [self._parse(parse.workflow_run, i, "workflow run") for i in items]

    def workflow_run(self, repo: str, run_id: int) -> WorkflowRun:
        data = self._rest("GET", f"{repo_path(repo)}/actions/runs/{int(run_id)}", repo=repo)
        return self._parse(parse.workflow_run, data, "workflow run")

    def cancel_workflow_run(self, repo: str, run_id: int) -> None:
        """POST .../actions/runs/{run_id}/cancel: GitHub answers 202 and cancels the run's
        jobs soon after, 409 when the run has already completed. Repeatable: cancelling a
        run twice asks for the same thing.
        (https://docs.github.com/en/rest/actions/workflow-runs#cancel-a-workflow-run)"""
        path = f"{repo_path(repo)}/actions/runs/{int(run_id)}/cancel"
        self._rest("POST", path, repo=repo, repeatable=True)

    def run_artifacts(self, repo: str, run_id: int) -> list[Artifact]:
        path = f"{repo_path(repo)}/actions/runs/{int(run_id)}/artifacts"
        items = self._paginate(repo, path, {}, key="artifacts")
        return [self._parse(parse.artifact, i, "artifact") for i in items]

    def download_artifact(self, repo: str, artifact_id: int, *, max_bytes: int) -> bytes:
        """The artifact's zip: the API answers 302 to a short-lived blob URL, fetched without
        the token as a job's log is. GitHubError past `max_bytes` (read no further)."""
        path = f"{repo_path(repo)}/actions/artifacts/{int(artifact_id)}/zip"
        with ExitStack() as keep:
            response = self._call(
                lambda authz: self._open_log(path, authz, keep), repo=repo, mutation=False
            )
            declared = response.headers.get("content-length")
            if declared is not None and declared.isdigit() and int(declared) > max_bytes:
                raise GitHubError(
                    response.status_code,
                    f"artifact {artifact_id} is {int(declared):,} bytes, over the cap of "
                    f"{max_bytes:,}",
                )
            chunks: list[bytes] = []
            got = 0
            for chunk in _chunks(response, None):
                got += len(chunk)
                if got > max_bytes:
                    raise GitHubError(
                        response.status_code,
                        f"artifact {artifact_id} is over the cap of {max_bytes:,} bytes",
                    )
                chunks.append(chunk)
            return b"".join(chunks)

    def create_check_run(
        self,
        repo: str,
        head_sha: str,
        *,
        name: str,
        status: str,
        external_id: str | None = None,
        details_url: str | None = None,
        conclusion: str | None = None,
        output: CheckOutput | None = None,
    ) -> CheckRun:
        """POST a check run (an App's: a personal token is refused by GitHub with a 403).

        Not repeated after an unknown outcome (a second POST makes a second run): the caller
        finds the run by `external_id` instead. Annotations past the first 50 follow in
        PATCHes of the same output, as GitHub's docs say.
        """
        body, batches = _check_run_body(
            output,
            name=name,
            head_sha=head_sha,
            status=status,
            external_id=external_id,
            details_url=details_url,
            conclusion=conclusion,
        )
        data = self._rest("POST", f"{repo_path(repo)}/check-runs", repo=repo, json=body)
        made = self._parse(parse.check_run, data, "check run")
        return self._more_annotations(repo, made, output, batches[1:])

    def update_check_run(
        self,
        repo: str,
        check_run_id: int,
        *,
        status: str | None = None,
        conclusion: str | None = None,
        details_url: str | None = None,
        output: CheckOutput | None = None,
    ) -> CheckRun:
        body, batches = _check_run_body(
            output, status=status, conclusion=conclusion, details_url=details_url
        )
        data = self._patch_check_run(repo, check_run_id, body)
        updated = self._parse(parse.check_run, data, "check run")
        return self._more_annotations(repo, updated, output, batches[1:])

    def _patch_check_run(self, repo: str, check_run_id: int, body: dict[str, Any]) -> Any:
        # Setting status, conclusion or output again gives the same run; annotations are
        # appended, so a PATCH carrying some is not repeated after an unknown outcome.
        output = body.get("output")
        appends = isinstance(output, dict) and bool(output.get("annotations"))
        return self._rest(
            "PATCH",
            f"{repo_path(repo)}/check-runs/{int(check_run_id)}",
            repo=repo,
            json=body,
            repeatable=not appends,
        )

    def _more_annotations(
        self,
        repo: str,
        run: CheckRun,
        output: CheckOutput | None,
        batches: list[tuple[Annotation, ...]],
    ) -> CheckRun:
        """The annotations past the first request's 50, 50 per PATCH (GitHub appends them)."""
        for batch in batches:
            assert output is not None  # batches come from an output
            data = self._patch_check_run(repo, run.id, {"output": _output_json(output, batch)})
            run = self._parse(parse.check_run, data, "check run")
        return run

    # --- comments --------------------------------------------------------------------

    def comments(self, repo: str, number: int) -> list[Comment]:
        path = f"{repo_path(repo)}/issues/{int(number)}/comments"
        items = self._paginate(repo, path, {}, key=None)
        out = [self._parse(parse.comment, i, "comment") for i in items]
        for c in out:
            self._remember(c.node_id, repo)
        return out

    def create_comment(self, repo: str, number: int, body: str) -> Comment:
        data = self._rest(
            "POST",
            f"{repo_path(repo)}/issues/{int(number)}/comments",
            repo=repo,
            json={"body": body},
        )
        made = self._parse(parse.comment, data, "comment")
        self._remember(made.node_id, repo)
        return made

    def update_comment(self, repo: str, comment_id: int, body: str) -> Comment:
        data = self._rest(
            "PATCH",
            f"{repo_path(repo)}/issues/comments/{int(comment_id)}",
            repo=repo,
            json={"body": body},
        )
        return self._parse(parse.comment, data, "comment")

    def upsert_marked_comment(
        self, repo: str, number: int, marker: str, body: str, *, known_id: int | None = None
    ) -> Comment:
        """Edit the bot's own comment carrying `marker`, or create one.

        A comment by anyone else is never edited, even if it carries the marker (anyone can
        paste it). `known_id` (from the store) skips the listing; if that comment is gone the
        listing is used. The body always carries the marker, so the next upsert finds it.
        An unchanged body is not sent again.
        """
        if marker not in body:
            body = f"{marker}\n{body}"
        if known_id is not None:
            try:
                return self.update_comment(repo, known_id, body)
            except NotFound:
                log.info("comment %s on %s#%s is gone; looking for another", known_id, repo, number)
        me = self.bot_login().lower()
        mine = [
            c
            for c in self.comments(repo, number)
            if marker in c.body and c.user is not None and c.user.lower() == me
        ]
        if not mine:
            return self.create_comment(repo, number, body)
        latest = mine[-1]  # GitHub lists oldest first
        if latest.body == body:
            return latest
        return self.update_comment(repo, latest.id, body)

    def minimize_comment(
        self, node_id: str, classifier: str = "OUTDATED", *, repo: str | None = None
    ) -> None:
        self._graphql(
            "minimize_comment",
            {"subjectId": node_id, "classifier": classifier},
            repo=self._repo_of(node_id, repo),
        )

    def add_reaction(self, repo: str, comment_id: int, content: str) -> None:
        """React to an issue comment ("eyes", "+1", "-1", ...); repeating it is harmless."""
        self._rest(
            "POST",
            f"{repo_path(repo)}/issues/comments/{int(comment_id)}/reactions",
            repo=repo,
            json={"content": content},
            repeatable=True,  # GitHub answers 200 with the existing reaction
        )

    # --- labels ----------------------------------------------------------------------

    def add_label(self, repo: str, number: int, name: str) -> None:
        """Add a label to an issue or pull request (GitHub creates a label it lacks)."""
        self._rest(
            "POST",
            f"{repo_path(repo)}/issues/{int(number)}/labels",
            repo=repo,
            json={"labels": [name]},
            repeatable=True,  # adding a label the issue has is a no-op
        )

    def remove_label(self, repo: str, number: int, name: str) -> bool:
        """Remove a label; False when the issue does not have it (GitHub's 404)."""
        path = f"{repo_path(repo)}/issues/{int(number)}/labels/{quote(name, safe='')}"
        try:
            self._rest("DELETE", path, repo=repo, repeatable=True)
        except NotFound:
            return False
        return True

    # --- issues landbot opens itself ---------------------------------------------------

    def create_issue(
        self, repo: str, title: str, body: str, *, labels: tuple[str, ...] = ()
    ) -> Issue:
        """POST /repos/{o}/{r}/issues (GitHub creates a label the repository lacks). Sent
        once: after an unknown outcome the caller finds the issue by its marker."""
        payload: dict[str, Any] = {"title": title, "body": body}
        if labels:
            payload["labels"] = list(labels)
        data = self._rest("POST", f"{repo_path(repo)}/issues", repo=repo, json=payload)
        return self._parse(parse.issue, data, "issue")

    def update_issue(
        self,
        repo: str,
        number: int,
        *,
        title: str | None = None,
        body: str | None = None,
        state: str | None = None,
        state_reason: str | None = None,
    ) -> Issue:
        fields = {"title": title, "body": body, "state": state, "state_reason": state_reason}
        data = self._rest(
            "PATCH",
            f"{repo_path(repo)}/issues/{int(number)}",
            repo=repo,
            json={k: v for k, v in fields.items() if v is not None},
            repeatable=True,  # the same fields set twice: the same issue
        )
        return self._parse(parse.issue, data, "issue")

    def close_issue(self, repo: str, number: int, *, reason: str = "completed") -> Issue:
        return self.update_issue(repo, number, state="closed", state_reason=reason)

    def reopen_issue(self, repo: str, number: int) -> Issue:
        return self.update_issue(repo, number, state="open")

    def issue(self, repo: str, number: int) -> Issue | None:
        """One issue; None when there is none (or it is a pull request)."""
        path = f"{repo_path(repo)}/issues/{int(number)}"
        data = self._rest("GET", path, repo=repo, missing_ok=True)
        if data is None or (isinstance(data, dict) and data.get("pull_request")):
            return None
        return self._parse(parse.issue, data, "issue")

    def own_issues(self, repo: str, label: str, *, state: str = "all") -> list[Issue]:
        """GET /repos/{o}/{r}/issues?labels=…&state=…, pull requests (which GitHub lists
        too) left out, and only the bot's own. The login is compared here rather than sent
        as `creator`: an App's login ends in `[bot]`, which that filter is not documented
        to take."""
        params = {"labels": label, "state": state, "sort": "created", "direction": "asc"}
        items = self._paginate(repo, f"{repo_path(repo)}/issues", params, key=None)
        me = self.bot_login().lower()
        out: list[Issue] = []
        for item in items:
            if not isinstance(item, dict) or item.get("pull_request"):
                continue
            found = self._parse(parse.issue, item, "issue")
            if found.user is not None and found.user.lower() == me:
                out.append(found)
        return out

    def codeowners(self, repo: str, *, ref: str | None = None) -> FileContent | None:
        """The first CODEOWNERS GitHub would use (.github/, the root, docs/); None if none."""
        for path in CODEOWNERS_PATHS:
            found = self.file_contents(repo, path, ref=ref, max_bytes=CODEOWNERS_MAX)
            if found is not None:
                return found
        return None

    # --- repository files ------------------------------------------------------------

    def default_branch(self, repo: str) -> BranchHead:
        """The default branch (GET /repos/{o}/{r}) and its tip (GET …/branches/{branch})."""
        data = self._rest("GET", repo_path(repo), repo=repo)
        branch = str(data["default_branch"]) if isinstance(data, dict) else ""
        if not branch:
            raise GitHubError(200, f"repository {repo}: no default_branch in GitHub's answer")
        tip = self._rest("GET", f"{repo_path(repo)}/branches/{quote(branch, safe='')}", repo=repo)
        return self._parse(parse.branch_head, tip, "branch")

    def file_contents(
        self, repo: str, path: str, *, ref: str | None = None, max_bytes: int | None = None
    ) -> FileContent | None:
        """The file at `path` (at `ref`, else the default branch), decoded; None if absent.

        A directory, a symlink to outside the repository or a submodule, or a file that is
        not UTF-8, is a GitHubError. A file over 1 MB comes without content; it is read
        again with the raw media type, as GitHub's docs say. A file whose `size` is over
        `max_bytes` comes back with `text` None, neither decoded nor read raw (up to 100 MB).
        """
        url = f"{repo_path(repo)}/contents/{quote(path.lstrip('/'), safe='/')}"
        params = {"ref": ref} if ref else None
        data = self._rest("GET", url, repo=repo, params=params, missing_ok=True)
        if data is None:
            return None
        try:
            found = parse.file_content(data)
        except parse.NotAFile as exc:
            raise GitHubError(200, f"{repo}:{path} {exc}; name a file") from None
        except (KeyError, TypeError, ValueError) as exc:
            raise GitHubError(
                200, f"unexpected contents object from GitHub for {repo}:{path} ({exc})"
            ) from None
        if max_bytes is not None and found.size > max_bytes:
            return FileContent(path=found.path, sha=found.sha, text=None, size=found.size)
        raw = found.content
        if raw is None:  # over 1 MB: encoding "none"
            raw = self._raw_file(repo, url, params)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise GitHubError(200, f"{repo}:{path} is not UTF-8 text; save it as UTF-8") from None
        return FileContent(path=found.path, sha=found.sha, text=text, size=found.size)

    def _raw_file(self, repo: str, url: str, params: dict[str, Any] | None) -> bytes:
        def attempt(authz: str) -> httpx.Response:
            return self._exchange(
                "GET", url, authorization=authz, params=params, accept=RAW_MEDIA_TYPE
            )

        response = self._call(attempt, repo=repo, mutation=False)
        return response.content

    # --- people ----------------------------------------------------------------------

    def collaborator_permission(self, repo: str, username: str) -> str:
        """admin | maintain | write | triage | read | none ("none" for a stranger)."""
        path = f"{repo_path(repo)}/collaborators/{quote(username, safe='')}/permission"
        data = self._rest("GET", path, repo=repo, missing_ok=True)
        if data is None:
            return "none"  # not a user GitHub knows: no rights
        role = data.get("role_name") if isinstance(data, dict) else None
        if role in ROLES:
            return str(role)
        permission = data.get("permission") if isinstance(data, dict) else None
        return str(permission) if permission in ROLES else "none"

    def bot_login(self) -> str:
        """The login the bot's comments carry: `<slug>[bot]` for an App, else GET /user."""
        if self._bot_login is None:
            if isinstance(self.auth, AppAuth):
                data = self._auth_http("GET", "/app", authorization=self.auth.app_authorization())
                self._bot_login = f"{data['slug']}[bot]"
            else:
                try:
                    self._bot_login = str(self._rest("GET", "/user", repo=None)["login"])
                except GitHubError as exc:
                    if exc.status != 403:
                        raise
                    self._bot_login = ACTIONS_BOT  # Actions' GITHUB_TOKEN: no /user access
        return self._bot_login

    def git_token(self, repo: str) -> str:
        """The token to push to `repo` with git (the installation token, or the plain token)."""
        split_repo(repo)
        return self.auth.git_token(repo, self._auth_http)

    def installation_of(self, repo: str) -> str:
        """The App installation `repo` is reached through ("token" under a plain token):
        what the fixer's per-installation cap counts by."""
        if not isinstance(self.auth, AppAuth):
            return "token"
        return str(self.auth.installation_id(repo, self._auth_http))

    # --- plumbing --------------------------------------------------------------------

    def _github(self) -> GitHub[UnauthAuthStrategy]:
        if self._gh is None:
            from githubkit import GitHub, UnauthAuthStrategy
            from githubkit.cache import MemCacheStrategy

            gh = GitHub(
                UnauthAuthStrategy(),
                base_url=self.settings.api_url,
                user_agent=USER_AGENT,
                timeout=self._timeout,
                auto_retry=False,
                http_cache=False,
                cache_strategy=MemCacheStrategy(),
                ssl_verify=client_context(),
            )
            # One connection pool for the client's life (without it githubkit opens a new
            # httpx client, and TLS context, per request).
            gh.__enter__()  # type: ignore[no-untyped-call]  # githubkit leaves it unannotated
            self._gh = gh
        return self._gh

    def _headers(self, authorization: str, accept: str | None = None) -> dict[str, str]:
        headers = {"Authorization": authorization, "X-GitHub-Api-Version": API_VERSION}
        if accept is not None:
            headers["Accept"] = accept
        return headers

    def _exchange(
        self,
        method: str,
        url: str,
        *,
        authorization: str,
        params: dict[str, Any] | None = None,
        json: Any = None,
        accept: str | None = None,
    ) -> httpx.Response:
        """One HTTP request, its failure classified into the errors the policy knows."""
        from githubkit.exception import RequestError, RequestFailed, RequestTimeout

        gh = self._github()
        headers = self._headers(authorization, accept)
        key = self._etag_key(method, url, params, accept)
        known = self._etags.get(key) if key is not None else None
        if known is not None:
            headers["If-None-Match"] = known[0]
        with self._slot(method, url) as answered:
            self.calls += 1
            try:
                response = gh.request(method, url, params=params, json=json, headers=headers)
            except RequestFailed as exc:  # includes githubkit's rate-limit subclasses
                raw = exc.response.raw_response
                self._observe(url, raw)
                answered(raw.status_code, raw.headers, error_message(raw))
                raise self._http_error(raw) from None
            except RequestTimeout as exc:
                self._observe(url, None)
                raise network_error(exc.exc, method, url) from exc
            except RequestError as exc:
                self._observe(url, None)
                raise network_error(exc.exc, method, url) from exc
            raw = response.raw_response
            self._observe(url, raw)
            answered(raw.status_code, raw.headers, "")
        if key is None:
            return raw
        if raw.status_code == 304 and known is not None:
            # Not modified: the answer is the one kept with this ETag.
            self.not_modified += 1
            self._etags.move_to_end(key)
            return known[1]
        self._keep_etag(key, raw)
        return raw

    def _etag_key(
        self, method: str, url: str, params: dict[str, Any] | None, accept: str | None
    ) -> tuple[str, str, str, str] | None:
        """Where a GET's answer is kept for its next `If-None-Match` (None: not a GET)."""
        if method.upper() != "GET":
            return None
        query = "&".join(f"{k}={v}" for k, v in sorted((params or {}).items()))
        return (self._installation, url, query, accept or "")

    def _keep_etag(self, key: tuple[str, str, str, str], raw: httpx.Response) -> None:
        etag = raw.headers.get("etag")
        if raw.status_code != 200 or not etag or len(raw.content) > _ETAG_MAX_BYTES:
            self._etags.pop(key, None)
            return
        self._etags[key] = (etag, raw)
        self._etags.move_to_end(key)
        while len(self._etags) > _ETAG_ENTRIES:
            self._etags.popitem(last=False)

    def _slot(
        self, method: str, url: str
    ) -> AbstractContextManager[Callable[[int, Mapping[str, str], str], None]]:
        """The planner's go-ahead for one request of the installation being served."""
        content = budget.is_content_creation(method, url)
        priority = budget.current_priority()
        if content and priority == "work":
            priority = "content"
        resource = "graphql" if url == self.settings.graphql_url else "core"
        return self.planner.request(
            budget.Request(self._installation, resource, priority, content=content)
        )

    def _observe(self, url: str, response: httpx.Response | None) -> None:
        """Report one request to CALL_OBSERVERS (nothing to do when there are none)."""
        if not CALL_OBSERVERS:
            return
        _notify(
            CallRecord(
                installation=self._installation,
                api="graphql" if url == self.settings.graphql_url else "rest",
                status="error" if response is None else str(response.status_code),
                rate_limit=None if response is None else rate_limit_of(response.headers),
            )
        )

    def _installation_of(self, repo: str | None, authorization: str) -> str:
        """The installation whose token `_authorization(repo)` just returned, as
        CallRecord.installation names it. Never makes a request: the repository's
        installation is cached by then, and a call naming no repository (a node-id
        mutation) is known by its token, when that token served a repository before."""
        if not isinstance(self.auth, AppAuth):
            return "token"
        key = hash(authorization)  # the token itself is not kept here
        if repo is None:
            return self._token_installations.get(key, "unknown")
        try:
            label = str(self.auth.installation_id(repo, self._auth_http))
        except Exception:  # only a label: never a reason to fail the call
            return "unknown"
        if len(self._token_installations) >= _NODE_MEMORY:
            self._token_installations.clear()
        self._token_installations[key] = label
        return label

    def _http_error(self, response: httpx.Response) -> GitHubError:
        status = response.status_code
        message = error_message(response)
        # Without the query: a log's storage URL is signed there, and errors reach logs,
        # the store and the dashboard.
        method, url = response.request.method, str(response.request.url.copy_with(query=None))
        limited, wait = rate_limit_wait(status, response.headers, message, self._clock())
        if limited:
            return RateLimited(status, message, retry_after=wait, method=method, url=url)
        if status == 404:
            return NotFound(status, message, method=method, url=url)
        if status >= 500:
            return ServerError(status, message, method=method, url=url)
        return GitHubError(status, message, method=method, url=url)

    def _authorization(self, repo: str | None) -> str:
        return self.auth.authorization(repo, self._auth_http)

    def _auth_http(self, method: str, path: str, *, authorization: str) -> Any:
        """Calls made for auth itself (installation lookup, token minting, GET /app).

        Minting a token twice is harmless, so these are retried like reads.
        """
        previous, self._installation = self._installation, "app"
        try:
            response = self._retrier.call(
                lambda: self._exchange(method, path, authorization=authorization), mutation=False
            )
        finally:
            self._installation = previous
        return response.json()

    def _call(
        self,
        attempt: Callable[[str], T],
        *,
        repo: str | None,
        mutation: bool,
        repeatable: bool = False,
    ) -> T:
        """Run `attempt(authorization)` under the policy; once more with fresh auth after a 401."""
        authorization = self._authorization(repo)
        self._installation = self._installation_of(repo, authorization)
        if mutation:
            self._pace_mutation()
        guarded = mutation and not repeatable
        try:
            try:
                return self._retrier.call(lambda: attempt(authorization), mutation=guarded)
            except GitHubError as exc:
                # A 401 means GitHub did nothing; an App token may have been revoked or the
                # App reinstalled: forget it and try once with a fresh one.
                if exc.status != 401 or not self.auth.invalidate(repo):
                    raise
                authorization = self._authorization(repo)
                self._installation = self._installation_of(repo, authorization)
                return self._retrier.call(lambda: attempt(authorization), mutation=guarded)
        finally:
            if mutation:
                self._last_mutation = self._clock()

    def _pace_mutation(self) -> None:
        if self._last_mutation is None or self.mutation_gap <= 0:
            return
        wait = self._last_mutation + self.mutation_gap - self._clock()
        if wait > 0:
            self._sleep(wait)

    def _rest(
        self,
        method: str,
        path: str,
        *,
        repo: str | None,
        params: dict[str, Any] | None = None,
        json: Any = None,
        repeatable: bool = False,
        missing_ok: bool = False,
    ) -> Any:
        """One REST call; its JSON (None for no content, or for a 404 when `missing_ok`).

        `missing_ok` covers this request only: a 404 met while resolving auth (the App is not
        installed) still raises.
        """
        mutation = method.upper() in {"POST", "PATCH", "PUT", "DELETE"}

        def attempt(authz: str) -> httpx.Response | None:
            try:
                return self._exchange(method, path, authorization=authz, params=params, json=json)
            except NotFound:
                if missing_ok:
                    return None
                raise

        response = self._call(attempt, repo=repo, mutation=mutation, repeatable=repeatable)
        if response is None or response.status_code == 204 or not response.content:
            return None
        return response.json()

    def _paginate(
        self,
        repo: str,
        path: str,
        params: dict[str, Any],
        *,
        key: str | None,
        max_pages: int | None = None,
    ) -> list[Any]:
        """Every item of a REST list, following `Link: rel="next"` (per_page=100), or the
        first `max_pages` pages of it."""
        import httpx

        api = httpx.URL(self.settings.api_url)
        url: str = path
        page_params: dict[str, Any] | None = {**params, "per_page": PER_PAGE}
        seen: set[str] = set()
        items: list[Any] = []
        while True:

            def get_page(authz: str, u: str = url, p: Any = page_params) -> httpx.Response:
                return self._exchange("GET", u, authorization=authz, params=p)

            response = self._call(get_page, repo=repo, mutation=False)
            body = response.json()
            page = body if key is None else (body or {}).get(key)
            if not isinstance(page, list):
                raise GitHubError(
                    response.status_code,
                    f"unexpected answer to GET {response.request.url}: no list"
                    + (f" under {key!r}" if key else ""),
                )
            items.extend(page)
            next_url = response.links.get("next", {}).get("url")
            if not next_url or (max_pages is not None and len(seen) + 1 >= max_pages):
                return items
            target = httpx.URL(next_url)
            # The token goes with the request: never follow a next link to another host.
            if (target.scheme, target.host, target.port) != (api.scheme, api.host, api.port):
                raise GitHubError(
                    response.status_code, f"refusing a next-page link to another host: {target}"
                )
            if next_url in seen:
                raise GitHubError(response.status_code, f"next-page links loop at {next_url}")
            seen.add(next_url)
            url, page_params = next_url, None

    def _graphql(self, name: str, variables: dict[str, Any], *, repo: str | None) -> Any:
        """Run queries/<name>.graphql; the `data` object, or an error for any `errors`."""
        data, _ = self._run_graphql(name, documents.document(name), variables, repo, False)
        return data

    def _graphql_partial(
        self, name: str, text: str, variables: dict[str, Any], repo: str | None
    ) -> tuple[dict[str, Any], dict[str, str]]:
        """Run a batched query: its `data`, and the messages of the errors whose path starts
        at an alias, by alias (those aliases' data is null; the rest stands). Any other
        error (a rate limit, a bad document) is raised as by `_graphql`."""
        return self._run_graphql(name, text, variables, repo, True)

    def _run_graphql(
        self,
        name: str,
        text: str,
        variables: dict[str, Any],
        repo: str | None,
        partial_ok: bool,
    ) -> tuple[dict[str, Any], dict[str, str]]:
        mutation = documents.is_mutation(text)
        url = self.settings.graphql_url

        def attempt(authorization: str) -> tuple[dict[str, Any], dict[str, str]]:
            response = self._exchange(
                "POST",
                url,
                authorization=authorization,
                json={"query": text, "variables": variables},
            )
            body = response.json()
            errors = body.get("errors") if isinstance(body, dict) else None
            by_alias: dict[str, str] = {}
            if errors:
                errors = [e if isinstance(e, dict) else {"message": str(e)} for e in errors]
                types = {str(e.get("type")) for e in errors}
                if types & {"RATE_LIMITED", "RATE_LIMIT"}:
                    raise RateLimited(
                        response.status_code,
                        "; ".join(str(e.get("message", "")) for e in errors),
                        retry_after=reset_wait(response.headers, self._clock()),
                        method="POST",
                        url=url,
                    )
                data = body.get("data") if isinstance(body, dict) else None
                by_alias, others = _alias_errors(errors, data) if partial_ok else ({}, errors)
                if others:
                    if "NOT_FOUND" in types:
                        raise NotFound(
                            response.status_code,
                            "; ".join(str(e.get("message", "")) for e in errors),
                            method="POST",
                            url=url,
                        )
                    raise GraphQLError(errors, data=data, method="POST", url=url)
            data = body.get("data") if isinstance(body, dict) else None
            if not isinstance(data, dict):
                raise GitHubError(response.status_code, f"GraphQL {name}: no data in the answer")
            return data, by_alias

        return self._call(attempt, repo=repo, mutation=mutation)

    @contextmanager
    def _job_log(self, repo: str, job_id: int, chunk_size: int | None) -> Iterator[Iterator[bytes]]:
        path = f"{repo_path(repo)}/actions/jobs/{int(job_id)}/logs"
        with ExitStack() as keep:
            response = self._call(
                lambda authz: self._open_log(path, authz, keep), repo=repo, mutation=False
            )
            yield _chunks(response, chunk_size)

    def _open_log(self, path: str, authorization: str, keep: ExitStack) -> httpx.Response:
        """One attempt: ask the API (no redirect following), then open the log stream."""
        import httpx

        with ExitStack() as attempt:
            client = attempt.enter_context(self._github().get_sync_client())
            request = client.build_request("GET", path, headers=self._headers(authorization))
            with self._slot("GET", path) as answered:
                self.calls += 1
                try:
                    response = client.send(request, stream=True, follow_redirects=False)
                except httpx.TransportError as exc:
                    self._observe(path, None)
                    raise network_error(exc, "GET", str(request.url)) from exc
                self._observe(path, response)  # the API's answer (the redirect), not the download
                answered(response.status_code, response.headers, "")
            attempt.callback(response.close)
            if response.is_redirect and "location" in response.headers:
                target = urljoin(str(request.url), response.headers["location"])
                response.close()
                download = self._downloader()
                plain = download.build_request("GET", target)  # no Authorization: not ours
                try:
                    log_response = download.send(plain, stream=True)
                except httpx.TransportError as exc:
                    raise network_error(exc, "GET", target) from exc
                attempt.callback(log_response.close)
                response = log_response
            if response.is_error:
                response.read()
                raise self._http_error(response)
            keep.enter_context(attempt.pop_all())
            return response

    def _downloader(self) -> httpx.Client:
        """A plain httpx client for log downloads: no base URL, no credentials."""
        if self._download is None:
            import httpx

            self._download = httpx.Client(
                timeout=self._timeout,
                verify=client_context(),
                follow_redirects=True,
                headers={"User-Agent": USER_AGENT},
            )
        return self._download

    def _remember(self, node_id: str, repo: str) -> None:
        if not node_id:
            return
        if len(self._node_repos) >= _NODE_MEMORY:
            self._node_repos.clear()
        self._node_repos[node_id] = repo

    def _repo_of(self, node_id: str, repo: str | None) -> str | None:
        """The repository a node-id call is for (App auth picks the installation by it)."""
        return repo if repo is not None else self._node_repos.get(node_id)

    def _parse(self, build: Callable[[Any], T], value: Any, what: str) -> T:
        try:
            return build(value)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise GitHubError(
                200, f"unexpected {what} object from GitHub (missing or bad {exc})"
            ) from None


def _alias_errors(
    errors: list[dict[str, Any]], data: Any
) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """The errors of a batched query that belong to one alias (their path starts with it,
    and its data is null), their messages by alias; and the other errors (no one
    repository's: the caller raises them)."""
    by_alias: dict[str, str] = {}
    others: list[dict[str, Any]] = []
    for e in errors:
        path = e.get("path")
        alias = path[0] if isinstance(path, list) and path else None
        if not isinstance(alias, str) or not isinstance(data, dict) or data.get(alias) is not None:
            others.append(e)
            continue
        message = str(e.get("message", ""))
        by_alias[alias] = f"{by_alias[alias]}; {message}" if alias in by_alias else message
    return by_alias, others


def _annotation_batches(output: CheckOutput | None) -> list[tuple[Annotation, ...]]:
    """The output's annotations in requests of at most 50 (one empty batch when none)."""
    notes = output.annotations if output is not None else ()
    step = ANNOTATIONS_PER_REQUEST
    return [notes[i : i + step] for i in range(0, len(notes), step)] or [()]


def _check_run_body(
    output: CheckOutput | None, **fields: str | None
) -> tuple[dict[str, Any], list[tuple[Annotation, ...]]]:
    """A check run's create or update body (the fields given, with the output and its first
    50 annotations), and the annotations' batches: the rest go in later PATCHes."""
    body: dict[str, Any] = {k: v for k, v in fields.items() if v is not None}
    batches = _annotation_batches(output)
    if output is not None:
        body["output"] = _output_json(output, batches[0])
    return body, batches


def _output_json(output: CheckOutput, annotations: tuple[Annotation, ...]) -> dict[str, Any]:
    body: dict[str, Any] = {"title": output.title, "summary": output.summary}
    if output.text is not None:
        body["text"] = output.text
    if annotations:
        body["annotations"] = [_annotation_json(a) for a in annotations]
    return body


def _annotation_json(a: Annotation) -> dict[str, Any]:
    # end_line is required by GitHub; None in the model means "the start line".
    body: dict[str, Any] = {
        "path": a.path,
        "start_line": a.start_line,
        "end_line": a.end_line if a.end_line is not None else a.start_line,
        "annotation_level": a.annotation_level,
        "message": a.message,
    }
    if a.title:
        body["title"] = a.title
    return body


def _chunks(response: httpx.Response, chunk_size: int | None) -> Iterator[bytes]:
    import httpx

    try:
        yield from response.iter_bytes(chunk_size)
    except httpx.TransportError as exc:
        raise NetworkError(
            f"the log download broke off: {exc!r}",
            may_have_sent=True,
            method="GET",
            url=str(response.request.url),
        ) from exc


def network_error(exc: BaseException, method: str, url: str) -> NetworkError:
    """A transport failure; `may_have_sent` is False only when no connection was made."""
    import httpx

    never_sent = isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout | httpx.PoolTimeout)
    kind = "timed out" if isinstance(exc, httpx.TimeoutException) else "failed"
    return NetworkError(
        f"request {kind}: {exc!r}", may_have_sent=not never_sent, method=method, url=url
    )


def error_message(response: httpx.Response) -> str:
    """GitHub's `message` field, or the start of the body."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and body.get("message"):
        return str(body["message"])
    text = response.text.strip().splitlines()
    return text[0][:200] if text else response.reason_phrase or "error"


def already_queued(exc: GraphQLError) -> bool:
    """GitHub's answer to enqueueing a PR that is already queued (observed wording)."""
    return any("already in the queue" in str(e.get("message", "")).lower() for e in exc.errors)
