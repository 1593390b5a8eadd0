"""The numpy backend: runs a Plan's kernels on the CPU.

matmul kernels go through `np.matmul` (BLAS), their epilogues are evaluated on the
product in place; elementwise and reduction kernels are evaluated vectorized over
their index space; loop kernels run the nest exactly as written.
"""
from __future__ import annotations

import functools

import numpy as np

from eqsat import lang
from eqsat.plan import is_prologue
from eqsat.terms import Node, shape_list, unlist, walk

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


class Runner:
    def __init__(self, plan, args: list, scalars: dict):
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
            return np.transpose(self.tensor(n.args[0]), [int(p) for p in n.args[1].split()])
        if op == "Ten.slice":
            return self.tensor(n.args[0])[self.index_const(n.args[1])]
        if op == "Ten.reshape":
            return self.tensor(n.args[0]).reshape(shape_list(n.args[1]))
        if op == "Ten.opaque":
            return self.nest_out[n.args[0]][n.args[1]]
        if is_prologue(n):  # a matmul's fused prologue: computed where the matmul reads it
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
            self.values[n] = np.matmul(self.tensor(n.args[0]), self.tensor(n.args[1]))
        elif n.op == "Ten.fused":
            mm = n.args[2]
            acc = np.matmul(self.tensor(mm.args[0]), self.tensor(mm.args[1]))
            self.values[n] = self.evaluate(n.args[0], n.args[1], out=acc, acc=acc)
        else:
            self.values[n] = self.evaluate(n.args[0], n.args[1])

    def evaluate(self, dims: Node, body: Node, out=None, acc=None) -> np.ndarray:
        pairs = unlist(dims)
        axes = {v: i for i, (v, _) in enumerate(pairs)}
        shape = tuple(e for _, e in pairs)
        ev = _Eval(self, axes, len(pairs), acc, uses=_uses(body))
        val = ev.sc(body)
        if isinstance(val, np.ndarray) and val.shape == shape and val.dtype == np.float32 and id(val) in ev.owned:
            return val  # a fresh array (often the accumulator itself, updated in place)
        if out is not None and out.shape == shape:
            # the accumulator is dead after the epilogue: write the result over it
            np.copyto(out, np.broadcast_to(np.asarray(val, dtype=np.float32), shape))
            return out
        return np.array(np.broadcast_to(np.asarray(val, dtype=np.float32), shape), dtype=np.float32)

    # -------------------------------------------------------------- loops as written
    def run_nest(self, nid: int):
        nest = self.plan.lowered.nests[nid]
        ns = dict(self.plan.program.fn.__globals__)
        ns.update(self.plan.dims)
        term = self.plan.nest_terms[nid]
        for name, t in zip(nest.tensor_inputs, unlist(term.args[2])):
            ns[name] = np.array(self.tensor(t), dtype=np.float32, copy=True)
        for name, s in zip(nest.scalar_inputs, unlist(term.args[3])):
            if s.op == "Sc.load" and s.args[0].op == "Ten.opaque" and \
                    self.nest_out[s.args[0].args[0]].get(s.args[0].args[1]) is None:
                continue  # a scalar an earlier nest never assigned (its loop ran no iteration)
            ns[name] = np.float32(_Eval(self, {}, 0).sc(s))
        for name, view in nest.views.items():  # names sharing memory with a tensor, as in numpy
            ns[name] = _view(view, ns, self.plan.dims)
        runner = self.plan.loop_runners.get(nid)
        if runner is None:
            from eqsat.backends import loops

            runner = self.plan.loop_runners[nid] = loops.build(self.plan, nest)
        if runner[0] is not None:
            ns.update(runner[0](ns))
        else:
            exec(nest.code, ns)
        out = {}
        for name in nest.outputs:
            v = ns.get(name)
            out[name] = np.asarray(v, dtype=np.float32) if v is not None else None
        self.nest_out[nid] = out


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
        if op == "Sc.lit":
            v = np.float32(n.args[0])
        elif op == "Sc.acc":
            v = self.acc.reshape(self.acc.shape + (1,) * (self.rank - self.acc.ndim))
        elif op == "Sc.param":
            v = self.r.scalars[n.args[0]]
        elif op == "Sc.load":
            v = self.load(n)
        elif op in _BIN:
            a, b = self.sc(n.args[0]), self.sc(n.args[1])
            out = self.reusable(n.args[0], a, b)
            if out is None:
                out = self.reusable(n.args[1], b, a)
            v = _BIN[op](a, b, out=out) if out is not None else _BIN[op](a, b)
            self.owned.add(id(v))
        elif op == "Sc.fn":
            x = self.sc(n.args[1])
            out = self.reusable(n.args[1], x, x)
            if n.args[0] == "relu" and out is not None:
                v = np.maximum(x, np.float32(0), out=out)
            elif n.args[0] == "neg":
                v = np.negative(x, out=out) if out is not None else -x
            else:
                v = lang.UNARY[n.args[0]](x)
            self.owned.add(id(v))
        elif op == "Sc.red":
            v = self.reduce(n)
        elif op == "Sc.idx":
            v = np.asarray(self.ix(n.args[0]), dtype=np.float32)
        elif op == "Sc.select":
            cmp, l, r, a, b = n.args
            v = np.where(_CMP[cmp](self.sc(l), self.sc(r)), self.sc(a), self.sc(b)).astype(np.float32, copy=False)
            self.owned.add(id(v))
        else:
            raise RuntimeError(f"cannot evaluate {op}")
        self.memo[n] = v
        return v

    def reusable(self, node, arr, other):
        """`arr` if it may take the result in place: a fresh float32 array read only here,
        already of the result's shape."""
        if not isinstance(arr, np.ndarray) or id(arr) not in self.owned or self.uses.get(node, 0) != 1:
            return None
        if arr.dtype != np.float32 or np.broadcast_shapes(arr.shape, np.shape(other)) != arr.shape:
            return None
        return arr

    def load(self, n: Node):
        arr = self.r.tensor(n.args[0])
        idx = unlist(n.args[1])
        if arr.ndim != len(idx):
            raise RuntimeError(f"rank {arr.ndim} tensor loaded with {len(idx)} indices")
        # fast path: distinct plain variables -> a transposed, reshaped view
        if all(i.op == "Ix.v" for i in idx) and len({i.args[0] for i in idx}) == len(idx):
            ext = [self.extent[i.args[0]] for i in idx]
            if any(e != n for e, n in zip(ext, arr.shape)):  # a loop over part of an axis
                arr = arr[tuple(slice(0, e) for e in ext)]
            pos = [self.axes[i.args[0]] for i in idx]
            order = np.argsort(pos)
            view = np.transpose(arr, order) if list(order) != list(range(len(order))) else arr
            shape = [1] * self.rank
            for p, s in zip(sorted(pos), view.shape):
                shape[p] = s
            return view.reshape(shape)
        return arr[tuple(self.ix(i) for i in idx)]

    def reduce(self, n: Node):
        kind, v, ext, body = n.args
        inner = _Eval(self.r, {**self.axes, v: self.rank}, self.rank + 1, self.acc)
        val = np.asarray(inner.sc(body), dtype=np.float32)
        if val.ndim == 0:
            val = val.reshape((1,) * (self.rank + 1))
        if val.shape[self.rank] == 1 and ext != 1:
            val = np.squeeze(val, axis=self.rank)
            if kind == "sum":
                return val * np.float32(ext)
            return val if ext > 0 else np.full_like(val, -np.inf if kind == "max" else np.inf)
        if kind == "sum":
            return np.sum(val, axis=self.rank, dtype=np.float32)
        if ext == 0:
            return np.full(val.shape[:self.rank], -np.inf if kind == "max" else np.inf, dtype=np.float32)
        # NaN-skipping, as a fold of builtin max(acc, x) from a non-NaN start is
        return (np.fmax if kind == "max" else np.fmin).reduce(val, axis=self.rank)


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


def run(plan, args: list, scalars: dict):
    r = Runner(plan, args, scalars)
    for k in plan.kernels:
        r.run_kernel(k)
    outs = []
    for root, is_scalar in zip(plan.roots, plan.lowered.outputs_scalar):
        v = r.tensor(root)
        if root not in r.values:  # a view (of an input, say): the caller gets its own copy
            v = np.array(v, dtype=np.float32, copy=True)
        outs.append(np.float32(v.reshape(())) if is_scalar else v)
    return outs[0] if len(outs) == 1 else tuple(outs)
