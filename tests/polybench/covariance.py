"""PolyBench/C 4.2 covariance: the M x M covariance matrix of N samples (rows of data).

Deviations from the C:
- DATA_TYPE is f32 and the C's SCALAR_VAL literals are Python floats.
- m, n are the dims M, N; float_n stays a scalar parameter (the caller passes float(N)).
- mean is a parameter of the C kernel used only as scratch and cov is fully written;
  both are local buffers here. data is updated in place (centered) as in the C, but passed
  by value and not returned. Returns cov, the array PolyBench prints.
"""
import numpy as np

from eqsat import empty, f32, program

SHAPES = {"M": 28, "N": 32}     # MINI_DATASET
MEDIUM = {"M": 240, "N": 260}   # MEDIUM_DATASET
LIFTABLE = True


@program
def covariance(float_n: f32, data: f32["N", "M"]) -> f32["M", "M"]:
    mean = empty((M,))
    cov = empty((M, M))
    for j in range(M):
        mean[j] = 0.0
        for i in range(N):
            mean[j] += data[i, j]
        mean[j] /= float_n
    for i in range(N):
        for j in range(M):
            data[i, j] -= mean[j]
    for i in range(M):
        for j in range(i, M):
            cov[i, j] = 0.0
            for k in range(N):
                cov[i, j] += data[k, i] * data[k, j]
            cov[i, j] /= (float_n - 1.0)
            cov[j, i] = cov[i, j]
    return cov


def truth(float_n, data):
    fn = np.float32(float_n)
    mean = data.sum(axis=0) / fn
    d = data - mean
    return (d.T @ d) / (fn - np.float32(1.0))


def init(rng, sizes=None):
    s = sizes or SHAPES
    return float(s["N"]), rng.standard_normal((s["N"], s["M"])).astype(np.float32)
