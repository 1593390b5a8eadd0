"""Small pattern builders shared by the rule files (lists written out as cons cells)."""
from __future__ import annotations

from itertools import permutations

from eqsat.sorts import Dims, Ix, Ixs, Shp


def ixs(*items) -> Ixs:
    out = Ixs.nil()
    for x in reversed(items):
        out = Ixs.cons(x, out)
    return out


def shp(*ns) -> Shp:
    out = Shp.nil()
    for n in reversed(ns):
        out = Shp.cons(n, out)
    return out


def dims(*pairs) -> Dims:
    out = Dims.nil()
    for v, n in reversed(pairs):
        out = Dims.cons(v, n, out)
    return out


def vs(*vars_) -> list:
    return [Ix.v(v) for v in vars_]


def perm_str(p) -> str:
    return " ".join(map(str, p))


def all_perms(max_rank: int = 3):
    """Every permutation of 1..max_rank axes, as tuples."""
    for r in range(1, max_rank + 1):
        yield from permutations(range(r))
