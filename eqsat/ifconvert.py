"""If-conversion: `if c: x = e` inside a loop nest becomes `x = e if c else x`.

The lowering builds functional terms by running a nest symbolically; a statement that may
or may not run has no term, so a nest holding an `if` used to stay as written. Predicating
each statement of a branch, in order, is the same program when:

  1. the branches hold only assignments and element stores (and nested ifs of the same
     kind): no loops, allocations or slice stores;
  2. the condition is evaluated as the `if` evaluated it: when a statement before the last
     writes what it reads, it is first computed once into a temporary (`eqsat_if_<n>`, a prefix
     the front end reserves);
  3. every index in a branch stays inside its tensor on every iteration, taken or not
     (a predicated store reads its old value, and both branches' values are computed):
     `if j > 0: c[j] = c[j - 1]` is left as it is.

A loop whose bounds depend on enclosing loops (a triangular nest, `for j in range(i + 1)`)
whose body is predicable runs over the constant hull of its bounds with the body under
the bound's condition, which is then predicated the same way (a masked form).

Then `if c: s1; s2 else: s3` is `s1'; s2'; s3'` with `x = v` turned into
`x = v if c else x` (the else branch: `x = x if c else v`) and a store alike, and an
accumulation `x += v` into `x += (v if c else 0.0)` (1.0 for `*=`, `/=`), so a conditional
sum stays a reduction (x + 0.0 differs from x only for x = -0.0); the values a
branch computes but does not keep are discarded by the select (a division by zero there is
an inf nobody reads). Only the functional form is built from the converted nest (its
dataflow is checked on it); the nest as written still runs as written.
"""
from __future__ import annotations

import copy
from itertools import count

from .bounds import leaving_axis, loop_values
from .ir import Assign, Bin, BoolOp, Compare, Const, Dim, For, If, Index, Ref, Select, Store, ie_names


def ifconvert(s, dims: dict, shapes: dict, path: tuple = ()):
    """A copy of statement `s` with every convertible `if` inside loops predicated."""
    if isinstance(s, For):
        widened = _widen(s, dims, shapes, path)
        if widened is not None:
            return widened
        body = []
        for b in s.body:
            out = ifconvert(b, dims, shapes, path + (s,))
            body.extend(out if isinstance(out, list) else [out])
        new = copy.copy(s)
        new.body = body
        return new
    if isinstance(s, If) and path:
        flat = _predicated(s, dims, shapes, path)
        return flat if flat is not None else s
    return s


_TEMPS = count()  # names of hoisted conditions: isl needs plain names; the front end refuses this prefix
_PREFIX = "eqsat_if_"


def _widen(f: For, dims, shapes, path):
    """A loop whose bounds depend on enclosing loops (`for j in range(i + 1)`: a triangular
    nest), run over the constant hull of its bounds with its body under the bound's
    condition (`for j in range(N): if j < i + 1: ...`), then predicated: the masked form
    the rules lift. None where the body is not predicable (loops inside, or an index out
    of bounds on the hull), or the bounds are constant already."""
    if f.step != 1 or not (ie_names(f.lo) | ie_names(f.hi)) - set(dims):
        return None
    ranges = _ranges(path, dims)
    try:
        lo, last = loop_values(f, ranges, dims)  # the hull: every value the loop may take
    except KeyError:
        return None
    if last < lo or any(not isinstance(b, (Assign, Store, If)) for b in f.body):
        return None
    hi = last + 1
    # the bound's condition: only the sides that depend on enclosing loops (a constant side
    # is the hull's own)
    conds = []
    if ie_names(f.lo) - set(dims):
        conds.append(Compare(f.loc, ">=", Dim(f.loc, f.var), _value(f.lo, f.loc)))
    if ie_names(f.hi) - set(dims):
        conds.append(Compare(f.loc, "<", Dim(f.loc, f.var), _value(f.hi, f.loc)))
    cond = conds[0] if len(conds) == 1 else BoolOp(f.loc, "and", tuple(conds))
    hull = For(f.loc, f.var, ("int", lo), ("int", hi), [If(f.loc, cond, list(f.body), [], node=None)],
               node=f.node, step=1)
    flat = _predicated(hull.body[0], dims, shapes, path + (hull,))
    if flat is None:
        return None
    hull.body = flat
    hull.exact_bounds = (f.lo, f.hi)  # for the dataflow analysis (dataflow.NestFlow._dom)
    return hull


def _value(ie, loc):
    """An index expression as a value expression (for a condition)."""
    tag = ie[0]
    if tag == "int":
        return Const(loc, float(ie[1]))
    if tag == "name":
        return Dim(loc, ie[1])
    if tag == "neg":
        return Bin(loc, "-", Const(loc, 0.0), _value(ie[1], loc))
    return Bin(loc, {"add": "+", "sub": "-", "mul": "*", "floordiv": "//", "mod": "%"}[tag], _value(ie[1], loc),
               _value(ie[2], loc))


def _ranges(path, dims) -> dict:
    ranges = {}
    for f in path:
        ranges[f.var] = loop_values(f, ranges, dims)
    return ranges


def _predicated(s: If, dims, shapes, path):
    """The branches of `s` as one list of predicated statements, or None."""
    stmts = []  # (statement, holds) or (statement, None) for an unconditional one
    for branch, holds in ((s.body, True), (s.orelse, False)):
        for b in branch:
            if isinstance(b, If):
                inner = _predicated(b, dims, shapes, path)
                if inner is None:
                    return None
                stmts += [(x, holds if not _is_temp(x) else None) for x in inner]
            elif isinstance(b, (Assign, Store)) and not (isinstance(b, Store) and len(b.idx) != len(shapes.get(b.buf, ()))):
                stmts.append((b, holds))
            else:
                return None
    for x, _ in stmts:
        if not _inside(x, dims, shapes, path):
            return None
    cond, head = s.cond, []
    # each predicated statement evaluates the condition again: if a statement before the
    # last writes what it reads, the condition is evaluated once, into a temporary, first
    reads = _names(s.cond)
    if any((x.name if isinstance(x, Assign) else x.buf) in reads for x, _ in stmts[:-1]):
        tmp = f"{_PREFIX}{next(_TEMPS)}"
        head = [Assign(s.loc, tmp, Select(s.loc, copy.deepcopy(s.cond), Const(s.loc, 1.0), Const(s.loc, 0.0)))]
        cond = Compare(s.loc, ">", Ref(s.loc, tmp), Const(s.loc, 0.5))
    return head + [x if holds is None else _guard(x, cond, holds) for x, holds in stmts]


def _is_temp(x) -> bool:
    return isinstance(x, Assign) and x.name.startswith(_PREFIX)


def _guard(x, cond, holds: bool):
    """`x` run only where `cond` is `holds`: its value selected against the old one."""
    c = copy.deepcopy(cond)
    if x.aug:  # `x += e` stays an accumulation: `x += (e if c else 0.0)` (1.0 for * and /)
        unit = Const(x.loc, 0.0 if x.aug_op == "+" else 1.0)
        val = Select(x.loc, c, x.value, unit, ty=x.value.ty) if holds else Select(x.loc, c, unit, x.value,
                                                                                   ty=x.value.ty)
        out = copy.copy(x)
        out.value = val
        return out
    if isinstance(x, Assign):
        old = Ref(x.loc, x.name, ty=x.value.ty)
        new = Bin(x.loc, x.aug_op, Ref(x.loc, x.name, ty=x.value.ty), x.value, ty=x.value.ty) if x.aug else x.value
        val = Select(x.loc, c, new, old, ty=x.value.ty) if holds else Select(x.loc, c, old, new, ty=x.value.ty)
        return Assign(x.loc, x.name, val)
    old = Index(x.loc, x.buf, tuple(x.idx), ty=None)
    cur = Index(x.loc, x.buf, tuple(x.idx), ty=None)
    new = Bin(x.loc, x.aug_op, cur, x.value, ty=x.value.ty) if x.aug else x.value
    val = Select(x.loc, c, new, old, ty=x.value.ty) if holds else Select(x.loc, c, old, new, ty=x.value.ty)
    return Store(x.loc, x.buf, tuple(x.idx), val)


def _names(e) -> set:
    out = set()
    if isinstance(e, Ref):
        out.add(e.name)
    elif isinstance(e, Index):
        out.add(e.base)
    for c in e.children():
        out |= _names(c)
    return out


def _inside(x, dims, shapes, path) -> bool:
    """Every index `x` uses stays inside its tensor on every iteration of `path`."""
    ranges = _ranges(path, dims)
    accesses = []

    def expr(e):
        if isinstance(e, Index):
            accesses.append((e.base, e.idx))
        for c in e.children():
            expr(c)

    expr(x.value)
    if isinstance(x, Store):
        accesses.append((x.buf, x.idx))
    for base, idx in accesses:
        shape = shapes.get(base)
        if shape is None:
            continue
        try:
            if leaving_axis(idx, shape, ranges, dims, path) is not None:
                return False
        except KeyError:  # a name that is neither a loop variable nor a dimension
            return False
    return True
