"""PolyBench/C 4.2 lu: LU decomposition without pivoting, in place (L unit lower, U upper).

Deviations from the C:
- DATA_TYPE is f32.
- n is the dim N.
"""
import numpy as np

from eqsat import f32, program

SHAPES = {"N": 40}    # MINI_DATASET
MEDIUM = {"N": 400}   # MEDIUM_DATASET
LIFTABLE = False


@program
def lu(A: f32["N", "N"]) -> f32["N", "N"]:
    for i in range(N):
        for j in range(i):
            for k in range(j):
                A[i, j] -= A[i, k] * A[k, j]
            A[i, j] /= A[j, j]
        for j in range(i, N):
            for k in range(i):
                A[i, j] -= A[i, k] * A[k, j]
    return A


def truth(A):
    A = np.array(A, dtype=np.float32)
    n = A.shape[0]
    for i in range(n):
        for j in range(i):
            A[i, j] = (A[i, j] - A[i, :j] @ A[:j, j]) / A[j, j]
        A[i, i:] = A[i, i:] - A[i, :i] @ A[:i, i:]
    return A


def init(rng, sizes=None):
    n = (sizes or SHAPES)["N"]
    A = rng.uniform(-1.0, 1.0, (n, n)) / n
    A += np.eye(n) * 2.0  # diagonally dominant: no pivoting needed, pivots stay near 2
    return (A.astype(np.float32),)
