"""Bounds checks: every index stays inside its tensor for every iteration of its loops.

Per-variable intervals prove almost every index in range at once; where they cannot (a
triangular nest, whose inner bounds depend on outer variables, or an access guarded by an
`if` or an `a if c else b` on loop variables, as in `if j > 0: c[j] = c[j - 1]`), isl decides exactly on the
iteration domain, restricted by every enclosing condition that is affine in the loop
variables (`dataflow.index_can_leave`). A condition on data values restricts nothing.
"""
from __future__ import annotations

import ast

import islpy as isl

from .args import assertion_failed, assertion_sizes
from .dataflow import condition_fails_at, first_iteration, index_can_leave
from .errors import ArgumentError, ProgramError
from .ir import Alloc, Assign, Bin, BoolOp, Call, Compare, Const, Dim, For, If, Index, Select, Store, expr_reads, ie_eval


def check_bounds(prog, dims: dict) -> None:
    """Every index stays inside its tensor for every iteration, or a ProgramError says where.

    numpy would wrap a negative index around silently; eqsat rejects it instead, since no
    kernel can honour that and it is almost always an off-by-one.
    """
    shapes: dict = {}
    for p in prog.params:
        if p.shape is not None:
            shapes[p.name] = tuple(dims[d] if isinstance(d, str) else d for d in p.shape)

    numbers: dict = {}  # (`_python_value`'s memo)

    def check(base, idx, ranges, loc, path):
        shape = shapes.get(base)
        if shape is None:
            return
        bad = leaving_axis(idx, shape, ranges, dims, path)
        if bad is not None:
            axis, lo, hi = bad
            raise ProgramError(f"index {axis} of {base!r} ranges over {lo}..{hi}, outside 0..{shape[axis] - 1}", loc)

    def expr(e, ranges, path=()):
        if isinstance(e, Index):
            check(e.base, e.idx, ranges, e.loc, path)
        elif isinstance(e, Bin) and e.op in ("/", "//", "%") and not isinstance(e.b, Const):
            check_divisor(e, path, dims, numbers)
        if isinstance(e, Select):  # each branch is read only where its condition says
            expr(e.cond, ranges, path)
            expr(e.a, ranges, path + ((e.cond, True),))
            expr(e.b, ranges, path + ((e.cond, False),))
            return
        if isinstance(e, BoolOp) and e.op in ("and", "or"):  # Python's short circuit: each
            # operand is evaluated only where the ones before it were true (`and`) or false
            for k, a in enumerate(e.args):
                expr(a, ranges, path + tuple((b, e.op == "and") for b in e.args[:k]))
            return
        for c in e.children():
            expr(c, ranges, path)

    def stmt(s, ranges, path=()):
        if isinstance(s, Alloc):
            shapes[s.name] = tuple(ie_eval(d, dims) for d in s.shape)
        elif isinstance(s, Assign):
            expr(s.value, ranges, path)
            if s.value.ty is not None:
                shapes[s.name] = tuple(ie_eval(d, dims) for d in s.value.ty)
        elif isinstance(s, Store):
            expr(s.value, ranges, path)
            check(s.buf, s.idx, ranges, s.loc, path)
        elif isinstance(s, If):
            expr(s.cond, ranges, path)
            for b in s.body:
                stmt(b, ranges, path + ((s.cond, True),))
            for b in s.orelse:
                stmt(b, ranges, path + ((s.cond, False),))
        elif isinstance(s, For):
            vr = loop_values(s, ranges, dims)
            if vr[0] <= vr[1]:
                for b in s.body:
                    stmt(b, {**ranges, s.var: vr}, path + (s,))

    for s in prog.body:
        stmt(s, {})
    for r in prog.returns:
        expr(r, {})
    check_loop_assertions(prog, dims)


def check_loop_assertions(prog, dims: dict) -> None:
    """Every `assert` inside loops or ifs (`Program.loop_assertions`) holds at every
    iteration where its enclosing conditions hold (those on data values are taken to hold:
    where the condition can fail, the program is refused), or an ArgumentError names one
    where it fails, as Python would raise there."""
    for loc, cond, src, msg, scopes in prog.loop_assertions:
        loops = tuple(s for s in scopes if isinstance(s, For))
        guards = tuple(s for s in scopes if not isinstance(s, For))
        try:
            at = condition_fails_at(loops, lambda aff, holds: assertion_text(cond, holds, aff), dims, guards)
        except isl.Error:  # (its parser: a condition not affine in the loop variables)
            raise ProgramError(f"`assert {src}` inside a loop must be affine in the loop variables (a product "
                               f"of two of them is not) to be checked at every iteration", loc) from None
        if at is not None:
            sizes = assertion_sizes(cond, dims)
            where = ", ".join(f"{v}={x}" for v, x in at.items())
            data = " (taking every condition on data values around it to hold)" if _reads_data(guards) else ""
            raise assertion_failed(loc, src, f"{where or 'its place'}{' with ' + sizes if sizes else ''}{data}", msg)


# ------------------------------------------------------------------ divisions by zero
# a divisor checked by evaluating it at every iteration (`check_divisor`) when isl cannot
# read it, up to this many iterations (beyond: not checked)
ENUMERATED = 100_000


def check_divisor(e: Bin, path: tuple, dims: dict, memo: dict) -> None:
    """A division of Python numbers (`1.0 / (i - 2)`, `i // (N - M)`, `N % (j - i)`) whose
    divisor is zero at an iteration that runs it (where the enclosing loops and affine
    conditions allow, `path`): Python raises ZeroDivisionError there, where a plan would
    compute numpy's inf or 0, so an ArgumentError names the iteration. The divisor is read
    exactly by isl where it is affine in loop variables and sizes (abs, max, min too),
    else evaluated at each iteration (up to ENUMERATED). Not checked: a divisor that reads
    data (known only when it runs), and a float32 numerator (numpy divides: inf, no error)."""
    if not (_sizes_only(e.b) and _python_value(e.a, memo)):
        return
    loops = tuple(f for f in path if isinstance(f, For))
    guards = tuple(g for g in path if not isinstance(g, For))

    def text(aff, holds):
        side = _guard_side(e.b, aff)
        if side is None:
            raise isl.Error("not affine")
        return f"({side} < 0 or {side} > 0)" if holds else f"({side} = 0)"

    try:
        at = condition_fails_at(loops, text, dims, guards)
    except (isl.Error, KeyError, TypeError, ValueError):
        at = _zero_by_evaluation(e.b, loops, guards, dims)
    if at is None:
        return
    # (the desugaring's own loops, over a slice's elements, are no names the user wrote)
    where = ", ".join(f"{v}={x}" for v, x in at.items() if not v.startswith("eqsat_"))
    names = sorted(n for n in expr_reads(e.b, names=True) if n in dims and n not in at)
    sizes = ", ".join(f"{n}={dims[n]}" for n in names)
    data = " (taking every condition on data values around it to hold)" if _reads_data(guards) else ""
    place = f"at {where}" + (f" with {sizes}" if sizes else "") if where else f"with {sizes}" if sizes else "here"
    raise ArgumentError(f"{e.loc}: a division by `{_text(e.b)}`, which is zero {place}{data}: Python raises "
                        f"ZeroDivisionError there")


def _zero_by_evaluation(divisor, loops: tuple, guards: tuple, dims: dict) -> dict | None:
    """An iteration of `loops` (where affine `guards` hold) at which `divisor` is zero, by
    evaluating it at each (None past ENUMERATED iterations, or where none is zero)."""
    def zero(at: dict) -> bool:
        try:
            return _number(divisor, {**dims, **at}) == 0
        except (ZeroDivisionError, KeyError, TypeError, ValueError, OverflowError):
            return False  # (a division inside it is checked on its own)

    return first_iteration(loops, dims, guards, zero, ENUMERATED)


_PY_OPS = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b, "/": lambda a, b: a / b,
           "//": lambda a, b: a // b, "%": lambda a, b: a % b, "**": lambda a, b: a ** b}


def _number(e, env: dict):
    """The Python number a sizes-only expression (`_sizes_only`) has at `env`."""
    if isinstance(e, Const):
        return e.value
    if isinstance(e, Dim):
        return env[e.name]
    if isinstance(e, Bin):
        return _PY_OPS[e.op](_number(e.a, env), _number(e.b, env))
    args = [_number(a, env) for a in e.args]
    return {"neg": lambda x: -x, "float": float, "abs": abs, "max": max, "min": min}[e.fn](*args)


def _python_value(e, memo: dict) -> bool:
    """Whether `e` is a Python number in the reference: literals, sizes, loop variables,
    Python's float of anything (`float(x[i])`) and arithmetic and functions of those (a
    float32 meeting one makes a float32). `memo`: id -> (expression, answer), so that a
    long chain is walked once (and without recursion: a sum of 2,000 terms is that deep)."""
    def known(x):
        hit = memo.get(id(x))
        return hit[1] if hit is not None and hit[0] is x else None

    stack = [(e, False)]
    while stack:
        x, ready = stack.pop()
        if known(x) is not None:
            continue
        if isinstance(x, (Const, Dim)) or isinstance(x, Call) and x.fn == "float":
            memo[id(x)] = (x, True)
        elif isinstance(x, (Bin, Call, Select)):
            kids = (x.a, x.b) if isinstance(x, Select) else x.children()
            if ready:
                memo[id(x)] = (x, all(known(a) for a in kids))
            else:
                stack.append((x, True))
                stack.extend((a, False) for a in kids)
        else:
            memo[id(x)] = (x, False)
    return known(e)


def _sizes_only(e) -> bool:
    """Whether `e` is made of literals, sizes and loop variables alone (known before any
    data is read), with arithmetic, neg, abs, max, min and float."""
    if isinstance(e, (Const, Dim)):
        return True
    if isinstance(e, Bin):
        return e.op in _PY_OPS and _sizes_only(e.a) and _sizes_only(e.b)
    if isinstance(e, Call) and e.fn in ("neg", "float", "abs", "max", "min"):
        return all(_sizes_only(a) for a in e.args)
    return False


def _text(e) -> str:
    """A sizes-only expression as Python source."""
    if isinstance(e, Const):
        v = e.value
        return str(int(v)) if isinstance(v, float) and v.is_integer() and abs(v) < 2**53 else repr(v)
    if isinstance(e, Dim):
        return e.name
    if isinstance(e, Bin):
        return f"{_paren(e.a)} {e.op} {_paren(e.b)}"
    if e.fn == "neg":
        return f"-{_paren(e.args[0])}"
    return f"{e.fn}({', '.join(_text(a) for a in e.args)})"


def _paren(e) -> str:
    return f"({_text(e)})" if isinstance(e, Bin) or isinstance(e, Call) and e.fn == "neg" else _text(e)


_ASSERT_OPS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "="}
_ASSERT_NOT = {ast.Lt: ast.GtE, ast.LtE: ast.Gt, ast.Gt: ast.LtE, ast.GtE: ast.Lt, ast.Eq: ast.NotEq,
               ast.NotEq: ast.Eq}


def assertion_text(cond, holds: bool, aff) -> str:
    """An isl constraint for an assertion's condition (`Program.assertions`' form), or its
    negation when not `holds`; index expressions written by `aff`."""
    kind = cond[0]
    if kind == "not":
        return assertion_text(cond[1], not holds, aff)
    if kind in ("and", "or"):
        joiner = " and " if (kind == "and") == holds else " or "
        return "(" + joiner.join(assertion_text(c, holds, aff) for c in cond[1]) + ")"
    ops, exprs = cond[1], [aff(e) for e in cond[2]]
    parts = []
    for op, a, b in zip(ops, exprs, exprs[1:]):
        op = op if holds else _ASSERT_NOT[op]
        parts.append(f"({a} < {b} or {a} > {b})" if op is ast.NotEq else f"({a} {_ASSERT_OPS[op]} {b})")
    # a chain holds where every link does; it fails where one does
    return "(" + (" and " if holds else " or ").join(parts) + ")"


def _reads_data(guards) -> bool:
    """Whether an `(condition, holds)` of `guards` is not affine in loop variables and sizes."""
    def affine(c):
        if isinstance(c, BoolOp):
            return all(affine(a) for a in c.args)
        return isinstance(c, Compare) and _guard_side(c.a, str) is not None and _guard_side(c.b, str) is not None
    return any(not affine(c) for c, _ in guards)


def loop_values(f: For, ranges: dict, dims: dict) -> tuple:
    """(smallest, largest) value loop `f` may take, given its enclosing loops' `ranges`."""
    (a1, a2), (b1, b2) = _interval(f.lo, ranges, dims), _interval(f.hi, ranges, dims)
    return (a1, b2 - 1) if f.step > 0 else (b1 + 1, a2)


def leaving_axis(idx, shape, ranges: dict, dims: dict, path: tuple):
    """(axis, smallest, largest) of the first index in `idx` that leaves `shape` on some
    iteration of `path` (enclosing loops, and `(condition, holds)` guards), else None: by
    intervals, and where they are too coarse (a triangular nest, a guard) exactly by isl."""
    loops = tuple(f for f in path if isinstance(f, For))
    guards = tuple(g for g in path if not isinstance(g, For))
    for axis, ie in enumerate(idx):
        lo, hi = _interval(ie, ranges, dims)
        if (lo < 0 or hi >= shape[axis]) and index_can_leave(loops, ie, shape[axis], dims, guards):
            return axis, lo, hi
    return None


_CMP = {"<": "<", "<=": "<=", ">": ">", ">=": ">=", "==": "="}
_NOT = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "==": "!=", "!=": "=="}


def _guard_side(e, aff) -> str | None:
    """A side of a comparison in isl syntax: an index expression written by `aff`, or
    builtin abs, max and min of such, and sums of those (`abs(i - j) <= 1`, a band: isl
    reads max and min; abs(e) is max(e, -e)); None for anything else."""
    ie = _index_of(e)
    if ie is not None:
        return aff(ie)
    if isinstance(e, Call) and e.fn in ("abs", "max", "min"):
        parts = [_guard_side(a, aff) for a in e.args]
        if any(p is None for p in parts):
            return None
        if e.fn == "abs" and len(parts) == 1:
            return f"max({parts[0]}, -({parts[0]}))"
        if e.fn != "abs" and len(parts) == 2:
            return f"{e.fn}({parts[0]}, {parts[1]})"
        return None
    if isinstance(e, Bin) and e.op in ("+", "-"):
        a, b = _guard_side(e.a, aff), _guard_side(e.b, aff)
        return None if a is None or b is None else f"({a} {e.op} {b})"
    return None


def guard_text(cond, holds: bool, aff) -> str | None:
    """An isl constraint for `cond` (or its negation when not `holds`), with index
    expressions written by `aff`; None where the condition is not affine in loop variables."""
    if isinstance(cond, BoolOp):
        if cond.op == "not":
            return guard_text(cond.args[0], not holds, aff)
        parts = []
        for a in cond.args:
            try:
                parts.append(guard_text(a, holds, aff))
            except (KeyError, TypeError, ValueError):  # not affine in loop variables
                parts.append(None)
        joiner = " and " if (cond.op == "and") == holds else " or "
        if joiner == " and ":  # a conjunction implies each part: the known ones are a guard
            parts = [p for p in parts if p is not None]
        if not parts or any(p is None for p in parts):
            return None
        return "(" + joiner.join(parts) + ")"
    if isinstance(cond, Compare):
        x, y = _guard_side(cond.a, aff), _guard_side(cond.b, aff)
        if x is None or y is None:
            return None
        op = cond.op if holds else _NOT[cond.op]
        if op == "!=":
            return f"({x} < {y} or {x} > {y})"
        return f"({x} {_CMP[op]} {y})"
    return None


_INDEX_OPS = {"+": "add", "-": "sub", "*": "mul", "//": "floordiv", "%": "mod"}


def _index_of(e, memo: dict | None = None):
    """A value expression as an index expression (integers, loop variables, dims), or None.
    `memo` (id of an expression -> (it, its answer)) makes asking it of every node of one
    tree linear in the tree: a sum of many terms is as deep as it is long."""
    if memo is not None:
        hit = memo.get(id(e))
        if hit is not None and hit[0] is e:
            return hit[1]
    out = None
    if isinstance(e, Const):
        # (a constant past 2**31 stays a number: index arithmetic is in egglog's i64 and the
        # backends' int64, where `i * 1e20` would not fit)
        out = ("int", int(e.value)) if float(e.value).is_integer() and abs(e.value) < 2**31 else None
    elif isinstance(e, Dim):
        out = ("name", e.name)
    elif isinstance(e, Bin) and e.op in _INDEX_OPS:
        a = _index_of(e.a, memo)
        b = None if a is None else _index_of(e.b, memo)
        out = None if b is None else (_INDEX_OPS[e.op], a, b)
    elif isinstance(e, Call) and e.fn == "neg" and len(e.args) == 1:
        a = _index_of(e.args[0], memo)
        out = None if a is None else ("neg", a)
    if memo is not None:
        memo[id(e)] = (e, out)
    return out


def _interval(e, ranges, dims) -> tuple:
    """Smallest and largest value of an index expression over the loop variables' ranges."""
    tag = e[0]
    if tag == "int":
        return e[1], e[1]
    if tag == "name":
        return ranges[e[1]] if e[1] in ranges else (dims[e[1]], dims[e[1]])
    if tag == "neg":
        lo, hi = _interval(e[1], ranges, dims)
        return -hi, -lo
    (a, b), (c, d) = _interval(e[1], ranges, dims), _interval(e[2], ranges, dims)
    if tag == "add":
        return a + c, b + d
    if tag == "sub":
        return a - d, b - c
    if tag == "mul":
        xs = (a * c, a * d, b * c, b * d)
        return min(xs), max(xs)
    k = c  # `//` and `%` by a positive constant (the front end checks it)
    if tag == "floordiv":
        return a // k, b // k
    if b - a < k and a % k <= b % k:
        return a % k, b % k
    return 0, k - 1
