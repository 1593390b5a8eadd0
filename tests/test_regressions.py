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
