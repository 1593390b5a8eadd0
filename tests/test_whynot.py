"""`plan.why_not(pattern)` (issue 9, item 3): a form that was chosen, one that exists but
costs more, one that is missing, each with the right answer and reason."""
from __future__ import annotations

import re

import pytest

import eqsat
from conftest import corpus_paths, load_case
from eqsat.errors import ArgumentError


@pytest.fixture(scope="module")
def lbr():
    mod, prog = load_case(next(p for p in corpus_paths() if p.stem == "linear_bias_relu"))
    return mod, prog, eqsat.optimize(prog, mod.SHAPES)


def test_a_chosen_form_is_chosen(lbr):
    _, _, plan = lbr
    for pattern in ("matmul+add+relu", "matmul + relu + add", "matmul+*"):
        ans = plan.why_not(pattern)
        assert ans.chosen and ans.found, str(ans)
    two = load_case(next(p for p in corpus_paths() if p.stem == "mlp_two_layers"))
    plan2 = eqsat.optimize(two[1], two[0].SHAPES)
    assert plan2.why_not("matmul+relu+add, matmul+add").chosen


def test_a_form_that_costs_more_is_found_with_its_price(lbr):
    """The loop nest as written is in the e-graph; a plan using it costs far more."""
    _, _, plan = lbr
    ans = plan.why_not("loop")
    assert ans.found and not ans.chosen
    text = str(ans)
    ratio = float(re.search(r"\(([\d.]+)x\)", text).group(1))
    assert ratio > 3, text
    reduction = plan.why_not("reduction")
    assert reduction.found and not reduction.chosen
    assert float(re.search(r"\(([\d.]+)x\)", str(reduction)).group(1)) > 1.0


def test_a_missing_form_names_the_nearest_and_what_it_lacks(lbr):
    _, _, plan = lbr
    ans = plan.why_not("matmul+relu+sigmoid")
    assert not ans.found and not ans.chosen
    assert "nearest: matmul+" in str(ans) and "lacks sigmoid" in str(ans), str(ans)


def test_missing_families_are_named_when_no_matmul_exists(lbr):
    mod, prog, _ = lbr
    plan = eqsat.optimize(prog, mod.SHAPES, rules=["inline", "matmul", "transpose"])
    ans = plan.why_not("matmul+add+relu")
    text = str(ans)
    assert not ans.found and "no matmul anywhere" in text
    assert "never fired" in text and "epilogue" in text and "anti_inline" in text, text


def test_a_family_that_cannot_match_says_it_was_not_run():
    """A pointwise program has no product to make a matmul of: the matmul family's rule set is
    not run at all (eqsat/relevance.py), and the answer says so."""
    mod, prog = load_case(next(p for p in corpus_paths() if p.stem == "pointwise_only"))
    plan = eqsat.optimize(prog, mod.SHAPES)
    assert "matmul" in plan.report.not_run and "inline" not in plan.report.not_run
    text = str(plan.why_not("matmul"))
    assert "never fired" in text and "not run: no rule of matmul can match" in text, text


def test_kept_nests_give_their_reason():
    """seidel-2d is a recurrence: no pointwise form exists, and the answer says why its
    nest stays as written (the dataflow's reason, naming the array and axis)."""
    import test_polybench as tp

    plan = tp.plan_of("seidel_2d")
    ans = plan.why_not("pointwise")
    text = str(ans)
    assert not ans.chosen
    kept = [plan.lowered.nests[k.nest] for k in plan.kernels if k.kind == "loop"]
    assert kept and all(n.reason and n.reason in text for n in kept), text
    assert "'A'" in text


@pytest.mark.parametrize("bad", ["", "matmull", "matmul+", "relu>", "matmul+add++relu", 3])
def test_bad_patterns_are_clear_errors(lbr, bad):
    _, _, plan = lbr
    with pytest.raises(ArgumentError, match="pattern"):
        plan.why_not(bad)


@pytest.mark.parametrize("bad", ["matmul+frobnicate", "frob>matmul+relu"])
def test_an_op_no_kernel_has_is_named(lbr, bad):
    """A probe's: `matmul+frobnicate` answered "not in the e-graph"."""
    _, _, plan = lbr
    with pytest.raises(ArgumentError, match="no kernel has the op 'frob"):
        plan.why_not(bad)
