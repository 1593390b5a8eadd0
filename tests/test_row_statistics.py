"""Row statistics in ML layers written as loops: a row's max, sum, mean or variance is a
scalar per row, read by every element of the row. Two mechanisms lift them: fission carries
a scalar private to each row from the statements that compute it to the ones that only read
it (`eqsat/expand.py`), and a reduction inlined into an elementwise computation over more
axes than it uses becomes a tensor over the axes it uses (`eqsat/hoist.py`), so it is
computed once per row, not once per element. Each plan runs on both backends against
`reference`."""
from __future__ import annotations

import numpy as np
import pytest

import eqsat
from eqsat.args import random_args

D = {"M": 12, "N": 20}

CASES = {
    "softmax": ('''
@program
def p(x: f32["M", "N"]) -> f32["M", "N"]:
    y = empty((M, N))
    for i in range(M):
        m = x[i, 0]
        for j in range(1, N):
            m = max(m, x[i, j])
        s = 0.0
        for j in range(N):
            y[i, j] = exp(x[i, j] - m)
            s += y[i, j]
        for j in range(N):
            y[i, j] /= s
    return y
''', ["reduction", "reduction", "pointwise"]),
    # the row max written with `if` (the front end reads it as `m = max(m, x[i, j])`)
    "softmax_if": ('''
@program
def p(x: f32["M", "N"]) -> f32["M", "N"]:
    y = empty((M, N))
    for i in range(M):
        m = x[i, 0]
        for j in range(1, N):
            if x[i, j] > m:
                m = x[i, j]
        s = 0.0
        for j in range(N):
            y[i, j] = exp(x[i, j] - m)
            s += y[i, j]
        for j in range(N):
            y[i, j] = y[i, j] / s
    return y
''', ["reduction", "reduction", "pointwise"]),
    "layernorm": ('''
@program
def p(x: f32["M", "N"], g: f32["N"], b: f32["N"]) -> f32["M", "N"]:
    y = empty((M, N))
    for i in range(M):
        mu = 0.0
        for j in range(N):
            mu += x[i, j]
        mu = mu / N
        var = 0.0
        for j in range(N):
            var += (x[i, j] - mu) * (x[i, j] - mu)
        var = var / N
        for j in range(N):
            y[i, j] = (x[i, j] - mu) / sqrt(var + 1e-5) * g[j] + b[j]
    return y
''', ["reduction", "reduction", "pointwise"]),
    "rmsnorm": ('''
@program
def p(x: f32["M", "N"], g: f32["N"]) -> f32["M", "N"]:
    y = empty((M, N))
    for i in range(M):
        ss = 0.0
        for j in range(N):
            ss += x[i, j] * x[i, j]
        r = 1.0 / sqrt(ss / N + 1e-6)
        for j in range(N):
            y[i, j] = x[i, j] * r * g[j]
    return y
''', ["reduction", "pointwise"]),
    # the statistic of a column (the reduction runs over the outer axis)
    "column_center": ('''
@program
def p(x: f32["M", "N"]) -> f32["M", "N"]:
    y = empty((M, N))
    for i in range(M):
        for j in range(N):
            s = 0.0
            for k in range(M):
                s += x[k, j]
            y[i, j] = x[i, j] - s / M
    return y
''', ["reduction", "pointwise"]),
    # causal attention written as naive loops: the score loop written three times, one
    # name `s` in each (renamed per loop), the row max and normalizer carried between
    # parts, the triangular loops widened under their masks (the max's mask as -inf): the
    # scores become one matmul (the three loops are one kernel up to the names of their
    # variables, eqsat/alpha.py), the max and the normalizer reductions, and P @ V a matmul
    # of the masked P (a plan under the finite check, `eqsat/assume.py`), P computed in the
    # epilogue of a second q @ k.T rather than stored (rated cheaper at these sizes)
    "causal_attention": ('''
@program
def p(q: f32["M", "N"], k: f32["M", "N"], v: f32["M", "N"]) -> f32["M", "N"]:
    o = zeros((M, N))
    for i in range(M):
        m = -1e30
        for j in range(i + 1):
            s = 0.0
            for d in range(N):
                s += q[i, d] * k[j, d]
            m = max(m, s)
        z = 0.0
        for j in range(i + 1):
            s = 0.0
            for d in range(N):
                s += q[i, d] * k[j, d]
            z += exp(s - m)
        for j in range(i + 1):
            s = 0.0
            for d in range(N):
                s += q[i, d] * k[j, d]
            p = exp(s - m) / z
            for d in range(N):
                o[i, d] += p * v[j, d]
    return o
''', ["matmul", "reduction", "reduction", "matmul", "matmul"], {"M": 256, "N": 64}),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_row_statistic_is_computed_once_per_row(tmp_program, name):
    src, kinds, *sizes = CASES[name]
    dims = sizes[0] if sizes else D  # (at small sizes a tiny product need not be a matmul)
    prog = tmp_program(src)
    plan = eqsat.optimize(prog, dims)
    assert [k.kind for k in plan.kernels] == kinds, plan
    args = random_args(prog, dims)
    want = eqsat.reference(prog, *args)
    for backend in ("numpy", "triton"):
        np.testing.assert_allclose(np.asarray(plan.run(*args, backend=backend)), want, rtol=1e-4, atol=1e-5,
                                   err_msg=f"{backend}\n{plan}")


WHOLE = {
    "dot": '''
@program
def p(x: f32["N"], y: f32["N"]) -> f32:
    s = 0.0
    for i in range(N):
        s += x[i] * y[i]
    return s
''',
    "max": '''
@program
def p(x: f32["N"]) -> f32:
    m = x[0]
    for i in range(1, N):
        if x[i] > m:
            m = x[i]
    return m
''',
    "sum_of_squares": '''
@program
def p(x: f32["N"]) -> f32:
    s = 0.0
    for i in range(N):
        s += x[i] * x[i]
    return s
''',
}


@pytest.mark.parametrize("name", sorted(WHOLE))
def test_whole_array_reduction_runs_right(tmp_program, name):
    prog = tmp_program(WHOLE[name])
    dims = {"N": 4096}
    plan = eqsat.optimize(prog, dims)
    args = random_args(prog, dims)
    want = eqsat.reference(prog, *args)
    for backend in ("numpy", "triton"):
        np.testing.assert_allclose(float(plan.run(*args, backend=backend)), float(want), rtol=1e-4, atol=1e-3,
                                   err_msg=f"{backend}\n{plan}")


@pytest.mark.parametrize("name", sorted(WHOLE))
def test_whole_array_reduction_is_a_reduction_kernel(tmp_program, name):
    """A dot product, a max and a sum of squares over 4096 elements, written as loops, are
    one reduction kernel each at the default target: a tree over blocks of the axis
    (`cost.lanes`), not the one sequential chain the kept loop is."""
    plan = eqsat.optimize(tmp_program(WHOLE[name]), {"N": 4096})
    assert [k.kind for k in plan.kernels] == ["reduction"], plan


# numpy's max and min of a tensor (over an axis, keepdims, or all of it), as a softmax and a
# range normalization write them
NUMPY_EXTREMA = {
    "softmax": ('''
@program
def p(x: f32["M", "N"]) -> f32["M", "N"]:
    m = np.max(x, axis=1, keepdims=True)
    e = np.exp(x - m)
    return e / np.sum(e, axis=1, keepdims=True)
''', ["reduction", "reduction", "pointwise"]),
    "column_range": ('''
@program
def p(x: f32["M", "N"]) -> tuple[f32["N"], f32]:
    return x.max(axis=0) - np.min(x, axis=0), np.max(x)
''', None),
}


@pytest.mark.parametrize("target", ["h100", "cpu"])
@pytest.mark.parametrize("name", sorted(NUMPY_EXTREMA))
def test_numpy_max_and_min_are_reductions_that_propagate_nan(tmp_program, name, target):
    """`np.max(x, axis=1)` was one loop kernel (its loops update the result with numpy's
    maximum, no reduction the lowering reads); now Python's max beside a count of NaNs
    (`eqsat/reductions.py`): reduction kernels. A row holding a NaN is NaN, one holding inf
    or only -inf is that, as numpy's."""
    src, kinds = NUMPY_EXTREMA[name]
    prog = tmp_program("import numpy as np\n" + src)
    plan = eqsat.optimize(prog, D, target=target)
    if target == "h100":  # (on the CPU a compiled loop may be the cheaper kernel)
        assert "loop" not in [k.kind for k in plan.kernels], plan
        assert kinds is None or [k.kind for k in plan.kernels] == kinds, plan
    x = random_args(prog, D)[0]
    x[1, 3] = np.nan
    x[2, :] = -np.inf
    x[4, 5] = np.inf
    x[6, :] = 0.0
    x[6, 2] = -0.0
    want = eqsat.reference(prog, x)
    for backend in ("numpy", "triton"):
        got = plan.run(x, backend=backend)
        for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
            np.testing.assert_allclose(np.asarray(g), w, rtol=1e-5, atol=1e-6, equal_nan=True,
                                       err_msg=f"{backend}\n{plan}")


def test_a_softmax_per_head_in_a_loop_over_many_heads_is_lifted(tmp_program):
    """A loop over 24 heads (more than `eqsat/unroll.py` unrolls) whose body binds tensors
    (`s`, the max `m`, `e`) and stores `o[h] = p @ v[h]`: the max bound to `m` directly
    (not a view of a temporary), the loop lifts whole: batched kernels over the heads, no
    loop kernel (which of them are matmuls is the node limit's business: the e-graph of
    the whole loop grows ~4x a step)."""
    prog = tmp_program('''
import numpy as np

@program
def p(q: f32["H", "S", "D"], k: f32["H", "S", "D"], v: f32["H", "S", "D"]) -> f32["H", "S", "D"]:
    o = empty((H, S, D))
    for h in range(H):
        s = q[h] @ k[h].T * 0.125
        m = np.max(s, axis=1, keepdims=True)
        e = np.exp(s - m)
        o[h] = e / np.sum(e, axis=1, keepdims=True) @ v[h]
    return o
''')
    dims = {"H": 24, "S": 32, "D": 16}
    plan = eqsat.optimize(prog, dims)
    kinds = [k.kind for k in plan.kernels]
    assert "loop" not in kinds, plan
    args = random_args(prog, dims)
    want = eqsat.reference(prog, *args)
    for backend in ("numpy", "triton"):
        np.testing.assert_allclose(np.asarray(plan.run(*args, backend=backend)), want, rtol=1e-4, atol=1e-5,
                                   err_msg=f"{backend}\n{plan}")


STORED_EXTREMA = {
    "row_max": '''
@program
def p(x: f32["M", "N"]) -> f32["M"]:
    m = empty((M,))
    for i in range(M):
        m[i] = -1e30
        for j in range(N):
            m[i] = max(m[i], x[i, j])
    return m
''',
    "column_min_from_the_first_row": '''
@program
def p(x: f32["M", "N"]) -> f32["N"]:
    m = empty((N,))
    for j in range(N):
        m[j] = x[0, j]
    for i in range(1, M):
        for j in range(N):
            m[j] = min(m[j], x[i, j])
    return m
''',
}


@pytest.mark.parametrize("name", sorted(STORED_EXTREMA))
def test_a_max_or_min_accumulated_in_an_element_is_a_reduction(tmp_program, name):
    """`m[i] = max(m[i], x[i, j])` (the element first: Python's max keeps it where x is NaN)
    is a max reduction into the element, as `acc = max(acc, x)` is into a scalar."""
    prog = tmp_program(STORED_EXTREMA[name])
    plan = eqsat.optimize(prog, D)
    assert [k.kind for k in plan.kernels] == ["reduction"], plan
    x = random_args(prog, D)[0]
    x[1, 3] = np.nan
    x[0, 2] = np.nan
    want = eqsat.reference(prog, x)
    for backend in ("numpy", "triton"):
        np.testing.assert_array_equal(np.asarray(plan.run(x, backend=backend)), want, err_msg=f"{backend}\n{plan}")


def test_an_element_maximum_with_the_element_second_is_no_reduction(tmp_program):
    """`m[i] = max(x[i, j], m[i])` forgets an earlier NaN (Python's max keeps its first
    argument unless the second compares greater): no reduction, runs as written."""
    prog = tmp_program('''
@program
def p(x: f32["M", "N"]) -> f32["M"]:
    m = zeros((M,))
    for i in range(M):
        for j in range(N):
            m[i] = max(x[i, j], m[i])
    return m
''')
    plan = eqsat.optimize(prog, D)
    assert "reduction" not in [k.kind for k in plan.kernels], plan
    x = random_args(prog, D)[0]
    x[1, 3] = np.nan
    want = eqsat.reference(prog, x)
    for backend in ("numpy", "triton"):
        np.testing.assert_array_equal(np.asarray(plan.run(x, backend=backend)), want, err_msg=backend)
