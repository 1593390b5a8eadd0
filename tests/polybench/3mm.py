"""PolyBench/C 4.2 3mm: G := (A*B)*(C*D).

Deviations from the C:
- DATA_TYPE is f32 and the C's SCALAR_VAL literals are Python floats.
- ni, nj, nk, nl, nm are the dims NI, NJ, NK, NL, NM.
- E and F are parameters of the C kernel, fully written before they are read; here they
  are local buffers `empty(...)` and only G (the array PolyBench prints) is returned.
"""
import numpy as np

from eqsat import empty, f32, program

SHAPES = {"NI": 16, "NJ": 18, "NK": 20, "NL": 22, "NM": 24}      # MINI_DATASET
MEDIUM = {"NI": 180, "NJ": 190, "NK": 200, "NL": 210, "NM": 220}  # MEDIUM_DATASET
LIFTABLE = True


@program
def k3mm(A: f32["NI", "NK"], B: f32["NK", "NJ"], C: f32["NJ", "NM"], D: f32["NM", "NL"]) -> f32["NI", "NL"]:
    E = empty((NI, NJ))
    F = empty((NJ, NL))
    G = empty((NI, NL))
    # E := A*B
    for i in range(NI):
        for j in range(NJ):
            E[i, j] = 0.0
            for k in range(NK):
                E[i, j] += A[i, k] * B[k, j]
    # F := C*D
    for i in range(NJ):
        for j in range(NL):
            F[i, j] = 0.0
            for k in range(NM):
                F[i, j] += C[i, k] * D[k, j]
    # G := E*F
    for i in range(NI):
        for j in range(NL):
            G[i, j] = 0.0
            for k in range(NJ):
                G[i, j] += E[i, k] * F[k, j]
    return G


def truth(A, B, C, D):
    return (A @ B) @ (C @ D)


def init(rng, sizes=None):
    s = sizes or SHAPES
    ni, nj, nk, nl, nm = s["NI"], s["NJ"], s["NK"], s["NL"], s["NM"]
    r = lambda *shape: rng.standard_normal(shape).astype(np.float32)  # noqa: E731
    return r(ni, nk), r(nk, nj), r(nj, nm), r(nm, nl)
