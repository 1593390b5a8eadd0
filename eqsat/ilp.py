"""Exact extraction as an integer linear program (scipy's HiGHS), with lazy cycle blocking.

One binary variable per e-node (and one per loop nest, paid once for all its outputs):
a chosen node needs a chosen node in each child class, a root class needs one, and the
objective is the sum of the chosen nodes' costs, so a shared tensor is paid once.
Each node's cost is its own share of the greedy model: a kernel node its kernel time
(from `Extractor`), a scalar node its own work scaled by how often it runs. A solution
may choose a cycle (a view of a view of itself); such a cycle is forbidden with one more
constraint and the problem solved again, as Tensat and extraction-gym do.

The greedy choice bounds the objective from above, so the solver only searches below it.
"""
from __future__ import annotations

import time

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import lil_matrix

from .cost import FN_FLOPS, ITEM, INF
from .extract import STRUCTURAL, ENode, Extractor

EPS = 1e-15  # structural nodes: free, but not zero, so the solver prefers small terms


def node_cost(ext: Extractor, n: ENode) -> float | None:
    t = ext.model.t
    if n.sort in STRUCTURAL:
        return EPS
    r = ext._node_info(n)
    if r is None:
        return None
    if n.sort == "Ten":
        return r[1].own if not r[1].view else 0.0
    if n.sort != "Sc":
        return EPS
    m = ext.mult(n.cls)
    if n.op == "Sc.load":
        return ITEM / t.bandwidth * m
    if n.op == "Sc.fn":
        return FN_FLOPS.get(n.args[0][1], 4) / t.simt_flops * m
    if n.op == "Sc.red":
        return n.args[2][1] / t.simt_flops * ext.mult(n.args[3][1])
    if n.op in ("Sc.lit", "Sc.param"):
        return 0.0
    return 1.0 / t.simt_flops * m


def children(ext: Extractor, n: ENode) -> list:
    """Classes a node needs; a fused node needs its epilogue's tensors and its operands."""
    if n.op == "Var.mmk":
        return []
    if n.op == "Ten.fused":
        out = [n.args[0][1]]
        mm = ext.mm_best.get(n.args[2][1])
        if mm is not None:
            out += [v for k, v in mm[1].args if k == "c"]
        for cid, entry in ext.epi_choice.get(n.id, {}).items():
            if entry[2] == "acc":
                continue
            for k, v in entry[2].args:
                if k == "c" and v not in ext.epi_choice[n.id]:
                    out.append(v)
        return out
    return [v for k, v in n.args if k == "c"]


def solve(ext: Extractor, roots: list, time_limit: float = 10.0, max_rounds: int = 50) -> dict:
    """Choose one node per needed class; returns {class: ENode} and fills `stats`."""
    t0 = time.perf_counter()
    nodes, cost = [], []
    for cid in ext.g.order:
        for n in ext.g.classes[cid]:
            c = node_cost(ext, n)
            if c is not None and c != INF:
                nodes.append(n)
                cost.append(c)
    index = {id(n): i for i, n in enumerate(nodes)}
    by_class: dict = {}
    for i, n in enumerate(nodes):
        by_class.setdefault(n.cls, []).append(i)
    nests = sorted({n.args[0][1] for n in nodes if n.op == "Ten.opaque"})
    nest_var = {nid: len(nodes) + k for k, nid in enumerate(nests)}
    nvar = len(nodes) + len(nests)
    c = np.zeros(nvar)
    c[:len(nodes)] = cost
    for nid, v in nest_var.items():
        from .cost import loop_time

        c[v] = loop_time(ext.model.t, ext.model.nest_work(nid))

    rows = []  # (coefficients dict, lower, upper)
    for i, n in enumerate(nodes):
        for ch in set(children(ext, n)):
            members = by_class.get(ch)
            if not members:
                rows.append(({i: 1.0}, -np.inf, 0.0))  # a child with no executable node: never pick n
                continue
            coef = {j: -1.0 for j in members}
            coef[i] = coef.get(i, 0.0) + 1.0
            rows.append((coef, -np.inf, 0.0))
        if n.op == "Ten.opaque":
            rows.append(({i: 1.0, nest_var[n.args[0][1]]: -1.0}, -np.inf, 0.0))
    for r in roots:
        rows.append(({j: 1.0 for j in by_class[r]}, 1.0, np.inf))

    # the greedy solution is feasible: its cost bounds the search
    greedy = _greedy_value(ext, roots, index, c, nest_var)
    if greedy is not None:
        rows.append(({i: c[i] for i in range(nvar) if c[i]}, -np.inf, greedy * (1 + 1e-9) + 1e-12))

    stats = {"variables": nvar, "cycles_blocked": 0, "rounds": 0, "status": "", "greedy_objective": greedy}
    choice = None
    for _ in range(max_rounds):
        stats["rounds"] += 1
        left = time_limit - (time.perf_counter() - t0)
        if left <= 0:
            stats["status"] = "time limit"
            break
        A = lil_matrix((len(rows), nvar))
        lo, hi = np.empty(len(rows)), np.empty(len(rows))
        for k, (coef, lb, ub) in enumerate(rows):
            for j, v in coef.items():
                A[k, j] = v
            lo[k], hi[k] = lb, ub
        res = milp(c, constraints=LinearConstraint(A.tocsr(), lo, hi), integrality=np.ones(nvar),
                   bounds=Bounds(0, 1), options={"time_limit": left})
        if res.x is None:
            stats["status"] = res.message
            break
        chosen = {}
        for i, n in enumerate(nodes):
            if res.x[i] > 0.5 and (n.cls not in chosen or cost[i] < cost[index[id(chosen[n.cls])]]):
                chosen[n.cls] = n
        cycle = _find_cycle(ext, roots, chosen)
        if cycle is None:
            choice = chosen
            stats["status"] = "optimal" if res.status == 0 else res.message
            stats["objective"] = float(res.fun)
            break
        stats["cycles_blocked"] += 1
        rows.append(({index[id(n)]: 1.0 for n in cycle}, -np.inf, len(cycle) - 1.0))
    stats["seconds"] = time.perf_counter() - t0
    return {"choice": choice, "stats": stats}


def _greedy_value(ext, roots, index, c, nest_var) -> float | None:
    seen, total, nests = set(), 0.0, set()
    stack = list(roots)
    while stack:
        cid = stack.pop()
        if cid in seen:
            continue
        seen.add(cid)
        n = ext.small[cid][1] if cid in ext.small else ext.best.get(cid, (None, None))[1]
        if n is None or id(n) not in index:
            return None
        total += c[index[id(n)]]
        if n.op == "Ten.opaque":
            nests.add(n.args[0][1])
        stack.extend(children(ext, n))
    return total + sum(c[nest_var[k]] for k in nests)


def _find_cycle(ext, roots, chosen) -> list | None:
    state: dict = {}
    path: list = []

    def visit(cid):
        st = state.get(cid)
        if st == 1:
            i = next(k for k, n in enumerate(path) if n.cls == cid)
            return path[i:]
        if st == 2 or cid not in chosen:
            return None
        state[cid] = 1
        n = chosen[cid]
        path.append(n)
        for ch in children(ext, n):
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
