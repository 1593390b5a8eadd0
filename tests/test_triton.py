"""The Triton backend: every corpus plan and the rule tests' shapes run through Triton's
interpreter on the CPU and match; the matmul kernels compile ahead of time for sm_90 with
tensor-core instructions and vectorized epilogue loads and stores."""
from __future__ import annotations

import os

import pytest

os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported anywhere
pytest.importorskip("triton")
pytest.importorskip("torch")

import eqsat  # noqa: E402
from conftest import corpus_paths, load_case, random_args, rel_err  # noqa: E402

CASES = corpus_paths()


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_corpus_on_triton(path):
    mod, prog = load_case(path)
    plan = eqsat.optimize(prog, mod.SHAPES)
    args = random_args(prog, mod.SHAPES, 4)
    assert rel_err(plan.run(*args, backend="triton"), mod.truth(*args)) < 1e-4


PROGRAMS = {
    "batched_shared_and_reduction_max": ('''
@program
def p(a: f32["B", "M", "K"], w: f32["K", "N"], x: f32["M", "K"]) -> tuple[f32["B", "M", "N"], f32["M"]]:
    c = empty((B, M, N))
    for r in range(B):
        c[r] = a[r] @ w
    m = empty((M,))
    for i in range(M):
        acc = -1000.0
        for k in range(K):
            acc = max(acc, x[i, k])
        m[i] = acc
    return c, m
''', {"B": 3, "M": 20, "N": 36, "K": 40}),
    "epilogue_transposed_operand_and_scalars": ('''
@program
def p(alpha: f32, a: f32["M", "K"], b: f32["K", "N"], r: f32["N", "M"]) -> f32["M", "N"]:
    y = empty((M, N))
    for i in range(M):
        for j in range(N):
            acc = 0.0
            for k in range(K):
                acc += a[i, k] * b[k, j]
            y[i, j] = silu(alpha * acc) - tanh(r[j, i])
    return y
''', {"M": 33, "N": 17, "K": 45}),
    # prologues on both operands (one batched, one stored transposed), evaluated as each
    # tile is loaded, with a parameter inside one and an epilogue behind
    "prologues_on_tiles": ('''
@program
def p(alpha: f32, a: f32["B", "M", "K"], b: f32["N", "K"], c: f32["B", "M", "K"]) -> f32["B", "M", "N"]:
    out = zeros((B, M, N))
    for q in range(B):
        for i in range(M):
            for j in range(N):
                for k in range(K):
                    out[q, i, j] += gelu(a[q, i, k] - c[q, i, k]) * (tanh(b[j, k]) * alpha)
    for q in range(B):
        for i in range(M):
            for j in range(N):
                out[q, i, j] = relu(out[q, i, j])
    return out
''', {"B": 2, "M": 33, "N": 20, "K": 37}),
    # (the dataflow campaign's find) an epilogue adding another kernel's elementwise result
    # (k2_pointwise: a kept loop's output times a mask) to the product: the generator took
    # that tensor for a prologue and read its inputs instead, and the kernel failed
    "epilogue_reads_a_pointwise_kernel": ('''
@program
def p(A: f32['N', 'N'], alpha: f32, B: f32['N', 'M'], beta: f32) -> f32['N', 'N']:
    C = zeros((N, N))
    for i in range(N):
        for j in range(N):
            for k in range(i):
                C[i, j] += A[k, i] * C[k, j]
            C[i, j] = alpha * C[i, j]
    for i in range(N):
        for j in range(i + 1):
            C[i, j] *= beta
        for k in range(M):
            for j in range(i + 1):
                C[i, j] += alpha * B[i, k] * B[j, k]
    return C
''', {"N": 2, "M": 1}),
    "loop_kept_as_written": ('''
@program
def p(x: f32["N"]) -> f32["N"]:
    y = zeros((N,))
    for i in range(1, N):
        y[i] = y[i - 1] + x[i]
    return y
''', {"N": 9}),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_programs_on_triton(tmp_program, name):
    src, dims = PROGRAMS[name]
    prog = tmp_program(src)
    plan = eqsat.optimize(prog, dims)
    if name == "prologues_on_tiles":
        assert [k.kind for k in plan.kernels] == ["matmul"] and {"gelu", "tanh"} <= set(plan.kernels[0].prologue), plan
    args = random_args(prog, dims, 1)
    got, want = plan.run(*args, backend="triton"), eqsat.reference(prog, *args)
    got, want = (got, want) if isinstance(want, tuple) else ((got,), (want,))
    for g, w in zip(got, want):
        assert rel_err(g, w) < 1e-4


def test_triton_source_is_valid_python_with_one_kernel_per_launch():
    path = next(p for p in CASES if p.stem == "mlp_two_layers")
    mod, prog = load_case(path)
    plan = eqsat.optimize(prog, mod.SHAPES)
    src = plan.triton_source()
    compile(src, "<triton_source>", "exec")
    assert src.count("@triton.jit") == len(plan.kernels) == 2
    assert "tl.dot" in src


PTX_SCRIPT = r"""
import re
import sys
sys.path.insert(0, {tests!r})
import eqsat
from conftest import corpus_paths, load_case
from eqsat.backends import triton_backend
path = next(p for p in corpus_paths() if p.stem == "linear_bias_relu")
mod, prog = load_case(path)
plan = eqsat.optimize(prog, {{"M": 256, "N": 256, "K": 256}})
print([(k.kind, sorted(k.epilogue)) for k in plan.kernels])
for arch in (90, 80):
    ptx = triton_backend.ptx(plan, 0, arch=arch)
    loads = re.findall(r"ld\.global(?:\.v(\d))?\.b32", ptx)  # per thread: width 1, 2 or 4 words
    print(arch, *(ptx.count(s) for s in ("wgmma.mma_async", "mma.sync", "st.global.v4")),
          sum(4 * int(w or 1) for w in loads))
print([line.strip() for line in triton_backend.source(plan).splitlines() if "tl.load(in2" in line])
"""


def test_fused_matmul_ptx_uses_tensor_cores_and_vector_epilogue():
    """Compiled ahead of time (no GPU), in a process of its own: this one runs Triton's
    interpreter, which patches triton.language while it is active."""
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    script = PTX_SCRIPT.format(tests=os.path.dirname(os.path.abspath(__file__)))
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    lines = r.stdout.strip().splitlines()
    assert lines[0] == "[('matmul', ['add', 'relu'])]"
    counts = {int(x.split()[0]): list(map(int, x.split()[1:])) for x in lines[1:3]}
    wgmma, _, stv4, load_bytes = counts[90]
    assert wgmma > 0  # Hopper tensor cores
    assert stv4 > 0  # the result, stored vectorized, once
    assert counts[80][1] > 0  # Ampere tensor cores: mma.sync
    # the bias is a [BLOCK_N] vector loaded once per tile and broadcast over the rows: 64
    # bytes of global loads per thread in the epilogue (the operand tiles go through TMA
    # or cp.async); loaded as a 2-D block, every thread read 128 (8 x ld.global.v4)
    assert "[None, :]" in lines[3] and "rn < 256" in lines[3], lines[3]
    assert 0 < load_bytes <= 64, load_bytes


DOT16_SCRIPT = r"""
import re
import sys
import eqsat
from eqsat.backends import triton_backend
sys.path.insert(0, {bench!r})
from programs import load_source
SRC = '''
@program
def lin_DT(x: DT["M", "K"], w: DT["N", "K"], b: DT["N"]) -> DT["M", "N"]:
    return relu(x @ w.T + b)
'''
for t in ("f16", "bf16", "f32"):
    prog = load_source(SRC.replace("DT", t), "lin_" + t)
    plan = eqsat.optimize(prog, {{"M": 256, "N": 256, "K": 256}})
    ptx = triton_backend.ptx(plan, 0, arch=90)
    kinds = re.findall(r"wgmma\.mma_async\.sync\.aligned\.m\d+n\d+k\d+\.(\w+\.\w+\.\w+)", ptx)
    print(t, ",".join(sorted(set(kinds))))
"""


def test_16_bit_operands_go_to_a_16_bit_tensor_core_dot():
    """f16 and bf16 inputs stay that narrow on the device: a matmul of two of them is a
    16-bit wgmma accumulating in f32 (sm_90 PTX, compiled ahead of time); f32 operands
    are dotted in tf32."""
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    bench = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench")
    r = subprocess.run([sys.executable, "-c", DOT16_SCRIPT.format(bench=bench)], capture_output=True, text=True,
                       env=env, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    got = dict(line.split(" ", 1) for line in r.stdout.strip().splitlines())
    assert got == {"f16": "f32.f16.f16", "bf16": "f32.bf16.bf16", "f32": "f32.tf32.tf32"}, got


SQRT_SCRIPT = r"""
import sys
sys.path.insert(0, {bench!r})
import eqsat
from eqsat.backends import triton_backend
from programs import load_source
SRC = '''
@program
def roots(x: f32["N"]) -> f32["N"]:
    return x / sqrt(abs(x) + 1e-30)
'''
plan = eqsat.optimize(load_source(SRC, "roots"), {{"N": 4096}})
ptx = triton_backend.ptx(plan, 0, arch=90)
print(ptx.count("sqrt.rn.f32"), ptx.count("sqrt.approx"))
"""


def test_sqrt_compiles_to_the_correctly_rounded_root():
    """`tl.sqrt` compiled for sm_90 to `sqrt.approx.ftz.f32`, which flushes subnormal inputs
    to zero: sqrt(1e-40) was 0.0 and sqrt(-1e-40) -0.0 on an H100 where numpy gives 1e-20
    and NaN (a probe, 2026-11-28; Triton's interpreter is exact, so only the PTX shows it).
    The kernels use `tl.sqrt_rn` (`sqrt.rn.f32`)."""
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    bench = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench")
    r = subprocess.run([sys.executable, "-c", SQRT_SCRIPT.format(bench=bench)], capture_output=True, text=True,
                       env=env, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    rn, approx = map(int, r.stdout.split())
    assert rn >= 1 and approx == 0, r.stdout


# ---------------------------------------------------------------- device-resident plans
def _counting(monkeypatch):
    """Record, in order, every kernel launch and every host<->device copy eqsat makes
    (torch's .to / .cpu / .numpy and torch.from_numpy), leaving out what Triton's
    interpreter does inside a launch."""
    import torch

    from eqsat.backends import triton_compiled

    events = []

    def wrap(owner, name, tag):
        orig = getattr(owner, name)

        def f(*a, **k):
            if not triton_compiled.launching():
                events.append(tag)
            return orig(*a, **k)
        monkeypatch.setattr(owner, name, f)

    wrap(torch.Tensor, "to", "transfer")
    wrap(torch.Tensor, "cpu", "transfer")
    wrap(torch.Tensor, "numpy", "transfer")
    wrap(torch, "from_numpy", "transfer")
    def flag_set(value):
        if value:
            events.append("launch")
    monkeypatch.setattr(triton_compiled, "_STATE", _LaunchFlag(flag_set))
    return events


class _LaunchFlag:
    """Stands in for the module's thread-local flag, and tells the test of each launch."""

    def __init__(self, on_set):
        object.__setattr__(self, "_on_set", on_set)
        object.__setattr__(self, "launching", False)

    def __setattr__(self, name, value):
        if name == "launching":
            self._on_set(value)
        object.__setattr__(self, name, value)


def test_no_transfer_between_kernels(monkeypatch):
    """Two matmul kernels (mlp_two_layers): the inputs go to the device once, the result
    comes back once, and between the first launch and the last nothing crosses."""
    mod, prog = load_case(next(p for p in CASES if p.stem == "mlp_two_layers"))
    plan = eqsat.optimize(prog, mod.SHAPES)
    args = random_args(prog, mod.SHAPES, 2)
    plan.compiled("triton")  # built once, before counting
    events = _counting(monkeypatch)
    out = plan.run(*args, backend="triton")
    launches = [i for i, e in enumerate(events) if e == "launch"]
    assert len(launches) == len(plan.kernels) == 2, events
    assert "transfer" not in events[launches[0]:launches[-1]], events
    assert rel_err(out, mod.truth(*args)) < 1e-4


def test_torch_in_torch_out_and_the_runner_is_built_once():
    import torch

    mod, prog = load_case(next(p for p in CASES if p.stem == "linear_bias_relu"))
    plan = eqsat.optimize(prog, mod.SHAPES)
    args = random_args(prog, mod.SHAPES, 3)
    runner = plan.compiled("triton")
    out = plan.run(*[torch.from_numpy(a) for a in args], backend="triton")
    assert isinstance(out, torch.Tensor) and out.device.type == "cpu"
    assert plan.compiled("triton") is runner
    assert rel_err(out.numpy(), mod.truth(*args)) < 1e-4
    again = plan.run(*args, backend="triton")
    assert isinstance(again, type(args[0])) and rel_err(again, mod.truth(*args)) < 1e-4


def test_device_tensors_in_device_tensors_out():
    """On a CUDA device: CUDA tensors in, CUDA tensors out (CPU tensors in, CPU out: above)."""
    import torch

    from eqsat.backends.registry import _on_a_gpu

    if not _on_a_gpu():
        pytest.skip("needs a CUDA device with Triton compiled (TRITON_INTERPRET unset or 0)")
    mod, prog = load_case(next(p for p in CASES if p.stem == "linear_bias_relu"))
    plan = eqsat.optimize(prog, mod.SHAPES)
    args = random_args(prog, mod.SHAPES, 4)
    out = plan.run(*[torch.from_numpy(a).cuda() for a in args], backend="triton")
    assert isinstance(out, torch.Tensor) and out.device.type == "cuda"
    assert rel_err(out.cpu().numpy(), mod.truth(*args)) < 1e-4


def test_a_kept_loop_runs_on_the_host_and_says_so():
    import test_polybench as tp

    mod, prog = tp.load("seidel_2d")
    plan = tp.plan_of("seidel_2d")
    runner = plan.compiled("triton")
    assert "run on the host" in runner.how
    args = random_args(prog, mod.SHAPES, 1)
    want = eqsat.reference(prog, *args)
    assert rel_err(plan.run(*args, backend="triton"), want) < 1e-4


# ---------------------------------------------------------------- vectorization report
def test_vectorization_report_says_why_each_access_is_or_is_not_a_vector():
    mod, prog = load_case(next(p for p in CASES if p.stem == "linear_bias_relu"))
    small = {r.role: r for r in eqsat.optimize(prog, mod.SHAPES).vectorization()}
    assert small["operand a"].width == 1 and "not multiples of 16" in small["operand a"].why
    assert small["operand b"].contiguous_axis == 0  # w is read transposed: its rows are the columns
    # the bias is a row vector loaded once per tile, in the accumulator's layout: 2 adjacent
    # columns a thread, 8-byte loads (test_epilogue_operand_loads_in_ptx_agree_with_the_report)
    assert small["epilogue read"].width == 2 and small["store"].width == 4
    big = {r.role: r for r in eqsat.optimize(prog, {"M": 256, "N": 256, "K": 256}).vectorization()}
    assert big["operand a"].width == big["operand b"].width == 4


VECTOR_SCRIPT = """
import sys
sys.path.insert(0, {tests!r})
import eqsat
from conftest import corpus_paths, load_case
from eqsat.backends.vector_report import PtxCounts
mod, prog = load_case(next(p for p in corpus_paths() if p.stem == "linear_bias_relu"))
for shapes in (mod.SHAPES, {{"M": 256, "N": 256, "K": 256}}):
    rows = eqsat.optimize(prog, shapes).vectorization(ptx=True)
    (counts,) = [r for r in rows if isinstance(r, PtxCounts)]
    operand = [r.width for r in rows if not isinstance(r, PtxCounts) and r.role.startswith("operand")]
    print(min(operand), counts.loads[1], counts.async_copies[16])
"""


def test_ptx_compiled_as_launched_agrees_with_the_report():
    """Strides specialized as the launcher does (1 constant, others arguments with a hint
    only where divisible by 16): at the corpus sizes (strides 8) the operand loads are
    4-byte loads, as the report says; at 256 they are 16-byte async copies."""
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    script = VECTOR_SCRIPT.format(tests=os.path.dirname(os.path.abspath(__file__)))
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    (small_w, small_scalar, small_async), (big_w, big_scalar, big_async) = [
        tuple(map(int, line.split())) for line in r.stdout.strip().splitlines()]
    assert small_w == 1 and small_scalar > 0 and small_async == 0
    assert big_w == 4 and big_async > 0 and big_scalar == 0


EPILOGUE_OPERANDS = """
from eqsat import f32, program, empty


@program
def row_bias(a: f32["M", "K"], b: f32["K", "N"], bias: f32["N"]) -> f32["M", "N"]:
    out = empty((M, N))
    for i in range(M):
        for j in range(N):
            acc = 0.0
            for k in range(K):
                acc += a[i, k] * b[k, j]
            out[i, j] = acc + bias[j]
    return out


@program
def transposed_bias(a: f32["M", "K"], b: f32["K", "N"], bt: f32["N", "M"]) -> f32["M", "N"]:
    out = empty((M, N))
    for i in range(M):
        for j in range(N):
            acc = 0.0
            for k in range(K):
                acc += a[i, k] * b[k, j]
            out[i, j] = acc + bt[j, i]
    return out


@program
def residual(a: f32["M", "K"], b: f32["K", "N"], r: f32["M", "N"]) -> f32["M", "N"]:
    out = empty((M, N))
    for i in range(M):
        for j in range(N):
            acc = 0.0
            for k in range(K):
                acc += a[i, k] * b[k, j]
            out[i, j] = acc + r[i, j]
    return out


@program
def linear_column_bias(x: f32["M", "K"], w: f32["N", "K"], c: f32["M"]) -> f32["M", "N"]:
    out = empty((M, N))
    for i in range(M):
        for j in range(N):
            acc = 0.0
            for k in range(K):
                acc += x[i, k] * w[j, k]
            out[i, j] = acc + c[i]
    return out
"""

EPILOGUE_SCRIPT = """
import json
import sys
sys.path.insert(0, {tmp!r})
import eqsat
import epilogue_operands as progs
from eqsat.backends import triton_backend
out = []
for shapes in ({{"M": 1024, "N": 1024, "K": 1024}}, {{"M": 1030, "N": 1030, "K": 1030}}):
    for name in ("row_bias", "transposed_bias", "residual", "linear_column_bias"):
        plan = eqsat.optimize(getattr(progs, name), shapes)
        (gk,) = triton_backend._kernels(plan)
        rows = plan.vectorization()
        assert len(rows) == len(gk.inputs) + 1 and rows[-1].role == "store", rows
        # report() lists a kernel's inputs in argument order (in0, in1, ...), then its store (out)
        args = [f"in{{i}}" for i in range(len(gk.inputs))] + ["out"]
        out.append({{"program": name, "n": shapes["N"], "kinds": [k.kind for k in plan.kernels],
                     "epilogue": sorted(plan.kernels[0].epilogue),
                     "rows": [[a, r.role, r.tensor, r.width, r.why] for a, r in zip(args, rows)],
                     "ptx": triton_backend.ptx(plan, 0, arch=90)}})
json.dump(out, open({result!r}, "w"))
"""


def _ptx_accesses(ptx: str, pointers: list) -> dict:
    """Global memory instructions of a kernel's PTX, attributed to the pointer argument their
    address derives from: {argument: {(kind, floats): count}}, kind "ld" (ld.global),
    "st" (st.global) or "cp" (cp.async global -> shared), floats per instruction.
    `pointers` names the kernel's pointer arguments in order (the PTX's .ptr parameters; the
    ones Triton appends, scratch pointers, get no name). Forward taint over registers, from
    each `ld.param` of a pointer parameter to every register computed from it (loops
    included: to a fixed point); an address tainted by no pointer, or by two, fails."""
    import re

    body = re.sub(r"//[^\n]*|^\s*\.(loc|file)\b[^\n]*|^\s*\$\w+:", "", ptx, flags=re.M)  # no `;` after these
    ptr_params = re.findall(r"\.param \.u64 \.ptr [^\n,]*?(\w+_param_\d+)", body)
    assert len(ptr_params) >= len(pointers), (ptr_params, pointers)
    name_of = dict(zip(ptr_params, pointers))
    reg = re.compile(r"%[a-z]+\d+")
    insts = []
    start = body.index("{", body.index(".entry"))
    for st in body[start:body.index("\n}", start)].split(";"):  # the kernel's body
        st = st.strip(" \t\n{}")  # scope braces
        st = re.sub(r"^@!?%\w+\s+", "", st)  # a predicate guard
        if st and not st.startswith("."):
            op, _, rest = re.sub(r"\s+", " ", st).partition(" ")
            insts.append((op, rest))
    taint: dict = {}
    changed = True
    while changed:
        changed = False
        for op, rest in insts:
            if op.startswith(("st.", "cp.", "bra", "bar.", "ret", "fence", "wgmma.fence", "wgmma.commit",
                              "wgmma.wait")):
                continue  # writes no register
            dest, _, srcs = rest.partition("," if not rest.startswith("{") else "},")
            if op.startswith("ld.param"):
                p = re.search(r"\w+_param_\d+", srcs)
                new = {p.group(0)} if p and p.group(0) in name_of else set()
            else:
                new = set().union(*(taint.get(r, set()) for r in reg.findall(srcs)))
            for d in reg.findall(dest):
                if not new <= taint.get(d, set()):
                    taint[d] = taint.get(d, set()) | new
                    changed = True
    out: dict = {}
    for op, rest in insts:
        if ".global" not in op or op.startswith("cvta"):
            continue
        if op.startswith("cp.async") and op.endswith(".shared.global"):
            m = re.match(r"\[[^\]]*\],\s*\[\s*(%\w+)[^\]]*\],\s*(0x[0-9a-f]+|\d+)", rest)
            key, addr = ("cp", int(m.group(2), 0) // 4), m.group(1)
        elif op.startswith(("ld.global", "st.global")):
            addr = re.search(r"\[\s*(%\w+)", rest).group(1)
            v = re.search(r"\.v(\d)", op)
            key = (op[:2], int(v.group(1)) if v else 1)
        else:
            raise AssertionError(f"a global memory instruction the test does not know: {op} {rest}")
        assert op.endswith(".b32") or key[0] == "cp", op  # f32 words
        params = taint.get(addr, set())
        assert len(params) == 1, (op, rest, params)  # one named pointer argument, not a scratch one
        arg = out.setdefault(name_of[next(iter(params))], {})
        arg[key] = arg.get(key, 0) + 1
    return out


def test_epilogue_operand_loads_in_ptx_agree_with_the_report(tmp_path):
    """Issue 10: a row bias (`bias[j]`), a bias stored transposed (`bt[j, i]`, [N, M]), a
    residual (`r[i, j]`) and a column bias (`c[i]`), each the one epilogue operand of a
    matmul kernel, at M = N = K = 1024 and at 1030 (rows of 4120 bytes: strides the
    launcher gives no divisibility hint). Each global load, store and async copy of the
    sm_90 PTX, compiled as the launcher specializes it, is attributed to the kernel argument
    its address comes from; every access of the report must be there, at the report's
    width and only at it (16-byte vectors where it says 4, 8-byte where 2, scalar where 1),
    and no instruction may touch a tensor the report does not list."""
    import json
    import subprocess
    import sys

    (tmp_path / "epilogue_operands.py").write_text(EPILOGUE_OPERANDS)
    result = tmp_path / "result.json"
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    script = EPILOGUE_SCRIPT.format(tmp=str(tmp_path), result=str(result))
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=600,
                       cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    kernels = json.loads(result.read_text())
    assert len(kernels) == 8
    widths = {}
    for k in kernels:
        where = f"{k['program']} at {k['n']}"
        assert k["kinds"] == ["matmul"] and k["epilogue"] == ["add"], (where, k["kinds"], k["epilogue"])
        pointers = ["out"] + [a for a, *_ in k["rows"] if a != "out"]
        got = _ptx_accesses(k["ptx"], pointers)
        assert set(got) == set(pointers), (where, got)  # every argument accessed, nothing else
        for arg, role, tensor, width, why in k["rows"]:
            kinds = {"store": {"st"}, "epilogue read": {"ld"}}.get(role, {"ld", "cp"})
            assert {kind for kind, _ in got[arg]} <= kinds, (where, tensor, got[arg])
            assert {w for _, w in got[arg]} == {width}, (where, role, tensor, width, why, got[arg])
            widths[k["program"], k["n"], role, tensor] = width, got[arg]
    # what the issue asks, spelled out: (report width, PTX instructions per thread)
    epi = {(p, n): v for (p, n, role, _), v in widths.items() if role == "epilogue read"}
    assert epi["transposed_bias", 1024] == (4, {("ld", 4): 8})  # ld.global.v4
    assert epi["residual", 1024] == (4, {("ld", 4): 8})
    assert epi["transposed_bias", 1030][0] == epi["residual", 1030][0] == 1  # no hint: scalar loads
    # the row bias is a [BLOCK_N] vector in the accumulator's layout: pairs of columns,
    # ld.global.v2 (the extent 1030 is even, so at 1030 too); the column bias, scalars
    assert epi["row_bias", 1024][0] == epi["row_bias", 1030][0] == 2
    assert epi["linear_column_bias", 1024][0] == epi["linear_column_bias", 1030][0] == 1
    # the store: 16 bytes at 1024, 8 at 1030 (the row length a constant, even)
    assert {(n, v[0]) for (_, n, role, _), v in widths.items() if role == "store"} == {(1024, 4), (1030, 2)}
    # operands: 16-byte async copies only where contiguous along K with aligned rows (a at
    # 1024; w of x @ w.T at 1024); b [K, N] is N-major, which sm_90's tf32 wgmma cannot read
    assert widths["row_bias", 1024, "operand a", "a"] == (4, {("cp", 4): 12})
    assert widths["row_bias", 1024, "operand b", "b"][0] == 1
    assert widths["linear_column_bias", 1024, "operand b", "transpose"][0] == 4
    assert all(v[0] == 1 for (_, n, role, _), v in widths.items() if n == 1030 and role.startswith("operand"))


ELEMENTWISE_SCRIPT = """
import json
import sys
sys.path.insert(0, {tmp!r})
import eqsat
import elementwise_prog as progs
from eqsat.backends import triton_backend
out = []
for n in (1024, 1030, 1028):
    plan = eqsat.optimize(progs.ew, {{"M": 64, "N": n}})
    (gk,) = triton_backend._kernels(plan)
    rows = plan.vectorization()
    args = [f"in{{i}}" for i in range(len(gk.inputs))] + ["out"]
    out.append({{"n": n, "kinds": [k.kind for k in plan.kernels],
                 "rows": [[a, r.role, r.tensor, r.width, r.why] for a, r in zip(args, rows)],
                 "ptx": triton_backend.ptx(plan, 0, arch=90)}})
json.dump(out, open({result!r}, "w"))
"""

ELEMENTWISE_PROG = """
from eqsat import empty, f32, program, relu


@program
def ew(x: f32["M", "N"], b: f32["N"], r: f32["M", "N"]) -> f32["M", "N"]:
    y = empty((M, N))
    for i in range(M):
        for j in range(N):
            y[i, j] = relu(x[i, j] + b[j]) + r[i, j]
    return y
"""


def test_elementwise_loads_in_ptx_agree_with_the_report(tmp_path):
    """An elementwise kernel (4 consecutive elements a thread): at N = 1024 every load and
    the flat store are 16-byte vectors; at 1030 and 1028 the rows give no alignment hint
    (scalar loads of x and r), the bias is read in pairs (1030) or fours (1028), and the
    flat store stays 16 bytes (the element count is a multiple of 4). Every access in the
    sm_90 PTX is attributed to its argument and must have exactly the report's width."""
    import json
    import subprocess
    import sys

    (tmp_path / "elementwise_prog.py").write_text(ELEMENTWISE_PROG)
    result = tmp_path / "result.json"
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    script = ELEMENTWISE_SCRIPT.format(tmp=str(tmp_path), result=str(result))
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=600,
                       cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    widths = {}
    for k in json.loads(result.read_text()):
        assert k["kinds"] == ["pointwise"], k["kinds"]
        pointers = ["out"] + [a for a, *_ in k["rows"] if a != "out"]
        got = _ptx_accesses(k["ptx"], pointers)
        assert set(got) == set(pointers), (k["n"], got)
        for arg, role, tensor, width, why in k["rows"]:
            assert {w for _, w in got[arg]} == {width}, (k["n"], role, tensor, width, why, got[arg])
            widths[k["n"], role, tensor] = width
    assert widths[1024, "read", "x"] == widths[1024, "read", "r"] == widths[1024, "read", "b"] == 4
    assert widths[1030, "read", "x"] == 1 and widths[1030, "read", "b"] == 2 and widths[1028, "read", "b"] == 4
    assert {w for (n, role, _), w in widths.items() if role == "store"} == {4}


# ---------------------------------------------------------------- non-finite values, scalars
def test_inf_in_an_operand_and_a_scalar_result_agree_with_reference(tmp_program):
    """Padded lanes are zeros that must not meet an inf (inf * 0 is nan); a program that
    returns a scalar runs on Triton too."""
    import numpy as np

    mm = tmp_program("""
@program
def mm(x: f32["M", "K"], w: f32["K", "N"]) -> f32["M", "N"]:
    return relu(x @ w)
""")
    plan = eqsat.optimize(mm, {"M": 5, "N": 3, "K": 4})
    x, w = np.ones((5, 4), np.float32), np.ones((4, 3), np.float32)
    x[1, 2], x[3, 0] = np.inf, -np.inf
    want = eqsat.reference(mm, x, w)
    got = plan.run(x, w, backend="triton")
    assert np.array_equal(got, want, equal_nan=True), (got, want)
    total = tmp_program("""
@program
def total(x: f32["N"]) -> f32:
    s = 0.0
    for i in range(N):
        s += x[i] * x[i]
    return s
""")
    p2 = eqsat.optimize(total, {"N": 37})
    v = np.linspace(-1, 1, 37).astype(np.float32)
    out = p2.run(v, backend="triton")
    assert np.ndim(out) == 0 and abs(float(out) - float(eqsat.reference(total, v))) < 1e-4


@pytest.mark.parametrize("fn", ["relu", "sigmoid", "silu", "tanh", "gelu", "exp", "abs", "sqrt", "log", "sin", "cos"])
def test_functions_keep_nan_and_the_infinities_as_the_reference_does(tmp_program, fn):
    """Every function of the language, elementwise and as a matmul's epilogue, on NaN,
    +-inf, large and small values: each backend agrees with `reference` bit for bit on the
    non-finite results (relu(NaN) once came out 0 on Triton: `tl.maximum` drops NaN, and so
    did the clamp of sigmoid's and tanh's argument; silu(-inf) came out -inf, not NaN)."""
    import numpy as np

    prog = tmp_program(f"""
@program
def f(a: f32["N"], x: f32["M", "K"], w: f32["K", "N"]) -> f32["M", "N"]:
    y = empty((M, N))
    for i in range(M):
        for j in range(N):
            acc = 0.0
            for k in range(K):
                acc += x[i, k] * w[k, j]
            y[i, j] = {fn}(acc) + {fn}(a[j])
    return y
""")
    special = [np.nan, np.inf, -np.inf, 1e30, -1e30, 100.0, -100.0, 0.0, -0.0, 1e-30, 0.5, -0.5, 3.0]
    n = len(special)
    a = np.array(special, np.float32)
    x = np.zeros((2, 1), np.float32)
    x[0, 0], x[1, 0] = 1.0, -1.0
    w = a.reshape(1, n)  # row 0 of the product is the special values, row 1 their negatives
    want = eqsat.reference(prog, a, x, w)
    for target, backend in (("h100", "triton"), ("cpu", "numpy")):
        plan = eqsat.optimize(prog, {"N": n, "M": 2, "K": 1}, target=target)
        got = np.asarray(plan.run(a, x, w, backend=backend))
        finite = np.isfinite(want)
        assert np.array_equal(np.isnan(got), np.isnan(want)), (target, fn, got, want)
        assert np.array_equal(got[~finite & ~np.isnan(want)], want[~finite & ~np.isnan(want)]), (target, fn, got, want)
        assert np.allclose(got[finite], want[finite], rtol=1e-5, atol=1e-6), (target, fn, got, want)



def test_kernel_source_writes_negative_zero_by_its_bits(tmp_program):
    """Compiled for a GPU (Triton 3.6 on an H200), a literal -0.0 and `tl.full(..., -0.0)`
    became +0.0: `x * -0.0` lost its sign and the store's `+ -0.0` turned every stored -0.0
    into 0.0, while the interpreter kept both. The source spells -0.0 by its bits, which any
    Triton compiles as -0.0; the interpreter's values are the reference's."""
    import numpy as np

    from eqsat.backends import triton_backend

    prog = tmp_program("""
@program
def p(x: f32["N"]) -> tuple[f32["N"], f32["N"]]:
    z = empty((N,))
    c = empty((N,))
    for i in range(N):
        z[i] = x[i] * 0.0
        c[i] = 1.0 / (x[i] * -0.0)
    return z, c
""")
    x = np.array([-0.0, 0.0, 2.0, -3.0], np.float32)
    want = eqsat.reference(prog, x)
    for target in ("cpu", "h100"):
        plan = eqsat.optimize(prog, {"N": 4}, target=target)
        assert "-0.0" not in triton_backend.source(plan)
        for g, w in zip(plan.run(x, backend="triton"), want):
            assert np.array_equal(g, w) and np.array_equal(np.signbit(g), np.signbit(w)), (target, g, w)


def test_signed_zeros_are_kept_as_the_reference_keeps_them(tmp_program):
    """A stored -0.0 stays -0.0 (a store once added +0.0 to broadcast its value, which
    makes -0.0 + 0.0 = 0.0; -0.0 is added now, which changes no value), and relu(-0.0) is
    0.0 as numpy's maximum(-0.0, 0) is (the select kept -0.0): `1 / y` then has the
    reference's sign of infinity, elementwise and in a matmul's epilogue (by a probe)."""
    import numpy as np

    prog = tmp_program("""
@program
def f(x: f32["M", "K"], w: f32["K", "N"], a: f32["N"]) -> tuple[f32["N"], f32["N"], f32["M", "N"]]:
    z = empty((N,))
    r = empty((N,))
    for j in range(N):
        z[j] = a[j] * 0.0
        r[j] = 1.0 / relu(a[j])
    y = empty((M, N))
    for i in range(M):
        for j in range(N):
            acc = 0.0
            for k in range(K):
                acc += x[i, k] * w[k, j]
            y[i, j] = 1.0 / relu(acc * 0.0)
    return z, r, y
""")
    dims = {"M": 4, "N": 8, "K": 3}
    a = np.array([-0.0, 0.0, -1.0, 2.0, -0.0, 1.0, -3.0, 0.0], np.float32)
    x = -np.ones((4, 3), np.float32)
    w = np.ones((3, 8), np.float32)
    want = eqsat.reference(prog, x, w, a)
    for target, backend in (("h100", "triton"), ("h100", "numpy"), ("cpu", "triton")):
        plan = eqsat.optimize(prog, dims, target=target)
        for g, v in zip(plan.run(x, w, a, backend=backend), want):
            g = np.asarray(g)
            assert np.array_equal(g, v) and np.array_equal(np.signbit(g), np.signbit(v)), (target, backend, g, v)

def test_an_index_used_as_a_value_does_not_wrap_at_32_bits(tmp_program):
    """`(i * M + j) * 100000` passes 2**31 at 300 x 300: Triton's index variables are int32,
    so the value is computed in int64 (as numpy and the reference do), where it once
    wrapped silently; a constant index value past int32 once failed in the kernel."""
    import numpy as np

    flat = tmp_program("""
@program
def flat(a: f32["N", "M"]) -> f32["N", "M"]:
    b = empty((N, M))
    for i in range(N):
        for j in range(M):
            b[i, j] = a[i, j] * 0.5 + (i * M + j) * 100000
    return b
""")
    big = tmp_program("""
@program
def big(a: f32["N"]) -> f32["N"]:
    b = empty((N,))
    for i in range(N):
        b[i] = a[i] + i * N * N * 1000 + N * N * N * 7
    return b
""")
    rng = np.random.default_rng(0)
    for prog, shapes in ((flat, {"N": 300, "M": 300}), (big, {"N": 5003})):
        args = [rng.standard_normal(tuple(shapes.values())).astype(np.float32)]
        want = eqsat.reference(prog, *args)
        assert np.abs(want).max() > 2.0 ** 31
        for target, backend in (("h100", "triton"), ("cpu", "numpy")):
            got = np.asarray(eqsat.optimize(prog, shapes, target=target).run(*args, backend=backend))
            assert np.allclose(got, want, rtol=1e-6), (prog.name, target, np.abs(got - want).max())


def test_every_argument_is_checked_also_beside_device_tensors(tmp_program):
    """The runner keeps device tensors where they are; it once took any argument that was no
    host value (a device tensor, or None) as a sign to check tensor shapes only, so an int
    parameter passed as None, or another value than the plan's, ran as the plan's. A tensor
    on torch's `meta` device stands in for a GPU one here: the checks come before any
    computation."""
    import numpy as np
    import torch

    prog = tmp_program("""
@program
def scale(x: f32["N"], k: int, s: f32) -> f32["N"]:
    y = empty((N,))
    for i in range(N):
        y[i] = x[i] * k * s
    return y
""")
    plan = eqsat.optimize(prog, {"N": 4, "k": 3})
    x = np.arange(4, dtype=np.float32)
    meta = torch.empty(4, device="meta")
    for args, msg in (((x, None, 1.0), "'k' of scale is an int"), ((meta, None, 1.0), "'k' of scale is an int"),
                      ((None, 3, 1.0), "'x' of scale is a tensor \\['N'\\], got None"),
                      ((meta, 5, 1.0), "k=3"), ((torch.empty(5, device="meta"), 3, 1.0), "N"),
                      ((meta, 3, "a"), "'s' of scale is a real scalar"),
                      ((torch.empty(4, device="meta", dtype=torch.bool), 3, 1.0), "real numeric")):
        with pytest.raises(eqsat.ArgumentError, match=msg):
            plan.run(*args, backend="triton")
    assert np.array_equal(plan.run(x, 3, 2.0, backend="triton"), x * 6)


def test_ptx_compiles_after_the_interpreter_ran_in_the_process(tmp_program):
    """With Triton's interpreter on (TRITON_INTERPRET=1, a machine without a GPU) and after a
    plan ran through it, `ptx()` compiles in a child process without it: in this process
    Triton's compile failed (`'value' object has no attribute ...`), so `eqsat optimize
    --emit ptx` failed on every CPU-only machine whose Triton cache was cold."""
    import os

    import numpy as np

    from eqsat.backends import triton_backend

    prog = tmp_program('''
@program
def p(a: f32["N"], b: f32["N"]) -> f32["N"]:
    return relu(a * 2.0 + b)
''')
    plan = eqsat.optimize(prog, {"N": 1024})
    a = np.ones(1024, np.float32)
    np.testing.assert_allclose(plan.run(a, a, backend="triton"), 3.0)
    if os.environ.get("TRITON_INTERPRET") != "1":
        pytest.skip("a GPU machine: Triton compiled the kernels, its interpreter never ran")
    ptx = triton_backend.ptx(plan, 0, arch=90)
    assert ".target sm_90" in ptx and "ld.global" in ptx


def test_a_read_only_array_runs_without_torchs_warning(tmp_program):
    """torch.from_numpy warned of every read-only argument (a probe); its copy is taken now."""
    import warnings

    import numpy as np

    prog = tmp_program("""
@program
def p(x: f32["N"]) -> f32["N"]:
    return x * 2.0
""")
    x = np.arange(4, dtype=np.float32)
    x.flags.writeable = False
    plan = eqsat.optimize(prog, {"N": 4})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.array_equal(plan.run(x, backend="triton"), x * 2.0)
