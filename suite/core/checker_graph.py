"""The keyed checker's order graph: which message a read showed before which, through every read.

``checker_keyed`` asks two questions of that graph: whether two reads order two
messages differently (a path back through the graph), and which messages a read
that left some out may not leave out (those below one it shows). Answering them
in near-linear time takes graph machinery (strongly connected components, a
condensed reachability index) that says nothing about SPEC.md; kept here, the
checker module holds only its rules, and this part can be read and tested as
plain graph code.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from .history import UNBOUNDED, Call

__all__ = ["Reach", "components", "first_witness"]


def first_witness(edges: dict[str, dict[str, Call]], a: str, b: str,
                  within: dict[str, int] | None = None) -> Call | None:
    """A read on a path that shows ``a`` before ``b`` (None: no read orders them so).

    ``within``: every node's component of a graph that holds every path from ``a`` to
    ``b``; the search skips nodes of other components (none of them leads to ``b``, so
    the path found, and its witness, are the same)."""
    if a == b:
        return None
    part = None if within is None else within[a]
    seen = {a}
    todo: deque[tuple[str, Call | None]] = deque([(a, None)])
    while todo:
        node, witness = todo.popleft()
        for nxt, read in edges.get(node, {}).items():
            if nxt in seen or (within is not None and within[nxt] != part):
                continue
            w = witness or read
            if nxt == b:
                return w
            seen.add(nxt)
            todo.append((nxt, w))
    return None


def components(graph: dict[str, dict[str, None]] | dict[str, dict[str, Call]]) -> dict[str, int]:
    """Each node's strongly connected component (Tarjan's, without recursion).

    Components are numbered in the order Tarjan's algorithm closes them, which is a
    reverse topological order: an edge between two components runs from the higher
    number to the lower. A node only some edge names is numbered too."""
    number: dict[str, int] = {}
    low: dict[str, int] = {}
    component: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    closed = 0
    for root in graph:
        if root in number:
            continue
        number[root] = low[root] = len(number)
        stack.append(root)
        on_stack.add(root)
        work: list[tuple[str, Iterable[str]]] = [(root, iter(graph[root]))]
        while work:
            node, children = work[-1]
            for child in children:
                if child not in number:
                    number[child] = low[child] = len(number)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(graph.get(child, {}))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], number[child])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == number[node]:
                    while True:
                        top = stack.pop()
                        on_stack.discard(top)
                        component[top] = closed
                        if top == node:
                            break
                    closed += 1
    return component


class Reach:
    """Reachability in the final order graph (a read's order, through every read).

    The graph is condensed to its strongly connected components, numbered in reverse
    topological order, so a component reaches only lower numbers: most questions are
    answered by comparing two numbers, the rest by a search that never leaves the range
    between them. ``below`` finds, for a read, the keys required in time that lie below
    one of its messages but are not among them: each component knows the earliest fact
    of anything it reaches, so the walk enters only parts that can hold such a key."""

    def __init__(self, edges: dict[str, dict[str, Call]]) -> None:
        self.edges = edges
        self.component = components(edges)
        n = max(self.component.values(), default=-1) + 1
        self.next: list[set[int]] = [set() for _ in range(n)]
        self.members: list[list[str]] = [[] for _ in range(n)]
        for node, k in self.component.items():
            self.members[k].append(node)
            self.next[k].update(self.component[b] for b in edges.get(node, {}))
            self.next[k].discard(k)
        self.earliest: list[int] = []
        self.fact_hi: dict[str, int] = {}
        self._memo: dict[tuple[int, int], bool] = {}

    def index_facts(self, fact_hi: dict[str, int]) -> None:
        """Record each key's earliest fact, and each component's earliest below it."""
        self.fact_hi = fact_hi
        self.earliest = []
        for k, nodes in enumerate(self.members):  # successors have lower numbers: done
            own = min((fact_hi.get(m, UNBOUNDED) for m in nodes), default=UNBOUNDED)
            self.earliest.append(min([own, *(self.earliest[j] for j in self.next[k])]))

    def reaches(self, a: str, b: str) -> bool:
        """Whether a path leads from ``a`` to ``b`` (never from a node to itself)."""
        if a == b:
            return False
        ka, kb = self.component.get(a), self.component.get(b)
        if ka is None or kb is None or kb > ka:
            return False
        if ka == kb:
            return True
        known = self._memo.get((ka, kb))
        if known is None:
            known = False
            seen = {ka}
            todo = [ka]
            while todo and not known:
                for j in self.next[todo.pop()]:
                    if j == kb:
                        known = True
                        break
                    if j > kb and j not in seen:
                        seen.add(j)
                        todo.append(j)
            self._memo[(ka, kb)] = known
        return known

    def below(self, messages: list[str], position: dict[str, int], before: int) -> list[str]:
        """Keys whose earliest fact ended before ``before``, not among ``messages`` and
        reached from one of them through a node that is not (a superset of the keys
        ``messages[0]`` reaches, a read's order being only mostly a path)."""
        found: list[str] = []
        seen: set[int] = set()
        todo: list[int] = []
        for m in messages:
            for b in self.edges.get(m, {}):
                k = self.component[b]
                if b not in position and k not in seen and self.earliest[k] < before:
                    seen.add(k)
                    todo.append(k)
        while todo:
            k = todo.pop()
            found.extend(m for m in self.members[k]
                         if m not in position and self.fact_hi.get(m, UNBOUNDED) < before)
            for j in self.next[k]:
                if j not in seen and self.earliest[j] < before:
                    seen.add(j)
                    todo.append(j)
        return found
