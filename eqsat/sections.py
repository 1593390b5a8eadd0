"""Numpy's basic slices, `a[:, k]`, `a[1:-1]`, `x[:i]`, `a[::2]`, `a.T[k]` (array sections),
rewritten into the language's forms before the front end reads them (a part of
`eqsat/desugar.py`'s pass):

- a store into a section, `q[:, k] = a[:, k] / nrm` or `a[1:-1] += e`, is a loop nest over
  the section's axes storing each element (numpy's right-aligned broadcasting: a scalar, or
  a value of the section's trailing axes); where the value reads the memory it writes other
  than at the element stored (`a[1:] = a[:-1]`), the value is computed into a new buffer
  first, as numpy computes the right-hand side before storing;
- `y = e` where `e` is a tensor expression over sections is `y = zeros(shape)` and the loop
  nest storing each element of `e`; `y = a[:, k]` alone is a view in numpy: taken as a copy
  only where neither `y` nor the memory it views is written anywhere in the function
  (else left for the front end to refuse, with the reason);
- `u @ v` over sections is the sum of products (a dot product, a row of a matrix-vector
  product: an accumulator loop where its element is needed); other tensor expressions over
  sections are computed into a new buffer just before the statement that reads them;
- `np.sum(e)`, `np.max(e)`, ... of such an expression index it element by element
  (`eqsat/reductions.py`, through `element`).

Slice bounds are checked first (`eqsat/slice_bounds.py`).
"""
from __future__ import annotations

import ast
import contextvars
import copy

from . import aliases, lang
from .hoisting import Hoisting
from .names import LIB, SCALAR
from .slice_bounds import affine, canonical, elts as _elts, minus as _minus, negative_constant, plus as _plus, \
    step as _step

SEC = "eqsat_sec"  # prefix of this pass's names


class NotElementwise(Exception):
    """The expression cannot be read element by element here (left as written)."""


def subscript(name: str, idx: list, ctx=None):
    """`name[i]` or `name[i, j, ...]` (copies of the indices)."""
    idx = [copy.deepcopy(i) for i in idx]
    return ast.Subscript(value=ast.Name(id=name, ctx=ast.Load()),
                         slice=idx[0] if len(idx) == 1 else ast.Tuple(elts=idx, ctx=ast.Load()), ctx=ctx or ast.Load())


def self_update(target, value):
    """`t = t op e` (and `t = e + t`, `t = e * t`) as (the augmented op, e); else (None, value)."""
    if not isinstance(value, ast.BinOp):
        return None, value
    same = lambda x: ast.dump(x, annotate_fields=False).replace("Load()", "Store()") == \
        ast.dump(target, annotate_fields=False).replace("Load()", "Store()")  # noqa: E731
    op = type(value.op)
    if op in (ast.Add, ast.Sub, ast.Mult, ast.Div) and same(value.left):
        return op, value.right
    if op in (ast.Add, ast.Mult) and same(value.right):
        return op, value.left
    return None, value


# ---------------------------------------------------------------------- sections


class Section:
    """A subscript read as a section of a named tensor: per axis of the tensor, ("at", index)
    or ("range", start, step, extent) (step -1: from the end), and ("new",) where `None`
    adds an axis of one element."""

    def __init__(self, base: str, axes: list, f32: bool):
        self.base, self.axes, self.f32 = base, axes, f32

    @property
    def dims(self) -> list:
        return [a[3] if a[0] == "range" else ast.Constant(1) for a in self.axes if a[0] != "at"]

    def starts(self) -> list:
        """Per axis of the section, the first index of a step-1 range (else None)."""
        return [a[1] if a[0] == "range" and a[2] == 1 else None for a in self.axes if a[0] != "at"]

    def at(self, use: list, ctx=None):
        """The element at `use` (one index expression per axis of the section)."""
        it = iter(use)
        idx = []
        for a in self.axes:
            if a[0] == "at":
                idx.append(copy.deepcopy(a[1]))
                continue
            if a[0] == "new":
                next(it)
                continue
            _, start, step, extent = a
            u = copy.deepcopy(next(it))
            if step == -1:  # start is the axis' extent
                idx.append(canonical(ast.BinOp(left=ast.BinOp(left=copy.deepcopy(start), op=ast.Sub(),
                                                              right=ast.Constant(1)), op=ast.Sub(), right=u)))
                continue
            if step != 1:
                u = ast.BinOp(left=ast.Constant(step), op=ast.Mult(), right=u)
            idx.append(_plus(start, u) if not (isinstance(start, ast.Constant) and start.value == 0) else u)
        return subscript(self.base, idx, ctx)


def parse(sub, env):
    """`sub` (a subscript) as a `Section`, or None: a subscript with a slice (or an
    incomplete index of a transposed view, `t[k]` where `t = a.T`) of a named tensor of known
    shape, every slice of a supported form (`check_bounds` passed it)."""
    if not isinstance(sub, ast.Subscript) or getattr(sub, "eqsat_why", None):
        return None
    v, elts = sub.value, _elts(sub.slice)
    if isinstance(v, ast.Subscript) and isinstance(v.value, ast.Name) and \
            not any(isinstance(x, ast.Slice) for x in _elts(v.slice)) and not getattr(v, "eqsat_why", None):
        elts = _elts(v.slice) + elts  # (`A[i][1:]`)
        v = v.value
    transposed = False
    if isinstance(v, ast.Attribute) and v.attr == "T" and isinstance(v.value, ast.Name):
        v, transposed = v.value, True
    elif isinstance(v, ast.Name) and v.id in env.transposed_views():
        v, transposed = env.transposed_views()[v.id], True
    if not isinstance(v, ast.Name) or v.id not in env.shapes:
        return None
    if any(isinstance(x, ast.Starred) or (isinstance(x, ast.Constant) and x.value is Ellipsis) for x in elts):
        return None  # (`a[..., 0]`: not read here)
    new = [isinstance(x, ast.Constant) and x.value is None for x in elts]  # `a[:, None]`: an axis of one
    if transposed and any(new):
        return None
    dims, f32 = env.shapes[v.id]
    rank = len(dims)
    taken = len(elts) - sum(new)
    if taken > rank or not (any(isinstance(x, ast.Slice) for x in elts) or any(new) or
                            (transposed and len(elts) < rank)):
        return None
    elts = elts + [ast.Slice(lower=None, upper=None, step=None) for _ in range(rank - taken)]
    if transposed:
        elts = list(reversed(elts))
    axes = []
    d = -1
    for x in elts:
        if isinstance(x, ast.Constant) and x.value is None:
            axes.append(("new",))
            continue
        d += 1
        D = dims[d]
        if not isinstance(x, ast.Slice):
            k = negative_constant(x)
            axes.append(("at", canonical(ast.BinOp(left=copy.deepcopy(D), op=ast.Add(), right=ast.Constant(k)))
                         if k is not None else x))
            continue
        step = _step(x)
        if step is None or (step == -1 and (x.lower is not None or x.upper is not None)):
            return None

        def bound(b, default):
            if b is None:
                return copy.deepcopy(default)
            k = negative_constant(b)
            if k is not None:
                return canonical(ast.BinOp(left=copy.deepcopy(D), op=ast.Add(), right=ast.Constant(k)))
            from .desugar import _Renamed

            return canonical(_Renamed({}, env.size_locals).visit(copy.deepcopy(b)))  # (`k = N - 3; x[:k]`)

        if step == -1:
            axes.append(("range", copy.deepcopy(D), -1, canonical(D)))
            continue
        lo, hi = bound(x.lower, ast.Constant(0)), bound(x.upper, D)
        extent = _minus(hi, lo)
        if step > 1:
            extent = ast.BinOp(left=_plus(extent, ast.Constant(step - 1)), op=ast.FloorDiv(),
                               right=ast.Constant(step))
        axes.append(("range", lo, step, extent))
    if transposed:  # (the section's axes are the view's: the tensor's range axes reversed)
        n = sum(a[0] == "range" for a in axes)
        return _Reordered(v.id, axes, f32, list(reversed(range(n))))
    return Section(v.id, axes, f32)


class _Reordered(Section):
    """A section of a transposed view: its axes are the tensor's in another order."""

    def __init__(self, base, axes, f32, order):
        super().__init__(base, axes, f32)
        self.order = order  # section axis k is the tensor's range axis order[k]

    @property
    def dims(self) -> list:
        ranges = [a[3] for a in self.axes if a[0] == "range"]
        return [ranges[self.order[k]] for k in range(len(ranges))]

    def starts(self) -> list:
        ranges = [a[1] if a[2] == 1 else None for a in self.axes if a[0] == "range"]
        return [ranges[self.order[k]] for k in range(len(ranges))]

    def at(self, use: list, ctx=None):
        ordered = [None] * len(use)
        for k, u in enumerate(use):
            ordered[self.order[k]] = u
        return super().at(ordered, ctx)


def contains_section(e, env) -> bool:
    """Whether `e` reads a section, an outer product, np.flip or np.where of tensors (read
    element by element here)."""
    return any((isinstance(x, ast.Subscript) and parse(x, env) is not None) or outer_of(x, env) is not None or
               flips(x, env) or (is_where(x) and env.value_shape(x) not in (None, SCALAR)) or
               triangle_of(x, env) is not None for x in ast.walk(e))


def is_where(e) -> bool:
    """`np.where(c, a, b)`, which desugar reads as `a if c else b` marked `eqsat_where`."""
    return isinstance(e, ast.IfExp) and getattr(e, "eqsat_where", False)


def flips(e, env) -> bool:
    """`np.flip(x)`, or `np.flip(x, axis)` (an int or a tuple of them, or `axis=`)."""
    import numpy as np

    return isinstance(e, ast.Call) and 1 <= len(e.args) <= 2 and env.callee(e.func) is np.flip and \
        all(k.arg == "axis" for k in e.keywords) and len(e.args) + len(e.keywords) <= 2


def flip_axes(e, rank: int):
    """The axes `np.flip` call `e` reverses (every one without an axis), or None where its
    axis is not constant ints."""
    from .desugar import reduced_axes

    axis = e.args[1] if len(e.args) == 2 else next((k.value for k in e.keywords), None)
    got = reduced_axes(axis, rank)
    return None if got is False else frozenset(range(rank)) if got is None else got


def outer_of(e, env):
    """For `np.outer(u, v)` or `np.add.outer(u, v)` (multiply, subtract, divide, maximum,
    minimum alike) of vectors: `(x, y) -> syntax of x (op) y`; else None."""
    import numpy as np

    if not (isinstance(e, ast.Call) and len(e.args) == 2 and not e.keywords):
        return None
    f = e.func
    if env.callee(f) is np.outer:
        return lambda x, y: ast.BinOp(left=x, op=ast.Mult(), right=y)
    if isinstance(f, ast.Attribute) and f.attr == "outer":
        uf = env.callee(f.value)
        ops = {np.add: ast.Add, np.subtract: ast.Sub, np.multiply: ast.Mult, np.divide: ast.Div,
               np.true_divide: ast.Div}
        if uf in ops:
            return lambda x, y, op=ops[uf]: ast.BinOp(left=x, op=op(), right=y)
        if uf in (np.maximum, np.minimum):
            name = LIB + ("maximum" if uf is np.maximum else "minimum")
            return lambda x, y: ast.Call(func=ast.Name(id=name, ctx=ast.Load()), args=[x, y], keywords=[])
    return None


def triangle_of(e, env):
    """np.diag(x), np.tril(x, k), np.triu(x, k) (k a constant, 0 by default): (name, x, k),
    else None. Read element by element (`Elements.element`): diag of a vector is the
    matrix with it on the diagonal, of a square matrix its diagonal (a view in numpy,
    `_viewing_call`); tril and triu keep the elements on and below (above) diagonal k."""
    import numpy as np

    if not (isinstance(e, ast.Call) and e.args):
        return None
    obj = env.callee(e.func)
    name = {np.diag: "diag", np.tril: "tril", np.triu: "triu"}.get(obj)
    if name is None or len(e.args) > (1 if name == "diag" else 2) or \
            any(k.arg != "k" or name == "diag" for k in e.keywords):
        return None
    k = e.args[1] if len(e.args) == 2 else e.keywords[0].value if e.keywords else ast.Constant(0)
    k = negative_constant(k) if negative_constant(k) is not None else \
        k.value if isinstance(k, ast.Constant) and type(k.value) is int else None
    return None if k is None else (name, e.args[0], k)


def _one(d) -> bool:
    return isinstance(d, ast.Constant) and d.value == 1 and type(d.value) is int


# extents taken as equal though not told so (`maybe_same`), while a function is desugared
ASSUMED: contextvars.ContextVar = contextvars.ContextVar("eqsat_assumed_extents", default=None)


def maybe_same(x, y) -> bool:
    """Whether extents `x` and `y` are the same: told so (`same_dims`), or, while a function
    is desugared, equal at some sizes as far as can be told where one of them is computed
    (`x[::2]` has `(D + 1) // 2` elements, a table `D2`): that pair is then recorded in
    `ASSUMED`, and `desugar.rewrite` asserts it at the top of the function, so `optimize()`
    at sizes where they differ raises, naming it, as numpy would refuse to broadcast."""
    if same_dims([x], [y]):
        return True
    got = ASSUMED.get()
    simple = (ast.Name, ast.Constant)
    if got is None or (isinstance(x, simple) and isinstance(y, simple)):
        return False
    if isinstance(canonical(x), ast.Constant) and isinstance(canonical(y), ast.Constant):
        return False  # (two numbers that differ)
    got.append((x, y))
    return True


def broadcast(a: list, b: list):
    """numpy's broadcast of extents `a` and `b` (from the right; an extent of literal 1, or a
    missing axis, takes the other), else None where they are not told to agree."""
    n = max(len(a), len(b))
    a = [ast.Constant(1)] * (n - len(a)) + list(a)
    b = [ast.Constant(1)] * (n - len(b)) + list(b)
    out = []
    for x, y in zip(a, b):
        if _one(y) or maybe_same(x, y):
            out.append(x)
        elif _one(x):
            out.append(y)
        else:
            return None
    return out


def same_dims(a: list, b: list) -> bool:
    return len(a) == len(b) and all(ast.dump(canonical(x)) == ast.dump(canonical(y)) for x, y in zip(a, b))


def _elementwise_fn(env, f) -> bool:
    from .desugar import library_name

    if isinstance(f, ast.Name):
        if library_name(f.id) in lang.UNARY or library_name(f.id) in lang.BINARY:
            return True
        obj = env.resolve(f.id)
        return any(obj is g for g in (*lang.UNARY.values(), *lang.BINARY.values()))
    return False


_OPS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow)


class Elements:
    """Fresh names, and `element`: an expression's element at given indices."""

    def __init__(self, env):
        self.env = env
        self.count = 0

    def fresh(self, what: str) -> str:
        self.count += 1
        return f"{SEC}{self.count}_{what}"

    def element(self, e, use: list, pre: list, dims: list | None = None):
        """The element of tensor expression `e` at `use` (index syntax, right-aligned: numpy's
        broadcasting over axes of the same extent), with statements that must run just
        before it appended to `pre`. `dims`, where given, are the extents of `use`'s axes:
        each operand's must be the same as the trailing ones (else numpy raises). Raises
        NotElementwise."""
        env = self.env
        if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Pow) and isinstance(e.right, ast.Constant) and \
                e.right.value == 0.5 and env.value_shape(e.left) not in (None, SCALAR):
            # (numpy's power of an array by 0.5 is its sqrt: nan at -inf, -0.0 at -0.0, where a
            # scalar's `** 0.5` is C's pow, inf and 0.0)
            return ast.Call(func=ast.Name(id=LIB + "sqrt", ctx=ast.Load()),
                            args=[self.element(e.left, use, pre, dims)], keywords=[])
        if isinstance(e, ast.BinOp) and isinstance(e.op, _OPS):  # (its shape: its operands')
            return ast.BinOp(left=self.element(e.left, use, pre, dims), op=e.op,
                             right=self.element(e.right, use, pre, dims))
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, (ast.USub, ast.UAdd)):
            return ast.UnaryOp(op=e.op, operand=self.element(e.operand, use, pre, dims))
        if isinstance(e, ast.Call) and not e.keywords and _elementwise_fn(env, e.func):
            return ast.Call(func=copy.deepcopy(e.func), args=[self.element(a, use, pre, dims) for a in e.args],
                            keywords=[])
        if is_where(e):  # np.where(c, a, b): numpy's select, element by element
            return ast.IfExp(test=self.truth(e.test, use, pre, dims), body=self.element(e.body, use, pre, dims),
                             orelse=self.element(e.orelse, use, pre, dims))
        got = env.value_shape(e)
        if got is SCALAR:
            return copy.deepcopy(e)
        if got is None or len(got[0]) > len(use):
            raise NotElementwise
        rank = len(got[0])
        use = use[len(use) - rank:]
        if dims is not None:  # (an axis of one element broadcast: its index is 0)
            want = dims[len(dims) - rank:]
            if any(not (_one(g) or maybe_same(g, w)) for g, w in zip(got[0], want)):
                raise NotElementwise
            use = [ast.Constant(0) if _one(g) and not same_dims([g], [w]) else u for g, w, u in zip(got[0], want, use)]
        sec = parse(e, env) if isinstance(e, ast.Subscript) else None
        if sec is not None:
            return sec.at(use)
        if isinstance(e, ast.Name):
            return subscript(e.id, use)
        if isinstance(e, ast.Subscript) and isinstance(e.value, ast.Name) and \
                not any(isinstance(x, ast.Slice) for x in ast.walk(e.slice)):
            elts = _elts(e.slice) + [copy.deepcopy(u) for u in use]  # a row: `x[i]`
            return ast.Subscript(value=copy.deepcopy(e.value), slice=ast.Tuple(elts=elts, ctx=ast.Load()),
                                 ctx=ast.Load())
        if isinstance(e, ast.Attribute) and e.attr == "T":
            return self.element(e.value, list(reversed(use)), pre, list(reversed(got[0])))
        if isinstance(e, ast.BinOp) and isinstance(e.op, ast.MatMult):
            return self.product(e, use, pre)
        if flips(e, env):  # np.flip(x): x[d - 1 - i, ...] on the axes it reverses
            axes = flip_axes(e, rank)
            if axes is None:
                raise NotElementwise
            back = [canonical(ast.BinOp(left=ast.BinOp(left=copy.deepcopy(d), op=ast.Sub(), right=ast.Constant(1)),
                                        op=ast.Sub(), right=copy.deepcopy(u))) if k in axes else u
                    for k, (d, u) in enumerate(zip(got[0], use))]
            return self.element(e.args[0], back, pre, got[0])
        tri = triangle_of(e, env)
        if tri is not None:
            what, x, k = tri
            inner = env.value_shape(x)
            if what == "diag" and rank == 1:  # (of a square matrix: its diagonal)
                return self.element(x, [use[0], copy.deepcopy(use[0])], pre, inner[0])
            i, j = use
            if what == "diag":  # (of a vector: a matrix, the vector on its diagonal)
                test = ast.Compare(left=copy.deepcopy(i), ops=[ast.Eq()], comparators=[copy.deepcopy(j)])
                return ast.IfExp(test=test, body=self.element(x, [i], pre, inner[0]), orelse=ast.Constant(0.0))
            diff = ast.BinOp(left=copy.deepcopy(j), op=ast.Sub(), right=copy.deepcopy(i))
            test = ast.Compare(left=diff, ops=[ast.LtE() if what == "tril" else ast.GtE()],
                               comparators=[ast.Constant(k)])
            return ast.IfExp(test=test, body=self.element(x, [i, j], pre, inner[0]), orelse=ast.Constant(0.0))
        combine = outer_of(e, env)
        if combine is not None:  # np.outer(u, v)[i, j] = u[i] * v[j] (of vectors)
            return combine(self.element(e.args[0], use[:1], pre, got[0][:1]),
                           self.element(e.args[1], use[1:], pre, got[0][1:]))
        raise NotElementwise

    def truth(self, e, use: list, pre: list, dims: list | None = None):
        """The element at `use` of a condition over tensors (`element`'s arguments): a
        comparison, `&`, `|`, `~` (and, or, not: both sides are pure), `and`/`or`/`not`,
        or a number (its truth, as numpy's np.where reads it)."""
        if isinstance(e, ast.BoolOp):
            return ast.BoolOp(op=e.op, values=[self.truth(v, use, pre, dims) for v in e.values])
        if isinstance(e, ast.BinOp) and isinstance(e.op, (ast.BitAnd, ast.BitOr)):
            op = ast.And() if isinstance(e.op, ast.BitAnd) else ast.Or()
            return ast.BoolOp(op=op, values=[self.truth(e.left, use, pre, dims), self.truth(e.right, use, pre, dims)])
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, (ast.Invert, ast.Not)):
            return ast.UnaryOp(op=ast.Not(), operand=self.truth(e.operand, use, pre, dims))
        if isinstance(e, ast.Compare):
            return ast.Compare(left=self.element(e.left, use, pre, dims), ops=e.ops,
                               comparators=[self.element(c, use, pre, dims) for c in e.comparators])
        return self.element(e, use, pre, dims)

    def product(self, e, use: list, pre: list):
        """Element `use` of `a @ b` (one or two axes each, or batch axes before the last two:
        the same on both operands, or on one only, as the front end reads `@`): an
        accumulator over the shared axis."""
        a, b = self.env.value_shape(e.left), self.env.value_shape(e.right)
        if a is None or b is None or a is SCALAR or b is SCALAR or not a[0] or not b[0]:
            raise NotElementwise
        k = self.fresh("k")
        kv = ast.Name(id=k, ctx=ast.Load())
        if len(a[0]) > 2 or len(b[0]) > 2:  # (batch axes: `(B, M, K) @ (K, N)`)
            ba, bb = a[0][:-2], b[0][:-2]
            if len(a[0]) < 2 or len(b[0]) < 2 or (ba and bb and (len(ba) != len(bb) or not same_dims(ba, bb))) or \
                    not same_dims([a[0][-1]], [b[0][-2]]):
                raise NotElementwise
            batch, (i, j) = list(use[:len(ba or bb)]), use[len(ba or bb):]
            x_use = (copy.deepcopy(batch) if ba else []) + [i, kv]
            y_use = (copy.deepcopy(batch) if bb else []) + [kv, j]
        else:
            if not same_dims([a[0][-1]], [b[0][0]]):
                raise NotElementwise
            ra = len(a[0]) - 1
            x_use, y_use = list(use[:ra]) + [kv], [kv] + list(use[ra:])
        acc = self.fresh("dot")
        inner: list = []
        x = self.element(e.left, x_use, inner, a[0])
        y = self.element(e.right, y_use, inner, b[0])
        step = ast.AugAssign(target=ast.Name(id=acc, ctx=ast.Store()), op=ast.Add(),
                             value=ast.BinOp(left=x, op=ast.Mult(), right=y))
        loop = ast.For(target=ast.Name(id=k, ctx=ast.Store()),
                       iter=ast.Call(func=ast.Name(id="range", ctx=ast.Load()), args=[copy.deepcopy(a[0][-1])],
                                     keywords=[]),
                       body=inner + [step], orelse=[])
        pre += [ast.Assign(targets=[ast.Name(id=acc, ctx=ast.Store())], value=ast.Constant(0.0)), loop]
        self.env.scalars.add(acc)
        return ast.Name(id=acc, ctx=ast.Load())

    def loops(self, dims: list, body_of, starts: list | None = None):
        """A loop nest over `dims` (fresh variables); `body_of(indices) -> statements`, each
        index counting from 0. Where `starts` gives an axis a start, its loop runs over
        range(start, start + extent) and its index is `v - start`: a store into `a[i:, k]`
        then stores at the loop's own variable (`a[v, k]`), the form the loop-nest rules read."""
        starts = starts or [None] * len(dims)
        names = [self.fresh("i") for _ in dims]
        idx = [ast.Name(id=v, ctx=ast.Load()) if s0 is None else
               canonical(ast.BinOp(left=ast.Name(id=v, ctx=ast.Load()), op=ast.Sub(), right=copy.deepcopy(s0)))
               for v, s0 in zip(names, starts)]
        body = body_of(idx)
        for v, d, s0 in reversed(list(zip(names, dims, starts))):
            bounds = [copy.deepcopy(d)] if s0 is None or _const(s0) == 0 else [copy.deepcopy(s0), _plus(s0, d)]
            body = [ast.For(target=ast.Name(id=v, ctx=ast.Store()),
                            iter=ast.Call(func=ast.Name(id="range", ctx=ast.Load()), args=bounds,
                                          keywords=[]), body=body, orelse=[])]
        return body

    def compute(self, name: str, e, dims: list):
        """`name = zeros(dims)` and the loops storing each element of `e` into it."""
        shape = ast.Tuple(elts=[copy.deepcopy(d) for d in dims], ctx=ast.Load())
        alloc = ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())],
                           value=ast.Call(func=ast.Name(id=LIB + "zeros", ctx=ast.Load()), args=[shape], keywords=[]))

        def body(idx):
            pre: list = []
            val = self.element(e, idx, pre, dims)
            return pre + [ast.Assign(targets=[subscript(name, idx, ast.Store())], value=val)]

        return [alloc] + self.loops(dims, body)


# ---------------------------------------------------------------------- statements


def _root(v):
    """The name whose memory `v` is a view of (`x`, `x.T`, `x[i]`, `x[1:]`, transpose(x, p),
    np.flip(x)), else None."""
    return aliases.view_root(v, _viewing_call)


def _viewing_call(v) -> bool:
    """A call numpy answers with a view of its first operand: transpose (renamed by
    desugar), flip (by name: a call of that name is taken as one, which errs on the safe side)."""
    if not (isinstance(v, ast.Call) and v.args):
        return False
    f = v.func
    name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
    return name in (LIB + "transpose", "flip", "transpose", "diag")


def _targets(t) -> list:
    """The targets a (possibly tuple) target binds or stores into."""
    if isinstance(t, (ast.Tuple, ast.List)):
        return [x for e in t.elts for x in _targets(e)]
    if isinstance(t, ast.Starred):
        return _targets(t.value)
    return [t]


def _view_of(v, env):
    """Where `v` is built of names, slices, `.T`, transposes and flips only (a view in numpy)
    and holds a slice or a flip: the name whose memory it views; else None. (np.diag of a
    matrix is a view, of a vector a new matrix.)"""
    seen = False
    while True:
        if isinstance(v, ast.Name):
            return v.id if seen else None
        if isinstance(v, ast.Attribute) and v.attr == "T":
            v = v.value
        elif isinstance(v, ast.Subscript):
            seen = seen or parse(v, env) is not None
            v = v.value
        elif _viewing_call(v):
            tri = triangle_of(v, env)
            if tri is not None:
                got = env.value_shape(tri[1])
                if got is None or got is SCALAR or len(got[0]) != 2:
                    return None  # (of a vector: new memory)
            seen = True
            v = v.args[0]
        else:
            return None


def _axes_of(sub, env):
    """Per axis of the tensor `sub` names (not a view), the indices it reads: ("at", e) or
    ("range", lo, step, extent); None where not told."""
    if isinstance(sub.value, ast.Name) and sub.value.id in env.transposed_views():
        return None
    sec = parse(sub, env)
    if sec is not None:
        return None if isinstance(sec, _Reordered) else [a for a in sec.axes if a[0] != "new"]
    if not isinstance(sub.value, ast.Name) or any(isinstance(x, ast.Slice) for x in ast.walk(sub.slice)):
        return None
    return [("at", x) for x in _elts(sub.slice)]


def _const(e):
    """The integer `e` is, or None."""
    a = affine(e)
    return a.get("", 0) if a is not None and set(a) <= {""} else None


def _apart(a, b) -> bool:
    """Whether two axes' index sets (`_axes_of`) are provably disjoint."""
    def span(x):  # (lo, hi) of a step-1 range, or the index twice
        if x[0] == "at":
            return x[1], _plus(x[1], ast.Constant(1))
        return (x[1], _plus(x[1], x[3])) if x[2] == 1 else (None, None)

    (lo1, hi1), (lo2, hi2) = span(a), span(b)
    if lo1 is None or lo2 is None:
        return False
    c1, c2 = _const(_minus(hi1, lo2)), _const(_minus(hi2, lo1))
    return (c1 is not None and c1 <= 0) or (c2 is not None and c2 <= 0)


def is_mask(e, names=frozenset()) -> bool:
    """A boolean mask: comparisons, the `names` bound to masks, and `&`, `|`, `~` (and, or,
    not) of them."""
    if isinstance(e, ast.Compare):
        return True
    if isinstance(e, ast.Name):
        return e.id in names
    if isinstance(e, ast.BoolOp):
        return all(is_mask(v, names) for v in e.values)
    if isinstance(e, ast.BinOp) and isinstance(e.op, (ast.BitAnd, ast.BitOr)):
        return is_mask(e.left, names) and is_mask(e.right, names)
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, (ast.Invert, ast.Not)):
        return is_mask(e.operand, names)
    return False


class _Replaced(ast.NodeTransformer):
    """Nodes replaced by others, by identity (`{id(node): replacement}`)."""

    def __init__(self, by_id: dict):
        self.by_id = by_id

    def visit(self, node):
        got = self.by_id.get(id(node))
        return copy.deepcopy(got) if got is not None else super().visit(node)


class Scalarize(Hoisting):
    """The statements of the module docstring, in a function's body (`block`)."""

    def __init__(self, env, fdef: ast.FunctionDef):
        super().__init__()
        self.env, self.el = env, env.elements
        # which names share memory, and which memory statements write
        self.memory = aliases.Memory(fdef, _viewing_call)
        self.fdef = fdef
        self.order: dict = {}  # statement -> its place in the function, in order
        self.loops_of: dict = {}  # statement -> the loops around it
        self._statements: list = []
        self._number(fdef.body, ())

    def _number(self, stmts, loops):
        for s in stmts:
            self.order[id(s)] = len(self.order)
            self.loops_of[id(s)] = loops
            self._statements.append(s)
            for field in ("body", "orelse"):
                inner = getattr(s, field, None)
                if isinstance(inner, list):
                    self._number(inner, loops + ((s,) if isinstance(s, ast.For) else ()))

    def shared(self, name: str) -> set:
        """`name` and every name that may share its memory."""
        return self.memory.shared(name)

    # ------------------------------------------------------------------ blocks
    def block(self, stmts: list) -> list:
        out = []
        for k, s in enumerate(stmts):
            if self.through_view(s, stmts[k + 1:]):
                continue  # (its reads and writes go to the memory it views)
            if isinstance(s, ast.For):
                s.body, s.orelse = self.block(s.body), self.block(s.orelse)
                out.append(s)
                continue
            if isinstance(s, ast.If):
                s.test = self.visit(s.test)
                out += self.take()
                s.body, s.orelse = self.block(s.body), self.block(s.orelse)
                out.append(s)
                continue
            chained = self.chained(s)
            if chained is not None:  # (each store on its own, in Python's order)
                out += self.block(chained)
                continue
            new = self.statement(s)
            if new is None:
                if isinstance(s, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr, ast.Return)):
                    s = self.visit(s)
                new = [s]
            else:
                for st in new:
                    for sub in ast.walk(st):
                        ast.copy_location(sub, s)
            out += self.take() + new
        return out

    def through_view(self, s, rest: list) -> bool:
        """`t = A[::-1]` (a view with a slice or a flip, `_view_of`) that numpy's view and a
        copy would tell apart (`view_differs`: t written, or A after it), where every use of
        t comes later in the same block (`rest`): each use is rewritten onto the memory it
        views, in place, and the binding dropped (True). A use is `t` read whole, `t` updated
        whole (`t *= 2.0`, of a slice: `A[::-1] *= 2.0`), or an element of it read or stored
        (`t[k]`: `A[N - 1 - k]`). Only where t is bound once, A not bound again, the view's
        bounds read nothing but sizes and the loop variables around it, and no use is
        another form (a part of t: `t[1:]`, `t[i]` of a matrix)."""
        if not (isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name)):
            return False
        name, v = s.targets[0].id, s.value
        base = _view_of(v, self.env)
        env = self.env
        def binds(x: str) -> int:  # (`t *= 2.0` binds nothing new; `a, b = b, a` binds both)
            return sum(1 for n in ast.walk(self.fdef) for t, _ in aliases.bindings(n)
                       if isinstance(t, ast.Name) and t.id == x)

        params = {a.arg for a in self.fdef.args.args}
        if base is None or binds(name) != 1 or name in env.loopvars or \
                binds(base) > (0 if base in params else 1) or not self.view_differs(s, name, base):
            return False
        got = env.value_shape(v)
        if got is None or got is SCALAR or not got[1]:
            return False
        rank = len(got[0])
        known = env.loopvars | set(env.sizes) | set(env.size_locals) | {base}
        callees = {id(x) for c in ast.walk(v) if isinstance(c, ast.Call) for x in ast.walk(c.func)}
        if any(isinstance(x, ast.Name) and x.id not in known and id(x) not in callees for x in ast.walk(v)):
            return False
        bound_later = {t.id for st in rest for x in ast.walk(st) if isinstance(x, ast.For)
                       for t in ast.walk(x.target) if isinstance(t, ast.Name)}
        if bound_later & {x.id for x in ast.walk(v) if isinstance(x, ast.Name)}:
            return False
        uses = [x for st in rest for x in ast.walk(st) if isinstance(x, ast.Name) and x.id == name]
        if len(uses) != sum(1 for x in ast.walk(self.fdef) if isinstance(x, ast.Name) and x.id == name) - 1:
            return False  # (a use elsewhere: before it, or outside its block)
        parents = {c: x for st in rest for x in ast.walk(st) for c in ast.iter_child_nodes(x)}
        plan = []
        for u in uses:
            up = parents.get(u)
            if isinstance(up, ast.Subscript) and up.value is u:
                idx = _elts(up.slice)
                if len(idx) != rank or any(isinstance(i, (ast.Slice, ast.Starred)) for i in idx):
                    return False
                pre: list = []
                try:
                    elem = self.el.element(v, list(idx), pre)
                except NotElementwise:
                    return False
                if pre or not isinstance(elem, ast.Subscript):
                    return False
                elem.ctx = up.ctx
                plan.append((up, elem))
            elif isinstance(u.ctx, ast.Load) or (isinstance(up, ast.AugAssign) and up.target is u and
                                                  isinstance(v, ast.Subscript)):
                new = copy.deepcopy(v)
                new.ctx = u.ctx if isinstance(new, ast.Subscript) else ast.Load()
                plan.append((u, new))
            else:
                return False
        if any(not isinstance(new.ctx if hasattr(new, "ctx") else ast.Load(), ast.Load) for _, new in plan) and \
                any(triangle_of(x, env) is not None for x in ast.walk(v)):
            return False  # (numpy's diagonal view is read-only: a write raises)
        replaced = {id(old): new for old, new in plan}
        for i, st in enumerate(rest):
            rest[i] = _Replaced(replaced).visit(st) if id(st) not in replaced else st
        return True

    def chained(self, s):
        """`x[...] = y[...] = e` with a slice among the targets (covariance's `cov[i:, i] =
        cov[i, i:] = e`): one store per target, left to right, each of `e`, where `e` reads
        no memory a target writes (else None: as written)."""
        if not (isinstance(s, ast.Assign) and len(s.targets) > 1 and
                all(isinstance(t, ast.Subscript) for t in s.targets) and
                any(parse(t, self.env) is not None for t in s.targets)):
            return None
        for t in s.targets:
            root = _root(t)
            if root is None or any(isinstance(x, ast.Name) and x.id in self.shared(root) for x in ast.walk(s.value)):
                return None
        out = []
        for t in s.targets:
            out.append(ast.copy_location(ast.Assign(targets=[t], value=copy.deepcopy(s.value)), s))
        return out

    def take(self) -> list:
        pending, self.pending = self.pending, []
        return pending

    def statement(self, s):
        """`s` rewritten into statements, or None (then its expressions are visited)."""
        if isinstance(s, ast.Assign) and len(s.targets) == 1:
            target, value, op = s.targets[0], s.value, None
        elif isinstance(s, ast.AugAssign):
            target, value, op = s.target, s.value, s.op
        else:
            return None
        if isinstance(target, ast.Subscript) and is_mask(target.slice, self.env.masks):
            return self.masked(s, target, value, op)
        if isinstance(target, ast.Subscript):
            sec = parse(target, self.env)
            return None if sec is None else self.store(s, sec, target, value, op)
        if isinstance(target, ast.Name) and op is None and contains_section(value, self.env):
            update = self.self_update(target.id, value)
            if update is None:
                return self.bind(s, target.id, value)
            op, value = update
        if isinstance(target, ast.Name) and op is not None and contains_section(value, self.env):
            # `c += np.outer(u, v)` updates c in place, as `c[:, :] += ...` does: a loop nest
            # over c reading the value element by element (no buffer for it, so a loop
            # around it accumulating into c is a reduction)
            whole = self.whole_section(target.id)
            if whole is not None:
                sec, sub = whole
                return self.store(s, sec, sub, value, op)
        return None

    def self_update(self, name: str, value):
        """`c = c + e` (`e + c`, `c - e`) as (the augmented op, e) where rebinding c and
        updating it in place are alike: c is a local tensor no other name may view, and the
        value has c's shape. Else None."""
        op, e = self_update(ast.Name(id=name, ctx=ast.Store()), value)
        if op not in (ast.Add, ast.Sub) or any(isinstance(x, ast.Name) and x.id == name for x in ast.walk(e)):
            return None
        if name in {a.arg for a in self.fdef.args.args} or self.shared(name) != {name}:
            return None
        update = (op(), e)
        have, got = self.env.value_shape(ast.Name(id=name, ctx=ast.Load())), self.env.value_shape(value)
        if have is None or got is None or have is SCALAR or got is SCALAR or list(have[0]) != list(got[0]):
            return None
        return update

    def whole_section(self, name: str):
        """(the Section, the subscript) of `name[:, ..., :]` for a tensor of known rank, else None."""
        shape = self.env.value_shape(ast.Name(id=name, ctx=ast.Load()))
        if shape is None or shape is SCALAR or not shape[1] or not shape[0]:
            return None
        rank = len(shape[0])
        sub = ast.Subscript(value=ast.Name(id=name, ctx=ast.Load()),
                            slice=ast.Tuple(elts=[ast.Slice() for _ in range(rank)], ctx=ast.Load()) if rank > 1
                            else ast.Slice(), ctx=ast.Store())
        sec = parse(sub, self.env)
        return None if sec is None else (sec, sub)

    def store(self, s, sec: Section, target, value, op):
        """`x[section] (op)= value`: a loop nest over the section."""
        mark = len(self.pending)
        out = self._store(s, sec, target, self.numbers_first(value, s), op)
        if out is None:
            del self.pending[mark:]  # (as written: nothing placed before it)
        return out

    def _store(self, s, sec: Section, target, value, op):
        dims = sec.dims
        got = self.env.value_shape(value)  # (None where it broadcasts: `A[1:] + b`)
        el = self.el
        if self.keeps_matmul(value):  # the product into a buffer first (`keeps_matmul`)
            tmp = el.fresh("mm")
            assign = self.visit(ast.Assign(targets=[ast.Name(id=tmp, ctx=ast.Store())], value=value))
            self.place([assign], s, init=1)
            self.env.shapes[tmp] = got
            value = ast.Name(id=tmp, ctx=ast.Load())

        def put(idx, val):
            t = sec.at(idx, ast.Store())
            if op is None:
                return ast.Assign(targets=[t], value=val)
            return ast.AugAssign(target=t, op=op, value=val)

        try:
            if not self.reads_memory(value, sec.base, target):
                def direct(idx):
                    pre: list = []
                    val = el.element(value, idx, pre, dims)
                    return pre + [put(idx, val)]

                return el.loops(dims, direct, sec.starts())
            # numpy computes the value before it stores any of it: into a buffer of the
            # tensor's own shape, at the elements the section names (its shape is known and
            # never negative; the section's may depend on a loop or be empty)
            tmp = el.fresh("val")
            shape = ast.Tuple(elts=[copy.deepcopy(d) for d in self.env.shapes[sec.base][0]], ctx=ast.Load())
            alloc = ast.Assign(targets=[ast.Name(id=tmp, ctx=ast.Store())],
                               value=ast.Call(func=ast.Name(id=LIB + "zeros", ctx=ast.Load()), args=[shape],
                                              keywords=[]))

            def at_tmp(idx, ctx=None):
                t = sec.at(idx, ctx)
                t.value = ast.Name(id=tmp, ctx=ast.Load())
                return t

            def fill(idx):
                pre: list = []
                val = el.element(value, idx, pre, dims)
                return pre + [ast.Assign(targets=[at_tmp(idx, ast.Store())], value=val)]

            return [alloc] + el.loops(dims, fill, sec.starts()) + \
                el.loops(dims, lambda idx: [put(idx, at_tmp(idx))], sec.starts())
        except NotElementwise:
            return None

    def masked(self, s, target, value, op):
        """`x[x <= 0.1] = v` (a boolean mask of x's shape or of its leading axes, a number): a
        loop nest storing v where the mask holds. numpy evaluates both before it stores: the mask is read at the
        element it decides where it reads x only at that element (its own value, before it
        is stored), else computed whole first; v, where it reads x, is computed first."""
        x = target.value
        if not isinstance(x, ast.Name) or x.id not in self.env.shapes:
            return None
        dims = self.env.shapes[x.id][0]
        mem = self.shared(x.id)
        cond = target.slice
        # numpy's boolean index: a mask of x's leading axes (of all of them, or of its rows:
        # `B[x > 0]` with x a vector selects rows), of their very extents (else IndexError)
        got = self.env.condition_shape(cond)
        if got is None:
            return None
        if got is SCALAR or len(got[0]) > len(dims) or not same_dims(got[0], dims[:len(got[0])]):
            target.eqsat_why = ("a boolean mask indexes a tensor whose leading axes have the mask's very "
                                "extents (numpy raises IndexError otherwise)")
            return None
        lead = len(got[0])
        per_element = False
        first = []
        if self.env.value_shape(value) is not SCALAR:
            # `r[r > 0] = r[r > 0] ** 2`: reads under the same mask, of tensors of x's shape,
            # give numpy's selected elements in the order the store takes them: element by
            # element, each at the element stored (x itself, not another view of its memory)
            same = ast.dump(cond)
            value = copy.deepcopy(value)
            reads = [n for n in ast.walk(value) if isinstance(n, ast.Subscript) and ast.dump(n.slice) == same]
            for n in reads:
                y = n.value
                got = self.env.shapes.get(y.id) if isinstance(y, ast.Name) else None
                if got is None or not same_dims(got[0], dims) or (y.id in mem and y.id != x.id):
                    return None
            if not reads:
                return None
            value = _Replaced({id(n): n.value for n in reads}).visit(value)
            got = self.env.value_shape(value)
            if got is None or (got is not SCALAR and not same_dims(got[0], dims)):
                return None
            # an element read of x's memory (`x[0, 0]`) is the value it has before the store
            # (numpy computes the whole value first): taken into a local first
            early = [n for n in ast.walk(value) if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name)
                     and n.value.id in mem and self.env.value_shape(n) is SCALAR]
            taken = {}
            for n in early:
                v = self.el.fresh("v")
                self.env.scalars.add(v)
                first.append(ast.copy_location(ast.Assign(targets=[ast.Name(id=v, ctx=ast.Store())], value=n), s))
                taken[id(n)] = ast.Name(id=v, ctx=ast.Load())
            value = _Replaced(taken).visit(value) if taken else value
            if any(isinstance(n, ast.Name) and n.id in mem and n.id != x.id for n in ast.walk(value)) or \
                    self._reads_elsewhere(value, x.id, mem):
                target.eqsat_why = ("a store under a boolean mask whose value reads the tensor otherwise than at "
                                    "the element stored or at fixed elements (numpy computes the whole value "
                                    "before it stores any element); compute that part into a name first")
                return None
            per_element = True
        if not per_element and any(isinstance(n, ast.Name) and n.id in mem for n in ast.walk(value)):
            # (`x[x < 0.0] = x[-1]`: numpy evaluates the number before it stores any element)
            v = self.el.fresh("v")
            first = [ast.copy_location(ast.Assign(targets=[ast.Name(id=v, ctx=ast.Store())], value=value), s)]
            value = ast.Name(id=v, ctx=ast.Load())
        # the mask reads x only at the element it decides where every read of x's memory is
        # x itself under elementwise operations (not `x.T`, `np.flip(x)`, `x[0]`, a view):
        # else it is computed whole first, as numpy does, into a buffer of 1.0 and 0.0
        whole = self._reads_elsewhere(cond, x.id, mem)
        el = self.el

        def test(e, idx):
            if not is_mask(e, self.env.masks):
                raise NotElementwise
            return el.truth(e, idx[:lead], [], dims[:lead])

        def body(idx):
            t = subscript(x.id, idx, ast.Store())
            v = el.element(value, idx, [], dims) if per_element else copy.deepcopy(value)
            put = ast.Assign(targets=[t], value=v) if op is None else ast.AugAssign(target=t, op=op, value=v)
            when = test(cond, idx) if not whole else \
                ast.Compare(left=subscript(flag, idx), ops=[ast.Gt()], comparators=[ast.Constant(0.5)])
            return [ast.If(test=when, body=[put], orelse=[])]

        try:
            if not whole:
                return first + el.loops(dims, body)
            flag = el.fresh("mask")
            alloc = ast.Assign(targets=[ast.Name(id=flag, ctx=ast.Store())], value=ast.Call(
                func=ast.Name(id=LIB + "zeros", ctx=ast.Load()),
                args=[ast.Tuple(elts=[copy.deepcopy(d) for d in dims], ctx=ast.Load())], keywords=[]))
            fill = el.loops(dims, lambda idx: [ast.Assign(targets=[subscript(flag, idx, ast.Store())], value=ast.IfExp(
                test=test(cond, idx), body=ast.Constant(1.0), orelse=ast.Constant(0.0)))])
            return first + [alloc] + fill + el.loops(dims, body)
        except NotElementwise:
            return None

    def _reads_elsewhere(self, e, name: str, mem: set) -> bool:
        """Whether `e` may read memory `mem` other than `name` itself under elementwise
        operations (so at the element its result is for)."""
        if isinstance(e, ast.Name):
            return e.id in mem and e.id != name
        pointwise = isinstance(e, (ast.Compare, ast.BoolOp, ast.UnaryOp)) or \
            (isinstance(e, ast.BinOp) and isinstance(e.op, (*_OPS, ast.BitAnd, ast.BitOr))) or \
            (isinstance(e, ast.Call) and _elementwise_fn(self.env, e.func))
        if pointwise:
            return any(self._reads_elsewhere(c, name, mem) for c in ast.iter_child_nodes(e))
        return any(isinstance(n, ast.Name) and n.id in mem for n in ast.walk(e))

    def numbers_first(self, value, s):
        """`value` with its dot products over slices (`np.dot(a[1:], a[1:])`) computed before
        the statement, as numpy computes them before it stores anything (read element by
        element, they would be recomputed for every element, after some were stored)."""
        class Dots(ast.NodeTransformer):
            def visit_BinOp(inner, n):
                if isinstance(n.op, ast.MatMult) and contains_section(n, self.env) and \
                        self.env.value_shape(n) is SCALAR:
                    pre: list = []
                    out = self.el.product(n, [], pre)
                    self.place(pre, s, init=1)
                    return out
                return inner.generic_visit(n)

        return Dots().visit(copy.deepcopy(value))

    def reads_memory(self, value, base: str, target) -> bool:
        """Whether `value` may read memory `base` shares other than the element `target`
        stores: reads of the same section, or of elements no store of it writes (apart on
        some axis, `_apart`), do not count."""
        names = self.shared(base)
        same = ast.dump(target.slice)
        wrote = _axes_of(target, self.env)

        def reads(e, pointwise: bool) -> bool:
            """`pointwise`: `e`'s element is read at the element stored (only elementwise
            operations above it: not under np.flip, `@`, np.outer, `.T`, a reduction)."""
            if isinstance(e, ast.Subscript) and _root(e) == base:
                if pointwise and ast.dump(e.slice) == same and ast.dump(e.value) == ast.dump(target.value):
                    return False  # (the element itself, before it is stored)
                got = _axes_of(e, self.env)
                if wrote is not None and got is not None and any(_apart(a, b) for a, b in zip(wrote, got)):
                    return any(reads(c, False) for c in ast.iter_child_nodes(e.slice))  # (its indices)
            if isinstance(e, ast.Name):
                return e.id in names
            keeps = pointwise and (
                (isinstance(e, ast.BinOp) and isinstance(e.op, _OPS)) or isinstance(e, ast.UnaryOp) or
                (isinstance(e, ast.Call) and _elementwise_fn(self.env, e.func)))
            return any(reads(c, keeps) for c in ast.iter_child_nodes(e))

        return reads(value, True)

    def bind(self, s, name: str, value):
        """`name = value` over sections: a new buffer holding every element of `value`."""
        got = self.env.value_shape(value)
        if got is None or got is SCALAR or not got[0] or not got[1]:
            return None
        if any(isinstance(x, ast.Name) and x.id == name for x in ast.walk(value)):
            return None  # (`y = y[1:]`: left as written)
        if self.keeps_matmul(value):
            return None  # (its sections copied, `@` kept: `visit_BinOp`)
        base = _view_of(value, self.env)
        if base is not None:  # `y = a[:, k]`, `y = np.flip(a)`: a view in numpy, a copy only
            why = self.view_differs(s, name, base)  # where nothing tells them apart
            if why:
                value.eqsat_why = (f"`{name} = {ast.unparse(value)}` is a view of the memory of {base!r} in numpy, "
                                   f"and {why}; write `{name} = ({ast.unparse(value)}).copy()`, or index {base!r} "
                                   f"where {name!r} is read")
                return None
        try:
            return self.el.compute(name, value, got[0])
        except NotElementwise:
            return None

    def view_differs(self, s, name: str, base: str) -> str | None:
        """Why a copy bound by `s` could read differently from the view numpy binds, or None:
        `name` must never be written (through an element, or updated in place: bound again to
        other values it may be), and the memory it views not written after `s` (nor before it
        in a loop around it where `name` is read before `s`)."""
        if name in self.memory.stored:  # (bound again to other values is no write: `col = d[:, k] + col`)
            return f"{name!r} is written"
        mem = self.shared(base)
        at = self.order.get(id(s))
        if at is None:
            return "it is not a statement of the function as written"
        late = [st for st, k in self._stores(mem) if k > at]
        if late:
            return "that memory is written after it"
        for loop in self.loops_of.get(id(s), ()):
            for sub in ast.walk(loop):
                if isinstance(sub, ast.Name) and sub.id == name and isinstance(sub.ctx, ast.Load) and \
                        self._before(sub, s):
                    line = getattr(self.fdef, "eqsat_first_line", 1) + loop.lineno - 1
                    return f"a later iteration of the loop at line {line} reads it first"
        return None

    def _stores(self, mem: set):
        """(statement, place) of the statements writing memory `mem`."""
        return [(st, self.order[id(st)]) for st in self._statements if self.memory.writes(st) & mem]

    def _before(self, node, s) -> bool:
        return (getattr(node, "lineno", 0), getattr(node, "col_offset", 0)) < (s.lineno, s.col_offset)

    # ------------------------------------------------------------------ expressions
    def keeps_matmul(self, e) -> bool:
        """Whether `e` is a product of a matrix (`A[:, 1:] @ B`, not `u @ v`) whose sections
        no loop moves: they are copied into buffers first, so that the product stays one
        library call (read element by element, it is an accumulator loop at shifted
        indices, which is no matmul)."""
        if not (isinstance(e, ast.BinOp) and isinstance(e.op, ast.MatMult)):
            return False
        got = self.env.value_shape(e)
        if got is None or got is SCALAR or not got[0] or not got[1]:
            return False
        for x in ast.walk(e):  # (a section a loop moves: read element by element, the loop
            # and the product are then one nest, which is the matmul: `C[:, j] = A @ B[:, j]`)
            if isinstance(x, ast.Subscript) and parse(x, self.env) is not None and \
                    any(isinstance(y, ast.Name) and y.id in self.env.loopvars for y in ast.walk(x)):
                return False
        return True

    def visit_BinOp(self, n):
        if isinstance(n.op, ast.MatMult) and contains_section(n, self.env):
            got = self.env.value_shape(n)
            try:
                if got is SCALAR:  # `u @ v`: a number
                    pre: list = []
                    out = self.el.product(n, [], pre)
                    self.place(pre, n, init=1)
                    return out
                if self.keeps_matmul(n):
                    return self.generic_visit(n)  # (its sections copied, the product kept)
                if got is not None and got is not SCALAR and got[1]:
                    return self.materialize(n, got[0])
            except NotElementwise:
                pass
        return self.generic_visit(n)

    def visit_Call(self, n):
        if getattr(n, "eqsat_why", None):
            return n  # (refused: the front end says why)
        if outer_of(n, self.env) is not None or flips(n, self.env) or triangle_of(n, self.env) is not None:
            return self._whole(n)
        return self.generic_visit(n)

    def visit_IfExp(self, n):
        return self._whole(n) if is_where(n) else self.generic_visit(n)

    def _whole(self, n):
        """A tensor expression read element by element (an outer product, a flip, np.where,
        ...): computed into a buffer before the statement, where its shape is known."""
        got = self.env.value_shape(n)
        if got is not None and got is not SCALAR and got[1] and got[0]:
            try:
                return self.materialize(n, got[0])
            except NotElementwise:
                pass
        return self.generic_visit(n)

    def visit_Subscript(self, n):
        if isinstance(n.ctx, ast.Load):
            sec = parse(n, self.env)
            if sec is not None and sec.f32:
                try:
                    return self.materialize(n, sec.dims)
                except NotElementwise:
                    pass
        return self.generic_visit(n)

    def materialize(self, e, dims: list):
        """`e` computed into a new buffer just before the statement (under its guards)."""
        tmp = self.el.fresh("t")
        self.place(self.el.compute(tmp, e, dims), e, init=1)
        return ast.Name(id=tmp, ctx=ast.Load())
