"""Conditionals as values (issue 12): `a if c else b` and `if`/`else` inside loop nests
become select terms (if-conversion, `eqsat/ifconvert.py`), so blends, clamps, leaky
activations and conditional sums are lifted instead of kept as loops. Each program runs on
both backends against `reference`, NaN inputs included; the near misses stay loops."""
from __future__ import annotations

import numpy as np
import pytest

import eqsat
from conftest import elif_chain_source, random_args, rel_err

D = {"M": 5, "N": 6, "K": 7}

LIFTED = {
    # an image blend with if/else on pixel values: one elementwise kernel
    "overlay": ('''
@program
def p(a: f32["M", "N"], b: f32["M", "N"]) -> f32["M", "N"]:
    c = empty((M, N))
    for i in range(M):
        for j in range(N):
            if a[i, j] < 0.5:
                c[i, j] = 2.0 * a[i, j] * b[i, j]
            else:
                c[i, j] = 1.0 - 2.0 * (1.0 - a[i, j]) * (1.0 - b[i, j])
    return c
''', ["pointwise"]),
    # the same written as a conditional expression with `and` / `not`
    "blend_expression": ('''
@program
def p(a: f32["M", "N"], b: f32["M", "N"]) -> f32["M", "N"]:
    c = empty((M, N))
    for i in range(M):
        for j in range(N):
            c[i, j] = a[i, j] * b[i, j] if a[i, j] < 0.5 and not b[i, j] > 0.9 else a[i, j] - b[i, j]
    return c
''', ["pointwise"]),
    # a leaky activation written as an if after the reduction: fused into the matmul
    "leaky_matmul": ('''
@program
def p(a: f32["M", "K"], b: f32["K", "N"]) -> f32["M", "N"]:
    c = empty((M, N))
    for i in range(M):
        for j in range(N):
            s = 0.0
            for k in range(K):
                s += a[i, k] * b[k, j]
            if s < 0.0:
                s = 0.1 * s
            c[i, j] = s
    return c
''', ["matmul"]),
    # a triangular mask on a contraction's operand (`triu(a.T, 2) @ b`): a matmul with the mask as
    # its prologue; NaN in the masked-out part of `a` is not read, NaN in `b` is (as in the loop)
    "masked_operand_matmul": ('''
@program
def p(a: f32["K", "M"], b: f32["K", "N"]) -> f32["M", "N"]:
    c = zeros((M, N))
    for i in range(M):
        for j in range(N):
            for k in range(K):
                c[i, j] += (a[k, i] if k > i + 1 else 0.0) * b[k, j]
    return c
''', ["matmul"]),
    # a condition on the operand's own elements (relu written as a conditional)
    "relu_operand_matmul": ('''
@program
def p(a: f32["M", "K"], b: f32["K", "N"]) -> f32["M", "N"]:
    c = zeros((M, N))
    for i in range(M):
        for j in range(N):
            for k in range(K):
                c[i, j] += (a[i, k] if a[i, k] > 0.0 else 0.0) * b[k, j]
    return c
''', ["matmul"]),
    # a row max written with `if` (strict >: `m = max(m, e)` for every value, NaN included)
    # and a row min with the comparison the other way round: reductions
    "max_by_if": ('''
@program
def p(x: f32["M", "N"]) -> tuple[f32["M"], f32["M"]]:
    hi = empty((M,))
    lo = empty((M,))
    for i in range(M):
        m = x[i, 0]
        n = x[i, 0]
        for j in range(1, N):
            if x[i, j] > m:
                m = x[i, j]
            if n > x[i, j]:
                n = x[i, j]
        hi[i] = m
        lo[i] = n
    return hi, lo
''', ["reduction", "reduction"]),
    # a name set first on both branches and read after the `if` (a probe's, 2026-11-27: it
    # stayed a loop, "'o' may be read before it is assigned")
    "set_on_both_branches": ('''
@program
def p(a: f32["M", "K"], b: f32["K", "N"]) -> f32["M", "N"]:
    y = empty((M, N))
    for i in range(M):
        for j in range(N):
            t = 0.0
            for k in range(K):
                t += a[i, k] * b[k, j]
            if t > 0.0:
                o = t
            else:
                o = 0.0
            y[i, j] = o
    return y
''', ["matmul"]),
    # the same through an elif chain and a nested if, read inside a branch after it is set,
    # and a name the condition reads set on both branches
    "set_on_every_way": ('''
@program
def p(x: f32["M", "N"], w: f32["N"]) -> tuple[f32["M", "N"], f32["M", "N"], f32["M", "N"]]:
    y = empty((M, N))
    z = empty((M, N))
    u = empty((M, N))
    for i in range(M):
        for j in range(N):
            t = x[i, j]
            if t > 0.5:
                o = t * 2.0
            elif t > 0.0:
                if t > 0.25:
                    o = 1.0
                else:
                    o = t
            else:
                o = -1.0
            y[i, j] = o
            if t > w[j]:
                q = t - w[j]
                q = q * q
                z[i, j] = q
            else:
                q = 3.0
                z[i, j] = q - t
            z[i, j] += q
            a = x[i, j]
            if a > w[j]:
                a = a * 2.0
            else:
                a = w[j] + 1.0
            u[i, j] = a
    return y, z, u
''', ["pointwise", "pointwise", "pointwise"]),
    # numpy's maximum and minimum of a scalar set again (its operand read in the NaN tests and
    # the max: one node at three places, which the dataflow counted as three reads and
    # numbered the next statement's read like the last: "a loop-carried dependence")
    "numpy_clamp_of_a_scalar": ('''
import numpy as np

@program
def p(a: f32["M", "K"], b: f32["K", "N"]) -> f32["M", "N"]:
    y = empty((M, N))
    for i in range(M):
        for j in range(N):
            s = 0.0
            for k in range(K):
                s += a[i, k] * b[k, j]
            z = s
            z = np.maximum(z, 0.0)
            z = np.minimum(z, 6.0)
            y[i, j] = z
    return y
''', ["matmul"]),
    # a clamp by if/elif (the condition reads what a branch writes: hoisted once)
    "clamped_sum": ('''
@program
def p(x: f32["M", "N"]) -> f32["M"]:
    out = empty((M,))
    for i in range(M):
        s = 0.0
        for j in range(N):
            v = x[i, j]
            if v > 1.0:
                v = 1.0
            elif v < -1.0:
                v = -1.0
            s += v
        out[i] = s
    return out
''', ["reduction"]),
    # each branch accumulates its own term (`s += a` / `s -= b`): one sum of the two
    # selected terms (it was a loop: "'s' is updated by several statements in loop 'k'")
    "accumulation_in_both_branches": ('''
@program
def p(a: f32["M", "K"], b: f32["M", "K"]) -> f32["M"]:
    y = empty((M,))
    for i in range(M):
        s = 0.0
        for k in range(K):
            if a[i, k] > 0.0:
                s += a[i, k]
            elif a[i, k] > -0.5:
                s += 2.0 * b[i, k]
            else:
                s -= b[i, k]
        y[i] = s
    return y
''', ["reduction"]),
    # an accumulation, then a conditional one into the same sum: one reduction
    "accumulation_then_a_conditional_one": ('''
@program
def p(a: f32["M", "K"], b: f32["M", "K"]) -> f32["M"]:
    y = empty((M,))
    for i in range(M):
        s = 0.0
        for k in range(K):
            s += a[i, k] * b[i, k]
            if a[i, k] > 0.5:
                s -= b[i, k]
        y[i] = s
    return y
''', ["reduction"]),
    # a conditional accumulation stays a reduction
    "positive_mean": ('''
@program
def p(x: f32["M", "N"]) -> f32["M"]:
    out = empty((M,))
    for i in range(M):
        s = 0.0
        n = 0.0
        for j in range(N):
            if x[i, j] > 0.0:
                s += x[i, j]
                n += 1.0
        out[i] = s / (n + 1.0)
    return out
''', ["reduction"]),
    # a branch that changes what its condition reads, then keeps going
    "branch_rewrites_condition": ('''
@program
def p(x: f32["N"]) -> f32["N"]:
    y = zeros((N,))
    for i in range(N):
        t = x[i]
        if t > 0.0:
            t = -t
            y[i] = t
        else:
            y[i] = 2.0 * t
    return y
''', ["pointwise"]),
}

# triangular nests: bounds that depend on an enclosing loop become a mask over the hull
LIFTED["triangular_rank_k"] = ('''
@program
def p(alpha: f32, C: f32["N", "N"], A: f32["N", "K"]) -> f32["N", "N"]:
    for i in range(N):
        for j in range(i + 1):
            C[i, j] *= 0.5
        for k in range(K):
            for j in range(i + 1):
                C[i, j] += alpha * A[i, k] * A[j, k]
    return C
''', ["matmul"])
LIFTED["upper_triangle"] = ('''
@program
def p(a: f32["N", "N"]) -> f32["N", "N"]:
    c = zeros((N, N))
    for i in range(N):
        for j in range(i, N):
            c[i, j] = a[i, j] * 2.0
    return c
''', ["pointwise"])

# a triangular nest whose read leaves the tensor on the hull (a[i - j] for j > i): masked
# there (loads are total, the select drops what they read), one reduction
LIFTED["triangular_out_of_hull"] = ('''
@program
def p(a: f32["N"]) -> f32["N"]:
    c = zeros((N,))
    for i in range(N):
        for j in range(i + 1):
            c[i] += a[i - j]
    return c
''', ["reduction"])

KEPT = {
    # the access is in bounds only where the condition holds: not predicated
    "guarded_index": '''
@program
def p(a: f32["N"]) -> f32["N"]:
    c = zeros((N,))
    for j in range(N):
        if j > 0:
            c[j] = c[j - 1] + a[j]
    return c
''',
    # the last positive value so far: a recurrence through the select
    "last_positive": '''
@program
def p(x: f32["N"]) -> f32["N"]:
    y = zeros((N,))
    t = 0.0
    for i in range(N):
        if x[i] > 0.0:
            t = x[i]
        y[i] = t
    return y
''',
}


def _inputs(prog, seed, nan):
    rng = np.random.default_rng(seed)
    out = []
    for q in prog.params:
        if q.shape is None:
            out.append(np.float32(1.25))
            continue
        x = (2 * rng.standard_normal([D[d] for d in q.shape])).astype(np.float32)
        if nan:
            x.flat[::4] = np.nan
        out.append(x)
    return out


def _check(plan, prog):
    for nan in (False, True):
        args = _inputs(prog, 3, nan)
        want = eqsat.reference(prog, *args)
        for backend in ("numpy", "triton"):
            got = plan.run(*args, backend=backend)
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, equal_nan=True,
                                       err_msg=f"{backend}, nan={nan}\n{plan}")


@pytest.mark.parametrize("name", sorted(LIFTED))
def test_conditional_is_lifted(tmp_program, name):
    src, kinds = LIFTED[name]
    prog = tmp_program(src)
    plan = eqsat.optimize(prog, D)
    assert [k.kind for k in plan.kernels] == kinds, plan
    _check(plan, prog)


@pytest.mark.parametrize("name", sorted(KEPT))
def test_conditional_that_must_stay_a_loop(tmp_program, name):
    prog = tmp_program(KEPT[name])
    plan = eqsat.optimize(prog, D)
    assert any(k.kind == "loop" for k in plan.kernels), plan
    _check(plan, prog)


def test_reserved_prefix_is_refused(tmp_program):
    with pytest.raises(eqsat.ProgramError, match="reserved"):
        tmp_program('''
@program
def p(x: f32["N"]) -> f32["N"]:
    eqsat_if_0 = 1.0
    return x * eqsat_if_0
''')


def test_triangular_nest_reading_rows_not_yet_updated(tmp_program):
    """trmm's shape: row i accumulates rows k > i, which the nest updates only later, so
    every read sees the value from before the nest. The loop widened to its hull keeps its
    own bounds for the exact dataflow (the hull's extra instances are predicated no-ops), so
    isl confirms those reads and the nest is lifted. Entries the original never reads may
    hold inf or NaN: the masked form must not let them in, on either backend."""
    prog = tmp_program("""
@program
def upper(alpha: f32, A: f32["M", "M"], B: f32["M", "N"]) -> f32["M", "N"]:
    for i in range(M):
        for j in range(N):
            for k in range(i + 1, M):
                B[i, j] += A[k, i] * B[k, j]
            B[i, j] = alpha * B[i, j]
    return B
""")
    dims = {"M": 7, "N": 5}
    plan = eqsat.optimize(prog, dims)
    assert "loop" not in [k.kind for k in plan.kernels], plan
    rng = np.random.default_rng(3)
    A = rng.standard_normal((7, 7)).astype(np.float32)
    B = rng.standard_normal((7, 5)).astype(np.float32)
    A[np.triu_indices(7)] = np.inf  # A[k, i] with k <= i: never read
    A[0, 0] = np.nan
    want = eqsat.reference(prog, 1.5, A, B)
    assert np.all(np.isfinite(want))
    for backend in ("numpy", "triton"):
        got = plan.run(1.5, A, B, backend=backend)
        assert np.allclose(got, want, rtol=1e-5, atol=1e-5), (backend, got, want)


# Stores that write part of a tensor: along a diagonal, at a fixed index (also outside any
# loop), from a loop over part of the axis, from a triangular nest with a loop inside, or
# under a data-dependent `if` around a loop. Each becomes a total store under a mask
# (eqsat/ifconvert.py) and is lifted; each runs on both backends against `reference`.
PARTIAL = {
    "diagonal_and_corner": '''
@program
def p(a: f32["N", "N"]) -> f32["N", "N"]:
    c = empty((N, N))
    for i in range(N):
        for j in range(N):
            c[i, j] = a[i, j] * 3.0
    for i in range(N - 1):
        c[i, i] = 1.0
    c[N - 1, 0] = 2.0
    return c
''',
    "boundary_rows": '''
@program
def p(a: f32["M", "N"]) -> f32["M", "N"]:
    c = zeros((M, N))
    for i in range(1, M - 1):
        for j in range(N):
            c[i, j] = a[i, j] + 1.0
    for j in range(N):
        c[0, j] = a[0, j]
    return c
''',
    "gram_upper_mirrored": '''
@program
def p(a: f32["K", "N"]) -> f32["N", "N"]:
    c = empty((N, N))
    for i in range(N):
        for j in range(i, N):
            s = 0.0
            for k in range(K):
                s += a[k, i] * a[k, j]
            c[i, j] = s * 0.5
            c[j, i] = s * 0.5
    return c
''',
    "if_around_a_loop": '''
@program
def p(x: f32["M", "N"], g: f32["M"]) -> f32["M"]:
    out = zeros((M,))
    for i in range(M):
        if g[i] > 0.0:
            for j in range(N):
                out[i] += x[i, j]
        else:
            out[i] = -1.0
    return out
''',
}


@pytest.mark.parametrize("name", sorted(PARTIAL))
def test_partial_store_is_lifted(tmp_program, name):
    prog = tmp_program(PARTIAL[name])
    plan = eqsat.optimize(prog, D)
    assert "loop" not in [k.kind for k in plan.kernels], plan
    _check(plan, prog)


def test_triangle_with_inner_loop_is_one_matmul(tmp_program):
    prog = tmp_program(PARTIAL["gram_upper_mirrored"])
    plan = eqsat.optimize(prog, D)
    assert [k.kind for k in plan.kernels] == ["matmul"], plan


def test_shifted_store_stays_a_loop(tmp_program):
    """`c[i + 1] = ...` over i writes along a shifted axis: not made total (a different
    form), kept as written and still correct."""
    prog = tmp_program('''
@program
def p(a: f32["N"]) -> f32["N"]:
    c = zeros((N,))
    for i in range(N - 1):
        c[i + 1] = a[i] * 2.0
    return c
''')
    plan = eqsat.optimize(prog, D)
    assert any(k.kind == "loop" for k in plan.kernels), plan
    _check(plan, prog)


def test_a_triangle_inside_a_loop_over_part_of_its_axis_is_a_matmul(tmp_program):
    """`for i in range(M - 1): for v in range(i + 1, M)` (a strictly lower triangle, NPBench's
    correlation): the inner level's local accumulator was guarded again by the outer level,
    reading its temporary before it was set, and the nest stayed a loop (20 ms against a
    0.5 ms matmul at 400x300)."""
    prog = tmp_program('''
@program
def p(data: f32["N", "M"]) -> f32["M", "M"]:
    corr = zeros((M, M))
    for i in range(M - 1):
        for v in range(i + 1, M):
            acc = 0.0
            for k in range(N):
                acc += data[k, i] * data[k, v]
            corr[v, i] = acc
    return corr
''')
    for dims in ({"N": 7, "M": 5}, {"N": 2, "M": 1}):
        args = random_args(prog, dims, seed=1)
        plan = eqsat.optimize(prog, dims, target="cpu")
        want = eqsat.reference(prog, *args)
        for backend in ("numpy", "triton"):
            assert rel_err(plan.run(*args, backend=backend), want) < 1e-5
    plan = eqsat.optimize(prog, {"N": 64, "M": 48}, target="cpu")
    assert [k.kind for k in plan.kernels] == ["matmul"], plan


TRIANGLES_IN_PARTIAL_LOOPS = {
    # a probe's, after the fix above: an outer level's local accumulated inside a triangle
    # was left unguarded by the triangle's bound (sums over the wrong elements, doubled)
    "acc_of_a_strict_triangle": '''
@program
def p(A: f32["N", "N"]) -> f32["N"]:
    y = zeros((N,))
    for i in range(N - 1):
        acc = 0.0
        for j in range(i + 1, N):
            acc += A[i, j]
        y[i] = acc
    return y
''',
    "max_of_a_lower_triangle": '''
@program
def p(A: f32["N", "N"]) -> f32["N"]:
    y = zeros((N,))
    for i in range(1, N):
        m = -100.0
        for j in range(i):
            m = max(m, A[i, j])
        y[i] = m
    return y
''',
}


@pytest.mark.parametrize("name", sorted(TRIANGLES_IN_PARTIAL_LOOPS))
def test_an_outer_local_accumulated_in_a_triangle_stays_guarded(tmp_program, name):
    prog = tmp_program(TRIANGLES_IN_PARTIAL_LOOPS[name])
    for n in (1, 2, 3, 5):
        args = random_args(prog, {"N": n}, seed=n)
        plan = eqsat.optimize(prog, {"N": n}, target="cpu")
        want = eqsat.reference(prog, *args)
        assert rel_err(plan.run(*args), want) < 1e-5, (n, plan)


# every float class against every other: NaN, both zeros, infinities, ties
_SPECIAL = np.array([np.nan, 0.0, -0.0, 1.0, -1.0, -0.5, 0.25, 2.0, np.inf, -np.inf], np.float32)


def _same_bits(got, want) -> np.ndarray:
    """Where `got` is `want` exactly: the same number with the same sign (zeros), or both NaN."""
    got, want = np.asarray(got), np.asarray(want)
    return ((got == want) & (np.signbit(got) == np.signbit(want))) | (np.isnan(got) & np.isnan(want))


@pytest.mark.parametrize("form", ["maximum(x, y)", "minimum(x, y)", "maximum(y, x)", "maximum(x, 0.0)",
                                  "maximum(0.0, x)", "minimum(x, -0.0)", "minimum(-0.0, x)", "maximum(x, -0.5)",
                                  "maximum(2.0, x)", "minimum(x, 0.25)", "np.maximum(x, float('nan'))"])
def test_numpy_maximum_and_minimum_are_exact(tmp_program, form):
    """numpy's maximum and minimum, bit for bit on both backends: NaN from either operand,
    and on a tie of zeros the second operand's sign (the `max` term keeps its first)."""
    prog = tmp_program(f'''
import numpy as np

@program
def p(x: f32["N"], y: f32["N"]) -> f32["N"]:
    return {form} * (y * 0.0 + 1.0)
''')
    x, y = np.repeat(_SPECIAL, len(_SPECIAL)), np.tile(_SPECIAL, len(_SPECIAL))
    with np.errstate(invalid="ignore"):
        want = eval(form.replace("np.", "").replace("maximum", "np.maximum").replace("minimum", "np.minimum"),
                    {"np": np, "x": x, "y": y}) * (y * np.float32(0) + np.float32(1))
        plan = eqsat.optimize(prog, {"N": len(x)})
        for backend in ("numpy", "triton"):
            got = plan.run(x, y, backend=backend)
            bad = np.nonzero(~_same_bits(got, want))[0]
            assert not len(bad), (backend, [(x[i], y[i], got[i], want[i]) for i in bad[:4]])


def test_a_chain_of_clamps_by_numbers_is_one_kernel(tmp_program):
    """`h = maximum(h, -0.5)` reads `h` once (a number is never NaN), so a chain of clamps
    and activations at tensor level fuses into one kernel (`eqsat/prefuse.py`)."""
    steps = ["tanh(h * 0.9 + b)", "maximum(h, -0.5)", "minimum(h, 0.7)", "maximum(0.1, h) - 0.2"] * 5
    body = "\n".join(f"    h = {s}" for s in steps)
    prog = tmp_program(f'''
@program
def p(x: f32["M", "N"], b: f32["N"]) -> f32["M", "N"]:
    h = x
{body}
    return h
''')
    plan = eqsat.optimize(prog, D)
    assert [k.kind for k in plan.kernels] == ["pointwise"], plan
    _check(plan, prog)


def test_an_elif_chain_with_a_local_in_each_branch_is_one_elementwise_kernel(tmp_program):
    """An if/elif chain whose branches each set `u` first and then read it (a piecewise
    function with a temporary): each level localizes its own `u` (the rest of the chain
    sets it before reading it), so the nest is one elementwise kernel, not a loop refused
    for "'u' may be read before it is assigned"; the values are the reference's, NaN
    inputs included."""
    prog = tmp_program(elif_chain_source(6, local=True))
    plan = eqsat.optimize(prog, {"M": 64})
    assert [k.kind for k in plan.kernels] == ["pointwise"], plan
    rng = np.random.default_rng(0)
    for nan in (False, True):
        x = rng.uniform(-1.2, 1.2, 64).astype(np.float32)
        if nan:
            x[::5] = np.nan
        want = eqsat.reference(prog, x)
        for backend in ("numpy", "triton"):
            np.testing.assert_allclose(plan.run(x, backend=backend), want, rtol=1e-6, equal_nan=True)


def test_a_kept_nest_names_the_users_variable_not_a_temporary():
    """A reason naming a temporary if-conversion or the front end made says the user's
    variable (`'eqsat_if_sc_10' is updated ...` was what a probe read)."""
    from eqsat.lower import shown_names

    assert shown_names("'eqsat_if_sc_10' is updated inside a reduction loop") == \
        "'sc' is updated inside a reduction loop"
    assert shown_names("a store into 'eqsat_x1_d' is not indexed") == "a store into 'd' is not indexed"
    assert "condition" in shown_names("'eqsat_if_3' may be read before it is assigned")
    assert "numpy reduction" in shown_names("'eqsat_red0_of' may be read before it is assigned")
    assert shown_names("'acc' may be read") == "'acc' may be read"


@pytest.mark.parametrize("body", [
    "    for i in range(1, N):\n        y[i] += 1.0\n",
    "    for i in range(N):\n        if x[i] > 0.0:\n            y[i] += x[i]\n",
    "    for i in range(N):\n        if i < 1:\n            y[i] = x[i]\n        else:\n            y[i] += 1.0\n",
    "    for i in range(N):\n        s = y[i]\n        if x[i] > 0.0:\n            s += x[i]\n        y[i] = s\n",
])
def test_an_element_a_guarded_update_skips_keeps_its_sign_of_zero(tmp_program, body):
    """`if c: y[i] += v` where c fails leaves y[i] as it was: -0.0 stays -0.0 (the update is
    `y[i] + v if c else y[i]`, not `y[i] + (v if c else 0.0)`: -0.0 + 0.0 is 0.0)."""
    prog = tmp_program("@program\ndef p(x: f32['N'], y: f32['N']) -> f32['N']:\n" + body + "    return y\n")
    x = np.array([-0.0, 1.0, -0.0, 2.0], np.float32)
    y = np.full(4, -0.0, np.float32)
    want = eqsat.reference(prog, x, y.copy())
    for target in ("cpu", "h100"):
        plan = eqsat.optimize(prog, {"N": 4}, target=target)
        for backend in ("numpy", "triton"):
            got = np.asarray(plan.run(x, y.copy(), backend=backend))
            assert np.array_equal(got, want) and np.array_equal(np.signbit(got), np.signbit(want)), \
                (target, backend, got, want, plan)


IN_SEQUENCE = {  # a scalar or element updated several times in one iteration, set afresh in each
    "sum_in_sequence": '''
@program
def p(x: f32["N"], y: f32["N"], z: f32["N"]) -> f32["N"]:
    o = empty((N,))
    for i in range(N):
        s = x[i]
        s += y[i]
        s += z[i]
        o[i] = 1.0 if s > 0.0 else s - 1.0
    return o
''',
    "guarded_sums": '''
@program
def p(x: f32["N"], y: f32["N"], z: f32["N"]) -> f32["N"]:
    o = empty((N,))
    for i in range(N):
        s = x[i]
        if y[i] > 0:
            s += y[i]
        if z[i] < 0:
            s += z[i]
        if i > 0:
            s += x[i - 1]
        o[i] = s
    return o
''',
    "guarded_chain_of_an_element": '''
@program
def p(x: f32["N"], y: f32["N"], z: f32["N"]) -> f32["N"]:
    o = x.copy()
    for i in range(N):
        if y[i] > 0:
            o[i] = o[i] + y[i] + z[i]
    return o
''',
    "products_in_sequence": '''
@program
def p(x: f32["N"], y: f32["N"], z: f32["N"]) -> f32["N"]:
    o = empty((N,))
    for i in range(N):
        s = x[i]
        s *= y[i]
        if z[i] != 5.0:
            s *= z[i]
        o[i] = s
    return o
''',
    "diagonal_update_beside_negative_zeros": '''
@program
def p(x: f32["N"], y: f32["N"], z: f32["N"]) -> f32["N", "N"]:
    c = zeros((N, N))
    for i in range(N):
        for j in range(N):
            c[i, j] = x[j] * 0.0 - 0.0
    for i in range(N):
        c[i, i] += y[i] + z[i]
    return c
''',
}


@pytest.mark.parametrize("target", ["h100", "cpu"])
@pytest.mark.parametrize("name", sorted(IN_SEQUENCE))
def test_updates_in_sequence_keep_their_order_and_zeros(tmp_program, name, target):
    """Found by a probe (2026-11-27): if-conversion merged `s += y; s += z` into `s += (y + z)`
    and guarded a chain `o[i] = o[i] + y + z` as `o[i] += (y + z if c else 0.0)` for a value
    set afresh in every iteration, not carried across it: (x + y) + z computed as x + (y + z)
    (1e8 - 1e8 + 1 gave 1, a later branch flipped), and -0.0 + 0.0 where a guard was false
    gave 0.0. Only a reduction may reorder its sum; these run each statement in order, bit
    for bit."""
    prog = tmp_program(IN_SEQUENCE[name])
    x = np.array([1.0, -0.0, 1.0, 1e20, -0.0, 3.0], np.float32)
    y = np.array([1e8, -0.0, 1e8, 1e20, -0.0, 2.0], np.float32)
    z = np.array([-1e8, -0.0, -1e8, 1e-20, -0.0, -2.0], np.float32)
    want = eqsat.reference(prog, x, y, z)
    plan = eqsat.optimize(prog, {"N": 6}, target=target)
    for backend in ("numpy", "triton"):
        got = plan.run(x, y, z, backend=backend)
        assert np.array_equal(got, want, equal_nan=True) and np.array_equal(np.signbit(got), np.signbit(want)), \
            (backend, got, want, plan)


def test_a_sum_carried_across_its_loop_is_still_one_reduction(tmp_program):
    """The merge of `if c: s += a else: s -= b` into one accumulation stays where s is
    carried across the loop (a reduction, whose terms a plan may sum in any order)."""
    prog = tmp_program('''
@program
def p(a: f32["M", "N"], b: f32["M", "N"]) -> f32["M"]:
    out = empty((M,))
    for i in range(M):
        s = 0.0
        for j in range(N):
            if a[i, j] > 0.0:
                s += a[i, j]
            else:
                s -= b[i, j]
            s += 1.0
        out[i] = s
    return out
''')
    args = random_args(prog, D, seed=4)
    plan = eqsat.optimize(prog, D)
    assert [k.kind for k in plan.kernels] == ["reduction"], plan
    assert rel_err(plan.run(*args), eqsat.reference(prog, *args)) < 1e-5


INVARIANT_GUARDS = {  # a guarded sum whose guard does not vary over the reduction
    # a store at a fixed column in a loop over j: made a store over every column, the
    # condition on the column (found by a probe, 2026-11-28: -0.0 became 0.0 in the columns
    # the loop never writes)
    "fixed_column": '''
@program
def p(x: f32["N", "M"], v: f32["N"]) -> f32["N", "M"]:
    y = x * 0.5
    for i in range(N):
        for j in range(2):
            y[i, M - 1] -= v[i]
    return y
''',
    # a condition outside the loop it accumulates over
    "outer_condition": '''
@program
def p(x: f32["N", "M"], v: f32["N"]) -> f32["N", "M"]:
    y = x * 0.5
    for i in range(N):
        if v[i] > 0.0:
            for j in range(M):
                y[i, 0] += x[i, j]
    return y
''',
    # a guard that varies over the loop around a fixed element's accumulation (the store at
    # a fixed index, made total, guards inside it: the other rows took + 0.0, a probe's)
    "varying_condition_fixed_element": '''
@program
def p(x: f32["N", "M"], v: f32["N"]) -> f32["N", "M"]:
    y = x * 0.5
    for j in range(M):
        if j == 1:
            y[0, 2] += 1.0
    return y
''',
    "varying_condition_fixed_column": '''
@program
def p(x: f32["N", "M"], v: f32["N"]) -> f32["N", "M"]:
    y = x * 0.5
    for i in range(N):
        for j in range(M):
            if j == M - 1:
                y[i, 0] = y[i, 0] - x[i, j]
    return y
''',
}


@pytest.mark.parametrize("target", ["h100", "cpu"])
@pytest.mark.parametrize("name", sorted(INVARIANT_GUARDS))
def test_a_sum_whose_guard_fails_leaves_its_start_as_it_was(tmp_program, name, target):
    """`init + sum[k](e if c else 0.0)` with c the same for every k is `init + sum[k](e) if c
    else init`: where c fails, init keeps its bits, -0.0 included."""
    prog = tmp_program(INVARIANT_GUARDS[name])
    # (rows whose guard holds sum to nonzero: a sum of -0.0s only is a reduction's own zero)
    x = np.array([[-0.0, 1.0, -0.0], [-0.0, -0.0, 2.0], [-0.0, 3.0, -0.0]], np.float32)
    v = np.array([1.5, -1.0, 0.5], np.float32)
    want = eqsat.reference(prog, x, v)
    plan = eqsat.optimize(prog, {"N": 3, "M": 3}, target=target)
    for backend in ("numpy", "triton"):
        got = plan.run(x, v, backend=backend)
        assert np.array_equal(got, want) and np.array_equal(np.signbit(got), np.signbit(want)), \
            (backend, got, want, plan)


def test_a_diagonal_written_before_a_symmetric_gram_loop_is_a_matmul(tmp_program):
    """`c[i, i] = 1.0` then `c[i, j] = acc; c[j, i] = acc` for j > i (PolyBench's correlation
    respelled, a probe's): the diagonal store, made total along a second axis, wrote every
    element of its row back as a no-op, and the final-value check took those no-ops for the
    last writers of the column's elements: the nest stayed a loop (20x numpy). Only the
    written element is an instance for the dataflow (`ifconvert._scatter`)."""
    prog = tmp_program('''
@program
def p(d: f32["N", "M"]) -> f32["M", "M"]:
    c = zeros((M, M))
    for i in range(M - 1):
        c[i, i] = 1.0
        for j in range(i + 1, M):
            acc = 0.0
            for k in range(N):
                acc += d[k, i] * d[k, j]
            c[i, j] = acc
            c[j, i] = acc
    return c
''')
    d = np.random.default_rng(0).standard_normal((7, 6)).astype(np.float32)
    plan = eqsat.optimize(prog, {"N": 7, "M": 6})
    kinds = [k.kind for k in plan.kernels]
    assert "matmul" in kinds and "loop" not in kinds, plan
    want = eqsat.reference(prog, d)
    for backend in ("numpy", "triton"):
        np.testing.assert_allclose(plan.run(d, backend=backend), want, rtol=1e-5, atol=1e-6)
