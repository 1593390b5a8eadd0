"""Scaling: optimize() on N-layer MLP chains (library calls) and loop-written chains.

    .venv/bin/python bench/scaling_bench.py [--max 128]

Prints build / saturate / extract seconds and e-nodes per N, and the growth exponent
fitted on the larger half of the sizes (log time against log N).
"""
from __future__ import annotations

import argparse
import math
import time

from rich.console import Console
from rich.table import Table

from common import save
from programs import loop_chain, mlp_chain

import eqsat


def fit(xs, ys) -> float:
    lx, ly = [math.log(x) for x in xs], [math.log(max(y, 1e-9)) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / sum((a - mx) ** 2 for a in lx)


def measure(kind: str, n: int) -> dict:
    prog = mlp_chain(n) if kind == "mlp" else loop_chain(n)
    dims = {"M": 32, "D": 32}
    t0 = time.perf_counter()
    plan = eqsat.optimize(prog, dims)
    total = time.perf_counter() - t0
    return {"kind": kind, "n": n, "total_s": total, "build_s": plan.report.build_seconds,
            "saturate_s": plan.report.seconds, "extract_s": plan.extract_seconds, "enodes": plan.report.nodes,
            "stop": plan.report.stop_reason, "kernels": len(plan.kernels),
            "matmuls": sum(k.kind == "matmul" for k in plan.kernels)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--max", type=int, default=128)
    a = ap.parse_args()
    sizes = [n for n in (1, 2, 4, 8, 16, 32, 64, 128, 256) if n <= a.max]
    eqsat.optimize(mlp_chain(1), {"M": 32, "D": 32})  # warm up imports and rule compilation
    rows, summary = [], {}
    for kind in ("mlp", "loops"):
        rs = [measure(kind, n) for n in sizes]
        rows += rs
        big = [r for r in rs if r["n"] >= 8]
        big = big if len(big) >= 2 else rs
        summary[kind] = {"exponent": fit([r["n"] for r in big], [r["total_s"] for r in big])}
        by_n = {r["n"]: r["total_s"] for r in rs}
        if 64 in by_n and 128 in by_n:
            summary[kind]["t128_over_t64"] = by_n[128] / by_n[64]
            summary[kind]["t64_s"] = by_n[64]
    t = Table(title="optimize() on chains of N layers (M = D = 32)")
    for col in ("kind", "N", "total s", "build s", "saturate s", "extract s", "e-nodes", "kernels", "matmuls", "stop"):
        t.add_column(col)
    for r in rows:
        t.add_row(r["kind"], str(r["n"]), f"{r['total_s']:.3f}", f"{r['build_s']:.3f}", f"{r['saturate_s']:.3f}",
                  f"{r['extract_s']:.3f}", str(r["enodes"]), str(r["kernels"]), str(r["matmuls"]), r["stop"])
    Console(width=160).print(t)
    for kind, s in summary.items():
        extra = (f", t(64) = {s['t64_s']:.2f} s, t(128)/t(64) = {s['t128_over_t64']:.2f}"
                 if "t128_over_t64" in s else "")
        print(f"{kind}: fitted growth exponent {s['exponent']:.2f}{extra}")
    print("saved", save("scaling", {"rows": rows, "summary": summary}))


if __name__ == "__main__":
    main()
