"""`backends/vector_math.py`: exp, sigmoid and silu as compiled code uses them (in a form
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


def test_sigmoid_and_silu_agree_with_the_language_and_take_arrays_too():
    import numba

    lib = loops._lib()
    x = (np.random.default_rng(1).standard_normal(200_000) * 12).astype(np.float32)
    x[:4] = [np.nan, np.inf, -np.inf, 0.0]
    for name in ("exp", "sigmoid", "silu"):
        got = _apply(lib[name])(x)
        with np.errstate(all="ignore"):
            want = getattr(lang, name)(x)
        assert np.array_equal(np.isnan(got), np.isnan(want)), name
        ok = np.isfinite(want) & (np.abs(want) > 1e-30)
        assert np.max(np.abs(got[ok] - want[ok]) / np.abs(want[ok])) < 1e-6, name
        fn = lib[name]
        whole = numba.njit(lambda a: fn(a))(x[4:])  # an array argument: numpy's own
        np.testing.assert_allclose(whole, want[4:], rtol=1e-6)
