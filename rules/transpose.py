"""Transpose folding: transposes are permutations of indices, so they move freely.

Preconditions: the tensor is closed and its rank matches the permutation.

    X[a, b]            == (X^T)[b, a]          (and the last two axes of a 3-D or 4-D X, and a 3-D X's
                                               rotations for two-axis contractions), for the
                                               operands of a product under a sum, where a
                                               matmul may need the other layout
    transpose(X, p)[i] == X[i permuted by p^-1]
    (X^T)^T            == X                    (any two permutations compose)
    (A @ B)^T          == B^T @ A^T
    (for[p, q] e)^T    == for[q, p] e
    (A @ B)[j, i]      == ((A @ B)^T)[i, j]    (so an epilogue read through a transpose
                                               fuses into the transposed matmul)
"""
from __future__ import annotations

from egglog import i64, eq, rewrite, rule, ruleset, union

from eqsat.sorts import Dims, Ix, Sc, Ten, Var, closed, shape_of
from ._patterns import PERMS_4D, all_perms, ixs, perm_str, shp


@ruleset
def ruleset(s: Sc, p: Sc, y: Sc, x: Ten, a: Ten, b: Ten, i0: Ix, i1: Ix, i2: Ix, i3: Ix, v: Var, n: i64, M: i64, N: i64,
            K: i64, w: Var, m: i64):
    for operand in (lambda s_: Sc.mul(s_, y), lambda s_: Sc.mul(y, s_)):
        # sum[v] X[a, b] * y -> sum[v] (X^T)[b, a] * y
        yield rule(eq(p).to(Sc.red("sum", v, n, operand(s))), eq(s).to(Sc.load(x, ixs(i0, i1))), closed(x),
                   eq(shape_of(x)).to(shp(M, N))).then(union(s).with_(Sc.load(Ten.transpose(x, "1 0"), ixs(i1, i0))))
        # sum[v] X[r, a, b] * y -> sum[v] (X^T12)[r, b, a] * y
        yield rule(eq(p).to(Sc.red("sum", v, n, operand(s))), eq(s).to(Sc.load(x, ixs(i0, i1, i2))), closed(x),
                   eq(shape_of(x)).to(shp(M, N, K))).then(
            union(s).with_(Sc.load(Ten.transpose(x, "0 2 1"), ixs(i0, i2, i1))))
        # sum[v] X[r, q, a, b] * y -> sum[v] (X^T23)[r, q, b, a] * y   (two batch axes)
        yield rule(eq(p).to(Sc.red("sum", v, n, operand(s))), eq(s).to(Sc.load(x, ixs(i0, i1, i2, i3))), closed(x),
                   eq(shape_of(x)).to(shp(M, N, K, m))).then(
            union(s).with_(Sc.load(Ten.transpose(x, "0 1 3 2"), ixs(i0, i1, i3, i2))))
        # and its rotations, for contractions over two axes in any layout:
        # X[a, b, c] -> (X^(1 2 0))[b, c, a] and (X^(2 0 1))[c, a, b]
        for perm, order in (("1 2 0", (i1, i2, i0)), ("2 0 1", (i2, i0, i1))):
            yield rule(eq(p).to(Sc.red("sum", v, n, operand(s))), eq(s).to(Sc.load(x, ixs(i0, i1, i2))),
                       closed(x), eq(shape_of(x)).to(shp(M, N, K))).then(
                union(s).with_(Sc.load(Ten.transpose(x, perm), ixs(*order))))
    idx = [i0, i1, i2, i3]
    for p in list(all_perms(3)) + list(PERMS_4D):
        r = len(p)
        # transpose(X, p)[i] = X[j] with j[p[a]] = i[a]
        j = [None] * r
        for a_ in range(r):
            j[p[a_]] = idx[a_]
        yield rewrite(Sc.load(Ten.transpose(x, perm_str(p)), ixs(*idx[:r]))).to(Sc.load(x, ixs(*j)))
        if list(p) == list(range(r)):
            yield rewrite(Ten.transpose(x, perm_str(p))).to(x)
        for q in all_perms(3):
            if len(q) == r:
                # transpose(transpose(X, p), q) = transpose(X, p o q)
                yield rewrite(Ten.transpose(Ten.transpose(x, perm_str(p)), perm_str(q))).to(
                    Ten.transpose(x, perm_str([p[q[a_]] for a_ in range(r)])))
    # a matmul read with its axes swapped is the transposed matmul read straight:
    # mm[j, i] -> (mm^T)[i, j], so `relu(transpose(b.T @ a.T))` is relu((a @ b)[i, j]) and
    # its epilogue fuses (only matmul results: other tensors gain nothing from the view)
    yield rule(eq(s).to(Sc.load(x, ixs(i0, i1))), eq(x).to(Ten.matmul(a, b)), closed(x),
               eq(shape_of(x)).to(shp(M, N))).then(union(s).with_(Sc.load(Ten.transpose(x, "1 0"), ixs(i1, i0))))
    # a transposed computation is the computation with its axes listed in the other order
    # (so an elementwise operand that transpose folding moved stays one kernel's prologue)
    yield rewrite(Ten.transpose(Ten.compute(Dims.cons(v, n, Dims.cons(w, m, Dims.nil())), y), "1 0")).to(
        Ten.compute(Dims.cons(w, m, Dims.cons(v, n, Dims.nil())), y))
    # (2-D only: with the 3-D operand rotations above, a 3-D form made every permutation of
    # a batched computation one class, and substitution into them exploded: 3 GB)
    # (A @ B)^T -> B^T @ A^T
    yield rewrite(Ten.transpose(Ten.matmul(a, b), "1 0")).to(
        Ten.matmul(Ten.transpose(b, "1 0"), Ten.transpose(a, "1 0")))
