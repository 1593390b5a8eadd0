"""PolyBench/C 4.2 trmm: B := alpha*A^T*B, A unit lower triangular (strict lower part read).

Deviations from the C:
- DATA_TYPE is f32.
- m, n are the dims M, N.
"""
import numpy as np

from eqsat import f32, program

SHAPES = {"M": 20, "N": 30}     # MINI_DATASET
MEDIUM = {"M": 200, "N": 240}   # MEDIUM_DATASET
LIFTABLE = True


@program
def trmm(alpha: f32, A: f32["M", "M"], B: f32["M", "N"]) -> f32["M", "N"]:
    for i in range(M):
        for j in range(N):
            for k in range(i + 1, M):
                B[i, j] += A[k, i] * B[k, j]
            B[i, j] = alpha * B[i, j]
    return B


def truth(alpha, A, B):
    return np.float32(alpha) * (B + np.triu(A.T, 1) @ B)


def init(rng, sizes=None):
    s = sizes or SHAPES
    r = lambda *shape: rng.standard_normal(shape).astype(np.float32)  # noqa: E731
    return 1.5, r(s["M"], s["M"]), r(s["M"], s["N"])
