"""Each rule family is real: disable it and named corpus cases lose their expected structure
(while every plan still computes the right numbers)."""
from __future__ import annotations

import pytest

import eqsat
from conftest import corpus_paths, load_case, random_args, rel_err
from eqsat.rules import FAMILIES

# family disabled -> corpus cases that must lose their EXPECTed structure
LOSSES = {
    "inline": {"hybrid_loop_libop"},
    "anti_inline": {"linear_bias_relu", "transposed_bias"},
    "transpose": {"linear_bias_relu"},
    "matmul": {"hybrid_loop_libop", "linear_bias_relu", "matmul_plain", "transposed_bias", "uncache_transpose"},
    "epilogue": {"linear_bias_relu", "mlp_two_layers", "residual_gelu", "scaled_gemm", "transposed_bias"},
    # uncache and inline+transpose are two routes to the same form: each alone suffices
    # (and a transposed copy that feeds a matmul is that matmul's fused prologue anyway)
    "uncache": set(),
    ("uncache", "inline"): {"hybrid_loop_libop"},
}


def meets(plan, expect) -> bool:
    mm = sum(k.kind == "matmul" for k in plan.kernels)
    epi = {e for k in plan.kernels if k.kind == "matmul" for e in k.epilogue}
    return (expect.get("matmuls", mm) == mm and expect.get("kernels", len(plan.kernels)) == len(plan.kernels)
            and set(expect.get("epilogue", ())) <= epi)


@pytest.mark.parametrize("off", list(LOSSES), ids=lambda o: o if isinstance(o, str) else "+".join(o))
def test_disabling_a_family_loses_named_cases(off):
    off_set = {off} if isinstance(off, str) else set(off)
    rules = [f for f in FAMILIES if f not in off_set]
    lost = set()
    for path in corpus_paths():
        mod, prog = load_case(path)
        plan = eqsat.optimize(prog, mod.SHAPES, rules=rules)
        if not meets(plan, mod.EXPECT):
            lost.add(path.stem)
        args = random_args(prog, mod.SHAPES, 1)
        assert rel_err(plan.run(*args), mod.truth(*args)) < 1e-4, (path.stem, off)
    assert lost == LOSSES[off]


# Outside the corpus: the families no corpus case needs alone.
NAMED = {
    # a transposed copy that is also returned: uncache makes it a view, else a copy kernel
    "uncache": ('''
@program
def p(a: f32["M", "K"], b: f32["N", "K"]):
    bt = empty((K, N))
    for k in range(K):
        for j in range(N):
            bt[k, j] = b[j, k]
    c = a @ bt
    return c, bt
''', ["matmul"]),
    # an activation on an operand inside the reduction: a matmul with a fused prologue,
    # else a reduction kernel
    "prologue": ('''
@program
def p(a: f32["M", "K"], b: f32["K", "N"]) -> f32["M", "N"]:
    c = empty((M, N))
    for i in range(M):
        for j in range(N):
            s = 0.0
            for k in range(K):
                s += relu(a[i, k]) * b[k, j]
            c[i, j] = s
    return c
''', ["matmul"]),
    # a constant inside the product: algebra moves it out of the sum, else no matmul
    "algebra": ('''
@program
def p(a: f32["M", "K"], b: f32["K", "N"]) -> f32["M", "N"]:
    c = empty((M, N))
    for i in range(M):
        for j in range(N):
            s = 0.0
            for k in range(K):
                s += a[i, k] * (b[k, j] * 0.5)
            c[i, j] = s
    return c
''', ["matmul"]),
}


@pytest.mark.parametrize("family", sorted(NAMED))
def test_family_finds_its_named_case(tmp_program, family):
    src, kinds = NAMED[family]
    prog = tmp_program(src)
    dims = {"M": 8, "N": 6, "K": 4}
    args = random_args(prog, dims, 2)
    on = eqsat.optimize(prog, dims)
    off = eqsat.optimize(prog, dims, rules=[f for f in FAMILIES if f != family])
    assert [k.kind for k in on.kernels] == kinds, on
    assert [k.kind for k in off.kernels] != kinds, off
    want = eqsat.reference(prog, *args)
    for plan in (on, off):
        got = plan.run(*args)
        for g, w in zip(*[x if isinstance(x, tuple) else (x,) for x in (got, want)]):
            assert rel_err(g, w) < 1e-5
