"""Rule sets no rule of which can match a program are not run (`eqsat/relevance.py`): the
closure over tables is an over-approximation, so saturation must reach the same e-graph,
round for round, and the same plan with and without dropping them."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
from egglog import rewrite, ruleset

import eqsat
from conftest import corpus_paths, load_case
from eqsat import relevance
from eqsat.sorts import Sc

sys.path.insert(0, str(Path(__file__).resolve().parent / "loopsuites"))
import kernels  # noqa: E402
import more_kernels  # noqa: E402


@ruleset
def sub_to_add(a: Sc, b: Sc):
    yield rewrite(Sc.sub(a, b)).to(Sc.add(a, Sc.mul(Sc.lit(-1.0), b)))


@ruleset
def mul_comm(a: Sc, b: Sc):
    yield rewrite(Sc.mul(a, b)).to(Sc.mul(b, a))


@ruleset
def div_by_one(a: Sc):
    yield rewrite(Sc.div(a, Sc.lit(1.0))).to(a)


def test_a_rule_set_is_live_when_its_tables_are_reachable():
    sets = [sub_to_add, mul_comm, div_by_one]
    # the product is no op of the terms, but the first rule set makes one
    assert relevance.live(sets, {"Sc.sub", "Sc.lit"}) == [True, True, False]
    assert relevance.live(sets, {"Sc.add"}) == [False, False, False]
    # every table of a query must be there: a division alone is not enough
    assert relevance.live(sets, {"Sc.div"}) == [False, False, False]
    assert relevance.live(sets, {"Sc.div", "Sc.lit"}) == [False, False, True]


def test_a_rule_set_not_read_here_keeps_everything():
    assert relevance.live([mul_comm, object()], set()) == [True, True]


def _plans(prog, shapes, target, monkeypatch, rules=None):
    out = []
    for on in (False, True):
        monkeypatch.setattr(relevance, "ENABLED", on)
        plan = eqsat.optimize(prog, shapes, target=target, rules=rules)
        r = plan.report
        # rounds may differ only where no rewrite rule set is left (then none runs)
        rounds = r.per_iteration_nodes if any(plan.report.rule_matches.values()) else None
        out.append((plan.egraph_nodes, rounds, plan.cost, [str(k) for k in plan.kernels]))
    return out


def _cases():
    out = []
    for path in corpus_paths():
        mod, prog = load_case(path)
        out.append((f"corpus.{path.stem}", mod, prog, mod.SHAPES, "h100"))
    for mod, names in ((kernels, ("s000", "s1111", "lfk21_matmul", "vdotr", "s2275")),
                       (more_kernels, ("gemv_t", "softmax_rows", "attention", "conv2d_nchw", "layernorm"))):
        for name in names:
            prog, sizes, extra = mod.K[name]
            dims = mod.small(sizes) if mod is kernels else mod.small(name)
            out.append((f"{mod.__name__}.{name}", mod, prog, mod.shapes_of(prog, dims, extra), "cpu"))
    return out


CASES = _cases()


@pytest.mark.parametrize("label, mod, prog, shapes, target", CASES, ids=[c[0] for c in CASES])
def test_dropping_unmatchable_rule_sets_changes_nothing(label, mod, prog, shapes, target, monkeypatch):
    without, with_ = _plans(prog, shapes, target, monkeypatch)
    assert without == with_, label


def test_a_user_rule_set_that_cannot_match_is_not_run(monkeypatch, tmp_program):
    """A rule file whose left-hand side needs an op the program never has is dropped; the
    plan is the one it would have given anyway."""
    prog = tmp_program('''
@program
def p(x: f32["N"], y: f32["N"]) -> f32["N"]:
    return x * y + 1.0
''')
    calls = []
    real = relevance.live

    def spy(sets, start):
        on = real(sets, start)
        calls.append(dict(zip(map(id, sets), on)))
        return on

    monkeypatch.setattr(relevance, "live", spy)
    without, with_ = _plans(prog, {"N": 8}, "cpu", monkeypatch, rules=["inline", div_by_one])
    assert without == with_
    assert calls and calls[-1][id(div_by_one)] is False
