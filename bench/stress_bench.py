"""Stress: a rule set that explodes (commutativity and associativity over a long sum)
must stop at its limits, within twice the time limit, with a correct best-so-far plan.

    .venv/bin/python bench/stress_bench.py [--terms 12] [--seconds 2]
"""
from __future__ import annotations

import argparse
import time

import numpy as np
from egglog import rewrite, ruleset

from common import save
from programs import long_sum

import eqsat
from eqsat.sorts import Sc


@ruleset
def assoc_comm(a: Sc, b: Sc, c: Sc):
    yield rewrite(Sc.add(a, b)).to(Sc.add(b, a))  # a + b -> b + a
    yield rewrite(Sc.add(Sc.add(a, b), c)).to(Sc.add(a, Sc.add(b, c)))  # (a + b) + c -> a + (b + c)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--terms", type=int, default=12)
    ap.add_argument("--seconds", type=float, default=2.0)
    a = ap.parse_args()
    prog = long_sum(a.terms)
    rows = []
    for label, limits in (
        ("node limit 200k, no back-off", eqsat.Limits(nodes=200_000, seconds=a.seconds, iterations=1000,
                                                      match_limit=10**9)),
        ("time limit only", eqsat.Limits(nodes=10**9, seconds=a.seconds, iterations=1000, match_limit=10**9)),
        ("default limits (back-off)", eqsat.Limits(seconds=a.seconds)),
    ):
        t0 = time.perf_counter()
        plan = eqsat.optimize(prog, {"M": 8}, rules=[assoc_comm], limits=limits)
        total = time.perf_counter() - t0
        args = [np.random.default_rng(i).standard_normal(8).astype(np.float32) for i in range(a.terms)]
        ok = bool(np.allclose(plan.run(*args), eqsat.reference(prog, *args), rtol=1e-5, atol=1e-5))
        rows.append({"limits": label, "total_s": total, "saturate_s": plan.report.seconds,
                     "extract_s": plan.extract_seconds, "enodes": plan.report.nodes,
                     "rounds": plan.report.iterations, "stop": plan.report.stop_reason, "correct": ok,
                     "within_2x_time_limit": total <= 2 * a.seconds})
        print(f"{label:32s} total {total:6.2f} s (limit {a.seconds} s)  saturate {plan.report.seconds:5.2f} s  "
              f"extract {plan.extract_seconds:5.2f} s  {plan.report.nodes} e-nodes  stop: {plan.report.stop_reason}  "
              f"correct: {ok}")
    print("saved", save("stress", {"terms": a.terms, "time_limit_s": a.seconds, "rows": rows}))


if __name__ == "__main__":
    main()
