"""Loop unsplitting: `for j0 in range(N // T): for j1 in range(T): ... x[j0 * T + j1]`
is `for j in range(N): ... x[j]` when j0 and j1 appear only as `j0 * T + j1`; so is
`for j0 in range(0, N, T): for j1 in range(T): ... x[j0 + j1]` (T dividing N) when they
appear only as `j0 + j1`.

Both run the same iterations in the same order (j = j0 * T + j1 counts 0, 1, ... N - 1),
so the nest means exactly the same; what changes is that every access is a plain loop
variable again, so the lowering finds full-tensor definitions and the rules find
matmuls and fused epilogues without any split-specific pattern. Only the functional
form is built from the merged nest (its dataflow is checked on it); the nest as written
still runs as written.

Pairs split in the other order (`for j1 in range(T): for j0 in range(N // T)`), or split
pairs that are not adjacent (tiles: `for i0: for j0: for i1: for j1:`), run a different
order once merged. A perfectly nested band of loops is reordered so that each pair is
adjacent and coarse-first only when the caller's `reorder_ok(band, order)` proves the
reordered band is the same program (the lowering asks isl: every two instances touching
one location, one writing, keep their order); then the pairs merge as above. A reduction
split across the band is not reordered (its accumulator orders every instance); the
matmul rules' reshape views and sum commutation handle its loads instead.
"""
from __future__ import annotations

import copy
from itertools import count

from .ir import Alloc, Assign, BoolOp, Call, Compare, Dim, For, If, Index, Reshape, Select, Store, Transpose, Bin, MatMul, \
    ie_eval, ie_names

class _Keep(Exception):
    """A split variable is used some other way: this pair stays split."""


def unsplit(s, dims: dict, fresh=None, reorder_ok=None):
    """A copy of statement `s` with every mergeable pair of nested loops merged (merged
    loops are named from `fresh`, a counter the lowering owns: names are deterministic).
    `reorder_ok(band, order)`: whether the loops `band` of `s` may run in `order` (None:
    never reorder)."""
    fresh = count() if fresh is None else fresh
    if isinstance(s, If):
        return If(s.loc, s.cond, [unsplit(b, dims, fresh, reorder_ok) for b in s.body],
                  [unsplit(b, dims, fresh, reorder_ok) for b in s.orelse], node=s.node)
    if not isinstance(s, For):
        return s
    if reorder_ok is not None:
        s = _reorder(s, dims, reorder_ok)
    body = [unsplit(b, dims, fresh, reorder_ok) for b in s.body]
    out = copy.copy(s)
    out.body = body
    if len(body) == 1 and isinstance(body[0], For):
        merged = _merge(out, body[0], dims, fresh)
        if merged is not None:
            return merged
    return out


def _const(e, dims):
    if ie_names(e) - set(dims):
        return None
    return ie_eval(e, dims)


def _coarse(f: For, dims):
    """(trips, step) of a loop `range(0, n, step)` with constant n a multiple of a positive
    step (`range(n)`: (n, 1)); None for any other loop."""
    n = _const(f.hi, dims)
    if f.step < 1 or _const(f.lo, dims) != 0 or not n or n % f.step:
        return None
    return n // f.step, f.step


def _band(f: For, dims) -> list:
    """The perfectly nested loops from `f` down that run `range(0, n, step)` with constant
    n (`_coarse`)."""
    band = []
    while isinstance(f, For) and _coarse(f, dims):
        band.append(f)
        if len(f.body) != 1:
            break
        f = f.body[0]
    return band


def _pairs(band: list, dims) -> list:
    """(coarse, fine) positions in `band` of loops its body uses only as `coarse * T + fine`
    (T the fine loop's extent)."""
    body, out, used = band[-1].body, [], set()
    for a, c in enumerate(band):
        for b, f in enumerate(band):
            if a == b or a in used or b in used:
                continue
            t = _const(f.hi, dims)
            if f.step != 1 or c.step not in (1, t):
                continue
            try:
                for x in body:
                    _map(x, _pair_map(c.var, f.var, t, dims, "_", stepped=c.step != 1))
            except _Keep:
                continue
            out.append((a, b))
            used |= {a, b}
    return out


def _reorder(s: For, dims, reorder_ok) -> For:
    """`s` with its band reordered so split pairs are adjacent, coarse first, as far as
    proven: pairs are taken one at a time, each kept only if the order with it and the
    pairs kept before is the same program (a split reduction axis is refused here, while
    an output axis split in the same band still merges)."""
    band = _band(s, dims)
    pairs = _pairs(band, dims) if len(band) > 1 else []
    identity = list(range(len(band)))
    kept: list = []
    for pair in pairs:
        trial = _order(len(band), kept + [pair])
        if trial == identity or reorder_ok(band, trial):
            kept.append(pair)
    order = _order(len(band), kept)
    if order == identity:
        return s
    body = band[-1].body
    for k in reversed(order):
        f = band[k]
        body = [For(f.loc, f.var, f.lo, f.hi, body, node=f.node, step=f.step)]
    return body[0]


def _order(n: int, pairs: list) -> list:
    """Band positions in the order that puts each (coarse, fine) pair together, coarse
    first, where the first of the two stood; the other loops keep their places."""
    order, placed = [], set()
    for k in range(n):
        if k in placed:
            continue
        pair = next((p for p in pairs if k in p), None)
        for x in (pair or (k,)):
            order.append(x)
            placed.add(x)
    return order


def _pair_map(j0: str, j1: str, t: int, dims, name: str, stepped: bool = False):
    """Index expressions with `j0 * t + j1` replaced by `name` (`stepped`: j0 counts in
    steps of t, `range(0, n, t)`, and `j0 + j1` is replaced); any other use of j0 or j1
    raises _Keep."""

    def ie(e):
        if stepped:
            if e[0] == "add" and {e[1], e[2]} == {("name", j0), ("name", j1)}:
                return ("name", name)
        elif e[0] == "add":
            for a, b in ((e[1], e[2]), (e[2], e[1])):
                if b == ("name", j1) and a[0] == "mul":
                    for x, y in ((a[1], a[2]), (a[2], a[1])):
                        if x == ("name", j0) and _const(y, dims) == t:
                            return ("name", name)
        if e[0] == "name" and e[1] in (j0, j1):
            raise _Keep
        if e[0] in ("int", "name"):
            return e
        return (e[0],) + tuple(ie(c) for c in e[1:])

    return ie


def _merge(outer: For, inner: For, dims, fresh):
    coarse = _coarse(outer, dims)
    if coarse is None or inner.step != 1 or _const(inner.lo, dims) != 0:
        return None
    (n0, step), t = coarse, _const(inner.hi, dims)
    if not t or step not in (1, t):
        return None
    j0, j1 = outer.var, inner.var
    name = f"{j0}_{j1}_{next(fresh)}"
    ie = _pair_map(j0, j1, t, dims, name, stepped=step != 1)
    try:
        body = [_map(b, ie) for b in inner.body]
    except _Keep:
        return None
    return For(outer.loc, name, ("int", 0), ("int", n0 * t), body, node=outer.node)


def _map(s, ie):
    """Statement `s` with every index expression mapped by `ie` (new objects throughout)."""
    if isinstance(s, For):
        return For(s.loc, s.var, ie(s.lo), ie(s.hi), [_map(b, ie) for b in s.body], node=s.node, step=s.step)
    if isinstance(s, If):
        return If(s.loc, _expr(s.cond, ie), [_map(b, ie) for b in s.body], [_map(b, ie) for b in s.orelse],
                  node=s.node)
    if isinstance(s, Store):
        return Store(s.loc, s.buf, tuple(ie(i) for i in s.idx), _expr(s.value, ie), s.aug, s.aug_op)
    if isinstance(s, Assign):
        return Assign(s.loc, s.name, _expr(s.value, ie), s.aug, s.aug_op)
    if isinstance(s, Alloc):
        return s
    raise _Keep


def _expr(e, ie):
    if isinstance(e, Index):
        return Index(e.loc, e.base, tuple(ie(i) for i in e.idx), ty=e.ty)
    if isinstance(e, Dim):
        out = ie(("name", e.name))
        if out != ("name", e.name):
            raise _Keep
        return e
    if isinstance(e, Bin):
        return Bin(e.loc, e.op, _expr(e.a, ie), _expr(e.b, ie), ty=e.ty)
    if isinstance(e, Call):
        return Call(e.loc, e.fn, tuple(_expr(a, ie) for a in e.args), ty=e.ty)
    if isinstance(e, MatMul):
        return MatMul(e.loc, _expr(e.a, ie), _expr(e.b, ie), ty=e.ty)
    if isinstance(e, Transpose):
        return Transpose(e.loc, _expr(e.x, ie), e.perm, ty=e.ty)
    if isinstance(e, Reshape):
        return Reshape(e.loc, _expr(e.x, ie), ty=e.ty)
    if isinstance(e, Compare):
        return Compare(e.loc, e.op, _expr(e.a, ie), _expr(e.b, ie), ty=e.ty)
    if isinstance(e, BoolOp):
        return BoolOp(e.loc, e.op, tuple(_expr(a, ie) for a in e.args), ty=e.ty)
    if isinstance(e, Select):
        return Select(e.loc, _expr(e.cond, ie), _expr(e.a, ie), _expr(e.b, ie), ty=e.ty)
    return e  # Const, Ref: no index inside


# ------------------------------------------------------------------ reductions
def merge_split_reductions(term, new_var, memo: dict):
    """`red[a<A] red[b<B] f(b * A + a)` -> `red[k<A*B] f(k)`, in either nesting order.

    A reduction over a split axis runs its two loops in whichever order they were written;
    as loops that order is fixed (the band reorder above refuses it: the accumulator
    orders every instance), but a `sum`, `max` or `min` term is a reduction over a set,
    whose order the functional IR leaves open, as it does for every reduction (summation
    order is what a matmul changes anyway). So a split reduction axis, coarse- or
    fine-first, becomes one plain axis, and the matmul, prologue and batched rules see
    the same form as for an unsplit loop. `new_var(extent)` makes the merged binder;
    `memo` (term -> merged) is one lowering's: a merged term names a binder of that
    lowering's, whose name another lowering gives another binder, of another extent (a
    process-wide memo made the second optimize() of a program panic in egglog: two extents
    of one variable).
    Only pairs whose variables appear nowhere but in `coarse * T + fine` (T the fine
    extent, the coarse extent times T the merged extent) merge.
    """
    from .terms import Node, postorder

    for x in postorder(term, memo):
        args = tuple(memo[a] if isinstance(a, Node) else a for a in x.args)
        n = Node(x.op, *args)
        if n.op == "Sc.red" and n.args[3].op == "Sc.red" and n.args[0] == n.args[3].args[0]:
            merged = _merge_reds(n, new_var)
            n = merged if merged is not None else n
        memo[x] = n
    return memo[term]


def _merge_reds(outer, new_var):
    from .terms import Node, postorder, rebuild

    kind, a, na, inner = outer.args
    _, b, nb, body = inner.args
    for coarse, fine, t, nc in ((a, b, nb, na), (b, a, na, nb)):
        k = new_var(nc * t)
        pat = {Node("Ix.add", Node("Ix.scale", Node("Ix.v", coarse), t), Node("Ix.v", fine)),
               Node("Ix.add", Node("Ix.v", fine), Node("Ix.scale", Node("Ix.v", coarse), t))}
        kv = Node("Ix.v", k)
        out = rebuild(body, lambda x: kv if x in pat else None)
        if not any(x.op == "Var.named" and x in (coarse, fine) for x in postorder(out)):
            return Node("Sc.red", kind, k, nc * t, out)
    return None
