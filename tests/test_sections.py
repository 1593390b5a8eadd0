"""numpy's basic slices (`eqsat/sections.py`): `a[:, k]`, `a[1:-1]`, `x[:i]`, `a[::2]`,
`a[::-1]`, `a.T[k]`, stores into them, `np.dot`/`@` and `np.outer` over them, reductions of
them. Each program is also run as plain Python with numpy (the same source, undecorated),
which is the truth here: plan and reference are both compared with it, at several sizes
(edge sizes included), on both backends."""
from __future__ import annotations

import numpy as np
import pytest

import eqsat
from eqsat import lang
from conftest import rel_err

PRELUDE = "import math\n\nimport numpy as np\n"

PROGRAMS = {
    # a bound that is negative only where a condition around it fails (`if i > 0:`, the
    # `else` of `if i < 1:`, `elif i >= 2:`, `not (i <= k)`): proved from the condition
    "guarded_bounds": ('''
@program
def p(x: f32["N"], A: f32["N", "N"]) -> tuple[f32["N"], f32["N", "N"]]:
    y = np.zeros((N,), dtype=np.float32)
    for i in range(N):
        if i > 0:
            y[i] = np.sum(x[:i - 1]) + x[i]
        if i < 1:
            y[i] += x[0]
        else:
            y[i] += np.sum(x[:i - 1] * 2.0)
        if i == 0:
            y[i] -= 1.0
        elif i >= 2:
            y[i] += A[i, i - 2:i] @ x[i - 2:i]
    for k in range(N):
        for i in range(N):
            if not (i <= k):
                A[i, :i - k - 1] += A[k, :i - k - 1] * 0.5
    return y, A
''', None),
    # Gram-Schmidt the numpy way: columns, a dot product of columns, a column update
    "gram_schmidt": ('''
@program
def p(a: f32["M", "N"]) -> tuple[f32["M", "N"], f32["N", "N"]]:
    q = np.zeros((M, N), dtype=np.float32)
    r = np.zeros((N, N), dtype=np.float32)
    for k in range(N):
        nrm = np.sqrt(np.sum(a[:, k] * a[:, k]))
        r[k, k] = nrm
        q[:, k] = a[:, k] / nrm
        for j in range(k + 1, N):
            r[k, j] = np.dot(q[:, k], a[:, j])
            a[:, j] = a[:, j] - q[:, k] * r[k, j]
    return q, r
''', "spd"),
    # LU without pivoting: a column scaled by an element outside it, a rank-1 update by np.outer
    "lu": ('''
@program
def p(A: f32["N", "N"]) -> f32["N", "N"]:
    for k in range(N):
        A[k+1:, k] = A[k+1:, k] / A[k, k]
        A[k+1:, k+1:] -= np.outer(A[k+1:, k], A[k, k+1:])
    return A
''', "spd"),
    "cholesky": ('''
@program
def p(A: f32["N", "N"]) -> f32["N", "N"]:
    L = np.zeros((N, N), dtype=np.float32)
    for j in range(N):
        L[j, j] = np.sqrt(A[j, j] - np.dot(L[j, :j], L[j, :j]))
        for i in range(j + 1, N):
            L[i, j] = (A[i, j] - np.dot(L[i, :j], L[j, :j])) / L[j, j]
    return L
''', "spd"),
    "forward_substitution": ('''
@program
def p(L: f32["N", "N"], b: f32["N"]) -> f32["N"]:
    x = np.zeros((N,), dtype=np.float32)
    for i in range(N):
        x[i] = (b[i] - L[i, :i] @ x[:i]) / L[i, i]
    return x
''', "spd"),
    # shifted slices: reads of the memory being stored go through a new buffer (numpy's order)
    "stencils": ('''
@program
def p(a: f32["N"], g: f32["N", "N"]) -> tuple[f32["N"], f32["N"], f32["N", "N"]]:
    b = np.zeros((N,), dtype=np.float32)
    b[1:-1] = (a[:-2] + a[1:-1] + a[2:]) / 3.0
    a[1:] = a[:-1] * 2.0
    for t in range(2):
        g[1:-1, 1:-1] = 0.25 * (g[:-2, 1:-1] + g[2:, 1:-1] + g[1:-1, :-2] + g[1:-1, 2:])
    return b, a, g
''', None),
    "steps_and_reversal": ('''
@program
def p(a: f32["N"]) -> tuple[f32["N"], f32["N"], f32["N"]]:
    b = np.zeros((N,), dtype=np.float32)
    b[::2] = a[::2] * 2.0
    b[1::3] += 1.0
    r = a[::-1] + 0.0
    a[:] = a[::-1]
    return b, r, a
''', None),
    "reductions_of_slices": ('''
@program
def p(x: f32["N"], A: f32["M", "N"]) -> tuple[f32["N"], f32["N"], f32["N"], f32]:
    pre = np.zeros((N,), dtype=np.float32)
    for i in range(N):
        pre[i] = np.sum(x[:i + 1])
    cmax = np.zeros((N,), dtype=np.float32)
    for j in range(N):
        cmax[j] = np.max(A[:, j])
    return pre, cmax, np.sum(A[1:, :], axis=0), np.mean(x[1:] - x[:-1])
''', None),
    "products_of_slices": ('''
@program
def p(A: f32["M", "N"], B: f32["N", "M"], x: f32["M"]) -> tuple[f32["M", "M"], f32["N"], f32["M"]]:
    C = np.zeros((M, M), dtype=np.float32)
    for j in range(M):
        C[:, j] = A @ B[:, j]
    y = np.zeros((N,), dtype=np.float32)
    for j in range(N):
        y[j] = np.dot(A[:, j], x)
    z = A[1:, :] @ B[:, 0]
    w = np.zeros((M,), dtype=np.float32)
    w[1:] = z
    return C, y, w
''', None),
    "views_as_copies": ('''
@program
def p(a: f32["M", "N"], b: f32["M", "N"]) -> tuple[f32["M"], f32["N"], f32["M"], f32["M", "N"]]:
    c = a[:, 2]
    t = a.T
    r = t[1] * 3.0
    e = np.outer(b[:, 0], b[0, :]) + 1.0
    s = b[:, 1].copy()
    b[0, 1] = 7.0
    return c * 2.0, a[1, :] * 2.0 + a[0], r + s, e
''', None),
    "conditions_and_guards": ('''
@program
def p(a: f32["N"]) -> f32["N"]:
    out = np.zeros((N,), dtype=np.float32)
    for i in range(N):
        out[i] = np.sum(a[:i]) if i > 0 else a[0]
    for i in range(1, N):
        if np.dot(a[:i], a[:i]) > 1.0:
            out[i] += np.sum(a[i - 1:i + 1])
    return out
''', None),
    # ping-pong buffers over slices: every binding of a and b has one shape
    "ping_pong_and_shifts": ('''
@program
def p(a: f32["N"], c: f32["N"]) -> tuple[f32["N"], f32["N"]]:
    b = np.zeros((N,), dtype=np.float32)
    for t in range(5):
        b[1:-1] = 0.5 * (a[:-2] + a[2:])
        a, b = b, a
    c[1:] += c[:-1]
    for i in range(1, N):
        c[i:] += c[i - 1]
    return a, c
''', None),
    "views_of_rows_and_transposes": ('''
@program
def p(A: f32["M", "N"], B: f32["M", "N"], b: f32["N"]) -> tuple[f32["M", "N"], f32["M", "N"]]:
    for i in range(M):
        r = A[i]
        r[1:] = r[1:] - r[:-1]
    A[1:, :] = A[1:, :] + b
    t = B.T
    t[0] = 1.0
    t[1, 1:] = t[1, :-1] * 2.0
    return A, B
''', None),
    # the stored slice read under a transform (a transpose, a flip, a product) is no
    # element-for-element read: computed into a buffer first (the transpose was wrong)
    "self_reads_under_transforms": ('''
@program
def p(A: f32["N", "N"], a: f32["N"], B: f32["M", "N"], C: f32["N", "N"]) -> tuple[f32["N", "N"], f32["N"], f32["M", "N"]]:
    A[1:, 1:] = A[1:, 1:].T + 1.0
    a[1:] = np.flip(a[1:]) * 2.0
    B[1:, :] = B[1:, :] @ C
    return A, a, B
''', None),
    # None (np.newaxis) adds an axis of one element, which broadcasts
    "new_axes": ('''
@program
def p(u: f32["M"], v: f32["N"], x: f32["M", "N"]) -> tuple[f32["M", "N"], f32["M", "N"], f32["M", "M"]]:
    o = u[:, None] * v[None, :]
    m = np.mean(x, axis=0)
    c = x - m[np.newaxis, :]
    d = np.sum((x[:, None, :] - x[None, :, :]) ** 2, axis=-1)
    return o, c, d
''', None),
    # found by a probe: a dot product over the stored slice is computed before the store
    # (read element by element it saw stored elements: four wrong answers)
    "dots_of_the_stored_slice": ('''
@program
def p(a: f32["N"], A: f32["N", "N"], B: f32["M", "N"], x: f32["N"]) -> tuple[f32["N"], f32["N", "N"], f32["M", "N"], f32["N"]]:
    a[1:] = a[1:] - np.dot(a[1:], a[1:])
    a[1:] = a[1:] + np.sum(a[:1])
    a[:] = a - np.mean(a)
    for k in range(N):
        for j in range(k):
            A[:, k] -= np.dot(A[:, j], A[:, k]) * A[:, j]
        A[:, k] /= np.sqrt(np.dot(A[:, k], A[:, k]))
    for k in range(N):
        B[:, k] = B[:, k] / np.sqrt(np.dot(B[:, k], B[:, k]))
    for k in range(2):
        x[k:] = A[k:, k:] @ x[k:]
    return a, A, B, x
''', None),
    # bounds whose least value needs the inner loop's bound first (was asserted wrongly)
    "bounds_of_nested_loops": ('''
@program
def p(x: f32["N"], a: f32["N"]) -> tuple[f32["N", "N"], f32["N"]]:
    out = np.zeros((N, N), dtype=np.float32)
    for i in range(N):
        for j in range(i + 1):
            out[i, j:i + 1] += x[j:i + 1] - x[:i + 1 - j]
    y = np.flip(a).copy()
    a[0] = 9.0
    return out, y * 1.0 + a
''', None),
    # boolean masks of the tensor's shape, and numpy's var and std
    "masks_and_spreads": ('''
@program
def p(x: f32["M", "N"], y: f32["M", "N"]) -> tuple[f32["M", "N"], f32["N"], f32["M"], f32, f32["M", 1]]:
    x[(x > 0.5) & (y < 0.0)] = 2.0
    x[x < -1.0] += 1.0
    x[~(y > x) | (x == 0.0)] = -3.0
    return x, np.std(y, axis=0), y.var(axis=1), np.std(y), np.var(y, axis=1, keepdims=True)
''', None),
    # np.where of tensors: numpy's select, broadcast (a row, a number), on slices, of masks
    "where_of_tensors": ('''
@program
def p(x: f32["M", "N"], y: f32["M", "N"], b: f32["N"]) -> tuple[f32["M", "N"], f32["M", "N"]]:
    z = np.where(x > 0.0, x, 0.01 * x)
    w = np.where((x > y) & ~(y >= 0.5), y, b) + np.where(b > 0, 1.0, -1)
    for i in range(M):
        y[i] = np.where(y[i] < 0.0, -y[i], y[i] * 2.0)
    y[1:, :] = np.where(y[:-1, :] > 1.0, y[1:, :], 0.0)
    return z + w, y
''', None),
    # a mask of a tensor's leading axes selects rows (a probe's, R: it was applied along
    # the last axis); a 1-D mask store reading what the mask selects
    "masks_of_rows": ('''
@program
def p(B: f32["M", "N"], x: f32["M"], r: f32["N"]) -> tuple[f32["M", "N"], f32["N"]]:
    m = x > 0.0
    B[m] = 0.0
    B[x < -0.5] *= 2.0
    B[x > 0.5] = B[x > 0.5] + 1.0
    r[r > 0.0] = r[r > 0.0] ** 2
    return B, r
''', None),
    # a mask's value that reads the tensor (numpy computes the number first; was refused)
    "masks_valued_by_the_tensor": ('''
@program
def p(x: f32["N"], A: f32["M", "N"]) -> tuple[f32["N"], f32["M", "N"]]:
    x[x < 0.0] = x[-1]
    x[x > 0.5] += x[0] * 2.0
    A[A < 0.0] = A[0, 0] + A[-1, -1]
    A[~(A < 0.3)] -= A[0, 0]
    return x, A
''', None),
    # forms a probe of NPBench-style kernels (P, 2026-11-26) found refused: np.logical_and,
    # _or, _not (conditions, of masks element by element); a size local read off a shape in
    # an allocation (conv2d_bias's `C_out = w.shape[1]`); a batched product's reduction
    # (attention's scores); a view bound again to new values (vadv's `col = d[:, k] + col`);
    # a mask read under the same mask (nbody's `r[r > 0] = r[r > 0] ** -1.5`); `**` of a
    # number that is no constant (deriche's `2.0 ** (-alpha)`)
    "npbench_probe_forms": ('''
@program
def p(x: f32["M", "N"], w: f32["N", "M"], q: f32["M", "N", "N"], d: f32["M", "N"], alpha: f32) -> \
        tuple[f32["M", "N"], f32["M", "M"], f32["M", "N", 1], f32["M", "N"], f32["M", "N"], f32["M"]]:
    x[np.logical_and(x > -0.5, np.logical_not(x > 0.5))] = 0.25
    x[np.logical_or(x < -1.0, x > 1.0)] *= 0.5
    c_out = w.shape[1]
    out = np.empty((M, c_out), dtype=np.float32)
    out[:, :] = x @ w
    s = q @ np.transpose(q, (0, 2, 1))
    top = np.max(s, axis=-1, keepdims=True)
    acc = np.empty((M, N), dtype=np.float32)
    col = d[:, 0]
    acc[:, 0] = col
    for k in range(1, N):
        col = d[:, k] + col
        acc[:, k] = col
    r = d * d + 0.5
    r[r > 1.0] = r[r > 1.0] ** (-1.5)
    # under the same mask and at fixed elements, which numpy reads before it stores (a
    # probe: refused, 'unsupported index expression')
    r[r > 0.75] = r[r > 0.75] + r[0, 0] - r[M - 1, 1]
    b1 = 2.0 ** (-alpha)
    y = np.empty((M,), dtype=np.float32)
    for i in range(M):
        if np.logical_and(d[i, 0] > 0.0, i > 0):
            y[i] = d[i, 0] * b1 + 2 ** (i % 3)
        else:
            y[i] = np.abs(d[i, 0]) ** alpha
    return x, out, top, acc, r, y
''', None),
    # masks bound to names (1.0 and 0.0, read as conditions, under `*`, summed) and
    # reductions of what a mask selects (`data[m].mean()`, bound to a name first too:
    # NPBench's azimint_naive); the mean of none is NaN, as numpy's
    "masks_bound_and_selections": ('''
@program
def p(x: f32["M", "N"], y: f32["M", "N"], r: f32["N"]) -> tuple[f32["M", "N"], f32, f32, f32, f32["M", "N"], f32["M"]]:
    m = (x > 0.0) & ~(y > 0.5)
    n = np.logical_or(m, y < -1.0)
    a = np.where(n, x, y) * m
    c = np.sum(m)
    sel = x[m]
    s = sel.sum() + sel.mean()
    t = np.mean(y[n]) + y[~n].sum()
    x[m] = 0.0
    rmax = r.max()
    res = np.zeros((M,), dtype=np.float32)
    for i in range(M):
        r1 = rmax * i / M
        r2 = rmax * (i + 1) / M
        inside = np.logical_and(r1 <= r, r < r2)
        values = r[inside]
        res[i] = values.mean()
    return a, c, s, t, x, res
''', None),
    # views that numpy and a copy tell apart (written through, or their memory written
    # after them: refused before) read and write the memory they view, as numpy's
    "views_written": ('''
@program
def p(A: f32["M", "N"], x: f32["N"], B: f32["N", "N"]) -> tuple[f32["M", "N"], f32["M"], f32["N"], f32["N", "N"]]:
    t1 = A[::-1]
    t1 *= 2.0
    col = A[:, 0]
    col += 1.0
    c = A[:, 0]
    A[0, 0] = 5.0
    y = np.flip(x)
    x[0] = 9.0
    for i in range(N):
        r = B[i, ::-1]
        r[0] = r[N - 1] + 1.0
        r += 0.5
    return A, c * 1.0, y * 1.0, B
''', None),
    # more of numpy's forms NPBench-style kernels use: np.linalg.norm (with axis,
    # keepdims), np.mod, np.remainder, np.floor_divide; np.diag (of a vector, of a square
    # matrix: a view), np.tril, np.triu (k), np.trace; loops over rows (`for a, b in
    # zip(x, y)`, `for i, row in enumerate(A)`, `for row in A`, a row a view)
    "norms_triangles_iterations": ('''
@program
def p(x: f32["M", "N"], v: f32["N"], A: f32["N", "N"], y: f32["N"]) -> tuple[f32, f32["M", 1], f32["M", "N"], \
        f32["N"], f32, f32["N", "N"], f32["N", "N"], f32, f32["M"], f32["M", "N"]]:
    a = np.linalg.norm(v) + np.linalg.norm(x)
    b = np.linalg.norm(x, axis=1, keepdims=True)
    c = np.mod(x, 0.7) + np.floor_divide(x, 0.3) + np.remainder(x, 1.5)
    d = np.diag(A)
    A[0, 0] = 5.0
    e = np.tril(A) + np.triu(A, 1) @ np.diag(v) + np.triu(A, k=-1)
    f = np.tril(A, -1) * 2.0
    s = 0.0
    for p_, q_ in zip(v, y):
        s += p_ * q_
    out = np.zeros((M,), dtype=np.float32)
    for i, row in enumerate(x):
        out[i] = np.sum(row) + s
    for row in x:
        row[0] = row[0] * 2.0
    return a, b, c, d * 1.0, np.trace(A), e, f, s, out, x
''', None),
    # numpy's functions with no term in the e-graph (lang.NO_TERM): their nests run as
    # written, on tensors and on elements, numpy's and math's spellings (NPBench's
    # arc_distance: np.arctan2)
    "functions_without_terms": ('''
@program
def p(x: f32["M", "N"], y: f32["M", "N"]) -> tuple[f32["M", "N"], f32["M", "N"], f32["M", "N"]]:
    a = np.arctan2(x, y) + np.hypot(x, y)
    b = np.empty((M, N), dtype=np.float32)
    for i in range(M):
        for j in range(N):
            b[i, j] = math.atan2(x[i, j], y[i, j]) + np.tan(x[i, j]) + np.sinh(y[i, j]) + \
                np.log1p(abs(x[i, j])) + np.floor(x[i, j] * 3.0) + math.hypot(x[i, j], 1.0)
    c = np.sign(x) * np.arctan(y) + np.expm1(x) + np.log10(np.abs(y) + 1.0) + np.ceil(x) + \
        np.arcsin(np.tanh(x)) + np.arccos(np.tanh(y)) + np.cosh(x) + np.log2(np.abs(x) + 1.0)
    return a, b, c
''', None),
    # running sums and products along an axis (np.cumsum, np.cumprod, the methods)
    "scans": ('''
@program
def p(x: f32["M", "N"], v: f32["N"]) -> tuple[f32["M", "N"], f32["N"], f32["M", "N"], f32["N"]]:
    a = np.cumsum(x, axis=1)
    b = np.cumsum(v)
    c = (x * 0.5).cumprod(axis=0)
    d = v.cumsum() + np.cumsum(v * 2.0, axis=0) + np.cumprod(v, axis=-1)
    return a, b, c, d
''', None),
    # a probe's (S): np.diag of a vector is a new matrix, not a view of the vector
    "diag_of_a_vector_is_new": ('''
@program
def p(x: f32["N"], A: f32["N", "N"]) -> tuple[f32["N", "N"], f32["N"]]:
    D = np.diag(x)
    d = np.diag(A)
    x[0] = 100.0
    A[0, 0] = 100.0
    return D, d * 1.0
''', None),
    # numpy's var and std with ddof (the sum of squared distances over max(n - ddof, 0):
    # at one element, 0 / 0 is NaN in both; past n, a probe's (R): inf, not a negative
    # variance); ddof an expression of sizes
    "spreads_with_ddof": ('''
@program
def p(x: f32["M", "N"]) -> tuple[f32["N"], f32["M"], f32, f32["M", 1], f32["N"], f32]:
    return np.std(x, axis=0, ddof=1), x.var(axis=1, ddof=1), np.var(x, ddof=2), \
        np.std(x, axis=-1, ddof=1, keepdims=True), np.var(x, axis=0, ddof=M - 1), np.std(x, ddof=7)
''', None),
    # reductions over several axes (a 2x2 max pool over a slice), flips along given axes
    "several_axes": ('''
@program
def p(x: f32["M", "N", "M"], A: f32["M", "N"], y: f32["M", "N", "N", "M"]) -> tuple[f32["M"], f32["N"], f32["M", 1, 1], f32, f32["M", "N"], f32["M", "N"], f32["M", "N", "N", "M"]]:
    out = np.zeros((M, N, N, M), dtype=np.float32)
    for i in range(N - 1):
        for j in range(N - 1):
            out[:, i, j, :] = np.max(y[:, i:i + 2, j:j + 2, :], axis=(1, 2))
    return (np.sum(x, axis=(1, 2)), np.max(x, axis=(0, -1)), np.mean(x, axis=(1, 2), keepdims=True),
            np.min(x, axis=(0, 1, 2)), np.flip(A, axis=0) + np.flip(A, 1), np.flip(A, (0, 1)) * 1.0, out)
''', None),
    # a mask reading x at other elements (through .T, np.flip, an element) is computed
    # whole before any store, as numpy does (it was evaluated while storing: a probe's)
    "masks_reading_other_elements": ('''
@program
def p(x: f32["N", "N"], a: f32["N", "N"], z: f32["N"]) -> tuple[f32["N", "N"], f32["N", "N"], f32["N"]]:
    x[x.T > 0.0] = -1.0
    b = a * 1.0
    b[(b > -2.0) & (np.flip(b) < 0.5)] += 3.0
    z[z > z[0]] = 0.0
    return x, b, z
''', None),
    "products_kept_whole": ('''
@program
def p(A: f32["M", "N"], B: f32["N", "M"], v: f32["M"]) -> tuple[f32["M", "M"], f32["M", "N"]]:
    C = A[:, 1:] @ B[1:, :]
    w = v @ A
    A -= 2.0 * np.outer(v, w)
    return C, A
''', None),
}

# numpy ports of PolyBench kernels written the way NPBench writes them (slices, np.dot of
# slices, chained stores, np.flip, np.outer, dtype=x.dtype)
NPBENCH = {
    "covariance": ('''
@program
def p(float_n: f32, data: f32["N", "M"]) -> f32["M", "M"]:
    mean = np.mean(data, axis=0)
    data -= mean
    cov = np.zeros((M, M), dtype=data.dtype)
    for i in range(M):
        cov[i:M, i] = cov[i, i:M] = data[:, i] @ data[:, i:M] / (float_n - 1.0)
    return cov
''', None),
    "durbin": ('''
@program
def p(r: f32["N"]) -> f32["N"]:
    y = np.empty_like(r)
    alpha = -r[0]
    beta = 1.0
    y[0] = -r[0]
    for k in range(1, N):
        beta *= 1.0 - alpha * alpha
        alpha = -(r[k] + np.dot(np.flip(r[:k]), y[:k])) / beta
        y[:k] += alpha * np.flip(y[:k])
        y[k] = alpha
    return y
''', None),
    "lu_np": ('''
@program
def p(A: f32["N", "N"]) -> f32["N", "N"]:
    for i in range(N):
        for j in range(i):
            A[i, j] -= A[i, :j] @ A[:j, j]
            A[i, j] /= A[j, j]
        for j in range(i, N):
            A[i, j] -= A[i, :i] @ A[:i, j]
    return A
''', "spd"),
    "cholesky_np": ('''
@program
def p(A: f32["N", "N"]) -> f32["N", "N"]:
    A[0, 0] = np.sqrt(A[0, 0])
    for i in range(1, N):
        for j in range(i):
            A[i, j] -= np.dot(A[i, :j], A[j, :j])
            A[i, j] /= A[j, j]
        A[i, i] -= np.dot(A[i, :i], A[i, :i])
        A[i, i] = np.sqrt(A[i, i])
    return A
''', "spd"),
    "seidel": ('''
@program
def p(A: f32["N", "N"]) -> f32["N", "N"]:
    for t in range(0, 2):
        for i in range(1, N - 1):
            A[i, 1:-1] += (A[i - 1, :-2] + A[i - 1, 1:-1] + A[i - 1, 2:] + A[i, 2:] + A[i + 1, :-2] + A[i + 1, 1:-1] + A[i + 1, 2:])
            for j in range(1, N - 1):
                A[i, j] += A[i, j - 1]
                A[i, j] /= 9.0
    return A
''', None),
    "symm": ('''
@program
def p(alpha: f32, beta: f32, C: f32["M", "N"], A: f32["M", "M"], B: f32["M", "N"]) -> f32["M", "N"]:
    temp2 = np.empty_like(C[0, :])
    C *= beta
    for i in range(M):
        for j in range(N):
            C[:i, j] += alpha * B[i, j] * A[i, :i]
            temp2[j] = B[:i, j] @ A[i, :i]
        C[i, :] += alpha * B[i, :] * A[i, i] + alpha * temp2
    return C
''', None),
    "gemver": ('''
@program
def p(alpha: f32, beta: f32, A: f32["N", "N"], u1: f32["N"], v1: f32["N"], u2: f32["N"], v2: f32["N"], w: f32["N"], x: f32["N"], y: f32["N"], z: f32["N"]) -> tuple[f32["N", "N"], f32["N"], f32["N"]]:
    A += np.outer(u1, v1) + np.outer(u2, v2)
    x += beta * y @ A + z
    w += alpha * A @ x
    return A, x, w
''', None),
    "syr2k": ('''
@program
def p(alpha: f32, beta: f32, C: f32["N", "N"], A: f32["N", "M"], B: f32["N", "M"]) -> f32["N", "N"]:
    for i in range(N):
        C[i, :i + 1] *= beta
        for k in range(M):
            C[i, :i + 1] += (A[:i + 1, k] * alpha * B[i, k] + B[:i + 1, k] * alpha * A[i, k])
    return C
''', None),
    "ludcmp": ('''
@program
def p(A: f32["N", "N"], b: f32["N"]) -> tuple[f32["N"], f32["N"]]:
    x = np.zeros_like(b)
    y = np.zeros_like(b)
    for i in range(N):
        for j in range(i):
            A[i, j] -= A[i, :j] @ A[:j, j]
            A[i, j] /= A[j, j]
        for j in range(i, N):
            A[i, j] -= A[i, :i] @ A[:i, j]
    for i in range(N):
        y[i] = b[i] - A[i, :i] @ y[:i]
    for i in range(N - 1, -1, -1):
        x[i] = (y[i] - A[i, i + 1:] @ x[i + 1:]) / A[i, i]
    return x, y
''', "spd"),
    "fdtd": ('''
@program
def p(ex: f32["NX", "NY"], ey: f32["NX", "NY"], hz: f32["NX", "NY"], fict: f32["T"]) -> tuple[f32["NX", "NY"], f32["NX", "NY"], f32["NX", "NY"]]:
    for t in range(T):
        ey[0, :] = fict[t]
        ey[1:, :] -= 0.5 * (hz[1:, :] - hz[:-1, :])
        ex[:, 1:] -= 0.5 * (hz[:, 1:] - hz[:, :-1])
        hz[:-1, :-1] -= 0.7 * (ex[:-1, 1:] - ex[:-1, :-1] + ey[1:, :-1] - ey[:-1, :-1])
    return ex, ey, hz
''', None),
    "trmm_np": ('''
@program
def p(alpha: f32, A: f32["M", "M"], B: f32["M", "N"]) -> f32["M", "N"]:
    for i in range(M):
        for j in range(N):
            B[i, j] += np.dot(A[i + 1:, i], B[i + 1:, j])
    B *= alpha
    return B
''', None),
    "gesummv": ('''
@program
def p(alpha: f32, beta: f32, A: f32["N", "N"], B: f32["N", "N"], x: f32["N"]) -> f32["N"]:
    return alpha * A @ x + beta * B @ x
''', None),
    "mm2": ('''
@program
def p(alpha: f32, beta: f32, A: f32["NI", "NK"], B: f32["NK", "NJ"], C: f32["NJ", "NL"], D: f32["NI", "NL"]) -> f32["NI", "NL"]:
    D[:] = alpha * A @ B @ C + beta * D
    return D
''', None),
    "gemm_np": ('''
@program
def p(alpha: f32, beta: f32, C: f32["NI", "NJ"], A: f32["NI", "NK"], B: f32["NK", "NJ"]) -> f32["NI", "NJ"]:
    C[:] = alpha * A @ B + beta * C
    return C
''', None),
    "correlation": ('''
@program
def p(float_n: f32, data: f32["N", "M"]) -> f32["M", "M"]:
    mean = np.mean(data, axis=0)
    stddev = np.std(data, axis=0)
    stddev[stddev <= 0.1] = 1.0
    data -= mean
    data /= np.sqrt(float_n) * stddev
    corr = np.eye(M, dtype=data.dtype)
    for i in range(M - 1):
        corr[i + 1:M, i] = corr[i, i + 1:M] = data[:, i] @ data[:, i + 1:M]
    return corr
''', None),
    "floyd_warshall": ('''
@program
def p(path: f32["N", "N"]) -> f32["N", "N"]:
    for k in range(N):
        path[:] = np.minimum(path[:], np.add.outer(path[:, k], path[k, :]))
    return path
''', None),
    "outer_products": ('''
@program
def p(u: f32["N"], v: f32["M"]) -> tuple[f32["N", "M"], f32["N", "M"]]:
    return np.subtract.outer(u, v), np.maximum.outer(u, v) * 2.0
''', None),
}

SIZES = [{"M": 5, "N": 4}, {"M": 3, "N": 3}, {"M": 1, "N": 2}, {"M": 2, "N": 1}]


def _truth(src: str, dims: dict, args: list):
    """The program run as plain Python with numpy: its source, undecorated."""
    g = {"np": np, "zeros": lang.zeros, "empty": lang.empty, "f32": lang.f32, **dims}
    exec(compile(PRELUDE + src.replace("@program\n", ""), "<truth>", "exec"), g)
    return g["p"](*[a.copy() if isinstance(a, np.ndarray) else a for a in args])


def _copy(a):
    return a.copy() if isinstance(a, np.ndarray) else a


def _args(prog, dims, how, seed):
    rng = np.random.default_rng(seed)
    out = []
    for p in prog.params:
        if p.shape is None:  # (a float scalar)
            out.append(float(rng.uniform(0.5, 1.5)))
            continue
        shape = tuple(dims[d] for d in p.shape)
        a = rng.standard_normal(shape).astype(np.float32)
        if how == "spd" and len(shape) == 2 and shape[0] == shape[1]:
            a = (a @ a.T + 2.0 * shape[0] * np.eye(shape[0])).astype(np.float32)
        out.append(a)
    return out


def _close(got, want) -> bool:
    """Within 1e-4 relative error, NaN where numpy has NaN (a rank-deficient Gram-Schmidt)."""
    got, want = (got, want) if isinstance(want, tuple) else ((got,), (want,))
    if len(got) != len(want):
        return False
    for g, w in zip(got, want):
        g, w = np.asarray(g, dtype=np.float64), np.asarray(w, dtype=np.float64)
        if g.shape != w.shape or not np.array_equal(np.isnan(g), np.isnan(w)):
            return False
        ok = ~np.isnan(w)
        if rel_err(np.where(ok, g, 0.0), np.where(ok, w, 0.0)) >= 1e-4:
            return False
    return True


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_a_program_with_slices_computes_what_numpy_does(tmp_program, name):
    src, how = PROGRAMS[name]
    prog = tmp_program(PRELUDE + src)
    ran = 0
    for k, dims in enumerate(SIZES):
        dims = {d: v for d, v in dims.items() if any(d in (p.shape or ()) for p in prog.params)}
        args = _args(prog, dims, how, seed=k)
        try:
            want = _truth(src, dims, args)
        except (IndexError, ValueError):
            continue  # (numpy itself refuses the program at these sizes)
        with np.errstate(all="ignore"):
            ref = eqsat.reference(prog, *[_copy(a) for a in args])
            assert _close(ref, want), f"reference at {dims}"
            plan = eqsat.optimize(prog, dims, target="cpu")
            for backend in ("numpy", "triton") if k == 0 else ("numpy",):
                got = plan.run(*[_copy(a) for a in args], backend=backend)
                assert _close(got, want), f"{backend} at {dims}: {plan}"
        ran += 1
    assert ran >= 2


NPBENCH_SIZES = [{"M": 5, "N": 6, "NI": 4, "NJ": 5, "NK": 3, "NL": 6, "NX": 4, "NY": 5, "T": 3},
                 {"M": 2, "N": 3, "NI": 2, "NJ": 1, "NK": 3, "NL": 2, "NX": 2, "NY": 3, "T": 2}]


@pytest.mark.parametrize("name", sorted(NPBENCH))
def test_an_npbench_style_port_computes_what_numpy_does(tmp_program, name):
    src, how = NPBENCH[name]
    prog = tmp_program(PRELUDE + src)
    for k, sizes in enumerate(NPBENCH_SIZES):
        dims = {d: v for d, v in sizes.items() if any(d in (p.shape or ()) for p in prog.params)}
        rng = np.random.default_rng(k)
        args = [float(rng.uniform(0.5, 1.5)) if p.shape is None else
                rng.standard_normal(tuple(dims[d] for d in p.shape)).astype(np.float32) for p in prog.params]
        if how == "spd":
            a = args[next(i for i, p in enumerate(prog.params) if p.shape and len(p.shape) == 2)]
            a[:] = a @ a.T + 2.0 * a.shape[0] * np.eye(a.shape[0])
        want = _truth(src, dims, args)
        plan = eqsat.optimize(prog, dims, target="cpu")
        got = plan.run(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
        assert _close(got, want), f"{name} at {dims}: {plan}"


@pytest.mark.parametrize("name,matmuls", [("products_of_slices", 2), ("products_kept_whole", 2)])
def test_a_product_of_slices_is_a_matmul(tmp_program, name, matmuls):
    """A loop over `C[:, j] = A @ B[:, j]` is one matmul nest; `A[:, 1:] @ B[1:, :]` the
    library call on copies of the sections."""
    prog = tmp_program(PRELUDE + PROGRAMS[name][0])
    plan = eqsat.optimize(prog, {"M": 64, "N": 48}, target="h100")
    assert sum(k.kind == "matmul" for k in plan.kernels) >= matmuls, plan


def test_np_where_over_a_matmul_is_its_epilogue(tmp_program):
    prog = tmp_program(PRELUDE + '''
@program
def p(x: f32["M", "K"], w: f32["K", "N"]) -> f32["M", "N"]:
    h = x @ w
    return np.where(h > 0.0, h, np.exp(h) - 1.0)
''')
    plan = eqsat.optimize(prog, {"M": 64, "N": 48, "K": 32}, target="cpu")
    assert [k.kind for k in plan.kernels] == ["matmul"] and "select" in plan.kernels[0].epilogue, plan
    args = _args(prog, {"M": 64, "N": 48, "K": 32}, None, 0)
    h = args[0] @ args[1]
    np.testing.assert_allclose(plan.run(*args), np.where(h > 0, h, np.exp(h) - 1.0), rtol=1e-4, atol=1e-5)


def test_lu_with_slices_runs_compiled(tmp_program, monkeypatch):
    monkeypatch.setenv("EQSAT_COMPILE_LOOPS", "always")
    src, how = PROGRAMS["lu"]
    prog = tmp_program(PRELUDE + src)
    dims = {"N": 7}
    args = _args(prog, dims, how, seed=3)
    plan = eqsat.optimize(prog, dims, target="cpu")
    assert _close(plan.run(*[a.copy() for a in args]), _truth(src, dims, args))


@pytest.mark.parametrize("src,phrase", [
    # an index array (CSR's row pointers) as a bound
    ('''
@program
def p(vals: f32["N"], rows: f32["N"]) -> f32["N"]:
    out = np.zeros((N,), dtype=np.float32)
    for i in range(N - 1):
        out[i] = np.sum(vals[rows[i]:rows[i + 1]])
    return out
''', r"the slice bound `rows\[i( \+ 1)?\]` is read from a tensor \(an index array"),
    # a probe's (S): the name a row loop steps through is bound again in the loop (Python
    # steps through the first object; `x[k]` read the new one)
    ('''
@program
def p(x: f32["N"]) -> f32:
    s = 0.0
    for a in x:
        s += a
        x = x * 2.0
    return s
''', r"loops must be `for v in range\(n\)`"),
    # a part of a written view (a slice of a slice) is not rewritten onto its memory
    ('''
@program
def p(a: f32["M", "N"]) -> f32["M", "N"]:
    t = a[::-1]
    t[1:] = 0.0
    return a
''', r"`t = a\[::-1\]` is a view of the memory of 'a' in numpy, and 't' is written"),
    # at i = 0 numpy reads x[:-1]
    ('''
@program
def p(x: f32["N"]) -> f32["N"]:
    out = np.zeros((N,), dtype=np.float32)
    for i in range(N):
        out[i] = np.sum(x[:i - 1])
    return out
''', r"`x\[:i - 1\]`: the slice bound `i - 1` can be -1, where numpy counts from the end"),
    # a condition that does not bound it: `or`
    ('''
@program
def p(x: f32["N"]) -> f32["N"]:
    out = np.zeros((N,), dtype=np.float32)
    for i in range(N):
        if i > 0 or i == 0:
            out[i] = np.sum(x[:i - 1])
    return out
''', r"`x\[:i - 1\]`: the slice bound `i - 1` can be -1, where numpy counts from the end"),
    ('''
@program
def p(x: f32["N"]) -> f32["N"]:
    out = np.zeros((N,), dtype=np.float32)
    for i in range(N):
        k = i * i - 3
        out[i] = np.sum(x[k:])
    return out
''', r"the slice bound `k` may be negative"),
    ('''
@program
def p(x: f32["N"]) -> f32["N"]:
    out = np.zeros((N,), dtype=np.float32)
    out[::2] = x[1::-2]
    return out
''', r"a slice's step is a positive integer constant, or -1 over a whole axis"),
    # a probe's: the exchange makes b name the memory y views (plan [0, 2], numpy [0, 4])
    ('''
@program
def p(a: f32["N"], b: f32["N"]) -> f32["N"]:
    y = a[1:]
    for t in range(3):
        b[1:] = y * 2.0
        a, b = b, a
    return a
''', r"`y = a\[1:\]` is a view of the memory of 'a' in numpy, and that memory is written after it"),
    # numpy makes an integer array (the language has none)
    ('''
@program
def p(x: f32["M", "N"]) -> f32["M", "N"]:
    return x * np.where(x > 0, 1, 0)
''', r"`np.where\(x > 0, 1, 0\)`: np.where of tensors whose values are both integers makes an integer array"),
    # a mask bound to a name is numpy's bools: their sum is a logical or
    ('''
@program
def p(x: f32["M", "N"]) -> f32["M", "N"]:
    m = x > 0.0
    return x + (m + m)
''', r"'m' is a mask \(of numpy's bools\): it is read as a condition"),
])
def test_a_slice_numpy_reads_otherwise_is_refused(tmp_program, src, phrase):
    with pytest.raises(eqsat.ProgramError, match=r"prog_\d+\.py:\d+:\d+: .*" + phrase):
        tmp_program(PRELUDE + src)


def test_a_bound_on_a_size_under_a_condition_is_proved_there(tmp_program):
    """A probe's (R): `if k > 0: x[:k - 1]` was asserted `k - 1 >= 0` at the top of the
    function, false at k = 0 although the condition keeps the slice from running there."""
    src = '''
@program
def p(x: f32["N"], k: int) -> f32["N"]:
    out = np.zeros((N,), dtype=np.float32)
    if k > 0:
        out[:k - 1] = x[:k - 1] * 2.0
    return out
'''
    prog = tmp_program(PRELUDE + src)
    x = np.arange(5, dtype=np.float32)
    for k in (0, 1, 3):
        got = eqsat.optimize(prog, {"N": 5, "k": k}).run(x, k)
        np.testing.assert_array_equal(got, _truth(src, {"N": 5}, [x, k]))


def test_a_bound_that_needs_a_size_is_asserted(tmp_program):
    prog = tmp_program(PRELUDE + '''
@program
def p(x: f32["N"]) -> f32["N"]:
    out = np.zeros((N,), dtype=np.float32)
    out[:N - 4] = x[4:]
    return out
''')
    args = _args(prog, {"N": 7}, None, 0)
    plan = eqsat.optimize(prog, {"N": 7})
    want = args[0].copy()
    want[:3] = args[0][4:]
    want[3:] = 0.0
    np.testing.assert_array_equal(plan.run(*args), want)
    with pytest.raises(eqsat.ArgumentError, match=r"the program asserts `N - 4 >= 0`, false at N=3"):
        eqsat.optimize(prog, {"N": 3})
    prog = tmp_program(PRELUDE + '''
@program
def p(x: f32["N"], k: int) -> f32["N"]:
    out = np.zeros((N,), dtype=np.float32)
    out[k:] = x[k:]
    return out
''')
    x = np.arange(5, dtype=np.float32)
    np.testing.assert_array_equal(eqsat.optimize(prog, {"N": 5, "k": 2}).run(x, 2), [0, 0, 2, 3, 4])
    with pytest.raises(eqsat.ArgumentError, match=r"the program asserts `k >= 0`, false at k=-1"):
        eqsat.optimize(prog, {"N": 5, "k": -1})
