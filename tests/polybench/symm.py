"""PolyBench/C 4.2 symm: C := alpha*A*B + beta*C, A symmetric (only its lower triangle is read).

Deviations from the C:
- DATA_TYPE is f32; the C's `temp2 = 0` is `temp2 = 0.0`.
- m, n are the dims M, N.
"""
import numpy as np

from eqsat import f32, program

SHAPES = {"M": 20, "N": 30}     # MINI_DATASET
MEDIUM = {"M": 200, "N": 240}   # MEDIUM_DATASET
LIFTABLE = True


@program
def symm(alpha: f32, beta: f32, C: f32["M", "N"], A: f32["M", "M"], B: f32["M", "N"]) -> f32["M", "N"]:
    for i in range(M):
        for j in range(N):
            temp2 = 0.0
            for k in range(i):
                C[k, j] += alpha * B[i, j] * A[i, k]
                temp2 += B[k, j] * A[i, k]
            C[i, j] = beta * C[i, j] + alpha * B[i, j] * A[i, i] + alpha * temp2
    return C


def truth(alpha, beta, C, A, B):
    S = np.tril(A) + np.tril(A, -1).T  # the symmetric matrix A's lower triangle stands for
    return np.float32(beta) * C + np.float32(alpha) * (S @ B)


def init(rng, sizes=None):
    s = sizes or SHAPES
    r = lambda *shape: rng.standard_normal(shape).astype(np.float32)  # noqa: E731
    return 1.5, 1.2, r(s["M"], s["N"]), r(s["M"], s["M"]), r(s["M"], s["N"])
