"""Tuple assignment (`a, b = b, a + b`) and ping-pong buffers (`a, b = b, a` in a time
loop: `eqsat/pingpong.py`), run against `reference` on both backends, kept nests
interpreted and compiled, at trip counts of both parities (the odd one ends with the
buffers' contents exchanged)."""
from __future__ import annotations

import numpy as np
import pytest

import eqsat
from conftest import random_args, rel_err

JACOBI_TUPLE = '''
@program
def p(a: f32["N"], T: int) -> f32["N"]:
    b = zeros((N,))
    for t in range(T):
        for i in range(1, N - 1):
            b[i] = 0.33333 * (a[i - 1] + a[i] + a[i + 1])
        a, b = b, a
    return a
'''

JACOBI_TMP = '''
@program
def p(a: f32["N"], T: int) -> f32["N"]:
    b = empty((N,))
    for i in range(N):
        b[i] = 0.0
    for t in range(T):
        for i in range(1, N - 1):
            b[i] = 0.33333 * (a[i - 1] + a[i] + a[i + 1])
        tmp = a
        a = b
        b = tmp
    return a
'''

# the swap first, a step of 2 from 1, the loop variable read as a value, two parameters
HEAT_FIRST = '''
@program
def p(u: f32["N", "N"], v: f32["N", "N"], T: int) -> f32["N", "N"]:
    for t in range(1, T, 2):
        u, v = v, u
        for i in range(1, N - 1):
            for j in range(1, N - 1):
                u[i, j] = v[i, j] + 0.1 * (v[i - 1, j] + v[i + 1, j] + v[i, j - 1] + v[i, j + 1] - 4.0 * v[i, j]) + t * 0.01
    return u
'''

# statements before and after the swap, a downward loop, the old buffer read after it
MIDDLE_DOWN = '''
@program
def p(a: f32["N"], T: int) -> tuple[f32["N"], f32["N"]]:
    b = zeros((N,))
    for t in range(T - 1, -1, -1):
        for i in range(N):
            b[i] = a[i] * 0.5 + t
        a, b = b, a
        for i in range(1, N):
            a[i] += b[i - 1]
    return a, b
'''

# two pairs at once, inside an outer loop
TWO_PAIRS = '''
@program
def p(x: f32["N"], R: int, T: int) -> tuple[f32["N"], f32["N"]]:
    a = zeros((N,))
    b = zeros((N,))
    c = zeros((N,))
    d = zeros((N,))
    for i in range(N):
        a[i] = x[i]
        c[i] = -x[i]
    for r in range(R):
        for t in range(T):
            for i in range(N):
                b[i] = a[i] * 0.9 + c[(i + 1) % N] * 0.1
                d[i] = c[i] * 0.8 - a[i] * 0.2 + r
            a, b, c, d = b, a, d, c
    return a, c
'''

# buffers made by copying a parameter
COPIES = '''
@program
def p(T: int, A: f32["N"]) -> f32["N"]:
    a = A.copy()
    b = np.copy(A)
    for t in range(T):
        for i in range(1, N - 1):
            b[i] = 0.3 * (a[i - 1] + a[i] + a[i + 1])
        a, b = b, a
    return a
'''

SWAPS = {"copies": COPIES, "jacobi_tuple": JACOBI_TUPLE, "jacobi_tmp": JACOBI_TMP, "heat_first": HEAT_FIRST,
         "middle_down": MIDDLE_DOWN, "two_pairs": TWO_PAIRS}


@pytest.mark.parametrize("policy", ["never", "always"])
@pytest.mark.parametrize("name", sorted(SWAPS))
def test_ping_pong_buffers(tmp_program, monkeypatch, name, policy):
    monkeypatch.setenv("EQSAT_COMPILE_LOOPS", policy)
    prog = tmp_program("import numpy as np\n" + SWAPS[name])
    for T in (0, 1, 4, 5):
        dims = {d: n for d, n in {"N": 7, "T": T, "R": 2}.items() if d in prog.dims}
        args = random_args(prog, dims, seed=T)
        copies = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        want = eqsat.reference(prog, *args)
        plan = eqsat.optimize(prog, dims, target="cpu")
        for backend in ("numpy", "triton"):
            got = plan.run(*args, backend=backend)
            assert rel_err(got, want) < 1e-5, (name, T, backend, plan)
        for a, c in zip(args, copies):
            assert np.array_equal(a, c) if isinstance(a, np.ndarray) else a == c


# the leapfrog wave equation: three buffers rotated every step (`up, u, un = u, un, up`)
WAVE_ROTATION = '''
@program
def p(u0: f32["N"], u1: f32["N"], T: int) -> tuple[f32["N"], f32["N"]]:
    up = u0.copy()
    u = u1.copy()
    un = zeros((N,))
    for t in range(T):
        for i in range(1, N - 1):
            un[i] = 2.0 * u[i] - up[i] + 0.1 * (u[i - 1] - 2.0 * u[i] + u[i + 1]) + 0.01 * t
        up, u, un = u, un, up
    return u, up
'''

# a rotation of three and an exchange of two at once (order six), the exchange by a temporary
MIXED_ORDER_SIX = '''
@program
def p(a: f32["N"], T: int) -> tuple[f32["N"], f32["N"], f32["N"], f32["N"], f32["N"]]:
    b = zeros((N,))
    c = np.ones((N,), dtype=np.float32)
    d = zeros((N,))
    e = np.ones((N,), dtype=np.float32)
    for t in range(1, 2 * T + 1, 2):
        for i in range(N):
            b[i] = a[i] * 0.5 + c[i] + t
            d[i] = e[i] - 0.25 * b[i]
        a, b, c = b, c, a
        tmp = d
        d = e
        e = tmp
    return a, b, c, d, e
'''


@pytest.mark.parametrize("src", [WAVE_ROTATION, MIXED_ORDER_SIX], ids=["rotation_of_three", "order_six"])
def test_buffers_permuted_every_step(tmp_program, monkeypatch, src):
    """A permutation of buffers of any order up to six (`eqsat/pingpong.py`): unrolled by
    its order, the steps left run one by one, the contents moved after; every step count
    modulo the order, on both backends, against `reference`."""
    monkeypatch.setenv("EQSAT_COMPILE_LOOPS", "always")
    prog = tmp_program("import numpy as np\n" + src)
    for T in range(8):
        dims = {"N": 6, "T": T}
        args = random_args(prog, dims, seed=T)
        want = eqsat.reference(prog, *args)
        plan = eqsat.optimize(prog, dims, target="cpu")
        for backend in ("numpy", "triton"):
            got = plan.run(*args, backend=backend)
            assert all(rel_err(g, w) < 1e-5 for g, w in zip(got, want)), (T, backend, plan)


def test_a_permutation_of_order_seven_is_refused(tmp_program):
    """Order seven would copy the body seven times a step: the front end refuses it, with its location."""
    names = [f"b{k}" for k in range(7)]
    allocs = "\n".join(f"    {x} = zeros((N,))" for x in names)
    src = JACOBI_TUPLE.replace("    b = zeros((N,))", allocs).replace("b[i]", "b0[i]").replace(
        "a, b = b, a", f"{', '.join(names)} = {', '.join(names[1:] + names[:1])}")
    with pytest.raises(eqsat.ProgramError, match=r"prog_\d+\.py:\d+:\d+: "):
        tmp_program(src)


def test_a_view_of_a_swapped_buffer_outside_the_loop_is_refused(tmp_program):
    """`v = a` before the loop names a's memory whatever the parity: the loop is not
    rewritten, and the front end refuses the rebinding as before."""
    src = JACOBI_TUPLE.replace("b = zeros((N,))", "b = zeros((N,))\n    v = a").replace("return a", "return v")
    with pytest.raises(eqsat.ProgramError, match="view"):
        tmp_program(src)


UNPACK = '''
@program
def p(x: f32["N"]) -> tuple[f32["N"], f32["N"]]:
    y = empty((N,))
    z = empty((N,))
    for i in range(N):
        z[i] = x[i]
    a, b = 0.0, 1.0
    for i in range(N):
        a, b = b, a + b * x[i]
        y[i] = a
    for i in range(N // 2):
        z[i], z[N - 1 - i] = z[N - 1 - i], z[i]
    s, m = 0.0, x[0]
    for i in range(N):
        if x[i] > m:
            s, m = m, x[i]
    y[0], s = s, y[0]
    return y, z
'''


def test_tuple_assignment(tmp_program):
    """Every value is read before any target is bound (Python's order), for scalars and
    elements alike: the element swap reverses z in place."""
    prog = tmp_program(UNPACK)
    args = random_args(prog, {"N": 9}, seed=3)
    want = eqsat.reference(prog, *args)
    assert np.array_equal(want[1], args[0][::-1])
    plan = eqsat.optimize(prog, {"N": 9}, target="cpu")
    for backend in ("numpy", "triton"):
        assert rel_err(plan.run(*args, backend=backend), want) < 1e-6, (backend, plan)


# where the exchange is not taken: refused with its location, not rewritten
NOT_PING_PONG = {
    # a view bound in the loop read after it: after an odd count the contents are exchanged
    "view_read_after": '''
@program
def p(a: f32["N", "N"], T: int) -> f32["N"]:
    b = zeros((N, N))
    for t in range(T):
        for i in range(N):
            for j in range(N):
                b[i, j] = a[i, j] + 1.0
        a, b = b, a
        r = a[0]
    return r * 1.0
''',
    # an inner loop rebinding the time loop's variable (Python's: one name)
    "inner_loop_rebinds_its_variable": '''
@program
def p(a: f32["N"], T: int) -> f32["N"]:
    b = zeros((N,))
    for t in range(T):
        for i in range(N):
            b[i] = a[i]
        a, b = b, a
        for t in range(2):
            a[t] += 1.0
    return a
''',
    "for_else": '''
@program
def p(a: f32["N"], T: int) -> f32["N"]:
    b = zeros((N,))
    for t in range(T):
        for i in range(N):
            b[i] = a[i] + 1.0
        a, b = b, a
    else:
        a[0] = 100.0
    return a
''',
}


@pytest.mark.parametrize("name", sorted(NOT_PING_PONG))
def test_an_exchange_that_is_not_ping_pong_is_refused(tmp_program, name):
    with pytest.raises(eqsat.ProgramError, match=r"prog_\d+\.py:\d+:\d+: "):
        tmp_program(NOT_PING_PONG[name])


def test_the_time_loops_variable_read_after_it(tmp_program):
    """Its last value, as Python's (refused before the twenty-ninth session:
    `desugar._last_values`)."""
    prog = tmp_program('''
@program
def p(a: f32["N"], T: int) -> f32["N"]:
    b = zeros((N,))
    for t in range(T):
        for i in range(N):
            b[i] = a[i] + 1.0
        a, b = b, a
    a[0] = t * 1.0
    return a
''')
    for T in (1, 2, 3):
        a = np.arange(4, dtype=np.float32)
        plan = eqsat.optimize(prog, {"N": 4, "T": T})
        assert np.array_equal(plan.run(a.copy(), T), eqsat.reference(prog, a.copy(), T))


def test_an_earlier_loop_over_the_same_name(tmp_program, monkeypatch):
    """An earlier loop reading its own `t` is no read of the ping-pong loop's variable after
    it (the exchange was refused), nor is a later loop over `t`."""
    monkeypatch.setenv("EQSAT_COMPILE_LOOPS", "always")
    prog = tmp_program("import numpy as np\n" + JACOBI_TUPLE.replace(
        "    b = zeros((N,))\n", "    b = zeros((N,))\n    for t in range(N):\n        b[t] = a[t] * 0.0\n").replace(
        "    return a\n", "    for t in range(N):\n        a[t] += t * 0.5\n    return a\n"))
    for T in (2, 3):
        args = random_args(prog, {"N": 7, "T": T}, seed=T)
        want = eqsat.reference(prog, *args)
        got = eqsat.optimize(prog, {"N": 7, "T": T}, target="cpu").run(*args)
        assert rel_err(got, want) < 1e-5, T
