"""PolyBench/C 4.2 durbin: Levinson-Durbin recursion for the Yule-Walker equations.

Deviations from the C:
- DATA_TYPE is f32 and the C's SCALAR_VAL literals are Python floats; `(1-alpha*alpha)`
  is `(1.0 - alpha * alpha)`.
- n is the dim N.
- z is a local array of the C kernel: here a local buffer `empty((N,))`. y is a parameter
  of the C kernel whose incoming contents are never read; here a local buffer, returned.
"""
import numpy as np

from eqsat import empty, f32, program

SHAPES = {"N": 40}    # MINI_DATASET
MEDIUM = {"N": 400}   # MEDIUM_DATASET
LIFTABLE = False


@program
def durbin(r: f32["N"]) -> f32["N"]:
    y = empty((N,))
    z = empty((N,))
    y[0] = -r[0]
    beta = 1.0
    alpha = -r[0]
    for k in range(1, N):
        beta = (1.0 - alpha * alpha) * beta
        sum = 0.0
        for i in range(k):
            sum += r[k - i - 1] * y[i]
        alpha = -(r[k] + sum) / beta
        for i in range(k):
            z[i] = y[i] + alpha * y[k - i - 1]
        for i in range(k):
            y[i] = z[i]
        y[k] = alpha
    return y


def truth(r):
    r = np.asarray(r, dtype=np.float32)
    n = r.shape[0]
    y = np.zeros(n, dtype=np.float32)
    y[0] = -r[0]
    beta = np.float32(1.0)
    alpha = -r[0]
    for k in range(1, n):
        beta = (np.float32(1.0) - alpha * alpha) * beta
        s = r[k - 1::-1] @ y[:k]  # r[k-i-1] for i = 0..k-1
        alpha = -(r[k] + s) / beta
        y[:k] = y[:k] + alpha * y[k - 1::-1]
        y[k] = alpha
    return y


def init(rng, sizes=None):
    n = (sizes or SHAPES)["N"]
    # |r[k]| <= 0.3 / (k+1)^2: the Toeplitz matrix [1, r0, r1, ...] is diagonally dominant
    # (sum of off-diagonal magnitudes < 2 * 0.3 * pi^2/6 < 1), so beta stays positive
    k = np.arange(n)
    return ((rng.uniform(-1.0, 1.0, n) * 0.3 / (k + 1) ** 2).astype(np.float32),)
