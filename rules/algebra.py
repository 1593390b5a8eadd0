"""Algebra under a sum: constant factors and negation move out of a reduction.

Preconditions:
  1. The factor is a literal or a scalar parameter: it cannot depend on the summed variable.
  (Real-number identities; in floating point they change rounding only, as every
  reassociation a matmul makes does.)

    sum[v] -x          == -(sum[v] x)
    sum[v] c * x       == c * sum[v] x
    sum[v] (c * x) * y == sum[v] c * (x * y)

Before:  acc += alpha * a[i, k] * b[k, j]       (or  acc -= a[i, k] * b[k, j])
After:   y = alpha * (a @ b)                     (or  y = -(a @ b)): a matmul and an epilogue
"""
from __future__ import annotations

from egglog import String, f64, i64, rewrite, ruleset

from eqsat.sorts import Sc, Var


@ruleset
def ruleset(x: Sc, y: Sc, v: Var, n: i64, c: f64, p: String):
    # sum[v] -x -> -(sum[v] x)
    yield rewrite(Sc.red("sum", v, n, Sc.fn("neg", x))).to(Sc.fn("neg", Sc.red("sum", v, n, x)))
    for s in (Sc.lit(c), Sc.param(p)):
        # sum[v] s * x -> s * sum[v] x
        yield rewrite(Sc.red("sum", v, n, Sc.mul(s, x))).to(Sc.mul(s, Sc.red("sum", v, n, x)))
        # sum[v] (s * x) * y -> sum[v] s * (x * y)
        yield rewrite(Sc.red("sum", v, n, Sc.mul(Sc.mul(s, x), y))).to(Sc.red("sum", v, n, Sc.mul(s, Sc.mul(x, y))))
