"""Counters (`eqsat/counters.py`): an integer local set once and stepped by a constant in
`for` loops reads as its closed form, an affine expression of the loop variables, so the
nest it indexes is analysed and lifted as any other. Each program runs on both backends
against `reference` (the plain Python run); where the count is not affine (a triangle, a
step under a condition) the program is refused or kept as written, as before."""
from __future__ import annotations

import numpy as np
import pytest

import eqsat
from conftest import random_args, rel_err

LIFTED = {
    # a flattening: out[idx] with idx stepped in the inner loop
    "flatten": ('''
@program
def p(x: f32["N", "M"]) -> f32["NM"]:
    out = empty((N * M,))
    idx = 0
    for i in range(N):
        for j in range(M):
            out[idx] = x[i, j] * 2.0
            idx += 1
    return out
''', {"N": 3, "M": 4, "NM": 12}, ["pointwise"]),
    # a reversal by a counter stepped down, and two counters at once
    "reversal": ('''
@program
def p(x: f32["N"]) -> tuple[f32["N"], f32["N"]]:
    y = empty((N,))
    z = zeros((N,))
    k = N - 1
    a = 0
    b = N - 1
    for i in range(N):
        y[i] = x[k]
        k -= 1
        z[a] = x[b] + 1.0
        a += 1
        b = b - 1
    return y, z
''', {"N": 5}, ["pointwise", "pointwise"]),
    # set again in every row (from the row's own variable), read before and after its step
    # and in a branch; stepped by a size after an inner loop
    "per_row": ('''
@program
def p(x: f32["N", "M"]) -> tuple[f32["N", "M"], f32["N", "M"], f32["N", "M"]]:
    y = zeros((N, M))
    w = zeros((N, M))
    for i in range(N):
        c = i * 2
        for j in range(M):
            if x[i, j] > 0:
                y[i, j] = c * 1.0
            c += 1
            y[i, j] += c
    off = 0
    for i in range(N):
        for j in range(M):
            w[i, j] = x[i, j] + off
        off += M
    v = zeros((N, M))
    c = 3
    for i in range(N):
        v[i, 0] = c * 1.0
        for j in range(M):
            v[i, j] += c * 0.5
            c += 2
        v[i, M - 1] += c
        c -= 1
    return y, w, v
''', {"N": 4, "M": 5}, None),
    # a count read after its loops, as a value
    "count_after": ('''
@program
def p(x: f32["N", "M"]) -> f32:
    c = 0
    s = 0.0
    for i in range(N):
        for j in range(1, M):
            s += x[i, j]
            c += 1
    return s / c
''', {"N": 4, "M": 5}, None),
    # counted in loops that run downward (`range(N - 1, -1, -1)`: n-th iteration at N - 1 - n)
    "downward": ('''
@program
def p(x: f32["N", "M"]) -> tuple[f32["NM"], f32["NM"]]:
    y = zeros((NM,))
    z = zeros((NM,))
    c = 0
    for i in range(N - 1, -1, -1):
        for j in range(M):
            y[c] = x[i, j]
            c += 1
    d = 0
    for i in range(N):
        for j in range(M - 1, -1, -1):
            z[d] = x[i, j] * 2.0
            d += 1
    z[d - 1] += 1.0
    return y, z
''', {"N": 3, "M": 4, "NM": 12}, None),
    # counted in loops of any constant step: range(0, N, 2) (ceil(N / 2) iterations),
    # range(N // 2), range(N - 1, 0, -3), and a step of 3 inside a row loop
    "strided": ('''
@program
def p(x: f32["N"], y: f32["M", "N"]) -> tuple[f32["H"], f32["H"], f32["Q"], f32["R"]]:
    a = empty((H,))
    k = 0
    for i in range(0, N, 2):
        a[k] = x[i] + x[i + 1]
        k += 1
    b = zeros((H,))
    c = 0
    for i in range(N // 2):
        b[c] = x[2 * i] * 2.0
        c += 1
    d = zeros((Q,))
    m = 0
    for i in range(N - 1, 0, -3):
        d[m] = x[i] - x[i - 1]
        m += 1
    e = zeros((R,))
    n = 1
    for r in range(M):
        for j in range(0, N, 3):
            e[n] = y[r, j]
            n += 1
        n += 2
    return a, b, d, e
''', {"N": 10, "M": 3, "H": 5, "Q": 4, "R": 22}, None),
    # an index read after the loops (the count of all their iterations)
    "index_after": ('''
@program
def p(x: f32["N", "M"]) -> f32["NM"]:
    y = zeros((NM,))
    c = 0
    for i in range(N):
        for j in range(M):
            c += 1
    y[c - 1] = x[N - 1, M - 1]
    return y
''', {"N": 3, "M": 4, "NM": 12}, ["pointwise"]),
}


@pytest.mark.parametrize("name", sorted(LIFTED))
def test_counter_reads_as_its_closed_form(tmp_program, name):
    src, dims, kinds = LIFTED[name]
    prog = tmp_program("import numpy as np\n" + src)
    args = random_args(prog, dims, seed=3)
    want = eqsat.reference(prog, *args, shapes=dims)
    plan = eqsat.optimize(prog, dims)
    if kinds is not None:  # (None: the nest has forms kept as written for other reasons)
        assert [k.kind for k in plan.kernels] == kinds, plan
    want = want if isinstance(want, tuple) else (want,)
    for backend in ("numpy", "triton"):
        got = plan.run(*args, backend=backend)
        got = got if isinstance(got, tuple) else (got,)
        assert all(rel_err(g, w) < 1e-5 for g, w in zip(got, want)), (backend, got, want)


def test_a_loop_that_may_run_no_iteration_is_asserted_on_the_sizes(tmp_program):
    """`for i in range(1, N)` runs no iteration at N = 0, where the closed form would count
    N - 1 = -1: the counter adds an assertion on the sizes, checked when they are known."""
    prog = tmp_program('''
@program
def p(x: f32["N"], z: f32["M"]) -> f32["M"]:
    y = z * 1.0
    c = 0
    for i in range(1, N):
        c += 1
    y[c] = x[0]
    return y
''')
    for n in (1, 4):
        x, z = np.arange(n, dtype=np.float32) + 1, np.zeros(5, np.float32)
        assert np.array_equal(eqsat.optimize(prog, {"N": n, "M": 5}).run(x, z), eqsat.reference(prog, x, z))
    with pytest.raises(eqsat.ArgumentError, match="counter 'c' counts the iterations of `for i in range"):
        eqsat.optimize(prog, {"N": 0, "M": 5})


def test_a_counter_read_as_a_value_only_stays_a_value(tmp_program):
    """Read only as a value, a counter is not replaced (nor asserted on): a loop that runs
    no iteration leaves it as Python does (a probe: `range(M - 2)` at M = 1 was refused)."""
    prog = tmp_program('''
@program
def p(x: f32["M"]) -> f32:
    c = 0
    for j in range(M - 2):
        c += 1
    return x[0] * c
''')
    x = np.full(1, 3.0, np.float32)
    assert eqsat.optimize(prog, {"M": 1}).run(x) == eqsat.reference(prog, x) == 0.0


def test_a_counter_in_a_triangle_is_refused_with_what_a_counter_is(tmp_program):
    with pytest.raises(eqsat.ProgramError, match="a counter set once and stepped by a constant"):
        tmp_program('''
@program
def p(x: f32["N"]) -> f32["NN"]:
    y = zeros((NN,))
    c = 0
    for i in range(N):
        for j in range(i):
            y[c] = x[j]
            c += 1
    return y
''')


def test_a_conditional_step_stays_a_value(tmp_program):
    """Stepped under a condition the count is data: the nest is kept as written, and right."""
    prog = tmp_program('''
@program
def p(x: f32["N"]) -> f32["N"]:
    y = zeros((N,))
    c = 0
    for i in range(N):
        if x[i] > 0:
            c += 1
        y[i] = c * 1.0
    return y
''')
    x = np.array([1, -1, 2, 0, 3], dtype=np.float32)
    plan = eqsat.optimize(prog, {"N": 5})
    assert np.array_equal(plan.run(x), eqsat.reference(prog, x))
