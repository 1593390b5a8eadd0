"""A loop whose variable is a name the function also binds otherwise (`y1 =
np.maximum(h, 0.0)` ... `for y1 in range(N)`): Python rebinds the name to the loop's
integers, and where nothing reads it after the loop before binding it again (nothing else
in the top-level statement holding the loop mentions it, and the statements after that
read it only after a new binding, or another loop over it), that is the loop's own variable under another name. It is renamed inside the loop (`y1_loop`), so
the front end's one-meaning-per-name check holds; a name read after the loop (Python
would give the loop's last value there) stays as written, and the front end refuses it.
"""
from __future__ import annotations

import ast

from .slice_bounds import integer_expr


def rename_reused(fdef: ast.FunctionDef) -> list:
    """Rename, in place, the variables of loops that reuse a name bound otherwise and dead
    after them (module doc); returns the names renamed."""
    params = {a.arg for a in fdef.args.args}
    bound = set(params)
    for n in ast.walk(fdef):
        if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            for t in n.targets if isinstance(n, ast.Assign) else [n.target]:
                bound |= {x.id for x in ast.walk(t) if isinstance(x, ast.Name) and isinstance(x.ctx, ast.Store)}
    taken = {x.id for x in ast.walk(fdef) if isinstance(x, ast.Name)} | params
    done = []
    for k, top in enumerate(fdef.body):
        for st in [x for x in ast.walk(top) if isinstance(x, ast.For)]:
            if not (isinstance(st.target, ast.Name) and st.target.id in bound):
                continue
            t = st.target.id
            inside = {id(x) for b in st.body for x in ast.walk(b)} | {id(st.target)}
            if any(isinstance(x, ast.Name) and x.id == t and isinstance(x.ctx, ast.Store)
                   for b in st.body for x in ast.walk(b)) or st.orelse:
                continue  # (bound again inside the loop, or a loop-else: left as written)
            if any(isinstance(x, ast.Name) and x.id == t and id(x) not in inside for x in ast.walk(top)):
                continue  # (mentioned elsewhere in the statement holding the loop: an outer loop's next
                # iteration, or the statement itself after it, would read the loop's last value)
            if not _dead_after(fdef.body[k + 1:], t):
                continue
            st.target.id = _rename_inside(st.body, t, f"{t}_loop", taken)
            done.append(t)
    return done


def _rename_inside(stmts: list, old: str, new: str, taken: set) -> str:
    """Rename `old` to `new` (with `_` appended until it is no name in `taken`) in
    `stmts`, in place; returns the name given (now taken)."""
    while new in taken:
        new += "_"
    taken.add(new)
    for b in stmts:
        for x in ast.walk(b):
            if isinstance(x, ast.Name) and x.id == old:
                x.id = new
    return new


def _dead_after(stmts: list, name: str) -> bool:
    """Whether the statements after a loop never read `name` before binding it again: the
    first that mentions it is `name = value` with a value that does not read it."""
    for s in stmts:
        if not _mentions(s, name):
            continue
        if isinstance(s, ast.For) and isinstance(s.target, ast.Name) and s.target.id == name:
            return not _mentions(s.iter, name)  # (another loop over the name: checked as this one, or refused)
        if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name) and \
                s.targets[0].id == name:
            return _plain_bind(s, name)
        if not _only_rebound_inside(s, name):
            return False
        # (every mention is inside loops over the name, nested in s: they may run no
        # iteration, so the name may come out of s as it went in: the statements after s
        # are checked too)
    return True


def _only_rebound_inside(s, name: str) -> bool:
    """Whether every mention of `name` in statement `s` is inside a `for name in ...` loop
    nested in it whose range does not read the name."""
    inside: set = set()
    for x in ast.walk(s):
        if isinstance(x, ast.For) and isinstance(x.target, ast.Name) and x.target.id == name:
            if any(isinstance(y, ast.Name) and y.id == name for y in ast.walk(x.iter)):
                return False
            inside |= {id(y) for y in ast.walk(x)} - {id(y) for y in ast.walk(x.iter)}
    return all(id(x) in inside for x in ast.walk(s) if isinstance(x, ast.Name) and x.id == name)


def rename_nest_locals(fdef: ast.FunctionDef) -> list:
    """Rename, in place, an index local that several top-level loop nests bind (`j = i - 1`
    in two nests, as two conv layers written alike do), inside a nest where it is that
    nest's own: its first mention there is `name = value` (an index: integer arithmetic of
    loop variables, sizes and constants; not under an `if`) directly in the body of a loop
    that holds every mention of it in the nest, and
    nothing after the nest reads it before binding it again. That loop then never reads a
    value from before it, so the name is a local of the nest under another name (`j_n1`),
    and the front end's rule for an index local (bound once) holds. Returns the names."""
    params = {a.arg for a in fdef.args.args}
    stored: dict = {}  # name -> the top-level statements binding it
    for k, top in enumerate(fdef.body):
        for x in ast.walk(top):
            if isinstance(x, ast.Name) and isinstance(x.ctx, ast.Store):
                stored.setdefault(x.id, set()).add(k)
    taken = {x.id for x in ast.walk(fdef) if isinstance(x, ast.Name)} | params
    bound = set(stored) | params
    done = []
    for k, top in enumerate(fdef.body):
        if not isinstance(top, ast.For):
            continue
        for name in sorted(n for n, ks in stored.items() if k in ks and len(ks) > 1 and n not in params):
            loop = _binding_loop(top, name, bound)
            if loop is None or not _dead_after(fdef.body[k + 1:], name):
                continue
            inside = {id(x) for b in loop.body for x in ast.walk(b)}
            if any(isinstance(x, ast.Name) and x.id == name and id(x) not in inside for x in ast.walk(top)):
                continue  # (mentioned outside the loop that binds it)
            _rename_inside(loop.body, name, f"{name}_n{k}", taken)
            done.append(name)
    return done


def _binding_loop(top: ast.For, name: str, bound: set):
    """The loop (in `top`, through loops only) whose body binds `name` by its first mention in
    `top`, a plain `name = value` of an index (integer arithmetic of loop variables, sizes
    and constants: `bound` holds the names the function binds), not reading it; None where
    the first mention is anything else (a read, a loop variable, an augmented assignment, a
    mention under an `if`, a value of another kind)."""
    def index_like(e, loopvars: set) -> bool:
        """Integer arithmetic of the enclosing loops' variables, names the function does not
        bind (sizes, module constants) and integer constants, through min and max."""
        return integer_expr(e, lambda x: x in loopvars or x not in bound, clamps=True)

    def first(loop: ast.For, loopvars: set):
        """(found, the binding loop or None): found is False where `loop` does not mention it."""
        if _mentions(loop.target, name) or _mentions(loop.iter, name) or loop.orelse:
            return True, None
        loopvars = loopvars | {x.id for x in ast.walk(loop.target) if isinstance(x, ast.Name)}
        for st in loop.body:
            if not _mentions(st, name):
                continue
            if _plain_bind(st, name) and index_like(st.value, loopvars):
                return True, loop
            if isinstance(st, ast.For):
                return first(st, loopvars)
            return True, None
        return False, None

    return first(top, set())[1]


def rename_loop_privates(fdef: ast.FunctionDef) -> list:
    """Rename, in place, a local that a loop body binds first (`temp1 = alpha * A[k, j]` at
    the top of the body, not reading it) where nothing after the loop reads the value it
    leaves, and the function mentions the name outside the loop too: reference BLAS reuses
    one TEMP1 in sibling loops (SSYMM, STRMM), which read as one variable is carried from
    loop to loop (the nest was kept: "'temp1' reads a value written in another iteration").
    Each such loop's is a variable of its own (`temp1_p1`). Inner loops first; returns the
    names renamed."""
    params = {a.arg for a in fdef.args.args}
    taken = {x.id for x in ast.walk(fdef) if isinstance(x, ast.Name)} | params
    # (a loop variable bound again in its body is the front end's to refuse, as written)
    loopvars = {t.id for n in ast.walk(fdef) if isinstance(n, ast.For) for t in ast.walk(n.target)
                if isinstance(t, ast.Name)}
    done: list = []
    # (a break, continue or return skips statements: the paths out of a loop are then not
    # the statements after it, which `_dead_after_loop` reads; left as written)
    jumps = any(isinstance(x, (ast.Break, ast.Continue, ast.Return)) for b in fdef.body if not isinstance(b, ast.Return)
                for x in ast.walk(b))

    def visit(stmts: list, path: list):
        for k in reversed(range(len(stmts))):  # (the later of sibling loops first: see _first_mention)
            s = stmts[k]
            here = path + [(stmts, k)]
            for field in ("body", "orelse"):
                sub = getattr(s, field, None)
                if isinstance(sub, list) and sub and isinstance(sub[0], ast.stmt):
                    visit(sub, here + [(s, field)])
            if isinstance(s, ast.For) and not s.orelse and not jumps:
                for name in sorted(_first_bound(s.body, {}) - params - loopvars):
                    if _mentioned_outside(fdef, s, name) and _dead_after_loop(here, path, name):
                        done.append(name)
                        _rename_inside(s.body, name, f"{name}_p{len(done)}", taken)

    visit(fdef.body, [])
    return done


def _mentions(node, name: str) -> bool:
    return any(isinstance(x, ast.Name) and x.id == name for x in ast.walk(node))


def _plain_bind(s, name: str) -> bool:
    """`name = value` with a value that does not read it."""
    return isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name) and \
        s.targets[0].id == name and not _mentions(s.value, name)


def _first_bound(body: list, memo: dict | None = None) -> set:
    """The names whose first mention in `body` is a plain binding directly in it, or one in
    a branch of an `if` (first there too) that holds every mention of it in `body` (reference
    STRMM's `if A[k, j] != 0.0: temp = alpha * A[k, j]; ...`): no mention reads a value
    from before the body. `memo`: `_names_in`'s, for the statements as they are now."""
    memo = {} if memo is None else memo
    seen: set = set()
    out: set = set()
    for k, s in enumerate(body):
        if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name):
            name = s.targets[0].id
            if name not in seen and _plain_bind(s, name):
                out.add(name)
        elif isinstance(s, ast.If):
            later = _names_in(body[k + 1:], memo)
            test = _names_in([s.test], memo)
            for branch, other in ((s.body, s.orelse), (s.orelse, s.body)):
                out |= _first_bound(branch, memo) - (seen | later | test | _names_in(other, memo))
        seen |= _names_in([s], memo)
    return out


def _names_in(nodes: list, memo: dict) -> frozenset:
    """The names the nodes mention; an `if`'s once (by its id in `memo`), so an elif chain of
    n branches costs n, not n^2 / 2, walks of a branch."""
    out: set = set()
    for n in nodes:
        got = memo.get(id(n))
        if got is None:
            if isinstance(n, ast.If):
                got = _names_in([n.test], memo) | _names_in(n.body, memo) | _names_in(n.orelse, memo)
            else:
                got = frozenset(x.id for x in ast.walk(n) if isinstance(x, ast.Name))
            memo[id(n)] = got
        out |= got
    return frozenset(out)


def _mentioned_outside(fdef, loop: ast.For, name: str) -> bool:
    inside = {id(x) for b in loop.body for x in ast.walk(b)}
    return any(isinstance(x, ast.Name) and x.id == name and id(x) not in inside for x in ast.walk(fdef))


def _dead_after_loop(here: list, path: list, name: str) -> bool:
    """Whether nothing reads the value of `name` the loop at `here` leaves: walking out
    from it, at every level the statements after it (and, in a loop's body, those before it,
    which the next iteration runs) first mention it by a plain binding, or not at all."""
    levels = here  # [(stmts, k), (owner, field), (stmts, k), ...] from the function's body down
    i = len(levels) - 1
    while i >= 0:
        stmts, k = levels[i]
        verdict = _first_mention(stmts[k + 1:], name)
        if verdict is not None:  # (the statements after it run on every path out of it: no jumps)
            return verdict
        owner = levels[i - 1][0] if i >= 1 else None
        if isinstance(owner, (ast.For, ast.While)):
            if _mentions(owner.iter if isinstance(owner, ast.For) else owner.test, name):
                return False  # (its range read again: no, a `for` reads it once; a while's test
                # is read every time: either way, keep it simple)
            if _first_mention(stmts[:k], name) is False:
                return False  # (read by the next iteration)
            # (bound again by the next iteration, or not mentioned: the value may still leave
            # the loop after its last iteration, so the levels further out decide)
        i -= 2
    return True


def _first_mention(stmts: list, name: str):
    """True where the first statement mentioning `name` binds it plainly, False where it
    is any other mention, None where none does."""
    for s in stmts:
        if not _mentions(s, name):
            continue
        if isinstance(s, ast.For) and not s.orelse and not _mentions(s.iter, name) and name in _first_bound(s.body):
            continue  # (a loop binding it first never reads the value it comes with, and may not run)
        return _plain_bind(s, name)
    return None
