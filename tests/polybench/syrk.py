"""PolyBench/C 4.2 syrk: C := alpha*A*A^T + beta*C on the lower triangle of C.

Deviations from the C:
- DATA_TYPE is f32.
- n, m are the dims N, M; `j <= i` is `range(i + 1)`.
"""
import numpy as np

from eqsat import f32, program

SHAPES = {"M": 20, "N": 30}     # MINI_DATASET
MEDIUM = {"M": 200, "N": 240}   # MEDIUM_DATASET
LIFTABLE = True


@program
def syrk(alpha: f32, beta: f32, C: f32["N", "N"], A: f32["N", "M"]) -> f32["N", "N"]:
    for i in range(N):
        for j in range(i + 1):
            C[i, j] *= beta
        for k in range(M):
            for j in range(i + 1):
                C[i, j] += alpha * A[i, k] * A[j, k]
    return C


def truth(alpha, beta, C, A):
    full = np.float32(beta) * C + np.float32(alpha) * (A @ A.T)
    low = np.tril(np.ones(C.shape, dtype=bool))
    return np.where(low, full, C)


def init(rng, sizes=None):
    s = sizes or SHAPES
    r = lambda *shape: rng.standard_normal(shape).astype(np.float32)  # noqa: E731
    return 1.5, 1.2, r(s["N"], s["N"]), r(s["N"], s["M"])
