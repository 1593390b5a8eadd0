"""PolyBench/C 4.2 cholesky: A := L with L L^T = A, in place on the lower triangle.

Deviations from the C:
- DATA_TYPE is f32; SQRT_FUN is eqsat's `sqrt`.
- n is the dim N.
- Returns the whole A (the upper triangle is left as passed in; PolyBench prints only the
  lower triangle).
"""
import numpy as np

from eqsat import f32, program, sqrt

SHAPES = {"N": 40}    # MINI_DATASET
MEDIUM = {"N": 400}   # MEDIUM_DATASET
LIFTABLE = False


@program
def cholesky(A: f32["N", "N"]) -> f32["N", "N"]:
    for i in range(N):
        # j < i
        for j in range(i):
            for k in range(j):
                A[i, j] -= A[i, k] * A[j, k]
            A[i, j] /= A[j, j]
        # i == j case
        for k in range(i):
            A[i, i] -= A[i, k] * A[i, k]
        A[i, i] = sqrt(A[i, i])
    return A


def truth(A):
    A = np.array(A, dtype=np.float32)
    n = A.shape[0]
    for i in range(n):
        for j in range(i):
            A[i, j] = (A[i, j] - A[i, :j] @ A[j, :j]) / A[j, j]
        A[i, i] = np.sqrt(A[i, i] - A[i, :i] @ A[i, :i])
    return A


def init(rng, sizes=None):
    n = (sizes or SHAPES)["N"]
    B = rng.standard_normal((n, n)) / np.sqrt(n)
    return ((B @ B.T + np.eye(n)).astype(np.float32),)  # SPD, condition number ~ 5
