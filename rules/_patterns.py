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


# the permutations of four axes the rules know: the last two swapped (a batch of heads'
# transposed operands), the middle two swapped (attention's (B, S, H, D) <-> (B, H, S, D));
# each costs rules every call pays for, so not all 24
PERMS_4D = ((0, 1, 3, 2), (0, 2, 1, 3))


def all_perms(max_rank: int = 3):
    """Every permutation of 1..max_rank axes, as tuples."""
    for r in range(1, max_rank + 1):
        yield from permutations(range(r))
