"""PolyBench/C 4.2 bicg: s := A^T r, q := A p (BiCG sub-kernel).

Deviations from the C:
- DATA_TYPE is f32 and the C's SCALAR_VAL literals are Python floats (`s[i] = 0` too).
- m, n are the dims M, N.
- s and q are parameters of the C kernel whose incoming contents are never read (the
  kernel zeroes them); here they are local buffers, returned as (s, q).
"""
import numpy as np

from eqsat import empty, f32, program

SHAPES = {"M": 38, "N": 42}     # MINI_DATASET
MEDIUM = {"M": 390, "N": 410}   # MEDIUM_DATASET
LIFTABLE = True


@program
def bicg(A: f32["N", "M"], p: f32["M"], r: f32["N"]) -> tuple[f32["M"], f32["N"]]:
    s = empty((M,))
    q = empty((N,))
    for i in range(M):
        s[i] = 0.0
    for i in range(N):
        q[i] = 0.0
        for j in range(M):
            s[j] = s[j] + r[i] * A[i, j]
            q[i] = q[i] + A[i, j] * p[j]
    return s, q


def truth(A, p, r):
    return r @ A, A @ p


def init(rng, sizes=None):
    s = sizes or SHAPES
    return (rng.standard_normal((s["N"], s["M"])).astype(np.float32),
            rng.standard_normal(s["M"]).astype(np.float32),
            rng.standard_normal(s["N"]).astype(np.float32))
