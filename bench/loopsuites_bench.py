"""Loop kernels of TSVC, the Livermore loops and NPB-style stencils, and more written as
people write them (BLAS, image processing, DSP, ML layers, stencils, mixed loop/library
forms) (tests/loopsuites): each plan for the CPU target against the program's own
function under numba.

    .venv/bin/python bench/loopsuites_bench.py [--suite all|suites|more] [--only s113,conv2d_valid] [--repeat 3]

Per kernel, at the sizes `tests/loopsuites/kernels.py` and `more_kernels.py` give
(vectors of 100k-1M f32 elements, 2-D arrays of 500-2000 a side): optimize() seconds, the plan's kernel kinds, the
plan's and numba's run time (medians, runs interleaved as bench/polybench.py times them,
after a warm-up run each; numba's runs copy the parameters the program writes, inside the
timed region, as the plan does), their ratio, and the relative error of the plan against
numba's result (numba evaluates a float literal in float64 where the reference rounds to
float32: differences of an ulp). Prints a table, the geometric mean of plan / numba, and
saves bench/results/loopsuites.json (the geometric mean per suite and over all).
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests" / "loopsuites"))

import numpy as np  # noqa: E402

import eqsat  # noqa: E402
import kernels  # noqa: E402
import more_kernels  # noqa: E402
from common import save  # noqa: E402
from polybench import copy_written, first_run, numba_args, numba_version, rel_err, timed_together, written_params  # noqa: E402,E501


SUITES = {"suites": kernels, "more": more_kernels}  # TSVC/Livermore/NPB; the rest


def bench_kernel(suite: str, name: str, repeat: int) -> dict:
    mod = SUITES[suite]
    prog, sizes, extra = mod.K[name]
    args = mod.make_args(name, prog, sizes, extra, np.random.default_rng(0))
    row = {"suite": suite, "kernel": name, "sizes": dict(sizes)}
    t0 = time.perf_counter()
    plan = eqsat.optimize(prog, mod.shapes_of(prog, sizes, extra), target="cpu")
    row["optimize_s"] = time.perf_counter() - t0
    row["kinds"] = [k.kind for k in plan.kernels]
    plan.compile_loops()
    written = written_params(prog)
    nargs = numba_args(prog, args)
    jf = numba_version(prog, sizes)
    fns = {"plan": lambda: plan.run(*args), "numba": lambda: jf(*copy_written(nargs, written))}
    firsts, outs = {}, {}
    for k, fn in fns.items():
        firsts[k], outs[k] = first_run(fn)
    row["plan_err_vs_numba"] = rel_err(outs["plan"], outs["numba"])
    med = timed_together(fns, firsts, repeat)
    row["plan_s"], row["numba_s"] = med["plan"], med["numba"]
    row["plan_over_numba"] = med["plan"] / med["numba"]
    row["how"] = plan.compiled("numpy").how
    return row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--suite", default="all", choices=["all", *SUITES])
    ap.add_argument("--only", default="", help="comma-separated kernel names")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    only = {n for n in a.only.split(",") if n}
    todo = [(s, n) for s, mod in SUITES.items() if a.suite in ("all", s) for n in mod.K if not only or n in only]
    rows, t0 = [], time.perf_counter()
    for suite, name in todo:
        try:
            row = bench_kernel(suite, name, a.repeat)
        except Exception as e:  # noqa: BLE001 - a kernel that fails is reported, the rest go on
            row = {"suite": suite, "kernel": name, "error": f"{type(e).__name__}: {e}"[:300]}
        rows.append(row)
        if "error" in row:
            print(f"{name:18s} ERROR {row['error']}", flush=True)
        else:
            print(f"{name:18s} {','.join(row['kinds']):32s} optimize {row['optimize_s']:6.2f} s  plan "
                  f"{row['plan_s'] * 1e3:9.3f} ms  numba {row['numba_s'] * 1e3:9.3f} ms  "
                  f"{row['plan_over_numba']:5.2f}x  err {row['plan_err_vs_numba']:.1e}", flush=True)
    def geomean(rs):
        ok = [r["plan_over_numba"] for r in rs if "plan_over_numba" in r]
        return (math.exp(sum(math.log(x) for x in ok) / len(ok)) if ok else float("nan")), len(ok)

    per_suite = {}
    for suite in SUITES:
        g, n = geomean([r for r in rows if r["suite"] == suite])
        if n:
            per_suite[suite] = g
            print(f"{suite}: geomean plan/numba over {n} kernels {g:.3f}")
    geo, n = geomean(rows)
    print(f"geomean plan/numba over {n} kernels: {geo:.3f}; above 2x: "
          f"{', '.join(r['kernel'] for r in rows if r.get('plan_over_numba', 0) > 2) or 'none'}; "
          f"errors: {', '.join(r['kernel'] for r in rows if 'error' in r) or 'none'}; "
          f"total {time.perf_counter() - t0:.0f} s")
    save("loopsuites", {"repeat": a.repeat, "target": "cpu", "geomean_plan_over_numba": geo,
                        "geomean_per_suite": per_suite, "kernels": rows})


if __name__ == "__main__":
    main()
