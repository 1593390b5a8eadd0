"""A matrix product accumulated a row or a whole matrix at a time inside the k loop: the
"outer product" and "axpy" spellings of `c = a @ b`, as numpy code writes them. Each is a
reduction over k of a tensor value (`eqsat/lower.py`: a store into part of a buffer, or a
tensor local, accumulated whole; `eqsat/sections.py`: `c += np.outer(u, v)` updates c in
place, `c = c + e` alike where nothing else may view c; `eqsat/frontend.py`: `t = t + e` is
`t += e` for a tensor), so one matmul. Each program runs on both backends against
`reference`; where a row is read between updates, or c is a parameter the caller passed,
the value must still be right."""
from __future__ import annotations

import numpy as np
import pytest

import eqsat
from conftest import random_args, rel_err

PRELUDE = "import numpy as np\n"

MATMUL = {
    "slice_row_plus_equals": '''
@program
def p(a: f32["M", "K"], b: f32["K", "N"]) -> f32["M", "N"]:
    c = zeros((M, N))
    for i in range(M):
        for k in range(K):
            c[i, :] += a[i, k] * b[k, :]
    return c
''',
    "row_plus_equals": '''
@program
def p(a: f32["M", "K"], b: f32["K", "N"]) -> f32["M", "N"]:
    c = np.zeros((M, N))
    for i in range(M):
        for k in range(K):
            c[i] += a[i, k] * b[k]
    return c
''',
    "row_rebound_plus": '''
@program
def p(a: f32["M", "K"], b: f32["K", "N"]) -> f32["M", "N"]:
    c = np.zeros((M, N))
    for i in range(M):
        for k in range(K):
            c[i] = c[i] + a[i, k] * b[k]
    return c
''',
    "local_row_vector": '''
@program
def p(a: f32["M", "K"], b: f32["K", "N"]) -> f32["M", "N"]:
    c = empty((M, N))
    for i in range(M):
        row = np.zeros(N)
        for k in range(K):
            row += a[i, k] * b[k]
        c[i] = row
    return c
''',
    "local_row_rebound_with_epilogue": '''
@program
def p(a: f32["M", "K"], b: f32["K", "N"], bias: f32["N"]) -> f32["M", "N"]:
    c = np.zeros((M, N))
    for i in range(M):
        acc = np.zeros(N)
        for k in range(K):
            acc = acc + a[i, k] * b[k, :]
        c[i, :] = np.maximum(acc + bias, 0.0)
    return c
''',
    "outer_product_plus_equals": '''
@program
def p(a: f32["M", "K"], b: f32["K", "N"]) -> f32["M", "N"]:
    c = zeros((M, N))
    for k in range(K):
        c += np.outer(a[:, k], b[k])
    return c
''',
    "outer_product_rebound": '''
@program
def p(a: f32["M", "K"], b: f32["K", "N"]) -> f32["M", "N"]:
    c = zeros((M, N))
    for k in range(K):
        c = c + np.outer(a[:, k], b[k, :])
    return c
''',
    "outer_product_minus_into_a_section": '''
@program
def p(a: f32["M", "K"], b: f32["K", "N"]) -> f32["M", "N"]:
    c = zeros((M, N))
    for k in range(K):
        c[:, :] -= np.outer(a[:, k], b[k])
    return c
''',
    "broadcast_column_times_row": '''
@program
def p(a: f32["M", "K"], b: f32["K", "N"]) -> f32["M", "N"]:
    c = zeros((M, N))
    for k in range(K):
        c += a[:, k, None] * b[None, k, :]
    return c
''',
}

# forms that must stay right, whatever they become
RIGHT = {
    "row_read_between_updates": '''
@program
def p(a: f32["M", "K"], b: f32["K", "N"]) -> tuple[f32["M", "N"], f32["M", "K"]]:
    c = empty((M, N))
    d = empty((M, K))
    for i in range(M):
        row = np.zeros(N)
        for k in range(K):
            row += a[i, k] * b[k]
            d[i, k] = row[0]
        c[i] = row
    return c, d
''',
    "parameter_rebound": '''
@program
def p(a: f32["M", "K"], b: f32["K", "N"], c: f32["M", "N"]) -> f32["M", "N"]:
    for k in range(K):
        c = c + np.outer(a[:, k], b[k])
    return c
''',
    "view_of_the_accumulator_kept": '''
@program
def p(a: f32["M", "K"], b: f32["K", "N"]) -> tuple[f32["M", "N"], f32["M", "N"]]:
    c = zeros((M, N))
    first = c + 0.0
    for k in range(K):
        c = c + np.outer(a[:, k], b[k])
    return c, first
''',
    "rebound_to_a_broadcast_of_its_own_shape": '''
@program
def p(a: f32["M", "K"], bias: f32["K"]) -> f32["M", "K"]:
    c = zeros((M, K))
    for i in range(M):
        c = c + bias
        c[i, :] = c[i, :] * a[i, :]
    return c
''',
}


def _check(prog, dims):
    args = random_args(prog, dims, seed=3)
    with np.errstate(all="ignore"):
        want = eqsat.reference(prog, *[np.copy(a) if isinstance(a, np.ndarray) else a for a in args])
    plan = eqsat.optimize(prog, dims, target="cpu")
    for backend in ("numpy", "triton"):
        got = plan.run(*[np.copy(a) if isinstance(a, np.ndarray) else a for a in args], backend=backend)
        pairs = zip(got, want) if isinstance(want, tuple) else [(got, want)]
        for g, w in pairs:
            assert rel_err(g, w) < 1e-5, (backend, plan)
    return plan


@pytest.mark.parametrize("k", [3, 24])
@pytest.mark.parametrize("name", sorted(MATMUL))
def test_a_row_or_matrix_accumulated_whole_is_a_matmul(tmp_program, name, k):
    prog = tmp_program(PRELUDE + MATMUL[name])
    plan = _check(prog, {"M": 5, "N": 4, "K": k})
    assert [x.kind for x in plan.kernels] == ["matmul"], plan


@pytest.mark.parametrize("name", sorted(RIGHT))
def test_other_whole_updates_stay_right(tmp_program, name):
    prog = tmp_program(PRELUDE + RIGHT[name])
    _check(prog, {"M": 5, "N": 4, "K": 6})


# `C[i, j] = C[i, j] + X + Y`: a chain of addends onto the accumulator (reference BLAS's
# SSYR2K, SSYR2), a reduction over l whatever the grouping (`ir.sum_chain`)
CHAINS = {
    "syr2k_chain": ('''
@program
def p(A: f32["N", "K"], B: f32["N", "K"]) -> f32["N", "N"]:
    C = zeros((N, N))
    for j in range(N):
        for l in range(K):
            for i in range(N):
                C[i, j] = C[i, j] + A[i, l] * B[j, l] + B[i, l] * A[j, l]
    return C
''', "matmul"),
    "syr2k_upper_triangle_chain": ('''
@program
def p(A: f32["N", "K"], B: f32["N", "K"]) -> f32["N", "N"]:
    C = zeros((N, N))
    for j in range(N):
        for l in range(K):
            for i in range(j + 1):
                C[i, j] = C[i, j] + A[i, l] * B[j, l] - B[i, l] * A[j, l]
    return C
''', "matmul"),
    "scalar_chain": ('''
@program
def p(A: f32["N", "K"], B: f32["N", "K"]) -> f32["N", "N"]:
    C = empty((N, N))
    for i in range(N):
        for j in range(N):
            s = 0.0
            for l in range(K):
                s = s - A[i, l] * B[j, l] + 2.0 * A[j, l] * B[i, l]
            C[i, j] = s
    return C
''', "matmul"),
}


@pytest.mark.parametrize("name", sorted(CHAINS))
def test_a_chain_of_addends_onto_the_accumulator_is_a_reduction(tmp_program, name):
    src, kind = CHAINS[name]
    prog = tmp_program(PRELUDE + src)
    plan = _check(prog, {"N": 6, "K": 5})
    assert kind in [x.kind for x in plan.kernels] and not any(x.kind == "loop" for x in plan.kernels), plan


def test_a_chain_run_once_keeps_its_order(tmp_program):
    """Outside a reduction `y[i] = y[i] + a[i] + b[i]` is computed as written, left to
    right: (1e8 + 1) + -1e8 is 0 in f32 where 1e8 + (1 - 1e8) is 8."""
    prog = tmp_program('''
@program
def p(y: f32["N"], a: f32["N"], b: f32["N"]) -> f32["N"]:
    for i in range(N):
        y[i] = y[i] + a[i] + b[i]
    return y
''')
    y, a, b = (np.array(v, np.float32) for v in ([1e8, 1.0], [1.0, 2.0], [-1e8, 3.0]))
    want = eqsat.reference(prog, y.copy(), a, b)
    for target in ("cpu", "h100"):
        plan = eqsat.optimize(prog, {"N": 2}, target=target)
        for backend in ("numpy", "triton"):
            got = np.asarray(plan.run(y.copy(), a, b, backend=backend))
            assert np.array_equal(got, want), (target, backend, got, want)


# one scalar reused by sibling loops (reference SSYMM's TEMP1): each loop's is its own
# (`loopnames.rename_loop_privates`), so the products are matmuls; where a later read sees
# the value a loop leaves, the name stays one variable and the answer stays right
REUSED = {
    "ssymm_right_temp_reused": ('''
@program
def p(alpha: f32, A: f32["N", "N"], B: f32["M", "N"], C: f32["M", "N"]) -> f32["M", "N"]:
    for j in range(N):
        temp1 = alpha * A[j, j]
        for i in range(M):
            C[i, j] = temp1 * B[i, j]
        for k in range(j):
            temp1 = alpha * A[k, j]
            for i in range(M):
                C[i, j] = C[i, j] + temp1 * B[i, k]
        for k in range(j + 1, N):
            temp1 = alpha * A[j, k]
            for i in range(M):
                C[i, j] = C[i, j] + temp1 * B[i, k]
    return C
''', True),
    "read_after_the_loop": ('''
@program
def p(A: f32["N", "N"], B: f32["M", "N"]) -> tuple[f32["M", "N"], f32["N"]]:
    C = zeros((M, N))
    last = empty((N,))
    for j in range(N):
        t = A[j, j]
        for k in range(j):
            t = A[k, j]
            for i in range(M):
                C[i, j] += t * B[i, k]
        last[j] = t
    return C, last
''', False),
    "bound_under_an_if_in_sibling_loops": ('''
@program
def p(alpha: f32, A: f32["N", "N"], B: f32["M", "N"]) -> tuple[f32["M", "N"], f32["M", "N"]]:
    C = zeros((M, N))
    D = zeros((M, N))
    for j in range(N):
        for k in range(j):
            if A[k, j] != 0.0:
                temp = alpha * A[k, j]
                for i in range(M):
                    C[i, j] += temp * B[i, k]
        for k in range(j + 1, N):
            if A[k, j] > 0.0:
                temp = alpha * A[j, k]
                for i in range(M):
                    D[i, j] += temp * B[i, k]
            else:
                temp = 0.5
                D[0, j] += temp
    return C, D
''', False),
    "read_by_the_next_iteration": ('''
@program
def p(A: f32["N", "N"], B: f32["M", "N"]) -> tuple[f32["M", "N"], f32["N"]]:
    C = zeros((M, N))
    first = empty((N,))
    t = 0.5
    for j in range(N):
        first[j] = t
        for k in range(j):
            t = A[k, j]
            for i in range(M):
                C[i, j] += t * B[i, k]
    return C, first
''', False),
}


@pytest.mark.parametrize("name", sorted(REUSED))
def test_a_scalar_reused_by_sibling_loops(tmp_program, name):
    src, matmul = REUSED[name]
    prog = tmp_program(PRELUDE + src)
    plan = _check(prog, {"M": 48, "N": 40})
    if matmul:
        assert "matmul" in [x.kind for x in plan.kernels] and "loop" not in [x.kind for x in plan.kernels], plan


def test_a_loop_local_read_after_the_loops_around_it_stays_one_variable(tmp_program):
    """The dataflow campaign's: `s = alpha` in the innermost loop is read by `return s` after
    every loop; the loop around it binds s again on its next iteration, but its last
    iteration's value leaves (renaming the inner s returned A[i, i])."""
    prog = tmp_program('''
@program
def p(A: f32['N', 'N'], alpha: f32):
    s = 0.0
    for i in range(N):
        for j in range(N):
            s = A[i, i]
            for k in range(N):
                s = alpha
    return s
''')
    for n in (1, 3):
        A = np.random.default_rng(n).uniform(-1, 1, (n, n)).astype(np.float32)
        for target in ("cpu", "h100"):
            plan = eqsat.optimize(prog, {"N": n}, target=target)
            assert float(plan.run(A, 0.75)) == float(eqsat.reference(prog, A, 0.75)) == 0.75, plan
