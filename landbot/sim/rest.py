"""GitHub's REST routes that landbot calls, answered from the model.

Each handler takes a `Call` (who is calling, path parameters, query, body) and returns a
Starlette response. Route templates use the parameter names of GitHub's REST docs; the
same template string names the route in request counts and failure injection.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlencode

from starlette.datastructures import URL, Headers, QueryParams
from starlette.responses import JSONResponse, RedirectResponse, Response

from landbot.sim import git, payloads
from landbot.sim.auth import Caller
from landbot.sim.graphql_api import answer_and_cost
from landbot.sim.graphql_resolvers import Context
from landbot.sim.ids import iso
from landbot.sim.model import WRITE_ROLES, FakeGitHub, Forbidden, NotFound, Unprocessable
from landbot.sim.state import ACTIONS_APP_ID, ApiAnnotation, App, CheckRun, Repository

DOCS = "https://docs.github.com/rest"
LOG_URL_LIFETIME = 60  # seconds, like GitHub's signed log URLs
_SHA = re.compile(r"^[0-9a-f]{40}$")


class BadRequest(Exception):
    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


@dataclass
class Call:
    gh: FakeGitHub
    caller: Caller | None
    params: dict[str, str]
    query: QueryParams
    headers: Headers
    body: bytes
    url: URL
    blob_secret: bytes
    blob_url: str | None = None  # the "storage host" serving signed log URLs

    def json(self) -> Any:
        if not self.body:
            return {}
        try:
            return json.loads(self.body)
        except ValueError:
            raise BadRequest("Problems parsing JSON") from None

    @property
    def login(self) -> str:
        assert self.caller is not None
        return self.caller.login

    def repo(self) -> Repository:
        full = f"{self.params['owner']}/{self.params['repo']}"
        repo = self.gh.repos.get(full.lower())
        token = self.caller.token if self.caller else None
        if repo is None or (token is not None and not self.gh.can_access(token, repo)):
            raise NotFound("Not Found")
        return repo

    def int_param(self, name: str) -> int:
        try:
            return int(self.params[name])
        except ValueError:
            raise NotFound("Not Found") from None


def error(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(
        {"message": message, "documentation_url": DOCS, "status": str(status)},
        status_code=status,
        headers=headers,
    )


def paginate(
    call: Call, items: Sequence[Any], default: int = 30
) -> tuple[Sequence[Any], dict[str, str]]:
    """One page of `items` and GitHub's Link header (first/prev/next/last)."""
    try:
        per_page = max(1, min(100, int(call.query.get("per_page", default))))
        page = max(1, int(call.query.get("page", 1)))
    except ValueError:
        raise BadRequest("Invalid request: per_page and page must be integers", 422) from None
    last = max(1, -(-len(items) // per_page))
    chunk = items[(page - 1) * per_page : page * per_page]
    rels: list[str] = []

    def link(n: int, rel: str) -> None:
        rels.append(f'<{call.url.include_query_params(page=n, per_page=per_page)}>; rel="{rel}"')

    if page > 1:
        link(page - 1, "prev")
    if page < last:
        link(page + 1, "next")
        link(last, "last")
    if page > 1:
        link(1, "first")
    return chunk, ({"link": ", ".join(rels)} if rels else {})


# --- repositories and pull requests -------------------------------------------------------


def get_repo(call: Call) -> Response:
    return JSONResponse(payloads.repo_json(call.gh, call.repo()))


def get_pull(call: Call) -> Response:
    pr = call.repo().pulls.get(call.int_param("pull_number"))
    if pr is None:
        raise NotFound("Not Found")
    return JSONResponse(payloads.pull_request_json(call.gh, pr))


# --- checks and Actions -------------------------------------------------------------------


def _resolve_ref(repo: Repository, ref: str) -> str:
    git_dir = repo.require_git()
    if _SHA.match(ref):
        sha = git.rev_parse(git_dir, ref)
    else:
        sha = (
            git.rev_parse(git_dir, f"refs/heads/{ref}")
            or git.rev_parse(git_dir, f"refs/tags/{ref}")
            or git.rev_parse(git_dir, ref if ref.startswith("refs/") else f"refs/{ref}")
        )
    if sha is None:
        raise Unprocessable(f"No commit found for SHA: {ref}")
    return sha


def list_check_runs(call: Call) -> Response:
    repo = call.repo()
    ref = call.params["ref"]
    runs = call.gh.check_runs_for(repo, ref) if _SHA.match(ref) else []
    # A sha with check runs exists; anything else is resolved by git (branch, tag, sha).
    sha = ref if runs else _resolve_ref(repo, ref)
    runs = sorted(runs or call.gh.check_runs_for(repo, sha), key=lambda c: c.id, reverse=True)
    if call.query.get("filter", "latest") == "latest":
        seen: set[str] = set()
        latest = []
        for run in runs:
            if run.name not in seen:
                seen.add(run.name)
                latest.append(run)
        runs = latest
    if "check_name" in call.query:
        runs = [r for r in runs if r.name == call.query["check_name"]]
    if "status" in call.query:
        runs = [r for r in runs if r.status == call.query["status"]]
    if "app_id" in call.query:
        runs = [r for r in runs if str(r.app_id) == call.query["app_id"]]
    page, headers = paginate(call, runs)
    body = {
        "total_count": len(runs),
        "check_runs": [payloads.check_run_json(call.gh, repo, r) for r in page],
    }
    return JSONResponse(body, headers=headers)


# --- check runs an App writes -------------------------------------------------------------

# GitHub's limits on a check run's output (the request schema says the same).
MAX_ANNOTATIONS = 50
MAX_OUTPUT_TEXT = 65535
# Contents: "1 MB or smaller: all features"; 1-100 MB: `object`/`raw` only; more: refused.
CONTENT_INLINE_MAX = 1024 * 1024
CONTENT_MAX = 100 * 1024 * 1024
RAW_TYPES = ("application/vnd.github.raw", "application/vnd.github.v3.raw")


def _caller_app(call: Call) -> App | None:
    """The App behind an installation token; None for a personal token."""
    token = call.caller.token if call.caller else None
    if token is None or token.installation_id is None:
        return None
    inst = call.gh.installations.get(token.installation_id)
    return call.gh.apps.get(inst.app_id) if inst is not None else None


def _app_may(app: App, permission: str, level: str) -> bool:
    held = app.permissions.get(permission)
    return held == "write" or (level == "read" and held == "read")


def _checks_writer(call: Call) -> tuple[App | None, int]:
    """The App writing check runs and its id: GitHub takes them from Apps only, with checks:
    write (None, Actions' id: a personal token standing in for a GITHUB_TOKEN, when the
    model allows it)."""
    app = _caller_app(call)
    if app is None:
        if call.gh.tokens_write_checks_as_actions:
            return None, ACTIONS_APP_ID
        raise Forbidden("You must authenticate via a GitHub App.")
    if not _app_may(app, "checks", "write"):
        raise Forbidden("Resource not accessible by integration")
    return app, app.id


def _validation_error(exc: Exception) -> BadRequest:
    """GitHub's 422 for a body its schema refuses, naming the first offending field."""
    from pydantic import ValidationError

    if isinstance(exc, ValidationError) and exc.errors():
        # pydantic reports each arm of a field's union (`Missing[...]` is UNSET | value);
        # the arm naming the value's own problem is the deepest one not about UNSET.
        errors = [e for e in exc.errors() if "UNSET" not in e["msg"]] or exc.errors()
        first = max(errors, key=lambda e: len(e["loc"]))
        loc = [str(p) for p in first["loc"] if not str(p).startswith(("literal[", "list["))]
        where = "/".join(p for p in loc if not p.startswith("ReposOwner"))
        return BadRequest(f"Invalid request.\n\nFor 'properties/{where}': {first['msg']}.", 422)
    return BadRequest(f"Invalid request.\n\n{exc}", 422)


def _check_body(data: Any, kinds: tuple[type[Any], type[Any]], *, completed: bool) -> Any:
    """`data` validated against githubkit's generated request models (GitHub's OpenAPI
    description): the first when the run is completed, the second otherwise."""
    from pydantic import ValidationError

    if not isinstance(data, dict):
        raise BadRequest("Invalid request.\n\nThe body is not a JSON object.", 422)
    model = kinds[0] if completed else kinds[1]
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise _validation_error(exc) from None


def _annotations(output: Any) -> list[ApiAnnotation]:
    if not isinstance(output, dict):
        return []
    out: list[ApiAnnotation] = []
    for i, a in enumerate(output.get("annotations") or []):
        start, end = a["start_line"], a["end_line"]
        if start < 1 or end < start:
            raise BadRequest(
                f"Invalid request.\n\nFor 'properties/output/annotations/{i}': start_line "
                f"{start} and end_line {end}: lines start at 1 and end_line is not before "
                "start_line.",
                422,
            )
        columns = a.get("start_column") is not None or a.get("end_column") is not None
        if columns and start != end:
            raise BadRequest(
                f"Invalid request.\n\nFor 'properties/output/annotations/{i}': start_column "
                "and end_column are only supported on a single line (start_line == end_line).",
                422,
            )
        out.append(
            ApiAnnotation(
                path=a["path"],
                start_line=start,
                end_line=end,
                annotation_level=a["annotation_level"],
                message=a["message"],
                title=a.get("title"),
                raw_details=a.get("raw_details"),
                start_column=a.get("start_column"),
                end_column=a.get("end_column"),
            )
        )
    return out


def _output_fields(output: Any) -> dict[str, Any]:
    if not isinstance(output, dict):
        return {}
    return {
        "title": output.get("title"),
        "summary": output.get("summary"),
        "text": output.get("text"),
        "annotations": _annotations(output),
    }


def create_check_run(call: Call) -> Response:
    from githubkit_schemas.latest.models import (
        ReposOwnerRepoCheckRunsPostBodyOneof0,
        ReposOwnerRepoCheckRunsPostBodyOneof1,
    )

    repo = call.repo()
    app, _ = _checks_writer(call)
    data = call.json()
    # Oneof0 is the completed run (a conclusion required); Oneof1 any other status, where
    # a conclusion alone also completes the run.
    completed = isinstance(data, dict) and data.get("status") == "completed"
    _check_body(
        data,
        (ReposOwnerRepoCheckRunsPostBodyOneof0, ReposOwnerRepoCheckRunsPostBodyOneof1),
        completed=completed,
    )
    head_sha = str(data["head_sha"])
    if not _SHA.match(head_sha) or git.rev_parse(repo.require_git(), head_sha) is None:
        raise Unprocessable(f"No commit found for SHA: {head_sha}")
    run = call.gh.create_check_run(
        repo,
        app,
        name=str(data["name"]),
        head_sha=head_sha,
        status=data.get("status"),
        conclusion=data.get("conclusion"),
        external_id=data.get("external_id"),
        details_url=data.get("details_url"),
        **_output_fields(data.get("output")),
    )
    return JSONResponse(payloads.check_run_json(call.gh, repo, run), status_code=201)


def _check_run(call: Call, repo: Repository) -> CheckRun:
    run = call.gh.check_runs.get(call.int_param("check_run_id"))
    if run is None or run.repo != repo.full_name:
        raise NotFound("Not Found")
    return run


def get_check_run(call: Call) -> Response:
    repo = call.repo()
    return JSONResponse(payloads.check_run_json(call.gh, repo, _check_run(call, repo)))


def update_check_run(call: Call) -> Response:
    from githubkit_schemas.latest.models import (
        ReposOwnerRepoCheckRunsCheckRunIdPatchBodyAnyof0,
        ReposOwnerRepoCheckRunsCheckRunIdPatchBodyAnyof1,
    )

    repo = call.repo()
    _, app_id = _checks_writer(call)
    run = _check_run(call, repo)
    if run.app_id != app_id:
        raise Forbidden("Resource not accessible by integration")  # another App's run
    data = call.json()
    # Oneof0 is the completed run (a conclusion required); Oneof1 any other status, where
    # a conclusion alone also completes the run.
    completed = isinstance(data, dict) and data.get("status") == "completed"
    _check_body(
        data,
        (
            ReposOwnerRepoCheckRunsCheckRunIdPatchBodyAnyof0,
            ReposOwnerRepoCheckRunsCheckRunIdPatchBodyAnyof1,
        ),
        completed=completed,
    )
    fields = _output_fields(data.get("output"))
    updated = call.gh.update_check_run(
        run,
        name=data.get("name"),
        status=data.get("status"),
        conclusion=data.get("conclusion"),
        external_id=data.get("external_id"),
        details_url=data.get("details_url"),
        **fields,
    )
    return JSONResponse(payloads.check_run_json(call.gh, repo, updated))


def list_annotations(call: Call) -> Response:
    repo = call.repo()
    run = call.gh.check_runs.get(call.int_param("check_run_id"))
    if run is None or run.repo != repo.full_name:
        raise NotFound("Not Found")
    page, headers = paginate(call, payloads.annotation_json(call.gh, repo, run))
    return JSONResponse(list(page), headers=headers)


def _run_message(repo: Repository, sha: str) -> str:
    return git.commit_message(repo.require_git(), sha)


def list_runs(call: Call) -> Response:
    repo = call.repo()
    runs = [r for r in call.gh.workflow_runs.values() if r.repo == repo.full_name]
    q = call.query
    if "event" in q:
        runs = [r for r in runs if r.event == q["event"]]
    if "head_sha" in q:
        runs = [r for r in runs if r.head_sha == q["head_sha"]]
    if "branch" in q:
        runs = [r for r in runs if r.head_branch == q["branch"]]
    if "status" in q:
        wanted = q["status"]
        runs = [r for r in runs if wanted in (r.status, r.conclusion)]
    runs.sort(key=lambda r: r.id, reverse=True)
    page, headers = paginate(call, runs)
    listed = [
        payloads.workflow_run_json(call.gh, repo, r, message=_run_message(repo, r.head_sha))
        for r in page
    ]
    if q.get("exclude_pull_requests") == "true":
        for run in listed:
            run["pull_requests"] = []  # as GitHub: the list is left out of the answer
    body = {"total_count": len(runs), "workflow_runs": listed}
    return JSONResponse(body, headers=headers)


def _run(call: Call, repo: Repository) -> Any:
    run = call.gh.workflow_runs.get(call.int_param("run_id"))
    if run is None or run.repo != repo.full_name:
        raise NotFound("Not Found")
    return run


def get_run(call: Call) -> Response:
    repo = call.repo()
    run = _run(call, repo)
    return JSONResponse(
        payloads.workflow_run_json(call.gh, repo, run, message=_run_message(repo, run.head_sha))
    )


def list_jobs(call: Call) -> Response:
    repo = call.repo()
    run = _run(call, repo)
    jobs = [call.gh.jobs[j] for j in run.job_ids]
    page, headers = paginate(call, jobs)
    body = {"total_count": len(jobs), "jobs": [payloads.job_json(call.gh, repo, j) for j in page]}
    return JSONResponse(body, headers=headers)


def _job(call: Call, repo: Repository) -> Any:
    job = call.gh.jobs.get(call.int_param("job_id"))
    if job is None or job.repo != repo.full_name:
        raise NotFound("Not Found")
    return job


def get_job(call: Call) -> Response:
    repo = call.repo()
    return JSONResponse(payloads.job_json(call.gh, repo, _job(call, repo)))


def sign_blob(secret: bytes, job_id: int, expires: int) -> str:
    return hmac.new(secret, f"job-logs:{job_id}:{expires}".encode(), hashlib.sha256).hexdigest()


def job_logs(call: Call) -> Response:
    """302 to a signed plain-text URL on the 'storage host' (another port of this server).

    Being another origin, as on GitHub, an HTTP client that follows the redirect drops the
    Authorization header by itself; one that re-sends it is refused.
    """
    repo = call.repo()
    job = _job(call, repo)
    if job.status != "completed":
        raise NotFound("Not Found")
    expires = int(time.time()) + LOG_URL_LIFETIME
    sig = sign_blob(call.blob_secret, job.id, expires)
    base = call.blob_url or str(call.url.replace(path="", query="", fragment="")).rstrip("/")
    location = f"{base}/_blobs/job-logs/{job.id}?se={expires}&sig={sig}"
    return RedirectResponse(location, status_code=302)


def _storage_error(status: int, code: str, message: str) -> Response:
    body = (
        '<?xml version="1.0" encoding="utf-8"?><Error>'
        f"<Code>{code}</Code><Message>{message}</Message></Error>"
    )
    return Response(body, status_code=status, media_type="application/xml")


def blob_job_log(call: Call) -> Response:
    """The signed log URL. Like the real storage host it refuses an Authorization header."""
    if "authorization" in call.headers:
        return _storage_error(
            403,
            "AuthenticationFailed",
            "Server failed to authenticate the request: an Authorization header is not "
            "allowed with a signed URL.",
        )
    try:
        job_id = int(call.params["job_id"])
        expires = int(call.query.get("se", "0"))
    except ValueError:
        return _storage_error(403, "AuthenticationFailed", "Signature fields not well formed.")
    sig = call.query.get("sig", "")
    if not hmac.compare_digest(sig, sign_blob(call.blob_secret, job_id, expires)):
        return _storage_error(403, "AuthenticationFailed", "Signature did not match.")
    if expires < time.time():
        return _storage_error(403, "AuthenticationFailed", "Signed expiry time has passed.")
    job = call.gh.jobs.get(job_id)
    if job is None:
        return _storage_error(404, "BlobNotFound", "The specified blob does not exist.")
    return Response(job.log.encode("utf-8"), media_type="text/plain; charset=utf-8")


# --- branches and contents ----------------------------------------------------------------


def _reader_may(call: Call, permission: str) -> None:
    app = _caller_app(call)
    if app is not None and not _app_may(app, permission, "read"):
        raise Forbidden("Resource not accessible by integration")


def get_branch(call: Call) -> Response:
    repo = call.repo()
    name = call.params["branch"]
    sha = repo.known_refs.get(f"refs/heads/{name}")
    if sha is None:
        raise NotFound("Branch not found")
    info = git.commit_info(repo.require_git(), sha)
    return JSONResponse(payloads.branch_json(call.gh, repo, name, info))


def get_contents(call: Call) -> Response:
    """A file, a folder's listing, a symlink or a submodule at `ref` (the default branch
    when none), read from the repository's git with `git ls-tree` / `git cat-file`."""
    repo = call.repo()
    _reader_may(call, "contents")
    git_dir = repo.require_git()
    ref = call.query.get("ref") or repo.default_branch
    try:
        commit = _resolve_ref(repo, ref)
    except Unprocessable:
        raise NotFound(f"No commit found for the ref {ref}") from None
    path = call.params.get("path", "").strip("/")
    entry = git.tree_entry(git_dir, commit, path)
    if entry is None:
        raise NotFound("Not Found")
    raw = any(t in call.headers.get("accept", "") for t in RAW_TYPES)
    if entry.mode == "120000":
        target = git.read_blob(git_dir, entry.sha).decode("utf-8", "surrogateescape")
        base = path.rsplit("/", 1)[0] if "/" in path else ""
        resolved = _normalize(f"{base}/{target}" if base else target)
        pointed = git.tree_entry(git_dir, commit, resolved) if resolved is not None else None
        if pointed is not None and pointed.kind == "blob" and pointed.mode != "120000":
            entry = pointed  # "the API responds with the content of the file"
        else:
            if raw:
                return Response(target.encode(), media_type="application/vnd.github.raw+json")
            body = payloads.content_entry_json(call.gh, repo, entry, ref, "symlink")
            body["target"] = target
            return JSONResponse(body)
    if entry.kind == "tree":
        items = [
            payloads.content_entry_json(call.gh, repo, e, ref, _content_kind(e))
            for e in git.tree_entries(git_dir, commit, path)
        ]
        return JSONResponse(items)
    if entry.kind == "commit":
        body = payloads.content_entry_json(call.gh, repo, entry, ref, "submodule")
        body["submodule_git_url"] = None  # the simulation keeps no .gitmodules URL
        return JSONResponse(body)
    size = entry.size or 0
    if size > CONTENT_MAX:
        raise Forbidden(
            "This API returns blobs up to 100 MB in size. The requested blob is too large "
            "to fetch via the API."
        )
    data = git.read_blob(git_dir, entry.sha)
    if raw:
        return Response(data, media_type="application/vnd.github.raw+json")
    inline = data if size <= CONTENT_INLINE_MAX else None
    return JSONResponse(payloads.content_file_json(call.gh, repo, entry, ref, inline))


def _normalize(path: str) -> str | None:
    """A repository-relative path with . and .. resolved; None when it leaves the tree."""
    parts: list[str] = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not parts:
                return None
            parts.pop()
        else:
            parts.append(part)
    return "/".join(parts)


def _content_kind(entry: git.TreeEntry) -> str:
    if entry.kind == "tree":
        return "dir"
    if entry.kind == "commit":
        return "submodule"
    return "symlink" if entry.mode == "120000" else "file"


# --- labels -------------------------------------------------------------------------------


def _issue(call: Call, repo: Repository) -> Any:
    pr = repo.pulls.get(call.int_param("issue_number"))
    if pr is None:
        raise NotFound("Not Found")
    return pr


def _label_writer(call: Call, repo: Repository) -> str:
    """Who labels: an App with issues or pull_requests write, or a user with triage or more."""
    app = _caller_app(call)
    if app is not None:
        if not (_app_may(app, "issues", "write") or _app_may(app, "pull_requests", "write")):
            raise Forbidden("Resource not accessible by integration")
        return app.bot_login
    if call.gh.permission(repo, call.login) not in (*WRITE_ROLES, "triage"):
        raise Forbidden("Must have admin rights to Repository.")
    return call.login


def _labels_json(call: Call, repo: Repository, pr: Any) -> list[Any]:
    return [payloads.label_json(call.gh, repo, n) for n in pr.labels]


def list_labels(call: Call) -> Response:
    repo = call.repo()
    pr = _issue(call, repo)
    page, headers = paginate(call, _labels_json(call, repo, pr))
    return JSONResponse(list(page), headers=headers)


def add_labels(call: Call) -> Response:
    """`{"labels": [names]}` (or a bare list, or `[{"name": …}]`, as GitHub takes)."""
    repo = call.repo()
    pr = _issue(call, repo)
    actor = _label_writer(call, repo)
    data = call.json()
    names = data.get("labels") if isinstance(data, dict) else data
    if not isinstance(names, list) or not names:
        raise BadRequest('Invalid request.\n\nNo subschema in "anyOf" matched.', 422)
    for item in names:
        name = item.get("name") if isinstance(item, dict) else item
        if not isinstance(name, str) or not name.strip():
            raise BadRequest("Validation Failed: a label name must be a non-empty string", 422)
        if len(name) > 50:
            raise BadRequest("Validation Failed: name is too long (maximum is 50 characters)", 422)
        call.gh.add_label(pr, name, actor=actor)
    return JSONResponse(_labels_json(call, repo, pr))


def remove_label(call: Call) -> Response:
    repo = call.repo()
    pr = _issue(call, repo)
    actor = _label_writer(call, repo)
    if not call.gh.remove_label(pr, call.params["name"], actor=actor):
        raise NotFound("Label does not exist")
    return JSONResponse(_labels_json(call, repo, pr))


# --- issues (not pull requests) ---------------------------------------------------------

# GitHub's limits on an issue's title and body.
MAX_ISSUE_TITLE = 256
MAX_ISSUE_BODY = 65536


def _issue_writer(call: Call, repo: Repository) -> str:
    """Who writes issues: an App with issues: write, or a user with triage or more (anyone
    may open one on a public repository; the model keeps it to collaborators)."""
    app = _caller_app(call)
    if app is not None:
        if not _app_may(app, "issues", "write"):
            raise Forbidden("Resource not accessible by integration")
        return app.bot_login
    if call.gh.permission(repo, call.login) == "none":
        raise Forbidden("Must have push access to Repository.")
    return call.login


def _issue_body(call: Call, model: type[Any]) -> dict[str, Any]:
    """The body, validated against githubkit's generated request model, then GitHub's
    lengths (which the schema does not carry)."""
    from pydantic import ValidationError

    data = call.json()
    if not isinstance(data, dict):
        raise BadRequest("Invalid request.\n\nThe body is not a JSON object.", 422)
    try:
        model.model_validate(data)
    except ValidationError as exc:
        raise _validation_error(exc) from None
    title = data.get("title")
    if isinstance(title, str) and not (0 < len(title) <= MAX_ISSUE_TITLE):
        raise BadRequest("Validation Failed: title is empty or too long", 422)
    body = data.get("body")
    if isinstance(body, str) and len(body) > MAX_ISSUE_BODY:
        raise BadRequest("Validation Failed: body is too long (maximum is 65536 characters)", 422)
    return data


def _label_names(data: dict[str, Any]) -> list[str]:
    names: list[str] = []
    for item in data.get("labels") or []:
        name = item.get("name") if isinstance(item, dict) else item
        if not isinstance(name, str) or not name.strip() or len(name) > 50:
            raise BadRequest("Validation Failed: a label name must be 1 to 50 characters", 422)
        names.append(name)
    return names


def create_issue(call: Call) -> Response:
    from githubkit_schemas.latest.models import ReposOwnerRepoIssuesPostBody

    repo = call.repo()
    author = _issue_writer(call, repo)
    data = _issue_body(call, ReposOwnerRepoIssuesPostBody)
    if not isinstance(data.get("title"), str):  # the schema takes a number too
        raise BadRequest("Validation Failed: title must be a string", 422)
    issue = call.gh.create_issue(
        repo,
        str(data["title"]),
        str(data.get("body") or ""),
        author=author,
        labels=_label_names(data),
    )
    return JSONResponse(payloads.plain_issue_json(call.gh, repo, issue), status_code=201)


def get_issue(call: Call) -> Response:
    repo = call.repo()
    number = call.int_param("issue_number")
    issue = repo.issues.get(number)
    if issue is not None:
        return JSONResponse(payloads.plain_issue_json(call.gh, repo, issue))
    pr = repo.pulls.get(number)
    if pr is None:
        raise NotFound("Not Found")
    return JSONResponse(payloads.issue_json(call.gh, pr))


def update_issue(call: Call) -> Response:
    from githubkit_schemas.latest.models import ReposOwnerRepoIssuesIssueNumberPatchBody

    repo = call.repo()
    issue = repo.issues.get(call.int_param("issue_number"))
    if issue is None:
        raise NotFound("Not Found")  # the model edits issues only, not pull requests
    actor = _issue_writer(call, repo)
    data = _issue_body(call, ReposOwnerRepoIssuesIssueNumberPatchBody)
    title = data.get("title")
    state = data.get("state")
    reason = data.get("state_reason")
    updated = call.gh.edit_issue(
        issue,
        actor=actor,
        title=str(title) if title is not None else None,
        body=data.get("body") if isinstance(data.get("body"), str) else None,
        state=state if isinstance(state, str) else None,
        state_reason=reason if isinstance(reason, str) else None,
    )
    return JSONResponse(payloads.plain_issue_json(call.gh, repo, updated))


def list_issues(call: Call) -> Response:
    """Issues and pull requests, as GitHub lists them: `state` (open), `labels` (each of a
    comma-separated list), `creator`, `sort` created|updated, `direction` (desc)."""
    repo = call.repo()
    q = call.query
    state = q.get("state", "open")
    if state not in ("open", "closed", "all"):
        raise BadRequest("Validation Failed: state must be open, closed or all", 422)
    wanted = [w.strip().lower() for w in q.get("labels", "").split(",") if w.strip()]
    creator = q.get("creator", "").lower()
    everything: list[Any] = [*repo.issues.values(), *repo.pulls.values()]
    chosen = [
        obj
        for obj in everything
        if state in ("all", obj.state)
        and all(w in [n.lower() for n in obj.labels] for w in wanted)
        and (not creator or str(obj.author).lower() == creator)
    ]
    field = "updated_at" if q.get("sort") == "updated" else "created_at"
    chosen.sort(key=lambda o: (getattr(o, field), o.number), reverse=q.get("direction") != "asc")
    page, headers = paginate(call, chosen)
    body = [
        payloads.issue_json(call.gh, o)
        if o.number in repo.pulls
        else payloads.plain_issue_json(call.gh, repo, o)
        for o in page
    ]
    return JSONResponse(body, headers=headers)


# --- comments and reactions ---------------------------------------------------------------


def list_comments(call: Call) -> Response:
    repo = call.repo()
    number = call.int_param("issue_number")
    if number not in repo.pulls and number not in repo.issues:  # a PR's, or an issue's
        raise NotFound("Not Found")
    comments = call.gh.comments_on(repo, number)
    page, headers = paginate(call, comments)
    return JSONResponse([payloads.comment_json(call.gh, repo, c) for c in page], headers=headers)


def _body_text(call: Call) -> str:
    data = call.json()
    body = data.get("body") if isinstance(data, dict) else None
    if not isinstance(body, str):
        raise BadRequest('Invalid request.\n\n"body" wasn\'t supplied.', 422)
    if len(body) > 65536:
        raise BadRequest("Validation Failed: body is too long (maximum is 65536 characters)", 422)
    return body


def create_comment(call: Call) -> Response:
    repo = call.repo()
    number = call.int_param("issue_number")
    if number not in repo.pulls and number not in repo.issues:  # a PR's, or an issue's
        raise NotFound("Not Found")
    comment = call.gh.add_comment(repo, number, _body_text(call), author=call.login)
    return JSONResponse(payloads.comment_json(call.gh, repo, comment), status_code=201)


def _comment(call: Call, repo: Repository) -> Any:
    comment = call.gh.comments.get(call.int_param("comment_id"))
    if comment is None or comment.repo != repo.full_name:
        raise NotFound("Not Found")
    return comment


def get_comment(call: Call) -> Response:
    repo = call.repo()
    return JSONResponse(payloads.comment_json(call.gh, repo, _comment(call, repo)))


def update_comment(call: Call) -> Response:
    repo = call.repo()
    comment = _comment(call, repo)
    if comment.author != call.login and call.gh.permission(repo, call.login) not in WRITE_ROLES:
        raise Forbidden("Resource not accessible by integration")
    updated = call.gh.edit_comment(comment.id, _body_text(call), editor=call.login)
    return JSONResponse(payloads.comment_json(call.gh, repo, updated))


def list_reactions(call: Call) -> Response:
    repo = call.repo()
    comment = _comment(call, repo)
    reactions = [r for r in comment.reactions if call.query.get("content") in (None, r.content)]
    page, headers = paginate(call, reactions)
    return JSONResponse([payloads.reaction_json(call.gh, r) for r in page], headers=headers)


def create_reaction(call: Call) -> Response:
    repo = call.repo()
    comment = _comment(call, repo)
    data = call.json()
    content = data.get("content") if isinstance(data, dict) else None
    if not isinstance(content, str):
        raise BadRequest('Invalid request.\n\n"content" wasn\'t supplied.', 422)
    reaction, created = call.gh.add_reaction(comment.id, content, user=call.login)
    return JSONResponse(
        payloads.reaction_json(call.gh, reaction), status_code=201 if created else 200
    )


def collaborator_permission(call: Call) -> Response:
    repo = call.repo()
    login = call.params["username"]
    user = call.gh.known_user(login)
    if user is None:
        raise NotFound(f"{login} is not a user")
    role = call.gh.permission(repo, user.login)
    return JSONResponse(payloads.collaborator_permission_json(call.gh, repo, user.login, role))


# --- the App ------------------------------------------------------------------------------


def repo_installation(call: Call) -> Response:
    assert call.caller is not None and call.caller.app is not None
    full = f"{call.params['owner']}/{call.params['repo']}"
    repo = call.gh.repos.get(full.lower())
    app = call.caller.app
    inst = next(
        (
            i
            for i in call.gh.installations.values()
            if i.app_id == app.id and repo is not None and i.covers(repo.full_name)
        ),
        None,
    )
    if inst is None:
        raise NotFound("Not Found")
    return JSONResponse(payloads.installation_json(call.gh, inst, app))


def create_installation_token(call: Call) -> Response:
    assert call.caller is not None and call.caller.app is not None
    inst = call.gh.installations.get(call.int_param("installation_id"))
    if inst is None or inst.app_id != call.caller.app.id:
        raise NotFound("Not Found")
    token = call.gh.mint_installation_token(inst.id)
    body = {
        "token": token.value,
        "expires_at": iso(token.expires_at),
        "permissions": dict(call.caller.app.permissions),
        "repository_selection": inst.repository_selection,
    }
    return JSONResponse(body, status_code=201)


def get_app(call: Call) -> Response:
    assert call.caller is not None and call.caller.app is not None
    return JSONResponse(payloads.app_json(call.gh, call.caller.app))


# --- the App manifest flow -------------------------------------------------------------
# GitHub's web form (POST /settings/apps/new, or an organization's) registers an App from a
# manifest and redirects the browser to the manifest's redirect_url with a one-time code;
# POST /app-manifests/{code}/conversions (no credential: the code is one) trades it once,
# within an hour, for the App with its id, private key and webhook secret. The simulator
# serves the form on its API address (point the flow's web URL at the server).

MANIFEST_CODE_LIFETIME = 3600  # seconds, as GitHub documents
MANIFEST_SIGNED_IN = "landbot-dev"  # who is signed in to the simulated web form


@dataclass
class _Registered:
    app_id: int
    webhook_secret: str | None
    client_secret: str
    expires: float


_MANIFEST_CODES: weakref.WeakKeyDictionary[FakeGitHub, dict[str, _Registered]] = (
    weakref.WeakKeyDictionary()
)


def register_from_manifest(gh: FakeGitHub, manifest: Any, owner: str) -> str:
    """Register an App from `manifest` as GitHub's form does for `owner`; the one-time code."""
    if not isinstance(manifest, dict):
        raise BadRequest("Invalid manifest: not a JSON object", 422)
    name = manifest.get("name")
    url = manifest.get("url")
    if not isinstance(url, str) or not url.startswith(("https://", "http://")):
        raise BadRequest("Invalid manifest: url is required (the App's homepage)", 422)
    hook = manifest.get("hook_attributes") or {}
    if hook.get("active", True) and not hook.get("url"):
        raise BadRequest("Invalid manifest: hook_attributes.url is required", 422)
    slug = re.sub(r"[^a-z0-9]+", "-", str(name or "").lower()).strip("-")
    if not slug or gh.app_by_slug(slug) is not None:
        raise BadRequest(f"Invalid manifest: the name {name!r} is taken or empty", 422)
    app = gh.create_app(slug, name=str(name), owner=owner)
    app.permissions = {
        str(k): str(v) for k, v in (manifest.get("default_permissions") or {}).items()
    }
    app.events = [str(e) for e in manifest.get("default_events") or []]
    code = secrets.token_hex(10)
    _MANIFEST_CODES.setdefault(gh, {})[code] = _Registered(
        app_id=app.id,
        webhook_secret=secrets.token_hex(20) if hook.get("url") else None,
        client_secret=secrets.token_hex(20),
        expires=time.time() + MANIFEST_CODE_LIFETIME,
    )
    return code


def new_app_form(call: Call) -> Response:
    """The web form's POST: register, then send the browser to redirect_url?code=&state=."""
    form = parse_qs(call.body.decode("utf-8", "replace"))
    try:
        manifest = json.loads(form.get("manifest", [""])[0])
    except ValueError:
        raise BadRequest("Invalid manifest: not JSON", 422) from None
    owner = call.params.get("org") or MANIFEST_SIGNED_IN
    code = register_from_manifest(call.gh, manifest, owner)
    redirect = manifest.get("redirect_url")
    if not isinstance(redirect, str) or not redirect:
        # GitHub shows the new App's page instead; the code is then lost to the flow.
        return JSONResponse({"message": "registered; no redirect_url"}, status_code=201)
    query = urlencode({"code": code, "state": call.query.get("state", "")})
    return RedirectResponse(f"{redirect}{'&' if '?' in redirect else '?'}{query}", 302)


def manifest_conversion(call: Call) -> Response:
    pending = _MANIFEST_CODES.get(call.gh, {}).pop(call.params["code"], None)
    if pending is None or pending.expires < time.time():
        raise NotFound("Not Found")
    app = call.gh.apps[pending.app_id]
    body = payloads.app_json(call.gh, app)
    assert app.private_key_pem is not None  # create_app made the key
    body.update(
        client_secret=pending.client_secret,
        webhook_secret=pending.webhook_secret,
        pem=app.private_key_pem.decode(),
    )
    return JSONResponse(body, status_code=201)


def get_user(call: Call) -> Response:
    assert call.caller is not None and call.caller.token is not None
    if call.caller.token.installation_id is not None:
        raise Forbidden("Resource not accessible by integration")
    return JSONResponse(payloads.private_user_json(call.gh, call.login))


def graphql(call: Call) -> Response:
    assert call.caller is not None and call.caller.token is not None
    try:
        body = json.loads(call.body or b"null")
    except ValueError:
        raise BadRequest("Problems parsing JSON") from None
    ctx = Context(call.gh, call.caller.token.login, call.caller.token.installation_id)
    data, points = answer_and_cost(call.gh, ctx, body)
    # The server charges these points against the graphql budget and drops the header.
    return JSONResponse(data, headers={COST_HEADER: str(points)})


# How the GraphQL handler tells the server its answer's cost (not sent to the client).
COST_HEADER = "x-landbot-sim-cost"


@dataclass(frozen=True)
class RouteSpec:
    method: str
    template: str  # as in GitHub's REST docs
    handler: Callable[[Call], Response]
    auth: str = "token"  # "token", "jwt" (the App's own routes) or "none"
    resource: str = "core"

    @property
    def key(self) -> str:
        return f"{self.method} {self.template}"

    @property
    def starlette_path(self) -> str:
        # A ref, branch, file path or label name may contain slashes (feature/x).
        path = self.template
        for name in ("ref", "branch", "path", "name"):
            path = path.replace(f"{{{name}}}", f"{{{name}:path}}")
        return path


ROUTES: tuple[RouteSpec, ...] = (
    RouteSpec("POST", "/graphql", graphql, resource="graphql"),
    RouteSpec("GET", "/repos/{owner}/{repo}", get_repo),
    RouteSpec("GET", "/repos/{owner}/{repo}/pulls/{pull_number}", get_pull),
    RouteSpec("GET", "/repos/{owner}/{repo}/commits/{ref}/check-runs", list_check_runs),
    RouteSpec(
        "GET", "/repos/{owner}/{repo}/check-runs/{check_run_id}/annotations", list_annotations
    ),
    RouteSpec("POST", "/repos/{owner}/{repo}/check-runs", create_check_run),
    RouteSpec("GET", "/repos/{owner}/{repo}/check-runs/{check_run_id}", get_check_run),
    RouteSpec("PATCH", "/repos/{owner}/{repo}/check-runs/{check_run_id}", update_check_run),
    RouteSpec("GET", "/repos/{owner}/{repo}/branches/{branch}", get_branch),
    RouteSpec("GET", "/repos/{owner}/{repo}/contents/{path}", get_contents),
    RouteSpec("GET", "/repos/{owner}/{repo}/issues", list_issues),
    RouteSpec("POST", "/repos/{owner}/{repo}/issues", create_issue),
    RouteSpec("GET", "/repos/{owner}/{repo}/issues/{issue_number}", get_issue),
    RouteSpec("PATCH", "/repos/{owner}/{repo}/issues/{issue_number}", update_issue),
    RouteSpec("GET", "/repos/{owner}/{repo}/issues/{issue_number}/labels", list_labels),
    RouteSpec("POST", "/repos/{owner}/{repo}/issues/{issue_number}/labels", add_labels),
    RouteSpec("DELETE", "/repos/{owner}/{repo}/issues/{issue_number}/labels/{name}", remove_label),
    RouteSpec("GET", "/repos/{owner}/{repo}/actions/runs", list_runs),
    RouteSpec("GET", "/repos/{owner}/{repo}/actions/runs/{run_id}", get_run),
    RouteSpec("GET", "/repos/{owner}/{repo}/actions/runs/{run_id}/jobs", list_jobs),
    RouteSpec("GET", "/repos/{owner}/{repo}/actions/jobs/{job_id}", get_job),
    RouteSpec("GET", "/repos/{owner}/{repo}/actions/jobs/{job_id}/logs", job_logs),
    RouteSpec("GET", "/repos/{owner}/{repo}/issues/{issue_number}/comments", list_comments),
    RouteSpec("POST", "/repos/{owner}/{repo}/issues/{issue_number}/comments", create_comment),
    RouteSpec("GET", "/repos/{owner}/{repo}/issues/comments/{comment_id}", get_comment),
    RouteSpec("PATCH", "/repos/{owner}/{repo}/issues/comments/{comment_id}", update_comment),
    RouteSpec(
        "GET", "/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions", list_reactions
    ),
    RouteSpec(
        "POST", "/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions", create_reaction
    ),
    RouteSpec(
        "GET", "/repos/{owner}/{repo}/collaborators/{username}/permission", collaborator_permission
    ),
    RouteSpec("GET", "/repos/{owner}/{repo}/installation", repo_installation, auth="jwt"),
    RouteSpec(
        "POST",
        "/app/installations/{installation_id}/access_tokens",
        create_installation_token,
        auth="jwt",
    ),
    RouteSpec("GET", "/app", get_app, auth="jwt"),
    RouteSpec("GET", "/user", get_user),
    RouteSpec("POST", "/app-manifests/{code}/conversions", manifest_conversion, auth="none"),
    RouteSpec("POST", "/settings/apps/new", new_app_form, auth="none"),
    RouteSpec("POST", "/organizations/{org}/settings/apps/new", new_app_form, auth="none"),
    RouteSpec("GET", "/_blobs/job-logs/{job_id}", blob_job_log, auth="none"),
)
