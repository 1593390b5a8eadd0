"""PolyBench/C 4.2 ludcmp: LU decomposition of A, then forward and back substitution for x.

Deviations from the C:
- DATA_TYPE is f32.
- n is the dim N.
- x and y are parameters of the C kernel whose incoming contents are never read; here
  they are local buffers. A is decomposed in place as in the C, passed by value and not
  returned. Returns x, the array PolyBench prints.
"""
import numpy as np

from eqsat import empty, f32, program

SHAPES = {"N": 40}    # MINI_DATASET
MEDIUM = {"N": 400}   # MEDIUM_DATASET
LIFTABLE = False


@program
def ludcmp(A: f32["N", "N"], b: f32["N"]) -> f32["N"]:
    x = empty((N,))
    y = empty((N,))
    for i in range(N):
        for j in range(i):
            w = A[i, j]
            for k in range(j):
                w -= A[i, k] * A[k, j]
            A[i, j] = w / A[j, j]
        for j in range(i, N):
            w = A[i, j]
            for k in range(i):
                w -= A[i, k] * A[k, j]
            A[i, j] = w
    for i in range(N):
        w = b[i]
        for j in range(i):
            w -= A[i, j] * y[j]
        y[i] = w
    for i in range(N - 1, -1, -1):
        w = y[i]
        for j in range(i + 1, N):
            w -= A[i, j] * x[j]
        x[i] = w / A[i, i]
    return x


def truth(A, b):
    A = np.array(A, dtype=np.float32)
    n = A.shape[0]
    for i in range(n):
        for j in range(i):
            A[i, j] = (A[i, j] - A[i, :j] @ A[:j, j]) / A[j, j]
        A[i, i:] = A[i, i:] - A[i, :i] @ A[:i, i:]
    y = np.zeros(n, dtype=np.float32)
    for i in range(n):
        y[i] = b[i] - A[i, :i] @ y[:i]
    x = np.zeros(n, dtype=np.float32)
    for i in range(n - 1, -1, -1):
        x[i] = (y[i] - A[i, i + 1:] @ x[i + 1:]) / A[i, i]
    return x


def init(rng, sizes=None):
    n = (sizes or SHAPES)["N"]
    A = rng.uniform(-1.0, 1.0, (n, n)) / n
    A += np.eye(n) * 2.0  # diagonally dominant: no pivoting needed
    return A.astype(np.float32), rng.standard_normal(n).astype(np.float32)
