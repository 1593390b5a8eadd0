"""Epilogue fusion: elementwise work on a matmul's result joins the matmul's kernel.

Preconditions:
  1. The tensor is `for[d] body` where body reads the matmul at exactly d's variables
     (the element the kernel's accumulator holds), through elementwise operations.
  2. The matmul's shape equals d's extents.

Before:  acc = A @ B;  y = for[i, j] relu(acc[i, j] + bias[j])
After:   y = fused[i, j](A @ B) relu(acc[i, j] + bias[j])   (one kernel; the product is never stored)

`fused(d, body, mm)` means exactly `for[d] body`; it only records that mm[d] is the
kernel's accumulator.

Bias along rows or columns, transposed epilogue operands, residuals, scalars
(alpha/beta) and the activations are all just elementwise bodies.

A later stage reading a fused result gets the body substituted flat (`bind_flat`): the
body's e-class also holds the product's loop form (a reduction), and a substitution that
entered reductions copied it into every reader, nesting each layer of a loop-written
chain in the next (3 layers: 2k -> 164k e-nodes in one step). Readers that recompute
the same product then share it as one kernel after extraction (eqsat/alpha.py).
"""
from __future__ import annotations

from egglog import String, eq, relation, rule, ruleset, union

from eqsat.sorts import Dims, Ixs, Sc, Ten, bind_flat, closed, dshape, dvars, shape_of, subst

reads_mm = relation("reads_mm", Sc, Ten, Ixs)
"""reads_mm(s, mm, idx): s contains mm[idx] under elementwise operations only."""

pointwise_ctx = relation("pointwise_ctx", Sc)
"""pointwise_ctx(s): s sits in a computation's body under elementwise operations only
(not inside a reduction)."""


@ruleset
def analysis(mm: Ten, a: Ten, b: Ten, s: Sc, x: Sc, y: Sc, idx: Ixs, f: String, z: Sc, w: Sc, d: Dims):
    """Facts only (saturated with the support rules): where matmul results are read, and
    which scalars a later stage reads elementwise."""
    yield rule(eq(s).to(Sc.load(mm, idx)), eq(mm).to(Ten.matmul(a, b)), closed(mm)).then(reads_mm(s, mm, idx))
    yield rule(Ten.compute(d, s)).then(pointwise_ctx(s))
    for op in (Sc.add, Sc.sub, Sc.mul, Sc.div, Sc.max, Sc.min):
        yield rule(pointwise_ctx(s), eq(s).to(op(x, y))).then(pointwise_ctx(x), pointwise_ctx(y))
    yield rule(pointwise_ctx(s), eq(s).to(Sc.fn(f, x))).then(pointwise_ctx(x))
    yield rule(pointwise_ctx(s), eq(s).to(Sc.select(f, x, y, z, w))).then(
        pointwise_ctx(x), pointwise_ctx(y), pointwise_ctx(z), pointwise_ctx(w))
    for op in (Sc.add, Sc.sub, Sc.mul, Sc.div, Sc.max, Sc.min):
        yield rule(reads_mm(x, mm, idx), eq(s).to(op(x, y))).then(reads_mm(s, mm, idx))
        yield rule(reads_mm(y, mm, idx), eq(s).to(op(x, y))).then(reads_mm(s, mm, idx))
    yield rule(reads_mm(x, mm, idx), eq(s).to(Sc.fn(f, x))).then(reads_mm(s, mm, idx))
    # `acc if acc > 0 else 0.1 * acc`: the accumulator in any operand of a select
    for pos in range(4):
        parts = [x, y, z, w]
        parts[pos], parts[0] = parts[0], parts[pos]
        yield rule(reads_mm(x, mm, idx), eq(s).to(Sc.select(f, *parts))).then(reads_mm(s, mm, idx))


@ruleset
def ruleset(t: Ten, mm: Ten, d: Dims, body: Sc, s: Sc, idx: Ixs):
    # a later stage reads a fused result elementwise: it is the fused body at that element
    # (elementwise over the accumulator by construction), so the stages fuse into one
    # epilogue (`c = -(a @ b)` then `c = gelu(c)`: one kernel, not a matmul and a pointwise
    # kernel). Not into a reduction's body: there it would recompute the epilogue for
    # every step (the prologue family's job, on the operands of a product), and along a
    # loop-written chain each layer's body, substituted into the next layer's product
    # with a new index list each time, multiplied the forms of every later layer
    yield rule(eq(s).to(Sc.load(Ten.fused(d, body, mm), idx)), pointwise_ctx(s)).then(
        union(s).with_(subst(body, bind_flat(d, idx))))
    # for[d] body(mm[d]) -> fused[d](mm) body
    yield rule(eq(t).to(Ten.compute(d, body)), reads_mm(body, mm, dvars(d)), eq(shape_of(mm)).to(dshape(d))).then(
        union(t).with_(Ten.fused(d, body, mm)))
