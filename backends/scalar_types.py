"""Python's number types in a kept nest, so that its compiled form computes what the
reference computes.

The reference runs a program as Python over numpy float32 values, where a Python int or
float meeting a float32 becomes a float32 (numpy's promotion rules, NEP 50: Python numbers
are "weak"): `x[i] > 0.1` compares in float32, `x[i] % 0.3` divides by float32(0.3), and an
accumulator `s = 0.0` holds a float32 after `s += x[i]`. numba types a Python float as
float64 and promotes float32 with it, so compiled as written `x[i] > 0.1` was true for
x[i] = float32(0.1) (0.10000000149 > 0.1) where the reference says false, and a branch, a
remainder or a floor division could go the other way.

`Types` infers, for each expression of the nest, one of: INT and FLOAT (Python numbers:
literals, sizes, loop variables, module constants, and arithmetic of those), F32 (an element
of a tensor, a scalar input, anything a float32 meets), F64 (numpy float64: a library
function of a Python float), ARRAY (a tensor, a row, a view), or None (unknown: left alone);
a scalar local takes the join of every value assigned to it (a local that holds a float32
anywhere is float32 everywhere, as the reference's is from the first float32 it meets).
`cast_weak` then wraps each Python number that meets a float32 or an array in
`np.float32(...)`, where the reference's promotion happens, and leaves everything else as
written (Python-number arithmetic stays float64, as in the reference: 1e30 * 1e30 / 1e30).
"""
from __future__ import annotations

import ast
import math
import operator

import numpy as np

from eqsat import lang

INT, FLOAT, F32, F64, ARRAY = "int", "float", "f32", "f64", "array"
WEAK = (INT, FLOAT)
SCALAR = (INT, FLOAT, F32, F64)
_RANK = {INT: 0, FLOAT: 1, F32: 2, F64: 3}
# builtins whose result has the type of their arguments' join
_SAME = {"abs"}
_JOINED = {"max", "min"}


def resolve(name: str, obj):
    """What a global name a nest reads is to the types: ("lib", the language function's
    canonical name), ("const", a module constant's value: an int, a Python float, or a numpy
    scalar that keeps its type), or None (anything else)."""
    from eqsat import desugar

    canon = desugar.library_name(name) or next((k for k, f in {**lang.UNARY, **lang.BINARY, **lang.BUILDERS,
                                                                **lang.SHAPERS}.items() if f is obj), None)
    if canon is not None:
        return "lib", canon
    if isinstance(obj, (np.float32, np.float64)):
        return "const", obj
    if isinstance(obj, (int, float, np.floating)) and not isinstance(obj, bool):
        return "const", float(obj) if isinstance(obj, np.floating) else obj
    return None


def tensor_ranks(shapes: dict, views: dict) -> dict:
    """Tensor name -> rank, for tensors of `shapes` and a nest's views (ir expressions)."""
    ranks = {n: len(sh) for n, sh in shapes.items()}
    for v, e in views.items():
        ranks[v] = _view_rank(e, ranks)
    return ranks


def _view_rank(e, ranks: dict):
    """The rank of an ir view expression (None where it cannot be read)."""
    from eqsat.ir import Index, Ref, Transpose

    if isinstance(e, Transpose):
        return _view_rank(e.x, ranks)
    if isinstance(e, Index):
        base = ranks.get(e.base)
        return None if base is None else base - len(e.idx)
    if isinstance(e, Ref):
        return ranks.get(e.name)
    return None


def number_outputs(tree, ranks: dict, f32_inputs, number_inputs, ints, namespace: dict, names) -> frozenset:
    """Which of `names`, scalars a kept nest assigns, hold Python numbers (ints, floats) when
    it ends: the reference's value of such a one is exact in float64 (`s = 0.0; s +=
    math.exp(x[i])` is a Python float; `s += x[i]` makes it a float32). `ranks`: tensor name
    -> rank; `f32_inputs`, `number_inputs`: its scalar inputs that are float32, Python
    numbers; `ints`: sizes; `namespace`: the module's globals and constants."""
    lib, consts = {}, {}
    bound = set(ranks) | set(f32_inputs) | set(number_inputs) | set(ints)  # (the nest's own, not the module's)
    for name in {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} - bound:
        got = resolve(name, namespace.get(name))
        if got is not None:
            (lib if got[0] == "lib" else consts)[name] = got[1]
    consts.update({n: 0.0 for n in number_inputs})  # (typed as a module's float constants are)
    types = Types(tree, ranks, f32_inputs, ints, consts, lib)
    return frozenset(n for n in names if types.env.get(n) in WEAK)


def join(a, b):
    """The type a name holding values of types `a` and `b` has (None: unknown)."""
    if a is None or b is None:
        return None
    if a == b:
        return a
    if a == ARRAY or b == ARRAY:
        return None  # (the front end refuses a name that is a scalar and a tensor)
    return a if _RANK[a] >= _RANK[b] else b


def combine(a, b, op=None):
    """The type of a binary operation's result (numpy's promotion with weak Python numbers)."""
    if a is None or b is None:
        return None
    if a == ARRAY or b == ARRAY:
        return ARRAY
    if a in WEAK and b in WEAK:
        return FLOAT if FLOAT in (a, b) or isinstance(op, ast.Div) else INT
    return join(a, b) if a not in WEAK and b not in WEAK else (a if b in WEAK else b)


class Types:
    """The type of every expression of a kept nest's tree (see the module's docstring).

    `tensors`: name -> rank of every tensor the nest may name (its inputs, its views, the
    tensors it allocates); `f32_names`: scalars that hold float32 (the nest's scalar inputs);
    `ints`: sizes; `consts`: module constants (name -> value); `lib`: the user's name of each
    language function -> its canonical name."""

    def __init__(self, tree, tensors: dict, f32_names, ints, consts: dict, lib: dict):
        self.tensors, self.lib = dict(tensors), lib
        self.env: dict = {n: F32 for n in f32_names}
        self.env.update({n: INT for n in ints})
        for n, v in consts.items():
            self.env[n] = INT if isinstance(v, int) else F32 if isinstance(v, np.float32) else \
                F64 if isinstance(v, np.float64) else FLOAT
        for f in ast.walk(tree):
            if isinstance(f, ast.For) and isinstance(f.target, ast.Name):
                self.env[f.target.id] = INT  # (the language's loops run over ranges)
        # (sizes and loop variables keep their types; an input or a constant a statement
        # assigns joins what it is assigned: `acc += x[i]` makes a Python-float `acc` float32)
        fixed = {n for n, t in self.env.items() if t == INT and (n in ints or n not in consts)}
        assigns = []  # (name, value expression, whether augmented with op)
        for st in ast.walk(tree):
            if isinstance(st, ast.AugAssign) and isinstance(st.target, ast.Name):
                assigns.append((st.target.id, st.value, st.op))
            elif isinstance(st, ast.Assign):
                for t in st.targets:
                    for name, value in _pairs(t, st.value):
                        assigns.append((name, value, None))
            elif isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name) and st.value is not None:
                assigns.append((st.target.id, st.value, None))
        # a view the nest binds itself (`r = x[i]`, `t = x.T`, `v = x`) is a tensor of its rank:
        # `s += r[j]` reads a float32
        for _ in range(len(assigns) + 1):
            views = {name: self.view_rank(value) for name, value, op in assigns if op is None}
            new = {n: r for n, r in views.items() if r and n not in self.tensors}
            if not new:
                break
            self.tensors.update(new)
        self.assigned = {n for n, _, _ in assigns if n not in fixed and n not in self.tensors}
        # a fixpoint over the locals' types, which only rise in the lattice INT < FLOAT <
        # F32 < F64 (unknown above all); a name not yet typed is skipped, not unknown
        for _ in range(8 * len(self.assigned) + 8):
            changed = False
            for name, value, op in assigns:
                if name not in self.assigned:
                    continue
                t = self.of(value)
                if t is _UNSET:
                    continue
                if op is not None:
                    cur = self.env.get(name, _UNSET)
                    if cur is _UNSET:
                        continue
                    t = combine(cur, t, op)
                cur = self.env.get(name, _UNSET)
                new = t if cur is _UNSET else join(cur, t)
                if new != cur:
                    self.env[name] = new
                    changed = True
            if not changed:
                break
        for name in self.assigned:
            self.env.setdefault(name, None)

    def view_rank(self, e) -> int | None:
        """The rank of a view of a tensor `e` names (`x`, `x[i]`, `x[1:, j]`, `x.T`), else None."""
        if isinstance(e, ast.Name):
            return self.tensors.get(e.id)
        if isinstance(e, ast.Attribute) and e.attr == "T":
            return self.view_rank(e.value)
        if isinstance(e, ast.Subscript) and isinstance(e.value, ast.Name) and self.tensors.get(e.value.id):
            idx = e.slice.elts if isinstance(e.slice, ast.Tuple) else [e.slice]
            if any(i is Ellipsis or isinstance(i, ast.Constant) and i.value in (None, Ellipsis) for i in idx):
                return None
            rank = self.tensors[e.value.id] - sum(not isinstance(i, ast.Slice) for i in idx)
            return rank if rank > 0 else None
        return None

    def of(self, e):
        """The type of expression `e` (None: unknown; `_UNSET` while a local is untyped)."""
        if isinstance(e, ast.Constant):
            v = e.value
            if isinstance(v, bool) or isinstance(v, int):
                return INT
            return FLOAT if isinstance(v, float) else None
        if isinstance(e, ast.Name):
            if e.id in self.tensors and self.tensors[e.id]:
                return ARRAY
            if e.id in self.env:
                return self.env[e.id]
            return _UNSET if e.id in self.assigned else None  # (not typed yet: every one is, after `__init__`)
        if isinstance(e, ast.Subscript) and isinstance(e.value, ast.Name):
            rank = self.tensors.get(e.value.id)
            if not rank:
                return None
            idx = e.slice.elts if isinstance(e.slice, ast.Tuple) else [e.slice]
            whole = len(idx) == rank and not any(isinstance(i, ast.Slice) or i is Ellipsis or
                                                 isinstance(i, ast.Constant) and i.value is Ellipsis for i in idx)
            return F32 if whole else ARRAY
        if isinstance(e, ast.BinOp):
            a, b = self.of(e.left), self.of(e.right)
            if a is _UNSET or b is _UNSET:
                return _UNSET
            if isinstance(e.op, ast.MatMult):
                return ARRAY
            return combine(a, b, e.op)
        if isinstance(e, ast.UnaryOp):
            if isinstance(e.op, ast.Not):
                return INT
            return self.of(e.operand)
        if isinstance(e, (ast.Compare, ast.BoolOp)):
            return INT if not any(self.of(x) == ARRAY for x in _operands(e)) else ARRAY
        if isinstance(e, ast.IfExp):
            a, b = self.of(e.body), self.of(e.orelse)
            if a is _UNSET or b is _UNSET:
                return _UNSET
            return join(a, b)
        if isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and e.func.attr == "float32" and \
                isinstance(e.func.value, ast.Name) and e.func.value.id == "np":
            return F32  # (a cast `cast_weak` wrote)
        if isinstance(e, ast.Call) and isinstance(e.func, ast.Name) and not e.keywords:
            fn = e.func.id
            kinds = [self.of(a) for a in e.args]
            if _UNSET in kinds:
                return _UNSET
            canon = self.lib.get(fn)
            if canon in lang.BUILDERS or canon in lang.SHAPERS:
                return ARRAY
            if canon == "float32" and len(kinds) == 1 and kinds[0] in SCALAR:
                return F32  # (np.float32(e): a float32, whatever e was)
            if (canon == "float" or getattr(e, "eqsat_of_math", None)) and kinds and kinds[0] in SCALAR:
                return FLOAT  # (Python's float(e), and math's functions: a Python float)
            if canon in lang.UNARY and len(kinds) == 1:
                k = kinds[0]
                return F64 if k in WEAK else k  # (np.exp of a Python float is a numpy float64)
            if canon in lang.BINARY and len(kinds) == 2:
                k = combine(*kinds)
                return F64 if k in WEAK else k
            if fn in _SAME and len(kinds) == 1:
                return kinds[0]
            if fn in _JOINED and kinds:
                out = kinds[0]
                for k in kinds[1:]:
                    out = combine(out, k)
                return out
            if fn == "float":
                return FLOAT
            if fn == "int":
                return INT
        return None


_UNSET = object()


def _pairs(target, value):
    """(name, value) for each name an assignment binds to a value it can see."""
    if isinstance(target, ast.Name):
        yield target.id, value
    elif isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)) and \
            len(target.elts) == len(value.elts):
        for t, v in zip(target.elts, value.elts):
            yield from _pairs(t, v)


def _operands(e):
    return [e.left, *e.comparators] if isinstance(e, ast.Compare) else list(e.values)


def _f32(e):
    return ast.copy_location(ast.Call(func=ast.Attribute(value=ast.Name(id="np", ctx=ast.Load()), attr="float32",
                                                         ctx=ast.Load()), args=[e], keywords=[]), e)


_INT_OPS = (ast.Add, ast.Sub, ast.Mult, ast.Pow, ast.FloorDiv, ast.Mod)
INT64 = 2 ** 63 - 1


_FOLDED = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.Pow: operator.pow, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod}


def fold_sizes(tree, sizes: dict) -> int:
    """Arithmetic of number literals and sizes alone (no loop variable, no element), computed
    here by Python and written as its value, in place: Python's ints are exact where numba's
    int64 is not (`N ** n / N ** (n - 1)` is 5.0 at N = 5, n = 500; in int64 it wraps). A
    value that is an int past int64, or not a finite number, or where Python raises
    (`0 ** -1`), is left as written. Returns how many it folded."""
    count = 0

    def value(e):
        if isinstance(e, ast.Constant) and type(e.value) in (int, float):
            return e.value
        if isinstance(e, ast.Name) and type(sizes.get(e.id)) is int:
            return sizes[e.id]
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, (ast.USub, ast.UAdd)):
            v = value(e.operand)
            return None if v is None else -v if isinstance(e.op, ast.USub) else v
        if isinstance(e, ast.BinOp) and type(e.op) in _FOLDED:
            a, b = value(e.left), value(e.right)
            if a is None or b is None:
                return None
            try:
                return _FOLDED[type(e.op)](a, b)
            except (ArithmeticError, ValueError):
                return None
        return None

    class Fold(ast.NodeTransformer):
        def visit_BinOp(self, node):
            nonlocal count
            v = value(node)
            if (type(v) is float and math.isfinite(v)) or (type(v) is int and -INT64 <= v <= INT64):
                count += 1
                return ast.copy_location(ast.Constant(v), node)
            self.generic_visit(node)
            return node

    Fold().visit(tree)
    return count


def exact_ints(tree, types: Types, sizes: dict) -> int:
    """numba computes Python's integers as int64: `+ - *` are exact modulo 2**64, so a result
    that fits is exact however its parts overflowed, but a result past int64 wraps where
    Python's is exact, and `int ** -1` is an int (0) where Python's is a float. So, in place,
    integer arithmetic whose result meets a float (an operand of arithmetic with a float,
    the value stored into a tensor or a float local, an argument of a library function or
    `float`) is computed in float64 where its value may leave int64 -- bounded over the
    loops' ranges at `sizes` (`(i + 1) ** 30`, `t * t` of a size 2**40) -- or where it raises
    an integer to a power that may be negative; elsewhere it stays int64, which is exact
    there (`(i + 2 ** 53) - 2 ** 53`). Indices, loop bounds, comparisons and integer locals
    stay integers. Returns how many it rewrote."""
    of = types.of
    count = 0
    env = {n: (v, v) for n, v in sizes.items() if type(v) is int}

    def span(e):
        """(least, greatest) value of an integer expression over the loops, else None."""
        if isinstance(e, ast.Constant) and type(e.value) is int:
            return e.value, e.value
        if isinstance(e, ast.Name):
            return env.get(e.id)
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub):
            got = span(e.operand)
            return None if got is None else (-got[1], -got[0])
        if not isinstance(e, ast.BinOp):
            return None
        a, b = span(e.left), span(e.right)
        if a is None or b is None:
            return None
        if isinstance(e.op, ast.Add):
            return a[0] + b[0], a[1] + b[1]
        if isinstance(e.op, ast.Sub):
            return a[0] - b[1], a[1] - b[0]
        if isinstance(e.op, ast.Mult):
            c = [x * y for x in a for y in b]
            return min(c), max(c)
        if isinstance(e.op, ast.Pow) and b[0] >= 0 and b[1] <= 256:
            c = [x ** y for x in a for y in b] + ([0] if a[0] < 0 < a[1] else [])
            return min(c), max(c)
        if isinstance(e.op, (ast.FloorDiv, ast.Mod)) and b[0] > 0:
            if isinstance(e.op, ast.Mod):
                return 0, b[1] - 1
            c = [x // y for x in a for y in b]
            return min(c), max(c)
        return None

    def negative_power(e) -> bool:
        for n in ast.walk(e):
            if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Pow):
                got = span(n.right)
                if got is None or got[0] < 0:
                    return True
        return False

    def arith(e) -> bool:
        if not (of(e) == INT and (isinstance(e, ast.BinOp) and isinstance(e.op, _INT_OPS) or
                                  isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub))):
            return False
        if negative_power(e):
            return True
        got = span(e)
        return got is not None and (got[0] < -INT64 or got[1] > INT64)

    def floated(e):
        """`e` with every integer name and literal in it a float (its subscripts left)."""
        if isinstance(e, ast.Constant) and type(e.value) is int:
            return ast.copy_location(ast.Constant(float(e.value)), e)
        if isinstance(e, ast.Name) and of(e) == INT:
            return ast.copy_location(ast.Call(func=ast.Name(id="float", ctx=ast.Load()), args=[e], keywords=[]), e)
        if isinstance(e, ast.BinOp):
            e.left, e.right = floated(e.left), floated(e.right)
        elif isinstance(e, ast.UnaryOp):
            e.operand = floated(e.operand)
        return e

    floats = (FLOAT, F32, F64, ARRAY)

    def fix_expr(node):
        nonlocal count
        for x in list(ast.walk(node)):
            if isinstance(x, ast.BinOp) and not isinstance(x.op, ast.MatMult):
                left, right = of(x.left), of(x.right)
                # (`/` of two ints is a float, Python's from the exact ints: `2 ** 70 / 2 ** 68`)
                div = isinstance(x.op, ast.Div) and left == INT and right == INT and (arith(x.left) or arith(x.right))
                if (right in floats or div) and arith(x.left):
                    x.left, count = floated(x.left), count + 1
                if (left in floats or div) and arith(x.right):
                    x.right, count = floated(x.right), count + 1
            elif isinstance(x, ast.IfExp):
                # a branch meeting a float through the select (`N ** -1 if c else 2.0`); a
                # negative power is Python's float whatever it meets
                for attr in ("body", "orelse"):
                    branch = getattr(x, attr)
                    if arith(branch) and (of(x) in floats or negative_power(branch)):
                        setattr(x, attr, floated(branch))
                        count += 1
            elif isinstance(x, ast.Compare):
                parts = [x.left, *x.comparators]
                if any(of(p) in floats for p in parts):
                    parts = [floated(p) if arith(p) else p for p in parts]
                    count += sum(1 for a, b in zip(parts, [x.left, *x.comparators]) if a is not b)
                    x.left, x.comparators = parts[0], parts[1:]
            elif isinstance(x, ast.Call) and isinstance(x.func, ast.Name) and not x.keywords and \
                    (x.func.id == "float" or types.lib.get(x.func.id) in lang.UNARY or
                     types.lib.get(x.func.id) in lang.BINARY):
                for k, a in enumerate(x.args):
                    if arith(a):
                        x.args[k], count = floated(a), count + 1

    def visit(stmts):
        nonlocal count
        for st in stmts:
            if isinstance(st, ast.For):
                it = st.iter
                old = env.get(st.target.id) if isinstance(st.target, ast.Name) else None
                if isinstance(st.target, ast.Name):
                    args = it.args if isinstance(it, ast.Call) else []
                    parts = [span(a) for a in args]
                    step = args[2].value if len(args) == 3 and isinstance(args[2], ast.Constant) else 1
                    if args and all(p is not None for p in parts) and type(step) is int and step:
                        lo, hi = ((0, 0), parts[0]) if len(parts) == 1 else (parts[0], parts[1])
                        env[st.target.id] = (lo[0], hi[1] - 1) if step > 0 else (hi[0] + 1, lo[1])
                    else:
                        env.pop(st.target.id, None)
                visit(st.body)
                if isinstance(st.target, ast.Name):
                    if old is None:
                        env.pop(st.target.id, None)
                    else:
                        env[st.target.id] = old
                continue
            if isinstance(st, (ast.Assign, ast.AugAssign)):
                target = st.targets[0] if isinstance(st, ast.Assign) and len(st.targets) == 1 else \
                    getattr(st, "target", None)
                if (isinstance(target, ast.Subscript) or of(target) in floats) and arith(st.value):
                    st.value, count = floated(st.value), count + 1
            for field in ("test", "value", "iter"):
                if isinstance(getattr(st, field, None), ast.AST):
                    fix_expr(getattr(st, field))
            for field in ("body", "orelse"):
                if isinstance(getattr(st, field, None), list):
                    visit(getattr(st, field))

    visit(tree.body if isinstance(tree, ast.Module) else [tree])
    ast.fix_missing_locations(tree)
    return count


def cast_weak(tree, types: Types) -> int:
    """Wrap, in place, every Python number that meets a float32 or an array in
    `np.float32(...)`: an operand of arithmetic, a comparison, `max`/`min`/`maximum`/
    `minimum` and a conditional expression's branch; and a value assigned to a float32
    local. Returns how many it wrapped."""
    of = types.of
    count = 0

    def strong(k):
        return k in (F32, ARRAY)

    def wrap_list(exprs: list) -> list:
        nonlocal count
        kinds = [of(x) for x in exprs]
        if not any(strong(k) for k in kinds) or F64 in kinds:
            return exprs
        out = []
        for x, k in zip(exprs, kinds):
            if k in WEAK:
                count += 1
                out.append(_f32(x))
            else:
                out.append(x)
        return out

    for node in list(ast.walk(tree)):
        if isinstance(node, ast.BinOp) and not isinstance(node.op, ast.MatMult):
            node.left, node.right = wrap_list([node.left, node.right])
        elif isinstance(node, ast.Compare):
            ops = wrap_list([node.left, *node.comparators])
            node.left, node.comparators = ops[0], ops[1:]
        elif isinstance(node, ast.IfExp):
            node.body, node.orelse = wrap_list([node.body, node.orelse])
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords and \
                (node.func.id in _JOINED or types.lib.get(node.func.id) in lang.BINARY):
            node.args = wrap_list(node.args)
        elif isinstance(node, ast.AugAssign) and not isinstance(node.op, ast.MatMult):
            if strong(of(node.target)) and of(node.value) in WEAK:
                count += 1
                node.value = _f32(node.value)
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            if types.env.get(node.targets[0].id) == F32 and node.targets[0].id in types.assigned and \
                    of(node.value) in WEAK:
                count += 1
                node.value = _f32(node.value)
    ast.fix_missing_locations(tree)
    return count
