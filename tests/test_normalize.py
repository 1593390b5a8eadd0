"""Loop normalization (`eqsat/normalize.py`): a loop from 1 read at `i - 1` (or from any
offset of sizes), or read backwards at `K - 1 - k`, is the loop from 0 reading `x[i]` (the
backwards one run downward): the same iterations in the same order, so a matmul and its
epilogue are found whatever the loop's origin. Found by an independent generator of
matmul spellings (2026-11-27): 1-based loops and reversed reduction indices were kept as
loops or reductions (118 of 145 misses). Each program runs against `reference`; the near
misses (the variable read at two offsets, as a value, one operand reversed) stay correct."""
from __future__ import annotations

import numpy as np
import pytest

import eqsat
from conftest import random_args, rel_err

D = {"M": 6, "N": 5, "K": 4}

HEAD = '''
@program
def p(x: f32["M", "K"], w: f32["K", "N"], b: f32["N"]) -> f32["M", "N"]:
    y = empty((M, N))
'''

FOUND = {  # loops, the kernels expected on h100
    "one_based_rows": ('''
    for i in range(1, M + 1):
        for j in range(N):
            acc = 0.0
            for k in range(K):
                acc += x[i - 1, k] * w[k, j]
            y[i - 1, j] = relu(acc + b[j])
''', ["matmul"]),
    "one_based_reduction": ('''
    for i in range(M):
        for j in range(1, N + 1):
            acc = 0.0
            for k in range(1, K + 1):
                acc += x[i, k - 1] * w[k - 1, j - 1]
            y[i, j - 1] = max(acc + b[j - 1], 0.0)
''', ["matmul"]),
    "offset_by_a_size": ('''
    for i in range(M):
        for j in range(N):
            acc = 0.0
            for k in range(-K, 0):
                acc += x[i, k + K] * w[k + K, j]
            y[i, j] = acc * 2.0
''', ["matmul"]),
    "read_backwards": ('''
    for i in range(M):
        for j in range(N):
            acc = 0.0
            for k in range(K):
                acc += x[i, K - 1 - k] * w[K - 1 - k, j]
            y[i, j] = acc + b[j]
''', ["matmul"]),
    "rows_stored_backwards": ('''
    for i in range(M):
        for j in range(N):
            acc = 0.0
            for k in range(K):
                acc += x[M - 1 - i, k] * w[k, j]
            y[M - 1 - i, j] = acc
''', ["matmul"]),
    "epilogue_stored_in_the_reduction_loop": ('''
    for i in range(M):
        for j in range(N):
            acc = 0.0
            for k in range(K):
                acc += x[i, k] * w[k, j]
                y[i, j] = max(acc + b[j], 0.0)
''', ["matmul"]),
    "scaled_by_a_power_of_a_size": ('''
    for i in range(M):
        for j in range(N):
            acc = 0.0
            for k in range(K):
                acc += x[i, k] * w[k, j]
            y[i, j] = acc * K ** -0.5 + b[j] / 2.0 ** 0.5
''', ["matmul"]),
    "first_term_chosen_at_the_first_iteration": ('''
    for i in range(M):
        for j in range(N):
            for k in range(K):
                if k == 0:
                    acc = x[i, k] * w[k, j]
                else:
                    acc += x[i, k] * w[k, j]
            y[i, j] = acc + b[j]
''', ["matmul"]),
    "reset_at_the_first_iteration": ('''
    for i in range(M):
        for j in range(N):
            acc = 5.0
            for k in range(K):
                if k == 0:
                    acc = 0.0
                acc += x[i, k] * w[k, j]
            y[i, j] = relu(acc)
''', ["matmul"]),
    "epilogue_at_the_last_iteration": ('''
    for i in range(M):
        for j in range(N):
            acc = 0.0
            for k in range(K):
                acc += x[i, k] * w[k, j]
                if k == K - 1:
                    y[i, j] = max(acc + b[j], 0.0)
''', ["matmul"]),
    "statements_at_the_last_iteration": ('''
    for i in range(M):
        for j in range(N):
            acc = 0.0
            for k in range(K):
                acc += x[i, k] * w[k, j]
                if k == K - 1:
                    t = acc + b[j]
                    if t < 0.0:
                        t = 0.0
                    elif t > 6.0:
                        t = 6.0
                    y[i, j] = t
''', ["matmul"]),
    # the reduction loop outermost, the epilogue inside the loops under it (a random
    # generator's spelling: 18 of its 20 misses, 2026-11-28): the loop, then the tail
    "epilogue_under_a_k_outer_nest": ('''
    for i in range(M):
        for j in range(N):
            y[i, j] = 0.0
    for k in range(K):
        for j in range(N):
            for i in range(M):
                y[i, j] += x[i, k] * w[k, j]
                if k == K - 1:
                    y[i, j] = tanh(y[i, j] + b[j])
''', ["matmul"]),
    "branches_in_the_tail_of_a_k_outer_nest": ('''
    for i in range(M):
        for j in range(N):
            y[i, j] = x[i, 0] * w[0, j]
    for k in range(1, K):
        for i in range(M):
            for j in range(N):
                y[i, j] = x[i, k] * w[k, j] + y[i, j]
                if k == K - 1:
                    t = y[i, j] / K
                    if t < 0.0:
                        t = 0.1 * t
                    y[i, j] = t + b[j]
''', ["matmul"]),
    # near misses: correct, whatever the kernels
    "tail_reads_another_iterations_element": ('''
    for i in range(M):
        for j in range(N):
            y[i, j] = 0.0
    for k in range(K):
        for i in range(M):
            for j in range(N):
                y[i, j] += x[i, k] * w[k, j]
                if k == K - 1:
                    y[i, j] = y[i, j] + y[i, 0]
''', None),
    "tail_reads_the_loop_variable": ('''
    for i in range(M):
        for j in range(N):
            y[i, j] = 0.0
    for k in range(K):
        for i in range(M):
            for j in range(N):
                y[i, j] += x[i, k] * w[k, j]
                if k == K - 1:
                    y[i, j] = y[i, j] * k
''', None),
    "last_iteration_sets_what_the_loop_reads": ('''
    for i in range(M):
        for j in range(N):
            acc = 0.0
            t = 1.0
            for k in range(K):
                acc += x[i, k] * w[k, j] * t
                if k == K - 1:
                    t = acc * 0.5
                    y[i, j] = t + b[j]
''', None),
    "first_terms_that_differ": ('''
    for i in range(M):
        for j in range(N):
            for k in range(K):
                if k == 0:
                    acc = x[i, k] * 2.0
                else:
                    acc += x[i, k] * w[k, j]
            y[i, j] = acc
''', None),
    # an element set at the first iteration (a probe's generator, 2026-11-28: 47 of 47 missed)
    "element_first_term_chosen_at_the_first_iteration": ('''
    for i in range(M):
        for j in range(N):
            for k in range(K):
                if k == 0:
                    y[i, j] = x[i, k] * w[k, j]
                else:
                    y[i, j] += x[i, k] * w[k, j]
            y[i, j] = relu(y[i, j] + b[j])
''', ["matmul"]),
    "element_reset_at_the_first_iteration": ('''
    for i in range(M):
        for j in range(N):
            for k in range(K):
                if k == 0:
                    y[i, j] = 0.0
                y[i, j] += x[i, k] * w[k, j]
''', ["matmul"]),
    # near misses: the element's index moves with k; its first value reads the tensor
    "element_moving_with_the_loop": ('''
    for i in range(M):
        for k in range(K):
            if k == 0:
                y[i, k] = x[i, k] * w[k, 0]
            else:
                y[i, k] += x[i, k] * w[k, 1]
''', None),
    "element_first_term_reads_its_tensor": ('''
    for i in range(M):
        for j in range(N):
            y[i, j] = b[j]
            for k in range(K):
                if k == 0:
                    y[i, j] = y[i, j] * x[i, k]
                else:
                    y[i, j] += x[i, k] * w[k, j]
''', None),
    "first_term_read_before": ('''
    for i in range(M):
        for j in range(N):
            acc = b[j]
            for k in range(K):
                y[i, j] = acc
                if k == 0:
                    acc = x[i, k] * w[k, j]
                else:
                    acc += x[i, k] * w[k, j]
''', None),
    "stored_at_another_iteration": ('''
    for i in range(M):
        for j in range(N):
            acc = 0.0
            for k in range(K):
                acc += x[i, k] * w[k, j]
                if k == K - 2:
                    y[i, j] = acc
''', None),
    "stored_in_the_loop_then_changed": ('''
    for i in range(M):
        for j in range(N):
            acc = 0.0
            for k in range(K):
                acc += x[i, k] * w[k, j]
                y[i, j] = acc + b[j]
                acc *= 0.5
''', None),
    "stored_in_the_loop_reading_its_variable": ('''
    for i in range(M):
        for j in range(N):
            acc = 0.0
            for k in range(K):
                acc += x[i, k] * w[k, j]
                y[i, j] = acc + w[k, j]
''', None),
    "stored_in_a_loop_that_never_runs": ('''
    for i in range(M):
        for j in range(N):
            y[i, j] = b[j]
            for k in range(K - 4):
                y[i, j] = x[i, 0] * 9.0
''', None),
    "one_operand_backwards": ('''
    for i in range(M):
        for j in range(N):
            acc = 0.0
            for k in range(K):
                acc += x[i, K - 1 - k] * w[k, j]
            y[i, j] = acc
''', None),
    "two_offsets": ('''
    for i in range(M):
        for j in range(1, N):
            y[i, j - 1] = x[i, 0] * w[0, j] - x[i, 1] * w[1, j - 1]
        y[i, N - 1] = 0.0
''', None),
    "the_variable_as_a_value": ('''
    for i in range(1, M + 1):
        for j in range(N):
            y[i - 1, j] = x[i - 1, 0] * i + w[0, j]
''', None),
    "a_scan_from_one": ('''
    for j in range(N):
        y[0, j] = w[0, j]
        for i in range(1, M):
            y[i, j] = y[i - 1, j] * 0.5 + x[i, 0] * w[1, j]
''', None),
    "carried_through_a_one_based_loop": ('''
    for j in range(N):
        s = b[j]
        for i in range(1, M + 1):
            s = s * 0.5 + x[i - 1, 1]
            y[i - 1, j] = s
''', None),
}


@pytest.mark.parametrize("name", sorted(FOUND))
def test_normalized_loops(tmp_program, name):
    body, kinds = FOUND[name]
    prog = tmp_program(HEAD + body + "    return y\n")
    args = random_args(prog, D, seed=5)
    want = eqsat.reference(prog, *args)
    for target in ("h100", "cpu"):
        plan = eqsat.optimize(prog, D, target=target)
        for backend in ("numpy", "triton"):
            assert rel_err(plan.run(*args, backend=backend), want) < 1e-5, (name, target, backend, plan)
        if kinds is not None and target == "h100":
            assert [k.kind for k in plan.kernels] == kinds, plan


def test_a_comparison_of_small_integer_literals_is_folded():
    """An unrolled loop's `if k == K - 1` compares two literals (3.0 == 8.0): the select is
    its answer's side, in every precision. Other literals keep their select (1e-50 == 0.0
    is false in float64 and true in float32)."""
    from eqsat import terms as T
    from eqsat.terms import Node

    a, b = Node("Sc.param", "a"), Node("Sc.param", "b")
    assert T.select("==", T.lit(3.0), T.lit(8.0), a, b) is b
    assert T.select("<", T.lit(3.0), T.lit(8.0), a, b) is a
    assert T.select("!=", T.lit(-2.0), T.lit(-2.0), a, b) is b
    kept = T.select("==", T.lit(1e-50), T.lit(0.0), a, b)
    assert kept.op == "Sc.select"


KEPT_PARTS = {  # a k-outer nest split into its loop and its tail, one part or both kept as written
    "head_kept": '''
@program
def p(A: f32["M", "K"], B: f32["K", "N"]) -> f32["M", "N"]:
    C = zeros((M, N))
    for k in range(K):
        for i in range(M):
            for j in range(N):
                C[i, j] += A[i, k] * B[k, (j + k) % N]
                if k == K - 1:
                    C[i, j] = C[i, j] * 2.0 + 1.0
    return C
''',
    "tail_kept": '''
@program
def p(A: f32["M", "K"], B: f32["K", "N"]) -> tuple[f32["M", "N"], f32["M", "N"]]:
    C = zeros((M, N))
    D = zeros((M, N))
    for k in range(K):
        for i in range(M):
            for j in range(N):
                C[i, j] += A[i, k] * B[k, j]
                if k == K - 1:
                    D[i, j] = C[i, j] + D[i, (j + N - 1) % N]
    return C, D
''',
    "scalar_tail": '''
@program
def p(A: f32["M", "K"], B: f32["K", "N"]):
    C = zeros((M, N))
    s = 0.0
    for k in range(K):
        for i in range(M):
            for j in range(N):
                C[i, j] += A[i, k] * B[k, j]
                if k == K - 1:
                    s += C[i, j]
    return C, s
''',
    "relu_tail": '''
@program
def p(A: f32["M", "K"], B: f32["K", "N"]) -> f32["M", "N"]:
    C = zeros((M, N))
    for k in range(K):
        for i in range(M):
            for j in range(N):
                C[i, j] += A[i, k] * B[k, j]
                if k == K - 1:
                    C[i, j] = max(C[i, j], 0.0)
    return C
''',
}


@pytest.mark.parametrize("name", sorted(KEPT_PARTS))
def test_a_split_tail_kept_as_written_runs_its_own_source(tmp_program, name):
    """The parts of a k-outer nest split into its loop and its tail (`normalize.split_tail`)
    each run their own source where kept as written: a copied loop kept the whole nest's,
    so a kept loop ran the tail again (2 * want + 1) and a kept tail read `k` (NameError;
    a probe's, 2026-11-28). Every candidate, both targets, both backends."""
    prog = tmp_program(KEPT_PARTS[name])
    for dims in ({"M": 3, "N": 4, "K": 5}, {"M": 16, "N": 16, "K": 16}):
        args = random_args(prog, dims, seed=2)
        want = eqsat.reference(prog, *args)
        for target in ("cpu", "h100"):
            plan = eqsat.optimize(prog, dims, target=target, candidates=3)
            for c in plan.candidates:
                for backend in ("numpy", "triton"):
                    got = c.run(*args, backend=backend)
                    pairs = zip(got, want) if isinstance(want, tuple) else [(got, want)]
                    assert all(rel_err(g, w) < 1e-5 for g, w in pairs), (name, dims, target, backend, c)
