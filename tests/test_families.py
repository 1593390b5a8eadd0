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
    "uncache": set(),
    ("uncache", "inline"): {"hybrid_loop_libop", "uncache_transpose"},
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
