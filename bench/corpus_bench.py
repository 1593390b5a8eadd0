"""optimize() time and e-graph size for every corpus program.

    .venv/bin/python bench/corpus_bench.py [--repeat 5]

Each program is optimized once to warm up (imports, egglog rule compilation), then
`--repeat` times; the median wall time is reported with its phases (medians of each):
the front end (`@program` parsing, timed by decorating the function again), lowering
(symbolic execution and isl dataflow), the prepared e-graph's push and pop (the fixed part
every call pays), building the program's terms into it, the rule engine (saturation),
serializing the e-graph, extraction and forming the plan (`Plan.phases`).
"""
from __future__ import annotations

import argparse
import statistics
import time

from rich.console import Console
from rich.table import Table

from common import load_cases, save

import eqsat


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    rows = []
    phase_names: list = []
    for name, mod, prog in load_cases():
        eqsat.optimize(prog, mod.SHAPES)
        times, plans, fronts = [], [], []
        for _ in range(a.repeat):
            t0 = time.perf_counter()
            eqsat.program(prog.fn)
            fronts.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            plans.append(eqsat.optimize(prog, mod.SHAPES))
            times.append(time.perf_counter() - t0)
        p = plans[-1]
        phases = {"front end": statistics.median(fronts)}
        for k in plans[0].phases:
            phases[k] = statistics.median(q.phases.get(k, 0.0) for q in plans)
            if k not in phase_names:
                phase_names.append(k)
        rows.append({"phases_s": phases,
            "program": name, "median_s": statistics.median(times), "min_s": min(times),
            "build_s": p.report.build_seconds, "saturate_s": p.report.seconds, "extract_s": p.extract_seconds,
            "enodes": p.report.nodes, "rounds": p.report.iterations, "stop": p.report.stop_reason,
            "kernels": len(p.kernels), "matmuls": sum(k.kind == "matmul" for k in p.kernels),
            "cost_us": p.cost * 1e6, "baseline_us": p.baseline_cost * 1e6,
        })
    t = Table(title="optimize() per corpus program (median of %d)" % a.repeat)
    for col in ("program", "median s", "saturate s", "e-nodes", "rounds", "kernels", "matmuls", "modeled speedup"):
        t.add_column(col, justify="left" if col == "program" else "right")
    for r in rows:
        t.add_row(r["program"], f"{r['median_s']:.3f}", f"{r['saturate_s']:.3f}", str(r["enodes"]),
                  str(r["rounds"]), str(r["kernels"]), str(r["matmuls"]), f"{r['baseline_us'] / r['cost_us']:.2f}x")
    med = statistics.median(r["median_s"] for r in rows)
    Console(width=150).print(t)
    b = Table(title="optimize() phases, ms (medians)")
    cols = ["front end"] + phase_names
    b.add_column("program")
    for c in cols:
        b.add_column(c, justify="right")
    for r in rows:
        b.add_row(r["program"], *[f"{r['phases_s'].get(c, 0.0) * 1e3:.1f}" for c in cols])
    b.add_row("median", *[f"{statistics.median(r['phases_s'].get(c, 0.0) for r in rows) * 1e3:.1f}" for c in cols])
    Console(width=200).print(b)
    print(f"median optimize() over the corpus: {med:.3f} s (target <= 0.3 s)")
    print("saved", save("corpus", {"rows": rows, "median_of_medians_s": med}))


if __name__ == "__main__":
    main()
