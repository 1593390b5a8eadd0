"""Spellings Python allows, and numeric code is written in, rewritten (in the function's
syntax tree, before the front end reads it) to the language's own forms, each where both
compute exactly the same:

- `A[i][j]` is `A[i, j]`, read or written: a leading index is a view, and an element of
  the view is that element of `A`; `x[i, :]` is `x[i]` and `x[:]` (read) is `x`;
- `X.shape[k]`, `len(X)` and `X.shape` are the extents `X` is declared with, `X.size`
  their product (a tensor parameter's annotation, or the shape a buffer is allocated
  with, bound once);
  `np.zeros_like(X)` and `np.empty_like(X)` of a float32 `X` allocate that shape;
- `np.sqrt`, `np.exp`, `np.log`, `np.tanh`, `np.abs`, `np.maximum`, `np.minimum` (the
  functions the language's are) are the language's functions; so are `math.sqrt`,
  `math.exp`, `math.log`, `math.tanh` and `math.fabs`, which compute in float64 where the
  language's compute in float32 (their results agree to float32's rounding: README);
  `np.matmul(a, b)` is `a @ b`, and so is `np.dot(a, b)` where neither has more than two
  axes (the front end checks);
- `float(e)` of an integer expression (loop variables, sizes, integer constants) is
  `e * 1.0`, the same float, and `float(e)` of a number of the program is `e`;
  `np.float32(e)` is the language's `float32(e)`, a float32 (a Python number rounded,
  a float32 value itself: README, Python numbers); `np.inf`, `np.nan`, `np.pi`,
  `np.e`, `math.inf`, ... and `float("inf")` are those numbers;
- a negative constant index counts from the end of its axis (`x[-1]` is `x[N - 1]`);
- `np.add`, `np.subtract`, `np.multiply`, `np.divide`, `np.power`, `np.mod` (`np.remainder`),
  `np.floor_divide` are `+ - * / ** % //`; `np.linalg.norm(x)` (with `axis=`, `keepdims=`)
  is `sqrt(np.sum(x * x))`;
  `np.square(x)` is `x * x`, `np.clip(a, lo, hi)` is `clip_above(clip_below(a, lo), hi)` (numpy's, which
  keeps `a` on a tie with a bound: `lang.clip_below`), and with a bound None
  `maximum(a, lo)` or `minimum(a, hi)` (numpy's then, the bound's zero on a tie) and `np.where(c, a, b)` is `a if c else b` (of numbers: nothing is
  skipped that could fail; of tensors, marked `eqsat_where`, read element by element by
  `eqsat/sections.py`, numpy's broadcast of the three); `np.logical_and(a, b)`,
  `np.logical_or(a, b)` and `np.logical_not(a)` are `a and b`, `a or b` and `not a`, which
  are conditions (of masks, element by element);
- `np.transpose(x)` is `x.T`, `np.transpose(x, axes)` the language's `transpose`;
  `x.copy()` and `np.copy(x)` of a float32 tensor are `x * 1.0` (a new tensor, every value
  the same, -0.0 and NaN too); `y = np.ones(shape)` and `y = np.full(shape, v)` are `zeros`
  and a loop nest that stores 1.0 or v (evaluated once) into every element;
- `reversed(range(n))` and `reversed(range(lo, hi))` are `range(n - 1, -1, -1)` and
  `range(hi - 1, lo - 1, -1)`, and `reversed(range(lo, hi, s))` with a constant step s
  `range(lo + (hi - 1 - lo) // s * s, lo - 1, -s)`; `range(max(a, b), min(c, d))` (step 1) is `range(a, c)`
  around a body guarded by `j >= b and j < d`;
- `np.zeros([M, N], np.float32)` is `np.zeros((M, N), dtype=np.float32)`; `N = x.shape[1]`
  and `M, N = x.shape`, binding sizes to themselves, are dropped;
- `t //= v`, `t %= v`, `t **= v` are `t = t // v` and alike (the target's index is pure);
- `continue`: the statements after an `if` whose branch continues move into its other
  branch (copied into both where both may fall through), so no statement continues;
- `np.sum(x)`, `np.max(x, axis=1)`, `x.mean()`, ... of a tensor whose shape the syntax
  tells (`_Env.value_shape`): loops before the statement, into a scalar or a tensor of the
  other axes (numpy's sums are pairwise, these sequential: the same up to rounding; max
  and min propagate NaN as numpy's);
- `np.einsum` with a constant spec of letters: loops summing the products of the
  operands' elements (`reductions.Reductions.einsum`), and `np.inner`, `np.vdot`,
  `np.tensordot` as the einsum they are; `a.dot(b)` of a tensor is `np.dot(a, b)`, and
  `x.astype(np.float32)` of a float32 tensor a copy;
- arrays made as operands (`np.ones_like(x)`, `np.eye(n)`, ...): `eqsat/builders.py`;
- `sum(e for k in range(...) if c)` (builtin sum over a generator of `range` loops) is an
  accumulator, `0` (or sum's start) plus each `e` in order, computed by loops just before
  the statement that reads it (an `if`'s test: before the `if`), its variables renamed
  (a generator's variables are its own).

Library functions are renamed `eqsat_lib_<name>`, names only eqsat binds (the front end
and kept nests read them as the language's function). Anything else is left as written:
the front end then refuses it with its location, as before.
"""
from __future__ import annotations

import ast
import builtins
import copy
import math

import numpy as np

from . import aliases, guards, lang, sections, slice_bounds
from .builders import Builders
from .hoisting import Hoisting as _Hoisting
from .names import LIB, SCALAR
from .reductions import METHODS, REDUCTIONS, Reductions, _product

# library functions that are the language's, by their object
ALIASES = {np.transpose: "transpose", np.sqrt: "sqrt", np.exp: "exp", np.log: "log", np.tanh: "tanh", np.abs: "abs", np.fabs: "abs",
           np.maximum: "maximum", np.minimum: "minimum", math.sqrt: "sqrt", math.exp: "exp", math.log: "log",
           np.sin: "sin", np.cos: "cos", math.sin: "sin", math.cos: "cos",
           math.tanh: "tanh", math.fabs: "abs",
           # (with no term: lang.NO_TERM)
           np.tan: "tan", np.arcsin: "arcsin", np.arccos: "arccos", np.arctan: "arctan", np.sinh: "sinh",
           np.cosh: "cosh", np.log1p: "log1p", np.expm1: "expm1", np.log2: "log2", np.log10: "log10", np.exp2: "exp2",
           np.floor: "floor", np.ceil: "ceil", np.sign: "sign", np.arctan2: "arctan2", np.hypot: "hypot",
           np.float32: "float32",
           math.tan: "tan", math.asin: "arcsin", math.acos: "arccos", math.atan: "arctan", math.sinh: "sinh",
           math.cosh: "cosh", math.log1p: "log1p", math.expm1: "expm1", math.log2: "log2", math.log10: "log10", math.exp2: "exp2",
           math.atan2: "arctan2", math.hypot: "hypot"}
_LIKE = {np.zeros_like: "zeros", np.empty_like: "empty"}
_MATH = {f for f in ALIASES if getattr(math, getattr(f, "__name__", ""), None) is f}
# the most statements `continue` removal may copy into branches (each `if` that continues
# copies the rest of its body): past it the program is refused as before
_COPY_LIMIT = 2000


# what those names are bound to where a kept nest runs as Python
BINDINGS = {LIB + k: f for k, f in {**lang.UNARY, **lang.BINARY, **lang.BUILDERS, **lang.SHAPERS}.items()}
# a buffer a nest kept as written makes for itself (`lower.Nest.allocates`: it writes every
# element before any read, so its contents need no fill)
ALLOCATE = "eqsat_allocate"
BINDINGS[ALLOCATE] = lambda shape: np.empty(shape, dtype=np.float32)
# Python's float of an element in code run as written (a Python float, weak under numpy's
# rules: `lang.pyfloat`'s float64 is not, and `float(x[i]) + y[i]` computed in float64)
BINDINGS[LIB + "float"] = float
# module attributes that are numbers
_NUMBERS = {(np, "inf"), (np, "nan"), (np, "pi"), (np, "e"), (np, "NINF"), (np, "Inf"), (np, "NaN"), (math, "inf"),
            (math, "nan"), (math, "pi"), (math, "e"), (math, "tau")}


# calls that are another's: `np.ndarray((N, M), dtype=np.float32)` makes an uninitialized
# array, as np.empty does (NPBench's vadv writes it so)
_SAME_CALL = {np.ndarray: "empty"}
_FILLED = (np.ones, np.zeros, np.empty, np.full)  # arrays made from a shape (`_Env._filled_shape`)


def library_name(name: str) -> str | None:
    """The language function an `eqsat_lib_` name stands for, else None."""
    if name.startswith(LIB):
        canon = name[len(LIB):]
        if canon in lang.UNARY or canon in lang.BINARY or canon in lang.BUILDERS or canon in lang.SHAPERS:
            return canon
    return None


def rewrite(fdef: ast.FunctionDef, params: list, sizes: set, resolve) -> None:
    """Rewrite `fdef` in place (see above). `params`: the program's `ir.Param`s; `sizes`:
    the names that are sizes (dims, int parameters); `resolve(name)`: what a name the
    function does not bind means to Python."""
    _same_calls(fdef, resolve)
    assumed: list = []
    token = sections.ASSUMED.set(assumed)
    try:
        env = _rewrite(fdef, params, sizes, resolve)
    finally:
        sections.ASSUMED.reset(token)
    _assert_extents(fdef, assumed, env)


def _same_calls(fdef, resolve) -> None:
    """Calls that are another function's, spelled as that one (in place): numpy's
    `np.ndarray((N, M), dtype=np.float32)` makes an uninitialized array, as `np.empty`
    does (NPBench's vadv allocates so)."""
    for n in ast.walk(fdef):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name):
            mod = resolve(n.func.value.id)
            if isinstance(mod, type(np)):
                name = _SAME_CALL.get(getattr(mod, n.func.attr, None))
                if name is not None:
                    n.func.attr = name


def _assert_extents(fdef, pairs: list, env) -> None:
    """`assert x == y` at the top of `fdef` for each pair of extents taken as equal
    (`sections.maybe_same`): checked when the sizes are known, as the program's own. The
    extents are as the program wrote them (`np.zeros((x.shape[0], x.shape[1] + 2))`):
    `env` reads `x.shape[k]` as the sizes it is, as in the body."""
    seen, top = set(), []
    for x, y in pairs:
        test = env.visit(ast.Compare(left=copy.deepcopy(x), ops=[ast.Eq()], comparators=[copy.deepcopy(y)]))
        key = ast.dump(test)
        if key in seen:
            continue
        seen.add(key)
        msg = ast.Constant("numpy combines these two extents (a broadcast, or a store into a slice) only where "
                           "they are equal")
        top.append(ast.Assert(test=test, msg=msg))
    if top:
        at = slice_bounds.after_docstring(fdef)
        for t in top:
            ast.copy_location(t, fdef.body[at] if at < len(fdef.body) else fdef)
        fdef.body[at:at] = top
        ast.fix_missing_locations(fdef)


def _rewrite(fdef: ast.FunctionDef, params: list, sizes: set, resolve) -> "_Env":
    _flags(fdef, {p.name for p in params})
    _early_returns(fdef)
    _iterations(fdef, resolve)
    _last_values(fdef, sizes, resolve)
    _untiled(fdef, resolve)
    stores: dict = {}
    for n in ast.walk(fdef):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            stores[n.id] = stores.get(n.id, 0) + 1
    _clamped_indices(fdef, sizes, stores)
    _chosen_indices(fdef, sizes, stores)
    _drop_parameter_copies(fdef, params, resolve, stores)
    _rename_rebindings(fdef, stores, params)
    slice_bounds.check_bounds(fdef, sizes, stores, resolve)
    env = _Env(fdef, params, sizes, resolve, stores)
    fdef.body = _Sums(lambda name: name not in stores and resolve(name) is builtins.sum).block(fdef.body)
    env.visit(fdef)
    _check_mask_reads(fdef, env)
    fdef.body = _Operands(env).block(fdef.body)
    builders = Builders(env, fdef)
    fdef.body = builders.block(fdef.body)
    doc = int(bool(fdef.body) and isinstance(fdef.body[0], ast.Expr) and isinstance(fdef.body[0].value, ast.Constant))
    fdef.body[doc:doc] = builders.size_checks  # (conditions on sizes: first, as the front end reads them)
    reductions = Reductions(env)
    fdef.body = reductions.block(fdef.body)
    fdef.body = sections.Scalarize(env, fdef).block(fdef.body)
    fdef.body = reductions.block(fdef.body)  # (of what the slices' pass computed into buffers)
    _drop_size_rebinds(fdef, sizes)
    _loops_without_continue(fdef.body, [0])
    ast.fix_missing_locations(fdef)
    return env


def _flags(fdef: ast.FunctionDef, params: set) -> None:
    """A local every binding of which is `True` or `False`, or `not` of a flag (`keep = True`,
    then `keep = False` under a condition; `flip = not flip`) is a number, 1.0 or 0.0, and read as a condition
    (`if keep:`, `x if keep else y`, `not keep`, `keep and c`) it is `keep != 0.0`: the same
    choices. Other reads of it (arithmetic on a bool) are left to be refused."""
    bound: dict = {}  # name -> whether every binding is a bool constant, or `not` of a name
    negates: dict = {}  # name -> the names its `flag = not other` bindings read
    for n in ast.walk(fdef):
        targets = n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(
            n, (ast.AugAssign, ast.AnnAssign, ast.For)) else []
        for t in targets:
            for x in ast.walk(t):
                if isinstance(x, ast.Name):
                    plain = isinstance(n, ast.Assign) and len(n.targets) == 1 and t is x
                    const = plain and isinstance(n.value, ast.Constant) and type(n.value.value) is bool
                    toggle = plain and isinstance(n.value, ast.UnaryOp) and isinstance(n.value.op, ast.Not) and \
                        isinstance(n.value.operand, ast.Name)
                    if toggle:
                        negates.setdefault(x.id, set()).add(n.value.operand.id)
                    bound[x.id] = bound.get(x.id, True) and (const or toggle)
    flags = {k for k, ok in bound.items() if ok and k not in params}
    while True:  # (`flag = not other` makes a flag only where other is one)
        drop = {k for k in flags if not negates.get(k, set()) <= flags}
        if not drop:
            break
        flags -= drop
    if not flags:
        return

    def test(e):
        """`e` read as a condition: a flag's name compared with 0.0."""
        if isinstance(e, ast.Name) and e.id in flags:
            return ast.copy_location(ast.Compare(left=e, ops=[ast.NotEq()], comparators=[ast.Constant(0.0)]), e)
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.Not):
            e.operand = test(e.operand)
        elif isinstance(e, ast.BoolOp):
            e.values = [test(v) for v in e.values]
        return e

    for n in ast.walk(fdef):
        if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name) and n.targets[0].id in flags:
            if isinstance(n.value, ast.Constant):
                n.value = ast.copy_location(ast.Constant(1.0 if n.value.value else 0.0), n.value)
            else:  # `flag = not other`: 0.0 where other is set, else 1.0
                n.value = ast.copy_location(ast.IfExp(test=test(n.value.operand), body=ast.Constant(0.0),
                                                      orelse=ast.Constant(1.0)), n.value)
        elif isinstance(n, (ast.If, ast.While, ast.IfExp)):
            n.test = test(n.test)
    ast.fix_missing_locations(fdef)


def _loop_variables(fdef: ast.FunctionDef) -> set:
    """The names the function's loops bind."""
    return {t.id for n in ast.walk(fdef) if isinstance(n, ast.For) for t in ast.walk(n.target)
            if isinstance(t, ast.Name)}


def _clamped_indices(fdef: ast.FunctionDef, sizes: set, stores: dict) -> None:
    """An integer local bound once to a clamp of an index, `ii = min(max(i + d, 0), N - 1)`
    (integer arithmetic of loop variables, sizes and constants, through builtin min and
    max), read as an index after it is set in the same block, is that expression there:
    `x[ii]` is `x[min(max(i + d, 0), N - 1)]`, which the language reads (a clamped index; the
    local itself was refused as an index). A read before the binding in its block (a value
    of an earlier iteration) is left as it is."""
    loopvars = _loop_variables(fdef)

    def integral(e) -> bool:
        return slice_bounds.integer_expr(e, lambda name: name in loopvars or name in sizes,
                             clamps=not ({"min", "max"} & set(stores)))

    def clamp(st):
        """(name, value) where `st` binds an integer local once to a clamp, else None."""
        if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name) and \
                stores.get(st.targets[0].id) == 1 and st.targets[0].id not in loopvars and \
                isinstance(st.value, ast.Call) and integral(st.value):
            return st.targets[0].id, st.value
        return None

    class Reads(ast.NodeTransformer):
        def __init__(self, bound: dict):
            self.bound = bound

        def visit_Subscript(self, n):
            self.generic_visit(n)
            if isinstance(n.ctx, ast.Load):
                elts = list(n.slice.elts) if isinstance(n.slice, ast.Tuple) else [n.slice]
                if any(isinstance(e, ast.Name) and e.id in self.bound for e in elts):
                    new = [ast.copy_location(copy.deepcopy(self.bound[e.id]), e)
                           if isinstance(e, ast.Name) and e.id in self.bound else e for e in elts]
                    n.slice = ast.Tuple(elts=new, ctx=ast.Load()) if len(new) > 1 else new[0]
            return n

    def block(stmts: list, bound: dict) -> None:
        bound = dict(bound)
        for st in stmts:
            if isinstance(st, ast.For):  # (a loop rebinding a name a value reads: not inside it)
                rebound = {t.id for t in ast.walk(st) if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store)}
                inside = {k: v for k, v in bound.items()
                          if not rebound & {x.id for x in ast.walk(v) if isinstance(x, ast.Name)}}
            else:
                inside = bound
            if inside:
                Reads(inside).visit(st)
            got = clamp(st)
            if got is not None:
                bound[got[0]] = got[1]
            for field in ("body", "orelse"):
                inner = getattr(st, field, None)
                if isinstance(inner, list) and not isinstance(st, ast.FunctionDef):
                    block(inner, inside)

    if any(clamp(st) for st in ast.walk(fdef)):
        block(fdef.body, {})


def _chosen_indices(fdef: ast.FunctionDef, sizes: set, stores: dict) -> None:
    """An element read at an index chosen by a condition, `t[y, x if x == 0 else x - 1]`
    or through an integer local bound once to one (Rodinia's `w = x if x == 0 else x - 1`,
    then `t[y, w]`), is the choice between the two reads: `t[y, x] if x == 0 else
    t[y, x - 1]` (the read not taken is never made: the language masks it). The branches
    must be integer expressions of loop variables, sizes and integer constants."""
    loopvars = _loop_variables(fdef)

    def integral(e) -> bool:
        return slice_bounds.integer_expr(e, lambda name: name in loopvars or name in sizes)

    def choice(e):
        return isinstance(e, ast.IfExp) and integral(e.body) and integral(e.orelse)

    bound = {n.targets[0].id: n.value for n in ast.walk(fdef) if isinstance(n, ast.Assign) and
             len(n.targets) == 1 and isinstance(n.targets[0], ast.Name) and
             stores.get(n.targets[0].id) == 1 and choice(n.value) and
             all(not (isinstance(x, ast.Name) and x.id == n.targets[0].id) for x in ast.walk(n.value))}

    class Reads(ast.NodeTransformer):
        def visit_Subscript(self, n):
            self.generic_visit(n)
            if not isinstance(n.ctx, ast.Load):
                return n
            elts = list(n.slice.elts) if isinstance(n.slice, ast.Tuple) else [n.slice]
            for k, e in enumerate(elts):
                pick = e if choice(e) else bound.get(e.id) if isinstance(e, ast.Name) else None
                if pick is None:
                    continue
                reads = []
                for side in (pick.body, pick.orelse):
                    at = elts[:k] + [copy.deepcopy(side)] + elts[k + 1:]
                    sl = ast.Tuple(elts=[copy.deepcopy(x) for x in at], ctx=ast.Load()) if len(at) > 1 else at[0]
                    reads.append(self.visit_Subscript(ast.Subscript(value=copy.deepcopy(n.value), slice=sl,
                                                                    ctx=ast.Load())))
                out = ast.IfExp(test=copy.deepcopy(pick.test), body=reads[0], orelse=reads[1])
                for x in ast.walk(out):
                    ast.copy_location(x, n)
                return out
            return n

    if bound or any(choice(x) for x in ast.walk(fdef)):
        Reads().visit(fdef)


def _early_returns(fdef: ast.FunctionDef) -> None:
    """`if c: S; return X` at the top level, before a function that ends `return X` (the
    same expression: reference BLAS's `if alpha == 0.0: return y`), is `if c: S else:
    <the statements after the if>`, then `return X`: where c holds nothing after S runs, so
    X has the value it had at the early return. Other early returns are left (refused)."""
    body = fdef.body
    while body and isinstance(body[-1], ast.Return) and body[-1].value is not None:
        final = ast.dump(body[-1].value)
        at = max((k for k, st in enumerate(body[:-1]) if isinstance(st, ast.If) and st.body and
                   isinstance(st.body[-1], ast.Return) and st.body[-1].value is not None and
                   ast.dump(st.body[-1].value) == final and
                   not any(isinstance(x, ast.Return) for b in (st.body[:-1], st.orelse) for y in b
                           for x in ast.walk(y))), default=None)  # (the last first: the rest holds none)
        if at is None:
            return
        st, rest = body[at], body[at + 1:-1]
        if st.body[:-1]:
            st.body, st.orelse = st.body[:-1], st.orelse + rest
        elif st.orelse + rest:
            st.test = ast.copy_location(ast.UnaryOp(op=ast.Not(), operand=st.test), st.test)
            st.body, st.orelse = st.orelse + rest, []
        elif _comparisons(st.test):
            st = None  # (nothing depends on c: the if goes, its test with it)
        else:
            return  # (a test that could raise, `if x:` of an array: left to be refused)
        body = fdef.body = body[:at] + ([st] if st is not None else []) + [body[-1]]


def _comparisons(e) -> bool:
    """Whether a test is comparisons joined by and/or/not (evaluating it cannot raise, as
    the truth of an array would)."""
    if isinstance(e, ast.Compare):
        return True
    if isinstance(e, ast.BoolOp):
        return all(_comparisons(v) for v in e.values)
    return isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.Not) and _comparisons(e.operand)


def python_results(tree) -> None:
    """Each call of math's functions in `tree` (a copy of a nest run as written, in place)
    made to return a Python float, as math's does (`float(...)` of the language function's
    numpy float64: that one is not weak, and `x[i] - math.log(s)` computed in float64 where
    Python rounds the log to float32 first, NEP 50)."""
    class Wrap(ast.NodeTransformer):
        def visit_Call(self, n):
            self.generic_visit(n)
            if not getattr(n, "eqsat_of_math", None):
                return n
            return ast.copy_location(ast.Call(func=ast.Name(id="float", ctx=ast.Load()), args=[n], keywords=[]), n)

    Wrap().visit(tree)


def clamped(tree, ints=frozenset()) -> None:
    """The loops `_clamped_bounds` widened, back to their clamped bounds, in `tree` (a copy of
    a nest run as written; in place): `for j in range(a, c): if j >= b and j < d: body` runs
    as `for j in range(max(a, b), min(c, d)): body`, the iterations the guard keeps and no
    others. (A banded loop `range(max(0, j - k), j)` widened to `range(0, j)` ran its whole
    triangle: quadratic where the source is linear.) Then a loop whose body is a guard the
    user wrote on its variable runs only the iterations it keeps (`eqsat/guards.py`;
    `ints`: the sizes)."""
    for n in ast.walk(tree):
        if not (isinstance(n, ast.For) and len(n.body) == 1 and isinstance(n.target, ast.Name) and
                isinstance(n.iter, ast.Call) and len(n.iter.args) == 2 and not n.orelse):
            continue
        g = n.body[0]
        if not (isinstance(g, ast.If) and getattr(g, "eqsat_clamp", False) and not g.orelse):
            continue
        lo, hi = [n.iter.args[0]], [n.iter.args[1]]
        for c in g.test.values if isinstance(g.test, ast.BoolOp) else [g.test]:
            if not (isinstance(c, ast.Compare) and len(c.ops) == 1 and isinstance(c.left, ast.Name) and
                    c.left.id == n.target.id and isinstance(c.ops[0], (ast.GtE, ast.Lt))):
                break
            (lo if isinstance(c.ops[0], ast.GtE) else hi).append(c.comparators[0])
        else:
            def fold(fn, es):
                return es[0] if len(es) == 1 else ast.Call(func=ast.Name(id=fn, ctx=ast.Load()), args=es, keywords=[])
            n.iter.args = [fold("max", lo), fold("min", hi)]
            n.body = g.body
    guards.tighten(tree, ints)


def _rank(shape) -> int | None:
    return None if shape is None or shape is SCALAR else len(shape[0])


def _perm(call: ast.Call):
    """The permutation a transpose call gives (`transpose(a, p)`, `axes=p`), else None."""
    return call.args[1] if len(call.args) == 2 else next((k.value for k in call.keywords if k.arg == "axes"), None)


def _reverses_axes(call: ast.Call) -> bool:
    """`transpose(a)`, or `transpose(a, perm)` (`axes=perm`) with perm the axes reversed, as
    constants (`(1, 0)`): the view `a.T` is."""
    perm = _perm(call)
    if len(call.args) not in (1, 2) or len(call.args) + len(call.keywords) > 2 or \
            any(k.arg != "axes" for k in call.keywords):
        return False
    if perm is None:
        return True
    if not isinstance(perm, (ast.Tuple, ast.List)) or \
            not all(isinstance(x, ast.Constant) and type(x.value) is int for x in perm.elts):
        return False
    return [x.value for x in perm.elts] == list(range(len(perm.elts)))[::-1]


class _Env(ast.NodeTransformer):
    def __init__(self, fdef, params, sizes, resolve, stores):
        self.loopvars = {t.id for n in ast.walk(fdef) if isinstance(n, ast.For) for t in ast.walk(n.target)
                         if isinstance(t, ast.Name)}
        own = set(stores) | {p.name for p in params} | self.loopvars  # (names the function binds)
        self.resolve = lambda name: None if name in own else resolve(name)
        self.scalars = {p.name for p in params if p.shape is None}  # (`_record_scalar`)
        self.number_names: set = set()  # names every binding of which is a number (`_rebound_shapes`)
        self.int_locals: set = set()  # names bound once to an integer expression
        self.size_locals: dict = {}  # those of them bound to an expression of sizes: name -> it
        self.masks: set = set()  # names bound to a mask of tensors (`_bind_mask`)
        self.memory = aliases.Memory(fdef, lambda call: True)  # (every call's result a view: safe here)
        self.not_scalars: set = set()
        self.sizes = sizes
        self.stores = stores
        self.fdef = fdef  # (`hoisting.record_result` reads every binding of a name bound again)
        self.elements = sections.Elements(self)  # (fresh names for the slices' loops)
        # `t = a.T` (or np.transpose(a)), each name bound once: t's memory is a's
        self._tviews = {}
        for n in ast.walk(fdef):
            if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name) and \
                    stores.get(n.targets[0].id) == 1:
                v = n.value
                if isinstance(v, ast.Call) and self.callee(v.func) in (np.transpose, lang.transpose) and \
                        _reverses_axes(v):
                    v = ast.Attribute(value=v.args[0], attr="T", ctx=ast.Load())
                if isinstance(v, ast.Attribute) and v.attr == "T" and isinstance(v.value, ast.Name) and \
                        stores.get(v.value.id, 0) <= 1:
                    self._tviews[n.targets[0].id] = v.value
        # declared shapes (lists of expressions) and whether float32
        self.shapes: dict = {}
        declared = {}
        for p in params:
            if p.shape is not None:
                declared[p.name] = ([ast.Name(id=d, ctx=ast.Load()) if isinstance(d, str) else ast.Constant(d)
                                     for d in p.shape], p.dtype in lang.FLOATS)
                if not stores.get(p.name):
                    self.shapes[p.name] = declared[p.name]
        self._rebound_shapes(fdef, declared)

    def _rebound_shapes(self, fdef, declared: dict) -> None:
        """Names bound more than once (or parameters bound again) whose every binding has
        one shape: ping-pong buffers (`a, b = b, a`), a buffer allocated again in a loop.
        The largest such set: every name assumed to have its declaration's or allocation's
        shape, names with a binding of another (or unknown) shape dropped until none is."""
        values: dict = {}  # name -> the values bound to it (None: one that is not told)
        for n in ast.walk(fdef):
            if isinstance(n, ast.Assign):
                for t, v in aliases.bindings(n):  # (`a, b = b, a`: each name its value)
                    # (a name of a tuple unpacking a whole value, `a, b = x`, has no value here)
                    told = any(t is x for x in n.targets) or v is not n.value
                    for y in ast.walk(t):
                        if isinstance(y, ast.Name) and isinstance(y.ctx, ast.Store):
                            values.setdefault(y.id, []).append(v if y is t and told else None)
            elif isinstance(n, (ast.AnnAssign, ast.For, ast.With, ast.comprehension)) or \
                    (isinstance(n, ast.AugAssign) and not isinstance(n.target, ast.Name)):
                target = n.target if not isinstance(n, ast.With) else None
                for y in ast.walk(target) if target is not None else ():
                    if isinstance(y, ast.Name) and isinstance(y.ctx, ast.Store):
                        values.setdefault(y.id, []).append(None)
        seeds = {}
        # (names bound once too: a name bound again may read one, `w = A @ v; v = w / norm`)
        names = [n for n in sorted(set(values) | set(declared)) if n not in self.shapes and
                 self.stores.get(n, 0) >= 1 and (n in declared or len(values.get(n, [])) >= 1) and
                 all(v is not None for v in values.get(n, []))]  # (a parameter only updated, `A -= e`, has none)
        for name in names:  # (parameters first: the others' seeds may read them)
            if name in declared:
                seeds[name] = self.shapes[name] = declared[name]

        def numbers() -> set:
            """Names every binding of which is a number (`alpha = rs / np.dot(p, Ap)` in a
            loop), with the shapes assumed now: a tensor bound again to `alpha * p` keeps p's."""
            return {n for n, vs in values.items() if n not in self.shapes and vs and
                    all(v is not None and self.value_shape(v) is SCALAR for v in vs)}

        # (until none is added: a seed may read a name seeded after it in this order, `w =
        # np.exp(s1)` with s1 the renamed second binding of s, `s1 = s - 1.0`; a number's
        # binding may read a tensor seeded after it, `rs = np.dot(r, r)`)
        for _ in range(len(names) + len(values)):
            before = len(seeds), len(self.number_names)
            for name in names:
                if name in seeds:
                    continue
                vs = values.get(name, [])
                seed = next((a for a in map(self._allocated, vs) if a is not None), None) or \
                    next((g for g in map(self.value_shape, vs) if g is not None and g is not SCALAR and g[1]), None)
                if seed is not None:
                    seeds[name] = self.shapes[name] = seed
            self.number_names |= numbers()
            if (len(seeds), len(self.number_names)) == before:
                break
        # then every assumption checked against every binding, dropping those that fail
        # until none does (a number's bindings may have read a tensor dropped since)
        changed = True
        while changed:
            changed = False
            for name in list(seeds):
                if not all(_same_shape(self.value_shape(v) if self._allocated(v) is None else self._allocated(v),
                                       seeds[name]) for v in values.get(name, [])):
                    del seeds[name], self.shapes[name]
                    changed = True
            kept = self.number_names & numbers()
            if kept != self.number_names:
                self.number_names, changed = kept, True

    def _allocated(self, v):
        """(extents, float32) of `np.zeros(shape)`, `np.empty(shape, dtype=...)` and alike, else None."""
        if isinstance(v, ast.Call) and v.args and all(k.arg == "dtype" for k in v.keywords) and \
                (self.callee(v.func) in (np.zeros, np.empty, lang.zeros, lang.empty) or
                 (isinstance(v.func, ast.Name) and library_name(v.func.id) in ("zeros", "empty"))):
            arg = v.args[0]
            return ([copy.deepcopy(x) for x in (arg.elts if isinstance(arg, (ast.Tuple, ast.List)) else [arg])], True)
        return None

    # ------------------------------------------------------------------ names
    def callee(self, f):
        """The object a callee expression names (`np.sqrt`, `sqrt`), else None (also for an
        object that is no function of numpy's, math's or eqsat's and cannot be hashed: a list,
        another `@program`; the front end refuses the call with its location)."""
        if isinstance(f, ast.Name):
            obj = self.resolve(f.id)
            try:
                hash(obj)
            except TypeError:
                return None
            return obj
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
            mod = self.resolve(f.value.id)
            if isinstance(mod, type(np)):  # (numpy's, math's, eqsat's: `eqsat.relu`)
                obj = getattr(mod, f.attr, None)
                try:
                    hash(obj)
                except TypeError:
                    return None
                return obj
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Attribute) and f.value.attr == "linalg" and \
                self.callee(f.value) is np.linalg:  # (`np.linalg.norm`)
            return getattr(np.linalg, f.attr, None)
        return None

    def is_transpose(self, f) -> bool:
        """Whether callee `f` is the language's `transpose` (as imported, or renamed)."""
        return isinstance(f, ast.Name) and (library_name(f.id) == "transpose" or self.callee(f) is lang.transpose)

    def transposed_views(self) -> dict:
        return self._tviews

    def shape(self, e):
        """(declared extents, float32) of a named tensor, a row of it (`x[i]`) or a section
        of it (`x[1:, k]`, `eqsat/sections.py`)."""
        if isinstance(e, ast.Name) and e.id in self.shapes:
            return self.shapes[e.id]
        if isinstance(e, ast.Subscript):
            sec = sections.parse(e, self)
            if sec is not None:
                return sec.dims, sec.f32
        if isinstance(e, ast.Subscript) and not has_slice(e.slice):
            got = self.shape(e.value)
            k = len(index_elts(e.slice))
            if got is not None and k < len(got[0]):
                return got[0][k:], got[1]
        return None

    def filled_args(self, e: ast.Call):
        """The arguments before the dtype of `np.ones(shape)`, `np.zeros`, `np.empty`,
        `np.full(shape, v)` or their `_like` forms, and whether a dtype is given; the dtype by
        keyword or by position, float32 or none (one reading for the desugaring's shapes and
        `eqsat/builders.py`'s operands); None where another dtype or keyword is given."""
        k = 2 if self.callee(e.func) in (np.full, np.full_like) else 1
        kws = {x.arg: x.value for x in e.keywords}
        args = list(e.args)
        dtype = args.pop() if len(args) == k + 1 and "dtype" not in kws else kws.pop("dtype", None)
        if len(args) != k or kws or (dtype is not None and self.callee(dtype) is not np.float32):
            return None
        return args, dtype is not None

    def _filled_shape(self, e: ast.Call):
        """(extents, float32) of `np.ones(shape)`, `np.zeros`, `np.empty`, `np.full(shape, v)`
        with float32 or no dtype (`filled_args`), each extent an integer of sizes
        (`eqsat/builders.py` computes them as operands); else None."""
        got = self.filled_args(e)
        if got is None:
            return None
        shape = got[0][0]
        elts = shape.elts if isinstance(shape, (ast.Tuple, ast.List)) else [shape]
        if not elts or not all(self.is_int(x) for x in elts):
            return None
        return ([copy.deepcopy(x) for x in elts], True)

    def value_shape(self, e):
        """`SCALAR`, (extents, float32) or None (unknown) of an expression: a tensor of
        declared shape or a row of it, numbers, and elementwise arithmetic and functions of
        those where the shapes are the same (no broadcast is inferred)."""
        got = self.shape(e)
        if got is not None:
            return got
        if isinstance(e, ast.Constant):
            return SCALAR if type(e.value) in (int, float) else None
        if isinstance(e, ast.Name):
            known = e.id in self.scalars or e.id in self.loopvars or e.id in self.sizes or e.id in self.number_names
            v = self.resolve(e.id)
            return SCALAR if known or type(v) in (int, float) or isinstance(v, np.floating) else None
        if isinstance(e, ast.Subscript) and not has_slice(e.slice) and \
                not sections.is_mask(e.slice, self.masks):  # an element (not what a mask selects)
            got = self.shape(e.value)
            return SCALAR if got is not None and len(index_elts(e.slice)) == len(got[0]) else None
        if isinstance(e, ast.Call) and self.callee(e.func) is builtins.abs and len(e.args) == 1 and not e.keywords:
            return self.value_shape(e.args[0])  # (of a tensor too: numpy's abs, elementwise)
        if isinstance(e, ast.Call) and self.callee(e.func) in (builtins.max, builtins.min, builtins.abs) and \
                e.args and not e.keywords:
            return SCALAR if all(self.value_shape(a) is SCALAR for a in e.args) else None
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, (ast.USub, ast.UAdd)):
            return self.value_shape(e.operand)
        if isinstance(e, ast.BinOp) and isinstance(e.op, (ast.Add, ast.Sub, ast.Mult, ast.Div)):
            return _same(self.value_shape(e.left), self.value_shape(e.right))
        if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Pow) and self.value_shape(e.right) is SCALAR:
            return self.value_shape(e.left)
        if isinstance(e, ast.BinOp) and isinstance(e.op, ast.MatMult):  # (numpy's, as frontend.matmul reads it)
            a, b = self.value_shape(e.left), self.value_shape(e.right)
            if a is None or b is None or a is SCALAR or b is SCALAR or not a[0] or not b[0]:
                return None
            if len(a[0]) == 1 or len(b[0]) == 1:  # a vector's axis is contracted and not kept
                dims = a[0][:-1] + (b[0][:-2] + b[0][-1:] if len(b[0]) > 1 else [])
                return (dims, a[1] and b[1]) if dims else SCALAR  # (`u @ v`: a number)
            ba, bb = a[0][:-2], b[0][:-2]  # batch axes: on one operand, or the same on both
            if ba and bb and (len(ba) != len(bb) or not sections.same_dims(ba, bb)):
                return None
            return ((ba or bb) + a[0][-2:-1] + b[0][-1:], a[1] and b[1])
        if isinstance(e, ast.Attribute) and e.attr == "T":
            a = self.value_shape(e.value)
            return None if a is None or a is SCALAR else (list(reversed(a[0])), a[1])
        if sections.is_where(e):
            return self._where_shape(e)
        if isinstance(e, ast.IfExp):  # (`a if c else b` of numbers: a number)
            return SCALAR if self.value_shape(e.body) is SCALAR and self.value_shape(e.orelse) is SCALAR else None
        if isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and e.func.attr == "reshape" and \
                e.args and not e.keywords:
            # `x.reshape(A, 2, B)` of a tensor: the sizes written (names and numbers, no -1)
            a = self.value_shape(e.func.value)
            dims = e.args[0].elts if len(e.args) == 1 and isinstance(e.args[0], ast.Tuple) else e.args
            if a is None or a is SCALAR or not all(isinstance(d, ast.Name) and d.id in self.sizes or
                                                   isinstance(d, ast.Constant) and type(d.value) is int and d.value >= 0
                                                   for d in dims):
                return None
            return ([copy.deepcopy(d) for d in dims], a[1])
        if isinstance(e, ast.Call) and isinstance(e.func, ast.Name) and library_name(e.func.id) == "reshape" and \
                len(e.args) == 2 and isinstance(e.args[1], ast.Tuple):  # (`reshape(x, (A * B, C))`, builders')
            a = self.value_shape(e.args[0])
            return None if a is None or a is SCALAR else ([copy.deepcopy(d) for d in e.args[1].elts], a[1])
        if isinstance(e, ast.Call) and self.is_transpose(e.func) and len(e.args) == 2 and not e.keywords and \
                isinstance(e.args[1], ast.Tuple):
            a, perm = self.value_shape(e.args[0]), [_number(x) for x in e.args[1].elts]  # (`transpose(x, (0, 2, 1))`)
            if a is None or a is SCALAR or any(type(k) is not int for k in perm) or \
                    sorted(perm) != list(range(len(a[0]))):
                return None
            return ([a[0][k] for k in perm], a[1])
        if isinstance(e, ast.Call):
            got = self._reduced_shape(e)
            if got is not None:
                return got
            tri = sections.triangle_of(e, self)
            if tri is not None:
                got = self.value_shape(tri[1])
                if got is None or got is SCALAR or len(got[0]) not in ((1, 2) if tri[0] == "diag" else (2,)):
                    return None
                if tri[0] == "diag" and len(got[0]) == 2:  # (of a matrix: its diagonal, of a square one)
                    return (got[0][:1], got[1]) if sections.same_dims(got[0][:1], got[0][1:]) and tri[2] == 0 \
                        else None
                return (got[0] * 2, got[1]) if tri[0] == "diag" else got
            if sections.flips(e, self):  # (eqsat/sections.py)
                got = self.value_shape(e.args[0])
                return got if got is not SCALAR and got is not None and \
                    sections.flip_axes(e, len(got[0])) is not None else None
            if self.callee(e.func) is np.dot and len(e.args) == 2 and not e.keywords:  # (of vectors and
                a, b = self.value_shape(e.args[0]), self.value_shape(e.args[1])  # matrices: `@`)
                if a is SCALAR or b is SCALAR:
                    return _same(a, b) if a is b else (b if a is SCALAR else a)
                if a is not None and b is not None and len(a[0]) <= 2 and len(b[0]) <= 2:
                    return self.value_shape(ast.BinOp(left=e.args[0], op=ast.MatMult(), right=e.args[1]))
                return None
            if self.callee(e.func) is np.einsum:
                return self._einsum_shape(e)
            if self.callee(e.func) is np.roll and e.args:  # (`np.roll(x, k)`, `np.roll(x, k, axis=a)`)
                got = self.value_shape(e.args[0])
                return got if got is not SCALAR else None
            if isinstance(e.func, ast.Attribute) and e.func.attr == "copy" and not e.args and not e.keywords and \
                    self.callee(e.func) is None:
                got = self.value_shape(e.func.value)  # (`x.copy()`)
                return got if got is not SCALAR else None
        if isinstance(e, ast.Call) and self.callee(e.func) in _FILLED:
            return self._filled_shape(e)
        if isinstance(e, ast.Call) and not e.keywords:
            canon = library_name(e.func.id) if isinstance(e.func, ast.Name) else _alias(self.callee(e.func))
            if canon is None:  # (`relu(x)`, `eqsat.relu(x)`: the language's own)
                obj = self.callee(e.func)
                canon = next((k for k, f in {**lang.UNARY, **lang.BINARY}.items() if f is obj), None)
            if canon in lang.UNARY and len(e.args) == 1:
                return self.value_shape(e.args[0])
            if canon in lang.BINARY and len(e.args) == 2:
                return _same(self.value_shape(e.args[0]), self.value_shape(e.args[1]))
            if (self.callee(e.func) in _LIKE or self.callee(e.func) is np.copy) and len(e.args) == 1:
                got = self.value_shape(e.args[0])  # (`np.zeros_like(x)`, `np.copy(x)`: x's shape)
                return got if got is not SCALAR else None
            if sections.outer_of(e, self) is not None:  # (of vectors: eqsat/sections.py)
                a, b = self.value_shape(e.args[0]), self.value_shape(e.args[1])
                if a is None or b is None or a is SCALAR or b is SCALAR or len(a[0]) != 1 or len(b[0]) != 1:
                    return None
                return (a[0] + b[0], a[1] and b[1])
            if REDUCTIONS.get(self.callee(e.func)) and len(e.args) == 1:
                return SCALAR if self.value_shape(e.args[0]) is not None else None
        return None

    def _einsum_shape(self, e):
        """The shape `np.einsum(spec, *operands)` gives, for a constant spec of letters
        (`'ik,kj->ij'`; without `->`, the letters that appear once, in order), each output
        axis as long as the operand axis its letter names first; None otherwise."""
        if e.keywords or len(e.args) < 2 or not isinstance(e.args[0], ast.Constant) or \
                not isinstance(e.args[0].value, str):
            return None
        spec = e.args[0].value.replace(" ", "")
        ins, _, out = spec.partition("->")
        subs = ins.split(",")
        if len(subs) != len(e.args) - 1 or not all(x.isalpha() for x in subs + ([out] if out else [])):
            return None
        if "->" not in spec:
            letters = "".join(subs)
            out = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
        shapes = [self.value_shape(a) for a in e.args[1:]]
        if any(x is None or x is SCALAR or len(x[0]) != len(sub) for x, sub in zip(shapes, subs)):
            return None
        axis = {}
        for sub, (dims, _) in zip(subs, shapes):
            for c, d in zip(sub, dims):
                axis.setdefault(c, d)
        if not set(out) <= set(axis):
            return None
        return ([copy.deepcopy(axis[c]) for c in out], all(x[1] for x in shapes)) if out else SCALAR

    def condition_shape(self, t):
        """The shape of a condition over tensors (comparisons, `&`, `|`, `~`, and, or, not,
        a mask's name): numpy's broadcast of its operands; `SCALAR` for one of numbers."""
        if isinstance(t, ast.Compare):
            out = self.value_shape(t.left)
            for c in t.comparators:
                out = _same(out, self.value_shape(c))
            return out
        if isinstance(t, ast.BoolOp):
            out = SCALAR
            for v in t.values:
                out = _same(out, self.condition_shape(v))
            return out
        if isinstance(t, ast.BinOp) and isinstance(t.op, (ast.BitAnd, ast.BitOr)):
            return _same(self.condition_shape(t.left), self.condition_shape(t.right))
        if isinstance(t, ast.UnaryOp) and isinstance(t.op, (ast.Invert, ast.Not)):
            return self.condition_shape(t.operand)
        return self.value_shape(t)

    def _where_shape(self, e):
        """The shape of `np.where(c, a, b)`: numpy's broadcast of the three; None where a
        tensor's would be an integer array (`np.where(c, 1, 0)`: neither value a float)."""
        parts = [self.condition_shape(e.test), self.value_shape(e.body), self.value_shape(e.orelse)]
        out = SCALAR
        for p in parts:
            out = _same(out, p)
        if out is None or out is SCALAR:
            return out
        floats = [p is not SCALAR and p[1] for p in parts[1:]] + \
            [isinstance(v, ast.Constant) and type(v.value) is float for v in (e.body, e.orelse)] + \
            [isinstance(v, ast.Name) and v.id in self.scalars for v in (e.body, e.orelse)]
        if any(floats):
            return out
        e.eqsat_why = ("np.where of tensors whose values are both integers makes an integer array, which the "
                       "language does not have: write the values as floats (1.0, 0.0)")
        return None

    def _variance(self, n):
        """`np.var(x, axis=a)` (`np.std`, the methods) as numpy defines it: the mean of the
        squared distance to the mean, `((x - x.mean(axis=a, keepdims=True)) ** 2).mean(axis=a)`
        (std its square root; with `ddof=d` times n / (n - d)), for `reductions.Reductions`. Else None."""
        obj, f = self.callee(n.func), n.func
        if obj in (np.var, np.std) and len(n.args) in (1, 2):
            x, rest, kind = n.args[0], n.args[1:], "var" if obj is np.var else "std"
        elif isinstance(f, ast.Attribute) and f.attr in ("var", "std") and obj is None and len(n.args) <= 1:
            x, rest, kind = f.value, n.args, f.attr
        else:
            return None
        kws = {k.arg: k.value for k in n.keywords}
        ddof = kws.pop("ddof") if "ddof" in kws else ast.Constant(0)
        if not self.is_int(ddof) or (_number(ddof) is not None and _number(ddof) < 0):
            return None
        if set(kws) - {"axis", "keepdims"} or (rest and "axis" in kws):
            return None
        axis = rest[0] if rest else kws.get("axis")
        got = self.value_shape(x)
        if got is None or got is SCALAR or not got[1]:
            return None
        axes = reduced_axes(axis, len(got[0]))
        if axes is False:
            return None

        def mean(e, keep):
            kw = ([ast.keyword(arg="axis", value=copy.deepcopy(axis))] if axis is not None else []) + \
                ([ast.keyword(arg="keepdims", value=copy.deepcopy(keep))] if keep is not None else [])
            return ast.Call(func=ast.Attribute(value=e, attr="mean", ctx=ast.Load()), args=[], keywords=kw)

        dist = ast.BinOp(left=copy.deepcopy(x), op=ast.Sub(), right=mean(copy.deepcopy(x), ast.Constant(True)))
        out = mean(ast.BinOp(left=dist, op=ast.Mult(), right=copy.deepcopy(dist)), kws.get("keepdims"))
        if _number(ddof) != 0:
            # numpy divides the sum by max(n - ddof, 0), n the elements reduced: the mean times
            # n / (n - ddof), and where that is not positive, times inf (a sum over 0: inf, or
            # NaN of a zero sum)
            n_ = None
            for k in sorted(axes) if axes is not None else range(len(got[0])):
                d = copy.deepcopy(got[0][k])
                n_ = d if n_ is None else ast.BinOp(left=n_, op=ast.Mult(), right=d)
            left = ast.BinOp(left=copy.deepcopy(n_), op=ast.Sub(), right=copy.deepcopy(ddof))
            scale = ast.IfExp(test=ast.Compare(left=left, ops=[ast.Gt()], comparators=[ast.Constant(0)]),
                              body=ast.BinOp(left=n_, op=ast.Div(), right=copy.deepcopy(left)),
                              orelse=ast.Constant(math.inf))
            out = ast.BinOp(left=out, op=ast.Mult(), right=scale)
        if kind == "std":
            out = ast.Call(func=ast.Name(id=LIB + "sqrt", ctx=ast.Load()), args=[out], keywords=[])
        return ast.copy_location(out, n)

    def _reduced_shape(self, e):
        """The shape of `np.sum(x, axis=k)`, `x.max(axis=k)`, `np.linalg.norm(x)`, ...
        (`reductions.Reductions` computes them): x's without axis k, a scalar without an axis;
        else None."""
        kws = {k.arg: k.value for k in e.keywords}
        f = e.func
        if (self.callee(f) in REDUCTIONS or self.callee(f) is np.linalg.norm) and 1 <= len(e.args) <= 2:
            x, axis = e.args[0], e.args[1] if len(e.args) == 2 else kws.pop("axis", None)
        elif isinstance(f, ast.Attribute) and f.attr in METHODS and len(e.args) <= 1 and self.callee(f) is None:
            x, axis = f.value, e.args[0] if e.args else kws.pop("axis", None)
        else:
            return None
        keep = keepdims_of(kws)
        got = self.value_shape(x)
        if kws or keep is None or got is None or got is SCALAR:
            return None
        axes = reduced_axes(axis, len(got[0]))
        if axes is False or (not got[1] and (keep or axes is not None)):
            return None
        if axes is None:
            return ([ast.Constant(1) for _ in got[0]], True) if keep else SCALAR
        if keep:
            return ([ast.Constant(1) if d in axes else x for d, x in enumerate(got[0])], True)
        rest = [x for d, x in enumerate(got[0]) if d not in axes]
        return (rest, True) if rest else SCALAR

    def is_int(self, e) -> bool:
        if isinstance(e, ast.Constant):
            return type(e.value) is int
        if isinstance(e, ast.Name):
            if e.id in self.loopvars or e.id in self.sizes or e.id in self.int_locals:
                return True
            v = self.resolve(e.id)
            return type(v) is int
        if isinstance(e, ast.BinOp):
            return isinstance(e.op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod)) and \
                self.is_int(e.left) and self.is_int(e.right)
        if isinstance(e, ast.UnaryOp):
            return isinstance(e.op, (ast.USub, ast.UAdd)) and self.is_int(e.operand)
        return False

    # ------------------------------------------------------------------ statements
    def visit_Assign(self, n):
        self.generic_visit(n)
        split = self._split(n)
        if split is not None:  # `m, n = A.shape`: one assignment each (then as below)
            return [self.visit_Assign_one(s) for s in split]
        return self.visit_Assign_one(n)

    def _split(self, n):
        """`a, b = x, y` over names where no value reads a target before it: the assignments
        one by one, in order (the same; the front end's `unpack` takes the other cases)."""
        if not (len(n.targets) == 1 and isinstance(n.targets[0], (ast.Tuple, ast.List)) and
                isinstance(n.value, (ast.Tuple, ast.List)) and len(n.targets[0].elts) == len(n.value.elts)):
            return None
        ts = n.targets[0].elts
        if not all(isinstance(t, ast.Name) for t in ts) or any(isinstance(v, ast.Starred) for v in n.value.elts):
            return None
        names = [t.id for t in ts]
        if len(set(names)) != len(ts) or any(isinstance(x, ast.Name) and x.id in names[:j]
                                             for j, v in enumerate(n.value.elts) for x in ast.walk(v)):
            return None  # (a value reading a target bound before it, one by one)
        return [ast.copy_location(ast.Assign(targets=[ast.Name(id=t.id, ctx=ast.Store())], value=v), n)
                for t, v in zip(ts, n.value.elts)]

    def _bind_mask(self, n):
        """`m = (r1 <= x) & (x < r2)` (a mask of tensors bound to a name, once): `m` holds
        1.0 where it holds and 0.0 elsewhere (np.where, element by element), and is a mask
        where read as a condition (`sections.is_mask`); numpy's bool arithmetic differs from
        a float's (True + True is True), so elsewhere it is read only under `*` or summed."""
        t = n.targets[0] if len(n.targets) == 1 else None
        if not (isinstance(t, ast.Name) and self.stores.get(t.id) == 1 and sections.is_mask(n.value, self.masks)):
            return
        got = self.condition_shape(n.value)
        if got is None or got is SCALAR:
            return
        out = ast.copy_location(ast.IfExp(test=n.value, body=ast.Constant(1.0), orelse=ast.Constant(0.0)), n.value)
        out.eqsat_where, out.eqsat_source = True, ast.unparse(n.value)
        n.value = out
        self.masks.add(t.id)

    def _bind_selection(self, n) -> bool:
        """`v = y[m]` (m a mask of y's shape: numpy copies the elements it selects into a
        vector of no known length) where every read of v is a reduction of it (`v.mean()`,
        `np.sum(v)`, later in the same block): those read `y[m]` instead (`reductions.Reductions` takes
        each element where m holds), so nothing has a length of its own. Only where nothing
        writes or binds y's or m's memory between the binding and the last read (the copy
        and the reads see the same elements).
        True where the binding is then dropped."""
        t = n.targets[0] if len(n.targets) == 1 else None
        v = n.value
        if not (isinstance(t, ast.Name) and self.stores.get(t.id) == 1 and isinstance(v, ast.Subscript) and
                isinstance(v.value, ast.Name) and sections.is_mask(v.slice, self.masks)):
            return False
        block = next((b for b in (getattr(self.memory.parent.get(n), f, None) for f in ("body", "orelse"))
                      if isinstance(b, list) and any(x is n for x in b)), None)
        if block is None:
            return False
        rest = block[[i for i, x in enumerate(block) if x is n][0] + 1:]
        reads = [x for st in rest for x in ast.walk(st) if isinstance(x, ast.Name) and x.id == t.id]
        everywhere = sum(1 for x in ast.walk(self.memory.parent.get(n)) if isinstance(x, ast.Name) and x.id == t.id)
        if not reads or len(reads) + 1 != everywhere or not all(self._reduced(x) for x in reads):
            return False
        # nothing between the binding and the last read writes the memory y[m] reads
        last = max(i for i, st in enumerate(rest) for x in ast.walk(st) if any(x is r for r in reads))
        mem = set().union(*(self.memory.shared(x.id) for x in ast.walk(v) if isinstance(x, ast.Name)))
        if any(self.memory.writes(x) & mem or (isinstance(x, ast.Name) and isinstance(x.ctx, ast.Store) and
                                               x.id in mem) for st in rest[:last + 1] for x in ast.walk(st)):
            return False
        for x in reads:
            up = self.memory.parent[x]
            if isinstance(up, ast.Attribute):
                up.value = copy.deepcopy(v)
            else:
                up.args[0] = copy.deepcopy(v)
        return True

    def _reduced(self, x) -> bool:
        """Whether load `x` is the operand of a reduction over all its elements (`np.sum(x)`,
        `x.mean()`)."""
        up = self.memory.parent.get(x)
        if isinstance(up, ast.Attribute) and up.value is x and up.attr in METHODS:
            call = self.memory.parent.get(up)
            return isinstance(call, ast.Call) and call.func is up and not call.args and not call.keywords
        return isinstance(up, ast.Call) and len(up.args) == 1 and up.args[0] is x and not up.keywords and \
            self.callee(up.func) in REDUCTIONS

    def visit_Assign_one(self, n):
        if self._bind_selection(n):
            return None
        self._bind_mask(n)
        fill = None
        if len(n.targets) == 1 and isinstance(n.targets[0], ast.Name) and self.stores.get(n.targets[0].id) == 1 \
                and self.is_int(n.value):
            self.int_locals.add(n.targets[0].id)  # (`n = len(x)`: an integer, as `float(n)` needs)
            if all(isinstance(x, ast.Name) and x.id in self.sizes for x in ast.walk(n.value)
                   if isinstance(x, ast.Name)):
                self.size_locals[n.targets[0].id] = n.value  # (`k = N - 3`: the same number everywhere)
        v = n.value
        if isinstance(v, ast.Call) and self.callee(v.func) in (np.zeros, np.empty, np.ones, np.full) and v.args:
            if isinstance(v.args[0], ast.List):  # `np.zeros([M, N])`
                v.args[0] = ast.copy_location(ast.Tuple(elts=v.args[0].elts, ctx=ast.Load()), v.args[0])
            k = 2 if self.callee(v.func) is np.full else 1
            if len(v.args) == k + 1 and not any(kw.arg == "dtype" for kw in v.keywords):  # `np.zeros(s, np.float32)`
                v.keywords = v.keywords + [ast.keyword(arg="dtype", value=v.args[k])]
                v.args = v.args[:k]
        if len(n.targets) == 1 and isinstance(n.targets[0], ast.Name) and isinstance(v, ast.Call) and \
                self.callee(v.func) in (np.eye, np.identity) and len(v.args) == 1 and \
                all(k.arg == "dtype" for k in v.keywords) and self.is_int(v.args[0]):
            return self._identity(n, v)
        if len(n.targets) == 1 and isinstance(n.targets[0], ast.Name) and isinstance(v, ast.Call) and \
                self.callee(v.func) in (np.ones, np.full) and \
                len(v.args) == (1 if self.callee(v.func) is np.ones else 2):
            # `y = np.ones(shape)`: `y = zeros(shape)`, then the value stored everywhere (not
            # where numpy makes integers: `np.full(s, 2)` without a dtype is an int array)
            fill = ast.Constant(1.0) if len(v.args) == 1 else v.args[1]
            if not any(k.arg == "dtype" for k in v.keywords) and \
                    (self.is_int(fill) or (isinstance(fill, ast.Constant) and type(fill.value) is bool)):
                return self._record_buffer(n)
            n.value = ast.copy_location(ast.Call(func=ast.Name(id=LIB + "zeros", ctx=ast.Load()), args=[v.args[0]],
                                                 keywords=v.keywords), v)
        out = self._record_buffer(n)
        self._record_scalar(n)
        if fill is None:
            return out
        name = n.targets[0].id
        arg = n.value.args[0]
        dims = arg.elts if isinstance(arg, ast.Tuple) else [arg]
        stmts = [n]
        if _number(fill) is None:
            tmp = f"eqsat_fill_{name}_{n.lineno}_{n.col_offset}"
            stmts.append(ast.Assign(targets=[ast.Name(id=tmp, ctx=ast.Store())], value=fill))
            fill = ast.Name(id=tmp, ctx=ast.Load())
        idx = [ast.Name(id=f"eqsat_fill_{name}_{n.lineno}_{d}", ctx=ast.Load()) for d in range(len(dims))]
        body = [ast.Assign(targets=[sections.subscript(name, idx, ast.Store())], value=fill)]
        for d in reversed(range(len(dims))):
            body = [ast.For(target=ast.Name(id=idx[d].id, ctx=ast.Store()),
                            iter=ast.Call(func=ast.Name(id="range", ctx=ast.Load()), args=[copy.deepcopy(dims[d])],
                                          keywords=[]), body=body, orelse=[])]
        stmts += body
        for st in stmts[1:]:
            for sub in ast.walk(st):
                ast.copy_location(sub, n)
        return stmts

    def _identity(self, n, v):
        """`y = np.eye(n)` (or np.identity): `y = zeros((n, n))` and a loop storing 1.0 on the
        diagonal (float32: numpy's is float64 without a dtype; the language's buffers are f32)."""
        name, size = n.targets[0].id, v.args[0]
        n.value = ast.copy_location(ast.Call(func=ast.Name(id=LIB + "zeros", ctx=ast.Load()), args=[
            ast.Tuple(elts=[copy.deepcopy(size), copy.deepcopy(size)], ctx=ast.Load())], keywords=[]), v)
        self._record_buffer(n)
        i = f"eqsat_eye_{name}_{n.lineno}"
        loop = ast.For(target=ast.Name(id=i, ctx=ast.Store()), iter=ast.Call(
            func=ast.Name(id="range", ctx=ast.Load()), args=[copy.deepcopy(size)], keywords=[]), body=[ast.Assign(
                targets=[ast.Subscript(value=ast.Name(id=name, ctx=ast.Load()), slice=ast.Tuple(
                    elts=[ast.Name(id=i, ctx=ast.Load()), ast.Name(id=i, ctx=ast.Load())], ctx=ast.Load()),
                    ctx=ast.Store())], value=ast.Constant(1.0))], orelse=[])
        for sub in ast.walk(loop):
            ast.copy_location(sub, n)
        return [n, loop]

    def _record_scalar(self, n):
        """A local every assignment so far binds to a number is a scalar (`value_shape`)."""
        targets = n.targets if isinstance(n, ast.Assign) else [n.target]
        for t in targets:
            if isinstance(t, ast.Name):
                if self.value_shape(n.value) is SCALAR and t.id not in self.not_scalars:
                    self.scalars.add(t.id)
                else:
                    self.scalars.discard(t.id)
                    self.not_scalars.add(t.id)

    def _record_buffer(self, n):
        # a buffer allocated once: its shape is known from here on
        if len(n.targets) == 1 and isinstance(n.targets[0], ast.Name) and self.stores.get(n.targets[0].id) == 1:
            v = n.value
            if getattr(v, "eqsat_shape", None) is not None:
                self.shapes[n.targets[0].id] = v.eqsat_shape
            got = self.value_shape(v)
            if got is not None and got is not SCALAR and n.targets[0].id not in self.shapes:
                self.shapes[n.targets[0].id] = got  # (a new tensor: `y = np.exp(x - m)`)
            if isinstance(v, ast.Call) and len(v.args) == 1 and all(k.arg == "dtype" for k in v.keywords):
                f = v.func
                canon = library_name(f.id) if isinstance(f, ast.Name) else None
                if canon is None:
                    obj = self.callee(f)
                    canon = "zeros" if obj in (np.zeros, lang.zeros) else "empty" if obj in (np.empty, lang.empty) \
                        else None
                if canon in ("zeros", "empty"):
                    arg = v.args[0]
                    elts = arg.elts if isinstance(arg, ast.Tuple) else [arg]
                    # (a size local read as its sizes: `c = w.shape[1]; np.empty((N, c))` is (N, CO))
                    self.shapes[n.targets[0].id] = ([_Renamed({}, self.size_locals).visit(copy.deepcopy(x))
                                                     for x in elts], True)
        return n

    def visit_AugAssign(self, n):
        self.generic_visit(n)
        self._record_scalar(n)
        if isinstance(n.op, (ast.FloorDiv, ast.Mod, ast.Pow)):
            load = copy.deepcopy(n.target)
            for x in ast.walk(load):
                if hasattr(x, "ctx"):
                    x.ctx = ast.Load()
            load.ctx = ast.Load()
            new = ast.Assign(targets=[n.target], value=ast.BinOp(left=load, op=n.op, right=n.value))
            return ast.copy_location(new, n)
        return n

    def visit_For(self, n):
        self.generic_visit(n)
        self._clamped_bounds(n)
        self._normalized(n)
        it = n.iter
        if isinstance(it, ast.Call) and self.callee(it.func) is builtins.reversed and len(it.args) == 1 and \
                not it.keywords:
            inner = it.args[0]
            step = _number(inner.args[2]) if isinstance(inner, ast.Call) and len(inner.args) == 3 else 1
            if isinstance(inner, ast.Call) and self.callee(inner.func) is builtins.range and \
                    1 <= len(inner.args) <= 3 and not inner.keywords and type(step) is int and step >= 1:
                lo, hi = (ast.Constant(0), inner.args[0]) if len(inner.args) == 1 else inner.args[:2]
                one = ast.Constant(1)
                last = ast.BinOp(left=hi, op=ast.Sub(), right=one)
                if step > 1:  # the last value taken: lo + (hi - lo - 1) // step * step (below lo if none)
                    last = ast.BinOp(left=copy.deepcopy(lo), op=ast.Add(), right=ast.BinOp(left=ast.BinOp(
                        left=ast.BinOp(left=last, op=ast.Sub(), right=copy.deepcopy(lo)), op=ast.FloorDiv(),
                        right=ast.Constant(step)), op=ast.Mult(), right=ast.Constant(step)))
                n.iter = ast.copy_location(ast.Call(
                    func=inner.func,
                    args=[last, ast.BinOp(left=lo, op=ast.Sub(), right=one),
                          ast.UnaryOp(op=ast.USub(), operand=ast.Constant(step))], keywords=[]), it)
        return n

    def _normalized(self, n):
        """`for v in range(e, e + c)` with a constant width c (a tile: `range(ii, ii + 4)`),
        and the loop `for ii in range(lo, hi, c)` whose tiles those are (strip-mined: a step c
        and a loop over `range(ii, ii + c)` inside), counted from 0 by 1: `v` runs over
        range(trip count) and the body reads `e + v` (`lo + c * ii`) for it, the same values
        in the same order. A matmul tiled the C way is then the matmul its tiles make. (A
        strided loop alone is left as written: compiled, it runs faster so.)"""
        it = n.iter
        if not (isinstance(it, ast.Call) and self.callee(it.func) is builtins.range and not it.keywords and
                isinstance(n.target, ast.Name) and len(it.args) in (2, 3)):
            return
        it.args = [self._constants_in(a) for a in it.args]  # (`range(k0, k0 + TILE)`, TILE = 4 in the module)
        lo, hi = it.args[0], it.args[1]
        step = _number(it.args[2]) if len(it.args) == 3 else 1
        if type(step) is not int or step < 1:
            return
        if step > 1:
            v = n.target.id
            if not any(getattr(x, "eqsat_tile_of", None) == (v, step) for x in ast.walk(n) if x is not n):
                return  # (a strided loop alone runs as fast as written, faster compiled)
            span = hi if _number(lo) == 0 else ast.BinOp(left=hi, op=ast.Sub(), right=lo)
            count = ast.BinOp(left=ast.BinOp(left=span, op=ast.Add(), right=ast.Constant(step - 1)),
                              op=ast.FloorDiv(), right=ast.Constant(step))
            at = ast.BinOp(left=ast.Constant(step), op=ast.Mult(), right=ast.Name(id=n.target.id, ctx=ast.Load()))
            if _number(lo) != 0:
                at = ast.BinOp(left=copy.deepcopy(lo), op=ast.Add(), right=at)
        else:
            width = _width(lo, hi)
            if width is None or _number(lo) is not None or step != 1:
                return
            count = ast.Constant(width)
            at = ast.BinOp(left=copy.deepcopy(lo), op=ast.Add(), right=ast.Name(id=n.target.id, ctx=ast.Load()))
            if isinstance(lo, ast.Name):
                n.eqsat_tile_of = (lo.id, width)  # (a tile of a loop over `lo` by `width`, normalized above)
        n.iter = ast.copy_location(ast.Call(func=it.func, args=[count], keywords=[]), it)
        n.body = [_Renamed({}, {n.target.id: at}).visit(st) for st in n.body]

    def _constants_in(self, e):
        """`e` with each name of a module's integer constant (bound outside the function, no
        size) replaced by its value."""
        values = {}
        for x in ast.walk(e):
            if isinstance(x, ast.Name) and x.id not in self.stores and x.id not in self.sizes:
                v = self.resolve(x.id)
                if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
                    values[x.id] = int(v)
        return slice_bounds.with_values(e, values)

    def _clamped_bounds(self, n):
        """`for j in range(max(a, b), min(c, d))` (a skewed or tiled nest's bounds): j runs
        over range(a, c) and the body is guarded by `j >= b and j < d`, the same iterations
        in the same order (a step of 1 only: with a larger one the first iteration moves)."""
        it = n.iter
        if not (isinstance(it, ast.Call) and self.callee(it.func) is builtins.range and not it.keywords and
                isinstance(n.target, ast.Name) and 1 <= len(it.args) <= 3):
            return
        args = list(it.args) if len(it.args) > 1 else [ast.Constant(0), it.args[0]]
        if len(args) == 3 and _number(args[2]) != 1:
            return
        guards = []

        def clamp(e, fn, op):
            got = self._clamp_call(e)
            if got is not None and got[0] is fn:
                for other in e.args[1:]:
                    guards.append(ast.Compare(left=ast.Name(id=n.target.id, ctx=ast.Load()), ops=[op],
                                              comparators=[other]))
                return e.args[0]
            return e

        lo, hi = clamp(args[0], builtins.max, ast.GtE()), clamp(args[1], builtins.min, ast.Lt())
        if not guards:
            return
        it.args = [lo, hi]
        test = guards[0] if len(guards) == 1 else ast.BoolOp(op=ast.And(), values=guards)
        guard = ast.copy_location(ast.If(test=test, body=n.body, orelse=[]), n)
        guard.eqsat_clamp = True  # (a nest run as written runs the clamped bounds again: `clamped`)
        n.body = [guard]

    def _clamped_index(self, n):
        """`x[max(i - 1, 0)]` (a clamp-to-edge stencil's read), as the read of the index the
        builtin picks: `x[0] if i - 1 < 0 else x[i - 1]` (`min` alike, one axis and one
        argument at a time; the other axes and clamps are read again in each branch). The
        index of a read is an int, so which argument `max` returns on a tie does not matter;
        only the branch taken reads, as in Python. None where no index is such a call."""
        if not isinstance(n.ctx, ast.Load) or has_slice(n.slice):
            return None
        elts = index_elts(n.slice)
        for k, e in enumerate(elts):
            got = self._clamp_call(e)
            if got is None:
                continue
            fn, (first, second, *rest) = got
            # max(a, b, ...) is max(max(a, b), ...): the pair first; a clamp inside a clamp
            # (`min(max(i + 1, 0), N - 1)`) compares its arguments (`N - 1 < max(i + 1, 0)`
            # is `N - 1 < i + 1 or N - 1 < 0`), so every condition stays affine and the
            # bounds of the reads it guards are proved from it
            pair = self._compare(second, ast.Gt() if fn is builtins.max else ast.Lt(), first)

            def read(at):
                inner = at if not rest else ast.Call(func=e.func, args=[at] + rest, keywords=[])
                new = elts[:k] + [inner] + elts[k + 1:]
                sl = new[0] if len(new) == 1 else ast.Tuple(elts=new, ctx=ast.Load())
                return ast.Subscript(value=copy.deepcopy(n.value), slice=copy.deepcopy(sl), ctx=ast.Load())

            out = ast.IfExp(test=pair, body=read(second), orelse=read(first))
            return ast.fix_missing_locations(ast.copy_location(out, n))
        return None

    def _clamp_call(self, e):
        """(builtins.max or builtins.min, its arguments) of a call to either, else None."""
        if isinstance(e, ast.Call) and self.callee(e.func) in (builtins.max, builtins.min) and \
                len(e.args) >= 2 and not e.keywords and not any(isinstance(a, ast.Starred) for a in e.args):
            return self.callee(e.func), list(e.args)
        return None

    def _compare(self, left, op, right):
        """`left op right` (op > or <) with max/min calls on either side taken apart into
        comparisons of their arguments: `c < max(a, b)` is `c < a or c < b`, `c < min(a, b)`
        is `c < a and c < b` (and the mirror images)."""
        for side, other, flip in ((right, left, False), (left, right, True)):
            got = self._clamp_call(side)
            if got is None:
                continue
            fn, args = got
            # with the call on the right: c < max(...) and c > min(...) hold for any argument
            small = isinstance(op, ast.Lt) != flip
            either = (fn is builtins.max) == small
            parts = [self._compare(a, op, other) if flip else self._compare(other, op, a) for a in args]
            return ast.BoolOp(op=ast.Or() if either else ast.And(), values=parts)
        return ast.Compare(left=copy.deepcopy(left), ops=[op], comparators=[copy.deepcopy(right)])

    # ------------------------------------------------------------------ expressions
    def visit_Subscript(self, n):
        picked = self._clamped_index(n)
        if picked is not None:
            return self.visit(picked)
        self._ellipsis(n)
        v = n.value
        # X.shape[k] (before `X.shape` alone is rewritten)
        got = self.value_shape(v.value) if isinstance(v, ast.Attribute) and v.attr == "shape" else None
        if got is not None and got is not SCALAR:
            k = n.slice
            if isinstance(k, ast.UnaryOp) and isinstance(k.op, ast.USub) and isinstance(k.operand, ast.Constant):
                k = ast.Constant(-k.operand.value)
            dims = got[0]
            if isinstance(k, ast.Constant) and type(k.value) is int and -len(dims) <= k.value < len(dims):
                return ast.copy_location(copy.deepcopy(dims[k.value]), n)
        self.generic_visit(n)
        # trailing whole-axis slices: `x[i, :]` is `x[i]`, `x[:]` is `x` (views alike), where
        # x's rank is known and has those axes (more indices than axes: Python's IndexError)
        elts = index_elts(n.slice)
        k = len(elts)
        while k and _whole(elts[k - 1]):
            k -= 1
        got = self.value_shape(n.value)
        if k < len(elts) and got is not None and got is not SCALAR and len(elts) <= len(got[0]):
            if k == 0:
                if isinstance(n.ctx, ast.Load):
                    return n.value
            else:
                n.slice = elts[0] if k == 1 else ast.Tuple(elts=elts[:k], ctx=ast.Load())
        v = n.value
        # A[i][j]
        if isinstance(v, ast.Subscript) and not has_slice(v.slice) and not has_slice(n.slice):
            elts = index_elts(v.slice) + index_elts(n.slice)
            n = ast.copy_location(ast.Subscript(value=v.value, slice=ast.Tuple(elts=elts, ctx=ast.Load()),
                                                ctx=n.ctx), n)
        # x[-1]: from the end of its axis
        got = self.shape(n.value)
        elts = index_elts(n.slice)
        if got is not None and not has_slice(n.slice) and len(elts) <= len(got[0]) and \
                any(slice_bounds.negative_constant(e) for e in elts):
            elts = [ast.BinOp(left=copy.deepcopy(got[0][d]), op=ast.Sub(), right=ast.Constant(-slice_bounds.negative_constant(e)))
                    if slice_bounds.negative_constant(e) else e for d, e in enumerate(elts)]
            n.slice = elts[0] if len(elts) == 1 else ast.Tuple(elts=elts, ctx=ast.Load())
        return n

    def visit_BinOp(self, n):
        """A condition used as a number (`s * (s > 0)`, `h * (h > 0)`: relu as people write
        it) is 1.0 where it holds and 0.0 elsewhere, as Python and numpy promote a bool that
        meets a float in `+ - * /` (of tensors: np.where, element by element). Where both
        operands are conditions numpy's bool arithmetic differs from a number's (`m1 + m2` is
        their `or`), so only a product (their `and` either way) is read so; the rest is left
        to the front end, which refuses a condition as a value."""
        self.generic_visit(n)
        if not isinstance(n.op, (ast.Add, ast.Sub, ast.Mult, ast.Div)):
            return n
        left, right = sections.is_mask(n.left), sections.is_mask(n.right)
        if (left or right) and (not (left and right) or isinstance(n.op, ast.Mult)):
            if left:
                n.left = self._as_number(n.left)
            if right:
                n.right = self._as_number(n.right)
        return n

    def _as_number(self, cond):
        """`cond` as 1.0 where it holds and 0.0 elsewhere (module doc of `visit_BinOp`)."""
        shape = self.condition_shape(cond)
        if shape is None:
            return cond
        out = ast.copy_location(ast.IfExp(test=cond, body=ast.Constant(1.0), orelse=ast.Constant(0.0)), cond)
        if shape is not SCALAR:
            out.eqsat_where, out.eqsat_source = True, ast.unparse(cond)
        return out

    def _axis_view(self, n, obj):
        """`np.expand_dims(x, k)` as `x[:, ..., None, ...]` (None at axis k of the result) and
        `np.squeeze(x, k)` as `x[:, ..., 0, ...]` where axis k's extent is the literal 1
        (numpy raises for another; `squeeze` without an axis drops every literal 1), for an
        x of known rank and integer axes; else None."""
        args = list(n.args) + [k.value for k in n.keywords if k.arg == "axis"]
        if len(args) not in (1, 2) or any(k.arg != "axis" for k in n.keywords):
            return None
        got = self.value_shape(args[0])
        if got is None or got is SCALAR:
            return None
        dims = got[0]
        if len(args) == 1:
            if obj is not np.squeeze:
                return None
            axes = [k for k, d in enumerate(dims) if isinstance(d, ast.Constant) and d.value == 1]
        else:
            items = args[1].elts if isinstance(args[1], ast.Tuple) else [args[1]]
            axes = [_number(e) for e in items]
            if any(type(a) is not int for a in axes):
                return None
        if obj is np.expand_dims:
            rank = len(dims) + len(axes)
            axes = sorted(a + rank if a < 0 else a for a in axes)
            if any(not 0 <= a < rank for a in axes) or len(set(axes)) != len(axes):
                return None
            elts = [ast.Constant(None) if k in axes else ast.Slice(lower=None, upper=None, step=None)
                    for k in range(rank)]
        else:
            axes = [a + len(dims) if a < 0 else a for a in axes]
            if any(not (0 <= a < len(dims) and isinstance(dims[a], ast.Constant) and dims[a].value == 1)
                   for a in axes):
                return None
            elts = [ast.Constant(0) if k in axes else ast.Slice(lower=None, upper=None, step=None)
                    for k in range(len(dims))]
        if not elts:
            return args[0]
        out = ast.Subscript(value=args[0], slice=elts[0] if len(elts) == 1 else ast.Tuple(elts=elts, ctx=ast.Load()),
                            ctx=ast.Load())
        return ast.fix_missing_locations(ast.copy_location(out, n))

    def _ellipsis(self, n):
        """`x[..., None]`, `x[i, ...]`: the `...` as the whole-axis slices it stands for, where
        x's rank is known (`None` adds an axis and takes none)."""
        elts = index_elts(n.slice)
        dots = [k for k, e in enumerate(elts) if isinstance(e, ast.Constant) and e.value is Ellipsis]
        if len(dots) != 1:
            return
        got = self.value_shape(n.value)
        if got is None or got is SCALAR:
            return
        taken = sum(1 for e in elts if not (isinstance(e, ast.Constant) and e.value in (None, Ellipsis)))
        fill = len(got[0]) - taken
        if fill < 0:
            return
        k = dots[0]
        new = elts[:k] + [ast.Slice(lower=None, upper=None, step=None) for _ in range(fill)] + elts[k + 1:]
        if not new:
            return  # (`x[...]` of a tensor of no axis stands for no index: left as written)
        n.slice = new[0] if len(new) == 1 else ast.Tuple(elts=new, ctx=ast.Load())
        ast.fix_missing_locations(n)

    def visit_Attribute(self, n):
        if isinstance(n.value, ast.Name) and isinstance(n.ctx, ast.Load):
            mod = self.resolve(n.value.id)
            if mod is np and n.attr == "newaxis":
                return ast.copy_location(ast.Constant(None), n)
            if (mod, n.attr) in _NUMBERS and isinstance(getattr(mod, n.attr, None), float):
                return ast.copy_location(ast.Constant(getattr(mod, n.attr)), n)
        self.generic_visit(n)
        got = self.value_shape(n.value) if n.attr in ("shape", "size") and isinstance(n.ctx, ast.Load) else None
        if got is not None and got is not SCALAR:
            dims = got[0]
            if n.attr == "size":  # (`x.size`: the product of its extents)
                return ast.copy_location(_product([copy.deepcopy(d) for d in dims]) if dims else ast.Constant(1), n)
            return ast.copy_location(ast.Tuple(elts=[copy.deepcopy(d) for d in dims], ctx=ast.Load()), n)
        return n

    def visit_Call(self, n):
        # (`X.shape` inside is rewritten after this call's own forms are seen)
        spread = self._variance(n)
        if spread is not None:
            return self.visit(spread)
        obj = self.callee(n.func)
        for k in n.keywords:  # `dtype=x.dtype` of a float32 tensor x
            v = k.value
            if k.arg == "dtype" and isinstance(v, ast.Attribute) and v.attr == "dtype":
                got = self.value_shape(v.value)
                if got is not None and got is not SCALAR and got[1]:
                    k.value = ast.copy_location(ast.Constant("float32"), v)
        if obj is builtins.len and len(n.args) == 1 and self.shape(n.args[0]) is not None:
            dims = self.shape(n.args[0])[0]
            if dims:
                return ast.copy_location(copy.deepcopy(dims[0]), n)
        self.generic_visit(n)
        if obj is np.transpose and len(n.args) == 1 and len(n.keywords) == 1 and n.keywords[0].arg == "axes":
            n.args, n.keywords = n.args + [n.keywords[0].value], []
        if obj is builtins.float and len(n.args) == 1 and isinstance(n.args[0], ast.Constant) and \
                isinstance(n.args[0].value, str) and n.args[0].value.strip().lower() in _FLOAT_WORDS:
            return ast.copy_location(ast.Constant(float(n.args[0].value)), n)
        if obj in _BINOPS and len(n.args) == 2 and not n.keywords:  # np.add(a, b) is a + b
            return ast.copy_location(ast.BinOp(left=n.args[0], op=_BINOPS[obj](), right=n.args[1]), n)
        if obj is np.linalg.norm and len(n.args) == 1 and isinstance(n.func.value, ast.Attribute) and \
                {k.arg for k in n.keywords} <= {"axis", "keepdims"}:
            # the 2-norm of a vector, Frobenius of a matrix, along `axis` too: sqrt(sum(x * x))
            x = n.args[0]
            total = ast.Call(func=ast.Attribute(value=copy.deepcopy(n.func.value.value), attr="sum", ctx=ast.Load()),
                             args=[ast.BinOp(left=x, op=ast.Mult(), right=copy.deepcopy(x))], keywords=n.keywords)
            return ast.copy_location(ast.Call(func=ast.Name(id=LIB + "sqrt", ctx=ast.Load()), args=[total],
                                              keywords=[]), n)
        if obj is np.trace and len(n.args) == 1 and not n.keywords and isinstance(n.func, ast.Attribute):
            # the sum of the diagonal (of a square matrix: np.diag's)
            diag = ast.Call(func=ast.Attribute(value=copy.deepcopy(n.func.value), attr="diag", ctx=ast.Load()),
                            args=n.args, keywords=[])
            return ast.copy_location(ast.Call(func=ast.Attribute(value=copy.deepcopy(n.func.value), attr="sum",
                                                                 ctx=ast.Load()), args=[diag], keywords=[]), n)
        if obj in (np.expand_dims, np.squeeze):
            got = self._axis_view(n, obj)
            if got is not None:
                return self.visit(got)
        if obj is np.square and len(n.args) == 1 and not n.keywords:  # (x * x, exactly: one rounding)
            return ast.copy_location(ast.BinOp(left=n.args[0], op=ast.Mult(), right=copy.deepcopy(n.args[0])), n)
        method_clip = obj is None and isinstance(n.func, ast.Attribute) and n.func.attr == "clip"
        if (obj is np.clip or method_clip) and n.keywords:  # bounds by keyword: `x.clip(min=0.0)`
            _clip_keywords(n, 1 if obj is np.clip else 0)
        if obj is None and isinstance(n.func, ast.Attribute) and n.func.attr == "clip" and len(n.args) == 2 and \
                not n.keywords and self.value_shape(n.func.value) is not SCALAR:
            # `x.clip(lo, hi)`, of a tensor or of an expression whose shape is not known yet
            # (`(b + x @ w).clip(...)`): np.clip's, the only clip a value has
            n.args, obj = [n.func.value, *n.args], np.clip
        if obj is None and isinstance(n.func, ast.Attribute) and n.func.attr in ("transpose", "swapaxes") and \
                not n.keywords and (self.value_shape(n.func.value) not in (None, SCALAR) or
                                    n.func.attr == "transpose" and n.args and
                                    self.value_shape(n.func.value) is not SCALAR):
            # the methods of a tensor: `x.swapaxes(a, b)` is np.swapaxes's; `x.transpose()` is
            # x.T, `x.transpose(0, 2, 1, 3)` and `x.transpose((0, 2, 1, 3))` the language's transpose
            # (with axes, also of a value whose shape is not known here: a local bound to a
            # reshape, a slice; only a tensor has axes to permute, the front end checks them)
            if n.func.attr == "swapaxes":
                n.args, obj = [n.func.value, *n.args], np.swapaxes
            elif not n.args:
                return ast.copy_location(ast.Attribute(value=n.func.value, attr="T", ctx=ast.Load()), n)
            else:
                perm = n.args[0] if len(n.args) == 1 and isinstance(n.args[0], (ast.Tuple, ast.List)) else \
                    ast.Tuple(elts=list(n.args), ctx=ast.Load())
                return ast.copy_location(ast.Call(func=ast.Name(id=LIB + "transpose", ctx=ast.Load()),
                                                  args=[n.func.value, perm], keywords=[]), n)
        if obj is np.swapaxes and len(n.args) == 3 and not n.keywords:  # (a transpose of two axes)
            got, a, b = self.value_shape(n.args[0]), _number(n.args[1]), _number(n.args[2])
            if got not in (None, SCALAR) and type(a) is int and type(b) is int and \
                    -len(got[0]) <= min(a, b) and max(a, b) < len(got[0]):
                perm = list(range(len(got[0])))
                a, b = a % len(perm), b % len(perm)
                perm[a], perm[b] = perm[b], perm[a]
                if perm == list(range(len(perm)))[::-1]:  # (every axis reversed: the view x.T)
                    return ast.copy_location(ast.Attribute(value=n.args[0], attr="T", ctx=ast.Load()), n)
                out = ast.Call(func=ast.Name(id=LIB + "transpose", ctx=ast.Load()), args=[
                    n.args[0], ast.Tuple(elts=[ast.Constant(p) for p in perm], ctx=ast.Load())], keywords=[])
                return ast.copy_location(out, n)
        if obj is np.diff and len(n.args) == 1 and {k.arg for k in n.keywords} <= {"axis"}:
            # x[..., 1:] - x[..., :-1] along the axis (the last by default), of a tensor
            got = self.value_shape(n.args[0])
            axis = _number(n.keywords[0].value) if n.keywords else -1
            if got not in (None, SCALAR) and type(axis) is int and -len(got[0]) <= axis < len(got[0]):
                axis %= len(got[0])

                def part(lo, hi):
                    sl = [ast.Slice(lower=None, upper=None, step=None) for _ in got[0]]
                    sl[axis] = ast.Slice(lower=lo, upper=hi, step=None)
                    return ast.Subscript(value=copy.deepcopy(n.args[0]), slice=ast.Tuple(elts=sl, ctx=ast.Load())
                                         if len(sl) > 1 else sl[0], ctx=ast.Load())
                out = ast.BinOp(left=part(ast.Constant(1), None), op=ast.Sub(),
                                right=part(None, ast.UnaryOp(op=ast.USub(), operand=ast.Constant(1))))
                return self.visit(ast.copy_location(out, n))
        if obj is np.average and len(n.args) == 1 and {k.arg for k in n.keywords} <= {"axis"} and \
                isinstance(n.func, ast.Attribute):  # (no weights: the mean)
            n.func = ast.copy_location(ast.Attribute(value=n.func.value, attr="mean", ctx=ast.Load()), n.func)
            return n
        if obj in (np.sum, np.mean, np.count_nonzero) and len(n.args) == 1 and \
                {k.arg for k in n.keywords} <= {"axis", "keepdims"} and isinstance(n.func, ast.Attribute) and \
                (sections.is_mask(n.args[0]) or obj is np.count_nonzero):
            # the count (the fraction) of elements a condition holds at, as numbers: 1.0 or 0.0
            cond = n.args[0] if obj is not np.count_nonzero or sections.is_mask(n.args[0]) \
                else ast.Compare(left=n.args[0], ops=[ast.NotEq()], comparators=[ast.Constant(0.0)])
            ones = ast.IfExp(test=cond, body=ast.Constant(1.0), orelse=ast.Constant(0.0))
            ones.eqsat_where, ones.eqsat_source = True, ast.unparse(n)
            n.args = [ast.copy_location(ones, n)]
            if obj is np.count_nonzero:
                n.func = ast.copy_location(ast.Attribute(value=n.func.value, attr="sum", ctx=ast.Load()), n.func)
            return n
        if obj is np.clip and len(n.args) == 3 and not n.keywords:
            # numpy's: of two bounds, clip_above(clip_below(a, lo), hi), which keep `a` on a
            # tie; of one (the other None), maximum(a, lo) or minimum(a, hi), which numpy
            # computes then (the tie's zero the bound's)
            out, lo, hi = n.args
            both = not _is_none(lo) and not _is_none(hi)
            if not _is_none(lo):
                out = ast.Call(func=ast.Name(id=LIB + ("clip_below" if both else "maximum"), ctx=ast.Load()),
                               args=[out, lo], keywords=[])
            if not _is_none(hi):
                out = ast.Call(func=ast.Name(id=LIB + ("clip_above" if both else "minimum"), ctx=ast.Load()),
                               args=[out, hi], keywords=[])
            return ast.copy_location(out, n)
        if obj in (np.logical_and, np.logical_or) and len(n.args) == 2 and not n.keywords:
            # (a condition: `and`/`or` of the truths, element by element where they are masks;
            # as a value it is refused, as a comparison is)
            op = ast.And() if obj is np.logical_and else ast.Or()
            return ast.copy_location(ast.BoolOp(op=op, values=list(n.args)), n)
        if obj is np.logical_not and len(n.args) == 1 and not n.keywords:
            return ast.copy_location(ast.UnaryOp(op=ast.Not(), operand=n.args[0]), n)
        if obj is np.where and len(n.args) == 3 and not n.keywords:  # (of tensors: eqsat/sections.py)
            out = ast.copy_location(ast.IfExp(test=n.args[0], body=n.args[1], orelse=n.args[2]), n)
            out.eqsat_where, out.eqsat_source = True, ast.unparse(n)  # (the source, for an error)
            return out
        if obj in (np.transpose, lang.transpose) and n.args and _reverses_axes(n) and \
                (_perm(n) is None or _rank(self.value_shape(n.args[0])) == len(_perm(n).elts)):
            # (`np.transpose(x)`, `transpose(x, (1, 0))`: every axis reversed, the view x.T)
            return ast.copy_location(ast.Attribute(value=n.args[0], attr="T", ctx=ast.Load()), n)
        copied = n.args[0] if obj is np.copy and len(n.args) == 1 else \
            n.func.value if isinstance(n.func, ast.Attribute) and n.func.attr == "copy" and not n.args else None
        if obj is None and isinstance(n.func, ast.Attribute) and n.func.attr == "astype" and len(n.args) == 1 and \
                all(k.arg == "copy" for k in n.keywords) and \
                (self.callee(n.args[0]) is np.float32 or
                 isinstance(n.args[0], ast.Constant) and n.args[0].value in ("float32", "f4")):
            copied, n.keywords = n.func.value, []  # (`x.astype(np.float32)` of a float32 x: a copy)
        got = self.value_shape(copied) if copied is not None and not n.keywords else None
        if got is not None and got is not SCALAR and got[1]:  # (of a view too: `np.flip(a).copy()`)
            out = ast.copy_location(ast.BinOp(left=copied, op=ast.Mult(), right=ast.Constant(1.0)), n)
            out.eqsat_shape = got  # (`y = x.copy()`: y's shape is x's)
            return out
        if n.keywords:
            return n
        if obj in _LIKE and len(n.args) == 1:
            got = self.shape(n.args[0])
            if got is not None and got[1]:
                shape = ast.Tuple(elts=[copy.deepcopy(d) for d in got[0]], ctx=ast.Load())
                return ast.copy_location(ast.Call(func=ast.Name(id=LIB + _LIKE[obj], ctx=ast.Load()), args=[shape],
                                                  keywords=[]), n)
            return n
        canon = _alias(obj)
        if canon is not None:
            out = ast.copy_location(ast.Call(func=ast.Name(id=LIB + canon, ctx=ast.Load()), args=n.args,
                                             keywords=[]), n)
            if getattr(obj, "__module__", None) == "math" or obj in _MATH:
                out.eqsat_of_math = f"math.{obj.__name__}"  # (numbers only: the front end checks)
                if len(n.args) == 1 and self.value_shape(n.args[0]) is SCALAR:
                    # math's functions compute in float64 and return a Python float: of an
                    # element, `math.exp(x[i])` is exp(float(x[i])) (a float32 exp overflows
                    # past 88.7, where Python's does not)
                    out.args = [_python_float(n.args[0])]
            return out
        if obj is None and isinstance(n.func, ast.Attribute) and n.func.attr == "dot" and len(n.args) == 1:
            got = self.value_shape(n.func.value)  # (`a.dot(b)` of a tensor a: np.dot(a, b))
            if got is not None and got is not SCALAR:
                mm = ast.copy_location(ast.BinOp(left=n.func.value, op=ast.MatMult(), right=n.args[0]), n)
                mm.eqsat_dot = True
                return mm
        if len(n.args) == 2 and obj in (np.matmul, np.dot):
            mm = ast.copy_location(ast.BinOp(left=n.args[0], op=ast.MatMult(), right=n.args[1]), n)
            mm.eqsat_dot = obj is np.dot  # (the front end refuses it over more than two axes)
            return mm
        if obj is builtins.float and len(n.args) == 1 and self.is_int(n.args[0]):
            return ast.copy_location(ast.BinOp(left=n.args[0], op=ast.Mult(), right=ast.Constant(1.0)), n)
        if obj is builtins.float and len(n.args) == 1 and not n.keywords and _float32_number(n.args[0]) is not None:
            # (`float(np.float32(0.1))`: the Python float 0.10000000149011612, as Python's)
            return ast.copy_location(ast.Constant(_float32_number(n.args[0])), n)
        if obj is builtins.float and len(n.args) == 1 and not n.keywords and self.value_shape(n.args[0]) is SCALAR:
            # (`float(x[i])`, `float(s)`: a Python float from here on, float64 and weak, as in
            # Python; the front end reads builtins.float as the language's `float`)
            return ast.copy_location(_python_float(n.args[0]), n)
        return n


def _python_float(e):
    """`float(e)` as the language's function (a Python float, `lang.pyfloat`), at e's place."""
    return ast.copy_location(ast.Call(func=ast.Name(id=LIB + "float", ctx=ast.Load()), args=[e], keywords=[]), e)


def _float32_number(e):
    """The value of `np.float32(c)` of a numeric literal c (desugared: the language's
    `float32`), rounded to float32, as a Python float; else None."""
    if isinstance(e, ast.Call) and isinstance(e.func, ast.Name) and e.func.id == LIB + "float32" and \
            len(e.args) == 1 and not e.keywords and _number(e.args[0]) is not None:
        return float(lang.rounded(_number(e.args[0])))
    return None


def _is_none(e) -> bool:
    return isinstance(e, ast.Constant) and e.value is None


_BINOPS = {np.add: ast.Add, np.subtract: ast.Sub, np.multiply: ast.Mult, np.divide: ast.Div, np.mod: ast.Mod,
           np.remainder: ast.Mod, np.floor_divide: ast.FloorDiv,
           np.true_divide: ast.Div, np.power: ast.Pow}
_FLOAT_WORDS = {"inf", "-inf", "+inf", "infinity", "-infinity", "nan"}


def _number(e):
    """The value of a numeric literal (`2.0`, `-1`), else None."""
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, (ast.USub, ast.UAdd)):
        v = _number(e.operand)
        return None if v is None else (-v if isinstance(e.op, ast.USub) else v)
    if isinstance(e, ast.Constant) and type(e.value) in (int, float):
        return e.value
    return None


def _same(a, b):
    """The shape of an elementwise operation over values of shapes `a` and `b`: numpy's
    broadcasting, axes aligned from the right, an axis of literal extent 1 (or a missing
    one) taking the other's; None where the extents are not told to agree."""
    if a is None or b is None:
        return None
    if a is SCALAR:
        return b
    if b is SCALAR:
        return a
    out = sections.broadcast(a[0], b[0])
    return None if out is None else (out, a[1] and b[1])


def reduced_axes(axis, rank: int):
    """A reduction's `axis=` over `rank` axes: None (every axis), a frozenset of axes (an int,
    or a tuple of them, negatives from the end), or False where it is not of that form."""
    if axis is None:
        return None
    items = axis.elts if isinstance(axis, ast.Tuple) else [axis]
    out = set()
    for e in items:
        a = _number(e)
        if type(a) is not int or not -rank <= a < rank or a % rank in out:
            return False
        out.add(a % rank)
    return None if len(out) == rank else frozenset(out)


def keepdims_of(kws: dict):
    """A reduction's `keepdims=` (popped from `kws`): True, False, or None where it is not a
    constant."""
    v = kws.pop("keepdims", None)
    if v is None:
        return False
    return v.value if isinstance(v, ast.Constant) and type(v.value) is bool else None


def _same_shape(a, b) -> bool:
    return a is not None and b is not None and a is not SCALAR and b is not SCALAR and a[1] == b[1] and \
        sections.same_dims(a[0], b[0])


def _alias(obj) -> str | None:
    try:
        return ALIASES.get(obj)
    except TypeError:  # (an unhashable object)
        return None


def _whole(e) -> bool:
    """`:`, a whole axis."""
    return isinstance(e, ast.Slice) and e.lower is None and e.upper is None and e.step is None


def has_slice(s) -> bool:
    return any(isinstance(x, ast.Slice) for x in ast.walk(s)) or \
        (isinstance(s, ast.Constant) and s.value is Ellipsis) or isinstance(s, ast.Starred)


def index_elts(s) -> list:
    return list(s.elts) if isinstance(s, ast.Tuple) else [s]


def _drop_parameter_copies(fdef, params: list, resolve, stores: dict) -> None:
    """`a = a.copy()` (or `np.copy(a)`) of an f32 tensor parameter, at the top of the
    function, where `a` is bound nowhere else and nothing before it binds a view of `a`:
    dropped; `b = a.copy()` where nothing after it reads `a`: `b = a`, a second name for
    its memory. Parameters are passed by value (a plan writes into its own copy of one, as
    `reference` does), so neither copy changes a result; `stores` is updated."""
    f32 = {p.name for p in params if p.shape is not None and p.dtype in lang.FLOATS}
    own = set(stores) | {p.name for p in params}
    keep = []
    body = list(fdef.body)
    for at, st in enumerate(body):
        drop = False
        if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name) and \
                isinstance(st.value, ast.Call) and not st.value.keywords:
            x, v, f = st.targets[0].id, st.value, st.value.func
            src = f.value if isinstance(f, ast.Attribute) and f.attr == "copy" and not v.args else \
                v.args[0] if len(v.args) == 1 and isinstance(f, ast.Attribute) and f.attr == "copy" and \
                isinstance(f.value, ast.Name) and f.value.id not in own and resolve(f.value.id) is np else None
            if isinstance(src, ast.Name) and src.id in f32 and not _named_before(src.id, body[:at]) and \
                    stores.get(src.id, 0) == (1 if src.id == x else 0):
                p = src.id
                later = any(isinstance(n, ast.Name) and n.id == p for b in body[at + 1:] for n in ast.walk(b))
                if x == p and stores.get(x) == 1:
                    drop = True  # `a = a.copy()`
                elif x != p and not later and stores.get(x) == 1:
                    # `B = B0.copy()` where nothing reads B0 after: B names B0's memory (a
                    # parameter is the plan's own copy), as PolyBench's in-place form does
                    st.value = ast.copy_location(ast.Name(id=p, ctx=ast.Load()), v)
        if drop:
            stores[x] = 0
            continue
        keep.append(st)
    fdef.body = keep or [ast.Pass()]


def _rename_rebindings(fdef, stores: dict, params: list) -> None:
    """A name bound again by a statement of the function's top level (`x = x @ w2`, `X =
    X.T`, `p = p * 0.5` of a parameter) gets a new name from that binding on: each name is
    then bound once, so its shape is known where it is read, and a view of its own old
    memory (`X = X.T`) has a name of its own. Only names bound by top-level `name = ...`
    alone: a name bound inside a loop or branch, by a tuple or a `for`, is left as written."""
    body = fdef.body
    excluded: set = set()
    top: dict = {}  # name -> top-level assignments binding it
    for st in body:
        if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name):
            top[st.targets[0].id] = top.get(st.targets[0].id, 0) + 1
            inner = [st.value]
        elif isinstance(st, ast.AugAssign) and isinstance(st.target, ast.Name):
            inner = [st.value]  # (an update of the same binding: renamed as a use)
        else:
            inner = [st]
        for part in inner:
            for n in ast.walk(part):
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                    excluded.add(n.id)
    todo = {n for n, k in top.items() if k + (n in {p.name for p in params}) >= 2} - excluded
    if not todo:
        return
    current = {n: n for n in todo}
    seen = {p.name for p in params}
    count = 0
    for at, st in enumerate(body):
        rename = _Renamed(dict(current))
        if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name) and \
                st.targets[0].id in todo:
            x = st.targets[0].id
            st.value = rename.visit(st.value)
            if x in seen:  # (bound before: from here on, another name)
                new = f"eqsat_r{count}_{x}"
                count += 1
                st.targets[0] = ast.copy_location(ast.Name(id=new, ctx=ast.Store()), st.targets[0])
                stores[new] = 1
                stores[x] -= 1
                current[x] = new
            seen.add(x)
        else:
            body[at] = rename.visit(st)


def _named_before(p: str, stmts: list) -> bool:
    """Whether statements `stmts` name `p` other than for its extents (`p.shape`, `len(p)`):
    any other mention may bind a view of it (`v = p[0]`, `v: T = p`, `v, s = p[0], 2.0`)."""
    for st in stmts:
        parent = {c: n for n in ast.walk(st) for c in ast.iter_child_nodes(n)}
        for n in ast.walk(st):
            if isinstance(n, ast.Name) and n.id == p:
                up = parent.get(n)
                if isinstance(up, ast.Attribute) and up.attr == "shape":
                    continue
                if isinstance(up, ast.Call) and isinstance(up.func, ast.Name) and up.func.id == "len":
                    continue
                return True
    return False


def _drop_size_rebinds(fdef, sizes: set) -> None:
    """Remove `N = x.shape[1]` and `M, N = x.shape` where they bind each size to itself
    (after the rewrites above: `N = N`): Python rebinds the name to the value it has."""
    def noop(s):
        if not (isinstance(s, ast.Assign) and len(s.targets) == 1):
            return False
        t, v = s.targets[0], s.value
        ts = t.elts if isinstance(t, (ast.Tuple, ast.List)) else [t]
        vs = v.elts if isinstance(v, (ast.Tuple, ast.List)) else [v]
        return len(ts) == len(vs) and all(isinstance(a, ast.Name) and isinstance(b, ast.Name) and a.id == b.id
                                          and a.id in sizes for a, b in zip(ts, vs))

    def read_before(s) -> bool:  # (then Python reads an unbound local there: left for the front end to refuse)
        names = {t.id for t in ast.walk(s.targets[0]) if isinstance(t, ast.Name)}
        # (names eqsat wrote, `M` for `len(x)`, have no location: Python reads no local there)
        return any(isinstance(x, ast.Name) and isinstance(x.ctx, ast.Load) and x.id in names and
                   hasattr(x, "lineno") and (x.lineno, x.col_offset) < (s.lineno, s.col_offset)
                   for x in ast.walk(fdef))

    for node in ast.walk(fdef):
        for field in ("body", "orelse"):
            stmts = getattr(node, field, None)
            if isinstance(stmts, list) and any(noop(s) and not read_before(s) for s in stmts):
                kept = [s for s in stmts if not (noop(s) and not read_before(s))]
                setattr(node, field, kept or [ast.Pass()])


# ---------------------------------------------------------------------- continue


def _continues(stmts) -> bool:
    """Whether `continue` occurs in `stmts` for their own loop (not a nested one's)."""
    for s in stmts:
        if isinstance(s, ast.Continue):
            return True
        if isinstance(s, ast.If) and (_continues(s.body) or _continues(s.orelse)):
            return True
    return False


def _loops_without_continue(stmts: list, copied: list) -> None:
    """Remove `continue` from every loop in `stmts`, inner loops first (so the copies an
    outer loop makes of them have none)."""
    for s in stmts:
        if isinstance(s, (ast.For, ast.If)):
            _loops_without_continue(s.body, copied)
            _loops_without_continue(s.orelse, copied)
            if isinstance(s, ast.For):
                s.body = _no_continue(s.body, copied)


def _no_continue(stmts: list, copied: list) -> list:
    """`stmts`, a loop body's tail, without `continue`: what follows an `if` that may
    continue runs in each of its branches that does not."""
    for k, s in enumerate(stmts):
        if isinstance(s, ast.Continue):
            return stmts[:k]
        if isinstance(s, ast.If) and (_continues(s.body) or _continues(s.orelse)):
            rest = stmts[k + 1:]
            copied[0] += 2 * sum(1 for r in rest for _ in ast.walk(r))
            if copied[0] > _COPY_LIMIT:
                return stmts  # (left as written: refused)
            body = _no_continue(s.body + copy.deepcopy(rest), copied)
            orelse = _no_continue(s.orelse + copy.deepcopy(rest), copied)
            new = ast.copy_location(ast.If(test=s.test, body=body or [ast.Pass()], orelse=orelse), s)
            return stmts[:k] + [new]
    return stmts


# ---------------------------------------------------------------------- sum(generator)


class _Sums(_Hoisting):
    """`sum(e for k in range(n))` as an accumulator computed before its statement."""

    def __init__(self, is_sum):
        super().__init__()
        self.is_sum = is_sum

    def visit_Call(self, n):
        if isinstance(n.func, ast.Name) and self.is_sum(n.func.id) and 1 <= len(n.args) <= 2 and \
                not n.keywords and isinstance(n.args[0], ast.ListComp):  # (the same sum: its list is not kept)
            n.args[0] = ast.copy_location(ast.GeneratorExp(elt=n.args[0].elt, generators=n.args[0].generators),
                                          n.args[0])
        if not (isinstance(n.func, ast.Name) and self.is_sum(n.func.id) and 1 <= len(n.args) <= 2 and
                not n.keywords and isinstance(n.args[0], ast.GeneratorExp)):
            return self.generic_visit(n)
        gen = n.args[0]
        if not all(isinstance(g.target, ast.Name) and not g.is_async for g in gen.generators):
            return self.generic_visit(n)
        acc = f"eqsat_sum{self.count}"
        self.count += 1
        rename = {g.target.id: f"{acc}_{g.target.id}" for g in gen.generators}
        body = [ast.AugAssign(target=ast.Name(id=acc, ctx=ast.Store()), op=ast.Add(),
                              value=_Renamed(rename).visit(copy.deepcopy(gen.elt)))]
        for k in reversed(range(len(gen.generators))):
            g = gen.generators[k]
            for cond in reversed(g.ifs):
                body = [ast.If(test=_Renamed(rename).visit(copy.deepcopy(cond)), body=body, orelse=[])]
            # Python evaluates the first generator's range where the sum is (its names are the
            # enclosing ones); a later one's inside, where it may read an earlier variable
            it = copy.deepcopy(g.iter) if k == 0 else _Renamed(rename).visit(copy.deepcopy(g.iter))
            body = [ast.For(target=ast.Name(id=rename[g.target.id], ctx=ast.Store()), iter=it, body=body,
                            orelse=[])]
        start = n.args[1] if len(n.args) == 2 else ast.Constant(0.0)  # (0 + x is 0.0 + x, -0.0 too)
        init = ast.Assign(targets=[ast.Name(id=acc, ctx=ast.Store())], value=start)
        self.place([init, body[0]], n)
        return ast.copy_location(ast.Name(id=acc, ctx=ast.Load()), n)


class _Operands(_Hoisting):
    """An element or a row of a tensor expression read (`(x @ w)[0]`, `relu(t)[i, j]`,
    `x.T[j]`): the expression (of a transposed view, its copy) bound to a new name just
    before its statement, and that name indexed. Python evaluates the whole expression
    there too; a tensor expression has no effect but its value, so evaluating it under an
    `if`'s or an `a if c else b`'s condition or not is the same (the guards are not needed)."""

    def __init__(self, env):
        super().__init__()
        self.env = env

    def visit_Subscript(self, n):
        self.generic_visit(n)
        if not isinstance(n.ctx, ast.Load) or isinstance(n.value, (ast.Name, ast.Subscript)):
            return n
        v = n.value
        if isinstance(v, ast.Attribute) and v.attr == "shape":
            return n
        got = self.env.value_shape(v)
        if got is None or got is SCALAR or not got[0]:
            return n
        if isinstance(v, ast.Attribute) and v.attr == "T" or \
                isinstance(v, ast.Call) and self.env.is_transpose(v.func):
            # a transposed view read in part: its copy (every value the same), since rows of
            # a transposed view are not views the language has
            v = ast.BinOp(left=v, op=ast.Mult(), right=ast.Constant(1.0))
        name = f"eqsat_opnd{self.count}"
        self.count += 1
        n.value = self.computed(v, name, ([copy.deepcopy(d) for d in got[0]], got[1]), n)
        return n


def _untiled(fdef, resolve) -> None:
    """Strip-mined loops as the loops they step through, in place (tiled nests: the rules
    then see the nest as untiled code). A tile loop right around its loop (`for ii in
    range(a, b, T): for i in range(ii, min(ii + T, b)): body`) is `for i in range(a, b):
    body`, the same values of i in the same order; with `range(ii, ii + T)` the last tile
    may run past b: `range(a, a + (b - a + T - 1) // T * T)`, the same values again. Tile
    loops further out (`for ii: for jj: for kk: for i: for j: for k: C[i, j] += A[i, k] *
    B[k, j]`, a perfect nest) are dropped too where the body allows the new order
    (`_Tiles.reorderable`). Only where a tile's variable is read nowhere else in the
    function and T is a positive int (a literal or a module's constant)."""
    tiles = _Tiles(fdef, resolve)

    class Merge(ast.NodeTransformer):
        def visit_For(self, n):
            self.generic_visit(n)
            return tiles.merged(n) or tiles.band(n) or n

    Merge().visit(fdef)
    ast.fix_missing_locations(fdef)


class _Tiles:
    """Reading strip-mined loops (`_untiled`)."""

    def __init__(self, fdef, resolve):
        self.resolve = resolve
        self.names: dict = {}  # name -> occurrences in the function
        self.bound: dict = {}  # name -> the values it is assigned (or None: bound otherwise)
        self.params = {a.arg for a in fdef.args.args}
        for n in ast.walk(fdef):
            if isinstance(n, ast.Name):
                self.names[n.id] = self.names.get(n.id, 0) + 1
            if isinstance(n, ast.Assign):
                for t in n.targets:
                    for x in ast.walk(t):
                        if isinstance(x, ast.Name) and isinstance(x.ctx, ast.Store):
                            self.bound.setdefault(x.id, []).append(n.value if t is x else None)
            elif isinstance(n, (ast.AugAssign, ast.AnnAssign, ast.For)):
                for x in ast.walk(n.target):
                    if isinstance(x, ast.Name) and isinstance(x.ctx, ast.Store):
                        self.bound.setdefault(x.id, []).append(None)

    def step(self, e):
        v = e.value if isinstance(e, ast.Constant) else self.resolve(e.id) if isinstance(e, ast.Name) else None
        return v if type(v) is int and v > 0 else None

    def ranges(self, loop):
        """[lo, hi] or [lo, hi, step] of `for v in range(...)`, else None."""
        it = loop.iter
        if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and \
                self.resolve(it.func.id) is builtins.range and not it.keywords and 1 <= len(it.args) <= 3 and \
                isinstance(loop.target, ast.Name) and not loop.orelse:
            return list(it.args) if len(it.args) > 1 else [ast.Constant(0), it.args[0]]
        return None

    def tile(self, outer):
        """(its variable, lo, hi, T) of a tile loop `for ii in range(lo, hi, T)`, else None."""
        args = self.ranges(outer)
        if args is None or len(args) != 3 or self.step(args[2]) is None:
            return None
        return outer.target.id, args[0], args[1], self.step(args[2])

    def span(self, tile, inner):
        """The `range` that `inner` (`for i in range(ii, min(ii + T, hi))` or `range(ii, ii +
        T)`) runs over through all of `tile`'s steps, else None."""
        ii, lo, hi, step = tile
        got = self.ranges(inner)
        if got is None or len(got) != 2 or not _is_name(got[0], ii) or inner.target.id == ii:
            return None
        # the tile's variable read only by its loop and this loop's bounds
        if self.names.get(ii, 0) != 1 + sum(isinstance(x, ast.Name) and x.id == ii for a in got for x in ast.walk(a)):
            return None
        end = got[1]

        def tile_end(e):
            return isinstance(e, ast.BinOp) and isinstance(e.op, ast.Add) and (
                _is_name(e.left, ii) and self.step(e.right) == step or
                _is_name(e.right, ii) and self.step(e.left) == step)

        if tile_end(end):  # (whole tiles: the last one may run past hi)
            spread = ast.BinOp(left=ast.BinOp(left=copy.deepcopy(hi), op=ast.Sub(), right=copy.deepcopy(lo)),
                               op=ast.Add(), right=ast.Constant(step - 1))
            count = ast.BinOp(left=ast.BinOp(left=spread, op=ast.FloorDiv(), right=ast.Constant(step)),
                              op=ast.Mult(), right=ast.Constant(step))
            stop = ast.BinOp(left=copy.deepcopy(lo), op=ast.Add(), right=count)
        elif isinstance(end, ast.Call) and isinstance(end.func, ast.Name) and \
                self.resolve(end.func.id) is builtins.min and len(end.args) == 2 and not end.keywords and \
                any(tile_end(a) and ast.dump(b) == ast.dump(hi) for a, b in (end.args, end.args[::-1])):
            stop = copy.deepcopy(hi)
        else:
            return None
        return ast.copy_location(ast.Call(func=ast.Name(id="range", ctx=ast.Load()),
                                          args=[copy.deepcopy(lo), stop], keywords=[]), inner.iter)

    def merged(self, outer):
        """`outer` and the loop right inside it that it tiles, as that loop; else None."""
        tile = self.tile(outer)
        if tile is None or len(outer.body) != 1 or not isinstance(outer.body[0], ast.For):
            return None
        inner = outer.body[0]
        got = self.span(tile, inner)
        if got is None:
            return None
        inner.iter = got
        return ast.copy_location(inner, outer)

    def band(self, top):
        """The perfect nest from `top` with its tile loops dropped and their loops' ranges
        widened (`span`), where some tile is not right around its loop and the body allows
        the order (`reorderable`); else None."""
        chain = [top]
        while len(chain[-1].body) == 1 and isinstance(chain[-1].body[0], ast.For):
            chain.append(chain[-1].body[0])
        if any(self.ranges(f) is None for f in chain):
            return None
        tiles, spans = {}, {}  # tile loop -> its loop; loop -> its widened range
        for k, f in enumerate(chain):
            t = self.tile(f)
            if t is None:
                continue
            for g in chain[k + 1:]:
                got = self.span(t, g)
                if got is not None:
                    tiles[id(f)], spans[id(g)] = g, got
                    break
        if not tiles:
            return None
        kept = [f for f in chain if id(f) not in tiles]
        loops = {f.target.id for f in chain}
        # a kept loop's bounds read only loops kept outside it, and a tile's bounds none
        for k, f in enumerate(kept):
            read = {x.id for x in ast.walk(f.iter) if isinstance(x, ast.Name)} if id(f) not in spans else \
                {x.id for x in ast.walk(spans[id(f)]) if isinstance(x, ast.Name)}
            if read & loops - {g.target.id for g in kept[:k]}:
                return None
        order = [tiles[id(f)].target.id if id(f) in tiles else f.target.id for f in chain]
        if not self.reorderable(chain[-1].body, order, loops):
            return None
        body = chain[-1].body
        for f in reversed(kept):
            if id(f) in spans:
                f.iter = spans[id(f)]
            f.body = body
            body = [f]
        return ast.copy_location(body[0], top)

    def reorderable(self, body: list, order: list, loops: set) -> bool:
        """Whether iterations of a perfect nest's `body` may run in the untiled order: its
        statements store into elements of arrays (`W`), every access to a written array
        reads or writes the same element `I` (distinct loop variables: iterations with other
        `I` touch other elements), and the loops outside `I`, in `order` (each tile named
        by its loop), form one run each (`kk, k`: the iterations that share an element keep
        their order). Every array it reads or writes is a parameter never bound again or a
        buffer the function allocates once (a view could be another's elements)."""
        written, index = set(), None
        for st in body:
            target = st.targets[0] if isinstance(st, ast.Assign) and len(st.targets) == 1 else \
                st.target if isinstance(st, ast.AugAssign) else None
            if not (isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name)):
                return False
            written.add(target.value.id)
        for st in body:
            for x in ast.walk(st):
                if isinstance(x, ast.Subscript):
                    if not isinstance(x.value, ast.Name) or not self.own_array(x.value.id):
                        return False
                    if x.value.id in written:
                        key = ast.dump(x.slice)
                        if index is None:
                            index = (key, x.slice)
                        elif key != index[0]:
                            return False
                elif isinstance(x, ast.Name) and isinstance(x.ctx, ast.Store) and x.id not in written:
                    return False
        parts = index[1].elts if isinstance(index[1], ast.Tuple) else [index[1]]
        ivars = [p.id for p in parts if isinstance(p, ast.Name) and p.id in loops]
        if len(ivars) != len(parts) or len(set(ivars)) != len(ivars):
            return False
        rest = [v for v in order if v not in ivars]
        runs = [v for k, v in enumerate(rest) if k == 0 or rest[k - 1] != v]
        return len(runs) == len(set(runs))

    def own_array(self, name: str) -> bool:
        """A parameter never bound again, or a name bound once to a new buffer."""
        got = self.bound.get(name)
        if got is None:
            return name in self.params
        if len(got) != 1 or got[0] is None or not isinstance(got[0], ast.Call):
            return False
        fn = got[0].func
        obj = self.resolve(fn.id) if isinstance(fn, ast.Name) else \
            getattr(self.resolve(fn.value.id), fn.attr, None) if isinstance(fn, ast.Attribute) and \
            isinstance(fn.value, ast.Name) else None
        return obj in _NEW_BUFFERS


_NEW_BUFFERS = (np.zeros, np.empty, np.ones, np.full, lang.zeros, lang.empty)


def _is_name(e, name: str) -> bool:
    return isinstance(e, ast.Name) and e.id == name


def _iterations(fdef, resolve) -> None:
    """Loops over a tensor's rows, in place: `for a in x`, `for i, a in enumerate(x)`,
    `for a, b in zip(x, y)` and `for i, (a, b) in enumerate(zip(x, y))` (names of tensors) are `for k in range(len(x))` binding
    `a = x[k]` (and `i = k`, `b = y[k]`) first in the body: a row is a view, as Python's
    iteration over an array gives. zip stops at the shortest in Python; here at the
    first's length, so a shorter later one is read past its end, which the bounds check
    refuses at the sizes."""
    count = 0
    for loop in [n for n in ast.walk(fdef) if isinstance(n, ast.For)]:
        it, target = loop.iter, loop.target
        pairs = None  # (name bound, tensor it steps through), and the index's own name
        index = None
        if isinstance(it, ast.Name) and isinstance(target, ast.Name) and resolve(it.id) is None:
            pairs = [(target, it)]
        elif isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and not it.keywords and \
                isinstance(target, ast.Tuple) and all(isinstance(t, ast.Name) for t in target.elts):
            fn = resolve(it.func.id)
            if fn is builtins.enumerate and len(it.args) == 1 and isinstance(it.args[0], ast.Name) and \
                    len(target.elts) == 2:
                index, pairs = target.elts[0], [(target.elts[1], it.args[0])]
            elif fn is builtins.zip and len(it.args) == len(target.elts) >= 1 and \
                    all(isinstance(a, ast.Name) for a in it.args):
                pairs = list(zip(target.elts, it.args))
        elif isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and not it.keywords and \
                resolve(it.func.id) is builtins.enumerate and len(it.args) == 1 and \
                isinstance(it.args[0], ast.Call) and isinstance(it.args[0].func, ast.Name) and \
                resolve(it.args[0].func.id) is builtins.zip and not it.args[0].keywords and \
                isinstance(target, ast.Tuple) and len(target.elts) == 2 and isinstance(target.elts[0], ast.Name) and \
                isinstance(target.elts[1], ast.Tuple) and len(target.elts[1].elts) == len(it.args[0].args) >= 1 and \
                all(isinstance(t, ast.Name) for t in target.elts[1].elts) and \
                all(isinstance(a, ast.Name) for a in it.args[0].args):
            # `for i, (a, b) in enumerate(zip(x, y))`
            index, pairs = target.elts[0], list(zip(target.elts[1].elts, it.args[0].args))
        if pairs is None or any(resolve(x.id) is not None for _, x in pairs):
            continue
        # (Python steps through the object it was given: a name bound again in the body would
        # make `x[k]` read another; an update in place, `x += 1.0`, it sees as numpy does)
        iterated = {x.id for _, x in pairs}
        if any(isinstance(t, ast.Name) and t.id in iterated for n in ast.walk(loop) if n is not loop
               for t, _ in aliases.bindings(n)) or \
                any(isinstance(n, ast.For) and n is not loop and isinstance(n.target, ast.Name) and
                    n.target.id in iterated for n in ast.walk(loop)):
            continue
        k = index.id if index is not None else f"eqsat_it{count}"
        count += 1
        first = pairs[0][1]
        loop.target = ast.copy_location(ast.Name(id=k, ctx=ast.Store()), target)
        loop.iter = ast.copy_location(ast.Call(func=ast.Name(id="range", ctx=ast.Load()), args=[ast.Call(
            func=ast.Name(id="len", ctx=ast.Load()), args=[ast.Name(id=first.id, ctx=ast.Load())], keywords=[])],
            keywords=[]), it)
        binds = [ast.Assign(targets=[ast.Name(id=t.id, ctx=ast.Store())], value=ast.Subscript(
            value=ast.Name(id=x.id, ctx=ast.Load()), slice=ast.Name(id=k, ctx=ast.Load()), ctx=ast.Load()))
            for t, x in pairs]
        for b in binds:
            for sub in ast.walk(b):
                ast.copy_location(sub, target)
        loop.body = binds + loop.body


def _last_values(fdef, sizes: set, resolve) -> None:
    """A loop variable read after its loop (`for i in range(N): ...` then `y[0] = x[i] *
    i`) is its last value there, as in Python: the loop is followed by `assert` that it ran
    (where it runs none Python reads what the name was before it, unbound or an earlier
    iteration's value: refused at those sizes) and
    `eqsat_last_i = <its last value>`, which the later reads of the block read instead.
    For `range` of one to three arguments of sizes, loop variables around it and integer
    literals (a step a nonzero literal), where nothing later in the block binds the name."""
    count = [0]

    def plain(e, around) -> bool:
        """`e` is made of sizes, the loop variables around, int literals, + - * // and
        negation, `x.shape[k]` and `len(x)`."""
        arrays = {x.value.id for x in ast.walk(e) if isinstance(x, ast.Attribute) and x.attr == "shape" and
                  isinstance(x.value, ast.Name)}
        for x in ast.walk(e):
            if isinstance(x, ast.Call):
                if not (isinstance(x.func, ast.Name) and resolve(x.func.id) is len and len(x.args) == 1 and
                        isinstance(x.args[0], ast.Name) and not x.keywords):
                    return False
                arrays.add(x.args[0].id)
        for x in ast.walk(e):
            if isinstance(x, ast.Name) and not (x.id in sizes or x.id in around or x.id in arrays or
                                                resolve(x.id) is len):
                return False
            if isinstance(x, ast.Constant) and type(x.value) is not int or \
                    isinstance(x, ast.BinOp) and not isinstance(x.op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv)) or \
                    isinstance(x, ast.UnaryOp) and not isinstance(x.op, ast.USub) or \
                    isinstance(x, (ast.Compare, ast.BoolOp, ast.IfExp, ast.Lambda)):
                return False
        return True

    def last(loop, around):
        """(the condition that the loop runs, its variable's last value) as expressions, or None."""
        it = loop.iter
        if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and resolve(it.func.id) is range and
                not it.keywords and 1 <= len(it.args) <= 3 and all(plain(a, around) for a in it.args)):
            return None
        args = [copy.deepcopy(a) for a in it.args]
        start, stop = (ast.Constant(0), args[0]) if len(args) == 1 else (args[0], args[1])
        step = 1
        if len(args) == 3:
            step = _number(args[2])
            if type(step) is not int or step == 0:
                return None
        # the loop runs where it moves from start toward stop; its last value is start moved
        # by the whole steps that fit (`stop - 1` for a step of 1)
        far, near = (stop, start) if step > 0 else (start, stop)
        runs = ast.Compare(left=copy.deepcopy(far), ops=[ast.Gt()], comparators=[copy.deepcopy(near)])
        if step == 1:
            value = ast.BinOp(copy.deepcopy(stop), ast.Sub(), ast.Constant(1))
        else:
            span = ast.BinOp(ast.BinOp(copy.deepcopy(far), ast.Sub(), copy.deepcopy(near)), ast.Sub(), ast.Constant(1))
            moved = ast.BinOp(ast.BinOp(span, ast.FloorDiv(), ast.Constant(abs(step))), ast.Mult(), ast.Constant(abs(step)))
            value = ast.BinOp(copy.deepcopy(start), ast.Add() if step > 0 else ast.Sub(), moved)
        return runs, value

    def block(stmts: list, around: set) -> list:
        out = []
        for k, st in enumerate(stmts):
            for field, inner in (("body", around | ({st.target.id} if isinstance(st, ast.For) and
                                                     isinstance(st.target, ast.Name) else set())),
                                 ("orelse", around)):
                if isinstance(st, (ast.For, ast.If, ast.While)) and getattr(st, field, None):
                    setattr(st, field, block(getattr(st, field), inner))
            out.append(st)
            if not (isinstance(st, ast.For) and isinstance(st.target, ast.Name) and not st.orelse):
                continue
            name, rest = st.target.id, stmts[k + 1:]
            reads = any(isinstance(x, ast.Name) and x.id == name and isinstance(x.ctx, ast.Load)
                        for r in rest for x in ast.walk(r))
            binds = any(isinstance(x, ast.Name) and x.id == name and not isinstance(x.ctx, ast.Load)
                        for r in rest for x in ast.walk(r))
            got = last(st, around) if reads and not binds else None
            if got is None:
                continue
            runs, value = got
            new = f"eqsat_last_{name}{count[0]}"
            count[0] += 1
            check = ast.Assert(test=runs, msg=ast.Constant(
                f"loop variable {name!r} is read after its loop, which runs no iteration here: Python would "
                f"read what it was before the loop (unbound, or an earlier iteration's value), which eqsat does "
                f"not follow"))
            bind = ast.Assign(targets=[ast.Name(id=new, ctx=ast.Store())], value=value)
            for x in (check, bind):
                for sub in ast.walk(x):
                    ast.copy_location(sub, st)
            out += [check, bind]
            for r in rest:
                _Renamed({name: new}).visit(r)
        return out

    fdef.body = block(fdef.body, set())
    ast.fix_missing_locations(fdef)


def _check_mask_reads(fdef, env) -> None:
    """A name bound to a mask (`_Env._bind_mask`) holds 1.0 and 0.0: it reads as numpy's
    bools where it is a condition (an index, np.where's, `if`, `&`, `|`, `~`, and, or,
    not), a factor under `*`, or summed (a count); elsewhere (True + True is True in numpy,
    a returned mask is of bools) it is marked refused, with why."""
    parents = {c: x for x in ast.walk(fdef) for c in ast.iter_child_nodes(x)}
    combining = (ast.BoolOp, ast.UnaryOp)
    for n in ast.walk(fdef):
        if not (isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in env.masks):
            continue
        x, up = n, parents.get(n)
        if isinstance(up, ast.Subscript) and up.value is x:  # (an element: `m[i]`)
            x, up = up, parents.get(up)
        while isinstance(up, combining) or (isinstance(up, ast.BinOp) and isinstance(up.op, (ast.BitAnd, ast.BitOr))):
            x, up = up, parents.get(up)
        ok = (isinstance(up, ast.Subscript) and up.slice is x) or \
            (isinstance(up, (ast.If, ast.While, ast.IfExp, ast.Assert)) and up.test is x) or \
            (isinstance(up, ast.BinOp) and isinstance(up.op, ast.Mult)) or \
            (isinstance(up, ast.Call) and up.args and up.args[0] is x and env.callee(up.func) in REDUCTIONS) or \
            (isinstance(up, ast.Attribute) and up.value is x and up.attr in METHODS)
        if not ok:
            n.eqsat_why = (f"{n.id!r} is a mask (of numpy's bools): it is read as a condition (an index, "
                           f"np.where's, `&`, `|`, `~`), under `*` or summed; numpy's bool arithmetic is not a "
                           f"number's (True + True is True): write np.where({n.id}, 1.0, 0.0) for numbers")


class _Renamed(ast.NodeTransformer):
    """Names renamed (`rename`), and reads of names replaced by expressions (`exprs`)."""

    def __init__(self, rename: dict, exprs: dict | None = None):
        self.rename, self.exprs = rename, exprs or {}

    def visit_Name(self, n):
        if n.id in self.exprs and isinstance(n.ctx, ast.Load):
            return ast.copy_location(copy.deepcopy(self.exprs[n.id]), n)
        if n.id in self.rename:
            return ast.copy_location(ast.Name(id=self.rename[n.id], ctx=n.ctx), n)
        return n


def _clip_keywords(n: ast.Call, first: int) -> None:
    """`np.clip(a, min=lo)`, `x.clip(max=hi)` (numpy's keywords: `min`/`max`, or
    `a_min`/`a_max`) in place as the positional call (an absent bound None); keywords of
    other names are left for the front end to refuse."""
    names = {"min": 0, "a_min": 0, "max": 1, "a_max": 1}
    if any(k.arg not in names for k in n.keywords) or len(n.args) > first + 2 or (first and len(n.args) > first):
        return  # (np.clip with a bound given by position takes both so: numpy's TypeError otherwise)
    bounds = list(n.args[first:]) + [ast.Constant(None)] * (2 - len(n.args[first:]))
    for k in n.keywords:
        at = names[k.arg]
        if at < len(n.args) - first:
            return  # (given twice: Python's TypeError, refused as written)
        bounds[at] = k.value
    n.args = list(n.args[:first]) + bounds
    n.keywords = []


def _width(lo, hi) -> int | None:
    """c where `hi` is `lo + c` or `c + lo` (c a positive integer constant), else None."""
    if isinstance(hi, ast.BinOp) and isinstance(hi.op, ast.Add):
        for a, b in ((hi.left, hi.right), (hi.right, hi.left)):
            c = _number(b)
            if type(c) is int and c > 0 and ast.dump(a) == ast.dump(lo):
                return c
    return None
