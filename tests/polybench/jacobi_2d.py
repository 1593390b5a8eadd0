"""PolyBench/C 4.2 jacobi-2d: TSTEPS sweeps of a 5-point Jacobi stencil, A -> B -> A.

Deviations from the C:
- DATA_TYPE is f32 and the C's SCALAR_VAL literals are Python floats.
- tsteps is the int parameter TSTEPS; n is the dim N.
- Returns A, the array PolyBench prints (B is passed by value: its boundary is read).
"""
import numpy as np

from eqsat import f32, program

SHAPES = {"TSTEPS": 20, "N": 30}     # MINI_DATASET
MEDIUM = {"TSTEPS": 100, "N": 250}   # MEDIUM_DATASET
LIFTABLE = False


@program
def jacobi_2d(TSTEPS: int, A: f32["N", "N"], B: f32["N", "N"]) -> f32["N", "N"]:
    for t in range(TSTEPS):
        for i in range(1, N - 1):
            for j in range(1, N - 1):
                B[i, j] = 0.2 * (A[i, j] + A[i, j - 1] + A[i, 1 + j] + A[1 + i, j] + A[i - 1, j])
        for i in range(1, N - 1):
            for j in range(1, N - 1):
                A[i, j] = 0.2 * (B[i, j] + B[i, j - 1] + B[i, 1 + j] + B[1 + i, j] + B[i - 1, j])
    return A


def truth(TSTEPS, A, B):
    A, B = np.array(A, dtype=np.float32), np.array(B, dtype=np.float32)
    c = np.float32(0.2)
    for _ in range(TSTEPS):
        B[1:-1, 1:-1] = c * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1])
        A[1:-1, 1:-1] = c * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1] + B[:-2, 1:-1])
    return A


def init(rng, sizes=None):
    s = sizes or SHAPES
    n = s["N"]
    r = lambda *shape: rng.standard_normal(shape).astype(np.float32)  # noqa: E731
    return s["TSTEPS"], r(n, n), r(n, n)
