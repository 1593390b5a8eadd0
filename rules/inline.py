"""Inline: a load from a computed tensor becomes the computation itself.

Preconditions:
  1. The tensor is `for[d] body` with an elementwise body (no reduction: inlining a
     reduction into another kernel recomputes it per element, and along a chain of
     layers it would copy every layer into every later one), or a leading-index slice,
     or a library matmul that depends on a loop variable (a library call inside a loop;
     a closed matmul already is what the matmul rule would find).
  2. For a library matmul, the operand shapes are known and agree.
  (Substitution needs no guard: every binder has a unique name.)

Before:  t = for[i<M, j<N] f(i, j);   ... t[p, q] ...
After:   ... f(p, q) ...

Before:  c[i] = a[i] @ w            (a library call inside a loop)
After:   c[i, p, q] = sum[k] a[i, p, k] * w[k, q]
"""
from __future__ import annotations

from egglog import i64, eq, rewrite, rule, ruleset, union

from eqsat.sorts import Dims, Ix, Ixs, Sc, Ten, Var, bind, open_, red_depth, shape_of, subst
from ._patterns import ixs, shp


@ruleset
def ruleset(t: Ten, a: Ten, b: Ten, d: Dims, body: Sc, s: Sc, idx: Ixs, ix: Ix, p: Ix, q: Ix, r: Ix,
            M: i64, N: i64, K: i64, B: i64):
    # (for[d] body)[idx] -> body[d := idx]
    yield rule(eq(s).to(Sc.load(Ten.compute(d, body), idx)), eq(red_depth(body)).to(i64(0))).then(
        union(s).with_(subst(body, bind(d, idx))))
    # (a[i])[idx] -> a[i, idx]
    yield rewrite(Sc.load(Ten.slice(a, ix), idx)).to(Sc.load(a, Ixs.cons(ix, idx)))

    # (A @ B)[p, q] -> sum[k<K] A[p, k] * B[k, q]
    k = Ix.v(Var.mmk(t, p, q))
    yield rule(eq(s).to(Sc.load(t, ixs(p, q))), eq(t).to(Ten.matmul(a, b)), open_(t),
               eq(shape_of(a)).to(shp(M, K)), eq(shape_of(b)).to(shp(K, N))).then(
        union(s).with_(Sc.red("sum", Var.mmk(t, p, q), K, Sc.mul(Sc.load(a, ixs(p, k)), Sc.load(b, ixs(k, q))))))
    # batched: (A @ B)[r, p, q] -> sum[k<K] A[r, p, k] * B[r, k, q]  (and the 3-D @ 2-D, 2-D @ 3-D forms)
    k3 = Var.mmk(t, p, Ix.add(q, r))
    kk = Ix.v(k3)
    for sa, sb, la, lb in (
        (shp(B, M, K), shp(B, K, N), ixs(r, p, kk), ixs(r, kk, q)),
        (shp(B, M, K), shp(K, N), ixs(r, p, kk), ixs(kk, q)),
        (shp(M, K), shp(B, K, N), ixs(p, kk), ixs(r, kk, q)),
    ):
        yield rule(eq(s).to(Sc.load(t, ixs(r, p, q))), eq(t).to(Ten.matmul(a, b)), open_(t),
                   eq(shape_of(a)).to(sa), eq(shape_of(b)).to(sb)).then(
            union(s).with_(Sc.red("sum", k3, K, Sc.mul(Sc.load(a, la), Sc.load(b, lb)))))
