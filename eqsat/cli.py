"""Command line: `python -m eqsat example` and `python -m eqsat optimize FILE`."""
from __future__ import annotations

import argparse
import importlib.util
import os
import sys

import numpy as np


def _load(path: str):
    from .ir import Program

    spec = importlib.util.spec_from_file_location("eqsat_cli_program", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    progs = [v for v in vars(mod).values() if isinstance(v, Program)]
    if not progs:
        raise SystemExit(f"{path}: no @eqsat.program found")
    return mod, progs[0]


def _args(prog, dims, seed=0):
    rng = np.random.default_rng(seed)
    return [dims[p.name] if p.dtype is int else float(rng.uniform(0.5, 1.5)) if p.shape is None else
            rng.standard_normal([dims[d] if isinstance(d, str) else d for d in p.shape]).astype(np.float32)
            for p in prog.params]


def _shapes(text: str | None, default: dict) -> dict:
    if not text:
        return dict(default)
    out = {}
    for part in text.split(","):
        k, v = part.split("=")
        out[k.strip()] = int(v)
    return out


def run_job(mod, prog, shapes, target, rules, view_path) -> int:
    import eqsat

    plan = eqsat.optimize(prog, shapes, target=target, rules=rules)
    print(plan)
    args = _args(prog, shapes)
    got = plan.run(*args)
    want = eqsat.reference(prog, *args)
    got_t, want_t = (got, want) if isinstance(want, tuple) else ((got,), (want,))
    err = max(float(np.linalg.norm(np.asarray(g, np.float64) - w) / max(np.linalg.norm(w), 1e-30))
              for g, w in zip(got_t, want_t))
    ok = err < 1e-4
    print(f"\nran on numpy: relative error against reference {err:.2e} ({'OK' if ok else 'MISMATCH'})")
    if hasattr(mod, "truth"):
        t = mod.truth(*args)
        t_t = t if isinstance(t, tuple) else (t,)
        terr = max(float(np.linalg.norm(np.asarray(g, np.float64) - w) / max(np.linalg.norm(w), 1e-30))
                   for g, w in zip(got_t, t_t))
        print(f"against the case's numpy truth: {terr:.2e}")
        ok = ok and terr < 1e-4
    if view_path:
        os.makedirs(os.path.dirname(os.path.abspath(view_path)), exist_ok=True)
        print(f"viewer page: {plan.view(view_path)}")
    return 0 if ok else 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="eqsat", description=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    ex = sub.add_parser("example", help="optimize, run and view the bundled example")
    ex.add_argument("--view", default="out/plan.html")
    ex.add_argument("--target", default="h100")
    op = sub.add_parser("optimize", help="optimize a program file, run it, write the viewer page")
    op.add_argument("file")
    op.add_argument("--shapes", help="M=64,N=32,... (default: the file's SHAPES)")
    op.add_argument("--target", default="h100")
    op.add_argument("--rules", help="comma-separated rule families or rule files (default: all)")
    op.add_argument("--view", default=None)
    a = ap.parse_args(argv)
    from .errors import EqsatError

    try:
        if a.cmd == "example":
            from .examples import linear_gelu_residual as mod

            return run_job(mod, mod.linear_gelu_residual, mod.SHAPES, a.target, None, a.view)
        mod, prog = _load(a.file)
        rules = None if a.rules is None else [r for r in a.rules.split(",") if r]
        return run_job(mod, prog, _shapes(a.shapes, getattr(mod, "SHAPES", {})), a.target, rules, a.view)
    except EqsatError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
