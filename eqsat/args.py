"""Checking a program's arguments and binding its dims to sizes."""
from __future__ import annotations

import ast
import operator

import numpy as np

from . import lang
from .errors import ArgumentError, ProgramError
from .ir import ie_eval, ie_names

# the comparisons an `assert` on sizes may make (`frontend._Parser.assert_`), as evaluated
SIZE_COMPARISONS = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
                    ast.Eq: operator.eq, ast.NotEq: operator.ne}
MAX_SIZE = 2**62  # sizes and integer parameters are egglog i64s, with room for their arithmetic


def to_numpy(x):
    """A numpy view of `x` (numpy array, torch tensor, or anything array-like)."""
    if hasattr(x, "detach") and hasattr(x, "cpu"):  # a torch tensor, without importing torch
        t = x.detach().cpu()
        if str(t.dtype) == "torch.bfloat16":  # numpy has no bfloat16: its values as float32
            t = t.float()
        return t.numpy()
    return np.asarray(x)


def check_program(prog, who: str) -> None:
    from .ir import Program

    if not isinstance(prog, Program):
        raise ArgumentError(f"{who} expects a function decorated with @eqsat.program, got {type(prog).__name__}")


def scalar_arg(p, prog, a):
    if a is None:
        raise ArgumentError(f"parameter {p.name!r} of {prog.name} is a real scalar, got None")
    if isinstance(a, bool) or isinstance(a, (complex, np.complexfloating)) or isinstance(a, str):
        raise ArgumentError(f"parameter {p.name!r} of {prog.name} is a real scalar, got {a!r}")
    try:
        arr = to_numpy(a)
    except Exception:
        raise ArgumentError(f"parameter {p.name!r} of {prog.name} is a scalar, got {type(a).__name__}") from None
    if arr.ndim != 0 or not (np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)):
        raise ArgumentError(f"parameter {p.name!r} of {prog.name} is a real scalar, got {type(a).__name__} "
                            f"{getattr(arr, 'shape', '')}")
    return np.float32(lang.round_to(arr, p.dtype)) if p.dtype.name != "f32" else np.float32(arr)


_MISSING = object()


def by_position(prog, args: tuple, kwargs: dict, own: tuple = ()) -> tuple:
    """`args` with the keyword arguments `kwargs` put in their parameters' places, as
    Python binds a call of the program's function (`plan.run(x=..., w=...)`). `own`: the
    caller's own keywords (`backend`), which a parameter of that name cannot be passed by."""
    if not kwargs:
        return args
    names = [p.name for p in prog.params]
    out = list(args) + [_MISSING] * max(0, len(names) - len(args))
    for k, v in kwargs.items():
        if k not in names:
            raise ArgumentError(f"{prog.name} has no parameter {k!r} (its parameters: {', '.join(names)})")
        at = names.index(k)
        if at < len(args):
            raise ArgumentError(f"{prog.name} got two values for parameter {k!r} (by position and by name)")
        out[at] = v
    missing = [n for n, v in zip(names, out) if v is _MISSING]
    if missing:
        clash = [n for n in missing if n in own]
        why = f" (`{clash[0]}=` is the call's own keyword: pass parameter {clash[0]!r} by position)" if clash else ""
        raise ArgumentError(f"{prog.name} is missing {len(missing)} argument{'s' if len(missing) > 1 else ''}: "
                            f"{', '.join(missing)}{why}")
    return tuple(out)


def bind_args(prog, args, shapes=None, copy=True, keep=frozenset()) -> tuple[list, dict]:
    """Convert `args` to float32 numpy values and return them with the dims they imply.

    Every dim must get one size: from `shapes`, or from the arguments' shapes. Tensors at
    the positions in `keep` are checked (rank, sizes) and returned as they are (a runner
    that keeps device tensors where they are checks them with a stand-in of their shape).
    """
    check_program(prog, "this call")
    if len(args) != len(prog.params):
        names = ", ".join(p.name for p in prog.params)
        raise ArgumentError(f"{prog.name} takes {len(prog.params)} arguments ({names}), got {len(args)}")
    dims = {}
    for d, v in (shapes or {}).items():
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise ArgumentError(f"dimension {d!r} must be an int, got {v!r}")
        dims[d] = int(v)  # (a numpy integer would carry its width into size arithmetic)
    out = []
    for pos, (p, a) in enumerate(zip(prog.params, args)):
        if p.dtype is int:  # an integer parameter: a size like a dimension, passed as an argument
            if isinstance(a, np.ndarray) and a.ndim == 0 and a.dtype.kind in "iu":
                a = a.item()  # (a 0-d integer array, as a float scalar parameter takes a 0-d array)
            if isinstance(a, bool) or not isinstance(a, (int, np.integer)):
                raise ArgumentError(f"parameter {p.name!r} of {prog.name} is an int, got {a!r}")
            if dims.setdefault(p.name, int(a)) != int(a):
                raise ArgumentError(f"parameter {p.name!r} is {a} but shapes give {dims[p.name]}")
            out.append(int(a))
            continue
        if p.shape is None:
            out.append(scalar_arg(p, prog, a))
            continue
        if a is None:
            raise ArgumentError(f"parameter {p.name!r} of {prog.name} is a tensor {list(p.shape)}, got None")
        try:
            arr = to_numpy(a)
        except Exception as e:
            raise ArgumentError(f"parameter {p.name!r} of {prog.name}: not an array ({e})") from None
        if arr.ndim != len(p.shape):
            raise ArgumentError(f"parameter {p.name!r} of {prog.name} has rank {len(p.shape)} "
                                f"{list(p.shape)}, got an array of shape {tuple(arr.shape)}")
        if not (np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)):
            raise ArgumentError(f"parameter {p.name!r} of {prog.name} must be a real numeric array, got dtype {arr.dtype}")
        for d, n in zip(p.shape, arr.shape):
            if isinstance(d, int):
                if d != n:
                    raise ArgumentError(f"parameter {p.name!r}: axis of fixed size {d} got size {n}")
            elif dims.setdefault(d, n) != n:
                raise ArgumentError(f"dimension {d!r} is {dims[d]} but parameter {p.name!r} has size {n} there "
                                    f"(shape {tuple(arr.shape)})")
        if pos in keep:
            out.append(a)
            continue
        # parameters are passed by value: `reference` runs the user's code on a copy; a plan's
        # kernels never write their inputs (a nest kept as written copies what it updates)
        if p.dtype.name != "f32":  # a narrower dtype: its values are what it can represent
            out.append(lang.round_to(arr, p.dtype))
            continue
        out.append(np.array(arr, dtype=np.float32, order="C", copy=True) if copy
                   else np.ascontiguousarray(arr, dtype=np.float32))
    check_dims(prog, dims)
    return out, dims


def check_dims(prog, dims: dict) -> None:
    if not isinstance(dims, dict):
        raise ArgumentError(f"shapes must be a dict of dimension sizes like {{'M': 64}}, got {type(dims).__name__}")
    missing = [d for d in prog.dims if d not in dims]
    if missing:
        ints = {p.name for p in prog.params if p.dtype is int}
        sizes = [d for d in missing if d not in ints]
        values = [d for d in missing if d in ints]
        in_params = {d for p in prog.params for d in (p.shape or ())}
        only_out = [d for d in sizes if d not in in_params]
        hint = f" ({', '.join(only_out)} only in the return annotation: give the size in shapes=)" if only_out else ""
        what = ([f"no size given for dimension(s) {', '.join(sizes)}{hint}"] if sizes else []) + \
            ([f"no value given for integer parameter(s) {', '.join(values)} (a plan is made for one value: "
              f"give it in the shapes)"] if values else [])
        raise ArgumentError(f"{'; '.join(what)} of {prog.name}")
    ints = {p.name for p in prog.params if p.dtype is int}
    for d, v in dims.items():  # (a dict shared between programs may name others' sizes: checked alike)
        if not isinstance(d, str):
            raise ArgumentError(f"shapes maps dimension names to sizes; {d!r} is no name (of {prog.name})")
        if d not in prog.dims and (not isinstance(v, (int, np.integer)) or isinstance(v, bool)):
            raise ArgumentError(f"shapes entry {d!r} must be an int, got {v!r} (it names no dimension of "
                                f"{prog.name})")
    for d in prog.dims:
        v = dims[d]
        if d in ints and isinstance(v, (int, np.integer)) and not isinstance(v, bool):
            if abs(v) > MAX_SIZE:
                raise ArgumentError(f"integer parameter {d!r} is {v}: too large (sizes stop at 2**62)")
            continue  # an integer parameter may be negative
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 0:
            raise ArgumentError(f"dimension {d!r} must be a non-negative int, got {v!r}")
        if v > MAX_SIZE:
            raise ArgumentError(f"dimension {d!r} is {v}: too large (sizes stop at 2**62, egglog's integers)")
    for loc, cond, src, msg in prog.assertions:
        if not _holds(cond, dims):
            raise assertion_failed(loc, src, assertion_sizes(cond, dims) or "these sizes", msg)
    for loc, k, axis, got, declared in prog.return_checks:
        try:
            a, b = ie_eval(got, dims), ie_eval(declared, dims)
        except ZeroDivisionError:
            raise ProgramError(f"at these sizes the returned shape divides by zero (axis {axis})", loc) from None
        if a != b:
            which = f"output {k} " if len(prog.returns) > 1 else ""
            raise ProgramError(f"at these sizes the returned {which}axis {axis} has {a} elements but the "
                               f"annotation declares {b}", loc)


def assertion_failed(loc, src: str, at: str, msg) -> ArgumentError:
    """The error of a program's `assert` (`Program.assertions`, `Program.loop_assertions`)
    false `at` (the sizes, or the iteration and the sizes)."""
    return ArgumentError(f"{loc}: the program asserts `{src}`, false at {at}" + (f" ({msg})" if msg else ""))


def assertion_sizes(cond, dims: dict) -> str:
    """`N=4, M=0`: the sizes an assertion's condition names, at `dims`."""
    return ", ".join(f"{d}={dims[d]}" for d in sorted(_names(cond)) if d in dims)


def _names(cond) -> set:
    if cond[0] in ("and", "or"):
        return set().union(*(_names(c) for c in cond[1]))
    if cond[0] == "not":
        return _names(cond[1])
    return set().union(*(ie_names(e) for e in cond[2]))


def _holds(cond, dims: dict) -> bool:
    """A size condition of `Program.assertions` at `dims`."""
    kind, parts = cond[0], cond[1:]
    if kind == "and":
        return all(_holds(c, dims) for c in parts[0])
    if kind == "or":
        return any(_holds(c, dims) for c in parts[0])
    if kind == "not":
        return not _holds(parts[0], dims)
    ops, exprs = parts
    values = [ie_eval(e, dims) for e in exprs]
    return all(SIZE_COMPARISONS[op](a, b) for op, a, b in zip(ops, values, values[1:]))


def random_args(prog, dims: dict, seed: int = 0) -> list:
    """Arguments for `prog` at `dims`: standard normal f32 tensors, scalars in [0.5, 1.5),
    int parameters their dimension's value (the CLI's check runs, candidates' timings)."""
    rng = np.random.default_rng(seed)
    out = []
    for p in prog.params:
        if p.dtype is int:
            out.append(dims[p.name])
        elif p.shape is None:
            out.append(float(rng.uniform(0.5, 1.5)))
        else:
            out.append(rng.standard_normal([dims[d] if isinstance(d, str) else d for d in p.shape])
                       .astype(np.float32))
    return out
