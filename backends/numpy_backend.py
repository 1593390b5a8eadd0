"""The numpy backend: runs a Plan's kernels on the CPU.

matmul kernels go through `np.matmul` (BLAS), their epilogues are evaluated on the
product in place; elementwise and reduction kernels are evaluated vectorized over
their index space; loop kernels run the nest exactly as written (compiled by numba,
backends/loops.py).

The evaluator below walks the plan's terms. Every numpy operation on data goes through
`Runner.np` (numpy itself, or a recorder): nothing it decides depends on the data, only
on the plan and the sizes, so one walk with the recorder gives the plan as straight-line
code (numpy_compiled.py), which is what `Plan.run` executes.
"""
from __future__ import annotations

import functools
import math
import operator

import numpy as np

from eqsat import desugar, lang
from eqsat.plan import fused_prologue, is_gather
from eqsat.terms import Node, leaving_axes, python_number, shape_list, unlist, walk

def _py_choice(pick):
    """Python's builtin max/min on arrays: `b if b > a else a` (a NaN in b keeps a)."""
    def op(a, b, out=None):
        r = np.where(pick(b, a), b, a)
        if out is not None:
            np.copyto(out, r)
            return out
        return r
    return op


_BIN = {"Sc.add": np.add, "Sc.sub": np.subtract, "Sc.mul": np.multiply, "Sc.div": np.divide,
        "Sc.max": _py_choice(np.greater), "Sc.min": _py_choice(np.less)}


_CMP = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal, "==": np.equal,
        "!=": np.not_equal}


class _Direct:
    """Numpy's functions, called as they are (the recorder has the same interface)."""

    def __getattr__(self, name):
        return getattr(np, name)

    @staticmethod
    def call(fn, *args, **kw):
        return fn(*args, **kw)


DIRECT = _Direct()


def _select(cmp, l, r, a, b):
    return np.where(cmp(l, r), a, b).astype(np.float32, copy=False)


def _scalar_out(v):
    return np.float32(v.reshape(()))


def _number_out(v):
    return float(v.reshape(()))


def _int_out(v):
    return int(v.reshape(()))


def number_output(plan, t) -> bool:
    """Whether tensor term `t` is a scalar a kept nest leaves holding a Python number
    (`lower.Nest.numbers`: kept in float64, returned as the Python float it is, as
    `reference` returns it, not a float32)."""
    return t.op == "Ten.opaque" and t.args[1] in plan.lowered.nests[t.args[0]].numbers


def returns_number(plan, i: int):
    """The Python type output `i` is returned in (float, int), or None (a float32): a
    Python number in the reference (`lower.Lowered.outputs_number`: `float(x[0])`, whose
    float32 value is exact in float64; `N // 2`), or one a kept nest leaves (a float)."""
    return plan.lowered.outputs_number[i] or (float if number_output(plan, plan.roots[i]) else None)


def number_out(kind):
    """The function that makes a 0-d result the Python number `kind` (float, int) is, or
    np.float32 (None)."""
    return _int_out if kind is int else _number_out if kind is float else _scalar_out


class Runner:
    def __init__(self, plan, args: list, scalars: dict, xp=DIRECT):
        self.np = xp
        self.plan = plan
        self.args = dict(zip([p.name for p in plan.program.params], args))
        self.scalars = scalars
        self.values: dict = {}  # kernel term -> array
        self.nest_out: dict = {}  # nest id -> {name: value}

    # -------------------------------------------------------------- tensors
    def tensor(self, n: Node) -> np.ndarray:
        v = self.values.get(n)
        if v is not None:
            return v
        op = n.op
        if op == "Ten.input":
            return self.args[n.args[0]]
        if op == "Ten.transpose":
            return self.np.transpose(self.tensor(n.args[0]), [int(p) for p in n.args[1].split()])
        if op == "Ten.slice":
            return self.np.call(operator.getitem, self.tensor(n.args[0]), self.index_const(n.args[1]))
        if op == "Ten.reshape":
            return self.np.reshape(self.tensor(n.args[0]), shape_list(n.args[1]))
        if op == "Ten.opaque":
            v = self.nest_out[n.args[0]][n.args[1]]
            if v is None:  # left unassigned: read (if at all) where a condition discards it,
                # `if c: r = t` (where the program surely reads it the nest raised)
                v = self.stand_in(self.plan.lowered.nests[n.args[0]].out_shapes.get(n.args[1], ()))
            return v
        if fused_prologue(n, self.plan.costing):  # a matmul's fused prologue: computed where the matmul reads it
            v = self.values[n] = self.evaluate(n.args[0], n.args[1])
            return v
        raise RuntimeError(f"tensor {op} used before its kernel ran")

    def index_const(self, ix: Node) -> int:
        if ix.op == "Ix.lit":
            return ix.args[0]
        raise RuntimeError("a slice with a variable index cannot be a view")

    def run_kernel(self, k):
        if k.kind == "loop":
            self.run_nest(k.nest)
            return
        n = k.term
        if n.op == "Ten.matmul":
            self.values[n] = self.np.matmul(self.tensor(n.args[0]), self.tensor(n.args[1]))
        elif n.op == "Ten.fused":
            mm = n.args[2]
            acc = self.np.matmul(self.tensor(mm.args[0]), self.tensor(mm.args[1]))
            self.values[n] = self.evaluate(n.args[0], n.args[1], out=acc, acc=acc)
        else:
            compiled = _compiled_kernel(self.plan, k)
            if compiled is None:
                self.values[n] = self.evaluate(n.args[0], n.args[1])
                return
            xp = self.np
            # a scalar argument passed as it came (already float32 from bind_args): a new
            # float32 made of it here is, to the tracer, a constant of the sample run, and
            # the straight-line code then failed its check and the plan ran interpreted
            v = xp.call(compiled.fn, *[self.tensor(t) for t in compiled.inputs],
                        *[_f32(xp, self.scalars[p]) for p in compiled.params])
            self.values[n] = v if compiled.shape else xp.reshape(v, ())

    def evaluate(self, dims: Node, body: Node, out=None, acc=None) -> np.ndarray:
        pairs = unlist(dims)
        axes = {v: i for i, (v, _) in enumerate(pairs)}
        shape = tuple(e for _, e in pairs)
        ev = _Eval(self, axes, len(pairs), acc, uses=_uses(body))
        val = ev.sc(body)
        if isinstance(val, np.ndarray) and val.shape == shape and val.dtype == np.float32 and id(val) in ev.owned:
            return val  # a fresh array (often the accumulator itself, updated in place)
        xp = self.np
        if out is not None and out.shape == shape:
            # the accumulator is dead after the epilogue: write the result over it
            xp.copyto(out, xp.broadcast_to(xp.asarray(val, dtype=np.float32), shape))
            return out
        if body.op == "Sc.lit" and body.args[0] == 0.0 and math.copysign(1.0, body.args[0]) > 0:
            # a buffer of zeros (`empty`, `zeros`): calloc'd pages, zeroed when first
            # written, not a pass of its own over memory before the nest that fills it
            return xp.zeros(shape, dtype=np.float32)
        return xp.full(shape, val, dtype=np.float32)  # broadcast into a new array (one call)

    # -------------------------------------------------------------- loops as written
    def run_nest(self, nid: int):
        nest = self.plan.lowered.nests[nid]
        term = self.plan.nest_terms[nid]
        terms = unlist(term.args[2])
        tensors = [self.tensor(t) for t in terms]
        inputs = self.nest_scalar_inputs(nid)
        scalars = [scalar_input(_Eval(self, {}, 0), s) for _, s in inputs]
        names = tuple(n for n, _ in inputs)
        direct = _direct_nest(self.plan, nid, names)
        if direct is not None:
            reads = _kernel_reads(self.plan)
            # a kernel's result, or an earlier nest's output (the plan's own buffer: that
            # nest wrote a copy or a fresh one), that only this nest reads is the nest's to
            # write: no copy (s291: a.copy(), its first statement, then the loop over the rest)
            mine = [reads.get(t) == 1 and (t in self.values or t.op == "Ten.opaque") for t in terms]
            self.nest_out[nid] = call_direct(self.np, nest, direct, tensors, scalars, mine)
            return
        outs = self.np.call(_nest_call(self.plan, nid, names), *tensors, *scalars)
        self.nest_out[nid] = {name: self.np.call(operator.getitem, outs, i) if self._assigned(outs, i) else None
                              for i, name in enumerate(nest.outputs)}

    def stand_in(self, shape):
        """NaNs of `shape`: what a kernel reads of a nest's output the nest left unassigned."""
        return self.np.call(np.full, tuple(shape), np.nan, np.float32)

    def nest_scalar_inputs(self, nid: int) -> list:
        """(name, term) of each scalar nest `nid` takes, but a scalar an earlier nest never
        assigned (its loop ran no iteration): the nest then sees no such name, as in Python."""
        nest, term = self.plan.lowered.nests[nid], self.plan.nest_terms[nid]
        out = []
        for name, s in zip(nest.scalar_inputs, unlist(term.args[3])):
            if s.op == "Sc.load" and s.args[0].op == "Ten.opaque" and \
                    self.nest_out[s.args[0].args[0]].get(s.args[0].args[1]) is None:
                continue
            out.append((name, s))
        return out

    @staticmethod
    def _assigned(outs, i) -> bool:
        return outs[i] is not None


def call_direct(xp, nest, direct, tensors: list, scalars: list, mine: list | None = None) -> dict:
    """A compiled nest called as one step of the plan, no namespace in between: copies
    of the tensors it writes (parameters are passed by value) but those `mine` hands over,
    its scalars as float32, the call; {output: its updated argument or one of the values
    it returns}. `xp`: numpy (DIRECT) or the recorder; every choice here depends on the
    types only, so the recorder writes it as plain lines of the plan's code (a few
    microseconds a call less than a wrapper)."""
    fn, copied, where = direct
    mine = mine or [False] * len(tensors)
    args = [xp.call(_copy_of(v), v) if c and not m else v if _is_f32(v) else xp.call(_as_f32, v)
            for v, c, m in zip(tensors, copied, mine)]
    args += [s if type(s) is float else _f32(xp, s) for s in scalars]  # (a Python number stays one)
    got = xp.call(fn, *args)
    out = {}
    for name, i in zip(nest.outputs, where):
        out[name] = args[i] if i >= 0 else xp.call(_stored(nest, name), xp.call(operator.getitem, got, -1 - i))
    return out


def _kernel_reads(plan) -> dict:
    """Kernel result term (and loop nest output, `Ten.opaque`) -> how many times the plan
    reads it: in other kernels' terms, in each loop nest's arguments (each occurrence), and
    as a result returned."""
    known = plan.__dict__.get("_kernel_reads")
    if known is not None:
        return known
    kernel_terms = {k.term for k in plan.kernels if k.kind != "loop"}
    count: dict = {}

    def scan(t, seen):
        stack = [t]
        while stack:
            n = stack.pop()
            if n in kernel_terms or n.op == "Ten.opaque":  # (a nest's own inputs count at the nest)
                count[n] = count.get(n, 0) + 1
                continue
            if n in seen:
                continue
            seen.add(n)
            stack.extend(c for c in n.args if isinstance(c, Node))

    for k in plan.kernels:
        if k.kind == "loop":
            term = plan.nest_terms[k.nest]
            for t in unlist(term.args[2]) + unlist(term.args[3]):
                scan(t, set())
        else:
            seen: set = set()
            for c in k.term.args:
                if isinstance(c, Node):
                    scan(c, seen)
    for r in plan.roots:
        scan(r, set())
    plan.__dict__["_kernel_reads"] = count
    return count


def _is_f32(v) -> bool:
    return type(v) is np.ndarray and v.dtype == np.float32


def _copy_of(v):
    """How to copy a nest's tensor input: a float32 array by its own method (the cheapest
    call), anything else converted."""
    return np.ndarray.copy if _is_f32(v) else _f32_copy


def _f32_copy(v):
    return np.array(v, dtype=np.float32, copy=True)


def _py_select(cmp, l, r, a, b):
    """A select between two Python numbers (float64, as the reference's)."""
    return np.where(cmp(l, r), a, b)


def _as_f32(v):
    return np.asarray(v, dtype=np.float32)


def _as_f64(v):
    return np.asarray(v, dtype=np.float64)


def _stored(nest, name: str):
    """How a kept nest's output is kept: float32, but a scalar holding a Python number in
    float64 (`Nest.numbers`: the plan reads it as the Python number, `float(s)`)."""
    return _as_f64 if name in nest.numbers else _as_f32


def _direct_nest(plan, nid: int, scalar_names: tuple):
    """(compiled function, which tensor inputs it writes, where each output comes from: its
    argument's index, or -1 - its index in what the function returns) for a nest compiled
    by numba that takes exactly its tensor inputs and then its scalars, in order; None for a
    nest run through `_nest_call` (interpreted, views, or a scalar an earlier nest never
    assigned). Compiles the nest on first use, as `_nest_call` would."""
    key = (nid, scalar_names)
    known = plan.__dict__.setdefault("_direct_nests", {})
    if key not in known:
        known[key] = _find_direct(plan, nid, scalar_names)
    return known[key]


def _find_direct(plan, nid: int, scalar_names: tuple):
    nest = plan.lowered.nests[nid]
    if nest.views or tuple(scalar_names) != tuple(nest.scalar_inputs):
        return None
    compiled = _runner(plan, nid)
    positional = list(nest.tensor_inputs) + list(nest.scalar_inputs)
    if compiled is None or compiled.params != positional:
        return None
    copied = [name in nest.outputs for name in nest.tensor_inputs]
    where = [positional.index(o) if o not in compiled.returned else -1 - compiled.returned.index(o)
             for o in nest.outputs]
    return compiled.fn, copied, where


def scalar_input(ev: "_Eval", s: Node):
    """The value a nest kept as written gets for scalar term `s`: a Python float where the
    reference has one (`acc = 0.0` before the nest: `terms.python_number`), so `acc += 0.1`
    sums in float64 there as in the reference; float32 otherwise."""
    if not python_number(s):
        return ev.sc(s)
    v = ev.py(s)
    return ev.r.np.call(float, v) if id(v) in ev.data else float(v)


def _f32(xp, v):
    """A scalar argument of a compiled call as float32: as it came where it is one (the
    tracer then sees the argument itself), else converted through `xp` (recorded)."""
    return v if type(v) is np.float32 else xp.call(np.float32, v)


def _compiled_kernel(plan, k):
    """Kernel k's compiled function (cpu_kernels.CompiledKernel), or None where numpy
    evaluates it; built on first use."""
    from eqsat.backends import cpu_kernels

    got = plan.kernel_runners.get(k.name)
    if got is None:
        if not cpu_kernels.wanted(plan, k):
            return None
        got = plan.kernel_runners[k.name] = cpu_kernels.build(plan, k)
    return got[0]


def _runner(plan, nid: int):
    """Nest `nid`'s compiled function (loops.CompiledNest), or None where it runs
    interpreted; built on first use."""
    runner = plan.loop_runners.get(nid)
    if runner is None:
        from eqsat.backends import loops

        runner = plan.loop_runners[nid] = loops.build(plan, plan.lowered.nests[nid])
    return runner[0]


def _nest_call(plan, nid: int, scalar_names: tuple):
    """The function that runs nest `nid` of `plan` on its inputs' values: its namespace
    (module globals, sizes, copies of its tensor inputs, its scalars, its views), then
    the compiled nest (or the nest's code, interpreted), then its outputs in order."""
    key = (nid, scalar_names)
    fns = plan.__dict__.setdefault("_nest_calls", {})
    if key in fns:
        return fns[key]
    nest = plan.lowered.nests[nid]
    base = dict(plan.program.fn.__globals__)
    base.update(plan.program.constants)  # (module constants as optimize() read them: the plan's snapshot)
    base.update(desugar.BINDINGS)  # (`eqsat_lib_exp` for the program's `np.exp`)
    base.update(plan.dims)
    n_tensors = len(nest.tensor_inputs)
    # parameters are passed by value: a tensor the nest writes (itself or through a view) is
    # copied first; one it only reads is read in place
    viewed = {name for v in nest.views.values() for name in _refs(v)}
    copied = [name in nest.outputs or name in viewed for name in nest.tensor_inputs]
    # outputs a run may leave unassigned that the plan reads: Python raises there
    from eqsat.backends import loops

    unread = nest.unbound_outputs & loops.unset_read(plan, nest)  # (unbound_outputs: of unset_outputs)

    def run(*values):
        direct = _direct_nest(plan, nid, scalar_names)
        if direct is not None:  # the compiled function takes the values themselves
            out = call_direct(DIRECT, nest, direct, list(values[:n_tensors]), list(values[n_tensors:]))
            return _distinct(tuple(out[name] for name in nest.outputs))
        compiled = _runner(plan, nid)
        ns = dict(base)
        for name, v, copy in zip(nest.tensor_inputs, values, copied):
            ns[name] = _f32_copy(v) if copy else _as_f32(v)
        for name, v in zip(scalar_names, values[n_tensors:]):
            ns[name] = v if type(v) is float else np.float32(v)  # (a Python number stays one: scalar_input)
        for name, view in nest.views.items():  # names sharing memory with a tensor, as in numpy
            ns[name] = _view(view, ns, plan.dims)
        if compiled is not None and all(p in ns for p in compiled.params):
            ns.update(compiled(ns))
        else:  # (interpreted, also where an earlier nest left a scalar it takes unassigned:
            # Python raises only if this run reads it)
            exec(nest.code, ns)
        out = []
        for name in nest.outputs:
            v = ns.get(name)
            if v is None and name in unread:
                raise UnboundLocalError(f"{name!r} is read after the statement at line {nest.stmt.loc.line}, which "
                                        f"left it unassigned in this run (Python raises UnboundLocalError there)")
            out.append(_stored(nest, name)(v) if v is not None else None)
        return _distinct(tuple(out))

    fns[key] = run
    return run


def _distinct(outs: tuple) -> tuple:
    """A nest's outputs, two names bound to one array (`a = eqsat_red0` on a branch) as two
    objects over the same memory: the recorded plan (`numpy_compiled.trace`) names a value by
    its identity, and would read the other name's slot, empty where the branch is not taken."""
    seen: set = set()
    out = []
    for v in outs:
        if isinstance(v, np.ndarray) and id(v) in seen:
            v = v.view()
        seen.add(id(v))
        out.append(v)
    return tuple(out)


def _refs(e) -> list:
    """The tensor names an ir view expression (Ref, Index, Transpose) is a view of."""
    from eqsat.ir import Index, Ref, Transpose

    if isinstance(e, Transpose):
        return _refs(e.x)
    if isinstance(e, Index):
        return [e.base]
    return [e.name] if isinstance(e, Ref) else []


def _view(e, ns, dims):
    """The numpy view an ir view expression (Ref, Index, Transpose) names, over `ns`."""
    from eqsat.ir import Index, Ref, Transpose, ie_eval

    if isinstance(e, Transpose):
        return np.transpose(_view(e.x, ns, dims), e.perm)
    if isinstance(e, Index):
        return ns[e.base][tuple(ie_eval(i, dims) for i in e.idx)]
    assert isinstance(e, Ref)
    return ns[e.name]


class _Eval:
    """Vectorized evaluation of a scalar term over an index space (one numpy axis per variable)."""

    def __init__(self, runner: Runner, axes: dict, rank: int, acc=None, uses=None):
        self.r = runner
        self.axes = axes
        self.rank = rank
        self.acc = acc
        self.uses = uses or {}  # node -> how many parents read it (1: its array may be overwritten)
        self.owned: set = set()  # ids of fresh arrays this evaluation made
        if acc is not None:
            self.owned.add(id(acc))
        self.memo: dict = {}
        self.py_memo: dict = {}  # (`py`)
        self.data: set = set()  # ids of `py` values that depend on the data (`py_step`)

    def ix(self, x: Node):
        op = x.op
        if op == "Ix.lit":
            return x.args[0]
        if op == "Ix.v":
            v = x.args[0]
            ax = self.axes[v]
            shape = [1] * self.rank
            n = self.extent[v]
            shape[ax] = n
            return np.arange(n).reshape(shape)
        if op == "Ix.add":
            return self.ix(x.args[0]) + self.ix(x.args[1])
        if op == "Ix.scale":
            return self.ix(x.args[0]) * x.args[1]
        raise RuntimeError(f"index {op}")

    @property
    def extent(self):
        return self.r.plan.var_extent

    def sc(self, n: Node):
        got = self.memo.get(n)
        if got is not None:
            return got
        op = n.op
        xp = self.r.np
        if op != "Sc.lit" and python_number(n):  # computed in float64, rounded once (terms.python_number)
            v = self.py(n)
            if id(v) in self.data:
                v = xp.call(_as_f32, v)
            else:
                v = np.float32(v) if np.ndim(v) == 0 else v.astype(np.float32)
        elif op == "Sc.lit":
            v = lang.rounded(n.args[0])
        elif op == "Sc.acc":
            v = self.acc if self.acc.ndim == self.rank else \
                xp.reshape(self.acc, self.acc.shape + (1,) * (self.rank - self.acc.ndim))
        elif op == "Sc.param":
            v = self.r.scalars[n.args[0]]
        elif op == "Sc.load":
            v = self.load(n)
        elif op in _BIN:
            a, b = self.sc(n.args[0]), self.sc(n.args[1])
            out = self.reusable(n.args[0], a, b)
            if out is None:
                out = self.reusable(n.args[1], b, a)
            v = xp.call(_BIN[op], a, b, out=out) if out is not None else xp.call(_BIN[op], a, b)
            self.owned.add(id(v))
        elif op == "Sc.fn" and n.args[0] == "float32":
            v = self.sc(n.args[1])  # (sc rounds a Python number to float32: numpy's np.float32)
        elif op == "Sc.fn":
            x = self.sc(n.args[1])
            out = self.reusable(n.args[1], x, x)
            if n.args[0] == "relu" and out is not None:
                v = xp.maximum(x, np.float32(0), out=out)
            elif n.args[0] == "neg":
                v = xp.negative(x, out=out) if out is not None else xp.negative(x)
            else:
                v = xp.call(lang.UNARY[n.args[0]], x)
            self.owned.add(id(v))
        elif op == "Sc.red":
            v = self.reduce(n)
        elif op == "Sc.select":
            cmp, l, r, a, b = n.args
            # (two Python numbers compare in float64, as in the reference)
            lv, rv = self.sides(l, r)
            v = xp.call(_select, _CMP[cmp], lv, rv, self.sc(a), self.sc(b))
            self.owned.add(id(v))
        else:
            raise RuntimeError(f"cannot evaluate {op}")
        self.memo[n] = v
        return v

    def py(self, n: Node):
        """A Python-number term (`terms.python_number`: literals, index values and what is
        made of them alone) in float64, as the reference computes it: a constant of the
        index space, computed here (not a step of the plan)."""
        got = self.py_memo.get(n)
        if got is not None:
            return got
        op = n.op
        if op == "Sc.lit":
            v = float(n.args[0])
        elif op == "Sc.idx":
            v = np.asarray(self.ix(n.args[0]), dtype=np.float64)
        elif op in _BIN:
            v = self.py_step(_BIN[op], self.py(n.args[0]), self.py(n.args[1]))
        elif op == "Sc.fn" and n.args[0] == "float" and not python_number(n.args[1]):
            v = self.py_step(lang.pyfloat, self.sc(n.args[1]), on_data=True)  # (an element, widened)
        elif op == "Sc.fn" and n.args[0] == "float":
            v = self.py(n.args[1])
        elif op == "Sc.fn":
            v = self.py_step(np.negative if n.args[0] == "neg" else lang.UNARY[n.args[0]], self.py(n.args[1]))
        elif op == "Sc.select":
            cmp, l, r, a, b = n.args
            lv, rv = self.sides(l, r)  # (a condition on data picks between two Python numbers)
            on_data = not (python_number(l) and python_number(r))
            v = self.py_step(_py_select, _CMP[cmp], lv, rv, self.py(a), self.py(b), on_data=on_data)
        else:
            raise RuntimeError(f"{op} is no Python number")
        self.py_memo[n] = v
        return v

    def py_step(self, fn, *args, on_data: bool = False):
        """fn(*args) of Python-number values: computed here where every argument is a
        constant of the index space, a step of the plan (`xp.call`, which a compiled plan
        writes down) where one depends on the data (a select between two Python numbers
        on a condition that reads a tensor) or `on_data` says the step does."""
        if on_data or any(id(a) in self.data for a in args):
            v = self.r.np.call(fn, *args)
            self.data.add(id(v))
            return v
        return fn(*args)

    def sides(self, l: Node, r: Node) -> tuple:
        """A comparison's two sides: two Python numbers compare in float64, as in the
        reference, anything else in float32 (`sc`)."""
        if python_number(l) and python_number(r):
            return self.py(l), self.py(r)
        return self.sc(l), self.sc(r)

    def reusable(self, node, arr, other):
        """`arr` if it may take the result in place: a fresh float32 array read only here,
        already of the result's shape."""
        if not isinstance(arr, np.ndarray) or id(arr) not in self.owned or self.uses.get(node, 0) != 1:
            return None
        if arr.dtype != np.float32 or np.broadcast_shapes(arr.shape, np.shape(other)) != arr.shape:
            return None
        return arr

    def load(self, n: Node):
        xp = self.r.np
        arr = self.r.tensor(n.args[0])
        idx = unlist(n.args[1])
        if arr.ndim != len(idx):
            raise RuntimeError(f"rank {arr.ndim} tensor loaded with {len(idx)} indices")
        # an index that may leave its axis (only where a select drops the value) is clamped
        # into it: loads are total (eqsat/terms.py)
        leaving = {axis for axis, _ in leaving_axes(idx, arr.shape, self.extent.__getitem__)}
        # fast path: distinct plain variables -> a transposed, reshaped view
        if not leaving and not is_gather(n.args[1]):
            ext = [self.extent[i.args[0]] for i in idx]
            if any(e != n for e, n in zip(ext, arr.shape)):  # a loop over part of an axis
                arr = xp.call(operator.getitem, arr, tuple(slice(0, e) for e in ext))
            pos = [self.axes[i.args[0]] for i in idx]
            order = np.argsort(pos)
            view = xp.transpose(arr, [int(o) for o in order]) if list(order) != list(range(len(order))) else arr
            shape = [1] * self.rank
            for p, s in zip(sorted(pos), view.shape):
                shape[p] = s
            return view if tuple(shape) == view.shape else xp.reshape(view, shape)
        at = [self.ix(i) for i in idx]
        if 0 in arr.shape:  # an empty tensor is read only where nothing runs (a zero extent:
            # `m = x[i, 0]` over no i); an index into it, clamped or not, would raise
            return np.zeros(np.broadcast_shapes(*(np.shape(a) for a in at)), np.float32)
        for axis in leaving:
            at[axis] = np.clip(at[axis], 0, arr.shape[axis] - 1)
        return xp.call(operator.getitem, arr, tuple(at))

    def reduce(self, n: Node):
        xp = self.r.np
        kind, v, ext, body = n.args
        inner = _Eval(self.r, {**self.axes, v: self.rank}, self.rank + 1, self.acc)
        val = xp.asarray(inner.sc(body), dtype=np.float32)
        if val.ndim == 0:
            val = xp.reshape(val, (1,) * (self.rank + 1))
        if val.shape[self.rank] == 1 and ext != 1:
            val = xp.squeeze(val, axis=self.rank)
            if kind == "sum":  # ext copies of one value: its multiple (of none, 0.0: 0 * inf is NaN)
                return xp.multiply(val, np.float32(ext)) if ext > 0 else xp.full_like(val, 0.0)
            return val if ext > 0 else xp.full_like(val, -np.inf if kind == "max" else np.inf)
        if kind == "sum":
            return xp.sum(val, axis=self.rank, dtype=np.float32)
        if ext == 0:
            return xp.full(val.shape[:self.rank], -np.inf if kind == "max" else np.inf, dtype=np.float32)
        # NaN-skipping, as a fold of builtin max(acc, x) from a non-NaN start is
        return xp.call((np.fmax if kind == "max" else np.fmin).reduce, val, axis=self.rank)


@functools.lru_cache(maxsize=4096)
def _uses(body: Node) -> dict:
    """How many parents read each node of a scalar DAG."""
    from collections import Counter

    uses: Counter = Counter()
    for x in walk(body):
        for a in x.args:
            if isinstance(a, Node):
                uses[a] += 1
    return uses


def run(plan, args: list, scalars: dict, xp=DIRECT):
    """Run every kernel of `plan` on these values (interpreting its terms) and return the
    program's outputs."""
    r = Runner(plan, args, scalars, xp)
    for k in plan.kernels:
        r.run_kernel(k)
    outs = []
    for i, (root, is_scalar) in enumerate(zip(plan.roots, plan.lowered.outputs_scalar)):
        v = r.tensor(root)
        if root not in r.values and root.op != "Ten.opaque":
            # a view (of an input, say): the caller gets its own copy (a loop nest's output
            # is already its own: the nest wrote a copy or a fresh buffer)
            v = xp.array(v, dtype=np.float32, copy=True)
        outs.append(xp.call(number_out(returns_number(plan, i)), v) if is_scalar else v)
    for i, dtype in enumerate(plan.program.out_dtypes):
        if dtype is not lang.f32:  # a narrower declared dtype (computed in f32)
            outs[i] = xp.call(lang.as_dtype, outs[i], dtype)
    return outs[0] if len(outs) == 1 else tuple(outs)
