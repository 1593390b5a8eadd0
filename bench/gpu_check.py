"""Every program the tests hold, planned for a GPU target and run through the Triton backend.

    python3 bench/gpu_check.py [--target h100] [--only corpus,polybench,...] [--out FILE] [--shard i/n]

The test suite checks its programs on the numpy backend at every size and on the Triton
backend for a few (Triton's interpreter is slow on a machine without a GPU), mostly with
plans made for the CPU target. On a CUDA device this sweep plans each program for a GPU
target (`--target`, default h100: its kernels, not host loops, where the model finds them)
and runs the plan with `backend="triton"`, compiled, on numpy inputs; the result must
match the program's own truth within 1e-4 relative L2 error (NaN where the truth has
NaN). Collections (`--only`):

  corpus     tests/corpus/*.py at their SHAPES, against `truth`
  polybench  tests/polybench/*.py at MINI, against `truth`
  loopsuites tests/loopsuites/{kernels,more_kernels}.py at their test sizes, against `reference`
  sections   tests/test_sections.py's PROGRAMS and NPBENCH ports, against the source run as numpy

Each program's outcome (ok, wrong with the error, or the exception's type and message)
goes to the table and to `--out` (JSON); the exit status is 1 if any was wrong or raised.
Without a GPU it runs the same through Triton's interpreter (slow: for trying it out).
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
sys.path[:0] = [str(ROOT), str(TESTS), str(TESTS / "loopsuites")]
os.environ.setdefault("EQSAT_TRITON_PRECISION", "ieee")  # exact f32 dots: the check is to 1e-4

import eqsat  # noqa: E402
from eqsat.ir import Program  # noqa: E402

TOL = 1e-4


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _program_of(mod) -> Program:
    return next(v for v in vars(mod).values() if isinstance(v, Program))


def _copies(args):
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def corpus():
    """(name, program, shapes, args, truth thunk) for each corpus program."""
    rng = np.random.default_rng(0)
    for path in sorted((TESTS / "corpus").glob("*.py")):
        mod = _load(path, f"corpus_{path.stem}")
        prog = _program_of(mod)
        args = [rng.standard_normal(tuple(mod.SHAPES[d] for d in p.shape)).astype(np.float32)
                if p.shape else float(rng.uniform(0.5, 1.5)) for p in prog.params]
        yield path.stem, prog, mod.SHAPES, args, lambda a, m=mod: m.truth(*a)


def polybench():
    for path in sorted((TESTS / "polybench").glob("*.py")):
        mod = _load(path, f"polybench_{path.stem}")
        args = list(mod.init(np.random.default_rng(0)))
        yield path.stem, _program_of(mod), mod.SHAPES, args, lambda a, m=mod: m.truth(*a)


def loopsuites():
    import kernels
    import more_kernels

    for mod in (kernels, more_kernels):
        for name in sorted(mod.K):
            prog, sizes, extra = mod.K[name]
            dims = mod.small(sizes) if mod is kernels else mod.small(name)
            args = mod.make_args(name, prog, dims, extra, np.random.default_rng(1))
            yield (f"{mod.__name__}.{name}", prog, mod.shapes_of(prog, dims, extra), args,
                   lambda a, p=prog, d=dims: eqsat.reference(p, *a, shapes=d))


def sections():
    import test_sections as ts

    tmp = Path(tempfile.mkdtemp(prefix="gpu_check_"))
    for table, sizes in ((ts.PROGRAMS, ts.SIZES[:2]), (ts.NPBENCH, ts.NPBENCH_SIZES)):
        for name in sorted(table):
            src, how = table[name]
            path = tmp / f"{name}.py"
            path.write_text("from eqsat import *\n" + ts.PRELUDE + src)
            prog = _program_of(_load(path, f"sections_{name}"))
            for k, all_dims in enumerate(sizes):
                dims = {d: v for d, v in all_dims.items() if any(d in (p.shape or ()) for p in prog.params)}
                args = ts._args(prog, dims, how, seed=k)
                yield (f"{name}@{'x'.join(str(v) for v in dims.values())}", prog, dims, args,
                       lambda a, s=src, d=dims: ts._truth(s, d, a))


COLLECTIONS = {"corpus": corpus, "polybench": polybench, "loopsuites": loopsuites, "sections": sections}


def _outputs(x) -> list:
    x = x if isinstance(x, tuple) else (x,)
    out = []
    for v in x:
        if hasattr(v, "detach"):  # a torch tensor
            v = v.detach().cpu().numpy()
        out.append(np.asarray(v, dtype=np.float64))
    return out


def compare(got, want) -> str | None:
    """Why `got` is not `want` (1e-4 relative L2, NaN where want has NaN), or None."""
    got, want = _outputs(got), _outputs(want)
    if len(got) != len(want):
        return f"{len(got)} outputs, expected {len(want)}"
    for n, (g, w) in enumerate(zip(got, want)):
        if g.shape != w.shape:
            return f"output {n}: shape {g.shape}, expected {w.shape}"
        if not np.array_equal(np.isnan(g), np.isnan(w)):
            return f"output {n}: NaN where the truth has none, or none where it has"
        ok = ~np.isnan(w)
        g, w = np.where(ok, g, 0.0), np.where(ok, w, 0.0)
        norm = float(np.linalg.norm(w))
        err = float(np.linalg.norm(g - w))
        if err > TOL * max(norm, 1e-30) and not np.allclose(g, w, rtol=TOL, atol=1e-6):
            return f"output {n}: relative L2 error {err / max(norm, 1e-30):.3g}"
    return None


def check(name, prog, shapes, args, truth, target: str) -> dict:
    row = {"program": name}
    t = time.perf_counter()
    try:
        with np.errstate(all="ignore"):
            want = truth(_copies(args))
            plan = eqsat.optimize(prog, shapes, target=target)
            row["kernels"] = [k.kind for k in plan.kernels]
            got = plan.run(*_copies(args), backend="triton")
        why = compare(got, want)
        row["status"] = "ok" if why is None else "wrong"
        if why:
            row["why"] = why
    except eqsat.EqsatError as e:  # refused with a message: a refusal, not a wrong answer
        row["status"], row["why"] = "refused", f"{type(e).__name__}: {str(e)[:300]}"
    except Exception as e:  # noqa: BLE001 - every failure is reported, the sweep goes on
        row["status"], row["why"] = "error", f"{type(e).__name__}: {str(e)[:300]}"
        row["traceback"] = traceback.format_exc()[-2000:]
    row["seconds"] = round(time.perf_counter() - t, 3)
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default="h100")
    ap.add_argument("--only", default=",".join(COLLECTIONS))
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "gpu_check.json"))
    ap.add_argument("--shard", default="0/1", help="i/n: this process checks every n-th program from the i-th")
    a = ap.parse_args()
    shard, shards = (int(x) for x in a.shard.split("/"))
    try:
        import torch

        device = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none"
    except ImportError:
        device = "none (no torch)"
    if device.startswith("none"):
        os.environ["TRITON_INTERPRET"] = "1"
    print(f"device: {device}; target {a.target}; TRITON_INTERPRET={os.environ.get('TRITON_INTERPRET', '0')}",
          flush=True)
    rows, bad = [], 0
    cases = ((coll, case) for coll in a.only.split(",") for case in COLLECTIONS[coll]())
    for n, (coll, case) in enumerate(cases):
        if n % shards == shard:
            row = check(*case, target=a.target)
            row["collection"] = coll
            rows.append(row)
            if row["status"] in ("wrong", "error"):
                bad += 1
            print(f"{coll:10} {row['program']:40} {row['status']:8} {row['seconds']:7.2f}s "
                  f"{row.get('why', '')[:150]}", flush=True)
    counts = {s: sum(r["status"] == s for r in rows) for s in ("ok", "wrong", "error", "refused")}
    print("summary:", counts, flush=True)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    with open(a.out, "w") as f:
        json.dump({"device": device, "target": a.target, "counts": counts, "rows": rows}, f, indent=1)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
