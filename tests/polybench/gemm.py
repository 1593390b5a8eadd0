"""PolyBench/C 4.2 gemm: C := alpha*A*B + beta*C.

Deviations from the C:
- DATA_TYPE is f32 and the C's SCALAR_VAL literals are Python floats.
- ni, nj, nk are the dims NI, NJ, NK.
"""
import numpy as np

from eqsat import f32, program

SHAPES = {"NI": 20, "NJ": 25, "NK": 30}      # MINI_DATASET
MEDIUM = {"NI": 200, "NJ": 220, "NK": 240}   # MEDIUM_DATASET
LIFTABLE = True


@program
def gemm(alpha: f32, beta: f32, C: f32["NI", "NJ"], A: f32["NI", "NK"], B: f32["NK", "NJ"]) -> f32["NI", "NJ"]:
    for i in range(NI):
        for j in range(NJ):
            C[i, j] *= beta
        for k in range(NK):
            for j in range(NJ):
                C[i, j] += alpha * A[i, k] * B[k, j]
    return C


def truth(alpha, beta, C, A, B):
    return np.float32(beta) * C + np.float32(alpha) * (A @ B)


def init(rng, sizes=None):
    s = sizes or SHAPES
    ni, nj, nk = s["NI"], s["NJ"], s["NK"]
    return (1.5, 1.2,
            rng.standard_normal((ni, nj)).astype(np.float32),
            rng.standard_normal((ni, nk)).astype(np.float32),
            rng.standard_normal((nk, nj)).astype(np.float32))
