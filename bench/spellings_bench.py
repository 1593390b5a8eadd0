"""Issue 7 campaign: does the structure eqsat finds depend on how the loops were written?

    .venv/bin/python bench/spellings_bench.py [--n 2000] [--seed 0] [--jobs 2] [--budget SECONDS]

Generates `--n` spelling variants of `C = epilogue(A @ B)` (`tests/gen_spellings.py`: operand
layouts, accumulation spellings, initializations, loop orders, constant factors, epilogues
and where they are written, split loops, batched or not; program i is
`generate_seeded(seed + i)`), optimizes each (`Limits(seconds=5)`), runs it on the numpy
backend against `eqsat.reference`, and checks the structure known by construction: one
matmul kernel with the written epilogue fused (`gen_spellings.structure`).

Prints a table of the match rate per tag (a form: `choice:value`) and overall, the
numerical mismatches and crashes (these must be zero), and the smallest missed program per
tag; the misses of programs with no tag in `KNOWN_MISSES` (tests/test_spellings.py) are
counted apart (these the CI test would fail on). Saves bench/results/spellings.json.
`--budget` stops submitting programs after that many seconds (the report says how many ran).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections import defaultdict
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent / "tests"
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(TESTS))

from common import save  # noqa: E402

_DIR = None


def _init(directory: str):
    global _DIR
    _DIR = directory
    if str(TESTS) not in sys.path:
        sys.path.insert(0, str(TESTS))


def _task(seed: int, seconds: float) -> dict:
    from gen_spellings import evaluate, generate_seeded

    gp = generate_seeded(seed)
    r = evaluate(gp, _DIR, seed, seconds)
    r["seed"] = seed
    return r


def _run_all(seeds: list, jobs: int, seconds: float, budget: float | None, directory: str, progress) -> dict:
    """seed -> result; a worker process that dies takes its program's result with it: those
    programs are rerun one at a time to name the one that kills the worker."""
    results: dict = {}
    pending = list(seeds)
    suspects: list = []
    t0 = time.perf_counter()

    def run_pool(queue: list, workers: int, isolate: bool):
        with ProcessPoolExecutor(workers, initializer=_init, initargs=(directory,)) as ex:
            running: dict = {}
            while queue or running:
                while queue and len(running) < 2 * workers and (budget is None or time.perf_counter() - t0 < budget):
                    s = queue.pop(0)
                    running[ex.submit(_task, s, seconds)] = s
                if not running:
                    break
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for f in done:
                    s = running.pop(f)
                    try:
                        results[s] = f.result()
                        progress(len(results))
                    except BrokenProcessPool:
                        if isolate:
                            results[s] = {"seed": s, "stage": "worker", "error": "the worker process died",
                                          "numerics_ok": False, "found": False, "matched": False, "why": "",
                                          "plan": "", "kernels": [], "seconds": 0.0}
                        else:
                            suspects.append(s)
                if suspects and not isolate:  # the pool is broken: everything running is lost
                    suspects.extend(running.values())
                    return
            return

    while pending:
        run_pool(pending, jobs, isolate=False)
        if budget is not None and time.perf_counter() - t0 >= budget:
            pending = []
        while suspects:
            run_pool([suspects.pop(0)], 1, isolate=True)
    return results


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=2000, help="number of programs")
    ap.add_argument("--seed", type=int, default=0, help="program i is generate_seeded(seed + i)")
    ap.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="worker processes")
    ap.add_argument("--seconds", type=float, default=5.0, help="Limits(seconds=...) per optimize()")
    ap.add_argument("--budget", type=float, default=None, help="stop submitting programs after this many seconds")
    ap.add_argument("--show", type=int, default=60, help="lines of each smallest missed program shown")
    a = ap.parse_args()

    from rich.console import Console
    from rich.table import Table

    from gen_spellings import generate_seeded
    from test_spellings import KNOWN_MISSES

    console = Console(width=160)
    directory = tempfile.mkdtemp(prefix="eqsat_spellings_")
    seeds = [a.seed + i for i in range(a.n)]
    t0 = time.perf_counter()
    last = [0.0]

    def progress(done: int):
        now = time.perf_counter()
        if now - last[0] > 30:
            last[0] = now
            print(f"  {done}/{a.n} programs, {now - t0:.0f} s", flush=True)

    results = _run_all(seeds, a.jobs, a.seconds, a.budget, directory, progress)
    wall = time.perf_counter() - t0
    ran = [s for s in seeds if s in results]
    progs = {s: generate_seeded(s) for s in ran}

    # ---- per tag
    per: dict = defaultdict(lambda: {"n": 0, "found": 0, "matched": 0, "smallest": None, "n_unknown": 0,
                                     "matched_unknown": 0})
    errors, mismatches, misses, unexplained = [], [], [], []
    for s in ran:
        r, gp = results[s], progs[s]
        if r["stage"] != "done":
            errors.append(s)
        elif not r["numerics_ok"]:
            mismatches.append(s)
        ok_run = r["stage"] == "done"
        if ok_run and not r["matched"]:
            misses.append(s)
        known = bool(set(gp.tags) & KNOWN_MISSES)
        if ok_run and not r["matched"] and not known:
            unexplained.append(s)
        for t in gp.tags + ["all"]:
            d = per[t]
            d["n"] += 1
            if not known:
                d["n_unknown"] += 1
                d["matched_unknown"] += bool(r["matched"])
            d["found"] += bool(r["found"])
            d["matched"] += bool(r["matched"])
            if ok_run and not r["matched"] and (d["smallest"] is None or gp.size() < progs[d["smallest"]].size()):
                d["smallest"] = s

    def key(t: str):
        c, _, v = t.partition(":")
        return (t == "all", c, v)

    table = Table(title=f"issue 7: structure found per form ({len(ran)} programs, {wall:.0f} s, {a.jobs} jobs)")
    for col in ("form (tag)", "programs", "matmul found", "full structure", "missed", "smallest miss (seed)",
                "full structure, known misses left out"):
        table.add_column(col, justify="left" if col.startswith("form") else "right")
    for t in sorted(per, key=key):
        d = per[t]
        rate = d["matched"] / d["n"]
        style = "bold" if t == "all" else ("red" if rate < 0.9 else None)
        table.add_row(t, str(d["n"]), f"{100 * d['found'] / d['n']:.1f}%", f"{100 * rate:.1f}%",
                      str(d["n"] - d["matched"]), "" if d["smallest"] is None else str(d["smallest"]),
                      (f"{100 * d['matched_unknown'] / d['n_unknown']:.1f}% of {d['n_unknown']}"
                       if d["n_unknown"] else "-"), style=style)
    console.print(table)

    console.print(f"\n[bold]numerical mismatches: {len(mismatches)}[/bold]   "
                  f"[bold]crashes: {len(errors)}[/bold]   structure misses: {len(misses)}, "
                  f"[bold]{len(unexplained)} without a tag of KNOWN_MISSES[/bold] "
                  f"(tests/test_spellings.py: {', '.join(sorted(KNOWN_MISSES))})")
    for s in sorted(unexplained, key=lambda s: progs[s].size())[:5]:
        console.print(f"\n[red]unexplained miss, seed {s}[/red]: {results[s]['why']}", markup=False, highlight=False)
        print(progs[s])
    for s in mismatches + errors:
        console.print(f"\n[red]seed {s}[/red]: {results[s]['error']}", markup=False, highlight=False)
        print(progs[s])
        print(results[s]["plan"])

    # ---- the smallest missed program per tag (each program once, with the tags it is smallest for)
    smallest: dict = defaultdict(list)
    for t in sorted(per, key=key):
        if per[t]["smallest"] is not None:
            smallest[per[t]["smallest"]].append(t)
    console.print(f"\n[bold]smallest missed program per tag[/bold] ({len(smallest)} distinct programs)")
    for s, tags in sorted(smallest.items(), key=lambda kv: progs[kv[0]].size()):
        gp, r = progs[s], results[s]
        src = gp.source.split("\n", 3)[-1].strip("\n").split("\n")
        console.print(f"\n-- seed {s}, smallest miss for: {' '.join(tags)}", markup=False, highlight=False)
        print(f"# shapes={gp.shapes}  why: {r['why']}")
        print("\n".join(src[: a.show]))

    rows = []
    for s in ran:
        r, gp = results[s], progs[s]
        rows.append({"seed": s, "tags": gp.tags, "shapes": gp.shapes, "stage": r["stage"],
                     "numerics_ok": r["numerics_ok"],
                     "found": r["found"], "matched": r["matched"], "why": r["why"], "kernels": r["kernels"],
                     "seconds": round(r["seconds"], 3)})
    detail = {str(s): {"source": progs[s].source, "shapes": progs[s].shapes, "tags": progs[s].tags,
                       "required": [[w, sorted(n)] for w, n in progs[s].required],
                       "why": results[s]["why"], "error": results[s]["error"], "plan": results[s]["plan"]}
              for s in sorted(set(mismatches + errors + unexplained + list(smallest)))}
    data = {"n_requested": a.n, "n_run": len(ran), "seed": a.seed, "jobs": a.jobs, "limits_seconds": a.seconds,
            "wall_s": wall, "overall": {"found": per["all"]["found"] / max(1, len(ran)),
                                        "matched": per["all"]["matched"] / max(1, len(ran))},
            "numerical_mismatches": mismatches, "crashes": errors, "structure_misses": len(misses),
            "known_misses": sorted(KNOWN_MISSES), "unexplained_misses": unexplained,
            "per_tag": {t: {k: v for k, v in per[t].items()} for t in sorted(per, key=key)},
            "smallest_misses": {str(s): tags for s, tags in smallest.items()},
            "programs": detail, "rows": rows}
    print("saved", save("spellings", data))


if __name__ == "__main__":
    main()
