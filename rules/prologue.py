"""Prologues: an elementwise operand of a contraction becomes a tensor of its own.

`sum[k] relu(a[i, k]) * b[k, j]` is a matmul of `relu(a)` and `b`; written as a loop
(or after inlining a loop that stored `ap[i, k] = relu(a[i, k])`) the product's operand is
an expression, not a load, and the matmul rule does not see it. This rule names the
expression as a tensor over the operand's axes, so the matmul rule matches; the plan then
evaluates that tensor while the matmul loads its operand tile (a fused prologue, see
`eqsat.cost`), so it costs no kernel and no memory round trip of its own.

Preconditions:
  1. The operand sits directly in a product under a sum (where a contraction can use it).
  2. Every load in it reads a closed tensor of one shape at the same plain, distinct
     index variables (an elementwise function of the operand's element), or (2-D) at
     those variables swapped (an element of the tensor's transpose), or (2-D) a
     vector at one of them (`a[i, k] * s[k]`, broadcast along the other axis); constants
     and scalar parameters may appear anywhere; no reduction.
  3. It is more than a load (a function, or two loads combined), so plain operands and
     constant factors (the algebra family's business) make no tensor.
  4. A conditional `a if l cmp r else b` is elementwise when its branches are (or are
     constants) and `l`, `r` are constants or the operand's own index variables (plus a
     constant offset): a triangular mask of the operand, `(a[k, i] if k > i else 0.0)`.
     The product keeps its meaning exactly: the masked operand is a value like any other
     (a masked-out 0 times an infinite other factor is NaN in the loop and in the matmul).

Before:  for[i, j] sum[k] relu(a[i, k]) * b[k, j]
After:   for[i, j] sum[k] (for[p, q] relu(a[p, q]))[i, k] * b[k, j]     (then: relu(a) @ b)
"""
from __future__ import annotations

from egglog import String, f64, i64, eq, ne, relation, rule, ruleset, union

from eqsat.sorts import Env, Ix, Ixs, Sc, Shp, Ten, Var, closed, shape_of, subst
from ._patterns import dims, ixs, shp

BINARY = (Sc.add, Sc.sub, Sc.mul, Sc.div, Sc.max, Sc.min)

operand = relation("operand", Sc)
"""operand(s): s is (part of) a factor of a product under a sum."""
elementwise = relation("elementwise", Sc, Ixs, Shp)
"""elementwise(s, idx, shape): every load in s reads a closed tensor of `shape` at `idx`."""
prologue_of = relation("prologue_of", Sc, Ixs, Shp)
"""prologue_of(s, idx, shape): elementwise, and more than one load (worth a tensor)."""
constant = relation("constant", Sc)
vector_at = relation("vector_at", Sc, Var)
"""vector_at(s, v): s loads a closed 1-D tensor at the plain index variable v."""
position = relation("position", Sc, Var)
"""position(s, v): s is the index variable v as a value, plus a constant offset or none."""
has_var = relation("has_var", Ixs, Var)
"""has_var(idx, v): the index list of an elementwise operand holds the plain variable v."""
fits = relation("fits", Sc, Ixs)
"""fits(s, idx): s is a constant, or a position at one of idx's variables (a mask's side)."""


@ruleset
def analysis(p: Sc, s: Sc, x: Sc, y: Sc, t: Ten, v: Var, i: Var, j: Var, r: Var, n: i64, f: String, c: f64,
             name: String, idx: Ixs, sh: Shp, M: i64, N: i64, B: i64, lhs: Sc, rhs: Sc, rest: Ixs, h: Ix, h2: Ix, o: i64):
    """Facts only: which operands are elementwise over one index list."""
    yield rule(eq(p).to(Sc.red("sum", v, n, Sc.mul(x, y)))).then(operand(x), operand(y))
    for op in BINARY:
        yield rule(operand(s), eq(s).to(op(x, y))).then(operand(x), operand(y))
    yield rule(operand(s), eq(s).to(Sc.fn(f, x))).then(operand(x))
    yield rule(operand(s), eq(s).to(Sc.lit(c))).then(constant(s))
    yield rule(operand(s), eq(s).to(Sc.param(name))).then(constant(s))
    # loads at plain, distinct variables (2-D and 3-D operands)
    yield rule(operand(s), eq(s).to(Sc.load(t, ixs(Ix.v(i), Ix.v(j)))), closed(t), ne(i).to(j),
               eq(shape_of(t)).to(shp(M, N))).then(elementwise(s, ixs(Ix.v(i), Ix.v(j)), shp(M, N)))
    # ... and a 2-D load at the operand's variables swapped is an element of the tensor's
    # transpose there (`A[k, j] if k >= j else A[j, k]`: a symmetric matrix from one triangle)
    yield rule(operand(s), eq(s).to(Sc.load(t, ixs(Ix.v(i), Ix.v(j)))), closed(t), ne(i).to(j),
               eq(shape_of(t)).to(shp(M, N))).then(elementwise(s, ixs(Ix.v(j), Ix.v(i)), shp(N, M)))
    yield rule(operand(s), eq(s).to(Sc.load(t, ixs(Ix.v(r), Ix.v(i), Ix.v(j)))), closed(t), ne(i).to(j),
               ne(r).to(i), ne(r).to(j), eq(shape_of(t)).to(shp(B, M, N))).then(
        elementwise(s, ixs(Ix.v(r), Ix.v(i), Ix.v(j)), shp(B, M, N)))
    yield rule(operand(s), eq(s).to(Sc.load(t, ixs(Ix.v(i)))), closed(t)).then(vector_at(s, i))
    for op in BINARY:
        yield rule(operand(s), eq(s).to(op(x, y)), elementwise(x, idx, sh), elementwise(y, idx, sh)).then(
            elementwise(s, idx, sh), prologue_of(s, idx, sh))
        # a 2-D element combined with a vector along one of its axes: still elementwise
        for e, k in ((x, y), (y, x)):
            for w in (i, j):
                yield rule(operand(s), eq(s).to(op(x, y)), elementwise(e, ixs(Ix.v(i), Ix.v(j)), shp(M, N)),
                           vector_at(k, w)).then(
                    elementwise(s, ixs(Ix.v(i), Ix.v(j)), shp(M, N)), prologue_of(s, ixs(Ix.v(i), Ix.v(j)), shp(M, N)))
        for e, k in ((x, y), (y, x)):
            yield rule(operand(s), eq(s).to(op(x, y)), elementwise(e, idx, sh), constant(k)).then(
                elementwise(s, idx, sh))
            yield rule(operand(s), eq(s).to(op(x, y)), prologue_of(e, idx, sh), constant(k)).then(
                prologue_of(s, idx, sh))
    yield rule(operand(s), eq(s).to(Sc.fn(f, x)), elementwise(x, idx, sh)).then(
        elementwise(s, idx, sh), prologue_of(s, idx, sh))

    # masks (precondition 4): `x if lhs cmp rhs else y` over the operand's own variables
    yield rule(operand(s), eq(s).to(Sc.select(f, lhs, rhs, x, y))).then(
        operand(lhs), operand(rhs), operand(x), operand(y))
    for ix in (Ix.v(v), Ix.add(Ix.v(v), Ix.lit(o)), Ix.add(Ix.lit(o), Ix.v(v))):
        yield rule(operand(s), eq(s).to(Sc.idx(ix))).then(position(s, v))
    for lst in (Ixs.cons(Ix.v(v), rest), Ixs.cons(h, Ixs.cons(Ix.v(v), rest)),
                Ixs.cons(h, Ixs.cons(h2, Ixs.cons(Ix.v(v), rest)))):
        yield rule(elementwise(x, idx, sh), eq(idx).to(lst)).then(has_var(idx, v))
    yield rule(elementwise(x, idx, sh), position(s, v), has_var(idx, v)).then(fits(s, idx))
    yield rule(elementwise(x, idx, sh), constant(s)).then(fits(s, idx))
    yield rule(elementwise(s, idx, sh)).then(fits(s, idx))  # a condition on the operand's own elements
    # one branch elementwise, the other elementwise too or a constant
    for a, b_ok in ((x, elementwise(y, idx, sh)), (x, constant(y)), (y, constant(x))):
        yield rule(operand(s), eq(s).to(Sc.select(f, lhs, rhs, x, y)), elementwise(a, idx, sh), b_ok,
                   fits(lhs, idx), fits(rhs, idx)).then(elementwise(s, idx, sh), prologue_of(s, idx, sh))


@ruleset
def ruleset(p: Sc, x: Sc, y: Sc, v: Var, i: Var, j: Var, r: Var, n: i64, M: i64, N: i64, B: i64):
    for factor in (lambda: Sc.mul(x, y), lambda: Sc.mul(y, x)):
        # x(a[i, j], c[i, j], ...) -> (for[p<M, q<N] x(a[p, q], c[p, q], ...))[i, j]
        p0, p1 = Var.axis(0, M), Var.axis(1, N)
        env = Env.cons(i, Ix.v(p0), Env.cons(j, Ix.v(p1), Env.nil()))
        yield rule(eq(p).to(Sc.red("sum", v, n, factor())), prologue_of(x, ixs(Ix.v(i), Ix.v(j)), shp(M, N))).then(
            union(x).with_(Sc.load(Ten.compute(dims((p0, M), (p1, N)), subst(x, env)), ixs(Ix.v(i), Ix.v(j)))))
        q0, q1, q2 = Var.axis(0, B), Var.axis(1, M), Var.axis(2, N)
        env3 = Env.cons(r, Ix.v(q0), Env.cons(i, Ix.v(q1), Env.cons(j, Ix.v(q2), Env.nil())))
        yield rule(eq(p).to(Sc.red("sum", v, n, factor())),
                   prologue_of(x, ixs(Ix.v(r), Ix.v(i), Ix.v(j)), shp(B, M, N))).then(
            union(x).with_(Sc.load(Ten.compute(dims((q0, B), (q1, M), (q2, N)), subst(x, env3)),
                                   ixs(Ix.v(r), Ix.v(i), Ix.v(j)))))
