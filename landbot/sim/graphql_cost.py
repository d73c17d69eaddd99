"""GitHub's cost of a GraphQL query, as its docs compute it ("Rate limits for the GraphQL
API", docs.github.com/graphql/overview/rate-limits-and-query-limits-for-the-graphql-api,
"Calculating a rate limit score before running the call"):

    Add up the number of requests needed to fulfill each unique connection in the call.
    Assume every request will reach the first or last argument limits. Divide the number by
    100 and round the result to the nearest whole number to get the final aggregate cost.
    If you have less than 1, round up to 1.

A connection is a field given `first` or `last`; it costs one request for each object it
may be asked on, which is the product of the page sizes of the connections around it (a
connection under `pullRequests(first: 50)` is fetched for each of the 50). Fragments count
where they are spread. A mutation costs 1 here (GitHub charges mutations by another rule).
The same walk gives the node count GitHub limits to 500,000 (each connection's page size
times the requests for it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    InlineFragmentNode,
    IntValueNode,
    OperationDefinitionNode,
    OperationType,
    SelectionSetNode,
    VariableNode,
)


@dataclass(frozen=True)
class Cost:
    requests: int  # connection requests GitHub assumes
    nodes: int  # nodes it may return (its limit: 500,000)

    @property
    def points(self) -> int:
        return max(1, math.floor(self.requests / 100 + 0.5))


def cost(document: DocumentNode, variables: dict[str, Any], operation: str | None) -> Cost:
    """The cost of running `operation` (or the document's one operation)."""
    fragments = {
        d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)
    }
    ops = [d for d in document.definitions if isinstance(d, OperationDefinitionNode)]
    chosen = next((o for o in ops if o.name is not None and o.name.value == operation), None)
    op = chosen or (ops[0] if ops else None)
    if op is None or op.operation is OperationType.MUTATION:
        return Cost(100, 1)
    totals = [0, 0]

    def page(field: FieldNode) -> int | None:
        for arg in field.arguments or ():
            if arg.name.value not in ("first", "last"):
                continue
            value = arg.value
            if isinstance(value, IntValueNode):
                return int(value.value)
            if isinstance(value, VariableNode):
                return int(variables.get(value.name.value) or 0)
        return None

    def walk(selections: SelectionSetNode | None, times: int, seen: frozenset[str]) -> None:
        if selections is None:
            return
        for sel in selections.selections:
            if isinstance(sel, FieldNode):
                size = page(sel)
                if size is None:
                    walk(sel.selection_set, times, seen)
                else:
                    totals[0] += times
                    totals[1] += times * size
                    walk(sel.selection_set, times * size, seen)
            elif isinstance(sel, InlineFragmentNode):
                walk(sel.selection_set, times, seen)
            elif isinstance(sel, FragmentSpreadNode) and sel.name.value not in seen:
                frag = fragments.get(sel.name.value)
                if frag is not None:
                    walk(frag.selection_set, times, seen | {sel.name.value})

    walk(op.selection_set, 1, frozenset())
    return Cost(totals[0], totals[1])
