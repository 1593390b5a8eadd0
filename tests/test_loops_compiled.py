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
