"""NPBench-style numpy ports of PolyBench (the programs of tests/test_sections.py's NPBENCH:
numpy slices, np.dot of slices, np.outer, chained stores, np.flip): each plan for the CPU
target against the same source run as plain numpy, the program as its author runs it.

    .venv/bin/python bench/npbench_bench.py [--only lu,gemver] [--repeat 5] [--scale 1]

Per kernel, at the sizes below (times --scale): optimize() seconds, the plan's kernel kinds,
the plan's and numpy's run time (medians of --repeat runs after a warm-up each, interleaved;
both get fresh copies of the arrays the program writes, inside the timed region), their
ratio, and the relative L2 error of the plan against numpy. Prints a table and saves
bench/results/npbench.json.
"""
from __future__ import annotations

import argparse
import importlib.util
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from common import ROOT, save  # noqa: E402

sys.path.insert(0, str(ROOT / "tests"))
import test_sections as T  # noqa: E402

import eqsat  # noqa: E402

SIZES = {"covariance": {"N": 400, "M": 300}, "correlation": {"N": 400, "M": 300}, "durbin": {"N": 2000},
         "lu_np": {"N": 300}, "cholesky_np": {"N": 300}, "seidel": {"N": 300}, "symm": {"M": 300, "N": 240},
         "gemver": {"N": 1200}, "syr2k": {"N": 300, "M": 240}, "ludcmp": {"N": 300},
         "fdtd": {"NX": 300, "NY": 360, "T": 20}, "trmm_np": {"M": 300, "N": 240}, "gesummv": {"N": 1200},
         "mm2": {"NI": 200, "NJ": 220, "NK": 240, "NL": 260}, "gemm_np": {"NI": 300, "NJ": 320, "NK": 340},
         "floyd_warshall": {"N": 200}, "outer_products": {"N": 1200, "M": 1000}}


def load(name: str, src: str):
    path = Path(tempfile.mkdtemp(prefix="npbench_")) / f"{name}.py"
    path.write_text("from eqsat import *\n" + T.PRELUDE + src)
    spec = importlib.util.spec_from_file_location(f"npbench_{name}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.p


def args_for(prog, dims: dict, how, rng) -> list:
    out = []
    for p in prog.params:
        if p.shape is None:
            out.append(float(rng.uniform(0.5, 1.5)))
        else:
            out.append(rng.standard_normal(tuple(dims[d] for d in p.shape)).astype(np.float32))
    if how == "spd":
        a = out[next(i for i, p in enumerate(prog.params) if p.shape and len(p.shape) == 2)]
        a[:] = a @ a.T + 2.0 * a.shape[0] * np.eye(a.shape[0])
    names = [p.name for p in prog.params]
    if names == ["path"]:  # floyd-warshall: distances
        out[0] = np.abs(out[0]) * 10.0
    if names == ["r"]:  # durbin (Levinson): a decaying autocorrelation, where the recursion is
        # stable (on random values it diverges, and float32 against float64 scalars with it)
        out[0] = (0.5 ** np.arange(1, out[0].size + 1) * rng.uniform(0.5, 1.0, out[0].size)).astype(np.float32)
    return out


def rel_err(got, want) -> float:
    gs, ws = (got, want) if isinstance(want, tuple) else ((got,), (want,))
    num = math.fsum(float(np.linalg.norm(np.asarray(g, np.float64) - np.asarray(w, np.float64))) ** 2
                    for g, w in zip(gs, ws))
    den = math.fsum(float(np.linalg.norm(np.asarray(w, np.float64))) ** 2 for w in ws)
    return math.sqrt(num / den) if den else math.sqrt(num)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--scale", type=float, default=1.0)
    a = ap.parse_args()
    only = [x for x in a.only.split(",") if x]
    rows = []
    for name, (src, how) in sorted(T.NPBENCH.items()):
        if only and name not in only:
            continue
        prog = load(name, src)
        dims = {d: max(1, int(round(v * a.scale))) if d != "T" else v for d, v in SIZES.get(name, {}).items()}
        args = args_for(prog, dims, how, np.random.default_rng(0))
        t0 = time.perf_counter()
        plan = eqsat.optimize(prog, dims, target="cpu")
        opt = time.perf_counter() - t0

        def fresh():
            return [x.copy() if isinstance(x, np.ndarray) else x for x in args]

        with np.errstate(all="ignore"):
            want = T._truth(src, dims, fresh())
            got = plan.run(*fresh())  # (the warm-up: kept nests compile)
            T._truth(src, dims, fresh())
            tp, tn = [], []
            for _ in range(a.repeat):
                xs = fresh()
                t = time.perf_counter()
                plan.run(*xs)
                tp.append(time.perf_counter() - t)
                g = {"np": np, **dims}
                exec(compile(T.PRELUDE + src.replace("@program\n", ""), "<numpy>", "exec"), g)
                xs = fresh()
                t = time.perf_counter()
                g["p"](*xs)
                tn.append(time.perf_counter() - t)
        row = {"kernel": name, "dims": dims, "optimize_s": opt, "plan_s": statistics.median(tp),
               "numpy_s": statistics.median(tn), "kinds": [k.kind for k in plan.kernels], "rel_err": rel_err(got, want)}
        row["ratio"] = row["plan_s"] / row["numpy_s"]
        rows.append(row)
        print(f"{name}: plan {row['plan_s'] * 1e3:.2f} ms, numpy {row['numpy_s'] * 1e3:.2f} ms, ratio "
              f"{row['ratio']:.3f}, err {row['rel_err']:.1e}", flush=True)
    geo = math.exp(statistics.fmean(math.log(r["ratio"]) for r in rows)) if rows else None
    t = Table(title="NPBench-style ports: plan against the same program run as numpy (this CPU)")
    for c in ("kernel", "sizes", "optimize", "plan", "numpy", "plan/numpy", "rel err", "kinds"):
        t.add_column(c)
    for r in rows:
        t.add_row(r["kernel"], ",".join(f"{k}={v}" for k, v in r["dims"].items()), f"{r['optimize_s']:.2f} s",
                  f"{r['plan_s'] * 1e3:.2f} ms", f"{r['numpy_s'] * 1e3:.2f} ms", f"{r['ratio']:.3f}",
                  f"{r['rel_err']:.1e}", ",".join(r["kinds"]))
    Console(width=200).print(t)
    print(f"geomean plan/numpy over {len(rows)} kernels: {geo:.3f}")
    if not only:
        print("saved", save("npbench", {"repeat": a.repeat, "scale": a.scale, "geomean_plan_over_numpy": geo,
                                         "kernels": rows}))


if __name__ == "__main__":
    main()
