"""Loop-invariant reductions hoisted out of reductions (a term normalization of the lowering).

A nest lowered statement by statement inlines a scalar computed once per outer iteration
into every later use: softmax's normalizer `z = sum[k] exp(s[i, k] - m)` lands inside
`sum[j] exp(s[i, j] - m) / z * v[j, d]`, recomputed for every j (and d). Such a reduction
does not mention the variable of the reduction around it, so it is the same value on
every step: it becomes a tensor over the variables it does use, read there.

    sum[j] f(j, h(red[k] g(i, k)))  ==  sum[j] f(j, r[i])   with  r = for[i] h(red[k] g(i, k))

(the largest such term around the inner reduction that does not use j: `max(s[i, 0],
max[k] s[i, k])` as a whole).

The same holds for a computation: a reduction inside `for[i, j] ...` that does not use j
(a row's mean or max, inlined into every element of the row: layernorm, softmax) is
recomputed for every j; it becomes a tensor over the variables it uses:

    for[i, j] f(j, h(red[k] g(i, k)))  ==  for[i, j] f(j, r[i])

The value is the same (a let-binding); only where it is computed changes. The tensor is
computed over the whole extent of each variable it uses, which the loops ran over anyway
(the reduction was evaluated for each of their iterations), so no new index is read.
"""
from __future__ import annotations

from . import terms as T
from .terms import Node


def hoist_invariant_reductions(term: Node, free_vars, new_var, extent, memo: dict | None = None,
                               canon: dict | None = None) -> Node:
    """`term` with every reduction nested in another reduction, and free of that one's
    variable, read from its own tensor. `free_vars(node)` gives a term's free index
    variables, `new_var(base, n)` a fresh variable, `extent(var)` a variable's extent (None
    if unknown: then it stays). `memo` (term -> its result) may be shared by the calls of
    one lowering: a nest's term holds the tensors of the nests before it, already done,
    and a chain of n nests walked them all again each time (n^2: 2.5 s of a 200-layer
    chain's lowering). `canon` (shared likewise) names a hoisted tensor's axes by its
    content, so the same reduction hoisted from two places is one tensor, not two."""
    memo = {} if memo is None else memo
    canon = {} if canon is None else canon
    for x in T.postorder(term, known=memo):
        new = Node(x.op, *[memo.get(a, a) if isinstance(a, Node) else a for a in x.args])
        if new.op == "Sc.red":
            new = _hoist_from(new, free_vars, new_var, extent, canon)
        elif new.op == "Ten.compute":
            new = _hoist_from_compute(new, free_vars, new_var, extent, canon)
        memo[x] = new
    return memo[term]


def _hoist_from(red: Node, free_vars, new_var, extent, canon: dict) -> Node:
    v, body = red.args[1], red.args[3]
    mapping = _tensors_for(_invariant(body, lambda x: v not in free_vars(x), free_vars), free_vars, new_var,
                           extent, canon)
    if not mapping:
        return red
    return Node("Sc.red", red.args[0], v, red.args[2], T.rebuild(body, mapping.get))


def _hoist_from_compute(t: Node, free_vars, new_var, extent, canon: dict) -> Node:
    axes = {v for v, _ in T.unlist(t.args[0])}
    body = t.args[1]
    if not axes or (len(axes) == 1 and body.op == "Sc.red"):
        return t  # no axis, or one whose body is the reduction itself: nothing to save
    mapping = _tensors_for(_invariant(body, lambda x: not axes <= free_vars(x), free_vars), free_vars, new_var,
                           extent, canon)
    if not mapping:
        return t
    return Node("Ten.compute", t.args[0], T.rebuild(body, mapping.get))


def _tensors_for(hits: list, free_vars, new_var, extent, canon: dict) -> dict:
    """term -> a load of its own tensor over the variables it uses (those with a known
    extent; a term using another stays). The tensor's axes are fresh variables, the same
    ones for the same term up to its variables' names (`canon`: one tensor, not one per
    place it was hoisted from)."""
    mapping = {}
    for r in hits:
        fv = sorted(free_vars(r), key=lambda u: u.args[0])
        ext = [extent(u) for u in fv]
        if any(e is None for e in ext):
            continue
        holes = {u: T.var(f"eqsat_hole{k}") for k, u in enumerate(fv)}
        key = (T.rebuild(r, holes.get), tuple(ext))
        axes = canon.get(key)
        if axes is None:
            axes = canon[key] = [new_var(f"h{u.args[0]}_", e) for u, e in zip(fv, ext)]
        fresh = dict(zip(fv, axes))
        tensor = T.compute(list(zip(axes, ext)), T.rebuild(r, fresh.get))
        mapping[r] = T.load(tensor, [T.iv(u) for u in fv])
    return mapping


def _invariant(body: Node, misses, free_vars) -> list:
    """The outermost scalar terms in `body` (not inside a tensor it loads) that hold a
    reduction and for which `misses(term)` holds, i.e. do not use a variable of the loop
    around them (`max(s[i, 0], max[k] s[i, k])` as a whole)."""
    out, seen, stack = [], set(), [body]
    while stack:
        x = stack.pop()
        if x in seen:
            continue
        seen.add(x)
        if misses(x) and any(y.op == "Sc.red" for y in T.walk_body(x)) and not T.python_number(x):
            # (a Python number is never stored: its tensor would round it to float32, where
            # the reference keeps a float64, `math.exp(m)` of a row's max m: its float32
            # reductions are hoisted, inside it)
            out.append(x)
            continue
        if x.op == "Sc.red":
            continue  # one that uses the variable: its own invariants are found when it is visited
        stack.extend(a for a in x.args if isinstance(a, Node) and a.sort == "Sc")
    return out
