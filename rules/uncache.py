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

from eqsat.sorts import Ix, Sc, Ten, Var, closed, shape_of
from ._patterns import all_perms, dims, ixs, perm_str, shp


@ruleset
def ruleset(t: Ten, x: Ten, u0: Var, u1: Var, u2: Var, n0: i64, n1: i64, n2: i64):
    us, ns = [u0, u1, u2], [n0, n1, n2]
    for pi in all_perms(3):
        r = len(pi)
        out_dims = dims(*zip(us[:r], ns[:r]))
        load_idx = ixs(*[Ix.v(us[pi[b]]) for b in range(r)])  # X[u_pi(0), u_pi(1), ...]
        x_shape = shp(*[ns[pi[b]] for b in range(r)])
        distinct = [ne(us[a]).to(us[b]) for a in range(r) for b in range(a + 1, r)]
        inv = [pi.index(a) for a in range(r)]  # out[u] = X[j] with j[pi^-1(a)] = u[a]
        target = x if list(pi) == list(range(r)) else Ten.transpose(x, perm_str(inv))
        # for[u] X[u permuted] -> transpose(X)  (a copy when the permutation is the identity)
        yield rule(eq(t).to(Ten.compute(out_dims, Sc.load(x, load_idx))), closed(x),
                   eq(shape_of(x)).to(x_shape), *distinct).then(union(t).with_(target))
