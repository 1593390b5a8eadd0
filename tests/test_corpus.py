"""Every program of the shared corpus: structure as its EXPECT says, numbers as its truth."""
from __future__ import annotations

import numpy as np
import pytest

import eqsat
from conftest import corpus_paths, load_case, random_args, rel_err

CASES = corpus_paths()


def test_corpus_is_present():
    assert len(CASES) >= 10, f"expected the shared corpus, found {len(CASES)} cases"


def check_structure(plan, expect):
    kinds = [k.kind for k in plan.kernels]
    mm = kinds.count("matmul")
    if "matmuls" in expect:
        assert mm == expect["matmuls"], plan
    if "matmuls_max" in expect:
        assert mm <= expect["matmuls_max"], plan
    if "kernels" in expect:
        assert len(kinds) == expect["kernels"], plan
    if "kernels_max" in expect:
        assert len(kinds) <= expect["kernels_max"], plan
    if "epilogue" in expect:
        fused = set()
        for k in plan.kernels:
            if k.kind == "matmul":
                fused |= set(k.epilogue)
        assert set(expect["epilogue"]) <= fused, plan


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_corpus_case(path):
    mod, prog = load_case(path)
    plan = eqsat.optimize(prog, mod.SHAPES)
    check_structure(plan, mod.EXPECT)
    for seed in range(2):
        args = random_args(prog, mod.SHAPES, seed)
        assert rel_err(plan.run(*args), mod.truth(*args)) < 1e-4
        assert rel_err(eqsat.reference(prog, *args), mod.truth(*args)) < 1e-4
    assert plan.cost <= plan.baseline_cost * (1 + 1e-9)


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_corpus_without_rules_finds_no_loop_matmul(path):
    """rules=[]: nothing is rewritten, so only library-call matmuls remain, and results stay right."""
    mod, prog = load_case(path)
    plan = eqsat.optimize(prog, mod.SHAPES, rules=[])
    written_matmuls = "@" in path.read_text().split("def truth")[0]
    if not written_matmuls:
        assert all(k.kind != "matmul" for k in plan.kernels), plan
    args = random_args(prog, mod.SHAPES, 3)
    assert rel_err(plan.run(*args), mod.truth(*args)) < 1e-4


@pytest.mark.parametrize("target", ["h100", "a100", "cpu"])
def test_corpus_targets_run(target):
    for path in CASES:
        mod, prog = load_case(path)
        plan = eqsat.optimize(prog, mod.SHAPES, target=target)
        args = random_args(prog, mod.SHAPES, 5)
        assert rel_err(plan.run(*args), mod.truth(*args)) < 1e-4, (path.stem, target)
        assert np.isfinite(plan.cost) and plan.cost > 0
