"""The work model of a loop nest kept as written: scalar operations, bytes moved, and the
flops and calls of library operations inside it (what `cost.loop_time` charges)."""
from __future__ import annotations

from .ir import Alloc, Const, Dim, For, If, Index, MatMul, Ref, ie_eval


def nest_work(s, dims, iters=1) -> dict:
    """Modeled work of a nest run as written: scalar ops and bytes, library flops and calls."""
    # "nodes": every expression node, constants and names included (the unit of
    # parallel.MIN_OPS, measured in it)
    w = {"ops": 0, "nodes": 0, "bytes": 0, "lib_flops": 0, "lib_calls": 0}

    def expr_ops(e):
        """Operations and loads (constants, names and loop variables are free: registers)."""
        n = 0 if isinstance(e, (Const, Ref, Dim)) else 1
        for c in e.children():
            n += expr_ops(c)
        return n

    def nodes(e):
        return 1 + sum(nodes(c) for c in e.children())

    def loads(e):
        return (1 if isinstance(e, Index) else 0) + sum(loads(c) for c in e.children())

    def lib(e):
        if isinstance(e, MatMul):
            sa = [ie_eval(d, dims) for d in e.a.ty]
            sb = [ie_eval(d, dims) for d in e.b.ty]
            batch = max(sa[0] if len(sa) == 3 else 1, sb[0] if len(sb) == 3 else 1)
            return 2 * batch * sa[-2] * sa[-1] * sb[-1] + lib(e.a) + lib(e.b)
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
            w["ops"] += iters * expr_ops(s.cond)
            w["nodes"] += iters * nodes(s.cond)
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
        w["ops"] += iters * expr_ops(e)
        w["nodes"] += iters * nodes(e)
        w["bytes"] += iters * 4 * (1 + loads(e))  # its loads and its store or assignment
        f = lib(e)
        if f:
            w["lib_flops"] += iters * f
            w["lib_calls"] += iters

    go(s, iters, {})
    return {k: int(round(v)) for k, v in w.items()}
