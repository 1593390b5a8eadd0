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
would only move the offset elsewhere.

A store inside a loop that writes one element at every iteration, its value read from
what the iteration computed (`for k in range(K): acc += x[i, k] * w[k, j]; out[i, j] =
max(acc, 0.0)`), leaves the value of the last iteration: where the loop runs at least once
(its bounds are sizes, known here), nothing else in the loop reads or writes that buffer,
and nothing after the store in the loop changes what it reads, it is the same store made
once after the loop (`_sunk`), and the loop is a reduction with its epilogue; so are the
statements under `if k == K - 1:` at its last iteration.

A scalar set at the loop's first iteration (`if k == 0: acc = t1 else: acc += t2`) is an
accumulation from -0.0 set before the loop (`acc += (t1 if k == 0 else t2)`: -0.0 + t1 is t1,
bit for bit), and `if k == 0: acc = c` of a value the loop does not change is set before
it (`_first_iteration`).

Only the functional form is built from the normalized nest (its dataflow is checked on
it); the nest as written still runs as written.
"""
from __future__ import annotations

import copy

from .ir import (
    Alloc, Assign, Bin, Compare, Const, Dim, For, If, Select, Store, expr_reads, ie_canon, ie_eval, ie_names, idx_names,
    same_expr, written,
)
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
    loop = _inside(s, dims)
    return _shifted(loop, dims) or loop


def _inside(f: For, dims) -> For:
    """Loop `f` with the loops in its body normalized: each with what it sets at its first
    iteration set before it, what it stores at its last after it, then shifted (in that
    order: a condition on the loop's variable, `if k == K - 1`, keeps it from shifting)."""
    body = []
    for b in f.body:
        if isinstance(b, For):
            *pre, loop = _first_iteration(_inside(b, dims), dims)
            loop = _tail_out(loop, dims) or loop
            sunk = _sunk(loop, dims) or [loop]
            body += [*pre, _shifted(sunk[0], dims) or sunk[0], *sunk[1:]]
        else:
            body.append(normalize(b, dims))
    if len(body) == len(f.body) and all(a is b for a, b in zip(body, f.body)):
        return f
    loop = copy.copy(f)
    loop.body = body
    return loop


def _values(f: For, dims):
    """The values loop `f` runs through, where its bounds are sizes; else None."""
    if (ie_names(f.lo) | ie_names(f.hi)) - set(dims):
        return None
    return range(ie_eval(f.lo, dims), ie_eval(f.hi, dims), f.step)


def _at(cond, var: str, value: int, dims) -> bool:
    """`cond` is `var == value` (either way round)."""
    if not isinstance(cond, Compare) or cond.op != "==":
        return False
    for a, b in ((cond.a, cond.b), (cond.b, cond.a)):
        if isinstance(a, Dim) and a.name == var and _int(b, dims) == value:
            return True
    return False


def _int(e, dims):
    """The int an expression of integer literals and sizes is, else None."""
    if isinstance(e, Const):  # (the front end makes a literal's number a float: `k == 0` holds 0.0)
        v = e.value
        return int(v) if type(v) in (int, float) and v == v and float(v).is_integer() else None
    if isinstance(e, Dim):
        return dims.get(e.name)
    if isinstance(e, Bin) and e.op in ("+", "-", "*"):
        a, b = _int(e.a, dims), _int(e.b, dims)
        if a is None or b is None:
            return None
        return a + b if e.op == "+" else a - b if e.op == "-" else a * b
    return None


def _first_iteration(f: For, dims) -> list:
    """[statements before loop `f`, `f`] with a scalar or an element set at its first
    iteration made an accumulation from before it: `if k == 0: acc = t1 else: acc += t2` is
    `acc = -0.0` before the loop and `acc += (t1 if k == 0 else t2)` in it (`acc += t` where
    t1 and t2 are alike; -0.0 + t1 is t1, bit for bit); `if k == 0: acc = c` with c the same
    in every iteration is `acc = c` before it; alike for an element `h[i, j]` whose index does
    not move with k, where neither value reads h. Where the loop runs at least once (its
    bounds are sizes) and nothing in it mentions acc (h) before that `if`. [f] where there
    is none."""
    values = _values(f, dims)
    if not values:
        return [f]
    pre, body, seen = [], [], set()
    for s in f.body:
        got = None
        first = s.body[0] if isinstance(s, If) and len(s.body) == 1 else None
        target = _set_afresh(first, f.var)
        if target is not None and _at(s.cond, f.var, values[0], dims) and target not in seen:
            t1 = first.value
            other = s.orelse[0] if len(s.orelse) == 1 else None
            if _same_target(other, first) and other.aug and other.aug_op == "+" and other.value.ty is None and \
                    (isinstance(other, Assign) or target not in expr_reads(other.value)):
                t2 = other.value
                value = t1 if same_expr(t1, t2) else Select(s.loc, s.cond, t1, t2)
                start = copy.copy(first)
                start.value = Const(s.loc, -0.0)
                step = copy.copy(other)
                step.value = value
                got = [start], step
            elif not s.orelse and not expr_reads(t1, names=True) & ({f.var} | _written_in(f.body)):
                got = [first], None
        if got is not None:
            pre += got[0]
            if got[1] is not None:
                body.append(got[1])
        else:
            body.append(s)
        seen |= _mentioned(s)
    if not pre:
        return [f]
    loop = copy.copy(f)
    loop.body = body
    return [*pre, loop]


def _set_afresh(s, var: str):
    """The scalar or tensor that `s` sets afresh, a scalar value reading nothing of it: `acc =
    t`, or `h[i, j] = t` at an index that does not move with loop variable `var`; else None."""
    if isinstance(s, Assign) and not s.aug and s.value.ty is None and s.name not in expr_reads(s.value, names=True):
        return s.name
    if isinstance(s, Store) and not s.aug and s.value.ty is None and s.buf not in expr_reads(s.value) and \
            var not in idx_names(s.idx):
        return s.buf
    return None


def _same_target(s, first) -> bool:
    """Whether statement `s` writes what `first` (`_set_afresh`) does: the same scalar, or the
    same element."""
    if isinstance(first, Assign):
        return isinstance(s, Assign) and s.name == first.name
    return isinstance(s, Store) and s.buf == first.buf and tuple(s.idx) == tuple(first.idx)


def _leaves(stmts):
    """The assignments and stores of statements (inside `if`s too), or None where there is
    anything else (a loop, an allocation)."""
    out = []
    for s in stmts:
        if isinstance(s, If):
            inner = _leaves(s.body + s.orelse)
            if inner is None:
                return None
            out += inner
        elif isinstance(s, (Assign, Store)):
            out.append(s)
        else:
            return None
    return out


def _written_in(stmts) -> set:
    out = set()
    for s in stmts:
        out |= written(s)
    return out


def _sunk(f: For, dims):
    """[loop `f` without its stores of one element per iteration, those stores after it]
    (module doc), or None where there is none to move. The statements under `if k == last:`
    at the loop's last value of k move too, where they are assignments and stores that
    read nothing later statements of the loop write, do not read k, and write what no
    other statement of the loop mentions (`t = f(acc); out[i, j] = g(t)`)."""
    values = _values(f, dims)
    if not values:
        return None
    keep, moved = [], []
    for n, s in enumerate(f.body):
        if isinstance(s, If) and not s.orelse and _at(s.cond, f.var, values[-1], dims) and \
                (_leaves(s.body) is not None or n == len(f.body) - 1):
            stmts = s.body  # (run once, at the last iteration; loops too where it is the last statement)
        elif isinstance(s, Store) and not s.aug and s.buf not in expr_reads(s.value):
            stmts = [s]  # (run at every iteration, each the same store but the last one's value)
        else:
            stmts = None
        last = stmts is not None and isinstance(s, If) and n == len(f.body) - 1
        if stmts is not None and (_movable(stmts, f, n) or last and not _reads_var(stmts, f.var)):
            # (the loop's last statement, under `if k == last:`, runs after everything else of
            # the last iteration, which is right before the loop ends: after it, whatever
            # the loop wrote: `C[i, j] += a * b; if k == K - 1: C[i, j] = relu(C[i, j])`)
            moved += stmts
        else:
            keep.append(s)
    if not moved:
        return None
    loop = copy.copy(f)
    loop.body = keep
    return [loop, *moved]


def split_tail(f: For, dims) -> list | None:
    """A nest's own loop `f` run as [f without its last iteration's tail, the tail after it]
    where it ends in statements under `if k == last:` (directly, or at the end of the loops
    it ends with: `for k: for j: for i: C[i, j] += a[i, k] * b[k, j]; if k == K - 1: C[i, j]
    = gelu(C[i, j])`) that may run after the whole loop (`_tail_out`, `_sunk`): the same
    program, as statements of their own. None where there is no such tail. (`normalize`
    does this for the loops inside a nest; a nest's own loop is split by the lowering,
    which lowers the statements one by one.)"""
    values = _values(f, dims)
    if not values or not _sourced(f):
        return None
    loop = _tail_out(f, dims) or f
    end = loop.body[-1] if loop.body else None
    if not (isinstance(end, If) and not end.orelse and _at(end.cond, f.var, values[-1], dims)):
        return None
    sunk = _sunk(loop, dims)
    if sunk is None or sunk[0].body and sunk[0].body[-1] is end:  # (the tail stayed in the loop)
        return None
    return [_resourced(x) for x in sunk]


def _sourced(s) -> bool:
    """Every statement of nest `s` has its own source (`node`), each loop's and branch's
    body the sources of its statements in order, so statements moved between them can be
    given their source too (a part the lowering keeps runs its source as written)."""
    if isinstance(s, (For, If)):
        kids = s.body + (s.orelse if isinstance(s, If) else [])
        nodes = None if s.node is None else s.node.body + (s.node.orelse if isinstance(s, If) else [])
        return nodes is not None and len(nodes) == len(kids) and \
            all(getattr(k, "node", None) is n for k, n in zip(kids, nodes)) and all(_sourced(k) for k in kids)
    return getattr(s, "node", None) is not None


def _resourced(s):
    """Statement `s` with every loop's and branch's source rebuilt from its statements'
    (`_tail_out`, `_split_tail` and `_sunk` copy loops with other bodies: a copy kept the
    whole loop's source, so a part kept as written ran the loop and its tail again)."""
    if not isinstance(s, (For, If)):
        return s
    out = copy.copy(s)
    out.body = [_resourced(b) for b in s.body]
    out.node = copy.copy(s.node)
    out.node.body = [b.node for b in out.body]
    if isinstance(s, If):
        out.orelse = [_resourced(b) for b in s.orelse]
        out.node.orelse = [b.node for b in out.orelse]
    return out


def _tail_out(f: For, dims):
    """Loop `f` whose last statement is a loop ending in `if k == last: T` (k f's variable;
    directly, or at the end of a loop it ends with: an epilogue written inside the inner
    loops of a k-outer accumulation, `for k: for j: C[i, j] += a[i, k] * b[k, j]; if k == K
    - 1: C[i, j] = relu(C[i, j])`), with T moved out of those loops into loops of its own
    after them, under the same condition, where that is the same program (`_fissionable`):
    `_sunk` then moves it after f. Else None."""
    values = _values(f, dims)
    if not values or not f.body or not isinstance(f.body[-1], For):
        return None
    got = _split_tail(f.body[-1], f.var, values[-1], dims)
    if got is None:
        return None
    rest, last = got
    loop = copy.copy(f)
    loop.body = f.body[:-1] + rest + [last]
    return loop


def _split_tail(g: For, var: str, value: int, dims):
    """([loop g without its tail] or [], `if var == value:` over g running the tail alone)
    for a loop g ending in `if var == value: T`, directly or through the loop it ends with;
    None where it does not, or where running the tail after the whole loop changes what it
    does (`_fissionable`)."""
    if not g.body:
        return None
    end = g.body[-1]
    if isinstance(end, If) and not end.orelse and _at(end.cond, var, value, dims):
        head, guard, tail = g.body[:-1], end, end.body
    elif isinstance(end, For):
        got = _split_tail(end, var, value, dims)
        if got is None:
            return None
        rest, guard = got
        head, tail = g.body[:-1] + rest, guard.body
    else:
        return None
    if not _fissionable(head, tail, g.var):
        return None
    inner, after, last = copy.copy(g), copy.copy(g), copy.copy(guard)
    inner.body, after.body, last.body = head, tail, [after]
    return ([inner] if head else []), last


def _fissionable(body: list, tail: list, var: str) -> bool:
    """Whether loop `var`'s iterations may run `tail` after every iteration's `body` instead
    of after their own: both are stores, assignments, and loops and `if`s of those; every array both
    touch (one of them writing it) is read and written only at elements whose index is
    `var` itself on one axis (iteration v touches only its own elements); the scalars
    `tail` reads are none that `body` assigns, and the ones it assigns `body` does not
    read."""
    b, t = _Touch(body), _Touch(tail)
    if not (b.ok and t.ok):
        return False
    for name in (t.wrote & set(b.seen)) | (b.wrote & set(t.seen)):
        axes = {next((a for a, e in enumerate(idx) if e == ("name", var)), None)
                for idx in b.seen.get(name, []) + t.seen.get(name, [])}
        if len(axes) != 1 or None in axes:
            return False
    return not (t.reads & b.scalars) and not (b.reads & t.scalars)


class _Touch:
    """What statements touch: `seen` (tensor -> index tuples it is read or written at),
    `wrote` (tensors stored into), `scalars` (names assigned), `reads` (names read);
    `ok` False where a statement is other than a store, an assignment, an allocation, or a
    loop or an `if` of those."""

    def __init__(self, stmts):
        self.seen, self.wrote, self.scalars, self.reads, self.ok = {}, set(), set(), set(), True
        for st in stmts:
            self.visit(st)

    def visit(self, st):
        if isinstance(st, For):
            for b in st.body:
                self.visit(b)
        elif isinstance(st, Store):
            self.seen.setdefault(st.buf, []).append(tuple(st.idx))
            self.wrote.add(st.buf)
            self.reads |= expr_reads(st.value) | idx_names(st.idx)
            _indexed(st.value, self.seen)
        elif isinstance(st, Assign):
            self.scalars.add(st.name)
            self.reads |= expr_reads(st.value)
            _indexed(st.value, self.seen)
        elif isinstance(st, Alloc):
            self.scalars.add(st.name)
        elif isinstance(st, If):  # (what either branch touches, and what the condition reads)
            self.reads |= expr_reads(st.cond)
            _indexed(st.cond, self.seen)
            for b in st.body + st.orelse:
                self.visit(b)
        else:
            self.ok = False


def _indexed(e, seen: dict) -> None:
    """Each element read in expression `e`: its tensor -> the index tuples, into `seen`."""
    stack = [e]
    while stack:
        x = stack.pop()
        idx = getattr(x, "idx", None)
        if idx is not None and getattr(x, "base", None) is not None:
            seen.setdefault(x.base, []).append(tuple(idx))
        stack.extend(x.children())


def _reads_var(stmts, var: str) -> bool:
    return any(var in _mentioned(b) for b in stmts)


def _movable(stmts, f: For, n: int) -> bool:
    """Whether `stmts`, the `n`th statement of loop `f`'s body or inside it, can run after the
    loop instead: they do not read f's variable (a store's index included), nothing else in
    the loop mentions what they write, and nothing after them in the loop writes what they
    read."""
    reads = set()
    for b in stmts:
        reads |= _mentioned(b)
    writes = _written_in(stmts)
    return f.var not in reads and not any(writes & _mentioned(b) for k, b in enumerate(f.body) if k != n) and \
        not any(written(b) & reads for b in f.body[n + 1:])


def _mentioned(s) -> set:
    """Every name statement `s` reads or writes."""
    if isinstance(s, For):
        out = set(written(s)) | {s.var} | ie_names(s.lo) | ie_names(s.hi)
    elif isinstance(s, If):
        out = set(written(s)) | expr_reads(s.cond, names=True)
    if isinstance(s, (For, If)):
        for b in s.body + (s.orelse if isinstance(s, If) else []):
            out |= _mentioned(b)
        return out
    out = set(written(s))
    if isinstance(s, Store):
        out |= idx_names(s.idx) | expr_reads(s.value, names=True)
    elif isinstance(s, Assign):
        out |= expr_reads(s.value, names=True)
    return out


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
