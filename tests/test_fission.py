"""Loop distribution over groups of statements (eqsat/lower.py `_fission`).

A nest with no functional form as a whole is split into the strongly connected components
of the order it must keep (exact dependences by isl, plus statements sharing a scalar the
nest writes or a tensor it allocates), run in an order that keeps every dependence. Each
program runs on both backends against `reference`; the structure is asserted where the
split is known by construction."""
from __future__ import annotations

import numpy as np
import pytest

import eqsat

D = {"M": 6, "N": 7, "K": 5}

CASES = {
    # the later statement feeds the earlier one across iterations: its group runs first and
    # is lifted (the earlier one, a read shifted out of the axis on its first iteration,
    # stays a loop); the nest as written, one loop, stays an alternative and may be chosen
    "reordered": ('''
@program
def p(x: f32["N"], a: f32["N"], b: f32["N"]) -> f32["N"]:
    for i in range(1, N):
        a[i] = b[i - 1] + 1.0
        b[i] = x[i] * 2.0
    return a
''', "pointwise first"),
    # symm's shape: a scalar reduction and its use stay together, the accumulation into
    # rows already finished is its own group, after them
    "symm_like": ('''
@program
def p(alpha: f32, C: f32["M", "N"], A: f32["M", "M"], B: f32["M", "N"]) -> f32["M", "N"]:
    for i in range(M):
        for j in range(N):
            t = 0.0
            for k in range(i):
                C[k, j] += alpha * B[i, j] * A[i, k]
                t += B[k, j] * A[i, k]
            C[i, j] = 0.5 * C[i, j] + alpha * t
    return C
''', "no loop"),
    # a dependence cycle (a[i] feeds b[i], b[i - 1] feeds a[i]): one group, kept
    "cycle": ('''
@program
def p(x: f32["N"], a: f32["N"], b: f32["N"]) -> f32["N"]:
    for i in range(1, N):
        a[i] = b[i - 1] + x[i]
        b[i] = a[i] * 0.5
    return b
''', "loop"),
    # a scalar carried between the statements (atax with `t`): one group, kept
    "shared_scalar": ('''
@program
def p(A: f32["M", "N"], x: f32["N"]) -> f32["N"]:
    y = zeros((N,))
    for i in range(M):
        t = 0.0
        for j in range(N):
            t += A[i, j] * x[j]
        for j in range(N):
            y[j] += A[i, j] * t
    return y
''', None),
    # three statements, the middle one independent: each its own kernel
    "independent": ('''
@program
def p(x: f32["M", "N"]) -> tuple[f32["M", "N"], f32["M", "N"]]:
    u = empty((M, N))
    v = empty((M, N))
    for i in range(M):
        for j in range(N):
            u[i, j] = x[i, j] * 2.0
            v[i, j] = x[i, j] + 1.0
            u[i, j] = u[i, j] + v[i, j]
    return u, v
''', "no loop"),
    # a scalar read in the middle of its updates (t) and at the end (u, c): the statements
    # up to its last update stay together; the reader after them gets the final value
    "read_between_updates": ('''
@program
def p(a: f32["M", "N"], b: f32["M", "N"]) -> tuple[f32["M"], f32["M"], f32["M", "N"]]:
    t = empty((M,))
    u = empty((M,))
    c = empty((M, N))
    for i in range(M):
        s = 0.0
        for j in range(N):
            s += a[i, j]
        t[i] = s
        for j in range(N):
            s += b[i, j]
        u[i] = s
        for j in range(N):
            y = a[i, j] * s
            c[i, j] = exp(y) - y
    return t, u, c
''', None),
    # the scalar is read after the nest: not carried, the nest keeps its meaning
    "scalar_read_after": ('''
@program
def p(a: f32["M", "N"]) -> tuple[f32["M", "N"], f32]:
    c = empty((M, N))
    s = 0.0
    for i in range(M):
        s = 0.0
        for j in range(N):
            s += a[i, j]
            c[i, j] = a[i, j]
        for j in range(N):
            c[i, j] = c[i, j] / (s * s + 1.0)
    return c, s
''', None),
    # a conditional accumulation beside a store, in one loop: the `if` is one statement
    # for distribution (it may read and write what its branches do), the sum its own part
    "conditional_sum_beside_store": ('''
@program
def p(x: f32["M", "N"]) -> f32["M", "N"]:
    y = empty((M, N))
    for i in range(M):
        s = 0.0
        for j in range(N):
            if x[i, j] > 0.0:
                s += x[i, j]
            y[i, j] = x[i, j] * 2.0
        for j in range(N):
            y[i, j] = y[i, j] / (s * s + 1.0)
    return y
''', "no loop"),
    # an argmax: two scalars updated under one condition, a recurrence: stays a loop, right
    "argmax_then_use": ('''
@program
def p(x: f32["M", "N"]) -> f32["M", "N"]:
    y = empty((M, N))
    for i in range(M):
        m = x[i, 0]
        k = 0.0
        for j in range(N):
            if x[i, j] > m:
                m = x[i, j]
                k = j * 1.0
        for j in range(N):
            y[i, j] = x[i, j] - m + k
    return y
''', None),
    # one name, two unrelated values (set first in each loop): renamed per loop
    "scalar_webs": ('''
@program
def p(a: f32["M", "N"]) -> f32["M", "N"]:
    c = zeros((M, N))
    for i in range(M):
        t = 0.0
        for j in range(N):
            s = a[i, j] * 2.0
            t += s
            c[i, j] = s
        for j in range(N):
            s = a[i, j] + t
            c[i, j] += s * s
    return c
''', "no loop"),
}


def _args(prog, seed):
    rng = np.random.default_rng(seed)
    out = []
    for q in prog.params:
        if q.shape is None:
            out.append(1.25)
        else:
            out.append(rng.standard_normal([D[d] for d in q.shape]).astype(np.float32))
    return out


@pytest.mark.parametrize("name", sorted(CASES))
def test_grouped_fission(tmp_program, name):
    src, expect = CASES[name]
    prog = tmp_program(src)
    plan = eqsat.optimize(prog, D)
    kinds = [k.kind for k in plan.kernels]
    if expect == "no loop":
        assert "loop" not in kinds, plan
    elif expect == "loop":
        assert "loop" in kinds, plan
    elif expect == "pointwise first":
        assert plan.why_not("pointwise").found, plan
    if expect is not None and len(plan.lowered.nests) > 1:  # split: the whole nest is an alternative
        assert plan.why_not("loop").found, plan
    for seed in (1, 2):
        args = _args(prog, seed)
        before = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        want = eqsat.reference(prog, *args)
        for backend in ("numpy", "triton"):
            got = plan.run(*args, backend=backend)
            for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
                np.testing.assert_allclose(np.asarray(g), w, rtol=1e-5, atol=1e-5, err_msg=f"{backend}\n{plan}")
        for a, b in zip(args, before):  # parameters are passed by value
            assert np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b


def test_a_scalar_private_to_the_parts_is_no_output_and_the_parts_compile(tmp_program):
    """llm.c's causal softmax: split into parts, each assigning `expv` (or `val`) before
    reading it. Nothing reads them after the nest, so no part outputs them, and no part
    takes the last value in to pass it on: the parts compile (a part that may leave an
    output unassigned runs interpreted, as Python raises where numba reads a zero)."""
    prog = tmp_program('''
@program
def p(q: f32["T", "HS"], k: f32["T", "HS"]) -> f32["T", "T"]:
    preatt = zeros((T, T))
    att = zeros((T, T))
    for t in range(T):
        maxval = -10000.0
        for t2 in range(t + 1):
            val = 0.0
            for i in range(HS):
                val += q[t, i] * k[t2, i]
            if val > maxval:
                maxval = val
            preatt[t, t2] = val
        expsum = 0.0
        for t2 in range(t + 1):
            expv = exp(preatt[t, t2] - maxval)
            expsum += expv
            att[t, t2] = expv
        for t2 in range(t + 1):
            att[t, t2] /= expsum
    return att
''')
    dims = {"T": 256, "HS": 8}
    plan = eqsat.optimize(prog, dims, target="cpu")
    assert any(x.kind == "loop" for x in plan.kernels) and "interpreted" not in str(plan), plan
    rng = np.random.default_rng(0)
    q, k = (rng.uniform(-1, 1, (256, 8)).astype(np.float32) for _ in range(2))
    assert np.allclose(plan.run(q, k), eqsat.reference(prog, q, k), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_a_scalar_an_unrolled_iteration_leaves_to_the_next_statement_is_an_output(tmp_program, n):
    """The dataflow campaign's `acc1 *= 0.5` under `if k <= j`: the nest splits (acc2 carried
    in a buffer) and the part that keeps the rest is unrolled over `i`. The `j` loop of an
    iteration may leave `acc1` unassigned and nothing after the part reads it, but the
    iteration's next statement, `s = acc1`, does: the loop must output it (it was left out as
    private to the loop, and `s` got `acc1 = 1.0`: 1.0 for 0.5 at N=1)."""
    prog = tmp_program('''
@program
def p(x: f32["N"], alpha: f32, A: f32["N", "N"]):
    s = 0.0
    for i in range(N):
        acc1 = 1.0
        for j in range(N):
            acc2 = 0.0
            for k in range(N):
                if i > 0:
                    s = x[i - 1] * alpha
                if k <= j:
                    acc1 *= 0.5
                elif k < j:
                    s = A[i, i]
            s = acc2
        s = acc1
    return s
''')
    plan = eqsat.optimize(prog, {"N": n})
    assert len(plan.lowered.nests) > 1, plan  # split into parts: the case this test is about
    for seed in (0, 1, 2):
        rng = np.random.default_rng(seed)
        args = (rng.standard_normal(n).astype(np.float32), float(rng.uniform(0.5, 1.5)),
                rng.standard_normal((n, n)).astype(np.float32))
        want = eqsat.reference(prog, *args, shapes={"N": n})
        assert want == 0.5 ** (n * (n + 1) // 2)
        np.testing.assert_allclose(np.asarray(plan.run(*args)), want, rtol=1e-6, err_msg=str(plan))
