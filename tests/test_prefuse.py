"""Single-use elementwise producers fused before saturation (`eqsat/prefuse.py`): which
producers the pass fuses and which it leaves to the e-graph, a long chain as one kernel,
and every plan run on both backends against `reference`."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import eqsat
from conftest import random_args, rel_err
from eqsat.lower import lower
from eqsat.prefuse import prefuse
from eqsat.terms import free_vars, walk

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
import programs  # noqa: E402

D = {"M": 5, "N": 7}

# program -> computations left after the pass (of those the lowering made)
CASES = {
    # a chain of three statements: one computation
    "chain": ('''
@program
def p(x: f32["M", "N"], b: f32["N"]) -> f32["M", "N"]:
    h = relu(x * 0.9 + 0.1)
    h = h * 1.05 - b
    h = sigmoid(h) + x
    return h
''', 1),
    # read through a transpose (every element once): fused
    "transposed": ('''
@program
def p(x: f32["M", "M"]) -> f32["M", "M"]:
    h = exp(x) * 2.0
    return h.T + x
''', 1),
    # read twice by its consumer: computing it twice is the e-graph's choice, not this pass's
    "read_twice": ('''
@program
def p(x: f32["M", "N"]) -> f32["M", "N"]:
    h = exp(x) + 1.0
    return h * h
''', 2),
    # read by two consumers
    "two_readers": ('''
@program
def p(x: f32["M", "N"]) -> tuple[f32["M", "N"], f32["M", "N"]]:
    h = exp(x) + 1.0
    return h * 2.0, h - 3.0
''', 3),
    # an output, and read by another one
    "output_and_read": ('''
@program
def p(x: f32["M", "N"]) -> tuple[f32["M", "N"], f32["M", "N"]]:
    h = exp(x) + 1.0
    return h, relu(h)
''', 2),
    # broadcast along an axis its reader has and it does not: read N times an element
    "broadcast": ('''
@program
def p(v: f32["N"], x: f32["M", "N"]) -> f32["M", "N"]:
    h = exp(v) + 1.0
    return x * h
''', 2),
    # read inside a reduction (a matmul operand): a prologue, the e-graph's to decide
    "under_a_reduction": ('''
@program
def p(x: f32["M", "N"], w: f32["N", "M"]) -> f32["M", "M"]:
    h = relu(x) * 2.0
    return (h @ w) * 0.5
''', None),
}


def _computes(roots) -> int:
    seen: set = set()
    return sum(1 for r in roots for n in walk(r, seen) if n.op == "Ten.compute")


@pytest.mark.parametrize("name", sorted(CASES))
def test_what_the_pass_fuses(tmp_program, name):
    src, left = CASES[name]
    prog = tmp_program(src)
    low = lower(prog, D)
    out = prefuse(low)
    before, after = _computes(low.roots), _computes(out.roots)
    if left is None:
        assert after == before  # nothing fused
    else:
        assert after == left and (after < before) == (out is not low), (before, after)
    args = random_args(prog, D, seed=3)
    want = eqsat.reference(prog, *args)
    for target, backend in (("h100", "triton"), ("cpu", "numpy")):
        got = eqsat.optimize(prog, D, target=target).run(*args, backend=backend)
        assert rel_err(got, want) < 1e-5, (name, target)


def test_a_long_chain_is_one_kernel():
    """200 elementwise statements at tensor level: one kernel, found in a few seconds (the
    e-graph's inlining alone stopped at the node limit with 11 kernels left)."""
    prog = programs.elementwise_chain(200)
    shapes = {"M": 4, "D": 6}
    rng = np.random.default_rng(0)
    x, b = rng.standard_normal((4, 6)).astype(np.float32), rng.standard_normal(6).astype(np.float32)
    want = eqsat.reference(prog, x, b)
    for target, backend in (("h100", "triton"), ("cpu", "numpy")):
        plan = eqsat.optimize(prog, shapes, target=target)
        assert [k.kind for k in plan.kernels] == ["pointwise"], plan
        assert rel_err(plan.run(x, b, backend=backend), want) < 1e-5


def test_without_the_inline_family_the_program_stays_as_lowered(tmp_program):
    prog = tmp_program(CASES["chain"][0])
    plan = eqsat.optimize(prog, D, rules=["epilogue"])
    assert len(plan.kernels) == 3, plan


def test_statements_inside_a_loop_fuse_with_the_loops_variables(tmp_program):
    """Tensor-level statements inside a loop are computations open in its variable (`t`
    is a fresh value each iteration); fused, their bodies keep reading `x[i]`, renamed as
    their reader's variables are."""
    prog = tmp_program('''
@program
def p(x: f32["M", "N"], b: f32["N"]) -> f32["M", "N"]:
    y = empty((M, N))
    for i in range(M):
        t = exp(x[i]) * 2.0
        u = t * 3.0 + b
        v = relu(u) - t * 0.5
        y[i] = v * x[i] + 1.0
    return y
''')
    low = lower(prog, D)
    out = prefuse(low)

    def computes(lw):
        return _computes(list(lw.roots) + [x for pair in lw.unions for x in pair])

    assert computes(out) < computes(low)
    args = random_args(prog, D, seed=4)
    want = eqsat.reference(prog, *args)
    for target, backend in (("h100", "triton"), ("cpu", "numpy")):
        # (on the CPU at these sizes the nest as written, compiled and making its output
        # itself, is rated as cheap: the lifted candidate is the one checked there)
        plan = eqsat.optimize(prog, D, target=target, candidates=3)
        plan = next((c for c in plan.candidates if [k.kind for k in c.kernels] == ["pointwise"]), plan)
        assert [k.kind for k in plan.kernels] == ["pointwise"], plan
        assert rel_err(plan.run(*args, backend=backend), want) < 1e-5, target


def test_a_tensor_read_inside_a_fused_producer_is_renamed_too(tmp_program):
    """`h = x[b] @ w; g = h + bias; out[b] = relu(g)` in a loop over b: `g`, fused into
    its reader, reads the tensor `x[b] @ w`, open in the producer's own batch variable;
    that tensor is renamed with the producer's scalars (it kept the producer's variable,
    free in the fused term: no form could be costed and the nest stayed a loop). Now one
    matmul with its epilogue, and no variable escapes its binder."""
    prog = tmp_program('''
@program
def p(x: f32["B", "M", "K"], w: f32["K", "N"], bias: f32["N"]) -> f32["B", "M", "N"]:
    out = empty((B, M, N))
    for b in range(B):
        h = x[b] @ w
        g = h + bias
        out[b] = relu(g)
    return out
''')
    shapes = {"B": 3, "M": 8, "K": 6, "N": 5}
    out = prefuse(lower(prog, shapes))
    assert all(not free_vars(t) for pair in out.unions for t in pair)
    args = random_args(prog, shapes, seed=5)
    want = eqsat.reference(prog, *args)
    for target, backend in (("h100", "triton"), ("cpu", "numpy")):
        plan = eqsat.optimize(prog, shapes, target=target)
        assert [k.kind for k in plan.kernels] == ["matmul"], plan
        assert rel_err(plan.run(*args, backend=backend), want) < 1e-5, target
