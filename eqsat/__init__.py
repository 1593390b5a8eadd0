"""eqsat: an equality-saturation optimizer for loop programs.

    plan = eqsat.optimize(prog, shapes={"M": 64, ...})
    out = plan.run(*args)
"""
from .errors import ArgumentError, EqsatError, ProgramError
from .frontend import program
from .lang import (
    bf16, cos, empty, exp, f16, f32, gelu, log, maximum, minimum, relu, sigmoid, silu, sin, sqrt, tanh, transpose,
    zeros,
)
from .reference import reference

__all__ = [
    "program", "reference", "optimize", "optimize_many", "Plan", "Kernel", "Limits",
    "f32", "f16", "bf16", "empty", "zeros", "transpose",
    "relu", "gelu", "silu", "sigmoid", "tanh", "exp", "log", "sqrt", "sin", "cos", "maximum", "minimum",
    "EqsatError", "ProgramError", "ArgumentError",
]


def __getattr__(name):  # the optimizer pulls in egglog; import it only when asked for
    if name in ("optimize", "Plan", "Kernel", "Limits"):
        from . import api

        return getattr(api, name)
    if name == "optimize_many":
        from .batch import optimize_many

        return optimize_many
    raise AttributeError(name)
