"""Finite inputs: a mask on a product moves onto the factor it describes.

A triangular loop (`for k in range(i + 1, M): c[i, j] += a[k, i] * b[k, j]`) lowers to a
sum over the whole axis of `a[k, i] * b[k, j] if k > i else 0.0` (if-conversion widens it),
and the mask mentions only `a`'s indices. Moved onto `a`, it is `(a[k, i] if k > i else 0.0)
* b[k, j]`: a masked operand, which the prologue rule makes a tensor, and then a matmul.
The two differ only where the mask is false and `b[k, j]` is infinite or NaN: the loop
never multiplies there, the matmul computes 0 * inf = NaN. So this family holds only when
every input is finite, and it never runs in the exact search: `optimize()` runs it in a
second search where the program has a masked product, and keeps that plan only if the
model rates it cheaper, checks included; the plan then runs when every float parameter it
is called with is finite and falls back on the exact plan otherwise (`eqsat/assume.py`).

Preconditions:
  1. The product sits in a sum, under a select whose other branch is 0.0.
  2. The factor left outside the mask is a load of a program input (so the runtime check
     on the inputs covers every value it takes; a computed factor could overflow).

Before:  sum[k] (a[k, i] * b[k, j] if k > i else 0.0)
After:   sum[k] (a[k, i] if k > i else 0.0) * b[k, j]        (then: masked(a)^T @ b)

A guard that skips a zero factor is no mask at all for finite inputs:
Before:  sum[j] (x[j] * a[i, j] if x[j] != 0.0 else 0.0)    (old reference SGEMV, SSYRK)
After:   sum[j] x[j] * a[i, j]                               (then: a @ x)

A scalar parameter's factor (finite by the check) moves out of the
mask first, so that the algebra family takes it out of the sum and the product left has
two loads: `sum[i] (alpha * b[i, j] * a[i, k] if i > k else 0.0)` (symm) becomes
`alpha * sum[i] (a[i, k] if i > k else 0.0) * b[i, j]`. (Moving it changes rounding only,
as the algebra family's own reassociations do.)
"""
from __future__ import annotations

from egglog import String, i64, rewrite, ruleset

from eqsat.sorts import Ixs, Sc, Ten, Var


@ruleset
def ruleset(x: Sc, l: Sc, r: Sc, f: String, v: Var, n: i64, name: String, idx: Ixs, w: Sc, pname: String):
    y = Sc.load(Ten.input(name), idx)
    zero = Sc.lit(0.0)
    p = Sc.param(pname)  # (not a literal: the check does not see one; 1e39 is inf in f32)
    # (p * x) * w, (x * p) * w, x * (p * w), x * (w * p) -> p * (x * w), under a mask
    for prod in (Sc.mul(Sc.mul(p, x), w), Sc.mul(Sc.mul(x, p), w), Sc.mul(x, Sc.mul(p, w)), Sc.mul(x, Sc.mul(w, p))):
        yield rewrite(Sc.select(f, l, r, prod, zero)).to(Sc.select(f, l, r, Sc.mul(p, Sc.mul(x, w)), zero))
    # (p * x if m else 0.0) -> p * (x if m else 0.0)
    yield rewrite(Sc.select(f, l, r, Sc.mul(p, x), zero)).to(Sc.mul(p, Sc.select(f, l, r, x, zero)))
    yield rewrite(Sc.select(f, l, r, zero, Sc.mul(p, x))).to(Sc.mul(p, Sc.select(f, l, r, zero, x)))
    for prod in (Sc.mul(x, y), Sc.mul(y, x)):
        # a zero-skip guard on a factor (reference BLAS's `IF (X(J).NE.ZERO)`): where x is 0
        # the product is 0 * y = 0 for a finite y (its sign aside, which a sum does not keep)
        for guard in (Sc.select("!=", x, zero, prod, zero), Sc.select("!=", zero, x, prod, zero),
                      Sc.select("==", x, zero, zero, prod), Sc.select("==", zero, x, zero, prod)):
            yield rewrite(Sc.red("sum", v, n, guard)).to(Sc.red("sum", v, n, prod))
        # the mask on the product's true side, and on its false side
        yield rewrite(Sc.red("sum", v, n, Sc.select(f, l, r, prod, zero))).to(
            Sc.red("sum", v, n, Sc.mul(Sc.select(f, l, r, x, zero), y)))
        yield rewrite(Sc.red("sum", v, n, Sc.select(f, l, r, zero, prod))).to(
            Sc.red("sum", v, n, Sc.mul(Sc.select(f, l, r, zero, x), y)))
