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
            new = f"{t}_loop"
            while new in taken:
                new += "_"
            taken.add(new)
            st.target.id = new
            for b in st.body:
                for x in ast.walk(b):
                    if isinstance(x, ast.Name) and x.id == t:
                        x.id = new
            done.append(t)
    return done


def _dead_after(stmts: list, name: str) -> bool:
    """Whether the statements after a loop never read `name` before binding it again: the
    first that mentions it is `name = value` with a value that does not read it."""
    def reads(e) -> bool:
        return any(isinstance(x, ast.Name) and x.id == name for x in ast.walk(e))

    for s in stmts:
        if not reads(s):
            continue
        if isinstance(s, ast.For) and isinstance(s.target, ast.Name) and s.target.id == name:
            return not reads(s.iter)  # (another loop over the name: checked as this one, or refused)
        if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name) and \
                s.targets[0].id == name:
            return not reads(s.value)
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
