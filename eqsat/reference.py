"""The oracle: a program means what it computes when run with numpy arrays."""
from __future__ import annotations

import types

from .args import bind_args, by_position, check_dims, check_program


def reference(prog, /, *args, shapes=None, **kwargs):
    """Run `prog` as the plain Python it is, dims bound to the sizes of `args` (or `shapes`);
    arguments by position or by the parameters' names (a parameter named `shapes` by
    position: the name is this function's).

    Returns the output, or a tuple of outputs, as numpy values.
    """
    check_program(prog, "reference()")
    if kwargs:
        args = by_position(prog, args, kwargs, own=("shapes",))
    if shapes is not None:
        if not isinstance(shapes, dict):
            check_dims(prog, shapes)
    vals, dims = bind_args(prog, args, shapes)
    fn = prog.fn
    g = dict(fn.__globals__)
    g.update(dims)
    run = types.FunctionType(fn.__code__, g, fn.__name__, fn.__defaults__, fn.__closure__)
    return as_declared(prog, run(*vals))


def as_declared(prog, out):
    """The program's results in their declared dtypes (`lang.as_dtype`)."""
    from . import lang

    kinds = prog.out_dtypes
    if not kinds or all(d is lang.f32 for d in kinds):
        return out
    if isinstance(out, tuple):
        return tuple(lang.as_dtype(o, d) for o, d in zip(out, kinds))
    return lang.as_dtype(out, kinds[0])
