"""CPU execution: the numpy backend against the same computation written by hand.

    .venv/bin/python bench/cpu_bench.py [--size 2048] [--repeat 5]

linear + bias + relu, written as loops, optimized for target="cpu", run by the numpy
backend; against `np.maximum(x @ w.T + bias, 0)` in the same process, runs interleaved,
median of --repeat. At a small size, also against the loops as written (`reference`).
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from common import save
from programs import linear_bias_relu

import eqsat


def timed(fn, repeat):
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return statistics.median(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=2048)
    ap.add_argument("--small", type=int, default=48)
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    prog = linear_bias_relu()
    n = a.size
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, n), dtype=np.float32)
    w = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal(n, dtype=np.float32)
    plan = eqsat.optimize(prog, {"M": n, "N": n, "K": n}, target="cpu")
    print(plan)

    def hand():
        return np.maximum(x @ w.T + b, np.float32(0))

    got, want = plan.run(x, w, b), hand()
    err = float(np.linalg.norm(got - want) / np.linalg.norm(want))
    t_plan, t_hand = [], []
    for _ in range(a.repeat):  # interleaved, so both see the same machine state
        t_plan.append(timed(lambda: plan.run(x, w, b), 1))
        t_hand.append(timed(hand, 1))
    tp, th = statistics.median(t_plan), statistics.median(t_hand)
    print(f"{n}^3: eqsat numpy backend {tp:.3f} s, hand-written numpy {th:.3f} s, "
          f"speed ratio (hand / eqsat) {th / tp:.3f}; relative error {err:.1e}")

    s = a.small
    xs, ws, bs = x[:s, :s].copy(), w[:s, :s].copy(), b[:s].copy()
    small = eqsat.optimize(prog, {"M": s, "N": s, "K": s}, target="cpu")
    t_loops = timed(lambda: eqsat.reference(prog, xs, ws, bs), 1)
    t_small = timed(lambda: small.run(xs, ws, bs), a.repeat)
    print(f"{s}^3: loops as written {t_loops:.3f} s, eqsat {t_small * 1e3:.3f} ms, speedup {t_loops / t_small:.0f}x")
    print("saved", save("cpu", {"size": n, "eqsat_s": tp, "hand_numpy_s": th, "ratio_hand_over_eqsat": th / tp,
                               "rel_error": err, "small": s, "loops_s": t_loops, "eqsat_small_s": t_small,
                               "speedup_over_loops": t_loops / t_small}))


if __name__ == "__main__":
    main()
