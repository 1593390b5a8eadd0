"""PolyBench/C 4.2 doitgen: A[r, q, :] := A[r, q, :] C4 (multiresolution analysis kernel).

Deviations from the C:
- DATA_TYPE is f32 and the C's SCALAR_VAL literals are Python floats.
- nr, nq, np are the dims NR, NQ, NP.
- `sum` is a parameter of the C kernel used only as scratch (written before it is read);
  here it is a local buffer `empty((NP,))`, not returned. Returns A.
"""
import numpy as np

from eqsat import empty, f32, program

SHAPES = {"NQ": 8, "NR": 10, "NP": 12}    # MINI_DATASET
MEDIUM = {"NQ": 40, "NR": 50, "NP": 60}   # MEDIUM_DATASET
LIFTABLE = True


@program
def doitgen(A: f32["NR", "NQ", "NP"], C4: f32["NP", "NP"]) -> f32["NR", "NQ", "NP"]:
    sum = empty((NP,))
    for r in range(NR):
        for q in range(NQ):
            for p in range(NP):
                sum[p] = 0.0
                for s in range(NP):
                    sum[p] += A[r, q, s] * C4[s, p]
            for p in range(NP):
                A[r, q, p] = sum[p]
    return A


def truth(A, C4):
    return A @ C4


def init(rng, sizes=None):
    s = sizes or SHAPES
    r = lambda *shape: rng.standard_normal(shape).astype(np.float32)  # noqa: E731
    return r(s["NR"], s["NQ"], s["NP"]), r(s["NP"], s["NP"])
