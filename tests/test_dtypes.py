"""f16 and bf16 (issue 10, item 2): arguments of a narrower dtype hold what that dtype can
represent, the program computes in f32 (f32 accumulation), results come back in their
declared dtype, on both backends; the cost model charges the narrower inputs' real size."""
from __future__ import annotations

import os

import numpy as np
import pytest

import eqsat
from conftest import corpus_paths, load_case
from eqsat import lang

os.environ.setdefault("TRITON_INTERPRET", "1")

# relative L2 error against a float64 truth: f16 keeps 11 significant bits, bf16 8
TOL = {"f16": 3e-3, "bf16": 2e-2}
CASES = ["linear_bias_relu", "mlp_two_layers", "residual_gelu"]


def _variant(tmp_program, path, dtype: str):
    """The corpus program with every f32 annotation written as `dtype` (tmp_program's
    header imports the language)."""
    src = path.read_text().replace("f32[", f"{dtype}[")
    body = src[src.index("@program"):]
    return tmp_program(body[:body.index("\ndef truth")] if "\ndef truth" in body else body)


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("name", CASES)
def test_narrow_dtypes_against_a_float64_truth(tmp_program, name, dtype):
    path = next(p for p in corpus_paths() if p.stem == name)
    mod, _ = load_case(path)
    prog = _variant(tmp_program, path, dtype)
    plan = eqsat.optimize(prog, mod.SHAPES)
    rng = np.random.default_rng(7)
    args64 = []
    for p in prog.params:
        shape = tuple(mod.SHAPES[d] if isinstance(d, str) else d for d in p.shape) if p.shape else ()
        args64.append(rng.standard_normal(shape) if shape else 1.25)
    narrow = [lang.round_to(a, p.dtype).astype(np.float64) for a, p in zip(args64, prog.params)]
    want = np.asarray(mod.truth(*narrow), dtype=np.float64)  # the exact answer on representable inputs
    for backend in ("numpy", "triton"):
        got = plan.run(*[a.astype(np.float16) if dtype == "f16" and np.ndim(a) else a for a in args64],
                       backend=backend)
        if dtype == "f16":
            assert got.dtype == np.float16
        else:  # numpy has no bfloat16: float32 holding values bf16 represents
            assert got.dtype == np.float32 and np.array_equal(lang.round_to(got, lang.bf16), got)
        err = np.linalg.norm(got.astype(np.float64) - want) / np.linalg.norm(want)
        assert err < TOL[dtype], (backend, err)
    ref = eqsat.reference(prog, *args64)
    assert ref.dtype == got.dtype


def test_torch_tensors_keep_their_dtype_on_triton(tmp_program):
    torch = pytest.importorskip("torch")
    prog = tmp_program("""
@program
def lin(x: bf16["M", "K"], w: bf16["K", "N"]) -> bf16["M", "N"]:
    return relu(x @ w)
""")
    plan = eqsat.optimize(prog, {"M": 8, "K": 16, "N": 8})
    x, w = torch.randn(8, 16, dtype=torch.bfloat16), torch.randn(16, 8, dtype=torch.bfloat16)
    out = plan.run(x, w, backend="triton")
    assert out.dtype == torch.bfloat16
    want = torch.relu(x.float() @ w.float())
    assert torch.allclose(out.float(), want, rtol=2e-2, atol=2e-2)


def test_a_float32_argument_for_an_f16_parameter_is_rounded(tmp_program):
    """The fast path takes float32 arrays as they are only for f32 parameters."""
    prog = tmp_program("""
@program
def double(x: f16["N"]) -> f32["N"]:
    return x * 2.0
""")
    plan = eqsat.optimize(prog, {"N": 5})
    x = np.array([0.1, 1.0 / 3, 1e-3, 1000.1, -2.7], dtype=np.float32)
    want = x.astype(np.float16).astype(np.float32) * 2
    for _ in range(2):  # the first call builds the runner, the second takes its fast path
        assert np.array_equal(plan.run(x), want)
    assert np.array_equal(eqsat.reference(prog, x), want)


def test_cost_model_charges_the_narrow_inputs_real_size(tmp_program):
    """A memory-bound kernel reading two f16 inputs moves 2 + 2 + 4 bytes an element (the
    result is f32 here), not 4 + 4 + 4."""
    def plan_for(dtype):
        prog = tmp_program(f"""
@program
def add(x: {dtype}["N"], y: {dtype}["N"]) -> f32["N"]:
    return x + y
""")
        return eqsat.optimize(prog, {"N": 1 << 20})
    wide, narrow = plan_for("f32"), plan_for("f16")
    assert narrow.kernels[0].bytes == pytest.approx(wide.kernels[0].bytes * 8 / 12)
    assert narrow.cost < wide.cost
