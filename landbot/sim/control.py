"""A small HTTP API to drive the model of a fake GitHub running as its own process.

`python -m landbot.sim serve` keeps its state in memory; tests that run it (and landbot)
as subprocesses build scenarios and drive the queue through these `/_fake/...` routes.
They need no credential and are never counted among GitHub requests.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import asdict
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from landbot.sim.faults import Fault, Faults, RequestLog
from landbot.sim.model import FakeGitHub, FakeGitHubError
from landbot.sim.scenarios import CheckScenario, ScenarioError

Handler = Callable[[FakeGitHub, dict[str, Any], dict[str, Any]], Any]


def _routes(gh: FakeGitHub, requests: RequestLog, faults: Faults) -> list[tuple[str, str, Handler]]:
    def state(gh: FakeGitHub, p: dict[str, Any], body: dict[str, Any]) -> Any:
        return gh.summary()

    def create_repo(gh: FakeGitHub, p: dict[str, Any], body: dict[str, Any]) -> Any:
        repo = gh.create_repo(
            body["full_name"],
            files=body.get("files"),
            default_branch=body.get("default_branch", "main"),
            private=body.get("private", False),
            merge_queue=body.get("merge_queue", True),
        )
        return {
            "full_name": repo.full_name,
            "default_branch": repo.default_branch,
            "git_url": gh.git_url,
        }

    def repo_of(p: dict[str, Any]) -> Any:
        return gh.repo(f"{p['owner']}/{p['repo']}")

    def open_pull(gh: FakeGitHub, p: dict[str, Any], body: dict[str, Any]) -> Any:
        pr = gh.open_pull_request(
            repo_of(p),
            head=body["head"],
            base=body.get("base"),
            files=body.get("files"),
            title=body.get("title"),
            body=body.get("body", ""),
            author=body.get("author", "octocat"),
            labels=body.get("labels", ()),
            fork=body.get("fork"),
            maintainer_can_modify=body.get("maintainer_can_modify", True),
        )
        return {"number": pr.number, "node_id": pr.node_id, "head_sha": pr.head_sha}

    def push(gh: FakeGitHub, p: dict[str, Any], body: dict[str, Any]) -> Any:
        sha = gh.push(
            repo_of(p),
            body["branch"],
            body.get("files", {}),
            message=body.get("message", "Update"),
            author=body.get("author"),
        )
        return {"sha": sha}

    def collaborator(gh: FakeGitHub, p: dict[str, Any], body: dict[str, Any]) -> Any:
        gh.add_collaborator(repo_of(p), body["login"], body.get("role", "write"))
        return {"ok": True}

    def checks(gh: FakeGitHub, p: dict[str, Any], body: dict[str, Any]) -> Any:
        scenario = CheckScenario.from_dict(body.get("scenario", {}))
        gh.set_checks(
            repo_of(p), scenario, sha=body.get("sha"), pr=body.get("pr"), event=body.get("event")
        )
        return {"ok": True}

    def enqueue(gh: FakeGitHub, p: dict[str, Any], body: dict[str, Any]) -> Any:
        pr = gh.pull(repo_of(p), int(p["number"]))
        entry = gh.enqueue(pr, actor=body.get("actor", pr.author))
        return {"entry": entry.node_id}

    def comment(gh: FakeGitHub, p: dict[str, Any], body: dict[str, Any]) -> Any:
        c = gh.add_comment(
            repo_of(p), int(p["number"]), body["body"], author=body.get("author", "octocat")
        )
        return {"id": c.id, "node_id": c.node_id}

    def run_queue(gh: FakeGitHub, p: dict[str, Any], body: dict[str, Any]) -> Any:
        repo = gh.repo(body["repo"]) if body.get("repo") else None
        return [asdict(s) for s in gh.run_queue(repo)]

    def advance(gh: FakeGitHub, p: dict[str, Any], body: dict[str, Any]) -> Any:
        return {"now": gh.clock.advance(seconds=float(body.get("seconds", 0))).isoformat()}

    def deliveries(gh: FakeGitHub, p: dict[str, Any], body: dict[str, Any]) -> Any:
        return [
            {
                "event": d.event,
                "action": d.action,
                "guid": d.guid,
                "payload": d.payload,
                "status": d.status,
            }
            for d in gh.deliveries
        ]

    def counts(gh: FakeGitHub, p: dict[str, Any], body: dict[str, Any]) -> Any:
        return {
            "total": requests.total,
            "routes": dict(requests.counts()),
            "operations": dict(requests.operations()),
        }

    def reset_counts(gh: FakeGitHub, p: dict[str, Any], body: dict[str, Any]) -> Any:
        requests.reset()
        return {"ok": True}

    def add_fault(gh: FakeGitHub, p: dict[str, Any], body: dict[str, Any]) -> Any:
        kind = body.pop("kind", "fail")
        kinds: dict[str, Callable[..., Fault]] = {
            "fail": faults.fail,
            "secondary_rate_limit": faults.secondary_rate_limit,
            "too_many_requests": faults.too_many_requests,
            "primary_rate_limit": faults.primary_rate_limit,
            "graphql_rate_limited": faults.graphql_rate_limited,
        }
        method = kinds.get(kind)
        if method is None:
            raise ValueError(f"unknown fault kind {kind!r}")
        fault = method(**body)
        return {"route": fault.route, "status": fault.status, "times": fault.remaining}

    def token(gh: FakeGitHub, p: dict[str, Any], body: dict[str, Any]) -> Any:
        return {"token": gh.create_token(body["login"], value=body.get("token"))}

    return [
        ("GET", "/_fake/state", state),
        ("POST", "/_fake/repos", create_repo),
        ("POST", "/_fake/repos/{owner}/{repo}/pulls", open_pull),
        ("POST", "/_fake/repos/{owner}/{repo}/push", push),
        ("POST", "/_fake/repos/{owner}/{repo}/collaborators", collaborator),
        ("POST", "/_fake/repos/{owner}/{repo}/checks", checks),
        ("POST", "/_fake/repos/{owner}/{repo}/pulls/{number}/enqueue", enqueue),
        ("POST", "/_fake/repos/{owner}/{repo}/pulls/{number}/comments", comment),
        ("POST", "/_fake/queue/run", run_queue),
        ("POST", "/_fake/clock/advance", advance),
        ("GET", "/_fake/deliveries", deliveries),
        ("GET", "/_fake/requests", counts),
        ("POST", "/_fake/requests/reset", reset_counts),
        ("POST", "/_fake/faults", add_fault),
        ("POST", "/_fake/tokens", token),
    ]


def control_routes(gh: FakeGitHub, requests: RequestLog, faults: Faults) -> list[Route]:
    def endpoint(handler: Handler) -> Callable[[Request], Awaitable[Response]]:
        async def handle(request: Request) -> Response:
            raw = await request.body()
            try:
                body = json.loads(raw) if raw else {}
                if not isinstance(body, dict):
                    raise ValueError("the body must be a JSON object")
                result = handler(gh, dict(request.path_params), body)
            except FakeGitHubError as exc:
                return JSONResponse({"error": exc.message}, status_code=exc.status)
            except (KeyError, TypeError, ValueError, ScenarioError) as exc:
                return JSONResponse({"error": f"{type(exc).__name__}: {exc}"}, status_code=400)
            return JSONResponse(result)

        return handle

    return [
        Route(path, endpoint(handler), methods=[method])
        for method, path, handler in _routes(gh, requests, faults)
    ]
