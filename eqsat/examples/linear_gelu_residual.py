"""The bundled example: a linear layer written as loops, a transposed cache of its weight,
bias and gelu, then a residual. eqsat finds one matmul kernel with a fused epilogue."""
from eqsat import empty, f32, gelu, program

SHAPES = {"M": 64, "N": 48, "K": 32}


@program
def linear_gelu_residual(x: f32["M", "K"], w: f32["N", "K"], bias: f32["N"], r: f32["M", "N"]) -> f32["M", "N"]:
    wt = empty((K, N))
    for k in range(K):
        for n in range(N):
            wt[k, n] = w[n, k]
    y = empty((M, N))
    for i in range(M):
        for j in range(N):
            acc = 0.0
            for k in range(K):
                acc += x[i, k] * wt[k, j]
            y[i, j] = gelu(acc + bias[j]) + r[i, j]
    return y


def truth(x, w, bias, r):
    import numpy as np

    z = x @ w.T + bias
    return 0.5 * z * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (z + 0.044715 * z**3))) + r
