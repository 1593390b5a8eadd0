"""Slice bounds: integer syntax as affine forms, and the proof that a slice's bounds are
not negative.

A bound is an integer expression; a negative constant counts from the end (`a[:-1]` is
`a[:N - 1]`). numpy also counts a bound from the end where an expression is negative
(`x[:i - 1]` at i = 0 is all of x but its last element), and clamps a bound past the end:
so `check_bounds` proves every other bound non-negative from the ranges of the loops
around it, or adds the size condition that makes it so as an `assert` at the top of the
function (checked when the sizes are known), or marks the slice refused; a bound past the
end reads outside its tensor, which `eqsat/bounds.py` refuses at the sizes. A step is a
positive integer constant, or -1 over a whole axis (`a[::-1]`).
"""
from __future__ import annotations

import ast
import copy

import numpy as np


def integer_expr(e, index_name, clamps: bool = False) -> bool:
    """`e` is integer arithmetic (+, -, *, //, %, unary -) of integer constants and names
    `index_name(name)` accepts, and of builtin min and max of those where `clamps`."""
    if isinstance(e, ast.Constant):
        return type(e.value) is int
    if isinstance(e, ast.Name):
        return index_name(e.id)
    if isinstance(e, ast.BinOp):
        return isinstance(e.op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod)) and \
            integer_expr(e.left, index_name, clamps) and integer_expr(e.right, index_name, clamps)
    if isinstance(e, ast.UnaryOp):
        return isinstance(e.op, ast.USub) and integer_expr(e.operand, index_name, clamps)
    if clamps and isinstance(e, ast.Call):
        return isinstance(e.func, ast.Name) and e.func.id in ("min", "max") and len(e.args) >= 2 and \
            not e.keywords and all(integer_expr(a, index_name, clamps) for a in e.args)
    return False


def affine(e, atoms: dict | None = None) -> dict | None:
    """`e` (integer syntax) as {name: coefficient, "": constant}; a non-affine part whose
    names are all in `atoms`' keys ... is kept whole under its source text (when `atoms` is
    given: then atoms[text] = the node). None where `e` is not of that form."""
    if isinstance(e, ast.Constant) and type(e.value) is int:
        return {"": e.value}
    if isinstance(e, ast.Name):
        return {e.id: 1}
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, (ast.USub, ast.UAdd)):
        a = affine(e.operand, atoms)
        return None if a is None else ({k: -v for k, v in a.items()} if isinstance(e.op, ast.USub) else a)
    if isinstance(e, ast.BinOp) and isinstance(e.op, (ast.Add, ast.Sub)):
        a, b = affine(e.left, atoms), affine(e.right, atoms)
        if a is None or b is None:
            return None
        s = -1 if isinstance(e.op, ast.Sub) else 1
        out = dict(a)
        for k, v in b.items():
            out[k] = out.get(k, 0) + s * v
        return {k: v for k, v in out.items() if v or k == ""}
    if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Mult):
        a, b = affine(e.left, atoms), affine(e.right, atoms)
        if a is not None and b is not None:
            for x, y in ((a, b), (b, a)):
                if set(x) <= {""}:
                    c = x.get("", 0)
                    return {k: c * v for k, v in y.items() if c * v or k == ""}
    if atoms is not None:
        text = "(" + ast.unparse(e) + ")"
        atoms[text] = e
        return {text: 1}
    return None


def build(a: dict, atoms: dict | None = None):
    """The syntax of affine form `a` (names in order, the constant last)."""
    out = None
    for k in sorted(x for x in a if x != ""):
        c = a[k]
        if not c:
            continue
        term = copy.deepcopy(atoms[k]) if atoms and k in atoms else ast.Name(id=k, ctx=ast.Load())
        mag = abs(c)
        if mag != 1:
            term = ast.BinOp(left=ast.Constant(mag), op=ast.Mult(), right=term)
        if out is None:
            out = term if c > 0 else ast.UnaryOp(op=ast.USub(), operand=term)
        else:
            out = ast.BinOp(left=out, op=ast.Add() if c > 0 else ast.Sub(), right=term)
    c = a.get("", 0)
    if out is None:
        return ast.Constant(c)
    if c:
        out = ast.BinOp(left=out, op=ast.Add() if c > 0 else ast.Sub(), right=ast.Constant(abs(c)))
    return out


def canonical(e):
    """`e` rebuilt from its affine form, its other parts (`N // 2`) kept whole, so `N - 1 - 1`
    and `N - 2` read the same, and `N // 2 * 2 - N // 2` and `N // 2`."""
    return _combine(e, None, 0)


def _combine(x, y, sign: int):
    """`x + sign * y` (y None: x alone), canonical."""
    atoms: dict = {}
    a = affine(x, atoms)
    out = dict(a)
    if y is not None:
        for k, v in affine(y, atoms).items():
            out[k] = out.get(k, 0) + sign * v
    return build({k: v for k, v in out.items() if v or k == ""}, atoms)


def minus(hi, lo):
    return _combine(hi, lo, -1)


def plus(a, b):
    return _combine(a, b, 1)


def negative_constant(e):
    """The value of a negative integer constant (`-1`), else None."""
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub) and isinstance(e.operand, ast.Constant) and \
            type(e.operand.value) is int and e.operand.value > 0:
        return -e.operand.value
    if isinstance(e, ast.Constant) and type(e.value) is int and e.value < 0:
        return e.value
    return None


def step(s: ast.Slice):
    """A slice's step: a positive int, -1, or None where unsupported."""
    if s.step is None:
        return 1
    v = s.step
    if isinstance(v, ast.UnaryOp) and isinstance(v.op, ast.USub) and isinstance(v.operand, ast.Constant) and \
            v.operand.value == 1 and type(v.operand.value) is int:
        return -1
    if isinstance(v, ast.Constant) and type(v.value) is int and v.value >= 1:
        return v.value
    return None


def after_docstring(fdef: ast.FunctionDef) -> int:
    """Where statements go at the top of a function's body: after its docstring, if any (the
    assertions on sizes this module, `counters` and `desugar` add)."""
    first = fdef.body[0] if fdef.body else None
    return 1 if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and \
        isinstance(first.value.value, str) else 0


def with_values(e, constants: dict):
    """A copy of expression `e` with the names in `constants` replaced by their values."""
    if not any(isinstance(x, ast.Name) and x.id in constants for x in ast.walk(e)):
        return e

    class Sub(ast.NodeTransformer):
        def visit_Name(self, n):
            return ast.copy_location(ast.Constant(constants[n.id]), n) if n.id in constants else n

    return Sub().visit(copy.deepcopy(e))


def check_bounds(fdef: ast.FunctionDef, sizes: set, stores: dict, resolve=None) -> None:
    """Before the other rewrites: every slice bound that is neither absent nor a negative
    constant is proved non-negative (module docstring), given the loops around it; where
    that needs a condition on sizes, `assert cond` is added at the top of the function;
    where it cannot be told, the subscript is marked (`eqsat_why`) and left as written.
    `resolve(name)`: what a name the function does not bind means (a module's integer
    constant, `W = 8`, is its value: `x[w * W:(w + 1) * W]`)."""
    single = {}  # names bound once, to their value (an integer local: `n = N - 1`)
    constants: dict = {}  # the module's integer constants the function reads
    for n in ast.walk(fdef):
        if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name) and \
                stores.get(n.targets[0].id) == 1:
            single[n.targets[0].id] = n.value
        elif resolve is not None and isinstance(n, ast.Name) and n.id not in stores and n.id not in sizes and \
                n.id not in constants:
            v = resolve(n.id)
            if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
                constants[n.id] = int(v)
    asserts: dict = {}

    def minima(e, loops: dict) -> list:
        """Lower bounds of integer expression `e`, each an affine form over sizes and size
        expressions with its atoms, one per way of bounding its variables (a loop
        variable by its range or by a condition around the slice, `loops`); [] where none
        can be told."""
        atoms: dict = {}
        if constants:  # (their values, so `(w + 1) * W` is affine)
            e = with_values(e, constants)
        a = affine(e, atoms)
        if a is None:
            return []
        order = list(reversed(loops))  # (innermost loop first: its bounds name the outer ones)
        out: list = []

        def bound_from(a: dict, steps: int, kept: frozenset = frozenset()) -> None:
            if len(out) >= 16 or steps > 64:
                return
            # (a size is free where a condition around the slice bounds it: `if k > 0:`; it is
            # also kept whole, `kept`, for an assert on the sizes)
            free = [k for k in a if k != "" and k not in atoms and k not in kept and (k not in sizes or k in loops)]
            var = next((k for k in free if k not in loops), None) or \
                next((k for k in order if k in free), None)
            if var is None:
                for node in atoms.values():  # (opaque parts: of sizes only, or a tensor's extent)
                    if not _shape_read(node) and any(isinstance(x, ast.Name) and x.id not in sizes
                                                     for x in ast.walk(node)):
                        return
                out.append(a)
                return
            rest = dict(a)
            c = rest.pop(var)
            if var in sizes:
                bound_from(a, steps + 1, kept | {var})
            if var in loops:
                bounds = loops[var][0 if c > 0 else 1]
            elif var in single:
                bounds = [single[var]]
            else:
                return
            for bound in bounds:
                b = affine(bound, atoms)
                if b is None:
                    continue
                got = dict(rest)
                for k, v in b.items():
                    got[k] = got.get(k, 0) + c * v
                bound_from({k: v for k, v in got.items() if v or k == ""}, steps + 1, kept)

        bound_from(a, 0)
        return [(x, atoms) for x in out]

    def visit(stmts, loops):
        for s in stmts:
            if isinstance(s, ast.For):
                inner = dict(loops)
                if isinstance(s.target, ast.Name):
                    lo, hi = _range_of(s.iter)
                    inner[s.target.id] = ([lo] if lo is not None else [], [hi] if hi is not None else [])
                visit_exprs(s.iter, loops)
                visit(s.body, inner)
                visit(s.orelse, loops)
            elif isinstance(s, ast.If):
                visit_exprs(s.test, loops)
                visit(s.body, _narrowed(loops, s.test, True, sizes))
                visit(s.orelse, _narrowed(loops, s.test, False, sizes))
            elif isinstance(s, ast.While):
                visit_exprs(s.test, loops)
                visit(s.body, loops)
                visit(s.orelse, loops)
            else:
                visit_exprs(s, loops)

    def visit_exprs(node, loops):
        for sub in ast.walk(node):
            if not isinstance(sub, ast.Subscript):
                continue
            for el in elts(sub.slice):
                if not isinstance(el, ast.Slice):
                    continue
                step_ = step(el)
                if step_ is None:
                    sub.eqsat_why = "a slice's step is a positive integer constant, or -1 over a whole axis"
                    continue
                if step_ == -1 and (el.lower is not None or el.upper is not None):
                    sub.eqsat_why = "a step of -1 is taken over a whole axis only (`a[::-1]`)"
                    continue
                for b in (el.lower, el.upper):
                    if b is None or negative_constant(b) is not None:
                        continue
                    lows = minima(b, loops)
                    if not lows and any(isinstance(x, ast.Subscript) for x in ast.walk(b)):
                        sub.eqsat_why = (f"the slice bound `{ast.unparse(b)}` is read from a tensor (an index "
                                         f"array, as CSR's row pointers): the language's bounds and indices are "
                                         f"integer expressions of loop variables and sizes")
                        continue
                    if not lows:
                        sub.eqsat_why = (f"the slice bound `{ast.unparse(b)}` may be negative, where numpy counts "
                                         f"from the end; bound it by loop variables and sizes")
                        continue
                    # (each is a lower bound: one that is a constant >= 0 proves it)
                    if any(set(x) <= {""} and x.get("", 0) >= 0 for x, _ in lows):
                        continue
                    symbolic = [(x, at) for x, at in lows if not set(x) <= {""}]
                    if not symbolic:
                        least = max(x.get("", 0) for x, _ in lows)
                        sub.eqsat_why = (f"the slice bound `{ast.unparse(b)}` can be {least}, where numpy counts "
                                         f"from the end")
                        continue
                    low, atoms = symbolic[0]
                    cond = ast.Compare(left=build(low, atoms), ops=[ast.GtE()], comparators=[ast.Constant(0)])
                    text = ast.unparse(cond)
                    if text not in asserts:
                        msg = ast.Constant(f"the slice bound `{ast.unparse(b)}` must not be negative: numpy "
                                           f"counts a negative bound from the end")
                        asserts[text] = ast.copy_location(ast.Assert(test=cond, msg=msg), b)

    visit(fdef.body, {})
    if asserts:
        at = after_docstring(fdef)
        fdef.body[at:at] = list(asserts.values())
        for a in asserts.values():
            for sub in ast.walk(a):
                ast.copy_location(sub, a)


def _narrowed(loops: dict, test, holds: bool, sizes=frozenset()) -> dict:
    """`loops` (variable -> (lower bounds, upper bounds), syntax) with the bounds that
    condition `test` adds on loop variables and sizes where it holds (`holds`) or fails:
    `i > e`, `e <= i`, `i == e`, and `and` of them where it holds, `or` of them where it
    fails."""
    parts = [test]
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And if holds else ast.Or):
        parts = test.values
    elif isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _narrowed(loops, test.operand, not holds, sizes)
    out = dict(loops)
    for c in parts:
        if not (isinstance(c, ast.Compare) and len(c.ops) == 1):
            continue
        left, op, right = c.left, type(c.ops[0]), c.comparators[0]
        if not holds:
            op = _NEGATED.get(op)
        for var, other, flip in ((left, right, False), (right, left, True)):
            if not (isinstance(var, ast.Name) and (var.id in out or var.id in sizes)) or op is None:
                continue
            rel = _MIRRORED[op] if flip else op  # (var rel other)
            one = ast.Constant(1)
            lo, hi = (list(x) for x in out.get(var.id, ([], [])))
            if rel in (ast.Gt, ast.GtE, ast.Eq):
                lo.append(ast.BinOp(left=other, op=ast.Add(), right=one) if rel is ast.Gt else other)
            if rel in (ast.Lt, ast.LtE, ast.Eq):
                hi.append(ast.BinOp(left=other, op=ast.Sub(), right=one) if rel is ast.Lt else other)
            out[var.id] = (lo, hi)
    return out


_NEGATED = {ast.Gt: ast.LtE, ast.GtE: ast.Lt, ast.Lt: ast.GtE, ast.LtE: ast.Gt, ast.NotEq: ast.Eq}
_MIRRORED = {ast.Gt: ast.Lt, ast.GtE: ast.LtE, ast.Lt: ast.Gt, ast.LtE: ast.GtE, ast.Eq: ast.Eq, ast.NotEq: ast.NotEq}


def _shape_read(node) -> bool:
    """`x.shape[k]` or `len(x)`: a size."""
    return (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "shape") \
        or (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len")


def _range_of(it):
    """(least, greatest) value of a loop variable over `it` (syntax, either None where not
    told): range(n), range(a, b), range(a, b, c) with a constant c, reversed(range(...))."""
    from .pingpong import range_args

    if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "reversed" and \
            len(it.args) == 1 and not it.keywords:
        return _range_of(it.args[0])
    got = range_args(it)
    if got is None:
        return None, None
    lo, hi, stride = got
    one = ast.Constant(1)
    if stride > 0:
        return lo, ast.BinOp(left=hi, op=ast.Sub(), right=one)
    return ast.BinOp(left=hi, op=ast.Add(), right=one), lo


def elts(s) -> list:
    return list(s.elts) if isinstance(s, ast.Tuple) else [s]
