"""Integer locals that name an index (`ih = 2 * oh + kh - 1`), substituted into their uses.

A convolution with stride and padding is written with the input's coordinates as locals,
a guard on them and a read at them:

    ih = 2 * oh + kh - 1
    if ih >= 0 and ih < H:
        acc += w[f, c, kh] * x[c, ih]

In the language an index is an affine expression of loop variables and sizes, and a
scalar local is a value, so `x[c, ih]` was refused, and written as the hint said
(`x[c, 2 * oh + kh - 1]`) it was refused again: the guard on `ih` did not cover it.

`substitute` replaces each use of such a local by its expression where that is exactly
what Python computes: the local is assigned once in the function (`=`, to one name), to
`+`, `-`, `*`, `//` and `%` of integer constants, sizes (dims, int parameters, module integer
constants), variables of the `for ... in range(...)` loops around the assignment, and
earlier such locals; every use comes after the assignment in its block (a later statement
of the same body, or inside one); and no name of the expression is assigned anywhere in
the function but as a loop variable. At each use the expression then has the value the
local holds (a Python int), so the guard, the index and any value use all read it, and the
assignment, which nothing reads any more, is dropped. Anything else stays a local, as
before.
"""
from __future__ import annotations

import ast
import copy

_OPS = (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod)  # (what an index may use)


def substitute(fdef: ast.FunctionDef, sizes: set, constants) -> list:
    """Substitute the index locals of function `fdef` in place (see above). `sizes`: the
    names that are sizes; `constants(name)`: whether `name` is a module integer constant.
    Returns the names substituted."""
    # loop variables; and per name, how many times something other than a loop binds it
    # (`=`, `+=`, `:=`) and how many times it is read
    loops_over: dict = {}  # name -> the loops binding it as their variable
    targets = []
    for n in ast.walk(fdef):
        if isinstance(n, ast.For):
            for t in ast.walk(n.target):
                if isinstance(t, ast.Name):
                    targets.append(t)
                    loops_over.setdefault(t.id, []).append(n)
    loop_targets = {t.id for t in targets}
    in_loop_header = {id(t) for t in targets}
    stores: dict = {}
    loads: dict = {}
    for n in ast.walk(fdef):
        if isinstance(n, ast.Name) and id(n) not in in_loop_header:
            count = stores if isinstance(n.ctx, ast.Store) else loads
            count[n.id] = count.get(n.id, 0) + 1
    params = {a.arg for a in fdef.args.args}
    done: list = []

    def index_expr(e, loops: set, known: set) -> bool:
        if isinstance(e, ast.Constant):
            return isinstance(e.value, int) and not isinstance(e.value, bool)
        if isinstance(e, ast.Name):
            if e.id in loops:
                return not stores.get(e.id)
            if e.id in known:
                return True
            return (e.id in sizes or constants(e.id)) and not stores.get(e.id) and e.id not in loop_targets
        if isinstance(e, ast.BinOp) and isinstance(e.op, _OPS):
            return index_expr(e.left, loops, known) and index_expr(e.right, loops, known)
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, (ast.USub, ast.UAdd)):
            return index_expr(e.operand, loops, known)
        return False

    def block(stmts: list, loops: set, known: set) -> list:
        out = []
        k = 0
        while k < len(stmts):
            st = stmts[k]
            k += 1
            if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name):
                name = st.targets[0].id
                rest = stmts[k:]
                if stores.get(name) == 1 and name not in params and name not in sizes and \
                        index_expr(st.value, loops, known) and _apart(loops_over.get(name, ()), st, rest):
                    later = sum(1 for s in rest for x in ast.walk(s) if isinstance(x, ast.Name) and x.id == name
                                and isinstance(x.ctx, ast.Load))
                    if later + _loads_inside(loops_over.get(name, ()), name) == loads.get(name, 0):
                        for s in rest:
                            _replace(s, name, st.value)
                        done.append(name)
                        known = known | {name}
                        continue  # (the assignment: nothing reads it now)
            out.append(st)
            inner = loops
            if isinstance(st, ast.For) and isinstance(st.target, ast.Name) and _over_range(st):
                inner = loops | {st.target.id}
            for field in ("body", "orelse"):
                sub = getattr(st, field, None)
                if isinstance(sub, list) and sub and isinstance(sub[0], ast.stmt):
                    new = block(sub, inner if field == "body" else loops, known)
                    setattr(st, field, new or [ast.copy_location(ast.Pass(), st)])
        return out

    fdef.body = block(fdef.body, set(), set()) or [ast.Pass()]
    return done


def _apart(loops, st, rest: list) -> bool:
    """Whether `loops`, those binding a name as their variable (`for i in range(N)` before
    `i = j + r - 1`: valid Python, another variable), are apart from the assignment `st` of
    it: none holds it, and none comes after it in its block (there the name is that loop's)."""
    for loop in loops:
        if any(x is st for x in ast.walk(loop)) or any(x is loop for s in rest for x in ast.walk(s)):
            return False
    return True


def _loads_inside(loops, name: str) -> int:
    """Reads of `name` inside `loops`, those binding it (their variable's, not the local's)."""
    return sum(1 for loop in loops for s in loop.body + loop.orelse for x in ast.walk(s)
               if isinstance(x, ast.Name) and x.id == name and isinstance(x.ctx, ast.Load))


def _over_range(f: ast.For) -> bool:
    it = f.iter
    return isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"


def _replace(tree, name: str, expr) -> None:
    """Every load of `name` in `tree` replaced by a copy of `expr` placed where the load is
    (so an error about it points at the use)."""
    for node in ast.walk(tree):
        for field, value in ast.iter_fields(node):
            if isinstance(value, list):
                for i, x in enumerate(value):
                    if _is_load(x, name):
                        value[i] = _placed(expr, x)
            elif _is_load(value, name):
                setattr(node, field, _placed(expr, value))


def _is_load(x, name: str) -> bool:
    return isinstance(x, ast.Name) and x.id == name and isinstance(x.ctx, ast.Load)


def _placed(expr, at):
    new = copy.deepcopy(expr)
    for x in ast.walk(new):
        if hasattr(x, "lineno"):
            x.lineno, x.col_offset = at.lineno, at.col_offset
            x.end_lineno, x.end_col_offset = getattr(at, "end_lineno", at.lineno), getattr(at, "end_col_offset",
                                                                                         at.col_offset)
    return new


class Memory:
    """Where a function binds names, and which tensors' memory it may write: the names it
    stores into (`a[i] = ...`, `a.T[i] = ...`, `a += ...`, `a[i] += ...`) and every name
    that may share memory with one of them (bound by `=` or `x: T = ...` to a view of it,
    `view_root`, either way round). A name whose memory nothing writes reads the same
    whether it is a view or a copy. The one account of shared memory: the front end's
    views, the slices' scalarization (`sections.Scalarize`)."""

    def __init__(self, fdef: ast.FunctionDef, views=lambda call: False):
        """`views(call)`: whether numpy answers the call with a view of its first operand
        (the language's transpose under any name the caller reads as it; np.flip)."""
        self.views = views
        self.root = fdef
        self.links: dict = {}
        self.stored: set = set()  # names whose memory a statement writes (`writes`)
        self.parent: dict = {}
        for n in ast.walk(fdef):
            for c in ast.iter_child_nodes(n):
                self.parent[c] = n
        # name -> the loops with an assignment to it somewhere inside
        self.loops_binding: dict = {}
        for n in ast.walk(fdef):
            self.stored |= self.writes(n)
            for t, value in bindings(n):
                if isinstance(t, ast.Name):
                    self.loops_binding.setdefault(t.id, set()).update(self._loops_around(n))
                    for src in self.viewed(value):
                        self.links.setdefault(t.id, set()).add(src)
                        self.links.setdefault(src, set()).add(t.id)

    def writes(self, n) -> set:
        """The names whose memory statement `n` itself writes: `a[i] = ...`, `a.T[i] = ...`,
        `a[i] += ...`, `a += ...` (a tensor updated in place)."""
        if isinstance(n, ast.AugAssign):
            root = view_root(n.target, self.views)
            return {root} if root else set()
        return {r for t, _ in bindings(n) if isinstance(t, ast.Subscript) for r in [view_root(t, self.views)] if r}

    def shared(self, name: str) -> set:
        """`name` and every name that may share its memory."""
        out, todo = {name}, [name]
        while todo:
            for m in self.links.get(todo.pop(), ()):
                if m not in out:
                    out.add(m)
                    todo.append(m)
        return out

    def _loops_around(self, node) -> list:
        out = []
        while node in self.parent:
            node = self.parent[node]
            if isinstance(node, ast.For):
                out.append(node)
        return out

    def read_after(self, name: str, node, bound_at=None) -> bool:
        """Whether `name` is read after statement `node` ends (later in the function, or
        anywhere in a loop around it: the next iteration). `bound_at`: a statement of one of
        `node`'s branches (`node` an `if`) that binds `name`; the reads in the statements after
        it in that branch see that binding, in every iteration, and do not count."""
        end = (node.end_lineno, node.end_col_offset)
        inside = {id(x) for loop in self._loops_around(node) for x in ast.walk(loop)}
        dominated: set = set()
        if bound_at is not None and isinstance(node, ast.If):
            for branch in (node.body, node.orelse):
                k = next((i for i, s in enumerate(branch) if s is bound_at), None)
                if k is not None:
                    dominated = {id(x) for s in branch[k + 1:] for x in ast.walk(s)}
        return any(isinstance(x, ast.Name) and x.id == name and isinstance(x.ctx, ast.Load) and
                   ((x.lineno, x.col_offset) > end or id(x) in inside) and id(x) not in dominated
                   for x in ast.walk(self.root))

    def written_after(self, name: str, stmt) -> bool:
        """Whether a statement after `stmt` (later in the function, or anywhere in a loop
        around it) writes `name`'s memory, through any name sharing it."""
        mem = self.shared(name)
        at = (stmt.end_lineno, stmt.end_col_offset)  # (what the passes before put before it has its place)
        inside = {id(x) for loop in self._loops_around(stmt) for x in ast.walk(loop)}
        return any(self.writes(x) & mem and ((x.lineno, x.col_offset) > at or id(x) in inside)
                   for x in ast.walk(self.root) if isinstance(x, ast.stmt))

    def rebound_in_another_loop(self, name: str, stmt) -> bool:
        """Whether `name` is bound again inside a loop that is not around `stmt`."""
        return bool(self.loops_binding.get(name, set()) - set(self._loops_around(stmt)))

    def carried(self, name: str, stmt) -> bool:
        """Whether a loop around `stmt` reads `name` before binding it in its body: the
        value a read sees then comes from the iteration before (or from before the loop)."""
        for loop in self._loops_around(stmt):
            first = next((kind for kind, x in _events(loop.body) if x == name), None)
            if first == "load":
                return True
        return False

    def fresh_each_iteration(self, name: str, base: str, stmt) -> bool:
        """Whether `name = base` (`stmt`) in a loop names memory the iteration made and no
        one writes any more: `base` is bound in the loop's body, before this statement, to a
        new tensor (`t = zeros(...)`, `t = x @ w`: not a view), before anything in the body
        reads it; and nothing in the body stores into `base` or `name` after this statement.
        The next iteration then reads, through `name`, memory nothing changes: a copy reads
        the same (a matrix power: `t = zeros(...)`, loops filling t, `r = t`)."""
        loops = self._loops_around(stmt)
        if not loops:
            return False
        body = loops[0].body
        top = stmt
        while top in self.parent and not any(top is b for b in body):
            top = self.parent[top]
        at = next((i for i, b in enumerate(body) if b is top), None)
        if at is None:
            return False
        fresh = False
        for b in body[:at]:
            events = list(_events([b]))
            if not fresh and any(kind == "load" and x == base for kind, x in events):
                return False  # (read before it is bound anew: the previous iteration's)
            for t, value in bindings(b):
                if isinstance(t, ast.Name) and t.id == base:
                    fresh = not self.viewed(value)
        if not fresh:
            return False
        # `base` and `name` share memory with no other name anywhere (`q = t` beside `r = t`)
        if (self.links.get(base, set()) | self.links.get(name, set())) - {base, name}:
            return False
        # and nothing stores into either after this binding: in the rest of the body, and
        # after the loop (the last iteration's `t` is `r`'s memory there)
        after = body[at:] + self._after(loops[0])
        return not any(self.writes(x) & {name, base} for b in after for x in ast.walk(b))

    def _after(self, node) -> list:
        """The statements that follow `node` in the function, at every level around it."""
        out = []
        while node in self.parent:
            up = self.parent[node]
            for field in ("body", "orelse"):
                stmts = getattr(up, field, None)
                if isinstance(stmts, list) and any(s is node for s in stmts):
                    out += stmts[[i for i, s in enumerate(stmts) if s is node][0] + 1:]
            node = up
        return out

    def viewed(self, e) -> list:
        """The names an expression may share memory with (`view_root`)."""
        root = view_root(e, self.views)
        return [root] if root else []

    def written(self, name: str) -> bool:
        """Whether a statement writes `name`'s memory, through any name sharing it."""
        return bool(self.shared(name) & self.stored)


def view_root(e, views) -> str | None:
    """The name whose memory `e` may be a view of (`x`, `x.T`, `x[i]`, `x[1:]`, and a call
    `views(call)` says is a view of its first operand), else None."""
    while True:
        if isinstance(e, ast.Name):
            return e.id
        if isinstance(e, ast.Attribute) and e.attr == "T" or isinstance(e, ast.Subscript):
            e = e.value
        elif isinstance(e, ast.Call) and e.args and views(e):
            e = e.args[0]
        else:
            return None


def view_roots(e, views) -> list:
    """`view_root` of each element of a tuple (`a, b`), or of `e`, as a list of names."""
    if isinstance(e, ast.Tuple):
        return [r for x in e.elts for r in view_roots(x, views)]
    root = view_root(e, views)
    return [root] if root else []


def bindings(n):
    """(target, value) of each binding statement `n` makes (`=`, `x: T = v`, and each
    name of `a, b = x, y`)."""
    if isinstance(n, ast.Assign):
        out = []
        for t in n.targets:
            if isinstance(t, (ast.Tuple, ast.List)):
                vals = n.value.elts if isinstance(n.value, (ast.Tuple, ast.List)) and \
                    len(n.value.elts) == len(t.elts) else [n.value] * len(t.elts)
                out += zip(t.elts, vals)
            else:
                out.append((t, n.value))
        return out
    if isinstance(n, ast.AnnAssign) and n.value is not None:
        return [(n.target, n.value)]
    return []


def _loads(e):
    for x in ast.walk(e):
        if isinstance(x, ast.Name) and isinstance(x.ctx, ast.Load):
            yield "load", x.id


def _events(stmts):
    """("load" | "store", name) of a statement list in the order they happen: a value is
    read before its target is bound, a loop's range before its body."""
    for st in stmts:
        if isinstance(st, (ast.Assign, ast.AnnAssign)):
            if st.value is not None:
                yield from _loads(st.value)
            targets = st.targets if isinstance(st, ast.Assign) else [st.target]
            for t in [x for t in targets for x in (t.elts if isinstance(t, (ast.Tuple, ast.List)) else [t])]:
                if isinstance(t, ast.Name):
                    yield "store", t.id
                else:  # an element store reads the name's binding
                    yield from _loads(t)
        elif isinstance(st, ast.AugAssign):
            yield from _loads(st.value)
            yield from _loads(st.target)
            if isinstance(st.target, ast.Name):
                yield "load", st.target.id
        elif isinstance(st, ast.For):
            yield from _loads(st.iter)
            yield from _events(st.body)
            yield from _events(st.orelse)
        elif isinstance(st, ast.If):
            yield from _loads(st.test)
            yield from _events(st.body)
            yield from _events(st.orelse)
        else:
            yield from _loads(st)
