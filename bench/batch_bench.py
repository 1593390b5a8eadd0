"""optimize_many over a process pool against optimize() one item at a time (issue 13).

    .venv/bin/python bench/batch_bench.py [--generated 200] [--seed 0] [--workers CORES] [--seconds S]

The items are the corpus (`bench/common.py: load_cases`, at each case's SHAPES) plus
`--generated` spelling programs (`tests/gen_spellings.py: generate_seeded(seed + j)`).

Measured:
  sequential  `optimize()` of every item in turn, in this process, after one untimed
              warm-up call (imports, egglog's prepared e-graph); the wall time of the loop.
  batch       `optimize_many(items, workers=--workers)` (default: os.cpu_count()), wall
              time end to end: starting the spawned pool, each worker's imports and
              egglog set-up, the items, and rebuilding every Plan here.
  speedup     sequential / batch. The batch cannot beat max(sequential / workers, the
              longest single item) (`ideal_s`); what it takes beyond that is the pool's
              start-up and imbalance (`overhead_s`). The slowest items are listed. Other
              load on the machine skews both figures: compare runs on a quiet machine.
Checked, per item:
  same plan   the batch Plan's roots are the very terms of the sequential Plan's (terms
              are hash-consed: equal terms are one object), and its kernels agree:
              [(kind, epilogue, prologue, nest)] and str(roots) (`fingerprint`).
  numerics    the batch Plan run on random arguments (`conftest.random_args`) against the
              truth: the corpus case's `truth` (relative L2 error under 1e-4) or, for a
              generated program, `eqsat.reference` (`gen_spellings.close`).
  errors      an item whose optimize() raised, in either mode.
`--seconds` passes `Limits(seconds=S)` to every call in both modes (default: `Limits()`).
Prints the figures and the first differences; saves bench/results/batch.json.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent / "tests"
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(TESTS))

import numpy as np  # noqa: E402

from common import save  # noqa: E402
from soak_bench import load_programs  # noqa: E402

SHOW = 10  # differences and errors printed


def fingerprint(plan) -> dict:
    """What two Plans of one program must share to be the same plan."""
    return {"kernels": [(k.kind, list(k.epilogue), list(k.prologue), k.nest) for k in plan.kernels],
            "roots": str(plan.roots)}


def check_numerics(entry: dict, plan, seed: int) -> str:
    """'' when the plan's outputs match the truth on random arguments, else why not."""
    import eqsat
    from conftest import random_args, rel_err
    from gen_spellings import close

    args = random_args(entry["prog"], entry["shapes"], seed)
    copies = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
        want = entry["truth"](*copies) if entry["truth"] is not None else eqsat.reference(entry["prog"], *copies)
        got = plan.run(*args)
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    if len(got) != len(want):
        return f"{len(got)} outputs, the truth has {len(want)}"
    for k, (g, w) in enumerate(zip(got, want)):
        if entry["truth"] is not None:
            err = rel_err(g, w)
            if not err < 1e-4:
                return f"output {k}: relative L2 error {err:.3g}"
        else:
            ok, why = close(g, w)
            if not ok:
                return f"output {k}: {why}"
    return ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--generated", type=int, default=200, help="generated spelling programs besides the corpus")
    ap.add_argument("--seed", type=int, default=0, help="generated program j is generate_seeded(seed + j)")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="optimize_many's worker processes")
    ap.add_argument("--seconds", type=float, default=None,
                    help="Limits(seconds=...) for every optimize() (default: the library's default Limits())")
    a = ap.parse_args()
    warnings.simplefilter("ignore", RuntimeWarning)  # exp/sigmoid of large negatives: 0, fine

    import eqsat

    programs = load_programs(a.generated, a.seed, tempfile.mkdtemp(prefix="eqsat_batch_"))
    items = [(p["prog"], p["shapes"]) for p in programs]
    opts = {} if a.seconds is None else {"limits": eqsat.Limits(seconds=a.seconds)}
    print(f"{len(items)} items ({len(items) - a.generated} corpus + {a.generated} generated), "
          f"{a.workers} workers, {os.cpu_count()} cores", flush=True)

    # ---- sequential, in this process
    eqsat.optimize(*items[0], **opts)  # warm-up, untimed
    seq, seq_s = [], []
    t0 = time.perf_counter()
    for prog, shapes in items:
        t = time.perf_counter()
        try:
            seq.append(eqsat.optimize(prog, shapes, **opts))
        except Exception as e:  # noqa: BLE001 - reported per item
            seq.append(e)
        seq_s.append(time.perf_counter() - t)
    sequential = time.perf_counter() - t0
    print(f"sequential: {sequential:.2f} s", flush=True)

    # ---- batch, over a process pool
    t0 = time.perf_counter()
    batch = eqsat.optimize_many(items, workers=a.workers, progress=False, **opts)
    batched = time.perf_counter() - t0
    print(f"batch:      {batched:.2f} s", flush=True)

    # ---- compare, and run the batch plans
    errors, differ, wrong = [], [], []
    same_roots = same_kernels = 0
    for i, (p, s, b) in enumerate(zip(programs, seq, batch)):
        if isinstance(s, Exception) or isinstance(b, Exception):
            errors.append({"item": p["name"], "sequential": None if not isinstance(s, Exception) else repr(s),
                           "batch": None if not isinstance(b, Exception) else repr(b)})
            continue
        roots_same = len(s.roots) == len(b.roots) and all(x is y for x, y in zip(s.roots, b.roots))
        fs, fb = fingerprint(s), fingerprint(b)
        same_roots += roots_same
        same_kernels += fs == fb
        if not roots_same or fs != fb:
            differ.append({"item": p["name"], "roots_identical": roots_same, "sequential": fs, "batch": fb})
        try:
            why = check_numerics(p, b, a.seed + i)
        except Exception as e:  # noqa: BLE001 - a plan that cannot run is wrong
            why = f"plan.run raised {type(e).__name__}: {e}"
        if why:
            wrong.append({"item": p["name"], "why": why})

    compared = len(items) - len(errors)
    speedup = sequential / batched if batched else float("inf")
    slowest = sorted(zip(seq_s, (p["name"] for p in programs)), reverse=True)[:5]
    ideal = max(sum(seq_s) / a.workers, max(seq_s))
    print(f"\nsequential optimize(): {sequential:.2f} s   optimize_many(workers={a.workers}): {batched:.2f} s   "
          f"speedup {speedup:.2f}x   (ideal {ideal:.2f} s, overhead {batched - ideal:.2f} s)")
    print(f"same plan (identical root terms): {same_roots}/{compared}   same kernels and str(roots): "
          f"{same_kernels}/{compared}   batch plans wrong against the truth: {len(wrong)}   errors: {len(errors)}")
    print("slowest items (sequential): " + "; ".join(f"{n} {t:.1f} s" for t, n in slowest))
    for d in differ[:SHOW]:
        print(f"\nplan differs: {d['item']} (roots identical: {d['roots_identical']})\n"
              f"  sequential {d['sequential']}\n  batch      {d['batch']}")
    for w in wrong[:SHOW]:
        print(f"\nwrong: {w['item']}: {w['why']}")
    for e in errors[:SHOW]:
        print(f"\nerror: {e['item']}: sequential {e['sequential']}, batch {e['batch']}")

    data = {"items": len(items), "corpus": len(items) - a.generated, "generated": a.generated, "seed": a.seed,
            "workers": a.workers, "limits_seconds": (eqsat.Limits() if a.seconds is None else opts["limits"]).seconds,
            "sequential_s": round(sequential, 3), "batch_s": round(batched, 3), "speedup": round(speedup, 3),
            "ideal_s": round(ideal, 3), "overhead_s": round(batched - ideal, 3),
            "compared": compared, "same_roots": same_roots, "same_kernels": same_kernels,
            "all_same": same_roots == compared and same_kernels == compared and not errors,
            "wrong": wrong, "errors": errors, "differ": differ[:50],
            "slowest_sequential": [{"item": n, "seconds": round(t, 3)} for t, n in slowest],
            "sequential_item_s": {p["name"]: round(t, 4) for p, t in zip(programs, seq_s)}}
    print("saved", save("batch", data))


if __name__ == "__main__":
    main()
