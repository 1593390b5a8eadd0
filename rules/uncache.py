"""Uncache: a buffer that is a copy, or a permuted copy, of another is read through to it.

Preconditions:
  1. The tensor is `for[i0<n0, ...] X[i_perm...]`: each axis variable used exactly once.
  2. X is closed and its shape is the permuted output shape (full ranges).

Before:  bt = for[k<K, j<N] b[j, k];   c = ... bt[k, j] ...
After:   bt = transpose(b, (1, 0))     (a view: no kernel, no copy)

Before:  tmp = for[i, j] f(i, j);  out = for[i, j] tmp[i, j]
After:   out = tmp                     (copy elimination)
"""
from __future__ import annotations

from egglog import i64, eq, ne, rule, ruleset, union

from eqsat.sorts import Dims, Ix, Ixs, Sc, Ten, closed, dshape, dvars, permuted_shape, permuted_vars, shape_of
from ._patterns import all_perms, ixs, perm_str, shp


@ruleset
def ruleset(t: Ten, x: Ten, d: Dims, idx: Ixs, w0: Ix, w1: Ix, w2: Ix, n0: i64, n1: i64, n2: i64):
    # The output axes and their extents are read through `dvars(d)` / `dshape(d)` (the
    # support rules' list views of d), not by destructuring `d` itself: a pattern sharing
    # its extent variables between `d` and the operand's shape made egglog 13 match
    # a permuted copy as a plain one (a transposed copy read back as its source) when
    # two extents are equal. tests/test_soundness.py holds that program.
    copy = eq(t).to(Ten.compute(d, Sc.load(x, idx)))
    # for[u] X[u] -> X  (copy elimination)
    yield rule(copy, closed(x), eq(idx).to(dvars(d)),
               eq(shape_of(x)).to(dshape(d))).then(union(t).with_(x))
    ws, ns = [w0, w1, w2], [n0, n1, n2]
    for pi in all_perms(3):
        r = len(pi)
        if list(pi) == list(range(r)):
            continue
        inv = [pi.index(a) for a in range(r)]  # out[u] = X[j] with j[pi^-1(a)] = u[a]
        distinct = [ne(ws[a]).to(ws[b]) for a in range(r) for b in range(a + 1, r)]
        p = perm_str(pi)
        # In two rules: a copy's output variables and extents, permuted, as lists of their
        # own; then a read through the permuted list is one join on its e-class. One rule
        # joining the index lists element by element (the variables w shared between
        # dvars(d) and idx) let egglog's planner enumerate the cross product of every
        # copy's lists first: 2.6 s of one step on a 200-layer chain, quadratic in layers.
        yield rule(copy, eq(dvars(d)).to(ixs(*ws[:r])), eq(dshape(d)).to(shp(*ns[:r])), *distinct).then(
            union(permuted_vars(d, p)).with_(ixs(*[ws[pi[b]] for b in range(r)])),
            union(permuted_shape(d, p)).with_(shp(*[ns[pi[b]] for b in range(r)])))
        # for[u] X[u permuted] -> transpose(X)  (a view: no kernel, no copy)
        yield rule(copy, closed(x), eq(idx).to(permuted_vars(d, p)),
                   eq(shape_of(x)).to(permuted_shape(d, p))).then(union(t).with_(Ten.transpose(x, perm_str(inv))))
