"""Python-side terms of the functional IR, one-to-one with the egglog constructors.

A `Node` is hash-consed: equal terms are the same object, so a program's DAG stays a
DAG (hashing and comparing are O(1)). The same type carries terms built by the
lowering and terms decoded from an extraction.

Sorts and constructors (argument kinds in brackets):

    Var   Var.named[str]                 a loop/reduction variable (unique per binder)
          Var.mmk[Ten, Ix, Ix]           the contraction variable of an expanded matmul
          Var.axis[int, int]             an axis of a prologue tensor (position, extent)
    Ix    Ix.v[Var] Ix.lit[int] Ix.add[Ix, Ix] Ix.scale[Ix, int]     affine index
    Ixs   Ixs.nil Ixs.cons[Ix, Ixs]
    Dims  Dims.nil Dims.cons[Var, int, Dims]                         bound output axes
    Sc    Sc.lit[float] Sc.param[str] Sc.load[Ten, Ixs]   (total: outside its tensor, some
                                         element of it or 0; only a select's dropped side
                                         reads there, after if-conversion widened a loop)
          Sc.add Sc.sub Sc.mul Sc.div Sc.max Sc.min [Sc, Sc]
          Sc.fn[str, Sc]                 relu gelu silu sigmoid tanh exp sqrt neg
          Sc.red[str, Var, int, Sc]      reduction "sum" | "max" | "min" over a variable
          Sc.select[str, Sc, Sc, Sc, Sc] `a if l cmp r else b` (cmp: < <= > >= == !=)
          Sc.idx[Ix]                     the value of an index expression, as a number
          Sc.acc                         the accumulator, inside a Ten.fused body (only in
                                         extracted terms: it means mm[d] of the enclosing fused)
    Ten   Ten.input[str] Ten.compute[Dims, Sc] Ten.matmul[Ten, Ten]
          Ten.transpose[Ten, str] Ten.slice[Ten, Ix] Ten.reshape[Ten, Shp]
          Ten.fused[Dims, Sc, Ten]       a matmul (3rd arg) and its elementwise epilogue over
                                         the output axes: for[d] body, where body reads mm[d]
          Ten.opaque[int, str, Tens, Scs]  output of a loop nest kept as written
    Shp   Shp.nil Shp.cons[int, Shp]                                 a concrete shape
    Tens  Tens.nil Tens.cons[Ten, Tens]
    Scs   Scs.nil Scs.cons[Sc, Scs]
"""
from __future__ import annotations

import math
import sys
import weakref


DEEP_RECURSION = 50_000


def allow_deep_recursion() -> None:
    """Raise Python's recursion limit to DEEP_RECURSION (never lower it): terms of a long
    chain of layers, and a sum of hundreds of terms in one statement, are that deep, and the
    passes over them recurse (Python 3.11's Python-to-Python calls do not use the C stack,
    so a higher limit is safe). The front end and optimize() call it."""
    sys.setrecursionlimit(max(sys.getrecursionlimit(), DEEP_RECURSION))


class Node:
    __slots__ = ("op", "args", "_hash", "__weakref__")
    _table: dict = {}

    def __new__(cls, op: str, *args):
        key = (op, args)
        n = cls._table.get(key)
        if n is None:
            n = object.__new__(cls)
            n.op, n.args, n._hash = op, args, hash(key)
            # setdefault is one step: two threads building the same term get the same node
            n = cls._table.setdefault(key, n)
        return n

    def __hash__(self):
        return self._hash

    def __eq__(self, other):
        return self is other

    @property
    def sort(self) -> str:
        return self.op.split(".", 1)[0]

    def __repr__(self) -> str:
        return show(self)

    def __reduce__(self):
        # rebuilt through the constructor, so a term sent to another process is hash-consed there
        return Node, (self.op, *self.args)


BINOPS = ("Sc.add", "Sc.sub", "Sc.mul", "Sc.div", "Sc.max", "Sc.min")
SYMBOL = {"Sc.add": "+", "Sc.sub": "-", "Sc.mul": "*", "Sc.div": "/"}


# ------------------------------------------------------------------ builders
def var(name: str) -> Node:
    return Node("Var.named", name)


def iv(v: Node) -> Node:
    return Node("Ix.v", v)


def ilit(n: int) -> Node:
    return Node("Ix.lit", int(n))


def ix_affine(terms, const: int) -> Node:
    """The index `sum of c * x over (x, c) in terms, plus const` (x an Ix term), in the order
    given, the constant last (and alone where there is no term)."""
    parts = [x if c == 1 else Node("Ix.scale", x, c) for x, c in terms]
    if const or not parts:
        parts.append(ilit(const))
    out = parts[0]
    for p in parts[1:]:
        out = Node("Ix.add", out, p)
    return out


def cons_list(sort: str, items) -> Node:
    """A `sort.cons` list of items (Ixs, Tens, Scs)."""
    out = Node(f"{sort}.nil")
    for x in reversed(list(items)):
        out = Node(f"{sort}.cons", x, out)
    return out


def ixs(items) -> Node:
    return cons_list("Ixs", items)


def dims(pairs) -> Node:
    out = Node("Dims.nil")
    for v, n in reversed(list(pairs)):
        out = Node("Dims.cons", v, int(n), out)
    return out


def tens(items) -> Node:
    return cons_list("Tens", items)


def scs(items) -> Node:
    return cons_list("Scs", items)


def is_negative_zero(x: float) -> bool:
    return x == 0.0 and math.copysign(1.0, x) < 0


def lit(x: float) -> Node:
    """A float literal; -0.0 is `neg(0.0)`: hash-consing (here, and egglog's f64) takes
    -0.0 and 0.0 for one key, as they compare equal, and 1 / -0.0 is -inf."""
    x = float(x)
    if is_negative_zero(x):
        return Node("Sc.fn", "neg", Node("Sc.lit", 0.0))
    return Node("Sc.lit", x)


def load(t: Node, idx) -> Node:
    return Node("Sc.load", t, idx if isinstance(idx, Node) else ixs(idx))


def shp(shape) -> Node:
    out = Node("Shp.nil")
    for n in reversed(list(shape)):
        out = Node("Shp.cons", int(n), out)
    return out


def compute(pairs, body: Node) -> Node:
    return Node("Ten.compute", dims(pairs), body)


def _div(x: float, y: float) -> float:
    """x / y as IEEE division (numpy's: x / 0 is inf or NaN; Python's raises)."""
    if y == 0.0:
        if x != x or x == 0.0:
            return math.nan
        return math.copysign(math.inf, x) * math.copysign(1.0, y)
    return x / y


_FOLD = {"Sc.add": lambda x, y: x + y, "Sc.sub": lambda x, y: x - y, "Sc.mul": lambda x, y: x * y, "Sc.div": _div}


def binop(op: str, a: Node, b: Node) -> Node:
    """A scalar binary op with the foldings the lowering may do for free: 0 + x, -0.0 + x, x * 1, and
    + - * / of two literals (Python's own float arithmetic, which `reference` does there
    too; a division by zero as numpy's, inf or NaN: `zeros(...) / zeros(...)`)."""
    if a.op == "Sc.lit" and b.op == "Sc.lit" and op in _FOLD:
        return lit(_FOLD[op](a.args[0], b.args[0]))
    if op == "Sc.add":  # (0.0 + x is x but for x = -0.0: 0.0 + -0.0 is 0.0, and 1 / it inf)
        if a is lit(-0.0):  # (-0.0 + x is x for every x: -0.0 is the exact additive identity)
            return b
        if b is lit(-0.0):
            return a
        if a is lit(0.0) and never_negative_zero(b):
            return b
        if b is lit(0.0) and never_negative_zero(a):
            return a
    if op == "Sc.sub" and b is lit(0.0):  # (x - 0.0 is x, -0.0 too)
        return a
    return Node(op, a, b)


def never_negative_zero(n: Node, budget: int = 64) -> bool:
    """Whether scalar term `n` can never be -0.0 (rounding to nearest): a sum reduction (the
    program's starts from 0.0: `acc = 0.0; acc += ...`), a literal other than -0.0, an index
    value, and a sum with such an operand (x + y is -0.0 only where both are). Looks at no
    more than `budget` terms (a long sum: False, which only keeps a `0.0 +`)."""
    todo = [n]
    while todo and budget > 0:
        budget -= 1
        n = todo.pop()
        if n.op == "Sc.red" and n.args[0] == "sum" or n.op == "Sc.idx":
            return True
        if n.op == "Sc.lit" and not is_negative_zero(n.args[0]):
            return True
        if n.op == "Sc.add":
            todo += n.args
    return False


_NEGATED = {"<": ">=", ">=": "<", "<=": ">", ">": "<=", "==": "!=", "!=": "=="}


def update(op: str, old: Node, val: Node) -> Node:
    """`old op val`, an update run in sequence (not a reduction's step): where `val` is a
    guarded increment, `e if c else 0.0` (eqsat/ifconvert.py's form of `if c: x += e`), the
    update is `old + e if c else old`, so where c fails the value is old's own, -0.0 included
    (old + 0.0 is 0.0 there). A reduction keeps the `+ (e if c else 0.0)` form, a masked sum
    (the sign of a zero sum is a reduction's own business)."""
    if op == "Sc.add" and val.op == "Sc.select":
        cmp, l, r, a, b = val.args
        zero = lit(0.0)
        if b is zero and a is not zero:
            return select(cmp, l, r, binop(op, old, a), old)
        if a is zero and b is not zero:
            return select(cmp, l, r, old, binop(op, old, b))
    return binop(op, old, val)


def select(cmp: str, l: Node, r: Node, a: Node, b: Node) -> Node:
    """`a if l cmp r else b`, with the foldings that need no assumption: a comparison of two
    small integer literals is its answer's side; inside a branch, a
    select on the same condition is the side the condition takes there (on its negation too
    where both sides are index values or literals, which are never NaN), and equal branches
    are that branch. (A triangular nest widened to its hull guards every statement with one
    mask; without this the masks nest in each other.)"""
    if cmp in _COMPARE and _small_integer(l) and _small_integer(r):  # (an unrolled loop's `k == K - 1`: 3.0 == 8.0)
        return a if _COMPARE[cmp](l.args[0], r.args[0]) else b
    neg = _NEGATED[cmp] if _never_nan(l) and _never_nan(r) else None
    a, b = _assume(a, cmp, neg, l, r, True), _assume(b, cmp, neg, l, r, False)
    if a is b:
        return a
    return Node("Sc.select", cmp, l, r, a, b)


_COMPARE = {"<": lambda x, y: x < y, "<=": lambda x, y: x <= y, ">": lambda x, y: x > y,
            ">=": lambda x, y: x >= y, "==": lambda x, y: x == y, "!=": lambda x, y: x != y}


def _small_integer(n: Node) -> bool:
    """A literal that is an integer below 2**24: the same number in float32 and float64, so
    a comparison of two of them has one answer in every precision a backend computes in."""
    return n.op == "Sc.lit" and float(n.args[0]).is_integer() and abs(n.args[0]) < 2 ** 24


def _never_nan(n: Node) -> bool:
    return n.op in ("Sc.idx", "Sc.lit") and not (n.op == "Sc.lit" and n.args[0] != n.args[0])


def _scalar_kids(x: Node) -> list:
    return [a for a in x.args if isinstance(a, Node) and a.op.startswith("Sc.")] if x.op != "Sc.load" else []


_SELECTS = weakref.WeakKeyDictionary()  # scalar term -> the (l, r) of every select in it


def _selects_in(n: Node) -> frozenset:
    """The operands (l, r) of every select's comparison in scalar term `n` (not inside the
    tensors it reads), computed once per term: `_assume` skips a term with none of its
    condition's (an if/elif chain of N branches walked every later branch at every one: N^2)."""
    got = _SELECTS.get(n)
    if got is not None:
        return got
    for x in postorder(n, _SELECTS, _scalar_kids):
        out = frozenset().union(*(_SELECTS[k] for k in _scalar_kids(x)))
        if x.op == "Sc.select":
            out = out | {(x.args[1], x.args[2])}
        _SELECTS[x] = out
    return _SELECTS[n]


def _assume(n: Node, cmp: str, neg, l: Node, r: Node, holds: bool) -> Node:
    """Scalar term `n` where `l cmp r` is known to be `holds`: every select on that condition
    (or on `neg`, its negation) replaced by its side. Tensors read inside are left alone."""
    if (l, r) not in _selects_in(n):
        return n
    memo: dict = {}
    for x in postorder(n, memo, _scalar_kids):
        if x.op == "Sc.select" and x.args[1] is l and x.args[2] is r and x.args[0] in (cmp, neg):
            memo[x] = memo[x.args[3] if (x.args[0] == cmp) == holds else x.args[4]]
        elif _scalar_kids(x):
            memo[x] = Node(x.op, *[memo[a] if isinstance(a, Node) and a in memo else a for a in x.args])
        else:
            memo[x] = x
    return memo[n]


# ------------------------------------------------------------------ list views
def unlist(n: Node) -> list:
    """Items of an Ixs/Tens/Scs list; for Dims, (Var, extent) pairs."""
    out = []
    while n.op.endswith(".cons"):
        if n.op == "Dims.cons":
            out.append((n.args[0], n.args[1]))
            n = n.args[2]
        else:
            out.append(n.args[0])
            n = n.args[1]
    return out


def ix_range(x: Node, extent) -> tuple:
    """(smallest, largest) value of an index term, each variable v over 0..extent(v) - 1
    (or over lo..hi - 1 where extent(v) is a pair (lo, hi))."""
    op = x.op
    if op == "Ix.lit":
        return x.args[0], x.args[0]
    if op == "Ix.v":
        e = extent(x.args[0])
        return (0, e - 1) if type(e) is int else (e[0], e[1] - 1)
    if op == "Ix.add":
        (a, b), (c, d) = ix_range(x.args[0], extent), ix_range(x.args[1], extent)
        return a + c, b + d
    if op == "Ix.scale":
        a, b = ix_range(x.args[0], extent)
        k = x.args[1]
        return (a * k, b * k) if k >= 0 else (b * k, a * k)
    raise ValueError(f"index term {op}")


def leaving_axes(idx: list, shape, extent) -> list:
    """(axis, index term) for each index of a load that may leave its axis of `shape`. Loads
    are total (module doc): a backend reads some element there, or 0."""
    out = []
    for axis, (x, n) in enumerate(zip(idx, shape)):
        lo, hi = ix_range(x, extent)
        if lo < 0 or hi >= n:
            out.append((axis, x))
    return out


def shape_list(n: Node) -> tuple:
    out = []
    while n.op == "Shp.cons":
        out.append(n.args[0])
        n = n.args[1]
    return tuple(out)


def viewed_input(t: Node) -> str | None:
    """The name of the program input tensor `t` is (a view of, through transposes, slices
    and reshapes), or None where it is a computed tensor."""
    while t.op in ("Ten.transpose", "Ten.slice", "Ten.reshape"):
        t = t.args[0]
    return t.args[0] if t.op == "Ten.input" else None


def walk(n: Node, seen=None):
    """Every node reachable from `n`, each once."""
    return _reachable(n, seen, None)


def walk_body(n: Node):
    """Every node of a kernel body reachable from `n`, each once, without entering the
    tensors it loads (`Sc.load`'s tensor is another kernel or an input, not this body)."""
    return _reachable(n, None, lambda a: a.sort not in ("Ten", "Tens"))


def _reachable(n: Node, seen, enter):
    """Depth-first, each node once; `enter(child)` says whether to go into a child (None:
    every child)."""
    seen = set() if seen is None else seen
    stack = [n]
    while stack:
        x = stack.pop()
        if x in seen:
            continue
        seen.add(x)
        yield x
        if enter is None:
            stack.extend(a for a in x.args if isinstance(a, Node))
        else:
            stack.extend(a for a in x.args if isinstance(a, Node) and enter(a))


# ------------------------------------------------------------------ Python numbers
# Scalar terms whose value the reference computes with Python numbers: literals, index
# values, and arithmetic, functions and selects of those alone (`i * 0.1 + 0.5`). The
# reference evaluates them in float64 (Python floats and ints), and rounds the result to
# float32 only where it meets a float32 (numpy's rules: a Python number is weak), so the
# backends evaluate them in float64 and round them there too: `x[i] > i * 0.1` compares x
# with float32(i * 0.1), not with float32(i) * float32(0.1) (they differ for i = 9), and
# `(i * 0.1 + 1e8) - 1e8` is not 0. A select whose comparison reads two of them compares
# in float64; a select between two of them is one, whatever its condition reads (`0.1 if
# x[i] > 0 else 0.2` is a Python float). `np.float32(e)` is the term `float32(e)`, no Python number: `s =
# np.float32(1.0); s += 1e-9` rounds to float32 at each step, as numpy does. `float(e)` is the
# term `float(e)`, a Python number whatever e reads: `float(x[i]) * 1e30 * 1e20 / 1e50` is
# x[i] again, computed in float64; and so is a math function of an element (`math.exp(x[i])`
# is `exp(float(x[i]))`: Python's does not overflow past 88.7, float32's does).
_PYTHON_NUMBER: dict = {}  # Node -> bool (terms are hash-consed and never freed)
_ENTER = frozenset(BINOPS) | {"Sc.fn", "Sc.select"}


def python_number(n: Node) -> bool:
    """Whether scalar term `n` is a Python number in the reference (see above)."""
    got = _PYTHON_NUMBER.get(n)
    if got is not None:
        return got
    stack = [(n, False)]
    while stack:  # (no recursion: a long chain of operations is deep)
        x, ready = stack.pop()
        if x in _PYTHON_NUMBER:
            continue
        op = x.op
        if op in ("Sc.lit", "Sc.idx"):
            _PYTHON_NUMBER[x] = True
        elif op not in _ENTER or op == "Sc.fn" and x.args[0] == "float32":
            _PYTHON_NUMBER[x] = False
        elif op == "Sc.fn" and x.args[0] == "float":  # (Python's float(e) of any value: `lang.pyfloat`)
            _PYTHON_NUMBER[x] = True
        else:
            # (a select is its branches' value: `0.1 if x[i] > 0 else 0.2` is a Python float)
            kids = x.args[1:] if op == "Sc.fn" else x.args[3:] if op == "Sc.select" else x.args
            if not ready:
                stack.append((x, True))
                stack.extend((a, False) for a in kids if a not in _PYTHON_NUMBER)
            else:
                _PYTHON_NUMBER[x] = all(_PYTHON_NUMBER[a] for a in kids)
    return _PYTHON_NUMBER[n]


# ------------------------------------------------------------------ float(e) of an element
# `float(x[i])` and math's functions of an element (`math.exp(x[i])` is `exp(float(x[i]))`)
# make a Python float of a float32 value: float64 from there on, until it meets a float32.
# Where every such value meets a float32 at once (stored, or an operand of float32
# arithmetic: `y[i] = math.sqrt(x[i])`, `x[i] / math.sqrt(s)`), it is the float32 function's
# value but for its last bit, and the cast is dropped (`narrow_floats`): the forms the rules
# match, and the backends' float32 functions. Where a Python-number operation reads one
# (`math.exp(a[i]) / math.exp(b[i])`, `float(x[i]) * 1e30 * 1e20`, `float(x[i]) / 1e39`),
# float64 decides the value (float32's exp overflows past 88.7, 1e39 is inf in float32:
# `wide_reads`), and the casts stay: the backends
# compute those terms in float64 (`python_number`). A sum (max, min) of such values (`s =
# 0.0; s += math.exp(x[k])`: `wide_sums`) is a Python float in the reference where the
# accumulator is one, which no reduction term is: its nest runs as written (the compiled
# form types those as Python floats: `backends/scalar_types`), and a scalar holding one is
# never carried through a float32 buffer (`expand`).
_WIDE_READS: dict = {}  # Node -> bool (`wide_reads` of each node: terms are hash-consed, never freed)
_WIDE_SUMS: dict = {}  # Node -> bool (`wide_sums`)
_CASTS: dict = {}  # Node -> bool: it holds a `float(e)` of an element (`narrow_floats`)
_SCALAR_CASTS: dict = {}  # Node -> bool: the same, not entering the tensors it loads (`_wide_data`)


def _anywhere(term: Node, memo: dict, here, kids=None) -> bool:
    """Whether `here(node)` holds for a node of `term` (of the nodes `kids(node)` reaches,
    every argument by default), memoized per node (a nest's term holds the tensors of the
    nests before it: a chain is walked once, not once a nest)."""
    for x in postorder(term, memo, kids):
        memo[x] = here(x) or any(memo[a] for a in (x.args if kids is None else kids(x)) if isinstance(a, Node))
    return memo[term]


def _scalar_kids(x: Node) -> list:
    return [a for a in x.args if isinstance(a, Node) and a.sort == "Sc"]


def _wide_data(n: Node) -> bool:
    """Whether `n` is a Python number computed from an element (through `float(e)`)."""
    return python_number(n) and _anywhere(n, _SCALAR_CASTS, _element_cast, _scalar_kids)


def _reads_wide(x: Node) -> bool:
    if x.sort != "Sc" or not python_number(x) or _element_cast(x):
        return False
    if x.op == "Sc.select":
        kids = list(x.args[3:]) + (list(x.args[1:3]) if python_number(x.args[1]) and python_number(x.args[2])
                                   else [])
    else:
        kids = _scalar_kids(x)
    # (a function of `float(e)` is float32's function of e but for its last bit; arithmetic
    # with a Python number is not: `float(x[i]) / 1e39` is not x[i] / float32(1e39) = x[i] / inf)
    fn = x.op == "Sc.fn"
    return any(_wide_data(c) and not (fn and _element_cast(c)) for c in kids)


def wide_reads(term: Node) -> bool:
    """Whether a Python-number operation in `term` (its tensors' bodies included) reads a
    Python float computed from an element, other than a function of a bare `float(e)`
    (see above)."""
    return _anywhere(term, _WIDE_READS, _reads_wide)


def _element_cast(n: Node) -> bool:
    """`n` is `float(e)` of a float32 value (an element, arithmetic of elements); not the
    Python number a kept nest leaves in a scalar (`float` of its output: the backends keep
    that one in float64, `lower.Nest.numbers`, and it is never narrowed)."""
    return n.op == "Sc.fn" and n.args[0] == "float" and not python_number(n.args[1]) and not nest_number(n)


def nest_number(n: Node) -> bool:
    """`n` is `float(s)` of a scalar a kept nest writes (a load of its output at no index)."""
    if n.op != "Sc.fn" or n.args[0] != "float":
        return False
    x = n.args[1]
    return x.op == "Sc.load" and x.args[0].op == "Ten.opaque" and x.args[1].op == "Ixs.nil"


def wide_sums(term: Node) -> bool:
    """Whether a reduction in `term` reduces Python floats computed from elements (see above)."""
    return _anywhere(term, _WIDE_SUMS, lambda x: x.op == "Sc.red" and _wide_data(x.args[3]))


def narrow_floats(term: Node) -> Node:
    """`term` with every `float(e)` of an element dropped (`e`: a float32 value), where no
    Python-number operation reads what it makes (`wide_reads`), else as it is."""
    if not _anywhere(term, _CASTS, _element_cast) or wide_reads(term):
        return term  # (most terms hold no cast: not rebuilt, which on a chain of 2,000 updates
        # unioned with their parts walked it 1,400 times, 12 of 14 s of its lowering)
    return rebuild(term, lambda x: x.args[1] if _element_cast(x) else None)


def _cast(n: Node) -> bool:
    """`n` is `float32(e)`, numpy's cast (`weak_casts` drops those that compute nothing)."""
    return n.op == "Sc.fn" and n.args[0] == "float32"


_WEAK: dict = {}  # Node -> Node (`weak_casts`; terms are hash-consed and never freed)


def weak_casts(n: Node) -> Node:
    """`n` with each `float32(e)` that computes nothing dropped, so the rules see `acc =
    np.float32(0.0); acc += a[i, k] * b[k, j]` as the sum it is: a cast of a float32 value
    (of a load, of an operation on one) is that value; a cast of a Python number where the
    number meets a float32 value anyway is the number (an operand of an operation whose
    other operand is a float32 value, a side of a comparison whose other side is, a branch
    of a select that is a float32 value, the body of a tensor's elements: the backends
    round a Python number there once, `np.float32` of it). A cast that decides
    a type stays: `np.float32(1.0) + 1e-9` is computed in float32, a returned or passed-on
    `np.float32(0.5)` is a float32. A node's result depends on its subterm alone, so a term
    and its parts (the `unions` of lowering) change alike."""
    for x in postorder(n, _WEAK):
        args = [_WEAK[a] if isinstance(a, Node) else a for a in x.args]
        op = x.op
        if _cast(x) and not python_number(args[1]):
            out = args[1]  # (float32 of a float32 value)
        else:
            if op in BINOPS:
                drop = [True, True] if any(not python_number(a) and not _cast(a) for a in args) else []
            elif op == "Sc.select":
                solid = [not python_number(a) and not _cast(a) for a in args[1:]]
                drop = [False, solid[1], solid[0], solid[3], solid[2]]
            elif op == "Ten.compute" and unlist(args[0]):
                drop = [False, True]  # (a tensor's element is stored as float32)
            else:
                drop = []
            for k, d in enumerate(drop):
                if d and isinstance(args[k], Node) and _cast(args[k]):
                    args[k] = args[k].args[1]
            out = Node(op, *args)
        _WEAK[x] = out
    return _WEAK[n]


# ------------------------------------------------------------------ printing
def postorder(n: Node, known=(), kids=None):
    """Every node reachable from `n`, each once, children before parents (no recursion:
    terms of a long chain of layers are deep). Nodes in `known` (a memo of an earlier
    pass, or one the caller fills as nodes are yielded) are neither yielded nor entered.
    `kids(node)`: the children to enter (default: every Node argument)."""
    done: set = set()
    stack = [(n, False)]
    while stack:
        x, ready = stack.pop()
        if x in done or x in known:
            continue
        if not ready:
            stack.append((x, True))
            below = x.args if kids is None else kids(x)
            stack.extend((a, False) for a in below if isinstance(a, Node) and a not in done and a not in known)
            continue
        done.add(x)
        yield x


_FREE: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # term -> its free variables


def free_vars(term: Node) -> frozenset:
    """Index variables a term uses without binding them (a computation's axes bind in its
    body, a fused matmul's in its epilogue, a reduction's variable in its term; a kept
    nest's inputs are closed tensors). Memoized across calls (terms are immutable): a chain
    of nests shares its earlier terms. The one definition the lowering, the plan's costs
    and the canonical names (`alpha`) read."""
    free = _FREE
    for n in postorder(term, free):
        op = n.op
        if op == "Ix.v":
            out = frozenset([n.args[0]])
        elif op == "Ten.opaque":
            out = frozenset()
        elif op == "Ten.fused":
            out = (free[n.args[1]] - {v for v, _ in unlist(n.args[0])}) | free[n.args[2]]
        else:
            out = frozenset().union(*(free[a] for a in n.args if isinstance(a, Node)))
            if op == "Ten.compute":
                out -= {v for v, _ in unlist(n.args[0])}
            elif op == "Sc.red":
                out -= {n.args[1]}
        free[n] = out
    return free[term]


def substitute(term: Node, env: dict) -> Node:
    """`term` with index variables replaced (Var -> Ix term); binders are unique names
    (a computation's axes are its loops' variables), so nothing is captured."""
    return rebuild(term, lambda n: env.get(n.args[0]) if n.op == "Ix.v" else None)


def rebuild(n: Node, replace) -> Node:
    """`n` with every node for which `replace(node)` gives a term replaced by it, and its
    ancestors rebuilt (hash-consing keeps the untouched parts shared)."""
    memo: dict = {}
    for x in postorder(n):
        new = replace(x)
        memo[x] = new if new is not None else \
            Node(x.op, *[memo[a] if isinstance(a, Node) else a for a in x.args])
    return memo[n]


def show_var(v: Node) -> str:
    if v.op == "Var.named":
        return v.args[0]
    return "k" + format(abs(hash(v)) % 4096, "x")


def show_ix(x: Node) -> str:
    if x.op == "Ix.v":
        return show_var(x.args[0])
    if x.op == "Ix.lit":
        return str(x.args[0])
    if x.op == "Ix.add":
        return f"{show_ix(x.args[0])}+{show_ix(x.args[1])}"
    if x.op == "Ix.scale":
        return f"{show_ix(x.args[0])}*{x.args[1]}"
    return show(x)


def show(n: Node, names: dict | None = None) -> str:
    """A readable one-line form; `names` maps tensor nodes to short names."""
    names = names or {}
    if n in names:
        return names[n]
    op, a = n.op, n.args
    if op == "Sc.lit":
        return repr(a[0])
    if op == "Sc.acc":
        return "acc"
    if op == "Sc.param":
        return a[0]
    if op == "Sc.load":
        return f"{show(a[0], names)}[{', '.join(show_ix(i) for i in unlist(a[1]))}]"
    if op in SYMBOL:
        return f"({show(a[0], names)} {SYMBOL[op]} {show(a[1], names)})"
    if op in ("Sc.max", "Sc.min"):
        return f"{op[3:]}({show(a[0], names)}, {show(a[1], names)})"
    if op == "Sc.fn":
        return f"{a[0]}({show(a[1], names)})"
    if op == "Sc.red":
        return f"{a[0]}[{show_var(a[1])}<{a[2]}]({show(a[3], names)})"
    if op == "Sc.idx":
        return f"float({show_ix(a[0])})"
    if op == "Sc.select":
        return (f"({show(a[3], names)} if {show(a[1], names)} {a[0]} {show(a[2], names)} "
                f"else {show(a[4], names)})")
    if op == "Ten.input":
        return a[0]
    if op == "Ten.compute":
        d = ", ".join(f"{show_var(v)}<{e}" for v, e in unlist(a[0]))
        return f"for[{d}] {show(a[1], names)}"
    if op == "Ten.matmul":
        return f"matmul({show(a[0], names)}, {show(a[1], names)})"
    if op == "Ten.transpose":
        return f"transpose({show(a[0], names)}, ({a[1]}))"
    if op == "Ten.slice":
        return f"{show(a[0], names)}[{show_ix(a[1])}]"
    if op == "Ten.reshape":
        return f"reshape({show(a[0], names)}, {shape_list(a[1])})"
    if op == "Ten.fused":
        d = ", ".join(f"{show_var(v)}<{e}" for v, e in unlist(a[0]))
        return f"fused[{d}] {show(a[1], names)}"
    if op == "Ten.opaque":
        return f"loop#{a[0]}.{a[1]}"
    return f"{op}({', '.join(show(x, names) if isinstance(x, Node) else repr(x) for x in a)})"
