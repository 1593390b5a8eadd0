"""The thread's prepared e-graph (eqsat/egraph.py `session`): every optimize() works in it
and what one call leaves must never reach the next."""
from __future__ import annotations

import eqsat
from conftest import corpus_paths, load_case, random_args, rel_err
from eqsat import egraph


def _summary(plan) -> tuple:
    return ([(k.kind, tuple(k.epilogue)) for k in plan.kernels], round(plan.cost, 15), plan.egraph_nodes,
            plan.report.per_iteration_nodes)


def test_a_call_finds_what_it_finds_in_a_fresh_egraph():
    """Every corpus program, optimized first in a fresh prepared e-graph and then again
    after all the others (in both orders), gets the same e-graph round by round, the same
    plan, and the reference's answers."""
    cases = [load_case(p) for p in corpus_paths()]
    fresh = {}
    for mod, prog in cases:
        egraph.drop_prepared()
        fresh[prog.name] = _summary(eqsat.optimize(prog, mod.SHAPES))
    egraph.drop_prepared()
    for mod, prog in cases + cases[::-1]:
        plan = eqsat.optimize(prog, mod.SHAPES)
        assert _summary(plan) == fresh[prog.name], prog.name
        args = random_args(prog, mod.SHAPES)
        got, want = plan.run(*args), eqsat.reference(prog, *args)
        pairs = zip(got, want) if isinstance(want, tuple) else [(got, want)]
        assert all(rel_err(g, w) < 1e-4 for g, w in pairs), prog.name
