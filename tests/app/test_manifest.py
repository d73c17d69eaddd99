"""The App manifest subscribes to exactly the events the intake handles, and asks for exactly
the permissions derived from the calls the code makes.

The derivation reads the code, not a list kept beside it: every REST path the GitHub client
builds (landbot/github/*.py, with the HTTP method of the call that sends it), every GraphQL
document's root fields (landbot/github/queries), every webhook event the intake handles,
and the git push of a fix. Each maps to the permission GitHub's docs name for it ("Permissions
required for GitHub Apps", each REST endpoint's "fine-grained access tokens" section, each
webhook event's "to subscribe" line). Where GitHub accepts either of two permissions (an
issue comment on a pull request: Issues or Pull requests, write), the one the App already
holds is enough. A call the tables do not know fails the test: a new endpoint must say what
it needs.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from graphql import OperationDefinitionNode, OperationType, parse
from graphql.language import FieldNode

import landbot
from landbot.errors import LandbotError
from landbot.github import documents
from landbot.intake.events import handled_events
from landbot.manifest import load, render

LANDBOT = str(Path(sys.executable).parent / "landbot")
PACKAGE = Path(landbot.__file__).parent
CLIENT_MODULES = sorted((PACKAGE / "github").glob("*.py"))

Need = tuple[tuple[str, str], ...]  # alternatives: any one of these (permission, level)
W = "write"
R = "read"

# REST: "METHOD path" (GitHub's path, placeholders normalized) -> what it needs. The App's
# own routes (JWT) and GET /user (a token's user, never an installation's) need none.
REST: dict[str, Need] = {
    "GET /repos/{owner}/{repo}/commits/{ref}/check-runs": (("checks", R),),
    "GET /repos/{owner}/{repo}/check-runs/{check_run_id}/annotations": (("checks", R),),
    # "To create a check run, you must use a GitHub App" with checks: write; the same to
    # update one (docs.github.com/rest/checks/runs).
    "POST /repos/{owner}/{repo}/check-runs": (("checks", W),),
    "PATCH /repos/{owner}/{repo}/check-runs/{check_run_id}": (("checks", W),),
    # Contents: "repository contents, commits, branches, …" (the app-permissions schema).
    "GET /repos/{owner}/{repo}/branches/{branch}": (("contents", R),),
    "GET /repos/{owner}/{repo}/contents/{path}": (("contents", R),),
    # Labels: Issues ("… labels, and milestones") or Pull requests ("… labels, milestones,
    # and merges"), write; on a pull request either will do.
    "POST /repos/{owner}/{repo}/issues/{issue_number}/labels": (
        ("issues", W),
        ("pull_requests", W),
    ),
    "DELETE /repos/{owner}/{repo}/issues/{issue_number}/labels/{name}": (
        ("issues", W),
        ("pull_requests", W),
    ),
    "GET /repos/{owner}/{repo}/actions/runs": (("actions", R),),
    "GET /repos/{owner}/{repo}/actions/runs/{run_id}/jobs": (("actions", R),),
    "GET /repos/{owner}/{repo}/actions/jobs/{job_id}": (("actions", R),),
    "GET /repos/{owner}/{repo}/actions/jobs/{job_id}/logs": (("actions", R),),
    # The actions fixer backend (docs.github.com/rest/actions/workflows, .../workflow-runs,
    # .../artifacts: "Actions" repository permissions, write to dispatch, read otherwise).
    "POST /repos/{owner}/{repo}/actions/workflows/{workflow_id}/dispatches": (("actions", W),),
    "GET /repos/{owner}/{repo}/actions/workflows/{workflow_id}/runs": (("actions", R),),
    "GET /repos/{owner}/{repo}/actions/runs/{run_id}": (("actions", R),),
    "GET /repos/{owner}/{repo}/actions/runs/{run_id}/artifacts": (("actions", R),),
    "GET /repos/{owner}/{repo}/actions/artifacts/{artifact_id}/zip": (("actions", R),),
    # A fix run past its deadline is cancelled (docs.github.com/rest/actions/workflow-runs
    # "Cancel a workflow run": "Actions" repository permissions (write)).
    "POST /repos/{owner}/{repo}/actions/runs/{run_id}/cancel": (("actions", W),),
    # Issues landbot keeps itself (a flaky test's, the breaker's): Issues, write to open,
    # edit and close one, read to list them or read one (docs.github.com/rest/issues/issues).
    "POST /repos/{owner}/{repo}/issues": (("issues", W),),
    "PATCH /repos/{owner}/{repo}/issues/{issue_number}": (("issues", W),),
    "GET /repos/{owner}/{repo}/issues": (("issues", R),),
    "GET /repos/{owner}/{repo}/issues/{issue_number}": (("issues", R), ("pull_requests", R)),
    "GET /repos/{owner}/{repo}/issues/{issue_number}/comments": (
        ("issues", R),
        ("pull_requests", R),
    ),
    "POST /repos/{owner}/{repo}/issues/{issue_number}/comments": (
        ("issues", W),
        ("pull_requests", W),
    ),
    "PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}": (
        ("issues", W),
        ("pull_requests", W),
    ),
    "POST /repos/{owner}/{repo}/issues/comments/{comment_id}/reactions": (
        ("issues", W),
        ("pull_requests", W),
    ),
    "GET /repos/{owner}/{repo}/collaborators/{username}/permission": (("metadata", R),),
    "GET /repos/{owner}/{repo}/installation": (),
    "GET /app/installations": (),
    "POST /app/installations/{installation_id}/access_tokens": (),
    "GET /app": (),
    "GET /user": (),
}
# GraphQL root fields: queries under `repository`, mutations at the root.
GRAPHQL: dict[str, Need] = {
    "query repository.pullRequest": (("pull_requests", R),),
    "query repository.pullRequests": (("pull_requests", R),),
    "query repository.mergeQueue": (("merge_queues", R),),
    # a commit's parents (the sweep's follow-up for a removal's beforeCommit: issue 28.2)
    "query repository.object": (("contents", R),),
    "mutation enqueuePullRequest": (("merge_queues", W),),
    "mutation dequeuePullRequest": (("merge_queues", W),),
    "mutation enablePullRequestAutoMerge": (("pull_requests", W),),
    "mutation minimizeComment": (("issues", W), ("pull_requests", W)),
}
EVENTS: dict[str, Need] = {
    "check_run": (("checks", R),),
    "push": (("contents", R),),
    "issue_comment": (("issues", R),),
    "merge_group": (("merge_queues", R),),
    "pull_request": (("pull_requests", R),),
    "workflow_run": (("actions", R),),
}
ALWAYS: Need = (("metadata", R),)  # every App has it
GIT_PUSH: Need = (("contents", W),)  # the fix's commits (a fetch needs contents: read)

# The client's senders: name -> (HTTP method or None for "the first argument", path arg).
SENDERS = {
    "_rest": (None, 1),
    "_auth_http": (None, 1),
    "http": (None, 1),
    "build_request": (None, 1),
    "_paginate": ("GET", 1),
    "_open_log": ("GET", 0),
}
_API_PATH = re.compile(r"^/(repos/\{owner\}/\{repo\}/|app\b|user\b)\S*$")


def _norm(path: str) -> str:
    return re.sub(r"\{[^}]*\}", "{}", path)


def _render(node: ast.expr) -> str | None:
    """A path expression as text: repo_path(repo) is /repos/{owner}/{repo}, the rest {}."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        out = ""
        for part in node.values:
            if isinstance(part, ast.Constant):
                out += str(part.value)
            elif isinstance(part, ast.FormattedValue):
                call = part.value
                named = isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
                repo = named and call.func.id == "repo_path"  # type: ignore[union-attr]
                out += "/repos/{owner}/{repo}" if repo else "{}"
        return out
    return None


def _paths_in(tree: ast.AST) -> set[str]:
    """Every whole API path written in a module (not the pieces of an f-string)."""
    inner = {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}
    found = set()
    for node in ast.walk(tree):
        if id(node) in inner or not isinstance(node, ast.Constant | ast.JoinedStr):
            continue
        text = _render(node)
        if text is not None and _API_PATH.match(text):
            found.add(_norm(text))
    return found


def rest_calls(sources: list[str] | None = None) -> tuple[set[str], set[str]]:
    """("METHOD path" sent by the client's senders, every API path written in the modules)."""
    sent: set[str] = set()
    written: set[str] = set()
    for source in sources if sources is not None else [m.read_text() for m in CLIENT_MODULES]:
        tree = ast.parse(source)
        written |= _paths_in(tree)
        for func in ast.walk(tree):
            if not isinstance(func, ast.FunctionDef):
                continue
            names = {
                t.id: n.value
                for n in ast.walk(func)
                if isinstance(n, ast.Assign)
                for t in n.targets
                if isinstance(t, ast.Name)
            }
            for call in ast.walk(func):
                if not isinstance(call, ast.Call):
                    continue
                f = call.func
                name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
                if name not in SENDERS:
                    continue
                fixed, index = SENDERS[name]
                arg = call.args[index] if len(call.args) > index else None
                if isinstance(arg, ast.Name):
                    arg = names.get(arg.id)
                path = _render(arg) if arg is not None else None
                if path is None or not _API_PATH.match(path):
                    continue  # a parameter (the caller's call is the one counted)
                method = fixed
                if method is None:
                    first = call.args[0]
                    assert isinstance(first, ast.Constant), ast.unparse(call)
                    method = str(first.value)
                sent.add(f"{method} {_norm(path)}")
    return sent, written


def graphql_fields() -> set[str]:
    out: set[str] = set()
    for name in documents.names():
        doc = parse(documents.document(name))
        for op in doc.definitions:
            if not isinstance(op, OperationDefinitionNode):
                continue
            for root in op.selection_set.selections:
                assert isinstance(root, FieldNode)
                if op.operation == OperationType.MUTATION:
                    out.add(f"mutation {root.name.value}")
                    continue
                assert root.name.value == "repository", name  # every query reads one repo
                assert root.selection_set is not None
                for field in root.selection_set.selections:
                    if isinstance(field, FieldNode) and field.name.value != "__typename":
                        out.add(f"query repository.{field.name.value}")
    return out


def pushes_commits() -> bool:
    text = (PACKAGE / "land" / "publish.py").read_text()
    return '"push",' in text


def derive(needs: list[Need]) -> dict[str, str]:
    """The least permissions meeting every need; alternatives met by what is held already."""
    rank = {R: 1, W: 2}
    held: dict[str, str] = {}

    def grant(perm: str, level: str) -> None:
        if rank[level] > rank.get(held.get(perm, ""), 0):
            held[perm] = level

    def met(perm: str, level: str) -> bool:
        return rank.get(held.get(perm, ""), 0) >= rank[level]

    for need in (n for n in needs if len(n) == 1):
        grant(*need[0])
    for need in (n for n in needs if len(n) > 1):
        if not any(met(*alt) for alt in need):
            grant(*need[0])
    return held


def _known(sent: set[str]) -> set[str]:
    table = {f"{k.split()[0]} {_norm(k.split()[1])}" for k in REST}
    return sent - table


def test_every_call_the_client_makes_is_known() -> None:
    sent, written = rest_calls()
    assert "GET /repos/{}/{}/actions/jobs/{}/logs" in sent  # the path passed on to _open_log
    assert "PATCH /repos/{}/{}/issues/comments/{}" in sent  # a method read from the call
    assert _known(sent) == set()
    # Nothing written escapes: every API path in the modules is sent by a sender we read.
    assert written == {s.split(" ", 1)[1] for s in sent}
    assert graphql_fields() <= set(GRAPHQL), graphql_fields() - set(GRAPHQL)
    assert handled_events() <= set(EVENTS)


def test_a_new_call_is_caught() -> None:
    # The control: one more endpoint in the client is seen, with its method, and unknown.
    new = (
        "def hooks(self, repo):\n"
        "    path = f'{repo_path(repo)}/hooks/{int(1)}'\n"
        "    return self._rest('DELETE', path, repo=repo)\n"
    )
    sources = [m.read_text() for m in CLIENT_MODULES]
    sent, written = rest_calls([*sources, new])
    assert _known(sent) == {"DELETE /repos/{}/{}/hooks/{}"}
    assert "/repos/{}/{}/hooks/{}" in written
    # A path written but sent by no sender we read is caught by the written == sent check.
    _, stray = rest_calls([*sources, "URL = f'{repo_path(r)}/pages'\n"])
    assert "/repos/{}/{}/pages" in stray


def test_permissions_are_derived_from_the_calls_the_code_makes() -> None:
    sent, _ = rest_calls()
    by_key = {f"{k.split()[0]} {_norm(k.split()[1])}": v for k, v in REST.items()}
    needs = [by_key[s] for s in sorted(sent)]
    needs += [GRAPHQL[f] for f in sorted(graphql_fields())]
    needs += [EVENTS[e] for e in sorted(handled_events())]
    needs.append(ALWAYS)
    assert pushes_commits()
    needs.append(GIT_PUSH)
    assert load()["default_permissions"] == derive([n for n in needs if n])


def test_derive_takes_the_alternative_already_held() -> None:
    both = (("issues", W), ("pull_requests", W))
    assert derive([both, (("pull_requests", W),)]) == {"pull_requests": W}
    assert derive([both]) == {"issues": W}  # the control: nothing held, the first is asked
    assert derive([(("checks", R),), (("checks", W),)]) == {"checks": W}


def test_events_are_derived_from_the_intake_handlers() -> None:
    assert set(load()["default_events"]) == handled_events()


def test_landbot_app_manifest_prints_the_operators_urls() -> None:
    out = subprocess.run(
        [LANDBOT, "app", "manifest", "--webhook-url", "https://bot.example.org/webhook"],
        capture_output=True,
        text=True,
        check=True,
    )
    data = json.loads(out.stdout)
    assert data["hook_attributes"] == {"url": "https://bot.example.org/webhook", "active": True}
    # The homepage is the operator's own server, never an App slug they do not own; a
    # printed manifest has no redirect_url (only `landbot app create` can take the code).
    assert data["url"] == "https://bot.example.org/"
    assert "redirect_url" not in data
    assert "/apps/" not in json.dumps(data)
    assert set(data["default_events"]) == handled_events()


def test_the_homepage_and_redirect_are_the_callers() -> None:
    data = render(
        "https://bot.example.org/webhook",
        url="https://github.com/octo-org/deploy",
        redirect_url="http://127.0.0.1:8400/callback",
    )
    assert data["url"] == "https://github.com/octo-org/deploy"
    assert data["redirect_url"] == "http://127.0.0.1:8400/callback"
    assert "redirect_url" not in load()  # the file itself names no one's redirect


def test_a_bad_url_is_refused() -> None:
    with pytest.raises(LandbotError, match="not a URL"):
        render("bot.example.org")
    with pytest.raises(LandbotError, match=r"--url 'github\.com/x' is not a URL"):
        render("https://bot.example.org/webhook", url="github.com/x")
