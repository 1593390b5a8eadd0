"""Checks a user's rule file before it is trusted: differential probes.

A rule written by hand can be unsound (`relu(x) -> x`, `x * y -> x`, a transpose
rewritten to its argument because the tensor is square), and egglog accepts it: the plan
is then silently wrong. Before `optimize()` uses a rule file (or a module or Ruleset a
user passes), it optimizes a handful of small probe programs with the file's rules added
to the built-in families, runs each plan and compares it with `reference` on random
inputs (values of both signs, square and non-square tensors, loops and library calls).
A difference raises `UnsoundRule`, naming the rule source and the probe it broke. Each
source is checked once per process (by path and modification time); `EQSAT_CHECK_RULES=0`
turns the check off.

A probe can only show a rule unsound, never prove it sound: a rule whose left side no
probe contains passes unchecked. The sanity rules (`rules/sanity.py`) remain the second
line: a merge of two different constants, inputs or shapes stops saturation with an
error naming the rule sources in use.
"""
from __future__ import annotations

import functools
import importlib.util
import os
import tempfile

import numpy as np

from .errors import EqsatError

PROBES = '''
from eqsat import *

@program
def elementwise(x: f32["M", "N"], y: f32["M", "N"], s: f32) -> f32["M", "N"]:
    return relu(x) * y + sigmoid(x * s) - tanh(y) / 2.0 + exp(-abs(x)) * (x - y)

@program
def square(a: f32["N", "N"], b: f32["N", "N"]) -> f32["N", "N"]:
    return a.T @ b + relu(a) - transpose(b) * 0.5

@program
def linear(x: f32["M", "K"], w: f32["K", "N"], b: f32["N"]) -> f32["M", "N"]:
    return gelu(x @ w + b)

@program
def loop_matmul(a: f32["M", "K"], b: f32["K", "N"], bias: f32["N"]) -> f32["M", "N"]:
    c = empty((M, N))
    for i in range(M):
        for j in range(N):
            s = bias[j]
            for k in range(K):
                s += a[i, k] * b[k, j]
            c[i, j] = relu(s) - 0.25 * s
    return c

@program
def reductions(a: f32["M", "K"]) -> f32["M"]:
    r = empty((M,))
    for i in range(M):
        s = 0.0
        m = -1000.0
        for k in range(K):
            s += a[i, k] * a[i, k]
            m = max(m, a[i, k])
        r[i] = s - m
    return r

@program
def transposed_loops(a: f32["K", "M"], b: f32["N", "K"]) -> f32["N", "M"]:
    c = zeros((N, M))
    for j in range(N):
        for k in range(K):
            for i in range(M):
                c[j, i] += b[j, k] * a[k, i]
    return c

@program
def batched(a: f32["B", "M", "K"], w: f32["K", "N"]) -> f32["B", "M", "N"]:
    c = empty((B, M, N))
    for r in range(B):
        c[r] = sigmoid(a[r] @ w)
    return c
'''

DIMS = {"M": 3, "N": 4, "K": 5, "B": 2}

_CHECKED: dict = {}  # source key -> None (sound on every probe) or the error


class UnsoundRule(EqsatError):
    """A user's rule made a probe program compute a different result."""


@functools.lru_cache(maxsize=1)
def _probes() -> tuple:
    """The probe programs, written to a file and loaded once per process."""
    from .ir import Program

    d = tempfile.mkdtemp(prefix="eqsat_probes_")
    path = os.path.join(d, "eqsat_rule_probes.py")
    with open(path, "w") as f:
        f.write(PROBES)
    spec = importlib.util.spec_from_file_location("eqsat_rule_probes", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return tuple(v for v in vars(mod).values() if isinstance(v, Program))


def _key(source, label: str):
    path = getattr(source, "__file__", None) or (source if isinstance(source, (str, os.PathLike)) else None)
    if path is not None and os.path.isfile(path):
        return (os.path.abspath(path), os.path.getmtime(path))
    return ("object", id(source), label)


def _args(prog, rng):
    out = []
    for p in prog.params:
        if p.shape is None:
            out.append(np.float32(rng.uniform(0.5, 1.5)))
        else:
            shape = tuple(DIMS[d] if isinstance(d, str) else d for d in p.shape)
            out.append(rng.standard_normal(shape).astype(np.float32))
    return out


def check(user_sources: list, builtin: list) -> None:
    """Raise UnsoundRule if adding any of `user_sources` ((label, ruleset source) pairs, as
    `optimize(rules=...)` accepts them) to the `builtin` family names breaks a probe."""
    if os.environ.get("EQSAT_CHECK_RULES", "1") == "0":
        return
    from .api import optimize
    from .limits import Limits
    from .reference import reference

    for label, source in user_sources:
        key = _key(source, label)
        if key in _CHECKED:
            if _CHECKED[key] is not None:
                raise _CHECKED[key]
            continue
        err = None
        rng = np.random.default_rng(0)
        for prog in _probes():
            args = _args(prog, rng)
            want = np.asarray(reference(prog, *args), dtype=np.float64)
            try:
                plan = optimize(prog, DIMS, rules=list(builtin) + [source], _checked=True,
                                limits=Limits(seconds=2.0, nodes=20_000))
                got = np.asarray(plan.run(*args), dtype=np.float64)
            except EqsatError as e:
                err = UnsoundRule(f"rule source {label}: probe program {prog.name!r} failed with it: {e}")
                break
            scale = max(float(np.linalg.norm(want)), 1e-6)
            if got.shape != want.shape or not np.isfinite(got).all() or float(np.linalg.norm(got - want)) / scale > 1e-4:
                err = UnsoundRule(
                    f"rule source {label} is unsound: with it, probe program {prog.name!r} computes a different "
                    f"result than the program (relative error {float(np.linalg.norm(got - want)) / scale:.3g}); "
                    f"the plan was:\n{plan}")
                break
        _CHECKED[key] = err
        if err is not None:
            raise err
