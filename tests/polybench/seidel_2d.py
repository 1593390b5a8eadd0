"""PolyBench/C 4.2 seidel-2d: TSTEPS Gauss-Seidel sweeps of a 9-point stencil, in place.

Deviations from the C:
- DATA_TYPE is f32 and the C's SCALAR_VAL literals are Python floats.
- tsteps is the int parameter TSTEPS; n is the dim N. `t <= _PB_TSTEPS - 1` is
  `range(TSTEPS)`, `i <= _PB_N - 2` is `range(1, N - 1)`.
"""
import numpy as np

from eqsat import f32, program

SHAPES = {"TSTEPS": 20, "N": 40}     # MINI_DATASET
MEDIUM = {"TSTEPS": 100, "N": 400}   # MEDIUM_DATASET
LIFTABLE = False


@program
def seidel_2d(TSTEPS: int, A: f32["N", "N"]) -> f32["N", "N"]:
    for t in range(TSTEPS):
        for i in range(1, N - 1):
            for j in range(1, N - 1):
                A[i, j] = (A[i - 1, j - 1] + A[i - 1, j] + A[i - 1, j + 1]
                           + A[i, j - 1] + A[i, j] + A[i, j + 1]
                           + A[i + 1, j - 1] + A[i + 1, j] + A[i + 1, j + 1]) / 9.0
    return A


def truth(TSTEPS, A):
    """The same sweep, vectorized over wavefronts 2i + j = w: every point of a wavefront
    reads only points of earlier wavefronts (already updated this sweep, as in the C) or of
    later ones (not yet updated), so each wavefront is one vector operation."""
    A = np.array(A, dtype=np.float32)
    n = A.shape[0]
    fronts = []
    for w in range(3, 3 * (n - 2) + 1):
        i = np.arange(1, n - 1)
        j = w - 2 * i
        ok = (j >= 1) & (j <= n - 2)
        if ok.any():
            fronts.append((i[ok], j[ok]))
    nine = np.float32(9.0)
    for _ in range(TSTEPS):
        for i, j in fronts:
            A[i, j] = (A[i - 1, j - 1] + A[i - 1, j] + A[i - 1, j + 1]
                       + A[i, j - 1] + A[i, j] + A[i, j + 1]
                       + A[i + 1, j - 1] + A[i + 1, j] + A[i + 1, j + 1]) / nine
    return A


def init(rng, sizes=None):
    s = sizes or SHAPES
    n = s["N"]
    return s["TSTEPS"], rng.standard_normal((n, n)).astype(np.float32)
