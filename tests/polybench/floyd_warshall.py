"""PolyBench/C 4.2 floyd-warshall: all-pairs shortest path lengths, in place.

Deviations from the C:
- The C's int `paths` array is f32 here (eqsat has float arrays only); init uses
  integer-valued weights small enough that every sum is exact in f32.
- `paths[i][j] < paths[i][k] + paths[k][j] ? paths[i][j] : paths[i][k] + paths[k][j]` is the
  same `a if c else b` expression.
- n is the dim N.
"""
import numpy as np

from eqsat import f32, program

SHAPES = {"N": 60}    # MINI_DATASET
MEDIUM = {"N": 500}   # MEDIUM_DATASET
LIFTABLE = False


@program
def floyd_warshall(paths: f32["N", "N"]) -> f32["N", "N"]:
    for k in range(N):
        for i in range(N):
            for j in range(N):
                paths[i, j] = paths[i, j] if paths[i, j] < paths[i, k] + paths[k, j] else paths[i, k] + paths[k, j]
    return paths


def truth(paths):
    """Vectorized over (i, j) for each k: with non-negative weights, row k and column k do not
    change during step k, so the in-place sweep equals one elementwise minimum."""
    p = np.array(paths, dtype=np.float32)
    for k in range(p.shape[0]):
        p = np.minimum(p, p[:, k:k + 1] + p[k:k + 1, :])
    return p


def init(rng, sizes=None):
    n = (sizes or SHAPES)["N"]
    p = rng.integers(1, 100, (n, n)).astype(np.float32)
    p[rng.random((n, n)) < 0.3] = 999.0  # "no edge", as PolyBench's init uses 999
    return (p,)
