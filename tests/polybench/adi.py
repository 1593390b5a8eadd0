"""PolyBench/C 4.2 adi: alternating direction implicit solver, TSTEPS column and row sweeps.

Deviations from the C:
- DATA_TYPE is f32 and the C's SCALAR_VAL literals are Python floats; `(DATA_TYPE)_PB_N` is
  the dim N used as a value.
- tsteps is the int parameter TSTEPS; n is the dim N.
- v, p and q are parameters of the C kernel whose incoming contents are never read; here
  they are local buffers `empty((N, N))`. Returns u, the array PolyBench prints.
"""
import numpy as np

from eqsat import empty, f32, program

SHAPES = {"TSTEPS": 20, "N": 20}     # MINI_DATASET
MEDIUM = {"TSTEPS": 100, "N": 200}   # MEDIUM_DATASET
LIFTABLE = False


@program
def adi(TSTEPS: int, u: f32["N", "N"]) -> f32["N", "N"]:
    v = empty((N, N))
    p = empty((N, N))
    q = empty((N, N))
    DX = 1.0 / N
    DY = 1.0 / N
    DT = 1.0 / TSTEPS
    B1 = 2.0
    B2 = 1.0
    mul1 = B1 * DT / (DX * DX)
    mul2 = B2 * DT / (DY * DY)
    a = -mul1 / 2.0
    b = 1.0 + mul1
    c = a
    d = -mul2 / 2.0
    e = 1.0 + mul2
    f = d
    for t in range(1, TSTEPS + 1):
        # Column Sweep
        for i in range(1, N - 1):
            v[0, i] = 1.0
            p[i, 0] = 0.0
            q[i, 0] = v[0, i]
            for j in range(1, N - 1):
                p[i, j] = -c / (a * p[i, j - 1] + b)
                q[i, j] = ((-d * u[j, i - 1] + (1.0 + 2.0 * d) * u[j, i] - f * u[j, i + 1] - a * q[i, j - 1])
                           / (a * p[i, j - 1] + b))
            v[N - 1, i] = 1.0
            for j in range(N - 2, 0, -1):
                v[j, i] = p[i, j] * v[j + 1, i] + q[i, j]
        # Row Sweep
        for i in range(1, N - 1):
            u[i, 0] = 1.0
            p[i, 0] = 0.0
            q[i, 0] = u[i, 0]
            for j in range(1, N - 1):
                p[i, j] = -f / (d * p[i, j - 1] + e)
                q[i, j] = ((-a * v[i - 1, j] + (1.0 + 2.0 * a) * v[i, j] - c * v[i + 1, j] - d * q[i, j - 1])
                           / (d * p[i, j - 1] + e))
            u[i, N - 1] = 1.0
            for j in range(N - 2, 0, -1):
                u[i, j] = p[i, j] * u[i, j + 1] + q[i, j]
    return u


def truth(TSTEPS, u):
    """The same sweeps, vectorized over i (the rows of one sweep are independent)."""
    u = np.array(u, dtype=np.float32)
    n = u.shape[0]
    v = np.zeros((n, n), dtype=np.float32)
    p = np.zeros((n, n), dtype=np.float32)
    q = np.zeros((n, n), dtype=np.float32)
    DX = DY = 1.0 / n
    DT = 1.0 / TSTEPS
    mul1 = 2.0 * DT / (DX * DX)
    mul2 = 1.0 * DT / (DY * DY)
    a = c = -mul1 / 2.0
    b = 1.0 + mul1
    d = f = -mul2 / 2.0
    e = 1.0 + mul2
    In = slice(1, n - 1)
    for _ in range(TSTEPS):
        v[0, In] = 1.0
        p[In, 0] = 0.0
        q[In, 0] = v[0, In]
        for j in range(1, n - 1):
            den = a * p[In, j - 1] + b
            p[In, j] = -c / den
            q[In, j] = (-d * u[j, :-2] + (1.0 + 2.0 * d) * u[j, 1:-1] - f * u[j, 2:] - a * q[In, j - 1]) / den
        v[n - 1, In] = 1.0
        for j in range(n - 2, 0, -1):
            v[j, In] = p[In, j] * v[j + 1, In] + q[In, j]
        u[In, 0] = 1.0
        p[In, 0] = 0.0
        q[In, 0] = u[In, 0]
        for j in range(1, n - 1):
            den = d * p[In, j - 1] + e
            p[In, j] = -f / den
            q[In, j] = (-a * v[:-2, j] + (1.0 + 2.0 * a) * v[1:-1, j] - c * v[2:, j] - d * q[In, j - 1]) / den
        u[In, n - 1] = 1.0
        for j in range(n - 2, 0, -1):
            u[In, j] = p[In, j] * u[In, j + 1] + q[In, j]
    return u


def init(rng, sizes=None):
    s = sizes or SHAPES
    return s["TSTEPS"], rng.standard_normal((s["N"], s["N"])).astype(np.float32)
