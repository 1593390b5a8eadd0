"""The k cheapest distinct plans in one e-graph, and the fastest of them, measured.

`optimize(..., candidates=k)` keeps, beside the plan it chose, the next cheapest plans that
differ from it in their kernels (a different fusion, a different layout, a different
split into launches; never only different tiles). They are found by banning: from a plan,
each of its chosen tensor e-nodes is banned in turn and the greedy extraction is made again
without it, which gives the cheapest plan that avoids that choice (Lawler's scheme for the
k best solutions, over the greedy extraction rather than an exact one). Plans are explored
cheapest first; two plans are the same when their kernels compute the same terms.

`fastest(plans, backend)` runs each candidate on that backend and ranks them by time:
the cost model's rank and the measured rank are both reported (`Plan.compiled` uses it
where a measurement means something: on the CPU for numpy, on a CUDA device for triton).
"""
from __future__ import annotations

import heapq
import time

from .extract import ExtractionCycle
from .terms import walk


def signature(plan) -> tuple:
    """What makes two plans the same: their launches, each by what it is (its kind, the ops
    fused before and after it, the inputs under it, a kept nest by its number). A view
    read in place of its base (`transpose(b)[k, j]` for `b[j, k]`) is the same kernel, so
    terms alone would call too many plans distinct."""
    out = []
    for k in plan.kernels:
        if k.term is None:
            out.append(("loop", k.nest))
            continue
        inputs = sorted({n.args[0] for n in walk(k.term) if n.op == "Ten.input"})
        out.append((k.kind, tuple(k.prologue), tuple(k.epilogue), tuple(inputs)))
    return tuple(out)


def _chosen_tensor_nodes(ext, root_classes) -> list:
    """The tensor e-nodes of the extraction now in `ext`, reached from the roots through
    every chosen node (scalar bodies included: a load of a tensor reaches it)."""
    seen, out, stack = set(), [], list(root_classes)
    while stack:
        cid = stack.pop()
        if cid in seen:
            continue
        seen.add(cid)
        node = ext.override.get(cid)
        if node is None:
            best = ext.best.get(cid)
            node = best[1] if best else None
        if node is None:
            continue
        if node.sort == "Ten" and node.op != "Ten.input":
            out.append(node)
        stack.extend(v for kind, v in node.args if kind == "c")
    return out


def _extract(ext, root_classes, banned: frozenset):
    """The greedy extraction with these e-nodes banned: (roots, the tensor e-nodes it
    chose), or None where the roots cannot be made without them."""
    ext.override = {}
    ext.banned = set(banned)
    ext.best, ext.mm_best, ext.epi_choice = {}, {}, {}
    ext._fixpoint()
    try:
        roots = ext.decode_roots(root_classes)
    except (ExtractionCycle, LookupError):
        return None
    if roots is None:
        return None
    return roots, _chosen_tensor_nodes(ext, root_classes)


def distinct(ext, root_classes, first, make_plan, k: int, seconds: float, max_extractions: int | None = None) -> list:
    """Up to `k - 1` plans distinct from `first` (and from each other), cheapest first.

    `make_plan(roots)` builds a Plan from extracted roots. Stops after `seconds` or
    `max_extractions` extractions (default 6 per wanted plan). `ext` is left as it was."""
    if k <= 1:
        return []
    saved = (ext.override, ext.banned, ext.best, ext.mm_best, ext.epi_choice)
    limit = max_extractions or 6 * k
    t0 = time.perf_counter()
    seen = {signature(first)}
    found: list = []
    # (cost, tie, banned set, chosen tensor nodes): plans whose neighbours are still
    # unexplored; the first is the chosen plan's own extraction (greedy's or the ILP's)
    heap = [(first.cost, 0, frozenset(), _chosen_tensor_nodes(ext, root_classes))]
    tried, tie, extractions = set(), 1, 0
    try:
        while heap and len(found) < k - 1 and extractions < limit and time.perf_counter() - t0 < seconds:
            _, _, banned, chosen = heapq.heappop(heap)
            for node in [None, *chosen] if not banned else chosen:
                ban = banned if node is None else banned | {node.id}  # None: greedy, unbanned
                if ban in tried:
                    continue
                tried.add(ban)
                if extractions >= limit or time.perf_counter() - t0 >= seconds:
                    break
                extractions += 1
                got = _extract(ext, root_classes, ban)
                if got is None:
                    continue
                plan = make_plan(got[0])
                heapq.heappush(heap, (plan.cost, tie, ban, got[1]))
                tie += 1
                sig = signature(plan)
                if sig not in seen:
                    seen.add(sig)
                    found.append(plan)
    finally:
        ext.override, ext.banned, ext.best, ext.mm_best, ext.epi_choice = saved
    found.sort(key=lambda p: p.cost)
    return found[:k - 1]


def fastest(plans: list, backend: str, args, repeat: int = 5, timer=time.perf_counter) -> tuple:
    """(index of the fastest plan, ranking): each plan compiled for `backend` and run on
    `args` (one warm-up, then the best of `repeat` runs). The ranking has one row per plan,
    in the cost model's order: {"plan", "modeled_us", "model_rank", "measured_us",
    "measured_rank"}."""
    times = []
    for p in plans:
        run = p._compile_one(backend)
        run(tuple(args))
        best = float("inf")
        for _ in range(repeat):
            t = timer()
            run(tuple(args))
            best = min(best, timer() - t)
        times.append(best)
    order = sorted(range(len(plans)), key=times.__getitem__)
    rank = {i: r + 1 for r, i in enumerate(order)}
    rows = [{"plan": i, "modeled_us": p.cost * 1e6, "model_rank": i + 1, "measured_us": times[i] * 1e6,
             "measured_rank": rank[i]} for i, p in enumerate(plans)]
    return order[0], rows
