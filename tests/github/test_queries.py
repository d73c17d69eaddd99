"""Every GraphQL document the client sends validates against GitHub's public schema."""

from __future__ import annotations

import re

import pytest
from graphql import (
    DocumentNode,
    GraphQLSchema,
    OperationDefinitionNode,
    build_ast_schema,
    parse,
    validate,
    validate_schema,
)
from graphql.validation.validate import validate_sdl

from landbot.github import documents

ALL = documents.names()


@pytest.fixture(scope="module")
def schema() -> GraphQLSchema:
    return documents.load_schema()


def errors_of(schema: GraphQLSchema, text: str) -> list[str]:
    return [e.message for e in validate(schema, parse(text))]


def test_the_documents_are_there() -> None:
    assert set(ALL) >= {
        "pull_request",
        "queue_removals",
        "merge_queue_entries",
        "enqueue_pull_request",
        "dequeue_pull_request",
        "enable_auto_merge",
        "minimize_comment",
    }


@pytest.mark.parametrize("name", ALL)
def test_every_document_validates_against_the_schema(schema: GraphQLSchema, name: str) -> None:
    assert errors_of(schema, documents.document(name)) == []


def test_a_field_github_does_not_have_fails_the_same_validation(schema: GraphQLSchema) -> None:
    """The control: the check above can fail. One field renamed in a real document."""
    text = documents.document("pull_request").replace("isInMergeQueue", "isInTheMergeQueue")
    assert text != documents.document("pull_request")
    errors = errors_of(schema, text)
    assert len(errors) == 1
    assert errors[0].startswith("Cannot query field 'isInTheMergeQueue' on type 'PullRequest'.")


def test_a_wrong_argument_type_fails_the_same_validation(schema: GraphQLSchema) -> None:
    text = documents.document("enqueue_pull_request").replace(
        "$expectedHeadOid: GitObjectID", "$expectedHeadOid: Int"
    )
    assert any("expectedHeadOid" in e for e in errors_of(schema, text))


@pytest.fixture(scope="module")
def schema_ast() -> DocumentNode:
    return parse(documents.schema_sdl())


def test_the_schema_is_the_packaged_one_and_only_known_sdl_defects_are_skipped(
    schema_ast: DocumentNode,
) -> None:
    """load_schema skips SDL validation; prove the only SDL errors are GitHub's duplicates."""
    sdl = documents.schema_sdl()
    assert len(sdl) > 1_000_000 and "type RemovedFromMergeQueueEvent" in sdl
    errors = {e.message for e in validate_sdl(schema_ast)}
    assert errors == documents.KNOWN_SDL_ERRORS


def test_the_only_type_system_errors_are_githubs_deprecated_implementations(
    schema_ast: DocumentNode,
) -> None:
    """load_schema assumes the schema valid; prove what that skips is only this one rule."""
    strict = build_ast_schema(schema_ast, assume_valid_sdl=True)
    errors = [e.message for e in validate_schema(strict)]
    assert errors  # GitHub's schema does break the rule (else drop the assumption)
    odd = [m for m in errors if not documents.KNOWN_TYPE_SYSTEM_ERROR.fullmatch(m)]
    assert odd == []


@pytest.mark.parametrize(
    ("sdl", "ok"),
    [
        ("type Query { a: Int }", True),  # the control: a valid SDL loads
        ("type Query { a: Int }\ntype Query { b: Int }", False),  # another defect: refused
    ],
)
def test_load_schema_refuses_sdl_with_another_defect(
    monkeypatch: pytest.MonkeyPatch, sdl: str, ok: bool
) -> None:
    monkeypatch.setattr(documents, "schema_sdl", lambda: sdl)
    documents.load_schema.cache_clear()
    try:
        if ok:
            assert "Query" in documents.load_schema().type_map
        else:
            with pytest.raises(ValueError, match="not valid SDL: There can be only one type"):
                documents.load_schema()
    finally:
        documents.load_schema.cache_clear()


def test_mutations_are_told_from_queries() -> None:
    kinds = {name: documents.is_mutation(documents.document(name)) for name in ALL}
    assert kinds["enqueue_pull_request"] and kinds["dequeue_pull_request"]
    assert kinds["enable_auto_merge"] and kinds["minimize_comment"]
    assert not kinds["pull_request"] and not kinds["queue_removals"]
    assert not kinds["merge_queue_entries"]
    # ...and agree with graphql-core's reading of each document
    for name in ALL:
        # One operation per document; a batched one carries its fragment beside it.
        (op,) = [
            d
            for d in parse(documents.document(name)).definitions
            if isinstance(d, OperationDefinitionNode)
        ]
        assert (op.operation.value == "mutation") == kinds[name]


@pytest.mark.parametrize("name", ["queue_removals_batch", "commit_parents"])
@pytest.mark.parametrize("count", [1, 3, 50])
def test_a_batched_document_validates_for_any_number_of_aliases(
    schema: GraphQLSchema, name: str, count: int
) -> None:
    text = documents.batched(name, count)
    assert errors_of(schema, text) == []
    (op,) = [d for d in parse(text).definitions if isinstance(d, OperationDefinitionNode)]
    assert len(op.selection_set.selections) == count  # one alias a repository or commit


def test_the_batched_sweep_asks_what_the_single_sweep_asks_but_the_parents() -> None:
    """The batch leaves out only beforeCommit's parents (asked after, where needed); the
    control: the single sweep's document has them."""

    def fields(text: str) -> set[str]:
        return set(re.findall(r"\b([a-zA-Z_]+)\b(?=\s*[({\n])", text.split("{", 1)[1]))

    single, batch = documents.document("queue_removals"), documents.document("queue_removals_batch")
    assert fields(single) - fields(batch) == {"parents"}
    assert "parents" in single
