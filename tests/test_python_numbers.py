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
    assert not python_number(Node("Sc.select", ">", x, lit, i, lit))
    deep = scaled
    for _ in range(5000):  # (no recursion)
        deep = Node("Sc.add", deep, lit)
    assert python_number(deep)
