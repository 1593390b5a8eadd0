"""PolyBench/C 4.2 2mm: D := alpha*A*B*C + beta*D.

Deviations from the C:
- DATA_TYPE is f32 and the C's SCALAR_VAL literals are Python floats.
- ni, nj, nk, nl are the dims NI, NJ, NK, NL.
- `tmp` is a parameter of the C kernel used only as scratch (fully written before it is
  read); here it is a local buffer `empty((NI, NJ))` and is not returned. The program
  returns D, the array PolyBench prints.
"""
import numpy as np

from eqsat import empty, f32, program

SHAPES = {"NI": 16, "NJ": 18, "NK": 22, "NL": 24}     # MINI_DATASET
MEDIUM = {"NI": 180, "NJ": 190, "NK": 210, "NL": 220}  # MEDIUM_DATASET
LIFTABLE = True


@program
def k2mm(alpha: f32, beta: f32, A: f32["NI", "NK"], B: f32["NK", "NJ"], C: f32["NJ", "NL"],
         D: f32["NI", "NL"]) -> f32["NI", "NL"]:
    tmp = empty((NI, NJ))
    for i in range(NI):
        for j in range(NJ):
            tmp[i, j] = 0.0
            for k in range(NK):
                tmp[i, j] += alpha * A[i, k] * B[k, j]
    for i in range(NI):
        for j in range(NL):
            D[i, j] *= beta
            for k in range(NJ):
                D[i, j] += tmp[i, k] * C[k, j]
    return D


def truth(alpha, beta, A, B, C, D):
    tmp = np.float32(alpha) * (A @ B)
    return np.float32(beta) * D + tmp @ C


def init(rng, sizes=None):
    s = sizes or SHAPES
    ni, nj, nk, nl = s["NI"], s["NJ"], s["NK"], s["NL"]
    r = lambda *shape: rng.standard_normal(shape).astype(np.float32)  # noqa: E731
    return 1.5, 1.2, r(ni, nk), r(nk, nj), r(nj, nl), r(ni, nl)
