"""Exact extraction over kernels, as an integer linear program (scipy's HiGHS).

The one cost model (`cost.Model`) prices a plan as the sum of the kernels it needs, each
paid once: a kernel's time depends on the scalar code inside it (its body, its fused
epilogue, its prologues), which the greedy pass has already chosen node by node. So the
program here chooses tensors only: one binary variable per tensor e-node (and one per loop
nest, paid once for all its outputs), priced at the model's own time for that node with
its greedy interior; a chosen node needs a chosen node in each tensor class its interior
reads, a root class needs one. For any choice the objective is then exactly the model's
price of the plan it decodes to, the greedy plan is one feasible choice (so its price
bounds the search from above) and the optimum is never worse than greedy. A solution may
choose a cycle (a view of a view of itself); such a cycle is forbidden with one more
constraint and the problem solved again, as Tensat and extraction-gym do.
"""
from __future__ import annotations

import heapq
import time

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import lil_matrix

from .cost import INF, loop_time
from .extract import ENode, Extractor

VIEWS = ("Ten.transpose", "Ten.slice", "Ten.reshape")
EPS = 1e-12  # seconds: far below any kernel's price
SCALE = 1e6  # the solver works in microseconds: its absolute tolerances (1e-7) would be
             # coarse against prices of ~1e-5 seconds


class Kernels:
    """The tensor e-nodes of an extracted e-graph as ILP items: their price and the
    tensor classes they read, with every scalar choice the greedy pass made."""

    def __init__(self, ext: Extractor):
        self.ext = ext
        self._reads: dict = {}  # non-tensor class -> tensor classes its greedy form reads

    def price(self, n: ENode) -> float | None:
        if n.id in self.ext.banned:
            return None
        r = self.ext._node_info(n)
        if r is None or r[1].own == INF:
            return None
        # a view is free in the model; a tiny price keeps the solver from choosing needless
        # views (a transpose of a transpose), which would only be cycles to block
        return EPS if r[1].view else r[1].own

    def reads(self, cid) -> frozenset:
        """Tensor classes read by the greedy form of a scalar or list class."""
        ext = self.ext
        if cid in self._reads:
            return self._reads[cid]
        ns = ext.g.classes.get(cid)
        if not ns or cid in ext.small:
            return frozenset()
        if ns[0].sort == "Ten":
            return frozenset({cid})
        self._reads[cid] = frozenset()  # a cycle through scalars reads nothing more
        best = ext.best.get(cid)
        out = frozenset() if best is None else self._args(best[1])
        self._reads[cid] = out
        return out

    def _args(self, n: ENode) -> frozenset:
        out = frozenset()
        for kind, v in n.args:
            if kind == "c":
                out |= self.reads(v)
        return out

    def operand(self, cid) -> frozenset:
        """What a matmul reading class `cid` needs: the class itself, or, when the model
        fuses it as a prologue (an elementwise compute, maybe behind views), what that
        prologue reads."""
        ext = self.ext
        best = ext.best.get(cid)
        if best is None or not best[2].prologue or not ext.model.t.fused_prologues:
            return frozenset({cid})
        n = best[1]
        while n.op in VIEWS:
            n = ext.best[n.args[0][1]][1]
        return self.reads(n.args[1][1])

    def needs(self, n: ENode) -> frozenset:
        """Tensor classes a tensor node needs materialized (or viewed) when chosen."""
        ext = self.ext
        if n.op == "Ten.input":
            return frozenset()
        if n.op in VIEWS:
            return frozenset({n.args[0][1]})
        if n.op == "Ten.compute":
            return self.reads(n.args[1][1])
        if n.op == "Ten.matmul":
            return self.operand(n.args[0][1]) | self.operand(n.args[1][1])
        if n.op == "Ten.fused":
            out = frozenset()
            mm = ext.mm_best.get(n.args[2][1])
            if mm is not None:
                out |= self.operand(mm[1].args[0][1]) | self.operand(mm[1].args[1][1])
            choice = ext.epi_choice.get(n.id, {})
            stack, seen = [n.args[1][1]], set()
            while stack:  # the epilogue as chosen in context, from its root
                cid = stack.pop()
                if cid in seen:
                    continue
                seen.add(cid)
                entry = choice.get(cid)
                if entry is None:
                    out |= self.reads(cid)
                elif entry[2] != "acc":
                    stack.extend(v for kind, v in entry[2].args if kind == "c")
            return out
        return self._args(n)  # Ten.opaque: its input tensors and scalars


def solve(ext: Extractor, roots: list, time_limit: float = 10.0, max_rounds: int = 50,
          shortcut: bool = False) -> dict:
    """Choose one tensor node per needed class: {"choice": {class: ENode} or None, "stats"}.

    With `shortcut`, no solve when greedy's plan already costs a lower bound of every plan
    (`_lower_bound`, within a nanosecond): greedy's plan is then optimal, "choice" is None
    and the status says so. Most small programs are a chain of kernels, whose bound is
    exact, and HiGHS takes a few ms to say what greedy found."""
    t0 = time.perf_counter()
    k = Kernels(ext)
    nodes, cost = [], []
    for cid in ext.g.order:
        for n in ext.g.classes[cid]:
            if n.sort == "Ten":
                c = k.price(n)
                if c is not None:
                    nodes.append(n)
                    cost.append(c)
    index = {id(n): i for i, n in enumerate(nodes)}
    by_class: dict = {}
    for i, n in enumerate(nodes):
        by_class.setdefault(n.cls, []).append(i)
    nests = sorted({n.args[0][1] for n in nodes if n.op == "Ten.opaque"})
    nest_var = {nid: len(nodes) + j for j, nid in enumerate(nests)}
    nvar = len(nodes) + len(nests)
    c = np.zeros(nvar)
    c[:len(nodes)] = cost
    for nid, v in nest_var.items():
        c[v] = loop_time(ext.model.t, ext.model.nest_work(nid))
    # each node's needed classes in id order: HiGHS's choice among equal-cost optima
    # follows the rows' order, which a set's order (salted per process) would make vary
    needs = [sorted(k.needs(n)) for n in nodes]

    rows = []  # (coefficients, lower, upper)
    for i, n in enumerate(nodes):
        for ch in needs[i]:
            members = by_class.get(ch)
            if not members:
                rows.append(({i: 1.0}, -np.inf, 0.0))  # needs a class with no executable node
                continue
            coef = {j: -1.0 for j in members}
            coef[i] = coef.get(i, 0.0) + 1.0
            rows.append((coef, -np.inf, 0.0))
        if n.op == "Ten.opaque":
            rows.append(({i: 1.0, nest_var[n.args[0][1]]: -1.0}, -np.inf, 0.0))
    for r in roots:
        rows.append(({j: 1.0 for j in by_class.get(r, ())}, 1.0, np.inf))
    # the short cycles (a node needing its own class; two views of each other) are ruled
    # out up front: blocking them one solve at a time costs a round each
    needs_set = [frozenset(x) for x in needs]
    for i, n in enumerate(nodes):
        for ch in needs[i]:
            if ch == n.cls:
                rows.append(({i: 1.0}, -np.inf, 0.0))
                continue
            for j in by_class.get(ch, ()):
                if j > i and n.cls in needs_set[j]:
                    rows.append(({i: 1.0, j: 1.0}, -np.inf, 1.0))

    c *= SCALE
    greedy = _greedy_value(ext, roots, index, needs, c, nest_var)
    bound = None
    if greedy is not None:  # the greedy plan is feasible: nothing above it is worth searching
        bound = len(rows)   # (with room: HiGHS's presolve has called a bound this tight infeasible)
        rows.append(({i: c[i] for i in range(nvar) if c[i]}, -np.inf, greedy * (1 + 1e-6) + 1e-3))

    stats = {"variables": nvar, "cycles_blocked": 0, "rounds": 0, "status": "",
             "greedy_objective": None if greedy is None else greedy / SCALE}
    if shortcut and greedy is not None:
        extra = [c[nest_var[n.args[0][1]]] if n.op == "Ten.opaque" else 0.0 for n in nodes]
        floor = _lower_bound(roots, nodes, by_class, needs, c, extra)
        if greedy <= floor + 1e-9 * SCALE:  # (prices are in microseconds here)
            stats.update(status="optimal (greedy's plan costs the lower bound; not solved)",
                         objective=greedy / SCALE, seconds=time.perf_counter() - t0)
            return {"choice": None, "stats": stats}
    choice = None
    for _ in range(max_rounds):
        stats["rounds"] += 1
        left = time_limit - (time.perf_counter() - t0)
        if left <= 0:
            stats["status"] = "time limit"
            break
        A = lil_matrix((len(rows), nvar))
        lo, hi = np.empty(len(rows)), np.empty(len(rows))
        for r, (coef, lb, ub) in enumerate(rows):
            for j, v in coef.items():
                A[r, j] = v
            lo[r], hi[r] = lb, ub
        res = milp(c, constraints=LinearConstraint(A.tocsr(), lo, hi), integrality=np.ones(nvar),
                   bounds=Bounds(0, 1), options={"time_limit": left})
        if res.x is None:
            if bound is not None and res.status == 2:  # infeasible: solve again without the bound
                rows.pop(bound)
                bound = None
                continue
            stats["status"] = res.message
            break
        chosen = {}
        for i, n in enumerate(nodes):
            if res.x[i] > 0.5 and (n.cls not in chosen or cost[i] < cost[index[id(chosen[n.cls])]]):
                chosen[n.cls] = n
        cycle = _find_cycle(roots, chosen, index, needs)
        if cycle is None:
            choice = chosen
            stats["status"] = "optimal" if res.status == 0 else res.message
            stats["objective"] = float(res.fun) / SCALE
            break
        stats["cycles_blocked"] += 1
        rows.append(({index[id(n)]: 1.0 for n in cycle}, -np.inf, len(cycle) - 1.0))
    stats["seconds"] = time.perf_counter() - t0
    return {"choice": choice, "stats": stats}


def _lower_bound(roots, nodes, by_class, needs, c, extra) -> float:
    """A price no plan can beat. A chosen node is paid with everything it needs, and the
    choice is acyclic, so a class costs at least the least, over its nodes, of the node's
    price plus the most that one of its needed classes costs at least (the most, not the
    sum: needs may share kernels). Over acyclic choices that is a least fixpoint, found
    cheapest class first (Knuth's generalization of Dijkstra's algorithm; every price is
    non-negative and a node's value is at least its needs'). Over the roots: the largest
    of theirs, or the cheapest node of each distinct root, summed, whichever is more. A
    kept nest's price (`extra`, per node) is shared by its outputs, so only a root's own
    node pays it (counted below as well, two outputs of one nest would pay it twice)."""
    users: dict = {}  # class -> nodes that need it
    waiting, worst, heap = [], [], []
    for i in range(len(nodes)):
        need = needs[i]  # (distinct classes)
        waiting.append(len(need))
        worst.append(0.0)
        if any(ch not in by_class for ch in need):
            waiting[i] = -1  # needs a class with no executable node: never chosen
            continue
        for ch in need:
            users.setdefault(ch, []).append(i)
        if not need:
            heapq.heappush(heap, (float(c[i]), i))
    lb: dict = {}
    while heap:
        value, i = heapq.heappop(heap)
        cls = nodes[i].cls
        if cls in lb:
            continue
        lb[cls] = value
        for j in users.get(cls, ()):
            if waiting[j] > 0:
                worst[j] = max(worst[j], value)
                waiting[j] -= 1
                if waiting[j] == 0:
                    heapq.heappush(heap, (float(c[j]) + worst[j], j))
    distinct = set(roots)

    def at_root(i):  # a root's own node pays its nest's price (once: none below it does)
        if waiting[i] != 0:  # needs a class no acyclic choice reaches
            return float("inf")
        return float(c[i]) + extra[i] + max((lb.get(ch, 0.0) for ch in needs[i]), default=0.0)

    each = sum(min(c[j] for j in by_class[r]) for r in distinct if by_class.get(r))
    return max([each] + [min(map(at_root, by_class[r])) for r in distinct if by_class.get(r)])


def _greedy_value(ext, roots, index, needs, c, nest_var) -> float | None:
    """The greedy plan's objective: its tensor nodes and nests, each counted once."""
    seen, total, nests = set(), 0.0, set()
    stack = list(roots)
    while stack:
        cid = stack.pop()
        if cid in seen:
            continue
        seen.add(cid)
        n = ext.best.get(cid, (None, None))[1]
        if n is None or id(n) not in index:
            return None
        i = index[id(n)]
        total += c[i]
        if n.op == "Ten.opaque":
            nests.add(n.args[0][1])
        stack.extend(needs[i])
    return total + sum(c[nest_var[k]] for k in nests)


def _find_cycle(roots, chosen, index, needs) -> list | None:
    state: dict = {}
    path: list = []

    def visit(cid):
        st = state.get(cid)
        if st == 1:
            i = next(j for j, n in enumerate(path) if n.cls == cid)
            return path[i:]
        if st == 2 or cid not in chosen:
            return None
        state[cid] = 1
        n = chosen[cid]
        path.append(n)
        for ch in needs[index[id(n)]]:
            cyc = visit(ch)
            if cyc is not None:
                return cyc
        path.pop()
        state[cid] = 2
        return None

    for r in roots:
        cyc = visit(r)
        if cyc is not None:
            return cyc
    return None
