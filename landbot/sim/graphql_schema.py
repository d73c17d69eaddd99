"""GitHub's public GraphQL schema, loaded once, and validation answered as GitHub answers it.

The schema file is the one landbot ships (landbot/github/schema/github.graphql, from
@octokit/graphql-schema). Two quirks of GitHub's published SDL need care with graphql-core:
one type defines two fields twice (so the SDL check is skipped and the last definition
wins), and a dozen fields are deprecated on types but not on their interfaces (a newer
spec rule GitHub's own server does not apply), so the type-system check is recorded and
not enforced. Documents are validated with graphql-core's full set of spec rules.

Validation errors come back in GitHub's (graphql-ruby's) words and shape: HTTP 200,
`{"errors": [{"path", "extensions": {"code", ...}, "locations", "message"}]}`, no `data`.
"""

from __future__ import annotations

import copy
import functools
import re
from importlib import resources
from typing import Any

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    GraphQLSchema,
    InlineFragmentNode,
    Node,
    OperationDefinitionNode,
    SelectionSetNode,
    build_ast_schema,
    parse,
    validate,
    validate_schema,
)
from graphql.error import GraphQLSyntaxError

SCHEMA_PACKAGE = "landbot.github"
SCHEMA_FILE = "schema/github.graphql"


@functools.cache
def github_schema() -> GraphQLSchema:
    text = resources.files(SCHEMA_PACKAGE).joinpath(SCHEMA_FILE).read_text(encoding="utf-8")
    schema = build_ast_schema(parse(text, no_location=True), assume_valid_sdl=True)
    problems = validate_schema(schema)
    unexpected = [e for e in problems if "must not be deprecated" not in e.message]
    if unexpected:
        raise RuntimeError(f"GitHub's schema failed to load: {unexpected[0].message}")
    # Accept the deprecation mismatches (see the module docstring): mark it validated.
    schema._validation_errors = []
    return schema


def _location(err: GraphQLError) -> list[dict[str, int]]:
    return [{"line": loc.line, "column": loc.column} for loc in err.locations or []]


def _node_paths(document: DocumentNode) -> dict[int, list[str]]:
    """GitHub's `path` for each field and fragment node: e.g. ["query Q", "repository"]."""
    paths: dict[int, list[str]] = {}

    def walk(selections: SelectionSetNode | None, prefix: list[str]) -> None:
        if selections is None:
            return
        for sel in selections.selections:
            if isinstance(sel, FieldNode):
                path = [*prefix, sel.name.value]
                paths[id(sel)] = path
                for arg in sel.arguments or ():
                    paths[id(arg)] = [*path, arg.name.value]
                walk(sel.selection_set, path)
            elif isinstance(sel, InlineFragmentNode):
                cond = sel.type_condition.name.value if sel.type_condition else ""
                path = [*prefix, f"... on {cond}" if cond else "..."]
                paths[id(sel)] = path
                walk(sel.selection_set, path)
            elif isinstance(sel, FragmentSpreadNode):
                paths[id(sel)] = [*prefix, f"... {sel.name.value}"]

    for definition in document.definitions:
        if isinstance(definition, OperationDefinitionNode):
            name = definition.operation.value
            if definition.name is not None:
                name = f"{name} {definition.name.value}"
            paths[id(definition)] = [name]
            for var in definition.variable_definitions or ():
                paths[id(var)] = [name]
            walk(definition.selection_set, [name])
        elif isinstance(definition, FragmentDefinitionNode):
            name = f"fragment {definition.name.value}"
            paths[id(definition)] = [name]
            walk(definition.selection_set, [name])
    return paths


# graphql-core's message → graphql-ruby's message and extensions (what GitHub answers).
_RULES: list[tuple[re.Pattern[str], Any]] = [
    (
        re.compile(r"^Cannot query field '(?P<field>[^']+)' on type '(?P<type>[^']+)'"),
        lambda m: (
            f"Field '{m['field']}' doesn't exist on type '{m['type']}'",
            {"code": "undefinedField", "typeName": m["type"], "fieldName": m["field"]},
        ),
    ),
    (
        re.compile(
            r"^Unknown argument '(?P<arg>[^']+)' on field '(?P<type>[^'.]+)\.(?P<field>[^']+)'"
        ),
        lambda m: (
            f"Field '{m['field']}' doesn't accept argument '{m['arg']}'",
            {
                "code": "argumentNotAccepted",
                "name": m["field"],
                "typeName": "Field",
                "argumentName": m["arg"],
            },
        ),
    ),
    (
        re.compile(
            r"^Argument '(?P<type>[^'.]+)\.(?P<field>[^'(]+)\((?P<arg>[^':]+):\)' of type '[^']+' "
            r"is required, but it was not provided"
        ),
        lambda m: (
            f"Field '{m['field']}' is missing required arguments: {m['arg']}",
            {
                "code": "missingRequiredArguments",
                "className": "Field",
                "name": m["field"],
                "arguments": m["arg"],
            },
        ),
    ),
    (
        re.compile(
            r"^Expected value of type '(?P<type>[^']+)' not to include unknown field "
            r"'(?P<arg>[^']+)'"
        ),
        lambda m: (
            f"InputObject '{m['type']}' doesn't accept argument '{m['arg']}'",
            {
                "code": "argumentNotAccepted",
                "name": m["type"],
                "typeName": "InputObject",
                "argumentName": m["arg"],
            },
        ),
    ),
    (
        re.compile(
            r"^Expected value of type '(?P<type>[^']+)' to include required field '(?P<arg>[^']+)'"
        ),
        lambda m: (
            f"Argument '{m['arg']}' on InputObject '{m['type']}' is required",
            {
                "code": "missingRequiredInputObjectAttribute",
                "argumentName": m["arg"],
                "inputObjectType": m["type"],
            },
        ),
    ),
    (
        re.compile(r"^Variable '\$(?P<var>[^']+)' is never used in operation '(?P<op>[^']+)'"),
        lambda m: (
            f"Variable ${m['var']} is declared by {m['op']} but not used",
            {"code": "variableNotUsed", "variableName": m["var"]},
        ),
    ),
    (
        re.compile(r"^Variable '\$(?P<var>[^']+)' is not defined by operation '(?P<op>[^']+)'"),
        lambda m: (
            f"Variable ${m['var']} is used by {m['op']} but not declared",
            {"code": "variableNotDefined", "variableName": m["var"]},
        ),
    ),
    (
        re.compile(
            r"^Variable '\$(?P<var>[^']+)' of type '(?P<given>[^']+)' used in position "
            r"expecting type '(?P<want>[^']+)'"
        ),
        lambda m: (
            f"Type mismatch on variable ${m['var']} ({m['given']} / {m['want']})",
            {
                "code": "variableMismatch",
                "variableName": m["var"],
                "typeName": m["given"],
                "expectedTypeName": m["want"],
            },
        ),
    ),
    (
        re.compile(r"^Unknown type '(?P<type>[^']+)'"),
        lambda m: (
            f"{m['type']} isn't a defined input type",
            {"code": "variableRequiresValidType", "typeName": m["type"]},
        ),
    ),
    (
        re.compile(
            r"^Field '(?P<field>[^']+)' of type '(?P<type>[^']+)' must have a selection of "
            r"subfields"
        ),
        lambda m: (
            f"Field must have selections (field '{m['field']}' returns {m['type'].strip('[]!')} "
            f"but has no selections. Did you mean '{m['field']} {{ ... }}'?)",
            {
                "code": "selectionMismatch",
                "nodeName": f"field '{m['field']}'",
                "typeName": m["type"],
            },
        ),
    ),
    (
        re.compile(
            r"^Field '(?P<field>[^']+)' must not have a selection since type '(?P<type>[^']+)' "
            r"has no subfields"
        ),
        lambda m: (
            f"Selections can't be made on scalars (field '{m['field']}' returns "
            f"{m['type'].strip('[]!')} but has selections [...])",
            {
                "code": "selectionMismatch",
                "nodeName": f"field '{m['field']}'",
                "typeName": m["type"],
            },
        ),
    ),
]


def _github_error(err: GraphQLError, paths: dict[int, list[str]]) -> dict[str, Any]:
    message = err.message
    extensions: dict[str, Any] | None = None
    for pattern, convert in _RULES:
        match = pattern.match(message)
        if match is not None:
            message, extensions = convert(match)
            break
    out: dict[str, Any] = {}
    node: Node | None = err.nodes[0] if err.nodes else None
    if node is not None and id(node) in paths:
        out["path"] = paths[id(node)]
    if extensions is not None:
        out["extensions"] = extensions
    out["locations"] = _location(err)
    out["message"] = message
    return out


def syntax_error(err: GraphQLSyntaxError) -> dict[str, Any]:
    locations = _location(err)
    where = f" at [{locations[0]['line']}, {locations[0]['column']}]" if locations else ""
    return {"message": f"Parse error{where}: {err.message}", "locations": locations}


def parse_and_validate(query: str) -> tuple[DocumentNode | None, list[dict[str, Any]]]:
    """The parsed document, or GitHub-shaped errors (a syntax error, or validation errors)."""
    document, errors = _parsed(query)
    return document, copy.deepcopy(list(errors))


# A client sends the same few queries again and again; validating one against GitHub's
# schema costs about 5 ms. Executing a document never changes it, so one is shared.
@functools.lru_cache(maxsize=256)
def _parsed(query: str) -> tuple[DocumentNode | None, tuple[dict[str, Any], ...]]:
    document, errors = _parse_and_validate(query)
    return document, tuple(errors)


def _parse_and_validate(query: str) -> tuple[DocumentNode | None, list[dict[str, Any]]]:
    try:
        document = parse(query)
    except GraphQLSyntaxError as err:
        return None, [syntax_error(err)]
    errors = validate(github_schema(), document, hide_suggestions=True)
    if errors:
        paths = _node_paths(document)
        return None, [_github_error(e, paths) for e in errors]
    return document, []
