"""Algebra under a sum: constant factors and negation move out of a reduction, and a sum
of a sum or difference splits in two.

Preconditions:
  1. The factor is a literal or a scalar parameter: it cannot depend on the summed variable;
     a literal one a finite, normal float32 (not inf, 1e39, 0 or 1e-46).
  (Real-number identities; in floating point they change rounding only, as every
  reassociation a matmul makes does, and for a finite factor only: with alpha = inf a
  zero term is NaN in the sum and the product alpha * sum is inf, so a plan of a program
  with float scalar parameters checks them on every call and runs the program as
  written where one is inf or NaN: `Plan.checked_scalars`.)

    sum[v] -x          == -(sum[v] x)
    sum[v] (x + y)     == sum[v] x + sum[v] y    (and x - y): two products in one loop,
                                                 `acc += a[i, k] * b[j, k] + b[i, k] * a[j, k]`,
                                                 become two matmuls (syr2k)
    sum[v] c * x       == c * sum[v] x
    sum[v] (c * x) * y == sum[v] c * (x * y)     and the constant in any other place of a
    sum[v] x * (c * y), x * (y * c), (x * c) * y     two-factor product
    0 + sum[v] x == sum[v] x == sum[v] x + 0     (a zero initialization, `c = 0` then `c += ...`;
                                                 of a sum only: 0 + x is not x where x is -0.0)
    -0.0 + x == x == x + -0.0                    (of anything: -0.0 is the additive identity)
    (x if k == c else y) == x or y               k an index literal, c a literal: the side taken
    sum[v] (x if m else 0) == (sum[v] x) if m else 0
                                                 where the mask m compares index values that
                                                 do not mention v, or literals (a triangular
                                                 nest made a masked form: `j <= i` under a
                                                 sum over k; a loop over part of an axis,
                                                 `i < 27`)

Before:  acc += alpha * a[i, k] * b[k, j]       (or  acc -= a[i, k] * b[k, j],  a[i, k] * (b[k, j] * 0.5))
After:   y = alpha * (a @ b)                     (or  y = -(a @ b)): a matmul and an epilogue

Before:  for i, j: c[i, j] = 0.0;  for i, j, k: c[i, j] += a[i, k] * b[k, j]
After:   c = a @ b                               (no `add` of zeros blocking the next epilogue)
"""
from __future__ import annotations

from egglog import String, f64, i64, ne, rewrite, rule, ruleset, union, eq

from eqsat.sorts import Ix, Ixs, Sc, Ten, Var

F32_MAX = 3.4028234663852886e38  # the largest finite float32
F32_NORMAL_MIN = 1.1754943508222875e-38  # the smallest normal float32


def _index_values(v, w, u, k, c):
    """Index-value operands of a mask that do not mention `v`, and literals: (pattern,
    guards) pairs."""
    return [(Sc.idx(Ix.v(w)), [ne(w).to(v)]),
            (Sc.idx(Ix.add(Ix.v(w), Ix.lit(k))), [ne(w).to(v)]),
            (Sc.idx(Ix.add(Ix.lit(k), Ix.v(w))), [ne(w).to(v)]),
            (Sc.idx(Ix.lit(k)), []),
            (Sc.lit(c), [])]


@ruleset
def ruleset(x: Sc, y: Sc, v: Var, n: i64, c: f64, p: String, red: Sc, w: Var, u: Var, k: i64, k2: i64,
            cmp: String, c1: f64, c2: f64, ta: Ten, tb: Ten, tc: Ten, ia: Ixs, ib: Ixs, ic: Ixs,
            f: String, l1: Sc, r1: Sc, l2: Sc, r2: Sc):
    # sum[v] -x -> -(sum[v] x)
    yield rewrite(Sc.red("sum", v, n, Sc.fn("neg", x))).to(Sc.fn("neg", Sc.red("sum", v, n, x)))
    # sum[v] (x + y) -> sum[v] x + sum[v] y, and for x - y
    yield rewrite(Sc.red("sum", v, n, Sc.add(x, y))).to(Sc.add(Sc.red("sum", v, n, x), Sc.red("sum", v, n, y)))
    yield rewrite(Sc.red("sum", v, n, Sc.sub(x, y))).to(Sc.sub(Sc.red("sum", v, n, x), Sc.red("sum", v, n, y)))
    # a literal factor or divisor only where it is a finite, normal float32 (as the program
    # rounds it): `sum[i] x[i] * inf` is NaN for terms of both signs where `inf * sum` is
    # +-inf, `1e39` is inf, `1e-46` is 0 (a division by it +-inf in every term), and a zero
    # factor's product keeps the sign of the sum where the sum of its terms is 0.0
    finite = [c < F32_MAX, c > -F32_MAX, c * c >= F32_NORMAL_MIN * F32_NORMAL_MIN]
    for s, guard in ((Sc.lit(c), finite), (Sc.param(p), [])):
        # sum[v] s * x -> s * sum[v] x
        yield rewrite(Sc.red("sum", v, n, Sc.mul(s, x))).to(Sc.mul(s, Sc.red("sum", v, n, x)), *guard)
        # sum[v] (s * x) * y -> sum[v] s * (x * y)
        yield rewrite(Sc.red("sum", v, n, Sc.mul(Sc.mul(s, x), y))).to(
            Sc.red("sum", v, n, Sc.mul(s, Sc.mul(x, y))), *guard)
        # the constant elsewhere in a two-factor product under a sum -> in front
        for prod in (Sc.mul(x, Sc.mul(s, y)), Sc.mul(x, Sc.mul(y, s)), Sc.mul(Sc.mul(x, s), y)):
            yield rewrite(Sc.red("sum", v, n, prod)).to(Sc.red("sum", v, n, Sc.mul(s, Sc.mul(x, y))), *guard)
    # a division by a literal or a parameter: sum[v] x / s -> (sum[v] x) / s, and the
    # quotient as a factor, (x / s) * y and x * (y / s). Not for s = 0 (terms of both signs
    # give NaN in the sum, +-inf after it): a literal is guarded here, a parameter checked on
    # every call (`Plan.checked_scalars`: a zero divisor runs the program as written)
    for s, guard in ((Sc.lit(c), finite), (Sc.param(p), [])):
        yield rewrite(Sc.red("sum", v, n, Sc.div(x, s))).to(Sc.div(Sc.red("sum", v, n, x), s), *guard)
        for prod in (Sc.mul(Sc.div(x, s), y), Sc.mul(x, Sc.div(y, s))):
            yield rewrite(Sc.red("sum", v, n, prod)).to(Sc.div(Sc.red("sum", v, n, Sc.mul(x, y)), s), *guard)
    # a product of three loads under a sum grouped each way, so the factor that goes with
    # an operand (a column scale `s[j]` with `b[k, j]`) can be its prologue: `(a[i, k] *
    # b[k, j]) * s[j]` -> `a[i, k] * (b[k, j] * s[j])` (loads only: a longer product's
    # groupings would multiply)
    la, lb, lc = Sc.load(ta, ia), Sc.load(tb, ib), Sc.load(tc, ic)
    yield rewrite(Sc.red("sum", v, n, Sc.mul(Sc.mul(la, lb), lc))).to(Sc.red("sum", v, n, Sc.mul(la, Sc.mul(lb, lc))))
    yield rewrite(Sc.red("sum", v, n, Sc.mul(Sc.mul(la, lb), lc))).to(Sc.red("sum", v, n, Sc.mul(lb, Sc.mul(la, lc))))
    yield rewrite(Sc.red("sum", v, n, Sc.mul(la, Sc.mul(lb, lc)))).to(Sc.red("sum", v, n, Sc.mul(Sc.mul(la, lb), lc)))
    # sum[v] (x if m else 0) -> (sum[v] x) if m else 0, for a mask of index values free of v
    zero = Sc.lit(0.0)
    for lhs, g1 in _index_values(v, w, u, k, c1):
        for rhs, g2 in _index_values(v, u, w, k2, c2):
            for then_x in (True, False):
                sel = Sc.select(cmp, lhs, rhs, x, zero) if then_x else Sc.select(cmp, lhs, rhs, zero, x)
                out = Sc.select(cmp, lhs, rhs, Sc.red("sum", v, n, x), zero) if then_x else \
                    Sc.select(cmp, lhs, rhs, zero, Sc.red("sum", v, n, x))
                yield rule(eq(red).to(Sc.red("sum", v, n, sel)), *g1, *g2).then(union(red).with_(out))
    # two masks with zero else-branches nest either way: (x if m1 else 0) if m2 else 0 is x
    # where both hold, 0 elsewhere, in either order (a NaN comparison is false in both), so
    # the one a rule wants innermost can be (a zero-skip guard around a triangle's loop)
    yield rewrite(Sc.select(cmp, l1, r1, Sc.select(f, l2, r2, x, zero), zero)).to(
        Sc.select(f, l2, r2, Sc.select(cmp, l1, r1, x, zero), zero))
    # a zero start of an accumulation: 0 + sum -> sum. Of a sum only: 0.0 + x is x but for
    # x = -0.0 (0.0 + -0.0 is 0.0, and 1 / it inf, not -inf), and the program's sum, which
    # starts from 0.0, is never -0.0; a kernel's sum is -0.0 only where every term is
    yield rewrite(Sc.add(Sc.lit(0.0), Sc.red("sum", v, n, x))).to(Sc.red("sum", v, n, x))
    yield rewrite(Sc.add(Sc.red("sum", v, n, x), Sc.lit(0.0))).to(Sc.red("sum", v, n, x))
    # a start of -0.0 (eqsat/reroll.py's, for an accumulator started at its first term):
    # -0.0 + x is x for every x, -0.0 and NaN included
    yield rewrite(Sc.add(Sc.fn("neg", Sc.lit(0.0)), x)).to(x)
    yield rewrite(Sc.add(x, Sc.fn("neg", Sc.lit(0.0)))).to(x)
    # a select on whether an index literal equals a literal (a keepdims axis's `z == 0`, read
    # at z = 0, leaves one) is the side the comparison takes; == and != only (for a NaN
    # literal egglog orders NaN above every number, where Python's < is false)
    for left, right in ((Sc.idx(Ix.lit(k)), Sc.lit(c)), (Sc.lit(c), Sc.idx(Ix.lit(k)))):
        same, other = eq(f64.from_i64(k)).to(c), ne(f64.from_i64(k)).to(c)
        yield rule(eq(red).to(Sc.select("==", left, right, x, y)), same).then(union(red).with_(x))
        yield rule(eq(red).to(Sc.select("==", left, right, x, y)), other).then(union(red).with_(y))
        yield rule(eq(red).to(Sc.select("!=", left, right, x, y)), same).then(union(red).with_(y))
        yield rule(eq(red).to(Sc.select("!=", left, right, x, y)), other).then(union(red).with_(x))
