"""Circles in an import graph, for the layering checks (tests/test_layering.py, tests/xp/test_structure.py)."""


def strongly_connected(graph):
    """Strongly connected components of more than one node (Tarjan), each sorted, in visiting order.

    ``graph`` maps a node to the nodes it points at; nodes that are only pointed at may be absent."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while not comp or comp[-1] != v:
                comp.append(stack.pop())
                on.discard(comp[-1])
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out
