"""Sanity: states that must never occur. A rule that fires here is a soundness bug."""
from __future__ import annotations

from egglog import String, f64, i64, eq, ne, panic, rule, ruleset

from eqsat.sorts import Ix, Sc, Shp, Ten


@ruleset
def ruleset(x: f64, y: f64, n: i64, m: i64, a: String, b: String, s: Shp, t: Shp):
    yield rule(eq(Sc.lit(x)).to(Sc.lit(y)), ne(x).to(y)).then(panic("two different constants were merged"))
    yield rule(eq(Ix.lit(n)).to(Ix.lit(m)), ne(n).to(m)).then(panic("two different index constants were merged"))
    yield rule(eq(Ten.input(a)).to(Ten.input(b)), ne(a).to(b)).then(panic("two different inputs were merged"))
    yield rule(eq(Shp.cons(n, s)).to(Shp.cons(m, t)), ne(n).to(m)).then(panic("a tensor got two different shapes"))
    yield rule(eq(Shp.nil()).to(Shp.cons(n, s))).then(panic("a tensor got two different ranks"))
