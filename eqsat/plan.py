"""The Plan: the chosen program as a list of kernels, its modeled cost, and a way to run it."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from .cost import ITEM, TARGETS, Model, TenInfo
from .terms import Node, free_vars, shape_list, show, show_var, unlist, viewed_input, walk_body

KERNEL_OPS = ("Ten.compute", "Ten.matmul", "Ten.fused")
EPILOGUE_NAME = {"Sc.add": "add", "Sc.sub": "sub", "Sc.mul": "mul", "Sc.div": "div", "Sc.max": "max",
                 "Sc.min": "min", "Sc.select": "select"}


@dataclass
class Kernel:
    """One launch. `kind`: matmul | pointwise | reduction | loop."""

    name: str
    kind: str
    epilogue: list
    term: Node | None  # the tensor it computes (None for a loop kernel)
    nest: int | None = None  # the loop nest, for a loop kernel
    cost: float = 0.0
    flops: float = 0.0
    bytes: float = 0.0
    prologue: list = field(default_factory=list)  # ops evaluated on a matmul's operand tiles

    def __repr__(self) -> str:
        pro = f"{'+'.join(self.prologue)}> " if self.prologue else ""
        epi = f" +{'+'.join(self.epilogue)}" if self.epilogue else ""
        return f"Kernel({self.name}: {pro}{self.kind}{epi}, {self.cost * 1e6:.2f} us)"


# ------------------------------------------------------------------ shapes of terms
def term_shape(n: Node, input_shapes: dict, nest_shapes: dict, memo: dict) -> tuple:
    if n in memo:
        return memo[n]
    op = n.op
    if op == "Ten.input":
        s = tuple(input_shapes[n.args[0]])
    elif op == "Ten.opaque":
        s = tuple(nest_shapes[(n.args[0], n.args[1])])
    elif op in ("Ten.compute", "Ten.fused"):
        s = tuple(e for _, e in unlist(n.args[0]))
    elif op == "Ten.matmul":
        a = term_shape(n.args[0], input_shapes, nest_shapes, memo)
        b = term_shape(n.args[1], input_shapes, nest_shapes, memo)
        batch = a[:-2] if len(a) == 3 else b[:-2]
        s = tuple(batch) + (a[-2], b[-1])
    elif op == "Ten.transpose":
        a = term_shape(n.args[0], input_shapes, nest_shapes, memo)
        s = tuple(a[int(p)] for p in n.args[1].split())
    elif op == "Ten.slice":
        s = term_shape(n.args[0], input_shapes, nest_shapes, memo)[1:]
    elif op == "Ten.reshape":
        s = shape_list(n.args[1])
    else:
        raise ValueError(f"no shape for {op}")
    memo[n] = s
    return s


def is_gather(ixs: Node) -> bool:
    """Whether a load at index list `ixs` is other than distinct plain variables: no view
    of its tensor (numpy gathers it)."""
    idx = unlist(ixs)
    return any(i.op != "Ix.v" for i in idx) or len({i.args[0] for i in idx}) != len(idx)


def strided(ixs: Node) -> frozenset:
    """The variables that move a load at index list `ixs` across rows: in an axis before
    its last, not in its last (`cost.ScInfo.strided`)."""
    axes = [frozenset(x.args[0] for x in walk_body(i) if x.op == "Ix.v") for i in unlist(ixs)]
    return frozenset().union(*axes[:-1]) - axes[-1] if axes else frozenset()


class TermCost:
    """The cost model applied to concrete terms (the chosen plan, or the program as written)."""

    def __init__(self, target, input_shapes, nest_shapes, nest_work, input_items=None):
        self.shape_memo: dict = {}
        self.input_shapes, self.nest_shapes = input_shapes, nest_shapes
        self.input_items = input_items or {}  # input name -> bytes an element (f16, bf16: 2)
        self.model = Model(target, self.shape, nest_work, self.item, is_gather, strided,
                           lambda d: unlist(d)[-1][0] if unlist(d) else None)
        self.infos: dict = {}

    def item(self, n) -> int:
        return self.input_items.get(viewed_input(n), ITEM)

    def shape(self, n):
        try:
            return term_shape(n, self.input_shapes, self.nest_shapes, self.shape_memo)
        except (KeyError, ValueError, IndexError):
            return None

    def info(self, n: Node):
        if n in self.infos:
            return self.infos[n]
        out = self._info(n)
        self.infos[n] = out
        return out

    def _info(self, n: Node):
        m = self.model
        sort = n.sort
        a = []
        for x in n.args:
            if isinstance(x, Node) and x.sort in ("Sc", "Ten", "Tens", "Scs"):
                i = self.info(x)
                a.append((x, i) if isinstance(i, TenInfo) else i)
            else:
                a.append(x)
        if sort == "Sc":
            return m.sc(n.op, a)
        if sort == "Ten":
            closed = not free_vars(n)
            extents = [e for _, e in unlist(n.args[0])] if n.op in ("Ten.compute", "Ten.fused") else None
            if n.op == "Ten.fused":
                a[2] = (a[2][0], a[2][1] if a[2][1].mm else self._info(n.args[2]))
            return m.ten(n, n.op, a, closed, extents)
        return m.lists(n.op, a)

    def total(self, roots) -> float:
        deps: dict = {}
        for r in roots:
            i = self.info(r)
            deps.update(self.model.entry(r, i))
        return math.fsum(deps.values())


def plan_costing(target: str, lowered, items: dict | None = None) -> TermCost:
    """The cost model for terms of this lowered program (any candidate plan, or as written)."""
    nest_shapes = {(n.id, k): v for n in lowered.nests.values() for k, v in n.out_shapes.items()}
    nest_work = {n.id: n.work for n in lowered.nests.values()}
    return TermCost(TARGETS[target], lowered.input_shapes, nest_shapes, nest_work.__getitem__, items)


def input_items(program) -> dict:
    """Tensor input name -> bytes an element, for inputs narrower than f32 (f16, bf16)."""
    return {p.name: p.dtype.itemsize for p in program.params
            if p.shape is not None and p.dtype is not int and p.dtype.itemsize != ITEM}


# ------------------------------------------------------------------ kernels
def epilogue_ops(body: Node, mm: Node) -> list:
    ops: list = []
    for x in walk_body(body):
        if x.op in EPILOGUE_NAME:
            name = EPILOGUE_NAME[x.op]
        elif x.op == "Sc.fn":
            name = x.args[0]
        else:
            continue
        if name not in ops:
            ops.append(name)
    return ops


def prologue_parts(t: Node):
    """(compute, perm) when `t` is an elementwise compute, or transposes of one (axis `a` of
    `t` is axis `perm[a]` of the compute), which a matmul reading it evaluates on its operand
    tiles (the cost model's `TenInfo.prologue`; the backends' fused prologue); else None."""
    perm = None
    while t.op == "Ten.transpose":
        p = [int(x) for x in t.args[1].split()]
        perm = p if perm is None else [p[a] for a in perm]
        t = t.args[0]
    if t.op != "Ten.compute" or any(x.op == "Sc.red" for x in walk_body(t.args[1])):
        return None
    return t, perm if perm is not None else list(range(len(unlist(t.args[0]))))


def fused_prologue(t: Node, costing: "TermCost"):
    """`prologue_parts(t)` where the plan's target evaluates prologues on a matmul's tiles
    (`Target.fused_prologues`); None where an elementwise operand is a kernel of its own."""
    return prologue_parts(t) if costing.model.t.fused_prologues else None


def prologue_ops(mm: Node, costing: "TermCost") -> list:
    ops: list = []
    for t in mm.args:
        parts = fused_prologue(t, costing)
        if parts is not None:
            ops += [o for o in epilogue_ops(parts[0].args[1], None) if o not in ops]
    return ops


def tensor_deps(n: Node) -> list:
    """Tensors a kernel (or view) reads, in a stable order."""
    out = []
    if n.op in ("Ten.compute", "Ten.fused"):
        for x in walk_body(n.args[1]):
            if x.op == "Sc.load":
                out.append(x.args[0])
        if n.op == "Ten.fused":
            out.append(n.args[2])
    elif n.op == "Ten.opaque":
        out.extend(unlist(n.args[2]))
        for s in unlist(n.args[3]):
            out.extend(x.args[0] for x in walk_body(s) if x.op == "Sc.load")
    else:
        out.extend(a for a in n.args if isinstance(a, Node) and a.sort == "Ten")
    return out


def form_kernels(roots: list, costing: TermCost, nests: dict) -> list:
    """The kernels the chosen terms need, in an order where producers come first."""
    kernels: list = []
    seen: set = set()
    seen_nests: set = set()
    fused_mm: set = set()

    def visit_operand(t: Node):
        parts = fused_prologue(t, costing)
        if parts is not None:  # evaluated in the matmul's kernel: only its inputs are needed
            for d in tensor_deps(parts[0]):
                visit(d)
        else:
            visit(t)

    def visit(n: Node, as_accumulator=False):
        if n in seen:
            return
        seen.add(n)
        if n.op == "Ten.fused":
            fused_mm.add(n.args[2])
        if n.op == "Ten.fused":
            # the fused kernel computes its matmul itself, so it needs the operands; the
            # product is a kernel of its own only if the epilogue also reads it elsewhere
            for op_ in n.args[2].args:
                visit_operand(op_)
            for x in walk_body(n.args[1]):
                if x.op == "Sc.load":
                    visit(x.args[0])
        elif n.op == "Ten.matmul":
            for op_ in n.args:
                visit_operand(op_)
        else:
            for d in tensor_deps(n):
                visit(d)
        info = costing.info(n)
        if n.op == "Ten.opaque":
            nid = n.args[0]
            if nid not in seen_nests:
                seen_nests.add(nid)
                w = nests[nid].work
                kernels.append(Kernel(f"loop{nid}", "loop", [], None, nest=nid,
                                      cost=info.deps.get(("nest", nid), 0.0), flops=w["ops"] + w["lib_flops"],
                                      bytes=w["bytes"]))
            return
        if n.op not in KERNEL_OPS:
            return
        k = len(kernels)
        pro = []
        if n.op == "Ten.matmul":
            kind, epi, pro = "matmul", [], prologue_ops(n, costing)
        elif n.op == "Ten.fused":
            kind, epi, pro = "matmul", epilogue_ops(n.args[1], n.args[2]), prologue_ops(n.args[2], costing)
        else:
            kind = "reduction" if any(x.op == "Sc.red" for x in walk_body(n.args[1])) else "pointwise"
            epi = []
        kernels.append(Kernel(f"k{k}_{kind}", kind, epi, n, cost=info.own, flops=info.flops, bytes=info.bytes,
                              prologue=pro))

    for r in roots:
        visit(r)
    return kernels


def describe(n: Node, names: dict) -> str:
    """One kernel's computation in readable form."""
    if n.op == "Ten.fused":
        d = ", ".join(show_var(v) for v, _ in unlist(n.args[0]))
        return f"acc = {show(n.args[2], names)}; [{d}] -> {show(n.args[1], names)}"
    if n.op == "Ten.compute":
        d = ", ".join(f"{show_var(v)}<{e}" for v, e in unlist(n.args[0]))
        return f"for [{d}]: {show(n.args[1], names)}"
    return show(n, names)


