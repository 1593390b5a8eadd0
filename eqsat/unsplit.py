"""Loop unsplitting: `for j0 in range(N // T): for j1 in range(T): ... x[j0 * T + j1]`
is `for j in range(N): ... x[j]` when j0 and j1 appear only as `j0 * T + j1`.

Both run the same iterations in the same order (j = j0 * T + j1 counts 0, 1, ... N - 1),
so the nest means exactly the same; what changes is that every access is a plain loop
variable again, so the lowering finds full-tensor definitions and the rules find
matmuls and fused epilogues without any split-specific pattern. Only the functional
form is built from the merged nest (its dataflow is checked on it); the nest as written
still runs as written. Loops split in the other order (`j1` outer) run a different
order and are left alone (the matmul rules' reshape views handle their loads).
"""
from __future__ import annotations

import copy
from itertools import count

from .ir import Alloc, Assign, BoolOp, Call, Compare, Dim, For, If, Index, Select, Store, Transpose, Bin, MatMul, \
    ie_eval, ie_names

class _Keep(Exception):
    """A split variable is used some other way: this pair stays split."""


def unsplit(s, dims: dict, fresh=None):
    """A copy of statement `s` with every mergeable pair of nested loops merged (merged
    loops are named from `fresh`, a counter the lowering owns: names are deterministic)."""
    fresh = count() if fresh is None else fresh
    if isinstance(s, If):
        return If(s.loc, s.cond, [unsplit(b, dims, fresh) for b in s.body], [unsplit(b, dims, fresh) for b in s.orelse],
                  node=s.node)
    if not isinstance(s, For):
        return s
    body = [unsplit(b, dims, fresh) for b in s.body]
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


def _merge(outer: For, inner: For, dims, fresh):
    if outer.step != 1 or inner.step != 1 or _const(outer.lo, dims) != 0 or _const(inner.lo, dims) != 0:
        return None
    n0, t = _const(outer.hi, dims), _const(inner.hi, dims)
    if not n0 or not t:
        return None
    j0, j1 = outer.var, inner.var
    name = f"{j0}_{j1}_{next(fresh)}"

    def ie(e):
        if e[0] == "add":
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
    if isinstance(e, Compare):
        return Compare(e.loc, e.op, _expr(e.a, ie), _expr(e.b, ie), ty=e.ty)
    if isinstance(e, BoolOp):
        return BoolOp(e.loc, e.op, tuple(_expr(a, ie) for a in e.args), ty=e.ty)
    if isinstance(e, Select):
        return Select(e.loc, _expr(e.cond, ie), _expr(e.a, ie), _expr(e.b, ie), ty=e.ty)
    return e  # Const, Ref: no index inside
