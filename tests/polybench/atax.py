"""PolyBench/C 4.2 atax: y := A^T (A x).

Deviations from the C:
- DATA_TYPE is f32 and the C's SCALAR_VAL literals are Python floats (`y[i] = 0` too).
- m, n are the dims M, N.
- y (output, zeroed by the kernel itself) and tmp (scratch) are parameters of the C
  kernel whose incoming contents are never read; here they are local buffers. Returns y.
"""
import numpy as np

from eqsat import empty, f32, program

SHAPES = {"M": 38, "N": 42}     # MINI_DATASET
MEDIUM = {"M": 390, "N": 410}   # MEDIUM_DATASET
LIFTABLE = True


@program
def atax(A: f32["M", "N"], x: f32["N"]) -> f32["N"]:
    y = empty((N,))
    tmp = empty((M,))
    for i in range(N):
        y[i] = 0.0
    for i in range(M):
        tmp[i] = 0.0
        for j in range(N):
            tmp[i] = tmp[i] + A[i, j] * x[j]
        for j in range(N):
            y[j] = y[j] + A[i, j] * tmp[i]
    return y


def truth(A, x):
    return A.T @ (A @ x)


def init(rng, sizes=None):
    s = sizes or SHAPES
    return (rng.standard_normal((s["M"], s["N"])).astype(np.float32),
            rng.standard_normal(s["N"]).astype(np.float32))
