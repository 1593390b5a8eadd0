"""Kept loop nests run compiled (numba) and agree with `reference`; the policy switch works
and a nest numba cannot compile still runs, interpreted, saying why."""
from __future__ import annotations

import numpy as np
import pytest

import eqsat
from conftest import random_args, rel_err

# a triangular solve: a recurrence over a triangular nest (stays a loop)
TRISOLV = '''
@program
def p(L: f32["N", "N"], b: f32["N"]) -> f32["N"]:
    x = zeros((N,))
    for i in range(N):
        s = b[i]
        for j in range(i):
            s -= L[i, j] * x[j]
        x[i] = s / (abs(L[i, i]) + 1.0)
    return x
'''

# a blend whose result feeds the next pixel: a conditional recurrence (stays a loop)
BLEND = '''
@program
def p(a: f32["N", "M"], b: f32["N", "M"]) -> f32["N", "M"]:
    y = zeros((N, M))
    for i in range(N):
        for j in range(1, M):
            if a[i, j] < 0.5:
                y[i, j] = 2.0 * a[i, j] * y[i, j - 1] + b[i, j]
            else:
                y[i, j] = 1.0 - 2.0 * (1.0 - a[i, j]) * (1.0 - b[i, j])
    return y
'''

PREFIX_VIEW = '''
@program
def p(x: f32["N", "M"]) -> f32["N", "M"]:
    c = zeros((N, M))
    t = c.T
    for j in range(M):
        s = 0.0
        for i in range(N):
            s += relu(x[i, j])
            t[j, i] = s
    return c
'''

D = {"N": 7, "M": 5}


@pytest.mark.parametrize("src", [TRISOLV, BLEND, PREFIX_VIEW], ids=["trisolv", "blend", "prefix_view"])
def test_compiled_nest_matches_reference(tmp_program, monkeypatch, src):
    monkeypatch.setenv("EQSAT_COMPILE_LOOPS", "always")
    prog = tmp_program(src)
    args = random_args(prog, D, seed=2)
    want = eqsat.reference(prog, *args)
    plan = eqsat.optimize(prog, D)
    assert any(k.kind == "loop" for k in plan.kernels)
    got = plan.run(*args)
    assert rel_err(got, want) < 1e-5
    assert plan.loop_runners and all(how == "compiled (numba)" for _, how in plan.loop_runners.values()), \
        plan.loop_runners
    assert "compiled (numba)" in str(plan)
    again = plan.run(*args)  # compiled once per plan: the second run reuses it
    assert np.array_equal(again, got)


def test_never_interprets(tmp_program, monkeypatch):
    monkeypatch.setenv("EQSAT_COMPILE_LOOPS", "never")
    prog = tmp_program(BLEND)
    args = random_args(prog, D, seed=2)
    plan = eqsat.optimize(prog, D)
    assert rel_err(plan.run(*args), eqsat.reference(prog, *args)) < 1e-6
    assert all(how.startswith("interpreted") for _, how in plan.loop_runners.values())


@pytest.mark.parametrize("name", ["seidel_2d", "lu", "floyd_warshall", "cholesky", "nussinov", "durbin"])
def test_polybench_recurrences_compile(monkeypatch, name):
    """Recurrences stay loops; compiled, they agree with the numpy truth."""
    import importlib.util
    from pathlib import Path

    monkeypatch.setenv("EQSAT_COMPILE_LOOPS", "always")
    path = Path(__file__).parent / "polybench" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"pb_compiled_{name}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    prog = next(v for v in vars(mod).values() if isinstance(v, eqsat.ir.Program))
    args = mod.init(np.random.default_rng(1))
    plan = eqsat.optimize(prog, mod.SHAPES)
    assert plan.compile_loops() >= 0
    assert all(how == "compiled (numba)" for _, how in plan.loop_runners.values()), plan.loop_runners
    got = plan.run(*args)
    want = mod.truth(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    gs, ws = (got, want) if isinstance(want, tuple) else ((got,), (want,))
    for g, w in zip(gs, ws):
        assert rel_err(g, w) < 1e-4


# a kernel's result read by a recurrence that updates it in place, and returned as it was:
# the recurrence must get a copy (the caller sees the value before the update)
SHARED_BUFFER = '''
@program
def p(a: f32["N"]) -> tuple[f32["N"], f32["N"]]:
    t = empty((N,))
    for i in range(N):
        t[i] = a[i] * 2.0
    u = empty((N,))
    for i in range(N):
        u[i] = t[i]
    for i in range(1, N):
        t[i] = t[i] + 0.5 * t[i - 1]
    return t, u
'''

# a scratch buffer only the recurrence reads: it is the recurrence's to update, no copy
OWN_BUFFER = '''
@program
def p(a: f32["N"]) -> f32["N"]:
    t = empty((N,))
    for i in range(N):
        t[i] = a[i] * 2.0
    for i in range(1, N):
        t[i] = t[i] + 0.5 * t[i - 1]
    return t
'''


def _copies(plan) -> int:
    """How many array copies the plan's straight-line code makes on a call."""
    from eqsat.backends import numpy_backend

    comp = plan.compiled("numpy")
    assert comp.how == "compiled (straight-line numpy)", comp.how
    ns = comp.fn.__globals__
    copiers = {k for k, v in ns.items() if v is np.ndarray.copy or v is numpy_backend._f32_copy}
    return sum(f"= {k}(" in line for line in comp.source.splitlines() for k in copiers)


@pytest.mark.parametrize("src,copies", [(SHARED_BUFFER, 1), (OWN_BUFFER, 0), (TRISOLV, 0)],
                         ids=["shared_buffer", "own_buffer", "trisolv"])
def test_compiled_nest_is_called_directly(tmp_program, monkeypatch, src, copies):
    """A compiled nest is one call in the plan's code: its tensor inputs are copied only
    where the nest writes a value someone else can still see (a parameter, a result read
    again); the caller's arrays stay as they were, and the results agree with reference."""
    monkeypatch.setenv("EQSAT_COMPILE_LOOPS", "always")
    prog = tmp_program(src)
    args = random_args(prog, D, seed=5)
    before = [a.copy() for a in args]
    want = eqsat.reference(prog, *args)
    plan = eqsat.optimize(prog, D)
    assert any(k.kind == "loop" for k in plan.kernels), plan
    for _ in range(2):
        got = plan.run(*args)
        gs, ws = (got, want) if isinstance(want, tuple) else ((got,), (want,))
        for g, w in zip(gs, ws):
            assert rel_err(g, w) < 1e-5
    assert all(np.array_equal(a, b) for a, b in zip(args, before))
    assert _copies(plan) == copies, plan.compiled("numpy").source


def test_nest_writing_a_parameter_copies_it(tmp_program, monkeypatch):
    """An in-place update of a parameter (gemm's C) works on a copy: the caller's array is
    untouched, call after call."""
    monkeypatch.setenv("EQSAT_COMPILE_LOOPS", "always")
    prog = tmp_program('''
@program
def p(c: f32["N"]) -> f32["N"]:
    for i in range(1, N):
        c[i] = c[i] * 0.5 + c[i - 1]
    return c
''')
    args = random_args(prog, D, seed=6)
    before = args[0].copy()
    plan = eqsat.optimize(prog, D)
    first = plan.run(*args)
    second = plan.run(*args)
    assert np.array_equal(args[0], before)
    assert np.array_equal(first, second)
    assert rel_err(first, eqsat.reference(prog, *args)) < 1e-5
    assert _copies(plan) == 1


# Python numbers meeting float32 values in a kept nest (backends/scalar_types.py): the
# reference compares and divides in float32 (numpy's weak Python scalars); compiled as
# written, numba promoted float32 to float64 and `x[i] > 0.1` held for x[i] = float32(0.1)
WEAK_BRANCH = '''
@program
def p(x: f32["N"]) -> f32["N"]:
    y = empty((N,))
    s = 0.0
    for i in range(N):
        if x[i] > 0.1:
            s = s + 1.0
        else:
            s = s * 0.5
        y[i] = s
    return y
'''

WEAK_REMAINDER = '''
@program
def p(x: f32["N"]) -> tuple[f32["N"], f32["N"]]:
    y = empty((N,))
    z = empty((N,))
    s = 0.0
    for i in range(N):
        s = s + x[i] % 0.3
        y[i] = s
        z[i] = x[i] // 0.3 + (1.0 if x[i] - 0.3 * 7 >= 0 else -1.0)
    return y, z
'''

# an accumulator compared with a constant, and a loop variable meeting a float32
WEAK_ACCUMULATOR = '''
@program
def p(x: f32["N"]) -> f32["N"]:
    y = empty((N,))
    acc = 0.0
    for i in range(N):
        acc += x[i]
        y[i] = max(acc, 0.3) + i * x[i] if acc <= 0.3 else min(acc, 0.7) - i
    return y
'''

# integer arithmetic meeting floats: Python's ints do not wrap and `int ** -1` is a float;
# numba's int64 wrapped (`(i + 1) ** 30`, `t * t` of a size 2**40) and gave 0 for `** -1`;
# a result that fits int64 is exact there however its parts overflowed, and must stay so
# (in float64 `(i + 2 ** 53) - 2 ** 53` loses i). The loop-carried sum keeps the nest a loop
EXACT_INTS = '''
@program
def p(x: f32["N"], t: int) -> f32["N"]:
    y = zeros((N,))
    s = 0.0
    for i in range(N):
        s = s * 0.5 + x[i]
        y[i] = s * (i + 1) ** -1 + x[i] * (i + 1) ** 30 * 1e-30 + (t * t) * 1e-24 + (i * 4000000000 * 4000000000) * 1e-19
        y[i] += ((i + 2 ** 53) - 2 ** 53) + x[i] * ((i + 10 ** 18) * 10 - 10 ** 19)
        if x[i] > (i + 1) ** -1:
            y[i] += 1.0
    return y
'''


@pytest.mark.parametrize("src", [WEAK_BRANCH, WEAK_REMAINDER, WEAK_ACCUMULATOR], ids=["branch", "remainder", "accumulator"])
def test_compiled_nest_has_python_number_semantics(tmp_program, monkeypatch, src):
    monkeypatch.setenv("EQSAT_COMPILE_LOOPS", "always")
    prog = tmp_program(src)
    n = 16
    # inputs on the constants' float32 values, where float64 arithmetic goes the other way
    x = np.full(n, np.float32(0.1), dtype=np.float32)
    x[1] = np.float32(0.2)  # (0.1 + 0.2 is float32(0.3) in float32, above 0.3 in float64)
    x[4::2] = np.float32(0.3) * np.float32(7)
    x[5::4] = np.float32(0.3)
    x[3] = np.float32(0.1) + np.float32(0.2)
    plan = eqsat.optimize(prog, {"N": n})
    assert plan.compile_loops() >= 0
    assert all(how.startswith("compiled") for _, how in plan.loop_runners.values()), plan.loop_runners
    got, want = plan.run(x), eqsat.reference(prog, x)
    for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
        assert np.array_equal(np.asarray(g), np.asarray(w)), (g, w)


def test_weak_number_types():
    """The typing `scalar_types` infers: Python numbers stay Python numbers (float64 where
    only they meet), a float32 anywhere makes the local float32, and only a Python number
    meeting a float32 or an array is cast."""
    import ast

    from eqsat.backends import scalar_types as st

    tree = ast.parse("""
c = 0.1 * 3
s = 0.0
for i in range(N):
    s = s + x[i] * 2
    t = c + i
    r = x[i] > t
""")
    types = st.Types(tree, {"x": 1}, [], {"N": 4}, {}, {})
    assert types.env["c"] == st.FLOAT and types.env["t"] == st.FLOAT
    assert types.env["s"] == st.F32 and types.env["i"] == st.INT
    assert st.cast_weak(tree, types) == 3  # s = 0.0, * 2, > t; nothing in c or t
    src = ast.unparse(tree)
    assert "c = 0.1 * 3" in src and "t = c + i" in src
    assert "s = np.float32(0.0)" in src and "x[i] * np.float32(2)" in src and "x[i] > np.float32(t)" in src


# a Python-float scalar bound before the nest (acc = 0.0) and summed with Python floats in
# it stays a Python float, as in the reference (it came in as float32 and summed in
# float32: the comparison with y[i] = float32((i + 1) * 0.1) flipped from i = 6 on)
PYTHON_ACCUMULATOR = '''
@program
def p(y: f32["N"]) -> f32["N"]:
    z = zeros((N,))
    acc = 0.0
    for i in range(N):
        acc += 0.1
        z[i] = 1.0 if acc <= y[i] else 0.0
    return z
'''


@pytest.mark.parametrize("policy", ["always", "never"])
def test_a_python_number_entering_a_nest_stays_one(tmp_program, monkeypatch, policy):
    monkeypatch.setenv("EQSAT_COMPILE_LOOPS", policy)
    prog = tmp_program(PYTHON_ACCUMULATOR)
    y = np.array([np.float32((i + 1) * 0.1) for i in range(12)], dtype=np.float32)
    want = eqsat.reference(prog, y)
    for target in ("cpu", "h100"):
        plan = eqsat.optimize(prog, {"N": 12}, target=target)
        assert any(k.kind == "loop" for k in plan.kernels)
        for backend in ("numpy", "triton"):
            np.testing.assert_array_equal(np.asarray(plan.run(y, backend=backend)), want)


@pytest.mark.parametrize("src,dims,args", [
    # a tuple assignment's temporary is no name of the source the nest runs
    ('''
@program
def p(x: f32["N"]) -> f32["N"]:
    y = empty((N,))
    a, b = 0.0, 1.0
    for i in range(N):
        a, b = b, a + b * x[i]
        y[i] = a
    return y
''', {"N": 10}, lambda rng: [rng.standard_normal(10).astype(np.float32)]),
    # ping-pong at T = 0: the exchange's temporary is bound on a branch that does not run
    ('''
@program
def p(u0: f32["N"], T: int) -> f32["N"]:
    a = u0.copy()
    b = u0.copy()
    for t in range(T):
        for i in range(1, N - 1):
            b[i] = a[i] + 0.25 * (a[i - 1] - 2.0 * a[i] + a[i + 1])
        a, b = b, a
    return a
''', {"N": 5, "T": 0}, lambda rng: [rng.standard_normal(5).astype(np.float32), 0]),
], ids=["tuple_assignment", "ping_pong_t0"])
def test_eqsat_temporaries_nothing_reads_do_not_stop_compiling(tmp_program, monkeypatch, src, dims, args):
    """Found by a probe: both nests ran interpreted (numba could not type the temporary the
    nest returned); the answers were right."""
    monkeypatch.setenv("EQSAT_COMPILE_LOOPS", "always")
    prog = tmp_program(src)
    plan = eqsat.optimize(prog, dims, target="cpu")
    xs = args(np.random.default_rng(0))
    np.testing.assert_allclose(plan.run(*xs), eqsat.reference(prog, *xs), rtol=1e-6)
    assert plan.loop_runners and all(how == "compiled (numba)" for _, how in plan.loop_runners.values()), \
        plan.loop_runners


BANDED = '''
@program
def p(A: f32["KB1", "N"], x: f32["N"], y: f32["N"]) -> tuple[f32["N"], f32["N"]]:
    kb = KB1 - 1
    for j in range(N):
        temp = x[j]
        for i in range(max(0, j - kb), j):
            x[i] += temp * A[kb + i - j, j]
        x[j] = temp * A[kb, j]
    for j in range(N - 1, -1, -1):
        for i in range(max(0, j - kb, j - 2), min(N, j + 2, j + kb)):
            y[i] += x[j] * A[0, i]
    return x, y
'''


@pytest.mark.parametrize("mode", ["always", "never"])
def test_a_clamped_loop_runs_its_own_iterations(tmp_program, monkeypatch, mode):
    """A probe's (V): `for i in range(max(0, j - kb), j)` (reference BLAS's banded loops) is
    analysed as `range(0, j)` under the guard `i >= j - kb`; run as written, that guard made
    the nest quadratic (490x numba at N=20000, unfinished at 10^6). Kept nests run the
    clamped bounds again, compiled or interpreted, and agree with the reference."""
    from eqsat.backends import loops

    monkeypatch.setenv("EQSAT_COMPILE_LOOPS", mode)
    prog = tmp_program(BANDED)
    dims = {"KB1": 3, "N": 9}
    args = random_args(prog, dims, seed=4)
    want = eqsat.reference(prog, *args)
    plan = eqsat.optimize(prog, dims, target="cpu")
    nests = [k for k in plan.kernels if k.kind == "loop"]
    assert nests
    for got, w in zip(plan.run(*args), want):
        assert rel_err(got, w) < 1e-5
    src = "".join(loops._source(plan, plan.lowered.nests[k.nest])[0] for k in nests)
    # (KB1 - 1 is computed when the source is written: `scalar_types.fold_sizes`)
    assert "range(max(0, j - 2), j)" in src and "if i >=" not in src, src


WHOLE_WRITES = '''
@program
def p(u: f32["N"], img: f32["H", "W"]) -> tuple[f32["N"], f32["H2", "W2"], f32["N"], f32["N"], f32["N2"],
                                                f32["H2", "W2"], f32["N2"]]:
    v = empty((N,))
    for i in range(N):
        v[i] = u[i] + 0.1 * (u[(i - 1) % N] - 2.0 * u[i] + u[(i + 1) % N])
    out = empty((H2, W2))
    for y in range(H2):
        for x in range(W2):
            out[y, x] = img[y // 2, x // 2]
    part = zeros((N,))
    for i in range(1, N):
        part[i] = u[(i + 2) % N]
    rec = zeros((N,))
    for i in range(N):
        rec[i] = u[(i * 3) % N] + rec[(i + N - 1) % N]
    lace = empty((N2,))
    for i in range(N):
        lace[2 * i] = u[i]
        lace[2 * i + 1] = -u[i]
    shuf = empty((H2, W2))
    for c in range(4):
        for y in range(H):
            for x in range(W):
                shuf[2 * y + c // 2, 2 * x + c % 2] = img[y, x] * (c + 1.0)
    odd = zeros((N2,))
    for i in range(N):
        odd[2 * i] = u[i]
    return v, out, part, rec, lace, shuf, odd
'''


@pytest.mark.parametrize("mode", ["always", "never"])
def test_a_nest_that_writes_a_whole_buffer_makes_it(tmp_program, monkeypatch, mode):
    """A probe's (V): `v = empty((N,))` then a kept nest storing every `v[i]` had a pass
    fill v with zeros, then a copy of it (a written input is copied): 2x numba on a periodic
    stencil. A buffer a nest stores whole (one plain store, its index the loops' variables
    over every axis) and never reads is made by the nest; one written in part, or read,
    still comes in. Stores that write it whole together (interleaved, a pixel shuffle)
    count, proven by isl."""
    monkeypatch.setenv("EQSAT_COMPILE_LOOPS", mode)
    prog = tmp_program(WHOLE_WRITES)
    dims = {"N": 7, "H": 3, "W": 2, "H2": 6, "W2": 4, "N2": 14}
    args = random_args(prog, dims, seed=8)
    want = eqsat.reference(prog, *args, shapes=dims)
    plan = eqsat.optimize(prog, dims, target="cpu")
    for got, w in zip(plan.run(*args), want):
        assert rel_err(got, w) < 1e-6
    nests = [plan.lowered.nests[k.nest] for k in plan.kernels if k.kind == "loop"]
    made = {n for nest in nests for n in nest.allocates}
    inputs = {n for nest in nests for n in nest.tensor_inputs}
    assert {"v", "out", "lace", "shuf"} <= made and not {"part", "rec", "odd"} & made, plan
    assert not {"v", "out", "lace", "shuf"} & inputs and {"part", "rec", "odd"} <= inputs


@pytest.mark.parametrize("mode", ["always", "never"])
@pytest.mark.parametrize("n", [0, 2])
def test_a_store_that_may_not_run_keeps_the_buffer(tmp_program, monkeypatch, mode, n):
    """A probe's (X), against the buffers nests make: a store under a loop that may run no
    iteration (`for t in range(n)` with n = 0; `for j in range(i)` at i = 0) does not write
    the buffer whole, so the parameter's values (or zeros) must stay where it does not run."""
    monkeypatch.setenv("EQSAT_COMPILE_LOOPS", mode)
    prog = tmp_program('''
@program
def p(x: f32["N"], y: f32["N"], n: int) -> tuple[f32["N"], f32["N"]]:
    s = 0.0
    for t in range(n):
        for i in range(N):
            s = s * 0.5 + x[i]
            y[i] = s
    v = zeros((N,))
    r = 0.0
    for i in range(N):
        for j in range(i):
            r = r * 0.5 + x[j]
            v[i] = r
    return y, v
''')
    dims = {"N": 6, "n": n}
    x, y = (np.random.default_rng(9).standard_normal(6).astype(np.float32) for _ in range(2))
    want = eqsat.reference(prog, x, y, n)
    plan = eqsat.optimize(prog, dims, target="cpu")
    for _ in range(3):  # (fresh memory each time: garbage would show)
        for got, w in zip(plan.run(x, y, n), want):
            assert np.array_equal(got, w)


def test_a_clamped_loop_is_priced_by_its_own_iterations(tmp_program):
    """A tridiagonal product `for j in range(max(0, i - 1), min(N, i + 2))` was priced over
    its hull (N * N guarded iterations), so a masked reduction over that hull looked cheaper
    and won: 400x numba's time at N = 2000 (a probe). The work model counts the clamped
    bounds the nest runs between: 3N, and the loop is kept."""
    prog = tmp_program('''
@program
def p(A: f32["N", "N"], x: f32["N"]) -> f32["N"]:
    y = zeros((N,))
    for i in range(N):
        for j in range(max(0, i - 1), min(N, i + 2)):
            y[i] += A[i, j] * x[j]
    return y
''')
    n = 2000
    plan = eqsat.optimize(prog, {"N": n}, target="cpu")
    nest = plan.lowered.nests[0]
    assert nest.work["ops"] < 10 * 3 * n, nest.work  # (the hull's would be ~8 * n * n)
    assert [k.kind for k in plan.kernels if k.kind != "pointwise"] == ["loop"], plan
    args = random_args(prog, {"N": n}, seed=1)
    assert rel_err(plan.run(*args), eqsat.reference(prog, *args)) < 1e-5


def test_a_branch_on_the_loop_variable_is_priced_for_the_iterations_it_takes():
    """`if j >= i - 2 and j <= i + 3` in a loop over j: the work model counted its body on
    every iteration (an upper bound); a band on the loop's variable takes 6 of N."""
    from eqsat.ir import Bin, BoolOp, Compare, Const, Dim, For, If, Index, Store
    from eqsat.work import nest_work

    n = 1000
    body = Store(None, "y", (("name", "i"),), Index(None, "a", (("name", "i"), ("name", "j"))), aug=True)
    near = [Compare(None, ">=", Dim(None, "j"), Bin(None, "-", Dim(None, "i"), Const(None, 2.0))),
            Compare(None, "<=", Dim(None, "j"), Bin(None, "+", Dim(None, "i"), Const(None, 3.0)))]
    inner = For(None, "j", ("int", 0), ("name", "N"), [If(None, BoolOp(None, "and", tuple(near)), [body], [])])
    w = nest_work(For(None, "i", ("int", 0), ("name", "N"), [inner]), {"N": n})
    assert w["bytes"] <= 4 * 2 * 6 * n * 1.01, w  # (the store and its load, on 6 iterations of each row)


@pytest.mark.parametrize("mode", ["always", "never"])
def test_integer_arithmetic_meeting_floats_does_not_wrap(tmp_program, monkeypatch, mode):
    monkeypatch.setenv("EQSAT_COMPILE_LOOPS", mode)
    prog = tmp_program(EXACT_INTS)
    x = np.linspace(-1, 1, 8, dtype=np.float32)
    t = 2 ** 40
    plan = eqsat.optimize(prog, {"N": 8, "t": t}, target="cpu")
    assert "loop" in [k.kind for k in plan.kernels], plan
    if mode == "always":
        assert plan.compile_loops() >= 0
        assert all(how.startswith("compiled") for _, how in plan.loop_runners.values()), plan.loop_runners
    assert rel_err(plan.run(x, t), eqsat.reference(prog, x, t)) < 1e-6


def test_a_kept_body_with_many_library_calls_compiles_them_as_calls(tmp_program, monkeypatch):
    """A probe's: a kept nest calling tanh and sigmoid 100 times in one body took 26 s and
    640 MB to compile with every call inlined (250 calls: past 4 GB); past
    `loops.INLINE_CALLS_MAX` calls they are bound to forms numba calls."""
    from eqsat.backends import loops, vector_math

    monkeypatch.setenv("EQSAT_COMPILE_LOOPS", "always")
    forms = ["t = tanh(t * 0.9 + b[j])", "t = t * 1.05 - 0.02", "t = sigmoid(t) - 0.5"]
    body = "\n".join("            " + forms[i % len(forms)] for i in range(3 * (loops.INLINE_CALLS_MAX + 2)))
    prog = tmp_program(f'''
@program
def p(x: f32["M", "D"], b: f32["D"]) -> f32["M", "D"]:
    y = empty((M, D))
    for i in range(M):
        for j in range(D):
            t = x[i, j]
{body}
            y[i, j] = t
    return y
''')
    plan = eqsat.optimize(prog, {"M": 3, "D": 4}, limits=eqsat.Limits(seconds=0.05))
    bound = []
    real = loops.load_compiled

    def spy(kind, src, entry, bind, example):
        bound.extend(bind.values())
        return real(kind, src, entry, bind, example)

    monkeypatch.setattr(loops, "load_compiled", spy)
    rng = np.random.default_rng(0)
    x, b = rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal(4).astype(np.float32)
    assert rel_err(plan.run(x, b), eqsat.reference(prog, x, b)) < 1e-4
    assert [k.kind for k in plan.kernels] == ["loop"], plan  # (kept as written for time)
    assert any(f is vector_math.scalar_not_inlined()["tanh"] for f in bound), plan


# every float class: NaN, both zeros, tiny and large values, infinities
_SPECIAL = np.array([np.nan, 0.0, -0.0, 1e-8, -3e-7, 0.3, -0.62, 0.7, -3.0, 20.0, np.inf, -np.inf], np.float32)


def _same_bits(got, want) -> bool:
    got, want = np.asarray(got), np.asarray(want)
    return bool(np.all(((got == want) & (np.signbit(got) == np.signbit(want))) | (np.isnan(got) & np.isnan(want))))


@pytest.mark.parametrize("expr", ["np.sign(x[i])", "relu(x[i])", "np.maximum(x[i], 0.0)", "np.minimum(0.0, x[i])",
                                  "np.maximum(x[i], y[i])", "np.minimum(y[i], x[i])"])
def test_compiled_nest_keeps_the_sign_of_zero(tmp_program, monkeypatch, expr):
    """A kept nest compiled by numba gives numpy's results bit for bit where numba's own
    functions differ: `np.maximum(-0.0, 0.0)` (numpy: the second operand on a tie, numba:
    the first) and `np.sign(-0.0)` (numpy: 0.0, numba: -0.0); relu is numpy's maximum.
    (The nest is a loop: each element's condition reads the one before.)"""
    monkeypatch.setenv("EQSAT_COMPILE_LOOPS", "always")
    prog = tmp_program(f'''
import numpy as np

@program
def p(x: f32["N"], y: f32["N"]) -> f32["N"]:
    out = zeros((N,))
    for i in range(1, N):
        out[i] = {expr} if out[i - 1] != 7.0 else 1.0
    return out
''')
    x = np.repeat(_SPECIAL, len(_SPECIAL))
    y = np.tile(_SPECIAL, len(_SPECIAL))
    x[1::2], y[1::2] = y[1::2], x[1::2]  # (pairs both ways)
    with np.errstate(all="ignore"):
        want = eqsat.reference(prog, x, y)
        plan = eqsat.optimize(prog, {"N": len(x)})
        assert "loop" in [k.kind for k in plan.kernels], plan
        got = plan.run(x, y)
    assert all(how == "compiled (numba)" for _, how in plan.loop_runners.values()), plan.loop_runners
    assert _same_bits(got, want)


def test_tanh_near_zero_on_both_backends(tmp_program, monkeypatch):
    """tanh keeps every digit near 0 and the sign of -0.0, lifted (numpy and Triton) and in
    a compiled kept nest: Triton's form through exp gave tanh(1e-8) = 0.0."""
    monkeypatch.setenv("EQSAT_COMPILE_LOOPS", "always")
    lifted = tmp_program('''
@program
def p(x: f32["N"]) -> f32["N"]:
    return tanh(x) + gelu(x) * 0.0
''')
    kept = tmp_program('''
@program
def p(x: f32["N"]) -> f32["N"]:
    out = zeros((N,))
    for i in range(1, N):
        out[i] = tanh(x[i]) if out[i - 1] != 7.0 else 1.0
    return out
''')
    x = np.concatenate([_SPECIAL[np.isfinite(_SPECIAL)], np.geomspace(1e-12, 10, 40, dtype=np.float32),
                        -np.geomspace(1e-12, 10, 40, dtype=np.float32)]).astype(np.float32)
    for prog in (lifted, kept):
        want = eqsat.reference(prog, x)
        plan = eqsat.optimize(prog, {"N": len(x)})
        for backend in ("numpy", "triton"):
            got = np.asarray(plan.run(x, backend=backend))
            assert np.all(np.signbit(got) == np.signbit(want)), (backend, x[np.signbit(got) != np.signbit(want)])
            assert np.allclose(got, want, rtol=1e-6, atol=0), (backend, np.max(np.abs(got - want) / np.abs(want)))


def test_interpreted_forces_this_threads_plans_to_interpret_their_nests(monkeypatch):
    """`loops.interpreted()` (the rule check's probes: compiling their tiny nests on a fresh
    cache took 4.7 s, a probe's) sets this thread's policy to `never`, and only inside it."""
    import threading

    from eqsat.backends import loops

    monkeypatch.setenv("EQSAT_COMPILE_LOOPS", "always")
    seen = []
    with loops.interpreted():
        assert loops.policy() == "never"
        t = threading.Thread(target=lambda: seen.append(loops.policy()))
        t.start()
        t.join()
    assert seen == ["always"] and loops.policy() == "always"


DOTS_IN_A_LOOP = '''
import numpy as np

@program
def p(L: f32["N", "N"], b: f32["N"]) -> tuple[f32["N"], f32["N"]]:
    x = np.zeros(N, dtype=np.float32)
    y = np.zeros(N, dtype=np.float32)
    for i in range(N):
        x[i] = (b[i] - np.dot(L[i, :i], x[:i])) / L[i, i]
        y[i] = np.dot(L[1:i + 1, i], b[:i]) + L[i, 2:] @ b[2:] * 0.5
    return x, y
'''


@pytest.mark.parametrize("n", [1, 2, 9])
def test_a_desugared_dot_product_in_a_kept_nest_calls_blas(tmp_program, monkeypatch, n):
    """`np.dot(L[i, :i], x[:i])` inside a loop kept as written (a triangular solve) is a
    loop the desugaring writes; compiled, it is `np.dot` of the slices again (BLAS: the
    loop added in order in float32 and did not vectorize, 2x numba running the program as
    written, a probe's), an empty slice included, row and column slices alike."""
    from eqsat.backends import loops

    monkeypatch.setenv("EQSAT_COMPILE_LOOPS", "always")
    prog = tmp_program(DOTS_IN_A_LOOP)
    rng = np.random.default_rng(n)
    L = (np.tril(rng.uniform(0.5, 1.0, (n, n))) + np.eye(n)).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    plan = eqsat.optimize(prog, {"N": n}, target="cpu")
    nests = [k for k in plan.kernels if k.kind == "loop"]
    src = "".join(loops._source(plan, plan.lowered.nests[k.nest])[0] for k in nests)
    assert "np.dot(L[i, :max(i, 0)], x[:max(i, 0)])" in src and "eqsat_sec1_k" not in src, src
    for got, want in zip(plan.run(L, b), eqsat.reference(prog, L, b)):
        assert rel_err(got, want) < 1e-5
