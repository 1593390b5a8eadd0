"""The loop IR: what the front end makes of a program's source.

Index and extent expressions (`IExpr`) are small tuples so they hash and compare:
``("int", 3)``, ``("name", "M")``, ``("add", a, b)``, ``("sub", a, b)``, ``("mul", a, b)``,
``("floordiv", a, b)``, ``("neg", a)``. Names are dims or loop variables.

Value expressions carry `ty`: ``None`` for a scalar, else the symbolic shape (a tuple of
IExpr). Statements carry the source location for error messages.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from .errors import Loc, ProgramError

IExpr = tuple


# ----------------------------------------------------------------------------- values
@dataclass(eq=False)
class Expr:
    loc: Loc
    ty: Any = field(default=None, kw_only=True)

    def children(self) -> tuple:
        """The value expressions directly inside this one (the one walker every pass uses)."""
        return ()


@dataclass(eq=False)
class Const(Expr):
    value: float


@dataclass(eq=False)
class Ref(Expr):
    name: str


@dataclass(eq=False)
class Dim(Expr):
    """A dimension, integer parameter or loop variable used as a value (`1.0 / N`, `i > j`)."""

    name: str


@dataclass(eq=False)
class Index(Expr):
    """`base[idx]`: an element load, or a slice when fewer indices than the rank."""

    base: str
    idx: tuple


@dataclass(eq=False)
class Bin(Expr):
    op: str  # + - * /
    a: Expr
    b: Expr

    def children(self) -> tuple:
        return (self.a, self.b)


@dataclass(eq=False)
class Call(Expr):
    fn: str  # a name from lang.UNARY / lang.BINARY, or "neg", "max", "min"
    args: tuple

    def children(self) -> tuple:
        return tuple(self.args)


@dataclass(eq=False)
class Compare(Expr):
    """`a op b` for op in < <= > >= == != (a condition: true or false, never stored)."""

    op: str
    a: Expr
    b: Expr

    def children(self) -> tuple:
        return (self.a, self.b)


@dataclass(eq=False)
class BoolOp(Expr):
    """`and` / `or` over conditions, or `not` of one (args has one element)."""

    op: str
    args: tuple

    def children(self) -> tuple:
        return tuple(self.args)


@dataclass(eq=False)
class Select(Expr):
    """`a if cond else b`."""

    cond: Expr
    a: Expr
    b: Expr

    def children(self) -> tuple:
        return (self.cond, self.a, self.b)


@dataclass(eq=False)
class MatMul(Expr):
    a: Expr
    b: Expr

    def children(self) -> tuple:
        return (self.a, self.b)


@dataclass(eq=False)
class Transpose(Expr):
    x: Expr
    perm: tuple

    def children(self) -> tuple:
        return (self.x,)


@dataclass(eq=False)
class Reshape(Expr):
    """`x.reshape(shape)` read as a value (numpy's view, where nothing writes either: the
    desugaring binds it only there): x's elements in C order, `ty` its new extents."""
    x: Expr

    def children(self) -> tuple:
        return (self.x,)


# ----------------------------------------------------------------------------- statements
@dataclass(eq=False)
class Stmt:
    loc: Loc


@dataclass(eq=False)
class Alloc(Stmt):
    name: str
    shape: tuple
    kind: str  # "empty" | "zeros"


@dataclass(eq=False)
class Assign(Stmt):
    """`name = value` (scalar or tensor local); `name op= value` when aug (op is aug_op)."""

    name: str
    value: Expr
    aug: bool = False
    aug_op: str = "+"  # "+" ("-=" is "+=" of the negation), "*" or "/"


@dataclass(eq=False)
class Store(Stmt):
    buf: str
    idx: tuple
    value: Expr
    aug: bool = False
    aug_op: str = "+"
    guarded: bool = False  # made by if-conversion: `v if c else buf[idx]`, the old value where c fails


@dataclass(eq=False)
class For(Stmt):
    var: str
    lo: IExpr
    hi: IExpr
    body: list
    node: Any = None  # the ast.For, kept so a loop kernel can run exactly as written
    step: int = 1  # a nonzero constant; negative runs downward from lo to hi (exclusive)


@dataclass(eq=False)
class If(Stmt):
    """`if cond: body else: orelse` (elif is an If in orelse). Nests holding one run as written."""

    cond: Expr
    body: list
    orelse: list
    node: Any = None


@dataclass
class Param:
    name: str
    dtype: Any
    shape: tuple | None  # None for a scalar parameter
    loc: Loc


@dataclass
class Program:
    name: str
    params: list
    body: list
    returns: tuple
    dims: list
    file: str
    fn: Any
    loc: Loc
    buffer_kinds: dict = field(default_factory=dict)  # buffer name -> "zeros"/"empty"
    out_dtypes: tuple = ()  # each returned value's declared dtype (lang.DType)
    # module-level constants the program reads (name -> value when it was parsed): a plan
    # uses their values at optimize() time, as Python would at a call (`current`)
    constants: dict = field(default_factory=dict)
    # returned shapes the annotation matches only at some sizes (`-> f32[6, 12]` for
    # `empty((M * P, N * Q))`): (where, output, axis, the returned extent, the declared
    # one), checked when the sizes are known (`args.check_dims`)
    return_checks: tuple = ()
    # the program's `assert`s on sizes: (where, condition over index expressions, its source,
    # its message's source or None), checked when the sizes are known (`args.check_dims`)
    assertions: tuple = ()
    # the text it was parsed from, as read at decoration: (lines, first line, file)
    source: tuple = ()
    # `assert`s inside loops or ifs: (where, condition, its source, its message's source or
    # None, the loops (`For`s with no body) and `(condition, holds)` of the ifs around it,
    # outermost first), checked on every iteration when the sizes are known (`bounds.check_bounds`)
    loop_assertions: tuple = ()

    def current(self) -> "Program":
        """This program, or, where a module-level constant it reads has changed since it was
        parsed, the function parsed again (so a plan and `reference` agree on its value)."""
        g = getattr(self.fn, "__globals__", {})
        missing = object()
        for name, v in self.constants.items():
            now = g.get(name, missing)
            try:
                same = now is v or bool(now == v)
            except (TypeError, ValueError):  # (rebound to an array: parsed again, it is refused there)
                same = False
            if not same:
                from .frontend import program

                return program(self.fn, _source=self.source or None)  # (that text: not the file as edited since)
        return self

    def __call__(self, *args, **kwargs):
        from .reference import reference

        return reference(self, *args, **kwargs)

    def __repr__(self) -> str:
        return f"<eqsat program {self.name} at {self.loc}>"

    def __reduce__(self):
        # by reference: the module (or file) that defines it, and its name there
        return _program_by_name, (getattr(self.fn, "__module__", None), self.fn.__name__, self.file)


def _program_by_name(module: str | None, name: str, file: str):
    """The @program `name` of `module` (imported, or loaded from `file`) in this process."""
    import importlib
    import importlib.util
    import sys

    def find(mod):
        got = getattr(mod, name, None)
        if isinstance(got, Program):
            return got
        # (`g = program(f)`: bound under another name than its function's)
        found = [v for v in vars(mod).values() if isinstance(v, Program) and v.fn.__name__ == name]
        return found[0] if len(found) == 1 else None

    mod = sys.modules.get(module) if module else None
    if mod is None and module and module not in ("__main__", "__mp_main__"):
        try:
            mod = importlib.import_module(module)
        except ImportError:
            mod = None
    got = None if mod is None else find(mod)
    if got is None:
        spec = importlib.util.spec_from_file_location(f"eqsat_program_{abs(hash(file))}", file)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        got = find(mod)
    if got is None:
        from .errors import ArgumentError

        raise ArgumentError(f"no @program {name!r} at the top level of {file} (module {module}): another process "
                            f"finds a program by its module and name, so one defined inside a function or under "
                            f"`if __name__ == '__main__':` is not there; define it at the top level of a module "
                            f"(or call optimize() for it)")
    return got


# ----------------------------------------------------------------------------- IExpr helpers
def expr_reads(e, names: bool = False) -> set:
    """The tensors and scalars expression `e` reads (Ref names, Index bases); with `names`,
    also every loop variable and size it mentions (Dim values, the names in its indices).
    Walked with a stack: a long sum is as deep as it is long."""
    out: set = set()
    stack = [e]
    while stack:
        x = stack.pop()
        if isinstance(x, Ref):
            out.add(x.name)
        elif isinstance(x, Index):
            out.add(x.base)
            if names:
                out |= idx_names(x.idx)
        elif names and isinstance(x, Dim):
            out.add(x.name)
        stack.extend(x.children())
    return out


def same_expr(x, y) -> bool:
    """Two IR expressions written alike (locations and types aside)."""
    if type(x) is not type(y):
        return False
    if isinstance(x, tuple):
        return len(x) == len(y) and all(same_expr(p, q) for p, q in zip(x, y))
    if not dataclasses.is_dataclass(x):
        return x == y
    return all(same_expr(getattr(x, f.name), getattr(y, f.name)) for f in dataclasses.fields(x)
               if f.name not in ("loc", "ty"))


def written(s) -> set:
    """The names statement `s` assigns, stores into or allocates (a loop or an `if`:
    anywhere inside it)."""
    if isinstance(s, (For, If)):
        out = set()
        for b in s.body + (s.orelse if isinstance(s, If) else []):
            out |= written(b)
        return out
    if isinstance(s, Store):
        return {s.buf}
    if isinstance(s, (Assign, Alloc)):
        return {s.name}
    return set()


def leaves(s) -> list:
    """The statements of a nest that are not loops, in textual order (an `if` is one)."""
    if isinstance(s, For):
        return [x for b in s.body for x in leaves(b)]
    return [s]


def max_min(s):
    """`s = max(s, e)` -> ("max", e, the Ref of s) (min alike), and `y[i] = max(y[i], e)` ->
    ("max", e, the Index of y[i]); else None.

    Only with the accumulator first: builtin max(s, e) keeps s when e is NaN, which a
    NaN-skipping reduction reproduces; max(e, s) forgets an earlier NaN and is no reduction.
    """
    v = s.value
    if isinstance(v, Call) and v.fn in ("max", "min") and len(v.args) == 2:
        a, b = v.args
        if isinstance(s, Assign) and isinstance(a, Ref) and a.name == s.name:
            return v.fn, b, a
        if isinstance(s, Store) and not s.aug and not s.guarded and isinstance(a, Index) and a.base == s.buf and \
                tuple(a.idx) == tuple(s.idx):
            return v.fn, b, a
    return None


def sum_chain(s):
    """`y[i] = y[i] + a + b` (a left-to-right chain of + and - starting at the target, as
    reference BLAS writes `C(I,J) = C(I,J) + A(I,L)*TEMP1 + B(I,L)*TEMP2`) -> ("sum", a + b,
    the Index of y[i]), and `s = s + a - b` alike with the Ref of s; else None. (`y[i] = y[i]
    + e` alone is `y[i] += e` already, from the front end.) Only a reduction reads it so, its
    terms in another order as every reduction's; a statement run once keeps its own order."""
    v = s.value
    spine = []
    while isinstance(v, Bin) and v.op in ("+", "-") and v.ty is None:
        spine.append((v.op, v.b))
        v = v.a
    if len(spine) < 2:
        return None
    if isinstance(s, Assign) and isinstance(v, Ref) and v.name == s.name and s.value.ty is None:
        pass
    elif isinstance(s, Store) and not s.aug and not s.guarded and isinstance(v, Index) and v.base == s.buf and \
            tuple(v.idx) == tuple(s.idx) and v.ty is None:
        pass
    else:
        return None
    spine.reverse()
    op, rest = spine[0]
    if op == "-":
        rest = Call(rest.loc, "neg", (rest,))
    for op, e in spine[1:]:
        rest = Bin(e.loc, op, rest, e)
    return "sum", rest, v


def accumulation(s):
    """A statement that accumulates into its own target without `+=`: `max_min` or
    `sum_chain` (op, the accumulated value, the target's read), else None."""
    return max_min(s) or sum_chain(s)


def ie_names(e: IExpr) -> set:
    if e[0] == "name":
        return {e[1]}
    if e[0] == "int":
        return set()
    out: set = set()
    for c in e[1:]:
        out |= ie_names(c)
    return out


def idx_names(idx) -> set:
    """The names an index tuple's expressions use."""
    out: set = set()
    for i in idx:
        out |= ie_names(i)
    return out


def ie_eval(e: IExpr, env: dict) -> int:
    """Evaluate an index expression with every name bound to an int."""
    tag = e[0]
    if tag == "int":
        return e[1]
    if tag == "name":
        return env[e[1]]
    if tag == "neg":
        return -ie_eval(e[1], env)
    a, b = ie_eval(e[1], env), ie_eval(e[2], env)
    if tag == "add":
        return a + b
    if tag == "sub":
        return a - b
    if tag == "mul":
        return a * b
    if tag == "floordiv":
        return a // b
    if tag == "mod":
        return a % b
    raise AssertionError(tag)


class NotAffine(Exception):
    """An index with `//` or `%` of a loop variable: fine to run, not an affine map."""


def ie_affine(e: IExpr, dims: dict, loc: Loc) -> tuple[dict, int]:
    """`e` as ({loop var: coefficient}, constant), dims substituted; raise if not affine."""
    tag = e[0]
    if tag == "int":
        return {}, e[1]
    if tag == "name":
        if e[1] in dims:
            return {}, dims[e[1]]
        return {e[1]: 1}, 0
    if tag == "neg":
        c, k = ie_affine(e[1], dims, loc)
        return {v: -x for v, x in c.items()}, -k
    ca, ka = ie_affine(e[1], dims, loc)
    cb, kb = ie_affine(e[2], dims, loc)
    if tag in ("add", "sub"):
        s = 1 if tag == "add" else -1
        out = dict(ca)
        for v, x in cb.items():
            out[v] = out.get(v, 0) + s * x
        return {v: x for v, x in out.items() if x}, ka + s * kb
    if tag == "mul":
        if ca and cb:  # (an index never is one: the front end refuses it; a value, `i * j`, is a product of numbers)
            raise NotAffine("a product of two loop variables")
        if ca:
            return {v: x * kb for v, x in ca.items() if x * kb}, ka * kb
        return {v: x * ka for v, x in cb.items() if x * ka}, ka * kb
    if tag in ("floordiv", "mod"):
        if ca or cb:
            raise NotAffine("floor division or remainder of a loop variable")
        if kb == 0:
            raise ProgramError("division by zero in an index or extent", loc)
        return {}, (ka // kb if tag == "floordiv" else ka % kb)
    raise AssertionError(tag)


def ie_canon(e: IExpr):
    """`e` as a sum of terms, each a product of atoms (names, `//` and `%` subterms in their
    own canonical form) with an integer coefficient: a hashable form two expressions share
    exactly when they are equal as polynomials in those atoms (`(D - D // 2) + D // 2` and
    `D`). Equal forms are equal for every value of the names; unequal ones may still be
    equal for some."""
    def go(e) -> dict:
        tag = e[0]
        if tag == "int":
            return {(): e[1]} if e[1] else {}
        if tag == "name":
            return {(("name", e[1]),): 1}
        if tag == "neg":
            return {k: -v for k, v in go(e[1]).items()}
        if tag in ("floordiv", "mod"):
            atom = (tag, _frozen(go(e[1])), _frozen(go(e[2])))
            return {(atom,): 1}
        a, b = go(e[1]), go(e[2])
        out: dict = {}
        if tag in ("add", "sub"):
            s = 1 if tag == "add" else -1
            out = dict(a)
            for k, v in b.items():
                out[k] = out.get(k, 0) + s * v
        elif tag == "mul":
            for ka, va in a.items():
                for kb, vb in b.items():
                    k = tuple(sorted(ka + kb, key=repr))
                    out[k] = out.get(k, 0) + va * vb
        else:
            raise AssertionError(tag)
        return {k: v for k, v in out.items() if v}

    return _frozen(go(e))


def _frozen(form: dict):
    return tuple(sorted(form.items(), key=repr))


def ie_str(e: IExpr) -> str:
    tag = e[0]
    if tag in ("int", "name"):
        return str(e[1])
    if tag == "neg":
        return f"-{ie_str(e[1])}"
    op = {"add": "+", "sub": "-", "mul": "*", "floordiv": "//", "mod": "%"}[tag]
    return f"({ie_str(e[1])} {op} {ie_str(e[2])})"
