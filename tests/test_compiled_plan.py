"""Plans run as straight-line numpy (backends/numpy_compiled.py): the same results as the
interpreter bit for bit, arguments of any kind still checked and converted, parameters
still passed by value, and safe from threads."""
from __future__ import annotations

import concurrent.futures
import os

import numpy as np
import pytest

import eqsat
from conftest import corpus_paths, load_case, random_args
from eqsat.backends import numpy_backend
from eqsat.errors import ArgumentError

CASES = corpus_paths()


def _interpreted(plan, args):
    vals, _ = eqsat.args.bind_args(plan.program, args, None, copy=False)
    scalars = {p.name: v for p, v in zip(plan.program.params, vals) if p.shape is None and p.dtype is not int}
    return numpy_backend.run(plan, vals, scalars)


def _same(a, b):
    a, b = (a, b) if isinstance(a, tuple) else ((a,), (b,))
    return len(a) == len(b) and all(np.array_equal(x, y, equal_nan=True) for x, y in zip(a, b))


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_corpus_plans_are_compiled_and_agree_with_the_interpreter(path):
    mod, prog = load_case(path)
    plan = eqsat.optimize(prog, mod.SHAPES)
    assert plan.compiled().how.startswith("compiled"), plan.compiled().how
    for seed in (3, 4):
        args = random_args(prog, mod.SHAPES, seed)
        assert _same(plan.run(*args), _interpreted(plan, args))


def test_any_argument_kind_takes_the_checked_path(tmp_program):
    prog = tmp_program("""
@program
def affine(x: f32["M", "K"], w: f32["K", "N"], b: f32["N"], s: f32) -> f32["M", "N"]:
    return relu(x @ w + b) * s
""")
    dims = {"M": 5, "N": 3, "K": 4}
    plan = eqsat.optimize(prog, dims)
    rng = np.random.default_rng(0)
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((5, 4), (4, 3), (3,)))
    want = plan.run(x, w, b, 1.5)
    assert np.allclose(want, eqsat.reference(prog, x, w, b, 1.5), rtol=1e-5, atol=1e-6)
    variants = [
        (x.astype(np.float64), w, b, 1.5),                 # another dtype
        (np.asfortranarray(x), w, b, 1.5),                 # not C-contiguous
        (x.tolist(), w, b, np.float32(1.5)),               # a list, a numpy scalar
        (x, np.asfortranarray(w), b, 1.5),                 # a transposed layout
    ]
    for args in variants:
        assert np.allclose(plan.run(*args), want, rtol=1e-6, atol=1e-6)
    assert np.allclose(plan.run(x, w, b, 2), plan.run(x, w, b, 2.0))  # an int for a real scalar
    with pytest.raises(ArgumentError, match="M"):
        plan.run(np.zeros((6, 4), np.float32), w, b, 1.5)
    with pytest.raises(ArgumentError):
        plan.run(x, w, b)


def test_parameters_stay_passed_by_value():
    """gemm updates its parameter C in place and returns it; the caller's C is untouched,
    call after call, and every call gives the same answer."""
    import test_polybench as tp

    mod, prog = tp.load("gemm")
    plan = tp.plan_of("gemm")
    args = mod.args(np.random.default_rng(1)) if hasattr(mod, "args") else random_args(prog, mod.SHAPES, 1)
    before = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    first = plan.run(*args)
    second = plan.run(*args)
    assert _same(first, second)
    for a, b in zip(args, before):
        assert np.array_equal(a, b)


def test_threads_share_a_compiled_plan():
    mod, prog = load_case(next(p for p in CASES if p.stem == "mlp_two_layers"))
    plan = eqsat.optimize(prog, mod.SHAPES)
    inputs = [random_args(prog, mod.SHAPES, s) for s in range(16)]
    want = [_interpreted(plan, a) for a in inputs]
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda a: plan.run(*a), inputs * 4))
    assert all(_same(g, w) for g, w in zip(got, want * 4))


def test_many_index_constants_keep_their_own_names(tmp_program):
    """A body of 40 loads at fixed indices makes many short-lived index arrays while it is
    traced; each must stay alive while recording, or a new one could take a dead one's
    identity and its name (this once made `b[1, j]` read `b[1, i]`)."""
    from test_limits import _long_body

    prog = tmp_program(_long_body(40))
    dims = {"M": 3, "N": 2, "K": 4}
    plan = eqsat.optimize(prog, dims)
    assert plan.compiled().how.startswith("compiled"), plan.compiled().how
    args = random_args(prog, dims, 5)
    assert _same(plan.run(*args), _interpreted(plan, args))


def test_backends_share_one_registry(tmp_program):
    """A backend is a name, a compile and a source (backends/registry.py): a new one joins
    without touching Plan, and an unknown name is an error listing the known ones."""
    from eqsat.backends import registry

    prog = tmp_program("""
@program
def double(x: f32["N"]) -> f32["N"]:
    return x * 2.0
""")
    plan = eqsat.optimize(prog, {"N": 8})

    class Echo:
        how = "returns its first argument"

        def __call__(self, args):
            return args[0]

    registry.register(registry.Backend("echo", lambda p: Echo(), lambda p: "# echo"))
    try:
        x = np.arange(8, dtype=np.float32)
        assert plan.run(x, backend="echo") is x
        assert plan.source("echo") == "# echo" and plan.compiled("echo").how.startswith("returns")
        assert "def plan_fn" in plan.source("numpy")
    finally:
        registry._BACKENDS.pop("echo")
    with pytest.raises(ArgumentError, match="'numpy', 'triton'"):
        plan.run(x, backend="cuda-graphs")


def test_a_plan_can_be_deep_copied():
    import copy

    import numpy as np

    from conftest import corpus_paths, load_case, random_args

    mod, prog = load_case(next(p for p in corpus_paths() if p.stem == "linear_bias_relu"))
    plan = eqsat.optimize(prog, mod.SHAPES)
    twin = copy.deepcopy({"plan": plan})["plan"]
    args = random_args(prog, mod.SHAPES, 2)
    assert twin is not plan and np.array_equal(twin.run(*args), plan.run(*args))
    assert [k.kind for k in twin.kernels] == [k.kind for k in plan.kernels]


def test_freed_memory_is_kept_for_the_next_run_unless_asked_not_to():
    """The numpy backend raises glibc's mmap and trim thresholds once per process (large
    temporaries were fresh, zero-filled pages on every run); EQSAT_KEEP_FREED_MEMORY=0
    leaves the allocator alone. Each in a fresh process (the setting is per process)."""
    import subprocess
    import sys

    code = ("from eqsat.backends import numpy_compiled as c; "
            "print(c.keep_freed_memory(), c.keep_freed_memory())")
    for env, want in (({}, "True True"), ({"EQSAT_KEEP_FREED_MEMORY": "0"}, "False False")):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                             env={**os.environ, **env}).stdout.split()
        assert " ".join(out) == want, (env, out)
