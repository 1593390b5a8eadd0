"""Plans under a checked assumption (`eqsat/assume.py`, `rules/finite.py`): a triangular
loop's masked sum becomes a matmul of a masked operand only for finite arguments; the plan
checks them on every call and runs the exact plan otherwise. Every run is compared with
`reference`, non-finite arguments included, on both backends."""
from __future__ import annotations

import numpy as np
import pytest

import eqsat
from eqsat.rules import FAMILIES

D = {"M": 24, "N": 30}

def _trmm():
    """PolyBench's trmm (tests/polybench/trmm.py): `for k in range(i + 1, M)`, a masked sum."""
    from test_polybench import load

    return load("trmm")[1]


def _args(seed=0):
    rng = np.random.default_rng(seed)
    return [np.float32(1.5), rng.standard_normal((D["M"], D["M"])).astype(np.float32),
            rng.standard_normal((D["M"], D["N"])).astype(np.float32)]


def _agrees(got, want):
    return np.allclose(np.asarray(got), want, rtol=1e-4, atol=1e-4, equal_nan=True)


@pytest.fixture
def triangular():
    prog = _trmm()
    return prog, eqsat.optimize(prog, D, target="cpu")


def test_triangular_sum_becomes_a_matmul_under_the_finite_check(triangular):
    prog, plan = triangular
    assert plan.assumes == "every float argument is finite", plan
    assert plan.fallback is not None and any(k.kind == "loop" for k in plan.fallback.kernels), plan.fallback
    assert "matmul" in [k.kind for k in plan.kernels] and "loop" not in [k.kind for k in plan.kernels], plan
    assert plan.cost < plan.fallback.cost
    assert "assumes every float argument is finite" in str(plan)
    args = _args()
    want = eqsat.reference(prog, *args)
    for backend in ("numpy", "triton"):
        assert _agrees(plan.run(*args, backend=backend), want), backend


@pytest.mark.parametrize("where", ["masked", "read", "scalar", "nan", "f64_overflow", "scalar_overflow"])
def test_non_finite_arguments_run_the_exact_plan(triangular, where):
    """Checked in the parameter's dtype, as the plan converts the argument: 1e39 in a
    float64 array and 1e300 as a Python float are finite there and inf as f32."""
    prog, plan = triangular
    args = _args(1)
    if where == "masked":  # B[0, 3] is never multiplied for rows i >= 0: the masked-out part
        args[2][0, 3] = np.inf
    elif where == "f64_overflow":
        args[2] = args[2].astype(np.float64)
        args[2][0, 3] = 1e39
    elif where == "scalar_overflow":
        args[0] = 1e300
    elif where == "read":  # a value the loop does multiply
        args[2][D["M"] - 1, 2] = -np.inf
    elif where == "scalar":
        args[0] = np.float32(np.inf)
    else:
        args[1][3, 1] = np.nan
    want = eqsat.reference(prog, *[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    for backend in ("numpy", "triton"):
        assert _agrees(plan.run(*args, backend=backend), want), (backend, where)
    if where == "masked":
        # the check matters: the assuming plan alone computes 0 * inf = NaN there
        fast = plan.compiled("numpy").fast
        with np.errstate(invalid="ignore"):
            assert not _agrees(fast(args), want)


def test_the_exact_search_alone_assumes_nothing():
    prog = _trmm()
    plan = eqsat.optimize(prog, D, target="cpu", rules=list(FAMILIES))
    assert plan.assumes is None and plan.fallback is None
    assert "finite" not in plan.rules
    assert any(k.kind == "loop" for k in plan.kernels), plan


def test_finite_family_named_explicitly():
    prog = _trmm()
    plan = eqsat.optimize(prog, D, target="cpu", rules=list(FAMILIES) + ["finite"])
    assert plan.fallback is not None and "finite" in plan.rules and "finite" not in plan.fallback.rules


def test_no_masked_product_no_second_search(tmp_program):
    prog = tmp_program('''
@program
def p(a: f32["M", "N"], b: f32["N", "M"]) -> f32["M", "M"]:
    return relu(a @ b)
''')
    plan = eqsat.optimize(prog, D, target="cpu")
    assert plan.fallback is None and "assuming search" not in plan.phases


def test_masked_operand_needs_no_assumption(tmp_program):
    # the mask written on the operand itself: exact, so the exact search finds the matmul
    prog = tmp_program('''
@program
def p(A: f32["M", "M"], B: f32["M", "N"]) -> f32["M", "N"]:
    C = zeros((M, N))
    for i in range(M):
        for j in range(N):
            for k in range(M):
                C[i, j] += (A[k, i] if k > i else 0.0) * B[k, j]
    return C
''')
    plan = eqsat.optimize(prog, D, target="cpu")
    assert plan.fallback is None and [k.kind for k in plan.kernels] == ["pointwise", "matmul"], plan
    args = _args()[1:]
    args[1][0, 0] = np.inf
    want = eqsat.reference(prog, *args)
    for backend in ("numpy", "triton"):
        with np.errstate(invalid="ignore"):
            assert _agrees(plan.run(*args, backend=backend), want), backend


POLY = ("trmm", "symm")  # the PolyBench kernels whose loops are triangular masked sums
MATMULS = {"trmm": 1, "symm": 2}


@pytest.mark.parametrize("name", POLY)
def test_polybench_triangular_kernels_assume_and_fall_back(name):
    from test_polybench import copy_args, load

    mod, prog = load(name)
    plan = eqsat.optimize(prog, mod.SHAPES, target="cpu")
    # the triangular sums are matmuls (symm's two), and no nest the lowering could not lift
    # runs as written (a fission part it lifted may run as a small compiled loop where the
    # model rates that cheaper at these sizes: symm's last part at MINI)
    kinds = [k.kind for k in plan.kernels]
    assert plan.fallback is not None and kinds.count("matmul") == MATMULS[name], plan
    assert all(plan.lowered.nests[k.nest].reason == "" for k in plan.kernels if k.kind == "loop"), plan
    args = list(mod.init(np.random.default_rng(0)))
    for poison in (None, np.inf, np.nan):
        a = copy_args(args)
        if poison is not None:
            a[-1][0, 1] = poison  # B: the factor the mask was moved off
        want = eqsat.reference(prog, *copy_args(a))
        for backend in ("numpy", "triton"):
            with np.errstate(invalid="ignore", over="ignore"):
                got = plan.run(*a, backend=backend)
            assert _agrees(got, want), (name, backend, poison)


def test_viewer_page_says_what_the_plan_assumes(triangular, tmp_path):
    _, plan = triangular
    page = open(plan.view(tmp_path / "p.html")).read()
    assert "id=assumes" in page and "every float argument is finite" in page


def test_a_scalar_factor_moved_out_of_a_sum_holds_for_an_infinite_scalar(tmp_program):
    """`C[i, j] += alpha * A[i, k] * B[k, j]` becomes `alpha * (A @ B)`: exact up to rounding
    for a finite alpha only. With alpha = inf a row whose terms have both signs is NaN in the
    loop and inf in the product, a zero term NaN against inf; the plan checks its float
    scalars on every call and runs the program as written where one is not finite."""
    gemm = tmp_program("""
@program
def gemm(alpha: f32, A: f32["M", "K"], B: f32["K", "N"], C: f32["M", "N"]) -> f32["M", "N"]:
    for i in range(M):
        for j in range(N):
            for k in range(K):
                C[i, j] += alpha * A[i, k] * B[k, j]
    return C
""")
    shapes = {"M": 4, "N": 3, "K": 2}
    A = np.array([[1, -1], [1, 1], [2, -1], [0, 1]], np.float32)
    B, C = np.ones((2, 3), np.float32), np.zeros((4, 3), np.float32)
    for target, backend in (("cpu", "numpy"), ("h100", "triton")):
        plan = eqsat.optimize(gemm, shapes, target=target)
        assert [k.kind for k in plan.kernels] == ["matmul"] and not plan.as_written()
        assert "inf or NaN" in plan.compiled(backend).how and "float scalar" in str(plan)
        for alpha in (np.float32(1.5), np.inf, -np.inf, np.nan, 2.0):
            with np.errstate(all="ignore"):
                want = eqsat.reference(gemm, alpha, A, B, C)
            got = np.asarray(plan.run(alpha, A, B, C, backend=backend))
            assert np.array_equal(np.isnan(got), np.isnan(want)), (target, alpha, got, want)
            assert _agrees(got, want), (target, alpha, got, want)
        for alpha in (1e300, -1e39):  # finite as Python floats, inf as f32: checked as f32
            with np.errstate(all="ignore"):
                want = eqsat.reference(gemm, np.float32(alpha), A, B, C)
            got = np.asarray(plan.run(alpha, A, B, C, backend=backend))
            assert np.array_equal(np.isnan(got), np.isnan(want)), (target, alpha, got, want)
            assert _agrees(got, want), (target, alpha, got, want)
    # the program as written checks nothing, nor does a plan of a program without float scalars
    written = plan.written_plan()
    assert written.as_written() and "inf or NaN" not in written.compiled("numpy").how
    mm = tmp_program("""
@program
def mm(A: f32["M", "K"], B: f32["K", "N"]) -> f32["M", "N"]:
    return A @ B * 2.0
""")
    assert "inf or NaN" not in eqsat.optimize(mm, shapes).compiled("numpy").how


def test_a_division_moved_out_of_a_sum_holds_for_a_zero_divisor(tmp_program):
    """`acc += A[i, k] * B[k, j] / alpha` becomes `(A @ B) / alpha`, and `/ 2.0` likewise
    (rules/algebra.py): exact up to rounding for a nonzero divisor only. With alpha = 0 a
    row whose terms have both signs is NaN in the loop and +-inf after the matmul, so a
    plan dividing by a scalar parameter also runs the program as written where it is zero
    (in its dtype: 1e-50 is 0 in f32); a literal zero divisor is never moved."""
    src = """
@program
def mmdiv(A: f32["M", "K"], B: f32["K", "N"], alpha: f32) -> f32["M", "N"]:
    C = empty((M, N))
    for i in range(M):
        for j in range(N):
            acc = 0.0
            for k in range(K):
                acc += (A[i, k] / DIVISOR) * B[k, j]
            C[i, j] = acc
    return C
"""
    shapes = {"M": 4, "N": 3, "K": 2}
    A = np.array([[1, -1], [1, 1], [2, -1], [0, 0]], np.float32)
    B = np.ones((2, 3), np.float32)
    for divisor in ("alpha", "2.0", "0.0"):
        prog = tmp_program(src.replace("DIVISOR", divisor).replace("mmdiv", f"mmdiv_{divisor[0]}"))
        for target, backend in (("cpu", "numpy"), ("h100", "triton")):
            plan = eqsat.optimize(prog, shapes, target=target)
            kinds = [k.kind for k in plan.kernels]
            if divisor == "0.0":
                assert "matmul" not in kinds, plan
            else:
                assert kinds == ["matmul"] and "div" in plan.kernels[0].epilogue, plan
            if divisor == "alpha":
                assert "a divisor is zero" in plan.compiled(backend).how
            for alpha in (np.float32(1.5), 0.0, -0.0, 1e-50, np.inf, -3.0):
                with np.errstate(all="ignore"):
                    want = eqsat.reference(prog, A, B, np.float32(alpha))
                    got = np.asarray(plan.run(A, B, alpha, backend=backend))
                assert np.array_equal(np.isnan(got), np.isnan(want)), (divisor, target, alpha, got, want)
                assert _agrees(got, want), (divisor, target, alpha, got, want)


@pytest.mark.parametrize("form", ["gemv", "triangle"])
def test_a_zero_skip_guard_is_a_matmul_for_finite_inputs(tmp_program, form):
    """Reference BLAS skips zero multipliers (`if x[j] != 0.0: y[i] += x[j] * A[i, j]`, old
    SGEMV; SSYRK's guard around a triangle's loop): for finite inputs the guard changes
    nothing in the sum (0 * a is 0), so it is a matmul under the finite assumption
    (rules/finite.py); with an inf where the guard skips, the loop never multiplies it and
    the plan runs the exact one."""
    body = {"gemv": '''
@program
def p(A: f32["M", "N"], x: f32["N"]) -> f32["M"]:
    y = zeros((M,))
    for j in range(N):
        if x[j] != 0.0:
            for i in range(M):
                y[i] += x[j] * A[i, j]
    return y
''', "triangle": '''
@program
def p(A: f32["M", "N"], x: f32["N", "M"]) -> f32["M", "M"]:
    C = zeros((M, M))
    for j in range(M):
        for l in range(N):
            if x[l, j] != 0.0:
                for i in range(j + 1):
                    C[i, j] += x[l, j] * A[i, l]
    return C
'''}[form]
    prog = tmp_program(body)
    dims = {"M": 48, "N": 40}
    plan = eqsat.optimize(prog, dims, target="cpu")
    assert "matmul" in [k.kind for k in plan.kernels] and plan.assumes, plan
    rng = np.random.default_rng(1)
    A = rng.uniform(-1, 1, (48, 40)).astype(np.float32)
    x = rng.uniform(-1, 1, (40,) if form == "gemv" else (40, 48)).astype(np.float32)
    x[x > 0.5] = 0.0
    A_inf = A.copy()
    A_inf[:, 3] = np.inf  # (column 3: where x[3] is 0 the loop never reads it)
    if form == "gemv":
        x[3] = 0.0
    else:
        x[3, :] = 0.0
    for a in (A, A_inf):
        with np.errstate(all="ignore"):
            want = eqsat.reference(prog, a, x)
            for backend in ("numpy", "triton"):
                got = np.asarray(plan.run(a, x, backend=backend))
                assert np.array_equal(np.isnan(got), np.isnan(want)) and _agrees(got, want), (form, backend)


def test_every_candidate_of_the_assuming_search_keeps_its_assumption(tmp_program):
    """With candidates, the plans of the assuming search besides the first ran without the
    finite check and its exact fallback: a candidate's run() gave NaN where the guard the
    program writes skips 0 * inf (a probe's, 2026-11-28)."""
    prog = tmp_program('''
@program
def q(A: f32["M", "K"], B: f32["K", "N"]) -> f32["M", "N"]:
    C = zeros((M, N))
    for i in range(M):
        for j in range(N):
            for k in range(K):
                if A[i, k] != 0.0:
                    C[i, j] += A[i, k] * B[k, j]
    return C
''')
    dims = {"M": 32, "N": 32, "K": 32}
    A = np.tril(np.ones((32, 32), np.float32))
    A[0, 0] = 0.0
    B = np.ones((32, 32), np.float32)
    B[0, 0] = np.inf
    want = eqsat.reference(prog, A, B)
    plan = eqsat.optimize(prog, dims, target="cpu", candidates=4)
    assert plan.assumes is not None and len(plan.candidates) > 1
    for c in plan.candidates:
        assert c.assumes == plan.assumes and c.fallback is plan.fallback
        assert np.array_equal(c.run(A, B), want), c
