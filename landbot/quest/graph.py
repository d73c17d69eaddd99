"""Cycles among `Required` links: strongly connected components, then one cycle per quest.

Pure and iterative (a deep chain of 10,000 quests must not hit Python's recursion limit).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence

# Up to this many quests in one tangle, each quest gets its shortest cycle (a BFS each);
# above it, one BFS pair per tangle keeps a pathological tree linear instead of quadratic.
SHORTEST_CYCLE_LIMIT = 200


def strongly_connected(graph: Mapping[str, Sequence[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative. Every node of `graph` appears in exactly one component."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work: list[tuple[str, int]] = [(start, 0)]
        while work:
            node, position = work[-1]
            if position == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            successors = graph.get(node, ())
            if position < len(successors):
                work[-1] = (node, position + 1)
                nxt = successors[position]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                caller = work[-1][0]
                low[caller] = min(low[caller], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(component)
    return components


def cycles(graph: Mapping[str, Sequence[str]]) -> dict[str, list[str]]:
    """For every node on a cycle, one cycle through it: `[node, ..., node]`.

    Deterministic: successors are visited in the order given (callers pass them sorted).
    """
    result: dict[str, list[str]] = {}
    tangled = _not_acyclic(graph)
    if not tangled:
        return result
    sub = {node: [n for n in graph.get(node, ()) if n in tangled] for node in sorted(tangled)}
    for component in strongly_connected(sub):
        members = set(component)
        if len(component) == 1:
            node = component[0]
            if node in graph.get(node, ()):
                result[node] = [node, node]
            continue
        if len(component) <= SHORTEST_CYCLE_LIMIT:
            for node in component:
                result[node] = _shortest_cycle(graph, node, members)
        else:
            result.update(_cycles_through_hub(graph, sorted(component), members))
    return result


def _not_acyclic(graph: Mapping[str, Sequence[str]]) -> set[str]:
    """The nodes Kahn's algorithm cannot peel off: those on a cycle or reached from one.
    Usually none: a quest tree without cycles costs one cheap pass, not Tarjan's."""
    indegree: dict[str, int] = dict.fromkeys(graph, 0)
    for successors in graph.values():
        for nxt in successors:
            indegree[nxt] = indegree.get(nxt, 0) + 1
    ready = [node for node, count in indegree.items() if count == 0]
    while ready:
        node = ready.pop()
        for nxt in graph.get(node, ()):
            indegree[nxt] -= 1
            if indegree[nxt] == 0:
                ready.append(nxt)
    return {node for node, count in indegree.items() if count > 0}


def _bfs(graph: Mapping[str, Sequence[str]], start: str, members: set[str]) -> dict[str, str]:
    """Breadth-first predecessors from `start`, inside one component."""
    before: dict[str, str] = {start: start}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for nxt in graph.get(node, ()):
            if nxt in members and nxt not in before:
                before[nxt] = node
                queue.append(nxt)
    return before


def _shortest_cycle(graph: Mapping[str, Sequence[str]], node: str, members: set[str]) -> list[str]:
    # Shortest path from node back to node: BFS from node's successors.
    before: dict[str, str] = {}
    queue: deque[str] = deque()
    for nxt in graph.get(node, ()):
        if nxt in members and nxt not in before:
            before[nxt] = node
            queue.append(nxt)
    while queue and node not in before:
        current = queue.popleft()
        for nxt in graph.get(current, ()):
            if nxt in members and nxt not in before:
                before[nxt] = current
                queue.append(nxt)
    path = [node]
    current = before[node]  # present: the component is strongly connected
    while current != node:
        path.append(current)
        current = before[current]
    path.append(node)
    path.reverse()
    return path


def _cycles_through_hub(
    graph: Mapping[str, Sequence[str]], component: list[str], members: set[str]
) -> dict[str, list[str]]:
    """A simple cycle through every member via one hub: member -> hub -> member, shortcut at
    the first node the two paths share. Linear per member in the cycle's length."""
    hub = component[0]
    forward = _bfs(graph, hub, members)  # hub -> x
    reverse_graph: dict[str, list[str]] = {m: [] for m in component}
    for m in component:
        for nxt in graph.get(m, ()):
            if nxt in members:
                reverse_graph[nxt].append(m)
    backward = _bfs(reverse_graph, hub, members)  # x -> hub, read from the reverse BFS

    result: dict[str, list[str]] = {}
    for node in component:
        to_hub = [node]  # node -> ... -> hub
        while to_hub[-1] != hub:
            to_hub.append(backward[to_hub[-1]])
        from_hub = [node]  # hub -> ... -> node, built backwards
        while from_hub[-1] != hub:
            from_hub.append(forward[from_hub[-1]])
        from_hub.reverse()
        if node == hub:
            result[node] = _shortest_cycle(graph, node, members)
            continue
        on_return = {n: i for i, n in enumerate(from_hub)}
        # The first node after `node` on the way to the hub that also lies on the way back.
        for i in range(1, len(to_hub)):
            meet = to_hub[i]
            if meet in on_return:
                result[node] = to_hub[: i + 1] + from_hub[on_return[meet] + 1 :]
                break
    return result
