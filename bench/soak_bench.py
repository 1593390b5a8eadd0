"""Soak: optimize() and Plan.run() from many threads for thousands of calls (issue 13).

    .venv/bin/python bench/soak_bench.py [--threads 8] [--calls 4000] [--generated 50] [--seed 0]
                                         [--every 1000] [--seconds S] [--compile-loops always|auto|never]

The programs are the corpus (`bench/common.py: load_cases`) plus `--generated` spelling
programs (`tests/gen_spellings.py: generate_seeded(seed + j)`). Call i takes program
i mod (their number), round-robin, on a pool of `--threads` threads, and does
`optimize(prog, shapes)` (default `Limits()`, or `Limits(seconds=S)`), then `plan.run(*args)`
on `random_args(prog, shapes, seed + i)`, and compares the result with the truth: the corpus
case's own `truth(*args)` (relative L2 error under 1e-4) or, for a generated program,
`eqsat.reference` (`gen_spellings.close`).

Counted, and targets:
  failures     every exception a call raises (caught inside the call, and again around
               `Future.result()` and by `threading.excepthook`, so none is lost), and every
               result that differs from the truth. Target 0.
  unraisable   everything Python hands to `sys.unraisablehook`, e.g. egglog's "EGraph is
               unsendable, but is being dropped on another thread". Target 0.
  resident     VmRSS from /proc/self/status (resource's peak RSS where /proc is missing),
               read after `gc.collect()` at the end of the warm-up (the first 10% of the
               calls, and at least two passes over the programs), after every `--every` calls, at the end, and once more after the
               pool has shut down (its threads, and their thread-local e-graphs, gone).
               Target: under 50 MB growth from the end of the warm-up to the end. The
               peak (VmHWM) is shown beside it: one program whose saturation blows up
               raises the peak, and what the allocator keeps of it shows as growth.
  slowest      the slowest optimize() calls (wall time of the call, including the wait for
               the lock that lets one thread at a time into egglog), with their stop reasons.
Calls are submitted in blocks that end at those checkpoints; the pool (and so every
thread's prepared e-graph) lives across blocks. Prints a table, saves bench/results/soak.json.
"""
from __future__ import annotations

import argparse
import gc
import os
import sys
import tempfile
import threading
import time
import traceback
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent / "tests"
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(TESTS))

import numpy as np  # noqa: E402

from common import load_cases, save  # noqa: E402

GROWTH_TARGET_MB = 50.0
KEEP = 10  # messages kept of each kind


def rss_mb(field: str = "VmRSS") -> float:
    """Resident memory of this process in MB: now (VmRSS) or its peak so far (VmHWM); the
    peak where /proc is missing."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class Tally:
    """Failures and unraisable errors from every thread, under one lock."""

    def __init__(self):
        self.lock = threading.Lock()
        self.failures = 0
        self.failure_messages: list = []
        self.unraisable = 0
        self.unraisable_messages: list = []
        self.slowest: list = []  # (optimize seconds, call, program, stop reason), the KEEP slowest

    def timed(self, seconds: float, i: int, name: str, stop: str):
        with self.lock:
            self.slowest.append((seconds, i, name, stop))
            self.slowest.sort(reverse=True)
            del self.slowest[KEEP:]

    def fail(self, message: str):
        with self.lock:
            self.failures += 1
            if len(self.failure_messages) < KEEP:
                self.failure_messages.append(message)

    def on_unraisable(self, u):
        exc = f"{u.exc_type.__name__}: {u.exc_value}" if u.exc_type else "(no exception)"
        where = f" in {u.object!r}" if u.object is not None else ""
        msg = f"{u.err_msg or 'unraisable'}{where}: {exc}"
        with self.lock:
            self.unraisable += 1
            if len(self.unraisable_messages) < KEEP:
                self.unraisable_messages.append(msg)

    def on_thread_exception(self, a):
        tb = "".join(traceback.format_exception(a.exc_type, a.exc_value, a.exc_traceback, limit=-4))
        self.fail(f"uncaught in thread {a.thread.name if a.thread else '?'}: {tb}")


def load_programs(generated: int, seed: int, directory: str) -> list:
    """[{name, prog, shapes, truth or None}]: the corpus, then the generated programs."""
    from gen_programs import load
    from gen_spellings import generate_seeded

    out = [{"name": stem, "prog": prog, "shapes": dict(mod.SHAPES), "truth": mod.truth}
           for stem, mod, prog in load_cases()]
    for j in range(generated):
        gp = generate_seeded(seed + j)
        out.append({"name": f"{gp.name} (seed {seed + j})", "prog": load(gp, directory),
                    "shapes": dict(gp.shapes), "truth": None})
    return out


def one_call(i: int, entry: dict, seed: int, limits, tally: Tally, threads_seen: set) -> None:
    """optimize + run + compare for call i; every failure goes to the tally."""
    import eqsat
    from conftest import random_args, rel_err
    from gen_spellings import close

    threads_seen.add(threading.get_ident())  # a set add is atomic under the GIL
    stage = "arguments"
    try:
        with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
            args = random_args(entry["prog"], entry["shapes"], seed + i)
            copies = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
            stage = "truth"
            if entry["truth"] is not None:
                want = entry["truth"](*copies)
            else:
                want = eqsat.reference(entry["prog"], *copies)
            stage = "optimize"
            t0 = time.perf_counter()
            plan = eqsat.optimize(entry["prog"], entry["shapes"], limits=limits)
            tally.timed(time.perf_counter() - t0, i, entry["name"], plan.report.stop_reason)
            stage = "plan.run"
            got = plan.run(*args)
        stage = "compare"
        got = got if isinstance(got, tuple) else (got,)
        want = want if isinstance(want, tuple) else (want,)
        if len(got) != len(want):
            tally.fail(f"call {i} {entry['name']}: {len(got)} outputs, the truth has {len(want)}")
            return
        for k, (g, w) in enumerate(zip(got, want)):
            if entry["truth"] is not None:
                err = rel_err(g, w)
                ok, why = err < 1e-4, f"relative L2 error {err:.3g}"
            else:
                ok, why = close(g, w)
            if not ok:
                tally.fail(f"call {i} {entry['name']}: output {k} differs from the truth: {why}")
                return
    except BaseException as e:  # noqa: BLE001 - everything a call raises is a failure
        tb = traceback.format_exc(limit=-4)
        tally.fail(f"call {i} {entry['name']}: {stage} raised {type(e).__name__}: {e}\n{tb}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--calls", type=int, default=4000)
    ap.add_argument("--generated", type=int, default=50, help="generated spelling programs mixed in")
    ap.add_argument("--seed", type=int, default=0, help="generated program j is generate_seeded(seed + j); "
                                                        "call i draws its inputs from seed + i")
    ap.add_argument("--every", type=int, default=1000, help="read resident memory after every this many calls")
    ap.add_argument("--seconds", type=float, default=None,
                    help="Limits(seconds=...) for every optimize() (default: the library's default Limits())")
    ap.add_argument("--compile-loops", choices=("always", "auto", "never"), default=None,
                    help="EQSAT_COMPILE_LOOPS for kept loop nests (default: as the environment says)")
    a = ap.parse_args()
    if a.compile_loops:
        os.environ["EQSAT_COMPILE_LOOPS"] = a.compile_loops
    warnings.simplefilter("ignore", RuntimeWarning)  # exp/sigmoid of large negatives: 0, fine

    from rich.console import Console
    from rich.table import Table

    import eqsat  # imported before the threads start

    limits = eqsat.Limits() if a.seconds is None else eqsat.Limits(seconds=a.seconds)

    console = Console(width=150)
    directory = tempfile.mkdtemp(prefix="eqsat_soak_")
    programs = load_programs(a.generated, a.seed, directory)
    tally = Tally()
    threads_seen: set = set()
    old_unraisable, old_excepthook = sys.unraisablehook, threading.excepthook
    sys.unraisablehook = tally.on_unraisable
    threading.excepthook = tally.on_thread_exception

    # warm-up: the first 10% of the calls, and at least two passes over the programs (a
    # program's first calls compile its kernels and nests, kept for the process, per thread)
    warmup = min(a.calls, max(1, a.calls // 10, 2 * len(programs)))
    marks = sorted({warmup, a.calls, *range(a.every, a.calls, a.every)})
    rows: list = []

    def checkpoint(calls: int, label: str, block: int = 0, seconds: float = 0.0) -> dict:
        gc.collect()
        row = {"calls": calls, "label": label, "rss_mb": rss_mb(), "peak_mb": rss_mb("VmHWM"), "block": block,
               "seconds": seconds, "failures": tally.failures, "unraisable": tally.unraisable}
        rows.append(row)
        return row

    checkpoint(0, "start")
    console.print(f"soak: {a.calls} calls on {a.threads} threads over {len(programs)} programs "
                  f"({len(programs) - a.generated} corpus + {a.generated} generated); "
                  f"resident at start {rows[0]['rss_mb']:.1f} MB", highlight=False)
    t0 = time.perf_counter()
    try:
        pool = ThreadPoolExecutor(a.threads, thread_name_prefix="soak")
        try:
            done = 0
            for mark in marks:
                tb = time.perf_counter()
                calls = range(done, mark)
                futures = [pool.submit(one_call, i, programs[i % len(programs)], a.seed, limits, tally,
                                       threads_seen) for i in calls]
                for i, fut in zip(calls, futures):
                    try:
                        fut.result()
                    except BaseException as e:  # noqa: BLE001 - one_call catches all; this is a net
                        tally.fail(f"call {i}: the future raised {type(e).__name__}: {e}")
                label = "warm-up" if mark == warmup else ("end" if mark == a.calls else "")
                row = checkpoint(mark, label, mark - done, time.perf_counter() - tb)
                done = mark
                console.print(f"  {mark}/{a.calls} calls, {time.perf_counter() - t0:.0f} s, resident "
                              f"{row['rss_mb']:.1f} MB, failures {tally.failures}, unraisable {tally.unraisable}",
                              highlight=False)
        finally:
            pool.shutdown(wait=True)
        wall = time.perf_counter() - t0
        time.sleep(0.2)  # let the exited threads' states be cleared
        checkpoint(a.calls, "pool shut down")
    finally:
        sys.unraisablehook, threading.excepthook = old_unraisable, old_excepthook

    at_warmup = next(r for r in rows if r["label"] == "warm-up")["rss_mb"]
    at_end = rows[-2]  # the last checkpoint before the pool shut down
    growth = at_end["rss_mb"] - at_warmup
    growth_shutdown = rows[-1]["rss_mb"] - at_warmup

    t = Table(title=f"soak: {a.calls} calls, {a.threads} threads, {len(programs)} programs, {wall:.0f} s")
    for col in ("after calls", "", "resident MB", "since warm-up MB", "peak MB", "block calls/s", "failures",
                "unraisable"):
        t.add_column(col, justify="left" if col == "" else "right")
    for r in rows:
        since = "" if r["label"] == "start" or r["calls"] < warmup else f"{r['rss_mb'] - at_warmup:+.1f}"
        t.add_row(str(r["calls"]), r["label"], f"{r['rss_mb']:.1f}", since, f"{r['peak_mb']:.1f}",
                  f"{r['block'] / r['seconds']:.2f}" if r["block"] else "", str(r["failures"]), str(r["unraisable"]))
    console.print(t)

    ok = {"failures": tally.failures == 0, "unraisable": tally.unraisable == 0, "growth": growth < GROWTH_TARGET_MB}
    console.print(f"[bold]failures: {tally.failures}[/bold] (target 0)   "
                  f"[bold]unraisable: {tally.unraisable}[/bold] (target 0)   "
                  f"[bold]resident growth after warm-up: {growth:+.1f} MB[/bold] (target < {GROWTH_TARGET_MB:.0f}; "
                  f"{growth_shutdown:+.1f} MB after the pool shut down)   "
                  f"threads that ran calls: {len(threads_seen)}   "
                  f"{a.calls / wall:.2f} calls/s   " + ("all targets met" if all(ok.values()) else
                                                       "MISSED: " + ", ".join(k for k, v in ok.items() if not v)),
                  highlight=False)
    console.print("slowest optimize() calls: " + "; ".join(f"{n} {sec:.1f} s ({stop})"
                                                           for sec, _, n, stop in tally.slowest[:5]),
                  highlight=False, markup=False)
    for m in tally.failure_messages:
        console.print(f"\n[red]failure[/red] {m}", highlight=False, markup=False)
    for m in tally.unraisable_messages:
        console.print(f"\n[red]unraisable[/red] {m}", highlight=False, markup=False)

    data = {"threads": a.threads, "calls": a.calls, "generated": a.generated, "seed": a.seed,
            "every": a.every, "warmup_calls": warmup,
            "compile_loops": os.environ.get("EQSAT_COMPILE_LOOPS", "always"),
            "programs": [p["name"] for p in programs], "threads_seen": len(threads_seen),
            "failures": {"count": tally.failures, "first": tally.failure_messages},
            "unraisable": {"count": tally.unraisable, "first": tally.unraisable_messages},
            "rss_mb": [{"calls": r["calls"], "label": r["label"], "rss_mb": round(r["rss_mb"], 2),
                        "peak_mb": round(r["peak_mb"], 2), "block_seconds": round(r["seconds"], 3)} for r in rows],
            "rss_warmup_mb": round(at_warmup, 2), "rss_end_mb": round(at_end["rss_mb"], 2),
            "growth_after_warmup_mb": round(growth, 2), "growth_after_shutdown_mb": round(growth_shutdown, 2),
            "growth_target_mb": GROWTH_TARGET_MB, "targets_met": ok,
            "limits_seconds": limits.seconds,
            "slowest_optimize": [{"seconds": round(sec, 3), "call": i, "program": n, "stop": stop}
                                 for sec, i, n, stop in tally.slowest],
            "wall_s": round(wall, 3), "calls_per_s": round(a.calls / wall, 3)}
    print("saved", save("soak", data))


if __name__ == "__main__":
    main()
