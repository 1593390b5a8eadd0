"""Anti-inline: a reduction inside an elementwise computation becomes its own tensor.

The reverse of inline. It exposes the loop nest to the matmul rule, after which the
epilogue rule can fuse the rest back around the matmul.

Preconditions:
  1. The reduction sits in the body of `for[d] ...` under elementwise operations only
     (not under another reduction), so its free variables are among d's.

Before:  y = for[i, j] relu(sum[k] x[i, k] * w[j, k] + bias[j])
After:   acc = for[i, j] sum[k] x[i, k] * w[j, k];   y = for[i, j] relu(acc[i, j] + bias[j])
"""
from __future__ import annotations

from egglog import String, i64, eq, relation, rule, ruleset, union

from eqsat.sorts import Dims, Sc, Ten, Var, dvars

ctx_root = relation("ctx_root", Sc, Dims)
inctx = relation("inctx", Sc, Dims)


@ruleset
def analysis(t: Ten, d: Dims, body: Sc, s: Sc, a: Sc, b: Sc, f: String, c: Sc, e: Sc):
    """Facts only (saturated with the support rules): which scalars sit in which computation."""
    yield rule(eq(t).to(Ten.compute(d, body))).then(ctx_root(body, d))
    for rel in (ctx_root, inctx):
        for op in (Sc.add, Sc.sub, Sc.mul, Sc.div, Sc.max, Sc.min):
            yield rule(rel(s, d), eq(s).to(op(a, b))).then(inctx(a, d), inctx(b, d))
        yield rule(rel(s, d), eq(s).to(Sc.fn(f, a))).then(inctx(a, d))
        yield rule(rel(s, d), eq(s).to(Sc.select(f, a, b, c, e))).then(inctx(a, d), inctx(b, d), inctx(c, d),
                                                                         inctx(e, d))


@ruleset
def ruleset(d: Dims, s: Sc, a: Sc, f: String, v: Var, n: i64):
    # red(...) inside for[d] -> (for[d] red(...))[d]
    yield rule(inctx(s, d), eq(s).to(Sc.red(f, v, n, a))).then(union(s).with_(Sc.load(Ten.compute(d, s), dvars(d))))
