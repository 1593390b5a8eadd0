"""GPU execution: the eqsat Triton plan against cuBLAS and torch.compile, on one CUDA device.

    .venv/bin/python bench/gpu_bench.py [--dtypes fp32,fp16] [--precision tf32|ieee] [--no-compile]

linear + bias + gelu written as loops (`gelu(x @ w.T + bias)`, gelu's tanh form), in fp32
and fp16, at M=N=K=4096 and at BERT-like shapes (M=2048, K=768, N=3072 and N=768). Per
case, all in one run:
  eqsat    `eqsat.optimize(prog, shapes).compiled("triton")` called on device tensors (its
           matmul tile tuned for the shape on the first call: backends/tuning.py)
  cublas   `torch.matmul` (cuBLAS), then the same epilogue in torch
  compile  `torch.compile(mode="max-autotune")` of that torch code (`--no-compile` skips it)
Each is first checked against the same computation in float64 torch (relative error in
norm < 5e-3 for tf32 and fp16, < 1e-4 for fp32 with --precision ieee); a wrong result is
reported and not timed (exit status 1). Then triton.testing.do_bench times it (median ms;
the first calls, which compile and tune, are warm-up and not counted). The table and
bench/results/gpu.json give the ms and the ratios baseline / eqsat (> 1: eqsat faster).

--precision: tf32 (default) runs fp32 GEMMs on tensor cores in all three (eqsat's
EQSAT_TRITON_PRECISION, torch's float32 matmul precision "high"); ieee in none.
fp16: eqsat's Triton backend computes in f32 (f16 inputs widened on the device, the result
rounded back to f16), so its fp16 times include those conversions; cuBLAS and
torch.compile run fp16 GEMMs accumulating in fp32.

Without a CUDA device (or under TRITON_INTERPRET=1) it prints one line saying so and
exits with status 0, measuring nothing and writing nothing.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

from common import save
from programs import load_source

DEVICE = "cuda"
SHAPES = [("square_4096", 4096, 4096, 4096), ("bert_ffn_up", 2048, 3072, 768), ("bert_proj", 2048, 768, 768)]
TOLERANCE = {("fp32", "tf32"): 5e-3, ("fp32", "ieee"): 1e-4, ("fp16", "tf32"): 5e-3, ("fp16", "ieee"): 5e-3}

PROGRAM = '''
@program
def linear_gelu_{t}(x: {t}["M", "K"], w: {t}["N", "K"], bias: {t}["N"]) -> {t}["M", "N"]:
    y = empty((M, N))
    for i in range(M):
        for j in range(N):
            acc = 0.0
            for k in range(K):
                acc += x[i, k] * w[j, k]
            y[i, j] = gelu(acc + bias[j])
    return y
'''


def gpu_missing() -> str | None:
    """Why there is nothing to measure here, or None on a CUDA device."""
    if os.environ.get("TRITON_INTERPRET") == "1":
        return "TRITON_INTERPRET=1 (Triton's interpreter, not a GPU)"
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    return None if torch.cuda.is_available() else "no CUDA GPU is available"


def program(dtype: str):
    return load_source(PROGRAM.format(t={"fp32": "f32", "fp16": "f16"}[dtype]), f"linear_gelu_{dtype}")


def torch_linear_gelu(x, w, bias):
    """The same computation in torch: cuBLAS for the matmul, then bias and gelu (tanh form)."""
    import torch

    return torch.nn.functional.gelu(torch.matmul(x, w.T) + bias, approximate="tanh")


def inputs(m: int, n: int, k: int, dtype: str, device: str, seed: int = 0):
    """x, w, bias with unit-scale products (w scaled by 1/sqrt(K)), so gelu is not linear."""
    import torch

    g = torch.Generator(device=device).manual_seed(seed)
    t = {"fp32": torch.float32, "fp16": torch.float16}[dtype]
    x = torch.randn(m, k, generator=g, device=device).to(t)
    w = (torch.randn(n, k, generator=g, device=device) / k ** 0.5).to(t)
    bias = torch.randn(n, generator=g, device=device).to(t)
    return x, w, bias


def rel_err(got, want) -> float:
    got = got.double()
    return float((got - want).norm() / want.norm())


def one_case(name, m, n, k, dtype, a, wrong: list) -> dict:
    import torch
    import triton.testing

    import eqsat

    args = inputs(m, n, k, dtype, DEVICE)
    want = torch_linear_gelu(*(t.double() for t in args))
    t0 = time.perf_counter()
    plan = eqsat.optimize(program(dtype), {"M": m, "N": n, "K": k})
    runner = plan.compiled("triton")
    optimize_s = time.perf_counter() - t0
    impls = {"eqsat": lambda: runner(args), "cublas": lambda: torch_linear_gelu(*args)}
    if not a.no_compile:
        compiled = torch.compile(torch_linear_gelu, mode="max-autotune", dynamic=False)
        impls["compile"] = lambda: compiled(*args)
    row = {"case": name, "dtype": dtype, "M": m, "N": n, "K": k, "kernels": [repr(x) for x in plan.kernels],
           "optimize_s": optimize_s}
    tol = TOLERANCE[(dtype, a.precision)]
    for label, fn in impls.items():
        t0 = time.perf_counter()
        out = fn()  # the first call compiles (and, for eqsat, tunes): warm-up, not timed
        torch.cuda.synchronize()
        row[f"{label}_first_call_s"] = time.perf_counter() - t0
        err = rel_err(out, want)
        row[f"{label}_rel_err"] = err
        if not err < tol:
            row[f"{label}_ms"] = None
            wrong.append(f"{name} {dtype} {label}: relative error {err:.2e} >= {tol:.0e}")
            continue
        row[f"{label}_ms"] = float(triton.testing.do_bench(fn, warmup=a.warmup, rep=a.rep, return_mode="median"))
    row["eqsat_configs"] = {kn: {"config": str(c.config), "tuned": c.tuned, "why": c.why, "timings_ms": c.timings_ms}
                            for kn, c in runner.configs.items()}
    for label in ("cublas", "compile"):
        e, b = row.get("eqsat_ms"), row.get(f"{label}_ms")
        row[f"ratio_{label}_over_eqsat"] = b / e if e and b else None
    return row


def table(rows: list) -> None:
    def f(v, spec):
        return "-" if v is None else format(v, spec)

    print(f"{'case':<12} {'dtype':<5} {'M x N x K':>16} {'eqsat ms':>9} {'cuBLAS+epi ms':>14} {'compile ms':>11} "
          f"{'cuBLAS/eqsat':>13} {'compile/eqsat':>14}  eqsat tile")
    for r in rows:
        size = f"{r['M']}x{r['N']}x{r['K']}"
        print(f"{r['case']:<12} {r['dtype']:<5} {size:>16} {f(r.get('eqsat_ms'), '.3f'):>9} "
              f"{f(r.get('cublas_ms'), '.3f'):>14} {f(r.get('compile_ms'), '.3f'):>11} "
              f"{f(r.get('ratio_cublas_over_eqsat'), '.2f'):>13} {f(r.get('ratio_compile_over_eqsat'), '.2f'):>14}  "
              f"{'; '.join(c['config'] + ('' if c['tuned'] else ' (default)') for c in r['eqsat_configs'].values())}")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dtypes", default="fp32,fp16", help="comma-separated: fp32, fp16")
    ap.add_argument("--precision", choices=("tf32", "ieee"), default="tf32", help="fp32 GEMMs on tensor cores or not")
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile (its max-autotune takes minutes)")
    ap.add_argument("--warmup", type=int, default=25, help="do_bench warm-up, ms")
    ap.add_argument("--rep", type=int, default=100, help="do_bench measuring time, ms")
    a = ap.parse_args()
    why = gpu_missing()
    if why:
        print(f"gpu_bench: skipped: {why}; nothing measured, bench/results/gpu.json not written")
        return 0
    import torch
    import triton

    os.environ["EQSAT_TRITON_PRECISION"] = a.precision  # read when each plan's triton runner is built
    torch.set_float32_matmul_precision("high" if a.precision == "tf32" else "highest")
    rows, wrong = [], []
    for dtype in a.dtypes.split(","):
        for name, m, n, k in SHAPES:
            rows.append(one_case(name, m, n, k, dtype, a, wrong))
            print(f"{name} {dtype}: done ({rows[-1]['kernels']})", file=sys.stderr)
    table(rows)
    for w in wrong:
        print("WRONG:", w)
    print("saved", save("gpu", {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                                "triton": triton.__version__, "precision": a.precision,
                                "timing": "triton.testing.do_bench, median ms, first call (compile, tune) excluded",
                                "ratios": "baseline ms / eqsat ms (> 1: eqsat faster)", "wrong": wrong,
                                "cases": rows}))
    return 1 if wrong else 0


if __name__ == "__main__":
    status = main()
    if status:  # no sys.exit(0): bench/run_all.py runs every bench in one process (runpy), and it would stop there
        sys.exit(status)
