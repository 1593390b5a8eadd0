"""PolyBench/C 4.2 fdtd-2d: TMAX steps of the 2-D finite-difference time-domain kernel.

Deviations from the C:
- DATA_TYPE is f32 and the C's SCALAR_VAL literals are Python floats.
- tmax, nx, ny are the dims TMAX (the length of _fict_), NX, NY.
- Returns (ex, ey, hz), the arrays PolyBench prints.
"""
import numpy as np

from eqsat import f32, program

SHAPES = {"TMAX": 20, "NX": 20, "NY": 30}      # MINI_DATASET
MEDIUM = {"TMAX": 100, "NX": 200, "NY": 240}   # MEDIUM_DATASET
LIFTABLE = False


@program
def fdtd_2d(ex: f32["NX", "NY"], ey: f32["NX", "NY"], hz: f32["NX", "NY"],
            _fict_: f32["TMAX"]) -> tuple[f32["NX", "NY"], f32["NX", "NY"], f32["NX", "NY"]]:
    for t in range(TMAX):
        for j in range(NY):
            ey[0, j] = _fict_[t]
        for i in range(1, NX):
            for j in range(NY):
                ey[i, j] = ey[i, j] - 0.5 * (hz[i, j] - hz[i - 1, j])
        for i in range(NX):
            for j in range(1, NY):
                ex[i, j] = ex[i, j] - 0.5 * (hz[i, j] - hz[i, j - 1])
        for i in range(NX - 1):
            for j in range(NY - 1):
                hz[i, j] = hz[i, j] - 0.7 * (ex[i, j + 1] - ex[i, j] + ey[i + 1, j] - ey[i, j])
    return ex, ey, hz


def truth(ex, ey, hz, _fict_):
    ex, ey, hz = (np.array(a, dtype=np.float32) for a in (ex, ey, hz))
    h, s = np.float32(0.5), np.float32(0.7)
    for t in range(_fict_.shape[0]):
        ey[0, :] = _fict_[t]
        ey[1:, :] = ey[1:, :] - h * (hz[1:, :] - hz[:-1, :])
        ex[:, 1:] = ex[:, 1:] - h * (hz[:, 1:] - hz[:, :-1])
        hz[:-1, :-1] = hz[:-1, :-1] - s * (ex[:-1, 1:] - ex[:-1, :-1] + ey[1:, :-1] - ey[:-1, :-1])
    return ex, ey, hz


def init(rng, sizes=None):
    s = sizes or SHAPES
    nx, ny = s["NX"], s["NY"]
    r = lambda *shape: rng.standard_normal(shape).astype(np.float32)  # noqa: E731
    return r(nx, ny), r(nx, ny), r(nx, ny), r(s["TMAX"])
