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
from landbot.sim.graphql_api import answer
from landbot.sim.graphql_resolvers import Context
from landbot.sim.ids import iso
from landbot.sim.model import WRITE_ROLES, FakeGitHub, Forbidden, NotFound, Unprocessable
from landbot.sim.state import Repository

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
    body = {
        "total_count": len(runs),
        "workflow_runs": [
            payloads.workflow_run_json(call.gh, repo, r, message=_run_message(repo, r.head_sha))
            for r in page
        ],
    }
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


# --- comments and reactions ---------------------------------------------------------------


def list_comments(call: Call) -> Response:
    repo = call.repo()
    number = call.int_param("issue_number")
    if number not in repo.pulls:
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
    if number not in repo.pulls:
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
    return JSONResponse(answer(call.gh, ctx, body))


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
        # A ref may contain slashes (feature/x).
        return self.template.replace("{ref}", "{ref:path}")


ROUTES: tuple[RouteSpec, ...] = (
    RouteSpec("POST", "/graphql", graphql, resource="graphql"),
    RouteSpec("GET", "/repos/{owner}/{repo}", get_repo),
    RouteSpec("GET", "/repos/{owner}/{repo}/pulls/{pull_number}", get_pull),
    RouteSpec("GET", "/repos/{owner}/{repo}/commits/{ref}/check-runs", list_check_runs),
    RouteSpec(
        "GET", "/repos/{owner}/{repo}/check-runs/{check_run_id}/annotations", list_annotations
    ),
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
