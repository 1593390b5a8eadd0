"""Programs the differential tests once found wrong (see tests/DIFF_FINDINGS.md): each must
now optimize within its limits and match `reference`."""
from __future__ import annotations

import time

import pytest

import eqsat
from conftest import assert_matches_reference

CASES = {
    # a loop that plainly reassigns a scalar keeps only its last value
    "last_write_scalar": ('''
@program
def p(a: f32["M", "K"], b: f32["K", "N"]) -> f32["M", "N"]:
    y = empty((M, N))
    for i in range(M):
        for j in range(N):
            acc = 0.0
            for k in range(K):
                acc = b[k, j] * a[i, k]
            y[i, j] = acc
    return y
''', {"M": 2, "N": 3, "K": 4}),
    # `acc = acc + e` is an accumulation, and is found as a matmul
    "plain_update": ('''
@program
def p(a: f32["M", "K"], b: f32["K", "N"]) -> f32["M", "N"]:
    y = empty((M, N))
    for i in range(M):
        for j in range(N):
            acc = 0.0
            for k in range(K):
                acc = acc + a[i, k] * b[k, j]
            y[i, j] = acc
    return y
''', {"M": 2, "N": 3, "K": 4}),
    "plain_update_minus": ('''
@program
def p(a: f32["M", "K"], b: f32["K", "N"]) -> f32["M", "N"]:
    y = empty((M, N))
    for i in range(M):
        for j in range(N):
            acc = 0.0
            for k in range(K):
                acc = acc - a[i, k] * b[k, j]
            y[i, j] = acc
    return y
''', {"M": 2, "N": 3, "K": 4}),
    # an epilogue reading the product at another element
    "cross_epilogue": ('''
@program
def p(a: f32["M", "K"], b: f32["K", "M"]) -> f32["M", "M"]:
    c = zeros((M, M))
    for i in range(M):
        for j in range(M):
            for k in range(K):
                c[i, j] += a[i, k] * b[k, j]
    y = empty((M, M))
    for i in range(M):
        for j in range(M):
            y[i, j] = c[i, j] + c[j, i]
    return y
''', {"M": 3, "K": 2}),
    "cross_row0": ('''
@program
def p(a: f32["M", "K"], b: f32["K", "N"]) -> f32["M", "N"]:
    c = a @ b
    y = empty((M, N))
    for i in range(M):
        for j in range(N):
            y[i, j] = relu(c[i, j]) * c[0, j]
    return y
''', {"M": 2, "N": 3, "K": 2}),
    # once hung: the fact rules never saturated on this e-graph
    "double_transpose_copy": ('''
@program
def p(w: f32["Bt", "K", "N"], a: f32["Bt", "M", "K"]) -> f32["Bt", "M", "N"]:
    c = empty((Bt, M, N))
    for bb in range(Bt):
        c[bb] = a[bb].T.T @ w[bb]
    y = empty((Bt, M, N))
    for bb in range(Bt):
        for i in range(M):
            for j in range(N):
                y[bb, i, j] = c[bb, i, j]
    return y
''', {"Bt": 2, "M": 2, "N": 3, "K": 2}),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_regression(tmp_program, name):
    src, dims = CASES[name]
    prog = tmp_program(src)
    limits = eqsat.Limits(seconds=5.0)
    t0 = time.perf_counter()
    plan = eqsat.optimize(prog, dims, limits=limits)
    assert time.perf_counter() - t0 < 4 * limits.seconds
    assert_matches_reference(plan, prog, dims)
    if name == "plain_update":
        assert [k.kind for k in plan.kernels] == ["matmul"], plan


# spellings a generated campaign found not fused (matmul + epilogue written as loops)
FUSED = {
    # a row accumulator allocated once and reset per row by a slice store, or by a loop
    # whose variable is named apart from the accumulation's: the reset sets every element
    # the accumulation adds into, so the row loop carries nothing (was: the nest kept as
    # written, ~17,000x the matmul's cost, and at small sizes an e-graph of 546k e-nodes)
    "row_reset_by_slice": ('''
@program
def p(x: f32["M", "K"], w: f32["K", "N"]) -> f32["M", "N"]:
    y = empty((M, N))
    row = zeros((N,))
    for i in range(M):
        row[:] = 0.0
        for k in range(K):
            for j in range(N):
                row[j] += x[i, k] * w[k, j]
        for j in range(N):
            y[i, j] = row[j]
    return y
''', ["matmul"]),
    "row_reset_by_loop": ('''
@program
def p(x: f32["M", "K"], w: f32["K", "N"], b: f32["N"]) -> f32["M", "N"]:
    y = empty((M, N))
    row = zeros((N,))
    for i in range(M):
        for z in range(N):
            row[z] = b[z]
        for k in range(K):
            for j in range(N):
                row[j] += x[i, k] * w[k, j]
        for j in range(N):
            y[i, j] = relu(row[j])
    return y
''', ["matmul"]),
    # `y[i, j] = y[i, j] + e` into a copy of a parameter (a view of it): an accumulation,
    # as `+=` is (was: a loop-carried dependence, the nest kept as written)
    "self_update_through_a_view": ('''
@program
def p(x: f32["M", "K"], w: f32["K", "N"], r: f32["M", "N"]) -> f32["M", "N"]:
    y = r.copy()
    for i in range(M):
        for j in range(N):
            for k in range(K):
                y[i, j] = y[i, j] + x[i, k] * w[k, j]
    return y
''', ["matmul"]),
}


@pytest.mark.parametrize("name", sorted(FUSED))
@pytest.mark.parametrize("dims", [{"M": 12, "N": 17, "K": 33}, {"M": 256, "N": 256, "K": 256}])
def test_spellings_found_fused(tmp_program, name, dims):
    src, kinds = FUSED[name]
    prog = tmp_program(src)
    plan = eqsat.optimize(prog, dims)
    assert [k.kind for k in plan.kernels] == kinds, plan
    assert plan.report.nodes < 5000, plan.report.stop_reason
    if dims["M"] < 100:
        assert_matches_reference(plan, prog, dims)
