"""Shared test helpers: the corpus, random inputs, and e-graphs built from programs."""
from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import numpy as np
import pytest

import eqsat

# kept loops compile with numba by default; the suite compiles only nests big enough to pay
# (tests/test_loops_compiled.py and the PolyBench tests exercise the compiled path)
os.environ.setdefault("EQSAT_COMPILE_LOOPS", "auto")
# rule sources the tests pass (exploding AC sets, one-family subsets) skip the probe check;
# tests/test_rulecheck.py turns it on where it is the subject
os.environ.setdefault("EQSAT_CHECK_RULES", "0")
from eqsat.ir import Program

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
from programs import elif_chain_source  # noqa: E402,F401 - generated programs shared with bench/

CORPUS = Path(os.environ.get("EQSAT_CORPUS", Path(__file__).resolve().parents[1].parent / "shared" / "corpus"))
if not CORPUS.is_dir():  # a clone without ../shared: use the copy kept in the repository
    CORPUS = Path(__file__).resolve().parent / "corpus"


# a transposed copy (a cache) of b that a matmul then reads: uncache and extraction tests
UNCACHE = """
@program
def unc(a: f32["M", "K"], b: f32["N", "K"]) -> f32["M", "N"]:
    bt = empty((K, N))
    for k in range(K):
        for j in range(N):
            bt[k, j] = b[j, k]
    c = zeros((M, N))
    for i in range(M):
        for j in range(N):
            for k in range(K):
                c[i, j] += a[i, k] * bt[k, j]
    return c
"""


def load_case(path: Path):
    spec = importlib.util.spec_from_file_location(f"corpus_{path.stem}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    prog = next(v for v in vars(mod).values() if isinstance(v, Program))
    return mod, prog


def corpus_paths():
    return sorted(p for p in CORPUS.glob("*.py"))


def loop_chain_source(n: int) -> str:
    """A program `p` of `n` layers `h = relu(h @ w + b)`, each written as a loop nest with a
    scalar accumulator (for `tmp_program`)."""
    params = ", ".join(f'w{i}: f32["D", "D"], b{i}: f32["D"]' for i in range(n))
    layers = "\n".join(f'''    h{i} = empty((M, D))
    for i in range(M):
        for j in range(D):
            acc = 0.0
            for k in range(D):
                acc += {"x" if i == 0 else f"h{i - 1}"}[i, k] * w{i}[k, j]
            h{i}[i, j] = relu(acc + b{i}[j])''' for i in range(n))
    return f'''
@program
def p(x: f32["M", "D"], {params}) -> f32["M", "D"]:
{layers}
    return h{n - 1}
'''


def random_args(prog, dims, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for p in prog.params:
        if p.dtype is int:
            out.append(dims[p.name])
        elif p.shape is None:
            out.append(float(rng.uniform(0.5, 1.5)))
        else:
            shape = [dims[d] if isinstance(d, str) else d for d in p.shape]
            out.append(rng.standard_normal(shape).astype(np.float32))
    return out


def rel_err(got, want) -> float:
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape, f"shape {got.shape} != {want.shape}"
    denom = np.linalg.norm(want)
    return float(np.linalg.norm(got - want) / (denom if denom > 0 else 1.0))


def assert_matches_reference(plan, prog, dims, seed=0, tol=1e-4):
    args = random_args(prog, dims, seed)
    got = plan.run(*args)
    want = eqsat.reference(prog, *args)
    if not isinstance(want, tuple):
        got, want = (got,), (want,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert rel_err(g, w) < tol


def saturated(prog, dims, families):
    """(egraph, graph) after running only `families` (plus the support rules) on `prog`."""
    from eqsat import api, egraph
    from eqsat.lower import lower

    low = lower(prog, dims)
    eg, _, _ = egraph.build(low, api._opaque_shapes(low))
    fams = api.resolve_rules(families)
    egraph.saturate(eg, [r for _, r, _ in fams], api._support(fams), eqsat.Limits())
    return eg, egraph.read_back(eg)


@pytest.fixture
def tmp_program(tmp_path):
    """Write program source to a file and return the decorated program (inspect needs a file)."""
    counter = [0]

    def make(src: str, name: str | None = None):
        counter[0] += 1
        path = tmp_path / f"prog_{counter[0]}.py"
        path.write_text("from eqsat import *\n" + src)
        spec = importlib.util.spec_from_file_location(f"tmp_prog_{counter[0]}_{id(path)}", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        progs = [v for v in vars(mod).values() if isinstance(v, Program)]
        return next(p for p in progs if name is None or p.name == name)

    return make
