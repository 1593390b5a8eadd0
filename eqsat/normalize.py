"""Loop normalization: `for i in range(1, M + 1): ... y[i - 1, j] = ... x[i - 1, k]` is
`for i in range(M): ... y[i, j] = ... x[i, k]`, and `for k in range(K): ... x[K - 1 - k]`
is `for k in range(K - 1, -1, -1): ... x[k]` (the same values of k, in the same order).

A loop that starts at `lo` (a number or an expression of sizes) and steps by 1, whose
variable every element access reads or writes only as `i - lo` (1-based loops over a
0-based tensor, `range(N, 2 * N)` reading `x[i - N]`), runs the same iterations in the same
order as a loop from 0 with `i` standing for `i - lo`: each access then reads `x[i]`. The
program is the same (the substitution `i -> i + lo` is exact, bounds of inner loops
included); what changes is that every access is a plain loop variable, so the lowering
finds whole-tensor definitions and the rules find matmuls and fused epilogues, as for the
loop written from 0. A loop whose variable is read any other way (as a value, `x[i] * i`;
at another offset, `x[i] - x[i - 1]`; by a condition) is left as written: there the shift
would only move the offset elsewhere. Only the functional form is built from the
normalized nest (its dataflow is checked on it); the nest as written still runs as written.
"""
from __future__ import annotations

import copy

from .ir import Alloc, Assign, For, If, Store, ie_canon, ie_names
from .unsplit import _Keep, _map


def normalize(s, dims) -> object:
    """`s` (a statement of a nest) with every loop that can be normalized (module doc)
    starting at 0; `s` itself where none can."""
    if isinstance(s, If):
        body, orelse = [normalize(b, dims) for b in s.body], [normalize(b, dims) for b in s.orelse]
        if all(a is b for a, b in zip(body + orelse, s.body + s.orelse)):
            return s
        new = copy.copy(s)
        new.body, new.orelse = body, orelse
        return new
    if not isinstance(s, For):
        return s
    body = [normalize(b, dims) for b in s.body]
    loop = s
    if any(a is not b for a, b in zip(body, s.body)):
        loop = copy.copy(s)
        loop.body = body
    return _shifted(loop, dims) or loop


def _shifted(f: For, dims):
    """Loop `f` with plain accesses (module doc), or None where it is not normalized."""
    lo, hi, var = f.lo, f.hi, f.var
    if f.step != 1 or (ie_names(lo) | ie_names(hi)) - set(dims):
        return None
    accesses: list = []  # every element access's index expressions that mention the variable
    for b in f.body:
        _accesses(b, var, accesses)
    plain = ie_canon(("name", var))
    last = ("sub", ("add", lo, hi), ("int", 1))  # (lo + hi - 1: the mirror of lo)
    for shift, loop in (
            # from 0: i -> i + lo, over range(hi - lo)
            (("add", ("name", var), lo), (("int", 0), ("sub", hi, lo), 1)),
            # read backwards, `x[K - 1 - k]` over range(K): i -> lo + hi - 1 - i, run downward
            # from hi - 1 to lo, so i takes the same values in the same order as before
            (("sub", last, ("name", var)), (("sub", hi, ("int", 1)), ("sub", lo, ("int", 1)), -1))):
        if ie_canon(shift) == plain or not accesses or \
                any(ie_canon(_replace(e, var, shift)) != plain for e in accesses):
            continue

        def ie(e, shift=shift):
            if var not in ie_names(e):
                return e
            new = _replace(e, var, shift)
            return ("name", var) if ie_canon(new) == plain else new

        try:
            body = [_map(b, ie) for b in f.body]
        except _Keep:  # (the variable read as a value, `x[i] * i`: left as written)
            return None
        return For(f.loc, var, loop[0], loop[1], body, node=f.node, step=loop[2])
    return None


def _replace(e, var: str, by):
    """Index expression `e` with the name `var` replaced by `by`."""
    if e[0] == "name":
        return by if e[1] == var else e
    if e[0] == "int":
        return e
    return (e[0],) + tuple(_replace(c, var, by) for c in e[1:])


def _accesses(s, var: str, out: list) -> None:
    """The index expressions mentioning `var` of every element store and load in `s`; an
    inner loop that binds `var` again hides it."""
    if isinstance(s, For):
        if s.var != var:
            for b in s.body:
                _accesses(b, var, out)
        return
    if isinstance(s, If):
        _loads(s.cond, var, out)
        for b in s.body + s.orelse:
            _accesses(b, var, out)
        return
    if isinstance(s, Store):
        out.extend(e for e in s.idx if var in ie_names(e))
    if isinstance(s, (Store, Assign)):
        _loads(s.value, var, out)
    elif not isinstance(s, Alloc):
        out.append(("name", "eqsat_unknown_statement"))  # (never plain: the loop is left as written)


def _loads(e, var: str, out: list) -> None:
    idx = getattr(e, "idx", None)
    if idx is not None:
        out.extend(i for i in idx if var in ie_names(i))
    for c in e.children():
        _loads(c, var, out)
