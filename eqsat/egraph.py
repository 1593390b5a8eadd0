"""Building the e-graph from lowered terms, running the rules within limits, reading it back."""
from __future__ import annotations

import contextlib
import gc
import itertools
import json
import math
import os
import threading
import time
from dataclasses import dataclass, field

from egglog import EGraph, Ruleset, back_off, bindings, run
from egglog.egraph import to_runtime_expr

from . import sorts as S
from .errors import EqsatError
from .limits import Limits, give_back_memory, resident_mb
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
    # one entry per round: {"round": rounds done, "nodes", "seconds", "matches": {rule
    # name: matches}} (its family step and support steps), "scheduler": "plain" or
    # "back-off" (the family step's; see PLAIN_BELOW)
    rounds: list = field(default_factory=list)
    rule_matches: dict = field(default_factory=dict)  # rule name -> matches over the whole run
    # the rule sets in use not run at all, since no rule of theirs can match the program
    # (`eqsat/relevance.py`): family names, "<family>.facts" for a family's fact rules
    not_run: list = field(default_factory=list)

    def record(self, seconds: float, matches: dict, scheduler: str) -> None:
        self.rounds.append({"round": self.iterations, "nodes": self.nodes, "seconds": seconds,
                            "matches": matches, "scheduler": scheduler})
        for k, v in matches.items():
            self.rule_matches[k] = self.rule_matches.get(k, 0) + v


_REF_NAMES = itertools.count()  # the names Builder gives terms (`eqsat_ref_<Sort> k`)
REF_SORTS = ("Var", "Ix", "Ixs", "Dims", "Shp", "Sc", "Ten", "Tens", "Scs")


class Builder:
    """Encodes hash-consed `Node`s into one e-graph as egglog program text (building terms
    through egglog-python's expression objects costs ~0.2 ms a constructor, which made
    building dominate optimize() on long programs).

    A tensor read by several terms gets a name of its own (`(eqsat_ref_Ten k)`, unioned
    with it), so its text is written once; `shared` lists them. Each naming is one command,
    and egglog's cost is per command (~0.1-0.2 ms), so tensors read once are written inline
    in their reader.
    """

    def __init__(self, egraph: EGraph, shared: set, declare: bool = True):
        self.eg = egraph
        self.memo: dict = {}  # Node -> egglog text (a name for shared tensors and long terms)
        self.lines: list = []
        self.shared = shared
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
            # a shared tensor (not an input: its text is short), and any term whose text
            # grew long (egglog's parser and type checker take time and memory superlinear
            # in one expression's depth: a 300-term sum in one loop body, written inline,
            # took 2.9 GB) gets a name of its own, `(eqsat_ref_<Sort> k)`, unioned with it. (A `let` per name made egglog add
            # a table per name: 270 us a command, and every later step walked them all.)
            if (node.sort == "Ten" and node.op != "Ten.input" and node in self.shared) or len(text) > 2048:
                name = f"(eqsat_ref_{node.sort} {next(_REF_NAMES)})"
                self.lines.append(f"(union {name} {text})")
                text = name
            self.memo[node] = text
        return self.memo[root]

    def union(self, a: str, b: str) -> None:
        self.lines.append(f"(union {a} {b})")

    def flush(self) -> None:
        # one command per call: egglog's cost for one program grows faster than its
        # commands (the 200-layer chain's 2,600 commands, 256 a call: 6 s; one a call: 0.47 s)
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
        if x != x:
            return "NaN"  # egglog's spellings of the non-finite floats
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
        return repr(x)
    return json.dumps(x, ensure_ascii=False)  # (egglog reads UTF-8 in strings, not \u escapes)


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
    egg = eg._egraph
    egg.run_program(*egg.parse_program("\n".join(
        f"(constructor eqsat_ref_{sort} (i64) eqsat.sorts.{sort})" for sort in REF_SORTS)))


def shape_text(shape) -> str:
    out = "(eqsat_sorts_Shp_nil)"
    for n in reversed(shape):
        out = f"(eqsat_sorts_Shp_cons {int(n)} {out})"
    return out


_LOCAL = threading.local()  # this thread's prepared e-graph (e-graphs cannot cross threads)

_EGGLOG_PID: list = [None]  # the process that made an e-graph: egglog's state is its own


def _using_egglog() -> None:
    if _EGGLOG_PID[0] is None:
        _EGGLOG_PID[0] = os.getpid()


def check_not_forked() -> None:
    """Refuse to go on in a process forked from one that had used egglog: its engine's
    threads do not survive a fork, and its first call there never returned (a probe: a
    `multiprocessing` pool of the default start method on Linux, after the parent had
    optimized)."""
    if _EGGLOG_PID[0] is not None and _EGGLOG_PID[0] != os.getpid():
        raise EqsatError("this process was forked from one that had already used eqsat's engine (egglog), "
                         "whose threads do not survive a fork: its calls would never return. Start worker "
                         "processes with multiprocessing's 'spawn' or 'forkserver' method "
                         "(multiprocessing.get_context('spawn')), or use eqsat.optimize_many, which does")

# egglog keeps part of each pushed-and-popped call's work in the e-graph it was pushed
# on (about 0.5 KB an e-node: 30-100 KB a call on corpus programs, tens of MB on big
# ones; with 8 threads a 200k-node budget let resident memory reach 1.3 GB), and frees it only when
# that e-graph is dropped. So a prepared e-graph is replaced after this many calls, or
# after this many e-nodes of work, whichever comes first: preparing one again costs
# ~0.14 s (~4 ms a call spread over 32 calls), and resident memory stays flat
# (bench/soak_bench.py).
RENEW_CALLS = 32
RENEW_NODES = 20_000


class _Prepared:
    """One thread's prepared e-graph, and how much work it has done. Closed on the thread
    that made it: when it is renewed, and when the thread ends (its thread-local slot is
    cleared on that thread)."""

    def __init__(self):
        _using_egglog()
        self.eg = EGraph()
        _declare(self.eg)
        self.ready: dict = {}  # key -> the schedule registered under it (keys hold ids)
        self.calls = self.nodes = 0

    def close(self) -> None:
        """Free the engine's e-graph here and now. egglog-python leaves copies of its state
        in reference cycles (closures of its schedule processing) that also point at the
        engine's e-graph; were the last of them freed by a collection on another thread,
        egglog would refuse ("unsendable") and the e-graph would never be freed. So: hold
        the engine's e-graph, detach every state we can reach, collect the cycles on this
        thread, then let go of it."""
        eg, self.eg = self.eg, None
        if eg is None:
            return
        engine = getattr(getattr(eg, "_state", None), "egraph", None)
        release(eg)
        del eg
        gc.collect()
        del engine

    def __del__(self):
        self.close()


# preparing a thread's e-graph (sorts declared, rule sets registered): ~0.6 s here, paid by
# the first optimize() on a thread and after each renewal
PREPARE_SECONDS = 0.6


def prepared_here() -> bool:
    """Whether this thread holds a prepared e-graph (its next optimize() pays no
    `PREPARE_SECONDS`)."""
    return _LOCAL.__dict__.get("prep") is not None


def drop_prepared() -> None:
    """Close this thread's prepared e-graph (the next call prepares one again)."""
    prep = _LOCAL.__dict__.pop("prep", None)
    if prep is not None:
        prep.close()


# (A prepared e-graph per rule selection was tried, 2026-11-27: a push copies every rule
# registered on the e-graph, ~25 us a rule, so after a loop-written program has registered
# every family an `@`-written one pays ~12 ms a push and a pop where its own ~220 rules
# would cost 2.5 ms; steady calls in a mixed run were 5-9 ms faster. But preparing each
# selection's e-graph cost 0.06-0.2 s, again at every renewal (RENEW_CALLS), which took the
# gain back over a long run and landed on first calls: bench/compile_bench.py's ratio
# 0.019 -> 0.023. One prepared e-graph a thread, its rule sets registered as calls need them.
# Emptying it after each call instead, by a rule set deleting every row of every table,
# was tried again 2026-11-28: ~0.3 ms against ~8 ms for a push and a pop, but the same
# program then found fewer forms than in a fresh e-graph (hybrid_loop_libop: 119 e-nodes
# against 135; some rules of the first family step never matched again), and
# tests/test_prepared.py asks that a call find what it finds in a fresh e-graph. Counting
# e-nodes only at the end of a round on small e-graphs (~60 us a count, ~26 a call) made
# no difference measured.)


@contextlib.contextmanager
def session(families: list, support: Ruleset, limits: Limits):
    """An e-graph to optimize one program in: this thread's prepared e-graph (sorts declared,
    rule sets and schedules registered once per thread), pushed, and popped afterwards, so
    a second optimize() pays only for its own terms and rules."""
    st = _LOCAL.__dict__
    prep = st.get("prep")
    if prep is None:
        prep = st["prep"] = _Prepared()
    eg = prep.eg
    for key, sched in _schedules(families, support, limits):
        if prep.ready.get(key) is not sched:
            # register its rule sets on the empty base (nothing matches). The back-off
            # schedule is only converted: running it leaves its scheduler in the base,
            # and every push then copies it (a push and a pop ~14 ms, against ~5 ms)
            command = _command(eg, sched)
            if key[0] not in ("rewrites", "careful"):  # (back-off scheduled: converted only)
                eg._egraph.run_program(command)
            prep.ready[key] = sched
    eg.push()
    ok = False
    try:
        yield eg
        prep.nodes += node_count(eg)
        ok = True
    finally:
        prep.calls += 1
        try:
            eg.pop()
        except Exception:  # noqa: BLE001 - the original error matters; this e-graph is done
            ok = False
        del eg
        # after an error inside egglog, the next call starts from a fresh e-graph
        if not ok or prep.calls >= RENEW_CALLS or prep.nodes >= RENEW_NODES:
            st.pop("prep", None)
            prep.close()
            # what it held goes back to the system, not to this thread's arena: with four
            # threads calling, glibc's per-thread arenas otherwise kept it (resident +423 MB
            # over 400 calls of bench/soak_bench.py; with MALLOC_ARENA_MAX=2, +44 MB)
            give_back_memory()


def build(lowered, opaque_shapes: dict, eg: EGraph | None = None) -> tuple[EGraph, Builder, list]:
    """Put the lowered program into `eg` (prepared by `session`), or into a new e-graph."""
    shared, inputs = _shared_and_inputs([*lowered.roots, *(x for pair in lowered.unions for x in pair), *opaque_shapes])
    if eg is None:
        _using_egglog()
        eg = EGraph()
        b = Builder(eg, shared)
    else:
        b = Builder(eg, shared, declare=False)
    # the shapes of the inputs the terms read (one command each: a local buffer's name is no
    # input, and a parameter no term reads needs no shape)
    for name, shape in lowered.input_shapes.items():
        if name in inputs:
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


def _shared_and_inputs(roots: list) -> tuple[set, set]:
    """(tensors that more than one term reads, or that are a root and read; the names of
    the inputs the terms read)."""
    seen: set = set()
    twice: set = set()
    inputs: set = set()
    stack = list(roots)
    while stack:
        n = stack.pop()
        if n in seen:
            if n.sort == "Ten":
                twice.add(n)
            continue
        seen.add(n)
        if n.op == "Ten.input":
            inputs.add(n.args[0])
        stack.extend(a for a in n.args if isinstance(a, Node))
    return twice, inputs


_SIZE_SPAN = None


def node_count(eg: EGraph) -> int:
    """E-nodes in the e-graph's constructor and fact tables (egglog's own tables, and
    global `let` bindings, not counted). Direct, without egglog-python's callables, since it
    runs between every step of saturation."""
    global _SIZE_SPAN
    if _SIZE_SPAN is None:
        from egglog.egraph_state import span

        _SIZE_SPAN = span(1)
    (out,) = eg._egraph.run_program(bindings.PrintSize(_SIZE_SPAN, None))
    known = eg._state.egg_fn_to_callable_refs
    return sum(n for name, n in out.sizes if name in known)


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
    return (tuple(id(r) for r in families), id(support), limits.match_limit,
            limits.support_rounds)


def _schedules(families, support, limits) -> list:
    """[(key, schedule)]: one step of the support rules, plain and careful (`_support_steps`),
    and every family once (back-off scheduled, and plain)."""
    out = [(("support", id(support)), _schedule(("support", id(support)), lambda: run(support)))]
    careful_key = ("careful", id(support), limits.nodes)
    out.append((careful_key, _schedule(
        careful_key, lambda: run(support, scheduler=back_off(match_limit=careful_matches(limits), ban_length=1)))))
    if families:
        key = ("rewrites",) + _key(families, support, limits)

        def rewrites():
            sched = None
            for r in families:
                step = run(r, scheduler=back_off(match_limit=limits.match_limit, ban_length=1))
                sched = step if sched is None else sched + step
            return sched

        out.append((key, _schedule(key, rewrites)))
        plain_key = ("plain",) + key[1:]

        def plain():
            sched = None
            for r in families:
                sched = run(r) if sched is None else sched + run(r)
            return sched

        out.append((plain_key, _schedule(plain_key, plain)))
    return out


# egglog builds a back-off scheduler anew in every call into it (~30 ms with this project's
# rules, whatever the e-graph's size: most of optimize() on small programs), and with a
# fresh scheduler a rule matching more than `match_limit` times in a step is skipped for
# that step. Below this many e-nodes the rewrite step runs without it, which gives the
# same e-graph whenever no rule passes `match_limit`; the first plain step in which one
# does switches this saturation to the back-off scheduler for good.
PLAIN_BELOW = 2_000
STALL_ROUNDS = 3  # rounds in a row without a new e-node that count as saturation
EXTRACT_MB_PER_NODE = 1.6e-3  # resident memory reading back and extracting takes an e-node (measured:
# 617 MB peak after saturation stopped at 339 MB with 184k e-nodes, bench/stress_bench.py case 5)
RSS_EVERY = 0.01  # seconds between readings of resident memory (`_Budget.resident`)
MIN_ROUNDS = 3  # rounds of rewrites the time limit lets run late, up to GRACE (see _Budget)
GRACE = 1.15  # those rounds may be predicted to end (extraction included) by this share of the limit
# popping the prepared e-graph after the call takes a share of the rule engine's time (0.25-0.4
# measured: 0.22 s after 0.56 s of rules, 0.44 after 1.66; 3.5 ms after 10 ms on the corpus)
POP_SHARE = 0.35


class _Budget:
    """The limits checked between calls into egglog. One call is never interrupted, so
    each check also asks whether the next call, growing as the last one did, would pass a
    limit, and stops before it.

    Time counts from `start`, the start of optimize(): the lowering and the build before
    saturation and the extraction after it (~`extract_seconds_per_node` an e-node) share
    `Limits.seconds` with the rewrites, and saturation stops when the next step and
    extracting what it would leave are predicted to end past it. The time limit applies
    from the end of the first `MIN_ROUNDS` rounds on: a matmul written as loops with an
    epilogue needs three (one normalizes the reduction, the support rules then mark it a
    candidate; the next round rewrites it to a matmul; the third fuses its epilogue, without
    which the loop's own reduction kernel is cheaper at small sizes), so those rounds may run
    a little late: up to `GRACE` times the limit, predicted (a step past it is not started,
    and saturation then stops with what it has, the program as written where nothing was
    found yet; past GRACE, 20 loop-written mat-vec products at `seconds=0.5` took 2.5 s).
    After the rules, popping the prepared e-graph takes about `POP_SHARE` of their time:
    counted too. The node and memory limits hold from the first step."""

    def __init__(self, limits: Limits, rep: SaturationReport, start: float | None = None):
        self.limits, self.rep = limits, rep
        self.t0 = time.perf_counter()
        self.start = self.t0 if start is None else start
        self.rss_start = self.rss = resident_mb()
        self.rss_nodes, self.rss_t = rep.nodes, self.t0
        self.careful = False  # a support step multiplied the e-graph (`_support_steps`)

    def resident(self, nodes: int) -> float:
        """Resident MB, read again only when `RSS_EVERY` seconds have passed or the e-graph
        grew by half since the last reading: on a small e-graph a step takes well under a
        millisecond, and reading /proc at every step was a tenth of optimize()."""
        now = time.perf_counter()
        if now - self.rss_t > RSS_EVERY or nodes > 1.5 * self.rss_nodes + 500:
            self.rss, self.rss_nodes, self.rss_t = resident_mb(), nodes, now
        return self.rss

    def over(self, before: int, seconds: float) -> str | None:
        """After a call that took the e-graph from `before` e-nodes to `rep.nodes` in
        `seconds`: the reason to stop now, or None."""
        lim, nodes = self.limits, self.rep.nodes
        growth = max(nodes / max(before, 1), 1.0)
        if nodes > lim.nodes:
            return f"node limit ({nodes} > {lim.nodes} e-nodes)"
        rss = self.resident(nodes)
        # reading the e-graph back and extracting holds ~EXTRACT_MB_PER_NODE an e-node on
        # top of the e-graph itself: the next step's e-graph must fit with it
        after = (rss - self.rss_start) * growth + self.rss_start + nodes * growth * EXTRACT_MB_PER_NODE
        if rss > lim.memory_mb or after > lim.memory_mb:
            return (f"memory limit ({rss:.0f} MB resident, growing {growth:.1f}x a step, "
                    f"~{after:.0f} MB with the next step and its extraction; limit {lim.memory_mb:g} MB)")
        if nodes * growth > lim.nodes * 2:
            return (f"node limit (at {nodes} e-nodes, growing {growth:.1f}x a step, the next "
                    f"step would pass {lim.nodes})")
        now = time.perf_counter()
        elapsed = now - self.start
        rules = now - self.t0  # (what popping the e-graph afterwards scales with)
        next_nodes, step = nodes * growth, seconds * growth
        after_next = elapsed + step + next_nodes * lim.extract_seconds_per_node + POP_SHARE * (rules + step)
        if self.rep.iterations < MIN_ROUNDS:  # (the first rounds run late, up to GRACE: see the note)
            if after_next > GRACE * lim.seconds:
                return (f"time limit (after {elapsed:.2f} s, in the first {MIN_ROUNDS} rounds, the next step and "
                        f"extracting its ~{int(next_nodes)} e-nodes would pass {GRACE:g} x {lim.seconds:g} s)")
            return None
        if elapsed + nodes * lim.extract_seconds_per_node + POP_SHARE * rules > lim.seconds:
            return (f"time limit ({lim.seconds:g} s; {elapsed:.2f} s spent, extracting "
                    f"{nodes} e-nodes left)")
        if after_next > lim.seconds:
            return (f"time limit (after {elapsed:.2f} s, the next step and extracting its "
                    f"~{int(next_nodes)} e-nodes would pass {lim.seconds:g} s)")
        return None


def _command(eg: EGraph, sched):
    """`sched` as egglog's own command, converted once per e-graph (a prepared e-graph's
    pushed states share its conversions: the rules they name were registered before the
    push). egglog-python converts a schedule, and its report back into declarations, in
    every run: ~1 ms a call, as much as a small e-graph's step itself."""
    cache = eg.__dict__.setdefault("_eqsat_commands", {})
    hit = cache.get(id(sched))
    if hit is None or hit[0] is not sched:  # (the entry holds its schedule: an id is never reused under it)
        eg._add_decls(sched)
        hit = cache[id(sched)] = (sched, eg._state.run_schedule_to_egg(sched.schedule))
    return hit[1]


def _run(eg: EGraph, sched, rep: SaturationReport, matches: dict | None):
    """One call into egglog: (egglog's raw report, e-nodes before, seconds it took).
    `matches` gathers the report's matches by egglog's rule names."""
    before, t = rep.nodes, time.perf_counter()
    (out,) = eg._egraph.run_program(_command(eg, sched))
    report = out.report
    seconds = time.perf_counter() - t
    if report.updated:  # (a step in which no rule matched added nothing)
        rep.nodes = node_count(eg)
    if matches is not None:
        for k, v in report.num_matches_per_rule.items():
            matches[k] = matches.get(k, 0) + v
    return report, before, seconds


def _named(names, eg: EGraph, matches: dict, seen: dict) -> dict:
    """{egglog rule name: matches} as {rule name: matches} (`seen` caches the names)."""
    rule_map = eg._state.rule_name_to_command_decl
    out: dict = {}
    for k, n in matches.items():
        if n:
            name = seen.get(k)
            if name is None:
                name = seen[k] = names.name(rule_map[k])
            out[name] = out.get(name, 0) + int(n)
    return out


# a support step that grows an e-graph of at least PLAIN_BELOW e-nodes by this factor makes
# saturation careful from then on (`_support_steps`)
SUPPORT_ALARM = 1.9


def careful_matches(limits: Limits) -> int:
    """The match limit of a careful support step: a quarter of the node limit."""
    return max(1, limits.nodes // 4)


def _support_steps(eg, step, rep, budget: _Budget, matches, careful) -> tuple[str | None, bool]:
    """The support rules one step at a time, up to `support_rounds` steps or their
    fixpoint, checking the limits after each: (the reason to stop, or None; whether the
    fixpoint was reached).

    Explicit substitution can multiply an e-graph in one step: LDL^T unrolled at N = 8 went
    from 9.6k to 337k e-nodes in one support step (at N = 12, to 2M, and optimize() took
    51 s), where the steps before had grown it at most 2x, and one step cannot be
    interrupted. So once a step grows an e-graph of PLAIN_BELOW e-nodes or more by
    SUPPORT_ALARM (1.9x was LDL^T's warning step), saturation goes on careful
    (`budget.careful`): support steps are back-off scheduled with a quarter of the node limit (`careful_matches`) as their match
    limit, so a rule that matches more often than that is left out of the step (the rest
    still run; matches left out are equalities not added, which is sound). (Ending a careful phase after a few steps
    as well cost plans their fusions: a 500-layer residual chain's epilogues, an attention
    block's third matmul.)"""
    use = careful if budget.careful else step
    for _ in range(budget.limits.support_rounds):
        report, before, seconds = _run(eg, use, rep, matches)
        if not report.updated:  # (a step can merge classes, or set facts, adding no e-node)
            return None, True
        if use is careful and rep.nodes == before:
            # (a careful step reports an update whenever a rule matched, and its scheduler
            # starts afresh in every call, so its rules match again: steps that leave the
            # e-graph as it was would run to `support_rounds`)
            return None, True
        why = budget.over(before, seconds)
        if why:
            return why, False
        if rep.nodes >= PLAIN_BELOW and rep.nodes > SUPPORT_ALARM * before:
            budget.careful, use = True, careful
    return None, False


def saturate(eg: EGraph, families: list, support: Ruleset, limits: Limits, names=None,
             start: float | None = None) -> SaturationReport:
    """Run `support` to its fixpoint, then every family once (see PLAIN_BELOW) and the
    support rules again, repeatedly.

    Stops at saturation or at the first limit reached; the e-graph then holds the best
    forms found so far, and the report says why it stopped. `names` (a
    `provenance.RuleTable`) names the rules in the report's match counts.

    Every family step and every support step is its own call into egglog (a call costs
    ~0.2 ms), and the limits are checked, and the next step's growth predicted, after each:
    one call cannot be interrupted, and on a cyclic e-graph explicit substitution can double
    the e-graph in each support step (tests/DIFF_FINDINGS.md, L2), so no call may hold more
    than one step. Back-off bans therefore last one round.
    """
    rep = SaturationReport()
    budget = _Budget(limits, rep, start)
    (_, step), (_, careful), *rest = _schedules(families, support, limits)
    rep.nodes = node_count(eg)
    why, fixpoint_before = _support_steps(eg, step, rep, budget, None, careful)
    if why or not rest:
        rep.stop_reason = why or "saturated"
        rep.seconds = time.perf_counter() - budget.t0
        return rep
    (_, backed_off), (_, plain) = rest
    exploded, seen, stalled = False, {}, 0
    rep.stop_reason = f"iteration limit ({limits.iterations})"
    while rep.iterations < limits.iterations:
        start, t_round = rep.nodes, time.perf_counter()
        matches: dict = {}
        plain_step = not exploded and rep.nodes < PLAIN_BELOW
        report, before, seconds = _run(eg, plain if plain_step else backed_off, rep, matches)
        if plain_step and any(n > limits.match_limit for n in report.num_matches_per_rule.values()):
            exploded = True
        why, fixpoint = budget.over(before, seconds), False
        if not why:
            why, fixpoint = _support_steps(eg, step, rep, budget, matches, careful)
        rep.iterations += 1
        if not why:  # the next round, growing and taking as long as this one did
            why = budget.over(start, time.perf_counter() - t_round)
        rep.per_iteration_nodes.append(rep.nodes)
        if names is not None:
            rep.record(time.perf_counter() - t_round, _named(names, eg, matches, seen),
                       "plain" if plain_step else "back-off")
        if why:
            rep.stop_reason = why
            break
        # egglog reports `updated` when rules matched, even if nothing new came of it, so
        # a round whose rewrites changed nothing after the support rules had reached their
        # fixpoint is one; and so are STALL_ROUNDS rounds in a row that add no e-node. One
        # such round is not: it can merge classes without adding a node, and the merge
        # lets the next round match (a matmul with a constant factor on an operand was
        # found one round after a round that only merged; stopping there lost it)
        stalled = stalled + 1 if rep.nodes == start else 0
        if stalled >= STALL_ROUNDS or (not report.updated and fixpoint_before):
            rep.stop_reason = "saturated"
            break
        fixpoint_before = fixpoint
    if budget.careful:
        rep.stop_reason += (f"; careful after a support step multiplied the e-graph: support rules matching more "
                            f"than {careful_matches(limits)} times in a step were left out")
    rep.seconds = time.perf_counter() - budget.t0
    return rep


def _op_names(eg: EGraph) -> dict:
    """egglog's function names -> their ops' names, computed once per e-graph and set of
    declarations (egglog-python prints every callable again on each call: ~1 ms)."""
    n = len(eg._state.egg_fn_to_callable_refs)
    hit = eg.__dict__.get("_eqsat_op_names")
    if hit is None or hit[0] != n:
        hit = eg.__dict__["_eqsat_op_names"] = (n, eg._state.op_mapping())
    return hit[1]


def read_back(eg: EGraph):
    """The e-graph's constructor nodes, its outputs and its tensors' shapes, as an
    `extract.Graph`, read from egglog's tables directly (`freeze`: a few ms for 50k rows).
    egglog's JSON serialization of every table, parsed back, took ~15 us an e-node, as much
    as the extraction itself, for rows of which more than half are analysis facts.
    E-classes are named `Sort-k` and nodes numbered in the order the tables hold them
    (deterministic: egglog's tables are)."""
    from .extract import CONSTRUCTORS, COST_CHILD, COSTED, STRUCT_CHILD, VALUE, ENode, Graph

    frozen = eg._egraph.freeze()
    names = _op_names(eg)
    conv = {"i64": eg._egraph.value_to_i64, "String": eg._egraph.value_to_string,
            "f64": eg._egraph.value_to_f64, "bool": eg._egraph.value_to_bool}
    classes: dict = {}

    def cls(prefix: str, v) -> str:  # e-class value -> its name, `Sort-k`
        c = classes.get(v)
        if c is None:
            c = classes[v] = f"{prefix}-{len(classes)}"
        return c

    def short(sort: str) -> str:  # "eqsat.sorts.Ten" -> "Ten"
        return sort.rsplit(".", 1)[-1]

    nodes, outputs, shape_cls = [], {}, {}
    get = classes.get
    for name, fn in frozen.functions.items():
        op = names.get(name)
        if fn.is_let_binding or op is None or (op not in CONSTRUCTORS and op not in ("output", "shape_of")):
            continue
        if op == "output":
            for row in fn.rows:
                if not row.subsumed:
                    outputs[int(conv["i64"](row.inputs[0]))] = cls(short(fn.output_sort), row.output)
            continue
        if op == "shape_of":
            for row in fn.rows:
                if not row.subsumed:
                    shape_cls[cls(short(fn.input_sorts[0]), row.inputs[0])] = cls(short(fn.output_sort), row.output)
            continue
        # per argument: a primitive's converter, or the prefix of its sort's class names and
        # how extraction reads it (ENode.refs)
        out_prefix, sort_of_op = short(fn.output_sort), op.split(".", 1)[0]
        costed = sort_of_op in COSTED
        kinds = []
        for sort in fn.input_sorts:
            prefix = short(sort)
            kinds.append((conv.get(sort), prefix, COST_CHILD if costed and prefix in COSTED else STRUCT_CHILD))
        append = nodes.append
        if len(kinds) == 2 and kinds[0][0] is None and kinds[1][0] is None:  # (binary scalar ops: most nodes)
            (_, pa, ka), (_, pb, kb) = kinds
            for row in fn.rows:
                if row.subsumed:
                    continue
                x, y = row.inputs
                cx, cy, out = get(x) or cls(pa, x), get(y) or cls(pb, y), row.output
                append(ENode(f"{len(nodes):08d}", op, (("c", cx), ("c", cy)), get(out) or cls(out_prefix, out),
                             sort_of_op, ((ka, cx), (kb, cy))))
            continue
        for row in fn.rows:
            if row.subsumed:
                continue
            args, refs = [], []
            for (k, prefix, code), v in zip(kinds, row.inputs):
                if k is not None:
                    v = k(v)
                    args.append(("p", v))
                    refs.append((VALUE, v))
                else:
                    c = get(v) or cls(prefix, v)
                    args.append(("c", c))
                    refs.append((code, c))
            out = row.output
            append(ENode(f"{len(nodes):08d}", op, tuple(args), get(out) or cls(out_prefix, out), sort_of_op,
                         tuple(refs)))
    return Graph(nodes, outputs, shape_cls)


def release(eg: EGraph) -> None:
    """Drop the engine's e-graph now, on this thread. egglog's e-graph may be freed only on
    the thread that made it; egglog-python's state objects can sit in reference cycles
    that the garbage collector would otherwise free later, on whatever thread it runs."""
    for st in [getattr(eg, "_state", None), *getattr(eg, "_state_stack", [])]:
        if st is not None and hasattr(st, "egraph"):
            st.egraph = None

