"""Expressions rewritten into names that statements just before their statement compute
(`Hoisting`): the base of desugar's sums and reductions and of the slices' products
(`eqsat/sections.py`)."""
from __future__ import annotations

import ast
import copy

from .names import LIB, SCALAR


class Hoisting(ast.NodeTransformer):
    """Rewrites expressions into names computed by statements just before the statement
    that holds them (an `if`'s test: before the `if`)."""

    def __init__(self):
        self.count = 0
        self.pending: list = []  # statements computing what the current statement reads

    guards: list = []  # conditions under which the expression being visited is evaluated

    def visit_IfExp(self, n):
        """`a if c else b`: Python evaluates `a` only where c holds, `b` where it fails, so
        what they hoist runs under that condition (a sum over `x[i - 1]` guarded by i > 0).
        `np.where(c, a, b)` of tensors (this form, marked) computes a and b whole first."""
        n.test = self.visit(n.test)
        if getattr(n, "eqsat_where", False) and self._over_tensors(n):
            # (np.where of tensors computes both of its values whole, everywhere; of numbers
            # in a loop, guarded as a conditional expression: its values may read where the
            # condition keeps them from, `np.where(i > 0, x[i - 1], 0.0)`, which numpy
            # wraps around and eqsat refuses)
            n.body, n.orelse = self.visit(n.body), self.visit(n.orelse)
            return n
        n.body = self.guarded(n.test, n.body)
        n.orelse = self.guarded(ast.UnaryOp(op=ast.Not(), operand=n.test), n.orelse)
        return n

    def _over_tensors(self, n) -> bool:
        env = getattr(self, "env", None)
        if env is None:
            return False
        got = env.condition_shape(n.test)
        return got is not None and got is not SCALAR

    def visit_BoolOp(self, n):
        """`a and b` evaluates b only where a holds; `a or b` where it fails."""
        out = []
        for k, v in enumerate(n.values):
            if k == 0:
                out.append(self.visit(v))
                continue
            before = out[0] if k == 1 else ast.BoolOp(op=n.op, values=list(out))
            cond = before if isinstance(n.op, ast.And) else ast.UnaryOp(op=ast.Not(), operand=before)
            out.append(self.guarded(cond, v))
        n.values = out
        return n

    def guarded(self, cond, e):
        self.guards = self.guards + [copy.deepcopy(cond)]
        try:
            return self.visit(e)
        finally:
            self.guards = self.guards[:-1]

    def place(self, stmts: list, at, init: int = 1) -> None:
        """Hoist `stmts` before the current statement; past the first `init` of them (what
        binds the result), under the current guards."""
        if self.guards and len(stmts) > init:
            test = self.guards[0] if len(self.guards) == 1 else ast.BoolOp(op=ast.And(), values=list(self.guards))
            stmts = stmts[:init] + [ast.If(test=copy.deepcopy(test), body=stmts[init:], orelse=[])]
        for st in stmts:
            ast.copy_location(st, at)
            for sub in ast.walk(st):
                if not hasattr(sub, "lineno"):
                    ast.copy_location(sub, at)
        self.pending += stmts

    # (the two below are for passes that hold desugar's `_Env` as `self.env`)
    def computed(self, e, name: str, shape, at) -> ast.Name:
        """Expression `e`, of shape `shape`, computed once into `name` just before the
        statement holding `at`: the name that reads it."""
        self.place([ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())], value=e)], at, init=0)
        self.env.shapes[name] = shape
        return ast.Name(id=name, ctx=ast.Load())

    def allocation(self, name: str, dims: list) -> ast.Assign:
        """`name = zeros((dims))`, a new float32 buffer, its shape recorded."""
        self.env.shapes[name] = ([copy.deepcopy(d) for d in dims], True)
        return ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())], value=ast.Call(
            func=ast.Name(id=LIB + "zeros", ctx=ast.Load()),
            args=[ast.Tuple(elts=[copy.deepcopy(d) for d in dims], ctx=ast.Load())], keywords=[]))

    def block(self, stmts: list) -> list:
        out = []
        for s in stmts:
            if isinstance(s, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr, ast.Return, ast.If)):
                if isinstance(s, ast.If):
                    s.test = self.visit(s.test)
                else:
                    s = self.visit(s)
                pending, self.pending = self.pending, []
                out += self.block(pending)  # (a sum inside a sum's term: computed in its loop)
            if isinstance(s, (ast.If, ast.For)):
                s.body, s.orelse = self.block(s.body), self.block(s.orelse)
            out.append(s)
        return out


def record_result(n, env) -> None:
    """After statement `n` was rewritten: a name bound once (`v = np.einsum(...)`, now
    `v = eqsat_red0`; `e = np.exp(v - m)`) to a tensor whose shape `env` knows takes that shape, so later
    statements' reductions and contractions can read it. A name bound again (in a loop:
    `g = 0.25 * w[:, k + 1]`) takes it only where every binding of it is a plain assignment
    of a value of that same shape (whichever binding a read sees, the shape is the same)."""
    if not (isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)):
        return
    name = n.targets[0].id
    if env.stores.get(name, 0) < 1 or name in env.shapes:
        return
    got = env.value_shape(n.value)
    if got is None or isinstance(got, str) or not got[0] or not got[1]:  # (SCALAR is a str)
        return
    if env.stores[name] > 1:
        from .sections import same_dims  # (sections builds on this module)

        values = [st.value for st in ast.walk(env.fdef) if isinstance(st, ast.Assign) and len(st.targets) == 1 and
                  isinstance(st.targets[0], ast.Name) and st.targets[0].id == name]
        if len(values) != env.stores[name]:
            return  # (bound some other way too: a loop, a tuple, an augmented assignment)
        for v in values:
            other = env.value_shape(v)
            if other is None or isinstance(other, str) or other[1] != got[1] or \
                    not same_dims(other[0], got[0]):
                return
    env.shapes[name] = ([copy.deepcopy(d) for d in got[0]], got[1])
