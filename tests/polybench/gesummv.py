"""PolyBench/C 4.2 gesummv: y := alpha*A*x + beta*B*x.

Deviations from the C:
- DATA_TYPE is f32 and the C's SCALAR_VAL literals are Python floats.
- n is the dim N.
- tmp (scratch) and y are parameters of the C kernel whose incoming contents are never
  read; here they are local buffers. Returns y, the array PolyBench prints.
"""
import numpy as np

from eqsat import empty, f32, program

SHAPES = {"N": 30}    # MINI_DATASET
MEDIUM = {"N": 250}   # MEDIUM_DATASET
LIFTABLE = True


@program
def gesummv(alpha: f32, beta: f32, A: f32["N", "N"], B: f32["N", "N"], x: f32["N"]) -> f32["N"]:
    tmp = empty((N,))
    y = empty((N,))
    for i in range(N):
        tmp[i] = 0.0
        y[i] = 0.0
        for j in range(N):
            tmp[i] = A[i, j] * x[j] + tmp[i]
            y[i] = B[i, j] * x[j] + y[i]
        y[i] = alpha * tmp[i] + beta * y[i]
    return y


def truth(alpha, beta, A, B, x):
    return np.float32(alpha) * (A @ x) + np.float32(beta) * (B @ x)


def init(rng, sizes=None):
    n = (sizes or SHAPES)["N"]
    r = lambda *shape: rng.standard_normal(shape).astype(np.float32)  # noqa: E731
    return 1.5, 1.2, r(n, n), r(n, n), r(n)
