"""The backends a Plan runs on, behind one protocol.

A backend is a name and two functions: `compile(plan)` returns a runner built once per
plan (called with the program's arguments as a tuple; `.how` says how it runs, in words)
and `source(plan)` the code it runs, as text. `Plan.run(..., backend=name)`,
`Plan.compiled(name)` and `Plan.source(name)` go through `get(name)`; a new backend (a C++
one, a CUDA-graph one) joins with `register(Backend(...))` and nothing else changes.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from eqsat.errors import ArgumentError


@dataclass(frozen=True)
class Backend:
    name: str
    compile: Callable  # plan -> runner: runner(args) -> outputs; runner.how: str
    source: Callable  # plan -> str
    about: str = ""
    measures: Callable = lambda: False  # () -> whether a timing on it means something here


_BACKENDS: dict = {}


def register(backend: Backend) -> None:
    _BACKENDS[backend.name] = backend


def get(name) -> Backend:
    b = _BACKENDS.get(name) if isinstance(name, str) else None
    if b is None:
        raise ArgumentError(f"unknown backend {name!r} (available: {', '.join(repr(n) for n in _BACKENDS)})")
    return b


def names() -> list:
    return list(_BACKENDS)


def _numpy_compile(plan):
    from .numpy_compiled import Compiled

    return Compiled(plan)


def _numpy_source(plan) -> str:
    return plan.compiled("numpy").source or f"# {plan.compiled('numpy').how}"


def _triton_compile(plan):
    from .triton_compiled import TritonCompiled

    return TritonCompiled(plan)


def _triton_source(plan) -> str:
    from .triton_backend import source

    return source(plan)


def _on_a_gpu() -> bool:
    """Triton timings mean something on a CUDA device only (not in the interpreter)."""
    import os

    if os.environ.get("TRITON_INTERPRET") == "1":
        return False
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


register(Backend("numpy", _numpy_compile, _numpy_source,
                 "BLAS matmuls with epilogues in place, vectorized elementwise and reduction kernels, "
                 "kept loops compiled by numba; one straight-line function per plan", measures=lambda: True))
register(Backend("triton", _triton_compile, _triton_source,
                 "generated Triton kernels (the interpreter without a GPU), intermediates on the device",
                 measures=_on_a_gpu))
