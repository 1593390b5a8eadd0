"""PolyBench/C 4.2 trisolv: forward substitution, L x = b.

Deviations from the C:
- DATA_TYPE is f32.
- n is the dim N.
- x is a parameter of the C kernel whose incoming contents are never read; here it is a
  local buffer, returned.
"""
import numpy as np

from eqsat import empty, f32, program

SHAPES = {"N": 40}    # MINI_DATASET
MEDIUM = {"N": 400}   # MEDIUM_DATASET
LIFTABLE = False


@program
def trisolv(L: f32["N", "N"], b: f32["N"]) -> f32["N"]:
    x = empty((N,))
    for i in range(N):
        x[i] = b[i]
        for j in range(i):
            x[i] -= L[i, j] * x[j]
        x[i] = x[i] / L[i, i]
    return x


def truth(L, b):
    n = L.shape[0]
    x = np.zeros(n, dtype=np.float32)
    for i in range(n):
        x[i] = (b[i] - L[i, :i] @ x[:i]) / L[i, i]
    return x


def init(rng, sizes=None):
    n = (sizes or SHAPES)["N"]
    L = np.tril(rng.uniform(-1.0, 1.0, (n, n)) / n) + np.eye(n) * 2.0  # well conditioned
    return L.astype(np.float32), rng.standard_normal(n).astype(np.float32)
