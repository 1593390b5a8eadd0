"""Pointwise and reduction kernels compiled for the CPU: one pass, not one numpy pass per
operation.

numpy evaluates a kernel body one operation at a time, each a pass over a temporary the
size of the kernel's whole iteration space (a reduction's included), and reads a shifted
index through a gather. Where a kernel does enough work (`cost.COMPILE_MIN_OPS` modeled
operations), the numpy backend runs it as a generated numba function instead: a loop
over the output (its outermost axis in parallel, `numba.prange`) whose body computes one
element, reductions as inner loops with an accumulator, loads at their indices (an index
that may leave its axis clamped into it: loads are total, `eqsat/terms.py`). The cost
model charges such a kernel the compiled loop rates (`cost.Model`, `Target.compiled_kernels`),
so the two agree on which kernels compile.

Semantics follow the numpy evaluation: float32 values and constants, the language's
functions compiled from their own numpy code (`loops._lib`), max/min as Python's
builtins (a NaN on the right is skipped), a max or min reduction skipping NaN from its
initial value, x / 0 as inf; sums are added in order in float64 and rounded to float32
once (numpy adds pairwise in float32: both are within a few units of the exact sum where
a float32 sum in order, over millions of terms, was not), but a sum of at most SHORT_SUM
terms, added in float32 in order, as a loop written so adds them (and vectorizable). `EQSAT_COMPILE_KERNELS=never` evaluates every kernel with numpy, `always`
compiles every pointwise and reduction kernel (tests), `auto` (the default) as above.
"""
from __future__ import annotations

import math
import os

import numpy as np

from eqsat import lang
from eqsat.terms import Node, leaving_axes, python_number, unlist, walk_body

from . import loops
from .codegen import Emitter, literal, loaded, params

_CMP = {"<", "<=", ">", ">=", "==", "!="}


def policy() -> str:
    mode = os.environ.get("EQSAT_COMPILE_KERNELS", "auto")
    return mode if mode in ("auto", "always", "never") else "auto"


def wanted(plan, k) -> bool:
    """Whether kernel `k` of `plan` runs compiled: a pointwise or reduction kernel (a
    `Ten.compute`) the cost model rates as one (`TenInfo.compiled`: at least
    COMPILE_MIN_OPS operations, and every load streaming along its last axis in the
    innermost loop around it; a sum down a column strides across rows there, and numpy's
    whole-array passes, which stream rows, run it faster), or every one (`always`)."""
    if k.term.op != "Ten.compute" or policy() == "never":
        return False
    return policy() == "always" or plan.costing.info(k.term).compiled


class CompiledKernel:
    """`fn(*inputs, *params)` returns the kernel's output array (rank 0: one element)."""

    def __init__(self, fn, inputs: list, params: list, shape: tuple):
        self.fn, self.inputs, self.params, self.shape = fn, inputs, params, shape


def build(plan, k):
    """(CompiledKernel or None, how it runs) for kernel `k`; None: numpy evaluates it."""
    try:
        import numba  # noqa: F401
    except ImportError:
        return None, "numpy (numba is not installed)"
    try:
        src, inputs, scalars, libs = _source(plan, k.term)
    except NotImplementedError as e:
        return None, f"numpy ({e})"
    from eqsat.backends import vector_math

    lib = {**loops._lib(), **vector_math.SCALAR}  # (every call in a kernel is on a scalar)
    shapes = [plan.costing.shape(t) for t in inputs]

    def example():
        return [np.zeros(s, dtype=np.float32) for s in shapes] + [np.float32(0)] * len(scalars)

    try:
        fn = loops.load_compiled("kernel", src, "kernel", {f"f_{name}": lib[name] for name in libs}, example)
    except Exception as e:  # noqa: BLE001 - any failure: numpy evaluates it, and says why
        return None, f"numpy (numba: {type(e).__name__}: {str(e).splitlines()[0][:120]})"
    shape = tuple(e for _, e in unlist(k.term.args[0]))
    if not shape:
        return CompiledKernel(fn, inputs, scalars, shape), "compiled (numba)"
    return CompiledKernel(loops._one_at_a_time(fn), inputs, scalars, shape), "compiled (numba, parallel)"


def _source(plan, term: Node):
    """The kernel as a module defining `kernel(in0, ..., p_a, ...)`."""
    dims = unlist(term.args[0])
    body = term.args[1]
    inputs, scalars = loaded(body), params(body)
    gen = _Gen({t: f"in{i}" for i, t in enumerate(inputs)}, plan, {v: f"v{i}" for i, (v, _) in enumerate(dims)},
               dict(dims))
    out_shape = tuple(e for _, e in dims) or (1,)
    lines = [f"    out = np.empty({out_shape!r}, dtype=np.float32)"]
    lines += [f"    in{i}_0 = in{i}[()]" for i, t in enumerate(inputs) if not plan.costing.shape(t)]
    at = ", ".join(f"v{i}" for i in range(len(dims))) or "0"
    # each loop in ranges where every select on its variable against a constant is decided,
    # each range computing its own branches (`_cuts`), at most MAX_PIECES loop bodies
    pieces = [0]

    def emit(d: int, part: Node, extents: dict, indent: str):
        if d == len(dims):
            g = _Gen(gen.operands, plan, gen.names, extents, counter=gen.counter, consts=gen.consts, libs=gen.libs)
            g.indent = indent
            val = g.sc(part)
            lines.extend(g.lines)
            lines.append(f"{indent}out[{at}] = {val}")
            return
        v, e = dims[d]
        ranges = _cuts(part, v, e, max(1, MAX_PIECES - pieces[0]))
        pieces[0] += len(ranges) - 1
        for lo, hi, sub in ranges:
            loop = "numba.prange" if d == 0 else "range"
            lines.append(f"{indent}for v{d} in {loop}({e if (lo, hi) == (0, e) else f'{lo}, {hi}'}):")
            emit(d + 1, sub, {**extents, v: (lo, hi)}, indent + "    ")

    emit(0, body, dict(dims), "    ")
    lines.append("    return out")
    head = ["import numba", "import numpy as np", ""]
    head += [f"{name} = np.float32({value})" for value, name in gen.consts.items()]
    head += [f"f_{name} = None  # bound to the compiled {name} on load" for name in sorted(gen.libs)]
    args = [f"in{i}" for i in range(len(inputs))] + [f"p_{p}" for p in scalars]
    flags = ", parallel=True" if dims else ""  # (a whole-array reduction has no parallel loop)
    head += ["", "", f'@numba.njit(cache=True, error_model="numpy"{flags})', f"def kernel({', '.join(args)}):"]
    return "\n".join(head + lines) + "\n", inputs, scalars, sorted(gen.libs)


_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}


MAX_PIECES = 8  # loop bodies a kernel's cut ranges may make (`_cuts`)


def _cuts(body: Node, v0: Node, extent: int, most: int = 4) -> list:
    """[(lo, hi, body)]: variable `v0`'s range cut where the body selects on it against a
    constant (`x if i < 27 else y`: a loop over part of an axis, widened to the whole axis
    under its bound's mask; also inside other terms, as in `a[i] + (sum(...) if i < 27 else
    0.0)`), each range with every such select decided, at most `most` ranges. Each range
    then computes only its own branch, and reads with the range as the variable's extent:
    loads that could leave their axis only outside it are not clamped (a clamp stops the
    loop vectorizing; a valid convolution was 2x numba's time, a 2-D one 6x)."""
    outer = Node("Sc.idx", Node("Ix.v", v0))
    parts, done = [(0, extent, body)], []
    while parts:
        lo, hi, b = parts.pop()
        cut = None
        decided: dict = {}  # select -> its branch throughout [lo, hi)
        for n in walk_body(b):
            got = _outer_bound(n, outer) if n.op == "Sc.select" else None
            if got is None:
                continue
            bound, low, high = got
            if bound <= lo:
                decided[n] = high
            elif bound >= hi:
                decided[n] = low
            elif cut is None:
                cut = bound
        if decided:
            b = _substitute(b, decided)
        if cut is not None and len(parts) + len(done) + 2 <= most:
            parts += [(cut, hi, b), (lo, cut, b)]
        else:
            done.append((lo, hi, b))
    return sorted(done, key=lambda p: p[0])


def _outer_bound(n: Node, outer: Node):
    """(bound, branch below it, branch from it on) of a select comparing `outer` with an
    integer constant, else None."""
    cmp, l, r, a, b = n.args
    if r is outer and l.op == "Sc.lit":
        cmp, l, r = _FLIP.get(cmp), r, l
    if l is not outer or r.op != "Sc.lit" or cmp not in _FLIP or not float(r.args[0]).is_integer():
        return None
    c = int(r.args[0])
    bound, low_is_a = {"<": (c, True), "<=": (c + 1, True), ">=": (c, False), ">": (c + 1, False)}[cmp]
    return (bound, a, b) if low_is_a else (bound, b, a)


def _substitute(body: Node, table: dict) -> Node:
    """`body` with the nodes in `table` replaced, not entering the tensors it loads (other
    kernels' terms stay as they are)."""
    memo: dict = {}
    stack = [(body, False)]
    while stack:
        x, ready = stack.pop()
        if x in memo:
            continue
        if x in table:
            memo[x] = table[x]
            continue
        kids = [a for a in x.args if isinstance(a, Node) and a.sort not in ("Ten", "Tens")]
        if not ready:
            stack.append((x, True))
            stack.extend((a, False) for a in kids if a not in memo)
            continue
        memo[x] = Node(x.op, *[memo.get(a, a) if isinstance(a, Node) else a for a in x.args])
    return memo[body]


class _Gen(Emitter):
    """Scalar terms to statements computing one element (`indent` deep)."""

    def __init__(self, operands: dict, plan, names: dict, extents: dict, counter=None, consts=None, libs=None):
        self.operands, self.plan = operands, plan
        self.names, self.extents = names, extents  # Var -> Python name, Var -> extent
        super().__init__("", "t", counter)
        self.consts = consts if consts is not None else {}  # float value -> global name
        self.libs = libs if libs is not None else set()

    def const(self, x: float) -> str:
        key = literal(x)
        name = self.consts.get(key)
        if name is None:
            name = self.consts[key] = f"C{len(self.consts)}"
        return name

    def var(self, v: Node) -> str:
        return self.names[v]

    def sc(self, n: Node) -> str:
        got = self.memo.get(n)
        if got is not None:
            return got
        op = n.op
        if op != "Sc.lit" and python_number(n):  # computed in float64, rounded once (terms.python_number)
            out = self.tmp(f"np.float32({self.py(n)})")
        elif op == "Sc.lit":
            out = self.const(float(n.args[0]))
        elif op == "Sc.param":
            out = f"p_{n.args[0]}"
        elif op == "Sc.load":
            t = n.args[0]
            terms = unlist(n.args[1])
            shape = self.plan.costing.shape(t)
            idx = [self.ix(i) for i in terms]
            for axis, _ in leaving_axes(terms, shape, self.extents.__getitem__):
                idx[axis] = f"min(max({idx[axis]}, 0), {shape[axis] - 1})"
            # unsigned: inside `numba.prange` numba cannot tell `v0 + 3` is not negative and
            # keeps its wrap-around check, which stops the loop vectorizing; every index is
            # in its axis (proven, or clamped just above)
            idx = [f"np.uint64({i})" for i in idx]
            if idx:
                out = self.tmp(f"{self.operands[t]}[{', '.join(idx)}]")
            else:  # a 0-d tensor: read once, before the loops (`_source`; numba's parallel
                out = f"{self.operands[t]}_0"  # lowering refuses `x[()]` inside a prange)
        elif op in _BIN:
            out = self.tmp(_BIN[op].format(self.sc(n.args[0]), self.sc(n.args[1])))
        elif op == "Sc.fn" and n.args[0] == "neg":
            out = self.tmp(f"np.float32(-{self.sc(n.args[1])})")
        elif op == "Sc.fn" and n.args[0] == "float32":
            out = self.sc(n.args[1])  # (sc rounds a Python number to float32: numpy's np.float32)
        elif op == "Sc.fn":
            if n.args[0] not in lang.UNARY:
                raise NotImplementedError(f"function {n.args[0]}")
            self.libs.add(n.args[0])
            out = self.tmp(f"np.float32(f_{n.args[0]}({self.sc(n.args[1])}))")
        elif op == "Sc.select":
            cmp, l, r, a, b = n.args
            if cmp not in _CMP:
                raise NotImplementedError(f"comparison {cmp}")
            # (two Python numbers compare in float64, as in the reference)
            lv, rv = self.sides(l, r)
            av, bv = self.sc(a), self.sc(b)
            out = self.tmp(f"{av} if {lv} {cmp} {rv} else {bv}")
        elif op == "Sc.red":
            out = self.reduction(n)
        else:
            raise NotImplementedError(f"{op} in a compiled kernel")
        self.memo[n] = out
        return out

    def _py(self, n: Node) -> str:
        """A Python-number term (`terms.python_number`) in float64, as the reference
        computes it (a function of one: the language's float32 function, widened)."""
        op = n.op
        if op == "Sc.lit":
            x = float(n.args[0])
            out = repr(x) if math.isfinite(x) else "np.nan" if x != x else "np.inf" if x > 0 else "-np.inf"
        elif op == "Sc.idx":
            out = self.tmp(f"float({self.ix(n.args[0])})")
        elif op in _PY_BIN:
            out = self.tmp(_PY_BIN[op].format(self.py(n.args[0]), self.py(n.args[1])))
        elif op == "Sc.fn" and n.args[0] == "neg":
            out = self.tmp(f"-{self.py(n.args[1])}")
        elif op == "Sc.fn" and n.args[0] == "float":  # (Python's float(e): an element widened)
            x = n.args[1]
            out = self.py(x) if python_number(x) else self.tmp(f"np.float64({self.sc(x)})")
        elif op == "Sc.fn" and n.args[0] in lang.WIDE:  # (in float64, as math's and numpy's of a float)
            out = self.tmp(f"np.{n.args[0]}({self.py(n.args[1])})")
        elif op == "Sc.fn":
            if n.args[0] not in lang.UNARY:
                raise NotImplementedError(f"function {n.args[0]}")
            self.libs.add(n.args[0])
            out = self.tmp(f"float(f_{n.args[0]}(np.float32({self.py(n.args[1])})))")
        elif op == "Sc.select":
            cmp, l, r, a, b = n.args
            if cmp not in _CMP:
                raise NotImplementedError(f"comparison {cmp}")
            lv, rv = self.sides(l, r)
            out = self.tmp(f"{self.py(a)} if {lv} {cmp} {rv} else {self.py(b)}")
        else:
            raise NotImplementedError(f"{op} as a Python number")
        return out

    def reduction(self, n: Node) -> str:
        kind, v, ext, body = n.args
        init = {"sum": 0.0, "max": -math.inf, "min": math.inf}[kind]
        # a sum accumulates in float64 and is rounded to float32 once: added in order in
        # float32, a sum of 4M terms was off by 2e-3 relative (numpy's pairwise float32
        # sum: 2e-8), a probe; max and min compare float32 values as numpy does
        # (a short sum, of at most SHORT_SUM terms, adds in float32 as a loop written so does:
        # exact to a few units of float32, and LLVM then vectorizes the loop around it, a
        # 5x5 window's sum at each pixel: float64's conversions kept it scalar, 8x numba)
        short = kind == "sum" and ext <= SHORT_SUM
        acc = self.tmp("np.float32(0.0)" if short else "0.0" if kind == "sum" else self.const(init))
        name = f"r{self.counter[0]}"
        self.counter[0] += 1
        inner = _Gen(self.operands, self.plan, {**self.names, v: name}, {**self.extents, v: ext}, self.counter,
                     self.consts, self.libs)
        # (from a quarter chunk on: a softmax's rows of 1024 took 7.2 ms one term at a time,
        # 4.3 ms chunked, numpy 3.2; a buffer of the extent where it is shorter than a chunk)
        if ext >= CHUNK // 4 and _vectorizable_work(body):
            # the terms a chunk at a time into a buffer (a loop with no carried value, which
            # LLVM vectorizes: exp and log are straight-line code, `vector_math`), then
            # combined into the accumulator in order, as below (the same result, bit for
            # bit). One loop computing and accumulating runs them one lane at a time (a
            # float32 sum is not reassociated): a KL divergence's sum of p * log(p / q)
            # took 12 ms for 10^6 elements, chunked 1.8 ms
            buf, c, m, k = (f"{x}{self.counter[0]}" for x in ("buf", "c", "m", "k"))
            self.counter[0] += 1
            self.lines += [f"{self.indent}{buf} = np.empty({min(CHUNK, ext)}, dtype=np.float32)",
                           f"{self.indent}for {c} in range(0, {ext}, {CHUNK}):",
                           f"{self.indent}    {m} = min({CHUNK}, {ext} - {c})",
                           f"{self.indent}    for {k} in range({m}):",
                           f"{self.indent}        {name} = {c} + {k}"]
            inner.indent = self.indent + "        "
            b = inner.sc(body)
            self.lines += inner.lines
            self.lines += [f"{inner.indent}{buf}[{k}] = {b}",
                           f"{self.indent}    for {k} in range({m}):"]
            b = f"{buf}[{k}]"  # (accumulated at `inner.indent`, the second loop's body)
        else:
            self.lines.append(f"{self.indent}for {name} in range({ext}):")
            inner.indent = self.indent + "    "
            b = inner.sc(body)
            self.lines += inner.lines
        if short:
            self.lines.append(f"{inner.indent}{acc} = {acc} + {b}")
            return acc
        if kind == "sum":
            self.lines.append(f"{inner.indent}{acc} = {acc} + float({b})")
            return self.tmp(f"np.float32({acc})")
        # skips NaN: the accumulator starts at -inf (inf) and takes b only when it compares
        cmp = ">" if kind == "max" else "<"
        self.lines.append(f"{inner.indent}if {b} {cmp} {acc}:")
        self.lines.append(f"{inner.indent}    {acc} = {b}")
        return acc


CHUNK = 1024  # terms a reduction computes at a time where they vectorize (`_Gen.reduction`)
SHORT_SUM = 32  # a sum of at most this many terms accumulates in float32 (`_Gen.reduction`)


def _vectorizable_work(body: Node) -> bool:
    """Whether a reduction's terms call a function `vector_math` computes in straight-line
    code (exp, log, tanh, ...), with no reduction of their own: work worth vectorizing
    apart from the accumulation (a plain product's is not: the chunked form is slower)."""
    from .vector_math import SCALAR

    nodes = list(walk_body(body))
    return not any(n.op == "Sc.red" for n in nodes) and \
        any(n.op == "Sc.fn" and n.args[0] in SCALAR for n in nodes)


# Python-number arithmetic, in float64 (`_Gen.py`); Python's max(a, b) and min(a, b) are
# `b if b > a else a`
_PY_BIN = {"Sc.add": "({} + {})", "Sc.sub": "({} - {})", "Sc.mul": "({} * {})", "Sc.div": "({} / {})",
           "Sc.max": "{1} if {1} > {0} else {0}", "Sc.min": "{1} if {1} < {0} else {0}"}
# the same in float32: each arithmetic result rounded (a max or min is one of its operands)
_BIN = {op: f"np.float32{form}" if op not in ("Sc.max", "Sc.min") else form for op, form in _PY_BIN.items()}
