"""Image and signal kernels whose reads would leave the tensor on the iterations a mask
turns off: a box blur over the interior, a valid convolution, a same-size convolution
guarded by bounds conditions. If-conversion widens their loops to whole axes and
predicates the bodies; the lowered loads are total (outside the tensor numpy clamps the
index, Triton masks the load) and the select drops what they read. On a GPU target each
is one kernel; on the CPU target the model keeps them compiled loops (numpy would gather
and select element by element, where numba runs the loop once). Every plan runs on both
backends against `reference`, with NaN inputs too."""
from __future__ import annotations

import numpy as np
import pytest

import eqsat
from backends import loops, triton_backend
from eqsat.terms import leaving_axes, unlist, walk

PROGRAMS = {
    "blur": ('''
@program
def p(x: f32["H", "W"]) -> f32["H", "W"]:
    y = zeros((H, W))
    for i in range(1, H - 1):
        for j in range(1, W - 1):
            y[i, j] = (x[i - 1, j] + x[i + 1, j] + x[i, j - 1] + x[i, j + 1] + x[i, j]) * 0.2
    return y
''', {"H": 9, "W": 7}, ["pointwise"]),
    "conv_valid": ('''
@program
def p(x: f32["C", "L"], w: f32["O", "C", "K"]) -> f32["O", "L"]:
    y = zeros((O, L))
    for o in range(O):
        for l in range(L - K + 1):
            for c in range(C):
                for k in range(K):
                    y[o, l] += w[o, c, k] * x[c, l + k]
    return y
''', {"C": 3, "L": 20, "O": 4, "K": 5}, ["reduction"]),
    "conv_same": ('''
@program
def p(x: f32["H", "W"], w: f32["R", "R"]) -> f32["H", "W"]:
    y = zeros((H, W))
    for i in range(H):
        for j in range(W):
            s = 0.0
            for di in range(3):
                for dj in range(3):
                    if i + di - 1 >= 0 and i + di - 1 < H and j + dj - 1 >= 0 and j + dj - 1 < W:
                        s += w[di, dj] * x[i + di - 1, j + dj - 1]
            y[i, j] = s
    return y
''', {"H": 8, "W": 6, "R": 3}, ["reduction"]),
    # a causal filter: y[i] reads x[i - k] for k up to i only
    "causal_fir": ('''
@program
def p(x: f32["N"], h: f32["K"]) -> f32["N"]:
    y = zeros((N,))
    for i in range(N):
        for k in range(K):
            if i - k >= 0:
                y[i] += h[k] * x[i - k]
    return y
''', {"N": 17, "K": 4}, ["reduction"]),
}


def _args(prog, dims, seed, nan):
    rng = np.random.default_rng(seed)
    out = []
    for q in prog.params:
        x = rng.standard_normal([dims[d] for d in q.shape]).astype(np.float32)
        if nan:
            x.flat[::5] = np.nan
        out.append(x)
    return out


def _check(plan, prog, dims):
    for nan in (False, True):
        args = _args(prog, dims, 1, nan)
        want = eqsat.reference(prog, *args)
        for backend in ("numpy", "triton"):
            np.testing.assert_allclose(plan.run(*args, backend=backend), want, rtol=1e-5, atol=1e-5, equal_nan=True,
                                       err_msg=f"{backend}, nan={nan}\n{plan}")


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_is_one_kernel_on_a_gpu(tmp_program, name):
    src, dims, kinds = PROGRAMS[name]
    prog = tmp_program(src)
    plan = eqsat.optimize(prog, dims, target="h100")
    assert [k.kind for k in plan.kernels] == kinds, plan
    _check(plan, prog, dims)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_triton_masks_every_load_that_may_leave(tmp_program, name):
    """Each load whose index may leave its tensor is masked by its bounds in the kernel
    (on a GPU an unmasked one would read other memory, or fault)."""
    src, dims, _ = PROGRAMS[name]
    plan = eqsat.optimize(tmp_program(src), dims, target="h100")
    extents = plan.var_extent
    leaving = 0
    for k in plan.kernels:
        for x in walk(k.term):
            if x.op == "Sc.load":
                shape = plan.costing.shape(x.args[0])
                leaving += len(leaving_axes(unlist(x.args[1]), shape, extents.__getitem__))
    assert leaving > 0, plan  # the widened loops read outside on their masked-off iterations
    src_text = triton_backend.source(plan)
    assert src_text.count(" >= 0) & (") >= 1 and "< " in src_text, src_text


TRUTH = {
    "blur": lambda x: np.pad(
        (x[:-2, 1:-1] + x[2:, 1:-1] + x[1:-1, :-2] + x[1:-1, 2:] + x[1:-1, 1:-1]) * np.float32(0.2), 1),
    "conv_valid": lambda x, w: np.pad(np.einsum("ock,clk->ol", w.astype(np.float64), np.lib.stride_tricks
                                                .sliding_window_view(x, w.shape[2], axis=1)[:, :, :]),
                                      ((0, 0), (0, w.shape[2] - 1))),
    "conv_same": lambda x, w: sum(w[a, b] * np.pad(x.astype(np.float64), 1)[a:a + x.shape[0], b:b + x.shape[1]]
                                  for a in range(3) for b in range(3)),
    "causal_fir": lambda x, h: np.convolve(x.astype(np.float64), h)[:x.shape[0]],
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_runs_compiled_on_the_cpu_at_size(tmp_program, name):
    """At image sizes on the CPU target every kernel with real work runs compiled: a kept
    loop (numba), or a pointwise or reduction kernel compiled in one pass
    (`backends/cpu_kernels.py`), never numpy's gathers and selects element by element;
    checked against numpy."""
    src, dims, _ = PROGRAMS[name]
    prog = tmp_program(src)
    big = {d: (n * 64 if d in ("H", "W", "L", "N") else n) for d, n in dims.items()}
    plan = eqsat.optimize(prog, big, target="cpu")
    plan.compile_loops()
    for k in plan.kernels:
        if k.kind == "loop":  # (the suite compiles only nests with real work: EQSAT_COMPILE_LOOPS=auto)
            if plan.lowered.nests[k.nest].work["nodes"] >= loops.COMPILE_MIN_OPS:
                assert plan.loop_runners[k.nest][0] is not None, plan
        elif plan.costing.info(k.term).flops >= 1e6:
            assert plan.kernel_runners[k.name][0] is not None, plan
    args = _args(prog, big, 2, False)
    np.testing.assert_allclose(plan.run(*args), TRUTH[name](*args), rtol=1e-4, atol=1e-4, err_msg=str(plan))


@pytest.mark.parametrize("n", [1, 2, 6])
def test_reads_a_conditional_expression_guards_are_in_bounds_where_it_reads_them(tmp_program, n):
    """`b[N - 2] if N > 1 else 0.0` at N = 1, and `b[i - 1] if i > 0 else 0.0`: Python
    never evaluates the branch its condition turns off, so the bounds check reads each
    branch under its condition (it once refused both); the lowered select's loads are
    total, so the plan agrees with `reference` on both backends and targets. A read left
    unguarded is still refused."""
    prog = tmp_program("""
@program
def p(b: f32["N"]) -> f32["N"]:
    a = empty((N,))
    y = b[N - 2] if N > 1 else 0.0
    for i in range(N):
        a[i] = b[i] + y + (b[i - 1] if i > 0 else 0.0) + (0.5 * b[i + 1] if i < N - 1 else 0.0)
    return a
""")
    b = np.arange(1, n + 1, dtype=np.float32)
    want = eqsat.reference(prog, b)
    for target, backend in (("cpu", "numpy"), ("h100", "triton"), ("h100", "numpy")):
        got = eqsat.optimize(prog, {"N": n}, target=target).run(b, backend=backend)
        assert np.array_equal(np.asarray(got), want), (target, backend, got, want)
    bad = tmp_program("""
@program
def q(b: f32["N"]) -> f32["N"]:
    a = empty((N,))
    for i in range(N):
        a[i] = b[i - 1] if i > -1 else 0.0
    return a
""")
    with pytest.raises(eqsat.ProgramError, match="index 0 of 'b' ranges over -1"):
        eqsat.optimize(bad, {"N": n})
