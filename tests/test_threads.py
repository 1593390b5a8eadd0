"""optimize() and Plan.run() from several threads: no failure, no e-graph dropped on a
thread that did not make it (egglog reports that as an unraisable exception), results
equal to the sequential ones (issue 13)."""
from __future__ import annotations

import gc
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np

import eqsat
from conftest import corpus_paths, load_case, random_args, rel_err

CALLS = 120


def test_optimize_and_run_from_four_threads():
    cases = [load_case(p) for p in corpus_paths()]
    unraisable = []
    old = sys.unraisablehook
    sys.unraisablehook = lambda u: unraisable.append(f"{u.exc_type.__name__}: {u.exc_value}")
    try:
        def one(i):
            mod, prog = cases[i % len(cases)]
            plan = eqsat.optimize(prog, mod.SHAPES)
            args = random_args(prog, mod.SHAPES, i)
            return rel_err(plan.run(*args), mod.truth(*args)), [k.kind for k in plan.kernels]

        with ThreadPoolExecutor(4) as pool:
            results = list(pool.map(one, range(CALLS)))
        gc.collect()
    finally:
        sys.unraisablehook = old
    assert not unraisable, unraisable[:3]
    assert all(err < 1e-4 for err, _ in results)
    # the same program gives the same plan from every thread
    for i in range(len(cases)):
        kinds = {tuple(k) for j, (_, k) in enumerate(results) if j % len(cases) == i}
        assert len(kinds) == 1, (cases[i][1].name, kinds)
    assert np.isfinite([err for err, _ in results]).all()


def test_triton_runs_from_four_threads(tmp_program):
    """One plan run on Triton from four threads at once: Triton's interpreter patches
    `triton.language` process-wide while a kernel runs, so interpreted launches once broke
    each other ("Did you forget to add @triton.jit ?"); they take turns now."""
    prog = tmp_program("""
@program
def lin(x: f32["M", "K"], w: f32["K", "N"], b: f32["N"]) -> f32["M", "N"]:
    return relu(x @ w + b)
""")
    plan = eqsat.optimize(prog, {"M": 5, "K": 4, "N": 3})
    x = np.ones((5, 4), np.float32)

    def work(t):
        w, b = np.full((4, 3), float(t), np.float32), np.full(3, -1.0, np.float32)
        want = eqsat.reference(prog, x, w, b)
        for _ in range(8):
            assert np.allclose(plan.run(x, w, b, backend="triton"), want)
        return t

    with ThreadPoolExecutor(4) as pool:
        assert sorted(pool.map(work, range(4))) == [0, 1, 2, 3]
