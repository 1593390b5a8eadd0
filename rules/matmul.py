"""Loop nest to matmul.

Loop variables are classified by which operands index with them, as FreeTensor's
`as_matmul` and nvFuser do: A and C -> M, B and C -> N, A and B -> K, all three -> batch.
After lowering a nest is `for[out axes] sum[k] A[..] * B[..]`, so any loop order,
scalar or buffer accumulators and temporaries have already become this one form;
transposed operand layouts come from transpose folding, operand order from `x*y = y*x`.

Preconditions:
  1. The reduction is a sum over the full range of K (the extent equals the operands' K).
  2. Each operand is indexed with exactly the plain variables the pattern names,
     over full ranges (its shape equals the pattern's extents): no diagonal, no offset.
  3. The variables are distinct; the operands are closed (they do not depend on the
     output element, so nothing reads the tensor being written).
  4. The product is a real multiply-add: a max-plus "matmul" is not one.

Before:  for[i<M, j<N] sum[k<K] A[i, k] * B[k, j]
After:   A @ B
Batched: for[b, i, j] sum[k] A[b, i, k] * B[b, k, j]  ->  A @ B (3-D @ 3-D)
Shared:  for[b, i, j] sum[k] A[b, i, k] * B[k, j]     ->  A @ B (one GEMM over b*M rows)
Vector:  for[i] sum[k] A[i, k] * x[k]  ->  reshape(A @ reshape(x, [K, 1]), [M])   (a GEMV)
Several: for[i, j] sum[k1] sum[k2] A[i, k1, k2] * B[k1, k2, j]
         ->  reshape(A, [M, K1*K2]) @ reshape(B, [K1*K2, N])   (row-major flattening)
Batch2:  for[r, q, i, j] sum[k] A[r, q, i, k] * B[r, q, k, j]
         ->  reshape(reshape(A, [B*H, M, K]) @ reshape(B, [B*H, K, N]), [B, H, M, N])
Split:   A[i0 * T + i1, k]  ->  reshape(A, [M/T, T, K])[i0, i1, k]
         when i1 takes exactly T values and i0 exactly M/T (full ranges), so a loop split
         into tiles reads the same elements through a view, and the 3-D form above applies.
"""
from __future__ import annotations

from egglog import i64, eq, ne, relation, rewrite, rule, ruleset, union

from eqsat.sorts import Ix, Ixs, Sc, Shp, Ten, Var, closed, extent, shape_of
from ._patterns import dims, ixs, shp


mm_candidate = relation("mm_candidate", Ten, Ten, Ten, Shp, Shp)
"""mm_candidate(t, A, B, shape A must have, shape B must have): t has a matmul's loop structure."""
gemv_candidate = relation("gemv_candidate", Ten, Ten, Ten, i64, i64)
"""gemv_candidate(t, A, x, M, K): t is for[i<M] sum[k<K] A[i, k] * x[k]."""
mm_k2_candidate = relation("mm_k2_candidate", Ten, Ten, Ten, i64, i64, i64, i64)
"""mm_k2_candidate(t, A, B, M, K, K2, N): t is for[i<M, j<N] sum[k<K] sum[k2<K2] A[i,k,k2] * B[k,k2,j]."""
mm_b2_candidate = relation("mm_b2_candidate", Ten, Ten, Ten, i64, i64, i64, i64, i64)
"""mm_b2_candidate(t, A, B, B, H, M, K, N): t is for[r<B, q<H, i<M, j<N] sum[k<K] A[r,q,i,k] * B[r,q,k,j]."""


@ruleset
def analysis(t: Ten, a: Ten, b: Ten, i: Var, j: Var, k: Var, r: Var, q: Var, k2: Var, M: i64, N: i64, K: i64,
             B: i64, H: i64, K2: i64):
    """Facts only (saturated with the support rules): loop nests shaped like a matmul.

    Matching the structure first and checking shapes after, in a second rule over the
    candidates found, keeps every join selective. In one rule, egglog's query plan can
    start from the shape tables: with every layer of a network the same size that pairs
    every tensor with every other, and the two-batch-axis rule written as one query spent
    90 s in a step of a 1,300-node e-graph that held no 4-D tensor at all (a batched
    row-buffer matmul with a clamp epilogue; tests/test_matmul_rules.py).
    """
    vi, vj, vk, vr = Ix.v(i), Ix.v(j), Ix.v(k), Ix.v(r)
    cases = [
        # for[i<M, j<N] sum[k<K] A[i,k] * B[k,j] -> A @ B
        (dims((i, M), (j, N)), ixs(vi, vk), ixs(vk, vj), shp(M, K), shp(K, N), [i, j, k]),
        # for[r<B, i<M, j<N] sum[k<K] A[r,i,k] * B[r,k,j] -> A @ B (batched)
        (dims((r, B), (i, M), (j, N)), ixs(vr, vi, vk), ixs(vr, vk, vj), shp(B, M, K), shp(B, K, N), [r, i, j, k]),
        # for[r<B, i<M, j<N] sum[k<K] A[r,i,k] * B[k,j] -> A @ B (shared right operand: one GEMM)
        (dims((r, B), (i, M), (j, N)), ixs(vr, vi, vk), ixs(vk, vj), shp(B, M, K), shp(K, N), [r, i, j, k]),
        # for[r<B, i<M, j<N] sum[k<K] A[i,k] * B[r,k,j] -> A @ B (shared left operand)
        (dims((r, B), (i, M), (j, N)), ixs(vi, vk), ixs(vr, vk, vj), shp(M, K), shp(B, K, N), [r, i, j, k]),
    ]
    for out_dims, ia, ib, sa, sb, vars_ in cases:
        distinct = [ne(vars_[p]).to(vars_[q]) for p in range(len(vars_)) for q in range(p + 1, len(vars_))]
        yield rule(
            eq(t).to(Ten.compute(out_dims, Sc.red("sum", k, K, Sc.mul(Sc.load(a, ia), Sc.load(b, ib))))),
            *distinct,
        ).then(mm_candidate(t, a, b, sa, sb))
    # matrix-vector, a contraction over two axes, two batch axes (see `ruleset`)
    yield rule(
        eq(t).to(Ten.compute(dims((i, M)), Sc.red("sum", k, K, Sc.mul(Sc.load(a, ixs(vi, vk)), Sc.load(b, ixs(vk)))))),
        ne(i).to(k),
    ).then(gemv_candidate(t, a, b, M, K))
    vk2 = Ix.v(k2)
    yield rule(
        eq(t).to(Ten.compute(dims((i, M), (j, N)), Sc.red("sum", k, K, Sc.red("sum", k2, K2, Sc.mul(
            Sc.load(a, ixs(vi, vk, vk2)), Sc.load(b, ixs(vk, vk2, vj))))))),
        *[ne(x).to(y) for x, y in ((i, j), (i, k), (i, k2), (j, k), (j, k2), (k, k2))],
    ).then(mm_k2_candidate(t, a, b, M, K, K2, N))
    vq = Ix.v(q)
    yield rule(
        eq(t).to(Ten.compute(dims((r, B), (q, H), (i, M), (j, N)), Sc.red("sum", k, K, Sc.mul(
            Sc.load(a, ixs(vr, vq, vi, vk)), Sc.load(b, ixs(vr, vq, vk, vj)))))),
        *[ne(x).to(y) for x, y in ((r, q), (r, i), (r, j), (r, k), (q, i), (q, j), (q, k), (i, j), (i, k), (j, k))],
    ).then(mm_b2_candidate(t, a, b, B, H, M, K, N))


@ruleset
def ruleset(t: Ten, a: Ten, b: Ten, x: Sc, y: Sc, i: Var, j: Var, M: i64, N: i64, K: i64, B: i64, K2: i64,
            s: Sc, rest: Ixs, sh: Shp, p0: Ix, p1: Ix, T: i64, n0: i64, v: Var, w: Var, sa: Shp, sb: Shp):
    # sum[v] x * y -> sum[v] y * x   (only where a contraction can use it: a global x*y = y*x
    # would double every product of every epilogue for nothing)
    yield rewrite(Sc.red("sum", v, K, Sc.mul(x, y))).to(Sc.red("sum", v, K, Sc.mul(y, x)))
    # sum[v] sum[w] x -> sum[w] sum[v] x   (finite sums commute)
    yield rewrite(Sc.red("sum", v, K, Sc.red("sum", w, K2, x))).to(Sc.red("sum", w, K2, Sc.red("sum", v, K, x)))

    # split loops: A[.., i0*T + i1, ..] -> reshape(A, [.., n/T, T, ..])[.., i0, i1, ..]
    for pos in range(3):
        lead, outer = [p0, p1][:pos], [M, N][:pos]
        for split in (Ix.add(Ix.scale(Ix.v(i), T), Ix.v(j)), Ix.add(Ix.v(j), Ix.scale(Ix.v(i), T))):
            idx, new = Ixs.cons(split, rest), Ixs.cons(Ix.v(i), Ixs.cons(Ix.v(j), rest))
            old_shape, new_shape = Shp.cons(K, sh), Shp.cons(n0, Shp.cons(T, sh))
            for p, d in zip(reversed(lead), reversed(outer)):
                idx, new = Ixs.cons(p, idx), Ixs.cons(p, new)
                old_shape, new_shape = Shp.cons(d, old_shape), Shp.cons(d, new_shape)
            yield rule(
                eq(s).to(Sc.load(a, idx)), closed(a), eq(shape_of(a)).to(old_shape),
                eq(extent(j)).to(T), eq(extent(i)).to(n0), eq(K).to(n0 * T), ne(i).to(j),
            ).then(union(s).with_(Sc.load(Ten.reshape(a, new_shape), new)))

    # a constant leading index: A[c, i, k] -> (A[c])[i, k], a view of a closed tensor (one
    # layer of stacked weights, `W[l, k, j]` or `w = W[l]`, is then an operand the patterns
    # name; inline's `(a[i])[idx] -> a[i, idx]` is the other way). Only inside the axis: a
    # view past it has no elements, where a load outside its tensor (under a guard) is total
    yield rule(eq(s).to(Sc.load(a, Ixs.cons(Ix.lit(n0), Ixs.cons(p0, rest)))), closed(a),
               eq(shape_of(a)).to(Shp.cons(K, sh)), n0 >= i64(0), n0 < K).then(
        union(s).with_(Sc.load(Ten.slice(a, Ix.lit(n0)), Ixs.cons(p0, rest))))

    # a candidate found by its structure (see `analysis`) is a matmul once the operands'
    # shapes are the extents the loops run over (full ranges) and both are closed
    yield rule(mm_candidate(t, a, b, sa, sb), eq(shape_of(a)).to(sa), eq(shape_of(b)).to(sb),
               closed(a), closed(b)).then(union(t).with_(Ten.matmul(a, b)))
    # matrix-vector: for[i<M] sum[k<K] A[i, k] * x[k] -> reshape(A @ reshape(x, [K, 1]), [M])
    # (a GEMV through the same 2-D matmul every backend has; x^T A comes by transpose folding)
    yield rule(gemv_candidate(t, a, b, M, K), eq(shape_of(a)).to(shp(M, K)), eq(shape_of(b)).to(shp(K)),
               closed(a), closed(b)).then(union(t).with_(Ten.reshape(Ten.matmul(a, Ten.reshape(b, shp(K, 1))), shp(M))))
    # two-axis contractions, K*K2 flattened row-major:
    # for[i, j] sum[k<K] sum[k2<K2] A[i, k, k2] * B[k, k2, j] -> reshape(A, [M, K*K2]) @ reshape(B, [K*K2, N])
    yield rule(mm_k2_candidate(t, a, b, M, K, K2, N), eq(shape_of(a)).to(shp(M, K, K2)),
               eq(shape_of(b)).to(shp(K, K2, N)), closed(a), closed(b)).then(
        union(t).with_(Ten.matmul(Ten.reshape(a, shp(M, K * K2)), Ten.reshape(b, shp(K * K2, N)))))
    # two batch axes (attention's heads inside its batch):
    # for[r<B, q<H, i<M, j<N] sum[k<K] A[r,q,i,k] * B[r,q,k,j]
    #   -> reshape(reshape(A, [B*H, M, K]) @ reshape(B, [B*H, K, N]), [B, H, M, N])
    # (one batch axis of B*H: row-major, so batch r*H + q is element (r, q) of both)
    yield rule(mm_b2_candidate(t, a, b, B, K2, M, K, N), eq(shape_of(a)).to(shp(B, K2, M, K)),
               eq(shape_of(b)).to(shp(B, K2, K, N)), closed(a), closed(b)).then(
        union(t).with_(Ten.reshape(Ten.matmul(Ten.reshape(a, shp(B * K2, M, K)), Ten.reshape(b, shp(B * K2, K, N))),
                                   shp(B, K2, M, N))))
