"""`backends/vector_math.py`: exp, log, sigmoid, silu, tanh and gelu as compiled code uses them (in a form
loops vectorize), against the exact values and the language's own (numpy) functions:
NaN kept, inf past the overflow bound, subnormal results, scalars and arrays alike."""
from __future__ import annotations

import numpy as np

from eqsat import lang
from eqsat.backends import loops


def _apply(fn):
    import numba

    @numba.njit(error_model="numpy")
    def run(x):
        out = np.empty_like(x)
        for i in range(x.size):
            out[i] = fn(x[i])
        return out

    return run


def test_exp_is_within_two_tenths_of_a_millionth_of_the_exact_value():
    lib = loops._lib()
    rng = np.random.default_rng(0)
    x = np.concatenate([(rng.standard_normal(400_000) * 30).astype(np.float32),
                        rng.uniform(-104.5, 89.5, 400_000).astype(np.float32),
                        np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 88.72, 88.73, -87.3, -100.0, -103.9, -104.5],
                                 dtype=np.float32)])
    got = _apply(lib["exp"])(x)
    with np.errstate(all="ignore"):
        exact = np.exp(x.astype(np.float64))
        want32 = exact.astype(np.float32)  # inf where float32 overflows, subnormals, 0 below them
    assert np.array_equal(np.isnan(got), np.isnan(x))
    assert np.array_equal(np.isinf(got), np.isinf(want32))
    normal = np.isfinite(want32) & (want32 >= np.finfo(np.float32).tiny)
    assert np.max(np.abs(got[normal] - exact[normal]) / exact[normal]) < 3e-7
    sub = np.isfinite(want32) & (want32 < np.finfo(np.float32).tiny)
    assert np.max(np.abs(got[sub] - exact[sub])) <= 2.0 ** -149  # to the last subnormal step


def test_tanh_is_within_three_tenths_of_a_millionth_of_the_exact_value():
    lib = loops._lib()
    x = np.concatenate([(np.random.default_rng(2).standard_normal(500_000) * 4).astype(np.float32),
                        np.linspace(-1, 1, 20_001, dtype=np.float32),  # both sides of the switch at 0.625
                        np.array([np.nan, np.inf, -np.inf, 0.0, 1e-30, -1e-30, 30.0], dtype=np.float32)])
    got = _apply(lib["tanh"])(x)
    exact = np.tanh(x.astype(np.float64))
    assert np.array_equal(np.isnan(got), np.isnan(x))
    ok = np.isfinite(x) & (x != 0)
    assert np.max(np.abs(got[ok] - exact[ok]) / np.abs(exact[ok])) < 3e-7
    assert list(got[-6:-1]) == [1.0, -1.0, 0.0, np.float32(1e-30), np.float32(-1e-30)]


def test_log_is_within_two_tenths_of_a_millionth_of_the_exact_value():
    lib = loops._lib()
    rng = np.random.default_rng(3)
    special = [np.nan, np.inf, -np.inf, 0.0, -0.0, -1.0, 1e-45, 1e-40, 1.17e-38, 1.0, 0.70710677, 0.7071068, 3.4e38]
    x = np.concatenate([np.exp(rng.uniform(-103, 88, 400_000)).astype(np.float32),  # subnormals to the top
                        rng.uniform(0.5, 2.0, 100_000).astype(np.float32), np.array(special, dtype=np.float32)])
    got = _apply(lib["log"])(x)
    with np.errstate(all="ignore"):
        exact = np.log(x.astype(np.float64))
        want = np.log(x)
    assert np.array_equal(np.isnan(got), np.isnan(want)) and np.array_equal(got[np.isinf(want)], want[np.isinf(want)])
    ok = np.isfinite(exact)
    assert np.all(np.abs(got[ok] - exact[ok]) <= 2e-7 * np.abs(exact[ok]) + 6e-8)


def test_the_scalar_forms_of_generated_kernels_agree_with_the_language():
    from eqsat.backends import vector_math

    x = (np.random.default_rng(4).standard_normal(100_000) * 12).astype(np.float32)
    x[:4] = [np.nan, np.inf, -np.inf, 0.0]
    for name, fn in vector_math.SCALAR.items():
        got = _apply(fn)(x)
        with np.errstate(all="ignore"):
            want = getattr(lang, name)(x)
        assert np.array_equal(np.isnan(got), np.isnan(want)), name
        ok = np.isfinite(want)
        assert np.all(np.abs(got[ok] - want[ok]) <= 1e-6 * np.abs(want[ok]) + 3e-7 * np.abs(x[ok])), name


def test_sigmoid_and_silu_agree_with_the_language_and_take_arrays_too():
    import numba

    lib = loops._lib()
    x = (np.random.default_rng(1).standard_normal(200_000) * 12).astype(np.float32)
    x[:4] = [np.nan, np.inf, -np.inf, 0.0]
    for name in ("exp", "log", "sigmoid", "silu", "tanh", "gelu"):
        got = _apply(lib[name])(x)
        with np.errstate(all="ignore"):
            want = getattr(lang, name)(x)
        assert np.array_equal(np.isnan(got), np.isnan(want)), name
        ok = np.isfinite(want)
        # (gelu's 1 + tanh(u) cancels for negative inputs: there both differ from the exact
        # value by a few ulp of x, not of the result)
        assert np.all(np.abs(got[ok] - want[ok]) <= 1e-6 * np.abs(want[ok]) + 3e-7 * np.abs(x[ok])), name
        fn = lib[name]
        whole = numba.njit(lambda a: fn(a))(x[4:])  # an array argument: numpy's own
        w, fin = want[4:], np.isfinite(want[4:])
        assert np.array_equal(np.isnan(whole), np.isnan(w)), name
        assert np.all(np.abs(whole[fin] - w[fin]) <= 1e-6 * np.abs(w[fin]) + 3e-7 * np.abs(x[4:][fin])), name


def test_kept_nests_call_the_scalar_forms_on_scalars_only(tmp_program, monkeypatch):
    """In a kept nest, a call on an element or a scalar local is bound to the inlined scalar
    form (the loop vectorizes); a call on a row keeps the function that takes arrays. Both
    against the reference."""
    import eqsat
    from conftest import rel_err

    monkeypatch.setenv("EQSAT_COMPILE_LOOPS", "always")
    prog = tmp_program('''
@program
def p(x: f32["M", "N"]) -> f32["M", "N"]:
    y = empty((M, N))
    for i in range(M):
        s = 0.0
        for j in range(N):
            s += x[i, j]
        for j in range(N):
            y[i, j] = tanh(x[i, j] - s * 0.001) + gelu(x[i, j]) + exp(-abs(x[i, j])) + log(abs(s) + 1.0)
        r = tanh(x[i])
        y[i, 0] += r[0]
    return y
''')
    dims = {"M": 64, "N": 50}
    plan = eqsat.optimize(prog, dims, target="cpu")
    (nid,) = plan.lowered.nests
    src = loops._source(plan, plan.lowered.nests[nid])[0]
    for name in ("tanh", "gelu", "exp", "log"):
        assert f"eqsat_scalar_{name}(" in src, src
    assert "= tanh(x[" in src.replace("np.uint64(i)", "i"), src  # the row: numpy's tanh
    x = np.random.default_rng(5).standard_normal((64, 50)).astype(np.float32)
    assert rel_err(plan.run(x), eqsat.reference(prog, x)) < 1e-5
    assert "compiled" in plan.loop_runners[nid][1], plan.loop_runners
