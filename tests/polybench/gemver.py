"""PolyBench/C 4.2 gemver: A := A + u1 v1^T + u2 v2^T; x := x + beta A^T y + z; w := w + alpha A x.

Deviations from the C:
- DATA_TYPE is f32.
- n is the dim N.
- A and x are updated in place by the C kernel as well; the program returns only w, the
  array PolyBench prints (A and x are passed by value and stay internal).
"""
import numpy as np

from eqsat import f32, program

SHAPES = {"N": 40}    # MINI_DATASET
MEDIUM = {"N": 400}   # MEDIUM_DATASET
LIFTABLE = True


@program
def gemver(alpha: f32, beta: f32, A: f32["N", "N"], u1: f32["N"], v1: f32["N"], u2: f32["N"], v2: f32["N"],
           w: f32["N"], x: f32["N"], y: f32["N"], z: f32["N"]) -> f32["N"]:
    for i in range(N):
        for j in range(N):
            A[i, j] = A[i, j] + u1[i] * v1[j] + u2[i] * v2[j]
    for i in range(N):
        for j in range(N):
            x[i] = x[i] + beta * A[j, i] * y[j]
    for i in range(N):
        x[i] = x[i] + z[i]
    for i in range(N):
        for j in range(N):
            w[i] = w[i] + alpha * A[i, j] * x[j]
    return w


def truth(alpha, beta, A, u1, v1, u2, v2, w, x, y, z):
    A2 = A + np.outer(u1, v1) + np.outer(u2, v2)
    x2 = x + np.float32(beta) * (A2.T @ y) + z
    return w + np.float32(alpha) * (A2 @ x2)


def init(rng, sizes=None):
    n = (sizes or SHAPES)["N"]
    r = lambda *shape: rng.standard_normal(shape).astype(np.float32)  # noqa: E731
    return 1.5, 1.2, r(n, n), r(n), r(n), r(n), r(n), r(n), r(n), r(n), r(n)
