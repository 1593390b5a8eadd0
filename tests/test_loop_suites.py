"""Loop kernels of public suites other than PolyBench (TSVC, Livermore, NPB-style:
`tests/loopsuites/kernels.py`) and more written as people write them (BLAS, image
processing, DSP, ML layers, stencils, mixed loop/library forms:
`tests/loopsuites/more_kernels.py`), each optimized for the CPU target at small sizes and
run against `reference`; the caller's arrays must come back untouched. Their timing
against numba at real sizes is bench/loopsuites_bench.py."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import eqsat
from conftest import rel_err

sys.path.insert(0, str(Path(__file__).resolve().parent / "loopsuites"))
import kernels  # noqa: E402
import more_kernels  # noqa: E402

CASES = [(kernels, n) for n in sorted(kernels.K)] + [(more_kernels, n) for n in sorted(more_kernels.K)]


def _as_tuple(x):
    return x if isinstance(x, tuple) else (x,)


def _small(mod, name, sizes):
    return mod.small(sizes) if mod is kernels else mod.small(name)


@pytest.mark.parametrize("mod, name", CASES, ids=[f"{m.__name__}.{n}" for m, n in CASES])
def test_kernel_matches_the_reference(mod, name):
    prog, sizes, extra = mod.K[name]
    dims = _small(mod, name, sizes)
    args = mod.make_args(name, prog, dims, extra, np.random.default_rng(1))
    keep = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    with np.errstate(all="ignore"):
        want = eqsat.reference(prog, *args, shapes=dims)
    plan = eqsat.optimize(prog, mod.shapes_of(prog, dims, extra), target="cpu")
    got = plan.run(*args)
    for g, w in zip(_as_tuple(got), _as_tuple(want)):
        assert rel_err(g, w) < 1e-4, (name, plan)
    for a, k in zip(args, keep):
        assert np.array_equal(a, k) if isinstance(a, np.ndarray) else a == k
