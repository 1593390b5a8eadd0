"""Ping-pong buffers: a loop whose iterations permute which buffers names denote.

Time-stepping code computes the next state from the current one and then swaps the two
names (or rotates three: the leapfrog wave equation's `up, u, un = u, un, up`), so the
next step reads what this one wrote:

    for t in range(T):
        for i in range(1, N - 1):
            b[i] = (a[i - 1] + a[i] + a[i + 1]) / 3
        a, b = b, a             # or: tmp = a; a = b; b = tmp

In the language a name bound to a buffer denotes its memory, so iteration t writes into
one buffer or another by t modulo the permutation's order m. `unroll` rewrites such a
loop, in the function's syntax tree, into the form that says so: m iterations per step of
a new loop, the r-th with the names as bound after r runs, then the n % m iterations left
one by one, followed by a move of the buffers' contents (so every name denotes, after the
loop, what it denoted in Python: `return a` returns the last state):

    for eqsat_pp0 in range(T // 2):
        <body at t = 2 * eqsat_pp0>                     (a, b as written)
        <body at t = 2 * eqsat_pp0 + 1, a and b exchanged>
    if T > 0:
        if T % 2 > 0:
            <body at t = T - 1>
        if T % 2 == 1:
            <exchange the contents of a and b, element by element>

Statements before the permuting run use the names as bound at the iteration's start and
those after it as bound after the run.

Exactly what Python computes, under conditions checked on the syntax tree (otherwise the
loop is left alone, and the front end refuses it as before with its location):
- the permuting is one run of consecutive statements in the loop's body, each `x = y` or
  `x, y, ... = y, z, ...` over names, whose net effect on the buffers it names is a
  permutation of them of order at most `MAX_ORDER` (exchanges of two, rotations of three,
  both at once); the other names it binds (`tmp`) are bound and read only in the run;
- every permuted name is an f32 tensor parameter or a buffer allocated once by
  `empty`/`zeros` at the top level before the loop; it is bound nowhere else, and no name
  outside the loop is bound to a view of it; the buffers of a cycle are declared with the
  same shape (the same expressions);
- the loop is `for v in range(...)` with a constant step, without `else`, its variable
  bound nowhere in its body and read nowhere after it, and no view of a permuted buffer
  bound in it is read after it (`_plain_loop`).
"""
from __future__ import annotations

import ast
import copy

from . import aliases


def unroll(fdef: ast.FunctionDef, buffer_shape) -> int:
    """Rewrite the ping-pong loops of `fdef` in place; returns how many. `buffer_shape(name,
    stmt)`: the shape (a list of expressions) of an f32 tensor parameter, or of a buffer
    allocated by top-level statement `stmt`, else None."""
    done = 0
    while True:
        found = _find(fdef, buffer_shape)
        if found is None:
            return done
        _rewrite(fdef, *found, tag=done)
        done += 1


# ------------------------------------------------------------------ finding one


def _rebinding(s) -> list | None:
    """(target names, value names) of a statement that only rebinds names, else None."""
    if isinstance(s, ast.Assign) and len(s.targets) == 1:
        t, v = s.targets[0], s.value
        if isinstance(t, ast.Name) and isinstance(v, ast.Name):
            return [t.id], [v.id]
        if isinstance(t, ast.Tuple) and isinstance(v, ast.Tuple) and len(t.elts) == len(v.elts) and \
                all(isinstance(x, ast.Name) for x in t.elts + v.elts):
            return [x.id for x in t.elts], [x.id for x in v.elts]
    return None


def _swap_run(body: list) -> tuple | None:
    """(start, end, net binding) of the one run of rebinding statements in `body`."""
    runs, i = [], 0
    while i < len(body):
        if _rebinding(body[i]) is None:
            i += 1
            continue
        j = i
        while j < len(body) and _rebinding(body[j]) is not None:
            j += 1
        runs.append((i, j))
        i = j
    if len(runs) != 1:
        return None
    start, end = runs[0]
    env: dict = {}
    for s in body[start:end]:
        targets, values = _rebinding(s)
        vals = [env.get(v, v) for v in values]  # (a tuple reads all its values first)
        for t, v in zip(targets, vals):
            env[t] = v
    return start, end, env


def _find(fdef, buffer_shape):
    """(loop, its body's run (start, end), the exchange {name: name}, the exchanged buffers'
    shapes) of a ping-pong loop, or None."""
    top = fdef.body
    stores: dict = {}
    for n in ast.walk(fdef):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            stores[n.id] = stores.get(n.id, 0) + 1
    for k, stmt in enumerate(top):
        for loop in ast.walk(stmt):
            if not isinstance(loop, ast.For) or not _range_args(loop):
                continue
            run = _swap_run(loop.body)
            if run is None:
                continue
            start, end, env = run
            exchange = {x: y for x, y in env.items() if x != y}
            bufs = [x for x in exchange if x not in _temps(fdef, loop.body[start:end])]
            if not bufs or any(exchange[x] not in bufs for x in bufs) or \
                    len({exchange[x] for x in bufs}) != len(bufs):
                continue  # not a permutation of buffers
            perm = {x: exchange[x] for x in bufs}
            if order(perm) > MAX_ORDER:
                continue
            if not _plain_loop(fdef, loop, (start, end), perm):
                continue
            shapes = _shapes(fdef, top[:k], loop, perm, stores, buffer_shape)
            if shapes is not None:
                return loop, (start, end), perm, shapes
    return None


def _plain_loop(fdef, loop, run: tuple, perm: dict) -> bool:
    """No `for ... else`; the loop variable bound nowhere in the body (an inner loop over
    the same name rebinds it, as Python does) and read nowhere after the loop; and no view
    of an exchanged buffer bound in the body and read outside the loop (after an odd count
    the buffers' contents are exchanged, so a view would see the other one's)."""
    if loop.orelse:
        return False
    var = loop.target.id
    inside = {id(n) for n in ast.walk(loop)}
    header = {id(n) for n in ast.walk(loop.target)}
    for n in ast.walk(loop):
        if isinstance(n, ast.Name) and n.id == var and isinstance(n.ctx, ast.Store) and id(n) not in header:
            return False
    outside_reads = {n.id for n in ast.walk(fdef) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
                     and id(n) not in inside}
    # (a read of the variable after the loop, but inside another loop over that name: that
    # loop's own; before the loop: an earlier binding)
    own = {id(x) for f in ast.walk(fdef) if isinstance(f, ast.For) and f is not loop and
           isinstance(f.target, ast.Name) and f.target.id == var for x in ast.walk(f)}
    end = (loop.end_lineno, loop.end_col_offset)
    if any(isinstance(n, ast.Name) and n.id == var and isinstance(n.ctx, ast.Load) and id(n) not in inside and
           id(n) not in own and (n.lineno, n.col_offset) > end for n in ast.walk(fdef)):
        return False
    in_run = {id(n) for st in loop.body[run[0]:run[1]] for n in ast.walk(st)}
    for n in ast.walk(loop):
        if isinstance(n, (ast.Assign, ast.AnnAssign)) and id(n) not in in_run and n.value is not None:
            targets = n.targets if isinstance(n, ast.Assign) else [n.target]
            names = [t.id for t in targets if isinstance(t, ast.Name)]
            if any(r in perm for r in _view_roots(n.value)) and set(names) & outside_reads:
                return False
    return True


def _temps(fdef, run: list) -> set:
    """The names the run binds that only carry a binding within it (`tmp`): bound and
    read in the run alone."""
    bound = {t for s in run for t in _rebinding(s)[0]}
    in_run = {id(n) for s in run for n in ast.walk(s)}
    outside_reads = {n.id for n in ast.walk(fdef) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
                     and id(n) not in in_run}
    outside_binds = {n.id for n in ast.walk(fdef) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
                     and id(n) not in in_run}
    # (`for tmp in ...` binds through the loop's target)
    params = {a.arg for a in fdef.args.args}
    return {t for t in bound if t not in outside_reads and t not in outside_binds and t not in params}


def _shapes(fdef, before: list, loop, perm: dict, stores: dict, buffer_shape) -> dict | None:
    """The exchanged buffers' shapes where the exchange is admissible (the module's
    conditions), else None."""
    shapes, dumps = {}, {}
    params = {a.arg for a in fdef.args.args}
    run_binds = {}
    start, end, _ = _swap_run(loop.body)
    for s in loop.body[start:end]:
        for t in _rebinding(s)[0]:
            run_binds[t] = run_binds.get(t, 0) + 1
    for x in perm:
        alloc = None
        if x not in params:
            allocs = [s for s in before if isinstance(s, ast.Assign) and len(s.targets) == 1
                      and isinstance(s.targets[0], ast.Name) and s.targets[0].id == x]
            if len(allocs) != 1:
                return None
            alloc = allocs[0]
        shape = buffer_shape(x, alloc)
        if shape is None:
            return None
        # bound nowhere but its allocation (or as a parameter) and the run
        if stores.get(x, 0) != run_binds.get(x, 0) + (0 if alloc is None else 1):
            return None
        shapes[x] = shape
        dumps[x] = ast.dump(ast.Module(body=[ast.Expr(e) for e in shape], type_ignores=[]))
    if any(dumps[x] != dumps[y] for x, y in perm.items()):
        return None
    # no name bound outside the loop to a view of an exchanged buffer
    inside = {id(n) for n in ast.walk(loop)}
    for n in ast.walk(fdef):
        if id(n) in inside or not isinstance(n, (ast.Assign, ast.AnnAssign)):
            continue
        targets = n.targets if isinstance(n, ast.Assign) else [n.target]
        if all(isinstance(t, ast.Subscript) for t in targets) or n.value is None:
            continue
        if any(r in perm for r in _view_roots(n.value)):
            return None
    return shapes


def _view_roots(e) -> list:
    """The names an expression could be a view of (`c`, `c.T`, `c[i]`, `transpose(c)`,
    through tuples): every call taken as a view of its first operand, conservatively."""
    return aliases.view_roots(e, lambda call: True)


def _range_args(loop: ast.For):
    """(lo, hi, step) of `for v in range(...)` with a constant step, as expressions (step an
    int), else None."""
    return range_args(loop.iter) if isinstance(loop.target, ast.Name) else None


def range_args(it):
    """(lo, hi, step) of `range(...)` with a constant step, as expressions (step an int),
    else None."""
    if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range" and
            not it.keywords and 1 <= len(it.args) <= 3):
        return None
    a = it.args
    if len(a) == 1:
        return ast.Constant(0), a[0], 1
    step = 1
    if len(a) == 3:
        step = _int(a[2])
        if not step:
            return None
    return a[0], a[1], step


def _int(e):
    if isinstance(e, ast.Constant) and type(e.value) is int:
        return e.value
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub) and isinstance(e.operand, ast.Constant) \
            and type(e.operand.value) is int:
        return -e.operand.value
    return None


# ------------------------------------------------------------------ rewriting


def _bin(a, op, b):
    """`a op b`, folding the neutral cases (x + 0, x * 1) so indices stay readable."""
    if isinstance(op, ast.Add) and _int(b) == 0:
        return a
    if isinstance(op, ast.Add) and _int(a) == 0:
        return b
    if isinstance(op, ast.Mult) and _int(b) == 1:
        return a
    if isinstance(op, ast.Mult) and _int(a) == 1:
        return b
    return ast.BinOp(left=a, op=op, right=b)


class _Subst(ast.NodeTransformer):
    """Reads of `var` become `expr`; names in `rename` are renamed."""

    def __init__(self, var: str, expr, rename: dict):
        self.var, self.expr, self.rename = var, expr, rename

    def visit_Name(self, n):
        if n.id == self.var and isinstance(n.ctx, ast.Load):
            return ast.copy_location(copy.deepcopy(self.expr), n)
        if n.id in self.rename:
            return ast.copy_location(ast.Name(id=self.rename[n.id], ctx=n.ctx), n)
        return n


def _at(stmts: list, var: str, expr, rename: dict) -> list:
    out = []
    for s in stmts:
        s = _Subst(var, expr, rename).visit(copy.deepcopy(s))
        out.append(s)
    return out


MAX_ORDER = 6  # the largest order of a permutation unrolled (copies of the body a step)


def order(perm: dict) -> int:
    """The order of a permutation: how many runs bring every name back to its buffer."""
    m, cur = 1, dict(perm)
    while any(x != y for x, y in cur.items()):
        cur = {x: perm[y] for x, y in cur.items()}
        m += 1
    return m


def _power(perm: dict, r: int) -> dict:
    """The names' buffers after r runs: name x denotes buffer perm^r(x) (x: the buffer of
    `perm[x]` after one run); identities dropped."""
    cur = {x: x for x in perm}
    for _ in range(r):
        cur = {x: perm[y] for x, y in cur.items()}
    return {x: y for x, y in cur.items() if x != y}


def _rewrite(fdef, loop: ast.For, run: tuple, perm: dict, shapes: dict, tag: int) -> None:
    lo, hi, step = _range_args(loop)
    lo, hi = copy.deepcopy(lo), copy.deepcopy(hi)
    var = loop.target.id
    start, end = run
    head, tail = loop.body[:start], loop.body[end:]
    # the trip count n, and iteration j at v = lo + j * step
    if step > 0:
        span = ast.BinOp(left=hi, op=ast.Sub(), right=lo) if _int(lo) != 0 else hi
        n = span if step == 1 else ast.BinOp(left=_bin(span, ast.Add(), ast.Constant(step - 1)), op=ast.FloorDiv(),
                                             right=ast.Constant(step))
    else:
        span = ast.BinOp(left=lo, op=ast.Sub(), right=hi)
        n = span if step == -1 else ast.BinOp(left=_bin(span, ast.Add(), ast.Constant(-step - 1)), op=ast.FloorDiv(),
                                              right=ast.Constant(-step))

    def at(j):
        return _bin(copy.deepcopy(lo), ast.Add(), _bin(j, ast.Mult(), ast.Constant(step)))

    k = f"eqsat_pp{tag}"
    m = order(perm)
    powers = [_power(perm, r) for r in range(m + 1)]

    def iteration(j, r):
        """The body at iteration j, the r-th of a group of m: names as bound after r runs
        before the run, after r + 1 runs behind it."""
        return _at(head, var, at(j), powers[r]) + _at(tail, var, at(j), powers[r + 1])

    group = lambda r: _bin(ast.BinOp(left=ast.Constant(m), op=ast.Mult(), right=ast.Name(id=k, ctx=ast.Load())),
                           ast.Add(), ast.Constant(r))  # noqa: E731
    main = ast.For(target=ast.Name(id=k, ctx=ast.Store()),
                   iter=ast.Call(func=ast.Name(id="range", ctx=ast.Load()),
                                 args=[ast.BinOp(left=copy.deepcopy(n), op=ast.FloorDiv(), right=ast.Constant(m))],
                                 keywords=[]),
                   body=[s for r in range(m) for s in iteration(group(r), r)], orelse=[])
    # the n % m iterations left, from n - n % m on, then the contents moved so that each
    # name's buffer holds what Python's name denotes after n runs
    left = ast.BinOp(left=copy.deepcopy(n), op=ast.Mod(), right=ast.Constant(m))
    base = ast.BinOp(left=copy.deepcopy(n), op=ast.Sub(), right=copy.deepcopy(left))
    rest: list = []
    for r in range(m - 1):
        more = ast.Compare(left=copy.deepcopy(left), ops=[ast.Gt()], comparators=[ast.Constant(r)])
        rest.append(ast.If(test=more, body=iteration(_bin(copy.deepcopy(base), ast.Add(), ast.Constant(r)), r),
                           orelse=[]))
    for c in range(1, m):
        moved = [_move(cycle, shapes[cycle[0]], f"{k}_{c}_{cycle[0]}") for cycle in _cycles(powers[c])]
        rest.append(ast.If(test=ast.Compare(left=copy.deepcopy(left), ops=[ast.Eq()], comparators=[ast.Constant(c)]),
                           body=moved, orelse=[]))
    remainder = ast.If(test=ast.Compare(left=copy.deepcopy(n), ops=[ast.Gt()], comparators=[ast.Constant(0)]),
                       body=rest, orelse=[])
    for node in (main, remainder):
        ast.copy_location(node, loop)
        for sub in ast.walk(node):
            if not hasattr(sub, "lineno"):
                ast.copy_location(sub, loop)
    _replace(fdef, loop, [main, remainder])


def _cycles(perm: dict) -> list:
    """The cycles of a permutation, each [x, perm[x], perm[perm[x]], ...]."""
    out, seen = [], set()
    for x in perm:
        if x in seen:
            continue
        cyc = [x]
        seen.add(x)
        while perm[cyc[-1]] != x:
            cyc.append(perm[cyc[-1]])
            seen.add(cyc[-1])
        out.append(cyc)
    return out


def _move(cycle: list, shape: list, tag: str) -> ast.stmt:
    """Loops that give each buffer x of `cycle` the contents of the next one (the last the
    first's), element by element: buffer x then holds what name x denotes in Python."""
    idx = [ast.Name(id=f"{tag}_{d}", ctx=ast.Load()) for d in range(len(shape))]

    def at(name, ctx):
        index = idx[0] if len(idx) == 1 else ast.Tuple(elts=list(idx), ctx=ast.Load())
        return ast.Subscript(value=ast.Name(id=name, ctx=ast.Load()), slice=copy.deepcopy(index), ctx=ctx)

    tmp = f"{tag}_v"
    body = [ast.Assign(targets=[ast.Name(id=tmp, ctx=ast.Store())], value=at(cycle[0], ast.Load()))]
    for x, y in zip(cycle, cycle[1:]):
        body.append(ast.Assign(targets=[at(x, ast.Store())], value=at(y, ast.Load())))
    body.append(ast.Assign(targets=[at(cycle[-1], ast.Store())], value=ast.Name(id=tmp, ctx=ast.Load())))
    for d in reversed(range(len(shape))):
        body = [ast.For(target=ast.Name(id=f"{tag}_{d}", ctx=ast.Store()),
                        iter=ast.Call(func=ast.Name(id="range", ctx=ast.Load()), args=[copy.deepcopy(shape[d])],
                                      keywords=[]),
                        body=body, orelse=[])]
    return body[0]


def _replace(fdef, old, new: list) -> None:
    for node in ast.walk(fdef):
        for field in ("body", "orelse"):
            stmts = getattr(node, field, None)
            if isinstance(stmts, list) and any(s is old for s in stmts):
                i = next(i for i, s in enumerate(stmts) if s is old)
                stmts[i:i + 1] = new
                return
