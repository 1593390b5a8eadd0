"""Analysis: shapes, closedness, list helpers and explicit substitution.

Not an optimization: facts the optimizing rules' guards read, saturated before them.

- `shape_of(t)`: the concrete shape of every tensor term.
- `closed(t)`: `t` mentions no free index variable, so it can be a kernel of its own.
- `subst(body, env)`: a scalar with index variables renamed; rules push it down to the
  leaves (binders are unique names, so there is no capture to avoid).
"""
from __future__ import annotations

from egglog import String, f64, i64, eq, ne, rewrite, rule, ruleset, set_, union

from eqsat.sorts import (
    Dims, Env, Ix, Ixs, Sc, Shp, Ten, Var, bind, bind_flat, closed, deep, dshape, dvars, extent, open_, red_depth,
    shape_of, subst, subst_ix, subst_ixs,
)
from ._patterns import PERMS_4D, all_perms, perm_str, shp


@ruleset
def ruleset(t: Ten, a: Ten, b: Ten, d: Dims, r: Dims, v: Var, w: Var, n: i64, m: i64, body: Sc, x: Sc, y: Sc,
            ix: Ix, jx: Ix, idx: Ixs, rest: Ixs, s: Shp, e: Env, s_env: Env, M: i64, N: i64, K: i64, B: i64, f: String,
            c: f64, name: String, c1: Sc, c2: Sc, k1: i64, k2: i64):
    # ---- list helpers
    yield rewrite(dshape(Dims.nil())).to(Shp.nil())
    yield rewrite(dshape(Dims.cons(v, n, r))).to(Shp.cons(n, dshape(r)))
    yield rewrite(dvars(Dims.nil())).to(Ixs.nil())
    yield rewrite(dvars(Dims.cons(v, n, r))).to(Ixs.cons(Ix.v(v), dvars(r)))
    yield rewrite(bind(Dims.nil(), Ixs.nil())).to(Env.nil())
    yield rewrite(bind(Dims.cons(v, n, r), Ixs.cons(ix, rest))).to(Env.cons(v, ix, bind(r, rest)))
    yield rewrite(bind_flat(Dims.nil(), Ixs.nil())).to(Env.flat())
    yield rewrite(bind_flat(Dims.cons(v, n, r), Ixs.cons(ix, rest))).to(Env.cons(v, ix, bind_flat(r, rest)))
    yield rule(eq(e).to(Env.nil())).then(deep(e))
    yield rule(eq(e).to(Env.cons(v, ix, s_env)), deep(s_env)).then(deep(e))

    # ---- extents of index variables (binders are unique, so each gets one value)
    yield rule(Dims.cons(v, n, r)).then(set_(extent(v)).to(n))
    yield rule(Sc.red(f, v, n, x)).then(set_(extent(v)).to(n))

    # ---- shapes
    yield rule(eq(t).to(Ten.compute(d, body))).then(union(shape_of(t)).with_(dshape(d)), dvars(d))
    yield rule(eq(t).to(Ten.fused(d, body, a))).then(union(shape_of(t)).with_(dshape(d)), dvars(d))
    yield rule(eq(t).to(Ten.matmul(a, b)), eq(shape_of(a)).to(shp(M, K)), eq(shape_of(b)).to(shp(K, N))).then(
        union(shape_of(t)).with_(shp(M, N)))
    yield rule(eq(t).to(Ten.matmul(a, b)), eq(shape_of(a)).to(shp(B, M, K)), eq(shape_of(b)).to(shp(B, K, N))).then(
        union(shape_of(t)).with_(shp(B, M, N)))
    yield rule(eq(t).to(Ten.matmul(a, b)), eq(shape_of(a)).to(shp(B, M, K)), eq(shape_of(b)).to(shp(K, N))).then(
        union(shape_of(t)).with_(shp(B, M, N)))
    yield rule(eq(t).to(Ten.matmul(a, b)), eq(shape_of(a)).to(shp(M, K)), eq(shape_of(b)).to(shp(B, K, N))).then(
        union(shape_of(t)).with_(shp(B, M, N)))
    yield rule(eq(t).to(Ten.slice(a, ix)), eq(shape_of(a)).to(Shp.cons(n, s))).then(union(shape_of(t)).with_(s))
    yield rule(eq(t).to(Ten.reshape(a, s))).then(union(shape_of(t)).with_(s))
    ns = [M, N, K, B]
    for p in list(all_perms(3)) + list(PERMS_4D):
        src = ns[:len(p)]
        yield rule(eq(t).to(Ten.transpose(a, perm_str(p))), eq(shape_of(a)).to(shp(*src))).then(
            union(shape_of(t)).with_(shp(*[src[q] for q in p])))

    # ---- closedness
    yield rule(eq(t).to(Ten.compute(d, body))).then(closed(t))
    yield rule(eq(t).to(Ten.fused(d, body, a))).then(closed(t))
    yield rule(eq(t).to(Ten.input(name))).then(closed(t))
    yield rule(eq(t).to(Ten.matmul(a, b)), closed(a), closed(b)).then(closed(t))
    yield rule(eq(t).to(Ten.transpose(a, f)), closed(a)).then(closed(t))
    yield rule(eq(t).to(Ten.slice(a, Ix.lit(n))), closed(a)).then(closed(t))
    yield rule(eq(t).to(Ten.reshape(a, s)), closed(a)).then(closed(t))

    # ---- open tensors: those that depend on a loop variable
    for ix_pat in (Ix.v(v), Ix.add(ix, jx), Ix.scale(ix, n)):
        yield rule(eq(t).to(Ten.slice(a, ix_pat))).then(open_(t))
    yield rule(eq(t).to(Ten.slice(a, ix)), open_(a)).then(open_(t))
    yield rule(eq(t).to(Ten.matmul(a, b)), open_(a)).then(open_(t))
    yield rule(eq(t).to(Ten.matmul(a, b)), open_(b)).then(open_(t))
    yield rule(eq(t).to(Ten.transpose(a, f)), open_(a)).then(open_(t))
    yield rule(eq(t).to(Ten.reshape(a, s)), open_(a)).then(open_(t))

    # ---- reduction depth (merge: max)
    yield rule(eq(x).to(Sc.lit(c))).then(set_(red_depth(x)).to(i64(0)))
    yield rule(eq(x).to(Sc.param(name))).then(set_(red_depth(x)).to(i64(0)))
    yield rule(eq(x).to(Sc.idx(ix))).then(set_(red_depth(x)).to(i64(0)))
    yield rule(eq(x).to(Sc.load(t, idx))).then(set_(red_depth(x)).to(i64(0)))
    for op in (Sc.add, Sc.sub, Sc.mul, Sc.div, Sc.max, Sc.min):
        yield rule(eq(x).to(op(y, body)), eq(red_depth(y)).to(n), eq(red_depth(body)).to(m)).then(
            set_(red_depth(x)).to(n.max(m)))
    yield rule(eq(x).to(Sc.fn(f, y)), eq(red_depth(y)).to(n)).then(set_(red_depth(x)).to(n))
    yield rule(eq(x).to(Sc.red(f, v, m, y)), eq(red_depth(y)).to(n)).then(set_(red_depth(x)).to(n + 1))
    yield rule(eq(x).to(Sc.select(f, y, body, c1, c2)), eq(red_depth(y)).to(n), eq(red_depth(body)).to(m),
               eq(red_depth(c1)).to(k1), eq(red_depth(c2)).to(k2)).then(set_(red_depth(x)).to(n.max(m).max(k1).max(k2)))

    # ---- explicit substitution
    yield rewrite(subst(Sc.lit(c), e)).to(Sc.lit(c))
    yield rewrite(subst(Sc.param(name), e)).to(Sc.param(name))
    yield rewrite(subst(Sc.idx(ix), e)).to(Sc.idx(subst_ix(ix, e)))
    for op in (Sc.add, Sc.sub, Sc.mul, Sc.div, Sc.max, Sc.min):
        yield rewrite(subst(op(x, y), e)).to(op(subst(x, e), subst(y, e)))
    yield rewrite(subst(Sc.fn(f, x), e)).to(Sc.fn(f, subst(x, e)))
    # a flat substitution (`bind_flat`) leaves reductions alone: the class of an epilogue's
    # body reading its product also holds the product's loop form (a reduction), and
    # copying that into every later reader nested one layer's reduction in the next's; on
    # a 3-layer loop chain one step grew the e-graph 80x (2k -> 164k e-nodes)
    yield rule(eq(x).to(subst(Sc.red(f, v, n, y), e)), deep(e)).then(union(x).with_(Sc.red(f, v, n, subst(y, e))))
    yield rewrite(subst(Sc.select(f, x, y, c1, c2), e)).to(
        Sc.select(f, subst(x, e), subst(y, e), subst(c1, e), subst(c2, e)))
    yield rule(eq(x).to(subst(Sc.load(t, idx), e)), closed(t)).then(union(x).with_(Sc.load(t, subst_ixs(idx, e))))
    yield rewrite(subst_ixs(Ixs.nil(), e)).to(Ixs.nil())
    yield rewrite(subst_ixs(Ixs.cons(ix, rest), e)).to(Ixs.cons(subst_ix(ix, e), subst_ixs(rest, e)))
    yield rewrite(subst_ix(Ix.v(v), Env.cons(v, ix, e))).to(ix)
    yield rewrite(subst_ix(Ix.v(v), Env.cons(w, ix, e))).to(subst_ix(Ix.v(v), e), ne(v).to(w))
    yield rewrite(subst_ix(Ix.v(v), Env.nil())).to(Ix.v(v))
    yield rewrite(subst_ix(Ix.v(v), Env.flat())).to(Ix.v(v))
    yield rewrite(subst_ix(Ix.lit(n), e)).to(Ix.lit(n))
    yield rewrite(subst_ix(Ix.add(ix, jx), e)).to(Ix.add(subst_ix(ix, e), subst_ix(jx, e)))
    yield rewrite(subst_ix(Ix.scale(ix, n), e)).to(Ix.scale(subst_ix(ix, e), n))

    # ---- affine index arithmetic
    yield rewrite(Ix.add(ix, Ix.lit(0))).to(ix)
    yield rewrite(Ix.add(Ix.lit(0), ix)).to(ix)
    yield rewrite(Ix.add(Ix.lit(n), Ix.lit(m))).to(Ix.lit(n + m))
    yield rewrite(Ix.scale(ix, 1)).to(ix)
