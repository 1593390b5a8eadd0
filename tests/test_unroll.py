"""A short sequential loop around loop nests, unrolled at the plan's sizes
(`eqsat/unroll.py`): each iteration's nests lifted, the loop as written the alternative."""
from __future__ import annotations

import numpy as np
import pytest

import eqsat
from conftest import random_args, rel_err

MATRIX_POWER = '''
@program
def p(P: int, a: f32["N", "N"]) -> f32["N", "N"]:
    r = zeros((N, N))
    for i in range(N):
        r[i, i] = 1.0
    for p in range(P):
        t = empty((N, N))
        for i in range(N):
            for j in range(N):
                s = 0.0
                for k in range(N):
                    s += r[i, k] * a[k, j]
                t[i, j] = s
        for i in range(N):
            for j in range(N):
                r[i, j] = t[i, j]
    return r
'''

# the loop variable read in the body (a per-step scale and a shifted row), a scalar carried
# from step to step, and a step of 2
STEPS = '''
@program
def p(x: f32["M", "K"], w: f32["K", "N"], h0: f32["M", "N"]) -> tuple[f32["M", "N"], f32]:
    h = empty((M, N))
    for i in range(M):
        for j in range(N):
            h[i, j] = h0[i, j]
    decay = 1.0
    for t in range(1, 9, 2):
        decay = decay * 0.5
        for i in range(M):
            for j in range(N):
                acc = 0.0
                for k in range(K):
                    acc += x[(i + t) % M, k] * w[k, j]
                h[i, j] = tanh(acc * decay + h[i, j] * 0.1 * t)
    return h, decay
'''


def test_a_matrix_power_is_a_matmul_per_step(tmp_program):
    prog = tmp_program(MATRIX_POWER)
    dims = {"N": 32, "P": 3}
    plan = eqsat.optimize(prog, dims, target="cpu")
    assert [k.kind for k in plan.kernels].count("matmul") == 3, plan
    args = random_args(prog, dims, seed=1)
    args[1] = args[1] / np.float32(np.sqrt(32))
    want = eqsat.reference(prog, *args)
    for backend in ("numpy", "triton"):
        assert rel_err(plan.run(*args, backend=backend), want) < 1e-5, (backend, plan)


@pytest.mark.parametrize("target", ["cpu", "h100"])
def test_steps_read_the_loop_variable_and_carry_a_scalar(tmp_program, target):
    prog = tmp_program(STEPS)
    dims = {"M": 8, "K": 6, "N": 5}
    plan = eqsat.optimize(prog, dims, target=target)
    args = random_args(prog, dims, seed=2)
    want = eqsat.reference(prog, *args)
    for backend in ("numpy", "triton"):
        got = plan.run(*args, backend=backend)
        assert rel_err(got[0], want[0]) < 1e-5 and got[1] == want[1], (backend, plan)


def test_a_long_loop_stays_one_nest(tmp_program):
    """Past `unroll.MAX_TRIPS` iterations the loop is not unrolled: one nest as written."""
    prog = tmp_program(MATRIX_POWER)
    plan = eqsat.optimize(prog, {"N": 8, "P": 40}, target="cpu")
    assert "matmul" not in [k.kind for k in plan.kernels], plan
    args = random_args(prog, {"N": 8, "P": 40}, seed=3)
    args[1] = args[1] / np.float32(np.sqrt(8))
    assert rel_err(plan.run(*args), eqsat.reference(prog, *args)) < 1e-4, plan


@pytest.mark.parametrize("P", [0, 1])
def test_zero_and_one_step(tmp_program, P):
    prog = tmp_program(MATRIX_POWER)
    dims = {"N": 8, "P": P}
    plan = eqsat.optimize(prog, dims, target="cpu")
    args = random_args(prog, dims, seed=4)
    np.testing.assert_allclose(plan.run(*args), eqsat.reference(prog, *args), rtol=1e-5, atol=1e-6)


ROW_BUFFER = '''
@program
def p(q: f32["S", "S"]) -> f32["S"]:
    out = empty((S,))
    sc = empty((S,))
    for i in range(S):
        m = 0.0
        for j in range(S):
            sc[j] = q[i, j]
            m = m + sc[j]
        z = 0.0
        for j in range(S):
            z += sc[j] - m
        out[i] = z
    return out
'''


def test_a_loop_the_analysis_rewrote_is_not_unrolled(tmp_program):
    """A loop distributed with a scalar expanded into a buffer has statements the analysis
    made, with no syntax to run as written: it is not unrolled (it crashed when it was)."""
    prog = tmp_program(ROW_BUFFER)
    plan = eqsat.optimize(prog, {"S": 16}, target="cpu")
    args = random_args(prog, {"S": 16}, seed=5)
    assert rel_err(plan.run(*args), eqsat.reference(prog, *args)) < 1e-5, plan


ELEMENT_AFTER_NEST = '''
@program
def p(a: f32["N"], w: f32["N", "N", "N"]) -> tuple[f32["N"], f32]:
    for i4 in range(1, N):
        a5 = abs(a[i4]) / -4.0
        for i6 in range(1, N):
            for i7 in range(i6, N):
                a5 *= sigmoid(w[i6, i6, 0])
                a[i6 - 1] = relu(w[i6 - 1, i7, i7]) % 3.0
        a8 = a[0]
    return a, a8 + a5
'''


def test_a_scalar_read_from_a_tensor_after_an_unrolled_nest(tmp_program):
    """`a8 = a[0]` after a nest in an unrolled iteration is an element of the nest's tensor,
    not a scalar the nest writes: offered as the loop's alternative it once joined a scalar
    with that tensor, and saturation stopped on the two ranks."""
    prog = tmp_program(ELEMENT_AFTER_NEST)
    plan = eqsat.optimize(prog, {"N": 5}, target="cpu")
    args = random_args(prog, {"N": 5}, seed=7)
    want = eqsat.reference(prog, *args)
    got = plan.run(*args)
    assert rel_err(got[0], want[0]) < 1e-5 and abs(got[1] - want[1]) <= 1e-5 * abs(want[1]), plan


FRESH_EACH_STEP = '''
@program
def p(P: int, a: f32["N", "N"]) -> f32["N", "N"]:
    r = a + 0.0
    for p in range(P):
        t = zeros((N, N))
        for i in range(N):
            for j in range(N):
                for k in range(N):
                    t[i, j] += r[i, k] * a[k, j]
        r = t
    return r
'''


def test_a_name_rebound_to_each_steps_new_buffer(tmp_program):
    """`r = t` with `t` allocated anew in every step: the next step reads, through r, memory
    nothing writes any more, so r is a copy (it was refused as a view the loop carries
    while its memory is written); each step is a matmul."""
    prog = tmp_program(FRESH_EACH_STEP)
    dims = {"N": 16, "P": 3}
    plan = eqsat.optimize(prog, dims, target="cpu")
    assert [k.kind for k in plan.kernels].count("matmul") == 3, plan
    args = random_args(prog, dims, seed=8)
    args[1] = args[1] / np.float32(4.0)
    assert rel_err(plan.run(*args), eqsat.reference(prog, *args)) < 1e-5, plan


def test_a_carried_view_of_memory_written_after_it_is_still_refused(tmp_program):
    """The same with t written after `r = t` in the step: r would see that write, a copy
    would not."""
    src = FRESH_EACH_STEP.replace("        r = t\n", "        r = t\n        t[0, 0] = 1.0\n")
    with pytest.raises(eqsat.ProgramError, match="'r' is bound to a view of 't'"):
        tmp_program(src)


# memory a step made, shared on past the binding: refused (each was computed wrong as a copy)
SHARED_AFTER = {
    "written_after_the_loop": '''
@program
def p(x: f32["N"], T: int) -> f32["N"]:
    r = x + 0.0
    for k in range(T):
        t = r * 2.0
        r = t
    for j in range(N):
        t[j] += 1.0
    return r
''',
    "two_names_for_one_step": '''
@program
def p(x: f32["N"], T: int) -> f32["N"]:
    r = x + 0.0
    q = x + 0.0
    for k in range(T):
        for j in range(N):
            r[j] += 1.0
        t = r * 2.0 + q
        q = t
        r = t
    return q
''',
}


@pytest.mark.parametrize("name", sorted(SHARED_AFTER))
def test_a_step_buffer_shared_past_its_binding_is_refused(tmp_program, name):
    with pytest.raises(eqsat.ProgramError, match="is bound to a view of 't' in a loop"):
        tmp_program(SHARED_AFTER[name])


LAYERS = '''
@program
def p(x: f32["M", "D"], w: f32["L", "D", "D"], b: f32["L", "D"]) -> f32["M", "D"]:
    h = x + 0.0
    for l in range(L):
        h = h + relu(h @ w[l] + b[l])
    return h
'''


@pytest.mark.parametrize("target", ["h100", "cpu"])
def test_a_loop_over_layers_calling_the_library_is_a_matmul_per_layer(tmp_program, target):
    """The body is one tensor statement (no loop nest): unrolled, each layer's `@` is a
    matmul with its bias, relu and residual add as epilogue (it stayed one `loop` kernel,
    where a GPU target pays a trip to the host)."""
    prog = tmp_program(LAYERS)
    dims = {"L": 3, "M": 32, "D": 32}
    args = random_args(prog, dims, seed=5)
    want = eqsat.reference(prog, *args)
    plan = eqsat.optimize(prog, dims, target=target)
    # (on the CPU the loop as written calls the same BLAS in each step: the model may keep it)
    assert target == "cpu" or [k.kind for k in plan.kernels].count("matmul") == 3, plan
    for backend in ("numpy", "triton"):
        assert rel_err(plan.run(*args, backend=backend), want) < 1e-5, (backend, plan)


HEADS = '''
@program
def heads(q: f32["H", "S", "D"], k: f32["H", "S", "D"], v: f32["H", "S", "D"]) -> f32["H", "S", "D"]:
    o = empty((H, S, D))
    for h in range(H):
        s = q[h] @ k[h].T
        p = empty((S, S))
        for i in range(S):
            m = s[i, 0]
            for j in range(S):
                m = max(m, s[i, j])
            t = 0.0
            for j in range(S):
                p[i, j] = exp(s[i, j] - m)
                t += p[i, j]
            for j in range(S):
                p[i, j] = p[i, j] / t
        o[h] = p @ v[h]
    return o

@program
def private_operand(p: f32["H", "S", "S"], v: f32["H", "S", "D"]) -> f32["H", "S", "D"]:
    o = empty((H, S, D))
    for h in range(H):
        t = empty((S, S))
        for i in range(S):
            for j in range(S):
                t[i, j] = exp(p[h, i, j])
        o[h] = t @ v[h]
    return o

@program
def slice_stores(a: f32["S", "D"], b: f32["D", "D"]) -> f32["H", "S", "D"]:
    o = zeros((H, S, D))
    o[0] = a @ b
    o[H - 1] += relu(a) + o[0]
    o[1, 0] = a[0] * 2.0
    return o
'''


@pytest.mark.parametrize("target", ["h100", "cpu"])
@pytest.mark.parametrize("name", ["heads", "private_operand", "slice_stores"])
def test_attention_heads_written_as_a_loop(tmp_program, name, target):
    """A loop over heads: each step's scores by `@`, a softmax written as loops (the store
    and the sum in one loop: fission inside the unrolled step, its scalars carried), and
    `o[h] = p @ v[h]` (a slice store outside loops once unrolled: o with that slice
    replaced); a buffer private to the loop read whole by `@` (the tensor of all its
    iterations, sliced). At sizes where kernels pay, the GPU plan has the matmuls."""
    prog = tmp_program(HEADS, name)
    for dims in ({"H": 2, "S": 1, "D": 1}, {"H": 3, "S": 5, "D": 2}, {"H": 4, "S": 128, "D": 32}):
        args = random_args(prog, dims, seed=7)
        want = eqsat.reference(prog, *args, shapes=dims)
        plan = eqsat.optimize(prog, dims, target=target)
        for backend in ("numpy", "triton"):
            assert rel_err(plan.run(*args, backend=backend), want) < 1e-5, (dims, backend, plan)
        if target == "h100" and dims["S"] == 128 and name != "slice_stores":
            assert "matmul" in [k.kind for k in plan.kernels] and "loop" not in [k.kind for k in plan.kernels], plan
