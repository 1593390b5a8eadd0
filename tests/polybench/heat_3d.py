"""PolyBench/C 4.2 heat-3d: TSTEPS steps of the 3-D heat equation, A -> B -> A.

Deviations from the C:
- DATA_TYPE is f32 and the C's SCALAR_VAL literals are Python floats.
- TSTEPS (the C uses the macro, not _PB_TSTEPS) is the int parameter TSTEPS; n is the dim N.
- Returns A, the array PolyBench prints (B is passed by value: its boundary is read).
"""
import numpy as np

from eqsat import f32, program

SHAPES = {"TSTEPS": 20, "N": 10}    # MINI_DATASET
MEDIUM = {"TSTEPS": 100, "N": 40}   # MEDIUM_DATASET
LIFTABLE = False


@program
def heat_3d(TSTEPS: int, A: f32["N", "N", "N"], B: f32["N", "N", "N"]) -> f32["N", "N", "N"]:
    for t in range(1, TSTEPS + 1):
        for i in range(1, N - 1):
            for j in range(1, N - 1):
                for k in range(1, N - 1):
                    B[i, j, k] = (0.125 * (A[i + 1, j, k] - 2.0 * A[i, j, k] + A[i - 1, j, k])
                                  + 0.125 * (A[i, j + 1, k] - 2.0 * A[i, j, k] + A[i, j - 1, k])
                                  + 0.125 * (A[i, j, k + 1] - 2.0 * A[i, j, k] + A[i, j, k - 1])
                                  + A[i, j, k])
        for i in range(1, N - 1):
            for j in range(1, N - 1):
                for k in range(1, N - 1):
                    A[i, j, k] = (0.125 * (B[i + 1, j, k] - 2.0 * B[i, j, k] + B[i - 1, j, k])
                                  + 0.125 * (B[i, j + 1, k] - 2.0 * B[i, j, k] + B[i, j - 1, k])
                                  + 0.125 * (B[i, j, k + 1] - 2.0 * B[i, j, k] + B[i, j, k - 1])
                                  + B[i, j, k])
    return A


def _step(X):
    c, two = np.float32(0.125), np.float32(2.0)
    m = X[1:-1, 1:-1, 1:-1]
    return (c * (X[2:, 1:-1, 1:-1] - two * m + X[:-2, 1:-1, 1:-1])
            + c * (X[1:-1, 2:, 1:-1] - two * m + X[1:-1, :-2, 1:-1])
            + c * (X[1:-1, 1:-1, 2:] - two * m + X[1:-1, 1:-1, :-2])
            + m)


def truth(TSTEPS, A, B):
    A, B = np.array(A, dtype=np.float32), np.array(B, dtype=np.float32)
    for _ in range(TSTEPS):
        B[1:-1, 1:-1, 1:-1] = _step(A)
        A[1:-1, 1:-1, 1:-1] = _step(B)
    return A


def init(rng, sizes=None):
    s = sizes or SHAPES
    n = s["N"]
    r = lambda *shape: rng.standard_normal(shape).astype(np.float32)  # noqa: E731
    return s["TSTEPS"], r(n, n, n), r(n, n, n)
