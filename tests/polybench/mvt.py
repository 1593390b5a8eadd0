"""PolyBench/C 4.2 mvt: x1 := x1 + A y_1, x2 := x2 + A^T y_2.

Deviations from the C:
- DATA_TYPE is f32.
- n is the dim N.
"""
import numpy as np

from eqsat import f32, program

SHAPES = {"N": 40}    # MINI_DATASET
MEDIUM = {"N": 400}   # MEDIUM_DATASET
LIFTABLE = True


@program
def mvt(x1: f32["N"], x2: f32["N"], y_1: f32["N"], y_2: f32["N"], A: f32["N", "N"]) -> tuple[f32["N"], f32["N"]]:
    for i in range(N):
        for j in range(N):
            x1[i] = x1[i] + A[i, j] * y_1[j]
    for i in range(N):
        for j in range(N):
            x2[i] = x2[i] + A[j, i] * y_2[j]
    return x1, x2


def truth(x1, x2, y_1, y_2, A):
    return x1 + A @ y_1, x2 + A.T @ y_2


def init(rng, sizes=None):
    n = (sizes or SHAPES)["N"]
    r = lambda *shape: rng.standard_normal(shape).astype(np.float32)  # noqa: E731
    return r(n), r(n), r(n), r(n), r(n, n)
