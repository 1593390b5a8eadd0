"""Scalars in the way of loop distribution (fission): webs renamed, private scalars expanded.

Fission (`lower._fission`) keeps statements that share a scalar in one group: its
dataflow models tensor elements only. Two classic transformations free the common cases,
both on a top-level nest whose scalars are not read after it:

1. **Webs.** A scalar that every loop using it assigns first (`s = 0.0` at the top of each
   of three `for j` loops of an attention row) holds unrelated values in each loop: each
   such loop gets its own name (`eqsat_s<n>_s`), so the loops no longer share it.

2. **Expansion.** A scalar private to each iteration of a loop L (assigned first thing in
   L's body, every use inside L) that later statements of L's body only read (`m` after
   the loop that finds a row's max, `z` after the loop that sums its exponentials) is
   computed by its producer statements as before, which then also store it into a buffer
   indexed by the loops down to L (`eqsat_x<n>_m[i] = m`); the readers, once distributed
   into loops of their own, load it back first thing (`m = eqsat_x<n>_m[i]`). Fission
   orders producer before reader: its edge for the scalar is one way.

A reader sees the value the producer left at the end of the same iteration, which is the
value it saw before: every write of the scalar in that iteration happened before it (the
producer statements precede the readers in L's body, and the scalar is assigned first
thing, so no value crosses iterations). Names with the reserved `eqsat_` prefix cannot
clash with the program's. Both change the nest's IR and its Python source alike, so each
part still runs as written.
"""
from __future__ import annotations

import ast
import copy
from dataclasses import dataclass, field
from itertools import count

from .bounds import loop_values
from .ifconvert import _mentions, _rename_expr
from .ir import Assign, For, If, Index, Ref, Store, expr_reads, leaves, written

_NAMES = count()


# ------------------------------------------------------------------ helpers on the IR
def _touches(s, name: str) -> bool:
    """Does statement `s` (and what it holds) read or assign scalar `name`?"""
    return name in _mentions(s)


def _sets_first(body: list, name: str) -> bool:
    """The first statement of `body` that touches `name` assigns it plainly, from a value
    that does not read it."""
    for b in body:
        if not _touches(b, name):
            continue
        if isinstance(b, Assign) and b.name == name and not b.aug and b.value.ty is None:
            return name not in expr_reads(b.value)
        return False
    return False


def _scalars_assigned(s, out: set) -> None:
    if isinstance(s, (For, If)):
        for b in list(s.body) + list(getattr(s, "orelse", [])):
            _scalars_assigned(b, out)
    elif isinstance(s, Assign) and s.value.ty is None:
        out.add(s.name)


def _rename_ir(s, old: str, new: str) -> None:
    """Scalar `old` renamed `new` in statement `s` and all it holds, in place."""
    mapping = {old: new}
    if isinstance(s, (For, If)):
        if isinstance(s, If):
            s.cond = _rename_expr(s.cond, mapping)
        for b in list(s.body) + list(getattr(s, "orelse", [])):
            _rename_ir(b, old, new)
    elif isinstance(s, (Assign, Store)):
        s.value = _rename_expr(s.value, mapping)
        if isinstance(s, Assign) and s.name == old:
            s.name = new


def _rename_ast(node, old: str, new: str) -> None:
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and n.id == old:
            n.id = new


# ------------------------------------------------------------------ 1. webs
def rename_webs(s: For, live: set) -> tuple[For, set]:
    """A copy of nest `s` with every scalar that each loop using it assigns first (and
    that is not `live` after the nest) renamed per outermost such loop; and the names
    renamed. `s` itself is left as it is."""
    names: set = set()
    _scalars_assigned(s, names)
    out = copy.deepcopy(s)
    renamed = set()
    for x in sorted(names - set(live)):
        webs = []

        def find(f: For):
            if _sets_first(f.body, x):
                webs.append(f)
                return
            for b in f.body:
                if isinstance(b, For):
                    find(b)

        find(out)
        if len(webs) < 2 or out in webs:
            continue  # one loop (or the nest itself): nothing to separate
        inside = {id(n) for f in webs for n in _walk_stmts(f)}
        if any(_touches(n, x) for n in _walk_stmts(out) if id(n) not in inside and not isinstance(n, (For, If))):
            continue  # used outside the loops that set it first
        for f in webs:
            new = f"eqsat_s{next(_NAMES)}_{x}"
            _rename_ir(f, x, new)
            _rename_ast(f.node, x, new)
        renamed.add(x)
    return (out, renamed) if renamed else (s, set())


def _walk_stmts(s):
    yield s
    if isinstance(s, (For, If)):
        for b in list(s.body) + list(getattr(s, "orelse", [])):
            yield from _walk_stmts(b)


# ------------------------------------------------------------------ 2. expansion
@dataclass
class Private:
    """Scalar `name`, private to each iteration of loop `loop` (whose enclosing loops in
    the nest, it included, are `path`): `producers` are the leaves that compute it (ids),
    `readers` the later leaves that only read it."""

    name: str
    loop: For
    path: list
    producers: set = field(default_factory=set)
    readers: set = field(default_factory=set)


def privates(s: For, live: set) -> dict:
    """name -> Private, for the scalars of nest `s` (not `live` after it) that expansion
    may carry across fission parts."""
    names: set = set()
    _scalars_assigned(s, names)
    out = {}
    for x in sorted(names - set(live)):
        found = _private_loop(s, x, [])
        if found is None:
            continue
        loop, path = found
        last = max(k for k, b in enumerate(loop.body) if x in written(b))
        p = Private(x, loop, path)
        for k, b in enumerate(loop.body):
            for leaf in leaves(b):
                if _touches(leaf, x):
                    (p.producers if k <= last else p.readers).add(id(leaf))
        if p.readers:
            out[x] = p
    return out


def _private_loop(f: For, x: str, path: list):
    """(L, loops from the nest down to L) for the innermost loop L holding every use of
    `x` whose body assigns it first; None if there is none."""
    path = path + [f]
    inner = [b for b in f.body if _touches(b, x)]
    if len(inner) == 1 and isinstance(inner[0], For):
        found = _private_loop(inner[0], x, path)
        if found is not None:
            return found
    return (f, path) if _sets_first(f.body, x) else None


def expand(parts: list, copies: list, priv: dict, dims: dict, groups: list) -> dict:
    """Carry each private scalar from the part that computes it to the parts that read it
    (see the module doc): `parts` are fission's nests, `copies[i]` maps an original loop's
    id to its copy in part i, `groups[i]` the ids of the leaves part i holds. Returns
    {buffer name: shape} of the buffers the parts now use."""
    buffers = {}
    for x, p in priv.items():
        home = [i for i, g in enumerate(groups) if g & p.producers]
        away = [i for i, g in enumerate(groups) if g & p.readers and not g & p.producers]
        if not away:
            continue
        if len(home) != 1:
            raise ValueError(f"scalar {x!r} is computed in several parts")
        if any(_makes_python_float(s, x) for part in parts if part is not None for s in leaves(part)):
            # (its buffer is float32: the reference's Python float, `t = float(x[i]) * 1e30`
            # or `z += math.exp(...)`, would be rounded there; `terms.narrow_floats`)
            raise ValueError(f"scalar {x!r} holds a Python float made from an element")
        ranges: dict = {}
        idx, src, shape = [], [], []
        for f in p.path:
            lo, last = loop_values(f, ranges, dims)
            ranges[f.var] = (lo, last)
            idx.append(("name", f.var) if lo == 0 else ("sub", ("name", f.var), ("int", lo)))
            src.append(f.var if lo == 0 else f"{f.var} - ({lo})")
            shape.append(max(0, last - lo + 1))  # (a loop that runs no iteration: an empty axis)
        buf = f"eqsat_x{next(_NAMES)}_{x}"
        buffers[buf] = tuple(shape)
        loc = p.loop.loc
        at = f"{buf}[{', '.join(src)}]"
        producer = copies[home[0]][id(p.loop)]
        producer.body.append(Store(loc, buf, tuple(idx), Ref(loc, x)))
        producer.node.body.append(_stmt(f"{at} = {x}", producer.node))
        for i in away:
            reader = copies[i][id(p.loop)]
            reader.body.insert(0, Assign(loc, x, Index(loc, buf, tuple(idx))))
            reader.node.body.insert(0, _stmt(f"{x} = {at}", reader.node))
    return buffers


def _makes_python_float(s, name: str) -> bool:
    """Whether leaf statement `s` assigns scalar `name` a value holding `float(e)` (of an
    element or anything: the front end's `float`, which math's functions of an element
    read too)."""
    if not isinstance(s, Assign) or s.name != name:
        return False
    stack = [s.value]
    while stack:
        e = stack.pop()
        if getattr(e, "fn", None) == "float":
            return True
        stack.extend(e.children())
    return False


def _stmt(src: str, near: ast.AST) -> ast.stmt:
    out = ast.parse(src).body[0]
    for n in ast.walk(out):
        n.lineno, n.col_offset = near.lineno, near.col_offset
        n.end_lineno, n.end_col_offset = near.lineno, near.col_offset
    return out
