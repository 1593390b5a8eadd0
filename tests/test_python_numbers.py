"""Python numbers next to float32 values, on every backend and in compiled code.

The reference runs the program as Python: literals, loop indices and arithmetic of those
alone are Python numbers (float64, int), rounded to float32 only where they meet a float32
(numpy's weak scalars). `terms.python_number` marks those terms; every backend evaluates
them in float64 and rounds them once, and compares two of them in float64. Before, the
kernels computed `i * 0.1` as float32(i) * float32(0.1), which differs from float32(i * 0.1)
for i = 9, so `x[i] > i * 0.1` went the other way on inputs made the same way, and
`(i * 0.1 + 1e8) - 1e8` was 0. (Kept nests compiled by numba: tests/test_loops_compiled.py.)
"""
from __future__ import annotations

import os

import numpy as np
import pytest

import eqsat
from eqsat.terms import Node, python_number

os.environ.setdefault("TRITON_INTERPRET", "1")

THRESHOLD = '''
@program
def p(x: f32["N"]) -> f32["N"]:
    y = empty((N,))
    for i in range(N):
        if x[i] > i * 0.1:
            y[i] = x[i] + ((i * 0.1 + 1e8) - 1e8)
        else:
            y[i] = 0.0 if i * 0.1 > 0.3 else x[i] * 2.0
    return y
'''

# two index variables and a select between Python numbers alone
GRID = '''
@program
def p(x: f32["M", "N"]) -> f32["M", "N"]:
    y = empty((M, N))
    for i in range(M):
        for j in range(N):
            y[i, j] = (x[i, j] if x[i, j] < (i + 0.5) / N else -x[i, j]) + ((j * 0.1 + 1e7) - 1e7)
    return y
'''


def _inputs(shape):
    """Each element the float32 product float32(i) * float32(0.1) of its flat index (the
    value the kernels computed before), some raised by one."""
    n = int(np.prod(shape))
    x = np.arange(n).astype(np.float32) * np.float32(0.1)
    x[::3] += 1
    return x.reshape(shape)


@pytest.mark.parametrize("src,dims", [(THRESHOLD, {"N": 300}), (GRID, {"M": 7, "N": 40})], ids=["threshold", "grid"])
@pytest.mark.parametrize("target", ["cpu", "h100"])
def test_python_numbers_match_the_reference(tmp_program, src, dims, target):
    prog = tmp_program(src)
    x = _inputs(tuple(dims[d] for d in prog.params[0].shape))
    want = eqsat.reference(prog, x)
    # the lifted plan (at these sizes the model may rate the nest as written as cheap: a nest
    # that writes its output whole makes it, with no pass filling it first)
    plan = eqsat.optimize(prog, dims, target=target, candidates=3)
    plan = next((c for c in plan.candidates if all(k.kind != "loop" for k in c.kernels)), plan)
    assert all(k.kind != "loop" for k in plan.kernels), [k.kind for k in plan.kernels]
    for backend in ("numpy", "triton"):
        got = np.asarray(plan.run(x, backend=backend))
        # exact but where a Python-number function or the sum of float32s rounds differently
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=backend)


def test_compiled_kernel_matches_the_reference(tmp_program, monkeypatch):
    """The compiled CPU kernel (backends/cpu_kernels.py) evaluates them in float64 too."""
    monkeypatch.setenv("EQSAT_COMPILE_KERNELS", "always")
    prog = tmp_program(THRESHOLD)
    x = _inputs((300,))
    plan = eqsat.optimize(prog, {"N": 300}, target="cpu")
    from eqsat.backends import cpu_kernels

    k = next(k for k in plan.kernels if k.kind == "pointwise")
    fn, how = cpu_kernels.build(plan, k)
    assert fn is not None, how
    np.testing.assert_allclose(plan.run(x), eqsat.reference(prog, x), rtol=1e-6, atol=1e-6)


def test_which_terms_are_python_numbers():
    i = Node("Sc.idx", Node("Ix.v", Node("Var.named", "i")))
    lit = Node("Sc.lit", 0.1)
    x = Node("Sc.param", "x")
    scaled = Node("Sc.mul", i, lit)
    assert python_number(scaled) and python_number(Node("Sc.fn", "exp", scaled))
    assert python_number(Node("Sc.select", ">", scaled, lit, i, lit))
    assert not python_number(Node("Sc.add", scaled, x))
    # a select between two Python numbers is one, whatever its condition reads (`0.1 if x[i]
    # > 0 else 0.2`: a Python float in the reference)
    assert python_number(Node("Sc.select", ">", x, lit, i, lit))
    assert not python_number(Node("Sc.select", ">", lit, lit, x, lit))
    deep = scaled
    for _ in range(5000):  # (no recursion)
        deep = Node("Sc.add", deep, lit)
    assert python_number(deep)


# `np.float32(e)` is a float32 (the term `float32(e)`), not the Python number it holds: a
# scalar that meets only Python numbers after it computes in float32, as numpy's does. Each
# of these computed in float64 before (3.0 where numpy gives 0.0 in DRIFT, 4.47 in GLOBAL)
DRIFT = '''
import numpy as np

@program
def p(x: f32["N"]) -> f32["N"]:
    s = np.float32(1.0)
    s += 1e-9
    s += 1e-9
    s += 1e-9
    y = np.empty_like(x)
    for i in range(N):
        y[i] = x[i] + (s - 1.0) * 1e9 + (np.float32(i * 0.1) - i * 0.1) * 1e9
    return y
'''

GLOBAL = '''
import numpy as np

ALPHA = np.float32(0.1)

@program
def p(x: f32["N"]) -> f32["N"]:
    y = np.empty_like(x)
    for i in range(N):
        y[i] = x[i] + (ALPHA * 3.0 - 0.3) * 1e9
    return y
'''

# kept as written (np.floor has no term): the running float32 is passed to the nest as one
KEPT = '''
import numpy as np

@program
def p(x: f32["N"]) -> f32["N"]:
    s = np.float32(1.0)
    y = np.empty_like(x)
    for i in range(N):
        s += 1e-9
        y[i] = np.floor(x[i]) + (s - 1.0) * 1e9 + (np.float32(i * 0.1) > 0.3)
    return y
'''

COMPARE = '''
import numpy as np

@program
def p(x: f32["N"]) -> f32["N"]:
    y = np.empty_like(x)
    for i in range(N):
        if np.float32(i * 0.1) > 0.3:
            y[i] = x[i] + (np.float32(0.1) * 3.0 - 0.3) * 1e9
        else:
            y[i] = x[i] * 2.0 if x[i] > np.float32(0.1) else -x[i]
    return y
'''


# `float(np.float32(0.1))` is the Python float 0.10000000149011612 again (a float64 from
# there), and a cast past float32's range is inf in every backend (Triton folded
# `float32(1e39) / 4.0` in float64: 2.5e38)
FLOAT_OF_CAST = '''import numpy as np

@program
def p(x: f32["N"]) -> tuple[f32["N"], f32["N"]]:
    y = np.empty_like(x)
    z = np.empty_like(x)
    s = np.float32(1e39)
    for i in range(N):
        y[i] = x[i] + (float(np.float32(0.1)) + 1e8 - 1e8) * 1e7
        z[i] = x[i] * 0.0 + s / 4.0 + np.float32(1e-46) * 1e40
    return y, z
'''


# module constants that are numpy scalars keep their types: a np.float32 one is float32 in a
# kept nest compiled by numba too (it was a Python float there), a np.float64 one numpy's
# strong float64 (`F64 - np.float32(0.1)` is 0.2 in float64; it was 0.20000002)
MODULE = '''import numpy as np
F = np.float32(0.1)
F64 = np.float64(0.3)

@program
def p(x: f32["N"]) -> tuple[f32["N"], f32["N"]]:
    y = np.empty_like(x)
    z = np.empty_like(x)
    for i in range(N):
        y[i] = np.floor(x[i]) + ((F + 1e8) - 1e8) + (1.0 if F <= i * 0.1 else 0.0)
        z[i] = x[i] * 0.0 + (F64 - np.float32(0.1))
    return y, z
'''


# `-i` of a loop index is Python's int negation (0 at i = 0, where `-(0.0)` is -0.0), and a
# conditional between two Python numbers is a Python number whatever its condition reads
# (it was computed in float32: `((0.1 if x[i] > 0 else 0.2) + 1e8) - 1e8` gave 0.0); the
# numpy backend's compiled plan computes such a select as a step, not a constant
INTS_AND_BRANCHES = '''import numpy as np

@program
def p(x: f32["N"]) -> tuple[f32["N"], f32["N"]]:
    y = np.empty_like(x)
    z = np.empty_like(x)
    for i in range(N):
        y[i] = -i * 0.1 + np.float32(-(i - i)) * x[i]
        z[i] = ((0.1 if x[i] > 0.0 else 0.2) + 1e8) - 1e8
    return y, z
'''


# alone in its plan: the compiled plan's random samples never hold a zero, so a select
# computed as a constant of the plan passed its check there
TRUTH = '''import numpy as np

@program
def p(x: f32["N"]) -> f32["N"]:
    z = np.empty_like(x)
    for i in range(N):
        z[i] = ((0.3 if x[i] else 0.4) + 1e8) - 1e8
    return z
'''


# found by a probe (2026-11-27): powers of numbers and sizes folded in float64 where Python
# computes exact ints (`N ** 25 + 1 - N ** 25` is 1; folded it was 0.0, and a condition on it
# took the other branch); a power past float64 raised OverflowError out of optimize(). And
# in numba-compiled kept nests (older): `2 ** 70 / 2 ** 68` and `N ** -1` in a select were
# int64 arithmetic (NaN, 0), and a row view's elements (`r = x[i]; s += r[j]`) made `s` float64
POWERS = '''import numpy as np

@program
def p(x: f32["N"], n: int) -> tuple[f32["N"], f32["N"], f32["N"], f32["N"], f32["N"]]:
    y = np.empty_like(x)
    z = np.empty_like(x)
    u = np.empty_like(x)
    w = np.empty_like(x)
    for i in range(N):
        y[i] = x[i] * (N ** 25 + 1 - N ** 25) + x[i] * N ** -0.5
        if N ** 25 + 1 != N ** 25:
            z[i] = x[i]
        else:
            z[i] = 0.0
        u[i] = x[i] * (N ** n / N ** (n - 1))
    s = 0.0
    for i in range(N):
        s = s * 0.5 + x[i] * (2 ** 70 / 2 ** 68) + x[i] * (N ** -1 if x[i] > 0.0 else 2.0)
        w[i] = s
    v = np.zeros((N,), dtype=np.float32)
    for i in range(N):
        r = x[:]
        t = 0.0
        for j in range(N):
            t += r[(j + i) % N] * x[i]  # (`%`: the nest is kept as written, its order too)
        v[i] = t
    return y, z, u, w, v
'''


@pytest.mark.parametrize("src", [DRIFT, GLOBAL, KEPT, COMPARE, FLOAT_OF_CAST, MODULE, INTS_AND_BRANCHES, TRUTH, POWERS],
                         ids=["drift", "global", "kept", "compare", "float_of_cast", "module", "ints_and_branches",
                              "truth", "powers"])
@pytest.mark.parametrize("compiled", ["never", "always"])
def test_a_float32_cast_computes_in_float32(tmp_program, monkeypatch, src, compiled):
    monkeypatch.setenv("EQSAT_COMPILE_KERNELS", compiled)
    monkeypatch.setenv("EQSAT_COMPILE_LOOPS", compiled)
    prog = tmp_program(src)
    x = np.random.default_rng(3).standard_normal(9).astype(np.float32)
    x[::4] = 0.0  # (a truth test a compiled plan's random samples cannot tell from `True`)
    extra = (500,) if len(prog.params) == 2 else ()
    want = eqsat.reference(prog, x, *extra)
    for target in ("cpu", "h100"):  # (at this size: a kept nest, and a lifted one)
        plan = eqsat.optimize(prog, {"N": 9, **({"n": 500} if extra else {})}, target=target)
        for backend in ("numpy", "triton"):
            got = plan.run(x, *extra, backend=backend)
            for g, w in zip(got, want) if isinstance(want, tuple) else [(got, want)]:
                np.testing.assert_array_equal(g, w, err_msg=backend)
                assert (np.signbit(g) == np.signbit(w))[~np.isnan(w)].all(), (target, backend, g, w)


def test_a_returned_float32_is_one(tmp_program):
    prog = tmp_program('''import numpy as np

@program
def p(x: f32["N"]) -> f32:
    t = 0.0
    for i in range(N):
        t += x[i]
    return t * np.float32(0.5) + (np.float32(0.1) * 3.0 - 0.3) * 1e9
''')
    x = np.random.default_rng(4).standard_normal(9).astype(np.float32)
    want = eqsat.reference(prog, x)
    got = eqsat.optimize(prog, {"N": 9}).run(x)
    assert isinstance(got, np.float32) and got == want


@pytest.mark.parametrize("target", ["cpu", "h100"])
def test_a_returned_python_float_is_one(tmp_program, target):
    """A Python float a loop kept as written computes (`s += math.exp(x[i])`, past
    float32's range; `q *= 0.5`, below it) is returned as the Python float `reference`
    returns: it came back as float32 inf and 0.0 (`lower.Nest.numbers`)."""
    prog = tmp_program('''import math

@program
def p(x: f32["N"]) -> tuple[f32, f32]:
    s = 0.0
    q = 1.0
    for i in range(N):
        s += math.exp(x[i])
        q *= 1e-30 * math.exp(x[i] - 100.0)
    return s, q
''')
    x = np.full(9, 100.0, np.float32)
    want = eqsat.reference(prog, x)
    assert all(0 < abs(w) < np.inf and not (1e-38 < abs(w) < 3e38) for w in want)  # (not a float32's)
    plan = eqsat.optimize(prog, {"N": 9}, target=target)
    for backend in ("numpy", "triton"):
        got = plan.run(x, backend=backend)
        assert all(type(g) is float for g in got) and got == want, (backend, got, want)


@pytest.mark.parametrize("target", ["cpu", "h100"])
def test_arithmetic_of_returned_python_floats_is_in_float64(tmp_program, target):
    """Python floats computed after the loop that made them (`s * 1e-200`, `M / 3`, `s +
    1e-12`) are returned as Python computes them: a kernel's float32 output had rounded
    them (0.0 for 5.6e-200)."""
    prog = tmp_program('''import math

@program
def p(x: f32["N"]):
    s = 0.0
    for i in range(N):
        s += math.exp(x[i])
    q = s * 1e-200
    return q, s + 1e-12, N / 3, math.sqrt(s) * 1e-100
''')
    x = np.random.default_rng(5).standard_normal(7).astype(np.float32)
    want = eqsat.reference(prog, x)
    assert 0 < want[0] < 1e-45  # (below float32's range)
    plan = eqsat.optimize(prog, {"N": 7}, target=target)
    for backend in ("numpy", "triton"):
        got = plan.run(x, backend=backend)
        assert all(type(g) is float for g in got) and got == want, (backend, got, want)


@pytest.mark.parametrize("target", ["cpu", "h100"])
def test_returned_numbers_have_the_references_types(tmp_program, target):
    """`float(x[0])` and functions of it are Python floats, `x[1] * 2.0` and a float32 sum
    float32, on every backend: `float(e)` came back as np.float32 (a probe's, 2026-11-28)."""
    prog = tmp_program('''import math
import numpy as np

@program
def p(x: f32["N"]):
    s = 0.0
    for i in range(N):
        s += x[i]
    return float(x[0]), float(np.float32(s)), s, x[1] * 2.0, math.exp(float(x[2]))
''')
    x = np.random.default_rng(6).standard_normal(5).astype(np.float32)
    want = eqsat.reference(prog, x)
    assert [type(w) for w in want] == [float, float, np.float32, np.float32, float]
    plan = eqsat.optimize(prog, {"N": 5}, target=target)
    for backend in ("numpy", "triton"):
        got = plan.run(x, backend=backend)
        assert [type(g) for g in got] == [type(w) for w in want], (backend, got, want)
        # (exact but for the sum's order: a kernel sums as a tree)
        assert got[0] == want[0] and got[3] == want[3] and np.allclose(got, want, rtol=1e-6), (backend, got, want)


def test_casts_that_compute_nothing_leave_the_forms_rules_match(tmp_program):
    """`acc = np.float32(0.0)`, a factor `np.float32(0.5)` and `np.maximum(acc,
    np.float32(0.0))` are the sum, the literal and the relu the rules know (`weak_casts`):
    one matmul with its epilogue."""
    prog = tmp_program('''import numpy as np

@program
def p(a: f32["M", "K"], b: f32["K", "N"]) -> f32["M", "N"]:
    c = np.zeros((M, N), dtype=np.float32)
    for i in range(M):
        for j in range(N):
            acc = np.float32(0.0)
            for k in range(K):
                acc += np.float32(0.5) * a[i, k] * b[k, j]
            c[i, j] = np.maximum(acc, np.float32(0.0))
    return c
''')
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((64, 32)).astype(np.float32), rng.standard_normal((32, 48)).astype(np.float32)
    plan = eqsat.optimize(prog, {"M": 64, "K": 32, "N": 48})
    assert [k.kind for k in plan.kernels] == ["matmul"]
    np.testing.assert_allclose(plan.run(a, b), eqsat.reference(prog, a, b), rtol=1e-5, atol=1e-5)


def test_which_float32_casts_are_dropped():
    from eqsat.terms import weak_casts

    i = Node("Sc.idx", Node("Ix.v", Node("Var.named", "i")))
    lit, x = Node("Sc.lit", 0.1), Node("Sc.param", "x")

    def cast(e):
        return Node("Sc.fn", "float32", e)

    assert not python_number(cast(lit)) and not python_number(Node("Sc.add", cast(lit), lit))
    assert weak_casts(cast(x)) is x  # (of a float32 value)
    assert weak_casts(Node("Sc.mul", cast(lit), x)) is Node("Sc.mul", lit, x)  # (meets a float32)
    kept = Node("Sc.add", cast(lit), lit)  # (decides the type)
    assert weak_casts(kept) is kept
    both = Node("Sc.mul", cast(lit), cast(i))
    assert weak_casts(both) is both
    # a comparison's side against a float32 value, and a select's branch
    sel = Node("Sc.select", ">", cast(i), x, cast(lit), x)
    assert weak_casts(sel) is Node("Sc.select", ">", i, x, lit, x)
    sel = Node("Sc.select", ">", x, lit, cast(lit), lit)  # (the branch decides the type)
    assert weak_casts(sel) is sel
    sel = Node("Sc.select", ">", cast(i), lit, x, cast(lit))
    assert weak_casts(sel) is Node("Sc.select", ">", cast(i), lit, x, lit)


# `float(e)` of an element and math's functions of one make Python floats (float64 in the
# reference) where the plan computed float32: each case below gave inf or NaN (a probe's,
# session 27). Inputs chosen where float32 overflows and float64 does not.
WIDE = {
    "ratio": ('''
import math
@program
def p(x: f32["N"]) -> f32["N"]:
    out = empty((N,))
    for i in range(N):
        out[i] = math.exp(x[i] * 60.0) / math.exp(x[i] * 59.0)
    return out
''', [[-2.25, 2.0, 0.5, 1.5]]),
    "widen": ('''
@program
def p(x: f32["N"]) -> f32["N"]:
    out = empty((N,))
    for i in range(N):
        t = float(x[i]) * 1e30
        out[i] = t * 1e20 / 1e20 / 1e30
    return out
''', [[-2.25, 2.0, 0.5, 1e9]]),
    "softmax": ('''
import math
@program
def p(x: f32["M", "N"]) -> f32["M", "N"]:
    out = empty((M, N))
    for i in range(M):
        s = 0.0
        for j in range(N):
            s += math.exp(x[i, j])
        for j in range(N):
            out[i, j] = math.exp(x[i, j]) / s
    return out
''', [[[100.0, 99.0, 1.0, -3.0], [1.0, 2.0, 3.0, 4.0]]]),
    "nested": ('''
import math
@program
def p(x: f32["N"]) -> f32["N"]:
    out = empty((N,))
    for i in range(N):
        out[i] = math.sqrt(math.exp(x[i]))
    return out
''', [[100.0, 1.0, -5.0, 150.0]]),
    "compare": ('''
import math
@program
def p(x: f32["N"]) -> f32["N"]:
    out = empty((N,))
    for i in range(N):
        out[i] = 1.0 if math.exp(x[i]) > 1e39 else 0.0
    return out
''', [[89.0, 91.0, 0.0, -1.0]]),
    # a float32 row max read by float64 arithmetic: `math.exp(m)` was hoisted with the max
    # into a float32 tensor (inf)
    "row max": ('''
import math
import numpy as np
@program
def p(x: f32["M", "N"]) -> f32["M", "N"]:
    out = empty((M, N))
    for i in range(M):
        m = np.float32(-1e30)
        for j in range(N):
            m = max(m, x[i, j])
        for j in range(N):
            out[i, j] = math.exp(x[i, j]) / math.exp(m)
    return out
''', [[[100.0, 99.0, 1.0], [3.0, 2.0, 1.0]]]),
    # a Python constant past float32's range: float(x[i]) / 1e39 is not x[i] / inf
    "wide constant": ('''
@program
def p(x: f32["N"]) -> f32["N"]:
    out = empty((N,))
    for i in range(N):
        out[i] = float(x[i]) / 1e39 + x[i] * (float(x[i]) * 1e-50)
    return out
''', [[1e30, 3e38, 2.0, -1e20]]),
    # negation in float64 (Triton's went through float32: -inf)
    "negation": ('''
import math
import numpy as np
@program
def p(x: f32["N"]) -> f32["N"]:
    out = empty((N,))
    for i in range(N):
        out[i] = -(float(x[i]) * 1e30) * 1e-30 - math.fabs(np.float32(2.0))
    return out
''', [[1e30, 3.0, -2e30, 0.5]]),
    # a Python float a top-level loop kept as written leaves, read after it: it reached the
    # later statements through a float32 scalar (inf; `lower.Nest.numbers`)
    "sum read after its loop": ('''
import math
@program
def p(x: f32["N"]) -> f32["N"]:
    s = 0.0
    for i in range(N):
        s += math.exp(x[i])
    y = empty((N,))
    for i in range(N):
        y[i] = x[i] - math.log(s)
    return y
''', [[100.0, 99.0, 1.0, -3.0]]),
    "sum read by numpy": ('''
import math
@program
def p(x: f32["N"]) -> f32["N"]:
    s = 0.0
    for i in range(N):
        s = s + float(x[i]) * 1e30
    return x * (s / 1e30) - math.log(s)
''', [[3e9, 2.0, 1.0, 4.0]]),
    "top level": ('''
import math
@program
def p(x: f32["N"]) -> f32:
    return math.exp(x[0]) / math.exp(x[1])
''', [[100.0, 99.0, 1.0, 0.0]]),
}


@pytest.mark.parametrize("name", sorted(WIDE))
def test_python_floats_made_from_elements_compute_in_float64(tmp_program, name):
    src, args = WIDE[name]
    prog = tmp_program(src)
    args = [np.asarray(a, dtype=np.float32) for a in args]
    want = np.asarray(eqsat.reference(prog, *args), dtype=np.float32)
    assert np.all(np.isfinite(want)), want  # (the point: float32 would overflow here)
    sizes = {d: n for p, a in zip(prog.params, args) for d, n in zip(p.shape, a.shape)}
    for target in ("h100", "cpu"):  # (the plans differ: kept loops on one, kernels on the other)
        plan = eqsat.optimize(prog, sizes, target=target)
        for backend in ("numpy", "triton"):
            got = np.asarray(plan.run(*args, backend=backend), dtype=np.float32)
            np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=f"{name} for {target} on {backend}")


def test_a_python_float_that_meets_a_float32_at_once_is_still_lifted(tmp_program):
    """`math.sqrt(x[i]) * y[i]` and `float(x[i]) + y[i]`: the Python float meets a float32 at
    once, where float32's function gives the same value (the cast is dropped: the plan is one
    kernel, not a loop kept as written)."""
    prog = tmp_program('''
import math
@program
def p(x: f32["N"], y: f32["N"]) -> f32["N"]:
    out = empty((N,))
    for i in range(N):
        out[i] = math.sqrt(x[i]) * y[i] + float(x[i])
    return out
''')
    x = np.abs(np.random.default_rng(0).standard_normal(64)).astype(np.float32)
    y = np.random.default_rng(1).standard_normal(64).astype(np.float32)
    plan = eqsat.optimize(prog, {"N": 64})
    assert [k.kind for k in plan.kernels] == ["pointwise"], plan.kernels
    np.testing.assert_allclose(plan.run(x, y), eqsat.reference(prog, x, y), rtol=1e-6)


def test_python_floats_from_elements_compile_for_a_gpu(tmp_program):
    """The float64 terms compile ahead of time for sm_90 (the interpreter runs numpy; a GPU
    compile goes through libdevice's float64 exp)."""
    from eqsat.backends import triton_backend

    prog = tmp_program(WIDE["ratio"][0])
    ptx = triton_backend.ptx(eqsat.optimize(prog, {"N": 1024}, target="h100"), 0)
    assert "__nv_exp" in ptx and ".f64" in ptx


def test_a_float32_to_the_half_is_cs_pow(tmp_program):
    """`x[i] ** 0.5` of a float32 is C's powf: sqrt, but +0.0 at -0.0 and +inf at -inf; it
    kept its nest as written (no functional form), now it is lifted (a probe's slowest
    kernel, 5.6x numba as a kept loop)."""
    prog = tmp_program('''
@program
def p(x: f32["N"]) -> f32["N"]:
    y = empty((N,))
    for i in range(N):
        y[i] = (x[i] - 0.5) ** 0.5 + x[i] ** 3 + x[i] ** 0.5
    return y
''')
    x = np.array([-0.0, 0.0, -np.inf, np.inf, np.nan, -2.0, 2.0, 0.5, 0.7, 1e-45], np.float32)
    with np.errstate(all="ignore"):
        want = eqsat.reference(prog, x)
        plan = eqsat.optimize(prog, {"N": 10}, target="h100")
        assert [k.kind for k in plan.kernels] == ["pointwise"], plan
        for backend in ("numpy", "triton"):
            got = plan.run(x, backend=backend)
            real = ~np.isnan(want)
            assert np.array_equal(got, want, equal_nan=True) and \
                np.array_equal(np.signbit(got[real]), np.signbit(want[real])), (backend, got, want)


@pytest.mark.parametrize("target", ["cpu", "h100"])
def test_returned_ints_are_ints(tmp_program, target):
    """Arithmetic of sizes, integer parameters and int literals is a Python int in the
    reference, and comes back as one (it came back as a float: 2.0 for `N // 2`)."""
    prog = tmp_program('''
@program
def p(x: f32["N"], n: int):
    return N // 2, n * 2, len(x) - 1, x.shape[0] % 4, N / 2, float(x[0])
''')
    x = np.arange(5, dtype=np.float32)
    want = eqsat.reference(prog, x, 4)
    assert [type(w) for w in want] == [int, int, int, int, float, float]
    plan = eqsat.optimize(prog, {"N": 5, "n": 4}, target=target)
    for backend in ("numpy", "triton"):
        got = plan.run(x, 4, backend=backend)
        assert [type(g) for g in got] == [type(w) for w in want] and got == want, (backend, got, want)
