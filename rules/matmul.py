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
"""
from __future__ import annotations

from egglog import i64, eq, ne, rewrite, rule, ruleset, union

from eqsat.sorts import Ix, Sc, Ten, Var, closed, shape_of
from ._patterns import dims, ixs, shp


@ruleset
def ruleset(t: Ten, a: Ten, b: Ten, x: Sc, y: Sc, i: Var, j: Var, k: Var, r: Var,
            M: i64, N: i64, K: i64, B: i64):
    vi, vj, vk, vr = Ix.v(i), Ix.v(j), Ix.v(k), Ix.v(r)
    # x * y -> y * x
    yield rewrite(Sc.mul(x, y)).to(Sc.mul(y, x))
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
            eq(shape_of(a)).to(sa), eq(shape_of(b)).to(sb), closed(a), closed(b), *distinct,
        ).then(union(t).with_(Ten.matmul(a, b)))
