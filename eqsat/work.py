"""The work model of a loop nest kept as written: scalar operations, bytes moved, and the
flops and calls of library operations inside it (what `cost.loop_time` charges)."""
from __future__ import annotations

import math

from .ir import Alloc, Const, Dim, For, If, Index, MatMul, Ref, ie_eval


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

    def go(s, iters, env):
        if isinstance(s, For):
            # iterations at the midpoint of the enclosing loops (exact for rectangular nests)
            lo, hi = ie_eval(s.lo, {**dims, **env}), ie_eval(s.hi, {**dims, **env})
            n = max(0.0, (hi - lo) / s.step)
            inner = {**env, s.var: lo + s.step * (n - 1) / 2 if n else lo}
            for b in s.body:
                go(b, iters * n, inner)
            return
        if isinstance(s, If):  # the condition, and both branches as an upper bound
            ops, nodes, _ = counts(s.cond)
            w["ops"] += iters * ops
            w["nodes"] += iters * nodes
            for b in s.body + s.orelse:
                go(b, iters, env)
            return
        if isinstance(s, Alloc):
            size = 1
            for d in s.shape:
                size *= ie_eval(d, dims)
            w["bytes"] += iters * 4 * size
            return
        e = s.value
        ops, nodes, loads = counts(e)
        w["ops"] += iters * ops
        w["nodes"] += iters * nodes
        w["bytes"] += iters * 4 * (1 + loads)  # its loads and its store or assignment
        f = lib(e)
        if f:
            w["lib_flops"] += iters * f
            w["lib_calls"] += iters

    go(s, iters, {})
    return {k: int(round(v)) for k, v in w.items()}
