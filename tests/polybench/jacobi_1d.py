"""PolyBench/C 4.2 jacobi-1d: TSTEPS sweeps of a 3-point Jacobi stencil, A -> B -> A.

Deviations from the C:
- DATA_TYPE is f32; the C's literal 0.33333 is the same Python float.
- tsteps is the int parameter TSTEPS; n is the dim N.
- Returns A, the array PolyBench prints (B is passed by value: its boundary is read).
"""
import numpy as np

from eqsat import f32, program

SHAPES = {"TSTEPS": 20, "N": 30}     # MINI_DATASET
MEDIUM = {"TSTEPS": 100, "N": 400}   # MEDIUM_DATASET
LIFTABLE = False


@program
def jacobi_1d(TSTEPS: int, A: f32["N"], B: f32["N"]) -> f32["N"]:
    for t in range(TSTEPS):
        for i in range(1, N - 1):
            B[i] = 0.33333 * (A[i - 1] + A[i] + A[i + 1])
        for i in range(1, N - 1):
            A[i] = 0.33333 * (B[i - 1] + B[i] + B[i + 1])
    return A


def truth(TSTEPS, A, B):
    A, B = np.array(A, dtype=np.float32), np.array(B, dtype=np.float32)
    c = np.float32(0.33333)
    for _ in range(TSTEPS):
        B[1:-1] = c * (A[:-2] + A[1:-1] + A[2:])
        A[1:-1] = c * (B[:-2] + B[1:-1] + B[2:])
    return A


def init(rng, sizes=None):
    s = sizes or SHAPES
    n = s["N"]
    return s["TSTEPS"], rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
