"""Python's other spellings of the language's forms (`eqsat/desugar.py`): `A[i][j]`,
`x[i, :]`, `x.shape[0]`, `len(x)`, `np.zeros_like`, numpy's and math's functions, `np.matmul` and
`np.dot`, `float(i)`, `np.float32(c)`, `np.inf` and `float("inf")`, `x[-1]`, `np.transpose`,
`x.copy()`, `np.ones` and `np.full`, `reversed(range(n))`, `range(max(a, b), min(c, d))`, `//=`, `%=`, `**=`, `continue`
`sum` of a generator, an element or row of an expression (`(x @ w)[i, j]`, `x.T[k]`), `np.add`/`multiply`/..., `np.square`, `np.clip`, `np.where` of scalars, a condition as a number (`s * (s > 0)`), and `np.sum`/`max`/`min`/`mean` (and the methods) of a tensor. Each
program runs on both backends against `reference`; the kept nest runs interpreted and
compiled."""
from __future__ import annotations

import math

import numpy as np
import pytest

import eqsat
from conftest import random_args, rel_err


def close(got, want) -> bool:
    got, want = (got, want) if isinstance(want, tuple) else ((got,), (want,))
    return len(got) == len(want) and all(rel_err(g, w) < 1e-5 for g, w in zip(got, want))

PRELUDE = "import math\nimport numpy as np\nfrom numpy import exp as nexp\nfrom math import sqrt as msqrt\n"

FORMS = {
    "chained_subscripts": ('''
@program
def p(A: f32["N", "N"], x: f32["N"]) -> tuple[f32["N"], f32["N", "N"]]:
    y = zeros((N,))
    B = empty((N, N))
    for i in range(N):
        for j in range(N):
            y[i] += A[i][j] * x[j]
            B[i][j] = A[j][i] * 2.0
    return y, B
''', ["matmul", "pointwise"]),
    "whole_slices": ('''
@program
def p(x: f32["M", "K"], w: f32["K", "N"], b: f32["N"]) -> f32["M", "N"]:
    y = np.empty((M, N), dtype=np.float32)
    for i in range(M):
        y[i, :] = relu(x[i, :] @ w[:, :] + b[:])
    return y
''', ["matmul"]),
    "sum_of_a_generator": ('''
@program
def p(x: f32["M", "K"], w: f32["N", "K"], b: f32["N"]) -> tuple[f32["M", "N"], f32["M"], f32]:
    y = np.empty((M, N), dtype=np.float32)
    r = np.empty((M,), dtype=np.float32)
    for i in range(M):
        for j in range(N):
            y[i, j] = max(sum(x[i, k] * w[j, k] for k in range(K)) + b[j], 0.0)
    for i in range(M):
        if sum(x[i, k] for k in range(K) if x[i, k] > 0) > 1.0:
            r[i] = sum(sum(x[i, k] * x[i2, k] for k in range(K)) for i2 in range(i + 1))
        else:
            r[i] = sum((x[i, k] for k in range(1, K, 2)), 0.5)
    t = sum(x[i, k] for i in range(M) for k in range(i % K, K))
    return y, r, t
''', None),
    "numpy_idioms": ('''
@program
def p(x: f32["N"], a: f32["N", "M"], w: f32["N", "K"]) -> tuple[f32["N"], f32["M", "K"], f32, f32["N"], f32["N"]]:
    acc = np.float32(0.0)
    m = -np.inf
    lo = float("inf")
    for i in range(N):
        acc += np.float32(0.5) * x[i] + math.pi
        m = max(m, x[i])
        lo = min(lo, x[i])
    y = x.copy()
    for i in range(1, N):
        y[i] += y[i - 1] - x[-1] + y[-2]
    ones = np.ones((N,), dtype=np.float32)
    full = np.full((N,), m - lo)
    xc = np.copy(x)
    for i in range(N):
        ones[i] *= x[i]
        full[i] += xc[i]
    return y, np.transpose(a) @ w + np.transpose(a, axes=(1, 0)) @ w, acc + m, ones, full
''', None),
    "clamped_bounds": ('''
@program
def p(A: f32["N", "N"], x: f32["N"], w: f32["K"]) -> tuple[f32["N", "N"], f32["N"]]:
    B = zeros((N, N))
    for s in range(2 * N - 1):
        for i in range(max(0, s - N + 1), min(s + 1, N)):
            B[i, s - i] = A[i, s - i] + (B[i - 1, s - i] if i > 0 else 0.0) + (B[i, s - i - 1] if s - i > 0 else 0.0)
    y = zeros((N,))
    for i in range(N):
        for k in range(max(0, i - K + 1), min(i + 1, N)):
            y[i] += w[i - k] * x[k]
    return B, y
''', None),
    "reductions": ('''
@program
def p(x: f32["N", "M"], v: f32["M"]) -> tuple[f32["N", "M"], f32, f32["M"], f32["N"], f32]:
    y = np.exp(x - np.max(x))
    s = np.sum(y, axis=1)
    for i in range(N):
        for j in range(M):
            y[i, j] = y[i, j] / s[i]
    out = np.empty((N,), dtype=np.float32)
    for i in range(N):
        out[i] = x[i].mean() + np.min(x[i]) + x[i].max() + np.sum(x[i] * x[i])
    return y, np.mean(x) + v.sum(), np.max(x, axis=0) + np.min(x, 0), out, x.sum(axis=-1).max()
''', None),
    "sizes_from_shapes": ('''
@program
def p(A: f32["M", "N"], x: f32["N"]) -> f32["M", "N"]:
    M, N = A.shape
    assert M >= 2 and N % 1 == 0, "at least two rows"
    n = len(x)
    B = np.zeros([M, n], np.float32)
    for i in range(M):
        for j in range(n):
            B[i, j] = A[i, j] * x[j]
    return B
''', ["pointwise"]),
    "numpy_arithmetic": ('''
@program
def p(x: f32["N", "M"], b: f32["M"]) -> tuple[f32["N", "M"], f32["N", "M"]]:
    y = np.empty((N, M), dtype=np.float32)
    for i in range(N):
        for j in range(M):
            y[i, j] = np.where(x[i, j] > 0.0, np.square(x[i, j]), np.clip(x[i, j], -0.5, 0.5)) + np.power(b[j], 2)
    return np.add(np.multiply(y, 2.0), np.clip(x, -1.0, 1.0)), np.divide(np.subtract(x, b), 3.0)
''', ["pointwise", "pointwise"]),
    "numpy_user_idioms": ('''
@program
def p(A: f32["M", "N"], x: f32["N"], w: f32["N", "K"]) -> tuple[f32["M"], f32["N"], f32["M", "K"]]:
    m, n = A.shape
    B, N = A.shape
    x = x.copy()
    y = np.zeros(m, dtype=np.float32)
    for i in range(m):
        for j in range(n):
            y[i] += A[i, j] / float(n - j)
    for i in range(1, len(x)):
        x[i] = x[i - 1] + x[i]
    h = A @ w
    for i in range(h.shape[0]):
        for j in range(h.T.shape[0]):
            h[i][j] = max(h[i][j], 0.0)
    return y, x, h
''', None),
    "shapes": ('''
@program
def p(x: f32["N", "M"]) -> f32["N", "M"]:
    y = np.zeros_like(x)
    z = np.empty(x.shape)
    for i in range(x.shape[0]):
        for j in range(x.shape[-1]):
            z[i, j] = x[i, j] * 2.0
    for i in range(len(x)):
        for j in range(len(z[i])):
            y[i, j] = z[i, j] + float(i) / float(len(x))
    return y
''', None),
    "library_functions": ('''
@program
def p(x: f32["N"]) -> f32["N"]:
    y = empty((N,))
    for i in range(N):
        y[i] = np.sqrt(np.abs(x[i])) + nexp(-x[i]) + np.maximum(x[i], 0.0) + np.tanh(x[i]) + \\
            math.log(1.0 + math.fabs(x[i])) + msqrt(np.minimum(x[i] * x[i], 4.0))
    return y
''', ["pointwise"]),
    "matmul_calls": ('''
@program
def p(a: f32["N", "K"], b: f32["K", "M"], v: f32["M"]) -> tuple[f32["N", "M"], f32["N"]]:
    c = np.matmul(a, b)
    return np.maximum(c, 0.0), np.dot(c, v)
''', None),
    "reversed_and_augmented": ('''
@program
def p(x: f32["N"]) -> f32["N"]:
    y = empty((N,))
    for i in reversed(range(N)):
        y[i] = x[i] * 10.0
        y[i] //= 3.0
        y[i] %= 5.0
    for i in reversed(range(1, N)):
        y[i] **= 2
        y[i - 1] += y[i] * 0.01
    return y
''', None),
    "continue": ('''
@program
def p(x: f32["N"], A: f32["N", "N"]) -> tuple[f32["N"], f32["N"]]:
    y = zeros((N,))
    s = zeros((N,))
    for i in range(N):
        if x[i] < 0.0:
            continue
        y[i] = x[i] * 2.0
        for j in range(N):
            if j == i:
                continue
            elif A[i, j] > 1.0:
                s[i] += 1.0
                continue
            s[i] += A[i, j]
        y[i] += s[i]
    return y, s
''', None),
    "subscripted_expressions": ('''
@program
def p(x: f32["M", "K"], w: f32["K", "N"], b: f32["N"]) -> tuple[f32["M", "N"], f32["N"], f32["K", "M"]]:
    y = empty((M, N))
    for i in range(M):
        for j in range(N):
            y[i, j] = (x @ w)[i, j] + b[j]
    r = empty((N,))
    for j in range(N):
        r[j] = relu(x @ w)[1, j] if j > 1 else (np.exp(x) @ w)[0][j]
    t = empty((K, M))
    for k in range(K):
        t[k] = x.T[k] * 2.0 + transpose(x, (1, 0))[k, 0]
    return y, r, t
''', None),
    "row_of_a_product": ('''
@program
def p(x: f32["M", "K"], w: f32["K", "N"], b: f32["N"]) -> f32["N"]:
    return relu(x @ w + b)[M - 1]
''', ["matmul"]),
    # np.where over products with batch axes (on both operands, on one only): element by
    # element, the products' accumulators (refused: "comparisons are between scalars")
    "where_of_batched_products": ('''
@program
def p(x: f32["B", "M", "K"], w: f32["B", "K", "N"], v: f32["M", "K"]) -> tuple[f32["B", "M", "N"], f32["B", "M", "N"]]:
    return np.where(x @ w > 0.5, x @ w, -1.0), np.where(np.matmul(v, w) < 0, 0.0, v @ w)
''', ["matmul", "matmul"]),
    # a transpose of every axis spelled as a call (`transpose(a, (1, 0))`, `np.swapaxes(a, 0,
    # 1)`) is the view a.T, also where a column is stored (was refused: "this slice is not
    # supported here")
    "transpose_calls_in_column_stores": ('''
@program
def p(a: f32["K", "M"], b: f32["K", "N"]) -> tuple[f32["M", "N"], f32["M", "N"]]:
    o = np.zeros((M, N))
    q = np.zeros((M, N))
    for n in range(N):
        o[:, n] = transpose(a, (1, 0)) @ b[:, n]
        q[:, n] = np.swapaxes(a, 0, 1) @ b[:, n] + 1.0
    return o, q
''', None),
    # numpy's sum of a product of rows in both parts of a conditional expression (the one in
    # the branch is evaluated under the condition: read element by element, not computed
    # into a tensor bound on one branch; it was refused)
    "row_dot_in_a_conditional": ('''
@program
def p(A: f32["M", "K"], B: f32["N", "K"]) -> f32["M", "N"]:
    y = zeros((M, N))
    for r in range(M):
        for c in range(N):
            y[r, c] = np.sum(A[r, :] * B[c, :]) if np.sum(A[r, :] * B[c, :]) > 0.0 else 0.0
    return y
''', ["matmul"]),
    # np.where computes both values whole: an einsum in them is no einsum under a condition
    # (it was refused: "comparisons are between scalars")
    "where_of_einsums": ('''
@program
def p(x: f32["M", "K"], w: f32["K", "N"]) -> f32["M", "N"]:
    return np.where(np.einsum("ik,kj->ij", x, w) > 0, np.einsum("ik,kj", x, w), 0.0)
''', ["matmul"]),
    # a comparison of an einsum's result used as a mask (`h * (h > 0)`): its shape is the
    # spec's (it was refused: "comparisons are between scalars"; an independent generator's)
    "mask_of_an_einsum": ('''
@program
def p(x: f32["M", "K"], w: f32["K", "N"], s: f32, b: f32["N"]) -> f32["M", "N"]:
    h = np.einsum("ik,kj->ij", x, w)
    g = np.einsum("ik,kj", x, w) + s * b
    return (h - b) * ((h - b) > 0.0) + g * (g < 1.0)
''', ["matmul"]),
    # np.where of numbers in a loop stays guarded: its value reads x[i - 1] only where i > 0
    "where_of_numbers_guards_its_values": ('''
@program
def p(x: f32["N", "M"]) -> f32["N"]:
    y = empty((N,))
    for i in range(N):
        y[i] = np.where(i > 0, np.sum(x[i - 1, :]), 0.0)
    return y
''', None),
    # a condition used as a number (1.0 where it holds): relu as `s * (s > 0)` in loops and
    # `h * (h > 0)` of tensors, a mask's and, a count of matches
    # strip-mined loops, each tile loop right around its loop (`desugar._untiled`): whole
    # tiles (`ii + 4`, K a multiple of 4 here) and clamped ones (`min(ii + 3, M)`, M = 5)
    "tiled_loops": ('''
@program
def p(x: f32["M", "K"], w: f32["K", "N"], b: f32["N"]) -> f32["M", "N"]:
    y = empty((M, N))
    for ii in range(0, M, 3):
        for i in range(ii, min(ii + 3, M)):
            for jj in range(0, N, 2):
                for j in range(jj, min(N, jj + 2)):
                    s = 0.0
                    for kk in range(0, K, 4):
                        for k in range(kk, kk + 4):
                            s += x[i, k] * w[k, j]
                    y[i, j] = max(s + b[j], 0.0)
    return y
''', ["matmul"]),
    # three spellings a matmul+epilogue generator's probe found unfused (session 28): the
    # epilogue under `if k == K - 1` of an accumulation into the output buffer (the loop's
    # last statement moves after it: normalize._sunk), a k axis split in two k-outer nests
    # (peel._absorb_sum), a peeled first term with its product grouped otherwise
    "epilogue_guard_on_output": ('''
@program
def p(x: f32["M", "K"], w: f32["K", "N"], b: f32["N"]) -> f32["M", "N"]:
    y = zeros((M, N))
    for i in range(M):
        for j in range(N):
            for k in range(K):
                y[i, j] += x[i, k] * w[k, j]
                if k == K - 1:
                    y[i, j] = relu(y[i, j] + b[j])
    return y
''', ["matmul"]),
    # the epilogue inside the inner loop of a k-outer accumulation (`for k: for i: C[i, j] +=
    # ...; if k == K - 1: ...`): moved out of that loop, then after the k loop
    # (normalize._tail_out), where iteration i touches only its own elements
    "epilogue_guard_in_inner_loop": ('''
@program
def p(x: f32["M", "K"], w: f32["K", "N"], b: f32["M"]) -> f32["M", "N"]:
    y = zeros((M, N))
    for j in range(N):
        for k in range(K):
            for i in range(M):
                y[i, j] += x[i, k] * w[k, j]
                if k == K - 1:
                    t = y[i, j] + b[i]
                    y[i, j] = gelu(t)
    return y
''', ["matmul"]),
    # the same where the epilogue reads the next element, which its last term reaches only
    # later in that iteration: kept as written (moving it would read the finished value)
    "epilogue_guard_reading_ahead": ('''
@program
def p(x: f32["M", "K"], w: f32["K", "N"]) -> f32["M", "N"]:
    y = zeros((M + 1, N))
    for j in range(N):
        for k in range(K):
            for i in range(M):
                y[i, j] += x[i, k] * w[k, j]
                if k == K - 1:
                    y[i, j] = y[i, j] + 0.5 * y[i + 1, j]
    out = empty((M, N))
    for i in range(M):
        for j in range(N):
            out[i, j] = y[i, j]
    return out
''', None),
    "split_k_outer_nests": ('''
@program
def p(x: f32["M", "K"], w: f32["K", "N"]) -> f32["M", "N"]:
    y = zeros((M, N))
    for k in range(0, 2):
        for i in range(M):
            for j in range(N):
                y[i, j] += x[i, k] * w[k, j]
    for k in range(2, K):
        for i in range(M):
            for j in range(N):
                y[i, j] += x[i, k] * w[k, j]
    return y
''', ["matmul"]),
    "peeled_term_regrouped": ('''
@program
def p(x: f32["M", "K"], w: f32["K", "N"], al: f32) -> f32["M", "N"]:
    y = empty((M, N))
    for i in range(M):
        for j in range(N):
            s = al * x[i, 0] * w[0, j]
            for k in range(1, K):
                s += al * w[k, j] * x[i, k]
            y[i, j] = relu(s)
    return y
''', ["matmul"]),
    # a classic tiled matmul: tile loops outside the point loops (`_Tiles.band`: every access
    # to C reads or writes C[i, j], k's tile and k form one run)
    "tiled_band": ('''
@program
def p(x: f32["M", "K"], w: f32["K", "N"]) -> f32["M", "N"]:
    y = zeros((M, N))
    for ii in range(0, M, 2):
        for jj in range(0, N, 3):
            for kk in range(0, K, 3):
                for i in range(ii, min(ii + 2, M)):
                    for j in range(jj, min(jj + 3, N)):
                        for k in range(kk, min(kk + 3, K)):
                            y[i, j] += x[i, k] * w[k, j]
    return y
''', ["matmul"]),
    # a tiled in-place update reading another element of what it writes: kept as written,
    # in the tiled order (the untiled one would read other values)
    "tiled_in_place": ('''
@program
def p(x: f32["M", "N"]) -> f32["M", "N"]:
    for ii in range(0, M, 2):
        for jj in range(0, N, 3):
            for i in range(ii, min(ii + 2, M)):
                for j in range(jj, min(jj + 3, N)):
                    x[i, j] = x[i, j] + (x[i, j - 1] if j > 0 else 0.0)
    return x
''', None),
    # `np.ndarray(shape, dtype=np.float32)` allocates as np.empty does (NPBench's vadv)
    "ndarray_buffer": ('''
@program
def p(x: f32["M", "N"]) -> f32["M", "N"]:
    y = np.ndarray((M, N), dtype=np.float32)
    for i in range(M):
        for j in range(N):
            y[i, j] = x[i, j] * 2.0 + 1.0
    return y
''', ["pointwise"]),
    "condition_as_number": ('''
@program
def p(x: f32["M", "K"], w: f32["K", "N"], b: f32["N"]) -> tuple[f32["M", "N"], f32["M", "N"], f32["M", "N"], f32]:
    y = empty((M, N))
    for i in range(M):
        for j in range(N):
            s = 0.0
            for k in range(K):
                s += x[i, k] * w[k, j]
            y[i, j] = s * (s > 0)
    h = x @ w
    c = 0.0
    for i in range(M):
        for k in range(K):
            c += (x[i, k] > 0) + 2.0 * (x[i, k] < -1 and x[i, k] > -3)
    return y, h * (h > 0), ((h > 0) & (b > 0)) * b - (h <= 0) / 2.0, c
''', ["matmul", "matmul", "loop"]),
    # `...` in an index, np.expand_dims (axis, negative axis, axis=) and np.squeeze of an
    # axis of extent 1 (ML code's broadcasting helpers)
    "ellipsis_and_axis_helpers": ('''
@program
def p(x: f32["M", "N"], s: f32["M"], b: f32["N"]) -> tuple[f32["M", "N"], f32["M", "N"]]:
    m = np.max(x, axis=1, keepdims=True)
    r = np.squeeze(m, 1)
    y = x * np.expand_dims(s, 1) + np.expand_dims(s, axis=-1) * 2.0 + np.expand_dims(b, 0) + b[None, ...]
    return y, x - m + s[..., None] + r[:, None] * x[..., :]
''', None),
    # a condition of elements used as a number where desugar does not know the shapes yet
    # (h from an einsum): the front end reads it (a campaign's refusal)
    "condition_of_elements_as_number": ('''
@program
def p(x: f32["M", "K"], w: f32["K", "N"]) -> f32["M", "N"]:
    h = np.einsum('ik,kj->ij', x, w)
    y = np.zeros((M, N), np.float32)
    for i in range(M):
        for j in range(N):
            y[i, j] = ((1.0 / K) * (h[i, j])) * (((1.0 / K) * (h[i, j])) > 0)
    return y
''', ["matmul"]),
    # `.clip` of an expression (its shape known only once the einsum is read)
    "clip_of_expression": ('''
@program
def p(x: f32["M", "K"], w: f32["N", "K"], r: f32["M", "N"], b: f32["N"]) -> f32["M", "N"]:
    return (b + np.einsum('ik,jk->ij', x, w) + r).clip(-0.5, 0.5)
''', ["matmul"]),
}


def runs_as_written(prog, dims: dict, seed: int):
    """The optimized plan, having checked that it computes what the program does on both
    backends."""
    args = random_args(prog, dims, seed=seed)
    plan = eqsat.optimize(prog, dims)
    for backend in ("numpy", "triton"):
        assert close(plan.run(*args, backend=backend), eqsat.reference(prog, *args)), backend
    return plan


@pytest.mark.parametrize("name", sorted(FORMS))
def test_python_form(tmp_program, name):
    src, kinds = FORMS[name]
    prog = tmp_program(PRELUDE + src)
    dims = {d: n for d, n in {"N": 7, "M": 5, "K": 4, "B": 3}.items() if d in prog.dims}
    args = random_args(prog, dims, seed=4)
    want = eqsat.reference(prog, *args)
    plan = eqsat.optimize(prog, dims, target="cpu")
    for backend in ("numpy", "triton"):
        assert close(plan.run(*args, backend=backend), want), (name, backend, plan)
    if kinds is not None:
        assert [k.kind for k in plan.kernels] == kinds, plan


def test_a_sum_of_a_generator_is_a_matmul(tmp_program):
    prog = tmp_program(PRELUDE + FORMS["sum_of_a_generator"][0].replace(
        "tuple[f32[\"M\", \"N\"], f32[\"M\"], f32]", "f32[\"M\", \"N\"]").replace("return y, r, t", "return y"))
    plan = eqsat.optimize(prog, {"M": 64, "N": 48, "K": 32}, target="cpu")
    assert [(k.kind, k.epilogue) for k in plan.kernels] == [("matmul", ["max", "add"])], plan


KEPT = '''
@program
def p(A: f32["N", "N"], x: f32["N"], T: int) -> tuple[f32["N"], f32["N", "N"]]:
    y = np.zeros_like(x)
    B = np.zeros(A.shape)
    s = 0.0
    for t in reversed(range(T)):
        for i in range(1, len(x)):
            if x[i] > 0.7:
                continue
            s = s * 0.5 + np.tanh(A[i][i - 1]) + math.exp(-abs(y[i - 1])) + float(i) / float(A.shape[0])
            if s > 2.0:
                s -= msqrt(s)
                continue
            y[i] = y[i - 1] * 0.5 + nexp(-s) + np.maximum(s, 0.25)
            B[i][i] = s
            B[i][i] //= 0.5
            B[i - 1][i] %= 0.3
    return y, B
'''


@pytest.mark.parametrize("policy", ["never", "always"])
def test_python_forms_in_a_kept_nest(tmp_program, monkeypatch, policy):
    """A recurrence stays a loop nest: its source, with the rewritten forms, runs as Python
    and compiled by numba (the `eqsat_lib_` names bound in both)."""
    monkeypatch.setenv("EQSAT_COMPILE_LOOPS", policy)
    prog = tmp_program(PRELUDE + KEPT)
    args = random_args(prog, {"N": 9, "T": 3}, seed=1)
    args[1] = np.abs(args[1])
    want = eqsat.reference(prog, *args)
    plan = eqsat.optimize(prog, {"N": 9, "T": 3}, target="cpu")
    assert "loop" in [k.kind for k in plan.kernels], plan
    for backend in ("numpy", "triton"):
        assert close(plan.run(*args, backend=backend), want), (backend, plan)


EINSUMS = {  # spec and operands -> the kernels expected (None: any), all against numpy's own einsum
    "matmul": ('np.einsum("ik,kj->ij", a, b)', 'a: f32["M", "K"], b: f32["K", "N"]', ["matmul"]),
    "transposed_operand": ('np.einsum("ik,jk->ij", a, c)', 'a: f32["M", "K"], c: f32["N", "K"]', ["matmul"]),
    "implicit_output": ('np.einsum("ik,kj", a, b)', 'a: f32["M", "K"], b: f32["K", "N"]', ["matmul"]),
    "implicit_output_sorted": ('np.einsum("kj,ik", b, a)', 'a: f32["M", "K"], b: f32["K", "N"]', None),
    "matvec": ('np.einsum("ij,j->i", a, v)', 'a: f32["M", "K"], v: f32["K"]', ["matmul"]),
    "dot": ('np.einsum("i,i->", v, v)', 'v: f32["K"]', None),
    "outer": ('np.einsum("i,j->ij", v, u)', 'v: f32["K"], u: f32["N"]', None),
    "transpose": ('np.einsum("ij->ji", a)', 'a: f32["M", "K"]', None),
    "trace_and_diagonal": ('np.einsum("ii", s) + np.einsum("ii->i", s)', 's: f32["K", "K"]', None),
    "batched": ('np.einsum("bik,bkj->bij", x, y)', 'x: f32["N", "M", "K"], y: f32["N", "K", "M"]', ["matmul"]),
    "epilogue": ('np.maximum(np.einsum("ik,kj->ij", a, b, optimize=True) + bias, 0.0)',
                 'a: f32["M", "K"], b: f32["K", "N"], bias: f32["N"]', None),
    "expression_operand": ('np.einsum("ik,kj->ij", a * 2.0, b)', 'a: f32["M", "K"], b: f32["K", "N"]', None),
    "three_operands": ('np.einsum("ik,kj,jl->il", a, b, d)', 'a: f32["M", "K"], b: f32["K", "N"], d: f32["N", "M"]',
                       ["matmul", "matmul"]),  # (a pair at a time)
    "four_operands": ('np.einsum("i,ij,jk,k->", v, a, b, u)', 'v: f32["M"], a: f32["M", "K"], b: f32["K", "N"], u: f32["N"]',
                      None),
    "number_operand": ('np.einsum("ij,->ij", a, 3.0)', 'a: f32["M", "K"]', None),
}


@pytest.mark.parametrize("name", sorted(EINSUMS))
def test_einsum(tmp_program, name):
    """np.einsum with a constant spec: loops summing products (eqsat/reductions.py), the
    same values as numpy's einsum up to rounding; a contraction of two operands is a matmul."""
    expr, params, kinds = EINSUMS[name]
    prog = tmp_program(PRELUDE + f"@program\ndef p({params}):\n    return {expr}\n")
    dims = {d: n for d, n in {"N": 3, "M": 5, "K": 4}.items() if d in prog.dims}
    args = random_args(prog, dims, seed=2)
    truth = eval(expr, {"np": np, **{p.name: a for p, a in zip(prog.params, args)}})
    plan = eqsat.optimize(prog, dims, target="cpu")
    for backend in ("numpy", "triton"):
        assert rel_err(plan.run(*args, backend=backend), truth) < 1e-5, (name, backend, plan)
    if kinds is not None:
        assert [k.kind for k in plan.kernels] == kinds, plan


@pytest.mark.parametrize("expr", [
    'np.einsum("...k,kj->...j", a, b)',  # an ellipsis
    'np.einsum("ik,kj->ij", a, b, out=a)',  # a keyword but optimize=
    'np.einsum("ikz,kj->ij", a, b)',  # more letters than axes
    'np.einsum("ik,kk->ik", a, b)',  # k is K on a, K and N on b
    'np.einsum("ik,kj->ii", a, b)',  # a letter twice in the output
    'np.einsum(spec, a, b)',  # not a constant
])
def test_an_einsum_it_cannot_read_is_refused_with_its_location(tmp_program, expr):
    with pytest.raises(eqsat.ProgramError, match=r"prog_\d+\.py:\d+:\d+: `np.einsum\(.*np.einsum is read with"):
        tmp_program(PRELUDE + f'''
spec = "ik,kj->ij"
@program
def p(a: f32["M", "K"], b: f32["K", "N"]) -> f32["M", "N"]:
    return {expr}
''')


ARRAY_FORMS = {  # numpy's contractions, methods and arrays made as operands: expr, params, kernels
    "inner_of_vectors": ('np.inner(u, v)', 'u: f32["M"], v: f32["M"]', None),
    "inner_of_matrices": ('np.inner(a, c)', 'a: f32["M", "K"], c: f32["N", "K"]', ["matmul"]),
    "vdot_of_matrices": ('np.vdot(a, d)', 'a: f32["M", "K"], d: f32["M", "K"]', None),
    "tensordot_one_axis": ('np.tensordot(a, b, axes=1)', 'a: f32["M", "K"], b: f32["K", "N"]', ["matmul"]),
    "tensordot_default_two": ('np.tensordot(a, d)', 'a: f32["M", "K"], d: f32["M", "K"]', None),
    "tensordot_pairs": ('np.tensordot(t, b, axes=([2], [0]))', 't: f32["N", "M", "K"], b: f32["K", "N"]',
                        ["matmul"]),
    "dot_method": ('np.maximum(a.dot(b), 0.0)', 'a: f32["M", "K"], b: f32["K", "N"]', ["matmul"]),
    "dot_method_of_vectors": ('u.dot(u)', 'u: f32["M"]', None),
    "astype_float32": ('a.astype(np.float32) * 2.0 + a.astype("float32")', 'a: f32["M", "K"]', ["pointwise"]),
    "eye_operand": ('a + np.eye(M, dtype=np.float32)', 'a: f32["M", "M"]', None),
    "identity_operand": ('np.maximum(a @ np.identity(M) + u, 0.0)', 'a: f32["M", "M"], u: f32["M"]', None),
    "ones_like_operand": ('a - np.ones_like(a) + np.zeros_like(a)', 'a: f32["M", "K"]', ["pointwise"]),
    "full_like_operand": ('a * np.full_like(a, s) + np.full((M, K), 0.5)', 'a: f32["M", "K"], s: f32', None),
    "ones_operand_reduced": ('np.sum(np.ones((M, K))) + a', 'a: f32["M", "K"]', None),
    "concatenate": ('np.concatenate((u, v * 2.0)) + 1.0', 'u: f32["M"], v: f32["N"]', None),
    "concatenate_axis": ('np.concatenate([a, d], axis=-1)', 'a: f32["M", "K"], d: f32["M", "N"]', None),
    "stack_axis": ('np.stack((u, v, u), axis=1)', 'u: f32["M"], v: f32["M"]', None),
    "vstack": ('np.vstack((u, v)) * 2.0', 'u: f32["M"], v: f32["M"]', None),
    "hstack": ('np.hstack((u, v)) + 1.0', 'u: f32["M"], v: f32["M"]', None),
    "clip_method": ('a.clip(-0.5, 0.5) * 2.0', 'a: f32["M", "K"]', ["pointwise"]),
    "exp2": ('np.exp2(a) + math.exp2(1.5)', 'a: f32["M", "K"]', None),
    "swapaxes": ('np.swapaxes(t, 0, -1) + 1.0', 't: f32["N", "M", "K"]', None),
    "transpose_negative_axes": ('t @ c.transpose(0, -1, -2) + np.transpose(u, [-1, -2, -3])',
                                't: f32["N", "M", "K"], c: f32["N", "M", "K"], u: f32["M", "M", "N"]', None),
    "diff": ('np.diff(a) + np.diff(a, axis=0).sum()', 'a: f32["M", "K"]', None),
    "average": ('np.average(a, axis=1) + np.average(a)', 'a: f32["M", "K"]', None),
    "prod": ('np.prod(a, axis=0) * a.prod()', 'a: f32["M", "K"]', None),
    "counts_of_conditions": ('np.sum((a > 0) & (a < 1), axis=1) * 1.0 + np.count_nonzero(a > 0.5) '
                             '+ np.mean(~(a > 0), axis=1)', 'a: f32["M", "K"]', None),
    "arange_and_linspace": ('u * np.arange(M) + np.linspace(s, 2.0, M) + np.arange(M, dtype=np.float32)',
                            'u: f32["M"], s: f32', None),
    "reshape_operands": ('a.reshape(K, M) @ a + np.reshape(a * 2.0, (K, -1)) @ a.ravel().reshape(M, K) '
                         '+ a.flatten()[0]', 'a: f32["M", "K"]', None),
    "reshape_of_a_vector": ('u.reshape(1, -1) * 2.0', 'u: f32["M"]', None),
    # (the contraction's extents compared as polynomials: N * M is M * N; was refused)
    "flattened_dot": ('a.T.reshape(M * K) @ c.reshape(K * M)', 'a: f32["M", "K"], c: f32["K", "M"]', None),
    "roll_periodic_stencil": ('0.5 * a + 0.25 * (np.roll(a, 1, axis=0) + np.roll(a, shift=-7, axis=-1))',
                              'a: f32["M", "K"]', None),
}


@pytest.mark.parametrize("name", sorted(ARRAY_FORMS))
def test_array_forms(tmp_program, name):
    expr, params, kinds = ARRAY_FORMS[name]
    prog = tmp_program(PRELUDE + f"@program\ndef p({params}):\n    return {expr}\n")
    dims = {d: n for d, n in {"N": 3, "M": 5, "K": 4}.items() if d in prog.dims}
    args = random_args(prog, dims, seed=6)
    truth = eval(expr, {"np": np, "math": math, **dims, **{p.name: a for p, a in zip(prog.params, args)}})
    plan = eqsat.optimize(prog, dims, target="cpu")
    for backend in ("numpy", "triton"):
        got = plan.run(*args, backend=backend)
        assert np.shape(got) == np.shape(truth) and rel_err(got, truth) < 1e-5, (name, backend, plan)
    if kinds is not None:
        assert [k.kind for k in plan.kernels] == kinds, plan


@pytest.mark.parametrize("perm", ["0, 2, -1", "(0, 1, 3)", "(0, -4, 1)"])
def test_a_transpose_of_no_permutation_is_refused_with_its_location(tmp_program, perm):
    """numpy raises for a repeated axis (-1 is the last: (0, 2, -1) repeats it) or one out of range."""
    with pytest.raises(eqsat.ProgramError, match=r"prog_\d+\.py:\d+:\d+: .* is not a permutation of the 3 axes"):
        tmp_program(PRELUDE + f'''
@program
def p(t: f32["N", "M", "K"]):
    return t.transpose({perm}) * 2.0
''')


@pytest.mark.parametrize("m", [1, 2, 6])
def test_linspace_of_one_two_and_more_points(tmp_program, m):
    """numpy's last point is b exactly; one point is a (the step's (b - a) / 0 never read)."""
    prog = tmp_program(PRELUDE + '''
@program
def p(x: f32["M"], a: f32) -> f32["M"]:
    return x + np.linspace(a, 2.0, M) + np.linspace(-1.0, 3.0, M)
''')
    x = np.ones(m, np.float32)
    want = eqsat.reference(prog, x.copy(), 0.75)
    plan = eqsat.optimize(prog, {"M": m})
    for backend in ("numpy", "triton"):
        assert close(plan.run(x.copy(), 0.75, backend=backend), want), backend


def test_a_reshape_bound_to_a_name_is_a_view_unless_nothing_is_written(tmp_program):
    """numpy's reshape is a view: `y = x.reshape(-1)` then `y[0] = 5` writes x. Read as a
    copy, bound only where the function writes nothing but new buffers (through any view);
    x.flatten() is a copy in numpy too."""
    prog = tmp_program(PRELUDE + '''
@program
def p(x: f32["M", "N"]):
    y = x.reshape(-1)
    f = x.flatten()
    f[0] = 5.0
    z = np.empty((M,), dtype=np.float32)
    for i in range(M):
        z[i] = y[i * N] + y[i] + f[i]
    return z
''')
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    want = eqsat.reference(prog, x.copy())
    plan = eqsat.optimize(prog, {"M": 3, "N": 4})
    for backend in ("numpy", "triton"):
        assert close(plan.run(x.copy(), backend=backend), want), backend
    for body in ("y = x.reshape(-1)\n    y[0] = 5.0\n    return x * 1.0",  # x written through y
                 "y = x.ravel()\n    z = x[0]\n    z[1] = 3.0\n    return y * 1.0"):  # through a row of x
        with pytest.raises(eqsat.ProgramError, match=r"prog_\d+\.py:\d+:\d+: `x\.(reshape|ravel).*a view"):
            tmp_program(PRELUDE + f'''
@program
def p(x: f32["M", "N"]):
    {body}
''')


def test_builtin_abs_of_a_tensor_bound_to_a_name_has_its_shape(tmp_program):
    """`h = abs(x @ w)` then `np.where(h > 0.5, h, 0.0)`: builtin abs of a tensor is numpy's,
    elementwise (found by a spelling generator: the comparison was refused, h's shape unknown)."""
    prog = tmp_program(PRELUDE + '''
@program
def p(a: f32["M", "K"], b: f32["K", "N"]) -> f32["M", "N"]:
    h = abs(a @ b)
    return np.where(h > 0.5, h, 0.0) + abs(a[0, 0])
''')
    dims = {"M": 5, "K": 4, "N": 3}
    args = random_args(prog, dims, seed=7)
    want = eqsat.reference(prog, *args)
    for target in ("h100", "cpu"):
        plan = eqsat.optimize(prog, dims, target=target)
        for backend in ("numpy", "triton"):
            assert rel_err(plan.run(*args, backend=backend), want) < 1e-5, (target, backend, plan)
        if target == "h100":
            assert [k.kind for k in plan.kernels] == ["matmul"], plan


def test_results_bound_to_names_are_read_by_later_contractions(tmp_program):
    """`v = np.einsum(...)` then a contraction or reduction of v (batched attention's
    scores, then their max): v has the shape of what it was bound to."""
    prog = tmp_program(PRELUDE + '''
@program
def p(q: f32["N", "M", "K"], k: f32["N", "M", "K"], y: f32["M"]):
    s = np.einsum("bqd,bkd->bqk", q, k)
    e = np.exp(s - np.max(s, axis=-1, keepdims=True))
    v = np.einsum("bij,j->bi", e, y)
    return np.einsum("bi,bi->", v, v)
''')
    dims = {"N": 2, "M": 5, "K": 3}
    args = random_args(prog, dims, seed=8)
    want = eqsat.reference(prog, *args)
    plan = eqsat.optimize(prog, dims, target="cpu")
    for backend in ("numpy", "triton"):
        assert close(plan.run(*args, backend=backend), want), backend


def test_a_name_bound_again_with_the_same_shape_is_reduced(tmp_program):
    """A power iteration: v bound twice (a copy, then w / its norm), w bound once to A @ v;
    both have v0's shape, so np.sum(w * w) reads a tensor of known shape."""
    prog = tmp_program(PRELUDE + '''
@program
def power_iter(A: f32["N", "N"], v0: f32["N"]) -> f32["N"]:
    v = v0.copy()
    for it in range(5):
        w = A @ v
        v = w / np.sqrt(np.sum(w * w))
    return v
''')
    args = random_args(prog, {"N": 6}, seed=3)
    want = eqsat.reference(prog, *args)
    plan = eqsat.optimize(prog, {"N": 6})
    for backend in ("numpy", "triton"):
        assert rel_err(plan.run(*args, backend=backend), want) < 1e-4, backend



def test_names_bound_again_in_a_loop_with_one_shape_are_read_as_that_shape(tmp_program):
    """NPBench's vadv: `gcv` and `cs` bound before the loop and again in it, always to a
    plane of the same shape, and stored into slices (`d[:, :, 0] = ...`): refused once,
    with a message that blamed the slice store (a probe)."""
    prog = tmp_program(PRELUDE + '''
@program
def vadv(beta: f32, w: f32["I", "J", "K"], u: f32["I", "J", "K"]) -> f32["I", "J", "K"]:
    d = np.zeros((I, J, K), np.float32)
    gcv = 0.25 * w[:, :, 1]
    cs = gcv * beta
    d[:, :, 0] = u[:, :, 0] - cs * u[:, :, 1]
    for k in range(1, K - 1):
        gcv = 0.25 * w[:, :, k + 1]
        cs = gcv * beta
        d[:, :, k] = d[:, :, k - 1] * cs + u[:, :, k]
    return d
''')
    dims = {"I": 4, "J": 3, "K": 6}
    args = random_args(prog, dims, seed=3)
    want = eqsat.reference(prog, *args)
    plan = eqsat.optimize(prog, dims, target="cpu")
    for backend in ("numpy", "triton"):
        assert rel_err(plan.run(*args, backend=backend), want) < 1e-5, backend


def test_a_name_bound_again_in_a_loop_to_another_shape_is_still_refused(tmp_program):
    """`g` is a column before the loop and a row in it: which shape a later slice store
    reads depends on the binding, so no shape is taken and the store is refused."""
    with pytest.raises(eqsat.ProgramError, match=r"prog_\d+\.py:\d+:\d+: `d\[:, 0\]`"):
        tmp_program(PRELUDE + '''
@program
def p(w: f32["I", "J"]) -> f32["I", "J"]:
    d = np.zeros((I, J), np.float32)
    g = w[:, 1] * 1.0
    for k in range(1, J - 1):
        g = w[1, :] * 2.0
        d[0, :] = g
    d[:, 0] = g
    return d
''')

@pytest.mark.parametrize("r,c", [(1, 1), (2, 3), (5, 4)])
@pytest.mark.parametrize("target", ["cpu", "h100"])
def test_an_index_chosen_by_a_condition(tmp_program, r, c, target):
    """Rodinia's hotspot: `w = x if x == 0 else x - 1` then `t[y, w]` (and the choice
    written in the index) read as the choice between the two reads."""
    prog = tmp_program(PRELUDE + '''
@program
def p(t: f32["R", "C"]) -> f32["R", "C"]:
    out = np.empty_like(t)
    for y in range(R):
        for x in range(C):
            w = x if x == 0 else x - 1
            e = x if x == C - 1 else x + 1
            out[y, x] = t[y, w] + t[y, e] + t[y if y == R - 1 else y + 1, x] * 0.5
    return out
''')
    args = random_args(prog, {"R": r, "C": c}, seed=2)
    want = eqsat.reference(prog, *args)
    plan = eqsat.optimize(prog, {"R": r, "C": c}, target=target)
    for backend in ("numpy", "triton"):
        assert close(plan.run(*args, backend=backend), want), backend


def test_enumerate_of_zip_rows(tmp_program):
    prog = tmp_program(PRELUDE + '''
@program
def p(X: f32["M", "N"], Y: f32["M", "N"]) -> f32["M"]:
    out = np.empty(M, dtype=np.float32)
    for i, (xr, yr) in enumerate(zip(X, Y)):
        out[i] = np.sum(xr * yr) + i
    return out
''')
    dims = {"M": 4, "N": 3}
    args = random_args(prog, dims, seed=9)
    want = eqsat.reference(prog, *args)
    plan = eqsat.optimize(prog, dims, target="cpu")
    for backend in ("numpy", "triton"):
        assert close(plan.run(*args, backend=backend), want), backend


@pytest.mark.parametrize("alpha,beta", [(0.0, 1.0), (0.0, 0.5), (1.5, 0.0), (1.5, 1.0)])
def test_early_returns_of_the_final_value(tmp_program, alpha, beta):
    """Reference BLAS's `if alpha == 0.0: return y`: where the early return gives what the
    function's last `return` does, the rest of the function runs in its else branch."""
    prog = tmp_program(PRELUDE + '''
@program
def gemv(alpha: f32, beta: f32, a: f32["M", "N"], x: f32["N"], y: f32["M"]) -> f32["M"]:
    if alpha == 0.0 and beta == 1.0:
        return y
    if beta != 1.0:
        for i in range(M):
            y[i] = beta * y[i]
    if alpha == 0.0:
        y[0] = y[0] * 1.0
        return y
    for i in range(M):
        t = 0.0
        for j in range(N):
            t += a[i, j] * x[j]
        y[i] += alpha * t
    return y
''')
    rng = np.random.default_rng(1)
    a, x, y = (rng.standard_normal(s).astype(np.float32) for s in ((4, 5), (5,), (4,)))
    want_y = y.copy()
    want = eqsat.reference(prog, alpha, beta, a, x, want_y)
    plan = eqsat.optimize(prog, {"M": 4, "N": 5})
    for backend in ("numpy", "triton"):
        got_y = y.copy()
        assert close(plan.run(alpha, beta, a, x, got_y, backend=backend), want), backend
        assert close(got_y, want_y), backend
    with pytest.raises(eqsat.ProgramError, match=r"`return` must be the last statement"):
        tmp_program(PRELUDE + '''
@program
def p(alpha: f32, y: f32["M"]) -> f32["M"]:
    if alpha == 0.0:
        return y * 2.0
    return y
''')


@pytest.mark.parametrize("expr,what", [
    ("np.tensordot(a, b, axes=([0], [0]))", "np.tensordot"),  # M against K
    ("np.inner(a, b)", "np.inner"),  # K against N
    ("a * np.full((M, K), 2)", "np.full"),  # numpy's integer array
    ("a.astype(np.float64)", "a.astype"),
    ("np.concatenate((a, b))", "np.concatenate"),  # K against N on the other axis
    ("np.roll(a, 1)", "np.roll"),  # numpy rolls the flattened matrix
])
def test_a_contraction_or_array_it_cannot_read_is_refused_with_its_location(tmp_program, expr, what):
    with pytest.raises(eqsat.ProgramError, match=rf"prog_\d+\.py:\d+:\d+: unsupported function '{what}'"):
        tmp_program(PRELUDE + f'''
@program
def p(a: f32["M", "K"], b: f32["K", "N"]):
    return {expr}
''')


def test_a_method_call_is_still_refused(tmp_program):
    with pytest.raises(eqsat.ProgramError, match=r"prog_\d+\.py:\d+:\d+: unsupported function 'x\[i\]\.argmax'"):
        tmp_program(PRELUDE + '''
@program
def p(x: f32["N", "M"]) -> f32["N"]:
    y = empty((N,))
    for i in range(N):
        y[i] = x[i].argmax()
    return y
''')


def test_np_dot_of_a_three_axis_tensor_is_still_refused(tmp_program):
    """np.dot of an N-d tensor is not a matmul (it contracts the last axis with the second
    to last of the other, over every pair of leading indices)."""
    with pytest.raises(eqsat.ProgramError, match=r"prog_\d+\.py:\d+:\d+: np.dot of a tensor with more than two"):
        tmp_program(PRELUDE + '''
@program
def p(a: f32["B", "N", "K"], b: f32["K", "M"]) -> f32["B", "N", "M"]:
    return np.dot(a, b)
''')


def test_a_numpy_max_propagates_nan(tmp_program):
    prog = tmp_program(PRELUDE + '''
@program
def p(x: f32["N", "M"]) -> tuple[f32, f32["M"]]:
    return np.max(x), np.min(x, axis=0)
''')
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    x[1, 2] = np.nan
    want = eqsat.reference(prog, x)
    assert np.isnan(want[0]) and np.isnan(want[1][2])
    plan = eqsat.optimize(prog, {"N": 3, "M": 4}, target="cpu")
    for backend in ("numpy", "triton"):
        got = plan.run(x, backend=backend)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])


def test_an_assertion_on_sizes_is_checked_at_the_sizes(tmp_program):
    prog = tmp_program(PRELUDE + FORMS["sizes_from_shapes"][0])
    with pytest.raises(eqsat.ArgumentError, match=r"prog_\d+\.py:\d+:\d+: the program asserts `M >= 2 and N % 1 == 0`, "
                                                  r"false at M=1, N=3 \(at least two rows\)"):
        eqsat.optimize(prog, {"M": 1, "N": 3})


TILED = {
    "i_tiles": """
@program
def p(a: f32["N", "N"], b: f32["N", "N"]) -> f32["N", "N"]:
    c = zeros((N, N))
    for ii in range(0, N, 4):
        for i in range(ii, ii + 4):
            for k in range(N):
                for j in range(N):
                    c[i, j] += a[i, k] * b[k, j]
    return c
""",
    "k_tiles": """
@program
def p(a: f32["N", "N"], b: f32["N", "N"]) -> f32["N", "N"]:
    c = zeros((N, N))
    for i in range(N):
        for kk in range(0, N, 4):
            for k in range(kk, kk + 4):
                for j in range(N):
                    c[i, j] += a[i, k] * b[k, j]
    return c
""",
    "offset_tiles": """
@program
def p(a: f32["N", "N"], b: f32["N", "N"], bias: f32["N"]) -> f32["N", "N"]:
    c = empty((N, N))
    for i0 in range(0, N, 4):
        for i1 in range(4):
            for j in range(N):
                acc = 0.0
                for k in range(N):
                    acc += a[i0 + i1, k] * b[k, j]
                c[i0 + i1, j] = relu(acc + bias[j])
    return c
""",
    "offset_tiles_both_axes": """
@program
def p(a: f32["N", "N"], b: f32["N", "N"]) -> f32["N", "N"]:
    c = empty((N, N))
    for i0 in range(0, N, 4):
        for j0 in range(0, N, 8):
            for i1 in range(4):
                for j1 in range(8):
                    acc = 0.0
                    for k in range(N):
                        acc += a[i1 + i0, k] * b[k, j0 + j1]
                    c[i0 + i1, j0 + j1] = acc
    return c
""",
}


@pytest.mark.parametrize("name", sorted(TILED))
def test_a_matmul_tiled_the_c_way(tmp_program, name):
    """Strip-mined loops (`range(0, N, 4)` around `range(ii, ii + 4)`) are counted from 0 by
    1 (`eqsat/desugar.py`); around `range(4)` read at `i0 + i1` they are one loop over the
    rows (`eqsat/unsplit.py`): the tiles are the matmul they make (N a multiple of the tile:
    the tiles cover the columns exactly)."""
    prog = tmp_program(PRELUDE + TILED[name])
    n = 16
    plan = eqsat.optimize(prog, {"N": n}, target="cpu")
    assert [k.kind for k in plan.kernels] == ["matmul"], plan
    args = random_args(prog, {"N": n}, seed=2)
    for backend in ("numpy", "triton"):
        assert close(plan.run(*args, backend=backend), eqsat.reference(prog, *args)), plan


GUARDED = '''
@program
def p(x: f32["N", "K"]) -> tuple[f32["N"], f32["N"], f32["N"], f32["N"]]:
    y = zeros((N,))
    z = zeros((N,))
    w = zeros((N,))
    u = zeros((N,))
    for i in range(N):
        y[i] = np.max(x[i - 1]) if i > 0 else 0.0
        if i > 0 and sum(x[i - 1, k] for k in range(K)) > 0:
            z[i] = 1.0
        w[i] = 0.0 if i == 0 or np.sum(x[i - 1], axis=0) < 0 else np.mean(x[i - 1])
        m = x[i, 0]
        u[i] = np.sum(np.exp(x[i] - m)) + sum(x[i, k] for k in range(i % K))
    return y, z, w, u
'''


def test_what_a_condition_guards_is_computed_under_it(tmp_program):
    """`sum(x[i - 1, k] ...) if i > 0 else 0.0`: Python reads row i - 1 only where i > 0, so
    the loops computing the sum run under that condition (hoisted unguarded, they read
    row -1 and were refused); a generator's first range is read where the sum is."""
    prog = tmp_program(PRELUDE + GUARDED)
    args = random_args(prog, {"N": 5, "K": 3}, seed=6)
    want = eqsat.reference(prog, *args)
    plan = eqsat.optimize(prog, {"N": 5, "K": 3}, target="cpu")
    for backend in ("numpy", "triton"):
        assert close(plan.run(*args, backend=backend), want), (backend, plan)


@pytest.mark.parametrize("src,phrase", [
    ("    y = np.full((N,), 2)\n    for i in range(N):\n        y[i] += x[i]\n    return y", "np.full"),
    ("    y = np.empty((N,))\n    for i in range(N):\n        y[i] = x[i, :, :]\n    return y",
     "'x' has rank 2 but is indexed with 3 indices"),
    ("    return math.exp(x)", "math.exp takes a number"),
], ids=["int_fill", "too_many_indices", "math_of_a_tensor"])
def test_what_python_would_not_run_is_refused(tmp_program, src, phrase):
    """numpy makes `np.full(s, 2)` an int array; `x[i, :, :]` of a 2-D x and math.exp of an
    array raise in Python: each refused, not computed as something else."""
    with pytest.raises(eqsat.ProgramError, match=phrase):
        tmp_program(PRELUDE + '@program\ndef p(x: f32["N", "K"]) -> f32["N"]:\n' + src + "\n")


def test_a_return_only_dimension_against_a_constant_extent(tmp_program):
    """`-> f32["L"]` over `np.zeros(8)`: L is given in the shapes, and checked there."""
    prog = tmp_program(PRELUDE + '''
@program
def p(x: f32["N"]) -> f32["L"]:
    n = len(x)
    r = np.zeros(8, dtype=np.float32)
    for lag in range(8):
        r[lag] = sum(x[i] * x[i + lag] for i in range(n - lag)) / float(n - lag)
    return r
''')
    args = random_args(prog, {"N": 20, "L": 8}, seed=9)
    plan = eqsat.optimize(prog, {"N": 20, "L": 8}, target="cpu")
    assert close(plan.run(*args), eqsat.reference(prog, *args, shapes={"N": 20, "L": 8}))
    with pytest.raises(eqsat.ProgramError, match="axis 0 has 8 elements but the annotation declares 9"):
        eqsat.optimize(prog, {"N": 20, "L": 9}, target="cpu")


TRMM_COPY = '''
@program
def p(alpha: f32, A: f32["M", "M"], B0: f32["M", "N"]) -> f32["M", "N"]:
    M, N = B0.shape
    B = B0.copy()
    for i in range(M):
        for j in range(N):
            for k in range(i + 1, M):
                B[i][j] += A[k][i] * B[k][j]
            B[i][j] = alpha * B[i][j]
    return B
'''


def test_a_copy_of_a_parameter_nothing_reads_after(tmp_program):
    """`B = B0.copy()` where nothing reads B0 after it names B0's memory (a parameter is the
    plan's own copy): PolyBench's trmm written so is its matmul; where B0 is read after the
    copy, the copy stays one."""
    prog = tmp_program(PRELUDE + TRMM_COPY)
    dims = {"M": 32, "N": 36}
    plan = eqsat.optimize(prog, dims, target="h100")
    assert "matmul" in [k.kind for k in plan.kernels], plan
    args = random_args(prog, dims, seed=10)
    copies = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    assert close(plan.run(*args), eqsat.reference(prog, *args))
    assert all(np.array_equal(a, c) for a, c in zip(args[1:], copies[1:]))
    read_after = tmp_program(PRELUDE + TRMM_COPY.replace("    return B\n", "    return B - B0\n"))
    plan = eqsat.optimize(read_after, dims, target="cpu")
    assert close(plan.run(*args), eqsat.reference(read_after, *args))


# a view of the parameter bound before the copy (any syntax): the copy stays a copy
VIEW_BEFORE_COPY = {
    "annotated": "    v: f32['N'] = a[0]\n    b = a.copy()\n",
    "tuple": "    v, s = a[0], 1.0\n    b = a.copy()\n",
}


@pytest.mark.parametrize("name", sorted(VIEW_BEFORE_COPY))
def test_a_view_bound_before_a_parameter_copy(tmp_program, name):
    prog = tmp_program(PRELUDE + '@program\ndef p(a: f32["M", "N"]) -> f32["N"]:\n' + VIEW_BEFORE_COPY[name] +
                       "    for j in range(N):\n        b[0, j] = 5.0\n    return v + 0.0\n")
    args = random_args(prog, {"M": 3, "N": 4}, seed=11)
    want = eqsat.reference(prog, *args)
    for target in ("cpu", "h100"):
        assert close(eqsat.optimize(prog, {"M": 3, "N": 4}, target=target).run(*args), want), target


def test_a_copy_rebound_in_a_loop_stays_a_copy(tmp_program):
    """`b = a.copy()` then `b = c` in a loop: b is not a view of `a` (the rewrite to `b = a`
    made the loop's rebinding a refused view rebinding)."""
    prog = tmp_program(PRELUDE + '''
@program
def p(a: f32["N", "N"], T: int) -> f32["N", "N"]:
    b = a.copy()
    for t in range(T):
        c = zeros((N, N))
        for i in range(N):
            for j in range(N):
                c[i, j] = b[j, i] * 0.5 + 1.0
        b = c
    return b
''')
    args = random_args(prog, {"N": 4, "T": 3}, seed=12)
    plan = eqsat.optimize(prog, {"N": 4, "T": 3}, target="cpu")
    assert close(plan.run(*args), eqsat.reference(prog, *args))


def test_a_write_through_np_transpose_reaches_the_memory_it_views(tmp_program):
    """`u = np.transpose(c, (1, 0))` shares c's memory, as `c.T` does: a write through u
    writes c, so a view of c the loop carries is refused (it was taken as a copy and read
    c as it was before the write)."""
    src = PRELUDE + '''
@program
def p(c: f32["N", "N"], T: int) -> f32["N"]:
    y = zeros((N,))
    u = {view}
    h = c[0]
    for t in range(T):
        for j in range(N):
            u[j, 0] = u[j, 0] + 1.0
        for j in range(N):
            y[j] += h[j]
        h = c[1]
    return y
'''
    for view in ("c.T", "np.transpose(c, (1, 0))", "transpose(c, (1, 0))"):
        with pytest.raises(eqsat.ProgramError, match="'h' is a view .* rebound inside a loop"):
            tmp_program(src.replace("{view}", view))


def test_reductions_of_reductions_and_powers(tmp_program):
    """A local bound to `A.sum(axis=0)` has the shape numpy gives it, so `np.sum` of it is a
    reduction too; `np.mean((x[i] - mu) ** 2)` reads `**` of a tensor elementwise (both were
    refused: a probe's ports)."""
    prog = tmp_program(PRELUDE + '''
@program
def p(A: f32["N", "M"]) -> tuple[f32, f32["N"], f32]:
    cs = A.sum(axis=0)
    var = np.zeros((N,), dtype=np.float32)
    for i in range(N):
        mu = np.mean(A[i])
        var[i] = np.mean((A[i] - mu) ** 2)
    return np.sum(cs), var, np.max(np.min(A, axis=1))
''')
    A = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    want = (A.sum(axis=0).sum(), A.var(axis=1), A.min(axis=1).max())
    plan = eqsat.optimize(prog, {"N": 3, "M": 4})
    for got, w in zip(plan.run(A), want):
        np.testing.assert_allclose(got, w, rtol=1e-5, atol=1e-6)


def test_keepdims_and_broadcasting(tmp_program):
    """`keepdims=True` reductions, and numpy's broadcasting of an axis of one element and of
    a missing leading axis (softmax and layer norm as numpy users write them)."""
    prog = tmp_program(PRELUDE + '''
@program
def p(x: f32["M", "N"], g: f32["N"], b: f32["N"]) -> tuple[f32["M", "N"], f32["M", "N"], f32["M", "N"], f32["M", "N"]]:
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    sm = e / np.sum(e, axis=-1, keepdims=True)
    mu = np.mean(x, axis=1, keepdims=True)
    var = np.mean((x - mu) ** 2, axis=1, keepdims=True)
    ln = (x - mu) / np.sqrt(var + 1e-5) * g + b
    return sm, ln, x / np.sum(x * x, axis=0, keepdims=True), x - np.mean(x, keepdims=True)
''')
    rng = np.random.default_rng(0)
    for dims in ({"M": 5, "N": 7}, {"M": 1, "N": 3}):
        x = rng.standard_normal((dims["M"], dims["N"])).astype(np.float32)
        g, b = rng.standard_normal(dims["N"]).astype(np.float32), rng.standard_normal(dims["N"]).astype(np.float32)
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        mu = x.mean(axis=1, keepdims=True)
        want = (e / e.sum(axis=-1, keepdims=True), (x - mu) / np.sqrt(((x - mu) ** 2).mean(axis=1, keepdims=True)
                                                                        + 1e-5) * g + b,
                x / (x * x).sum(axis=0, keepdims=True), x - x.mean(keepdims=True))
        plan = eqsat.optimize(prog, dims)
        for backend in ("numpy", "triton"):
            assert close(plan.run(x, g, b, backend=backend), want), (backend, dims)


REBOUND = {
    # a top-level rebinding is a new name from there on, so each binding's shape is known
    "rebound_at_the_top": """
@program
def p(a: f32["B", "C0"], w1: f32["C0", "C1"], w2: f32["C1", "C2"]) -> f32["B", "C2"]:
    x = a @ w1
    x = x @ w2
    m = np.max(x, axis=-1, keepdims=True)
    a = a * 2.0
    return x - m + np.sum(np.sum(a))
""",
    # a view keeps the old memory; a scalar name bound again to a tensor (Python's rebinding)
    "rebound_views_and_kinds": """
@program
def p(x: f32["N"]) -> tuple[f32["N"], f32["N"]]:
    c = np.zeros((N,), dtype=np.float32)
    v = c
    c = x * 2.0
    t = 0.0
    t = x + 1.0
    return v + c, t
""",
    # ping-pong buffers and a copy bound in a loop keep the one shape every binding has
    "exchanged_and_copied": """
@program
def p(A: f32["N", "N"], q: f32["N", "N"], T: int) -> tuple[f32["N", "N"], f32["N", "N"]]:
    B = np.zeros_like(A)
    for t in range(T):
        B[1:-1, 1:-1] = 0.25 * (A[:-2, 1:-1] + A[2:, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:])
        A, B = B, A
    qn = np.empty_like(q)
    for it in range(T):
        qn = q.copy()
        q[1:-1, 1:-1] = 0.5 * (qn[1:-1, 2:] + qn[1:-1, 0:-2])
    return A, q
""",
}


@pytest.mark.parametrize("name", sorted(REBOUND))
def test_names_bound_again(tmp_program, name):
    """Found by a probe of NPBench's ports: each was refused with a message about something else."""
    src = REBOUND[name]
    prog = tmp_program(PRELUDE + src)
    dims = {"B": 3, "C0": 4, "C1": 5, "C2": 2, "N": 5, "T": 3}
    dims = {d: v for d, v in dims.items() if d in src}
    args = [dims[p.name] if p.dtype is int else np.random.default_rng(1).standard_normal(
        tuple(dims[d] for d in p.shape)).astype(np.float32) for p in prog.params]
    g = {"np": np, "f32": eqsat.f32, **dims}
    exec(compile(src.replace("@program\n", ""), "<truth>", "exec"), g)
    want = g["p"](*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    got = eqsat.optimize(prog, dims).run(*args)
    assert close(got, want)


@pytest.mark.parametrize("n,k", [(1, 0), (2, 1), (5, 0), (8, 2), (11, 20)])
def test_reversed_range_with_a_step(tmp_program, n, k):
    """reversed(range(lo, hi, s)), constant s: from the last value the range takes down to
    lo; no iteration where the range is empty (k past N)."""
    prog = tmp_program(PRELUDE + '''
@program
def p(x: f32["N"], k: int) -> f32["N"]:
    y = zeros((N,))
    for i in reversed(range(1, N, 2)):
        y[i] = x[i] + y[i - 1] * 0.5
    for i in reversed(range(k, N - 1, 3)):
        y[i] = y[i] + x[i + 1] * 2.0
    return y
''')
    x = np.arange(n, dtype=np.float32) + 1
    want = eqsat.reference(prog, x.copy(), k)
    plan = eqsat.optimize(prog, {"N": n, "k": k}, target="cpu")
    for backend in ("numpy", "triton"):
        assert close(plan.run(x.copy(), k, backend=backend), want), backend


def test_tiles_whose_step_is_not_their_extent_stay_as_written(tmp_program):
    """`range(0, N, 4)` around `range(8)`: the tiles overlap (rows written twice), so
    `i0 + i1` is no single loop over the rows; the plan computes what the loops do."""
    prog = tmp_program(PRELUDE + """
@program
def p(a: f32["N", "N"]) -> f32["N", "N"]:
    c = zeros((N, N))
    for i0 in range(0, N - 4, 4):
        for i1 in range(8):
            for j in range(N):
                c[i0 + i1, j] += a[i0 + i1, j] * 2.0
    return c
""")
    dims = {"N": 16}
    args = random_args(prog, dims, seed=2)
    want = eqsat.reference(prog, *args)
    plan = eqsat.optimize(prog, dims, target="cpu")
    for backend in ("numpy", "triton"):
        assert rel_err(plan.run(*args, backend=backend), want) < 1e-6, backend


def test_numpy_scalar_constants_and_the_language_spelled_with_its_module(tmp_program):
    """A module constant bound to a numpy floating scalar (`np.float32(0.25)`) reads as the
    number it holds, and `eqsat.relu(...)` / `eq.gelu(...)` (the language's functions through
    the module, or an alias of it) as `relu(...)`: both were refused. Fused as the bare
    spellings are, and equal to numpy."""
    prog = tmp_program(PRELUDE + '''
import eqsat
import eqsat as eq
SCALE = np.float32(0.25)
SHIFT = np.float64(1.5)

@program
def p(x: f32["M", "K"], w: f32["K", "N"], b: f32["N"]) -> tuple[f32["M", "N"], f32["M"]]:
    y = eqsat.relu(x @ w * SCALE + b)
    return y, np.sum(eq.sigmoid(x), axis=1) + SHIFT
''')
    dims = {"M": 5, "K": 4, "N": 7}
    x, w, b = random_args(prog, dims, seed=5)
    plan = eqsat.optimize(prog, dims, target="cpu")
    want = (np.maximum(x @ w * np.float32(0.25) + b, 0), np.sum(1 / (1 + np.exp(-x)), axis=1) + 1.5)
    for backend in ("numpy", "triton"):
        assert close(plan.run(x, w, b, backend=backend), want), backend
    assert close(eqsat.reference(prog, x, w, b), want)
    assert any(k.kind == "matmul" and "relu" in str(k) for k in plan.kernels), plan


def test_clip_with_one_bound_float_of_a_number_and_size(tmp_program):
    """`np.clip(e, lo, None)` / `np.clip(e, None, hi)` clip one side, `float(x[i])` and
    `float(s)` of the program's numbers are those numbers, `x.size` the product of x's
    extents (each was refused); against numpy on both backends."""
    prog = tmp_program(PRELUDE + '''
@program
def p(a: f32["M", "K"], b: f32["K", "N"], x: f32["M", "N"]) -> tuple[f32["M", "N"], f32["M", "N"], f32["M"], f32]:
    y = empty((M,))
    for i in range(M):
        s = 0.0
        for j in range(N):
            s += float(x[i, j]) * 2.0
        y[i] = float(s)
    return np.clip(a @ b, 0.0, None), np.clip(a @ b, None, 0.5), y, np.sum(x) / x.size + x[1:].size
''')
    dims = {"M": 5, "K": 4, "N": 7}
    a, b, x = random_args(prog, dims, seed=6)
    want = (np.maximum(a @ b, 0), np.minimum(a @ b, 0.5), (x * 2.0).sum(axis=1), x.sum() / x.size + x[1:].size)
    plan = eqsat.optimize(prog, dims, target="cpu")
    for backend in ("numpy", "triton"):
        assert close(plan.run(a, b, x, backend=backend), want), backend
    assert close(eqsat.reference(prog, a, b, x), want)


@pytest.mark.parametrize("compiled", ["never", "always"])
def test_clip_keeps_the_sign_of_a_zero_and_nan_bounds(tmp_program, monkeypatch, compiled):
    """numpy's clip keeps `x` on a tie with a bound (`np.clip(-0.0, 0.0, 1.0)` is -0.0, where
    `np.maximum(-0.0, 0.0)` is 0.0: it was lowered so), gives NaN for a NaN bound and the
    upper bound where the bounds cross (with one bound None it is np.maximum's, which gives
    the bound's zero on a tie); lifted, and kept as written (np.floor has no term),
    interpreted and compiled by numba; bit for bit on both backends."""
    monkeypatch.setenv("EQSAT_COMPILE_LOOPS", compiled)
    prog = tmp_program(PRELUDE + '''
@program
def p(x: f32["N"], lo: f32) -> tuple[f32["N"], f32["N"]]:
    z = np.empty_like(x)
    for i in range(N):
        z[i] = np.floor(x[i] * 0.0) + np.clip(x[i], -0.0, 0.0) + np.clip(x[i], lo, 1.0) * 2.0
    return np.clip(x, 0.0, 1.0) + np.clip(x, 1.0, 0.0) * 3.0 + x.clip(max=lo) * 5.0 + np.clip(x, -0.0, None), z
''')
    x = np.array([-0.0, 0.5, 0.0, np.nan, -1.0, 2.0, 1.0, -0.0, np.inf], np.float32)
    for lo in (np.float32(np.nan), np.float32(-0.0), np.float32(0.25)):
        want = eqsat.reference(prog, x, lo)
        plan = eqsat.optimize(prog, {"N": 9}, target="cpu")
        for backend in ("numpy", "triton"):
            for g, w in zip(plan.run(x, lo, backend=backend), want):
                np.testing.assert_array_equal(g, w, err_msg=backend)
                assert (np.signbit(g) == np.signbit(w))[~np.isnan(w)].all(), (backend, g, w)


def test_a_plan_computes_with_the_constants_optimize_read(tmp_program):
    """A module constant changed after optimize(): the plan's kernels were built with the old
    value and its kept nest compiled at the first run with the new one, so one result used
    each (a probe). A plan is a snapshot: every part uses the value optimize() read."""
    prog = tmp_program('''
SCALE = 2.0

@program
def p(x: f32["N"]) -> tuple[f32["N"], f32["N"]]:
    y = empty((N,))
    z = empty((N,))
    for i in range(N):
        y[i] = x[i] * SCALE
    for i in range(N):
        z[i] = x[(i + 1) % N] * SCALE
    return y, z
''')
    x = np.arange(1, 5, dtype=np.float32)
    plan = eqsat.optimize(prog, {"N": 4})
    prog.fn.__globals__["SCALE"] = 7.0
    for backend in ("numpy", "triton"):
        y, z = plan.run(x, backend=backend)
        assert np.array_equal(y, x * 2.0) and np.array_equal(z, np.roll(x, -1) * 2.0), (backend, y, z)
    again = eqsat.optimize(prog, {"N": 4})  # optimize() reads the module as it is now
    y, z = again.run(x)
    assert np.array_equal(y, x * 7.0) and np.array_equal(z, np.roll(x, -1) * 7.0)


def test_a_loop_reusing_a_dead_name_is_that_loops_variable(tmp_program):
    """`y1 = np.maximum(h, 0)` ... `for y1 in range(N)` (nested too, and a second loop over
    the same name): Python rebinds y1 to the loop's integers; nothing reads it after, so it
    is the loop's variable (`eqsat/loopnames.py`; it was refused, 'shadows another name')."""
    prog = tmp_program(PRELUDE + '''
@program
def p(x: f32["M", "K"], w: f32["K", "N"], v: f32["N", "N"]) -> f32["M", "N"]:
    y1 = np.maximum(x, 0.0)
    h = y1
    y = empty((M, N))
    for x1 in range(M):
        for y1 in range(N):
            acc = 0.0
            for z1 in range(K):
                acc += h[x1, z1] * w[z1, y1]
            y[x1, y1] = acc
    for y1 in range(N):
        for x1 in range(M):
            y[x1, y1] += v[y1, y1]
    return y
''')
    dims = {"M": 5, "K": 4, "N": 3}
    plan = runs_as_written(prog, dims, seed=2)
    assert "matmul" in [k.kind for k in plan.kernels], plan


def test_a_reused_name_looped_over_again_in_a_nested_loop_is_dead_between(tmp_program):
    """`j = 2.5` ... `for j in range(M)` then `for i in range(N): for j in range(M)`: the
    statement after the first loop mentions j only as a nested loop's variable, so j is dead
    after the first loop (a probe: refused, 'shadows another name')."""
    prog = tmp_program(PRELUDE + '''
@program
def p(w: f32["M"], y: f32["N", "M"]) -> f32["N", "M"]:
    f = zeros((N, M))
    j = 2.5
    f[0, 0] = j
    for j in range(M):
        w[j] = w[j] + 1.0
    for i in range(N):
        for j in range(M):
            f[i, j] += y[i, j] + w[j]
    return f
''')
    dims = {"M": 4, "N": 3}
    runs_as_written(prog, dims, seed=2)


def test_a_reused_name_read_after_nested_loops_that_may_not_run_stays_refused(tmp_program):
    """After `for i in range(N): for j in range(M)` a read of j sees the first loop's last
    value where N is 0: j is not dead after the first loop."""
    with pytest.raises(eqsat.ProgramError, match="shadows another name"):
        tmp_program(PRELUDE + '''
@program
def p(w: f32["M"], y: f32["N", "M"]) -> f32["N", "M"]:
    f = zeros((N, M))
    j = 2.5
    for j in range(M):
        w[j] = w[j] + 1.0
    for i in range(N):
        for j in range(M):
            f[i, j] += y[i, j] + w[j]
    return f * j
''')


def test_a_loop_variable_read_after_its_loop_under_a_reused_name_stays_refused(tmp_program):
    with pytest.raises(eqsat.ProgramError, match="shadows another name"):
        tmp_program(PRELUDE + '''
@program
def p(x: f32["N"]) -> f32["N"]:
    t = x * 2.0
    y = empty((N,))
    for t in range(N):
        y[t] = x[t]
    return y * t
''')


def test_a_window_max_stored_into_a_slice_fills_the_slice(tmp_program):
    """`out[:, i, j, :] = np.max(x[:, 2*i:2*i+2, 2*j:2*j+2, :], axis=(1, 2))` (a max pool
    written with numpy): its loops store the target's elements, with no buffer allocated and
    copied in every iteration (a probe: 5x numba); NaN as numpy's max gives it."""
    prog = tmp_program(PRELUDE + '''
@program
def p(x: f32["NB", "H", "W", "C"]) -> f32["NB", "HH", "WW", "C"]:
    out = np.empty((NB, H // 2, W // 2, C), dtype=np.float32)
    for i in range(H // 2):
        for j in range(W // 2):
            out[:, i, j, :] = np.max(x[:, 2 * i:2 * i + 2, 2 * j:2 * j + 2, :], axis=(1, 2))
    return out
''')
    dims = {"NB": 2, "H": 6, "W": 4, "C": 3, "HH": 3, "WW": 2}
    (x,) = random_args(prog, dims, seed=8)
    x[1, 2, 3, 0] = np.nan
    want = x.reshape(2, 3, 2, 2, 2, 3).max(axis=(2, 4))
    plan = eqsat.optimize(prog, dims, target="cpu")
    for backend in ("numpy", "triton"):
        got = plan.run(x, backend=backend)
        assert np.array_equal(np.isnan(got), np.isnan(want)) and np.allclose(got[~np.isnan(want)], want[~np.isnan(want)])
    from eqsat.backends import loops

    for k in plan.kernels:
        if k.kind == "loop":
            src = loops._source(plan, plan.lowered.nests[k.nest])[0]
            assert "eqsat_lib_zeros" not in src and "eqsat_red0 =" not in src, src


ROTATE_HALF = '''
@program
def p(x: f32["S", "D"], cs: f32["S", "D"], sn: f32["S", "D"]) -> f32["S", "D"]:
    x1 = x[:, :D // 2]
    x2 = x[:, D // 2:]
    rot = np.concatenate([-x2, x1], axis=-1)
    return x * cs + rot * sn
'''

POOL_BY_SLICES = '''
@program
def p(x: f32["H", "W"]) -> f32["HO", "WO"]:
    return np.maximum(np.maximum(x[::2, ::2], x[1::2, ::2]), np.maximum(x[::2, 1::2], x[1::2, 1::2]))
'''


def test_extents_equal_as_expressions_of_sizes_broadcast(tmp_program):
    """`(D - D // 2) + D // 2` is D for every D (RoPE's rotate-half by concatenation: a
    probe found it refused, 'cannot broadcast'); extents are compared as polynomials in the
    sizes and their `//` terms (`ir.ie_canon`)."""
    prog = tmp_program(PRELUDE + ROTATE_HALF)
    for d in (6, 7):
        dims = {"S": 3, "D": d}
        args = random_args(prog, dims, seed=d)
        plan = eqsat.optimize(prog, dims)
        for backend in ("numpy", "triton"):
            assert close(plan.run(*args, backend=backend), eqsat.reference(prog, *args)), (d, backend)


def test_extents_equal_at_some_sizes_are_checked_at_those(tmp_program):
    """`x[::2]` and `x[1::2]` have (H + 1) // 2 and H // 2 rows: equal exactly at even H, so
    the program is taken, and optimize() at odd H says which extents differ, where."""
    prog = tmp_program(PRELUDE + POOL_BY_SLICES)
    dims = {"H": 6, "W": 8, "HO": 3, "WO": 4}
    args = random_args(prog, dims, seed=1)
    plan = eqsat.optimize(prog, dims)
    for backend in ("numpy", "triton"):
        assert close(plan.run(*args, backend=backend), eqsat.reference(prog, *args, shapes=dims)), backend
    with pytest.raises(eqsat.ArgumentError, match=r"prog_\d+\.py:\d+:\d+: .*\(\(H \+ 1\) // 2\) == \(H // 2\).*"
                                                  r"false at H=7.*broadcasts these extents"):
        eqsat.optimize(prog, {"H": 7, "W": 8, "HO": 3, "WO": 4})


def test_a_computed_contraction_extent_is_checked_at_the_sizes(tmp_program):
    """`np.reshape(x, (N, -1)) @ w` with w of CPP rows contracts C * P * P against CPP:
    equal at the sizes LeNet's fully connected layer is run at (a probe's port: refused at
    decoration, 'shape mismatch in `@`'), checked when the sizes are known."""
    prog = tmp_program(PRELUDE + '''
@program
def p(x: f32["N", "C", "P", "P"], w: f32["CPP", "F"]) -> f32["N", "F"]:
    return np.maximum(np.reshape(x, (N, -1)) @ w, 0.0)
''')
    dims = {"N": 4, "C": 3, "P": 5, "CPP": 75, "F": 6}
    args = random_args(prog, dims, seed=2)
    plan = eqsat.optimize(prog, dims)
    assert [k.kind for k in plan.kernels] == ["matmul"], plan
    for backend in ("numpy", "triton"):
        assert close(plan.run(*args, backend=backend), eqsat.reference(prog, *args)), backend
    with pytest.raises(eqsat.ArgumentError, match=r"C \* P\) \* P\) == CPP`, false at C=3, CPP=74.*`@` contracts"):
        eqsat.optimize(prog, {**dims, "CPP": 74})


def test_a_shape_read_through_a_name_bound_again_is_known_in_any_order(tmp_program):
    """`s = x * 2; s = s - 1; w = np.exp(s); w /= w.sum(axis=1, keepdims=True)`: w's shape
    comes from s's second binding, which is seeded after w in name order (a probe: refused,
    'its operand's shape is not known here')."""
    prog = tmp_program(PRELUDE + '''
@program
def p(x: f32["M", "N"]) -> f32["M", "N"]:
    s = x * 2.0
    s = s - 1.0
    w = np.exp(s)
    w /= w.sum(axis=1, keepdims=True)
    return w
''')
    dims = {"M": 4, "N": 5}
    runs_as_written(prog, dims, seed=3)


def test_a_dot_product_scaling_a_matrix_is_computed_once(tmp_program):
    """`s = u @ v; A * s` and `A - np.outer(u, v) / (1.0 + v @ u)` (Sherman-Morrison): the dot
    product reads no index of the matrix's computation, so it is a kernel of its own, read
    by the pointwise one (a probe: one kernel recomputing it for every element, N^3 work,
    556x numpy at N = 1000)."""
    prog = tmp_program(PRELUDE + '''
@program
def p(A: f32["N", "N"], u: f32["N"], v: f32["N"]) -> tuple[f32["N", "N"], f32["N", "N"]]:
    s = u @ v
    return A * s, A - np.outer(u, v) / (1.0 + np.dot(v, u))
''')
    dims = {"N": 300}
    args = random_args(prog, dims, seed=5)
    plan = eqsat.optimize(prog, dims, target="cpu")
    for backend in ("numpy", "triton"):
        assert close(plan.run(*args, backend=backend), eqsat.reference(prog, *args)), backend
    for k in plan.kernels:  # no kernel over the matrix holds a reduction
        assert k.kind != "reduction" or not k.term.args[0].args, plan


def test_a_name_bound_again_in_a_loop_and_normalized_is_reduced(tmp_program):
    """Power iteration as numpy users write it: `v = A @ v; v = v / np.linalg.norm(v)` in a
    loop, every binding of v of one shape (a probe: refused, quoting `np.sum(v * v)`)."""
    prog = tmp_program(PRELUDE + '''
@program
def p(T: int, A: f32["N", "N"], v0: f32["N"]) -> f32["N"]:
    v = v0 + 0.0
    for it in range(T):
        v = A @ v
        v = v / np.linalg.norm(v)
    return v
''')
    dims = {"N": 6, "T": 4}
    runs_as_written(prog, dims, seed=7)


def test_names_rebound_in_a_loop_to_numbers_and_rolls_keep_their_shapes(tmp_program):
    """A probe's (dense conjugate gradient, periodic Jacobi by np.roll): a tensor bound again
    in a loop to `alpha * p`, with `alpha = np.dot(p, Ap)` a number bound in the loop, or to
    `np.roll(a, 1) + a + np.roll(a, -1)`, lost its shape (`np.dot` and `np.roll` had none
    there), and `r.copy()` / `np.roll(a, 1)` were refused as unsupported functions."""
    cg = tmp_program('''
import numpy as np

@program
def cg(A: f32["N", "N"], b: f32["N"]) -> f32["N"]:
    x = np.zeros_like(b)
    r = b.copy()
    p = r.copy()
    rs = np.dot(r, r)
    for it in range(6):
        Ap = A @ p
        alpha = rs / np.dot(p, Ap)
        x = x + alpha * p
        r = r - alpha * Ap
        rsn = np.dot(r, r)
        p = r + (rsn / rs) * p
        rs = rsn
    return x
''')
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (12, 12))
    A = (a @ a.T / 12 + np.eye(12)).astype(np.float32)
    b = rng.uniform(-1, 1, 12).astype(np.float32)
    want = np.linalg.solve(A.astype(np.float64), b.astype(np.float64))
    for target in ("cpu", "h100"):
        got = eqsat.optimize(cg, {"N": 12}, target=target).run(A, b)
        assert rel_err(got, eqsat.reference(cg, A, b)) < 1e-4
        assert rel_err(got, want) < 1e-3  # (six steps of CG on a well-conditioned 12x12 system)
    jac = tmp_program('''
import numpy as np

@program
def jac(a0: f32["N"], T: int) -> f32["N"]:
    a = a0.copy()
    for t in range(T):
        a = (np.roll(a, 1) + a + np.roll(a, -1)) / 3.0
    return a
''')
    a0 = rng.uniform(-1, 1, 10).astype(np.float32)
    want = a0.astype(np.float64)
    for _ in range(4):
        want = (np.roll(want, 1) + want + np.roll(want, -1)) / 3.0
    for target in ("cpu", "h100"):
        got = eqsat.optimize(jac, {"N": 10, "T": 4}, target=target).run(a0, 4)
        assert rel_err(got, want) < 1e-5


def test_names_that_are_not_ascii(tmp_program):
    """Python allows `ξ`, `ψ` and `ι` as names (parameters, buffers, loop variables, scalar
    parameters); egglog's and isl's parsers read ASCII names only. The nest is still a
    matmul with its scaling fused (it failed inside egglog, then stayed a loop where isl
    could not parse the dataflow)."""
    prog = tmp_program('''
@program
def p(ξ: f32["N", "K"], w: f32["K", "M"], β: f32) -> f32["N", "M"]:
    ψ = empty((N, M))
    for ι in range(N):
        for j in range(M):
            s = 0.0
            for k in range(K):
                s += ξ[ι, k] * w[k, j]
            ψ[ι, j] = s * β
    return ψ
''')
    plan = runs_as_written(prog, {"N": 7, "K": 4, "M": 5}, seed=3)
    assert [k.kind for k in plan.kernels] == ["matmul"], plan


def test_a_module_constant_in_a_slice_bound(tmp_program):
    """`x[w * W:(w + 1) * W]` with `W = 8` at module level: the constant's value makes the
    bound affine and provably non-negative (it was refused: "may be negative"), and the
    window sums are one reduction."""
    prog = tmp_program('''
import numpy as np

W = 8

@program
def p(x: f32["N"]) -> f32["N // 8"]:
    r = np.empty((N // W,), dtype=np.float32)
    for w in range(N // W):
        r[w] = np.sum(x[w * W:(w + 1) * W])
    return r
''')
    plan = runs_as_written(prog, {"N": 40}, seed=5)
    assert [k.kind for k in plan.kernels] == ["reduction"], plan


def test_a_clamped_index_bound_to_a_local(tmp_program):
    """`ii = min(max(i + di, 0), H - 1)` then `a[ii, jj]` (a box blur with clamped edges,
    as image code writes it): the local is its clamp where it is read as an index (it was
    refused: "index uses 'ii', which is neither a loop variable nor a dimension"). A read
    before the binding in its block keeps the earlier iteration's value: not rewritten."""
    prog = tmp_program('''
@program
def p(a: f32["H", "W"]) -> f32["H", "W"]:
    out = empty((H, W))
    for i in range(H):
        for j in range(W):
            s = 0.0
            for di in range(-1, 2):
                ii = min(max(i + di, 0), H - 1)
                for dj in range(-1, 2):
                    jj = min(max(j + dj, 0), W - 1)
                    s += a[ii, jj]
            out[i, j] = s / 9.0
    return out
''')
    plan = runs_as_written(prog, {"H": 9, "W": 11}, seed=6)
    assert [k.kind for k in plan.kernels] == ["reduction"], plan
    x = random_args(prog, {"H": 9, "W": 11}, seed=6)[0]
    padded = np.pad(x.astype(np.float64), 1, mode="edge")
    truth = sum(padded[1 + di:10 + di, 1 + dj:12 + dj] for di in (-1, 0, 1) for dj in (-1, 0, 1)) / 9
    assert np.allclose(plan.run(x), truth, atol=1e-5)


def test_a_module_constant_as_a_tile_width(tmp_program):
    """`for k0 in range(0, K, 4): for k in range(k0, k0 + TILE)` with `TILE = 4` at module
    level is the tiled matmul it is with the literal (it was a masked reduction)."""
    prog = tmp_program('''
TILE = 4

@program
def p(a: f32["M", "K"], b: f32["K", "N"]) -> f32["M", "N"]:
    c = empty((M, N))
    for i in range(M):
        for j in range(N):
            acc = 0.0
            for k0 in range(0, K, TILE):
                for k in range(k0, k0 + TILE):
                    acc += a[i, k] * b[k, j]
            c[i, j] = acc
    return c
''')
    plan = runs_as_written(prog, {"M": 16, "N": 12, "K": 8}, seed=7)
    assert [k.kind for k in plan.kernels] == ["matmul"], plan


def test_an_index_local_bound_in_two_nests(tmp_program):
    """Two nests written alike each bind `j = i - 1` and read `x[j]` (two conv layers of a
    network written the same way): inside each nest the local is the nest's own (its first
    mention there binds it), so each is renamed and read as an index (it was refused: an
    index local must be bound once in the function)."""
    prog = tmp_program('''
import numpy as np

@program
def p(x: f32["N"]) -> tuple[f32["N"], f32["N"]]:
    a = np.zeros((N,))
    b = np.zeros((N,))
    for i in range(1, N):
        j = i - 1
        a[i] = x[j]
    for i in range(1, N):
        j = i - 1
        b[i] = 2.0 * x[j] + a[j]
    return a, b
''')
    plan = runs_as_written(prog, {"N": 9}, seed=8)
    assert "loop" not in [k.kind for k in plan.kernels], plan


@pytest.mark.parametrize("term", ["a[i, k] * b[k, j] * s[j]", "s[j] * a[i, k] * b[k, j]", "a[i, k] * b[k, j] * r[i]",
                                  "r[i] * (a[i, k] * b[k, j])"])
def test_a_scale_vector_inside_the_sum_is_a_matmul_prologue(tmp_program, term):
    """A per-column or per-row scale written inside the sum, in any grouping, is a matmul
    whose operand is scaled (a prologue): `(a[i, k] * b[k, j]) * s[j]` was a reduction,
    `a[i, k] * (b[k, j] * s[j])` a matmul."""
    prog = tmp_program(f'''
@program
def p(a: f32["M", "K"], b: f32["K", "N"], s: f32["N"], r: f32["M"]) -> f32["M", "N"]:
    c = empty((M, N))
    for i in range(M):
        for j in range(N):
            acc = 0.0
            for k in range(K):
                acc += {term}
            c[i, j] = acc
    return c
''')
    plan = runs_as_written(prog, {"M": 16, "N": 12, "K": 8}, seed=9)
    assert [k.kind for k in plan.kernels] == ["matmul"], plan


@pytest.mark.parametrize("expr", ["(x * 2.0).clip(min=0.0)", "np.clip(x, a_min=-0.5, a_max=0.5)",
                                  "np.clip(x, max=0.5)", "x.clip(-0.25, max=0.5)"])
def test_clip_bounds_by_keyword(tmp_program, expr):
    """numpy's clip with its bounds by keyword (`min`/`max`, or `a_min`/`a_max`) is the clip
    it is by position (the method's were refused: "unsupported function")."""
    prog = tmp_program(PRELUDE + f'''
@program
def p(x: f32["N"]) -> f32["N"]:
    return {expr}
''')
    plan = runs_as_written(prog, {"N": 9}, seed=10)
    assert [k.kind for k in plan.kernels] == ["pointwise"], plan


def test_sum_of_a_list_comprehension(tmp_program):
    """`sum([e for k in range(K)])` is the sum of the generator (it was refused: "unsupported
    function 'sum'")."""
    prog = tmp_program('''
@program
def p(a: f32["M", "K"], b: f32["K", "N"]) -> f32["M", "N"]:
    c = empty((M, N))
    for i in range(M):
        for j in range(N):
            c[i, j] = sum([a[i, k] * b[k, j] for k in range(K)])
    return c
''')
    plan = runs_as_written(prog, {"M": 6, "N": 5, "K": 4}, seed=11)
    assert [k.kind for k in plan.kernels] == ["matmul"], plan


@pytest.mark.parametrize("stmt, words", [
    ("    np.maximum(c, 0.0, out=c)", ["out=", "c = np.maximum"]),
    ("    h, e = np.histogram(x, 10)", ["np.histogram", "returns one value"]),
    ("    np.exp(c)", ["value is not used", "exp("]),
])
def test_unsupported_calls_say_what_to_write(tmp_program, stmt, words):
    """A call as a statement (numpy's `out=`) and a call unpacked as a tuple are named in
    the error (they said "unsupported statement: Expr" and "unpacking assigns a tuple of
    values written out")."""
    with pytest.raises(eqsat.ProgramError) as e:
        tmp_program(PRELUDE + f'''
@program
def p(x: f32["N"]) -> f32["N"]:
    c = x * 2.0
{stmt}
    return c
''')
    for w in words:
        assert w in str(e.value), str(e.value)


def test_a_boolean_flag_local(tmp_program):
    """`keep = True`, then `keep = False` under a condition, read by `x if keep else 0.0`
    and `not keep`: a flag is 1.0 or 0.0, read as a condition it is `keep != 0.0` (it was
    refused: "unsupported constant True")."""
    prog = tmp_program('''
@program
def p(x: f32["N"]) -> tuple[f32["N"], f32["N"]]:
    out = empty((N,))
    low = empty((N,))
    for j in range(N):
        keep = True
        if j > 0 and x[j - 1] > x[j]:
            keep = False
        out[j] = x[j] if keep else 0.0
        low[j] = 1.0 if not keep and x[j] < 0.0 else 0.0
    return out, low
''')
    plan = runs_as_written(prog, {"N": 17}, seed=12)
    assert "loop" not in [k.kind for k in plan.kernels], plan


def test_a_flag_toggled_by_not(tmp_program):
    """`flag = not flag` (and `b = not a` of another flag) keeps a flag a flag: 0.0 where
    it was set, else 1.0 (it was refused: "unsupported constant True")."""
    prog = tmp_program('''
@program
def p(x: f32["N"]) -> f32["N"]:
    y = empty((N,))
    flag = True
    for i in range(N):
        other = not flag
        if flag:
            y[i] = x[i]
        elif other and x[i] > 0.0:
            y[i] = -x[i]
        else:
            y[i] = 0.5
        flag = not flag
    return y
''')
    runs_as_written(prog, {"N": 9}, seed=3)


@pytest.mark.parametrize("body", [
    "y = x.reshape(A, 2, B)\n    w = y.transpose(2, 1, 0)\n    return w[:, 0]",
    "y = x.reshape(A, 2, B)\n    return y[:, 0].transpose(1, 0)",
    "y = x.reshape(A, 2, B)\n    z = y[:, 0]\n    return z.transpose(1, 0)",
    "y = x.reshape(A, 2, B)\n    return y.transpose(2, 1, 0)[:, 0]",  # (a reshape's shape is known: its sizes)
    "return np.transpose(x.reshape(A, 2, B), (2, 1, 0))[:, 0]",
])
def test_the_transpose_method_of_a_local_view(tmp_program, body):
    """`.transpose(axes)` of a name bound to a reshape or a slice (numpy's attention head
    split: `qkv.reshape(B, T, 3, NH, HS)[:, :, 0].transpose(0, 2, 1, 3)`) is the language's
    transpose, as on a parameter: it was refused as an unsupported function `y.transpose`
    (or an internal name's, for a slice) where the desugaring could not see its shape."""
    import numpy as np

    prog = tmp_program(f"import numpy as np\n@program\ndef p(x: f32['A', 'C']) -> f32['B', 'A']:\n    {body}\n")
    x = np.random.default_rng(0).standard_normal((3, 8)).astype(np.float32)
    plan = eqsat.optimize(prog, {"A": 3, "C": 8, "B": 4})
    np.testing.assert_array_equal(plan.run(x), x.reshape(3, 2, 4)[:, 0].T)


@pytest.mark.parametrize("policy", ["always", "never"])
@pytest.mark.parametrize("line", [
    "y[i] = np.float32(x[i]) * 2.0 + np.float32(i) * 0.5",
    "y[i] = x[i] + (np.float32(0.1) + np.float32(N) * np.float32(0.2))",
    "y[i] = x[i] / np.float32(N)",
])
def test_np_float32_of_a_value_is_numpys_cast(tmp_program, monkeypatch, policy, line):
    """`np.float32(e)` of a size, a loop variable or an element (C code ported to numpy
    writes it everywhere) was refused; a nest reading it runs as written (`lang.NO_TERM`),
    compiled or not, bit for bit the reference: numba types the cast float32 where the
    reference has one (`np.float32(N) * 0.2` stays in float32)."""
    import numpy as np

    monkeypatch.setenv("EQSAT_COMPILE_LOOPS", policy)
    prog = tmp_program(f"import numpy as np\n@program\ndef p(x: f32['N']) -> f32['N']:\n    y = empty((N,))\n"
                       f"    for i in range(N):\n        {line}\n    return y\n")
    x = np.random.default_rng(0).standard_normal(7).astype(np.float32)
    plan = eqsat.optimize(prog, {"N": 7})
    np.testing.assert_array_equal(plan.run(x), eqsat.reference(prog, x))


RESHAPES = {  # body, params, the kernels on h100 (a reshape of a contiguous tensor is a view)
    "around_a_matmul": ('h = x.reshape(B * S, D) @ w + b\n    return np.maximum(h, 0.0).reshape(B, S, E)',
                        'x: f32["B", "S", "D"], w: f32["D", "E"], b: f32["E"]', ["matmul"]),
    "minus_one_and_lists": ('return np.reshape(x, [-1, D]) @ w',
                            'x: f32["B", "S", "D"], w: f32["D", "E"]', ["matmul"]),
    "of_a_transposed_view": ('t = y.T\n    return t.reshape(S, D) @ w', 'y: f32["D", "S"], w: f32["D", "E"]',
                             ["matmul"]),
    "heads_split": ('q = (a @ w2).reshape(S, 2, D // 2).transpose(1, 0, 2)\n    return q @ q.transpose(0, 2, 1)',
                    'a: f32["S", "D"], w2: f32["D", "D"]', ["matmul", "matmul"]),
    "two_in_one_statement": ('return np.reshape(z * 2.0, (D, -1)) @ z.ravel().reshape(S, D)',
                             'z: f32["S", "D"]', None),
    "bound_then_looped": ('y2 = z.reshape(D, S)\n    out = np.empty((D, S), dtype=np.float32)\n'
                          '    for i in range(D):\n        for j in range(S):\n'
                          '            out[i, j] = y2[i, j] if y2[i, j] > 0 else 0.1 * y2[i, j]\n    return out',
                          'z: f32["S", "D"]', ["pointwise"]),
    "in_a_kept_nest": ('t = z.T\n    out = np.empty((E,), dtype=np.float32)\n    for i in range(E):\n'
                       '        f = t.ravel()\n        out[i] = f[i % (S * D)] * v[i] + f[(i * 7) % (S * D)]\n'
                       '    return out', 'z: f32["S", "D"], v: f32["E"]', None),
}


@pytest.mark.parametrize("policy", ["never", "always"])
@pytest.mark.parametrize("name", sorted(RESHAPES))
def test_reshapes_are_views_in_the_egraph(tmp_program, monkeypatch, name, policy):
    """numpy's reshape, read as a value (`lower`: a `Ten.reshape` term), not a copy loop
    indexed by `//` and `%` kept as written: a reshape around a matmul is the matmul alone.
    Kept nests that read one run it compiled (numba reshapes a contiguous copy) and not."""
    monkeypatch.setenv("EQSAT_COMPILE_LOOPS", policy)
    body, params, kinds = RESHAPES[name]
    prog = tmp_program(PRELUDE + f"@program\ndef p({params}):\n    {body}\n")
    dims = {d: n for d, n in {"B": 2, "S": 4, "D": 6, "E": 3}.items() if d in prog.dims}
    args = random_args(prog, dims, seed=3)
    want = eqsat.reference(prog, *args, shapes=dims)
    for target in ("h100", "cpu"):
        plan = eqsat.optimize(prog, dims, target=target)
        for backend in ("numpy", "triton"):
            got = plan.run(*args, backend=backend)
            assert np.shape(got) == np.shape(want) and rel_err(got, want) < 1e-5, (name, target, backend, plan)
        if kinds is not None and target == "h100":
            assert [k.kind for k in plan.kernels] == kinds, plan


def test_a_running_sum_keeps_its_first_elements_zero_sign(tmp_program):
    """np.cumsum's first element is x's own, -0.0 included (a probe found 0.0: the running
    sum started at 0.0; it starts at -0.0, the exact additive identity)."""
    prog = tmp_program(PRELUDE + '''
@program
def p(x: f32["M", "N"]):
    return np.cumsum(x, axis=1) + np.cumsum(x, axis=0) * 1.0
''')
    x = np.array([[-0.0, 1.0, -1.0], [-0.0, -0.0, 2.0]], np.float32)
    want = eqsat.reference(prog, x)
    for target in ("h100", "cpu"):
        plan = eqsat.optimize(prog, {"M": 2, "N": 3}, target=target)
        for backend in ("numpy", "triton"):
            got = plan.run(x, backend=backend)
            assert np.array_equal(got, want) and np.array_equal(np.signbit(got), np.signbit(want)), (backend, got)


FILLED = {  # arrays made from a shape, as operands and as extents (probes of 2026-11-28)
    # a negative index of a product with np.ones: "index 0 of 'h1' ranges over -1..-1"
    "negative_index_of_a_product": ('''
import numpy as np

@program
def p(x: f32["M", "K"], s: f32["K"]) -> f32["K"]:
    h1 = x * np.ones((M, K))
    return h1[-1] + s
''', lambda x, s: x[-1] + s),
    # np.ones with its dtype by position: "unsupported function 'np.ones'"
    "dtype_by_position": ('''
import numpy as np

@program
def p(x: f32["M", "K"], s: f32["K"]) -> f32["M", "K"]:
    return x * np.ones((M, K), np.float32) + s
''', lambda x, s: x + s),
    # extents written with .shape, broadcast against a keepdims reduction (npbench resnet):
    # the assertion that the extents agree read `x.shape[1] + 2`, which an assert may not
    "shape_extents_in_a_broadcast": ('''
import numpy as np

@program
def p(x: f32["M", "K"], s: f32["K"]) -> f32["M", "K + 2"]:
    padded = np.zeros((x.shape[0], x.shape[1] + 2), dtype=np.float32) + 1.0
    mean = np.mean(padded, axis=0, keepdims=True)
    std = np.std(padded, axis=0, keepdims=True)
    return (padded - mean) / np.sqrt(std + 1e-05) + 2.0
''', lambda x, s: np.full((x.shape[0], x.shape[1] + 2), 2.0, np.float32)),
}


@pytest.mark.parametrize("name", sorted(FILLED))
def test_arrays_made_from_a_shape(tmp_program, name):
    src, truth = FILLED[name]
    prog = tmp_program(src)
    shapes = {"M": 3, "K": 4}
    args = random_args(prog, shapes, seed=2)
    want = eqsat.reference(prog, *args)
    assert rel_err(want, truth(*args)) < 1e-5
    for target in ("h100", "cpu"):
        assert rel_err(eqsat.optimize(prog, shapes, target=target).run(*args), want) < 1e-5


def test_a_started_sum_over_a_split_axis_is_one_sum(tmp_program):
    """An accumulator started at another tensor's element, then its k axis in two loops
    (an independent generator's spelling, 2026-11-28, each product named first): `(start +
    sum[k < 8]) + sum[8 <= k < K]` is the start plus one sum, a matmul with its epilogue (it
    was a kept loop)."""
    prog = tmp_program(PRELUDE + '''
@program
def p(x: f32["M", "K"], w: f32["N", "K"], r: f32["M", "N"], beta: f32) -> f32["M", "N"]:
    y = empty((M, N))
    for j in range(N):
        for i in range(M):
            acc = beta * r[i, j]
            for k in range(0, 8):
                pk = x[i, k] * w[j, k]
                acc += pk
            for k in range(8, K):
                pk = x[i, k] * w[j, k]
                acc += pk
            y[i, j] = np.clip(acc, -1.0, 2.0)
    return y
''')
    dims = {"M": 5, "N": 7, "K": 20}
    args = random_args(prog, dims, seed=4)
    plan = eqsat.optimize(prog, dims, target="cpu")
    assert close(plan.run(*args), eqsat.reference(prog, *args)), plan
    assert [(k.kind, sorted(k.epilogue)) for k in plan.kernels] == [("matmul", ["add", "max", "min", "mul"])], plan


def test_a_sum_over_a_split_axis_into_an_updated_input(tmp_program):
    """The same into an input scaled in place by a nest of its own, the products in another
    order in each loop (an independent generator's spelling, 2026-11-28): the scaled input
    plus one sum, a matmul with its epilogue (it was two reduction kernels)."""
    prog = tmp_program(PRELUDE + '''
@program
def p(x: f32["M", "K"], w: f32["N", "K"], a: f32, r: f32["M", "N"], b: f32) -> f32["M", "N"]:
    wt = np.transpose(w)
    for i in range(M):
        for j in range(N):
            r[i, j] *= b
    for i in range(M):
        for j in range(N):
            for k in range(0, 9):
                r[i, j] = a * wt[k, j] * x[i, k] + r[i, j]
            for k in range(9, K):
                r[i, j] = a * x[i, k] * wt[k, j] + r[i, j]
    for i in range(M):
        for j in range(N):
            r[i, j] = gelu(r[i, j]) * (1.0 / K)
    return r
''')
    dims = {"M": 5, "N": 7, "K": 20}
    args = random_args(prog, dims, seed=4)
    want = eqsat.reference(prog, *[a.copy() if hasattr(a, "copy") else a for a in args])
    plan = eqsat.optimize(prog, dims, target="cpu")
    assert close(plan.run(*args), want), plan
    assert [k.kind for k in plan.kernels] == ["matmul"], plan


LAST_VALUES = {  # a loop variable read after its loop: its last value, as Python's
    "down": ("""
@program
def p(x: f32["N"]) -> f32["N"]:
    out = zeros((N,))
    for i in range(N - 1, -1, -1):
        out[i] = x[i] * 2.0
    out[1] = x[i] + i
    return out
""", {"N": 5}),
    "step": ("""
@program
def p(x: f32["N"]):
    s = 0.0
    for i in range(1, N, 2):
        s += x[i]
    return s * i
""", {"N": 6}),
    "inner_loop_by_the_outer": ("""
@program
def p(x: f32["M", "N"]) -> f32["M"]:
    out = zeros((M,))
    for i in range(M):
        for j in range(i, N):
            out[i] += x[i, j]
        out[i] = out[i] * j
    return out
""", {"M": 3, "N": 5}),
    "over_a_shape": ("""
@program
def p(x: f32["M", "N"]) -> f32["M"]:
    out = zeros((M,))
    for j in range(x.shape[1]):
        out[0] += x[0, j]
    out[1] = x[1, j]
    return out
""", {"M": 3, "N": 5}),
}


@pytest.mark.parametrize("name", sorted(LAST_VALUES))
def test_a_loop_variable_read_after_its_loop_is_its_last_value(tmp_program, name):
    """Two probes wrote `return s * i` and `out[1] = x[i]` after `for i in range(...)`
    (2026-11-28): refused then; Python reads the last value, and so does the plan."""
    src, dims = LAST_VALUES[name]
    prog = tmp_program(PRELUDE + src)
    args = random_args(prog, dims, seed=3)
    plan = eqsat.optimize(prog, dims, target="cpu")
    for backend in ("numpy", "triton"):
        assert close(plan.run(*args, backend=backend), eqsat.reference(prog, *args)), (name, backend, plan)


def test_a_loop_variable_after_a_loop_that_ran_no_iteration_is_refused(tmp_program):
    """Where the loop runs no iteration Python reads what the name was before it (here the
    inner loop's variable from the outer loop's previous iteration): refused at those
    sizes, saying why."""
    prog = tmp_program(PRELUDE + """
@program
def p(x: f32["M", "N"]) -> f32["M"]:
    out = zeros((M,))
    for i in range(M):
        for j in range(i + 1, N):
            out[i] += x[i, j]
        out[i] = out[i] * j
    return out
""")
    assert eqsat.optimize(prog, {"M": 3, "N": 4}).run(*random_args(prog, {"M": 3, "N": 4})) is not None
    with pytest.raises(eqsat.ArgumentError, match="runs no iteration here"):
        eqsat.optimize(prog, {"M": 3, "N": 3})
