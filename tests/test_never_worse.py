"""The plan is never rated costlier than the program as written by its own cost model
(issue 12, item 4): on every corpus program, greedy and exact extraction, and on
generated programs of both generators. optimize() prices every candidate (greedy's, the
exact program's, the program as written) with the one cost model and returns the cheapest;
these tests check that, and that the exact program is never above greedy's price."""
from __future__ import annotations

import pytest

import eqsat
from conftest import corpus_paths, load_case
from gen_dataflow import generate_seeded as dataflow_program
from gen_programs import load
from gen_spellings import generate_seeded as spelling_program

CASES = corpus_paths()


def _never_worse(plan):
    assert plan.cost <= plan.baseline_cost * (1 + 1e-9), (plan.cost, plan.baseline_cost, str(plan))
    prices = plan.extraction["cost"]
    assert plan.cost == min(prices.values()), plan.extraction
    if "ilp" in prices and plan.ilp["status"] == "optimal":
        assert prices["ilp"] <= prices["greedy"] * (1 + 1e-6) + 1e-10, plan.extraction


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
@pytest.mark.parametrize("extract", ["greedy", "ilp", "auto"])
def test_corpus_plan_is_never_worse_than_written(path, extract):
    mod, prog = load_case(path)
    _never_worse(eqsat.optimize(prog, mod.SHAPES, extract=extract))


@pytest.mark.parametrize("seed", range(12))
def test_generated_plan_is_never_worse_than_written(tmp_path, seed):
    for gp in (spelling_program(500 + seed), dataflow_program(700 + seed)):
        prog = load(gp, str(tmp_path))
        _never_worse(eqsat.optimize(prog, gp.shapes, limits=eqsat.Limits(seconds=5)))
