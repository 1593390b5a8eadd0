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



NUMPY_FORMS = {
    # numpy's reductions, scans and keepdims reads of narrow tensors: desugared as for f32
    # (they were refused: "its operand's shape is not known here")
    "row_sum": ("np.sum(x, axis=1)", '"N"'),
    "softmax": ("np.exp(x - np.max(x, axis=1, keepdims=True)) / "
                "np.sum(np.exp(x - np.max(x, axis=1, keepdims=True)), axis=1, keepdims=True)", '"N", "M"'),
    "layernorm": ("(x - x.mean(axis=1, keepdims=True)) / "
                  "np.sqrt(((x - x.mean(axis=1, keepdims=True)) ** 2).mean(axis=1, keepdims=True) + 1e-5)",
                  '"N", "M"'),
    "cumsum": ("np.cumsum(x, axis=1)", '"N", "M"'),
    "mean_of_copy": ("x.copy().mean() + np.sum(x[1:, 2:])", None),
}


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("name", sorted(NUMPY_FORMS))
def test_numpy_reductions_of_narrow_tensors(tmp_program, name, dtype):
    """A narrow tensor is read into f32 and numpy's forms over it are computed in f32 (f32
    accumulation), the result rounded to its declared dtype: within the dtype's tolerance
    of a float64 truth on both backends, and equal to the reference."""
    expr, out = NUMPY_FORMS[name]
    ret = f'{dtype}[{out}]' if out else dtype
    prog = tmp_program(f"""
import numpy as np

@program
def f(x: {dtype}["N", "M"]) -> {ret}:
    return {expr}
""")
    shapes = {"N": 7, "M": 13}
    x64 = np.random.default_rng(3).standard_normal((7, 13))
    x = lang.round_to(x64, getattr(lang, dtype))
    want = np.asarray(prog.fn(x.astype(np.float64)), dtype=np.float64)
    plan = eqsat.optimize(prog, shapes)
    arg = x.astype(np.float16) if dtype == "f16" else x.astype(np.float32)
    ref = np.asarray(eqsat.reference(prog, arg), dtype=np.float64)
    for backend in ("numpy", "triton"):
        got = np.asarray(plan.run(arg, backend=backend), dtype=np.float64)
        err = np.linalg.norm(got - want) / np.linalg.norm(want)
        assert err < TOL[dtype], (backend, err)
        np.testing.assert_allclose(got, ref, rtol=TOL[dtype], atol=TOL[dtype])

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


MIXED = {
    # a matmul of an f16 and an f32 operand, a bf16 bias: every narrow load widened, f32 dot
    "mixed": ('''
@program
def mixed(x: f16["M", "K"], w: f32["N", "K"], b: bf16["N"]) -> f32["M", "N"]:
    return relu(x @ w.T + b)
''', {"M": 12, "K": 20, "N": 10}, "bf16"),
    # an f16 operand with a prologue (computed in f32 on its tiles) against a plain f16 one
    "prologue": ('''
@program
def pro(x: f16["M", "K"], w: f16["N", "K"]) -> f16["M", "N"]:
    return relu(x) @ w.T
''', {"M": 12, "K": 20, "N": 10}, "f16"),
    # two bf16 operands (a 16-bit dot on a GPU; widened in the interpreter) and an epilogue
    # reading an f16 residual
    "bf16_pair": ('''
@program
def pair(x: bf16["M", "K"], w: bf16["K", "N"], r: f16["M", "N"]) -> f32["M", "N"]:
    return gelu(x @ w) + r
''', {"M": 12, "K": 20, "N": 10}, "bf16"),
    # an f16 input returned as a view, declared f32: widened on the way out
    "view_out": ('''
@program
def view(x: f16["M", "N"]) -> f32["N", "M"]:
    return x.T
''', {"M": 6, "N": 5}, "f16"),
}


@pytest.mark.parametrize("name", sorted(MIXED))
def test_mixed_dtypes_on_triton_agree_with_the_reference(tmp_program, name):
    """Inputs stay in their declared dtypes on Triton's device: each form that reads them
    (a widened operand, a prologue, a 16-bit pair, an epilogue operand, a view returned)
    agrees with the reference, for numpy and for torch arguments, in the declared result
    dtype."""
    torch = pytest.importorskip("torch")
    src, shapes, narrowest = MIXED[name]
    prog = tmp_program(src)
    plan = eqsat.optimize(prog, shapes)
    rng = np.random.default_rng(3)
    args = [lang.round_to(rng.standard_normal(tuple(shapes[d] for d in p.shape)), p.dtype) for p in prog.params]
    want = np.asarray(eqsat.reference(prog, *args), dtype=np.float64)
    got = plan.run(*args, backend="triton")
    assert got.dtype == np.asarray(eqsat.reference(prog, *args)).dtype
    err = np.linalg.norm(got.astype(np.float64) - want) / np.linalg.norm(want)
    assert err < TOL[narrowest], err
    tdt = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
    targs = [torch.from_numpy(np.asarray(a, dtype=np.float32)).to(tdt[p.dtype.name]) for a, p in zip(args, prog.params)]
    tout = plan.run(*targs, backend="triton")
    assert tout.dtype == tdt[prog.out_dtypes[0].name] and tout.device.type == "cpu"
    terr = np.linalg.norm(tout.float().numpy().astype(np.float64) - want) / np.linalg.norm(want)
    assert terr < TOL[narrowest], terr


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_a_narrow_result_is_rounded_by_its_kernels_store(tmp_program, dtype):
    """An f16 result no other kernel reads is stored narrow by the kernel that computes it
    (no f32 tensor and conversion pass after it), bit for bit what rounding the f32 value
    gives; an intermediate another kernel reads stays f32, and so does a bf16 result (the
    interpreter's store truncates to bf16, where rounding is to nearest)."""
    prog = tmp_program(f'''
@program
def p(x: {dtype}["M", "K"], w: {dtype}["K", "N"], v: {dtype}["N", "N"]) -> tuple[{dtype}["M", "N"], {dtype}["M", "N"]]:
    h = gelu(x @ w)
    return h, h @ v
''')
    dims = {"M": 16, "N": 24, "K": 8}
    plan = eqsat.optimize(prog, dims)
    runner = plan.compiled("triton")
    assert len(runner.narrow) == (dtype == "f16") and len(plan.kernels) >= 2  # h @ v, not h: a kernel reads h
    rng = np.random.default_rng(3)
    args = [lang.as_dtype(rng.standard_normal(s).astype(np.float32), getattr(lang, dtype))
            for s in ((16, 8), (8, 24), (24, 24))]
    narrow = plan.run(*args, backend="triton")
    runner.narrow = {}
    wide = plan.run(*args, backend="triton")
    for a, b in zip(narrow, wide):
        assert a.dtype == b.dtype and np.array_equal(a.view(np.uint16), b.view(np.uint16))
