"""PolyBench/C 4.2 correlation: the M x M correlation matrix of N samples (rows of data).

Deviations from the C:
- DATA_TYPE is f32 and the C's SCALAR_VAL literals are Python floats; SQRT_FUN is eqsat's
  `sqrt`; `stddev[j] <= eps ? 1.0 : stddev[j]` is `1.0 if stddev[j] <= eps else stddev[j]`.
- m, n are the dims M, N; float_n stays a scalar parameter (the caller passes float(N)).
- mean and stddev are parameters of the C kernel used only as scratch and corr is fully
  written; all three are local buffers here. data is normalized in place as in the C, but
  passed by value and not returned. Returns corr, the array PolyBench prints.
"""
import numpy as np

from eqsat import empty, f32, program, sqrt

SHAPES = {"M": 28, "N": 32}     # MINI_DATASET
MEDIUM = {"M": 240, "N": 260}   # MEDIUM_DATASET
LIFTABLE = True


@program
def correlation(float_n: f32, data: f32["N", "M"]) -> f32["M", "M"]:
    mean = empty((M,))
    stddev = empty((M,))
    corr = empty((M, M))
    eps = 0.1
    for j in range(M):
        mean[j] = 0.0
        for i in range(N):
            mean[j] += data[i, j]
        mean[j] /= float_n
    for j in range(M):
        stddev[j] = 0.0
        for i in range(N):
            stddev[j] += (data[i, j] - mean[j]) * (data[i, j] - mean[j])
        stddev[j] /= float_n
        stddev[j] = sqrt(stddev[j])
        # The following in an inelegant but usual way to handle near-zero std. dev. values,
        # which below would cause a zero-divide.
        stddev[j] = 1.0 if stddev[j] <= eps else stddev[j]
    # Center and reduce the column vectors.
    for i in range(N):
        for j in range(M):
            data[i, j] -= mean[j]
            data[i, j] /= sqrt(float_n) * stddev[j]
    # Calculate the m * m correlation matrix.
    for i in range(M - 1):
        corr[i, i] = 1.0
        for j in range(i + 1, M):
            corr[i, j] = 0.0
            for k in range(N):
                corr[i, j] += data[k, i] * data[k, j]
            corr[j, i] = corr[i, j]
    corr[M - 1, M - 1] = 1.0
    return corr


def truth(float_n, data):
    fn = np.float32(float_n)
    mean = data.sum(axis=0) / fn
    std = np.sqrt(((data - mean) ** 2).sum(axis=0) / fn)
    std = np.where(std <= np.float32(0.1), np.float32(1.0), std)
    d = (data - mean) / (np.sqrt(fn) * std)
    corr = d.T @ d
    np.fill_diagonal(corr, 1.0)
    return corr


def init(rng, sizes=None):
    s = sizes or SHAPES
    data = rng.standard_normal((s["N"], s["M"])).astype(np.float32)
    data[:, 0] = 3.0  # one constant column: its stddev is 0 and takes the `<= eps` branch
    return float(s["N"]), data
