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
the bound's condition, which is then predicated the same way (a masked form); where it
stores along an axis that holds the hull, over that whole axis. A loop with constant
bounds over part of the axis it stores along (`for i in range(M - 1)`) runs over the whole
axis the same way. A loop inside a branch is predicated in turn (`if c: for k: s` is
`for k: if c: s`, the condition hoisted first when the loop writes what it reads).

Stores along a diagonal or at a fixed index (`c[i, i] = 1.0`, `c[N - 1, 0] = x` also
outside any loop) first become total stores over the axes they fix (`for w: c[i, w] =
1.0 if w == i else c[i, w]`), so every store is indexed by plain loop variables.

A scalar local to a branch (set before it is read in every branch that mentions it, and
mentioned nowhere else in the nest) is renamed to a temporary and computed unguarded:
only guarded statements read it, so its value where the branch is not taken is unused.

The dataflow analysis keeps a widened loop's own bounds (the extra instances are no-ops),
and a guarded store claims "this statement where it writes, the value before elsewhere"
(`dataflow.Source.prev`); isl checks every claim on the converted nest.

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
import threading
from itertools import count

from .bounds import leaving_axis, loop_values
from .limits import check_deadline
from .ir import (
    Alloc, Assign, Bin, BoolOp, Call, Compare, Const, Dim, For, If, Index, Ref, Select, Store, expr_reads, ie_eval,
    ie_names, max_min,
    sum_chain,
    written,
)


def ifconvert(s, dims: dict, shapes: dict, path: tuple = ()):
    """A copy of statement `s` with every convertible `if` inside loops predicated, loops
    that cover part of the axis they store along widened to all of it, and stores along a
    diagonal or at a fixed index made total (module doc)."""
    outer = getattr(_MEMO, "memo", None)
    _MEMO.memo = {} if outer is None else outer
    try:
        return _convert(_total_stores(s, shapes, path), dims, shapes, path)
    finally:
        _MEMO.memo = outer


# What `_mentions` and `_killed` found for each statement (keyed by the statement object
# itself, which the memo keeps alive), for the duration of one `ifconvert`: every level of
# an if/elif chain asks again about the whole chain below it (and `_localized` about the
# whole nest), which was quadratic in the chain's length (100 branches: 1.8 s). Statements
# are never changed once made here: every change is made to a copy (`copy.copy`) before
# anything reads it.
_MEMO = threading.local()


def _convert(s, dims: dict, shapes: dict, path: tuple):
    if isinstance(s, For):
        widened = _widen(s, dims, shapes, path)
        if widened is None:
            widened = _widen_to_axis(s, dims, shapes, path)
        if widened is not None:
            return widened
        body = []
        for b in s.body:
            out = _convert(b, dims, shapes, path + (s,))
            body.extend(out if isinstance(out, list) else [out])
        new = copy.copy(s)
        new.body = _merged_accumulations(body, path + (s,))  # (`s += a[k]` then a converted `if`'s `s += ...`)
        return new
    if isinstance(s, If) and path:
        flat = _predicated(s, dims, shapes, path)
        return flat if flat is not None else s
    return s


_AXES = count()  # names of the loops that make a store total (reserved prefix, as below)


def _total_stores(s, shapes: dict, path: tuple):
    """A copy of `s` where a store that writes one element along some axis (a diagonal,
    `c[i, i] = 1.0`, or a fixed index, `c[0, j] = x[j]` or `c[N - 1, N - 1] = 1.0` outside any
    loop) writes the whole axis instead, its old value where the original did not write:

        c[i, i] = v   ->   for w in range(N): c[i, w] = v if w == i else c[i, w]

    The same program (the extra stores write back what they read), but every store is now
    indexed by loop variables on every axis, which the lowering needs."""
    if isinstance(s, For):
        new = copy.copy(s)
        new.body = [_total_stores(b, shapes, path + (s,)) for b in s.body]
        return new
    if isinstance(s, If):
        new = copy.copy(s)
        new.body = [_total_stores(b, shapes, path) for b in s.body]
        new.orelse = [_total_stores(b, shapes, path) for b in s.orelse]
        return new
    if isinstance(s, Store):
        return _scatter(s, shapes, path) or s
    return s


def _scatter(s: Store, shapes: dict, path: tuple):
    shape = shapes.get(s.buf)
    if shape is None or len(s.idx) != len(shape):
        return None
    loopvars = {f.var for f in path if isinstance(f, For)}
    seen, masked = set(), []
    for pos, ie in enumerate(s.idx):
        if ie[0] == "name" and ie[1] in loopvars and ie[1] not in seen:
            seen.add(ie[1])
        elif ie[0] == "name" and ie[1] in loopvars or not ie_names(ie) & loopvars:
            masked.append(pos)  # a loop variable already indexing another axis, or a fixed index
        else:
            return None  # shifted or split by a loop variable: another form
    if not masked:
        return None
    idx, conds, axes = list(s.idx), [], []
    for pos in masked:
        w = f"eqsat_w{next(_AXES)}"
        axes.append((w, shape[pos], s.idx[pos]))
        conds.append(Compare(s.loc, "==", Dim(s.loc, w), _value(s.idx[pos], s.loc)))
        idx[pos] = ("name", w)
    cond = conds[0] if len(conds) == 1 else BoolOp(s.loc, "and", tuple(conds))
    out = [_guard(Store(s.loc, s.buf, tuple(idx), s.value, aug=s.aug, aug_op=s.aug_op), cond, True, path)]
    for w, n, ie in reversed(axes):
        out = [For(s.loc, w, ("int", 0), ("int", n), out, node=None, step=1)]
        # (for the dataflow analysis, `dataflow.NestFlow._dom`: the one instance that writes;
        # the others write back what they read, no-ops, as a widened loop's extra ones are.
        # Taken for writes, they hid the earlier writer of the same element: a diagonal
        # written before a loop that writes its column made the column's final value look
        # overwritten, and the nest stayed a loop)
        out[0].exact_bounds = (ie, ("add", ie, ("int", 1)))
    return out[0]


def _widen_to_axis(f: For, dims, shapes, path):
    """A loop over part of the axis it stores along (`for i in range(M - 1): c[i, ...] = ...`),
    run over the whole axis with its body under `lo <= i < hi`, then predicated: the
    store's tensor is then a value over its whole axis. None where the body is not
    predicable or the loop stores along axes of different sizes."""
    if f.step != 1 or (ie_names(f.lo) | ie_names(f.hi)) - set(dims):
        return None
    n = _plain_axis(f, shapes)
    if n is None:
        return None
    lo, hi = ie_eval(f.lo, dims), ie_eval(f.hi, dims)
    if not 0 <= lo < hi <= n or (lo, hi) == (0, n):
        return None
    conds = []
    if lo > 0:
        conds.append(Compare(f.loc, ">=", Dim(f.loc, f.var), Const(f.loc, float(lo))))
    if hi < n:
        conds.append(Compare(f.loc, "<", Dim(f.loc, f.var), Const(f.loc, float(hi))))
    return _masked_loop(f, 0, n, conds, dims, shapes, path)


def _plain_axis(f: For, shapes, reads: bool = False) -> int | None:
    """The size of the axes that stores in loop `f` (with `reads`: loads) index with its
    plain variable, if they all have one size (and there is one); else None."""
    sizes: set = set()

    def add(name, idx):
        if name in shapes and len(idx) == len(shapes[name]):
            sizes.update(shapes[name][pos] for pos, ie in enumerate(idx) if ie == ("name", f.var))

    def expr(e):
        if isinstance(e, Index):
            add(e.base, e.idx)
        for c in e.children():
            expr(c)

    def stmts(body):
        for b in body:
            if isinstance(b, Store) and not reads:
                add(b.buf, b.idx)
            elif isinstance(b, (Assign, Store)) and reads:
                expr(b.value)
            elif isinstance(b, (For, If)):
                if isinstance(b, If) and reads:
                    expr(b.cond)
                stmts(list(b.body) + list(getattr(b, "orelse", [])))

    stmts(f.body)
    return sizes.pop() if len(sizes) == 1 else None


_TEMPS = count()  # names of hoisted conditions: isl needs plain names; the front end refuses this prefix
_PREFIX = "eqsat_if_"


def _widen(f: For, dims, shapes, path):
    """A loop whose bounds depend on enclosing loops (`for j in range(i + 1)`: a triangular
    nest), run over the constant hull of its bounds with its body under the bound's
    condition (`for j in range(N): if j < i + 1: ...`), then predicated: the masked form
    the rules lift (a loop inside is predicated in turn). None where the body is not
    predicable (an index out of bounds on the hull), or the bounds are constant already."""
    if f.step != 1 or not (ie_names(f.lo) | ie_names(f.hi)) - set(dims):
        return None
    ranges = _ranges(path, dims)
    try:
        lo, last = loop_values(f, ranges, dims)  # the hull: every value the loop may take
    except KeyError:
        return None
    if last < lo:
        return None
    hi = last + 1
    # where the loop stores along an axis that holds the hull, it runs over the whole axis
    # (values outside the hull fail the bound's condition)
    n = _plain_axis(f, shapes)
    if n is not None and 0 <= lo and hi <= n:
        lo, hi = 0, n
    elif (n := _plain_axis(f, shapes, reads=True)) is not None and 0 <= lo and hi <= n and (lo, hi) != (0, n):
        # a loop that only reads along an axis holding the hull (the k of `for k in
        # range(i + 1, M): c[i, j] += a[k, i] * b[k, j]`) runs over that whole axis too: a
        # masked sum over full rows and columns is a matmul of masked operands
        wide = _masked_loop(f, 0, n, _bound_conds(f, 0, n, dims), dims, shapes, path)
        if wide is not None:
            return wide
    return _masked_loop(f, lo, hi, _bound_conds(f, lo, hi, dims), dims, shapes, path)


def _bound_conds(f: For, lo: int, hi: int, dims) -> list:
    """The condition of loop f's bounds over [lo, hi): the sides that depend on enclosing
    loops, and a constant side narrower than the range run."""
    conds = []
    if ie_names(f.lo) - set(dims) or ie_eval(f.lo, dims) > lo:
        conds.append(Compare(f.loc, ">=", Dim(f.loc, f.var), _value(f.lo, f.loc)))
    if ie_names(f.hi) - set(dims) or ie_eval(f.hi, dims) < hi:
        conds.append(Compare(f.loc, "<", Dim(f.loc, f.var), _value(f.hi, f.loc)))
    return conds


def _masked_loop(f: For, lo: int, hi: int, conds: list, dims, shapes, path):
    """Loop `f` run over [lo, hi) with its body under the conjunction of `conds`, predicated;
    the dataflow analysis keeps f's own bounds (the extra iterations are no-ops)."""
    if any(not isinstance(b, (Assign, Store, If, For)) for b in f.body):
        return None
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
    """The branches of `s` as one list of predicated statements, or None. A scalar local to
    the branches (set before it is read in each, mentioned nowhere else in the nest) gets a
    temporary's name and is computed unguarded: only guarded statements read it."""
    got = _predicated_locals(s, dims, shapes, path)
    return None if got is None else got[0]


def _predicated_locals(s: If, dims, shapes, path, outside=None):
    """`_predicated`, and the names localized at this level or inside it: (statements,
    names) or None. `outside`: the names the nest mentions outside `s` (None: read off the
    nest, `path[0]`)."""
    check_deadline()  # (each level of an elif chain reads the levels inside it again)
    s, mine, merges, outside = _localized(s, path, outside)
    below: frozenset = frozenset()  # (the locals of the levels inside this one)
    stmts = []  # (statement, holds) or (statement, None) for an unconditional one
    for branch, holds in ((s.body, True), (s.orelse, False)):
        for b in branch:
            if isinstance(b, If):
                # what the nest mentions outside `b`: outside `s`, `s`'s condition, and the
                # other statements of `s` as renamed here
                around = set(outside)
                for x in s.body + s.orelse:
                    if x is not b:
                        around |= _mentions(x)
                got = _predicated_locals(b, dims, shapes, path, around)
                if got is None:
                    return None
                inner, theirs = got
                below |= theirs
                # a condition hoisted inside, this level's locals and the levels' inside it
                # (read only by statements guarded there and here) need no guard of this one;
                # everything else does. (An inner level's local guarded here read its
                # temporary before it was set: a triangle in a loop over part of its axis,
                # `for i in range(M - 1): for v in range(i + 1, M): acc = 0.0; ...`. Only the
                # inner levels' own locals: an outer level's accumulated inside stays guarded.)
                stmts += [(x, None if _is_hoisted(x) or _assigns(x, mine | theirs) else holds) for x in inner]
            elif isinstance(b, For):
                stmts.append((b, holds))
            elif isinstance(b, (Assign, Store)) and not (isinstance(b, Store) and len(b.idx) != len(shapes.get(b.buf, ()))):
                stmts.append((b, None if _assigns(b, mine) else holds))
            else:
                return None
    for x, _ in stmts:
        if not isinstance(x, For) and not _inside(x, dims, shapes, path):
            return None
    cond, head = s.cond, []
    # each predicated statement evaluates the condition again: if a statement before the
    # last writes what it reads (or a loop writes it: its later iterations would see it),
    # the condition is evaluated once, into a temporary, first
    reads = expr_reads(s.cond)
    before_last = stmts if merges else stmts[:-1]  # (the merges evaluate it after every statement)
    if (any(written(x) & reads for x, _ in before_last)
            or any(isinstance(x, For) and written(x) & reads for x, _ in stmts)):
        tmp = f"{_PREFIX}{next(_TEMPS)}"
        head = [Assign(s.loc, tmp, Select(s.loc, copy.deepcopy(s.cond), Const(s.loc, 1.0), Const(s.loc, 0.0)))]
        cond = Compare(s.loc, ">", Ref(s.loc, tmp), Const(s.loc, 0.5))
    out = list(head)
    for x, holds in stmts:
        if holds is None:
            out.append(x)
        elif isinstance(x, For):
            loop = _guard_loop(x, cond, holds, dims, shapes, path)
            if loop is None:
                return None
            out.append(loop)
        else:
            out.append(_guard(x, cond, holds, path))
    for x, then, other in merges:
        out.append(Assign(s.loc, x, Select(s.loc, copy.deepcopy(cond), Ref(s.loc, then), Ref(s.loc, other))))
    return _merged_accumulations(out, path), mine | below


def _carried(x, loops: tuple) -> bool:
    """Whether statement `x` (an accumulation: `s += e`, `y[i] = y[i] + a + b`) adds into a
    value carried across the iterations of one of `loops` (the loops around it): a reduction
    over that loop, which a plan may sum in any order. So a store's index does not move
    with that loop's variable, and in that loop its target (a scalar; for a store, the
    element at the same index) is written only by accumulations by the same operation:
    never set afresh in an iteration. Otherwise each iteration runs it once in sequence,
    and it keeps its own order and bits (`s = x[i]; s += y[i]; s += z[i]` is (x + y) + z,
    and a -0.0 stays -0.0 where its guard is false)."""
    if not isinstance(x, (Assign, Store)):
        return False
    op = x.aug_op if x.aug else "+"
    store = isinstance(x, Store)
    name = x.buf if store else x.name
    moves = {n for ie in x.idx for n in ie_names(ie)} if store else set()

    def accumulates(s) -> bool:
        return s.aug_op == op if s.aug else op == "+" and sum_chain(s) is not None

    def ok(s) -> bool:
        if isinstance(s, (For, If)):
            return all(ok(b) for b in s.body + (s.orelse if isinstance(s, If) else []))
        if isinstance(s, Alloc):
            return s.name != name
        if isinstance(s, Assign) and s.name == name:
            return not store and accumulates(s)
        if store and isinstance(s, Store) and s.buf == name and tuple(s.idx) == tuple(x.idx):
            return accumulates(s)
        return True

    return any(loop.var not in moves and all(ok(b) for b in loop.body) for loop in loops)


def _merged_accumulations(stmts: list, loops: tuple) -> list:
    """Adjacent accumulations into one scalar by the same operation, the later reading
    nothing the earlier set, as one: `s += (a if c else 0.0)` then `s += (0.0 if c else -b)`
    (the two branches of `if c: s += a else: s -= b`) is `s += ((a if c else 0.0) + (0.0
    if c else -b))`, so a loop around it is one reduction, not a loop whose scalar "is
    updated by several statements". A sum in another order: the same up to rounding, as
    every reduction a plan computes; so only where the scalar is carried across one of
    `loops`, the loops around them (`_carried`): a scalar set afresh in each iteration
    keeps its statements' order."""
    out: list = []
    for x in stmts:
        last = out[-1] if out else None
        if (isinstance(x, Assign) and isinstance(last, Assign) and x.aug and last.aug and x.name == last.name
                and x.aug_op == last.aug_op in ("+", "*") and x.value.ty is None and last.value.ty is None
                and x.name not in expr_reads(x.value) and not _is_hoisted(x) and _carried(x, loops)):
            merged = copy.copy(last)
            merged.value = Bin(last.loc, x.aug_op, last.value, x.value)
            out[-1] = merged
        else:
            out.append(x)
    return out


def _localized(s: If, path, outside=None) -> tuple:
    """`s` with each scalar local to its branches renamed to a fresh temporary: in every
    branch that mentions it, its first mention is a plain assignment at the branch's top
    level, and nothing else in the nest (the condition included) mentions it. Its value on
    entry to a branch is then never read, so computing it where the branch is not taken
    changes nothing the guarded statements read. (After the nest, the program reads it
    from the nest as written: the converted nest no longer writes it.) A name the other
    branch mentions but never reads before setting it (an `elif` chain whose levels each
    set their own `u` first) is local to this branch too: it is renamed here only, and the
    other branch's level localizes its own. Returns the new `if`, the new names, the merges
    and the names mentioned outside `s` (its condition's included). A name an enclosing
    level renamed is never local here (its mentions outside this branch are not all in
    view): it stays guarded."""
    # read off the nest as written (which holds no copy this conversion made: where `s` or
    # its statements are copies, everything in the nest counts as outside) and, for a level
    # inside another, what the level around saw outside it and its other statements: each
    # holds every name mentioned outside `s`, so both do
    inside = {id(s)} | {id(b) for b in s.body + s.orelse}  # a hull's `if` is new: its statements are not
    in_nest = _mentions(path[0], skip=inside) if path else frozenset()
    outside = set(in_nest) if outside is None else set(outside) & in_nest
    outside |= expr_reads(s.cond)
    around = frozenset(outside)  # (for the levels inside: before this level's additions)
    mapping = {}
    kills, kept = [], []
    for branch in (s.body, s.orelse):
        killed, seen = _killed(branch), set()
        for b in branch:
            seen |= _mentions(b)
        kills.append(killed)
        killed = {k for k in killed if not k.startswith(_PREFIX)}
        for name in killed - outside:
            mapping[name] = mapping.get(name) or f"{_PREFIX}{name}_{next(_TEMPS)}"
        for name in _live_in(branch):
            mapping.pop(name, None)  # this branch may read it before setting it
            outside.add(name)
        kept.append(seen - killed)  # (mentioned, set before every read: not renamed here)
    # set first in both branches and read after the `if` (or renamed by an enclosing level,
    # whose reads are not in view): each branch sets a temporary of its own, computed
    # unguarded, and one unguarded statement after both selects between them, so the value
    # on entry is never read (guarded in place, `o = t if c else o` read `o` before any
    # assignment where both branches set it: `if t > 0: o = t else: o = 0.0`)
    both = (kills[0] & kills[1]) - set(mapping) - expr_reads(s.cond)
    merges = [(x, f"{_PREFIX}{x}_{next(_TEMPS)}", f"{_PREFIX}{x}_{next(_TEMPS)}") for x in sorted(both)]
    if not mapping and not merges:
        return s, frozenset(), [], around
    new = copy.copy(s)
    body_map = {k: v for k, v in mapping.items() if k not in kept[0]}
    else_map = {k: v for k, v in mapping.items() if k not in kept[1]}
    new.body = [_rename(b, {**body_map, **{x: t for x, t, _ in merges}}) for b in s.body]
    new.orelse = [_rename(b, {**else_map, **{x: e for x, _, e in merges}}) for b in s.orelse]
    return new, frozenset(mapping.values()) | {t for _, *ts in merges for t in ts}, merges, around


def _live_in(branch: list) -> frozenset:
    """The scalars some way through `branch` may read before setting them (a loop: every
    name it mentions)."""
    live, set_ = set(), set()  # (set_: set on every way through what came before)
    for b in branch:
        if isinstance(b, Assign):
            reads = expr_reads(b.value) | ({b.name} if b.aug else set())
            live |= reads - set_
            if not b.aug and b.value.ty is None:
                set_.add(b.name)
        elif isinstance(b, Store):
            live |= expr_reads(b.value) - set_
        elif isinstance(b, If):
            live |= (expr_reads(b.cond) | _live_in_both(b)) - set_
            if b.orelse:
                set_ |= _killed_both(b)
        else:
            live |= _mentions(b) - set_
    return frozenset(live)


def _live_in_both(b: If) -> frozenset:
    """`_live_in` of either branch of `b`, once per `ifconvert`."""
    return _once("live", b, lambda x: _live_in(x.body) | _live_in(x.orelse))


def _killed(branch: list) -> set:
    """The scalars a branch sets before anything else there mentions them: its first
    mention a plain assignment at its top level, of a value that does not read it."""
    killed, seen = set(), set()
    for b in branch:
        if (isinstance(b, Assign) and not b.aug and b.value.ty is None and b.name not in seen
                and b.name not in expr_reads(b.value) and not _is_hoisted(b)):
            killed.add(b.name)
        elif isinstance(b, If) and b.orelse:  # (an `elif` chain: set first on every way through it)
            killed |= _killed_both(b) - seen - expr_reads(b.cond)
        seen |= _mentions(b)
    return killed


def _once(kind: str, b: If, compute) -> frozenset:
    """`compute(b)`, once per `ifconvert` for each (kind, statement)."""
    memo = getattr(_MEMO, "memo", None)
    got = memo.get((kind, b)) if memo is not None else None
    if got is None:
        got = compute(b)
        if memo is not None:
            memo[(kind, b)] = got
    return got


def _killed_both(b: If) -> frozenset:
    """What both branches of `b` kill (`_killed`), once per `ifconvert`."""
    return _once("killed", b, lambda x: frozenset(_killed(x.body) & _killed(x.orelse)))


def _mentions(x, skip=frozenset()) -> frozenset:
    """Scalar names statement `x` reads or assigns (a loop or if: anywhere inside, except
    in the statements whose ids are in `skip`)."""
    return _mentions_in(x, skip, getattr(_MEMO, "memo", None))[0]


def _mentions_in(x, skip, memo) -> tuple:
    """(`_mentions(x, skip)`, whether no statement in `skip` was met): what no statement
    in `skip` changed is what `x` mentions in all, kept in `memo` (None: not kept). A kept
    answer is used for a statement holding others only where nothing is skipped (whether
    a statement in `skip` is inside it is not kept)."""
    if id(x) in skip:
        return frozenset(), False
    got = memo.get(x) if memo is not None and (not skip or isinstance(x, (Assign, Store))) else None
    if got is not None:
        return got, True
    clean = True
    if isinstance(x, Assign):
        out = frozenset({x.name}) | expr_reads(x.value)
    elif isinstance(x, Store):
        out = frozenset(expr_reads(x.value))
    else:
        parts = [expr_reads(x.cond)] if isinstance(x, If) else []
        for b in list(getattr(x, "body", [])) + list(getattr(x, "orelse", [])):
            names, ok = _mentions_in(b, skip, memo)
            parts.append(names)
            clean = clean and ok
        out = frozenset().union(*parts)
    if clean and memo is not None:
        memo[x] = out
    return out, clean


def _rename(x, mapping: dict):
    """A copy of statement `x` with the scalars in `mapping` renamed."""
    x = copy.copy(x)
    if isinstance(x, Assign):
        x.name = mapping.get(x.name, x.name)
    if isinstance(x, (Assign, Store)):
        x.value = _rename_expr(x.value, mapping)
    if isinstance(x, If):
        x.cond = _rename_expr(x.cond, mapping)
        x.orelse = [_rename(b, mapping) for b in x.orelse]
    if isinstance(x, (For, If)):
        x.body = [_rename(b, mapping) for b in x.body]
    return x


def _rename_expr(e, mapping: dict):
    e = copy.deepcopy(e)
    stack = [e]
    while stack:
        n = stack.pop()
        if isinstance(n, Ref) and n.name in mapping:
            n.name = mapping[n.name]
        stack.extend(n.children())
    return e


def _guard_loop(f: For, cond, holds: bool, dims, shapes, path):
    """Loop `f` run only where `cond` is `holds`: the same loop with the condition moved
    inside it (`if c: for k: s` is `for k: if c: s`, since nothing in the loop writes what
    `c` reads: the caller hoisted it otherwise), its body then predicated; a loop whose
    bounds depend on enclosing loops is widened to its hull. None where it cannot be."""
    c = copy.deepcopy(cond)
    loop = copy.copy(f)
    loop.body = [If(f.loc, c, list(f.body), [], node=None) if holds else If(f.loc, c, [], list(f.body), node=None)]
    if (ie_names(f.lo) | ie_names(f.hi)) - set(dims):
        return _widen(loop, dims, shapes, path)
    widened = _widen_to_axis(loop, dims, shapes, path)
    if widened is not None:
        return widened
    flat = _predicated(loop.body[0], dims, shapes, path + (loop,))
    if flat is None:
        return None
    loop.body = flat
    return loop


def _assigns(x, names) -> bool:
    return isinstance(x, Assign) and x.name in names


def _is_hoisted(x) -> bool:
    """A hoisted condition's temporary (`eqsat_if_<n>`; a renamed local is `eqsat_if_<name>_<n>`)."""
    return isinstance(x, Assign) and x.name.startswith(_PREFIX) and x.name[len(_PREFIX):].isdigit()


def _guard(x, cond, holds: bool, loops: tuple):
    """`x` run only where `cond` is `holds`: its value selected against the old one. `loops`:
    the loops around it."""
    check_deadline()  # (an elif chain of n branches guards its statements n^2 / 2 times)
    c = copy.deepcopy(cond)
    carried = _carried(x, loops)
    chain = sum_chain(x) if not x.aug and carried else None
    if chain is not None:  # `y[i] = y[i] + a + b` is `y[i] += a + b` here, so it stays an accumulation
        x = copy.copy(x)
        x.aug, x.aug_op, x.value = True, "+", chain[1]
    if x.aug and (carried or x.aug_op != "+"):
        # `x += e` carried across the loop stays an accumulation: `x += (e if c else 0.0)` (a
        # reduction's zero, whose sign it does not keep); `x *= e` is `x *= (e if c else 1.0)`
        # (and /), exact. `x += e` set afresh each iteration is selected against x below: a
        # -0.0 plus 0.0 would be 0.0
        unit = Const(x.loc, 0.0 if x.aug_op == "+" else 1.0)
        val = Select(x.loc, c, x.value, unit, ty=x.value.ty) if holds else Select(x.loc, c, unit, x.value,
                                                                                   ty=x.value.ty)
        out = copy.copy(x)
        out.value = val
        return out
    if isinstance(x, Assign) and not x.aug and x.value.ty is None and max_min(x) is not None:
        # `m = max(m, e)` stays an accumulation: `m = max(m, e if c else -inf)` (+inf for
        # min); max(m, -inf) is m, a NaN m included, as when the statement does not run
        e = x.value.args[1]
        unit = Const(x.loc, float("-inf") if x.value.fn == "max" else float("inf"))
        pick = Select(x.loc, c, e, unit, ty=e.ty) if holds else Select(x.loc, c, unit, e, ty=e.ty)
        out = copy.copy(x)
        out.value = Call(x.value.loc, x.value.fn, (x.value.args[0], pick), ty=x.value.ty)
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
    return Store(x.loc, x.buf, tuple(x.idx), val, guarded=True)


def _inside(x, dims, shapes, path) -> bool:
    """The element `x` stores stays inside its tensor on every iteration of `path`. Its
    reads may leave on iterations where its guard is false: the lowered terms' loads are
    total (a load outside its tensor reads some element of it, or 0, on both backends), and
    the select drops what such a read computes."""
    ranges = _ranges(path, dims)
    accesses = [(x.buf, x.idx)] if isinstance(x, Store) else []
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
