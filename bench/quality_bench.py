"""Plan quality on every corpus program.

    .venv/bin/python bench/quality_bench.py

- DRAM bytes of the chosen plan (each kernel's reads and writes, as the cost model
  counts them) divided by the minimum: every input read once, every output written once;
- kernels per matmul (1.00 means every kernel is a matmul with its epilogue fused);
- greedy extraction's modeled cost against the exact (ILP) optimum.
"""
from __future__ import annotations

import math

from rich.console import Console
from rich.table import Table

from common import load_cases, save

import eqsat
import eqsat.terms
from eqsat.cost import ITEM


def minimum_bytes(prog, plan) -> float:
    used = set()
    for k in plan.kernels:
        if k.term is not None:
            for x in eqsat.terms.walk(k.term):
                if x.op == "Ten.input":
                    used.add(x.args[0])
    inputs = sum(math.prod(plan.lowered.input_shapes[n]) for n in used)
    outputs = 0
    for r in plan.roots:
        s = plan.costing.shape(r)
        outputs += math.prod(s) if s else 1
    return float(inputs + outputs) * ITEM


def main():
    rows = []
    for name, mod, prog in load_cases():
        greedy = eqsat.optimize(prog, mod.SHAPES)
        exact = eqsat.optimize(prog, mod.SHAPES, extract="ilp")
        mm = sum(k.kind == "matmul" for k in greedy.kernels)
        loops = any(k.kind == "loop" for k in greedy.kernels)
        dram = sum(k.bytes for k in greedy.kernels)
        rows.append({
            "program": name, "kernels": len(greedy.kernels), "matmuls": mm,
            "kernels_per_matmul": len(greedy.kernels) / mm if mm else None,
            "dram_over_min": None if loops else dram / minimum_bytes(prog, greedy),
            "greedy_us": greedy.cost * 1e6, "ilp_us": exact.cost * 1e6, "ilp_status": exact.ilp["status"],
            "greedy_over_ilp": greedy.cost / exact.cost,
        })
    t = Table(title="plan quality per corpus program")
    for col in ("program", "kernels", "matmuls", "kernels/matmul", "DRAM bytes / min", "greedy us", "ILP us",
                "greedy / ILP"):
        t.add_column(col)
    for r in rows:
        t.add_row(r["program"], str(r["kernels"]), str(r["matmuls"]),
                  "-" if r["kernels_per_matmul"] is None else f"{r['kernels_per_matmul']:.2f}",
                  "- (loop kept)" if r["dram_over_min"] is None else f"{r['dram_over_min']:.2f}",
                  f"{r['greedy_us']:.3f}", f"{r['ilp_us']:.3f}", f"{r['greedy_over_ilp']:.4f}")
    Console(width=150).print(t)
    print("saved", save("quality", {"rows": rows}))


if __name__ == "__main__":
    main()
