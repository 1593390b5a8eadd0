"""Many programs at once: `optimize_many` over a process pool (or any executor).

Each worker process pays egglog's fixed costs once (its prepared e-graph) and optimizes
the items it is given; what travels back is the chosen terms and the saturation report,
and the Plan is rebuilt here from the program's own lowering, which is deterministic.
An item that fails gives its exception in its slot; the batch never raises for it.
"""
from __future__ import annotations

import os
from concurrent.futures import Executor, ProcessPoolExecutor, as_completed

from .errors import ArgumentError


def optimize_many(items, *, workers: int | None = None, executor: Executor | None = None,
                  progress: bool | None = None, **options) -> list:
    """Optimize every item; return one entry per item, in order: its Plan, or the exception
    it raised.

    items:    `(program, shapes)` pairs, or dicts `{"program": ..., "shapes": ..., **options}`.
    options:  keywords for every `optimize()` call (`target`, `rules`, `limits`, `extract`);
              a dict item's own keywords win. Rule files and modules travel by name or path.
    workers:  processes of the local pool (default: the machine's cores).
    executor: any `concurrent.futures.Executor` instead of the local pool: a Ray or Dask
              executor runs the same calls on many machines.
    progress: a progress bar (default: on for 20 items or more).
    """
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise ArgumentError(f"optimize_many: workers must be a whole number of processes, at least 1, got {workers!r}")
    items = list(items)
    results: list = [None] * len(items)
    jobs = []
    for i, item in enumerate(items):
        try:
            jobs.append(_job(i, item, options))
        except ArgumentError as e:  # a malformed item is that item's error, as a failing one is
            results[i] = e
    own = executor is None
    if own:
        import multiprocessing

        executor = ProcessPoolExecutor(max_workers=workers or os.cpu_count() or 1,
                                       mp_context=multiprocessing.get_context("spawn"))
    show = len(jobs) >= 20 if progress is None else progress
    try:
        futures = {executor.submit(_optimize_one, prog, shapes, kw): (i, prog, shapes, kw)
                   for i, prog, shapes, kw in jobs}
        done = as_completed(futures)
        if show:
            from rich.progress import track

            done = track(done, total=len(futures), description="optimize_many")
        for fut in done:
            i, prog, shapes, kw = futures[fut]
            try:
                results[i] = _rebuild(prog, shapes, kw, fut.result())
            except Exception as e:  # noqa: BLE001 - the item's error is its result
                results[i] = e
    finally:
        if own:
            executor.shutdown()
    return results


def _job(i, item, options):
    if isinstance(item, dict):
        kw = {**options, **{k: v for k, v in item.items() if k not in ("program", "shapes")}}
        return i, item.get("program"), item.get("shapes"), kw
    if isinstance(item, (tuple, list)) and len(item) == 2:
        return i, item[0], item[1], dict(options)
    raise ArgumentError(f"optimize_many: item {i} must be (program, shapes) or a dict, got {type(item).__name__}")


def _optimize_one(prog, shapes, kw):
    """In the worker: optimize, and return what a Plan is rebuilt from."""
    from .api import optimize

    plan = optimize(prog, shapes, **kw)
    meta = {k: getattr(plan, k, None) for k in ("extract_seconds", "extract_method", "ilp", "extraction", "egraph_nodes",
                                                  "optimize_seconds")}
    return plan.roots, plan.report, plan.rules, plan.target, meta, plan.lowered.kept_for_time


def _rebuild(prog, shapes, kw, data):
    from .api import Plan
    from .lower import lower

    roots, report, rules, target, meta, kept = data
    # lowered again as the worker did: its nests kept as written for time stay so (the
    # roots name nests by their number)
    plan = Plan(prog, dict(shapes), target, lower(prog, dict(shapes), keep=kept), roots, report, rules)
    for k, v in meta.items():
        setattr(plan, k, v)
    return plan
