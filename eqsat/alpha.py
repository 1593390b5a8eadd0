"""Alike kernels share one term: extracted terms with their binders renamed canonically.

Every binder (a `compute` or `fused` node's output axes, a reduction's variable) gets a
name that depends only on what it binds: the binder's node with its own variables made
anonymous. Two kernels written apart that compute the same thing up to the names of
their loop variables (three loops that each recompute `q @ k.T` under the same mask, one
layer's epilogue and the next one's copy of it) then become one term, and terms are
hash-consed, so the plan forms one kernel for them and the cost model pays it once.

The e-graph does not see this sharing (a rule cannot compare bodies up to renaming
without pairing every two tensors); it is applied to each extracted form before the
forms are priced against each other, so a plan can only get cheaper by it.

Renaming is capture-free: names live in their own namespace (`'` never occurs in the
lowering's names), a new name is never one free in the body it binds in, and a
substitution enters only the subterms where a renamed variable is free (so an inner
binder that rebinds the same variable, as anti-inline's copies of their context's axes
do, keeps its own).
"""
from __future__ import annotations

import re

from . import terms as T
from .terms import Node

BINDERS = ("Ten.compute", "Ten.fused", "Sc.red")


def _base(v: Node) -> str:
    """A readable stem for a variable's new name: its name without the lowering's counter."""
    if v.op == "Var.named":
        stem = re.match(r"[A-Za-z]*", v.args[0]).group()
        return stem or "v"
    return "k" if v.op == "Var.mmk" else "p"


class Canon:
    """One renaming pass; `memo` maps every term seen to its canonical form (the viewer
    translates its e-class map through it)."""

    def __init__(self):
        self.memo: dict = {}
        self.names: dict = {}  # binder with anonymous variables -> its variables' names
        self.used: set = set()

    def roots(self, roots: list) -> list:
        for r in roots:
            self._term(r)
        return [self.memo[r] for r in roots]

    def _term(self, root: Node) -> None:
        memo = self.memo
        for n in T.postorder(root, memo):
            args = tuple(memo[a] if isinstance(a, Node) else a for a in n.args)
            m = n if all(x is y for x, y in zip(args, n.args)) else Node(n.op, *args)
            if m.op in BINDERS:
                m = self._rebind(m)
            memo[n] = m

    def _rename(self, n: Node, new: dict) -> Node:
        """`n` with the free variables in `new` replaced. It enters only subterms where one
        of them is free (a kernel read inside is not walked again; an inner binder of the
        same variable keeps its own), iteratively (bodies can be deep)."""
        keys = new.keys()
        memo: dict = {}
        stack = [(n, False)]
        while stack:
            x, ready = stack.pop()
            if x in memo:
                continue
            if ready:
                memo[x] = Node(x.op, *(memo[a] if isinstance(a, Node) else a for a in x.args))
            elif x.op == "Ix.v":
                memo[x] = Node("Ix.v", new[x.args[0]]) if x.args[0] in keys else x
            elif not (T.free_vars(x) & keys):
                memo[x] = x
            else:
                stack.append((x, True))
                stack.extend((a, False) for a in x.args if isinstance(a, Node) and a not in memo)
        return memo[n]

    def _first_seen(self, terms: list, wanted: frozenset) -> list:
        """The variables of `wanted` in the order a depth-first walk of `terms` first meets
        them (the same order for terms alike up to renaming)."""
        out, seen, visited = [], set(), set()
        stack = list(reversed(terms))
        while stack:
            x = stack.pop()
            if x in visited:
                continue
            visited.add(x)
            if x.op == "Ix.v":
                v = x.args[0]
                if v in wanted and v not in seen:
                    seen.add(v)
                    out.append(v)
            elif T.free_vars(x) & wanted:
                stack.extend(reversed([a for a in x.args if isinstance(a, Node)]))
        return out

    def _rebind(self, m: Node) -> Node:
        """`m` (its children canonical already) with its own variables renamed. The names
        depend on the binder with its own variables and its free ones made anonymous, so a
        reduction nested in a kernel gets the same name in two kernels alike up to renaming
        (the free variables are their kernels' axes, not yet renamed)."""
        red = m.op == "Sc.red"
        old = [m.args[1]] if red else [v for v, _ in T.unlist(m.args[0])]
        body = m.args[3] if red else m.args[1]
        rest = [] if red else list(m.args[2:])  # a fused node's product: not in the binder's scope
        free = frozenset().union(T.free_vars(body), *(T.free_vars(x) for x in rest)) - set(old)
        anon = {v: Node("Var.named", f"\x00{k}") for k, v in enumerate(old)}
        for k, v in enumerate(self._first_seen([body] + rest, free)):
            anon[v] = Node("Var.named", f"\x01{k}")
        shape = [self._rename(x, anon) for x in [body] + rest]
        key = (m.op, m.args[0], m.args[2], *shape) if red else \
            (m.op, tuple(e for _, e in T.unlist(m.args[0])), *shape)
        taken = {v.args[0] for v in free if v.op == "Var.named"}
        names = self.names.get(key)
        if names is None or any(n.args[0] in taken for n in names):
            names = []
            for v in old:
                stem, k = _base(v), len(self.used)
                while f"{stem}'{k}" in taken or f"{stem}'{k}" in self.used:
                    k += 1
                self.used.add(f"{stem}'{k}")
                names.append(Node("Var.named", f"{stem}'{k}"))
            self.names.setdefault(key, names)
        body = self._rename(body, dict(zip(old, names)))
        if red:
            return Node("Sc.red", m.args[0], names[0], m.args[2], body)
        dims = T.dims([(nv, e) for nv, (_, e) in zip(names, T.unlist(m.args[0]))])
        return Node(m.op, dims, body, *rest)


def canonical(roots: list) -> tuple[list, dict]:
    """`roots` with alike binders named alike, and the map from every original term to
    its canonical form."""
    c = Canon()
    return c.roots(roots), c.memo
