"""Which loops of a kept nest may run their iterations in parallel (DOALL), exactly.

A loop is parallel when no two of its iterations touch one location with one of them
writing it, for any fixed values of the loops around it: then the iterations can run in
any order, or at once, and every read still sees the value it saw as written. The check
is exact over the nest's concrete iteration domains (`dataflow.NestFlow`'s accesses and
domains, isl): a stencil's spatial loops inside its time loop pass, the time loop and a
recurrence's loops do not. A name the loop assigns (an accumulator, a temporary) is set
aside in that check only when it is private to each iteration (`_privates`); otherwise
the loop stays sequential, whatever its trip count: numba privatizes such a name, starting
it undefined in each iteration (or at a reduction's identity for `s = s * c`), and leaves
another value after the loop than the program as written (a campaign with the size
threshold off found two such one-iteration loops; tests/test_parallel_loops.py).

Conservative beyond the dependences: only loops that count up by one from a `range` call,
in nests without conditionals, views, or statements other than stores, assignments and
allocations; anything the model cannot state makes the loop sequential. And only where a
parallel region pays: starting one costs microseconds (numba's thread pool), so a loop
runs in parallel only when one execution of it does at least `MIN_OPS` modeled operations
(`work.nest_work`, the loops around it at their midpoints). Calibrated on PolyBench at
MEDIUM (bench/polybench.py, this project's 2-core VM): sweeps of 290k-1.7M operations
(fdtd_2d, jacobi_2d, heat_3d, adi) gain 1.5-2.2x; at 160k-170k lu's column updates gained
1.25x but gramschmidt's lost 1.5x; jacobi_1d's 2k-operation sweeps ran 15x slower in
parallel and durbin's updates 8x.
"""
from __future__ import annotations

import ast
import os

from .dataflow import NestFlow, _reads, _writes
from .ir import Alloc, Assign, For, Store, ie_eval
from .work import nest_work

_PLAIN = (ast.Assign, ast.AugAssign, ast.For, ast.Expr, ast.Pass)
MIN_OPS = 250_000  # expression nodes evaluated in one execution of a loop, for it to run in parallel


def enabled() -> bool:
    """`EQSAT_PARALLEL_LOOPS=0` keeps every kept nest sequential (compiled and costed)."""
    return os.environ.get("EQSAT_PARALLEL_LOOPS", "1") != "0"


def parallel_work(stmt, dims: dict, shapes: dict, views=(), live=None, ops=None) -> dict:
    """{"ops", "bytes"}: the modeled work of nest `stmt` (all its executions) that runs
    inside its parallel loops (`work.nest_work`'s units), for the cost model. `live`: as
    for `parallel_loops` (None: every name the nest assigns); `ops`: the nest's own
    `nest_work` expression nodes (the unit of MIN_OPS), where the caller has them."""
    out = {"ops": 0.0, "bytes": 0.0}
    for f, iters, at in _parallel(stmt, dims, shapes, views, live, ops):
        w = nest_work(f, at)
        out["ops"] += iters * w["ops"]
        out["bytes"] += iters * w["bytes"]
    return out


def parallel_loops(stmt, dims: dict, shapes: dict, views=(), live=None) -> list:
    """The `ast.For` nodes of the outermost parallel loops of nest `stmt` (an ir.For whose
    loops keep their `ast.For` in `.node`), outermost first; [] when none or unsure.
    `live`: the names the nest assigns whose value is read after it (None: all of them);
    a loop may privatize only names that are not."""
    return [f.node for f, _, _ in _parallel(stmt, dims, shapes, views, live)]


def _parallel(stmt, dims: dict, shapes: dict, views, live=None, ops=None) -> list:
    """[(ir.For, executions of it, the sizes and midpoints it runs at)] for the outermost
    parallel loops; [] when none or unsure (or turned off)."""
    if not enabled() or views or not isinstance(stmt, For) or stmt.node is None:
        return []
    if (nest_work(stmt, dims)["nodes"] if ops is None else ops) < MIN_OPS:
        return []  # no loop inside can reach MIN_OPS an execution: skip the analysis
    try:
        flow = NestFlow(stmt, dims, shapes, set())
    except Exception:  # noqa: BLE001 - a conditional, an index isl cannot state: sequential
        return []
    if any(not isinstance(leaf.stmt, (Store, Assign, Alloc)) for leaf in flow.leaves):
        return []
    out: list = []

    def visit(f: For, depth: int, env: dict, iters: float):
        at = {**dims, **env}
        private = _privates(f, stmt.node, live)
        if private is not None and nest_work(f, at)["nodes"] >= MIN_OPS and \
                _carries_nothing(flow, f, depth, private):
            out.append((f, iters, at))
            return  # the loops inside run within one iteration: one parallel level is enough
        lo, hi = ie_eval(f.lo, at), ie_eval(f.hi, at)
        n = max(0.0, (hi - lo) / f.step)
        inner = {**env, f.var: lo + f.step * (n - 1) / 2 if n else lo}  # the middle one, as nest_work
        for s in f.body:
            if isinstance(s, For):
                visit(s, depth + 1, inner, iters * n)

    try:
        visit(stmt, 0, {}, 1.0)
    except Exception:  # noqa: BLE001 - isl could not decide: keep the nest sequential
        return []
    return out


def _privates(f: For, root, live) -> set | None:
    """The names loop `f` may keep private to each iteration, or None if it is no
    candidate: a loop `for v in range(...)` counting up by one, whose body (as written)
    holds only loops and plain statements, and every name it assigns is private: assigned
    by a top-level statement of its body, from a value that does not read it, before any
    statement of the body touches it; not touched anywhere else in the nest, nor read after
    it (`live`; None: no name may be). numba makes a name assigned in a parallel loop
    private to each iteration, starting undefined (or at a reduction's identity for
    `s = s * c`) and ending unknown, which is the value as written only under these
    conditions (a campaign with the size threshold off found one-iteration loops reading
    a reduction's identity; tests/test_parallel_loops.py)."""
    node = f.node
    if f.step != 1 or not isinstance(node, ast.For) or node.orelse:
        return None
    it = node.iter
    if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"
            and 1 <= len(it.args) <= 2 and not it.keywords):
        return None
    assigned = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.stmt) and not isinstance(sub, _PLAIN):
            return None  # an if, a while, a break, a return: sequential
        if isinstance(sub, (ast.Assign, ast.AugAssign)):
            targets = sub.targets if isinstance(sub, ast.Assign) else [sub.target]
            for t in targets:
                if isinstance(t, ast.Name):
                    assigned.add(t.id)
                elif not isinstance(t, ast.Subscript):
                    return None  # a tuple target: not modeled
    if not assigned:
        return set()
    if live is None or assigned & set(live):
        return None
    inside = {id(n) for n in ast.walk(node)}
    if any(isinstance(n, ast.Name) and n.id in assigned and id(n) not in inside for n in ast.walk(root)):
        return None  # the name is used elsewhere in the nest
    for name in assigned:
        first = None
        for k, st in enumerate(node.body):
            touches = any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(st))
            if not touches:
                continue
            ok = (isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name)
                  and st.targets[0].id == name
                  and not any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(st.value)))
            first = k if ok else None
            break
        if first is None:
            return None
    return assigned


def _carries_nothing(flow: NestFlow, f: For, depth: int, private=frozenset()) -> bool:
    """No two instances of statements inside `f` that agree on the loops around `f` and differ
    in `f`'s own iteration touch one location, one of them writing it (the `private`
    names, one location per iteration, aside).

    One isl problem for all the statements: every pair of instances touching one location
    (one writing it) is mapped to the iterations of the loops down to `f` both run in, and
    none may agree on the loops around `f` and differ in `f` (pair by pair, a loop body of
    700 statements took 80 s here)."""
    inside = [leaf for leaf in flow.leaves if len(leaf.path) > depth and leaf.path[depth] is f]
    if not inside:
        return True
    writes = flow._union([a for leaf in inside for _, a in flow._leaf_accesses(
        leaf, [(n, idx) for n, idx in _writes(leaf.stmt) if n not in private])])
    reads = flow._union([a for leaf in inside for _, a in flow._leaf_accesses(
        leaf, [(n, idx) for _, n, idx in _reads(leaf.stmt) if n not in private])])
    # instance pairs touching one location, one writing (both orders: the condition is symmetric)
    conflict = writes.apply_range(writes.union(reads).reverse()).union(reads.apply_range(writes.reverse()))
    xs = ", ".join(f"x{k}" for k in range(depth + 1))
    ys = ", ".join(f"y{k}" for k in range(depth + 1))
    down_to_f = flow._union([
        f"{{ S{leaf.sid}[{', '.join(f'x{k}' for k in range(len(leaf.path)))}] -> I[{xs}] }}" for leaf in inside])
    pairs = conflict.apply_domain(down_to_f).apply_range(down_to_f)
    same = [f"x{k} = y{k}" for k in range(depth)]
    other = flow._union([f"{{ I[{xs}] -> I[{ys}] : {' and '.join(same + [f'(x{depth} < y{depth} or x{depth} > y{depth})'])} }}"])
    return pairs.intersect(other).is_empty()