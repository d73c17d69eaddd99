"""Cycles: strongly connected components and one simple cycle per quest on a cycle."""

from __future__ import annotations

import itertools
import random

import pytest

from landbot.quest import graph
from landbot.quest.graph import cycles, strongly_connected


def assert_simple_cycle(g: dict[str, list[str]], node: str, loop: list[str]) -> None:
    assert loop[0] == loop[-1] == node
    assert len(set(loop[:-1])) == len(loop) - 1, loop  # no quest twice
    for a, b in itertools.pairwise(loop):
        assert b in g[a], (a, b)


def test_components_and_shortest_cycles() -> None:
    g = {
        "a": ["b"],
        "b": ["c", "e"],
        "c": ["a", "d"],
        "d": [],
        "e": ["b"],
        "s": ["s"],
        "t": ["a"],
    }
    components = sorted(sorted(c) for c in strongly_connected(g))
    assert components == [["a", "b", "c", "e"], ["d"], ["s"], ["t"]]
    found = cycles(g)
    assert set(found) == {"a", "b", "c", "e", "s"}
    assert found["s"] == ["s", "s"]
    assert found["b"] == ["b", "e", "b"]  # the shortest cycle through b
    assert found["a"] == ["a", "b", "c", "a"]
    assert found["e"] == ["e", "b", "e"]
    for node, loop in found.items():
        assert_simple_cycle(g, node, loop)


def test_a_long_chain_does_not_hit_the_recursion_limit() -> None:
    n = 20_000
    g = {f"n{i:05}": [f"n{i + 1:05}"] for i in range(n - 1)}
    g[f"n{n - 1:05}"] = []
    assert cycles(g) == {}
    # A ring: every quest's cycle names all of them, so the answer itself is quadratic.
    n = 2_000
    g = {f"n{i:05}": [f"n{i + 1:05}"] for i in range(n - 1)}
    g[f"n{n - 1:05}"] = ["n00000"]
    found = cycles(g)
    assert len(found) == n
    assert len(found["n00000"]) == n + 1


@pytest.mark.parametrize("seed", range(5))
def test_large_tangles_use_the_hub_and_still_give_simple_cycles(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(seed)
    nodes = [f"q{i}" for i in range(60)]
    g = {n: sorted(set(rng.sample(nodes, 3))) for n in nodes}
    big = max(strongly_connected(g), key=len)
    assert len(big) > 10
    monkeypatch.setattr(graph, "SHORTEST_CYCLE_LIMIT", 5)
    found = cycles(g)
    assert set(big) <= set(found)
    for node, loop in found.items():
        assert_simple_cycle(g, node, loop)
