"""Loops written in pieces, put back together before the functional form is built (as
`eqsat/unsplit.py` merges split loops): what the pieces run is one loop, so the lowering
finds full-range reductions and the rules the matmul and its epilogue, whatever way the
range was cut.

- Adjacent loops over contiguous ranges with the same body: `for k in range(a, b): S(k)`
  then `for k in range(b, c): S(k)` is `for k in range(a, c): S(k)` (a <= b <= c).
- A peeled iteration: statements just before a loop that are its body at `lo - 1`, or
  just after it that are its body at `hi`, are that loop from `lo - 1`, or to `hi + 1`
  (step 1; the loop ran at least zero times as written).
- An accumulator started at the first term (`acc = E(0)` before
  `for k in range(1, K): acc += E(k)`; a store alike) is started at -0.0 and the loop
  extended to the first term: -0.0 + E(0) is E(0) for every value (-0.0 is the exact
  additive identity; 0.0 is not: 0.0 + -0.0 is 0.0), and the lowering folds `-0.0 +`
  away (`terms.binop`), so the sum is the reduction over the whole range.
- An unrolled body: `for k in range(a, b, s)` whose body is s copies of one statement
  list at k, k + 1, ..., k + s - 1 is `for k in range(a, b)` (s dividing b - a); one
  accumulation of s such terms (`acc += E(k) + E(k + 1)`) is first s accumulations, the
  same terms regrouped, as any reduction's are.

Exact but for that regrouping: the same statements run in the same order, on the same values (what the lowering
then makes of a loop, a reduction summed in any order, is as for any other loop). Only the functional form is
built from the result (its dataflow is checked on it); the nest as written still runs as
written. Statements are compared with their indices as affine maps (`k + 1` is `1 + k`),
ignoring locations.
"""
from __future__ import annotations

import copy
from collections import Counter
from dataclasses import dataclass

from .ir import Assign, Bin, Const, Dim, Expr, For, If, Index, NotAffine, Ref, Stmt, Store, idx_names, ie_affine

_SKIP = ("loc", "node", "ty")  # fields that do not change what a statement computes


class _No(Exception):
    """This rewrite does not apply."""


@dataclass(frozen=True)
class _Ctx:
    views: frozenset  # the names in the nest bound to views of tensors
    mentions: Counter  # how often the nest names each scalar (assigned or read)


def reroll(s, dims: dict, views=(), ctx: "_Ctx | None" = None):
    """A copy of statement `s` with its pieces put back together (see above); `s` itself
    where nothing changes. `views`: the names in `s` bound to views of tensors."""
    if ctx is None:
        ctx = _Ctx(frozenset(views), Counter(x.name for x in _walk([s]) if isinstance(x, (Assign, Ref))))
    if isinstance(s, For):
        body = _block(s.body, dims, ctx)
        if body is s.body:
            return s
        out = copy.copy(s)
        out.body = body
        return out
    if isinstance(s, If):
        body, orelse = _block(s.body, dims, ctx), _block(s.orelse, dims, ctx)
        if body is s.body and orelse is s.orelse:
            return s
        out = copy.copy(s)
        out.body, out.orelse = body, orelse
        return out
    return s


def _block(stmts: list, dims: dict, ctx) -> list:
    out = [reroll(x, dims, ctx=ctx) for x in stmts]
    changed = any(a is not b for a, b in zip(out, stmts))
    while True:
        step = _one_step(out, dims, ctx)
        if step is None:
            return out if changed else stmts
        out, changed = step, True


def _one_step(stmts: list, dims: dict, ctx) -> list | None:
    """`stmts` with one rewrite applied, or None where none applies."""
    for p, f in enumerate(stmts):
        if not isinstance(f, For):
            continue
        for rewrite in (_unrolled, _peeled_before, _peeled_after, _first_term, _adjacent):
            try:
                return rewrite(stmts, p, f, dims, ctx)
            except (_No, NotAffine, KeyError):
                continue
    return None


# ------------------------------------------------------------------ the rewrites
def _unrolled(stmts, p, f: For, dims, ctx):
    s = f.step
    if s < 2 or not f.body or _const(("sub", f.hi, f.lo), dims) % s:
        raise _No
    if len(f.body) == 1:
        f = _terms_apart(f, dims, ctx.views)
    body = f.body if _copies(f.body, f, dims) else _deinterleaved(f, dims, ctx)
    if body is None or not _copies(body, f, dims):
        raise _No
    g = copy.copy(f)
    g.body, g.step = body[:len(body) // s], 1
    return stmts[:p] + [g] + stmts[p + 1:]


def _copies(body: list, f: For, dims) -> bool:
    """Whether `body` is f.step copies of its first part at f.var, f.var + 1, ..."""
    s = f.step
    if len(body) % s:
        return False
    m = len(body) // s
    first = body[:m]
    try:
        _plain_var(first, f.var)
    except _No:
        return False
    return all(_same(body[j * m:(j + 1) * m], _at(first, f.var, ("add", ("name", f.var), ("int", j))), dims)
               for j in range(1, s))


def _deinterleaved(f: For, dims, ctx) -> list | None:
    """A register-blocked body (`a0 = 0; a1 = 0; for k: a0 += E(j); a1 += E(j + 1);
    y[i, j] = a0; y[i, j + 1] = a1` in a loop stepping by 2) as its copies one after the
    other, each copy's scalars named as the first's: an inner loop of independent scalar
    accumulations split into one loop each (each reads only its own accumulator), the
    statements grouped into chains that share scalars, the chains placed one after the
    other where no statement moved past another of a different chain touches a tensor the
    other writes, and the chains' scalars renamed position by position (they are private
    to the iteration: each chain sets them first, as the copy check then requires). Same
    values for every tensor; the renamed scalars' own final values are not this form's
    (the lowering then takes them from the nest as written). None where that fails."""
    body: list = []
    for x in f.body:
        if isinstance(x, If):
            return None
        if isinstance(x, For) and len(x.body) > 1 and all(
                isinstance(b, Assign) and b.aug and b.value.ty is None for b in x.body):
            names = [b.name for b in x.body]
            others = (r for b in x.body for r in _walk(b.value) if isinstance(r, Ref) and r.name != b.name)
            if len(set(names)) == len(names) and not any(r.name in names for r in others):
                for b in x.body:
                    one = copy.copy(x)
                    one.body = [b]
                    body.append(one)
                continue
        body.append(x)
    scalars = {x.name for x in _walk(body) if isinstance(x, Assign)}
    if f.var in scalars:
        return None
    chain_of: list = []  # statement -> chain (union of statements sharing a scalar)
    owner: dict = {}  # scalar -> chain
    for x in body:
        names = {y.name for y in _walk(x) if isinstance(y, (Assign, Ref))} & scalars
        if not names:
            return None  # (a statement of no chain: where it goes is not clear)
        chains = {owner[n] for n in names if n in owner}
        if len(chains) > 1:
            return None
        c = chains.pop() if chains else len(set(owner.values()))
        for n in names:
            owner[n] = c
        chain_of.append(c)
    if len(set(chain_of)) != f.step:
        return None
    order = sorted(range(len(body)), key=lambda k: (chain_of[k], k))
    for a in range(len(body)):  # every pair the grouping swaps must commute on tensors
        for b in range(a + 1, len(body)):
            if chain_of[a] > chain_of[b] and _tensor_conflict(body[a], body[b]):
                return None
    grouped = [body[k] for k in order]
    m = len(body) // f.step
    if len(body) % f.step:
        return None
    inside = Counter(x.name for x in _walk(body) if isinstance(x, (Assign, Ref)))
    if any(ctx.mentions[n] != inside[n] for n in scalars):
        return None  # (a scalar named elsewhere in the nest: its value there would change)
    for t in range(f.step):  # each chain sets its scalars before it reads them
        seen: set = set()
        for x in grouped[t * m:(t + 1) * m]:
            reads = {y.name for y in _walk(x) if isinstance(y, Ref)} & scalars
            if reads - seen or any(isinstance(y, Assign) and y.aug and y.name not in seen for y in _walk(x)):
                return None
            if isinstance(x, Assign):  # (set at the chain's top level: an inner loop may not run)
                seen.add(x.name)
    out = grouped[:m]
    for t in range(1, f.step):
        part = grouped[t * m:(t + 1) * m]
        rename: dict = {}
        for mine, first in zip(part, out[:m]):
            for x, y in zip(_walk(mine), _walk(first)):
                if isinstance(x, Assign) and isinstance(y, Assign) and x.name != y.name:
                    if rename.setdefault(x.name, y.name) != y.name:
                        return None
        out += _renamed(part, rename)
    return out


def _tensor_conflict(a, b) -> bool:
    """Whether statements `a` and `b` touch one tensor, one of them writing it."""
    def touched(x):
        reads = {y.base for y in _walk(x) if isinstance(y, Index)}
        writes = {y.buf for y in _walk(x) if isinstance(y, Store)}
        return reads, writes
    ra, wa = touched(a)
    rb, wb = touched(b)
    return bool(wa & (rb | wb) or wb & ra)


def _renamed(x, rename: dict):
    """`x` with the scalars in `rename` renamed (new statements and expressions)."""
    if not rename:
        return x
    if isinstance(x, list):
        return [_renamed(e, rename) for e in x]
    if isinstance(x, tuple) and not _is_ie(x):
        return tuple(_renamed(e, rename) for e in x)
    if isinstance(x, (Expr, Stmt)):
        new = copy.copy(x)
        for k, v in vars(x).items():
            if k not in _SKIP:
                setattr(new, k, _renamed(v, rename))
        if isinstance(new, (Assign, Ref)) and new.name in rename:
            new.name = rename[new.name]
        return new
    return x


def _terms_apart(f: For, dims, views) -> For:
    """`for k in range(a, b, s): acc += E(k) + E(k + 1) + ... + E(k + s - 1)` (terms in any
    order) as s accumulations `acc += E(k + j)` in order of j, which `_unrolled` then rolls:
    the same terms summed, regrouped (a sum into an accumulator is a reduction, whose
    order the functional form leaves open, as for every reduction); else `f`."""
    acc = f.body[0]
    if not isinstance(acc, (Assign, Store)) or not acc.aug or acc.aug_op != "+" or getattr(acc, "guarded", False) or \
            isinstance(acc, Assign) and acc.value.ty is not None or \
            isinstance(acc, Store) and f.var in idx_names(acc.idx):
        return f
    terms = _addends(acc.value)
    if len(terms) != f.step or _reads_accumulator(acc, views):
        return f  # (a term reading the accumulator sees another value once they are apart)
    for base in terms:
        ordered, left = [], list(terms)
        for j in range(f.step):
            want = _at(base, f.var, ("add", ("name", f.var), ("int", j)))
            hit = next((t for t in left if _same(t, want, dims)), None)
            if hit is None:
                break
            left.remove(hit)
            ordered.append(hit)
        else:
            g = copy.copy(f)
            g.body = []
            for t in ordered:
                one = copy.copy(acc)
                one.value = t
                g.body.append(one)
            return g
    return f


def _reads_accumulator(acc, views) -> bool:
    """Whether accumulation `acc`'s value reads the accumulator (a scalar's name; a store's
    tensor, or any view, which may be it)."""
    for x in _walk(acc.value):
        if isinstance(x, Ref) and isinstance(acc, Assign) and x.name == acc.name or \
                isinstance(x, Index) and isinstance(acc, Store) and (x.base == acc.buf or x.base in views):
            return True
    return False


def _addends(e) -> list:
    if isinstance(e, Bin) and e.op == "+":
        return _addends(e.a) + _addends(e.b)
    return [e]


def _peeled_before(stmts, p, f: For, dims, ctx):
    m = len(f.body)
    if f.step != 1 or m == 0 or p < m or _const(("sub", f.hi, f.lo), dims) < 0:
        raise _No
    _plain_var(f.body, f.var)
    if not _same(stmts[p - m:p], _at(f.body, f.var, _plus(f.lo, -1, dims)), dims):
        raise _No
    g = copy.copy(f)
    g.lo = _plus(f.lo, -1, dims)
    return stmts[:p - m] + [g] + stmts[p + 1:]


def _peeled_after(stmts, p, f: For, dims, ctx):
    m = len(f.body)
    if f.step != 1 or m == 0 or p + 1 + m > len(stmts) or _const(("sub", f.hi, f.lo), dims) < 0:
        raise _No
    _plain_var(f.body, f.var)
    if not _same(stmts[p + 1:p + 1 + m], _at(f.body, f.var, f.hi), dims):
        raise _No
    g = copy.copy(f)
    g.hi = _plus(f.hi, 1, dims)
    return stmts[:p] + [g] + stmts[p + 1 + m:]


def _first_term(stmts, p, f: For, dims, ctx):
    """`acc = E(lo - 1)` then `for k in range(lo, hi): acc += E(k)`: acc from -0.0."""
    if f.step != 1 or len(f.body) != 1 or p < 1 or _const(("sub", f.hi, f.lo), dims) < 0:
        raise _No
    acc, init = f.body[0], stmts[p - 1]
    if not isinstance(acc, (Assign, Store)) or not acc.aug or acc.aug_op != "+" or type(init) is not type(acc) or \
            init.aug or getattr(acc, "guarded", False) or getattr(init, "guarded", False):
        raise _No
    if isinstance(acc, Assign) and (acc.name != init.name or acc.value.ty is not None):
        raise _No  # (a scalar accumulator only: a tensor's `+=` is another statement)
    if isinstance(acc, Store) and (acc.buf != init.buf or not _same(acc.idx, init.idx, dims)):
        raise _No
    _plain_var(f.body, f.var)
    if _reads_accumulator(acc, ctx.views):  # (a term reading the accumulator: no sum of terms)
        raise _No
    lo = _plus(f.lo, -1, dims)
    if not _same(init.value, _at(acc.value, f.var, lo), dims):
        raise _No
    if f.var in idx_names(acc.idx if isinstance(acc, Store) else ()):
        raise _No  # (the accumulator's place moves with k: no accumulator)
    zero = copy.copy(init)
    zero.value = Const(init.value.loc, -0.0, ty=None)
    g = copy.copy(f)
    g.lo = lo
    return stmts[:p - 1] + [zero, g] + stmts[p + 1:]


def _adjacent(stmts, p, f: For, dims, ctx):
    if p + 1 >= len(stmts) or not isinstance(stmts[p + 1], For):
        raise _No
    g = stmts[p + 1]
    if f.step != 1 or g.step != 1 or f.var != g.var or not _same(f.hi, g.lo, dims) or \
            _const(("sub", f.hi, f.lo), dims) < 0 or _const(("sub", g.hi, g.lo), dims) < 0 or \
            not _same(f.body, g.body, dims):
        raise _No
    h = copy.copy(f)
    h.hi = g.hi
    return stmts[:p] + [h] + stmts[p + 2:]


# ------------------------------------------------------------------ helpers
def _const(e, dims) -> int:
    """The value of index expression `e` where it is the same in every iteration around
    (sizes only); else _No."""
    coef, k = ie_affine(e, dims, None)
    if coef:
        raise _No
    return k


def _plus(e, c: int, dims):
    coef, k = ie_affine(e, dims, None)
    return ("int", k + c) if not coef else ("add", e, ("int", c))


def _plain_var(body, var: str) -> None:
    """Refuse a body that assigns `var` or binds it again (Python's loop variable is then
    something else after that statement), or reads it as a value (`Dim`: kept simple)."""
    for x in _walk(body):
        if isinstance(x, For) and x.var == var or isinstance(x, Assign) and x.name == var:
            raise _No
        if isinstance(x, Dim) and x.name == var:
            raise _No


def _walk(x):
    """Every statement and expression in `x`, parents first, in order (a stack, not nested
    generators: those cost the depth for every item, and a sum of 1,500 terms is that deep)."""
    stack = [x]
    while stack:
        x = stack.pop()
        if isinstance(x, (Expr, Stmt)):
            yield x
            stack.extend(reversed([v for k, v in vars(x).items() if k not in _SKIP]))
        elif isinstance(x, (list, tuple)):
            stack.extend(reversed(x))


def _is_ie(x) -> bool:
    return isinstance(x, tuple) and bool(x) and isinstance(x[0], str)


def _at(x, var: str, repl):
    """`x` with loop variable `var` replaced by index expression `repl` in every index (new
    statements and expressions; locations and syntax shared)."""
    if _is_ie(x):
        if x == ("name", var):
            return repl
        return (x[0],) + tuple(_at(e, var, repl) for e in x[1:]) if x[0] not in ("int", "name") else x
    if isinstance(x, tuple):
        return tuple(_at(e, var, repl) for e in x)
    if isinstance(x, list):
        return [_at(e, var, repl) for e in x]
    if isinstance(x, (Expr, Stmt)):
        new = copy.copy(x)
        for k, v in vars(x).items():
            if k not in _SKIP:
                setattr(new, k, _at(v, var, repl))
        return new
    return x


def _same(a, b, dims) -> bool:
    """Whether `a` and `b` compute the same: the same statements and expressions (the
    operands of a `+` or `*` in either order), indices equal as affine maps, locations and
    syntax ignored."""
    if _is_ie(a) and _is_ie(b):
        try:
            return ie_affine(a, dims, None) == ie_affine(b, dims, None)
        except NotAffine:
            return a == b
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y, dims) for x, y in zip(a, b))
    if isinstance(a, (Expr, Stmt)) or isinstance(b, (Expr, Stmt)):
        if type(a) is not type(b):
            return False
        if isinstance(a, Bin) and a.op == b.op and a.op in ("+", "*"):  # (commutative, exactly: IEEE)
            return _same(a.a, b.a, dims) and _same(a.b, b.b, dims) or \
                _same(a.a, b.b, dims) and _same(a.b, b.a, dims)
        va, vb = vars(a), vars(b)
        return va.keys() == vb.keys() and all(_same(va[k], vb[k], dims) for k in va if k not in _SKIP)
    if isinstance(a, dict) or isinstance(b, dict):
        return False  # (views bound in a loop: not compared)
    return type(a) is type(b) and a == b
