"""Arrays made inside an expression (a part of `eqsat/desugar.py`'s pass): `np.concatenate`,
`np.stack`, `np.vstack`, `np.hstack` and `np.roll` of tensors of known shape; `np.arange(n)`,
`np.linspace(a, b, num)`; `np.ones_like(x)`,
`np.full_like(x, v)`, `np.zeros_like(x)`, `np.ones(shape)`, `np.full(shape, v)`,
`np.zeros(shape)`, `np.eye(n)` and `np.identity(n)` where they are an operand
(`x + np.ones_like(x)`, `a @ np.eye(N)`), not bound to a name (desugar's statements
handle those): a buffer allocated just before the statement, and loops storing its values,
then read by name. Left as written (refused by the front end, with its location): a dtype
other than float32 (numpy's float64 default is taken as float32, as for the bound forms),
a fill numpy would make an integer array of (`np.full(s, 2)`), a shape that is no tuple of
sizes.
"""
from __future__ import annotations

import ast
import copy

import numpy as np

from . import lang, sections
from .hoisting import Hoisting, record_result
from .names import LIB, SCALAR
from .reductions import _nest as _loops, _product

_LIKE = {np.ones_like: 1.0, np.full_like: None, np.zeros_like: 0.0}
_SHAPED = {np.ones: 1.0, np.full: None, np.zeros: 0.0}
_EYE = (np.eye, np.identity)
_JOINS = (np.concatenate, np.stack, np.vstack, np.hstack)


class Builders(Hoisting):
    def __init__(self, env, fdef):
        super().__init__()
        self.env = env
        self.size_checks: list = []  # asserts on sizes the function's body begins with (`_same_count`)
        # names some statement writes elements of (`x[i] = ...`, `x[1:] += ...`), and the
        # names bound to a new buffer (`y = np.empty(...)`, `zeros(...)`): no view of another
        self.written = {_base(t) for st in ast.walk(fdef) for t in _targets(st)} - {None}
        self.fresh = {st.targets[0].id for st in ast.walk(fdef) if isinstance(st, ast.Assign) and
                      len(st.targets) == 1 and isinstance(st.targets[0], ast.Name) and
                      isinstance(st.value, ast.Call) and _allocates(st.value, env)}

    def visit_Assign(self, n):
        v = n.value
        if len(n.targets) == 1 and isinstance(n.targets[0], ast.Name) and isinstance(v, ast.Call) and \
                _reshaped(v, self.env) is not None:
            # `y = x.reshape(...)` is a view of x in numpy: a copy is the same only where
            # neither is written (nor rebound), through any view: so only where nothing is
            # written but new buffers; `x.flatten()` is a copy anyway
            x, flatten = _reshaped(v, self.env)
            y = n.targets[0].id
            if flatten or (isinstance(x, ast.Name) and self.written <= self.fresh - {x.id, y} and
                           self.env.stores.get(x.id, 0) <= 1 and self.env.stores.get(y, 0) == 1):
                n.value = self.visit(v)
                record_result(n, self.env)
            return n
        # (`y = zeros(shape)`, `y = np.ones(shape)`, ... bound to a name are desugar's: only
        # their operands are visited here)
        if len(n.targets) == 1 and isinstance(v, ast.Call) and (
                isinstance(v.func, ast.Name) and v.func.id in (LIB + "zeros", LIB + "empty") or
                self.env.callee(v.func) in (np.zeros, np.empty, np.zeros_like, np.empty_like, *_SHAPED, *_EYE)):
            v.args = [self.visit(a) for a in v.args]
            return n
        self.generic_visit(n)
        record_result(n, self.env)
        return n

    def visit_Subscript(self, n):
        """An element or slice of a reshape (`x.flatten()[0]`): of its value computed into a
        temporary just before the statement, as only a name is indexed."""
        self.generic_visit(n)
        v = n.value
        if isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id == LIB + "reshape":
            got = self.env.value_shape(v)
            if got is not None and got is not SCALAR:
                n.value = self.computed(v, f"eqsat_new{self.count}", got, n)
                self.count += 1
        return n

    def visit_Call(self, n):
        self.generic_visit(n)
        f = n.func
        if isinstance(f, ast.Name) and f.id == LIB + "zeros" and len(n.args) == 1 and not n.keywords \
                and not self.guards:  # (`np.zeros_like(x)` as an operand: desugar made it this)
            dims = _sizes(n.args[0], self.env)
            return n if dims is None else self.allocate(n, dims, ast.Constant(0.0), False)
        obj = self.env.callee(f)
        if obj in _JOINS and not self.guards:
            return self.join(n, obj)
        if obj is np.roll and not self.guards:
            return self.roll(n)
        if obj in (np.arange, np.linspace) and not self.guards:
            return self.ramp(n, obj)
        if _reshaped(n, self.env) is not None and not self.guards:
            return self.reshape(n)
        if self.guards or not (obj in _LIKE or obj in _SHAPED or obj in _EYE):
            return n
        fill, diagonal = None, False
        if obj in _LIKE or obj in _SHAPED:
            filled = self.env.filled_args(n)  # (`np.ones((M, N), np.float32)`: dtype by position too)
            if filled is None:
                return n
            args, typed = filled
        if obj in _LIKE:
            got = self.env.value_shape(args[0])
            if got is None or got is SCALAR or not got[1]:
                return n
            dims = [copy.deepcopy(d) for d in got[0]]
            fill = args[1] if obj is np.full_like else ast.Constant(_LIKE[obj])
        elif obj in _SHAPED:
            dims = _sizes(args[0], self.env)
            fill = args[1] if obj is np.full else ast.Constant(_SHAPED[obj])
            if dims is None or (obj is np.full and not typed and self.env.is_int(fill)):
                return n  # (numpy's `np.full(s, 2)`: an integer array)
        else:
            kws = {k.arg: k.value for k in n.keywords}
            if set(kws) - {"dtype"} or ("dtype" in kws and self.env.callee(kws["dtype"]) is not np.float32):
                return n
            if len(n.args) != 1 or not self.env.is_int(n.args[0]):
                return n
            dims, fill, diagonal = [copy.deepcopy(n.args[0]), copy.deepcopy(n.args[0])], ast.Constant(1.0), True
        if self.env.value_shape(fill) is not SCALAR:
            return n
        return self.allocate(n, dims, fill, diagonal)

    def _operand(self, e, k: int):
        """(a name for tensor `e`, its extents), an expression computed into a temporary
        first; None where its shape is not known or it is no float32 tensor."""
        got = self.env.value_shape(e)
        if got is None or got is SCALAR or not got[1] or not got[0]:
            return None
        if not isinstance(e, ast.Name):
            e = self.computed(e, f"eqsat_new{self.count}_part{k}", got, e)
        return e, got[0]

    def join(self, n, obj):
        """`np.concatenate((a, b, ...), axis=k)` (k = 0 by default), `np.stack(...)` (a new axis
        k), `np.vstack` and `np.hstack` (numpy's rules: vectors stack as rows, hstack of
        vectors concatenates them): a buffer of the joined shape, each part copied into its
        place by loops before the statement. The parts must agree on every other axis (the
        same declared extents); else left as written (refused)."""
        kws = {k.arg: k.value for k in n.keywords}
        if len(n.args) != 1 or set(kws) - {"axis"} or not isinstance(n.args[0], (ast.Tuple, ast.List)) or \
                not n.args[0].elts:
            return n
        parts = [self._operand(e, k) for k, e in enumerate(n.args[0].elts)]
        if None in parts:
            return n
        rank = len(parts[0][1])
        if any(len(d) != rank for _, d in parts):
            return n
        axis = _d_number(kws.get("axis", ast.Constant(0)))
        if obj is np.vstack:
            new, axis = rank == 1, 0
        elif obj is np.hstack:
            new, axis = False, 0 if rank == 1 else 1
        else:
            new = obj is np.stack
        if type(axis) is not int or not -(rank + new) <= axis < rank + new:
            return n
        axis %= rank + new
        others = [d for d in range(rank) if new or d != axis]
        if any(ast.dump(p[1][d]) != ast.dump(parts[0][1][d]) for p in parts for d in others):
            return n
        base = parts[0][1]
        if new:
            dims = [copy.deepcopy(d) for d in base]
            dims.insert(axis, ast.Constant(len(parts)))
        else:
            dims = [copy.deepcopy(d) for d in base]
            total = copy.deepcopy(parts[0][1][axis])
            for _, d in parts[1:]:
                total = ast.BinOp(left=total, op=ast.Add(), right=copy.deepcopy(d[axis]))
            dims[axis] = total
        name, stmts = self._buffer(dims)
        offset = ast.Constant(0)
        for k, (part, extents) in enumerate(parts):
            idx = [f"{name}_{k}_{d}" for d in range(rank)]
            at = [ast.Name(id=i, ctx=ast.Load()) for i in idx]
            if new:
                at.insert(axis, ast.Constant(k))
            else:
                at[axis] = ast.BinOp(left=copy.deepcopy(offset), op=ast.Add(), right=at[axis])
                offset = ast.BinOp(left=offset, op=ast.Add(), right=copy.deepcopy(extents[axis]))
            read = sections.subscript(part.id, [ast.Name(id=i, ctx=ast.Load()) for i in idx])
            stmts += _loops(idx, extents, [ast.Assign(targets=[sections.subscript(name, at, ast.Store())],
                                                      value=read)])
        self.place(stmts, n)
        return ast.copy_location(ast.Name(id=name, ctx=ast.Load()), n)

    def roll(self, n):
        """`np.roll(x, s, axis=k)` (a vector's axis may be left out) with an integer shift s:
        a buffer whose element i along k is x's element (i - s) % N there."""
        kws = {k.arg: k.value for k in n.keywords}
        if not 2 <= len(n.args) + len(kws) <= 3 or set(kws) - {"shift", "axis"} or len(n.args) > 3:
            return n
        args = list(n.args) + [None] * (3 - len(n.args))
        shift, axis = kws.get("shift", args[1]), kws.get("axis", args[2])
        part = self._operand(n.args[0], 0) if n.args else None
        if part is None or shift is None or not self.env.is_int(shift):
            return n
        x, extents = part
        rank = len(extents)
        k = 0 if axis is None and rank == 1 else _d_number(axis) if axis is not None else None
        if type(k) is not int or not -rank <= k < rank:
            return n  # (without an axis numpy rolls the flattened array)
        k %= rank
        name, stmts = self._buffer([copy.deepcopy(d) for d in extents])
        if not isinstance(shift, ast.Constant):  # (evaluated once)
            stmts.append(ast.Assign(targets=[ast.Name(id=f"{name}_s", ctx=ast.Store())], value=shift))
            self.env.int_locals.add(f"{name}_s")
            shift = ast.Name(id=f"{name}_s", ctx=ast.Load())
        idx = [f"{name}_{d}" for d in range(rank)]
        src = [ast.Name(id=i, ctx=ast.Load()) for i in idx]
        src[k] = ast.BinOp(left=ast.BinOp(left=src[k], op=ast.Sub(), right=copy.deepcopy(shift)), op=ast.Mod(),
                           right=copy.deepcopy(extents[k]))
        stmts += _loops(idx, extents, [ast.Assign(
            targets=[sections.subscript(name, [ast.Name(id=i, ctx=ast.Load()) for i in idx], ast.Store())],
            value=sections.subscript(x.id, src))])
        self.place(stmts, n)
        return ast.copy_location(ast.Name(id=name, ctx=ast.Load()), n)

    def ramp(self, n, obj):
        """`np.arange(n)` (0, 1, ..., n - 1) and `np.linspace(a, b, num)` (numpy's: a + i *
        (b - a) / (num - 1), the last exactly b), as float32 (numpy's are int64 and float64:
        equal values below 2**24, and float64's rounded once); a dtype other than float32,
        and other arguments, left as written."""
        kws = {k.arg: k.value for k in n.keywords}
        if set(kws) - {"dtype"} or ("dtype" in kws and self.env.callee(kws["dtype"]) is not np.float32):
            return n
        if obj is np.arange:
            if len(n.args) != 1 or not self.env.is_int(n.args[0]):
                return n
            count = n.args[0]
        else:
            if len(n.args) != 3 or not self.env.is_int(n.args[2]) or \
                    any(self.env.value_shape(a) is not SCALAR for a in n.args[:2]):
                return n
            count = n.args[2]
        name, stmts = self._buffer([copy.deepcopy(count)])
        i = ast.Name(id=f"{name}_0", ctx=ast.Load())
        value = ast.BinOp(left=i, op=ast.Mult(), right=ast.Constant(1.0))
        if obj is np.linspace:
            a, b = n.args[0], n.args[1]
            for k, e in enumerate((a, b)):
                if not isinstance(e, ast.Constant):  # (evaluated once)
                    stmts.append(ast.Assign(targets=[ast.Name(id=f"{name}_{'ab'[k]}", ctx=ast.Store())], value=e))
                    self.env.scalars.add(f"{name}_{'ab'[k]}")
            a, b = [e if isinstance(e, ast.Constant) else ast.Name(id=f"{name}_{'ab'[k]}", ctx=ast.Load())
                    for k, e in enumerate((a, b))]
            last = ast.BinOp(left=copy.deepcopy(count), op=ast.Sub(), right=ast.Constant(1))
            step = ast.BinOp(left=ast.BinOp(left=copy.deepcopy(b), op=ast.Sub(), right=copy.deepcopy(a)),
                             op=ast.Div(), right=ast.Call(func=ast.Name(id="max", ctx=ast.Load()), args=[
                                 copy.deepcopy(last), ast.Constant(1)], keywords=[]))  # (num = 1: [a])
            value = ast.IfExp(
                test=ast.BoolOp(op=ast.And(), values=[
                    ast.Compare(left=copy.deepcopy(i), ops=[ast.Eq()], comparators=[copy.deepcopy(last)]),
                    ast.Compare(left=copy.deepcopy(last), ops=[ast.Gt()], comparators=[ast.Constant(0)])]),
                body=copy.deepcopy(b),
                orelse=ast.BinOp(left=ast.BinOp(left=value, op=ast.Mult(), right=step), op=ast.Add(),
                                 right=copy.deepcopy(a)))
        stmts += _loops([i.id], [count], [ast.Assign(targets=[sections.subscript(name, [copy.deepcopy(i)],
                                                                                  ast.Store())], value=value)])
        self.place(stmts, n)
        return ast.copy_location(ast.Name(id=name, ctx=ast.Load()), n)

    def reshape(self, n):
        """`x.reshape(shape)` (`x.reshape(a, b)`, `np.reshape(x, shape)`, one extent -1), and
        `x.ravel()`, `x.flatten()`, read where the call is: the language's `reshape(x, shape)`
        with every extent worked out (-1 too), a value holding x's elements in C order (an
        operand expression is computed into a temporary first). Read as a value, so a view
        is the same only where nothing writes x or it while it is read: an operand is read
        where the statement reads it, and a name is bound to it only where nothing but new
        buffers is written (`visit_Assign`). The e-graph's reshape is a view where x is
        contiguous; copies the backends make where it is not, as numpy does."""
        x, _ = _reshaped(n, self.env)
        part = self._operand(x, 0)
        if part is None:
            return n
        x, dims_in = part
        f = n.func
        if isinstance(f, ast.Attribute) and f.attr in ("ravel", "flatten"):
            shape = [ast.Constant(-1)]
        else:
            args = n.args[1:] if self.env.callee(f) is np.reshape else n.args
            shape = args[0].elts if len(args) == 1 and isinstance(args[0], (ast.Tuple, ast.List)) else list(args)
        total = _product([copy.deepcopy(d) for d in dims_in])
        free = [k for k, d in enumerate(shape) if _d_number(d) == -1]
        if len(free) > 1 or not all(self.env.is_int(d) for d in shape):
            return n
        dims_out = [copy.deepcopy(d) for d in shape]
        if free:
            rest = [copy.deepcopy(d) for k, d in enumerate(shape) if k != free[0]]
            left = [copy.deepcopy(d) for d in dims_in]  # (the extents the others leave, by name where
            for d in rest:                               # they are x's: `(K, -1)` of (M, K) is (K, M))
                hit = next((k for k, e in enumerate(left) if ast.dump(e) == ast.dump(d)), None)
                if hit is None:
                    break
                left.pop(hit)
            else:
                rest = []
                total = _product(left) if left else ast.Constant(1)
            dims_out[free[0]] = ast.BinOp(left=total, op=ast.FloorDiv(), right=_product(rest)) if rest else total
        if not free:
            self._same_count(n, dims_in, dims_out)
        self.count += 1  # (the operand's temporary above is named by the count: each reshape its own)
        out = ast.Call(func=ast.Name(id=LIB + "reshape", ctx=ast.Load()),
                       args=[ast.Name(id=x.id, ctx=ast.Load()), ast.Tuple(elts=dims_out, ctx=ast.Load())], keywords=[])
        return ast.copy_location(out, n)

    def _same_count(self, n, dims_in: list, dims_out: list) -> None:
        """numpy refuses a reshape to another count of elements (ValueError); so does the
        program, at any sizes making the counts differ: `assert` that they agree at the top of
        the function (a condition on sizes, checked when they are known: `args.check_dims`)
        where both are products of sizes and numbers. (Unchecked, `x.reshape(A, 2, B)` of
        (A, C) at C = 8, B = 3 read 18 of the 24 elements.)"""
        names = {x.id for d in [*dims_in, *dims_out] for x in ast.walk(d) if isinstance(x, ast.Name)}
        if not names <= set(self.env.sizes) or ast.dump(_product(dims_in)) == ast.dump(_product(dims_out)):
            return
        test = ast.Compare(left=_product([copy.deepcopy(d) for d in dims_in]), ops=[ast.Eq()],
                           comparators=[_product([copy.deepcopy(d) for d in dims_out])])
        shape = ", ".join(ast.unparse(d) for d in dims_out)
        check = ast.Assert(test=test, msg=ast.Constant(f"cannot reshape {ast.unparse(n)}: its element count "
                                                       f"is not that of ({shape})"))
        self.size_checks.append(ast.fix_missing_locations(ast.copy_location(check, n)))

    def _buffer(self, dims: list) -> tuple:
        """(a new buffer's name, [the statement allocating it])."""
        name = f"eqsat_new{self.count}"
        self.count += 1
        return name, [self.allocation(name, dims)]

    def allocate(self, n, dims: list, fill, diagonal: bool):
        name, stmts = self._buffer(dims)
        if not (isinstance(fill, ast.Constant) and fill.value == 0.0 and not diagonal):
            if not isinstance(fill, ast.Constant):  # (evaluated once, as numpy does)
                stmts.append(ast.Assign(targets=[ast.Name(id=f"{name}_v", ctx=ast.Store())], value=fill))
                fill = ast.Name(id=f"{name}_v", ctx=ast.Load())
                self.env.scalars.add(f"{name}_v")
            idx = [f"{name}_{d}" for d in range(1 if diagonal else len(dims))]
            at = [ast.Name(id=idx[0], ctx=ast.Load())] * 2 if diagonal else \
                [ast.Name(id=i, ctx=ast.Load()) for i in idx]
            stmts += _loops(idx, dims[:len(idx)], [ast.Assign(targets=[sections.subscript(name, at, ast.Store())],
                                                             value=copy.deepcopy(fill))])
        self.place(stmts, n)
        return ast.copy_location(ast.Name(id=name, ctx=ast.Load()), n)


def _sizes(shape, env) -> list | None:
    """The extents of a shape argument (`(M, N)`, `[M, N]`, `N`, `x.shape` was desugared
    already), where each is an integer expression of sizes; else None."""
    elts = shape.elts if isinstance(shape, (ast.Tuple, ast.List)) else [shape]
    if not elts or not all(env.is_int(e) for e in elts):
        return None
    return [copy.deepcopy(e) for e in elts]


def _d_number(e):
    from .desugar import _number

    return _number(e)


def _reshaped(call, env):
    """(the tensor, whether numpy copies it) of `x.reshape(...)`, `np.reshape(x, ...)`,
    `x.ravel()`, `x.flatten()` (a copy); else None."""
    f = call.func
    kws = {k.arg for k in call.keywords}
    if isinstance(f, ast.Attribute) and env.callee(f) is None:
        if f.attr in ("ravel", "flatten") and not call.args and not kws:
            return f.value, f.attr == "flatten"
        if f.attr == "reshape" and call.args and not kws:
            return f.value, False
    if env.callee(f) is np.reshape and len(call.args) == 2 and not kws:
        return call.args[0], False
    return None


def _targets(st) -> list:
    if isinstance(st, ast.Assign):
        return st.targets
    if isinstance(st, (ast.AugAssign, ast.AnnAssign)):
        return [st.target]
    return []


def _base(t):
    """The name whose elements target `t` writes (`x[i]`, `x[1:][j]`), else None."""
    if not isinstance(t, ast.Subscript):
        return None
    while isinstance(t, (ast.Subscript, ast.Attribute)):
        t = t.value
    return t.id if isinstance(t, ast.Name) else None


def _allocates(call, env) -> bool:
    """Whether `call` makes a new buffer: numpy's `empty`/`zeros`/... (desugar's
    `eqsat_lib_zeros`), the language's builders, `x.flatten()`, `x.copy()`, `np.copy(x)`."""
    f = call.func
    if isinstance(f, ast.Name) and f.id in (LIB + "zeros", LIB + "empty"):
        return True
    if isinstance(f, ast.Attribute) and f.attr in ("flatten", "copy") and env.callee(f) is None and not call.args:
        return True
    if env.callee(f) is np.copy:
        return True
    return env.callee(f) in (np.zeros, np.empty, np.ones, np.full, np.zeros_like, np.empty_like,
                             np.ones_like, np.full_like, *lang.BUILDERS.values())
