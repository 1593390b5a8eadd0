"""PolyBench/C 4.2 nussinov: RNA secondary structure (Nussinov's dynamic program), in place.

Deviations from the C:
- The C's `base seq[N]` (char) and int `table[N][N]` are f32 here (eqsat has float
  arrays only); bases are 0.0..3.0 and table values small integers, exact in f32.
- The macros are expanded inline: `max_score(s1, s2)` = `((s1 >= s2) ? s1 : s2)` becomes
  `s1 if s1 >= s2 else s2` (with s2 written twice, as the macro expands it), and
  `match(b1, b2)` = `(((b1)+(b2)) == 3 ? 1 : 0)` becomes `(1.0 if b1 + b2 == 3.0 else 0.0)`.
- n is the dim N.
- init: table holds small random integers instead of PolyBench's zeros (exercises more of
  the max_score comparisons).
"""
import numpy as np

from eqsat import f32, program

SHAPES = {"N": 60}    # MINI_DATASET
MEDIUM = {"N": 500}   # MEDIUM_DATASET
LIFTABLE = False


@program
def nussinov(seq: f32["N"], table: f32["N", "N"]) -> f32["N", "N"]:
    for i in range(N - 1, -1, -1):
        for j in range(i + 1, N):
            if j - 1 >= 0:
                table[i, j] = table[i, j] if table[i, j] >= table[i, j - 1] else table[i, j - 1]
            if i + 1 < N:
                table[i, j] = table[i, j] if table[i, j] >= table[i + 1, j] else table[i + 1, j]
            if j - 1 >= 0 and i + 1 < N:
                # don't allow adjacent elements to bond
                if i < j - 1:
                    table[i, j] = (table[i, j]
                                   if table[i, j] >= table[i + 1, j - 1] + (1.0 if seq[i] + seq[j] == 3.0 else 0.0)
                                   else table[i + 1, j - 1] + (1.0 if seq[i] + seq[j] == 3.0 else 0.0))
                else:
                    table[i, j] = table[i, j] if table[i, j] >= table[i + 1, j - 1] else table[i + 1, j - 1]
            for k in range(i + 1, j):
                table[i, j] = (table[i, j] if table[i, j] >= table[i, k] + table[k + 1, j]
                               else table[i, k] + table[k + 1, j])
    return table


def truth(seq, table):
    T = np.array(table, dtype=np.float32)
    s = [float(v) for v in seq]
    n = T.shape[0]
    for i in range(n - 1, -1, -1):
        for j in range(i + 1, n):
            v = max(T[i, j], T[i, j - 1])
            if i + 1 < n:
                v = max(v, T[i + 1, j])
                if i < j - 1:
                    v = max(v, T[i + 1, j - 1] + (1.0 if s[i] + s[j] == 3.0 else 0.0))
                else:
                    v = max(v, T[i + 1, j - 1])
            if j > i + 1:  # k = i+1 .. j-1: T[i, k] final already, T[k+1, j] from later rows
                v = max(v, float((T[i, i + 1:j] + T[i + 2:j + 1, j]).max()))
            T[i, j] = v
    return T


def init(rng, sizes=None):
    n = (sizes or SHAPES)["N"]
    return (rng.integers(0, 4, n).astype(np.float32),
            rng.integers(0, 3, (n, n)).astype(np.float32))
