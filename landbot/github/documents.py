"""The GraphQL documents of queries/*.graphql, loaded by name, and GitHub's public schema.

The schema (schema/github.graphql, from @octokit/graphql-schema) is what the tests validate
every document against; graphql-core is imported only by `load_schema`.
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from graphql import GraphQLSchema

_PACKAGE = "landbot.github"
# The first keyword after comments and whitespace says what the document is.
_OPERATION = re.compile(r"\A(?:\s|#[^\n]*\n)*(query|mutation|subscription)\b")


def names() -> list[str]:
    """Every document's name (file name without `.graphql`), sorted."""
    folder = resources.files(_PACKAGE).joinpath("queries")
    return sorted(
        entry.name.removesuffix(".graphql")
        for entry in folder.iterdir()
        if entry.name.endswith(".graphql")
    )


@cache
def document(name: str) -> str:
    """The text of queries/<name>.graphql."""
    path = resources.files(_PACKAGE).joinpath("queries", f"{name}.graphql")
    if not path.is_file():
        raise KeyError(f"no GraphQL document named {name!r} in landbot/github/queries")
    return path.read_text(encoding="utf-8")


# A batched document's one aliased line (`r0: repository(...) {...}`) and the per-alias
# variables of its header (`$owner0: String!`): `batched` repeats both for each alias.
_ALIAS_LINE = re.compile(r"^[ \t]*[a-z]+0: .*$", re.M)
_ALIAS_VARIABLE = re.compile(r"\$([A-Za-z]+)0: ([A-Za-z!\[\]]+)")
_ALIAS_NAME = re.compile(r"\b([A-Za-z]+)0\b")


def batched(name: str, count: int) -> str:
    """queries/<name>.graphql with its one aliased line repeated `count` times (aliases and
    their variables numbered 0 to count-1): several repositories in one query, each under
    its own alias, so one repository's error names its alias and spares the others."""
    if count < 1:
        raise ValueError(f"a batch of {count} aliases: ask for at least one")
    text = document(name)
    lines = _ALIAS_LINE.findall(text)
    if len(lines) != 1:
        raise ValueError(f"queries/{name}.graphql has no single aliased line ending in 0")
    [line] = lines
    header_end = text.index("{")
    header = _ALIAS_VARIABLE.sub(
        lambda m: ", ".join(f"${m[1]}{i}: {m[2]}" for i in range(count)), text[:header_end]
    )
    body = text[header_end:].replace(
        line, "\n".join(_ALIAS_NAME.sub(rf"\g<1>{i}", line) for i in range(count)), 1
    )
    return header + body


def is_mutation(text: str) -> bool:
    """Whether a document is a mutation (so a 5xx must not be retried blindly)."""
    match = _OPERATION.match(text)
    return bool(match and match.group(1) == "mutation")


def schema_sdl() -> str:
    return (
        resources.files(_PACKAGE).joinpath("schema", "github.graphql").read_text(encoding="utf-8")
    )


# GitHub's published SDL defines these two fields twice (copy-paste in GitHub's own schema
# dump); graphql-core rejects the file unless SDL validation is skipped. load_schema checks
# that these are the ONLY SDL errors before skipping it, so nothing else slips through.
# GitHub's schema also predates a newer type-system rule graphql-core 3.3 enforces (a field
# implementing a non-deprecated interface field must not be deprecated), which would make
# every `validate()` refuse the schema; the schema is therefore built as assumed valid, and
# tests/github/test_queries.py proves those are the only type-system errors.
KNOWN_TYPE_SYSTEM_ERROR = re.compile(
    r"Interface field \S+ is not deprecated, so implementation field \S+ must not be deprecated\."
)
KNOWN_SDL_ERRORS = frozenset(
    {
        "Field 'EnterpriseOwnerInfo.repositoryDeployKeySetting' can only be defined once.",
        "Field 'EnterpriseOwnerInfo.repositoryDeployKeySettingOrganizations' "
        "can only be defined once.",
    }
)


@cache
def load_schema() -> GraphQLSchema:
    """GitHub's GraphQL schema as a graphql-core schema (about a second to build)."""
    from graphql import build_ast_schema, parse
    from graphql.validation.validate import validate_sdl

    ast = parse(schema_sdl())
    unexpected = {e.message for e in validate_sdl(ast)} - KNOWN_SDL_ERRORS
    if unexpected:
        raise ValueError(f"schema/github.graphql is not valid SDL: {sorted(unexpected)[0]}")
    return build_ast_schema(ast, assume_valid_sdl=True, assume_valid=True)
