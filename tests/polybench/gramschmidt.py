"""PolyBench/C 4.2 gramschmidt: QR decomposition of A (M x N) by modified Gram-Schmidt.

Deviations from the C:
- DATA_TYPE is f32 and the C's SCALAR_VAL literals are Python floats; SQRT_FUN is eqsat's
  `sqrt`.
- m, n are the dims M, N.
- SIZES: PolyBench's datasets have M < N (MINI M=20, N=30; MEDIUM M=200, N=240), so A
  cannot have full column rank and the last N - M columns divide by a norm that is zero
  up to rounding (the result is rounding noise). Here M and N are swapped (MINI M=30,
  N=20; MEDIUM M=240, N=200) so that A has full column rank.
- R and Q are parameters of the C kernel. Q is fully written: a local `empty`. R's strict
  lower triangle is never written and PolyBench's init_array sets R to zero: a local
  `zeros`. A is orthogonalized in place as in the C, passed by value and not returned.
  Returns (R, Q), the arrays PolyBench prints.
"""
import numpy as np

from eqsat import empty, f32, program, sqrt, zeros

SHAPES = {"M": 30, "N": 20}     # MINI_DATASET, M and N swapped (see above)
MEDIUM = {"M": 240, "N": 200}   # MEDIUM_DATASET, M and N swapped (see above)
LIFTABLE = False


@program
def gramschmidt(A: f32["M", "N"]) -> tuple[f32["N", "N"], f32["M", "N"]]:
    R = zeros((N, N))
    Q = empty((M, N))
    for k in range(N):
        nrm = 0.0
        for i in range(M):
            nrm += A[i, k] * A[i, k]
        R[k, k] = sqrt(nrm)
        for i in range(M):
            Q[i, k] = A[i, k] / R[k, k]
        for j in range(k + 1, N):
            R[k, j] = 0.0
            for i in range(M):
                R[k, j] += Q[i, k] * A[i, j]
            for i in range(M):
                A[i, j] = A[i, j] - Q[i, k] * R[k, j]
    return R, Q


def truth(A):
    A = np.array(A, dtype=np.float32)
    m, n = A.shape
    R = np.zeros((n, n), dtype=np.float32)
    Q = np.zeros((m, n), dtype=np.float32)
    for k in range(n):
        R[k, k] = np.sqrt(A[:, k] @ A[:, k])
        Q[:, k] = A[:, k] / R[k, k]
        R[k, k + 1:] = Q[:, k] @ A[:, k + 1:]
        A[:, k + 1:] -= np.outer(Q[:, k], R[k, k + 1:])
    return R, Q


def init(rng, sizes=None):
    s = sizes or SHAPES
    return (rng.standard_normal((s["M"], s["N"])).astype(np.float32),)  # full column rank
