"""Extraction: exact (ILP) against greedy, limits, and shared tensors paid once."""
from __future__ import annotations

import time

import pytest
from egglog import rewrite, ruleset

import eqsat
from conftest import assert_matches_reference, corpus_paths, load_case, random_args, rel_err
from eqsat.sorts import Sc

CASES = corpus_paths()


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_ilp_matches_greedy_on_the_corpus_and_runs(path):
    mod, prog = load_case(path)
    greedy = eqsat.optimize(prog, mod.SHAPES)
    exact = eqsat.optimize(prog, mod.SHAPES, extract="ilp")
    assert exact.ilp["status"] == "optimal"
    assert exact.cost == pytest.approx(greedy.cost, rel=1e-9)
    args = random_args(prog, mod.SHAPES, 2)
    assert rel_err(exact.run(*args), mod.truth(*args)) < 1e-4


def test_ilp_blocks_the_cycles_it_picks():
    """Views and fused forms make classes reachable from each other (a tensor and a view of
    it, a fused matmul and the product it reads): a solution that picks such a cycle is
    blocked and solved again until it is acyclic, and the plan runs."""
    path = next(p for p in CASES if p.stem == "mlp_two_layers")
    mod, prog = load_case(path)
    plan = eqsat.optimize(prog, mod.SHAPES, extract="ilp")
    assert plan.ilp["status"] == "optimal" and plan.ilp["cycles_blocked"] >= 1, plan.ilp
    assert [k.kind for k in plan.kernels] == ["matmul", "matmul"]
    args = random_args(prog, mod.SHAPES, 3)
    assert rel_err(plan.run(*args), mod.truth(*args)) < 1e-4


def test_shared_tensor_is_paid_once(tmp_program):
    prog = tmp_program("""
@program
def shared(x: f32["M", "K"], w: f32["K", "N"]) -> tuple[f32["M", "N"], f32["M", "N"]]:
    h = x @ w
    return relu(h), h * 2.0
""")
    dims = {"M": 8, "N": 8, "K": 8}
    plan = eqsat.optimize(prog, dims)
    assert sum(k.kind == "matmul" for k in plan.kernels) <= 2
    total = sum(k.cost for k in plan.kernels)
    assert plan.cost == pytest.approx(total, rel=1e-9)
    assert_matches_reference(plan, prog, dims)


def test_explosive_rules_stop_at_the_limits_with_a_correct_plan(tmp_program):
    """Commutativity and associativity over a 12-term sum explode; the node limit stops
    saturation, the reason is reported, and the best form so far still runs correctly."""
    @ruleset
    def ac(a: Sc, b: Sc, c: Sc):
        yield rewrite(Sc.add(a, b)).to(Sc.add(b, a))
        yield rewrite(Sc.add(Sc.add(a, b), c)).to(Sc.add(a, Sc.add(b, c)))

    terms = " + ".join(f"x{i}" for i in range(12))
    params = ", ".join(f'x{i}: f32["M"]' for i in range(12))
    prog = tmp_program(f"""
@program
def long_sum({params}) -> f32["M"]:
    return {terms}
""")
    limits = eqsat.Limits(nodes=20_000, seconds=3.0, iterations=100, match_limit=100_000)
    t0 = time.perf_counter()
    plan = eqsat.optimize(prog, {"M": 4}, rules=[ac], limits=limits)
    elapsed = time.perf_counter() - t0
    assert plan.report.stop_reason != "saturated", plan.report.stop_reason
    assert elapsed < 2 * limits.seconds + 5  # stop within the budget (plus build and extraction)
    assert_matches_reference(plan, prog, {"M": 4})
