"""Extraction: the cheapest form of each root, read off the e-graph (`egraph.read_back`).

Greedy and DAG-aware: every e-class gets its best node by a fixpoint (Bellman-Ford
style, strict improvement only, so the choice is acyclic), where a node's cost is
its own kernel plus the union of the kernels it depends on, so shared tensors are
paid once. A scalar's per-evaluation cost is scaled by how often it is evaluated: the
product of the extents of its free index variables.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from .cost import ARITHMETIC, INF, Model, ScInfo, TenInfo, lanes, untiled_latency
from .terms import Node

CONSTRUCTORS = {
    "Var.named", "Var.mmk", "Var.axis", "Ix.v", "Ix.lit", "Ix.add", "Ix.scale", "Ixs.nil", "Ixs.cons", "Dims.nil",
    "Dims.cons", "Shp.nil", "Shp.cons", "Sc.lit", "Sc.param", "Sc.load", "Sc.add", "Sc.sub", "Sc.mul", "Sc.div",
    "Sc.max", "Sc.min", "Sc.fn", "Sc.red", "Sc.select", "Sc.idx", "Sc.acc", "Ten.input", "Ten.compute", "Ten.matmul", "Ten.transpose", "Ten.slice", "Ten.reshape",
    "Ten.fused", "Ten.opaque", "Tens.nil", "Tens.cons", "Scs.nil", "Scs.cons",
}
STRUCTURAL = {"Var", "Ix", "Ixs", "Dims", "Shp"}


@dataclass(slots=True)
class ENode:
    id: str
    op: str
    args: tuple  # ("c", class id) or ("p", value)
    cls: str
    sort: str  # the op's sort: "Sc" for "Sc.add"
    # per argument, how extraction reads it: (COST_CHILD, class) where the class's best
    # form's cost info is an input, (STRUCT_CHILD, class) where its smallest form is,
    # (VALUE, value) for a primitive (`egraph.read_back` sets it)
    refs: tuple
    # a binary scalar operation over the same two classes as an earlier node of its class
    # (`b + a` beside `a + b`): its cost is that node's, always evaluated just after it and
    # never strictly better, so extraction skips it (`Graph`)
    mirror: bool = False
    ix: int = 0  # its place among the graph's nodes (`Graph`)


VALUE, COST_CHILD, STRUCT_CHILD = 0, 1, 2
COSTED = ("Sc", "Ten", "Tens", "Scs")  # the sorts whose e-classes carry costs


class Graph:
    """The e-graph reduced to constructor nodes grouped by class (`egraph.read_back`
    builds it from egglog's tables): `nodes` are ENodes, `outputs` output index -> e-class,
    `shape_cls` Ten class -> its Shp class."""

    def __init__(self, nodes: list, outputs: dict, shape_cls: dict):
        """`nodes` in id order, each with its `refs` set (`egraph.read_back`)."""
        self.classes: dict[str, list[ENode]] = {}  # (each class's nodes in id order)
        self.shape_cls: dict[str, str] = shape_cls  # Ten class -> Shp class
        self.outputs: dict[int, str] = outputs  # output index -> e-class
        classes = self.classes
        self.n = len(nodes)
        get = classes.get
        for ix, n in enumerate(nodes):
            n.ix = ix
            ns = get(n.cls)
            if ns is None:
                classes[n.cls] = [n]
            else:
                ns.append(n)
        self.order = self._children_first()
        self.parents: dict[str, list] = {}  # class -> nodes that have it as a child
        self.loads_of: dict[str, list] = {}  # tensor class -> (class, index class) of its loads
        self.fused_by_mm: dict[str, list] = {}  # matmul class -> fused nodes over it
        # the nodes that are no child class's parents: leaves, and those marked `mirror`
        self.unparented: list = []
        # one pass, children first: whether a node mirrors an earlier node of its class, and
        # who uses each class
        parents = self.parents
        unparented = self.unparented
        pget = parents.get
        for cid in self.order:
            seen = None
            for n in classes[cid]:
                op = n.op
                if op in ARITHMETIC:  # (its cost is the same with its operands swapped)
                    a, b = n.args[0][1], n.args[1][1]
                    key = (op, a, b) if a <= b else (op, b, a)
                    if seen is None:
                        seen = {key}
                    elif key in seen:
                        n.mirror = True
                        unparented.append(n)
                        continue
                    else:
                        seen.add(key)
                leaf = True
                for kind, v in n.args:
                    if kind == "c":
                        leaf = False
                        ps = pget(v)
                        if ps is None:
                            parents[v] = [n]
                        else:
                            ps.append(n)
                if leaf:
                    unparented.append(n)
                if op == "Sc.load":
                    self.loads_of.setdefault(n.args[0][1], []).append((cid, n.args[1][1]))
                elif op == "Ten.fused":
                    self.fused_by_mm.setdefault(n.args[2][1], []).append(n)

    def class_items(self, input_items: dict) -> dict:
        """Tensor class -> bytes an element, for the classes of inputs narrower than f32
        (`input_items`: input name -> bytes) and the views of them."""
        out: dict = {}
        if not input_items:
            return out
        for cid in self.order:  # children first: a view's input class is seen before it
            for n in self.classes[cid]:
                if n.op == "Ten.input" and n.args[0][1] in input_items:
                    out[cid] = input_items[n.args[0][1]]
                elif n.op in ("Ten.transpose", "Ten.slice", "Ten.reshape") and n.args[0][1] in out:
                    out[cid] = out[n.args[0][1]]
        return out

    def n_nodes(self) -> int:
        return self.n

    def _children_first(self) -> list:
        """Classes in depth-first post-order (a class after the classes its nodes use, but
        on a cycle): a worklist pass in this order finds most costs once, where an arbitrary
        order re-evaluates a long chain once for every improvement below it."""
        order, state = [], {}
        classes = self.classes

        def kids(cid):
            return iter([v for n in classes[cid] for kind, v in n.args if kind == "c"])

        for root in sorted(classes):
            if root in state:
                continue
            state[root] = 1
            stack = [(root, kids(root))]
            while stack:
                cid, it = stack[-1]
                nxt = next(it, None)
                if nxt is None:
                    stack.pop()
                    state[cid] = 2
                    order.append(cid)
                elif nxt not in state and nxt in classes:
                    state[nxt] = 1
                    stack.append((nxt, kids(nxt)))
        return order


# On equal modeled cost (every kernel at the launch floor, as at tiny sizes) a matmul
# kernel wins: the library call, whose cost grows slowest with the sizes, and the form the
# user expects a matmul written as loops to become.
PREFERRED = {"Ten.fused": 1, "Ten.matmul": 1}


def _better(new: float, old: float) -> bool:
    """`new` is cheaper than `old` by more than rounding. Two sums of the same prices in
    another order differ in the last bits; an "improvement" that small is a tie, and
    taking it lets a class switch to a node that reaches back to itself (a 200-layer chain
    then met a cycle in every layer)."""
    return new < old - 1e-12 * abs(old)


class ExtractionCycle(RuntimeError):
    """The greedy choice closed a cycle through this e-class (costs with shared kernels
    and in-context epilogues are not monotone, so strict improvement alone cannot rule
    it out); `decode_roots` bans the node and chooses again."""

    def __init__(self, cid):
        super().__init__(f"extraction chose a cycle through {cid}")
        self.cid = cid


class NoForm(LookupError):
    """An e-class with no form extraction could cost (`Extractor.decode`)."""


class Extractor:
    def __init__(self, g: Graph, model_factory):
        self.g = g
        self.small: dict[str, tuple[int, ENode]] = {}  # structural class -> (size, node)
        self._mult: dict[str, float] = {}
        self._structural()
        self.shapes = {c: self.decode_shape(s) for c, s in g.shape_cls.items()}
        self.red_vars: set = set()  # index variables a reduction binds (filled with the extents)
        self.extent = self._extents()
        self.fv = self._free_vars()
        self.model: Model = model_factory(lambda k: self.shapes.get(k))
        self.model.gather, self.model.strided, self.model.last_var = self.is_gather, self.strided, self.last_var
        self._ixs: dict = {}  # index list class -> its axes (`_axes`)
        self.best: dict[str, tuple] = {}  # class -> (key, node, info)
        self.mm_best: dict[str, tuple] = {}  # class -> (info, node) of its cheapest matmul (for fusion)
        self.epi_choice: dict[str, dict] = {}  # fused node id -> its epilogue's choices
        self.banned: set = set()  # node ids a cycle ruled out
        self._totals: dict = {}  # id of a dependency map -> (the map, its total): `dep_total`
        self.override: dict = {}  # class -> node chosen by another method (the ILP), for decode
        self._fixpoint()

    def decode_roots(self, root_classes, tries: int = 50) -> list | None:
        """Decode every root; a chosen cycle bans the node that closed it, and the choice
        is made again without it (a class left with nothing falls back on its other forms:
        a nest as written always remains). None when every try met a cycle, or a class
        has no costed form (a limit stopped saturation before the support rules had derived
        the facts its costs need: the shapes of a matmul's operands): the caller keeps the
        program as written (or the exact extraction's choice)."""
        for _ in range(tries):
            try:
                memo: dict = {}
                return [self.decode(c, memo) for c in root_classes]
            except NoForm:
                return None
            except ExtractionCycle as cyc:
                self.banned.add(self.best[cyc.cid][1].id)
                self.best, self.mm_best, self.epi_choice = {}, {}, {}
                self._fixpoint()
        return None

    # -------------------------------------------------------------- structural sorts
    def _worklist(self, nodes, evaluate):
        """Run `evaluate(node) -> changed class (or classes) or None` to a fixpoint; a change
        re-queues the nodes that use that class (each class's parents), so a deep chain
        costs its size, not its size times its depth."""
        from collections import deque

        queue = deque(nodes)
        queued = bytearray(self.g.n)  # by ENode.ix
        for n in nodes:
            queued[n.ix] = 1
        parents = self.g.parents
        while queue:
            n = queue.popleft()
            queued[n.ix] = 0
            changed = evaluate(n)
            if changed is None:
                continue
            for cid in (changed,) if type(changed) is str else changed:
                for p in parents.get(cid, ()):
                    if not queued[p.ix]:
                        queued[p.ix] = 1
                        queue.append(p)

    def _structural(self):
        def evaluate(n: ENode):
            size = 1
            for kind, v in n.args:
                if kind == "c":
                    if n.op == "Var.mmk":
                        continue  # a name: its parts are not evaluated
                    if v not in self.small:
                        return None
                    size += self.small[v][0]
            cur = self.small.get(n.cls)
            if cur is None or size < cur[0]:
                self.small[n.cls] = (size, n)
                return n.cls
            return None

        self._worklist([n for c in self.g.order for n in self.g.classes[c] if n.sort in STRUCTURAL], evaluate)

    def _axes(self, cid) -> tuple:
        """(axes, whole) of the index list of class `cid`: per axis, (whether its index is a
        plain variable, the variable classes it mentions), through the classes' smallest
        forms; `whole` is False where the list could not be read to its end."""
        got = self._ixs.get(cid)
        if got is None:
            axes, at = [], cid
            while at in self.small and self.small[at][1].op == "Ixs.cons":
                n = self.small[at][1]
                ix = self.small.get(n.args[0][1])
                axes.append((ix is not None and ix[1].op == "Ix.v", self._ix_vars(n.args[0][1])))
                at = n.args[1][1]
            got = self._ixs[cid] = (axes, at in self.small and self.small[at][1].op == "Ixs.nil")
        return got

    def is_gather(self, cid) -> bool:
        """Whether the index list of class `cid` is other than distinct plain variables (a
        load there is no view of its tensor: `plan.is_gather` on terms)."""
        axes, whole = self._axes(cid)
        if not whole or not all(plain for plain, _ in axes):
            return True
        return len(frozenset().union(*(v for _, v in axes))) != len(axes)  # a variable on two axes

    def _ix_vars(self, cid) -> frozenset:
        """The variable classes an index class mentions (through its smallest form)."""
        if cid not in self.small:
            return frozenset()
        n = self.small[cid][1]
        if n.op == "Ix.v":
            return frozenset({n.args[0][1]})
        out = frozenset()
        for kind, v in n.args:
            if kind == "c":
                out |= self._ix_vars(v)
        return out

    def strided(self, cid) -> frozenset:
        """`cost.ScInfo.strided` of a load at index list class `cid` (`plan.strided` on terms)."""
        axes = [v for _, v in self._axes(cid)[0]]
        return frozenset().union(*axes[:-1]) - axes[-1] if axes else frozenset()

    def last_var(self, cid):
        last = None
        while cid in self.small and self.small[cid][1].op == "Dims.cons":
            n = self.small[cid][1]
            last = n.args[0][1]
            cid = n.args[2][1]
        return last

    def decode_shape(self, cid) -> tuple | None:
        out = []
        while cid in self.small:
            n = self.small[cid][1]
            if n.op == "Shp.nil":
                return tuple(out)
            out.append(n.args[0][1])
            cid = n.args[1][1]
        return None

    def _extents(self) -> dict:
        ext = {}
        for ns in self.g.classes.values():
            for n in ns:
                if n.op == "Dims.cons":
                    ext[n.args[0][1]] = n.args[1][1]
                elif n.op == "Sc.red":
                    ext[n.args[1][1]] = n.args[2][1]
                    self.red_vars.add(n.args[1][1])
        return ext

    def _free_vars(self) -> dict:
        """Free index variables of each class: the intersection over its nodes."""
        fv: dict[str, frozenset] = {}

        get = fv.get
        empty = frozenset()

        def evaluate(n: ENode):
            if n.sort == "Var":
                f = frozenset((n.cls,))
            else:
                f = empty
                for kind, v in n.args:
                    if kind == "c":
                        x = get(v)
                        if x is None:
                            return None
                        if x and x is not f:
                            f = f | x if f else x
                op = n.op
                if op == "Ten.compute":
                    f = fv[n.args[1][1]] - fv[n.args[0][1]]
                elif op == "Ten.fused":
                    f = (fv[n.args[1][1]] - fv[n.args[0][1]]) | fv[n.args[2][1]]
                elif op == "Sc.red":
                    f = fv[n.args[3][1]] - {n.args[1][1]}
                elif op == "Ten.opaque":
                    f = empty
            # intersection is monotone: fold this node in, no need to revisit its siblings
            cur = get(n.cls)
            if cur is None:
                fv[n.cls] = f
                return n.cls
            new = cur & f
            if new != cur:
                fv[n.cls] = new
                return n.cls
            return None

        self._worklist([n for c in self.g.order for n in self.g.classes[c] if not n.mirror], evaluate)
        return fv

    def sc_key(self, cid, info) -> float:
        """What choosing a scalar e-node costs: its work over every evaluation, the kernels
        it needs, and the dependent chain it adds to its kernel."""
        return self.model.evaluations(info, self.mult(cid)) + self.dep_total(info.deps) + self.chain(cid, info)

    def chain(self, cid, info) -> float:
        """The dependent latency a scalar adds to its kernel: its own chain of loads and
        multiply-adds (`cost.untiled_latency`) once for every step of the reductions it
        sits in (the variables free in it that reductions bind). Without it, recomputing a
        product inside another reduction looks cheaper than reading it from a matmul
        kernel, though the kernel's latency then multiplies (softmax over q.k rows)."""
        if not info.has_red:
            return 0.0
        outer = [self.extent.get(v, 1) for v in self.fv.get(cid, ()) if v in self.red_vars]
        if not outer:  # its kernel's own reductions: trees over lanes
            return untiled_latency(self.model.t, info)
        # inside other reductions, it runs as a chain in each lane of the outermost one (a
        # tree over at most lanes(its extent)); which one is outermost is not known here, so
        # the one that divides least
        width = min(lanes(self.model.t, e) for e in outer)
        return untiled_latency(self.model.t, info, tree=False) * math.prod(outer) / width

    def mult(self, cid) -> float:
        m = self._mult.get(cid)
        if m is None:
            m = self._mult[cid] = float(math.prod(self.extent.get(v, 1) for v in self.fv.get(cid, ())))
        return m

    # -------------------------------------------------------------- costs
    def dep_total(self, deps: dict) -> float:
        """math.fsum of a dependency map's prices, once per map (maps are never changed once
        made, and a chain's ops share one: summing it at every op was quadratic)."""
        hit = self._totals.get(id(deps))
        if hit is not None and hit[0] is deps:
            return hit[1]
        total = math.fsum(deps.values())
        self._totals[id(deps)] = (deps, total)  # holding the map keeps its id unique
        return total

    def _node_info(self, n: ENode):
        best, small = self.best, self.small
        if n.op in ARITHMETIC:  # most scalar e-nodes: the general path below, unrolled
            (_, x), (_, y) = n.refs
            bx, by = best.get(x), best.get(y)
            if bx is None or by is None:
                return None
            info = self.model.arithmetic(bx[2], by[2])
            cid = n.cls
            m = self._mult.get(cid)
            if m is None:
                m = self.mult(cid)
            deps = info.deps
            key = self.model.evaluations(info, m) + (self.dep_total(deps) if deps else 0.0)
            return (key + self.chain(cid, info) if info.has_red else key), info
        a = []
        for code, v in n.refs:
            if code == COST_CHILD:
                b = best.get(v)
                if b is None:
                    return None
                info = b[2]
                a.append((v, info) if type(info) is TenInfo else info)
            elif code == VALUE:
                a.append(v)
            else:
                if v not in small:
                    return None
                a.append(v)
        m = self.model
        if n.sort == "Sc":
            info = m.sc(n.op, a)
            if info is None:
                return None
            return self.sc_key(n.cls, info), info
        if n.sort == "Ten":
            closed = not self.fv.get(n.cls)
            extents = None
            if n.op in ("Ten.compute", "Ten.fused"):
                extents = self.shapes.get(n.cls) or self._dims_extents(n.args[0][1])
            if n.op == "Ten.fused":
                kmm = a[2][0]
                body = self._epilogue(n)
                if kmm not in self.mm_best or body is None:
                    return None
                a[1] = body
                a[2] = (kmm, self.mm_best[kmm][0])
            info = m.ten(n.cls, n.op, a, closed, extents)
            if info is None or info.own == INF:
                return None
            return info.own + self.dep_total(info.deps), info  # TenInfo.total
        if n.sort in ("Tens", "Scs"):
            d = m.lists(n.op, a)
            return (None if d is None else (self.dep_total(d), d))
        return None

    def _dims_extents(self, cid) -> list:
        out = []
        while cid in self.small and self.small[cid][1].op == "Dims.cons":
            n = self.small[cid][1]
            out.append(n.args[1][1])
            cid = n.args[2][1]
        return out

    def _fixpoint(self):
        rank = {op: i for i, op in enumerate(sorted(CONSTRUCTORS))}

        banned, best, node_info = self.banned, self.best, self._node_info

        def take(n: ENode, r) -> bool:
            """Make `n` its class's choice if it is better. Strict improvement only:
            equal-cost alternatives never displace a choice, which keeps the chosen nodes
            acyclic -- except that a matmul kernel takes an equal-cost place from any other
            form (one way only, so no class can go back and forth; a cycle it closes is
            banned by decode_roots like any other)."""
            cur = best.get(n.cls)
            if cur is None or _better(r[0], cur[0][0]) or \
                    (PREFERRED.get(n.op, 0) > PREFERRED.get(cur[1].op, 0) and not _better(cur[0][0], r[0])):
                best[n.cls] = ((r[0], rank[n.op], n.id), n, r[1])
                return True
            return False

        def evaluate(n: ENode):
            if banned and n.id in banned:
                return None
            r = node_info(n)
            if r is None:
                return None
            cid = n.cls
            if n.op != "Ten.matmul":  # (most nodes: no fused classes to update)
                return cid if take(n, r) else None
            fused_changed = []  # fused classes over this product that improved with it
            old = self.mm_best.get(cid)
            if old is None or _better(r[0], old[0].total):
                self.mm_best[cid] = (r[1], n)
                for f in self.g.fused_by_mm.get(cid, ()):
                    if evaluate(f) is not None:
                        # (their readers must see it: re-evaluating the fused node
                        # later finds nothing new, so no one else would queue them)
                        fused_changed.append(f.cls)
            if take(n, r):
                return [cid] + fused_changed
            return fused_changed or None

        nodes = [n for c in self.g.order for n in self.g.classes[c] if n.sort not in STRUCTURAL and not n.mirror]
        fused = [n for n in nodes if n.op == "Ten.fused"]
        self._worklist(nodes, evaluate)
        # a fused epilogue is chosen in context, so it can improve without its body's class
        # improving: re-evaluate those until nothing moves
        for _ in range(10):
            moved = [n for n in fused if evaluate(n) is not None]
            if not moved:
                break
            self._worklist([p for n in moved for p in self.g.parents.get(n.cls, ())], evaluate)

    # -------------------------------------------------------------- fused epilogues
    def _var_list(self, cid, op_cons: str) -> list | None:
        """Variable classes of a Dims or an Ixs of plain variables, in order."""
        out = []
        while cid in self.small:
            n = self.small[cid][1]
            if n.op in ("Dims.nil", "Ixs.nil"):
                return out
            if n.op != op_cons:
                return None
            if op_cons == "Dims.cons":
                out.append(n.args[0][1])
                cid = n.args[2][1]
            else:
                ix = self.small.get(n.args[0][1])
                if ix is None or ix[1].op != "Ix.v":
                    return None
                out.append(ix[1].args[0][1])
                cid = n.args[1][1]
        return None

    def _epilogue(self, f: ENode):
        """Cost of a fused node's body with the accumulator free: a choice made in context.

        A scalar class holding `mm[d]` is the accumulator there (cost 0); every other
        class takes its cheapest node under that assumption.
        """
        dims_cls, body_cls, mm_cls = (v for _, v in f.args)
        want = self._var_list(dims_cls, "Dims.cons")
        acc = {cid for cid, ixs in self.g.loads_of.get(mm_cls, ()) if self._var_list(ixs, "Ixs.cons") == want}
        choice: dict = {}
        sizes: dict = {}  # class -> e-nodes of its chosen term: on equal cost the smaller wins
        m = self.model

        def go(cid, visiting):
            if cid in choice:
                return choice[cid]
            if cid in acc:
                choice[cid] = (0.0, ScInfo(), "acc")
                return choice[cid]
            if cid in visiting:
                return None
            visiting.add(cid)
            best, best_size = None, 0
            for n in self.g.classes.get(cid, ()):
                a = []
                for kind, v in n.args:
                    if kind == "p":
                        a.append(v)
                        continue
                    sort = self.g.classes[v][0].sort if v in self.g.classes else None
                    if sort == "Sc":
                        r = go(v, visiting)
                        if r is None:
                            break
                        a.append(r[1])
                    elif sort == "Ten":
                        if v not in self.best:
                            break
                        a.append((v, self.best[v][2]))
                    elif v in self.small:
                        a.append(v)
                    else:
                        break
                else:
                    info = m.sc(n.op, a)
                    if info is not None:
                        key = self.sc_key(cid, info)
                        size = 1 + sum(sizes.get(v, 0) for kind, v in n.args if kind == "c")
                        # equal cost: the smaller term (`silu(x)` over `x * sigmoid(x)`)
                        if best is None or (key, size) < (best[0], best_size):
                            best, best_size = (key, info, n), size
            visiting.discard(cid)
            if best is not None:
                choice[cid] = best
                sizes[cid] = best_size
            return best

        r = go(body_cls, set())
        if r is None:
            return None
        self.epi_choice[f.id] = choice
        return r[1]

    # -------------------------------------------------------------- decoding
    def decode(self, cid, memo=None, stack=None) -> Node:
        memo = {} if memo is None else memo
        stack = set() if stack is None else stack
        if cid in memo:
            return memo[cid]
        if cid in stack:
            raise ExtractionCycle(cid)
        stack.add(cid)
        if cid in self.small:
            n = self.small[cid][1]
        elif cid in self.override:
            n = self.override[cid]
        elif cid in self.best:
            n = self.best[cid][1]
        else:
            raise NoForm(f"no executable form for e-class {cid}")
        if n.sort == "Var":
            name = n.args[0][1] if n.op == "Var.named" else f"k#{cid.rsplit('-', 1)[-1]}"
            out = Node("Var.named", name)
        elif n.op == "Ten.fused":
            choice = self.epi_choice[n.id]
            mm = self.mm_best[n.args[2][1]][1]
            dims = self.decode(n.args[0][1], memo, stack)
            body = self._decode_in(n.args[1][1], choice, memo, stack, {})
            out = Node("Ten.fused", dims, body, Node("Ten.matmul", *[self.decode(v, memo, stack) for _, v in mm.args]))
        else:
            out = Node(n.op, *[v if kind == "p" else self.decode(v, memo, stack) for kind, v in n.args])
        stack.discard(cid)
        memo[cid] = out
        return out

    def _decode_in(self, cid, choice, memo, stack, local) -> Node:
        """Decode a fused body with its in-context choices (the accumulator as Sc.acc)."""
        if cid in local:
            return local[cid]
        entry = choice.get(cid)
        if entry is None:
            return self.decode(cid, memo, stack)
        if entry[2] == "acc":
            out = Node("Sc.acc")
        else:
            n = entry[2]
            args = []
            for kind, v in n.args:
                if kind == "p":
                    args.append(v)
                elif v in choice:
                    args.append(self._decode_in(v, choice, memo, stack, local))
                else:
                    args.append(self.decode(v, memo, stack))
            out = Node(n.op, *args)
        local[cid] = out
        return out
