"""Fixed cost of a `plan.run` call: what a compiled plan adds to its kernels' own work.

    .venv/bin/python bench/overhead_bench.py [--repeat 2000]

For every corpus program at tiny sizes (every dimension 4, so the numpy work itself is a
few microseconds) and every PolyBench kernel at its MINI size, in one process:
  run_us       plan.run(*args), median of `--repeat` calls after warm-up (args already
               float32 C-contiguous arrays of the plan's shapes: the fast path)
  body_us      the plan's straight-line function alone (`plan.compiled().fn`), the same
               numpy operations with no argument check: the kernels' own work
  overhead_us  run_us - body_us: what the call adds (the target is <= 5 us)
  hand_us      the program's numpy truth (`truth`), written by hand, for scale
and the interpreter (`numpy_backend.run`, what every call paid before plans were
compiled), `interp_us`. Medians per call; min over 5 blocks of `--repeat` calls.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

from common import ROOT, load_cases, save

import eqsat
from eqsat.backends import numpy_backend
from eqsat.ir import Program


def per_call(fn, repeat: int) -> float:
    fn()
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(repeat):
            fn()
        best = min(best, (time.perf_counter() - t0) / repeat)
    return best * 1e6


def args_for(prog, dims, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for p in prog.params:
        if p.dtype is int:
            out.append(int(dims[p.name]))
        elif p.shape is None:
            out.append(float(rng.standard_normal() + 2.0))
        else:
            shape = tuple(d if isinstance(d, int) else dims[d] for d in p.shape)
            out.append(rng.standard_normal(shape).astype(np.float32))
    return out


def polybench():
    folder = ROOT / "tests" / "polybench"
    for path in sorted(folder.glob("*.py")):
        spec = importlib.util.spec_from_file_location(f"pb_{path.stem}", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        prog = next(v for v in vars(mod).values() if isinstance(v, Program))
        yield path.stem, mod, prog, dict(mod.SHAPES)


def measure(name, mod, prog, dims, repeat):
    plan = eqsat.optimize(prog, dims)
    args = args_for(prog, dims)
    compiled = plan.compiled()
    row = {"program": name, "dims": dims, "how": compiled.how, "kernels": len(plan.kernels)}
    row["run_us"] = per_call(lambda: plan.run(*args), repeat)
    # a plan under the finite check (eqsat/assume.py): its body is the assuming plan's
    # function, and the check on the arguments counts as overhead
    inner = getattr(compiled, "fast", compiled)
    row["checks_finite"] = inner is not compiled
    if getattr(inner, "fn", None) is not None:
        fast = [np.float32(a) if isinstance(a, float) else a for a in args]
        row["body_us"] = per_call(lambda: inner.fn(*fast), repeat)
        row["overhead_us"] = row["run_us"] - row["body_us"]
    vals, _ = eqsat.args.bind_args(prog, args, None, copy=False)
    scalars = {p.name: v for p, v in zip(prog.params, vals) if p.shape is None and p.dtype is not int}
    row["interp_us"] = per_call(lambda: numpy_backend.run(plan, vals, scalars), max(repeat // 10, 20))
    truth = getattr(mod, "truth", None)
    if truth is not None:
        row["hand_us"] = per_call(lambda: truth(*[a.copy() if isinstance(a, np.ndarray) else a for a in args]),
                                  max(repeat // 10, 20))
    return row


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=2000)
    a = ap.parse_args()
    os.environ.setdefault("EQSAT_COMPILE_LOOPS", "always")
    rows = []
    for name, mod, prog in load_cases():
        rows.append(measure(name, mod, prog, {d: 4 for d in mod.SHAPES}, a.repeat))
    for name, mod, prog, dims in polybench():
        rows.append(measure(f"polybench/{name}", mod, prog, dims, a.repeat // 4))
    t = Table(title="plan.run fixed cost per call (us)")
    for c in ("program", "kernels", "run", "body", "overhead", "interpreter", "hand numpy", "how"):
        t.add_column(c, justify="left" if c in ("program", "how") else "right")
    fmt = lambda r, k: f"{r[k]:.2f}" if k in r else "-"
    for r in rows:
        t.add_row(r["program"], str(r["kernels"]), fmt(r, "run_us"), fmt(r, "body_us"), fmt(r, "overhead_us"),
                  fmt(r, "interp_us"), fmt(r, "hand_us"), r["how"])
    Console(width=200).print(t)
    over = [r["overhead_us"] for r in rows if "overhead_us" in r]
    summary = {"median_overhead_us": statistics.median(over), "max_overhead_us": max(over),
               "compiled": sum("overhead_us" in r for r in rows), "programs": len(rows),
               "median_run_over_interp": statistics.median(r["run_us"] / r["interp_us"] for r in rows)}
    print(f"overhead per call: median {summary['median_overhead_us']:.2f} us, max {summary['max_overhead_us']:.2f} us "
          f"over {summary['compiled']}/{summary['programs']} compiled plans; run/interpreter median "
          f"{summary['median_run_over_interp']:.3f}")
    print("saved", save("overhead", {"rows": rows, "summary": summary, "repeat": a.repeat}))


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    main()
