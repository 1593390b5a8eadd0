"""eqsat.optimize() against torch.compile's first call, on the corpus programs (a peer ratio).

    .venv/bin/python bench/compile_bench.py [--repeat 1] [--target cpu]

What is measured, in one process:
- eqsat: the wall time of `eqsat.optimize(prog, SHAPES)` for each corpus program that has
  a matmul (`plan.optimize_seconds`, median of `--repeat`). One warm-up `optimize()` of an
  unrelated generated program is run first, so egglog's one-time setup (rule compilation,
  the prepared e-graph) and the imports are not counted; each program's own first call is.
- torch.compile: the wall time of the first call of `torch.compile(fn)` (default backend,
  Inductor) on CPU float32 tensors of the corpus SHAPES, where `fn` is the same
  computation written as a torch function. Inductor's caches are off
  (TORCHINDUCTOR_FORCE_DISABLE_CACHES=1 set before torch is imported, a fresh
  TORCHINDUCTOR_CACHE_DIR, `torch._inductor.config.fx_graph_cache = False`) and
  `torch._dynamo.reset()` runs before every compile, so each first call traces, lowers,
  generates C++ and runs the C compiler. One warm-up compile of an unrelated pointwise
  function is run first, for the same reason as eqsat's warm-up (imports, the C++
  prefix header). Whether torch "finds a matmul" is read from the code Inductor
  generates (a second, untimed compile under `run_and_get_code`): a call to
  `extern_kernels.mm/addmm/bmm/baddbmm` or a GEMM template; `cpp_fused_*` kernels are
  counted next to it. The compiled function's output is checked against the module's
  numpy `truth`, so the torch twin is known to compute the same thing.

Programs: those written with library calls and `@` (mlp_two_layers, residual_gelu,
scaled_gemm) give the headline: the median of eqsat seconds / torch.compile seconds over
them. The loop-written corpus programs (linear_bias_relu, matmul_plain, transposed_bias,
uncache_transpose, and hybrid_loop_libop: loops around `@`) are optimized by eqsat as
written; torch.compile is NOT given their loops (a Python loop nest over torch tensors
would be traced element by element, which is prohibitive) but the `@` form of the same
computation, so their ratio compares eqsat-from-loops with torch-from-`@` and is reported
apart, not in the headline median. If torch.compile fails on this machine (no C
compiler, ...), the error is recorded per program and the ratio is left out.
"""
from __future__ import annotations

import os
import tempfile

# before torch is imported: Inductor reads these at import
os.environ["TORCHINDUCTOR_FORCE_DISABLE_CACHES"] = "1"
os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="inductor_compile_bench_")

import argparse  # noqa: E402
import re  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from common import load_cases, save  # noqa: E402
from programs import load_source  # noqa: E402

import eqsat  # noqa: E402


def _torch_fns():
    import torch
    import torch.nn.functional as F

    return {
        "mlp_two_layers": lambda x, w1, b1, w2, b2: torch.relu(x @ w1 + b1) @ w2 + b2,
        "residual_gelu": lambda x, w, bias, r: F.gelu(x @ w.T + bias, approximate="tanh") + r,
        "scaled_gemm": lambda alpha, a, b, beta, c: alpha * (a @ b) + beta * c,
        "linear_bias_relu": lambda x, w, bias: torch.relu(x @ w.T + bias),
        "matmul_plain": lambda a, b: a @ b,
        "transposed_bias": lambda a, b, bias_nm: a @ b + bias_nm.T,
        "uncache_transpose": lambda a, b: a @ b.T,
        "hybrid_loop_libop": lambda a, b: a @ b.T,
    }


# how each corpus program is written; torch.compile always gets the @ form above
FORMS = {"mlp_two_layers": "@", "residual_gelu": "@", "scaled_gemm": "@",
         "linear_bias_relu": "loops", "matmul_plain": "loops", "transposed_bias": "loops",
         "uncache_transpose": "loops", "hybrid_loop_libop": "loops (around @)"}


MATMUL_RE = re.compile(r"extern_kernels\.(mm|addmm|bmm|baddbmm)\b|aten\.(mm|addmm|bmm)\b|mkldnn|cpp_gemm|GEMM")


def make_args(prog, shapes, rng):
    out = []
    for p in prog.params:
        if p.shape is None:
            out.append(float(rng.uniform(0.5, 1.5)))
        else:
            dims = tuple(shapes[d] if isinstance(d, str) else int(d) for d in p.shape)
            out.append(rng.standard_normal(dims).astype(np.float32))
    return out


def warm_eqsat(target):
    prog = load_source('''
@program
def warm(x: f32["M", "K"], w: f32["K", "N"], b: f32["N"]) -> f32["M", "N"]:
    return tanh(x @ w + b)
''', "compile_bench_warm")
    eqsat.optimize(prog, {"M": 8, "N": 8, "K": 8}, target=target)


def torch_first_call(fn, targs):
    import torch

    torch._dynamo.reset()
    t0 = time.perf_counter()
    cfn = torch.compile(fn)
    out = cfn(*targs)
    return time.perf_counter() - t0, out


def torch_code(fn, targs):
    import torch
    from torch._inductor.utils import run_and_get_code

    torch._dynamo.reset()
    _, codes = run_and_get_code(torch.compile(fn), *targs)
    code = "\n".join(codes)
    mm = sorted({m.group(0) for m in MATMUL_RE.finditer(code)})
    fused = len(set(re.findall(r"def (cpp_fused_\w+)|(cpp_fused_\w+) = ", code)))
    return mm, fused


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=1, help="timings per program (median reported)")
    ap.add_argument("--target", default="cpu", help="eqsat cost-model target (h100, a100, cpu)")
    a = ap.parse_args()
    warnings.filterwarnings("ignore", message="dynamo_pgo force disabled")

    torch_error = None
    try:
        import torch
        import torch._inductor.config as inductor_config

        inductor_config.fx_graph_cache = False
        torch.manual_seed(0)
        fns = _torch_fns()
    except Exception as e:  # noqa: BLE001 - recorded, the eqsat half still runs
        torch_error = f"{type(e).__name__}: {e}"
        fns = {}

    warm_eqsat(a.target)
    if torch_error is None:
        try:  # one unrelated compile: imports, C++ prefix, compiler probing
            torch_first_call(lambda x: torch.sigmoid(x) * 3.0 + 1.0, [torch.randn(64)])
        except Exception as e:  # noqa: BLE001
            torch_error = f"warm-up compile failed: {type(e).__name__}: {e}"
            traceback.print_exc()

    rng = np.random.default_rng(0)
    rows = []
    cases = {name: (mod, prog) for name, mod, prog in load_cases()}
    for name, form in FORMS.items():
        if name not in cases:
            continue
        mod, prog = cases[name]
        times, plan = [], None
        for _ in range(a.repeat):
            plan = eqsat.optimize(prog, mod.SHAPES, target=a.target)
            times.append(plan.optimize_seconds)
        row = {"program": name, "written": form, "shapes": mod.SHAPES,
               "eqsat_s": statistics.median(times), "eqsat_times_s": times,
               "eqsat_kernels": [repr(k) for k in plan.kernels],
               "eqsat_matmul": any(k.kind == "matmul" for k in plan.kernels),
               "eqsat_nkernels": len(plan.kernels), "egraph_nodes": plan.egraph_nodes,
               "torch_form": "@", "torch_s": None, "ratio": None, "torch_error": torch_error,
               "torch_matmul": None, "torch_matmul_calls": None, "torch_fused_kernels": None, "torch_correct": None}
        if torch_error is None:
            fn = fns[name]
            args = make_args(prog, mod.SHAPES, rng)
            targs = [torch.from_numpy(x.copy()) if isinstance(x, np.ndarray) else x for x in args]
            try:
                ts, out = [], None
                for _ in range(a.repeat):
                    t, out = torch_first_call(fn, targs)
                    ts.append(t)
                row["torch_s"] = statistics.median(ts)
                row["torch_times_s"] = ts
                row["ratio"] = row["eqsat_s"] / row["torch_s"]
                want = mod.truth(*args)
                row["torch_correct"] = bool(np.allclose(out.numpy(), want, rtol=1e-4, atol=1e-4))
                mm, fused = torch_code(fn, targs)
                row["torch_matmul_calls"] = mm
                row["torch_matmul"] = bool(mm)
                row["torch_fused_kernels"] = fused
            except Exception as e:  # noqa: BLE001 - recorded per program
                row["torch_error"] = f"{type(e).__name__}: {e}"
                traceback.print_exc()
        rows.append(row)

    t = Table(title=f"eqsat.optimize() vs torch.compile first call (CPU, caches off; eqsat target={a.target}; "
                    f"median of {a.repeat})")
    for col in ("program", "written", "eqsat s", "torch.compile s", "eqsat / torch", "eqsat kernels",
                "eqsat matmul", "torch matmul", "torch cpp_fused", "torch ok"):
        t.add_column(col, justify="left" if col in ("program", "written", "eqsat kernels") else "right")
    for r in rows:
        t.add_row(r["program"], r["written"] if r["written"] == "@" else r["written"] + "; torch: @",
                  f"{r['eqsat_s']:.3f}",
                  "-" if r["torch_s"] is None else f"{r['torch_s']:.2f}",
                  "-" if r["ratio"] is None else f"{r['ratio']:.3f}",
                  "\n".join(r["eqsat_kernels"]), "yes" if r["eqsat_matmul"] else "no",
                  "-" if r["torch_matmul"] is None else ("yes" if r["torch_matmul"] else "no"),
                  "-" if r["torch_fused_kernels"] is None else str(r["torch_fused_kernels"]),
                  "-" if r["torch_correct"] is None else ("yes" if r["torch_correct"] else "NO"))
    Console(width=200).print(t)
    at = [r["ratio"] for r in rows if r["written"] == "@" and r["ratio"] is not None]
    lp = [r["ratio"] for r in rows if r["written"] != "@" and r["ratio"] is not None]
    med = statistics.median(at) if at else None
    med_loops = statistics.median(lp) if lp else None
    errors = {r["program"]: r["torch_error"] for r in rows if r["torch_error"]}
    if errors:
        print("torch.compile failed:", errors)
    if med is not None:
        print(f"median eqsat/torch.compile over the @-written programs: {med:.3f} "
              f"(eqsat {statistics.median(r['eqsat_s'] for r in rows if r['written'] == '@'):.3f} s, "
              f"torch.compile {statistics.median(r['torch_s'] for r in rows if r['written'] == '@' and r['torch_s']):.2f} s)")
    if med_loops is not None:
        print(f"median eqsat(loops)/torch.compile(@ form) over the loop-written programs: {med_loops:.3f}")
    print("saved", save("compile", {
        "rows": rows, "median_ratio_at_written": med, "median_ratio_loop_written_vs_torch_at": med_loops,
        "repeat": a.repeat, "target": a.target, "torch_error": torch_error,
        "torch": _torch_version(), "inductor_cache_dir": os.environ["TORCHINDUCTOR_CACHE_DIR"],
        "note": "eqsat and torch each warmed up once on an unrelated program; Inductor caches disabled; "
                "loop-written programs: torch.compile is given the @ form"}))


def _torch_version():
    try:
        import torch

        return torch.__version__
    except Exception:  # noqa: BLE001
        return None


if __name__ == "__main__":
    main()
