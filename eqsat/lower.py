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
from dataclasses import dataclass, field
from itertools import count

from . import terms as T
from .errors import ProgramError
from .ir import Alloc, Assign, Bin, Call, Const, For, Index, MatMul, Ref, Store, Transpose, ie_affine, ie_eval
from .terms import Node


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
    code: object = None
    out_shapes: dict = field(default_factory=dict)  # output name -> shape (() for a scalar)


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


class _Lowerer:
    def __init__(self, prog, dims: dict):
        self.prog = prog
        self.dims = dims
        self.env: dict[str, Node] = {}
        self.shapes: dict[str, tuple] = {}  # tensor name -> concrete shape
        self.unions: list = []
        self.nests: dict = {}
        self.fresh = count()
        self.var_extent: dict = {}

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
        v = T.var(f"{base}{next(self.fresh)}")
        self.var_extent[v] = extent
        return v

    def zeros(self, shape) -> Node:
        vs = [self.new_var("z", n) for n in shape]
        return T.compute(list(zip(vs, shape)), T.lit(0.0))

    # ------------------------------------------------------------ program
    def run(self) -> Lowered:
        for p in self.prog.params:
            if p.shape is None:
                self.env[p.name] = Node("Sc.param", p.name)
            else:
                self.shapes[p.name] = tuple(ie_eval(("name", d) if isinstance(d, str) else ("int", d), self.dims)
                                            for d in p.shape)
                self.env[p.name] = Node("Ten.input", p.name)
        for s in self.prog.body:
            self.top(s)
        roots, scal = [], []
        for r in self.prog.returns:
            if r.ty is None:
                roots.append(T.compute([], self.scalar_top(r)))
                scal.append(True)
            else:
                roots.append(self.tensor(r))
                scal.append(False)
        return Lowered(roots, scal, self.unions, self.nests, dict(self.shapes),
                       [p.name for p in self.prog.params if p.shape is None], self.var_extent,
                       dict(self.shapes))

    def top(self, s):
        if isinstance(s, Alloc):
            shape = self.shape_of(s.shape, s.loc)
            self.shapes[s.name] = shape
            self.env[s.name] = self.zeros(shape)
        elif isinstance(s, Assign):
            if s.value.ty is None:
                v = self.scalar_top(s.value)
                self.env[s.name] = T.binop("Sc.add", self.env[s.name], v) if s.aug else v
            else:
                v = self.tensor(s.value)
                if s.aug:
                    v = self.tensor(Bin(s.loc, "+", Ref(s.loc, s.name, ty=s.value.ty), s.value, ty=s.value.ty))
                self.shapes[s.name] = self.shape_of(s.value.ty, s.loc)
                self.env[s.name] = v
        else:
            self.nest(s)

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
        if isinstance(e, MatMul):
            return Node("Ten.matmul", self.tensor(e.a), self.tensor(e.b))
        if isinstance(e, Transpose):
            return Node("Ten.transpose", self.tensor(e.x), " ".join(map(str, e.perm)))
        shape = self.shape_of(e.ty, e.loc)
        vs = [self.new_var("t", n) for n in shape]
        body = self.elem(e, [T.iv(v) for v in vs], _Ctx(self, {}, None))
        return T.compute(list(zip(vs, shape)), body)

    def scalar_top(self, e) -> Node:
        return self.scalar(e, _Ctx(self, {}, None))

    # ------------------------------------------------------------ element-level expressions
    def ix(self, ie, loopvars: dict, loc) -> Node:
        """An index IExpr as an Ix term; `loopvars` maps loop names to their Ix."""
        coef, const = ie_affine(ie, self.dims, loc)
        parts = []
        for name, c in sorted(coef.items()):
            if name not in loopvars:
                raise ProgramError(f"{name!r} is not a loop variable in scope", loc)
            x = loopvars[name]
            parts.append(x if c == 1 else Node("Ix.scale", x, c))
        if const or not parts:
            parts.append(T.ilit(const))
        out = parts[0]
        for p in parts[1:]:
            out = Node("Ix.add", out, p)
        return out

    def scalar(self, e, ctx: "_Ctx") -> Node:
        if isinstance(e, Const):
            return T.lit(e.value)
        if isinstance(e, Ref):
            return ctx.read_scalar(e.name, e.loc)
        if isinstance(e, Index):
            return ctx.load(e.base, [self.ix(i, ctx.loopvars, e.loc) for i in e.idx], e.loc)
        if isinstance(e, Bin):
            op = {"+": "Sc.add", "-": "Sc.sub", "*": "Sc.mul", "/": "Sc.div"}[e.op]
            return T.binop(op, self.scalar(e.a, ctx), self.scalar(e.b, ctx))
        if isinstance(e, Call):
            args = [self.scalar(a, ctx) for a in e.args]
            if e.fn in ("max", "min"):
                return Node(f"Sc.{e.fn}", *args)
            return Node("Sc.fn", e.fn, args[0])
        raise NotFunctional(f"unexpected scalar expression {type(e).__name__}")

    def elem(self, e, idx: list, ctx: "_Ctx") -> Node:
        """Element `idx` of tensor expression `e` (broadcasting from the right)."""
        if e.ty is None:
            return self.scalar(e, ctx)
        rank = len(e.ty)
        my = idx[len(idx) - rank:]
        shape = self.shape_of(e.ty, e.loc)
        if isinstance(e, Ref):
            return ctx.load(e.name, [i if n != 1 else T.ilit(0) for i, n in zip(my, shape)], e.loc)
        if isinstance(e, Index):
            lead = [self.ix(i, ctx.loopvars, e.loc) for i in e.idx]
            return ctx.load(e.base, lead + [i if n != 1 else T.ilit(0) for i, n in zip(my, shape)], e.loc)
        if isinstance(e, Transpose):
            inv = [None] * rank
            for out_axis, in_axis in enumerate(e.perm):
                inv[in_axis] = my[out_axis]
            return self.elem(e.x, inv, ctx)
        if isinstance(e, Bin):
            op = {"+": "Sc.add", "-": "Sc.sub", "*": "Sc.mul", "/": "Sc.div"}[e.op]
            return T.binop(op, self.elem(e.a, my, ctx), self.elem(e.b, my, ctx))
        if isinstance(e, Call):
            args = [self.elem(a, my, ctx) for a in e.args]
            if e.fn in ("max", "min"):
                return Node(f"Sc.{e.fn}", *args)
            return Node("Sc.fn", e.fn, args[0])
        if isinstance(e, MatMul):
            t = self.open_tensor(e, ctx)
            return T.load(t, [i if n != 1 else T.ilit(0) for i, n in zip(my, shape)])
        raise NotFunctional(f"unexpected tensor expression {type(e).__name__}")

    def open_tensor(self, e, ctx: "_Ctx") -> Node:
        """A tensor term that may mention loop variables (a library call inside a loop)."""
        if isinstance(e, Ref):
            ctx.check_whole_read(e.name, e.loc)
            return ctx.tensor_value(e.name)
        if isinstance(e, Index):
            ctx.check_whole_read(e.base, e.loc)
            t = ctx.tensor_value(e.base)
            for i in e.idx:
                t = Node("Ten.slice", t, self.ix(i, ctx.loopvars, e.loc))
            return t
        if isinstance(e, MatMul):
            return Node("Ten.matmul", self.open_tensor(e.a, ctx), self.open_tensor(e.b, ctx))
        if isinstance(e, Transpose):
            return Node("Ten.transpose", self.open_tensor(e.x, ctx), " ".join(map(str, e.perm)))
        if not ctx.loopvars:
            return self.tensor(e)
        raise NotFunctional("an elementwise tensor expression feeding a library call inside a loop")

    # ------------------------------------------------------------ nests
    def nest(self, s):
        nid = len(self.nests)
        reads, writes, swrites = set(), set(), set()
        _scan(s, reads, writes, swrites, set())
        tensor_in = sorted(n for n in reads | writes if n in self.shapes)
        scalar_in = sorted(n for n in reads | swrites if n in self.env and n not in self.shapes)
        outputs = sorted(writes) + sorted(swrites)
        code = compile(ast.fix_missing_locations(ast.Module(body=[s.node], type_ignores=[])),
                       self.prog.file, "exec")
        nest = Nest(nid, s, tensor_in, scalar_in, outputs, set(swrites), _work(s, self.dims), code=code,
                    out_shapes={n: self.shapes.get(n, ()) if n not in swrites else () for n in outputs})
        self.nests[nid] = nest
        tin = T.tens([self.env[n] for n in tensor_in])
        sin = T.scs([self.env[n] for n in scalar_in])
        opaque = {n: Node("Ten.opaque", nid, n, tin, sin) for n in outputs}
        functional = None
        try:
            functional = _NestRun(self, s).run()
        except NotFunctional as why:
            nest.reason = str(why)
        for n in outputs:
            if n in swrites:
                self.env[n] = T.load(opaque[n], [])
                if functional is not None and functional.get(n) is not None:
                    self.unions.append((opaque[n], T.compute([], functional[n])))
            else:
                self.env[n] = opaque[n]
                if functional is not None:
                    self.unions.append((opaque[n], functional[n]))


def _scan(s, reads, writes, swrites, local):
    """Names a statement reads and writes (buffers/tensors in writes, scalars in swrites)."""
    def expr(e):
        if isinstance(e, Ref):
            reads.add(e.name)
        elif isinstance(e, Index):
            reads.add(e.base)
        for f in ("a", "b", "x"):
            if hasattr(e, f):
                expr(getattr(e, f))
        for a in getattr(e, "args", ()):
            expr(a)

    if isinstance(s, For):
        for b in s.body:
            _scan(b, reads, writes, swrites, local)
    elif isinstance(s, Store):
        expr(s.value)
        writes.add(s.buf)
    elif isinstance(s, Assign):
        expr(s.value)
        if s.aug:
            reads.add(s.name)
        swrites.add(s.name)


def _work(s, dims, iters=1) -> dict:
    """Modeled work of a nest run as written: scalar ops and bytes, library flops and calls."""
    w = {"ops": 0, "bytes": 0, "lib_flops": 0, "lib_calls": 0}

    def expr_ops(e):
        n = 1
        for f in ("a", "b", "x"):
            if hasattr(e, f):
                n += expr_ops(getattr(e, f))
        for a in getattr(e, "args", ()):
            n += expr_ops(a)
        return n

    def lib(e):
        if isinstance(e, MatMul):
            sa = [ie_eval(d, dims) for d in e.a.ty]
            sb = [ie_eval(d, dims) for d in e.b.ty]
            batch = max(sa[0] if len(sa) == 3 else 1, sb[0] if len(sb) == 3 else 1)
            return 2 * batch * sa[-2] * sa[-1] * sb[-1] + lib(e.a) + lib(e.b)
        out = 0
        for f in ("a", "b", "x"):
            if hasattr(e, f):
                out += lib(getattr(e, f))
        return out

    def go(s, iters):
        if isinstance(s, For):
            n = max(0, ie_eval(s.hi, dims) - ie_eval(s.lo, dims))
            for b in s.body:
                go(b, iters * n)
            return
        e = s.value
        w["ops"] += iters * expr_ops(e)
        w["bytes"] += iters * 4 * (1 + expr_ops(e))
        f = lib(e)
        if f:
            w["lib_flops"] += iters * f
            w["lib_calls"] += iters

    go(s, iters)
    return w


class _Ctx:
    """Where an element-level expression is evaluated: loop variables and the nest's state."""

    def __init__(self, low: _Lowerer, loopvars: dict, run: "_NestRun | None", path=()):
        self.low = low
        self.loopvars = loopvars  # loop name -> Ix term
        self.run = run
        self.path = path  # enclosing loops (ir.For objects), outermost first

    def tensor_value(self, name):
        return self.run.cur[name] if self.run and name in self.run.cur else self.low.env[name]

    def read_scalar(self, name, loc):
        if self.run is not None:
            return self.run.read_scalar(name)
        return self.low.env[name]

    def check_whole_read(self, name, loc):
        if self.run is not None and name in self.run.written:
            raise NotFunctional(f"{name!r} is read whole while the nest writes it")

    def load(self, name, idx: list, loc) -> Node:
        if self.run is not None:
            self.run.check_read(name, idx, self.path)
        return _load(self.tensor_value(name), idx)


class _NestRun:
    """Symbolic execution of one nest (see the module docstring)."""

    def __init__(self, low: _Lowerer, stmt):
        self.low = low
        self.stmt = stmt
        self.cur: dict = {}  # buffer -> current Ten term
        self.scal: dict = {}  # scalar -> Sc term (None: not usable after its loop)
        self.written: dict = {}  # buffer -> list of (path, [Ix]) of every store in the nest
        self.accumulating: set = set()  # targets of the reduction loop being lowered
        self.loopix: dict = {}  # id(For) -> Ix of its variable
        _collect_writes(stmt, (), self.written, self)

    def run(self) -> dict:
        if isinstance(self.stmt, Store):
            raise NotFunctional("a store outside any loop (a single element) stays as written")
        self.block([self.stmt], [], ())
        out = dict(self.cur)
        for n, v in self.scal.items():
            out[n] = v
        return out

    # ---------------------------------------------------------------- state
    def read_scalar(self, name):
        if name in self.accumulating:
            raise NotFunctional(f"{name!r} is read inside the loop that accumulates it")
        if name in self.scal:
            v = self.scal[name]
            if v is None:
                raise NotFunctional(f"{name!r} is read after the loop that assigns it")
            return v
        return self.low.env[name]

    def check_read(self, name, idx: list, path):
        if name in self.accumulating:
            raise NotFunctional(f"{name!r} is read inside the loop that accumulates into it")
        for wpath, widx in self.written.get(name, ()):
            shared = 0
            while shared < min(len(wpath), len(path)) and wpath[shared] is path[shared]:
                shared += 1
            shared_vars = set()
            for f in wpath[:shared]:
                shared_vars |= _ix_vars(self.loopix[id(f)])
            if len(widx) != len(idx):
                raise NotFunctional(f"{name!r} is read whole or sliced while written element-wise")
            for w, r in zip(widx, idx):
                if w is not None and _ix_vars(w) & shared_vars and w is not r:
                    raise NotFunctional(f"{name!r} is read at an element another iteration writes "
                                        "(a loop-carried dependence)")

    # ---------------------------------------------------------------- statements
    def block(self, stmts, spatial: list, path):
        for s in stmts:
            if isinstance(s, Assign):
                ctx = self.ctx(path)
                v = self.low.scalar(s.value, ctx)
                if s.aug:
                    v = T.binop("Sc.add", self.read_scalar(s.name), v)
                self.scal[s.name] = v
            elif isinstance(s, Store):
                self.store(s, spatial, path)
            elif isinstance(s, For):
                self.loop(s, spatial, path)

    def ctx(self, path) -> _Ctx:
        return _Ctx(self.low, {f.var: self.loopix[id(f)] for f in path}, self, path)

    def loop(self, f: For, spatial, path):
        stores, accs, plain = [], [], set()
        _classify(f.body, stores, accs, plain, set())
        uses = [f.var in _idx_names(st.idx) for st in stores]
        lo = ie_eval(f.lo, self.low.dims)
        hi = ie_eval(f.hi, self.low.dims)
        ext = max(0, hi - lo)
        outer_scalar_accs = [a for a in accs if a not in plain]
        if stores and all(uses) and not outer_scalar_accs:
            if lo != 0:
                raise NotFunctional(f"loop {f.var!r} writes a partial range ({lo}..{hi})")
            v = self.low.new_var(f.var, ext)
            self.loopix[id(f)] = T.iv(v)
            self.block(f.body, spatial + [(f, v, ext)], path + (f,))
            for name in plain:
                self.scal[name] = None  # per-iteration local: meaningless after the loop
            return
        if any(uses):
            raise NotFunctional(f"loop {f.var!r} both indexes some stores and repeats others")
        if any(not st.aug for st in stores):
            raise NotFunctional(f"loop {f.var!r} overwrites the same element on every iteration "
                                "(only the last write survives)")
        if not stores and not outer_scalar_accs:
            if plain:
                raise NotFunctional(f"loop {f.var!r} assigns {', '.join(sorted(plain))} on every iteration "
                                    "(only the last value survives)")
            return  # a loop with no effect outside itself
        self.reduction(f, spatial, path)

    def store(self, s: Store, spatial, path):
        ctx = self.ctx(path)
        shape = self.low.shapes[s.buf]
        idx = [self.low.ix(i, ctx.loopvars, s.loc) for i in s.idx]
        inner = []
        if len(idx) < len(shape):  # a whole-tensor store into a slice
            inner = [(self.low.new_var("e", n), n) for n in shape[len(idx):]]
            idx = idx + [T.iv(v) for v, _ in inner]
            val = self.low.elem(s.value, [T.iv(v) for v, _ in inner], ctx)
        else:
            val = self.low.scalar(s.value, ctx)
        if s.aug:
            val = T.binop("Sc.add", ctx.load(s.buf, idx, s.loc), val)
        bound = [(v, e) for _, v, e in spatial] + inner
        self.define(s.buf, idx, bound, val)

    def define(self, buf, idx, bound, val):
        """buf[idx] = val for every value of the bound variables: a new tensor value."""
        shape = self.low.shapes[buf]
        by_ix = {T.iv(v): (v, e) for v, e in bound}
        axes, split = [], False
        for pos, ix in enumerate(idx):
            parts = _split_index(ix)
            if ix in by_ix:
                v, e = by_ix.pop(ix)
                if e != shape[pos]:
                    raise NotFunctional(f"loop over {e} elements writes axis {pos} of {buf!r} of size {shape[pos]}")
                axes.append((v, e))
            elif parts is not None and parts[0] in by_ix and parts[2] in by_ix and parts[0] is not parts[2]:
                # a loop split in tiles: axis = outer * T + inner, over full ranges
                outer, tile, inner = parts
                (vo, eo), (vi, ei) = by_ix[outer], by_ix[inner]
                if ei != tile or eo * tile != shape[pos]:
                    raise NotFunctional(f"split loops {eo} x {ei} (tile {tile}) do not cover axis {pos} of {buf!r}")
                del by_ix[outer], by_ix[inner]
                axes += [(vo, eo), (vi, ei)]
                split = True
            else:
                raise NotFunctional(f"store into {buf!r} is not indexed by a plain loop variable on axis {pos}")
        if by_ix:
            raise NotFunctional(f"store into {buf!r} repeats over a loop it does not index")
        t = T.compute(axes, val)
        self.cur[buf] = Node("Ten.reshape", t, T.shp(shape)) if split else t

    def reduction(self, f: For, spatial, path):
        """Lower an accumulation loop: every contribution becomes a reduction."""
        targets = set()
        _targets(f, targets)
        self.accumulating |= targets
        contrib: dict = {}  # target -> (kind, idx, bound, [terms])
        stores, accs, plain = [], [], set()
        _classify([f], stores, accs, plain, set())
        self._reduce(f, spatial, path, [], {}, contrib)
        self.accumulating -= targets
        for name in plain:
            self.scal[name] = None  # per-iteration temporaries mean nothing after the loop
        for name, (kind, idx, bound, parts) in contrib.items():
            if kind == "buf":
                total = _load(self.cur.get(name, self.low.env[name]), idx)
                for p in parts:
                    total = T.binop("Sc.add", total, p)
                self.define(name, idx, bound, total)
            else:
                total = self.read_scalar(name)
                for op, p in parts:
                    total = T.binop("Sc.add", total, p) if op == "sum" else Node(f"Sc.{op}", total, p)
                self.scal[name] = total

    def _reduce(self, s, spatial, path, red: list, locals_: dict, contrib):
        if isinstance(s, For):
            lo = ie_eval(s.lo, self.low.dims)
            ext = max(0, ie_eval(s.hi, self.low.dims) - lo)
            stores, accs, plain = [], [], set()
            _classify(s.body, stores, accs, plain, set())
            v = self.low.new_var(s.var, ext)
            ix = T.iv(v) if lo == 0 else Node("Ix.add", T.iv(v), T.ilit(lo))
            self.loopix[id(s)] = ix
            indexes = any(s.var in _idx_names(st.idx) for st in stores)
            if indexes:
                if lo != 0 or not all(s.var in _idx_names(st.idx) for st in stores) or accs:
                    raise NotFunctional(f"loop {s.var!r} inside a reduction mixes kinds")
                spatial = spatial + [(s, v, ext)]
            else:
                red = red + [(v, ext)]
            for b in s.body:
                self._reduce(b, spatial, path + (s,), red, locals_, contrib)
            return
        ctx = self.ctx(path)
        if isinstance(s, Assign):
            if not s.aug and _max_min(s) is None:
                if s.name in self.accumulating:
                    raise NotFunctional(f"{s.name!r} is both assigned and accumulated in one loop")
                self.scal[s.name] = self.low.scalar(s.value, ctx)
                return
            op, e = ("sum", s.value) if s.aug else _max_min(s)
            body = self.low.scalar(e, ctx)
            term = _wrap(op, red, body)
            kind = contrib.setdefault(s.name, ("scalar", None, None, []))
            kind[3].append((op, term))
            return
        if isinstance(s, Store):
            if not s.aug:
                raise NotFunctional(f"plain store into {s.buf!r} inside a reduction loop")
            shape = self.low.shapes[s.buf]
            if len(s.idx) != len(shape):
                raise NotFunctional("a whole-tensor accumulation inside a reduction loop")
            idx = [self.low.ix(i, ctx.loopvars, s.loc) for i in s.idx]
            body = self.low.scalar(s.value, ctx)
            bound = [(v, e) for _, v, e in spatial]
            prev = contrib.get(s.buf)
            if prev is not None and (prev[1] != idx or prev[2] != bound):
                raise NotFunctional(f"{s.buf!r} is accumulated at different elements in one loop")
            entry = contrib.setdefault(s.buf, ("buf", idx, bound, []))
            entry[3].append(_wrap("sum", red, body))


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
    """A load, folded to the constant when `t` is a constant-filled buffer (zeros, empty)."""
    if t.op == "Ten.compute" and t.args[1].op == "Sc.lit":
        return t.args[1]
    return T.load(t, idx)


def _wrap(op, red, body):
    for v, ext in reversed(red):
        body = Node("Sc.red", op, v, ext, body)
    return body


def _max_min(s: Assign):
    """`s = max(s, e)` -> ("max", e) (either argument order); else None."""
    v = s.value
    if isinstance(v, Call) and v.fn in ("max", "min") and len(v.args) == 2:
        a, b = v.args
        if isinstance(a, Ref) and a.name == s.name:
            return v.fn, b
        if isinstance(b, Ref) and b.name == s.name:
            return v.fn, a
    return None


def _idx_names(idx) -> set:
    from .ir import ie_names

    out = set()
    for i in idx:
        out |= ie_names(i)
    return out


def _classify(stmts, stores, accs, plain, seen_plain):
    """Stores, accumulated scalars and plainly-assigned scalars under `stmts`."""
    for s in stmts:
        if isinstance(s, Store):
            stores.append(s)
        elif isinstance(s, Assign):
            if s.aug or _max_min(s) is not None:
                if s.name not in seen_plain:
                    accs.append(s.name)
            else:
                plain.add(s.name)
                seen_plain.add(s.name)
        elif isinstance(s, For):
            _classify(s.body, stores, accs, plain, seen_plain)


def _targets(s, out):
    if isinstance(s, For):
        for b in s.body:
            _targets(b, out)
    elif isinstance(s, Store):
        out.add(s.buf)
    elif isinstance(s, Assign) and (s.aug or _max_min(s) is not None):
        out.add(s.name)


def _collect_writes(s, path, out, run):
    if isinstance(s, For):
        for b in s.body:
            _collect_writes(b, path + (s,), out, run)
    elif isinstance(s, Store):
        out.setdefault(s.buf, []).append(_LazyWrite(path, s, run))


class _LazyWrite:
    """A store's (path, index) pair; the index terms exist once the loops have variables."""

    def __init__(self, path, store, run):
        self.path, self.store, self.run = path, store, run

    def __iter__(self):
        run = self.run
        loopvars = {}
        for f in self.path:
            if id(f) not in run.loopix:
                # the write's loops have not been entered yet: only shared loops matter, and
                # those have variables; give the others placeholders that match nothing
                run.loopix.setdefault(id(f), T.iv(T.var(f"?{id(f)}")))
            loopvars[f.var] = run.loopix[id(f)]
        shape = run.low.shapes[self.store.buf]
        idx = [run.low.ix(i, loopvars, self.store.loc) for i in self.store.idx]
        idx += [None] * (len(shape) - len(idx))
        yield self.path
        yield idx


def check_bounds(prog, dims: dict) -> None:
    """Every index stays inside its tensor for every iteration, or a ProgramError says where.

    numpy would wrap a negative index around silently; eqsat rejects it instead, since no
    kernel can honour that and it is almost always an off-by-one.
    """
    shapes: dict = {}
    for p in prog.params:
        if p.shape is not None:
            shapes[p.name] = tuple(dims[d] if isinstance(d, str) else d for d in p.shape)

    def check(base, idx, ranges, loc):
        shape = shapes.get(base)
        if shape is None:
            return
        for axis, ie in enumerate(idx):
            coef, const = ie_affine(ie, dims, loc)
            lo = hi = const
            for v, c in coef.items():
                a, b = ranges[v]
                lo += min(c * a, c * b)
                hi += max(c * a, c * b)
            if lo < 0 or hi >= shape[axis]:
                raise ProgramError(f"index {axis} of {base!r} ranges over {lo}..{hi}, outside 0..{shape[axis] - 1}",
                                   loc)

    def expr(e, ranges):
        if isinstance(e, Index):
            check(e.base, e.idx, ranges, e.loc)
        for f in ("a", "b", "x"):
            if hasattr(e, f):
                expr(getattr(e, f), ranges)
        for x in getattr(e, "args", ()):
            expr(x, ranges)

    def stmt(s, ranges):
        if isinstance(s, Alloc):
            shapes[s.name] = tuple(ie_eval(d, dims) for d in s.shape)
        elif isinstance(s, Assign):
            expr(s.value, ranges)
            if s.value.ty is not None and not ranges:
                shapes[s.name] = tuple(ie_eval(d, dims) for d in s.value.ty)
        elif isinstance(s, Store):
            expr(s.value, ranges)
            check(s.buf, s.idx, ranges, s.loc)
        elif isinstance(s, For):
            lo, hi = ie_eval(s.lo, dims), ie_eval(s.hi, dims)
            if hi > lo:
                for b in s.body:
                    stmt(b, {**ranges, s.var: (lo, hi - 1)})

    for s in prog.body:
        stmt(s, {})
    for r in prog.returns:
        expr(r, {})


def lower(prog, dims: dict) -> Lowered:
    check_bounds(prog, dims)
    return _Lowerer(prog, dims).run()
