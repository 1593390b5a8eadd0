"""The functional IR as typed egglog sorts (see `eqsat.terms` for the meaning of each).

Rule files import these names. Constructors are classmethods so the serialized
e-graph names them `Sort.op`, exactly as `eqsat.terms.Node` does. Helper functions
that rules rewrite away (`subst`, `bind`, `dvars`, ...) are plain functions: the
extractor treats any node that is not a constructor as not executable.
"""
from __future__ import annotations

from egglog import Expr, StringLike, f64Like, function, i64, i64Like, relation


class Var(Expr):
    @classmethod
    def named(cls, name: StringLike) -> Var: ...

    @classmethod
    def mmk(cls, mm: Ten, p: Ix, q: Ix) -> Var:
        """The contraction variable of `mm` expanded at element [p, q] (a fresh binder)."""

    @classmethod
    def axis(cls, pos: i64Like, extent: i64Like) -> Var:
        """Axis `pos` of a tensor a rule makes from an elementwise operand (a prologue):
        a binder named by its position and extent, so equal prologues are one term."""


class Ix(Expr):
    @classmethod
    def v(cls, x: Var) -> Ix: ...

    @classmethod
    def lit(cls, n: i64Like) -> Ix: ...

    @classmethod
    def add(cls, a: Ix, b: Ix) -> Ix: ...

    @classmethod
    def scale(cls, a: Ix, c: i64Like) -> Ix: ...


class Ixs(Expr):
    @classmethod
    def nil(cls) -> Ixs: ...

    @classmethod
    def cons(cls, head: Ix, tail: Ixs) -> Ixs: ...


class Dims(Expr):
    @classmethod
    def nil(cls) -> Dims: ...

    @classmethod
    def cons(cls, v: Var, extent: i64Like, tail: Dims) -> Dims: ...


class Shp(Expr):
    @classmethod
    def nil(cls) -> Shp: ...

    @classmethod
    def cons(cls, n: i64Like, tail: Shp) -> Shp: ...


class Env(Expr):
    """A simultaneous substitution of index variables."""

    @classmethod
    def nil(cls) -> Env: ...

    @classmethod
    def cons(cls, v: Var, ix: Ix, tail: Env) -> Env: ...

    @classmethod
    def flat(cls) -> Env:
        """The end of a substitution that does not enter reductions (`bind_flat`)."""


class Sc(Expr):
    @classmethod
    def lit(cls, x: f64Like) -> Sc: ...

    @classmethod
    def param(cls, name: StringLike) -> Sc: ...

    @classmethod
    def load(cls, t: Ten, idx: Ixs) -> Sc: ...

    @classmethod
    def add(cls, a: Sc, b: Sc) -> Sc: ...

    @classmethod
    def sub(cls, a: Sc, b: Sc) -> Sc: ...

    @classmethod
    def mul(cls, a: Sc, b: Sc) -> Sc: ...

    @classmethod
    def div(cls, a: Sc, b: Sc) -> Sc: ...

    @classmethod
    def max(cls, a: Sc, b: Sc) -> Sc: ...

    @classmethod
    def min(cls, a: Sc, b: Sc) -> Sc: ...

    @classmethod
    def fn(cls, name: StringLike, a: Sc) -> Sc: ...

    @classmethod
    def red(cls, op: StringLike, v: Var, extent: i64Like, body: Sc) -> Sc: ...

    @classmethod
    def idx(cls, i: Ix) -> Sc:
        """The value of an index expression (a loop variable used as a number: `i > j`, `1.0 * i`)."""

    @classmethod
    def select(cls, cmp: StringLike, l: Sc, r: Sc, a: Sc, b: Sc) -> Sc:
        """`a if l cmp r else b`, cmp one of < <= > >= == != (a conditional as a value)."""


class Ten(Expr):
    @classmethod
    def input(cls, name: StringLike) -> Ten: ...

    @classmethod
    def compute(cls, dims: Dims, body: Sc) -> Ten: ...

    @classmethod
    def matmul(cls, a: Ten, b: Ten) -> Ten: ...

    @classmethod
    def transpose(cls, a: Ten, perm: StringLike) -> Ten: ...

    @classmethod
    def slice(cls, a: Ten, i: Ix) -> Ten: ...

    @classmethod
    def reshape(cls, a: Ten, shape: Shp) -> Ten:
        """A row-major reshape (a view): same elements, new shape."""

    @classmethod
    def fused(cls, dims: Dims, body: Sc, mm: Ten) -> Ten: ...

    @classmethod
    def opaque(cls, nest: i64Like, name: StringLike, inputs: Tens, scalars: Scs) -> Ten: ...


class Tens(Expr):
    @classmethod
    def nil(cls) -> Tens: ...

    @classmethod
    def cons(cls, head: Ten, tail: Tens) -> Tens: ...


class Scs(Expr):
    @classmethod
    def nil(cls) -> Scs: ...

    @classmethod
    def cons(cls, head: Sc, tail: Scs) -> Scs: ...


# ---------------------------------------------------------------- analyses and helpers
@function
def shape_of(t: Ten) -> Shp: ...


@function
def dshape(d: Dims) -> Shp: ...


@function
def dvars(d: Dims) -> Ixs: ...


@function
def permuted_vars(d: Dims, perm: StringLike) -> Ixs:
    """`dvars(d)` permuted (`perm` as in Ten.transpose): derived only for the Dims of a
    copy, so a rule can match a permuted read as one join on this list's e-class."""


@function
def permuted_shape(d: Dims, perm: StringLike) -> Shp:
    """`dshape(d)` permuted likewise."""


@function
def bind(d: Dims, idx: Ixs) -> Env: ...


@function
def bind_flat(d: Dims, idx: Ixs) -> Env:
    """`bind(d, idx)` for a substitution that stops at reductions: it rewrites only the
    reduction-free forms of a body (analysis.py says why)."""


deep = relation("deep", Env)
"""The substitution enters reductions (it ends in `Env.nil()`, not `Env.flat()`)."""


@function
def subst(s: Sc, env: Env) -> Sc: ...



@function
def subst_ix(x: Ix, env: Env) -> Ix: ...


@function
def subst_ixs(x: Ixs, env: Env) -> Ixs: ...


@function
def extent(v: Var) -> i64:
    """How many values an index variable takes (from its binder)."""


@function
def output(i: i64Like) -> Ten:
    """Marks the i-th output of the program, so its e-class can be found after saturation."""


@function(merge=lambda old, new: old.max(new))
def red_depth(s: Sc) -> i64:
    """How deeply reductions nest in a scalar (0: elementwise). Guards inlining."""


closed = relation("closed", Ten)
"""The tensor mentions no free index variable (it can be a kernel of its own)."""

open_ = relation("open_", Ten)
"""The tensor depends on a loop variable: a library call inside a loop."""
