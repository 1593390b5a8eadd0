"""Building the e-graph from lowered terms, running the rules within limits, reading it back."""
from __future__ import annotations

import contextlib
import json
import threading
import time
from dataclasses import dataclass, field

from egglog import EGraph, Ruleset, back_off, run
from egglog.egraph import to_runtime_expr

from . import sorts as S
from .limits import Limits, resident_mb
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
    # one entry per call into egglog: {"round": rounds done, "nodes", "seconds",
    # "matches": {rule name: matches}} (a call runs one round, or a chunk of them)
    rounds: list = field(default_factory=list)
    rule_matches: dict = field(default_factory=dict)  # rule name -> matches over the whole run

    def record(self, n_rounds: int, seconds: float, matches: dict) -> None:
        self.rounds.append({"round": self.iterations, "rounds": n_rounds, "nodes": self.nodes,
                            "seconds": seconds, "matches": matches})
        for k, v in matches.items():
            self.rule_matches[k] = self.rule_matches.get(k, 0) + v


class Builder:
    """Encodes hash-consed `Node`s into one e-graph as egglog program text.

    Every tensor gets its own `let`, and everything is sent in one call: building terms
    through egglog-python's expression objects costs ~0.2 ms a constructor, which made
    building dominate optimize() on long programs.
    """

    def __init__(self, egraph: EGraph, declare: bool = True):
        self.eg = egraph
        self.memo: dict = {}  # Node -> egglog text (a `$let` name for tensors)
        self.lines: list = []
        if declare:
            _declare(egraph)

    def encode(self, root: Node) -> str:
        """Children before parents, without recursion (a chain of layers is a deep term)."""
        stack = [root]
        while stack:
            node = stack[-1]
            if node in self.memo:
                stack.pop()
                continue
            todo = [a for a in node.args if isinstance(a, Node) and a not in self.memo]
            if todo:
                stack.extend(todo)
                continue
            stack.pop()
            args = " ".join(self.memo[a] if isinstance(a, Node) else _literal(a) for a in node.args)
            text = f"({_egg_name(node.op)} {args})" if args else f"({_egg_name(node.op)})"
            # tensors, and any term whose text grew long: egglog's parser and type checker
            # take time and memory superlinear in one expression's depth (a 300-term sum in
            # one loop body, written inline, took 2.9 GB); a `let` keeps each command small
            if node.sort == "Ten" or len(text) > 2048:
                name = f"$_t{len(self.lines)}"
                self.lines.append(f"(let {name} {text})")
                text = name
            self.memo[node] = text
        return self.memo[root]

    def union(self, a: str, b: str) -> None:
        self.lines.append(f"(union {a} {b})")

    def flush(self) -> None:
        # one command per call: egglog's parser is quadratic in the lets of one program
        egg = self.eg._egraph
        for line in self.lines:
            egg.run_program(*egg.parse_program(line))
        self.lines = []


def _egg_name(op: str) -> str:
    return "eqsat_sorts_" + op.replace(".", "_")


def _literal(x) -> str:
    if isinstance(x, bool):
        raise TypeError("no booleans in terms")
    if isinstance(x, int):
        return str(x)
    if isinstance(x, float):
        return repr(x)
    return json.dumps(x)


def _declare(eg: EGraph) -> None:
    """Declare every sort and constructor in `eg` (egglog-python does so on first use)."""
    v = S.Var.named("v")
    ix = S.Ix.add(S.Ix.scale(S.Ix.v(S.Var.mmk(S.Ten.input("t"), S.Ix.lit(0), S.Ix.lit(0))), 2), S.Ix.v(v))
    sc = S.Sc.red("sum", v, 1, S.Sc.min(S.Sc.max(S.Sc.div(S.Sc.mul(S.Sc.sub(S.Sc.add(
        S.Sc.load(S.Ten.input("t"), S.Ixs.cons(ix, S.Ixs.nil())), S.Sc.lit(0.0)), S.Sc.param("p")),
        S.Sc.fn("relu", S.Sc.lit(1.0))), S.Sc.lit(1.0)), S.Sc.lit(1.0)),
        S.Sc.select("<", S.Sc.idx(S.Ix.lit(0)), S.Sc.lit(1.0), S.Sc.lit(1.0), S.Sc.lit(0.0))))
    d = S.Dims.cons(v, 1, S.Dims.nil())
    t = S.Ten.opaque(0, "b", S.Tens.cons(S.Ten.reshape(S.Ten.slice(S.Ten.transpose(S.Ten.matmul(
        S.Ten.compute(d, sc), S.Ten.fused(d, sc, S.Ten.input("t"))), "1 0"), S.Ix.lit(0)), S.Shp.cons(1, S.Shp.nil())),
        S.Tens.nil()), S.Scs.cons(sc, S.Scs.nil()))
    for e in (t, S.shape_of(t), S.output(0)):
        rt = to_runtime_expr(e)
        eg._add_decls(rt)
        eg._state.typed_expr_to_egg(rt.__egg_typed_expr__, transform_let=False)


def shape_text(shape) -> str:
    out = "(eqsat_sorts_Shp_nil)"
    for n in reversed(shape):
        out = f"(eqsat_sorts_Shp_cons {int(n)} {out})"
    return out


_LOCAL = threading.local()  # this thread's prepared e-graph (e-graphs cannot cross threads)

# egglog keeps part of each pushed-and-popped call's work in the e-graph it was pushed
# on (about 30-100 KB a call on corpus programs, more on big ones), and frees it only when
# that e-graph is dropped. So a prepared e-graph is replaced after this many calls, or
# after this many e-nodes of work, whichever comes first: preparing one costs ~0.2 s,
# ~6 ms a call spread over 32 calls, and resident memory stays flat (bench/soak_bench.py).
RENEW_CALLS = 32
RENEW_NODES = 200_000


@contextlib.contextmanager
def session(families: list, support: Ruleset, limits: Limits):
    """An e-graph to optimize one program in: this thread's prepared e-graph (sorts declared,
    rule sets and schedules registered once per thread), pushed, and popped afterwards, so
    a second optimize() pays only for its own terms and rules."""
    st = _LOCAL.__dict__
    eg = st.get("eg")
    if eg is None:
        eg = st["eg"] = EGraph()
        _declare(eg)
        st["ready"] = set()
        st["calls"] = st["nodes"] = 0
    for key, sched in _schedules(families, support, limits):
        if key not in st["ready"]:  # register its rule sets on the empty base: nothing matches
            eg.run(sched)
            st["ready"].add(key)
    eg.push()
    try:
        yield eg
        st["nodes"] += node_count(eg)
    except BaseException:
        st.pop("eg", None)  # after an error inside egglog, start the next call from a fresh e-graph
        raise
    finally:
        try:
            eg.pop()
        except Exception:  # noqa: BLE001 - already dropped above; the original error matters
            st.pop("eg", None)
        st["calls"] += 1
        if st.get("eg") is eg and (st["calls"] >= RENEW_CALLS or st["nodes"] >= RENEW_NODES):
            st.pop("eg")
        if st.get("eg") is not eg:
            release(eg)  # on this thread, now


def build(lowered, opaque_shapes: dict, eg: EGraph | None = None) -> tuple[EGraph, Builder, list]:
    """Put the lowered program into `eg` (prepared by `session`), or into a new e-graph."""
    if eg is None:
        eg = EGraph()
        b = Builder(eg)
    else:
        b = Builder(eg, declare=False)
    for name, shape in lowered.input_shapes.items():
        b.union(f"(eqsat_sorts_shape_of {b.encode(Node('Ten.input', name))})", shape_text(shape))
    roots = [b.encode(r) for r in lowered.roots]
    for i, r in enumerate(roots):
        b.union(f"(eqsat_sorts_output {i})", r)
    for a, c in lowered.unions:
        b.union(b.encode(a), b.encode(c))
    for node, shape in opaque_shapes.items():
        b.union(f"(eqsat_sorts_shape_of {b.encode(node)})", shape_text(shape))
    b.flush()
    return eg, b, roots


INF_GROWTH = float("inf")


def node_count(eg: EGraph) -> int:
    return sum(n for _, n in eg.all_function_sizes())


_SCHEDULES: dict = {}  # key -> (the rule sets it was built from, schedule)


def _schedule(key, build):
    """A schedule built once per process and reused: egglog-python recomputes a new
    schedule object's declarations (slow typing checks) on every run, a reused one's not.
    Entries keep their rule sets alive, so the ids in a key are never reused."""
    hit = _SCHEDULES.get(key)
    if hit is None:
        if len(_SCHEDULES) > 256:
            _SCHEDULES.clear()
        hit = _SCHEDULES[key] = build()
        try:  # compute its declarations once; egglog-python would recompute them every run
            decls = hit.__egg_decls__
            object.__setattr__(hit, "__egg_decls_thunk__", lambda: decls)
        except AttributeError:  # another egglog-python layout: correct, only slower
            pass
    return hit


def _key(families, support, limits) -> tuple:
    return (tuple(id(r) for r in families), id(support), limits.match_limit, limits.ban_length,
            limits.support_rounds)


def _schedules(families, support, limits) -> list:
    """[(key, support to saturation), (key, one round: every family, then the facts)]."""
    key = _key(families, support, limits)

    def build_round():
        sched = None
        for r in families:
            step = run(r, scheduler=back_off(match_limit=limits.match_limit, ban_length=limits.ban_length))
            sched = step if sched is None else sched + step
        # support rules only derive facts, but on a cyclic e-graph explicit substitution can
        # keep producing new terms: their "saturation" is bounded too, so no call can hang
        facts = run(support) * limits.support_rounds
        return facts if sched is None else sched + facts

    first = ("support", id(support), limits.support_rounds)
    return [(first, _schedule(first, lambda: run(support) * limits.support_rounds)),
            (("round",) + key, _schedule(("round",) + key, build_round))]


def saturate(eg: EGraph, families: list, support: Ruleset, limits: Limits, names=None) -> SaturationReport:
    """Run `support` to saturation, then every family once (back-off scheduled), repeatedly.

    Stops at saturation or at the first limit reached; the e-graph then holds the best
    forms found so far, and the report says why it stopped. `names` (a
    `provenance.RuleTable`) names the rules in the report's match counts.
    """
    rep = SaturationReport()
    t0 = time.perf_counter()
    rss_start = resident_mb()
    (_, first), (_, one) = _schedules(families, support, limits)
    eg.run(first)
    rep.nodes = node_count(eg)
    if not families:
        rep.nodes = node_count(eg)
        rep.seconds = time.perf_counter() - t0
        return rep
    key = _key(families, support, limits)
    # Each eg.run() call costs ~15 ms of Python-side schedule processing, so rounds run in
    # chunks while growth is tame, and one at a time when the e-graph grows fast or nears a
    # limit (so a limit is never overshot by more than one round).
    rep.stop_reason = f"iteration limit ({limits.iterations})"
    growth = INF_GROWTH  # the first round runs alone: its growth decides the chunk size
    while rep.iterations < limits.iterations:
        tame = growth < 1.25 and rep.nodes * 2 < limits.nodes and time.perf_counter() - t0 < limits.seconds / 4
        n = limits.chunk if tame else 1
        n = min(n, limits.iterations - rep.iterations)
        t_call = time.perf_counter()
        report = eg.run(_schedule(("rounds", n) + key, lambda: one * n))
        t_call = (time.perf_counter() - t_call) / n
        rep.iterations += n
        before, rep.nodes = rep.nodes, node_count(eg)
        growth = rep.nodes / max(before, 1)
        rep.per_iteration_nodes.append(rep.nodes)
        if names is not None:
            rep.record(n, t_call * n, names.counts(report.num_matches_per_rule))
        # egglog reports `updated` when rules matched, even if nothing new came of it; a
        # round that adds no e-node is a fixpoint for these rules
        if not report.updated or rep.nodes == before:
            rep.stop_reason = "saturated"
            break
        if rep.nodes > limits.nodes:
            rep.stop_reason = f"node limit ({rep.nodes} > {limits.nodes} e-nodes)"
            break
        rss = resident_mb()
        if rss > limits.memory_mb or (rss - rss_start) * growth + rss_start > limits.memory_mb:
            rep.stop_reason = (f"memory limit ({rss:.0f} MB resident, growing {growth:.1f}x a round; "
                               f"limit {limits.memory_mb:g} MB)")
            break
        if rep.nodes * growth > limits.nodes * 2:
            rep.stop_reason = (f"node limit (at {rep.nodes} e-nodes, growing {growth:.1f}x a round, the next "
                               f"round would pass {limits.nodes})")
            break
        elapsed = time.perf_counter() - t0
        if elapsed > limits.seconds:
            rep.stop_reason = f"time limit ({limits.seconds:g} s)"
            break
        # extraction takes time too (~extract_seconds_per_node each e-node): stop while the
        # whole of optimize() can still end within twice the time limit
        next_nodes = rep.nodes * max(growth, 1.0)
        if elapsed + t_call * max(growth, 1.0) + next_nodes * limits.extract_seconds_per_node > limits.seconds * 2:
            rep.stop_reason = (f"time limit (after {elapsed:.2f} s, the next round and extracting its "
                               f"~{int(next_nodes)} e-nodes would pass twice {limits.seconds:g} s)")
            break
        if elapsed + t_call * max(growth, 1.0) > limits.seconds * 1.5:
            rep.stop_reason = (f"time limit (after {elapsed:.2f} s the next round, growing {growth:.1f}x, would "
                               f"pass {limits.seconds:g} s)")
            break
    rep.seconds = time.perf_counter() - t0
    return rep


def serialize(eg: EGraph) -> dict:
    """The e-graph as {"nodes": {id: {"op", "children", "eclass"}}} (egglog's JSON)."""
    s = eg._serialize(split_primitive_outputs=False)
    return json.loads(s.to_json())


def release(eg: EGraph) -> None:
    """Drop the engine's e-graph now, on this thread. egglog's e-graph may be freed only on
    the thread that made it; egglog-python's state objects can sit in reference cycles
    that the garbage collector would otherwise free later, on whatever thread it runs."""
    for st in [getattr(eg, "_state", None), *getattr(eg, "_state_stack", [])]:
        if st is not None and hasattr(st, "egraph"):
            st.egraph = None

