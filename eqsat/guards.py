"""A loop whose whole body is a guard on its own variable runs only the iterations the
guard keeps, in a nest run as written.

    for j in range(N):                        for j in range(max(0, i - 1), min(N, i + 2)):
        if abs(i - j) <= 1:           ->          y[i] += A[i, j] * x[j]
            y[i] += A[i, j] * x[j]

People write bands and triangles this way (`if j <= i`, `if abs(i - j) <= k`); run as
written the loop visits the whole square to do a band's work, while the work model
(`work._taken`) prices the iterations the guard keeps. The bounds come from the comparisons
of the guard joined by `and` that are affine in the loop variable with coefficient 1 or
-1 and otherwise read only integers the loop cannot change (sizes, the variables of the
loops around it, integer literals): `v < e`, `v <= e`, `v > e`, `v >= e`, `v == e` in either
order, `abs(v - e) <= c` and `abs(...) < c`, chains (`a <= v < b`). The loop keeps its step
of 1 and its order; comparisons of any other kind stay in the guard, now tested only on
the iterations the bounds keep (Python's `and` tested them only where the earlier ones
held; a pure comparison has no other effect). Integers only: a comparison with a float is
left alone.
"""
from __future__ import annotations

import ast


def tighten(tree, ints: set) -> None:
    """In place, for every `for v in range(a, b)` (step 1) of `tree` whose body is one `if`
    without `else`: its bounds narrowed by the guard's comparisons (module doc). `ints`:
    the names that hold integers no loop of `tree` assigns (the sizes)."""
    loops = {n.target.id for n in ast.walk(tree) if isinstance(n, ast.For) and isinstance(n.target, ast.Name)}
    assigned = {t.id for n in ast.walk(tree) if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign))
                for t in ast.walk(n) if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store)}
    known = (set(ints) | loops) - assigned  # (a loop variable is assigned by its loop only)
    for n in ast.walk(tree):
        got = narrowed(n, known)
        if got is None:
            continue
        lo, hi, rest = got
        n.iter = ast.copy_location(ast.Call(func=ast.Name(id="range", ctx=ast.Load()), args=[lo, hi], keywords=[]),
                                   n.iter)
        if rest:
            n.body[0].test = rest[0] if len(rest) == 1 else ast.BoolOp(op=ast.And(), values=rest)
        else:
            n.body = n.body[0].body
    ast.fix_missing_locations(tree)


def narrowed(n, known: set):
    """(lo, hi, the comparisons left in the guard) of loop `n` narrowed by its guard, when
    it is `for v in range(a, b)` (step 1) with one `if` without `else` for its body and some
    comparison of the guard bounds `v` (`known`: the integer names the loop cannot change);
    else None."""
    if not (isinstance(n, ast.For) and isinstance(n.target, ast.Name) and len(n.body) == 1 and
            isinstance(n.body[0], ast.If) and not n.body[0].orelse and not n.orelse):
        return None
    bounds = _range(n.iter)
    if bounds is None:
        return None
    var = n.target.id
    lows, highs, rest = [bounds[0]], [bounds[1]], []
    for c in _conjuncts(n.body[0].test):
        got = _bound(c, var, set(known) - {var})
        if got is None:
            rest.append(c)
            continue
        lows.extend(got[0])
        highs.extend(got[1])
    if len(lows) == 1 and len(highs) == 1:
        return None
    return _fold("max", lows), _fold("min", highs), rest


def _range(it):
    """(lo, hi) of `range(hi)`, `range(lo, hi)` or `range(lo, hi, 1)`, else None."""
    if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range" and
            not it.keywords and 1 <= len(it.args) <= 3):
        return None
    if len(it.args) == 3 and not (isinstance(it.args[2], ast.Constant) and type(it.args[2].value) is int and
                                  it.args[2].value == 1):
        return None
    return (ast.Constant(0), it.args[0]) if len(it.args) == 1 else (it.args[0], it.args[1])


def _conjuncts(test) -> list:
    """`a and b and ...` as [a, b, ...] (nested `and`s flattened); a chain `a < b <= c` as
    its links; anything else as itself."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return [c for v in test.values for c in _conjuncts(v)]
    if isinstance(test, ast.Compare) and len(test.ops) > 1:
        sides = [test.left, *test.comparators]
        return [ast.Compare(left=sides[k], ops=[op], comparators=[sides[k + 1]]) for k, op in enumerate(test.ops)]
    return [test]


_FLIP = {ast.Lt: ast.Gt, ast.LtE: ast.GtE, ast.Gt: ast.Lt, ast.GtE: ast.LtE, ast.Eq: ast.Eq}


def _bound(c, var: str, known: set):
    """([lower bounds], [upper bounds]) on `var` that hold exactly where comparison `c`
    does (lower inclusive, upper exclusive), else None."""
    if not (isinstance(c, ast.Compare) and len(c.ops) == 1 and type(c.ops[0]) in _FLIP):
        return None
    left, op, right = c.left, type(c.ops[0]), c.comparators[0]
    if _is_abs(right):  # (c >= abs(x): abs(x) <= c)
        left, op, right = right, _FLIP[op], left
    if _is_abs(left):  # abs(x) <= c: -c <= x <= c (and < alike); abs(x) >= c is an `or`
        if op not in (ast.Lt, ast.LtE):
            return None
        x = left.args[0]
        lows, highs = [], []
        for cmp in (ast.Compare(left=x, ops=[op()], comparators=[right]),
                    ast.Compare(left=ast.UnaryOp(op=ast.USub(), operand=x), ops=[op()], comparators=[right])):
            got = _bound(cmp, var, known)
            if got is None:
                return None
            lows += got[0]
            highs += got[1]
        return lows, highs
    a, b = _linear(left, known | {var}), _linear(right, known | {var})
    if a is None or b is None:
        return None
    d = {k: a.get(k, 0) - b.get(k, 0) for k in a.keys() | b.keys()}  # left - right  op  0
    coef = d.pop(var, 0)
    if coef not in (1, -1):
        return None
    if coef == -1:  # -v + r op 0  is  v flip(op) r
        op, rest = _FLIP[op], d
    else:  # v + r op 0  is  v op -r
        rest = {k: -v for k, v in d.items()}
    e = _expr(rest)
    one = _expr(_add(rest, 1))
    if op is ast.Lt:
        return [], [e]
    if op is ast.LtE:
        return [], [one]
    if op is ast.Gt:
        return [one], []
    if op is ast.GtE:
        return [e], []
    return [e], [one]  # ==


def _is_abs(e) -> bool:
    return isinstance(e, ast.Call) and isinstance(e.func, ast.Name) and e.func.id == "abs" and \
        len(e.args) == 1 and not e.keywords


def _linear(e, names: set):
    """An integer expression as {name: coefficient, 1: constant}, when it is +, - and
    products by integer literals of `names` and integer literals; else None."""
    if isinstance(e, ast.Constant) and type(e.value) is int:
        return {1: e.value}
    if isinstance(e, ast.Name) and e.id in names:
        return {e.id: 1}
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, (ast.USub, ast.UAdd)):
        x = _linear(e.operand, names)
        return None if x is None else {k: -v for k, v in x.items()} if isinstance(e.op, ast.USub) else x
    if isinstance(e, ast.BinOp) and isinstance(e.op, (ast.Add, ast.Sub)):
        x, y = _linear(e.left, names), _linear(e.right, names)
        if x is None or y is None:
            return None
        s = -1 if isinstance(e.op, ast.Sub) else 1
        return {k: x.get(k, 0) + s * y.get(k, 0) for k in x.keys() | y.keys()}
    if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Mult):
        x, y = _linear(e.left, names), _linear(e.right, names)
        if x is None or y is None:
            return None
        for p, q in ((x, y), (y, x)):
            if set(p) <= {1}:  # a constant factor
                return {k: p.get(1, 0) * v for k, v in q.items()}
    return None


def _add(form: dict, c: int) -> dict:
    out = dict(form)
    out[1] = out.get(1, 0) + c
    return out


def _expr(form: dict):
    """{name: coefficient, 1: constant} as an expression (names in sorted order)."""
    out = None
    for k in sorted((k for k, v in form.items() if k != 1 and v), key=str):
        v = form[k]
        term = ast.Name(id=k, ctx=ast.Load()) if abs(v) == 1 else \
            ast.BinOp(left=ast.Constant(abs(v)), op=ast.Mult(), right=ast.Name(id=k, ctx=ast.Load()))
        if out is None:
            out = term if v > 0 else ast.UnaryOp(op=ast.USub(), operand=term)
        else:
            out = ast.BinOp(left=out, op=ast.Add() if v > 0 else ast.Sub(), right=term)
    c = form.get(1, 0)
    if out is None:
        return ast.Constant(c)
    if c:
        out = ast.BinOp(left=out, op=ast.Add() if c > 0 else ast.Sub(), right=ast.Constant(abs(c)))
    return out


def _fold(fn: str, es: list):
    """The largest (`fn` "max") or smallest of integer expressions, written with
    conditionals: the names `max` and `min` are the user's module's, which may bind
    numpy's."""
    out = es[0]
    for e in es[1:]:
        keep = ast.GtE() if fn == "max" else ast.LtE()
        out = ast.IfExp(test=ast.Compare(left=out, ops=[keep], comparators=[e]), body=out, orelse=e)
    return out
