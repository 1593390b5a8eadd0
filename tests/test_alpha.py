"""Alike kernels up to the names of their variables are one kernel (eqsat/alpha.py), and
copies of a product's loop form no longer flood the e-graph along chains of layers."""
from __future__ import annotations

import numpy as np

import eqsat
from conftest import loop_chain_source, random_args, rel_err
from eqsat import terms as T
from eqsat.alpha import canonical
from eqsat.terms import Node


def _bound(n: Node) -> list:
    if n.op == "Sc.red":
        return [n.args[1]]
    return [v for v, _ in T.unlist(n.args[0])]


def _free(n: Node, bound=frozenset()) -> set:
    """Free variables of a term, by a plain recursive walk (small terms only)."""
    if n.op == "Ix.v":
        return set() if n.args[0] in bound else {n.args[0]}
    if n.op in ("Ten.compute", "Ten.fused", "Sc.red"):
        bound = bound | set(_bound(n))
    out: set = set()
    for a in n.args:
        if isinstance(a, Node) and a.sort != "Var":
            out |= _free(a, bound)
    return out


def _scaled(i: str, j: str, k: str, x: Node, w: Node) -> Node:
    """for[i<4, j<5] 2 * sum[k<3] x[i, k] * w[k, j], with these variable names."""
    vi, vj, vk = T.var(i), T.var(j), T.var(k)
    body = Node("Sc.red", "sum", vk, 3, T.binop("Sc.mul", T.load(x, [T.iv(vi), T.iv(vk)]),
                                                 T.load(w, [T.iv(vk), T.iv(vj)])))
    return T.compute([(vi, 4), (vj, 5)], T.binop("Sc.mul", T.lit(2.0), body))


def test_terms_alike_up_to_renaming_become_one():
    x, w = Node("Ten.input", "x"), Node("Ten.input", "w")
    a, b = _scaled("i1", "j2", "k3", x, w), _scaled("r7", "c8", "d9", x, w)
    assert a is not b
    (ca, cb), memo = canonical([a, b])
    assert ca is cb and memo[a] is ca and memo[b] is cb


def test_terms_that_differ_stay_apart():
    x, w = Node("Ten.input", "x"), Node("Ten.input", "w")
    a = _scaled("i1", "j2", "k3", x, w)
    swapped = _scaled("i1", "j2", "k3", w, x)  # other operands
    vi, vj = T.var("i4"), T.var("j5")
    transposed = T.compute([(vi, 4), (vj, 5)], T.load(Node("Ten.input", "y"), [T.iv(vj), T.iv(vi)]))
    plain = T.compute([(vi, 4), (vj, 5)], T.load(Node("Ten.input", "y"), [T.iv(vi), T.iv(vj)]))
    out, _ = canonical([a, swapped, transposed, plain])
    assert len(set(out)) == 4


def test_an_inner_binder_of_the_same_variable_keeps_its_own():
    """Anti-inline copies its context's axes into the tensor it makes, so one variable is
    bound twice: for[i] (x[i] + (for[i] sum[k] y[i, k])[i]). Renaming the outer binder
    must not reach into the inner one, and no new name may capture a free variable."""
    x, y = Node("Ten.input", "x"), Node("Ten.input", "y")
    vi, vk = T.var("i1"), T.var("k2")
    inner = T.compute([(vi, 4)], Node("Sc.red", "sum", vk, 3, T.load(y, [T.iv(vi), T.iv(vk)])))
    outer = T.compute([(vi, 4)], T.binop("Sc.add", T.load(x, [T.iv(vi)]), T.load(inner, [T.iv(vi)])))
    (got,), memo = canonical([outer])
    assert not _free(got)
    (ov, _), = T.unlist(got.args[0])
    new_inner = memo[inner]
    (iv, _), = T.unlist(new_inner.args[0])
    assert iv is not ov
    # the outer body reads x and the inner tensor at the outer variable
    add = got.args[1]
    assert add.op == "Sc.add" and [n.args[1] for n in add.args] == [T.ixs([T.iv(ov)])] * 2
    assert add.args[1].args[0] is new_inner
    # the inner body reads y at the inner variable and its own reduction variable
    red = new_inner.args[1]
    assert red.op == "Sc.red" and red.args[3].args[1] == T.ixs([T.iv(iv), T.iv(red.args[1])])


TWICE = '''
@program
def p(x: f32["M", "K"], w: f32["K", "N"]) -> f32["M"]:
    a = empty((M, N))
    for i in range(M):
        for j in range(N):
            s = 0.0
            for k in range(K):
                s += x[i, k] * w[k, j]
            a[i, j] = relu(s)
    b = empty((M, N))
    for r in range(M):
        for c in range(N):
            t = 0.0
            for q in range(K):
                t += w[q, c] * x[r, q]
            b[r, c] = relu(t)
    out = empty((M,))
    for i in range(M):
        hi = -1e30
        for j in range(N):
            hi = max(hi, a[i, j])
        lo = 0.0
        for j in range(N):
            lo += b[i, j]
        out[i] = hi + lo
    return out
'''


def test_the_same_kernel_written_twice_runs_once(tmp_program):
    prog = tmp_program(TWICE)
    dims = {"M": 256, "K": 32, "N": 48}
    plan = eqsat.optimize(prog, dims)
    assert [k.kind for k in plan.kernels].count("matmul") == 1, plan
    args = random_args(prog, dims)
    want = eqsat.reference(prog, *args)
    for backend in ("numpy", "triton"):
        assert rel_err(np.asarray(plan.run(*args, backend=backend)), want) < 1e-5, (backend, plan)


def test_a_chain_of_loop_layers_saturates_small(tmp_program):
    """A layer's epilogue substituted into the next layer used to copy the product's loop
    form too (a reduction in the same e-class), nesting every layer's reduction in the next,
    and inside the next layer's product, with a new index list each time: 3 layers grew to
    164k e-nodes, 7 to 27k (each stopped at the node limit). Now a chain saturates at about
    75 e-nodes a layer."""
    prog = tmp_program(loop_chain_source(8))
    dims = {"M": 64, "D": 64}
    plan = eqsat.optimize(prog, dims)
    assert plan.report.stop_reason == "saturated" and plan.egraph_nodes < 8 * 150, plan
    assert [k.kind for k in plan.kernels] == ["matmul"] * 8, plan
    args = random_args(prog, dims)
    assert rel_err(np.asarray(plan.run(*args)), eqsat.reference(prog, *args)) < 1e-5
