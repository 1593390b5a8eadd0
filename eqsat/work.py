"""The work model of a loop nest kept as written: scalar operations, bytes moved, and the
flops and calls of library operations inside it (what `cost.loop_time` charges)."""
from __future__ import annotations

import ast
import math

from . import guards
from .ir import Alloc, Bin, BoolOp, Call, Compare, Const, Dim, For, If, Index, MatMul, Ref, ie_eval


def nest_work(s, dims, iters=1) -> dict:
    """Modeled work of a nest run as written: scalar ops and bytes, library flops and calls."""
    # "nodes": every expression node, constants and names included (the unit of
    # parallel.MIN_OPS, measured in it)
    w = {"ops": 0, "nodes": 0, "bytes": 0, "lib_flops": 0, "lib_calls": 0}

    def counts(e) -> tuple:
        """(operations and loads, where constants, names and loop variables are free:
        registers; every node; loads) of expression `e`."""
        ops, nodes, loads = (0 if isinstance(e, (Const, Ref, Dim)) else 1), 1, (1 if isinstance(e, Index) else 0)
        for c in e.children():
            o, n, ld = counts(c)
            ops, nodes, loads = ops + o, nodes + n, loads + ld
        return ops, nodes, loads

    def lib(e):
        if isinstance(e, MatMul):
            sa = [ie_eval(d, dims) for d in e.a.ty]
            out = math.prod(ie_eval(d, dims) for d in e.ty or ())  # (a dot product: one)
            return 2 * out * sa[-1] + lib(e.a) + lib(e.b)
        out = 0
        for c in e.children():
            out += lib(c)
        return out

    def go(s, iters, env, loop=None):
        if isinstance(s, For):
            # iterations at the midpoint of the enclosing loops (exact for rectangular nests)
            lo, hi = ie_eval(s.lo, {**dims, **env}), ie_eval(s.hi, {**dims, **env})
            body = s.body
            bounds = _clamp(s, {**dims, **env})
            if bounds is not None:  # (run as written between its clamped bounds: desugar.clamped)
                lo, hi = max(lo, bounds[0]), min(hi, bounds[1])
                body = s.body[0].body
            n = max(0.0, (hi - lo) / s.step)
            inner = {**env, s.var: lo + s.step * (n - 1) / 2 if n else lo}
            for b in body:
                go(b, iters * n, inner, (s, lo, hi, n))
            return
        if isinstance(s, If):
            # the condition; a branch on the enclosing loop's variable against bounds (a band,
            # `if j >= i - 2 and j <= i + 3`) for the iterations it takes, any other as an
            # upper bound (both branches every iteration)
            ops, nodes, _ = counts(s.cond)
            w["ops"] += iters * ops
            w["nodes"] += iters * nodes
            taken = _taken(s.cond, loop, {**dims, **env})
            for b in s.body:
                go(b, iters if taken is None else iters * taken, env)
            for b in s.orelse:
                go(b, iters if taken is None else iters * (1.0 - taken), env)
            return
        if isinstance(s, Alloc):
            size = 1
            for d in s.shape:
                size *= ie_eval(d, dims)
            w["bytes"] += iters * 4 * size
            return
        e = s.value
        ops, nodes, loads = counts(e)
        # a tensor-valued statement (`y = np.log1p(x)` run as written) does its work on
        # every element (it was priced as one element's)
        elems = math.prod(ie_eval(d, dims) for d in e.ty) if getattr(e, "ty", None) else 1
        w["ops"] += iters * ops * elems
        w["nodes"] += iters * nodes * elems
        w["bytes"] += iters * 4 * (1 + loads) * elems  # its loads and its store or assignment
        f = lib(e)
        if f:
            w["lib_flops"] += iters * f
            w["lib_calls"] += iters

    go(s, iters, {})
    return {k: int(round(v)) for k, v in w.items()}


def _clamp(f: For, env: dict):
    """(lo, hi) of a loop whose body is one guard the nest as written runs as bounds
    (`desugar.clamped`): one desugar widened from `range(max(a, b), min(c, d))` to
    `range(a, c)` around the guard `j >= b and j < d` (marked), or one the user wrote that
    `guards.narrowed` turns into bounds whole (`if abs(i - j) <= 1`); at `env`, else None.
    Without it a banded loop was priced over its whole hull (N * N for a tridiagonal
    product) and a masked reduction over that hull, doing all that work, looked cheaper than
    the 3N loop (a probe: 400x numba's time)."""
    if len(f.body) != 1 or not isinstance(f.body[0], If) or f.body[0].orelse:
        return None
    if getattr(f.body[0].node, "eqsat_clamp", False):
        return _kept(f.body[0].cond, f.var, env)
    got = guards.narrowed(f.node, set(env)) if isinstance(f.node, ast.For) else None
    if got is None or got[2]:
        return None
    try:
        lo, hi = (eval(compile(ast.fix_missing_locations(ast.Expression(e)), "<bound>", "eval"),
                       {"__builtins__": {}}, dict(env)) for e in got[:2])
    except Exception:  # noqa: BLE001 - a bound that cannot be evaluated here: priced as written
        return None
    return lo, hi


def _value(e, env: dict):
    """An integer-valued expression of sizes and loop variables at `env`, else None."""
    if isinstance(e, Const):
        return e.value
    if isinstance(e, Dim):
        return env.get(e.name)
    if isinstance(e, Bin) and e.op in ("+", "-", "*", "//"):
        a, b = _value(e.a, env), _value(e.b, env)
        if a is None or b is None or (e.op == "//" and b == 0):
            return None
        return a + b if e.op == "+" else a - b if e.op == "-" else a * b if e.op == "*" else a // b
    if isinstance(e, Call) and e.fn in ("max", "min", "neg"):
        vs = [_value(a, env) for a in e.args]
        if any(v is None for v in vs):
            return None
        return -vs[0] if e.fn == "neg" else max(vs) if e.fn == "max" else min(vs)
    return None


def _taken(cond, loop, env):
    """The fraction of the enclosing loop's iterations (at the midpoint of the loops around
    it) on which `cond`, comparisons of that loop's variable with expressions of sizes and
    outer variables joined by `and`, holds; None for any other condition."""
    if loop is None:
        return None
    f, lo, hi, n = loop
    if n <= 0 or f.step != 1:
        return None
    kept = _kept(cond, f.var, env)
    return None if kept is None else max(0.0, min(kept[1], hi) - max(kept[0], lo)) / n


def _kept(cond, var: str, env):
    """(a, b): the integer values of `var` with a <= var < b for which `cond` holds, where it
    is comparisons of `var` with expressions of sizes and outer variables joined by `and`
    (a, b infinite where no comparison bounds that side); else None."""
    tests = cond.args if isinstance(cond, BoolOp) and cond.op == "and" else (cond,)
    a, b = -math.inf, math.inf
    for t in tests:
        if not isinstance(t, Compare) or t.op not in ("<", "<=", ">", ">="):
            return None
        if isinstance(t.a, Dim) and t.a.name == var:
            op, other = t.op, t.b
        elif isinstance(t.b, Dim) and t.b.name == var:
            op, other = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}[t.op], t.a
        else:
            return None
        v = _value(other, env)
        if v is None:
            return None
        if op == ">=":
            a = max(a, v)
        elif op == ">":
            a = max(a, math.floor(v) + 1)
        elif op == "<":
            b = min(b, v)
        else:
            b = min(b, math.floor(v) + 1)
    return a, b
