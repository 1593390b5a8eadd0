"""Building the e-graph from lowered terms, running the rules within limits, reading it back."""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

from egglog import EGraph, Ruleset, back_off, run, union

from . import sorts as S
from .limits import Limits
from .terms import Node

SORTS = {"Var": S.Var, "Ix": S.Ix, "Ixs": S.Ixs, "Dims": S.Dims, "Sc": S.Sc, "Ten": S.Ten, "Tens": S.Tens,
         "Scs": S.Scs, "Shp": S.Shp}


@dataclass
class SaturationReport:
    iterations: int = 0
    stop_reason: str = "saturated"
    nodes: int = 0
    seconds: float = 0.0
    build_seconds: float = 0.0
    per_iteration_nodes: list = field(default_factory=list)


class Builder:
    """Encodes hash-consed `Node`s into one e-graph; each tensor gets its own `let`."""

    def __init__(self, egraph: EGraph):
        self.eg = egraph
        self.memo: dict = {}
        self.n_lets = 0

    def encode(self, node: Node):
        e = self.memo.get(node)
        if e is not None:
            return e
        sort, name = node.op.split(".", 1)
        args = [self.encode(a) if isinstance(a, Node) else a for a in node.args]
        e = getattr(SORTS[sort], name)(*args)
        if sort == "Ten":
            e = self.eg.let(f"_t{self.n_lets}", e)
            self.n_lets += 1
        self.memo[node] = e
        return e


def shape_expr(shape) -> S.Shp:
    out = S.Shp.nil()
    for n in reversed(shape):
        out = S.Shp.cons(int(n), out)
    return out


def build(lowered, opaque_shapes: dict) -> tuple[EGraph, Builder, list]:
    eg = EGraph()
    b = Builder(eg)
    for name, shape in lowered.input_shapes.items():
        eg.register(union(S.shape_of(S.Ten.input(name))).with_(shape_expr(shape)))
    roots = [b.encode(r) for r in lowered.roots]
    for i, r in enumerate(roots):
        eg.register(union(S.output(i)).with_(r))
    for a, c in lowered.unions:
        eg.register(union(b.encode(a)).with_(b.encode(c)))
    for node, shape in opaque_shapes.items():
        eg.register(union(S.shape_of(b.encode(node))).with_(shape_expr(shape)))
    return eg, b, roots


def node_count(eg: EGraph) -> int:
    return sum(n for _, n in eg.all_function_sizes())


def saturate(eg: EGraph, families: list, support: Ruleset, limits: Limits) -> SaturationReport:
    """Run `support` to saturation, then every family once (back-off scheduled), repeatedly.

    Stops at saturation or at the first limit reached; the e-graph then holds the best
    forms found so far, and the report says why it stopped.
    """
    rep = SaturationReport()
    t0 = time.perf_counter()
    eg.run(run(support).saturate())
    rep.nodes = node_count(eg)
    if not families:
        rep.nodes = node_count(eg)
        rep.seconds = time.perf_counter() - t0
        return rep
    sched = None
    for r in families:
        step = run(r, scheduler=back_off(match_limit=limits.match_limit, ban_length=limits.ban_length))
        sched = step if sched is None else sched + step
    one = sched + run(support).saturate()
    # Each eg.run() call costs ~15 ms of Python-side schedule processing, so rounds run in
    # chunks while the e-graph is small, and one at a time once it nears the node limit.
    rep.stop_reason = f"iteration limit ({limits.iterations})"
    while rep.iterations < limits.iterations:
        n = limits.chunk if rep.nodes < limits.nodes // 8 else 1
        n = min(n, limits.iterations - rep.iterations)
        report = eg.run(one * n)
        rep.iterations += n
        before, rep.nodes = rep.nodes, node_count(eg)
        rep.per_iteration_nodes.append(rep.nodes)
        # egglog reports `updated` when rules matched, even if nothing new came of it; a
        # round that adds no e-node is a fixpoint for these rules
        if not report.updated or rep.nodes == before:
            rep.stop_reason = "saturated"
            break
        if rep.nodes > limits.nodes:
            rep.stop_reason = f"node limit ({rep.nodes} > {limits.nodes} e-nodes)"
            break
        if time.perf_counter() - t0 > limits.seconds:
            rep.stop_reason = f"time limit ({limits.seconds:g} s)"
            break
    rep.seconds = time.perf_counter() - t0
    return rep


def serialize(eg: EGraph) -> dict:
    """The e-graph as {"nodes": {id: {"op", "children", "eclass"}}} (egglog's JSON)."""
    s = eg._serialize(split_primitive_outputs=False)
    return json.loads(s.to_json())
