"""Lowering: the loop IR to functional terms, with a dependence analysis.

Each top-level statement updates an environment of values. A loop nest becomes one
`loop` kernel (`Ten.opaque`, the nest as written) per buffer or scalar it writes, and,
when the analysis below proves it safe, an equal functional form that the rewrite
rules can work on: every buffer write becomes a new tensor value (`Ten.compute`),
every accumulation loop a reduction (`Sc.red`). Both go into the e-graph as one
e-class, so a nest the rules cannot improve still runs as written.

The analysis executes a nest symbolically, one output element at a time:

1. A loop is *spatial* when every store inside it indexes with its variable; stores
   then must index with a permutation of all enclosing spatial variables over full,
   zero-based ranges, so each element is written exactly once.
2. A loop is a *reduction* when it only accumulates (`x[idx] += e` with idx not using
   its variable, `s += e`, `s = max(s, e)`) and the accumulated values are not read
   inside it; its contribution is `red(var, extent, e)`.
3. A read of a buffer written in the same nest must address, on every axis written
   by a loop that encloses both the read and the write, exactly the element that
   iteration writes; then sequential order within one element is the whole story.

Anything else (last-write-wins, diagonal or partial writes, in-place recurrences,
reads of other iterations' writes) raises `NotFunctional`, and the nest stays a loop.
"""
from __future__ import annotations

import ast
import copy
import math
import operator
import re
import time
from dataclasses import dataclass, field
from itertools import count

import islpy as isl

from . import expand, lang
from . import terms as T
from .bounds import _index_of, check_bounds
from .dataflow import Conditional, Mismatch, NestFlow, Source, operation_quota, quota_spent, span, trip
from .desugar import ALLOCATE, clamped, python_results
from .ifconvert import ifconvert
from .limits import OutOfTime, analysis_deadline, check_deadline
from .errors import ProgramError
from .ir import (
    Alloc, Assign, Bin, BoolOp, Call, Compare, Const, Dim, For, If, Index, MatMul, NotAffine, Ref, Select, Store,
    Reshape, Transpose, expr_reads, ie_affine, ie_eval, ie_names, written,
)
from .ir import accumulation as _accumulation, idx_names as _idx_names, leaves as _leaves
from .terms import Node, weak_casts
from .hoist import hoist_invariant_reductions
from .unroll import unrolled
from .peel import absorb_first
from .normalize import normalize, split_tail
from .reroll import reroll
from .unsplit import merge_split_reductions, unsplit
from .work import nest_work
from .backends.scalar_types import number_outputs, tensor_ranks
from .parallel import parallel_work


AUG = {"+": "Sc.add", "*": "Sc.mul", "/": "Sc.div"}  # an augmented assignment's combining op
# Python's arithmetic on numbers, for what the lowering computes itself (`_Lowerer.number`)
_ARITHMETIC = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv, "**": operator.pow}


def _call(e: Call, term) -> Node:
    """The term of a call, `term(arg)` of each argument: builtin max and min, or one of the
    language's functions; a function with no term (`lang.NO_TERM`) keeps its nest as written."""
    if e.fn in lang.NO_TERM:
        raise NotFunctional(f"`{e.fn}` has no term here; the nest runs as written")
    args = [term(a) for a in e.args]
    if e.fn in ("max", "min"):
        return Node(f"Sc.{e.fn}", *args)
    return Node("Sc.fn", e.fn, args[0])


def _binop(e: Bin) -> str:
    op = {"+": "Sc.add", "-": "Sc.sub", "*": "Sc.mul", "/": "Sc.div"}.get(e.op)
    if op is None:  # `//`, `%`, `**` by a non-integer: no term; the nest runs as written
        raise NotFunctional(f"`{e.op}` has no functional form here")
    return op


_CMPS = ("<", "<=", ">", ">=", "==", "!=")


def _select(cond, value, a: Node, b: Node) -> Node:
    """`a if cond else b` as select terms: a comparison is one select; `and`, `or` and `not`
    nest them (`a if c1 and c2 else b` = `(a if c2 else b) if c1 else b`). `value(x)` lowers
    an operand of a comparison."""
    if isinstance(cond, Compare) and cond.op in _CMPS:
        return T.select(cond.op, value(cond.a), value(cond.b), a, b)
    if isinstance(cond, BoolOp):
        if cond.op == "not":
            return _select(cond.args[0], value, b, a)
        first, rest = cond.args[0], cond.args[1:]
        inner = _select(BoolOp(cond.loc, cond.op, rest), value, a, b) if len(rest) > 1 else \
            _select(rest[0], value, a, b)
        return _select(first, value, inner, b) if cond.op == "and" else _select(first, value, a, inner)
    raise NotFunctional("a condition that is not a comparison has no functional form here")


# temporaries the front end and if-conversion name after a user's variable, and the name
# they stand for in a message: `eqsat_if_sc_10`, `eqsat_x1_d`, `eqsat_s3_acc`, `eqsat_r2_t`
_TEMP_OF = re.compile(r"eqsat_(?:if_(?P<a>[A-Za-z_]\w*?)_\d+|(?:x|s|r)\d+_(?P<b>[A-Za-z_]\w*))$")
_TEMP_SAID = [(re.compile(r"eqsat_if_\d+"), "an if's condition"),
              (re.compile(r"eqsat_red\d+_of\d*"), "the operand of a numpy reduction (computed into a buffer)"),
              (re.compile(r"eqsat_red\d+(_\w+)?"), "a numpy reduction's accumulator")]


def shown_names(text: str) -> str:
    """A reason with each quoted temporary named after a user's variable (`'eqsat_if_sc_10'`)
    said as that variable (`'sc'`), and a condition's temporary (`'eqsat_if_3'`) as such."""
    def name(m):
        word = m.group(1)
        said = next((text for pattern, text in _TEMP_SAID if pattern.fullmatch(word)), None)
        if said is not None:
            return said
        t = _TEMP_OF.match(word)
        return repr(t.group("a") or t.group("b")) if t else m.group(0)

    return re.sub(r"'(eqsat_\w+)'", name, text) if "'eqsat_" in text else text


class NotFunctional(Exception):
    """This nest has no functional form the analysis can prove; keep it as a loop."""


@dataclass
class Nest:
    """A loop nest (or a lone top-level store) kept as written: a `loop` kernel."""

    id: int
    stmt: object  # the ir statement
    tensor_inputs: list  # names bound to tensors when it runs
    scalar_inputs: list  # names bound to scalars when it runs
    outputs: list  # names it writes (buffers and scalars)
    scalar_outputs: set
    work: dict  # modeled work: scalar ops, bytes, library flops, library calls
    reason: str = ""  # why it has no functional form ("" when it has one)
    # makes `code`, the nest's source compiled, on first use (a nest a compiled runner runs
    # never needs it; 3,000 statements kept as one nest took ~1 s to prepare)
    make_code: object = field(default=None, repr=False)
    views: dict = field(default_factory=dict)  # view name -> its ir expression, bound when the nest runs
    out_shapes: dict = field(default_factory=dict)  # output name -> shape (() for a scalar)
    allocates: dict = field(default_factory=dict)  # buffer it makes itself (writes whole, never reads) -> shape
    # names without a value before it that a run may read unassigned in it, or leave
    # unassigned as outputs the plan reads: Python raises UnboundLocalError where such a
    # value is read, so such a nest runs interpreted (numba would read a zero), its runner
    # raises for an output the program surely reads after it left unassigned, and a later
    # statement reading one runs as written (`_Lowerer.maybe_unset`)
    unbound_reads: frozenset = frozenset()
    unset_outputs: frozenset = frozenset()  # the outputs a run may leave unassigned
    unbound_outputs: frozenset = frozenset()  # of those, the ones surely read after it
    # the scalar outputs that hold Python numbers when it ends (`s = 0.0; s += math.exp(x[i])`):
    # the backends keep them in float64, and the plan reads each as the Python number it is
    # (`float(s)`: `math.log(s)` after it is float64 arithmetic, as in the reference)
    numbers: frozenset = frozenset()
    _code: object = field(default=None, repr=False)

    @property
    def code(self):
        """The nest's own source, compiled (`exec` runs it: the interpreted path)."""
        if self._code is None and self.make_code is not None:
            self._code = self.make_code()
        return self._code


@dataclass
class Lowered:
    roots: list  # Ten terms, one per output, as written
    outputs_scalar: list  # whether each output is a scalar
    unions: list  # (as-written term, functional term) pairs proven equal
    nests: dict  # id -> Nest
    input_shapes: dict  # tensor param -> shape
    scalar_params: list
    vars: dict = field(default_factory=dict)  # Var node -> extent
    tensor_shapes: dict = field(default_factory=dict)  # every tensor name -> shape
    # the nests (by id) kept as written for time: not analysed, lifting them being predicted
    # to pass the time limit (`lift_next`), or their analysis abandoned past its deadline;
    # `lower(..., keep=)` lowers the program the same way again
    kept_for_time: frozenset = frozenset()
    # the top-level statement from which lifting more was predicted to pass the time limit
    # (from there nests are kept as written, statements in a row grouped as one nest), or
    # None; `lower(..., out_of_time_from=)` lowers the program the same way again
    out_of_time_from: int | None = None
    # per output, the Python type the reference returns it in where it is a Python number
    # (`terms.python_number` of its term: float for `float(x[0])` and arithmetic of Python
    # floats, int for arithmetic of sizes and int literals, `_python_int`), else None
    outputs_number: list = field(default_factory=list)


class _Lowerer:
    def __init__(self, prog, dims: dict, finish: float | None = None, abandon: float | None = None,
                 keep: frozenset = frozenset(), out_of_time_from: int | None = None):
        self._ie_memo: dict = {}  # `bounds._index_of` of the expressions lowered (linear on deep sums)
        self.prog = prog
        self.dims = dims
        self.finish, self.abandon, self.keep = finish, abandon, keep
        self.out_of_time = False  # lifting more would pass `finish`: later top-level nests are kept as written
        self.out_of_time_from = out_of_time_from  # (replayed: `Lowered.out_of_time_from`)
        self.first_out_of_time: int | None = None  # the top-level statement where it became so
        self.kept_for_time: set = set()
        self.env: dict[str, Node] = {}
        self.shapes: dict[str, tuple] = {}  # tensor name -> concrete shape
        self.unions: list = []
        self.functional: dict = {}  # a kept nest's output tensor -> its functional form (a union above)
        self.nests: dict = {}
        self.fresh = count()
        self.var_extent: dict = {}
        self.hoisted: dict = {}  # term -> its hoisted form, shared by every nest (hoist.py)
        self.unsplit_memo: dict = {}  # term -> its split reductions merged (unsplit.merge_split_reductions)
        self.hoist_canon: dict = {}  # a hoisted term, up to its variables -> its tensor's axes (hoist.py)
        # the top-level statement being lowered, and the names read after it (statements
        # after it, the returns): what a nest kept as written leaves live (parallel.py)
        self.current_top = None
        self.read_after: set = set()
        # while a fission part is lowered: what is read after that part (the later parts'
        # reads before they assign, and what is read after the whole nest; for a statement
        # of an iteration of a part unrolled, the later statements' reads and what is read
        # after the part); a scalar it may leave unassigned outside this set is private to
        # it, no output (`_as_written`)
        self.part_after: set | None = None
        self.part_private: set = set()  # the scalars so left out of the parts' outputs
        self.part_kept: set = set()  # the scalars the parts do output
        self.surely_read_after: set = set()  # of those, the ones surely read (`_definitely_read`)
        # names a nest kept as written may leave unassigned (no statement since surely
        # assigned them): a later statement reading one has no functional form (a select
        # would read it where Python does not), so it runs as written, as Python does
        self.maybe_unset: set = set()
        # a tensor of several batch axes made by merging them (`matmul`) -> (its merged
        # form, that form's shape): an elementwise expression over it is computed merged too
        # (`batch_merged`), so a matmul's epilogue is over the matmul's own axes
        self.merged: dict = {}
        self.leaf_terms: dict = {}  # id(ir expression) -> its merged term, while `batch_merged` runs

    # ------------------------------------------------------------ helpers
    def shape_of(self, ty, loc) -> tuple:
        out = []
        for d in ty:
            n = ie_eval(d, self.dims)
            if n < 0:
                raise ProgramError(f"negative extent {n}", loc)
            out.append(n)
        return tuple(out)

    def new_var(self, base: str, extent: int) -> Node:
        # `_` between the base and the counter: the digits after the last `_` are the counter,
        # so two names never meet (a loop variable `z1` and the counter's 5 made `z15`, the
        # name of another binder of another extent: egglog refused the merge of their extents)
        v = T.var(f"{base}_{next(self.fresh)}")
        self.var_extent[v] = extent
        return v

    def zeros(self, shape) -> Node:
        vs = [self.new_var("z", n) for n in shape]
        return T.compute(list(zip(vs, shape)), T.lit(0.0))

    # ------------------------------------------------------------ program
    def run(self) -> Lowered:
        for p in self.prog.params:
            if p.dtype is int:
                continue  # an integer parameter is a size: bound in dims
            if p.shape is None:
                self.env[p.name] = Node("Sc.param", p.name)
            else:
                self.shapes[p.name] = tuple(ie_eval(("name", d) if isinstance(d, str) else ("int", d), self.dims)
                                            for d in p.shape)
                self.env[p.name] = Node("Ten.input", p.name)
        later = [set() for _ in self.prog.body]
        sure = [set() for _ in self.prog.body]  # names surely read after each statement
        seen: set = set()
        for r in self.prog.returns:
            seen |= expr_reads(r)
        surely = set(seen)
        for k in range(len(self.prog.body) - 1, -1, -1):
            later[k], sure[k] = set(seen), surely
            _scan(self.prog.body[k], seen, set(), set(), set())
            surely = _definitely_read([self.prog.body[k]], surely, self.dims)
        is_nest = [not isinstance(s, (Assign, Alloc)) for s in self.prog.body]
        nests_after, n = [0] * len(is_nest), 0  # top-level nests after each statement
        for k in range(len(is_nest) - 1, -1, -1):
            nests_after[k], n = n, n + is_nest[k]
        times: list = []  # seconds each nest lifted so far took to lower
        body, k = self.prog.body, 0
        while k < len(body):
            s, last = body[k], k
            if self.out_of_time_from is not None and k >= self.out_of_time_from:
                self.out_of_time = True
            elif self.finish is not None and is_nest[k] and not self.out_of_time:
                self.out_of_time = not lift_next(clock(), self.finish, times, nests_after[k])
            if self.out_of_time and self.first_out_of_time is None:
                self.first_out_of_time = k
            if self.out_of_time and _groupable(s):
                # kept as written from here: the statements up to the next term-level one run
                # as one nest (a loop of one iteration around them), not a kernel each (3,000
                # unrolled element updates were 3,000 kernels, ~2.5 ms each to lower, build,
                # extract and explain)
                while last + 1 < len(body) and _groupable(body[last + 1]):
                    last += 1
                if last > k:
                    s = _block(body[k:last + 1], f"eqsat_block{k}")
            self.current_top, self.read_after, self.surely_read_after = s, later[last], sure[last]
            t = clock()
            self.top(s)
            if is_nest[k] and not self.out_of_time:
                times.append(clock() - t)
            k = last + 1
        roots, scal, numbers = [], [], []
        for k, r in enumerate(self.prog.returns):
            numbers.append(None)
            if r.ty is None:
                if _python_int(getattr(r, "node", None), self.dims):
                    numbers[-1] = int  # (`return N // 2`: an int, as Python's)
                try:
                    v = self.scalar_top(r)
                except NotFunctional as why:  # (`return s // t`: a number with no term, run as written)
                    v = self.returned_as_written(k, r, str(why))
                else:
                    if numbers[-1] is None and T.python_number(v):
                        numbers[-1] = float
                    if T.python_number(v) and not (v.op == "Sc.fn" and v.args[0] == "float"):
                        # arithmetic of Python floats (`return s * 1e-200` after a kept loop
                        # summed `s`; `N / 3`, a literal by now): in float64, as Python does,
                        # where a kernel's float32 output would round it (to 0.0 there).
                        # (`float(e)` alone is e's float32 value exactly: its e stays a term.)
                        v = self.returned_as_written(k, r, "a Python number, computed in float64")
                # (the Python number a kept nest leaves is its output itself: no kernel copies it)
                roots.append(v.args[1].args[0] if T.nest_number(v) else T.compute([], v))
                scal.append(True)
                continue
            try:
                roots.append(self.tensor(r))
            except NotFunctional as why:  # a form with no term (`return x // 0.25`): run as written
                roots.append(self.returned_as_written(k, r, str(why)))
            scal.append(False)
        # (`np.float32(e)` casts that compute nothing dropped: the rules then see the forms
        # they match, `acc = np.float32(0.0); acc += ...` a sum)
        roots = [weak_casts(T.narrow_floats(r)) for r in roots]
        unions = [(weak_casts(T.narrow_floats(a)), weak_casts(T.narrow_floats(b))) for a, b in self.unions]
        return Lowered(roots, scal, unions, self.nests, dict(self.shapes),
                       [p.name for p in self.prog.params if p.shape is None and p.dtype is not int], self.var_extent,
                       dict(self.shapes), frozenset(self.kept_for_time), self.first_out_of_time, numbers)

    def top(self, s):
        # once lifting more is predicted to pass the time limit, a nest is kept as written at
        # once (a tensor-level statement is a term without any analysis, and always lowered)
        lift = not self.out_of_time
        if isinstance(s, Assign):
            try:
                self.top_assign(s)
            except NotFunctional:
                self.nest(s, lift)  # a form with no term (`//`, a condition...): run as written
            return
        if isinstance(s, Alloc):
            shape = self.shape_of(s.shape, s.loc)
            self.shapes[s.name] = shape
            self.env[s.name] = self.zeros(shape)
        elif isinstance(s, Store) and s.value.ty is not None and not getattr(s, "views", None):
            try:
                self.top_slice_store(s)
            except NotFunctional:
                self.nest(s, lift)
        else:
            self.nest(s, lift)

    def top_slice_store(self, s: Store):
        """`o[c] = t` outside loops, t a tensor (an unrolled step's `o[h] = p @ v[h]`): o's
        new value is o with the slice at c replaced, `for[axes] t[rest] if axes[:k] == c else
        o[axes]`, so the tensor it stores is a term the rules can take (a matmul), where a
        statement run as written hides it. (An element store stays as written: a pass over
        the whole tensor for one element.)"""
        shape = self.shapes[s.buf]
        idx = [self.ix(i, {}, s.loc) for i in s.idx]
        if any(i.op != "Ix.lit" for i in idx) or not 0 < len(idx) < len(shape):
            raise NotFunctional("a slice store at an index that is not a constant")
        axes = [self.new_var("o", n) for n in shape]
        ctx = _Ctx(self, {}, None)
        rest = [T.iv(v) for v in axes[len(idx):]]
        val = self.elem(s.value, rest, ctx)
        old = T.load(self.env[s.buf], [T.iv(v) for v in axes])
        if s.aug:
            val = T.update(AUG[s.aug_op], T.load(self.env[s.buf], idx + rest), val)
        out = val
        for v, c in reversed(list(zip(axes, idx))):
            out = T.select("==", Node("Sc.idx", T.iv(v)), T.lit(float(c.args[0])), out, old)
        self.env[s.buf] = T.compute(list(zip(axes, shape)), out)

    def returned_as_written(self, k: int, r, why: str) -> Node:
        """Returned expression `r` (a tensor, a number) computed by a nest of its own that runs it as written
        (`eqsat_return<k> = r`), as a top-level statement with no term would be; `why` it has none."""
        name = f"eqsat_return{k}"
        node = ast.copy_location(ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())], value=r.node), r.node)
        s = Assign(r.loc, name, r)
        s.node = ast.fix_missing_locations(node)
        s.views = dict(getattr(r, "views", {}))
        self.nest(s, False, why)
        return self.env[name]

    def top_assign(self, s):
        if not s.aug:
            self.maybe_unset.discard(s.name)
        if s.value.ty is None:
            v = self.scalar_top(s.value)
            self.env[s.name] = _hoist_closed(T.update(AUG[s.aug_op], self.env[s.name], v) if s.aug else v)
            return
        if s.aug:
            v = self.tensor(Bin(s.loc, s.aug_op, Ref(s.loc, s.name, ty=s.value.ty), s.value, ty=s.value.ty))
        else:
            v = self.tensor(s.value)
        self.shapes[s.name] = self.shape_of(s.value.ty, s.loc)
        self.env[s.name] = v

    # ------------------------------------------------------------ whole-tensor expressions
    def tensor(self, e) -> Node:
        """A tensor-valued expression outside loops as a closed Ten term."""
        if isinstance(e, Ref):
            return self.env[e.name]
        if isinstance(e, Index):
            t = self.env[e.base]
            for ix in e.idx:
                t = Node("Ten.slice", t, self.ix(ix, {}, e.loc))
            return t
        if isinstance(e, MatMul) and not _with_vector(e):
            return self.matmul(e, self.tensor(e.a), self.tensor(e.b))
        if isinstance(e, Transpose):
            return Node("Ten.transpose", self.tensor(e.x), " ".join(map(str, e.perm)))
        if isinstance(e, Reshape):
            return self.reshaped(self.tensor(e.x), self.shape_of(e.ty, e.loc))
        shape = self.shape_of(e.ty, e.loc)
        merged = self.batch_merged(e, shape) if len(shape) >= 4 else None
        if merged is not None:
            return merged
        vs = [self.new_var("t", n) for n in shape]
        body = self.elem(e, [T.iv(v) for v in vs], _Ctx(self, {}, None))
        return T.compute(list(zip(vs, shape)), _hoist_closed(body))

    def batch_merged(self, e, shape: tuple) -> Node | None:
        """Elementwise expression `e` of shape (B, H, .., M, N) over a matmul of several batch
        axes (`relu(q @ k.T(0, 1, 3, 2))`), computed over that matmul's merged axes (B*H..,
        M, N) and reshaped back: then it reads the matmul at its own axes, and is its
        epilogue. Every operand of `e`'s shape is read in that merged form (a view of a
        contiguous tensor); the others must have at most two axes (broadcast over the last
        ones). None where that does not hold or no such matmul is read."""
        leaves = []

        def walk(x) -> bool:
            if isinstance(x, Bin):
                return walk(x.a) and walk(x.b)
            if isinstance(x, Call):
                return all(walk(a) for a in x.args)
            if isinstance(x, (Const, Dim)) or x.ty is None:
                return isinstance(x, (Const, Dim, Ref))  # (a number or a scalar name)
            if len(x.ty) <= 2:
                return True
            if self.shape_of(x.ty, x.loc) != shape:
                return False
            leaves.append(x)
            return True

        if not isinstance(e, (Bin, Call)) or not walk(e) or not leaves:
            return None  # (an operand of its own shape is read as a tensor: `tensor`, not here)
        terms = {id(x): self.tensor(x) for x in leaves}
        forms = [self.merged.get(t) for t in terms.values()]
        if not any(forms):
            return None
        mshape = next(f[1] for f in forms if f)
        if any(f is not None and f[1] != mshape for f in forms):
            mshape = (math.prod(shape[:-2]),) + shape[-2:]
        if len(mshape) == 2 and any(len(x.ty) == 2 for x in _operands(e)):
            mshape = (math.prod(shape[:-2]),) + shape[-2:]  # (an (M, N) operand needs M apart)
        self.leaf_terms = {}
        for x in leaves:
            f = self.merged.get(terms[id(x)])
            self.leaf_terms[id(x)] = f[0] if f is not None and f[1] == mshape else \
                Node("Ten.reshape", terms[id(x)], T.shp(mshape))
        try:
            vs = [self.new_var("t", n) for n in mshape]
            body = self.elem(e, [T.iv(v) for v in vs], _Ctx(self, {}, None))
        finally:
            self.leaf_terms = {}
        inner = T.compute(list(zip(vs, mshape)), body)
        out = Node("Ten.reshape", inner, T.shp(shape))
        self.merged[out] = (inner, mshape)
        return out

    def matmul(self, e, ta: Node, tb: Node) -> Node:
        """`a @ b` of operand terms `ta`, `tb` (no vector operand). A matmul has at most one
        batch axis; more (attention's (B, H, S, D) @ (B, H, D, S)) are merged into one by
        reshapes (copies where an operand is a transposed view, as numpy's reshape makes),
        and an operand without batch axes beside one with several makes the other's rows
        one long axis ((B, S, D) @ (D, E) is (B * S, D) @ (D, E))."""
        ba, bb = len(e.a.ty) - 2, len(e.b.ty) - 2
        if max(ba, bb) <= 1:
            return Node("Ten.matmul", ta, tb)
        sa, sb = self.shape_of(e.a.ty, e.loc), self.shape_of(e.b.ty, e.loc)
        so = self.shape_of(e.ty, e.loc)
        if bb == 0:  # (..., M, K) @ (K, N): the rows of every batch are rows
            mm = Node("Ten.matmul", self.reshaped(ta, (math.prod(sa[:-1]), sa[-1])), tb)
            mshape = (math.prod(so[:-1]), so[-1])
        else:
            batch = math.prod(sb[:-2])
            a3 = ta if ba == 0 else self.reshaped(ta, (batch,) + sa[-2:])
            mm = Node("Ten.matmul", a3, self.reshaped(tb, (batch,) + sb[-2:]))
            mshape = (batch,) + so[-2:]
        out = Node("Ten.reshape", mm, T.shp(so))
        self.merged[out] = (mm, mshape)
        return out

    def reshaped(self, t: Node, shape: tuple) -> Node:
        """Tensor term `t` reshaped to `shape`: its merged form itself where it has one of
        that shape (`batch_merged`: an epilogue's result read by the next matmul)."""
        f = self.merged.get(t)
        if f is not None and f[1] == tuple(shape):
            return f[0]
        return Node("Ten.reshape", t, T.shp(shape))

    def before(self, name) -> Node:
        """The value `name` has before the statement being lowered, which reads it."""
        if name in self.maybe_unset:
            raise NotFunctional(f"{name!r} may be unassigned here (a statement before leaves it so in some runs)")
        return self.env[name]

    def scalar_top(self, e) -> Node:
        return self.scalar(e, _Ctx(self, {}, None))

    # ------------------------------------------------------------ element-level expressions
    def ix(self, ie, loopvars: dict, loc) -> Node:
        """An index IExpr as an Ix term; `loopvars` maps loop names to their Ix."""
        try:
            coef, const = ie_affine(ie, self.dims, loc)
        except NotAffine as why:
            raise NotFunctional(str(why)) from None
        for name in sorted(coef):
            if name not in loopvars:
                raise ProgramError(f"{name!r} is not a loop variable in scope", loc)
        return T.ix_affine([(loopvars[name], c) for name, c in sorted(coef.items())], const)

    def scalar(self, e, ctx: "_Ctx") -> Node:
        if isinstance(e, Const):
            return T.lit(e.value)
        if isinstance(e, Ref):
            return ctx.read_scalar(e.name, e)
        if isinstance(e, Index):
            return ctx.load(e.base, [self.ix(i, ctx.loopvars, e.loc) for i in e.idx], e)
        if isinstance(e, Bin) and e.op == "**" and isinstance(e.b, Const) and e.b.value == 0.5:
            x = self.scalar(e.a, ctx)
            if not T.python_number(x):  # (a Python number's `** 0.5` of a negative is complex)
                # a float32's `x ** 0.5` is C's powf: sqrt, but +0.0 at -0.0 and +inf at -inf
                # (the front end makes an array's `** 0.5` numpy's sqrt, which is not)
                return T.select("==", x, T.lit(-math.inf), T.lit(math.inf),
                                T.binop("Sc.add", Node("Sc.fn", "sqrt", x), T.lit(0.0)))
        if isinstance(e, Bin) and _has_power(e):
            got = self.power(e)
            if got is not None:
                return got
        if isinstance(e, Bin):
            ie = _index_of(e, self._ie_memo)  # arithmetic on loop variables and sizes: one index value
            if ie is not None and ie_names(ie) - set(self.dims) and ie_names(ie) <= set(self.dims) | set(ctx.loopvars):
                try:
                    return Node("Sc.idx", self.ix(ie, ctx.loopvars, e.loc))
                except NotFunctional:
                    pass
            return T.binop(_binop(e), self.scalar(e.a, ctx), self.scalar(e.b, ctx))
        if isinstance(e, Dim):
            if e.name in self.dims:
                return T.lit(float(self.dims[e.name]))
            return Node("Sc.idx", self.ix(("name", e.name), ctx.loopvars, e.loc))
        if isinstance(e, Call):
            return _call(e, lambda a: self.scalar(a, ctx))
        if isinstance(e, Select):
            check_deadline()  # (if-conversion's selects nest as deep as an elif chain is long)
            return _select(e.cond, lambda x: self.scalar(x, ctx), self.scalar(e.a, ctx), self.scalar(e.b, ctx))
        if isinstance(e, MatMul):  # a dot product of two vectors
            return self.vector_product(e, [], ctx)
        raise NotFunctional(f"unexpected scalar expression {type(e).__name__}")

    def power(self, e: Bin) -> Node | None:
        """Arithmetic of numbers and sizes holding a `**` (`K ** -0.5`, `2.0 ** -0.5`; the front
        end makes a product of a small integer power): the number it is, computed here as
        Python would (the sizes are known), where that is surely its value. The front end
        keeps a literal as a float, so `25` and `25.0` look alike, and Python's int arithmetic
        is exact where float64's is not (`N ** 25 + 1 - N ** 25` is 1 of ints, 0.0 of
        floats): the value is folded only where reading the integral literals as ints and as
        floats gives the same number, every int on the way exact in float64 (below 2**53).
        Else None, and `a ** b` itself has no term: the nest runs as written (as does a power
        of anything else)."""
        a, b = self.number(e, True), self.number(e, False)
        if a is not None and b is not None and float(a) == float(b):
            return T.lit(float(b))
        if e.op == "**":
            raise NotFunctional("`**` has no functional form here")
        return None

    def number(self, e, ints: bool):
        """The Python number an expression of number literals and sizes is, its integral
        literals read as ints (`ints`) or as floats; None where it is not one, or an int on
        the way is past 2**53, or Python raises (0 ** -1, 1e300 ** 2)."""
        if isinstance(e, Const):
            v = e.value
            if type(v) not in (int, float) or v != v:
                return None
            return int(v) if ints and float(v).is_integer() else float(v)
        if isinstance(e, Dim):
            v = self.dims.get(e.name)
        elif isinstance(e, Call) and e.fn == "neg" and len(e.args) == 1:
            a = self.number(e.args[0], ints)
            v = None if a is None else -a
        elif isinstance(e, Bin) and e.op in _ARITHMETIC:
            a, b = self.number(e.a, ints), self.number(e.b, ints)
            if a is None or b is None:
                return None
            try:
                v = _ARITHMETIC[e.op](a, b)
            except (ArithmeticError, ValueError):
                return None
        else:
            return None
        if type(v) is int and abs(v) >= 2 ** 53 or type(v) not in (int, float):  # ((-8) ** 0.5 is complex)
            return None
        return v

    def vector_product(self, e, my: list, ctx: "_Ctx") -> Node:
        """Element `my` of `@` with a vector operand (numpy's: the vector's axis is the
        contraction, and it is not kept): a sum over the contraction of products of loads,
        which the rules turn into a matmul where that pays."""
        ra, rb = len(e.a.ty), len(e.b.ty)
        n = self.shape_of(e.a.ty, e.loc)[-1]
        k = T.iv(self.new_var("k", n))
        ta, tb = self.open_tensor(e.a, ctx), self.open_tensor(e.b, ctx)
        if ra == 1 and rb == 1:
            ia, ib = [k], [k]
        elif ra == 1:  # v @ B: my = batch + (column,)
            ia, ib = [k], my[:-1] + [k, my[-1]]
        else:  # A @ v: my = the rows of A
            ia, ib = my + [k], [k]
        body = T.binop("Sc.mul", T.load(ta, ia), T.load(tb, ib))
        return Node("Sc.red", "sum", k.args[0], n, body)

    def elem(self, e, idx: list, ctx: "_Ctx") -> Node:
        """Element `idx` of tensor expression `e` (broadcasting from the right)."""
        if e.ty is None:
            return self.scalar(e, ctx)
        hook = self.leaf_terms.get(id(e))
        if hook is not None:  # an operand read in its merged form (`batch_merged`)
            return T.load(hook, list(idx))
        rank = len(e.ty)
        my = idx[max(len(idx) - rank, 0):]  # (fewer indices: batch axes merged, `batch_merged`)
        shape = self.shape_of(e.ty, e.loc)
        if isinstance(e, Ref):
            return ctx.load(e.name, [i if n != 1 else T.ilit(0) for i, n in zip(my, shape)], e)
        if isinstance(e, Index):
            lead = [self.ix(i, ctx.loopvars, e.loc) for i in e.idx]
            return ctx.load(e.base, lead + [i if n != 1 else T.ilit(0) for i, n in zip(my, shape)], e)
        if isinstance(e, Transpose):
            inv = [None] * rank
            for out_axis, in_axis in enumerate(e.perm):
                inv[in_axis] = my[out_axis]
            return self.elem(e.x, inv, ctx)
        if isinstance(e, Bin):
            return T.binop(_binop(e), self.elem(e.a, my, ctx), self.elem(e.b, my, ctx))
        if isinstance(e, Call):
            return _call(e, lambda a: self.elem(a, my, ctx))
        if isinstance(e, Select):
            return _select(e.cond, lambda x: self.elem(x, my, ctx), self.elem(e.a, my, ctx), self.elem(e.b, my, ctx))
        if isinstance(e, MatMul) and _with_vector(e):
            return self.vector_product(e, my, ctx)
        if isinstance(e, (MatMul, Reshape)):
            t = self.open_tensor(e, ctx)
            return T.load(t, [i if n != 1 else T.ilit(0) for i, n in zip(my, shape)])
        raise NotFunctional(f"unexpected tensor expression {type(e).__name__}")

    def open_tensor(self, e, ctx: "_Ctx") -> Node:
        """A tensor term that may mention loop variables (a library call inside a loop)."""
        if isinstance(e, Ref):
            return ctx.whole(e.name, e)
        if isinstance(e, Index):
            t = ctx.whole(e.base, e)
            for i in e.idx:
                t = Node("Ten.slice", t, self.ix(i, ctx.loopvars, e.loc))
            return t
        if isinstance(e, MatMul) and not _with_vector(e):
            return self.matmul(e, self.open_tensor(e.a, ctx), self.open_tensor(e.b, ctx))
        if isinstance(e, Transpose):
            return Node("Ten.transpose", self.open_tensor(e.x, ctx), " ".join(map(str, e.perm)))
        if isinstance(e, Reshape):
            return self.reshaped(self.open_tensor(e.x, ctx), self.shape_of(e.ty, e.loc))
        shape = self.shape_of(e.ty, e.loc)  # elementwise: a compute over its shape
        vs = [self.new_var("t", n) for n in shape]
        return T.compute(list(zip(vs, shape)), self.elem(e, [T.iv(v) for v in vs], ctx))

    # ------------------------------------------------------------ nests
    def _analysed(self, s, lift: bool, why: str):
        """`nest`'s analysis of `s`: (its functional form or None, why not, the parts it is
        split into or None, the buffers those carry scalars in, the scalars dropped, whether
        the parts are its iterations unrolled). OutOfTime past the deadline, from anywhere."""
        functional, reason, parts, buffers, dropped, steps = None, "", None, {}, set(), False
        try:
            if not lift:
                raise NotFunctional(why or KEPT_FOR_TIME)
            tail = split_tail(s, self.dims) if isinstance(s, For) else None
            if tail is not None:  # the loop, then its last iteration's tail: lowered one by one
                return None, "", tail, {}, set(), False
            try:
                # (loops written from 1 read at i - 1, from 0; loops written in pieces, as one)
                whole = reroll(normalize(s, self.dims), self.dims, getattr(s, "views", {}))
                merged = unsplit(whole, self.dims, self.fresh, _reorder_check(whole, self))
                functional = _NestRun(self, ifconvert(merged, self.dims, self.shapes)).run()
            except isl.Error as e:  # an analysis it cannot state: keep the nest as written
                raise NotFunctional(f"dataflow analysis failed ({e})") from None
            functional = {n: None if t is None else self.normalized(t) for n, t in functional.items()}
        except NotFunctional as e:
            reason = shown_names(str(e))
            live = self.read_after if s is self.current_top else None
            split = _fission(s, self, live) if lift and isinstance(s, For) and len(_leaves(s)) > 1 else None
            if split is not None:
                parts, buffers, dropped = split
            elif lift and isinstance(s, For):
                # a short sequential loop around nests: its iterations, lowered one by one
                parts = unrolled(s, self.dims)
                steps = parts is not None
        return functional, reason, parts, buffers, dropped, steps

    def nest(self, s, lift: bool = True, why: str = ""):
        """Lower nest `s`: kept as written (a `loop` kernel), and with a functional form
        where the analysis proves one; `lift=False` keeps it as written without trying, for
        `why` (by default: the time limit)."""
        _declare_shapes(s, self)  # tensors allocated or bound inside the nest
        steps = False  # whether `parts` are the iterations of `s` unrolled
        nid = len(self.nests)  # the id `_as_written` gives it (parts are numbered after it)
        lift = lift and nid not in self.keep
        # past `abandon`, isl stops (its operations bounded by the time left) and the nest
        # is kept as written: one nest's analysis may not take the whole time limit
        quota = None if self.abandon is None or not lift else max(self.abandon - clock(), 0.0) * ISL_OPS_PER_SECOND
        # (and the Python passes around isl stop at `abandon` too: limits.check_deadline)
        with operation_quota(quota), analysis_deadline(None if quota is None else self.abandon):
            try:
                functional, reason, parts, buffers, dropped, steps = self._analysed(s, lift, why)
                if quota is not None and quota_spent():
                    raise OutOfTime
            except OutOfTime:
                functional, parts, dropped, reason, steps = None, None, set(), ABANDONED_FOR_TIME, False
        if parts:
            for name, shape in buffers.items():  # scalars carried between parts (expand.py)
                self.shapes[name] = shape
                self.env[name] = self.zeros(shape)
        if reason in (KEPT_FOR_TIME, ABANDONED_FOR_TIME):
            self.kept_for_time.add(nid)
        opaque, swrites = self._as_written(s, reason)
        if parts:
            # no functional form as a whole: distribute the loops over groups of statements
            # (fission, proven legal by dataflow) and lower each on its own; the nest as
            # written stays an alternative in each output's e-class (one compiled loop may
            # beat a copy kernel and a smaller loop)
            top = (self.current_top, self.read_after, self.surely_read_after)
            outer_after, outer_private, outer_kept = self.part_after, self.part_private, self.part_kept
            base = outer_after if outer_after is not None else (self.read_after if s is self.current_top else None)
            self.part_private, self.part_kept = set(), set()
            for k, part in enumerate(parts):
                part.views = getattr(s, "views", {})
                if base is not None and not (steps and s is self.current_top):
                    # (an unrolled iteration inside a part too: what is read after it is what
                    # the later iterations' statements read before assigning, `s = acc1` after
                    # the loop that may update `acc1`, and what is read after the part; the
                    # part's own set, kept, would leave `acc1` private to that loop, dropped)
                    assigned, exposed = set(), set()
                    _exposed_reads(parts[k + 1:], assigned, exposed, self.dims)
                    self.part_after = exposed | (base - assigned)
                if steps and s is self.current_top:
                    # an unrolled iteration's statement is a top-level one: what is read after
                    # it is what the later ones read before assigning, and what is read after
                    # the loop and they do not assign (so a scalar private to each iteration
                    # is no output of it, and fission may carry it: `_fission`'s `live`)
                    assigned, exposed = set(), set()
                    _exposed_reads(parts[k + 1:], assigned, exposed, self.dims)
                    self.current_top, self.read_after = part, exposed | (top[1] - assigned)
                    self.surely_read_after = _definitely_read(parts[k + 1:], top[2], self.dims)
                try:
                    if isinstance(part, (Alloc, Assign, Store)):  # (an unrolled iteration's statements)
                        self.top(part)
                    else:
                        self.nest(part)
                finally:
                    self.current_top, self.read_after, self.surely_read_after = top
                    self.part_after = outer_after
            # (a scalar renamed or carried by expand.py is dead after the nest: no part
            # defines the nest's own final value of it, so it gets no functional form; nor
            # does one private to the parts that assign it)
            private = self.part_private - self.part_kept
            self.part_private, self.part_kept = outer_private | self.part_private, outer_kept | self.part_kept
            functional = {n: self.env[n] for n in opaque if n in self.env and n not in dropped and n not in private}
            functional = {n: (self._scalar_output(t) or t) if n in swrites else t for n, t in functional.items()}
        for n, o in opaque.items():
            got = functional.get(n) if functional is not None else None
            if n in swrites:
                self.env[n] = T.load(o, [])
                if n in self.nests[o.args[0]].numbers:
                    self.env[n] = Node("Sc.fn", "float", self.env[n])
                if got is not None:
                    self.unions.append((o, got if got.op == "Ten.opaque" else T.compute([], got)))
            else:
                self.env[n] = o
                if got is not None:
                    self.unions.append((o, got))
                    self.functional[o] = got

    def _scalar_output(self, t: Node) -> Node | None:
        """The kept nest's output (`Ten.opaque`) scalar term `t` reads, where it reads a
        scalar one writes (`Sc.load` of its output at no index; the Python number of one,
        `float(...)` of that), not an element of a tensor it writes (`a8 = a[0]` after a
        nest); else None."""
        if t.op == "Sc.fn" and t.args[0] == "float":
            t = t.args[1]
        if t.op != "Sc.load" or t.args[0].op != "Ten.opaque" or t.args[1].op != "Ixs.nil":
            return None
        o = t.args[0]
        return o if o.args[1] in self.nests[o.args[0]].scalar_outputs else None

    def normalized(self, t: Node) -> Node:
        """A nest's functional term with split reductions merged and loop-invariant
        reductions hoisted out of the reductions around them (eqsat/hoist.py)."""
        t = merge_split_reductions(t, lambda e: self.new_var("k", e), self.unsplit_memo)
        return hoist_invariant_reductions(t, T.free_vars, self.new_var, self.var_extent.get, self.hoisted,
                                          self.hoist_canon)

    def _as_written(self, s, reason: str):
        """Nest `s` as a `loop` kernel run as written: ({output: its Ten.opaque term}, the
        scalar outputs). The environment is not updated here."""
        nid = len(self.nests)
        reads, writes, swrites = set(), set(), set()
        _scan(s, reads, writes, swrites, set())
        exposed, assigned = set(), set()  # (read before assigned; assigned by every run)
        _exposed_reads([s], assigned, exposed, self.dims)
        if self.part_after is not None:
            # a fission part: a scalar it may leave unassigned that nothing reads after it is
            # its own (as an output it would make the part run interpreted: Python raises
            # where numba reads a zero); one it surely assigns stays an output, as before
            # (pruning those too changed how LDL^T's parts grew the e-graph: 157k e-nodes)
            private = {n for n in swrites - assigned if n not in self.part_after and n not in self.shapes}
            swrites -= private
            self.part_private |= private
            self.part_kept |= swrites
        elif s is self.current_top:  # (nor is one of a whole statement an output: `temp = alpha * A[j, l]`)
            swrites = {n for n in swrites if n in self.read_after or n in self.shapes}
        names = [n for n in ast.walk(s.node) if isinstance(n, ast.Name)]
        used = {n.id for n in names}
        views = {v: e for v, e in getattr(s, "views", {}).items() if v in used}
        for e in views.values():  # a view the source names needs the tensor it views
            while not hasattr(e, "name") and not hasattr(e, "base"):
                e = e.x
            reads.add(getattr(e, "name", None) or e.base)
        # (and a tensor the source names without reading an element: `v = x` binding a view
        # of it inside the loop runs as written and needs `x`)
        loaded = {n.id for n in names if isinstance(n.ctx, ast.Load)}
        tensor_in = sorted(n for n in reads | writes | loaded if n in self.shapes and n in self.env)
        # a buffer the nest writes whole and never reads (nor views: those are in `reads`)
        # comes in as nothing: the nest makes it (`v = empty((N,))`, then `for i: v[i] = ...`:
        # no pass filling it, no copy of it)
        allocates = {n: self.shapes[n] for n in tensor_in if n in writes and n not in reads and n not in views
                     and _overwrites(s, n, self.shapes[n], self.dims, self.shapes)}
        tensor_in = [n for n in tensor_in if n not in allocates]
        # a scalar comes in only where the nest may read the value it had before: a read
        # before any assignment, or an output some run of the nest may leave unassigned
        # (a scalar every iteration sets first, an accumulator `acc = 0.0`, does not: were
        # it passed, a nest kept as written would need the nest that last set it to run)
        scalar_in = sorted(n for n in exposed | (swrites - assigned) if n in self.env and n not in self.shapes)
        # (names without a value before the nest, read before they are assigned, or left
        # unassigned by some run; not eqsat's own temporaries)

        def unbound(names) -> frozenset:
            return frozenset(n for n in names if n not in self.env and not n.startswith("eqsat_"))

        self.maybe_unset -= assigned
        self.maybe_unset |= unbound((writes | swrites) - assigned)
        outputs = sorted(writes) + sorted(swrites)

        def make_code(node=s.node, ints=frozenset(self.dims), file=self.prog.file, made=dict(allocates)):
            source = copy.deepcopy(node)
            clamped(source, set(ints))  # (bounds desugar widened to a guard, clamped again)
            python_results(source)  # (math's functions return Python floats, as math's)
            allocs = [ast.parse(f"{n} = {ALLOCATE}({tuple(shape)!r})").body[0] for n, shape in made.items()]
            return compile(ast.fix_missing_locations(ast.Module(body=allocs + [source], type_ignores=[])), file, "exec")

        work = nest_work(s, self.dims)
        # what runs on several cores; a whole top-level nest knows what is read after it (a
        # part of one, from fission, does not: nothing it assigns may be private then)
        live = (writes | swrites) & self.read_after if s is self.current_top else None
        par = parallel_work(s, self.dims, self.shapes, views, live=live, ops=work["nodes"])
        work["parallel_ops"], work["parallel_bytes"] = par["ops"], par["bytes"]
        # what crosses to a host that runs the nest (cost.loop_time on a GPU target): the
        # tensors it reads and the ones it writes
        work["io_bytes"] = 4 * sum(math.prod(self.shapes[n]) for n in tensor_in) + \
            4 * sum(math.prod(self.shapes[n]) for n in writes if n in self.shapes)
        nest = Nest(nid, s, tensor_in, scalar_in, outputs, set(swrites), work, make_code=make_code,
                    views=views, allocates=allocates, unbound_reads=unbound(exposed - set(self.shapes)),
                    unset_outputs=unbound((writes | swrites) - assigned),
                    # (outputs surely read after a top-level statement: a part of one, from
                    # fission, hands its values to the next parts, which run only where it ran)
                    unbound_outputs=unbound(((writes | swrites) - assigned) & self.surely_read_after
                                            if s is self.current_top else ()),
                    out_shapes={n: self.shapes.get(n, ()) if n not in swrites else () for n in outputs})
        if swrites:
            numbers = [n for n in scalar_in if T.python_number(self.env[n])]
            nest.numbers = number_outputs(s.node, tensor_ranks(self.shapes, views),
                                          [n for n in scalar_in if n not in numbers], numbers, self.dims,
                                          {**self.prog.fn.__globals__, **self.prog.constants}, swrites)
        self.nests[nid] = nest
        tin = T.tens([self.env[n] for n in tensor_in])
        sin = T.scs([self.env[n] for n in scalar_in])
        nest.reason = reason
        return {n: Node("Ten.opaque", nid, n, tin, sin) for n in outputs}, swrites


def _overwrites(s, name: str, shape: tuple, dims: dict, shapes: dict) -> bool:
    """Whether nest `s` stores every element of tensor `name` and reads none: plain stores
    only (no update, no guard, no value reading `name`, none under an `if`), that together
    write the whole tensor: one store indexed by the variables of loops over every axis's
    whole extent, or stores whose images isl proves cover it (`y[2 * i] = ...` and
    `y[2 * i + 1] = ...`). Its old contents then never matter."""
    stores, others = [], []

    def visit(st, loops):
        if isinstance(st, For):
            for b in st.body:
                visit(b, None if loops is None else loops + (st,))  # (None: under an `if`)
        elif isinstance(st, If):
            for b in st.body + st.orelse:
                visit(b, None)
        elif isinstance(st, Store) and st.buf == name:
            stores.append((st, loops))
        elif isinstance(st, (Assign, Alloc)) and st.name == name:
            others.append(st)

    visit(s, ())
    if not stores or others:
        return False
    for st, loops in stores:
        reads = expr_reads(st.value)
        if loops is None or st.aug or st.guarded or name in reads:
            return False
    if len(stores) == 1 and len(stores[0][0].idx) == len(shape):
        st, loops = stores[0]
        by_var = {f.var: f for f in loops}
        used = set()
        for ix, extent in zip(st.idx, shape):
            f = by_var.get(ix[1]) if ix[0] == "name" else None
            if f is None or f.var in used or f.step != 1 or f.lo != ("int", 0) or trip(f, dims) != extent:
                break
            used.add(f.var)
        else:
            # and every other loop around it runs at least once, whatever the loops around
            # it (`for t in range(n)` with n = 0, or `for j in range(i)` at i = 0, store nothing)
            if all(f.var in used or trip(f, dims) >= 1 for f in loops):
                return True
    if not isinstance(s, For):
        return False
    try:
        return NestFlow(s, dims, shapes, set()).covers(name)
    except (Conditional, isl.Error, KeyError, NotAffine):
        return False


def _reorder_check(s, low):
    """reorder_ok for `unsplit`: isl proves the reordered band the same program."""
    flow = []

    def ok(band, order) -> bool:
        try:
            if not flow:
                flow.append(NestFlow(s, low.dims, low.shapes, set()))
            return flow[0].reorder_legal(band, order)
        except (isl.Error, Conditional):
            return False

    return ok


def _fission(s, low, live: set | None = None):
    """Nest `s` as several nests, one per group of its leaf statements, each group inside
    copies of its enclosing loops; None where it stays one.

    Groups are the strongly connected components of the order the nest must keep: an
    edge a -> b where an instance of leaf a runs before a conflicting instance of leaf b
    (same tensor location, one writing; exact, by isl), and both ways between leaves that
    share a scalar the nest writes or a tensor it allocates or binds (the dataflow of
    distribution models tensor elements only). Groups run in an order that keeps every
    edge (textual order where free), each with its leaves in their own order, so every
    dependent pair of instances runs in its original order: the same program
    (Kennedy and Allen's loop distribution, over the whole nest at once).

    With `live` (the names read after a top-level nest), scalars in the way are handled
    first (`eqsat/expand.py`): webs renamed, and a scalar private to an iteration that later
    statements only read gets a one-way edge, producer before reader, and is carried
    between parts in a buffer. Returns (parts, {buffer: shape}, names no part defines as
    the nest did), or None."""
    if not _one_to_one(s):
        return None
    renamed: set = set()
    if live is not None:
        s, renamed = expand.rename_webs(s, live)
    leaves = _leaves(s)
    priv = expand.privates(s, live) if live is not None else {}
    try:
        flow = NestFlow(s, low.dims, low.shapes, set(), ifs_as_leaves=True)
        edges = flow.order_edges(skip=set(priv))
    except (isl.Error, Conditional):
        return None
    sid = {id(leaf.stmt): leaf.sid for leaf in flow.leaves}
    if sorted(sid.get(id(x), -1) for x in leaves) != list(range(len(leaves))):
        return None  # leaves the analysis does not model one to one
    n = len(leaves)
    idx = [sid[id(x)] for x in leaves]  # textual position -> leaf id (the same order)
    reach = [[False] * n for _ in range(n)]
    for a, b in edges:
        reach[a][b] = True
    local = set()  # scalars written and tensors allocated or bound inside the nest
    touched = []
    for x in leaves:
        reads, writes, swrites = set(), set(), set()
        _scan(x, reads, writes, swrites, set())
        touched.append(reads | writes | swrites)
        local |= swrites | ({x.name} if isinstance(x, (Alloc, Assign)) else set())
    for a in range(n):
        for b in range(n):
            if a == b:
                continue
            for name in touched[a] & touched[b] & local:
                p = priv.get(name)
                if p is not None and id(leaves[a]) in p.readers and id(leaves[b]) in p.readers:
                    continue  # two readers of a carried scalar: no order between them
                if p is not None and id(leaves[a]) in p.producers and id(leaves[b]) in p.readers:
                    reach[idx[a]][idx[b]] = True  # producer before reader, one way
                elif p is not None and id(leaves[a]) in p.readers and id(leaves[b]) in p.producers:
                    reach[idx[b]][idx[a]] = True
                else:
                    reach[idx[a]][idx[b]] = reach[idx[b]][idx[a]] = True
    for k in range(n):  # transitive closure (a nest has few leaves)
        for a in range(n):
            if reach[a][k]:
                for b in range(n):
                    if reach[k][b]:
                        reach[a][b] = True
    comp = {}
    for a in range(n):
        comp[a] = min([a] + [b for b in range(n) if reach[a][b] and reach[b][a]])
    groups: dict = {}
    for a in range(n):
        groups.setdefault(comp[a], []).append(a)
    if len(groups) < 2:
        return None
    order, left = [], dict(groups)
    while left:  # the first group (textually) that no other group left must precede
        head = min(g for g in left if not any(reach[b][g] and not reach[g][b] for h in left if h != g
                                               for b in left[h]))
        order.append(left.pop(head))
    keep_of = {a: id(x) for a, x in zip(idx, leaves)}
    kept = [{keep_of[a] for a in g} for g in order]
    copies = [{} for _ in kept]
    parts = [_restrict(s, k, c) for k, c in zip(kept, copies)]
    try:
        buffers = expand.expand(parts, copies, priv, low.dims, kept)
    except (ValueError, KeyError):
        return None
    carried = {p.name for p in priv.values()}
    return parts, buffers, renamed | carried


def _restrict(s, keep: set, copies: dict | None = None):
    """A copy of nest `s` holding only the leaf statements whose ids are in `keep` (and the
    loops around them), its source cut the same way; None if none is left. `copies`, if
    given, maps each loop's id to its copy."""
    if not isinstance(s, For):
        return s if id(s) in keep else None
    body, nodes = [], []
    for b, nb in zip(s.body, s.node.body):
        r = _restrict(b, keep, copies)
        if r is not None:
            body.append(r)
            nodes.append(r.node if isinstance(r, For) else nb)
    if not body:
        return None
    node = copy.copy(s.node)
    node.body = nodes
    out = For(s.loc, s.var, s.lo, s.hi, body, node=node, step=s.step)
    if copies is not None:
        copies[id(s)] = out
    return out


def _one_to_one(s) -> bool:
    """Every loop body statement is one ir statement (no view bindings, chained assignments
    or docstrings that a part's source would lose or repeat), so parts can run as written."""
    if not isinstance(s, For):
        return True
    # (equal counts are not enough: a view binding, which makes no ir statement, beside a
    # chained assignment, which makes two, paired every statement with its neighbour's source)
    return len(s.node.body) == len(s.body) and \
        all(getattr(b, "node", None) is nb for b, nb in zip(s.body, s.node.body)) and \
        all(_one_to_one(b) for b in s.body)


def _sub(s) -> list:
    """The statements directly inside a loop or a conditional."""
    if isinstance(s, For):
        return s.body
    if isinstance(s, If):
        return s.body + s.orelse
    return []


def _declare_shapes(s, low):
    if isinstance(s, (For, If)):
        for b in _sub(s):
            _declare_shapes(b, low)
    elif isinstance(s, Alloc):
        low.shapes[s.name] = low.shape_of(s.shape, s.loc)
    elif isinstance(s, Assign) and s.value.ty is not None:
        low.shapes[s.name] = low.shape_of(s.value.ty, s.loc)


def _exposed_reads(stmts, assigned: set, exposed: set, dims: dict, sure: bool = False) -> None:
    """Names the statements read before assigning them (into `exposed`), and the names
    every run of them assigns (into `assigned`, updated in place): a loop's body counts as
    run when its trip count is known and positive, a conditional's assignments when both
    branches make them. With `sure`, only the reads every run makes: none in a branch (the
    condition is read), none in a loop that may not run."""
    for s in stmts:
        if isinstance(s, (Assign, Store)):
            r = expr_reads(s.value)
            if s.aug:
                r.add(s.name if isinstance(s, Assign) else s.buf)
            exposed |= r - assigned
            if isinstance(s, Assign):
                assigned.add(s.name)
        elif isinstance(s, Alloc):
            assigned.add(s.name)
        elif isinstance(s, For):
            runs = trip(s, dims) > 0
            if sure and not runs:
                continue
            inner = set(assigned)
            _exposed_reads(s.body, inner, exposed, dims, sure)
            if runs:
                assigned |= inner
        elif isinstance(s, If):
            r = expr_reads(s.cond)
            exposed |= r - assigned
            a, b = set(assigned), set(assigned)
            branch = set() if sure else exposed
            _exposed_reads(s.body, a, branch, dims, sure)
            _exposed_reads(s.orelse, b, branch, dims, sure)
            assigned |= a & b


def _definitely_read(stmts, after: set, dims: dict) -> set:
    """The names statements `stmts` surely read before assigning them, where `after` are
    the names surely read after them (`_exposed_reads` with `sure`). A name they surely
    assign is not read from before them, unless read first."""
    out = set(after)
    for s in reversed(stmts):
        reads, assigned = set(), set()
        _exposed_reads([s], assigned, reads, dims, sure=True)
        out = (out - assigned) | reads
    return out


def _scan(s, reads, writes, swrites, local):
    """Names a statement reads and writes (buffers/tensors in writes, scalars in swrites)."""
    if isinstance(s, (For, If)):
        if isinstance(s, If):
            reads |= expr_reads(s.cond)
        for b in _sub(s):
            _scan(b, reads, writes, swrites, local)
    elif isinstance(s, Store):
        reads |= expr_reads(s.value)
        writes.add(s.buf)
    elif isinstance(s, Assign):
        reads |= expr_reads(s.value)
        if s.aug:
            reads.add(s.name)
        (swrites if s.value.ty is None else writes).add(s.name)
    elif isinstance(s, Alloc):
        writes.add(s.name)


class _Ctx:
    """Where an element-level expression is evaluated: loop variables and the nest's state."""

    def __init__(self, low: _Lowerer, loopvars: dict, run: "_NestRun | None"):
        self.low = low
        self.loopvars = loopvars  # loop name -> Ix term
        self.run = run

    def tensor_value(self, name, node=None):
        if self.run is not None:
            return self.run.read_tensor(name, node)
        return self.low.before(name)

    def read_scalar(self, name, node):
        if self.run is not None:
            return self.run.read_scalar(name, node)
        return self.low.before(name)

    def whole(self, name, node) -> Node:
        """Tensor `name` read whole (an operand of a library call) as a term the rules can
        take: a buffer private to enclosing loops (`t = empty(..)` filled anew in each
        iteration, then `t @ v[h]`) is the tensor of all its iterations' values sliced at
        this one (`_NestRun.expand`), not an open computation."""
        t = self.tensor_value(name, node)
        if self.run is not None and t.op == "Ten.compute" and T.free_vars(t):
            full, at = self.run.expand(name, t, [])
            if full is not t:
                for ix in at:
                    full = Node("Ten.slice", full, ix)
                return full
        return _closed(t, name)

    def load(self, name, idx: list, node) -> Node:
        t = self.tensor_value(name, node)
        if self.run is not None:
            t, idx = self.run.expand(name, t, idx)
        return _load(t, idx)


class _NestRun:
    """Symbolic execution of one nest, every read checked against exact dataflow (module doc)."""

    def __init__(self, low: _Lowerer, stmt):
        self.low = low
        self.stmt = stmt
        self.cur: dict = {}  # buffer -> (Ten term, Source) or None once unusable
        self.scal: dict = {}  # scalar -> (Sc term, Source) or None once unusable
        self.loopix: dict = {}  # id(For) -> Ix of its variable
        self.loopvar: dict = {}  # id(For) -> (Var, extent) of a loop entered
        self.open: list = []  # enclosing loops of the statement being lowered
        self.leaf = None  # the leaf statement being lowered
        self.checks: list = []  # (stmt, read key, claimed Source, self-chain loops)
        self.written = written(stmt)
        scalars = {n for n in self.written if n not in low.shapes}
        try:
            self.flow = NestFlow(stmt, low.dims, low.shapes, scalars)
        except Conditional as why:
            raise NotFunctional(str(why)) from None

    def run(self) -> dict:
        if not isinstance(self.stmt, For):
            raise NotFunctional("a statement outside any loop stays as written")
        self.block([self.stmt])
        out = {}
        try:
            for name in sorted(self.written):
                entry = self.cur.get(name) if name in self.low.shapes else self.scal.get(name)
                if entry is None or entry[1].free:
                    out[name] = None  # private to a loop: only the nest as written gives it
                    continue
                self.flow.check_final(name, entry[1])
                if T.free_vars(entry[0]):  # a safety net: a value must not depend on a loop left behind
                    raise NotFunctional(f"the value of {name!r} depends on a loop variable outside its loop")
                if T.wide_sums(entry[0]):  # (a reduction term sums float32 values)
                    raise NotFunctional(f"{name!r} is computed with Python floats made from elements "
                                        f"(`float(e)`, `math.exp(e)`): float64 arithmetic, as written")
                out[name] = entry[0]
            for stmt, key, src, chain in self.checks:
                self.flow.check_read(stmt, key, src, chain)
        except Mismatch as why:
            raise NotFunctional(str(why)) from None
        except isl.Error as why:  # an analysis it cannot state: keep the nest as written
            raise NotFunctional(f"dataflow analysis failed ({why})") from None
        return out

    # ---------------------------------------------------------------- reads
    def _entry(self, table, name):
        if name not in table:
            return None, None
        entry = table[name]
        if entry is None:
            raise NotFunctional(f"{name!r} is read after the loop it is private to (Python keeps its last value)")
        return entry

    def read_scalar(self, name, node):
        term, src = self._entry(self.scal, name)
        if name in self.written:
            self.checks.append((self.leaf, id(node), src, None))
        if term is None and name not in self.low.env:
            # no value before the nest: a predicated `w = v if c else w` reads what Python
            # would only read after an assignment ran (the nest stays as written)
            raise NotFunctional(f"{name!r} may be read before it is assigned")
        return term if term is not None else self.low.before(name)

    def read_tensor(self, name, node):
        term, src = self._entry(self.cur, name)
        if name in self.written:
            self.checks.append((self.leaf, id(node), src, None))
        if term is None and name not in self.low.env:
            # no value before the nest: a tensor local bound in a loop over part of an axis,
            # predicated when the loop was widened (`t = (x + 1.0) if i < N - 1 else t`)
            raise NotFunctional(f"{name!r} may be read before it is assigned")
        return term if term is not None else self.low.before(name)

    def expand(self, name, t, idx):
        """A buffer private to enclosing loops (rewritten every iteration) read element-wise:
        the tensor of all its iterations' values, `for[outer, axes] body`, read at the current
        iteration. Its value is the same; but it is now a closed tensor the rules can make a
        kernel of (doitgen's `sum` becomes a batched matmul), not a term inside a loop."""
        entry = self.cur.get(name)
        if entry is None or not entry[1].free or t.op != "Ten.compute":
            return t, idx
        outer = [self.loopvar[id(f)] for f in entry[1].free if id(f) in self.loopvar]
        if len(outer) != len(entry[1].free):
            return t, idx
        fresh = {v: self.low.new_var(f"x{v.args[0]}_", n) for v, n in outer}  # binders stay unique
        body = _rename(t.args[1], fresh)
        axes = [(fresh[v], n) for v, n in outer] + T.unlist(t.args[0])
        return T.compute(axes, body), [T.iv(v) for v, _ in outer] + list(idx)

    def ctx(self) -> _Ctx:
        return _Ctx(self.low, {f.var: self.loopix[id(f)] for f in self.open}, self)

    # ---------------------------------------------------------------- statements
    def block(self, stmts):
        for s in stmts:
            if isinstance(s, For):
                self.loop(s)
                continue
            self.leaf = s
            if isinstance(s, Alloc):
                shape = self.low.shapes[s.name]
                self.cur[s.name] = (self.low.zeros(shape), Source(s, s.name, tuple(self.open)))
            elif isinstance(s, Assign):
                self.assign(s)
            elif isinstance(s, Store):
                self.store(s)

    def assign(self, s: Assign):
        ctx = self.ctx()
        if s.value.ty is not None:  # a tensor local: a fresh value every time
            shape = self.low.shapes[s.name]
            if s.aug:
                term, src = self._entry(self.cur, s.name)
                if s.name in self.written:
                    self.checks.append((s, "aug", src, None))
                old = term if term is not None else self.low.env[s.name]
                vs = [self.low.new_var("t", n) for n in shape]
                body = T.update(AUG[s.aug_op], _load(old, [T.iv(v) for v in vs]),
                               self.low.elem(s.value, [T.iv(v) for v in vs], ctx))
                term = T.compute(list(zip(vs, shape)), body)
            else:
                term = self.low.open_tensor(s.value, ctx)
            self.cur[s.name] = (term, Source(s, s.name, tuple(self.open)))
            return
        v = self.low.scalar(s.value, ctx)
        if s.aug:  # an update within one iteration: plain sequential code
            term, src = self._entry(self.scal, s.name)
            if s.name in self.written:
                self.checks.append((s, "aug", src, None))
            v = T.update(AUG[s.aug_op], term if term is not None else self.low.env[s.name], v)
        self.scal[s.name] = (v, Source(s, s.name, tuple(self.open)))

    def store(self, s: Store):
        ctx = self.ctx()
        idx, inner, val = self._value_at(s.buf, [self.low.ix(i, ctx.loopvars, s.loc) for i in s.idx], s.value, ctx)
        if s.aug:
            term, src = self._entry(self.cur, s.buf)
            if s.buf in self.written:
                self.checks.append((s, "aug", src, None))
            val = T.update(AUG[s.aug_op], _load(term if term is not None else self.low.env[s.buf], idx), val)
        self.define(s, s.buf, idx, inner, val)

    def _value_at(self, name: str, lead, e, ctx) -> tuple:
        """(the full index, the fresh axes, the value) of `e` stored into `name` at index
        `lead`: where `lead` leaves trailing axes (a row `c[i, :]`, a tensor local's whole,
        `lead` = []), `e` read element by element over fresh variables on them; else (a
        scalar: `lead` None) the scalar `e`."""
        shape = self.low.shapes.get(name, ()) if lead is not None else ()
        if lead is not None and len(lead) < len(shape):
            inner = [(self.low.new_var("e", n), n) for n in shape[len(lead):]]
            at = [T.iv(v) for v, _ in inner]
            return lead + at, inner, self.low.elem(e, at, ctx)
        return lead, [], self.low.scalar(e, ctx)

    def define(self, s, buf, idx, inner, val, loops=None):
        """buf[idx] = val for every value of the loops its index uses: a new tensor value.

        Loops the index does not use are ones the value is private to (`free`)."""
        shape = self.low.shapes[buf]
        loops = self.open if loops is None else loops
        by_ix = {self.loopix[id(f)]: f for f in loops}
        used = set()
        axes, split = [], False
        for pos, ix in enumerate(idx):
            parts = _split_index(ix)
            inner_hit = [(v, e) for v, e in inner if T.iv(v) is ix]
            if inner_hit:
                axes.append(inner_hit[0])
            elif ix in by_ix and ix.op == "Ix.v":
                f = by_ix.pop(ix)
                e = trip(f, self.low.dims)
                if e != shape[pos]:
                    raise NotFunctional(f"loop over {e} elements writes axis {pos} of {buf!r} of size {shape[pos]}")
                axes.append((ix.args[0], e))
                used.add(f)
            elif parts is not None and parts[0] in by_ix and parts[2] in by_ix and parts[0] is not parts[2]:
                outer, tile, inn = parts
                fo, fi = by_ix[outer], by_ix[inn]
                eo, ei = trip(fo, self.low.dims), trip(fi, self.low.dims)
                if ei != tile or eo * tile != shape[pos]:
                    raise NotFunctional(f"split loops {eo} x {ei} (tile {tile}) do not cover axis {pos} of {buf!r}")
                del by_ix[outer], by_ix[inn]
                axes += [(outer.args[0], eo), (inn.args[0], ei)]
                used |= {fo, fi}
                split = True
            else:
                raise NotFunctional(f"store into {buf!r} is not indexed by a plain loop variable on axis {pos}")
        for f in loops:
            if f not in used and f not in self.open:
                raise NotFunctional(f"store into {buf!r} repeats over loop {f.var!r}, which it does not index")
        t = T.compute(axes, val)
        t = Node("Ten.reshape", t, T.shp(shape)) if split else t
        free = tuple(f for f in self.open if f not in used)
        before = self.cur.get(buf)
        prev = before[1] if getattr(s, "guarded", False) and before is not None else None
        self.cur[buf] = (t, Source(s, buf, free, prev))

    # ---------------------------------------------------------------- loops
    def loop(self, f: For):
        if _carried(f, f.body):
            self.reduction(f)
            return
        self.enter(f)
        self.open.append(f)
        self.block(f.body)
        self.open.pop()
        self.close(f)

    def enter(self, f: For):
        """A variable for loop f over its values taken as a set (their order is the dataflow
        check's business): smallest + |step| * v for v < count."""
        sp = span(f, self.low.dims)
        if sp is None:
            raise NotFunctional(f"loop {f.var!r} has bounds that depend on an enclosing loop")
        first, n, stride = sp
        v = self.low.new_var(f.var, n)
        ix = T.iv(v) if stride == 1 else Node("Ix.scale", T.iv(v), stride)
        self.loopix[id(f)] = ix if first == 0 else Node("Ix.add", ix, T.ilit(first))
        self.loopvar[id(f)] = (v, n)
        return v, n

    def close(self, f):
        """After loop f, a value private to it is its last iteration's (as in Python): that is
        the value itself when it does not depend on f's variable (and f ran at all); else it
        is unusable here and the nest stays as written if anything reads it."""
        ix = self.loopix[id(f)]
        fvars = {x for x in T.walk(ix) if x.op == "Var.named"}
        for table in (self.cur, self.scal):
            for name, entry in table.items():
                if entry is None or f not in entry[1].free:
                    continue
                term, src = entry
                if trip(f, self.low.dims) > 0 and not fvars & T.free_vars(term):
                    table[name] = (term, Source(src.stmt, src.name, tuple(x for x in src.free if x is not f),
                                                src.prev))
                else:
                    table[name] = None

    def reduction(self, f: For):
        """Every carried accumulation under f becomes a reduction over f and its inner
        reduction loops; each is checked as a chain (each instance reads its predecessor)."""
        accs = {}
        _accumulations(f, f, accs)
        carried = _carried_targets(f, f.body)
        accs = {name: st for name, st in accs.items() if name in carried}
        before = {name: (self.cur if name in self.low.shapes else self.scal).get(name, (None, None))
                  for name in accs}
        for name, entry in before.items():
            if entry is None:
                raise NotFunctional(f"{name!r} is read after the loop it is private to")
        contrib: dict = {}
        self._reduce(f, [], accs, contrib)
        outer = list(self.open)
        for name, (s, op, red, term, idx, bound_loops, inner) in contrib.items():
            init_term, init_src = before[name]
            key = "aug" if s.aug else id(_accumulation(s)[2])
            self.checks.append((s, key, init_src, red))
            if name in self.low.shapes:
                init = _load(init_term if init_term is not None else self.low.env[name], idx)
                total = self._started(init, term) if op == "sum" else Node(f"Sc.{op}", init, term)
                self.define(s, name, idx, inner, total, loops=outer + bound_loops)
                src = self.cur[name][1]
                self.cur[name] = (self.cur[name][0], Source(s, name, tuple(x for x in src.free if x in outer),
                                                            init_src))
            else:
                init = init_term if init_term is not None else self.low.env[name]
                total = self._started(init, term) if op == "sum" else Node(f"Sc.{op}", init, term)
                self.scal[name] = (total, Source(s, name, tuple(outer), init_src))

    def _started(self, init: Node, term: Node) -> Node:
        """`init + term`, one sum where init is the sum's own first term (`eqsat/peel.py`);
        a guarded sum whose guard does not vary over its reductions, `init + sum[k](e if c
        else 0.0)` (`if c: for k: s += e`, or a store at a fixed index made total:
        `eqsat/ifconvert.py`), is `init + sum[k](e) if c else init`: where c fails nothing
        was added, and the value is init's own, -0.0 included (init + 0.0 is 0.0). So is a
        term guarded as a whole, `init + (e if c else 0.0)` (an accumulation into a fixed
        element made a store over every element: `if j == 1: y[0] += 1.0` in a loop over
        j is `c[e] + (sum[j](..) if e == 0 else 0.0)` over e): `init + e if c else init`."""
        if term.op == "Sc.select" and (term.args[3] is T.lit(0.0)) != (term.args[4] is T.lit(0.0)):
            cmp, l, r, a, b = term.args
            if b is T.lit(0.0):
                return T.select(cmp, l, r, self._started(init, a), init)
            return T.select(cmp, l, r, init, self._started(init, b))
        masked = _invariant_guard(term)
        if masked is not None:
            guards, whole = masked
            out = self._started(init, whole)
            for cmp, l, r, holds in reversed(guards):
                out = T.select(cmp, l, r, out, init) if holds else T.select(cmp, l, r, init, out)
            return out
        whole = absorb_first(init, term, lambda n: self.low.new_var("k", n), self.low.functional)
        return whole if whole is not None else T.binop("Sc.add", init, term)

    def _reduce(self, s, red: list, accs, contrib, bound=()):
        if isinstance(s, For):
            v, ext = self.enter(s)
            uses = [s.var in _idx_names(st.idx) if isinstance(st, Store) else False
                    for st in accs.values() if _encloses(s, st)]
            indexes = bool(uses) and all(uses)
            if any(uses) and not indexes:
                raise NotFunctional(f"loop {s.var!r} indexes some accumulations and reduces others")
            self.open.append(s)
            for b in s.body:
                if indexes:
                    self._reduce(b, red, accs, contrib, bound + (s,))
                else:
                    self._reduce(b, red + [(s, v, ext)], accs, contrib, bound)
            self.open.pop()
            self.close(s)
            return
        self.leaf = s
        ctx = self.ctx()
        target = s.buf if isinstance(s, Store) else getattr(s, "name", None)
        if target in accs and accs[target] is s:
            op, e, _ = ("sum", s.value, None) if s.aug else _accumulation(s)  # (`acc = max(acc, e)`, `y[i] = max(y[i], e)`)
            # into an element, a row accumulated whole (`c[i, :] += a[i, k] * b[k, :]`), a
            # tensor local accumulated whole (`row += a[i, k] * b[k]`), or a scalar
            lead = [self.low.ix(i, ctx.loopvars, s.loc) for i in s.idx] if isinstance(s, Store) else \
                [] if s.value.ty is not None else None
            idx, inner, body = self._value_at(target, lead, e, ctx)
            contrib[target] = (s, op, [f for f, _, _ in red], _wrap(op, [(v, x) for _, v, x in red], body),
                               idx, list(bound), inner)
            return
        if isinstance(s, Store):
            raise NotFunctional(f"a store into {s.buf!r} inside the reduction loop is not an accumulation")
        if isinstance(s, Alloc) or (isinstance(s, Assign) and s.value.ty is not None):
            raise NotFunctional("a tensor allocated or assigned inside a reduction loop")
        if s.aug or _accumulation(s) is not None:
            cur = self.scal.get(s.name)
            if cur is None or cur[1].free != tuple(self.open):
                raise NotFunctional(f"{s.name!r} is updated inside a reduction loop it is not reduced over")
            # set earlier in this same iteration (`v = x[i, j]` then `v = max(v, -1.0)`): an
            # update of a private value, read from that assignment (a claim isl checks; an
            # augmented update's read is the statement's own "aug" read, as in `assign`)
            if s.aug:
                term, src = self._entry(self.scal, s.name)
                if s.name in self.written:
                    self.checks.append((s, "aug", src, None))
                value = T.update(AUG[s.aug_op], term, self.low.scalar(s.value, ctx))
            else:
                value = self.low.scalar(s.value, ctx)
            self.scal[s.name] = (value, Source(s, s.name, tuple(self.open)))
            return
        self.scal[s.name] = (self.low.scalar(s.value, ctx), Source(s, s.name, tuple(self.open)))


def _hoist_closed(t: Node) -> Node:
    """Reductions in scalar term `t` that read no index variable bound outside them (a dot
    product of two vectors, `s = u @ v` then `A * s`, or `A * (u @ v)`) as a 0-d tensor
    read where they stood: computed once, as Python computes them, not once for every
    element of the computation around them (a probe: Sherman-Morrison's rank-one update
    was one kernel recomputing the dot product per element, N^3, 556x numpy). Tensors inside
    `t` are left as they are."""
    memo: dict = {}

    def go(n: Node) -> Node:
        got = memo.get(n)
        if got is not None:
            return got
        if n.op == "Sc.red" and not T.free_vars(n):
            out = T.load(T.compute([], n), [])
        elif n.sort != "Sc":
            out = n
        else:
            args = tuple(go(a) if isinstance(a, Node) else a for a in n.args)
            out = n if all(x is y for x, y in zip(args, n.args)) else Node(n.op, *args)
        memo[n] = out
        return out

    return go(t)


def _rename(term: Node, new: dict) -> Node:
    """`term` with index variables renamed (old Var -> new Var); binders are unique, so
    nothing is captured."""
    return T.rebuild(term, new.get)


def _encloses(f: For, s) -> bool:
    if f is s:
        return True
    return any(_encloses(b, s) for b in f.body if isinstance(b, For)) or any(b is s for b in f.body)


def _is_acc(s) -> bool:
    """A sum (`+=`) or builtin max/min accumulation (into a scalar, an element, a row of
    a buffer or a tensor local, `row += a[i, k] * b[k]`): what a reduction loop may hold."""
    return isinstance(s, (Store, Assign)) and (s.aug and s.aug_op == "+" or _accumulation(s) is not None)


def _carried(f: For, body) -> bool:
    return bool(_carried_targets(f, body))


def _carried_targets(f: For, body) -> set:
    """Targets of accumulations under f that add to a value living across f's iterations:
    a scalar not assigned earlier in f's body, or an element whose index does not use f.
    An element is named by its index with the variables of loops inside f's body read as
    the ranges they run over, so `for z in range(N): row[z] = 0.0` sets what `for j in
    range(N): row[j] += ...` then accumulates into (a reset the user or a slice store
    wrote under another variable's name)."""
    plain: set = set()
    out: set = set()

    def go(stmts, ranges):
        for s in stmts:
            if isinstance(s, For):
                inner = dict(ranges)
                inner.pop(s.var, None)
                if not (ie_names(s.lo) | ie_names(s.hi)) & set(ranges):  # (a range fixed in f's iteration)
                    inner[s.var] = ("range", s.lo, s.hi, s.step)
                go(s.body, inner)
            elif _is_acc(s):
                if isinstance(s, Store):
                    if f.var not in _idx_names(s.idx) and s.buf not in plain and \
                            (s.buf, _ranged(s.idx, ranges)) not in plain:
                        out.add(s.buf)
                elif s.name not in plain:
                    out.add(s.name)
            elif isinstance(s, (Assign, Alloc)):
                plain.add(s.name)
            elif isinstance(s, Store):  # an element set before it is accumulated into
                plain.add((s.buf, _ranged(s.idx, ranges)))

    go(body, {})
    return out


def _ranged(idx, ranges: dict) -> tuple:
    """An index with each inner loop's variable replaced by the range it runs over."""
    def sub(e):
        if e[0] == "name":
            return ranges.get(e[1], e)
        if e[0] == "int":
            return e
        return (e[0], *(sub(c) if isinstance(c, tuple) else c for c in e[1:]))
    return tuple(sub(e) for e in idx)


def _accumulations(f: For, s, out: dict):
    """target -> its one accumulation statement under f (several updates: not a reduction)."""
    if isinstance(s, For):
        for b in s.body:
            _accumulations(f, b, out)
        return
    if _is_acc(s):
        name = s.buf if isinstance(s, Store) else s.name
        if name in out:
            raise NotFunctional(f"{name!r} is updated by several statements in loop {f.var!r}")
        out[name] = s


def _ix_vars(ix: Node) -> set:
    return {x.args[0] for x in T.walk(ix) if x.op == "Ix.v"}


def _split_index(ix: Node):
    """`outer * T + inner` as (Ix outer, T, Ix inner), else None."""
    if ix.op != "Ix.add":
        return None
    a, b = ix.args
    for s, v in ((a, b), (b, a)):
        if s.op == "Ix.scale" and s.args[0].op == "Ix.v" and v.op == "Ix.v":
            return s.args[0], s.args[1], v
    return None


def _load(t: Node, idx) -> Node:
    """A load, folded to the constant when `t` is a constant-filled buffer (zeros, empty),
    and substituted when `t` is an open computation (a buffer private to an enclosing loop:
    its body mentions that loop's variable). An open tensor never enters the e-graph,
    whose rules take every computation for a closed one."""
    if t.op == "Ten.compute" and t.args[1].op == "Sc.lit":
        return t.args[1]
    if t.op == "Ten.compute" and T.free_vars(t):
        dims = T.unlist(t.args[0])
        if len(dims) == len(idx):
            return T.substitute(t.args[1], {v: ix for (v, _), ix in zip(dims, idx)})
    return T.load(t, idx)


def _python_int(node, ints) -> bool:
    """Whether expression source `node` is a Python int as Python computes it: int literals,
    sizes and integer parameters (`ints`), `len(x)`, `x.shape[k]`, and + - * // % of those."""
    if isinstance(node, ast.Constant):
        return type(node.value) is int
    if isinstance(node, ast.Name):
        return node.id in ints
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return _python_int(node.operand, ints)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod)):
        return _python_int(node.left, ints) and _python_int(node.right, ints)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len" and \
            len(node.args) == 1 and not node.keywords:
        return True
    return isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and \
        node.value.attr == "shape" and isinstance(node.slice, ast.Constant) and type(node.slice.value) is int


def _has_power(e) -> bool:
    return isinstance(e, Bin) and (e.op == "**" or _has_power(e.a) or _has_power(e.b))


def _operands(e) -> list:
    """The tensor operands an elementwise expression combines (through arithmetic and calls)."""
    if isinstance(e, Bin):
        return _operands(e.a) + _operands(e.b)
    if isinstance(e, Call):
        return [x for a in e.args for x in _operands(a)]
    return [e] if e.ty is not None else []


def _with_vector(e) -> bool:
    """`@` with an operand of rank 1."""
    return len(e.a.ty) == 1 or len(e.b.ty) == 1


def _closed(t: Node, name: str) -> Node:
    if t.op == "Ten.compute" and T.free_vars(t):
        raise NotFunctional(f"{name!r}, private to an enclosing loop, is read whole by a library call")
    return t


def _invariant_guard(term: Node):
    """For a sum `sum[k..](e if c1 else 0.0)` (or `0.0 if c1 else e`, and guards nested in
    e alike: `(e if c2 else 0.0) if c1 else 0.0`, a store at a fixed index made total inside
    an `if`) where some conditions read none of the variables its reductions bind: ([(cmp,
    l, r, whether e is taken where it holds)] of those, outermost first, `sum[k..](e)` with
    the other guards kept around e); None where no guard is so."""
    reds, body = [], term
    while body.op == "Sc.red" and body.args[0] == "sum":
        reds.append(body)
        body = body.args[3]
    if not reds:
        return None
    zero = T.lit(0.0)
    bound = {x.args[1] for x in reds}
    outside, inside = [], []  # guards that do not vary over the reductions / that do
    while body.op == "Sc.select" and (body.args[3] is zero) != (body.args[4] is zero):
        cmp, l, r, a, b = body.args
        varies = not (bound.isdisjoint(T.free_vars(l)) and bound.isdisjoint(T.free_vars(r)))
        (inside if varies else outside).append((cmp, l, r, a is not zero))
        body = b if a is zero else a
    if not outside:
        return None
    for cmp, l, r, holds in reversed(inside):
        body = T.select(cmp, l, r, body, zero) if holds else T.select(cmp, l, r, zero, body)
    for x in reversed(reds):
        body = Node("Sc.red", "sum", x.args[1], x.args[2], body)
    return outside, body


def _wrap(op, red, body):
    for v, ext in reversed(red):
        body = Node("Sc.red", op, v, ext, body)
    return body


clock = time.perf_counter  # what the deadlines are read against
# What the rest of optimize() takes (measured on the 200-layer loop chain,
# bench/stress_bench.py cases 4a and 4b): building, three rounds and extracting a lifted
# layer took 1.3-2x its lowering time; a layer kept as written ~1.5 ms; and whatever the
# program, ~80 ms (pushing and popping the prepared e-graph, three rounds' calls into
# egglog, the extraction's own passes)
AFTER_LIFTED, KEPT_SECONDS, AFTER_FIXED = 2.0, 1.5e-3, 0.08


def _groupable(s) -> bool:
    """Whether top-level statement `s` may run as written inside a block of statements kept
    together (`_block`): a loop, an `if`, or an element store, with its source and no view."""
    return (isinstance(s, (For, If)) or isinstance(s, Store) and s.value.ty is None) and \
        getattr(s, "node", None) is not None and not getattr(s, "views", None)


def _block(stmts: list, var: str) -> For:
    """Statements as one nest: `for var in range(1):` around them (what a nest kept as
    written runs: their own source)."""
    node = ast.For(target=ast.Name(id=var, ctx=ast.Store()),
                   iter=ast.Call(func=ast.Name(id="range", ctx=ast.Load()), args=[ast.Constant(1)], keywords=[]),
                   body=[x.node for x in stmts], orelse=[])
    ast.fix_missing_locations(ast.copy_location(node, stmts[0].node))
    return For(stmts[0].loc, var, ("int", 0), ("int", 1), list(stmts), node=node)


def lift_next(now: float, finish: float, times: list, left: int) -> bool:
    """Whether to analyse the next top-level nest, `left` more after it, given the lowering
    times of the nests lifted so far: yes while lowering it, then building, rewriting and
    extracting it and the nests lifted before (`AFTER_LIFTED` times their lowering each),
    the rest kept as written and what every call takes (`AFTER_FIXED`) is predicted to end
    by `finish`. A nest's lowering time is the median of the last five lifted (the first of
    a program can pay for caches the rest find filled)."""
    recent = sorted(times[-5:])
    a = recent[len(recent) // 2] if recent else 0.0
    return now + a + AFTER_LIFTED * a * (len(times) + 1) + KEPT_SECONDS * left + AFTER_FIXED <= finish


KEPT_FOR_TIME = "not analysed: lifting it was predicted to pass the time limit (Limits.seconds)"
ABANDONED_FOR_TIME = "analysis abandoned: it ran past its share of the time limit (Limits.seconds)"
# isl's operations a second on this project's 2-core VM (a 600-statement loop body's flow
# problem: 16M operations in 1.8 s; in the VM's slower hours 2.8 s, when a quota lands up to
# 1.6x later than meant); it turns the time left into isl's operation quota. Lower, the
# 600-statement body at Limits(seconds=5) was abandoned after 3 s where it finishes in 2.9
ISL_OPS_PER_SECOND = 8e6


def lower(prog, dims: dict, finish: float | None = None, abandon: float | None = None,
          keep: frozenset = frozenset(), out_of_time_from: int | None = None) -> Lowered:
    """The program's terms. `finish` and `abandon` are `time.perf_counter()` values: from
    the first top-level nest whose lifting is predicted to make optimize() end past `finish`
    (`lift_next`), nests are kept as written without analysis, and a nest whose analysis
    runs past `abandon` (isl's operations bounded by the time left) is kept as written too;
    both are sound, a nest as written being the program's own code. `keep`: nest ids kept
    as written without analysis, and `out_of_time_from` the top-level statement from which
    every nest is (to lower a program again exactly as an earlier call did:
    `Lowered.kept_for_time`, `Lowered.out_of_time_from`)."""
    check_bounds(prog, dims)
    return _Lowerer(prog, dims, finish, abandon, keep, out_of_time_from).run()
