"""Pointwise and reduction kernels compiled for the CPU (`backends/cpu_kernels.py`).

With EQSAT_COMPILE_KERNELS=always every such kernel of a plan is generated as a numba
function; here the corpus, the row statistics of ML layers, the conditionals and the
shifted-read image kernels run that way against `reference` (NaN inputs included where
the program is meant for them). And at sizes where it pays, the default (`auto`)
compiles exactly the kernels the cost model rates as compiled: a row-wise reduction, not
a sum down columns (its loads would stride across rows in the innermost loop)."""
from __future__ import annotations

import numpy as np
import pytest

import eqsat
import test_conditionals as conditionals
import test_row_statistics as rows
import test_shifted_reads as shifted
from conftest import corpus_paths, load_case, random_args

CASES = {f"corpus_{p.stem}": p for p in corpus_paths()}
CASES.update({f"rows_{n}": (src, (extra or [rows.D])[0]) for n, (src, _, *extra) in rows.CASES.items()})
CASES.update({f"whole_{n}": (src, {"N": 100}) for n, src in rows.WHOLE.items()})
CASES.update({f"cond_{n}": (src, conditionals.D) for n, (src, _) in conditionals.LIFTED.items()})
CASES.update({f"shifted_{n}": (src, dims) for n, (src, dims, _) in shifted.PROGRAMS.items()})
# a whole-array sum read by a parallel kernel: a 0-d tensor read inside `numba.prange`
# failed numba's parallel lowering, and the kernel ran as numpy passes (probe V: a
# Householder update 13 ms, compiled 1.7)
CASES["normalized_by_a_sum"] = ('''
@program
def p(A: f32["M", "N"], v: f32["M"], w: f32["N"]) -> f32["M", "N"]:
    s = 0.0
    for i in range(M):
        s += v[i] * v[i]
    for i in range(M):
        for j in range(N):
            A[i, j] -= 2.0 * v[i] * w[j] / s
    return A
''', {"M": 6, "N": 5})
# every function of the language, in one body (each must compile on scalars)
CASES["functions"] = ('''
@program
def p(x: f32["N"]) -> f32["N"]:
    y = empty((N,))
    for i in range(N):
        v = x[i]
        y[i] = relu(v) + gelu(v) + sigmoid(v) + silu(v) + tanh(v) + exp(-abs(v)) + sqrt(abs(v)) + log(abs(v) + 1.0) - v
    return y
''', {"N": 37})


def _load(tmp_program, case):
    if isinstance(case, tuple):
        src, dims = case
        return tmp_program(src), dims
    mod, prog = load_case(case)
    return prog, mod.SHAPES


def _outputs(x):
    return x if isinstance(x, tuple) else (x,)


@pytest.mark.parametrize("name", sorted(CASES))
def test_compiled_kernels_match_the_reference(tmp_program, monkeypatch, name):
    monkeypatch.setenv("EQSAT_COMPILE_KERNELS", "always")
    prog, dims = _load(tmp_program, CASES[name])
    plan = eqsat.optimize(prog, dims, target="cpu")
    for nan in (False, True) if name.startswith(("cond_", "shifted_")) else (False,):
        args = random_args(prog, dims, 5)
        if nan:
            for a in args:
                if isinstance(a, np.ndarray):
                    a.flat[::4] = np.nan
        want = eqsat.reference(prog, *args)
        for got, w in zip(_outputs(plan.run(*args)), _outputs(want)):
            np.testing.assert_allclose(np.asarray(got), w, rtol=1e-4, atol=1e-4, equal_nan=True,
                                       err_msg=f"nan={nan}\n{plan}")
    for k in plan.kernels:
        if k.term is not None and k.term.op == "Ten.compute":
            runner, how = plan.kernel_runners[k.name]
            assert runner is not None, f"{k.name}: {how}\n{plan}"


LAYERNORM = rows.CASES["layernorm"][0]
COLUMN_SUM = '''
@program
def p(x: f32["M", "N"]) -> f32["N"]:
    s = zeros((N,))
    for i in range(M):
        for j in range(N):
            s[j] += x[i, j]
    return s
'''


def test_auto_compiles_what_the_model_rates_compiled(tmp_program):
    """At 1024 x 1024 a layernorm's row reductions and its pointwise kernel have the work to
    pay for compiling, and stream rows: compiled; a sum down the columns would stride
    across rows in the innermost loop: numpy's passes run it. Each against numpy."""
    dims = {"M": 1024, "N": 1024}
    prog = tmp_program(LAYERNORM)
    plan = eqsat.optimize(prog, dims, target="cpu")
    plan.compile_loops()
    rated = {k.name for k in plan.kernels if k.term is not None and plan.costing.info(k.term).compiled}
    assert rated and rated == {n for n, (r, _) in plan.kernel_runners.items() if r is not None}, plan
    x, g, b = random_args(prog, dims, 3)
    mu = x.astype(np.float64).mean(axis=1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=1, keepdims=True)
    np.testing.assert_allclose(plan.run(x, g, b), (x - mu) / np.sqrt(var + 1e-5) * g + b, rtol=1e-3, atol=1e-4)

    prog = tmp_program(COLUMN_SUM)
    plan = eqsat.optimize(prog, dims, target="cpu")
    plan.compile_loops()
    assert not any(r is not None for r, _ in plan.kernel_runners.values()), plan
    assert not any(k.term is not None and plan.costing.info(k.term).compiled for k in plan.kernels), plan
    (x,) = random_args(prog, dims, 4)
    np.testing.assert_allclose(plan.run(x), x.astype(np.float64).sum(axis=0), rtol=1e-4, atol=1e-3)


def test_a_compiled_kernel_with_float_scalars_runs_in_the_straight_line_code(tmp_program):
    """Livermore loop 1 (hydro fragment) at 1M elements: one compiled kernel reading three
    float scalars. The scalars were passed to it as new float32 objects, which the tracer
    took for constants of its sample run: the straight-line code failed its check and the
    whole plan ran interpreted. Two calls with other scalars check nothing is baked in."""
    prog = tmp_program("""
@program
def hydro(q: f32, r: f32, t: f32, y: f32["N"], z: f32["P"]) -> f32["N"]:
    x = empty((N,))
    for k in range(N):
        x[k] = q + y[k] * (r * z[k + 10] + t * z[k + 11])
    return x
""")
    n = 1_000_000
    plan = eqsat.optimize(prog, {"N": n, "P": n + 11}, target="cpu")
    assert plan.compiled("numpy").how.startswith("compiled (straight-line numpy)"), plan.compiled("numpy").how
    plan.compile_loops()
    assert any(r is not None for r, _ in plan.kernel_runners.values()), plan
    rng = np.random.default_rng(0)
    y, z = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n + 11).astype(np.float32)
    for q, r, t in ((0.5, 1.5, -2.0), (3.0, -0.25, 0.75)):
        want = q + y.astype(np.float64) * (r * z[10:n + 10].astype(np.float64) + t * z[11:].astype(np.float64))
        np.testing.assert_allclose(plan.run(q, r, t, y, z), want, rtol=1e-5, atol=1e-5)
    assert "def plan_fn" in plan.source()


def test_a_loop_over_part_of_an_axis_runs_its_two_ranges_apart(tmp_program):
    """An FIR filter over `range(N - T)`: lifted over the whole axis under `i < N - T`, its
    reads `x[i + k]` may leave the axis only past the bound, so the compiled kernel runs
    the range below the bound without clamping them and the rest as the old values (it
    clamped every read: 7.1 ms at 500k x 32, now 0.46; numba 1.5). Against the reference,
    with the bound at every place an off-by-one would show."""
    prog = tmp_program("""
@program
def fir(x: f32["N"], h: f32["T"], y: f32["N"]) -> f32["N"]:
    for i in range(N - T):
        acc = 0.0
        for k in range(T):
            acc += x[i + k] * h[k]
        y[i] = acc
    return y
""")
    dims = {"N": 200_000, "T": 16}
    plan = eqsat.optimize(prog, dims, target="cpu")
    plan.compile_loops()
    assert [r is not None for r, _ in plan.kernel_runners.values()] == [True], plan
    x, h, y = random_args(prog, dims, 5)
    want = eqsat.reference(prog, x, h, y)
    got = plan.run(x, h, y)
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)
    assert np.array_equal(got[-16:], y[-16:])  # the range past the bound keeps the old values


def test_a_select_on_the_outer_variable_inside_another_term_cuts_its_range(tmp_program):
    """TSVC s176's form (an update over the first half of an axis, lifted over the whole
    axis as `a[i] + (sum if i < N/2 else 0)`: the select inside the add): the compiled
    kernel's outer loop is cut at the bound into two ranges, each with the select decided,
    so the upper half adds no sum (it was one range computing the select in every
    element). Against the reference at an odd size, where an off-by-one at the cut shows."""
    prog = tmp_program("""
@program
def s176(a: f32["N"], b: f32["N"], c: f32["N"]) -> f32["N"]:
    for j in range(N // 2):
        for i in range(N // 2):
            a[i] += b[i + N // 2 - j - 1] * c[j]
    return a
""")
    from eqsat.backends import cpu_kernels

    dims = {"N": 4001}
    plan = eqsat.optimize(prog, dims, target="cpu")
    plan.compile_loops()
    assert [r is not None for r, _ in plan.kernel_runners.values()] == [True], plan
    args = random_args(prog, dims, 3)
    want = eqsat.reference(prog, *args)
    got = plan.run(*args)
    # (the kernel sums its 2000 terms in float64, the program's loop in float32 in order)
    np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-4)
    exact = args[0].astype(np.float64)
    for j in range(2000):
        exact[:2000] += args[1][2000 - j - 1:4000 - j - 1].astype(np.float64) * args[2][j]
    assert np.abs(got - exact).max() <= np.abs(want - exact).max() + 1e-6
    assert np.array_equal(got[2000:], args[0][2000:])  # the upper half keeps the old values
    src = cpu_kernels._source(plan, plan.kernels[0].term)[0]
    assert "numba.prange(0, 2000)" in src and "numba.prange(2000, 4001)" in src, src
    assert " if " not in src.split("numba.prange(2000, 4001)")[1], src  # decided there


def test_selects_on_inner_variables_cut_their_loops_too(tmp_program):
    """A 2-D valid convolution, lifted over the whole image as `(sum if i < H - R + 1 else
    0) if j < W - R + 1 else 0`: both loops are cut, so the piece below both bounds reads
    without clamping and computes no select (one cut on the outer loop left a clamp and a
    select on every element: 6.6x numba's time at 512^2 x 5^2, then 0.8x)."""
    prog = tmp_program("""
@program
def conv2d_valid(img: f32["H", "W"], w: f32["R", "R"]) -> f32["H", "W"]:
    out = zeros((H, W))
    for i in range(H - R + 1):
        for j in range(W - R + 1):
            for u in range(R):
                for v in range(R):
                    out[i, j] += img[i + u, j + v] * w[u, v]
    return out
""")
    from eqsat.backends import cpu_kernels

    dims = {"H": 300, "W": 301, "R": 5}
    plan = eqsat.optimize(prog, dims, target="cpu")
    plan.compile_loops()
    assert [r is not None for r, _ in plan.kernel_runners.values()] == [True], plan
    args = random_args(prog, dims, 3)
    np.testing.assert_allclose(plan.run(*args), eqsat.reference(prog, *args), rtol=2e-5, atol=2e-5)
    src = cpu_kernels._source(plan, plan.kernels[0].term)[0]
    inner = src.split("for v0 in numba.prange(0, 296):")[1].split("for v1 in range(297, 301):")[0]
    assert "for v1 in range(0, 297):" in inner, src
    assert "min(max(" not in inner and " if " not in inner, src


CHUNKED = '''
@program
def p(x: f32["M", "N"], q: f32["N"]) -> tuple[f32, f32["M"], f32["M"], f32["M"]]:
    s = 0.0
    for j in range(N):
        if q[j] > 0.0:
            s += q[j] * log(q[j] / (abs(x[0, j]) + 0.5))
    lse = empty((M,))
    hi = empty((M,))
    lo = empty((M,))
    for i in range(M):
        acc = 0.0
        m = -1e30
        n = 1e30
        for j in range(N):
            acc += exp(x[i, j])
            m = max(m, tanh(x[i, j]))
            n = min(n, sigmoid(x[i, j]))
        lse[i] = log(acc)
        hi[i] = m
        lo[i] = n
    return s, lse, hi, lo
'''


@pytest.mark.parametrize("nan", [False, True])
def test_a_reduction_of_vectorizable_terms_is_chunked_with_the_same_result(tmp_program, monkeypatch, nan):
    """A probe's (V): `sum(p * log(p / q))` ran one lane at a time (the float32 sum is not
    reassociated), 3.5x numba; its terms now go a chunk at a time into a buffer (a loop
    LLVM vectorizes), then into the accumulator in the same order: bit for bit the unchunked
    kernel's result, sum, max and min alike, NaN included."""
    from eqsat.backends import cpu_kernels

    monkeypatch.setenv("EQSAT_COMPILE_KERNELS", "always")
    prog = tmp_program(CHUNKED)
    dims = {"M": 3, "N": 2 * cpu_kernels.CHUNK + 517}  # (a last chunk of another length)
    plan = eqsat.optimize(prog, dims, target="cpu")
    srcs = [cpu_kernels._source(plan, k.term)[0] for k in plan.kernels if k.term is not None and k.term.op == "Ten.compute"]
    assert any("buf" in s for s in srcs), srcs
    args = random_args(prog, dims, 6)
    if nan:
        args[0][1, 7] = np.nan
    got = plan.run(*args)
    want = eqsat.reference(prog, *args)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-4, atol=1e-5, equal_nan=True)
    monkeypatch.setattr(cpu_kernels, "CHUNK", 10 ** 9)  # every reduction one loop, as before
    again = eqsat.optimize(prog, dims, target="cpu")
    assert not any("buf" in cpu_kernels._source(again, k.term)[0] for k in again.kernels
                   if k.term is not None and k.term.op == "Ten.compute")
    for g, w in zip(got, again.run(*args)):
        assert np.array_equal(np.asarray(g), np.asarray(w), equal_nan=True)


def test_a_long_sum_is_as_accurate_as_numpys(tmp_program):
    """A compiled reduction kernel sums in float64 and rounds once: a float32 sum of 4M
    terms added in order was off by 1.8e-3 relative in a standard deviation (a probe),
    where numpy's pairwise float32 sum is off by 2e-8."""
    prog = tmp_program('''
import numpy as np
@program
def p(x: f32["N"]) -> tuple[f32, f32]:
    return np.mean(x), x.std()
''')
    n = 4_000_000
    x = (np.random.default_rng(0).standard_normal(n) + 3.0).astype(np.float32)
    plan = eqsat.optimize(prog, {"N": n}, target="cpu")
    plan.compile_loops()
    assert any(r is not None for r, _ in plan.kernel_runners.values()), plan  # (compiled kernels ran)
    got = plan.run(x)
    x64 = x.astype(np.float64)
    for g, exact in zip(got, (x64.mean(), x64.std())):
        assert abs(float(g) - exact) / exact < 1e-6, (g, exact)
