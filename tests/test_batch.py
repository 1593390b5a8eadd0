"""optimize_many: one result per item, the same plans as one-by-one calls, an item's
error in its slot (issue 13)."""
from __future__ import annotations

import eqsat
from conftest import corpus_paths, load_case, random_args, rel_err


def test_optimize_many_matches_sequential_calls():
    cases = [load_case(p) for p in corpus_paths()]
    items = [(prog, mod.SHAPES) for mod, prog in cases]
    items.append((cases[0][1], {"nope": 3}))  # a bad item: its error comes back, the batch goes on
    out = eqsat.optimize_many(items, workers=2, progress=False)
    assert len(out) == len(items)
    assert isinstance(out[-1], eqsat.ArgumentError)
    for (mod, prog), plan in zip(cases, out):
        assert isinstance(plan, eqsat.Plan), plan
        alone = eqsat.optimize(prog, mod.SHAPES)
        assert [(k.kind, k.epilogue) for k in plan.kernels] == [(k.kind, k.epilogue) for k in alone.kernels]
        args = random_args(prog, mod.SHAPES, 7)
        assert rel_err(plan.run(*args), mod.truth(*args)) < 1e-4
