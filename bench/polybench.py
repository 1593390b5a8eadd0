"""PolyBench/C 4.2, all 30 kernels (tests/polybench/*.py): eqsat against numba and numpy.

    .venv/bin/python bench/polybench.py [--size mini|medium] [--only gemm,lu,...] [--repeat 3] [--target cpu]

Per kernel, at the chosen dataset size (MEDIUM by default; a few kernels at a smaller size
when MEDIUM is too slow here, printed and saved as such):
- optimize(): seconds for `eqsat.optimize(prog, sizes, target="cpu")` (one call; the plans
  run on this CPU). Where optimize() crashes for that target (not a refusal: an internal
  error), the crash is printed and saved and the plan is optimize(target="h100")'s;
- plan: `plan.run(*args)` seconds, median after one warm-up run (the warm-up
  compiles the kept loop nests with numba; it is reported as plan_first_s);
- numba: the program's own function compiled with `numba.njit` (dims bound as globals, as
  `eqsat.reference` binds them, the language's functions bound to numpy/numba ones):
  compile seconds and run seconds (median after a warm-up);
- numpy: the kernel's hand-written numpy `truth` (vectorized where natural), run seconds;
- plan / numba: the ratio of run times, and its geometric mean over the kernels.
The three are timed interleaved (one run of each per round; at least --repeat rounds, more
while they add up to under 0.3 s, so a 20-microsecond kernel gets thousands of samples).
BLAS runs on one thread (OPENBLAS_NUM_THREADS=1 unless set), as numba runs on one core.
Parameters are passed by value: numba's version of the program updates in place the
parameters the program writes, so each of its runs gets fresh copies of those, inside the
timed region (the hand-written numpy gets copies of every array); the plan copies what it
writes itself (`plan.run` leaves the caller's arrays as they were, checked here on its
first run), so it runs on the arguments as they are. The plan's
and numba's outputs are checked against `truth` (relative L2 error, shown).

Prints a table and saves bench/results/polybench.json (bench/results/polybench_mini.json for
--size mini).
"""
from __future__ import annotations

import argparse
import json
import importlib.util
import math
import os
import statistics
import sys
import time
import types

# One BLAS thread unless the caller says otherwise: numba runs the loops on one core, and on
# this 2-core VM a second OpenBLAS thread waits for a core whenever anything else runs (a
# 0.2 ms matmul then takes 16 ms). Set OPENBLAS_NUM_THREADS yourself to measure otherwise.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from common import ROOT, save  # noqa: E402

sys.path.insert(0, str(ROOT))
import eqsat  # noqa: E402
from eqsat import lang  # noqa: E402
from eqsat.ir import Program  # noqa: E402

POLYBENCH = ROOT / "tests" / "polybench"

# Kernels run below MEDIUM, and why. (Measured on this 2-core VM; see the module docstring.)
SMALLER: dict[str, tuple[dict, str]] = {}

SLOW_S = 5.0  # a warm-up slower than this: time one run instead of the median of --repeat
MIN_TOTAL_S = 0.3  # more runs while the timed ones add up to less than this ...
MAX_RUNS = 5000  # ... up to this many


def load(name: str):
    spec = importlib.util.spec_from_file_location(f"polybench_{name}", POLYBENCH / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    prog = next(v for v in vars(mod).values() if isinstance(v, Program))
    return mod, prog


def copy_args(args):
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def written_params(prog) -> set:
    """Positions of the parameters the program writes (numba's version updates them in place)."""
    from eqsat.lower import _scan

    writes: set = set()
    for st in prog.body:
        _scan(st, set(), writes, set(), set())
    return {i for i, p in enumerate(prog.params) if p.name in writes}


def copy_written(args, positions: set):
    return [a.copy() if i in positions and isinstance(a, np.ndarray) else a for i, a in enumerate(args)]


def as_tuple(x):
    return x if isinstance(x, tuple) else (x,)


def rel_err(got, want) -> float:
    errs = []
    for g, w in zip(as_tuple(got), as_tuple(want)):
        g, w = np.asarray(g, dtype=np.float64), np.asarray(w, dtype=np.float64)
        d = np.linalg.norm(w)
        errs.append(float(np.linalg.norm(g - w) / (d if d > 0 else 1.0)))
    return max(errs)


def first_run(fn):
    """(seconds, result) of one run: the warm-up (numba compiles a plan's nests in it)."""
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def timed_together(fns: dict, firsts: dict, repeat: int) -> dict:
    """name -> median seconds of a run, the runs of all `fns` interleaved (one of each per
    round, each first in turn), so each sees the machine in the same state: on this VM a run of tens
    of microseconds is 20-40% slower for a while after other work, and timing one
    function after the other charged that to whichever came first. At least `repeat`
    rounds, more while the rounds add up to under MIN_TOTAL_S (up to MAX_RUNS); one round
    when a warm-up (`firsts`) took longer than SLOW_S."""
    ts: dict = {k: [] for k in fns}
    slow = any(firsts[k] > SLOW_S for k in fns)
    rounds, total, names = 0, 0.0, list(fns)
    while rounds < (1 if slow else repeat) or (not slow and total < MIN_TOTAL_S and rounds < MAX_RUNS):
        for k in names[rounds % len(names):] + names[:rounds % len(names)]:  # each first in turn
            fn = fns[k]
            t0 = time.perf_counter()
            fn()
            dt = time.perf_counter() - t0
            ts[k].append(dt)
            total += dt
        rounds += 1
    return {k: statistics.median(v) for k, v in ts.items()}


_NUMBA_LIB = None


def _numba_lib():
    """The language's functions as numba-callable ones: buffers zero-filled f32 (as `empty` is)."""
    global _NUMBA_LIB
    if _NUMBA_LIB is None:
        import numba

        @numba.njit(error_model="numpy")
        def zeros(shape):
            return np.zeros(shape, dtype=np.float32)

        lib = {id(lang.empty): zeros, id(lang.zeros): zeros}
        for f in list(lang.UNARY.values()) + list(lang.BINARY.values()):
            lib[id(f)] = numba.njit(error_model="numpy")(f)
        lib[id(lang.sqrt)], lib[id(lang.exp)] = np.sqrt, np.exp
        _NUMBA_LIB = lib
    return _NUMBA_LIB


def numba_version(prog, sizes: dict):
    """The program's own function under numba.njit: its globals with the dims bound (as
    `eqsat.reference` binds them) and the language's functions replaced by compiled ones."""
    import numba

    fn = prog.fn
    lib = _numba_lib()
    g = {k: lib.get(id(v), v) for k, v in fn.__globals__.items()}
    ints = {p.name for p in prog.params if p.dtype is int}
    g.update({d: int(n) for d, n in sizes.items() if d not in ints})
    f = types.FunctionType(fn.__code__, g, fn.__name__, fn.__defaults__, fn.__closure__)
    return numba.njit(error_model="numpy")(f)


def numba_args(prog, args):
    out = []
    for p, a in zip(prog.params, args):
        if p.dtype is int:
            out.append(int(a))
        elif p.shape is None:
            out.append(np.float32(a))
        else:
            out.append(np.asarray(a, dtype=np.float32))
    return out


def bench_kernel(name: str, size: str, repeat: int, target: str) -> dict:
    mod, prog = load(name)
    sizes = mod.SHAPES if size == "mini" else mod.MEDIUM
    note = ""
    if size == "medium" and name in SMALLER:
        sizes, note = SMALLER[name]
    args = list(mod.init(np.random.default_rng(0), dict(sizes)))
    row = {"kernel": name, "sizes": dict(sizes), "note": note, "liftable": bool(mod.LIFTABLE)}

    run_np = lambda: mod.truth(*copy_args(args))  # noqa: E731
    fns, firsts = {"numpy": run_np}, {}
    firsts["numpy"], want = first_run(run_np)

    row["target"] = target
    try:
        t0 = time.perf_counter()
        try:
            plan = eqsat.optimize(prog, dict(sizes), target=target)
        except eqsat.EqsatError:
            raise
        except Exception as e:  # noqa: BLE001 - a crash of optimize() is a finding: say so, use another target
            row["optimize_crashed"] = f"target={target}: {type(e).__name__}: {e}"
            row["target"] = "h100"
            t0 = time.perf_counter()
            plan = eqsat.optimize(prog, dict(sizes), target="h100")
        row["optimize_s"] = time.perf_counter() - t0
        row["kinds"] = [k.kind for k in plan.kernels]
        fns["plan"] = lambda: plan.run(*args)
        before = copy_args(args)
        firsts["plan"], got = first_run(fns["plan"])
        if not all(np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b for a, b in zip(args, before)):
            raise AssertionError(f"{name}: plan.run modified its arguments")
        row.update(plan_first_s=firsts["plan"], plan_err=rel_err(got, want))
        row["loops"] = [how for _, how in plan.loop_runners.values()]
    except eqsat.EqsatError as e:
        row["refused"] = f"{type(e).__name__}: {e}"

    try:
        nargs = numba_args(prog, args)
        jf = numba_version(prog, sizes)
        import numba

        t0 = time.perf_counter()
        jf.compile(tuple(numba.typeof(a) for a in nargs))
        row["numba_compile_s"] = time.perf_counter() - t0
        written = written_params(prog)
        fns["numba"] = lambda: jf(*copy_written(nargs, written))
        firsts["numba"], got_nb = first_run(fns["numba"])
        row["numba_err"] = rel_err(got_nb, want)
    except Exception as e:  # noqa: BLE001 - numba failing on a kernel is a result to report
        fns.pop("numba", None)
        row["numba_failed"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
    medians = timed_together(fns, firsts, repeat)
    row.update({f"{k}_s": v for k, v in medians.items()})
    if "plan_s" in row and "numba_s" in row:
        row["plan_over_numba"] = row["plan_s"] / row["numba_s"]
    return row


def fmt_s(x):
    if x is None:
        return "-"
    return f"{x * 1e3:.2f} ms" if x < 1 else f"{x:.2f} s"


def show(rows, size, target):
    headers = ["kernel", "sizes", "optimize", "plan", "numba", "numba compile", "numpy", "plan/numba",
               "err plan", "kernels"]
    table = []
    for r in rows:
        kinds = r.get("kinds")
        if "refused" in r:
            kinds_s = "REFUSED: " + r["refused"].split(": ", 1)[-1][:90]
        else:
            kinds_s = ",".join(kinds) if kinds else "-"
        sz = ",".join(f"{k}={v}" for k, v in r["sizes"].items()) + (" *" if r["note"] else "")
        if "optimize_crashed" in r:
            kinds_s = f"(target={r['target']}: {r['optimize_crashed']}) " + kinds_s
        table.append([r["kernel"], sz, fmt_s(r.get("optimize_s")), fmt_s(r.get("plan_s")), fmt_s(r.get("numba_s")),
                      fmt_s(r.get("numba_compile_s")), fmt_s(r.get("numpy_s")),
                      f"{r['plan_over_numba']:.2f}" if "plan_over_numba" in r else "-",
                      f"{r['plan_err']:.1e}" if "plan_err" in r else "-", kinds_s])
    try:
        from rich.console import Console
        from rich.table import Table

        t = Table(title=f"PolyBench/C 4.2, {size} datasets (* = below MEDIUM), optimize(target={target!r})")
        for h in headers:
            t.add_column(h, overflow="fold")
        for row in table:
            t.add_row(*row)
        Console(width=220).print(t)
    except ImportError:
        print(" | ".join(headers))
        for row in table:
            print(" | ".join(row))


def markdown(data: dict) -> str:
    """The README's per-kernel table from a saved result (bench/results/polybench.json)."""
    from collections import Counter

    out = ["| kernel | plan ms | numba ms | plan/numba | numpy ms | optimize s | kernels |",
           "|---|---|---|---|---|---|---|"]
    for r in data["kernels"]:
        kinds = ", ".join(f"{n} {k}" if n > 1 else k for k, n in Counter(r.get("kinds", [])).items())
        ms = lambda k: f"{r[k] * 1e3:.2f}" if r.get(k) is not None else "-"  # noqa: E731
        ratio = f"{r['plan_over_numba']:.2f}" if r.get("plan_over_numba") is not None else "-"
        opt = f"{r['optimize_s']:.2f}" if r.get("optimize_s") is not None else "-"
        out.append(f"| {r['kernel']} | {ms('plan_s')} | {ms('numba_s')} | {ratio} | {ms('numpy_s')} | {opt} | {kinds} |")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", choices=["mini", "medium"], default="medium")
    ap.add_argument("--only", default="", help="comma-separated kernel names (file stems)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--target", default="cpu", help="optimize() target (the plans run on this CPU)")
    ap.add_argument("--markdown", metavar="JSON", help="print the README table from a saved result and exit")
    a = ap.parse_args()
    if a.markdown:
        print(markdown(json.load(open(a.markdown))))
        return
    names = sorted(p.stem for p in POLYBENCH.glob("*.py"))
    if a.only:
        want = a.only.split(",")
        names = [n for n in names if n in want]
    t_start = time.perf_counter()
    rows = []
    for name in names:
        t0 = time.perf_counter()
        if a.size == "medium" and name in SMALLER:
            print(f"{name}: below MEDIUM at {SMALLER[name][0]} ({SMALLER[name][1]})", flush=True)
        r = bench_kernel(name, a.size, a.repeat, a.target)
        rows.append(r)
        print(f"{name}: done in {time.perf_counter() - t0:.1f} s: optimize {fmt_s(r.get('optimize_s'))}, "
              f"plan {fmt_s(r.get('plan_s'))} (first {fmt_s(r.get('plan_first_s'))}), numba {fmt_s(r.get('numba_s'))} "
              f"(compile {fmt_s(r.get('numba_compile_s'))}), numpy {fmt_s(r.get('numpy_s'))}, "
              f"kinds {r.get('kinds', r.get('refused'))}"
              + (f", numba failed: {r['numba_failed']}" if "numba_failed" in r else ""), flush=True)
    show(rows, a.size, a.target)
    ratios = [r["plan_over_numba"] for r in rows if "plan_over_numba" in r]
    geo = math.exp(sum(math.log(x) for x in ratios) / len(ratios)) if ratios else None
    total = time.perf_counter() - t_start
    if geo is not None:
        print(f"geomean plan/numba run time over {len(ratios)} kernels: {geo:.3f} "
              f"(< 1: the plan is faster)")
    smaller = [r["kernel"] for r in rows if r["note"]]
    if smaller:
        print("run below MEDIUM:", ", ".join(f"{r['kernel']} ({r['note']})" for r in rows if r["note"]))
    crashed = [r for r in rows if "optimize_crashed" in r]
    for r in crashed:
        print(f"optimize() crashed on {r['kernel']} ({r['optimize_crashed']}); its plan is optimize(target='h100')")
    refused = [r["kernel"] for r in rows if "refused" in r]
    if refused:
        print("refused by optimize():", ", ".join(refused))
    bad = [r["kernel"] for r in rows if r.get("plan_err", 0) > 1e-4 or r.get("numba_err", 0) > 1e-4]
    if bad:
        print("WRONG RESULTS (relative error > 1e-4 against truth):", ", ".join(bad))
    print(f"total {total:.0f} s")
    name = "polybench" if a.size == "medium" else "polybench_mini"
    print("saved", save(name, {"size": a.size, "repeat": a.repeat, "target": a.target,
                               "openblas_threads": os.environ.get("OPENBLAS_NUM_THREADS"),
                               "geomean_plan_over_numba": geo,
                               "smaller_than_medium": {k: {"sizes": v[0], "why": v[1]} for k, v in SMALLER.items()},
                               "total_s": total, "kernels": rows}))


if __name__ == "__main__":
    main()
