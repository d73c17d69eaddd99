"""`POST /graphql`: validate against GitHub's schema, then execute over the model.

Answers follow GitHub: a document that fails validation gets HTTP 200 with `errors` and no
`data`; a resolver error (NOT_FOUND, UNPROCESSABLE, FORBIDDEN...) comes back in `errors`
with a `type`, next to whatever `data` could be resolved.
"""

from __future__ import annotations

import re
from typing import Any

from graphql import ExecutionResult, GraphQLError, execute

from landbot.sim.graphql_cost import cost
from landbot.sim.graphql_resolvers import (
    Context,
    GraphQLFailure,
    Root,
    field_resolver,
    type_resolver,
)
from landbot.sim.graphql_schema import github_schema, parse_and_validate
from landbot.sim.model import FakeGitHub, FakeGitHubError

_OPERATION = re.compile(r"^\s*(?:#[^\n]*\n\s*)*(?:query|mutation)\s+([A-Za-z_][A-Za-z0-9_]*)")


def operation_name(body: Any) -> str | None:
    """The operation's name, for request counting (operationName, else the document's)."""
    if not isinstance(body, dict):
        return None
    name = body.get("operationName")
    if isinstance(name, str) and name:
        return name
    query = body.get("query")
    if isinstance(query, str):
        match = _OPERATION.match(query)
        if match:
            return match.group(1)
    return None


def _format(err: GraphQLError) -> dict[str, Any]:
    out: dict[str, Any] = {}
    message = err.message
    orig = err.original_error
    if isinstance(orig, GraphQLFailure):
        out["type"] = orig.type
    elif isinstance(orig, FakeGitHubError):
        out["type"] = orig.gql_type
    elif orig is not None:
        out["type"] = "INTERNAL"
        message = f"fake GitHub resolver failed: {type(orig).__name__}: {orig}"
    if err.path:
        out["path"] = list(err.path)
    if err.locations:
        out["locations"] = [{"line": loc.line, "column": loc.column} for loc in err.locations]
    out["message"] = message
    return out


def answer(gh: FakeGitHub, ctx: Context, body: Any) -> dict[str, Any]:
    """The JSON GitHub would send back for this request body (always HTTP 200)."""
    return answer_and_cost(gh, ctx, body)[0]


def answer_and_cost(gh: FakeGitHub, ctx: Context, body: Any) -> tuple[dict[str, Any], int]:
    """`answer`, and the points GitHub charges for it (graphql_cost.py; 1 for a document
    that is not run)."""
    if not isinstance(body, dict) or not isinstance(body.get("query"), str):
        return {
            "errors": [{"message": "A query attribute must be specified and must be a string."}]
        }, 1
    variables = body.get("variables") or {}
    if not isinstance(variables, dict):
        return {"errors": [{"message": "Variables are invalid JSON."}]}, 1
    document, errors = parse_and_validate(body["query"])
    if document is None:
        return {"errors": errors}, 1
    points = cost(document, variables, body.get("operationName") or None).points
    with gh.lock:
        result = execute(
            github_schema(),
            document,
            root_value=Root(ctx),
            variable_values=variables,
            operation_name=body.get("operationName") or None,
            field_resolver=field_resolver,
            type_resolver=type_resolver,
        )
    assert isinstance(result, ExecutionResult)  # every resolver is synchronous
    out: dict[str, Any] = {}
    if result.data is not None:
        out["data"] = result.data
    if result.errors:
        out["errors"] = [_format(e) for e in result.errors]
    return out, points
