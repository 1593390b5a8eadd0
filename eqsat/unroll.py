"""A short sequential loop around loop nests, unrolled at the sizes a plan is made for.

    for p in range(P):                 # P an integer parameter: 4 in this plan
        t = empty((N, N))
        for i in range(N): ...         # t = r @ a, written as loops
        for i in range(N): ...         # r = t

Each iteration reads what the one before wrote, so the loop over `p` has no functional
form as a whole, and distributing it is not legal: it stayed one nest, run as written. Yet
every iteration is a matmul and a copy. A plan is made for one value of each size and
integer parameter, so the loop's trip count is known; `unrolled` gives its iterations as a
list of statements, the loop variable replaced by its value in each copy (in the loop IR,
and in the syntax each statement keeps to run as written). The lowering lowers them as top-
level statements, each lifted where the analysis proves a form, and offers the result as
an alternative to the loop as written (`lower._Lowerer.nest`): the cost model chooses.

Only where it is small (`MAX_TRIPS` iterations, `MAX_STATEMENTS` statements in all), where
the body holds a loop nest or a statement computing a tensor (a layer's `h = relu(h @ w[l])`;
a loop of scalar statements alone gains nothing), where every
statement of the body keeps its syntax (not one the analysis made: a part of a distributed
loop, a scalar expanded into a buffer), and where every name the body's syntax binds is
one the loop IR binds (a view bound inside the body has no statement of its own to carry
it).
"""
from __future__ import annotations

import ast
import copy

from .ir import Alloc, Assign, Const, Dim, Expr, For, If, Stmt, Store, ie_eval

MAX_TRIPS = 16
MAX_STATEMENTS = 400


def unrolled(f: For, dims: dict) -> list | None:
    """The iterations of loop `f` at `dims`, as statements in order; None where it is not
    unrolled (see above)."""
    try:
        lo, hi = ie_eval(f.lo, dims), ie_eval(f.hi, dims)
    except (KeyError, ZeroDivisionError):
        return None
    trips = range(lo, hi, f.step)  # (its length first: a size can be 10**9)
    if not trips or len(trips) > MAX_TRIPS or not any(isinstance(s, For) or _library_call(s) for s in _walk(f.body)):
        return None
    values = list(trips)
    if len(values) * sum(1 for _ in _walk(f.body)) > MAX_STATEMENTS:
        return None
    bound_ir = {s.name for s in _walk(f.body) if isinstance(s, (Assign, Alloc))} | \
        {s.var for s in _walk(f.body) if isinstance(s, For)}
    if f.node is None or any(getattr(s, "node", None) is None for s in f.body):
        return None  # (a statement made by the analysis, with no syntax to run as written)
    bound_src = {n.id for n in ast.walk(f.node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    if bound_src - bound_ir - {f.var}:
        return None
    return [_relinked(s, _subst(s, f.var, v)) for v in values for s in f.body]


def _relinked(old, new):
    """`new` (the copy `_subst` made of statement `old`) with each loop's and branch's syntax
    holding its statements' own syntax again, where `old`'s did (`_subst` copies a loop's
    syntax and each of its statements' apart: fission, which runs each part's statements as
    written, pairs them by identity, `lower._one_to_one`)."""
    for attr in ("body", "orelse"):
        olds, news = getattr(old, attr, None), getattr(new, attr, None)
        if not isinstance(olds, list) or not isinstance(news, list) or old.node is None:
            continue
        syntax = getattr(old.node, attr, None)
        for o, n in zip(olds, news):
            _relinked(o, n)
        if isinstance(syntax, list) and len(syntax) == len(olds) and \
                all(getattr(o, "node", None) is x for o, x in zip(olds, syntax)):
            setattr(new.node, attr, [n.node for n in news])
    return new


def _library_call(s) -> bool:
    """A statement computing a tensor (`h = relu(h @ w[l])`, `o[h] = t @ v[h]`): a kernel of
    its own once unrolled, where a matmul and its epilogue can be found."""
    return isinstance(s, (Assign, Store)) and getattr(s.value, "ty", None) is not None


def _walk(stmts):
    for s in stmts:
        yield s
        if isinstance(s, For):
            yield from _walk(s.body)
        elif isinstance(s, If):
            yield from _walk(s.body)
            yield from _walk(s.orelse)


class _Value(ast.NodeTransformer):
    def __init__(self, var: str, value: int):
        self.var, self.value = var, value

    def visit_Name(self, n):
        if n.id == self.var and isinstance(n.ctx, ast.Load):
            return ast.copy_location(ast.Constant(self.value), n)
        return n


def _subst(x, var: str, value: int):
    """`x` (a statement, expression, index expression, or the syntax a statement keeps) with
    loop variable `var` replaced by `value`; what does not mention it is shared."""
    if isinstance(x, tuple):
        if x == ("name", var):
            return ("int", value)
        return tuple(_subst(e, var, value) for e in x)
    if isinstance(x, list):
        return [_subst(e, var, value) for e in x]
    if isinstance(x, dict):
        return {k: _subst(e, var, value) for k, e in x.items()}
    if isinstance(x, Dim) and x.name == var:
        return Const(x.loc, float(value), ty=x.ty)
    if isinstance(x, ast.AST):
        return ast.fix_missing_locations(_Value(var, value).visit(copy.deepcopy(x)))
    if isinstance(x, (Expr, Stmt)):
        new = copy.copy(x)
        for k, e in vars(x).items():
            if k != "loc":
                setattr(new, k, _subst(e, var, value))
        return new
    return x

