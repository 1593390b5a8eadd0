"""Many programs at once: `optimize_many` over a process pool (or any executor).

Each worker process pays egglog's fixed costs once (its prepared e-graph) and optimizes
the items it is given; what travels back is the chosen terms and the saturation report,
and the Plan is rebuilt here from the program's own lowering, which is deterministic.
An item that fails gives its exception in its slot; the batch never raises for it.
"""
from __future__ import annotations

import os
from concurrent.futures import Executor, ProcessPoolExecutor, as_completed

from .errors import ArgumentError, EqsatError


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
    if executor is not None and not callable(getattr(executor, "submit", None)):
        raise ArgumentError(f"optimize_many: executor must be a concurrent.futures.Executor (something with "
                            f"submit()), got {executor!r}")
    try:
        items = list(items)
    except TypeError:
        raise ArgumentError(f"optimize_many: items must be a list of (program, shapes) pairs or dicts, got "
                            f"{type(items).__name__}") from None
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
        futures = {executor.submit(_optimize_one, _by_name(prog), shapes, kw): (i, prog, shapes, kw)
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
        out = i, item.get("program"), item.get("shapes"), kw
    elif isinstance(item, (tuple, list)) and len(item) == 2:
        out = i, item[0], item[1], dict(options)
    else:
        raise ArgumentError(f"optimize_many: item {i} must be (program, shapes) or a dict, got {type(item).__name__}")
    from .ir import Program

    if isinstance(out[1], Program):  # module-level constants as they are now (a worker imports the module anew)
        out = (out[0], out[1].current(), *out[2:])
    fn = getattr(out[1], "fn", None)
    if "<locals>" in getattr(fn, "__qualname__", ""):
        # a worker finds a program by its module and name: one defined inside a function is
        # nowhere there, and failing to load it would end the worker and break the pool
        raise ArgumentError(f"optimize_many: item {i}'s program {fn.__name__!r} is defined inside a function; a "
                            f"worker process finds a program by its module and name, so define it at the top "
                            f"level of a module (or call optimize() for it)")
    return out


# what a Plan carries beyond its terms, sent back as it is (plain data)
_META = ("extract_seconds", "extract_method", "ilp", "extraction", "egraph_nodes", "optimize_seconds", "phases",
         "egraph_view", "provenance", "assumes", "cost")  # (cost: an assuming plan's includes its check)


def _by_name(prog):
    """A program as what finds it in a worker (its module, name and file) and the values of
    the module-level constants it reads, found there by `_optimize_one`: a program the
    worker cannot find is then that item's error. (Sent as a Program, it is found while the
    worker unpickles its task, where a failure ends the worker and breaks the pool for every
    item.) The worker imports the module anew, so a constant the caller set since its import
    (`mod.SCALE = 5.0`) would read as the import set it: its value travels with the program."""
    from .ir import Program

    if not isinstance(prog, Program):
        return prog
    return ("eqsat program", *prog.__reduce__()[1], dict(prog.constants))


def _optimize_one(prog, shapes, kw):
    """In the worker: optimize, and return what a Plan is rebuilt from."""
    from .api import optimize
    from .ir import _program_by_name

    if isinstance(prog, tuple) and prog[:1] == ("eqsat program",):
        *where, constants = prog[1:]
        prog = _program_by_name(*where)
        # (the caller's values: optimize() reads them through Program.current, as a call would)
        prog.fn.__globals__.update(constants)
    return _portable(optimize(prog, shapes, **kw))


def _portable(plan) -> dict:
    """What `_rebuild` makes the same Plan from: its terms and report, its plain data, the
    exact plan it falls back to (a plan that assumes finite arguments), and its
    alternatives' terms (`candidates=k`)."""
    return {"roots": plan.roots, "report": plan.report, "rules": plan.rules, "target": plan.target,
            "kept": plan.lowered.kept_for_time, "out_of_time_from": plan.lowered.out_of_time_from,
            "nests": _nests(plan.lowered), "meta": {k: getattr(plan, k, None) for k in _META},
            "fallback": None if plan.fallback is None else _portable(plan.fallback),
            "alternatives": [a.roots for a in plan.alternatives]}


def _nests(lowered) -> dict:
    """What identifies each loop nest of a lowering: where it starts (line and column: a
    worker may import the module from another path), what it writes, its work."""
    return {n.id: ((n.stmt.loc.line, n.stmt.loc.col) if getattr(n.stmt, "loc", None) else None, tuple(n.outputs),
                   n.work.get("ops"))
            for n in lowered.nests.values()}


def _rebuild(prog, shapes, kw, data, lowered=None):
    from .api import Plan
    from .lower import lower

    # lowered again as the worker did: its nests kept as written for time stay so, and from
    # the statement where it ran out of time on, statements are grouped as it grouped them
    # (the roots name nests by their number)
    if lowered is None or (lowered.kept_for_time, lowered.out_of_time_from) != (data["kept"], data["out_of_time_from"]):
        lowered = lower(prog, dict(shapes), keep=data["kept"], out_of_time_from=data["out_of_time_from"])
    if _nests(lowered) != data["nests"]:
        # (a safety net: the roots name nests by their number, and nests lowered otherwise
        # would run other code under those names)
        raise EqsatError(f"optimize_many: {prog.name} lowered again in this process differs from the worker's "
                         f"lowering (its loop nests); call optimize() for it")
    plan = Plan(prog, dict(shapes), data["target"], lowered, data["roots"], data["report"], data["rules"])
    for k, v in data["meta"].items():
        setattr(plan, k, v)
    plan.alternatives = [Plan(prog, dict(shapes), data["target"], lowered, r, data["report"], data["rules"],
                              plan.costing) for r in data["alternatives"]]
    if data["fallback"] is not None:
        plan.fallback = _rebuild(prog, shapes, kw, data["fallback"], lowered)
    return plan
