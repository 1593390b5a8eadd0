"""Counters: an integer local stepped by a constant in loops is its closed form.

    idx = 0                                   for i in range(N):
    for i in range(N):                            for j in range(M):
        for j in range(M):              ->            out[i * M + j] = x[i, j]
            out[idx] = x[i, j]
            idx += 1

A name `c` is a counter when the function binds it once plainly (`c = e0`, e0 an integer
expression of sizes, integer constants and the variables of loops around that binding)
and otherwise only steps it (`c += s`, `c -= s`, `c = c + s`; s an integer expression of
sizes and constants), each step reached from the binding's block through `for ... in
range(lo, hi, step)` loops only (any constant step; no `if`, no `break` or `continue` in them),
and every mention of it comes after the binding in that block, and some read of it is an
index or a loop bound (read as values only, it stays a scalar the nest computes). Then at
any read, `c` is `e0 + sum over steps U of s_U * (how many times U ran before the read)`,
and that count
is affine in the loop variables: for the loops the read shares with U, the completed
iterations of each times U's runs per iteration of it, plus U's runs in the current
iteration if U comes first in the innermost shared body. The reads are replaced by that
expression and the binding and steps are dropped, so the index is affine and the nest is
analysed as any other (`eqsat/dataflow.py`).

The count multiplies by a loop's trip count (`hi - lo`; `start - stop` going down;
ceil((hi - lo) / step) for a step other than 1, with `//`, as the index then is);
Python's `range` runs no iteration where that is negative, the formula would count
backwards. Where a trip count the closed forms use is not non-negative for every size
(`range(1, N)`), an assertion on the sizes is added at the top of the function, checked
when the sizes are known, naming the counter.
Loops whose bounds read other loops' variables (a triangle: a count that is not affine)
and counters read where the count is not known (after the block, in a `while`) are left
as they are: the front end then refuses the index as before.
"""
from __future__ import annotations

import ast
import copy

from .desugar import _number
from .slice_bounds import after_docstring


def substitute(fdef: ast.FunctionDef, sizes: set, is_int_constant) -> list:
    """Replace every counter of `fdef` (module doc) in place; returns their names.
    `sizes`: the size names; `is_int_constant(name)`: a module-level integer."""
    done = []
    for name in _candidates(fdef):
        if _rewrite(fdef, name, sizes, is_int_constant):
            done.append(name)
    return done


def _candidates(fdef) -> list:
    stepped = []
    for n in ast.walk(fdef):
        name = n.target.id if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name) else \
            n.targets[0].id if isinstance(n, ast.Assign) and len(n.targets) == 1 and \
            isinstance(n.targets[0], ast.Name) else None
        if name is not None and name not in stepped and _step_of(n, name) is not None:
            stepped.append(name)
    return stepped


def _step_of(stmt, name):
    """`name += s` / `name -= s` / `name = name + s` / `name = name - s`: (sign, s), else None."""
    if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id == name and \
            isinstance(stmt.op, (ast.Add, ast.Sub)):
        return (1 if isinstance(stmt.op, ast.Add) else -1), stmt.value
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) and \
            stmt.targets[0].id == name and isinstance(stmt.value, ast.BinOp) and \
            isinstance(stmt.value.op, (ast.Add, ast.Sub)) and isinstance(stmt.value.left, ast.Name) and \
            stmt.value.left.id == name:
        return (1 if isinstance(stmt.value.op, ast.Add) else -1), stmt.value.right
    return None


def _int_expr(e, names: set, is_int_constant) -> bool:
    """An integer expression of `names`, module integer constants and int literals."""
    if isinstance(e, ast.Constant):
        return type(e.value) is int
    if isinstance(e, ast.Name):
        return e.id in names or is_int_constant(e.id)
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, (ast.USub, ast.UAdd)):
        return _int_expr(e.operand, names, is_int_constant)
    if isinstance(e, ast.BinOp) and isinstance(e.op, (ast.Add, ast.Sub, ast.Mult)):
        return _int_expr(e.left, names, is_int_constant) and _int_expr(e.right, names, is_int_constant)
    if isinstance(e, ast.BinOp) and isinstance(e.op, ast.FloorDiv):  # by a positive constant (`N // 2`)
        d = _constant_int(e.right)
        return d is not None and d > 0 and _int_expr(e.left, names, is_int_constant)
    return False


def _range_bounds(f: ast.For):
    """(a, b, step) of a loop over `range(hi)`, `range(lo, hi)` or `range(lo, hi, step)`,
    step a nonzero integer constant: (lo, hi, step) going up, (stop, start, step) for
    `range(start, stop, step)` going down, so that it runs no iteration unless b > a, and
    otherwise ceil((b - a) / |step|) times (`_trips`), its n-th iteration (from 0) at
    a + step * n going up, at b + step * n going down (`_done`); else None."""
    it = f.iter
    if not (isinstance(f.target, ast.Name) and isinstance(it, ast.Call) and isinstance(it.func, ast.Name)
            and it.func.id == "range" and not it.keywords and 1 <= len(it.args) <= 3) or f.orelse:
        return None
    if len(it.args) == 1:
        return ast.Constant(0), it.args[0], 1
    step = _constant_int(it.args[2]) if len(it.args) == 3 else 1
    if not step:
        return None
    return (it.args[0], it.args[1], step) if step > 0 else (it.args[1], it.args[0], step)


def _constant_int(e):
    """The value of an integer literal (`3`, `-1`), else None."""
    v = _number(e)
    return v if type(v) is int else None


def _blocks(node):
    """The statement lists a statement holds (its body, else and finally)."""
    out = []
    for field in ("body", "orelse", "finalbody"):
        b = getattr(node, field, None)
        if isinstance(b, list) and b and isinstance(b[0], ast.stmt):
            out.append(b)
    return out


def _paths(fdef) -> dict:
    """id(statement) -> its path from the function body: [(block, index)] outermost first."""
    out = {}

    def walk(block, prefix):
        for k, s in enumerate(block):
            here = prefix + [(block, k)]
            out[id(s)] = here
            for b in _blocks(s):
                walk(b, here)

    walk(fdef.body, [])
    return out


def _owner_stmts(fdef) -> dict:
    """id(expression node) -> the innermost statement holding it."""
    out = {}

    def walk(s):
        for child in ast.iter_child_nodes(s):
            if isinstance(child, ast.stmt):
                walk(child)
            else:
                for x in ast.walk(child):
                    out.setdefault(id(x), s)

    for s in fdef.body:
        walk(s)
    return out


def _rewrite(fdef, name: str, sizes: set, is_int_constant) -> bool:
    paths = _paths(fdef)
    owner = _owner_stmts(fdef)
    inits, steps, reads = [], [], []
    for n in ast.walk(fdef):
        if isinstance(n, ast.stmt) and _step_of(n, name) is not None:
            steps.append(n)
    step_ids = {id(s) for s in steps}
    for n in ast.walk(fdef):
        if isinstance(n, ast.Name) and n.id == name:
            s = owner.get(id(n))
            if isinstance(n.ctx, ast.Store):
                if id(s) in step_ids:
                    continue
                if not (isinstance(s, ast.Assign) and len(s.targets) == 1 and s.targets[0] is n):
                    return False  # (a loop target, a tuple target, ...)
                inits.append(s)
            elif id(s) not in step_ids or n is not _step_target_load(s):
                reads.append(n)
        elif isinstance(n, (ast.Nonlocal, ast.Global)) and name in n.names:
            return False
    if len(inits) != 1 or not steps or any(s is None for s in map(owner.get, map(id, reads))):
        return False
    positions = _index_positions(fdef)
    if not any(id(r) in positions for r in reads):
        return False  # (read as a value only: a scalar the nest computes, as before; no assertion needed)
    init = inits[0]
    ipath = paths[id(init)]
    block, i0 = ipath[-1]
    outer_vars = {s.target.id for b, k in ipath[:-1] for s in [b[k]]
                  if isinstance(s, ast.For) and isinstance(s.target, ast.Name)}
    if not _int_expr(init.value, sizes | outer_vars, is_int_constant):
        return False
    # every step and read inside the statements after the binding in its block
    def after_init(stmt) -> list | None:
        p = paths.get(id(stmt))
        if p is None or len(p) <= len(ipath) - 1 or p[len(ipath) - 1][0] is not block or \
                p[len(ipath) - 1][1] <= i0 or any(a[0] is not b[0] or a[1] != b[1] for a, b in zip(p, ipath[:-1])):
            return None
        return p[len(ipath) - 1:]
    asserts = []
    plans = []  # per step: (sign, size, [(loop, a, b, step)] along its path, its relative path)
    for u in steps:
        rel = after_init(u)
        if rel is None:
            return False
        sign, size = _step_of(u, name)
        if not _int_expr(size, sizes, is_int_constant):
            return False
        loops = []
        for b, k in rel[:-1]:
            f = b[k]
            bounds = _range_bounds(f) if isinstance(f, ast.For) else None
            if bounds is None or any(isinstance(x, (ast.Break, ast.Continue, ast.Return)) for x in ast.walk(f)):
                return False
            lo, hi, stride = bounds
            if not (_int_expr(lo, sizes, is_int_constant) and _int_expr(hi, sizes, is_int_constant)):
                return False  # (a bound reading another loop's variable: not affine)
            loops.append((f, lo, hi, stride))
        # each loop of the path must hold the next: For bodies only (not an if, not an else)
        for (b, k), (nb, _) in zip(rel[:-1], rel[1:]):
            if nb is not b[k].body:
                return False
        plans.append((sign, size, loops, rel))
    values = []
    counted = []  # the loops whose trip counts the closed forms multiply by
    for r in reads:
        s = owner[id(r)]
        rel = after_init(s)
        if rel is None:
            return False
        value = copy.deepcopy(init.value)
        for sign, size, loops, urel in plans:
            count = _count(urel, rel, loops, counted)
            if count is None:
                return False
            if count is not _ZERO:
                term = ast.BinOp(left=copy.deepcopy(size), op=ast.Mult(), right=count)
                value = ast.BinOp(left=value, op=ast.Add() if sign > 0 else ast.Sub(), right=term)
        values.append(value)
    for f, lo, hi, _ in counted:
        if not _never_negative(lo, hi, sizes, is_int_constant):
            asserts.append((f, lo, hi))
    # rewrite: reads, then the binding and steps dropped
    places = _places(fdef)
    for r, v in zip(reads, values):
        parent, field, k = places[id(r)]
        if k is None:
            setattr(parent, field, ast.copy_location(v, r))
        else:
            getattr(parent, field)[k] = ast.copy_location(v, r)
    for s in [init, *steps]:
        p = paths[id(s)]
        b, _ = p[-1]
        k = next(j for j, x in enumerate(b) if x is s)
        b[k] = ast.copy_location(ast.Pass(), s)
    seen = set()
    top = []
    for f, lo, hi in asserts:
        test = ast.Compare(left=copy.deepcopy(hi), ops=[ast.GtE()], comparators=[copy.deepcopy(lo)])
        text = ast.unparse(test)
        if text in seen:
            continue
        seen.add(text)
        msg = ast.Constant(f"counter {name!r} counts the iterations of `for {ast.unparse(f.target)} in "
                           f"{ast.unparse(f.iter)}`, which needs {text}: a loop that runs no iteration is not "
                           f"counted by the counter's closed form")
        top.append(ast.copy_location(ast.Assert(test=test, msg=msg), init))
    at = after_docstring(fdef)
    fdef.body[at:at] = top
    ast.fix_missing_locations(fdef)
    return True


_ZERO = ast.Constant(0)


def _index_positions(fdef) -> set:
    """ids of the Name nodes read where a value cannot stand: inside a subscript's index or
    a `range(...)`'s arguments."""
    out = set()
    for n in ast.walk(fdef):
        parts = [n.slice] if isinstance(n, ast.Subscript) else \
            n.args if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "range" else []
        for p in parts:
            out |= {id(x) for x in ast.walk(p) if isinstance(x, ast.Name)}
    return out


def _step_target_load(s):
    """The Name a `c = c + s` step reads (not a read of the counter's value)."""
    if isinstance(s, ast.Assign) and isinstance(s.value, ast.BinOp):
        return s.value.left
    return None


def _count(urel, prel, loops, counted: list):
    """How many times the step at relative path `urel` has run before the statement at
    `prel` (both from the binding's block): an AST expression, `_ZERO`, or None. The loops
    whose trip counts it multiplies by are added to `counted`."""
    terms = []
    d = 0
    while True:
        (ub, uk), (pb, pk) = urel[d], prel[d]
        if ub is not pb:
            return None
        inner = loops[d:]  # the loops U is inside below this level
        if uk != pk:
            if uk < pk:
                terms.append(_trips(inner))
                counted.extend(inner)
            break
        if d == len(urel) - 1:
            return None  # (the read is inside the step itself)
        f = loops[d][0]
        if d + 1 >= len(prel):  # (the read is the loop's own header: before its iterations)
            break
        if prel[d + 1][0] is not f.body:
            return None  # (the read is in the loop's else: not reached through the body)
        terms.append(ast.BinOp(left=_done(loops[d]), op=ast.Mult(), right=_trips(loops[d + 1:])))
        counted.extend(loops[d + 1:])
        d += 1
    if not terms:
        return _ZERO
    out = terms[0]
    for t in terms[1:]:
        out = ast.BinOp(left=out, op=ast.Add(), right=t)
    return out


def _trips(loops):
    """The product of the loops' trip counts (1 for none): b - a, or (b - a + |step| - 1) //
    |step| (`_range_bounds`; right where b >= a, which is asserted where not known)."""
    out = ast.Constant(1)
    for f, lo, hi, step in loops:
        n = ast.BinOp(left=copy.deepcopy(hi), op=ast.Sub(), right=copy.deepcopy(lo))
        if abs(step) != 1:
            n = ast.BinOp(left=ast.BinOp(left=n, op=ast.Add(), right=ast.Constant(abs(step) - 1)),
                          op=ast.FloorDiv(), right=ast.Constant(abs(step)))
        out = ast.BinOp(left=out, op=ast.Mult(), right=n)
    return out


def _done(loop):
    """The iterations of `loop` completed before its current one: (v - a) / step going up,
    (b - v) / |step| going down (exact: v is a + step * n or b + step * n)."""
    f, lo, hi, step = loop
    v = ast.Name(id=f.target.id, ctx=ast.Load())
    n = ast.BinOp(left=v, op=ast.Sub(), right=copy.deepcopy(lo)) if step > 0 else \
        ast.BinOp(left=copy.deepcopy(hi), op=ast.Sub(), right=v)
    if abs(step) == 1:
        return n
    return ast.BinOp(left=n, op=ast.FloorDiv(), right=ast.Constant(abs(step)))


def _never_negative(lo, hi, sizes, is_int_constant) -> bool:
    """hi - lo >= 0 for every non-negative value of the sizes: hi a sum of sizes (each with
    a non-negative integer factor) plus a constant at least lo, a constant."""
    const = _constant_int

    def split(e):  # (the constant part of a sum of non-negative size terms) or None
        c = const(e)
        if c is not None:
            return c
        if isinstance(e, ast.Name) and e.id in sizes:
            return 0
        if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Add):
            a, b = split(e.left), split(e.right)
            return None if a is None or b is None else a + b
        if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Sub) and const(e.right) is not None:
            a = split(e.left)
            return None if a is None else a - const(e.right)
        if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Mult):
            if split(e.left) == 0 and split(e.right) == 0:  # (a product of sizes)
                return 0
            for c, x in ((e.left, e.right), (e.right, e.left)):
                if const(c) is not None and const(c) >= 0 and split(x) == 0:
                    return 0
        return None

    lo_c, hi_c = const(lo), split(hi)
    return lo_c is not None and hi_c is not None and hi_c >= lo_c


def _places(fdef) -> dict:
    """id(node) -> (its parent, the field holding it, its position in that field's list or
    None): where a node is replaced."""
    out = {}
    for parent in ast.walk(fdef):
        for field, value in ast.iter_fields(parent):
            if isinstance(value, ast.AST):
                out[id(value)] = (parent, field, None)
            elif isinstance(value, list):
                for k, x in enumerate(value):
                    if isinstance(x, ast.AST):
                        out[id(x)] = (parent, field, k)
    return out
