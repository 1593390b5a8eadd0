"""Loop-invariant reductions hoisted out of reductions (a term normalization of the lowering).

A nest lowered statement by statement inlines a scalar computed once per outer iteration
into every later use: softmax's normalizer `z = sum[k] exp(s[i, k] - m)` lands inside
`sum[j] exp(s[i, j] - m) / z * v[j, d]`, recomputed for every j (and d). Such a reduction
does not mention the variable of the reduction around it, so it is the same value on
every step: it becomes a tensor over the variables it does use, read there.

    sum[j] f(j, h(red[k] g(i, k)))  ==  sum[j] f(j, r[i])   with  r = for[i] h(red[k] g(i, k))

(the largest such term around the inner reduction that does not use j: `max(s[i, 0],
max[k] s[i, k])` as a whole).

The value is the same (a let-binding); only where it is computed changes. The tensor is
computed over the whole extent of each variable it uses, which the loops ran over anyway
(the reduction was evaluated for each of their iterations), so no new index is read.
"""
from __future__ import annotations

from . import terms as T
from .terms import Node


def hoist_invariant_reductions(term: Node, free_vars, new_var, extent, memo: dict | None = None) -> Node:
    """`term` with every reduction nested in another reduction, and free of that one's
    variable, read from its own tensor. `free_vars(node)` gives a term's free index
    variables, `new_var(base, n)` a fresh variable, `extent(var)` a variable's extent (None
    if unknown: then it stays). `memo` (term -> its result) may be shared by the calls of
    one lowering: a nest's term holds the tensors of the nests before it, already done,
    and a chain of n nests walked them all again each time (n^2: 2.5 s of a 200-layer
    chain's lowering)."""
    memo = {} if memo is None else memo
    for x in T.postorder(term, known=memo):
        new = Node(x.op, *[memo.get(a, a) if isinstance(a, Node) else a for a in x.args])
        if new.op == "Sc.red":
            new = _hoist_from(new, free_vars, new_var, extent)
        memo[x] = new
    return memo[term]


def _hoist_from(red: Node, free_vars, new_var, extent) -> Node:
    v, body = red.args[1], red.args[3]
    hits = _invariant(body, v, free_vars)
    if not hits:
        return red
    mapping = {}
    for r in hits:
        fv = sorted(free_vars(r), key=lambda u: u.args[0])
        ext = [extent(u) for u in fv]
        if any(e is None for e in ext):
            continue
        fresh = {u: new_var(f"h{u.args[0]}_", e) for u, e in zip(fv, ext)}
        inner = T.rebuild(r, fresh.get)
        tensor = T.compute([(fresh[u], e) for u, e in zip(fv, ext)], inner)
        mapping[r] = T.load(tensor, [T.iv(u) for u in fv])
    if not mapping:
        return red
    return Node("Sc.red", red.args[0], v, red.args[2], T.rebuild(body, mapping.get))


def _invariant(body: Node, v: Node, free_vars) -> list:
    """The outermost scalar terms in `body` (not inside a tensor it loads) that hold a
    reduction and do not use `v` (`max(s[i, 0], max[k] s[i, k])` as a whole)."""
    out, seen, stack = [], set(), [body]
    while stack:
        x = stack.pop()
        if x in seen:
            continue
        seen.add(x)
        if v not in free_vars(x) and any(y.op == "Sc.red" for y in T.walk_body(x)):
            out.append(x)
            continue
        if x.op == "Sc.red":
            continue  # one that uses v: its own invariants are found when it is visited
        stack.extend(a for a in x.args if isinstance(a, Node) and a.sort == "Sc")
    return out
